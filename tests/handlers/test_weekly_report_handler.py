"""The weekly report Lambda end to end on moto server: findings in the state table -> HTML and Markdown in S3 ->
one SNS announcement (to an SQS subscription) whose presigned link downloads the report -> the Slack notifier posts
a compact Block Kit summary to a local webhook catcher."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import structlog

from auditor.config import get_settings
from auditor.lifecycle import FindingStatus
from auditor.messages import FindingNotification, MessageKind, SummaryAction, WeeklySummary
from auditor.models.finding import Finding, FindingKind, Severity, fingerprint
from auditor.redact import redact_value
from auditor.report.model import IsoWeek
from auditor.service.record import SOURCE_CLOUDTRAIL, ResolveScope, record_findings
from auditor.service.weekly_report import (
    MESSAGE_KIND,
    ReportAnnouncements,
    build_weekly_report,
    load_states,
    marker_pk,
    report_keys,
    report_week,
)
from auditor.sinks.slack import forget_slack_secret
from auditor.sinks.slack_blocks import build_message, render_weekly_summary
from auditor.state.findings_store import FindingsStore
from handlers import notifier, runtime, weekly_report
from tests.factories import sns_event
from tests.lambda_context import lambda_context
from tests.moto_server import SlackCatcher, TopicInbox, client, create_state_table
from tests.sinks.test_slack_blocks import assert_valid_message

EVENT = Path(__file__).resolve().parents[2] / "events" / "weekly_report_schedule.json"
STATE, BUCKET = "auditor-state", "audit-reports"
ACCOUNT, REGION = "111122223333", "us-east-1"
WEEK = IsoWeek(year=2026, week=49)  # Mon 2026-11-30 .. Mon 2026-12-07; the sample event fires Mon 12-07 07:00Z
HTML_KEY, MD_KEY = "reports/2026/2026-W49/report.html", "reports/2026/2026-W49/report.md"

CONTEXT = lambda_context("weekly-report", account="111122223333")


def day(d: int, hour: int = 12) -> datetime:
    """A time in late 2026: ``day(2)`` is 2026-12-02 12:00Z; days below 1 count back into November."""
    return datetime(2026, 12, 1, hour, tzinfo=UTC) + timedelta(days=d - 1)


def make(kind: FindingKind, table: str, severity: Severity, first: datetime, last: datetime, **ev: Any) -> Finding:
    return Finding(
        id=fingerprint(kind, ACCOUNT, REGION, table, None, ev.get("key") or ev.get("principal")),
        kind=kind,
        severity=severity,
        account=ACCOUNT,
        region=REGION,
        table=table,
        title=ev.pop("title", f"{kind} on {table}"),
        summary=f"A {kind} problem on {table}.",
        recommendation=ev.pop("fix", "Fix it."),
        evidence={**ev, "source": "cloudtrail"},
        first_seen=first,
        last_seen=last,
    )


HOT = make(
    FindingKind.HOT_KEY,
    "Orders",
    Severity.HIGH,
    day(2),
    day(3),
    title="Hot partition key pk=CUSTOMER#42 on Orders",
    fix="Spread pk=CUSTOMER#42 over write shards.",
    key={"pk": "CUSTOMER#42"},
    share=0.5,
    requests=36_000,
    window_seconds=900,
)
SCANS = make(
    FindingKind.SCAN,
    "Sessions",
    Severity.MEDIUM,
    day(-3),
    day(4),
    principal="arn:aws:iam::111122223333:role/reporting",
    operation="Scan",
    count=120,
)
THROTTLED = make(
    FindingKind.THROTTLING,
    "Invoices",
    Severity.LOW,
    day(-5),
    day(-4),
    cause="unknown",
    read_throttle_events=0,
    write_throttle_events=40,
)
ANCIENT = make(FindingKind.SCAN, "Archive", Severity.LOW, day(-20), day(-19), principal=None, operation="Scan", count=3)


@dataclass
class Env:
    endpoint: str
    inbox: TopicInbox
    store: FindingsStore
    s3: Any
    ddb: Any

    def invoke(self) -> dict[str, Any]:
        return weekly_report.lambda_handler(json.loads(EVENT.read_text()), CONTEXT)

    def seed(self) -> None:
        """Findings the evaluator stored: a hot key and scans (open), throttling (resolved on Tue), an old one."""
        sns, arn = self.inbox.sns, self.inbox.topic_arn
        for found in (ANCIENT, THROTTLED, SCANS, HOT):
            record_findings(self.store, sns, arn, [found], now=found.last_seen, scope=ResolveScope.nothing())
        invoices = ResolveScope.tables({(ACCOUNT, REGION, "Invoices"): day(2)}, [SOURCE_CLOUDTRAIL])
        record_findings(self.store, sns, arn, [], now=day(2), scope=invoices, resolve_after_seconds=3600)
        self.inbox.messages()


@pytest.fixture
def env(aws_reset: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Env]:
    ddb, s3 = client("dynamodb", aws_reset), client("s3", aws_reset)
    create_state_table(ddb, STATE)
    s3.create_bucket(Bucket=BUCKET)
    inbox = TopicInbox(aws_reset)
    monkeypatch.setenv("STATE_TABLE_NAME", STATE)
    monkeypatch.setenv("FINDINGS_TOPIC_ARN", inbox.topic_arn)
    monkeypatch.setenv("REPORTS_BUCKET", BUCKET)
    monkeypatch.setenv("REPORT_LINK_EXPIRY_SECONDS", "3600")
    get_settings.cache_clear()
    runtime.reset()
    e = Env(aws_reset, inbox, FindingsStore(ddb, STATE, sleep=lambda _s: None), s3, ddb)
    e.seed()
    yield e
    get_settings.cache_clear()
    runtime.reset()
    structlog.contextvars.clear_contextvars()


def marker(env: Env) -> dict[str, Any] | None:
    key = {"pk": {"S": marker_pk(WEEK)}, "sk": {"S": "PUBLISHED"}}
    item: dict[str, Any] | None = env.ddb.get_item(TableName=STATE, Key=key, ConsistentRead=True).get("Item")
    return item


# ---------------------------------------------------------------------------------------------------------- tests


def test_the_report_lands_in_s3_and_is_announced_once_with_a_working_link(env: Env) -> None:
    # When the Monday schedule fires
    result = env.invoke()
    # Then last week's report is in the bucket, both files, under the dated keys, with their content types
    assert (result["week"], result["html_key"], result["markdown_key"]) == ("2026-W49", HTML_KEY, MD_KEY)
    html_head = env.s3.head_object(Bucket=BUCKET, Key=HTML_KEY)
    md_head = env.s3.head_object(Bucket=BUCKET, Key=MD_KEY)
    assert html_head["ContentType"] == "text/html; charset=utf-8"
    assert md_head["ContentType"] == "text/markdown; charset=utf-8"
    html = env.s3.get_object(Bucket=BUCKET, Key=HTML_KEY)["Body"].read()
    markdown = env.s3.get_object(Bucket=BUCKET, Key=MD_KEY)["Body"].read().decode()
    assert b"Hot partition key pk=CUSTOMER#42 on Orders" in html and "2026-W49" in markdown
    assert b"Archive" not in html  # last seen three weeks earlier: not in this week's report
    # and exactly one announcement, with the filterable attributes
    (envelope,) = env.inbox.envelopes()
    attrs = {k: v["Value"] for k, v in envelope["MessageAttributes"].items()}
    assert envelope["Subject"] == "DynamoDB weekly audit 2026-W49"
    assert (attrs["kind"], attrs["severity"], attrs["table"], attrs["week"]) == (MESSAGE_KIND, "high", "*", "2026-W49")
    assert attrs["event_id"] == "report-2026-W49"
    text = envelope["Message"]
    assert "2 open findings on 2 tables (1 high)" in text and "1 resolved" in text
    assert "1. [HIGH] Hot partition key pk=CUSTOMER#42 on Orders\n   Fix: Spread pk=CUSTOMER#42" in text
    assert "2. [MEDIUM] scan on Sessions\n" in text
    assert "Since last week:   open findings 2 -> 2; critical and high findings 0 -> 1" in text
    # whose presigned link really downloads the HTML from the endpoint, and expires as configured
    (url,) = [line for line in text.splitlines() if line.startswith("http") and "console.aws" not in line]
    query = parse_qs(urlsplit(url).query)
    assert query["X-Amz-Expires"] == ["3600"] and query["X-Amz-Algorithm"] == ["AWS4-HMAC-SHA256"]
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.read() == html
    summary = json.loads(attrs["report_json"])
    assert (summary["week"], summary["open_findings"], summary["url"], summary["worst_severity"]) == (
        "2026-W49",
        2,
        url,
        "high",
    )
    assert summary["actions"][0]["keys"] == [{"pk": "CUSTOMER#42"}]
    assert marker(env) is not None and marker(env)["status"] == {"S": "published"}  # type: ignore[index]
    assert result["announcement"] == "published" and result["message_id"] == envelope["MessageId"]
    assert "url" not in result  # a bearer link is not logged or returned in the summary
    # When the schedule's event is delivered again (a retry) in the same week
    again = env.invoke()
    # Then the report is rendered and uploaded again, but not announced a second time
    assert again["announcement"] == "already_published" and again["message_id"] is None
    assert env.inbox.envelopes() == []


def test_kms_encryption_is_requested_only_when_a_key_is_configured(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    env.invoke()
    assert "SSEKMSKeyId" not in env.s3.head_object(Bucket=BUCKET, Key=HTML_KEY)
    key_id = client("kms", env.endpoint).create_key(Description="reports")["KeyMetadata"]["Arn"]
    monkeypatch.setenv("REPORTS_KMS_KEY_ID", key_id)
    get_settings.cache_clear()
    env.invoke()
    for key in (HTML_KEY, MD_KEY):
        head = env.s3.head_object(Bucket=BUCKET, Key=key)
        assert (head["ServerSideEncryption"], head["SSEKMSKeyId"]) == ("aws:kms", key_id)


def test_a_failed_publish_releases_the_claim_and_the_retry_announces(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FINDINGS_TOPIC_ARN", env.inbox.topic_arn.replace(":findings", ":gone"))
    get_settings.cache_clear()
    with pytest.raises(Exception, match="NotFound"):
        env.invoke()
    assert marker(env) is None
    monkeypatch.setenv("FINDINGS_TOPIC_ARN", env.inbox.topic_arn)
    get_settings.cache_clear()
    assert env.invoke()["announcement"] == "published"
    assert len(env.inbox.envelopes()) == 1


def test_a_claim_held_by_a_running_invocation_is_respected_and_a_stale_one_taken_over(env: Env) -> None:
    announcements = ReportAnnouncements(env.ddb, STATE)
    assert announcements.claim(WEEK, "other-invocation", datetime.now(UTC))
    assert env.invoke()["announcement"] == "in_progress"
    assert env.inbox.envelopes() == []
    # the other invocation crashed 20 minutes ago without publishing
    env.ddb.delete_item(TableName=STATE, Key={"pk": {"S": marker_pk(WEEK)}, "sk": {"S": "PUBLISHED"}})
    assert announcements.claim(WEEK, "crashed", datetime.now(UTC) - timedelta(minutes=20))
    assert env.invoke()["announcement"] == "published"
    assert len(env.inbox.envelopes()) == 1


def test_findings_are_taken_as_of_the_end_of_the_week(env: Env) -> None:
    # A finding resolved after the week ended counts as open in that week's report
    late = make(FindingKind.SCAN, "Late", Severity.LOW, day(5), day(6), principal=None, operation="Scan", count=9)
    sns, arn = env.inbox.sns, env.inbox.topic_arn
    record_findings(env.store, sns, arn, [late], now=day(6), scope=ResolveScope.nothing())
    scope = ResolveScope.tables({(ACCOUNT, REGION, "Late"): day(8)}, [SOURCE_CLOUDTRAIL])
    record_findings(env.store, sns, arn, [], now=day(8), scope=scope, resolve_after_seconds=3600)
    now = day(7, hour=7)
    assert report_week(now) == WEEK and report_keys(WEEK) == (HTML_KEY, MD_KEY)
    states = load_states(env.store, WEEK, now)
    assert {s.id: s.status for s in states}[late.id] is FindingStatus.RESOLVED
    report = build_weekly_report(states, WEEK, now)
    status = {rf.finding.id: rf.status for rf in report.findings}
    assert status[late.id] == "new" and status[THROTTLED.id] == "resolved" and ANCIENT.id not in status
    assert report.previous_week_available and report.summary.open_findings == 3


def test_the_notifier_posts_a_compact_redacted_summary_with_the_link(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given the announcement the weekly report published, delivered to the Slack notifier through SNS
    env.invoke()
    (envelope,) = env.inbox.envelopes()
    catcher = SlackCatcher().start()
    try:
        secret = client("secretsmanager", env.endpoint).create_secret(
            Name="slack-webhook", SecretString=json.dumps({"webhook_url": catcher.url})
        )
        monkeypatch.setenv("SLACK_SECRET_ARN", secret["ARN"])
        get_settings.cache_clear()
        runtime.reset()
        forget_slack_secret()
        # When the notifier runs
        result = notifier.lambda_handler(sns_event(envelope, f"{env.inbox.topic_arn}:sub"), CONTEXT)
        # Then one compact, valid Block Kit message reached the webhook, with the link as a button
        assert result == {"skipped": 0, "delivered": 1, "text_only": 0, "from_message": 0, "failed": 0}
        (post,) = catcher.posts
    finally:
        catcher.stop()
        runtime.reset()
        forget_slack_secret()
    assert_valid_message(post)
    assert len(post["blocks"]) <= 8
    assert post["blocks"][0]["text"]["text"] == ":bar_chart: DynamoDB weekly audit 2026-W49"
    summary = json.loads(envelope["MessageAttributes"]["report_json"]["Value"])
    (button,) = [b["accessory"] for b in post["blocks"] if "accessory" in b]
    assert button["type"] == "button" and button["url"] == summary["url"]
    body = json.dumps(post, ensure_ascii=False)
    assert "CUSTOMER#42" not in body and redact_value("CUSTOMER#42") in body  # keys leave the account redacted
    assert "Most important actions" in body and "2 open findings" in post["text"]
    assert MessageKind.WEEKLY_REPORT == MESSAGE_KIND


def test_an_unusable_summary_falls_back_to_the_redacted_message_text(env: Env) -> None:
    env.invoke()
    (envelope,) = env.inbox.envelopes()
    attrs = {k: v["Value"] for k, v in envelope["MessageAttributes"].items()}
    event = FindingNotification(envelope["MessageId"], envelope["Message"], attrs | {"report_json": '{"week": 7}'})
    payload, structured = build_message(event)
    assert not structured
    assert_valid_message(payload)
    assert payload["blocks"][0]["text"]["text"] == ":bar_chart: Weekly report 2026-W49"
    body = json.dumps(payload, ensure_ascii=False)
    assert "CUSTOMER#42" not in body and redact_value("CUSTOMER#42") in body


def test_the_summary_stays_within_slack_limits_whatever_the_text() -> None:
    huge = "x" * 5000 + " <&> "
    summary = WeeklySummary(
        title="DynamoDB weekly audit " + "t" * 200,
        week="2026-W49",
        headline=huge,
        open_findings=10**9,
        actions=[
            SummaryAction(rank=i, severity="critical", table=huge, kind="odd", headline=huge, recommendation=huge)
            for i in range(1, 6)
        ],
        url="https://reports.example.com/" + "a" * 3000,  # too long for a button: left out, and said so
        bucket="b",
        html_key="reports/2026/2026-W49/report.html",
    )
    payload = render_weekly_summary(summary)
    assert_valid_message(payload)
    assert not any("accessory" in b for b in payload["blocks"])
    assert "No usable link" in json.dumps(payload)
    assert json.dumps(payload).count(":red_circle: *") == 3  # the three most important actions only


def test_the_weeks_coverage_gaps_of_the_organisation_audit_are_in_the_report(env: Env) -> None:
    # Given the scheduled organisation audit could not assume the role in one member account on three cycles of the
    # report week, and met a Region that was not enabled the week after
    from auditor.state.audit_cycle import AuditCycleStore

    cycles = AuditCycleStore(env.ddb, STATE)
    for hour in (1, 2, 3):
        cycles.record_gap(
            week_of=day(3, hour), account="444455556666", region="eu-west-1", reason="role_missing",
            call="sts:AssumeRole", error_code="AccessDenied", message="not authorized | <b>", at=day(3, hour),
        )  # fmt: skip
    cycles.record_gap(
        week_of=day(8), account="555566667777", region="ap-east-1", reason="region_not_enabled",
        call="audit", error_code="UnrecognizedClientException", message="token", at=day(8),
    )  # fmt: skip
    # When the report of that week is built
    result = env.invoke()
    # Then it lists the report week's gap (once, with how many cycles met it), not the next week's
    assert result["coverage_gaps"] == 1
    markdown = env.s3.get_object(Bucket=BUCKET, Key=MD_KEY)["Body"].read().decode()
    html = env.s3.get_object(Bucket=BUCKET, Key=HTML_KEY)["Body"].read().decode()
    line = "444455556666/eu-west-1: role missing (sts:AssumeRole: AccessDenied) in 3 audit cycles, last 2026-12-03T03"
    assert line in markdown and line in html
    assert "555566667777" not in markdown
    # and the announcement says how many pairs the findings do not cover
    (envelope,) = env.inbox.envelopes()
    assert "Not audited:       1 account/Region pair the audit could not read" in envelope["Message"]


def test_the_announcement_states_the_links_real_lifetime(env: Env) -> None:
    # Lambda hands its role's session over without its expiry (here: static test credentials, no expiry either)
    result = env.invoke()
    assert result["url_expiry_known"] is False
    (envelope,) = env.inbox.envelopes()
    text = envelope["Message"]
    # the requested hour is stated as the latest moment, with the reason it may stop sooner, never as a promise
    assert "at the latest, and stops sooner when the report function's temporary credentials" in text
    (console,) = [line for line in text.splitlines() if line.startswith("https://console.aws.amazon.com/s3/")]
    assert f"/s3/object/{BUCKET}?region=us-east-1&prefix=" in console and "2026-W49%2Freport.html" in console
    summary = json.loads(envelope["MessageAttributes"]["report_json"]["Value"])
    assert summary["url_expiry_known"] is False and summary["console_url"] == console
    # and the Slack summary says the same
    payload = json.dumps(render_weekly_summary(WeeklySummary.model_validate(summary)))
    assert "at the latest" in payload and "Open it in the S3 console" in payload
    assert "The link expires" not in payload


def test_a_link_signed_with_credentials_of_known_expiry_states_that_time(env: Env) -> None:
    import botocore.session
    from botocore.credentials import RefreshableCredentials

    from auditor.service.weekly_report import WeeklyReportParams, run_weekly_report
    from auditor.state.report_store import ReportAnnouncements

    # an assumed role's session that ends in two hours signs a link asked for 7 days
    ends = datetime.now(UTC).replace(microsecond=0) + timedelta(hours=2)
    metadata = {"access_key": "testing", "secret_key": "testing", "token": "t", "expiry_time": ends.isoformat()}
    session = botocore.session.get_session()
    session._credentials = RefreshableCredentials.create_from_metadata(
        metadata, refresh_using=lambda: metadata, method="assume-role"
    )
    s3 = session.create_client("s3", region_name="us-east-1", endpoint_url=env.endpoint)
    params = WeeklyReportParams(bucket=BUCKET, topic_arn=env.inbox.topic_arn, link_expiry_seconds=604_800)
    result = run_weekly_report(
        env.store,
        s3,
        env.inbox.sns,
        ReportAnnouncements(env.ddb, STATE),
        params,
        now=datetime(2026, 12, 7, 7, tzinfo=UTC),
    )
    assert result.url_expiry_known and result.url_expires_at == ends
    (envelope,) = env.inbox.envelopes()
    assert f"This link works until {ends:%Y-%m-%d %H:%M} UTC." in envelope["Message"]
    assert "at the latest" not in envelope["Message"]
