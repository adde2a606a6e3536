"""The weekly report (scheduled): findings from the state table -> HTML and Markdown in S3 -> one announcement.

:func:`run_weekly_report` takes the last complete ISO week before the schedule time, builds the report from that
week's findings (each as of the end of its week), writes both renderings under a dated key in the reports bucket,
signs a presigned link, and announces the week once on the findings topic (a claimed marker item in the state
table). How long the link works, the claim and the SNS message are in docs/service.md.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, Protocol

import structlog

from auditor.cost.cost_model import LedgerSummary
from auditor.cost.ledger import week_ledger
from auditor.detectors.findings.period import for_period
from auditor.engine import with_key_base
from auditor.lifecycle import FindingState, FindingStatus, TableKey
from auditor.messages import MessageKind, ReportAnnouncementAttributes, SummaryAction, WeeklySummary
from auditor.models.finding import KIND_LABELS, Finding, FindingKind, Severity, isoformat_z, utc
from auditor.models.period_evidence import PeriodKeys
from auditor.report.model import IsoWeek, WeeklyReport, build_report_from_findings
from auditor.report.report_pages import headline, money, render_html, render_markdown
from auditor.sinks.report_announcement import publish_announcement
from auditor.state.audit_cycle import AuditCycleStore, StoredGap
from auditor.state.findings_store import FindingsStore
from auditor.state.interfaces import ControllerRuns, LedgerLoader
from auditor.state.report_store import CLAIM_STALE_SECONDS, ReportAnnouncements, ReportFiles, marker_pk
from auditor.state.unreadable_store import StoredUnreadable, UnreadableObjectStore
from auditor.state.window_store import WindowSightings, week_keys

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_sns import SNSClient

    from auditor.config import Settings

__all__ = [
    "CLAIM_STALE_SECONDS",
    "MAX_LINK_EXPIRY_SECONDS",
    "MESSAGE_KIND",
    "ReportAnnouncements",
    "ReportLink",
    "WeeklyReportParams",
    "WeeklyReportResult",
    "build_weekly_report",
    "load_key_requests",
    "load_sighted",
    "marker_pk",
    "observed_period",
    "report_keys",
    "report_week",
    "run_weekly_report",
    "summary_document",
    "summary_text",
    "week_period",
    "week_totals",
    "weeks_key_requests",
]

log = structlog.get_logger(__name__)

#: The ``kind`` message attribute of a report announcement (findings carry their finding kind there).
MESSAGE_KIND = MessageKind.WEEKLY_REPORT
#: SigV4 presigned URLs live at most 7 days.
MAX_LINK_EXPIRY_SECONDS = 604_800
#: Weeks before the report week read for the deltas (and for findings resolved later): the previous week, plus one
#: more for findings last seen then and resolved in the report week.
_WEEKS_BEFORE = 2
_MAX_ACTION_TEXT = 500
_MAX_KEYS_PER_ACTION = 10


def report_week(now: datetime) -> IsoWeek:
    """The last complete ISO week before ``now``."""
    return IsoWeek.of(now).previous()


def report_keys(week: IsoWeek) -> tuple[str, str]:
    """The S3 keys of the HTML and Markdown report of ``week``."""
    base = f"reports/{week.year}/{week.label}/report"
    return f"{base}.html", f"{base}.md"


@dataclass(frozen=True, slots=True)
class WeeklyReportParams:
    """The weekly report's settings (see :meth:`from_settings`)."""

    bucket: str
    topic_arn: str
    link_expiry_seconds: int = MAX_LINK_EXPIRY_SECONDS
    kms_key_id: str | None = None
    title: str = "DynamoDB weekly audit"

    def __post_init__(self) -> None:
        if not 1 <= self.link_expiry_seconds <= MAX_LINK_EXPIRY_SECONDS:
            raise ValueError(f"link_expiry_seconds must be 1..{MAX_LINK_EXPIRY_SECONDS} (SigV4 limit)")

    @classmethod
    def from_settings(cls, settings: Settings) -> WeeklyReportParams:
        """Parameters from the process settings (raises ConfigurationError on a missing one)."""
        return cls(
            bucket=settings.require("reports_bucket"),
            topic_arn=settings.require("findings_topic_arn"),
            link_expiry_seconds=settings.report_link_expiry_seconds,
            kms_key_id=settings.reports_kms_key_id or None,
        )


Announcement = Literal["published", "already_published", "in_progress"]


@dataclass(slots=True)
class WeeklyReportResult:
    """What one run did. The presigned URL is a bearer link: it is returned, never logged."""

    week: str
    bucket: str
    html_key: str
    markdown_key: str
    findings: int
    open_findings: int
    worst_severity: str
    url: str
    #: When the link stops working at the latest (``url_expiry_known``: exactly then).
    url_expires_at: datetime
    #: False when the signing credentials' own expiry is unknown (in Lambda): the link may stop sooner.
    url_expiry_known: bool
    announcement: Announcement
    message_id: str | None = None
    #: Account/Region pairs (per reason) the scheduled audit could not read in the week.
    coverage_gaps: int = 0
    #: Trail objects of the week that could not be read (each once, however often it was retried).
    unreadable_objects: int = 0

    def as_dict(self) -> dict[str, object]:
        """JSON-ready summary, without the URL."""
        data = asdict(self)
        del data["url"]
        data["url_expires_at"] = isoformat_z(self.url_expires_at)
        return data


# ---------------------------------------------------------------------------------------------------- the report


def _as_of(state: FindingState, moment: datetime) -> FindingState:
    """The state as it was at ``moment``: a finding resolved later was still open then, with the lifecycle's status
    of that time: ``new`` when nothing was seen after its episode opened, else ``ongoing``."""
    if state.status is FindingStatus.RESOLVED and state.resolved_at is not None and state.resolved_at >= moment:
        seen_again = state.last_seen > state.opened_at
        status = FindingStatus.ONGOING if seen_again else FindingStatus.NEW
        return state.model_copy(update={"status": status, "resolved_at": None})
    return state


def load_states(store: FindingsStore, week: IsoWeek, now: datetime) -> list[FindingState]:
    """The stored findings last seen from ``_WEEKS_BEFORE`` weeks before ``week`` up to the week of ``now``."""
    first = week
    for _ in range(_WEEKS_BEFORE):
        first = first.previous()
    last = max(IsoWeek.of(now), week, key=lambda w: w.start)
    states: dict[str, FindingState] = {}
    moment = first.start
    while moment < last.end:
        for state in store.week_findings(moment):
            states[state.id] = state
        moment += timedelta(days=7)
    return sorted(states.values(), key=lambda s: (s.last_seen, s.id))


#: Each table's key-identified requests and top keys over a week, window by window (:func:`load_key_requests`).
KeyRequests = Mapping[TableKey, PeriodKeys]


class WeekSightings(Protocol):
    """What each evaluated window of a table's week kept (:class:`auditor.state.window_store.SightingStore`)."""

    def week(self, account: str | None, region: str | None, table: str, week: str) -> dict[int, WindowSightings]: ...

    def coverage(self, week: str) -> tuple[list[int], int] | None: ...


#: The period a week's findings are stated for: (start, end).
Period = tuple[datetime, datetime]


def observed_period(week: IsoWeek, coverage: tuple[list[int], int] | None) -> Period:
    """The part of ``week`` the trail had data in: from the start of its first window with data (any table) to the end
    of its last, as ``analyze-trail`` states its findings over its input (:func:`auditor.engine.input_period`); the
    whole week when none was recorded (windows evaluated by an earlier version)."""
    if not coverage or not coverage[0]:
        return week.start, week.end
    starts, seconds = coverage
    start = max(week.start, datetime.fromtimestamp(starts[0], tz=UTC))
    end = min(week.end, datetime.fromtimestamp(starts[-1] + seconds, tz=UTC))
    return (start, end) if end > start else (week.start, week.end)


def load_key_requests(sightings: WeekSightings, states: Iterable[FindingState], week: IsoWeek) -> KeyRequests:
    """The week's key-identified requests and top keys of each table with a hot key among ``states``, window by window
    (one Query per table)."""
    hot = [s.finding for s in states if s.finding.kind is FindingKind.HOT_KEY]
    tables = {(f.account, f.region, f.table) for f in hot}
    ordered = sorted(tables, key=lambda t: (t[0] or "", t[1] or "", t[2]))
    return {t: week_keys(sightings.week(*t, week.label).values()) for t in ordered}


@dataclass(frozen=True, slots=True)
class Sighted:
    """What the evaluated windows kept of a week and of the week before: each table's key-identified requests and top
    keys (:func:`load_key_requests`), and the part of each week the trail had data in (:func:`observed_period`)."""

    keys: tuple[KeyRequests, KeyRequests]
    periods: tuple[Period, Period]


def load_sighted(sightings: WeekSightings, states: Sequence[FindingState], week: IsoWeek) -> Sighted:
    """:class:`Sighted` for ``week`` and the week before (one Query per table with a hot key, one GetItem per week)."""
    before = week.previous()
    return Sighted(
        keys=(load_key_requests(sightings, states, week), load_key_requests(sightings, states, before)),
        periods=(week_period(sightings, week), week_period(sightings, before)),
    )


def week_period(sightings: WeekSightings, week: IsoWeek) -> Period:
    """The part of ``week`` the trail had data in, as the evaluator recorded it (:func:`observed_period`)."""
    return observed_period(week, sightings.coverage(week.label))


def weeks_key_requests(
    sightings: WeekSightings, states: Iterable[FindingState], weeks: Iterable[IsoWeek]
) -> dict[TableKey, PeriodKeys]:
    """The key-identified requests and top keys of several weeks (:func:`load_key_requests`), week by week."""
    listed = list(states)
    out: dict[TableKey, PeriodKeys] = {}
    for week in weeks:
        for table, keys in load_key_requests(sightings, listed, week).items():
            out.setdefault(table, PeriodKeys()).extend(keys)
    return out


def week_totals(
    state: FindingState, week: IsoWeek, key_requests: KeyRequests | None = None, period: Period | None = None
) -> FindingState:
    """The state with its finding's ``totals`` over ``week`` (None when nothing was counted in that week: a finding
    stored by a version without totals, or one not seen that week), stated for ``period`` (default: the whole week;
    the service passes the part of the week the trail had data in, :func:`observed_period`) widened to the finding's
    own sightings where they reach beyond it (a metrics audit's hour), and what they decide: the severity it
    reached that week and a throttling story's cause over the week
    (:func:`auditor.detectors.findings.period.for_period`;
    the stored ones when the week's totals do not know them). With the week's ``key_requests``, a hot key's share is
    of its table's (index's) key-identified requests in every window of the week and its requests are its own in
    every window of the week (:func:`auditor.engine.with_key_base`).
    """
    totals = state.totals_for(week.label)
    stated = None
    if totals is not None:  # never shorter than the finding's own sightings (a metrics audit's hour may run later)
        start, end = period or (week.start, week.end)
        start, end = max(week.start, min(start, totals.period_start)), min(week.end, max(end, totals.period_end))
        stated = totals.over(start, end)
    if stated is not None and key_requests:
        stated = with_key_base(state.finding, stated, key_requests)
    return state.model_copy(update={"finding": for_period(state.finding, stated)})


def build_weekly_report(
    states: Sequence[FindingState],
    week: IsoWeek,
    now: datetime,
    *,
    title: str = "DynamoDB weekly audit",
    ledger: LedgerSummary | None = None,
    coverage_gaps: Sequence[StoredGap] = (),
    unreadable: Sequence[StoredUnreadable] = (),
    sighted: Sighted | None = None,
) -> WeeklyReport:
    """The report of ``week`` from stored states (pure): each week's findings as of the end of that week, with
    the totals of that week, the account/Region pairs the scheduled audit could not read that week, the trail
    objects of the week that could not be read, and the week's cost ledger when one was kept. ``sighted``: what the
    evaluated windows kept of ``week`` and the week before (:func:`load_sighted`; None: the whole weeks, and a hot
    key's share of its hot windows)."""
    now_keys, before_keys = sighted.keys if sighted is not None else (None, None)
    now_period, before_period = sighted.periods if sighted is not None else (None, None)
    current = [week_totals(_as_of(s, week.end), week, now_keys, now_period) for s in states]
    previous = [week_totals(_as_of(s, week.start), week.previous(), before_keys, before_period) for s in states]
    legacy = {s.id for s in states if not s.weekly_totals}  # stored by a version without totals
    return build_report_from_findings(
        current,
        now,
        week=week,
        previous_findings=previous,
        title=title,
        coverage_gaps=[coverage_line(g) for g in coverage_gaps],
        unreadable_objects=[unreadable_line(u) for u in unreadable],
        ledger=ledger,
        stored_without_totals=legacy,
    )


def coverage_line(gap: StoredGap) -> str:
    """``444455556666/eu-west-1: role missing (sts:AssumeRole: AccessDenied) in 3 audit cycles, last
    2026-12-03T10:00:00Z`` (the report escapes it for its format)."""
    where = f"{gap.account or 'own account'}/{gap.region or '-'}"
    cycles = f"{gap.cycles} audit cycle{'' if gap.cycles == 1 else 's'}"
    return (
        f"{where}: {gap.reason.replace('_', ' ')} ({gap.call or '-'}: {gap.error_code or '-'}) in {cycles}, "
        f"last {gap.last_seen}"
    )


def unreadable_line(obj: StoredUnreadable) -> str:
    """``s3://bucket/key (windows 2026-12-01T09:45Z to 10:00Z): <reason>; 3 failed reads, last
    2026-12-01T10:20:00Z`` (the report escapes it for its format)."""
    starts = [datetime.fromtimestamp(w, UTC) for w in obj.windows]
    if not starts:
        windows = "windows unknown"
    elif len(starts) == 1:
        windows = f"window {starts[0]:%Y-%m-%dT%H:%MZ}"
    else:
        windows = f"windows {starts[0]:%Y-%m-%dT%H:%MZ} to {starts[-1]:%Y-%m-%dT%H:%MZ}"
    reads = f"{obj.attempts} failed read{'' if obj.attempts == 1 else 's'}"
    return f"{obj.source_id} ({windows}): {obj.reason}; {reads}, last {obj.last_seen}"


def load_week_ledger(
    ledger: LedgerLoader, week: IsoWeek, capture: ControllerRuns | None = None
) -> LedgerSummary | None:
    """The week's ledger: the stored days, plus each day's shared costs (with the controller's runs when it ran
    that week). None when nothing was stored for the week."""
    days = [(week.start + timedelta(days=i)).date() for i in range(7)]
    entries = ledger.entries(days)
    if not entries:
        return None
    ran = capture is not None and capture.any_plan(int(week.start.timestamp()), int(week.end.timestamp()))
    return week_ledger(entries, controller=ran)


def worst_open_severity(report: WeeklyReport) -> Severity:
    """The most severe open finding's severity (``info`` when nothing is open)."""
    return max((rf.finding.severity for rf in report.open_findings), key=lambda s: s.rank, default=Severity.INFO)


def _clip(text: str, limit: int = _MAX_ACTION_TEXT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _action_keys(report: WeeklyReport, ids: Iterable[str]) -> list[Any]:
    by_id: dict[str, Finding] = {rf.finding.id: rf.finding for rf in report.findings}
    found: list[Any] = []
    for fid in ids:
        finding = by_id.get(fid)
        key = finding.evidence.get("key") if finding is not None else None
        if key and key not in found:
            found.append(key)
    return found[:_MAX_KEYS_PER_ACTION]


@dataclass(frozen=True, slots=True)
class ReportLink:
    """Where the announced report is: its presigned link (a bearer link: never logged) and until when it works, its
    S3 console page, and the objects."""

    url: str
    url_expires_at: datetime
    bucket: str
    html_key: str
    markdown_key: str
    #: False when the signing credentials' own expiry is unknown (in Lambda): the link may stop sooner.
    url_expiry_known: bool = False
    console_url: str | None = None


def summary_document(report: WeeklyReport, link: ReportLink) -> WeeklySummary:
    """The compact summary carried in the ``report_json`` attribute (what the Slack notifier renders).

    Action headlines and recommendations are the findings' own text, with raw key values; each action lists the
    raw ``keys`` of its findings so a consumer that must redact them (the Slack notifier) can find them.
    """
    s = report.summary
    return WeeklySummary(
        kind=MESSAGE_KIND,
        version=1,
        title=report.title,
        week=report.week.label,
        week_start=isoformat_z(report.week.start),
        week_end=isoformat_z(report.week.end),
        generated_at=isoformat_z(report.generated_at),
        headline=headline(report),
        open_findings=s.open_findings,
        by_severity={sev.value: s.by_severity.get(sev, 0) for sev in Severity},
        new=s.new,
        worsened=s.worsened,
        ongoing=s.ongoing,
        resolved=s.resolved,
        tables_with_findings=s.tables_with_findings,
        tables_seen=s.tables_seen,
        monthly_savings=round(s.monthly_savings, 2),
        worst_severity=worst_open_severity(report).value,
        actions=[
            SummaryAction(
                rank=a.rank,
                severity=a.severity.value,
                table=a.table,
                kind=a.kind.value,
                headline=_clip(a.headline),
                recommendation=_clip(a.recommendation),
                monthly_savings=round(a.monthly_savings, 2),
                findings=len(a.finding_ids),
                keys=_action_keys(report, a.finding_ids),
            )
            for a in report.actions
        ],
        url=link.url,
        url_expires_at=isoformat_z(link.url_expires_at),
        url_expiry_known=link.url_expiry_known,
        console_url=link.console_url,
        bucket=link.bucket,
        html_key=link.html_key,
        markdown_key=link.markdown_key,
    )


def link_lifetime_text(expires_at: datetime, *, known: bool) -> str:
    """The link's real lifetime, in one sentence."""
    if known:
        return f"This link works until {expires_at:%Y-%m-%d %H:%M} UTC."
    return (
        f"This link works until {expires_at:%Y-%m-%d %H:%M} UTC at the latest, and stops sooner when the report "
        "function's temporary credentials that signed it expire (usually within a few hours)."
    )


def summary_text(report: WeeklyReport, link: ReportLink) -> str:
    """The readable announcement (e-mail subscriptions): headline, top numbers, top actions and the link."""
    s = report.summary
    week = report.week
    last_day = week.end - timedelta(days=1)
    severities = ", ".join(f"{s.by_severity.get(sev, 0)} {sev.value}" for sev in Severity if s.by_severity.get(sev))
    lines = [
        f"{report.title} {week.label} ({week.start:%a %d %b} to {last_day:%a %d %b %Y}, UTC)",
        "",
        headline(report),
        "",
        f"Open findings:     {s.open_findings} on {s.tables_with_findings} of {s.tables_seen} tables"
        + (f" ({severities})" if severities else ""),
        f"This week:         {s.new} new, {s.worsened} worsened, {s.ongoing} ongoing, {s.resolved} resolved",
        "Potential savings: "
        + (f"{money(s.monthly_savings, cents=False)}/month" if s.monthly_savings > 0 else "none identified"),
    ]
    compared = [
        f"{d.metric.lower()} {d.previous:,.0f} -> {d.current:,.0f}"
        for d in report.deltas[:2]
        if d.previous is not None and d.unit == "count"
    ]
    if compared:
        lines.append(f"Since last week:   {'; '.join(compared)}")
    if report.coverage_gaps:
        gaps = len(report.coverage_gaps)
        lines.append(
            f"Not audited:       {gaps} account/Region pair{'' if gaps == 1 else 's'} the audit could not read "
            "(coverage gaps, listed in the report)"
        )
    if report.unreadable_objects:
        count = len(report.unreadable_objects)
        lines.append(
            f"Not read:          {count} CloudTrail object{'' if count == 1 else 's'} could not be read "
            "(unreadable, listed in the report with their windows)"
        )
    lines += ["", "The most important actions:"]
    if not report.actions:
        lines.append("   Nothing to do: no open findings.")
    for a in report.actions:
        where = "" if a.table in a.headline else f" ({KIND_LABELS[a.kind].lower()} on {a.table})"
        money_note = f" Saves {money(a.monthly_savings, cents=False)}/month." if a.monthly_savings > 0 else ""
        lines.append(f"{a.rank}. [{a.severity.value.upper()}] {a.headline}{where}")
        lines.append(f"   Fix: {_clip(a.recommendation)}{money_note}")
    lines += [
        "",
        "Full report (HTML, charts and every finding with its evidence and fix):",
        link.url,
        link_lifetime_text(link.url_expires_at, known=link.url_expiry_known),
    ]
    if link.console_url:
        lines += ["After that, open it in the S3 console (AWS sign-in needed):", link.console_url]
    lines.append(f"The report and its Markdown version stay in s3://{link.bucket}/{link.html_key.rsplit('/', 1)[0]}/.")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------- the run


def run_weekly_report(
    store: FindingsStore,
    s3: S3Client,
    sns: SNSClient,
    announcements: ReportAnnouncements,
    params: WeeklyReportParams,
    now: datetime,
    *,
    sightings: WeekSightings | None = None,
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ledger: LedgerLoader | None = None,
    capture: ControllerRuns | None = None,
    coverage: AuditCycleStore | None = None,
    unreadable: UnreadableObjectStore | None = None,
) -> WeeklyReportResult:
    """Build last week's report from the state table, put it in S3 and announce it once (see the module docstring).

    ``now`` is the schedule time (it picks the week and stamps the report); ``clock`` is the wall clock (the link's
    expiry and the announcement marker). ``coverage`` (the state table) gives the week's coverage gaps of the
    scheduled organisation audit: the accounts and Regions the report's findings do not cover. ``unreadable`` (the
    state table) gives the trail objects of the week that could not be read. ``sightings`` (the state table) gives
    the tables' key-identified requests of the week, which a hot key's share is of (None: of its hot windows).
    """
    now = utc(now)
    week = report_week(now)
    states = load_states(store, week, now)
    costs = load_week_ledger(ledger, week, capture) if ledger is not None else None
    gaps = coverage.week_gaps(week.start) if coverage is not None else []
    unread = unreadable.week_objects(week.start) if unreadable is not None else []
    sighted = load_sighted(sightings, states, week) if sightings is not None else None
    report = build_weekly_report(
        states, week, now, title=params.title, ledger=costs, coverage_gaps=gaps, unreadable=unread, sighted=sighted
    )
    html_key, md_key = report_keys(week)
    files = ReportFiles(s3, params.bucket, kms_key_id=params.kms_key_id)
    files.put(html_key, render_html(report), "text/html; charset=utf-8", week)
    files.put(md_key, render_markdown(report), "text/markdown; charset=utf-8", week)
    signed_at = utc(clock())
    url = files.link(html_key, params.link_expiry_seconds)
    expires_at = signed_at + timedelta(seconds=params.link_expiry_seconds)
    credentials_end = files.credentials_expire_at()
    if credentials_end is not None:
        expires_at = min(expires_at, credentials_end)
    console_url = files.console_link(html_key, s3.meta.region_name or "us-east-1")
    worst = worst_open_severity(report)
    result = WeeklyReportResult(
        week=week.label,
        bucket=params.bucket,
        html_key=html_key,
        markdown_key=md_key,
        findings=len(report.findings),
        open_findings=report.summary.open_findings,
        worst_severity=worst.value,
        url=url,
        url_expires_at=expires_at,
        url_expiry_known=credentials_end is not None,
        announcement="published",
        coverage_gaps=len(gaps),
        unreadable_objects=len(unread),
    )
    token = uuid.uuid4().hex
    if not announcements.claim(week, token, signed_at):
        result.announcement = "already_published" if announcements.status(week) == "published" else "in_progress"
        log.info("weekly_report_not_announced_again", **result.as_dict())
        return result
    link = ReportLink(url, expires_at, params.bucket, html_key, md_key, result.url_expiry_known, console_url)
    document = summary_document(report, link)
    try:
        result.message_id = publish_announcement(
            sns,
            params.topic_arn,
            subject=f"{params.title} {week.label}"[:99],
            message=summary_text(report, link),
            attributes=ReportAnnouncementAttributes(
                severity=worst, week=week.label, event_id=f"report-{week.label}", report_json=document.to_json()
            ).to_strings(),
        )
    except Exception:
        announcements.release(week, token)  # the retry announces
        raise
    announcements.mark_published(week, token, result.message_id, html_key, utc(clock()))
    log.info("weekly_report_published", **result.as_dict())
    return result
