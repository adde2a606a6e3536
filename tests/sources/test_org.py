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


def _pairs(n: int) -> list[Target]:
    return [Target(f"{100000000000 + i:012d}", "us-east-1") for i in range(n)]


@pytest.mark.parametrize("workers", [1, 8])
def test_fan_out_starts_a_prefix_and_defers_the_rest_when_told_to_stop(workers: int) -> None:
    # Given workers that audit slowly at different speeds, and a budget that allows 37 starts
    import random
    import threading
    import time

    from auditor.sources.org import SessionFactory, fan_out

    items, started, lock = _pairs(100), [], threading.Lock()
    rng = random.Random(7)
    delays = [rng.random() / 500 for _ in items]

    def work(target: Target, _session: object) -> str:
        time.sleep(delays[items.index(target)])
        return target.account or ""

    def should_start() -> bool:
        with lock:
            started.append(1)
            return len(started) <= 37

    claims: list[int] = []
    outcomes = fan_out(
        items, SessionFactory(boto3.Session(region_name="us-east-1"), None), work, max_workers=workers,
        should_start=should_start, claim=lambda i: claims.append(i) is None,
    )  # fmt: skip
    # Then exactly the first 37 ran, in order of their claims, and the others are deferred gaps
    assert [o.result is not None for o in outcomes] == [True] * 37 + [False] * 63
    assert claims == list(range(37))
    assert {o.gap.reason for o in outcomes[37:] if o.gap is not None} == {"deferred"}


def test_fan_out_stops_where_a_claim_is_refused() -> None:
    from auditor.sources.org import SessionFactory, fan_out

    outcomes = fan_out(
        _pairs(10), SessionFactory(boto3.Session(region_name="us-east-1"), None), lambda t, _s: t.account,
        max_workers=4, claim=lambda i: i < 6,
    )  # fmt: skip
    assert [o.result is not None for o in outcomes] == [True] * 6 + [False] * 4


def test_fan_out_raises_a_claim_failure_after_the_started_targets_end() -> None:
    from auditor.sources.org import SessionFactory, fan_out

    finished: list[str | None] = []

    def claim(i: int) -> bool:
        if i == 3:
            raise RuntimeError("state table unavailable")
        return True

    with pytest.raises(RuntimeError, match="state table unavailable"):
        fan_out(
            _pairs(10), SessionFactory(boto3.Session(region_name="us-east-1"), None),
            lambda t, _s: finished.append(t.account), max_workers=3, claim=claim,
        )  # fmt: skip
    assert sorted(finished) == [p.account for p in _pairs(3)]
