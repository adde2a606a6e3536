"""``ddb-audit demo --trail PATH...``: the user's own CloudTrail files through the deployed pipeline, offline.

The same local stack as the demo (moto server) and the same real handlers, in the order AWS runs them: the records
put into the trail bucket as a trail delivers them, trail ingest, the window evaluator at each window's closing time,
the weekly report after each ISO week. Outputs: ``findings.json``, the latest week's report and one per week. The
steps are in docs/demo.md.
"""

from __future__ import annotations

import gzip
import re
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from auditor.config import get_settings
from auditor.demo.service import (
    Announce,
    DemoResult,
    RunSummary,
    ServiceDemo,
    _environment,
    _metrics_to,
    demo_result,
    lambda_context,
    local_stack,
    scheduled_event,
)
from auditor.demo.stack import ACCOUNT, REGION, aws_client
from auditor.detectors.findings.period import for_period
from auditor.engine import with_key_base
from auditor.exceptions import InputError, SourceReadError
from auditor.kernel.inputs import discover
from auditor.kernel.reader import InputSource, iter_records
from auditor.lifecycle import FindingState, TableKey
from auditor.models.finding import Totals
from auditor.models.period_evidence import PeriodKeys
from auditor.report.model import IsoWeek

__all__ = ["ReplayInput", "read_trail_files", "replay_findings", "run_replay"]

#: Records per CloudTrail log file the replay writes: an input file becomes one object per account and Region, as a
#: trail delivers it (the service then merges the same files, in the same order, as ``analyze-trail`` does), unless it
#: holds more than this (a bound of the replay's memory): then several objects, whose hot-key estimates may differ
#: from ``analyze-trail``'s within their stated ``estimate_error``.
RECORDS_PER_FILE = 50_000


@dataclass
class TrailFile:
    """One CloudTrail log file for the trail bucket: records of one account and Region, gzipped as CloudTrail does."""

    name: str
    body: bytes
    account: str
    region: str
    first: datetime
    records: int


@dataclass
class ReplayInput:
    """The CloudTrail log files made from the input, and the windows their records fall in."""

    files: list[TrailFile] = field(default_factory=list)
    window_starts: set[int] = field(default_factory=set)
    skipped: list[str] = field(default_factory=list)
    #: Records that are no JSON object (counted and left out, as ``analyze-trail`` counts them).
    malformed: int = 0

    @property
    def records(self) -> int:
        return sum(f.records for f in self.files)


def _event_time(record: dict[str, Any]) -> datetime | None:
    value = record.get("eventTime")
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)
    except ValueError:
        return None


def _place(record: dict[str, Any]) -> tuple[str, str]:
    """The account and Region whose trail delivers ``record``."""
    identity = record.get("userIdentity")
    account = record.get("recipientAccountId") or (identity.get("accountId") if isinstance(identity, dict) else None)
    return str(account or ACCOUNT), str(record.get("awsRegion") or REGION)


class _Packer:
    """Packs one source's records into CloudTrail log files, one account and Region per file, at most
    :data:`RECORDS_PER_FILE` records each (so memory holds a file's worth of records, plus the gzipped files)."""

    def __init__(self, name: str, window_seconds: int) -> None:
        self.name = name
        self.window_seconds = window_seconds
        self.pending: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self.files: list[TrailFile] = []
        self.starts: set[int] = set()
        self.records = 0

    def add(self, record: dict[str, Any]) -> None:
        self.records += 1
        place = _place(record)
        batch = self.pending.setdefault(place, [])
        batch.append(record)
        if len(batch) >= RECORDS_PER_FILE:
            self.flush(place)

    def flush(self, place: tuple[str, str]) -> None:
        batch = self.pending.pop(place, [])
        times = [t for t in (_event_time(r) for r in batch) if t is not None]
        if not times:  # no record with an event time: nothing the service would put in a window
            return
        self.starts.update(int(t.timestamp()) // self.window_seconds * self.window_seconds for t in times)
        body = gzip.compress(orjson.dumps({"Records": batch}), compresslevel=1)
        self.files.append(TrailFile(self.name, body, place[0], place[1], min(times), len(batch)))

    def finish(self) -> None:
        for place in list(self.pending):
            self.flush(place)


def _trail_files(source: InputSource, window_seconds: int, out: ReplayInput) -> None:
    """Add the records of ``source`` to ``out`` as CloudTrail log files, else note why it is left out.

    The records are read by ``analyze-trail``'s reader (:func:`auditor.kernel.reader.iter_records`), so every
    input it accepts replays: CloudTrail log files (gzipped or not), JSON lines, EventBridge events (their ``detail``
    is the record) and JSON arrays of either. They reach the trail bucket as a trail delivers them, CloudTrail log
    files (``{"Records": [...]}``, gzipped) per account and Region. A source that cannot be read whole is left out
    whole (as ``analyze-trail`` counts it as failed).
    """
    packer = _Packer(source.name, window_seconds)
    malformed = 0
    try:
        with source.open() as stream:
            for record in iter_records(stream, source.name):
                if type(record) is dict:
                    packer.add(record)
                else:
                    malformed += 1
        packer.finish()
    except SourceReadError as exc:
        out.skipped.append(str(exc))
        return
    except OSError as exc:
        out.skipped.append(f"{source.name}: cannot open: {exc.strerror or exc}")
        return
    out.malformed += malformed
    if not packer.files:
        out.skipped.append(f"{source.name}: no CloudTrail record{' with an eventTime' if packer.records else 's'}")
        return
    out.files += packer.files
    out.window_starts |= packer.starts


def read_trail_files(paths: list[str], window_seconds: int) -> ReplayInput:
    """The CloudTrail records under ``paths`` (the path forms and input formats of ``analyze-trail``), packed as
    CloudTrail log files.

    Raises :class:`InputError` (exit code 2) when a path does not exist or no CloudTrail record is found.
    """
    found = ReplayInput()
    for source in discover(paths):
        _trail_files(source, window_seconds, found)
    if not found.files:
        why = f" ({found.skipped[0]})" if len(found.skipped) == 1 else ""
        raise InputError(f"{', '.join(paths)}: no CloudTrail log files to replay{why}")
    return found


def _object_key(n: int, f: TrailFile) -> str:
    """``AWSLogs/{account}/CloudTrail/{region}/{yyyy}/{mm}/{dd}/{n}_{the input file's name}.json.gz``."""
    stem = re.sub(r"[^A-Za-z0-9_-]", "_", Path(f.name).name.split(".")[0])
    return f"AWSLogs/{f.account}/CloudTrail/{f.region}/{f.first:%Y/%m/%d}/{n:06d}_{stem or 'trail'}.json.gz"


def replay_findings(
    states: list[FindingState],
    period: tuple[datetime, datetime],
    key_requests: Mapping[TableKey, PeriodKeys] | None = None,
) -> list[dict[str, Any]]:
    """The stored findings as Finding JSON (with ``status``), ``totals`` summed over every week of the input and the
    severity and cause they decide (:func:`auditor.detectors.findings.period.for_period`), as ``analyze-trail``; a hot
    key's share of its table's ``key_requests`` over the input (:func:`auditor.engine.with_key_base`)."""
    out = []
    for s in sorted(states, key=lambda s: (s.finding.table, s.finding.kind, s.id)):
        total: Totals | None = None
        for week in sorted(s.weekly_totals):
            t = s.weekly_totals[week]
            total = t if total is None else total.merged(t)
        if total is not None:
            total = with_key_base(s.finding, total.over(*period), key_requests or {})
        finding = for_period(s.finding, total)
        out.append(finding.model_dump(mode="json") | {"status": s.status})
    return out


def _weeks(starts: set[int]) -> list[IsoWeek]:
    return sorted({IsoWeek.of(datetime.fromtimestamp(s, tz=UTC)) for s in starts}, key=lambda w: w.start)


class _Replay(ServiceDemo):
    def put_files(self, found: ReplayInput) -> int:
        for n, f in enumerate(found.files):
            self.s3.put_object(Bucket=self.stack.bucket, Key=_object_key(n, f), Body=f.body)
        left_out = [f"{len(found.skipped):,} other files"] if found.skipped else []
        left_out += [f"{found.malformed:,} records that are no JSON object"] if found.malformed else []
        self.say(
            f"  S3      put {len(found.files):,} CloudTrail log files, {found.records:,} records"
            + (f" ({' and '.join(left_out)} left out)" if left_out else "")
        )
        return len(found.files)

    def weekly_report(self, week: IsoWeek, reports_bucket: str, out: Path) -> tuple[Path, Path]:
        from handlers import weekly_report

        at = week.end + timedelta(hours=7)  # the default schedule: Monday 07:00 UTC after the week
        result = dict(
            weekly_report.lambda_handler(
                scheduled_event(at, f"arn:aws:events:{REGION}:{ACCOUNT}:rule/ddb-auditor-weekly-report"),
                lambda_context("weekly-report"),
            )
        )
        out.mkdir(parents=True, exist_ok=True)
        paths = []
        for key_name, file_name in (("html_key", "report.html"), ("markdown_key", "report.md")):
            body = self.s3.get_object(Bucket=reports_bucket, Key=str(result[key_name]))["Body"].read()
            path = out / file_name
            path.write_bytes(body)
            paths.append(path)
        self.say(
            f"  weekly report {week.label}: {result['open_findings']} open findings "
            f"(worst {result['worst_severity']}), announced: {result['announcement']}"
        )
        return paths[0], paths[1]


def run_replay(paths: list[str], out: Path, *, announce: Announce = lambda _m: None) -> DemoResult:
    """Replay the CloudTrail files under ``paths`` through the local stack; writes the outputs to ``out``."""
    from auditor.service.weekly_report import weeks_key_requests
    from auditor.state.findings_store import FindingsStore
    from auditor.state.window_store import SightingStore

    began = time.perf_counter()
    settings = get_settings()
    window = settings.analysis_config().window_seconds
    delay = timedelta(seconds=settings.evaluation_delay_seconds)
    found = read_trail_files(paths, window)  # before anything starts: a bad path is a one-line error
    weeks = _weeks(found.window_starts)
    first_start, last_start = min(found.window_starts), max(found.window_starts)
    period = (
        datetime.fromtimestamp(first_start, tz=UTC),
        datetime.fromtimestamp(last_start + window, tz=UTC),
    )
    out.mkdir(parents=True, exist_ok=True)
    with local_stack("ddb-audit-replay-") as (stack, catcher, work):
        reports_bucket = stack.reports_bucket
        announce(
            f"replay: {len(found.files):,} CloudTrail files, {found.records:,} records, "
            f"{period[0]:%Y-%m-%d %H:%M} to {period[1]:%Y-%m-%d %H:%M} UTC ({', '.join(w.label for w in weeks)})"
        )
        for line in found.skipped[:5]:
            announce(f"  left out: {line}")
        demo = _Replay(stack, catcher, work, announce, work / "trail")
        env = stack.environment()
        ingest, evaluation = RunSummary(), RunSummary()
        emf: list[str] = []
        with _environment(env), _metrics_to(emf.append):
            ingest.objects = demo.put_files(found)
            demo.ingest(ingest)
            ticks = sorted({datetime.fromtimestamp(s + window, tz=UTC) + delay for s in found.window_starts})
            totals: dict[str, int] = {}
            quiet = _Quiet()
            for tick in ticks:
                run = RunSummary()
                demo.say = quiet
                demo.evaluate(run, tick)
                demo.notify(run)
                demo.say = announce
                for k, v in run.evaluation.items():
                    totals[k] = totals.get(k, 0) + int(v)
                evaluation.sns_messages += run.sns_messages
                evaluation.slack_posts += run.slack_posts
            if ticks:  # a gap longer than one tick's backlog: the schedule keeps running until it is worked off
                for _ in range((last_start - first_start) // window + 1):
                    run = RunSummary()
                    demo.say = quiet
                    demo.evaluate(run, ticks[-1])
                    demo.notify(run)
                    demo.say = announce
                    if not run.evaluation.get("windows"):
                        break
                    for k, v in run.evaluation.items():
                        totals[k] = totals.get(k, 0) + int(v)
                    evaluation.slack_posts += run.slack_posts
            evaluation.evaluation = totals
            announce(
                f"  evaluate {len(ticks):,} scheduled evaluations at the windows' closing times: "
                f"{totals.get('table_windows', 0):,} table windows with traffic; {totals.get('new', 0)} new, "
                f"{totals.get('worsened', 0)} worsened, {totals.get('resolved', 0)} resolved; "
                f"{totals.get('published', 0)} published to SNS"
            )
            announce(f"  Slack   {evaluation.slack_posts:,} digests received")
            report_files: list[Path] = []
            for week in weeks:
                folder = out / "weeks" / week.label if len(weeks) > 1 else out
                report_files += demo.weekly_report(week, reports_bucket, folder)
            if len(weeks) > 1:
                for p in report_files[-2:]:
                    shutil.copyfile(p, out / p.name)
                report_files += [out / "report.html", out / "report.md"]
            weekly = RunSummary()
            demo.notify(weekly)
            ddb = aws_client("dynamodb", stack.endpoint)
            store = FindingsStore(ddb, stack.table_name)
            states: dict[str, FindingState] = {}
            moment = weeks[0].start
            while moment < weeks[-1].end:
                for state in store.week_findings(moment):
                    states[state.id] = state
                moment += timedelta(days=7)
            keyed = weeks_key_requests(SightingStore(ddb, stack.table_name), states.values(), weeks)
        findings = replay_findings(list(states.values()), period, keyed)
        result = demo_result(out, [ingest, evaluation, weekly], findings, report_files[-2:], catcher, began, emf)
        announce(f"report: {', '.join(str(p) for p in result.files[1:])}")
        return result


class _Quiet:
    """Swallows the per-tick narration (a long trail has one evaluation per window)."""

    def __call__(self, _message: str) -> None:
        return None


def replay_summary_text(result: DemoResult) -> str:
    """What the replay found, for a person to read."""
    from auditor.demo.service import _RANK
    from auditor.findings_text import render_columns

    rows = [
        (f["severity"], str(f.get("status", "")), f["kind"], f["table"], f["title"][:70])
        for f in sorted(result.findings, key=lambda f: (-_RANK.get(f["severity"], 0), f["table"], f["kind"]))
    ]
    lines = ["", f"Findings in the state table ({len(rows)}):", ""]
    if rows:
        lines.append(render_columns(rows, ("severity", "status", "kind", "table", "title")).rstrip("\n"))
    else:
        lines.append("None.")
    lines += [f"Files: {p}" for p in result.files]
    lines.append(f"Finished in {result.seconds:.1f} s.")
    return "\n".join(lines) + "\n"
