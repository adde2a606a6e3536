"""template.yaml invariants.

Least-privilege IAM (a table of what each function's code calls; no DynamoDB data-plane access outside the state
table), encryption everywhere, SQS sources with partial batch responses and DLQs, stream sources (one per opted-in
stream) with partial batch responses, bisection and an on-failure queue, alarms on every DLQ and every scheduled
function, one log group with retention per function, the state table exactly as ``auditor/state/keys.py`` designs
it, the functions' environment exactly the ``Settings`` fields, the S3 notification command the stack outputs
(applied to a moto S3 bucket), the build wiring, and cfn-lint.

Most checks run on every deployment variant of :mod:`tests.template.variants` (conditions resolved, ``Fn::ForEach``
expanded), so an optional part (new trail, EventBridge source, Slack, stream watcher) cannot slip through because
it is off by default.
"""

from __future__ import annotations

import ast
import json
import re
import shlex
import shutil
import subprocess
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
from cfnlint.api import lint_file

from auditor.config import DOCUMENT_SETTINGS, Settings, settings_from_env
from auditor.cost.plan import ALWAYS_ON_EVENTS, ALWAYS_ON_NAME
from auditor.exceptions import ConfigurationError
from auditor.service.ingest import parse_s3_notification
from auditor.state import keys
from tests.template.makefile import makefile_list, makefile_var
from tests.template.variants import (
    DOCUMENTS_STREAM_ARN,
    FOR_EACH,
    ORDERS_STREAM_ARN,
    TEMPLATE_PATH,
    VARIANTS,
    load_template,
    parameter_values,
    resolve,
)

ROOT = TEMPLATE_PATH.parent
PSEUDO_PARAMETERS = {
    "AWS::AccountId",
    "AWS::NotificationARNs",
    "AWS::NoValue",
    "AWS::Partition",
    "AWS::Region",
    "AWS::StackId",
    "AWS::StackName",
    "AWS::URLSuffix",
}


def getatt(name: str, attr: str = "Arn") -> dict[str, Any]:
    return {"Fn::GetAtt": [name, attr]}


def ref(name: str) -> dict[str, Any]:
    return {"Ref": name}


STATE_TABLE_ARN = getatt("StateTable")
KEY_ARN = getatt("Key")


def index_arn(index: str) -> dict[str, Any]:
    return {"Fn::Sub": f"${{StateTable.Arn}}/index/{index}"}


# ---------------------------------------------------------------------------------------- what each function needs

LOGS = frozenset({"logs:CreateLogStream", "logs:PutLogEvents"})  # its own log group (created by the template)
XRAY = frozenset({"xray:PutTraceSegments", "xray:PutTelemetryRecords"})  # Tracing: Active
SQS_CONSUME = frozenset({"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"})  # Lambda SQS poller
# A KMS-encrypted state table needs the caller's key use through DynamoDB (reads decrypt, writes encrypt).
KMS_THROUGH_SERVICES = frozenset({"kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey", "kms:DescribeKey"})


#: Actions that support no resource-level permissions (AWS Service Authorization Reference): "*" is their only
#: possible resource. No other action may be granted on "*".
NO_RESOURCE_LEVEL_PERMISSIONS = frozenset(
    {
        "xray:PutTraceSegments",
        "xray:PutTelemetryRecords",
        "dynamodb:ListTables",
        "dynamodb:ListContributorInsights",
        "dynamodb:ListStreams",
        "application-autoscaling:DescribeScalableTargets",
        "application-autoscaling:DescribeScalingPolicies",
        "cloudwatch:ListMetrics",
        "cloudwatch:GetMetricData",
        "organizations:ListAccounts",
    }
)
#: DynamoDB control-plane reads of the audited tables (metadata: description, tags, TTL, Contributor Insights
#: status). The only DynamoDB actions any role may have on a table other than the state table, besides the stream
#: reads of opted-in tables; none of them reads or writes an item.
AUDITED_TABLE_METADATA = frozenset(
    {
        "dynamodb:DescribeTable",
        "dynamodb:ListTagsOfResource",
        "dynamodb:DescribeTimeToLive",
        "dynamodb:DescribeContributorInsights",
    }
)
AUDITED_INDEX_METADATA = frozenset({"dynamodb:DescribeContributorInsights"})
#: Lambda's DynamoDB stream poller, on the streams of ItemSizeStreamArns only (the opted-in tables' item images).
STREAM_READS = frozenset({"dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"})
#: Every DynamoDB action that reads or writes items (or exports/imports them).
DYNAMODB_DATA_PLANE = frozenset(
    {
        "dynamodb:GetItem",
        "dynamodb:BatchGetItem",
        "dynamodb:Query",
        "dynamodb:Scan",
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        "dynamodb:DeleteItem",
        "dynamodb:BatchWriteItem",
        "dynamodb:ConditionCheckItem",
        "dynamodb:PartiQLSelect",
        "dynamodb:PartiQLInsert",
        "dynamodb:PartiQLUpdate",
        "dynamodb:PartiQLDelete",
        "dynamodb:ExportTableToPointInTime",
        "dynamodb:RestoreTableToPointInTime",
        "dynamodb:RestoreTableFromBackup",
        "dynamodb:ImportTable",
    }
)
ITEM_SIZE_STREAM_ARNS = ref("ItemSizeStreamArns")
AUDITED_TABLES_ARN = {"Fn::Sub": "arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:table/*"}
AUDITED_INDEXES_ARN = {"Fn::Sub": "arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:table/*/index/*"}
INSIGHT_RULES_ARN = {
    "Fn::Sub": "arn:${AWS::Partition}:cloudwatch:${AWS::Region}:${AWS::AccountId}:"
    "insight-rule/DynamoDBContributorInsights-*"
}
FINGERPRINT_OBJECTS_ARN = {"Fn::Sub": "${ReportsBucket.Arn}/fingerprints/*"}
#: The read-only member role of templates/member-role.yaml (its default name), in any audited account.
MEMBER_ROLE_ARN = {"Fn::Sub": "arn:${AWS::Partition}:iam::*:role/DdbTrafficAuditorMember"}
ANY_KEY_OF_THE_REGION = {"Fn::Sub": "arn:${AWS::Partition}:kms:${AWS::Region}:*:key/*"}
REPORT_OBJECTS_ARN = {"Fn::Sub": "${ReportsBucket.Arn}/reports/*"}
#: DynamoDB's quotas in Service Quotas (GetServiceQuota's "quota" resource type), in the stack's account and Region.
DYNAMODB_QUOTAS_ARN = {"Fn::Sub": "arn:${AWS::Partition}:servicequotas:${AWS::Region}:${AWS::AccountId}:dynamodb/*"}


@dataclass(frozen=True)
class Needs:
    """What a function's code calls: IAM actions, DynamoDB actions per state-table target, KMS via which services.

    ``unscoped`` are the actions it needs on "*" (a subset of :data:`NO_RESOURCE_LEVEL_PERMISSIONS`, X-Ray aside);
    ``audited`` the metadata reads of audited tables and ``streams`` the stream reads of opted-in tables.
    """

    actions: frozenset[str]
    dynamodb: Mapping[str, frozenset[str]]  # "table" or an index name -> actions
    kms_via: frozenset[str]
    unscoped: frozenset[str] = frozenset()
    audited: frozenset[str] = frozenset()
    streams: frozenset[str] = frozenset()


TRAIL_INGEST_DDB = frozenset(
    {
        "dynamodb:GetItem",  # WindowStore.is_processed
        "dynamodb:BatchWriteItem",  # WindowStore.put_contributions (index items, then contributions)
        "dynamodb:PutItem",  # WindowStore.mark_processed (conditional put)
        "dynamodb:UpdateItem",  # UnreadableObjectStore.record (an object whose content cannot be read)
    }
)
EVENTS_INGEST_DDB = frozenset(
    {
        "dynamodb:BatchWriteItem",  # window-index items before the transaction
        "dynamodb:PutItem",  # WindowStore.commit_events: TransactWriteItems of (conditional) Puts
        "dynamodb:ConditionCheckItem",  # ... and the ConditionCheck of the evaluator's seal (late windows)
    }
)
EVALUATOR_DDB_TABLE = frozenset(
    {
        "dynamodb:GetItem",  # FindingsStore.get / get_cursor
        "dynamodb:BatchGetItem",  # FindingsStore.get_many
        "dynamodb:Query",  # WindowStore.load_windows, FindingsStore.pending (outbox shards)
        "dynamodb:PutItem",  # FindingsStore.save / enqueue (also the Puts of its TransactWriteItems)
        "dynamodb:UpdateItem",  # FindingsStore.mark_failed / advance_cursor
        "dynamodb:DeleteItem",  # FindingsStore.mark_sent
    }
)
#: record_findings (auditor.service.record) on the state table, as the metrics audit and the stream watcher call it.
RECORD_FINDINGS_DDB_TABLE = frozenset(
    {
        "dynamodb:GetItem",  # FindingsStore.apply: re-read after a version conflict
        "dynamodb:BatchGetItem",  # FindingsStore.get_many
        "dynamodb:Query",  # FindingsStore.pending (outbox shards)
        "dynamodb:PutItem",  # FindingsStore.apply (the Puts of its TransactWriteItems)
        "dynamodb:UpdateItem",  # FindingsStore.mark_failed
        "dynamodb:DeleteItem",  # FindingsStore.mark_sent
    }
)
STREAM_ITEM_SIZE_DDB = RECORD_FINDINGS_DDB_TABLE | {
    "dynamodb:GetItem",  # ItemHistoryStore._read (consistent)
    "dynamodb:PutItem",  # ItemHistoryStore.record (conditional put, optimistic locking)
}
METRICS_AUDIT_UNSCOPED = frozenset(
    {
        "dynamodb:ListTables",  # inventory
        "dynamodb:ListContributorInsights",
        "application-autoscaling:DescribeScalableTargets",
        "application-autoscaling:DescribeScalingPolicies",
        "cloudwatch:ListMetrics",  # active-series discovery
        "cloudwatch:GetMetricData",
    }
)
WEEKLY_REPORT_DDB_TABLE = frozenset(
    {
        "dynamodb:PutItem",  # ReportAnnouncements.claim (conditional)
        "dynamodb:GetItem",  # ReportAnnouncements.status (claim taken)
        "dynamodb:UpdateItem",  # ReportAnnouncements.mark_published
        "dynamodb:DeleteItem",  # ReportAnnouncements.release (publish failed)
        "dynamodb:Query",  # LedgerStore.entries (the week's LEDGER#{day}), CaptureStore.any_plan
    }
)
#: The model review's proposals (ProposalStore: claim, announced: UpdateItem; a failed publish's new one: DeleteItem).
MODEL_REVIEW_DDB_TABLE = frozenset({"dynamodb:UpdateItem", "dynamodb:DeleteItem"})
#: The notifier's delivery records (SlackDeliveries.begin: conditional PutItem; posted, refused: UpdateItem), only
#: its own items (dynamodb:LeadingKeys SLACK#*).
NOTIFIER_DDB = frozenset({"dynamodb:PutItem", "dynamodb:UpdateItem"})
NOTIFIER_OWN = frozenset(
    {
        "secretsmanager:GetSecretValue",  # slack.get_slack_secret
        "sqs:SendMessage",  # Lambda parks undeliverable events in its DLQ, a KMS queue (Decrypt, GenerateDataKey)
        *NOTIFIER_DDB,
        *KMS_THROUGH_SERVICES,  # the DLQ and the state table
    }
)

SECURITY_HUB_OWN = frozenset(
    {
        "securityhub:BatchImportFindings",  # sinks.security_hub.import_findings, on the account's own product only
        "sqs:SendMessage",  # Lambda parks events Security Hub did not take in its DLQ, a KMS queue
        "kms:Decrypt",
        "kms:GenerateDataKey",
    }
)
#: The custom-integration product of the stack's own account: the only one the sink may import into.
OWN_PRODUCT_ARN = {
    "Fn::Sub": "arn:${AWS::Partition}:securityhub:${AWS::Region}:${AWS::AccountId}:product/${AWS::AccountId}/default"
}

#: The capture controller's state item (GetItem) and its plan + state transaction (PutItem items), and its findings
#: (capture_cap, Contributor Insights hot keys) recorded and published through the findings lifecycle.
CAPTURE_CONTROLLER_DDB = RECORD_FINDINGS_DDB_TABLE
#: Contributor Insights on demand (service.capture_insights_slices): the capture controller reads a table's status and
#: turns it on and off; the only control-plane change the stack makes to an audited table (no item access).
CAPTURE_INSIGHTS_ON_DEMAND = frozenset({"dynamodb:DescribeContributorInsights", "dynamodb:UpdateContributorInsights"})
CAPTURE_CONTROLLER_UNSCOPED = frozenset({"dynamodb:ListTables", "cloudwatch:GetMetricData"})
CAPTURE_TRAIL_SELECTORS = frozenset({"cloudtrail:GetEventSelectors", "cloudtrail:PutEventSelectors"})

NEEDS: dict[str, Needs] = {
    "TrailIngestFunction": Needs(
        # GetObject: the trail objects; PutObject: their event fingerprints (the evaluator's duplicate check)
        actions=LOGS | XRAY | SQS_CONSUME | {"s3:GetObject", "s3:PutObject"} | TRAIL_INGEST_DDB | KMS_THROUGH_SERVICES,
        dynamodb={"table": TRAIL_INGEST_DDB},
        kms_via=frozenset({"sqs", "s3", "dynamodb"}),
    ),
    "EventsIngestFunction": Needs(
        actions=LOGS | XRAY | SQS_CONSUME | EVENTS_INGEST_DDB | KMS_THROUGH_SERVICES,
        dynamodb={"table": EVENTS_INGEST_DDB},
        kms_via=frozenset({"sqs", "dynamodb"}),
    ),
    "EvaluatorFunction": Needs(
        # DescribeTable: the key schemas of the evaluated windows' tables (PartiQL full-scan decision)
        # S3: the trail objects' event fingerprints (GetObject, ListBucket on their prefix) and, for objects that
        # share events, the objects themselves (GetObject)
        actions=LOGS
        | XRAY
        | EVALUATOR_DDB_TABLE
        | {"sns:Publish", "dynamodb:DescribeTable", "s3:GetObject", "s3:ListBucket"}
        | KMS_THROUGH_SERVICES,
        dynamodb={"table": EVALUATOR_DDB_TABLE, keys.GSI1: frozenset({"dynamodb:Query"})},  # open findings (GSI1)
        kms_via=frozenset({"sns", "dynamodb", "s3"}),
        audited=frozenset({"dynamodb:DescribeTable"}),
    ),
    "NotifierFunction": Needs(
        actions=LOGS | XRAY | NOTIFIER_OWN,
        dynamodb={"table": NOTIFIER_DDB},
        kms_via=frozenset({"sqs", "dynamodb"}),
    ),
    "SecurityHubFunction": Needs(
        actions=LOGS | XRAY | SECURITY_HUB_OWN,
        dynamodb={},
        kms_via=frozenset({"sqs"}),
    ),
    "StreamItemSizeFunction": Needs(
        # the stream poller (Lambda, with this role) reads the opted-in streams and parks failed batches in the
        # on-failure queue (a KMS queue: hence kms via sqs)
        actions=LOGS
        | XRAY
        | STREAM_READS
        | {"dynamodb:ListStreams", "sqs:SendMessage", "sns:Publish"}
        | STREAM_ITEM_SIZE_DDB
        | KMS_THROUGH_SERVICES,
        # the item's story is merged with the stored one by its id (GetItem on the table): no index query
        dynamodb={"table": STREAM_ITEM_SIZE_DDB},
        kms_via=frozenset({"sqs", "sns", "dynamodb"}),
        unscoped=frozenset({"dynamodb:ListStreams"}),
        streams=STREAM_READS,
    ),
    "CaptureControllerFunction": Needs(
        actions=LOGS
        | XRAY
        | CAPTURE_CONTROLLER_UNSCOPED
        | {"dynamodb:DescribeTable", "sns:Publish", "cloudwatch:GetInsightRuleReport"}
        | CAPTURE_INSIGHTS_ON_DEMAND
        | CAPTURE_CONTROLLER_DDB
        | KMS_THROUGH_SERVICES,
        dynamodb={"table": CAPTURE_CONTROLLER_DDB, keys.GSI1: frozenset({"dynamodb:Query"})},  # open findings
        kms_via=frozenset({"sns", "dynamodb"}),
        unscoped=CAPTURE_CONTROLLER_UNSCOPED,
        audited=frozenset({"dynamodb:DescribeTable"}) | CAPTURE_INSIGHTS_ON_DEMAND,
    ),
    "MetricsAuditFunction": Needs(
        actions=LOGS
        | XRAY
        | METRICS_AUDIT_UNSCOPED
        | AUDITED_TABLE_METADATA
        | {"cloudwatch:GetInsightRuleReport", "sns:Publish", "servicequotas:GetServiceQuota"}
        | RECORD_FINDINGS_DDB_TABLE
        | KMS_THROUGH_SERVICES,
        dynamodb={"table": RECORD_FINDINGS_DDB_TABLE, keys.GSI1: frozenset({"dynamodb:Query"})},  # open findings
        kms_via=frozenset({"sns", "dynamodb"}),
        unscoped=METRICS_AUDIT_UNSCOPED,
        audited=AUDITED_TABLE_METADATA,
    ),
    "WeeklyReportFunction": Needs(
        actions=LOGS
        | XRAY
        | {"s3:PutObject", "s3:GetObject", "sns:Publish"}
        | WEEKLY_REPORT_DDB_TABLE
        | {"dynamodb:Query"}
        | KMS_THROUGH_SERVICES,
        dynamodb={"table": WEEKLY_REPORT_DDB_TABLE, keys.GSI2: frozenset({"dynamodb:Query"})},  # findings by time
        kms_via=frozenset({"s3", "sns", "dynamodb"}),
    ),
    "ModelReviewFunction": Needs(
        actions=LOGS | XRAY | {"sns:Publish", "dynamodb:Query"} | MODEL_REVIEW_DDB_TABLE | KMS_THROUGH_SERVICES,
        dynamodb={"table": MODEL_REVIEW_DDB_TABLE, keys.GSI2: frozenset({"dynamodb:Query"})},  # findings by time
        kms_via=frozenset({"sns", "dynamodb"}),
    ),
}

HANDLERS = {
    "TrailIngestFunction": "handlers.trail_ingest.lambda_handler",
    "EventsIngestFunction": "handlers.events_ingest.lambda_handler",
    "EvaluatorFunction": "handlers.evaluator.lambda_handler",
    "NotifierFunction": "handlers.notifier.lambda_handler",
    "SecurityHubFunction": "handlers.security_hub.lambda_handler",
    "StreamItemSizeFunction": "handlers.stream_item_size.lambda_handler",
    "MetricsAuditFunction": "handlers.metrics_audit.lambda_handler",
    "WeeklyReportFunction": "handlers.weekly_report.lambda_handler",
    "CaptureControllerFunction": "handlers.capture_controller.lambda_handler",
    "ModelReviewFunction": "handlers.model_review.lambda_handler",
}

#: Scheduled functions: their schedule (fixed: not a deploy-time question), and the alarm on their errors.
SCHEDULED = {
    # every 15 minutes: one window (window_seconds' default) per run
    "EvaluatorFunction": ("rate(15 minutes)", "EvaluatorErrorsAlarm"),
    # hourly: the daily billing decision needs a run in every UTC hour (billing_audit_hour_utc)
    "MetricsAuditFunction": ("rate(1 hour)", "MetricsAuditErrorsAlarm"),
    # Monday 07:00 UTC: the ISO week that ended seven hours earlier
    "WeeklyReportFunction": ("cron(0 7 ? * MON *)", "WeeklyReportErrorsAlarm"),
    # The planner's 5-minute slice (with an existing trail: the day's first slice advises, the others are idle).
    "CaptureControllerFunction": ("rate(5 minutes)", "CaptureControllerErrorsAlarm"),
    # Optional (ExtraOutputs with model-review): daily 08:00 UTC, the open findings of the week in progress.
    "ModelReviewFunction": ("cron(0 8 * * ? *)", "ModelReviewErrorsAlarm"),
}

#: Scheduled functions deployed only when a parameter enables them (test_optional_model_review_function).
OPTIONAL_SCHEDULED = {"ModelReviewFunction"}

#: Settings fields the deployed functions do not get (with the reason).
SETTINGS_NOT_DEPLOYED = {
    "audit_config": "CLI only: the default --config file of ddb-audit analyze-trail",
}


# ---------------------------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return load_template()


@pytest.fixture(scope="module", params=sorted(VARIANTS))
def stack(request: pytest.FixtureRequest, template: dict[str, Any]) -> dict[str, Any]:
    """One deployment variant, conditions resolved."""
    return resolve(template, VARIANTS[request.param])


def resources(template: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The resources written out (in the raw template, ``Fn::ForEach`` loops are left aside; resolve expands them)."""
    return {name: res for name, res in template["Resources"].items() if not name.startswith(FOR_EACH)}


def of_type(stack: Mapping[str, Any], type_: str) -> dict[str, dict[str, Any]]:
    return {name: res.get("Properties", {}) for name, res in resources(stack).items() if res["Type"] == type_}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def function_props(stack: Mapping[str, Any], name: str) -> dict[str, Any]:
    """A function's properties with the Globals applied (environment variables merged)."""
    glob = stack.get("Globals", {}).get("Function", {})
    props = {**glob, **stack["Resources"][name]["Properties"]}
    env = {**glob.get("Environment", {}).get("Variables", {})}
    env.update(stack["Resources"][name]["Properties"].get("Environment", {}).get("Variables", {}))
    props["Environment"] = {"Variables": env}
    return props


def role_name(props: Mapping[str, Any]) -> str:
    role = props.get("Role")
    assert isinstance(role, dict), "functions must use an explicit role from this template (Role: !GetAtt X.Arn)"
    assert role.get("Fn::GetAtt", [None, None])[1] == "Arn", role
    return str(role["Fn::GetAtt"][0])


def role_statements(stack: Mapping[str, Any], role: str) -> list[dict[str, Any]]:
    statements: list[dict[str, Any]] = []
    for policy in stack["Resources"][role]["Properties"].get("Policies", []):
        statements.extend(as_list(policy["PolicyDocument"]["Statement"]))
    return statements


def walk_statements(node: Any) -> Iterator[dict[str, Any]]:
    """Every IAM-style statement anywhere in the template (roles, key/queue/topic/bucket policies)."""
    if isinstance(node, dict):
        if "Effect" in node and ("Action" in node or "NotAction" in node):
            yield node
        for child in node.values():
            yield from walk_statements(child)
    elif isinstance(node, list):
        for child in node:
            yield from walk_statements(child)


def functions(stack: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {name: function_props(stack, name) for name in of_type(stack, "AWS::Serverless::Function")}


# ------------------------------------------------------------------------------------------- functions and IAM


def test_functions_and_handlers(template: dict[str, Any]) -> None:
    found = {
        name: res["Properties"]["Handler"]
        for name, res in resources(template).items()
        if res["Type"] == "AWS::Serverless::Function"
    }
    assert found == HANDLERS
    for handler in found.values():
        module, func = handler.rsplit(".", 1)
        path = ROOT / (module.replace(".", "/") + ".py")
        assert path.is_file(), f"{handler}: {path} does not exist"
        tree = ast.parse(path.read_text())
        assert any(isinstance(n, ast.FunctionDef) and n.name == func for n in tree.body), f"{path} has no {func}"


def test_runtime_and_build(template: dict[str, Any]) -> None:
    glob = template["Globals"]["Function"]
    assert glob["Runtime"] == "python3.12"
    assert glob["Architectures"] == ["arm64"]
    assert glob["CodeUri"] == "."
    assert glob["Tracing"] == "Active"
    # One layer holds every function's dependencies (built once); no function brings its own.
    assert glob["Layers"] == [ref("DependenciesLayer")]
    layer = template["Resources"]["DependenciesLayer"]
    assert layer["Type"] == "AWS::Serverless::LayerVersion"
    assert layer["Metadata"] == {"BuildMethod": "makefile", "BuildArchitecture": "arm64"}
    assert layer["Properties"]["CompatibleRuntimes"] == [glob["Runtime"]]
    assert layer["Properties"]["CompatibleArchitectures"] == glob["Architectures"]
    for name, res in resources(template).items():
        if res["Type"] == "AWS::Serverless::Function":
            assert res["Metadata"]["BuildMethod"] == "makefile", name
            assert "Runtime" not in res["Properties"] and "Architectures" not in res["Properties"], name
            assert "Layers" not in res["Properties"], name


def test_every_function_has_its_own_explicit_role(stack: dict[str, Any]) -> None:
    roles = of_type(stack, "AWS::IAM::Role")
    used: dict[str, str] = {}
    for name, props in functions(stack).items():
        assert "Policies" not in props, f"{name}: SAM policy templates hide the actions; use its role"
        role = role_name(props)
        assert role in roles, f"{name}: role {role} is not in the template"
        assert role not in used, f"{name} and {used.get(role)} share {role}"
        used[role] = name
        trust = as_list(roles[role]["AssumeRolePolicyDocument"]["Statement"])
        assert trust == [
            {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}
        ], name
        assert not roles[role].get("ManagedPolicyArns"), f"{role}: managed policies grant more than the code needs"
    assert set(used) == set(roles), f"roles used by no function: {set(roles) - set(used)}"
    assert not of_type(stack, "AWS::IAM::Policy") and not of_type(stack, "AWS::IAM::ManagedPolicy")


def org_audit_actions(stack: Mapping[str, Any], function: str) -> frozenset[str]:
    """What the metrics audit needs beyond NEEDS to audit other accounts (the configuration document's
    ``audit_accounts`` or ``audit_organization``, read at run time): assume the member role, list the Organization's
    accounts."""
    if function != "MetricsAuditFunction":
        return frozenset()
    return frozenset({"sts:AssumeRole", "organizations:ListAccounts"})


def own_trail_actions(stack: Mapping[str, Any], function: str) -> frozenset[str]:
    """What the capture controller needs beyond NEEDS with the stack's own trail (CreateTrail=true): its selectors.
    With an existing trail it advises and calls no CloudTrail API."""
    if function != "CaptureControllerFunction" or "DataEventsTrail" not in resources(stack):
        return frozenset()
    return CAPTURE_TRAIL_SELECTORS


def test_iam_actions_are_exactly_what_the_code_needs(stack: dict[str, Any]) -> None:
    for name, props in functions(stack).items():
        statements = role_statements(stack, role_name(props))
        actions = {a for s in statements for a in as_list(s["Action"])}
        needed = NEEDS[name].actions | org_audit_actions(stack, name) | own_trail_actions(stack, name)
        assert actions == needed, f"{name}: extra {sorted(actions - needed)}, missing {sorted(needed - actions)}"
        for s in statements:
            assert s["Effect"] == "Allow" and "NotAction" not in s and "NotResource" not in s, (name, s)
            assert all("*" not in a for a in as_list(s["Action"])), (name, s)


def _event_queue(props: Mapping[str, Any]) -> Any:
    queues = [e["Properties"]["Queue"] for e in props.get("Events", {}).values() if e["Type"] == "SQS"]
    return queues[0] if queues else None


def stream_mappings(stack: Mapping[str, Any], function: str | None = None) -> dict[str, dict[str, Any]]:
    """The stack's event source mappings (of ``function``, when given)."""
    mappings = of_type(stack, "AWS::Lambda::EventSourceMapping")
    return {n: m for n, m in mappings.items() if function is None or m["FunctionName"] == ref(function)}


def _failure_destinations(stack: Mapping[str, Any], function: str, props: Mapping[str, Any]) -> list[Any]:
    """Where Lambda parks a function's failed events with its role: its DLQ, its mappings' on-failure queues."""
    found = [props["DeadLetterQueue"]["TargetArn"]] if "DeadLetterQueue" in props else []
    for mapping in stream_mappings(stack, function).values():
        destination = mapping["DestinationConfig"]["OnFailure"]["Destination"]
        if destination not in found:
            found.append(destination)
    return found


def test_iam_resources_are_scoped(stack: dict[str, Any]) -> None:
    log_groups = of_type(stack, "AWS::Logs::LogGroup")
    for name, props in functions(stack).items():
        needs = NEEDS[name]
        log_group = props["LoggingConfig"]["LogGroup"]["Ref"]
        assert log_group in log_groups
        dynamodb: dict[str, set[str]] = {}
        unscoped: set[str] = set()
        audited: set[str] = set()
        streams: set[str] = set()
        for s in role_statements(stack, role_name(props)):
            actions = set(as_list(s["Action"]))
            granted_on = as_list(s["Resource"])
            services = {a.split(":")[0] for a in actions}
            assert len(services) == 1, f"{name}: one service per statement keeps scoping readable: {s}"
            service = services.pop()
            if "*" in granted_on:
                # Only actions that cannot be scoped, alone in their statement (the reason is commented there).
                assert granted_on == ["*"], (name, s)
                assert actions <= NO_RESOURCE_LEVEL_PERMISSIONS, f"{name}: {sorted(actions)} can be scoped: {s}"
                if service != "xray":
                    unscoped |= actions
                continue
            if service == "logs":
                assert granted_on == [getatt(log_group)], (name, s)
            elif service == "sqs" and actions <= SQS_CONSUME:
                assert granted_on == [_event_queue(props)], f"{name} may only consume its own queue: {s}"
            elif service == "sqs":
                assert actions == {"sqs:SendMessage"}, (name, s)
                destinations = _failure_destinations(stack, name, props)
                assert granted_on == destinations and destinations, f"{name}: only its failure queue: {s}"
            elif service == "s3" and name == "WeeklyReportFunction":
                assert actions == {"s3:PutObject", "s3:GetObject"}, (name, s)
                assert granted_on == [REPORT_OBJECTS_ARN], f"{name}: only the reports bucket's reports/: {s}"
            elif service == "s3" and granted_on == [FINGERPRINT_OBJECTS_ARN]:
                # the event fingerprints of trail objects: ingest writes them, the evaluator reads them
                expected = {"TrailIngestFunction": {"s3:PutObject"}, "EvaluatorFunction": {"s3:GetObject"}}
                assert actions == expected.get(name), (name, s)
            elif service == "s3" and actions == {"s3:ListBucket"}:
                assert name == "EvaluatorFunction" and granted_on == [getatt("ReportsBucket")], (name, s)
                assert s["Condition"] == {"StringLike": {"s3:prefix": "fingerprints/*"}}, (name, s)
            elif service == "s3":
                assert actions == {"s3:GetObject"} and len(granted_on) == 1, (name, s)
                _assert_trail_objects_only(stack, granted_on[0])
            elif service == "sns":
                assert granted_on == [ref("FindingsTopic")], (name, s)
            elif service == "secretsmanager":
                assert granted_on == [ref("SlackWebhookSecretArn")], (name, s)
            elif service == "securityhub":
                assert actions == {"securityhub:BatchImportFindings"}, (name, s)
                assert granted_on == [OWN_PRODUCT_ARN], f"{name}: only the account's own product: {s}"
            elif service == "cloudtrail":
                assert name == "CaptureControllerFunction" and actions == CAPTURE_TRAIL_SELECTORS, (name, s)
                assert granted_on == [getatt("DataEventsTrail")], f"{name}: only the stack's own trail: {s}"
            elif service == "cloudwatch":
                assert actions == {"cloudwatch:GetInsightRuleReport"}, (name, s)
                assert granted_on == [INSIGHT_RULES_ARN], f"{name}: DynamoDB's Contributor Insights rules only: {s}"
            elif service == "servicequotas":
                # the account's DynamoDB throughput quotas, read by the metrics audit's inventory
                assert actions == {"servicequotas:GetServiceQuota"} and name == "MetricsAuditFunction", (name, s)
                assert granted_on == [DYNAMODB_QUOTAS_ARN], (name, s)
            elif service == "sts":
                # the metrics audit across accounts: only the member role, by its name, in any account
                assert actions == {"sts:AssumeRole"} and name == "MetricsAuditFunction", (name, s)
                assert granted_on == [MEMBER_ROLE_ARN], (name, s)
            elif service == "kms":
                _assert_kms_statement(name, s, needs)
            elif service == "dynamodb":
                for resource in granted_on:
                    target = _state_table_target(resource)
                    if target is not None:
                        dynamodb.setdefault(target, set()).update(actions)
                    elif resource == AUDITED_TABLES_ARN:
                        on_demand = CAPTURE_INSIGHTS_ON_DEMAND if name == "CaptureControllerFunction" else set()
                        assert actions <= AUDITED_TABLE_METADATA | on_demand, (name, s)
                        audited |= actions
                    elif resource == AUDITED_INDEXES_ARN:
                        assert actions <= AUDITED_INDEX_METADATA, (name, s)
                    elif resource == ITEM_SIZE_STREAM_ARNS:
                        assert granted_on == [ITEM_SIZE_STREAM_ARNS] and actions <= STREAM_READS, (name, s)
                        streams |= actions
                    else:
                        pytest.fail(f"{name}: DynamoDB access outside the state table: {resource}")
            else:
                pytest.fail(f"{name}: unexpected service {service}: {s}")
        assert dynamodb == {k: set(v) for k, v in needs.dynamodb.items()}, name
        assert unscoped == needs.unscoped | (org_audit_actions(stack, name) - {"sts:AssumeRole"}), name
        assert audited == needs.audited, name
        assert streams == needs.streams, name


def test_the_notifier_writes_only_its_own_delivery_records(stack: dict[str, Any]) -> None:
    """The notifier's state-table grant is scoped to the partition keys of its delivery records (``SLACK#...``)."""
    if "NotifierFunction" not in stack["Resources"]:
        pytest.skip("this variant has no Slack notifier")
    props = function_props(stack, "NotifierFunction")
    [grant] = [s for s in role_statements(stack, role_name(props)) if str(s["Action"]).startswith("['dynamodb:")]
    assert set(grant["Action"]) == NOTIFIER_DDB and grant["Resource"] == STATE_TABLE_ARN, grant
    assert grant["Condition"] == {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": [f"{keys.SLACK_PREFIX}*"]}}


def _state_table_target(resource: Any) -> str | None:
    if resource == STATE_TABLE_ARN:
        return "table"
    for index in (keys.GSI1, keys.GSI2):
        if resource == index_arn(index):
            return index
    return None


def _assert_kms_statement(name: str, s: Mapping[str, Any], needs: Needs) -> None:
    via = s.get("Condition", {}).get("StringEquals", {}).get("kms:ViaService")
    assert via is not None, f"{name}: KMS only through AWS services (kms:ViaService): {s}"
    services = set()
    for value in as_list(via):
        match = re.fullmatch(r"([a-z0-9-]+)\.\$\{AWS::Region\}\.amazonaws\.com", value.get("Fn::Sub", ""))
        assert match, f"{name}: kms:ViaService must name a service in the stack's region: {value}"
        services.add(match.group(1))
    if s["Resource"] == KEY_ARN:
        assert services == needs.kms_via, (name, s)
        assert set(as_list(s["Action"])) <= KMS_THROUGH_SERVICES, (name, s)
    elif s["Resource"] == ref("TrailKmsKeyArn"):
        # the trail objects: read by trail ingest, and again by the evaluator when two objects share events
        assert name in ("TrailIngestFunction", "EvaluatorFunction"), s
        assert services == {"s3"} and s["Action"] == "kms:Decrypt", s
    elif s["Resource"] == ANY_KEY_OF_THE_REGION:
        # the Slack secret's own key, whichever it is: only for that secret (its ARN is the encryption context)
        assert name == "NotifierFunction" and services == {"secretsmanager"} and s["Action"] == "kms:Decrypt", s
        assert s["Condition"]["StringEquals"]["kms:EncryptionContext:SecretARN"] == ref("SlackWebhookSecretArn"), s
    else:
        pytest.fail(f"{name}: KMS on an unexpected key: {s}")


def _assert_trail_objects_only(stack: Mapping[str, Any], resource: Any) -> None:
    """s3:GetObject on the trail bucket's log objects only: the new bucket's CloudTrail/ folder, or the prefix."""
    if "TrailBucket" in stack["Resources"]:
        bucket_name = stack["Resources"]["TrailBucket"]["Properties"]["BucketName"]["Fn::Sub"]
        pattern, variables = resource["Fn::Sub"]
        assert variables == bucket_name[1]
        assert pattern == f"arn:${{AWS::Partition}}:s3:::{bucket_name[0]}/AWSLogs/${{AWS::AccountId}}/CloudTrail/*"
    else:
        assert resource == {"Fn::Sub": "arn:${AWS::Partition}:s3:::${TrailBucketName}/${TrailPrefix}*"}


def test_no_dynamodb_data_plane_access_except_the_state_table(stack: dict[str, Any]) -> None:
    """No statement anywhere lets anything read or write an audited table's items.

    DynamoDB is granted only in the functions' roles. Beyond the state table and its indexes there are only the
    audited tables' metadata reads (control plane, no items), the capture controller's Contributor Insights switch
    (control plane), the unscopable listings (no items) and the stream reads of the tables the user opted in through
    ItemSizeStreamArns (the written items' images, by design).
    """
    assert not (AUDITED_TABLE_METADATA | CAPTURE_INSIGHTS_ON_DEMAND) & DYNAMODB_DATA_PLANE
    assert not STREAM_READS & DYNAMODB_DATA_PLANE
    for s in walk_statements(stack["Resources"]):
        actions = as_list(s.get("Action", s.get("NotAction")))
        if not any(a == "*" or a.startswith("dynamodb:") for a in actions):
            continue
        assert s["Effect"] == "Allow" and "Principal" not in s and "NotAction" not in s, s  # the functions' roles
        for resource in as_list(s["Resource"]):
            if _state_table_target(resource) is not None:
                continue
            assert not set(actions) & DYNAMODB_DATA_PLANE, f"item access outside the state table: {s}"
            if resource == ITEM_SIZE_STREAM_ARNS:
                assert set(actions) <= STREAM_READS, s
            elif resource == "*":
                assert set(actions) <= NO_RESOURCE_LEVEL_PERMISSIONS, s
            else:
                assert resource in (AUDITED_TABLES_ARN, AUDITED_INDEXES_ARN), s
                assert set(actions) <= AUDITED_TABLE_METADATA | CAPTURE_INSIGHTS_ON_DEMAND, s
    # The audit in particular: read-only, and no item of any table but the state table.
    if "MetricsAuditFunction" in functions(stack):
        role = role_name(function_props(stack, "MetricsAuditFunction"))
        for s in role_statements(stack, role):
            if set(as_list(s["Action"])) & DYNAMODB_DATA_PLANE:
                assert all(_state_table_target(r) is not None for r in as_list(s["Resource"])), s


def test_no_wildcard_actions_in_any_allow_except_key_administration(stack: dict[str, Any]) -> None:
    for s in walk_statements(stack["Resources"]):
        if s["Effect"] != "Allow":
            continue
        for action in as_list(s["Action"]):
            if action == "kms:*":  # the key policy's standard delegation to IAM in this account
                assert s["Principal"] == {"AWS": {"Fn::Sub": "arn:${AWS::Partition}:iam::${AWS::AccountId}:root"}}
                continue
            assert action != "*" and not action.endswith(":*"), s
            if "*" in action:  # AWS documents kms:GenerateDataKey* etc. for service principals in key policies
                assert action.startswith("kms:") and "Service" in s.get("Principal", {}), s


# -------------------------------------------------------------------------------------------------- encryption


def test_everything_is_encrypted_with_the_stack_key(stack: dict[str, Any]) -> None:
    assert of_type(stack, "AWS::KMS::Key")["Key"]["EnableKeyRotation"] is True
    assert len(of_type(stack, "AWS::KMS::Key")) == 1
    for name, props in of_type(stack, "AWS::SQS::Queue").items():
        assert props.get("KmsMasterKeyId") == KEY_ARN, name
    for name, props in of_type(stack, "AWS::SNS::Topic").items():
        assert props.get("KmsMasterKeyId") == KEY_ARN, name
    for name, props in of_type(stack, "AWS::DynamoDB::Table").items():
        assert props.get("SSESpecification") == {"SSEEnabled": True, "SSEType": "KMS", "KMSMasterKeyId": KEY_ARN}, name
    for name, props in of_type(stack, "AWS::S3::Bucket").items():
        (rule,) = props["BucketEncryption"]["ServerSideEncryptionConfiguration"]
        assert rule["ServerSideEncryptionByDefault"] == {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": KEY_ARN}, name
    for name, props in of_type(stack, "AWS::Logs::LogGroup").items():
        assert props.get("KmsKeyId") == KEY_ARN, name
    for name, props in of_type(stack, "AWS::CloudTrail::Trail").items():
        assert props.get("KMSKeyId") == KEY_ARN, name
        assert props.get("EnableLogFileValidation") is True, name


def test_buckets_are_private_tls_only_and_expire(stack: dict[str, Any]) -> None:
    policies = of_type(stack, "AWS::S3::BucketPolicy")
    for name, props in of_type(stack, "AWS::S3::Bucket").items():
        assert props["PublicAccessBlockConfiguration"] == {
            "BlockPublicAcls": True,
            "BlockPublicPolicy": True,
            "IgnorePublicAcls": True,
            "RestrictPublicBuckets": True,
        }, name
        assert props["OwnershipControls"] == {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]}, name
        assert props["VersioningConfiguration"] == {"Status": "Enabled"}, name
        rules = props["LifecycleConfiguration"]["Rules"]
        assert any("ExpirationInDays" in r and "NoncurrentVersionExpiration" in r for r in rules), name
        (policy,) = [p for p in policies.values() if p["Bucket"] == ref(name)]
        deny = [s for s in policy["PolicyDocument"]["Statement"] if s["Effect"] == "Deny"]
        assert deny == [
            {
                "Sid": "DenyInsecureTransport",
                "Effect": "Deny",
                "Principal": "*",
                "Action": "s3:*",
                "Resource": [getatt(name), {"Fn::Sub": f"${{{name}.Arn}}/*"}],
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
            }
        ], name


# ----------------------------------------------------------------------------------------- queues, DLQs, alarms


def test_sqs_events_report_partial_failures_with_bounded_concurrency(stack: dict[str, Any]) -> None:
    queues = of_type(stack, "AWS::SQS::Queue")
    seen = 0
    for name, props in functions(stack).items():
        for event in props.get("Events", {}).values():
            if event["Type"] != "SQS":
                continue
            seen += 1
            ev = event["Properties"]
            assert ev["FunctionResponseTypes"] == ["ReportBatchItemFailures"], name
            assert ev["ScalingConfig"] == {"MaximumConcurrency": 5}, name
            queue = ev["Queue"]["Fn::GetAtt"][0]
            timeout = int(props["Timeout"])
            window = int(ev.get("MaximumBatchingWindowInSeconds", 0))
            assert int(queues[queue]["VisibilityTimeout"]) >= 6 * timeout + window, (name, queue)
    assert seen == sum(1 for n in functions(stack) if n in ("TrailIngestFunction", "EventsIngestFunction"))


def _dead_letter_queues(stack: Mapping[str, Any]) -> set[str]:
    dlqs = set()
    for props in of_type(stack, "AWS::SQS::Queue").values():
        if "RedrivePolicy" in props:
            dlqs.add(props["RedrivePolicy"]["deadLetterTargetArn"]["Fn::GetAtt"][0])
    for props in functions(stack).values():
        if "DeadLetterQueue" in props:
            dlqs.add(props["DeadLetterQueue"]["TargetArn"]["Fn::GetAtt"][0])
    for mapping in stream_mappings(stack).values():
        dlqs.add(mapping["DestinationConfig"]["OnFailure"]["Destination"]["Fn::GetAtt"][0])
    return dlqs


def test_every_queue_has_a_dlq_and_every_dlq_an_alarm(stack: dict[str, Any]) -> None:
    queues = of_type(stack, "AWS::SQS::Queue")
    dlqs = _dead_letter_queues(stack)
    assert dlqs <= set(queues)
    for name, props in queues.items():
        if name in dlqs:
            assert "RedrivePolicy" not in props and int(props["MessageRetentionPeriod"]) == 1_209_600, name
        else:
            assert props["RedrivePolicy"]["maxReceiveCount"] == 5, name
    alarmed = {
        a["Dimensions"][0]["Value"]["Fn::GetAtt"][0]
        for a in of_type(stack, "AWS::CloudWatch::Alarm").values()
        if a["Namespace"] == "AWS/SQS"
        and a["MetricName"] == "ApproximateNumberOfMessagesVisible"
        and a["Dimensions"][0]["Name"] == "QueueName"
        and a["AlarmActions"] == [ref("FindingsTopic")]
        and a["ComparisonOperator"] == "GreaterThanThreshold"
        and a["Threshold"] == 0
    }
    assert alarmed == dlqs
    # The EventBridge rule parks undeliverable events in the events DLQ too.
    for rule in of_type(stack, "AWS::Events::Rule").values():
        for target in rule["Targets"]:
            assert target["DeadLetterConfig"]["Arn"]["Fn::GetAtt"][0] in dlqs


WATCHER_RESOURCES = {
    "StreamItemSizeFunction",
    "StreamItemSizeRole",
    "StreamItemSizeLogGroup",
    "ItemSizeStreamFailures",
    "ItemSizeStreamFailuresAlarm",
}


@pytest.mark.parametrize(
    "arns",
    [[], [DOCUMENTS_STREAM_ARN], [ORDERS_STREAM_ARN, DOCUMENTS_STREAM_ARN]],
    ids=["none", "one", "two"],
)
def test_stream_watcher_reads_exactly_the_opted_in_streams(template: dict[str, Any], arns: list[str]) -> None:
    """One stream event source per listed stream ARN, and nothing of the watcher when none is listed."""
    stack = resolve(template, {**VARIANTS["existing-bucket"], "ItemSizeStreamArns": ",".join(arns)})
    mappings = stream_mappings(stack)
    if not arns:
        assert not mappings and not WATCHER_RESOURCES & set(stack["Resources"]), "the watcher is opt-in"
        assert "ItemSizeStreamFailuresUrl" not in stack["Outputs"]
        return
    assert set(stack["Resources"]) >= WATCHER_RESOURCES
    assert sorted(m["EventSourceArn"] for m in mappings.values()) == sorted(arns)
    for mapping in mappings.values():
        assert {k: v for k, v in mapping.items() if k != "EventSourceArn"} == {
            "FunctionName": ref("StreamItemSizeFunction"),
            "StartingPosition": "LATEST",
            "BatchSize": 100,
            "MaximumBatchingWindowInSeconds": 5,
            "FunctionResponseTypes": ["ReportBatchItemFailures"],
            "BisectBatchOnFunctionError": True,
            "MaximumRetryAttempts": 5,
            "MaximumRecordAgeInSeconds": 21600,
            "DestinationConfig": {"OnFailure": {"Destination": getatt("ItemSizeStreamFailures")}},
            "FilterCriteria": {"Filters": [{"Pattern": '{"eventName": ["INSERT", "MODIFY"]}'}]},
        }
        (pattern,) = mapping["FilterCriteria"]["Filters"]
        assert json.loads(pattern["Pattern"]) == {"eventName": ["INSERT", "MODIFY"]}  # valid JSON, writes only
    # The poller's stream reads name exactly the parameter's ARNs (CloudFormation passes the list).
    statements = role_statements(stack, "StreamItemSizeRole")
    reads = [s for s in statements if set(as_list(s["Action"])) & STREAM_READS]
    assert [(set(as_list(s["Action"])), s["Resource"]) for s in reads] == [(set(STREAM_READS), ITEM_SIZE_STREAM_ARNS)]
    props = function_props(stack, "StreamItemSizeFunction")
    assert "Events" not in props, "the mappings are the function's only triggers"
    # The function may run for a whole batch: each record may need a state-table read and write.
    assert int(props["Timeout"]) >= 30


def test_item_size_stream_arns_pattern(template: dict[str, Any]) -> None:
    pattern = template["Parameters"]["ItemSizeStreamArns"]["AllowedPattern"]
    for good in ("", ORDERS_STREAM_ARN, DOCUMENTS_STREAM_ARN):
        assert re.fullmatch(pattern, good), good
    for bad in (
        "arn:aws:dynamodb:us-east-1:111122223333:table/Orders",  # the table, not its stream
        "arn:aws:dynamodb:us-east-1:111122223333:table/Orders/stream/*",  # no wildcards
        "arn:aws:kinesis:us-east-1:111122223333:stream/Orders",
    ):
        assert not re.fullmatch(pattern, bad), bad


def test_scheduled_functions_have_their_schedule_and_an_errors_alarm(stack: dict[str, Any]) -> None:
    alarms = of_type(stack, "AWS::CloudWatch::Alarm")
    scheduled = {
        name: props
        for name, props in functions(stack).items()
        if any(e["Type"] == "Schedule" for e in props.get("Events", {}).values())
    }
    # the capture controller too: it advises with an existing trail; the model review only where it is enabled
    assert set(scheduled) - OPTIONAL_SCHEDULED == set(SCHEDULED) - OPTIONAL_SCHEDULED
    for name, props in scheduled.items():
        schedule, alarm = SCHEDULED[name]
        (event,) = props["Events"].values()
        assert event["Properties"]["Schedule"] == schedule, name
        assert alarms[alarm]["Dimensions"] == [{"Name": "FunctionName", "Value": ref(name)}], name
        assert alarms[alarm]["Namespace"] == "AWS/Lambda" and alarms[alarm]["MetricName"] == "Errors", name
        assert alarms[alarm]["AlarmActions"] == [ref("FindingsTopic")], name
    audit = scheduled["MetricsAuditFunction"]
    # The daily billing run: 15 minutes (it stops starting work in its last minute) and a full vCPU
    assert int(audit["Timeout"]) == 900 and int(audit["MemorySize"]) >= 1769


def test_weekly_report_link_and_bucket(stack: dict[str, Any]) -> None:
    props = function_props(stack, "WeeklyReportFunction")
    env = props["Environment"]["Variables"]
    assert env["REPORTS_BUCKET"] == ref("ReportsBucket")
    assert "report_link_expiry_seconds" in DOCUMENT_SETTINGS  # the configuration document sets it
    with pytest.raises(ConfigurationError):  # SigV4 presigned URLs live at most 7 days
        settings_from_env({"ANALYSIS_CONFIG_JSON": '{"service": {"report_link_expiry_seconds": 604801}}'})
    deploy = (ROOT / "docs" / "deploy.md").read_text()
    line = next(x for x in deploy.splitlines() if "`report_link_expiry_seconds`" in x)
    assert "session" in line, "document that the role session bounds the link's lifetime"


def test_every_function_logs_to_its_own_group_with_retention(stack: dict[str, Any]) -> None:
    log_groups = of_type(stack, "AWS::Logs::LogGroup")
    used = [props["LoggingConfig"]["LogGroup"]["Ref"] for props in functions(stack).values()]
    assert sorted(used) == sorted(log_groups), "one log group per function, none unused"
    for name in used:
        assert log_groups[name]["RetentionInDays"] == 30, name


# --------------------------------------------------------------------------------------------------- state table


def test_state_table_follows_the_key_design(template: dict[str, Any]) -> None:
    (table,) = of_type(template, "AWS::DynamoDB::Table").values()
    assert table["BillingMode"] == "PAY_PER_REQUEST"
    assert table["KeySchema"] == [
        {"AttributeName": keys.PK, "KeyType": "HASH"},
        {"AttributeName": keys.SK, "KeyType": "RANGE"},
    ]
    gsis = {gsi["IndexName"]: (gsi["KeySchema"], gsi["Projection"]) for gsi in table["GlobalSecondaryIndexes"]}
    assert gsis == {
        index: (
            [{"AttributeName": pk, "KeyType": "HASH"}, {"AttributeName": sk, "KeyType": "RANGE"}],
            {"ProjectionType": "ALL"},
        )
        for index, pk, sk in ((keys.GSI1, keys.GSI1_PK, keys.GSI1_SK), (keys.GSI2, keys.GSI2_PK, keys.GSI2_SK))
    }
    key_attrs = {keys.PK, keys.SK, keys.GSI1_PK, keys.GSI1_SK, keys.GSI2_PK, keys.GSI2_SK}
    assert {a["AttributeName"]: a["AttributeType"] for a in table["AttributeDefinitions"]} == dict.fromkeys(
        key_attrs, "S"
    )
    assert table["TimeToLiveSpecification"] == {"AttributeName": keys.TTL_ATTR, "Enabled": True}
    assert table["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert table["DeletionProtectionEnabled"] is True  # docs/deploy.md says how to delete the stack
    assert "TableName" not in table, "a generated name lets two stacks live in one account"


# ------------------------------------------------------------------------------------------ environment/Settings


def _environment(template: Mapping[str, Any]) -> dict[str, Any]:
    return dict(template["Globals"]["Function"]["Environment"]["Variables"])


def test_environment_is_exactly_the_settings_fields(template: dict[str, Any]) -> None:
    """Every Settings field reaches the functions once: from the environment, or from the configuration document."""
    names = {n for n in _environment(template) if not n.startswith("POWERTOOLS_") or n.lower() in Settings.model_fields}
    fields = set(Settings.model_fields)
    assert {n.lower() for n in names} <= fields, (
        f"not Settings fields: {sorted(n for n in names if n.lower() not in fields)}"
    )
    assert all(n == n.upper() for n in names)
    assert fields >= DOCUMENT_SETTINGS
    shadowed = {n.lower() for n in names} & DOCUMENT_SETTINGS
    assert not shadowed, f"set by the template, so the configuration document could not: {sorted(shadowed)}"
    missing = fields - {n.lower() for n in names} - DOCUMENT_SETTINGS - set(SETTINGS_NOT_DEPLOYED)
    assert not missing, f"Settings fields the functions do not get (add them to Globals): {sorted(missing)}"
    assert not {n.lower() for n in names} & set(SETTINGS_NOT_DEPLOYED)
    for name, res in resources(template).items():
        if res["Type"] == "AWS::Serverless::Function":
            assert "Environment" not in res["Properties"], f"{name}: use Globals"


def _env_with(template: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, str]:
    env = {}
    for var, value in _environment(template).items():
        if isinstance(value, dict):
            (target,) = value.values()
            if isinstance(target, list):  # Fn::GetAtt [resource, attribute]; Fn::Join [sep, [...]]
                target = ".".join(t if isinstance(t, str) else json.dumps(t) for t in target)
            env[var] = str(params[target]) if target in params else f"dummy-{target}"
        else:
            env[var] = str(value)
    return env


def test_parameter_defaults_make_valid_settings(template: dict[str, Any]) -> None:
    params = parameter_values(template, {})
    settings = settings_from_env(_env_with(template, params))
    settings.analysis_config()
    assert settings.state_table_name == "dummy-StateTable"
    assert settings.slack_secret_arn == ""
    assert settings.redact_keys is True and settings.publish_resolved is False
    assert settings.member_role_name == "DdbTrafficAuditorMember"  # what MetricsAuditRole may assume


def test_every_value_cloudformation_accepts_is_a_valid_setting(template: dict[str, Any]) -> None:
    """Parameter bounds sit inside the Settings constraints, so no accepted deploy value fails a cold start."""
    env = _environment(template)
    parameters = template["Parameters"]
    for var, value in env.items():
        if not (isinstance(value, dict) and value.get("Ref") in parameters):
            continue
        spec = parameters[value["Ref"]]
        candidates = [spec.get("Default"), spec.get("MinValue"), spec.get("MaxValue"), *spec.get("AllowedValues", [])]
        for candidate in [c for c in candidates if c is not None]:
            settings_from_env({var: str(candidate)})  # raises ConfigurationError if out of range


def test_parameters_are_described(template: dict[str, Any]) -> None:
    for name, spec in template["Parameters"].items():
        assert len(spec.get("Description", "")) >= 20, name


MAX_PARAMETERS = 15


def test_a_guided_deploy_asks_few_grouped_labelled_questions(template: dict[str, Any]) -> None:
    """At most 15 parameters, each with a default, in exactly one labelled group; the template lists them in the
    groups' order (``sam deploy --guided`` asks them in template order, the console by group)."""
    parameters = template["Parameters"]
    assert len(parameters) <= MAX_PARAMETERS, f"{len(parameters)} parameters: move advanced ones to the document"
    assert all("Default" in spec for spec in parameters.values())
    interface = template["Metadata"]["AWS::CloudFormation::Interface"]
    grouped = [name for group in interface["ParameterGroups"] for name in group["Parameters"]]
    assert sorted(grouped) == sorted(parameters) and len(set(grouped)) == len(grouped), "each in exactly one group"
    assert grouped == list(parameters), "list the parameters in the groups' order"
    assert all(group["Label"]["default"] for group in interface["ParameterGroups"])
    labels = interface["ParameterLabels"]
    assert set(labels) == set(parameters) and all(labels[name]["default"] for name in parameters)
    # The trail bucket is asked first, and has no placeholder: the rule requires it unless the stack makes a trail.
    assert grouped[0] == "TrailBucketName" and parameters["TrailBucketName"]["Default"] == ""
    (assertion,) = template["Rules"]["ExistingTrailBucketNeedsName"]["Assertions"]
    assert assertion["Assert"] == {"Fn::Not": [{"Fn::Equals": [ref("TrailBucketName"), ""]}]}


def test_docs_deploy_lists_every_question(template: dict[str, Any]) -> None:
    """docs/deploy.md's table of questions names every parameter, in the template's order."""
    text = (ROOT / "docs" / "deploy.md").read_text()
    section = text.split("## The questions", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^\|[^|]*\| `(\w+)` \|", section, re.M)
    assert listed == list(template["Parameters"])


def test_the_document_settings_are_documented() -> None:
    """docs/deploy.md lists every setting of the configuration document's service section, with its default."""
    text = (ROOT / "docs" / "deploy.md").read_text()
    documented = set(re.findall(r"^\| `(\w+)` \|", text, re.M))
    assert documented >= DOCUMENT_SETTINGS, f"not in docs/deploy.md: {sorted(DOCUMENT_SETTINGS - documented)}"
    example = json.loads(re.search(r"```json\n(.*?)```", text, re.S).group(1))  # type: ignore[union-attr]
    settings = settings_from_env({"ANALYSIS_CONFIG_JSON": json.dumps(example)})
    settings.analysis_config()
    assert set(example["service"]) <= DOCUMENT_SETTINGS


# -------------------------------------------------------------------------------------------------- trail/events


def test_new_trail_logs_dynamodb_data_events_only(template: dict[str, Any]) -> None:
    stack = resolve(template, VARIANTS["all-features"])
    trail = stack["Resources"]["DataEventsTrail"]["Properties"]
    # It starts with the capture controller's always-on selector (scans and PartiQL); the controller adds tables.
    (selector,) = trail["AdvancedEventSelectors"]
    assert selector == {
        "Name": ALWAYS_ON_NAME,
        "FieldSelectors": [
            {"Field": "eventCategory", "Equals": ["Data"]},
            {"Field": "resources.type", "Equals": ["AWS::DynamoDB::Table"]},
            {"Field": "eventName", "Equals": list(ALWAYS_ON_EVENTS)},
        ],
    }
    assert trail["S3BucketName"] == ref("TrailBucket") and trail["IsLogging"] is True
    # The new bucket notifies the trail queue about log files only (not digests).
    notification = stack["Resources"]["TrailBucket"]["Properties"]["NotificationConfiguration"]
    assert notification == {
        "QueueConfigurations": [
            {
                "Event": "s3:ObjectCreated:*",
                "Queue": getatt("TrailQueue"),
                "Filter": {
                    "S3Key": {
                        "Rules": [
                            {"Name": "prefix", "Value": {"Fn::Sub": "AWSLogs/${AWS::AccountId}/CloudTrail/"}},
                            {"Name": "suffix", "Value": ".json.gz"},
                        ]
                    }
                },
            }
        ]
    }


def test_eventbridge_rule_matches_dynamodb_data_events(template: dict[str, Any]) -> None:
    stack = resolve(template, VARIANTS["all-features"])
    rule = stack["Resources"]["DynamoDBDataEventsRule"]["Properties"]
    assert rule["EventPattern"] == {
        "source": ["aws.dynamodb"],
        "detail-type": ["AWS API Call via CloudTrail"],
        "detail": {"eventCategory": ["Data"]},
    }
    (target,) = rule["Targets"]
    assert target["Arn"] == getatt("EventsQueue")
    policy = stack["Resources"]["EventsQueuePolicy"]["Properties"]["PolicyDocument"]["Statement"][0]
    assert policy["Principal"] == {"Service": "events.amazonaws.com"}
    assert policy["Condition"] == {"ArnEquals": {"aws:SourceArn": getatt("DynamoDBDataEventsRule")}}


# ----------------------------------------------------------------------------------- S3 notification (existing bucket)


def _client(service: str, url: str) -> Any:
    return boto3.client(
        service,
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


def _receive_all(sqs: Any, queue_url: str) -> list[str]:
    bodies = []
    while True:
        got = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0)
        if not got.get("Messages"):
            return bodies
        for message in got["Messages"]:
            bodies.append(message["Body"])
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])


def _run_output_command(command: str, s3: Any, workdir: Path) -> None:
    """Run a command the stack outputs (``aws s3api`` steps joined by ``&&``, files between them, ``jq``): the
    ``aws s3api`` calls through boto3 against moto, ``jq`` itself."""
    jq = shutil.which("jq")
    if jq is None:
        pytest.skip("jq is not installed")
    for step in command.split(" && "):
        argv = shlex.split(step)
        redirect = argv.index(">") if ">" in argv else None
        target = workdir / argv[redirect + 1] if redirect is not None else None
        argv = argv[:redirect] if redirect is not None else argv
        if argv[:3] == ["aws", "s3api", "get-bucket-notification-configuration"]:
            got = s3.get_bucket_notification_configuration(Bucket=argv[argv.index("--bucket") + 1])
            got.pop("ResponseMetadata", None)
            assert target is not None
            target.write_text(json.dumps(got) if got else "")  # the CLI prints nothing for an empty configuration
        elif argv[:3] == ["aws", "s3api", "put-bucket-notification-configuration"]:
            file = argv[argv.index("--notification-configuration") + 1].removeprefix("file://")
            configuration = json.loads((workdir / file).read_text())
            s3.put_bucket_notification_configuration(
                Bucket=argv[argv.index("--bucket") + 1], NotificationConfiguration=configuration
            )
        else:
            assert argv[0] == "jq" and target is not None, step
            out = subprocess.run([jq, *argv[1:]], cwd=workdir, capture_output=True, text=True, check=True)
            target.write_text(out.stdout)


def _render(node: Any, values: Mapping[str, str]) -> Any:
    """``node`` with ``Ref`` and ``Fn::Sub`` of the given names replaced by their values."""
    if isinstance(node, dict) and set(node) == {"Ref"}:
        return values[node["Ref"]]
    if isinstance(node, dict) and set(node) == {"Fn::Sub"} and isinstance(node["Fn::Sub"], str):
        return re.sub(r"\$\{([^}]+)\}", lambda m: values[m.group(1)], node["Fn::Sub"])
    if isinstance(node, dict):
        return {key: _render(child, values) for key, child in node.items()}
    if isinstance(node, list):
        return [_render(child, values) for child in node]
    return node


LOG_KEY = "AWSLogs/111122223333/CloudTrail/us-east-1/2026/12/01/111122223333_CloudTrail_us-east-1_x.json.gz"
NOT_LOGS = (
    "AWSLogs/111122223333/CloudTrail/us-east-1/2026/12/01/notes.txt",  # other suffix
    "elsewhere/111122223333_CloudTrail_us-east-1_x.json.gz",  # other prefix
)
#: A notification the bucket already has (a SIEM's queue for every new object under siem/): it must stay.
SIEM_QUEUE = {
    "Id": "siem",
    "Events": ["s3:ObjectCreated:*"],
    "Filter": {"Key": {"FilterRules": [{"Name": "prefix", "Value": "siem/"}]}},
}


def _bucket_with_siem_and_queues(moto_url: str, bucket: str) -> tuple[Any, Any, str, str, str]:
    """(s3, sqs, trail queue URL, its ARN, SIEM queue ARN): the bucket already notifies a SIEM queue."""
    s3, sqs = _client("s3", moto_url), _client("sqs", moto_url)
    s3.create_bucket(Bucket=bucket)
    arns = []
    for name in (f"{bucket}-trail-queue", f"{bucket}-siem"):
        url = sqs.create_queue(QueueName=name)["QueueUrl"]
        arns.append(sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"])
    siem = {**SIEM_QUEUE, "QueueArn": arns[1]}
    s3.put_bucket_notification_configuration(Bucket=bucket, NotificationConfiguration={"QueueConfigurations": [siem]})
    trail_url = sqs.get_queue_url(QueueName=f"{bucket}-trail-queue")["QueueUrl"]
    _receive_all(sqs, trail_url)
    return s3, sqs, trail_url, arns[0], arns[1]


def test_s3_notification_command_adds_the_queue_and_keeps_the_buckets_notifications(
    template: dict[str, Any], moto_url: str, tmp_path: Path
) -> None:
    """The documented command, run against S3 (moto), delivers new trail log objects to the trail queue and leaves
    the bucket's other notification in place (run twice: still one auditor notification)."""
    overrides = {**VARIANTS["existing-bucket-s3-notification"], "TrailPrefix": "AWSLogs/111122223333/CloudTrail/"}
    stack = resolve(template, overrides)
    params = parameter_values(template, overrides)
    bucket = params["TrailBucketName"]
    s3, sqs, queue_url, queue_arn, siem_arn = _bucket_with_siem_and_queues(moto_url, bucket)
    assert "EnableEventBridgeCommand" not in stack["Outputs"] and "TrailObjectsRule" not in stack["Resources"]
    values = {"TrailBucketName": bucket, "TrailPrefix": params["TrailPrefix"], "TrailQueue.Arn": queue_arn}
    command = _render(stack["Outputs"]["S3NotificationCommand"]["Value"], values)
    for _ in range(2):
        _run_output_command(command, s3, tmp_path)
    configs = s3.get_bucket_notification_configuration(Bucket=bucket)["QueueConfigurations"]
    assert sorted((c["Id"], c["QueueArn"]) for c in configs) == [("ddb-traffic-auditor", queue_arn), ("siem", siem_arn)]
    assert json.loads((tmp_path / "notification-before.json").read_text())["QueueConfigurations"][0]["Id"] in (
        "siem",
        "ddb-traffic-auditor",
    )
    _receive_all(sqs, queue_url)  # S3's test events
    for key in (LOG_KEY, *NOT_LOGS):
        s3.put_object(Bucket=bucket, Key=key, Body=b"{}")
    bodies = _receive_all(sqs, queue_url)
    assert len(bodies) == 1
    (ref_,) = parse_s3_notification(bodies[0])  # what the trail ingest function reads
    assert (ref_.bucket, ref_.key, ref_.event_name) == (bucket, LOG_KEY, "ObjectCreated:Put")


def test_eventbridge_path_delivers_new_log_objects_and_leaves_the_notifications_alone(
    template: dict[str, Any], moto_url: str, tmp_path: Path
) -> None:
    """The default path, on moto: the EnableEventBridgeCommand output turns EventBridge on for the bucket (its SIEM
    notification stays), the stack's rule (its event pattern as deployed) takes the new log object's Object Created
    event to the trail queue, and the trail ingest's parser reads it."""
    overrides = {**VARIANTS["existing-bucket"], "TrailPrefix": "AWSLogs/111122223333/"}
    stack = resolve(template, overrides)
    params = parameter_values(template, overrides)
    bucket = "eventbridge-trail-bucket"
    s3, sqs, queue_url, queue_arn, siem_arn = _bucket_with_siem_and_queues(moto_url, bucket)
    assert "S3NotificationCommand" not in stack["Outputs"]
    _run_output_command(
        _render(stack["Outputs"]["EnableEventBridgeCommand"]["Value"], {"TrailBucketName": bucket}), s3, tmp_path
    )
    written = json.loads((tmp_path / "notification.json").read_text())  # moto does not read EventBridge back
    assert written["EventBridgeConfiguration"] == {} and written["QueueConfigurations"][0]["Id"] == "siem"
    configuration = s3.get_bucket_notification_configuration(Bucket=bucket)
    assert [(c["Id"], c["QueueArn"]) for c in configuration["QueueConfigurations"]] == [("siem", siem_arn)]

    rule = stack["Resources"]["TrailObjectsRule"]["Properties"]
    values = {"TrailBucketName": bucket, "TrailPrefix": params["TrailPrefix"], "AWS::AccountId": "123456789012"}
    events = _client("events", moto_url)
    events.put_rule(Name="trail-objects", EventPattern=json.dumps(_render(rule["EventPattern"], values)))
    (target,) = rule["Targets"]
    assert target["Arn"] == getatt("TrailQueue") and target["DeadLetterConfig"]["Arn"] == getatt("TrailDLQ")
    events.put_targets(Rule="trail-objects", Targets=[{"Id": target["Id"], "Arn": queue_arn}])
    for key in (LOG_KEY, *NOT_LOGS):
        s3.put_object(Bucket=bucket, Key=key, Body=b"{}")
    bodies = _receive_all(sqs, queue_url)
    assert len(bodies) == 1
    (ref_,) = parse_s3_notification(bodies[0])
    assert (ref_.bucket, ref_.key) == (bucket, LOG_KEY)
    assert ref_.event_name.startswith("ObjectCreated:")  # what the ingest reads (moto's "reason" is not AWS's)


def test_queue_policy_lets_only_the_trail_bucket_or_its_rule_send(stack: dict[str, Any]) -> None:
    statements = stack["Resources"]["TrailQueuePolicy"]["Properties"]["PolicyDocument"]["Statement"]
    allow = [s for s in statements if s["Effect"] == "Allow"]
    assert len(allow) == 1 and allow[0]["Action"] == "sqs:SendMessage"
    bucket_owner = ref("TrailBucketAccountId") if "TrailBucketInOtherAccount" in _true_conditions(stack) else None
    if "TrailObjectsRule" in stack["Resources"]:  # EventBridge: the stack's rule, to the queue and its DLQ
        assert allow[0]["Principal"] == {"Service": "events.amazonaws.com"}
        assert allow[0]["Resource"] == [getatt("TrailQueue"), getatt("TrailDLQ")]
        assert allow[0]["Condition"] == {"ArnEquals": {"aws:SourceArn": getatt("TrailObjectsRule")}}
        pattern = stack["Resources"]["TrailObjectsRule"]["Properties"]["EventPattern"]
        assert pattern["detail"]["bucket"]["name"] == [ref("TrailBucketName")]
        assert pattern["account"] == [bucket_owner or ref("AWS::AccountId")]
        policies = of_type(stack, "AWS::Events::EventBusPolicy")
        if bucket_owner:  # the log-archive account forwards the bucket's events to this account's default bus
            (policy,) = policies.values()
            principal = {"Fn::Sub": "arn:${AWS::Partition}:iam::${TrailBucketAccountId}:root"}
            assert policy["Statement"]["Principal"] == {"AWS": principal}
            assert policy["Statement"]["Action"] == "events:PutEvents"
        else:
            assert not policies
        return
    assert allow[0]["Principal"] == {"Service": "s3.amazonaws.com"} and allow[0]["Resource"] == getatt("TrailQueue")
    source = allow[0]["Condition"]["ArnEquals"]["aws:SourceArn"]
    if "TrailBucket" in stack["Resources"]:
        name, variables = stack["Resources"]["TrailBucket"]["Properties"]["BucketName"]["Fn::Sub"]
        assert source == {"Fn::Sub": [f"arn:${{AWS::Partition}}:s3:::{name}", variables]}
        assert stack["Resources"]["TrailBucket"]["DependsOn"] == "TrailQueuePolicy"
    else:
        assert source == {"Fn::Sub": "arn:${AWS::Partition}:s3:::${TrailBucketName}"}
    # an organisation trail's bucket in a log-archive account notifies as that account
    assert allow[0]["Condition"]["StringEquals"] == {"aws:SourceAccount": bucket_owner or ref("AWS::AccountId")}


def _true_conditions(stack: Mapping[str, Any]) -> set[str]:
    """The conditions true in a resolved variant (told by the parameters it was resolved with)."""
    params = stack["Parameters"]
    other_account = params["TrailBucketAccountId"]["Default"] and params["CreateTrail"]["Default"] == "false"
    return {"TrailBucketInOtherAccount"} if other_account else set()


# --------------------------------------------------------------------------------------------- references, lint


def _references(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        if set(node) == {"Ref"}:
            yield node["Ref"]
        elif set(node) == {"Fn::GetAtt"}:
            yield node["Fn::GetAtt"][0]
        elif set(node) == {"Fn::Sub"}:
            text, local = (node["Fn::Sub"], {}) if isinstance(node["Fn::Sub"], str) else node["Fn::Sub"]
            for var in re.findall(r"\$\{([^!}][^}]*)\}", text):
                if var not in local:
                    yield var.split(".")[0]
            yield from _references(local)
        else:
            for child in node.values():
                yield from _references(child)
    elif isinstance(node, list):
        for child in node:
            yield from _references(child)


def test_every_reference_exists_in_every_variant(stack: dict[str, Any]) -> None:
    known = set(stack["Resources"]) | set(stack["Parameters"]) | PSEUDO_PARAMETERS
    for section in ("Resources", "Outputs", "Globals"):
        dangling = set(_references(stack.get(section, {}))) - known
        assert not dangling, f"{section}: {sorted(dangling)}"
    for name, res in stack["Resources"].items():
        for dep in as_list(res.get("DependsOn", [])):
            assert dep in stack["Resources"], (name, dep)


def test_cfn_lint_is_clean() -> None:
    matches = lint_file(TEMPLATE_PATH)
    assert not matches, "\n".join(str(m) for m in matches)


# ------------------------------------------------------------------------------------------ build and samconfig


def test_makefile_builds_for_the_template_runtime(template: dict[str, Any], tmp_path: Path) -> None:
    glob = template["Globals"]["Function"]
    assert f"python{makefile_var('LAMBDA_PYTHON')}" == glob["Runtime"]
    arch = {"arm64": "aarch64", "x86_64": "x86_64"}[glob["Architectures"][0]]
    assert makefile_var("LAMBDA_PLATFORM").endswith(f"_{arch}")
    make = shutil.which("make")
    assert make, "make is required"
    built = {name for name, res in resources(template).items() if res.get("Metadata", {}).get("BuildMethod")}
    assert built == set(makefile_list("LAMBDA_FUNCTIONS")), "LAMBDA_FUNCTIONS lists exactly the template's functions"
    for name, res in resources(template).items():
        if res.get("Metadata", {}).get("BuildMethod") != "makefile":
            continue
        out = subprocess.run(
            [make, "-n", "-C", str(ROOT), f"build-{name}", f"ARTIFACTS_DIR={tmp_path / name}"],
            capture_output=True,
            text=True,
            check=False,
        )
        assert out.returncode == 0, out.stderr
        assert f"{tmp_path / name}" in out.stdout, out.stdout
        if res["Type"] == "AWS::Serverless::LayerVersion":  # the dependencies, under python/, without the project
            assert f"{tmp_path / name}/python" in out.stdout and '/python/"auditor' in out.stdout, out.stdout
        else:  # the project's code only
            assert "cp -a .aws-sam/lambda-package/auditor .aws-sam/lambda-package/handlers" in out.stdout, out.stdout


def test_samconfig_example_matches_the_template(template: dict[str, Any]) -> None:
    config = tomllib.loads((ROOT / "samconfig.toml").read_text())
    assert config["default"]["build"]["parameters"]["build_in_source"] is True
    deploy = config["default"]["deploy"]["parameters"]
    assert deploy["capabilities"] == "CAPABILITY_IAM"
    # No placeholder values: the guided deploy asks for the trail bucket and saves the answers here.
    assert "parameter_overrides" not in deploy
    overrides = {}
    for item in deploy.get("parameter_overrides", []):
        # SAM splits an unquoted value at spaces ("rate(15 minutes)" -> "rate(15"): every value is quoted.
        match = re.fullmatch(r'(\w+)="([^"]*)"', item)
        assert match, f'samconfig.toml: write {item!r} as Name="value"'
        overrides[match.group(1)] = match.group(2)
    parameters = template["Parameters"]
    for name, value in overrides.items():
        assert name in parameters, f"samconfig.toml sets unknown parameter {name}"
        spec = parameters[name]
        if "AllowedValues" in spec:
            assert value in [str(v) for v in spec["AllowedValues"]], (name, value)
        if "AllowedPattern" in spec:
            assert re.fullmatch(spec["AllowedPattern"], value), (name, value)
    resolve(template, overrides)  # a complete, resolvable deployment


def test_capture_controller_manages_only_the_stacks_own_trail(stack: dict[str, Any]) -> None:
    """In every stack. CreateTrail=true: CloudTrail access is GetEventSelectors/PutEventSelectors on the stack's trail,
    nothing else. An existing trail: no CloudTrail access and an empty CAPTURE_TRAIL_NAME (the controller advises)."""
    props = function_props(stack, "CaptureControllerFunction")
    env = props["Environment"]["Variables"]  # with the globals'
    assert {"audit_budget_percent", "capture_table_arns"} <= DOCUMENT_SETTINGS  # the configuration document
    assert Settings().audit_budget_percent == 1.0
    cloudtrail = [
        st
        for st in role_statements(stack, props["Role"]["Fn::GetAtt"][0])
        if any(a.startswith("cloudtrail:") for a in as_list(st["Action"]))
    ]
    if "DataEventsTrail" not in resources(stack):
        assert env["CAPTURE_TRAIL_NAME"] == "" and cloudtrail == []
        return
    trail_name = stack["Resources"]["DataEventsTrail"]["Properties"]["TrailName"]
    assert env["CAPTURE_TRAIL_NAME"] == trail_name
    assert len(cloudtrail) == 1
    assert sorted(as_list(cloudtrail[0]["Action"])) == ["cloudtrail:GetEventSelectors", "cloudtrail:PutEventSelectors"]
    assert cloudtrail[0]["Resource"] == {"Fn::GetAtt": ["DataEventsTrail", "Arn"]}


MODEL_REVIEW_RESOURCES = {"ModelReviewFunction", "ModelReviewRole", "ModelReviewLogGroup", "ModelReviewErrorsAlarm"}
SECURITY_HUB_RESOURCES = {
    "SecurityHubFunction",
    "SecurityHubRole",
    "SecurityHubLogGroup",
    "SecurityHubDLQ",
    "SecurityHubDLQAlarm",
}


def test_optional_model_review_function(template: dict[str, Any]) -> None:
    """ExtraOutputs (one question, default none) names the optional outputs: model-review deploys the scheduled
    model review, its role, log group and alarm, security-hub the Security Hub sink, both with both; a stack without
    one has none of its resources."""
    spec = template["Parameters"]["ExtraOutputs"]
    assert spec["Default"] == "none"
    assert spec["AllowedValues"] == ["none", "security-hub", "model-review", "security-hub,model-review"]
    for variant, params in VARIANTS.items():
        for outputs in spec["AllowedValues"]:
            names = set(outputs.split(","))
            resources = set(resolve(template, {**params, "ExtraOutputs": outputs})["Resources"])
            present = MODEL_REVIEW_RESOURCES & resources
            assert present == (MODEL_REVIEW_RESOURCES if "model-review" in names else set()), (variant, outputs)
            present = SECURITY_HUB_RESOURCES & resources
            assert present == (SECURITY_HUB_RESOURCES if "security-hub" in names else set()), (variant, outputs)
    stack = resolve(template, VARIANTS["existing-bucket"])
    assert not (MODEL_REVIEW_RESOURCES | SECURITY_HUB_RESOURCES) & set(stack["Resources"]), "off by default"
