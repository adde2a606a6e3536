"""The live audit over accounts and Regions on a moto server (real HTTP): member roles assumed with sts:AssumeRole,
the Organization listed with organizations:ListAccounts, coverage gaps for what cannot be read."""

from __future__ import annotations

import json
import time
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from auditor.cli import main
from auditor.service.org_audit import run_org_audit
from auditor.sources.inventory import TableSelector
from auditor.sources.org import SessionFactory, Target, organization_accounts, targets
from tests.cw_support import TEST_CONFIG, create_table

OWN = "123456789012"  # moto's default account
MEMBER = "222233334444"
ROLE = "DdbTrafficAuditorMember"


def _member_session(endpoint: str, account: str) -> boto3.Session:
    """A session in ``account`` on moto (moto attributes requests made with assumed-role credentials to it)."""
    sts = boto3.Session().client("sts", endpoint_url=endpoint, region_name="us-east-1")  # not the default session
    creds = sts.assume_role(RoleArn=f"arn:aws:iam::{account}:role/setup", RoleSessionName="setup")["Credentials"]
    return boto3.Session(
        aws_access_key_id=creds["AccessKeyId"],
        aws_secret_access_key=creds["SecretAccessKey"],
        aws_session_token=creds["SessionToken"],
    )


def _tables(session: boto3.Session, region: str, *names: str) -> None:
    ddb = session.client("dynamodb", region_name=region, config=TEST_CONFIG)
    for name in names:
        create_table(ddb, name)


def _window() -> tuple[int, int, int]:
    now = int(time.time())
    end = now - now % 60
    return end - 3_600, end, now


def test_two_accounts_two_regions_are_each_audited_with_their_own_account_and_region(aws_reset: str) -> None:
    own = boto3.Session()
    _tables(own, "us-east-1", "orders")
    _tables(own, "eu-west-1", "orders-eu")
    member = _member_session(aws_reset, MEMBER)
    _tables(member, "us-east-1", "payments")
    _tables(member, "eu-west-1", "payments-eu", "ledger-eu")
    factory = SessionFactory(boto3.Session(region_name="us-east-1"), ROLE, own_account=OWN)
    start, end, now = _window()

    result = run_org_audit(
        factory,
        targets([OWN, MEMBER], ["eu-west-1", "us-east-1"]),
        TableSelector(),
        start=start,
        end=end,
        now=now,
        max_workers=4,
    )

    tables = {(t["account"], t["region"], t["table"]) for t in result.to_dict()["tables"]}
    assert tables == {
        (OWN, "us-east-1", "orders"),
        (OWN, "eu-west-1", "orders-eu"),
        (MEMBER, "us-east-1", "payments"),
        (MEMBER, "eu-west-1", "payments-eu"),
        (MEMBER, "eu-west-1", "ledger-eu"),
    }
    assert result.coverage_gaps == []
    assert factory.assume_calls == 1  # the member account once; the own account uses the caller's credentials
    per_target = {(t["account"], t["region"]): t["tables"] for t in result.to_dict()["targets"]}
    assert per_target == {
        (OWN, "eu-west-1"): 1,
        (OWN, "us-east-1"): 1,
        (MEMBER, "eu-west-1"): 2,
        (MEMBER, "us-east-1"): 1,
    }
    # the unused-index style findings need a day; what every audited table must have is its account and Region
    for f in result.findings:
        assert (f.account, f.region) in per_target


def _denying_sts(account: str) -> Any:
    """An STS client that answers AssumeRole into ``account`` with AWS's AccessDenied (role missing or untrusting)."""
    sts = boto3.Session().client("sts", region_name="us-east-1")
    stub = Stubber(sts)
    stub.add_client_error(
        "assume_role",
        service_error_code="AccessDenied",
        service_message=(
            "User: arn:aws:sts::123456789012:assumed-role/auditor/ddb is not authorized to perform: sts:AssumeRole "
            f"on resource: arn:aws:iam::{account}:role/{ROLE}"
        ),
        http_status_code=403,
        expected_params={"RoleArn": f"arn:aws:iam::{account}:role/{ROLE}", "RoleSessionName": "ddb-traffic-auditor"},
    )
    stub.activate()
    return sts


def test_a_member_without_the_role_is_a_coverage_gap_and_the_others_are_audited(aws_reset: str) -> None:
    _tables(boto3.Session(), "us-east-1", "orders")
    factory = SessionFactory(boto3.Session(region_name="us-east-1"), ROLE, own_account=OWN, sts=_denying_sts(MEMBER))
    start, end, now = _window()

    result = run_org_audit(
        factory, targets([MEMBER, OWN], ["us-east-1"]), TableSelector(), start=start, end=end, now=now
    )

    assert [(t.account, t.region) for t, _ in result.results] == [(OWN, "us-east-1")]
    [gap] = result.coverage_gaps
    assert (gap.account, gap.region, gap.reason, gap.call, gap.error_code) == (
        MEMBER,
        "us-east-1",
        "role_missing",
        "sts:AssumeRole",
        "AccessDenied",
    )


def test_deferred_targets_are_gaps_when_time_runs_out(aws_reset: str) -> None:
    _tables(boto3.Session(), "us-east-1", "orders")
    factory = SessionFactory(boto3.Session(region_name="us-east-1"), None)
    start, end, now = _window()
    budget = iter([True, False, False])

    result = run_org_audit(
        factory,
        [Target(None, "us-east-1"), Target(None, "eu-west-1"), Target(None, "ap-southeast-2")],
        TableSelector(),
        start=start,
        end=end,
        now=now,
        max_workers=1,
        should_start=lambda: next(budget),
    )

    assert [t.region for t, _ in result.results] == ["us-east-1"]
    assert [(g.region, g.reason) for g in result.coverage_gaps] == [
        ("eu-west-1", "deferred"),
        ("ap-southeast-2", "deferred"),
    ]


def test_organization_accounts_lists_every_active_account(aws_reset: str) -> None:
    org = boto3.Session().client("organizations", region_name="us-east-1")
    org.create_organization(FeatureSet="ALL")
    created = [
        org.create_account(Email=f"m{i}@example.com", AccountName=f"member-{i}")["CreateAccountStatus"]["AccountId"]
        for i in range(3)
    ]
    accounts = organization_accounts(org)
    assert set(created) <= set(accounts)
    assert OWN in accounts  # the management account is a member of its Organization too
    assert accounts == sorted(accounts)


def test_cli_audit_over_accounts_and_regions_reports_coverage_gaps(
    aws_reset: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _tables(boto3.Session(), "us-east-1", "orders")
    _tables(_member_session(aws_reset, MEMBER), "eu-west-1", "payments-eu")

    code = main(
        [
            "audit",
            "--accounts",
            f"{OWN},{MEMBER}",
            "--role-name",
            ROLE,
            "--regions",
            "us-east-1,eu-west-1",
            "--days",
            "0.05",
            "--billing-days",
            "0",
            "--format",
            "json",
        ]
    )

    out = capsys.readouterr()
    assert code == 0, out.err
    doc = json.loads(out.out)
    assert {(t["account"], t["table"]) for t in doc["tables"]} == {(OWN, "orders"), (MEMBER, "payments-eu")}
    assert doc["stats"]["targets"] == 4
    assert doc["stats"]["targets_audited"] == 4
    assert doc["coverage_gaps"] == []
    assert doc["stats"]["api_calls"]["sts:AssumeRole"] == 1
    # the cost ledger over both accounts: each table with its account and Region, each pair's total, the total
    cost = doc["cost"]
    assert {(r["account"], r["region"], r["table"]) for r in cost["tables"]} == {
        (OWN, "us-east-1", "orders"),
        (MEMBER, "eu-west-1", "payments-eu"),
    }
    assert {(p["account"], p["region"]) for p in cost["targets"]} == {(OWN, "us-east-1"), (MEMBER, "eu-west-1")}
    assert cost["total"]["dynamodb_usd"] == pytest.approx(sum(p["dynamodb_usd"] for p in cost["targets"]))
    assert cost["total"]["auditor_usd"] == pytest.approx(sum(p["auditor_usd"] for p in cost["targets"]))
    # and in the table output
    assert main(["audit", "--accounts", f"{OWN},{MEMBER}", "--role-name", ROLE, "--regions", "us-east-1,eu-west-1",
                 "--days", "0.05", "--billing-days", "0"]) == 0  # fmt: skip
    text = capsys.readouterr().out
    ledger = text[text.index("Cost ledger") :]
    assert f"{MEMBER}  eu-west-1  payments-eu" in ledger and "(pair total)" in ledger and "total" in ledger


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--accounts", "123", "--role-name", ROLE], "not a 12-digit account id"),
        (["--accounts", OWN], "need --role-name"),
        (["--org", "--accounts", OWN, "--role-name", ROLE], "exclusive"),
        (["--regions", "us-east-1;eu-west-1"], "not a Region name"),
    ],
)
def test_cli_org_options_are_checked(
    aws_reset: str, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code = main(["audit", *argv])
    err = capsys.readouterr().err
    assert code == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1
