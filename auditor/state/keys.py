"""The state table's key design: one table, generic ``pk``/``sk`` plus two sparse GSIs and TTL.

The key builders of every item the stores write (window contributions and index, ingest marks, findings and the
outbox, cursors and the evaluator's seal, late windows, evaluated windows' sightings, item size histories and
per-table item sizes, capture plans, the cost ledger, coverage gaps, the notifier's Slack delivery records).
docs/state-table.md lists the access patterns first, then these keys, and why no partition takes every write.
"""

from __future__ import annotations

import hashlib
from datetime import date, datetime

PK = "pk"
SK = "sk"
GSI1 = "gsi1"
GSI1_PK = "gsi1pk"
GSI1_SK = "gsi1sk"
GSI2 = "gsi2"
GSI2_PK = "gsi2pk"
GSI2_SK = "gsi2sk"
#: TTL attribute (epoch seconds).
TTL_ATTR = "expires_at"
OUTBOX_SHARDS = 4


def _digest(text: str, n: int = 32) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:n]


def table_ref(account: str | None, region: str | None, table: str) -> str:
    """``{account}#{region}#{table}`` with empty parts for unknown account or region."""
    return f"{account or ''}#{region or ''}#{table}"


def window_pk(account: str | None, region: str | None, table: str, window_start: int) -> str:
    return f"WIN#{table_ref(account, region, table)}#{window_start}"


def source_sk(source_id: str) -> str:
    """Sort key of one source's contribution (the id is hashed: S3 keys can exceed key limits)."""
    return f"SRC#{_digest(source_id)}"


def window_index_pk(window_start: int) -> str:
    return f"WINDOWS#{window_start}"


def object_pk(bucket: str, key: str) -> str:
    return f"OBJ#{_digest(f'{bucket}/{key}', 64)}"


OBJECT_SK = "OBJ"


def finding_pk(finding_id: str) -> str:
    return f"FINDING#{finding_id}"


FINDING_SK = "STATE"


def table_gsi_pk(account: str | None, region: str | None, table: str) -> str:
    return f"TABLE#{table_ref(account, region, table)}"


def table_gsi_sk(is_open: bool, finding_id: str) -> str:
    return f"{'OPEN' if is_open else 'RESOLVED'}#{finding_id}"


def week_of(moment: datetime) -> str:
    """ISO week label, e.g. ``2026-W49`` (weeks start on Monday, UTC)."""
    year, week, _ = moment.isocalendar()
    return f"{year}-W{week:02d}"


def week_gsi_pk(moment: datetime) -> str:
    return f"WEEK#{week_of(moment)}"


def outbox_pk(finding_id: str) -> str:
    return f"OUTBOX#{int(_digest(finding_id, 8), 16) % OUTBOX_SHARDS}"


def outbox_sk(created_iso: str, finding_id: str, event: str) -> str:
    return f"{created_iso}#{finding_id}#{event}"


CURSOR_PK = "CURSOR"
EVALUATOR_CURSOR_SK = "evaluator"
#: The evaluator's seal (``pk=CURSOR``): the start of the latest window an evaluator began to load; a contribution to
#: a window at or before it arrived late.
EVALUATOR_SEAL_SK = "evaluator-seal"
#: The one partition of the windows that got a contribution after they were evaluated (rare: the evaluator drains it).
LATE_PK = "LATE"


def late_sk(account: str | None, region: str | None, table: str, window_start: int) -> str:
    """Sort key of one late (table, window): window start first (zero-padded), so the set reads oldest first."""
    return f"{window_start:012d}#{table_ref(account, region, table)}"


def sightings_pk(account: str | None, region: str | None, table: str, week: str) -> str:
    """Partition of a table's evaluated windows' sightings in one ISO week (``2026-W49``)."""
    return f"SIGHT#{table_ref(account, region, table)}#{week}"


def data_windows_pk(week: str) -> str:
    """Partition of the windows of one ISO week the evaluator found trail data in (any table)."""
    return f"DATAWIN#{week}"


def sightings_sk(window_start: int) -> str:
    """Sort key of one evaluated window's sightings (zero-padded: a week reads in time order)."""
    return f"{window_start:012d}"


#: The key prefix of the stream watcher's per-table item sizes (one item per table and ISO week, ``sk`` the week).
ITEM_SIZES_PREFIX = "ITEMSIZES#"


def item_sizes_pk(account: str | None, region: str | None, table: str) -> str:
    """Partition of a table's measured item sizes (:mod:`auditor.state.table_item_sizes`)."""
    return f"{ITEM_SIZES_PREFIX}{table_ref(account, region, table)}"


def capture_pk(trail: str) -> str:
    """Partition of the capture controller's state and plans for one trail."""
    return f"CAPTURE#{trail}"


CAPTURE_STATE_SK = "STATE"


def capture_plan_sk(slice_start: int) -> str:
    """Sort key of one slice's capture plan (zero-padded: plans sort by time)."""
    return f"PLAN#{slice_start:012d}"


def ledger_pk(day: date) -> str:
    """Partition of one UTC day of the cost ledger (one item per audited table)."""
    return f"LEDGER#{day.isoformat()}"


#: The key prefix of the notifier's delivery records (template.yaml scopes the notifier's role to it).
SLACK_PREFIX = "SLACK#"
SLACK_DELIVERY_SK = "DELIVERY"


def slack_delivery_pk(message_key: str) -> str:
    """Partition of the notifier's delivery record of one message (its ``event_id``, else its SNS message id; a long
    id is hashed)."""
    return f"{SLACK_PREFIX}{message_key if len(message_key) <= 200 else _digest(message_key, 64)}"
