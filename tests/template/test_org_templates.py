"""The organisation templates: templates/log-archive.yaml (optional, log-archive account) grants the auditor account
read-only access to the organisation's log files, and notifies the auditor's queue for exactly the prefix the
auditor stack reads; docs/organisation.md gives the same statements for an existing bucket and key."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.template.variants import load_template, resolve

ROOT = Path(__file__).resolve().parents[2]
LOG_ARCHIVE = ROOT / "templates" / "log-archive.yaml"
PARAMS = {
    "BucketName": "org-trail-logs",
    "OrganizationId": "o-a1b2c3d4e5",
    "ManagementAccountId": "999988887777",
    "AuditorAccountId": "111122223333",
}
AUDITOR_ROOT = {"Fn::Sub": "arn:${AWS::Partition}:iam::${AuditorAccountId}:root"}


def _statements(resource: dict[str, Any], key: str) -> list[dict[str, Any]]:
    statements: list[dict[str, Any]] = resource["Properties"][key]["Statement"]
    return statements


def _stack(**extra: str) -> dict[str, Any]:
    return resolve(load_template(LOG_ARCHIVE), {**PARAMS, **extra})


def test_the_auditor_account_may_only_read_log_files_and_decrypt_them_through_s3() -> None:
    stack = _stack()
    resources = stack["Resources"]
    for resource, key, allowed in (
        ("TrailBucketPolicy", "PolicyDocument", {"s3:GetObject"}),
        ("TrailKey", "KeyPolicy", {"kms:Decrypt"}),
    ):
        auditor = [
            s
            for s in _statements(resources[resource], key)
            if isinstance(s["Principal"], dict) and s["Principal"].get("AWS") == AUDITOR_ROOT
        ]
        assert len(auditor) == 1, resource
        assert {auditor[0]["Action"]} == allowed
    [read] = [
        s for s in _statements(resources["TrailBucketPolicy"], "PolicyDocument") if s["Sid"].startswith("Auditor")
    ]
    assert read["Resource"] == {"Fn::Sub": "${TrailBucket.Arn}/AWSLogs/${OrganizationId}/*"}
    [decrypt] = [s for s in _statements(resources["TrailKey"], "KeyPolicy") if s["Sid"].startswith("Auditor")]
    assert decrypt["Condition"] == {"StringEquals": {"kms:ViaService": {"Fn::Sub": "s3.${AWS::Region}.amazonaws.com"}}}


def test_new_log_objects_are_forwarded_to_the_auditor_accounts_bus_by_default() -> None:
    """The auditor stack's default (TrailNotification EventBridge): the bucket sends its events to EventBridge and a
    rule forwards the log objects' Object Created events to the auditor account's default bus, whose policy the
    auditor stack writes (TrailEventsFromBucketAccount)."""
    resources = _stack()["Resources"]
    notification = resources["TrailBucket"]["Properties"]["NotificationConfiguration"]
    assert notification == {"EventBridgeConfiguration": {"EventBridgeEnabled": True}}
    rule = resources["ForwardTrailObjects"]["Properties"]
    assert rule["EventPattern"]["detail"]["object"]["key"] == [{"prefix": {"Fn::Sub": "AWSLogs/${OrganizationId}/"}}]
    (target,) = rule["Targets"]
    bus = {"Fn::Sub": "arn:${AWS::Partition}:events:${AWS::Region}:${AuditorAccountId}:event-bus/default"}
    assert target["Arn"] == bus and target["RoleArn"] == {"Fn::GetAtt": ["ForwardTrailObjectsRole", "Arn"]}
    [put] = resources["ForwardTrailObjectsRole"]["Properties"]["Policies"][0]["PolicyDocument"]["Statement"]
    assert (put["Action"], put["Resource"]) == ("events:PutEvents", bus)


def test_notifications_go_to_the_auditor_queue_for_the_prefix_the_auditor_reads() -> None:
    queue = "arn:aws:sqs:us-east-1:111122223333:auditor-TrailQueue-AbC"
    stack = _stack(AuditorQueueArn=queue)
    [config] = stack["Resources"]["TrailBucket"]["Properties"]["NotificationConfiguration"]["QueueConfigurations"]
    assert config["Queue"] == {"Ref": "AuditorQueueArn"} and config["Event"] == "s3:ObjectCreated:*"
    rules = {r["Name"]: r["Value"] for r in config["Filter"]["S3Key"]["Rules"]}
    assert rules == {"prefix": stack["Outputs"]["TrailPrefix"]["Value"], "suffix": ".json.gz"}
    assert "ForwardTrailObjects" not in stack["Resources"]


def test_the_docs_give_the_same_statements_for_an_existing_bucket_and_key() -> None:
    text = (ROOT / "docs" / "organisation.md").read_text()
    blocks = [json.loads(b) for b in re.findall(r"```json\n(.*?)```", text, re.S)]
    by_sid = {b.get("Sid"): b for b in blocks if "Sid" in b}
    read = by_sid["DdbTrafficAuditorReadsOrganisationLogs"]
    assert (read["Effect"], read["Action"], read["Principal"]) == (
        "Allow",
        "s3:GetObject",
        {"AWS": "arn:aws:iam::AUDITOR_ACCOUNT:root"},
    )
    decrypt = by_sid["DdbTrafficAuditorDecryptsLogFilesThroughS3"]
    assert decrypt["Action"] == "kms:Decrypt"
    assert decrypt["Condition"] == {"StringEquals": {"kms:ViaService": "s3.REGION.amazonaws.com"}}
    [notify] = [b for b in blocks if "QueueConfigurations" in b]
    assert notify["QueueConfigurations"][0]["Events"] == ["s3:ObjectCreated:*"]


def test_the_metrics_audit_may_assume_only_the_member_role_by_its_default_name() -> None:
    """The accounts to audit are settings of the configuration document (read at run time), so the role names the
    one member role it may assume (templates/member-role.yaml's default name) and may list the Organization's
    accounts; the member role's trust policy decides which auditor account gets in."""
    from tests.template.test_template import MEMBER_ROLE_ARN, role_statements
    from tests.template.variants import VARIANTS

    stack = resolve(load_template(), VARIANTS["existing-bucket"])
    sids = {s["Sid"]: s for s in role_statements(stack, "MetricsAuditRole")}
    assert sids["AssumeMemberRole"]["Action"] == "sts:AssumeRole"
    assert sids["AssumeMemberRole"]["Resource"] == MEMBER_ROLE_ARN
    assert sids["ListOrganizationAccounts"]["Action"] == "organizations:ListAccounts"
    env = stack["Globals"]["Function"]["Environment"]["Variables"]
    member = load_template(ROOT / "templates" / "member-role.yaml")["Parameters"]["RoleName"]["Default"]
    assert env["MEMBER_ROLE_NAME"] == member and MEMBER_ROLE_ARN["Fn::Sub"].endswith(f":role/{member}")
