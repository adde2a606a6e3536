"""Security Hub Lambda (optional): SNS finding events -> ``securityhub:BatchImportFindings`` (ASFF).

Deployed only when the stack parameter ``ExtraOutputs`` names ``security-hub``; its role may call
``BatchImportFindings`` on the account's own custom-integration product only. New and worsened findings are imported
active, resolved ones archived (``auditor.sinks.security_hub``). A batch Security Hub does not take in full raises:
Lambda retries the event asynchronously and parks it in the function's dead-letter queue at the end. A finding without
an account or region takes the function's own (from its ARN).
"""

from __future__ import annotations

from datetime import UTC, datetime

import structlog
from aws_lambda_powertools.utilities.parser.models import SnsModel

from auditor.sinks.security_hub import asff_from_event, import_findings
from handlers import runtime
from handlers.runtime import Invocation, lambda_runtime


@lambda_runtime(SnsModel)
def lambda_handler(sns: SnsModel, run: Invocation) -> dict[str, object]:
    now = datetime.now(UTC)
    entries = []
    skipped = 0
    for record in sns.Records:
        attributes = {name: attr.Value for name, attr in (record.Sns.MessageAttributes or {}).items()}
        entry = asff_from_event(
            attributes, account=run.account, region=run.region, now=now, redact=run.settings.redact_keys
        )
        if entry is None:
            skipped += 1
        else:
            entries.append(entry)
    result = import_findings(runtime.CLIENTS.securityhub, entries)
    result.skipped = skipped
    structlog.get_logger(__name__).info("security_hub_done", **result.as_dict())
    return result.as_dict()
