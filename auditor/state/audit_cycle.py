"""The scheduled organisation audit's state in the state table: its cycle cursor and the week's coverage gaps.

The cycle cursor (one item) lets invocations claim each (account, Region) pair of a cycle once, with a conditional
update, and continue where the last one stopped; a coverage gap is one item per pair, reason and ISO week, also
readable through ``gsi2``. The cursor and the items are in docs/state-table.md.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from auditor.models.finding import isoformat_z, utc
from auditor.state import keys
from auditor.state.attributes import number as _n
from auditor.state.attributes import retention
from auditor.state.attributes import string as _s
from auditor.state.paging import query_items

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef, QueryInputTypeDef

__all__ = ["AuditCycle", "AuditCycleStore", "StoredGap"]

#: Sort key of the organisation audit's cycle cursor (partition ``CURSOR``, next to the evaluator's).
CYCLE_SK = "metrics-audit"


def coverage_pk(moment: datetime) -> str:
    """Partition (and ``gsi2`` partition) of the coverage gaps met in the ISO week of ``moment``."""
    return f"COVERAGE#{keys.week_of(utc(moment))}"


@dataclass(frozen=True, slots=True)
class AuditCycle:
    """One pass over every (account, Region) pair; ``next`` is the first pair not yet claimed."""

    now: datetime
    accounts: tuple[str, ...]
    regions: tuple[str, ...]
    next: int = 0

    @property
    def id(self) -> str:
        return isoformat_z(utc(self.now))

    @property
    def total(self) -> int:
        return len(self.accounts) * len(self.regions)

    @property
    def finished(self) -> bool:
        return self.next >= self.total


@dataclass(frozen=True, slots=True)
class StoredGap:
    """One pair's coverage gap over an ISO week, as stored."""

    account: str | None
    region: str | None
    reason: str
    call: str
    error_code: str
    message: str
    first_seen: str
    last_seen: str
    cycles: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _conditional_failed(exc: ClientError) -> bool:
    return str(exc.response.get("Error", {}).get("Code", "")) == "ConditionalCheckFailedException"


class AuditCycleStore:
    """The cycle cursor and the coverage gaps (see the module docstring)."""

    def __init__(self, client: DynamoDBClient, table_name: str, *, retention_days: int = 90) -> None:
        self._client = client
        self._table = table_name
        self._retention = retention(retention_days)
        #: Conditional writes made (claims and cycle starts), for the run summary.
        self.writes = 0

    def _key(self) -> dict[str, AttributeValueTypeDef]:
        return {keys.PK: _s(keys.CURSOR_PK), keys.SK: _s(CYCLE_SK)}

    def load(self) -> AuditCycle | None:
        """The stored cycle (strongly consistent), or None before the first one."""
        item = self._client.get_item(TableName=self._table, Key=self._key(), ConsistentRead=True).get("Item")
        if not item or "cycle" not in item:
            return None
        return AuditCycle(
            now=datetime.fromisoformat(item["cycle"]["S"].replace("Z", "+00:00")),
            accounts=tuple(v["S"] for v in item["accounts"]["L"]),
            regions=tuple(v["S"] for v in item["regions"]["L"]),
            next=int(item["next"]["N"]),
        )

    def start(self, cycle: AuditCycle, *, at: datetime) -> bool:
        """Store ``cycle`` as the current one, unless the stored cycle is unfinished (then False, nothing changed)."""
        self.writes += 1
        try:
            self._client.put_item(
                TableName=self._table,
                Item={
                    **self._key(),
                    "cycle": _s(cycle.id),
                    "accounts": {"L": [_s(a) for a in cycle.accounts]},
                    "regions": {"L": [_s(r) for r in cycle.regions]},
                    "total": _n(cycle.total),
                    "next": _n(cycle.next),
                    "started_at": _s(isoformat_z(utc(at))),
                    "updated_at": _s(isoformat_z(utc(at))),
                },
                ConditionExpression="attribute_not_exists(#pk) OR #next >= #total",
                ExpressionAttributeNames={"#pk": keys.PK, "#next": "next", "#total": "total"},
            )
        except ClientError as exc:
            if _conditional_failed(exc):
                return False
            raise
        return True

    def claim(self, cycle: AuditCycle, index: int, *, at: datetime) -> bool:
        """Claim pair ``index`` of ``cycle`` (``next`` moves from ``index`` to ``index + 1``); False when another
        invocation claimed it first or the cycle is no longer the stored one."""
        self.writes += 1
        try:
            self._client.update_item(
                TableName=self._table,
                Key=self._key(),
                UpdateExpression="SET #next = :after, #u = :at",
                ConditionExpression="#cycle = :cycle AND #next = :index",
                ExpressionAttributeNames={"#next": "next", "#u": "updated_at", "#cycle": "cycle"},
                ExpressionAttributeValues={
                    ":after": _n(index + 1),
                    ":index": _n(index),
                    ":cycle": _s(cycle.id),
                    ":at": _s(isoformat_z(utc(at))),
                },
            )
        except ClientError as exc:
            if _conditional_failed(exc):
                return False
            raise
        return True

    # ------------------------------------------------------------------------------------------- coverage gaps

    def record_gap(
        self,
        *,
        week_of: datetime,
        account: str | None,
        region: str | None,
        reason: str,
        call: str,
        error_code: str,
        message: str,
        at: datetime,
    ) -> None:
        """Count one cycle's coverage gap of a pair in the ISO week of ``week_of`` (one item per pair and reason)."""
        pk = coverage_pk(week_of)
        sk = f"{account or ''}#{region or ''}#{reason}"
        stamp = isoformat_z(utc(at))
        expires = int((utc(at) + self._retention).timestamp())
        self._client.update_item(
            TableName=self._table,
            Key={keys.PK: _s(pk), keys.SK: _s(sk)},
            UpdateExpression=(
                "SET #g2pk = :pk, #g2sk = :sk, #account = :account, #region = :region, #reason = :reason, "
                "#call = :call, #code = :code, #message = :message, #last = :at, "
                "#first = if_not_exists(#first, :at), #ttl = :ttl ADD #cycles :one"
            ),
            ExpressionAttributeNames={
                "#g2pk": keys.GSI2_PK,
                "#g2sk": keys.GSI2_SK,
                "#account": "account",
                "#region": "region",
                "#reason": "reason",
                "#call": "call",
                "#code": "error_code",
                "#message": "message",
                "#last": "last_seen",
                "#first": "first_seen",
                "#ttl": keys.TTL_ATTR,
                "#cycles": "cycles",
            },
            ExpressionAttributeValues={
                ":pk": _s(pk),
                ":sk": _s(sk),
                ":account": _s(account or ""),
                ":region": _s(region or ""),
                ":reason": _s(reason),
                ":call": _s(call),
                ":code": _s(error_code),
                ":message": _s(message[:1000]),
                ":at": _s(stamp),
                ":ttl": _n(expires),
                ":one": _n(1),
            },
        )

    def week_gaps(self, moment: datetime) -> list[StoredGap]:
        """The coverage gaps met in the ISO week of ``moment`` (``gsi2``, every page), by account, Region, reason."""
        params: QueryInputTypeDef = {
            "TableName": self._table,
            "IndexName": keys.GSI2,
            "KeyConditionExpression": "#pk = :pk",
            "ExpressionAttributeNames": {"#pk": keys.GSI2_PK},
            "ExpressionAttributeValues": {":pk": _s(coverage_pk(moment))},
        }
        gaps = [_gap(item) for item in query_items(self._client, params)]
        return sorted(gaps, key=lambda g: (g.account or "", g.region or "", g.reason))


def _gap(item: dict[str, Any]) -> StoredGap:
    def text(name: str) -> str:
        value = item.get(name)
        return str(value["S"]) if isinstance(value, dict) and "S" in value else ""

    return StoredGap(
        account=text("account") or None,
        region=text("region") or None,
        reason=text("reason"),
        call=text("call"),
        error_code=text("error_code"),
        message=text("message"),
        first_seen=text("first_seen"),
        last_seen=text("last_seen"),
        cycles=int(item.get("cycles", {}).get("N", "0")),
    )
