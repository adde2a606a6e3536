"""The workstation IAM policy (docs/iam/cli-policy.json) against the AWS calls the CLI's commands really make.

The commands run against a moto server (``audit`` on this account, across accounts through the member role and
across the Organization; ``athena``; ``billing`` with live prices). Every AWS call is recorded at botocore's
``_make_api_call`` and mapped to the IAM action and resource it needs; the calls moto cannot answer (Contributor
Insights, Athena, the Pricing API) are answered there with the response shapes AWS documents. Each call must be
allowed by a statement of the policy (placeholders filled in), and every action of the policy must be needed: by a
recorded call, or by a service acting for the caller (:data:`ON_BEHALF`).
"""

from __future__ import annotations

import fnmatch
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import botocore.client
import pytest

from auditor.cli import main
from tests.cw_support import aws, create_table, minutes, put_points
from tests.sources.test_athena_client import _execution, _results
from tests.template.test_iam_runtime import contributor_insights_stub

ROOT = Path(__file__).resolve().parents[2]
POLICY = ROOT / "docs" / "iam" / "cli-policy.json"
ACCOUNT = "123456789012"  # moto's
MEMBER_ACCOUNT = "111111111111"
TRAIL_KEY = f"arn:aws:kms:us-east-1:{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab"
#: The policy's placeholders, as the test fills them in (docs/permissions.md says what to put there).
PLACEHOLDERS = {
    "TRAIL_BUCKET": "trail-bucket",
    "ATHENA_RESULTS_BUCKET": "athena-results",
    "TRAIL_KMS_KEY_ARN": TRAIL_KEY,
}

#: Actions a command needs that it does not call itself: the service checks them against the caller while it works
#: for it (Athena user guide, "Identity and access management in Athena": the catalog, the source data and the query
#: results; S3 decrypts an SSE-KMS object as the caller).
ON_BEHALF = {
    "athena": {
        "glue:GetDatabase",
        "glue:GetTable",
        "glue:CreateTable",
        "s3:GetObject",
        "s3:ListBucket",
        "s3:GetBucketLocation",
        "s3:PutObject",
        "s3:AbortMultipartUpload",
        "s3:ListMultipartUploadParts",
        "s3:ListBucketMultipartUploads",
        "kms:Decrypt",
    },
}
#: No permission is needed for these calls (AWS STS documents GetCallerIdentity as always allowed).
NO_PERMISSION = {"sts:GetCallerIdentity"}
#: boto3 service name -> IAM prefix where they differ
_IAM_PREFIX = {"pricing": "pricing", "service-quotas": "servicequotas"}


@dataclass
class Recorder:
    """(action, resource ARN) of every AWS call, by command; answers what moto lacks."""

    calls: dict[str, set[tuple[str, str]]] = field(default_factory=dict)
    command: str = ""
    queries: int = 0
    #: Athena's queries never finish (the command stops them at its timeout).
    stuck: bool = False

    def resource(self, service: str, operation: str, params: dict[str, Any], region: str) -> str:
        if service == "dynamodb" and "TableName" in params:
            return f"arn:aws:dynamodb:{region}:{ACCOUNT}:table/{params['TableName']}"
        if service == "dynamodb" and "ResourceArn" in params:
            return str(params["ResourceArn"])
        if service == "cloudwatch" and operation == "GetInsightRuleReport":
            return f"arn:aws:cloudwatch:{region}:{ACCOUNT}:insight-rule/{params['RuleName']}"
        if service == "sts" and operation == "AssumeRole":
            return str(params["RoleArn"])
        if service == "service-quotas":
            return f"arn:aws:servicequotas:{region}:{ACCOUNT}:{params['ServiceCode']}/{params['QuotaCode']}"
        if service == "athena":
            return f"arn:aws:athena:{region}:{ACCOUNT}:workgroup/{params.get('WorkGroup', 'primary')}"
        return "*"

    def answer(self, client: Any, operation: str, params: dict[str, Any]) -> dict[str, Any] | None:
        """A response for the calls moto does not implement (shaped as AWS documents them), else None."""
        model = client.meta.service_model.operation_model(operation)
        stubbed = contributor_insights_stub("orders")(model, {"body": json.dumps(params, default=str)})
        if stubbed is not None:
            return dict(stubbed[1])
        if client.meta.service_model.service_name == "athena":
            if operation == "StartQueryExecution":
                self.queries += 1
                return {"QueryExecutionId": f"q{self.queries}"}
            if operation == "GetQueryExecution":
                state = "RUNNING" if self.stuck else "SUCCEEDED"
                return _execution(params["QueryExecutionId"], state, scanned=10_485_760)
            if operation == "StopQueryExecution":
                return {}
            if operation == "GetQueryResults":
                return _results([], header=True)
        if operation == "GetProducts":
            return {"FormatVersion": "aws_v1", "PriceList": []}
        return None


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Iterator[Recorder]:
    rec = Recorder()
    real = botocore.client.BaseClient._make_api_call

    def make_api_call(client: Any, operation: str, params: dict[str, Any]) -> Any:
        service = client.meta.service_model.service_name
        action = f"{_IAM_PREFIX.get(service, service)}:{operation}"
        resource = rec.resource(service, operation, params, client.meta.region_name)
        if rec.command:  # not the test's own setup calls
            rec.calls.setdefault(rec.command, set()).add((action, resource))
        answered = rec.answer(client, operation, params)
        return answered if answered is not None else real(client, operation, params)

    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", make_api_call)
    yield rec


def _run(rec: Recorder, capsys: pytest.CaptureFixture[str], *argv: str, code: int = 0) -> dict[str, Any]:
    rec.command = argv[0]
    exit_code = main([*argv, "--format", "json"])
    out, err = capsys.readouterr()
    assert exit_code == code, err
    document: dict[str, Any] = json.loads(out) if out else {}
    return document


def _plant(endpoint: str) -> None:
    """A table with a throttled minute, an auto-scaling policy and Contributor Insights (stubbed); an Organization with
    a member account; the trail and results buckets."""
    ddb, cw, aas = aws("dynamodb", endpoint), aws("cloudwatch", endpoint), aws("application-autoscaling", endpoint)
    now = int(time.time())
    t0 = now - now % 60 - 40 * 60
    create_table(ddb, "orders", read=10, write=10, gsis=["byStatus"])
    put_points(cw, "ReadProvisionedThroughputThrottleEvents", "orders", minutes(t0, 35, 20))
    put_points(cw, "ConsumedReadCapacityUnits", "orders", minutes(t0, 35, 600))
    aas.register_scalable_target(
        ServiceNamespace="dynamodb",
        ResourceId="table/orders",
        ScalableDimension="dynamodb:table:ReadCapacityUnits",
        MinCapacity=5,
        MaxCapacity=100,
    )
    aas.put_scaling_policy(
        PolicyName="orders-read",
        ServiceNamespace="dynamodb",
        ResourceId="table/orders",
        ScalableDimension="dynamodb:table:ReadCapacityUnits",
        PolicyType="TargetTrackingScaling",
        TargetTrackingScalingPolicyConfiguration={
            "TargetValue": 70.0,
            "PredefinedMetricSpecification": {"PredefinedMetricType": "DynamoDBReadCapacityUtilization"},
        },
    )
    org = aws("organizations", endpoint)
    org.create_organization(FeatureSet="ALL")
    org.create_account(Email="member@example.com", AccountName="member")
    s3 = aws("s3", endpoint)
    for bucket in (PLACEHOLDERS["TRAIL_BUCKET"], PLACEHOLDERS["ATHENA_RESULTS_BUCKET"]):
        s3.create_bucket(Bucket=bucket)


@pytest.fixture
def recorded(
    aws_reset: str, recorder: Recorder, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> dict[str, set[tuple[str, str]]]:
    """Every command that calls AWS, run once each way; the calls by command."""
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    _plant(aws_reset)
    audited = _run(recorder, capsys, "audit")
    assert {t["table"] for t in audited["tables"]} == {"orders"}
    _run(recorder, capsys, "audit", "--accounts", MEMBER_ACCOUNT, "--role-name", "DdbTrafficAuditorMember")
    _run(recorder, capsys, "audit", "--org", "--role-name", "DdbTrafficAuditorMember")
    athena = [
        "athena",
        *("--bucket", PLACEHOLDERS["TRAIL_BUCKET"], "--accounts", "111122223333", "--regions", "us-east-1"),
        *("--start", "2026-11-01T00:00Z", "--end", "2026-11-02T00:00Z"),
        *("--output-location", f"s3://{PLACEHOLDERS['ATHENA_RESULTS_BUCKET']}/ddb-audit/"),
    ]
    _run(recorder, capsys, *athena)
    recorder.stuck = True  # a query past its timeout is stopped
    _run(recorder, capsys, *athena, "--timeout", "0.2", code=2)
    # Live prices come from the Pricing API itself (the CLI refuses a local endpoint for it): no endpoint override.
    monkeypatch.delenv("AWS_ENDPOINT_URL")
    example = ROOT / "examples" / "billing" / "steady-on-demand-with-gsi.json"
    _run(recorder, capsys, "billing", "--input", str(example), "--region", "us-east-1")
    return recorder.calls


def _statements() -> list[dict[str, Any]]:
    text = POLICY.read_text()
    for placeholder, value in PLACEHOLDERS.items():
        text = text.replace(placeholder, value)
    document = json.loads(text)
    assert document["Version"] == "2012-10-17"
    statements: list[dict[str, Any]] = document["Statement"]
    return statements


def _as_list(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else value


def _allowed(action: str, resource: str, statements: list[dict[str, Any]]) -> bool:
    """Some Allow statement names the action and the resource (IAM's wildcards; conditions are not evaluated)."""
    return any(
        s["Effect"] == "Allow"
        and any(fnmatch.fnmatchcase(action, a) for a in _as_list(s["Action"]))
        and any(fnmatch.fnmatchcase(resource, r) for r in _as_list(s["Resource"]))
        for s in statements
    )


def test_the_policy_allows_every_call_of_every_command_and_nothing_else(
    recorded: dict[str, set[tuple[str, str]]],
) -> None:
    statements = _statements()
    assert set(recorded) == {"audit", "athena", "billing"}
    for command, calls in recorded.items():
        denied = sorted(c for c in calls if c[0] not in NO_PERMISSION and not _allowed(*c, statements))
        assert not denied, f"{command}: docs/iam/cli-policy.json does not allow {denied}"
    audit = {action for action, _ in recorded["audit"]}
    assert {"sts:AssumeRole", "organizations:ListAccounts", "cloudwatch:GetInsightRuleReport"} <= audit
    # ... and every action it grants is needed
    granted = {a for s in statements for a in _as_list(s["Action"])}
    assert all("*" not in a for a in granted), "name every action"
    called = {action for calls in recorded.values() for action, _ in calls} - NO_PERMISSION
    needed = called | set().union(*ON_BEHALF.values())
    assert granted == needed, f"not needed: {sorted(granted - needed)}; missing: {sorted(needed - granted)}"
    # Nothing that writes or reads items: the CLI audits metadata and metrics, never a table's data.
    assert not {
        a for a in granted if a.startswith("dynamodb:") and not a.startswith(("dynamodb:List", "dynamodb:Describe"))
    }
    only_writes = {"s3:PutObject", "s3:AbortMultipartUpload", "glue:CreateTable"}
    writes = {a for a in granted if a.split(":")[1].startswith(("Put", "Create", "Delete", "Update", "Abort"))}
    assert writes == only_writes, "writes: the query results and Athena's table of the trail only"


def test_the_permissions_page_shows_the_policy() -> None:
    page = (ROOT / "docs" / "permissions.md").read_text()
    assert "iam/cli-policy.json" in page
    for statement in json.loads(POLICY.read_text())["Statement"]:
        assert f"`{statement['Sid']}`" in page, f"docs/permissions.md does not explain {statement['Sid']}"
    for placeholder in PLACEHOLDERS:
        assert placeholder in page
