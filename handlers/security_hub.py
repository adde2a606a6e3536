"""Security Hub Lambda (optional): SNS finding events -> ``securityhub:BatchImportFindings`` (ASFF).

Deployed only with the stack parameter ``EnableSecurityHub=true``; its role may call ``BatchImportFindings`` on the
account's own custom-integration product only. New and worsened findings are imported active, resolved ones
archived (``auditor.sinks.security_hub``). A batch Security Hub does not take in full raises: Lambda retries the
event asynchronously and parks it in the function's dead-letter queue at the end. A finding without an account or
region takes the function's own (from its ARN).
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import cache
from typing import TYPE_CHECKING, Any

import boto3
import structlog
from aws_lambda_powertools.utilities.parser import parse
from aws_lambda_powertools.utilities.parser.models import SnsModel
from aws_lambda_powertools.utilities.typing import LambdaContext

from auditor.config import get_settings
from auditor.observability import configure_logging
from auditor.sinks.security_hub import asff_from_event, import_findings

if TYPE_CHECKING:
    from mypy_boto3_securityhub import SecurityHubClient


@cache
def securityhub_client() -> SecurityHubClient:
    """One Security Hub client per container (honours ``AWS_ENDPOINT_URL``)."""
    return boto3.client("securityhub")


def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, object]:
    settings = get_settings()
    configure_logging(settings.log_level)
    structlog.contextvars.clear_contextvars()
    structlog.contextvars.bind_contextvars(
        function_name=context.function_name, function_request_id=context.aws_request_id
    )
    _, _, _, region, account, *_ = context.invoked_function_arn.split(":")
    now = datetime.now(UTC)
    entries = []
    skipped = 0
    for record in parse(event=event, model=SnsModel).Records:
        attributes = {name: attr.Value for name, attr in (record.Sns.MessageAttributes or {}).items()}
        entry = asff_from_event(attributes, account=account, region=region, now=now, redact=settings.redact_keys)
        if entry is None:
            skipped += 1
        else:
            entries.append(entry)
    result = import_findings(securityhub_client(), entries)
    result.skipped = skipped
    structlog.get_logger(__name__).info("security_hub_done", **result.as_dict())
    return result.as_dict()
