"""The ledger of one live audit: each table's DynamoDB spend over the audited window next to what auditing it cost.

The DynamoDB side comes from the audit's own CloudWatch read (consumed capacity, provisioned units in force, billing
mode, table class, DescribeTable size: :func:`auditor.cost.cost_model.usage_from_history`). The auditor side of an audit
is its own CloudWatch reads (one metric requested per series read for the table, its GSIs included, at $0.01 per
1,000) and Contributor Insights where it is enabled (its rules for the period, and its events: throttled requests,
plus the items read and written in accessed-and-throttled mode, estimated from consumed units). The deployed
service keeps a daily ledger (:mod:`auditor.sinks.ledger_store`, :func:`day_entries`) that adds the CloudTrail data
events ingested per table and the service's own Lambda, state-table and S3 use.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, date, datetime
from typing import Any

from auditor.billing.pricing import RegionPrices, bundled_prices
from auditor.cost.cost_model import (
    DAYS_PER_MONTH,
    SHARED,
    AuditorRates,
    AuditorUsage,
    LedgerEntry,
    LedgerSummary,
    Spend,
    StackShape,
    audit_metrics,
    auditor_spend,
    controller_poll_metrics,
    data_event_usage,
    dynamodb_spend,
    fixed_monthly_usage,
    summarise,
    usage_from_history,
)
from auditor.models.audit import AuditView
from auditor.models.inventory import TableProfile
from auditor.models.metrics import CONSUMED, THROTTLE_EVENTS, TableMetrics


def _last(history: dict[str, Any], seconds: int) -> dict[str, Any]:
    """The capacity history's last ``seconds`` only (every per-period list cut to its tail)."""
    n = max(1, seconds // int(history.get("period_seconds") or 60))
    series = [{k: v[-n:] if isinstance(v, list) else v for k, v in s.items()} for s in history.get("series", [])]
    return {**history, "series": series}


def insights_usage(profile: TableProfile, tm: TableMetrics, since: int) -> tuple[int, int]:
    """(rules, events since ``since``) of Contributor Insights on the table and its GSIs.

    Throttled-keys mode: 1 rule (2 with a sort key) per table or GSI, and its throttled requests (x2 with a sort
    key). Accessed-and-throttled mode (also when the mode is not reported): 2 rules (4 with a sort key), and every
    item read or written as well, estimated here from the consumed capacity units (an item up to 1 KB written or
    4 KB read is one unit, so larger items over-count).
    """
    rules = events = 0
    for index, sort_key in [(None, profile.sort_key), *((g.name, g.sort_key) for g in profile.gsis)]:
        ci = profile.insights_of(index)
        if not ci.enabled:
            continue
        both = 2 if sort_key else 1
        throttled_only = ci.mode == "THROTTLED_KEYS"
        rules += both if throttled_only else 2 * both
        res = tm.resources.get(index)
        if res is None:
            continue
        names = [*THROTTLE_EVENTS.values(), *([] if throttled_only else CONSUMED.values())]
        for name in names:
            series = res.get(name)
            if series is not None:
                events += int(sum(v for t, v in series.points.items() if t >= since)) * both
    return rules, events


def audit_ledger(
    result: AuditView, prices: RegionPrices | None = None, rates: AuditorRates | None = None
) -> LedgerSummary | None:
    """Per audited table: DynamoDB spend over the window and this audit's reads for it; None when nothing priced."""
    return summarise(audit_entries(result, prices, rates))


def audit_entries(
    result: AuditView,
    prices: RegionPrices | None = None,
    rates: AuditorRates | None = None,
    last_seconds: int | None = None,
) -> list[LedgerEntry]:
    """The ledger entries of an audit: one per table, plus the ``(shared)`` reads no table accounts for.

    ``last_seconds``: the DynamoDB side (and Contributor Insights) over the window's last seconds only (the service's
    hourly run reads a day but books its hour); the audit's reads are all booked to that period.
    """
    seconds = result.end - result.start if last_seconds is None else min(last_seconds, result.end - result.start)
    days = max(seconds / 86_400, 1 / 1440)
    # a period ending at midnight belongs to the day before (the service books each hour to its own day)
    day = datetime.fromtimestamp(result.end - (1 if last_seconds is not None else 0), UTC).date()
    entries: list[LedgerEntry] = []
    counted = 0
    for profile in result.inventory.tables:
        history = result.capacity_history(profile.name)
        tm = result.table_metrics(profile.name)
        if history is None or tm is None:
            continue
        if last_seconds is not None:
            history = _last(history, seconds)
        usage = usage_from_history(history, days)
        if usage.billing_mode == "PROVISIONED" and usage.rcu_hours == 0 and usage.wcu_hours == 0:
            # No Provisioned* series in the window (CloudWatch publishes them every 5 minutes, and not for a table
            # created moments ago): the units in force now, from DescribeTable, for the whole window.
            caps = [profile.capacity, *(g.capacity for g in profile.gsis)]
            hours = days * 24
            usage = usage.model_copy(
                update={
                    "rcu_hours": sum(c.provisioned_read for c in caps if c is not None) * hours,
                    "wcu_hours": sum(c.provisioned_write for c in caps if c is not None) * hours,
                }
            )
        book = prices or bundled_prices(str(history.get("region") or "us-east-1"))
        series = sum(len(r.series) for r in tm.resources.values())
        counted += series
        ci_rules, ci_events = insights_usage(profile, tm, result.end - seconds)
        entries.append(
            LedgerEntry(
                day=day,
                account=profile.account,
                region=profile.region,
                table=profile.name,
                dynamodb=dynamodb_spend(usage, book.for_class(usage.table_class)),
                auditor=auditor_spend(
                    AuditorUsage(days=days, metrics_requested=series, ci_rules=ci_rules, ci_events=ci_events), rates
                ),
            )
        )
    if not entries:
        return []
    # Metrics requested that no table's series account for (a series listed but empty, the billing read).
    rest = max(0, result.stats.metrics_requested - counted)
    if result.billing is not None:
        rest += result.billing.stats.metrics_requested
    if rest:
        entries.append(
            LedgerEntry(
                day=day,
                table=SHARED,
                dynamodb=dynamodb_spend(
                    usage_from_history({"billing_mode": "PAY_PER_REQUEST", "series": []}, days),
                    bundled_prices("us-east-1").standard,
                ),
                auditor=auditor_spend(AuditorUsage(days=days, metrics_requested=rest), rates),
            )
        )
    return entries


def ledger_lines(summary: LedgerSummary, *, markdown: bool = False) -> list[str]:
    """The ledger as text: one row per table and the total (auditor cost, audited DynamoDB cost, ratio)."""

    def ratio(r: float | None) -> str:
        return "-" if r is None else f"{r:.2%}"

    rows = [(r.table, f"${r.auditor_usd:,.4f}", f"${r.dynamodb_usd:,.4f}", ratio(r.ratio)) for r in summary.rows]
    rows.append(
        (
            "total",
            f"${summary.total.auditor_usd:,.4f}",
            f"${summary.total.dynamodb_usd:,.4f}",
            ratio(summary.total.ratio),
        )
    )
    header = ("table", "auditor cost", "audited DynamoDB cost", "ratio")
    from auditor.findings_text import markdown_table, render_columns

    if markdown:
        return markdown_table(header, rows, right=3)
    return render_columns(rows, header).rstrip("\n").split("\n")


# ------------------------------------------------------------------------------------------ the service's daily ledger


def _spend(lines: Mapping[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    for k, v in lines.items():
        try:
            out[str(k)] = float(v)
        except (TypeError, ValueError):
            continue
    return out


def day_entry(
    day: date,
    account: str | None,
    region: str | None,
    table: str,
    hours: Mapping[str, Mapping[str, Any]],
    windows: Mapping[str, Any],
    rates: AuditorRates | None = None,
) -> LedgerEntry:
    """One table's day from what the service stored (:mod:`auditor.sinks.ledger_store`).

    ``hours``: the hourly metrics audit's entries (``dynamodb`` and ``auditor`` lines of its hour, summed), named
    ``hour_{start}``; ``windows``: the data events ingested per evaluated window (the evaluator's count of the window's
    calls), named ``window_{start}``, which cost the CloudTrail data-event price, the ingest function's GB-seconds and
    the compressed trail files' S3 storage (:func:`auditor.cost.cost_model.data_event_usage`: what the events cost,
    their 30 days in the bucket included). The entry's ``hours`` are the priced hours; its ``in_hours`` the hours'
    reads and the data events of the windows that start in them (the ratio's auditor side).
    """
    dynamodb: dict[str, float] = {}
    auditor: dict[str, float] = {}
    for doc in hours.values():
        _add(dynamodb, _spend(doc.get("dynamodb") or {}))
        _add(auditor, _spend(doc.get("auditor") or {}))
    priced = tuple(sorted({s for s in map(_start, hours) if s is not None}))
    inside = dict(auditor)
    events = _events(windows.values())
    if events:
        _add(auditor, auditor_spend(data_event_usage(events), rates).lines)
        matched = _events(v for k, v in windows.items() if _within(_start(k), priced))
        if matched:
            _add(inside, auditor_spend(data_event_usage(matched), rates).lines)
    return LedgerEntry(
        day=day,
        account=account,
        region=region,
        table=table,
        dynamodb=Spend(lines=dynamodb),
        auditor=Spend(lines=auditor),
        hours=priced,
        in_hours=Spend(lines=inside),
    )


def _add(into: dict[str, float], lines: Mapping[str, float]) -> None:
    for k, v in lines.items():
        into[k] = into.get(k, 0.0) + v


def _events(values: Iterable[Any]) -> int:
    return sum(int(v) for v in values if isinstance(v, int | float) and not isinstance(v, bool) and v > 0)


def _start(name: str) -> int | None:
    """The epoch start in a stored attribute's name (``hour_1764968400``, ``window_1764968400``), None if none."""
    digits = name.rpartition("_")[2]
    return int(digits) if digits.isdigit() else None


def _within(start: int | None, hours: Sequence[int]) -> bool:
    return start is not None and any(h <= start < h + 3600 for h in hours)


def shared_day_entry(
    day: date, tables: int, *, controller: bool, rates: AuditorRates | None = None, shape: StackShape | None = None
) -> LedgerEntry:
    """The service's own costs of a day that belong to no table (an estimate,
    :data:`auditor.cost.cost_model.FIXED_MODEL`): the scheduled functions' Lambda runs and their logs, the state
    table, the trail files' S3 requests, the alarms, dashboard, custom metrics, KMS key, SQS and SNS, and the capture
    controller's CloudWatch reads (``shape.controller_metrics`` a month; None: estimated for half the tables busy). The
    metrics audit's CloudWatch reads are measured per table, so they are not in this line."""
    known = None if shape is None else shape.controller_metrics
    polls = 0 if not controller else controller_poll_metrics(tables, tables // 2, 3) if known is None else known
    usage = fixed_monthly_usage(tables, polls, controller=controller, shape=shape)
    usage = usage.model_copy(update={"metrics_requested": usage.metrics_requested - audit_metrics(tables)})
    monthly = auditor_spend(usage, rates).lines
    return LedgerEntry(
        day=day,
        table=SHARED,
        dynamodb=Spend(lines={}),
        auditor=Spend(lines={k: v / DAYS_PER_MONTH for k, v in monthly.items()}),
    )


def pro_rated(entry: LedgerEntry, hours: Iterable[int]) -> LedgerEntry:
    """A day's entry over its priced ``hours`` too (the ratio's period): its costs accrue evenly by the hour, so its
    part in them (``in_hours``) is the day's x hours / 24."""
    priced = tuple(sorted(set(hours)))
    share = len(priced) / 24
    return entry.model_copy(
        update={"hours": priced, "in_hours": Spend(lines={k: v * share for k, v in entry.auditor.lines.items()})}
    )


def week_ledger(
    entries: Iterable[LedgerEntry], *, controller: bool, shape: StackShape | None = None
) -> LedgerSummary | None:
    """The stored days' entries plus each day's shared costs, summed per table and in total."""
    stored = list(entries)
    days = sorted({e.day for e in stored})
    tables = len({(e.account, e.region, e.table) for e in stored if e.table != SHARED})
    priced: dict[date, set[int]] = {}
    for e in stored:
        if e.hours is not None:
            priced.setdefault(e.day, set()).update(e.hours)
    shared = [shared_day_entry(d, tables, controller=controller, shape=shape) for d in days]
    # each day's fixed costs also over the day's priced hours, where the stored entries name them
    shared = [e if e.day not in priced else pro_rated(e, priced[e.day]) for e in shared]
    return summarise([*stored, *shared])


def combine_ledgers(parts: Sequence[tuple[str | None, str | None, Mapping[str, Any] | None]]) -> dict[str, Any] | None:
    """The ledgers of several account/Region pairs (each :meth:`AuditResult.cost_summary`) as one document.

    ``parts`` are ``(account, region, ledger)``; a pair without a ledger (no table priced) is left out. The result has
    every table row with its ``account`` and ``region``, one ``targets`` row per pair (its total), and the ``total``
    over all pairs: the sums of both sides and of the auditor lines, the ratio recomputed from the sums (never an
    average of ratios). None when no pair has a ledger.
    """
    kept = [(account, region, ledger) for account, region, ledger in parts if ledger is not None]
    if not kept:
        return None
    lines: dict[str, float] = {}
    auditor = dynamodb = shared = matched = 0.0
    days = 0
    for _, _, ledger in kept:
        total = ledger["total"]
        auditor += float(total["auditor_usd"])
        # the auditor's cost over the period the DynamoDB side covers (all of it when both sides cover the same)
        matched += float(total.get("matched_auditor_usd", total["auditor_usd"]))
        dynamodb += float(total["dynamodb_usd"])
        shared += float(ledger.get("shared_usd", 0.0))
        days = max(days, int(total["days"]))
        for name, value in total.get("auditor_lines", {}).items():
            lines[name] = lines.get(name, 0.0) + float(value)
    return {
        "start": min(str(ledger["start"]) for _, _, ledger in kept),
        "end": max(str(ledger["end"]) for _, _, ledger in kept),
        "window_days": max(float(ledger.get("window_days", 0.0)) for _, _, ledger in kept),
        "auditor_source": kept[0][2].get("auditor_source"),
        "tables": [
            {"account": account, "region": region, **row}
            for account, region, ledger in kept
            for row in ledger["tables"]
        ],
        "targets": [{"account": account, "region": region, **ledger["total"]} for account, region, ledger in kept],
        "total": {
            "table": "total",
            "days": days,
            "auditor_usd": round(auditor, 9),
            "dynamodb_usd": round(dynamodb, 9),
            "ratio": round(matched / dynamodb, 9) if dynamodb > 0 else None,
            "auditor_lines": {k: round(v, 9) for k, v in lines.items()},
        },
        "shared_usd": round(shared, 6),
    }
