"""Accounts, Regions and coverage-gap classification of the organisation audit (no AWS)."""

from __future__ import annotations

from pathlib import Path

import boto3
import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from auditor.exceptions import InputError
from auditor.sources.org import Target, TargetError, classify_failure, parse_accounts, parse_regions, targets

T = Target("222233334444", "ap-east-1")


def _client_error(code: str, op: str = "ListTables") -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": f"{code} happened"}}, op)


@pytest.mark.parametrize(
    ("exc", "call", "reason"),
    [
        (_client_error("AccessDenied", "AssumeRole"), "sts:AssumeRole", "role_missing"),
        (_client_error("UnrecognizedClientException"), "audit", "region_not_enabled"),
        (
            EndpointConnectionError(endpoint_url="https://dynamodb.xx-east-9.amazonaws.com"),
            "audit",
            "region_not_enabled",
        ),
        (TargetError("dynamodb:ListTables", "AccessDeniedException", "no"), "audit", "access_denied"),
        (TargetError("dynamodb:ListTables", "ThrottlingException", "slow"), "audit", "throttled"),
        (_client_error("InternalServerError"), "audit", "error"),
    ],
)
def test_failures_are_classified(exc: Exception, call: str, reason: str) -> None:
    gap = classify_failure(T, exc, call)
    assert (gap.account, gap.region, gap.reason) == ("222233334444", "ap-east-1", reason)
    assert gap.describe().startswith("222233334444/ap-east-1: " + reason.replace("_", " "))


def test_a_target_error_keeps_its_own_call_and_code() -> None:
    gap = classify_failure(T, TargetError("dynamodb:ListTables", "AccessDeniedException", "not allowed"), "audit")
    assert (gap.call, gap.error_code, gap.message) == ("dynamodb:ListTables", "AccessDeniedException", "not allowed")


def test_regions_all_lists_dynamodb_regions_of_the_partition() -> None:
    regions = parse_regions("all", boto3.Session(region_name="eu-west-1"))
    assert {"us-east-1", "eu-west-1", "ap-southeast-2"} <= set(regions)
    assert not any(r.startswith(("cn-", "us-gov-")) for r in regions)
    assert regions == sorted(regions)


def test_regions_list_default_and_errors() -> None:
    session = boto3.Session(region_name="eu-west-1")
    assert parse_regions(" us-east-1, eu-west-1 ,us-east-1", session) == ["eu-west-1", "us-east-1"]
    assert parse_regions(None, session) == ["eu-west-1"]
    with pytest.raises(InputError, match="not a Region name"):
        parse_regions("us-east-1,Europe", session)


def test_accounts_are_twelve_digits() -> None:
    assert parse_accounts("444455556666, 111122223333") == ["111122223333", "444455556666"]
    with pytest.raises(InputError, match="12-digit"):
        parse_accounts("11112222333a")
    with pytest.raises(InputError, match="no account"):
        parse_accounts(" , ")


def test_targets_are_account_major() -> None:
    assert targets(["a", "b"], ["r1", "r2"]) == [
        Target("a", "r1"),
        Target("a", "r2"),
        Target("b", "r1"),
        Target("b", "r2"),
    ]


def test_the_report_lists_the_audits_coverage_gaps(tmp_path: Path) -> None:
    import json

    from auditor.cli import main

    gap = classify_failure(T, _client_error("AccessDenied", "AssumeRole"), "sts:AssumeRole")
    doc = {"findings": [], "coverage_gaps": [gap.to_dict()], "targets": [], "stats": {"targets": 2}}
    src = tmp_path / "audit.json"
    src.write_text(json.dumps(doc))
    out = tmp_path / "report"
    assert main(["report", "--findings", str(src), "--out", str(out), "--week", "2026-W49"]) == 0
    line = "222233334444/ap-east-1: role missing (sts:AssumeRole: AccessDenied)"
    assert line in (out / "report.md").read_text()
    assert f"<li>{line}</li>" in (out / "report.html").read_text()
