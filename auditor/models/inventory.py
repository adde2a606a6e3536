"""The table inventory: what DescribeTable, Application Auto Scaling, Contributor Insights, TTL and tags say.

A :class:`TableProfile` is a typed snapshot of one table and its indexes. Every call the inventory could not make
(AccessDenied, a deleted table, an API the endpoint does not implement) is recorded as a :class:`Gap` instead of
failing the audit: a detector that needs the missing facet says ``unknown`` rather than guessing.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from auditor.models.base import FrozenModel

BillingMode = Literal["PAY_PER_REQUEST", "PROVISIONED", "unknown"]
ON_DEMAND: BillingMode = "PAY_PER_REQUEST"
PROVISIONED: BillingMode = "PROVISIONED"
UNKNOWN_MODE: BillingMode = "unknown"


class Gap(FrozenModel):
    """One call the audit could not make: the facet it would have given is unknown."""

    #: The API call, as ``service:Operation`` (``dynamodb:DescribeTimeToLive``).
    call: str
    #: The table (and index) it was about, or None for an account-wide call.
    table: str | None = None
    index: str | None = None
    #: The AWS error code (``AccessDeniedException``, ``ResourceNotFoundException``, ``500``...).
    error_code: str
    message: str
    #: What is unknown because of it (``tags``, ``auto_scaling``, ``contributor_insights``, ``table``...).
    facet: str

    def describe(self) -> str:
        """One human line: ``dynamodb:DescribeTimeToLive on Orders: AccessDeniedException (ttl unknown)``."""
        where = f" on {self.table}{'/' + self.index if self.index else ''}" if self.table else ""
        return f"{self.call}{where}: {self.error_code} ({self.facet} unknown)"


class ScalingTarget(FrozenModel):
    """An Application Auto Scaling target on one capacity dimension, with its target-tracking policy."""

    #: ``read`` or ``write``.
    access: Literal["read", "write"]
    min_capacity: int
    max_capacity: int
    #: Target utilisation (percent) of the target-tracking policy; None without one.
    target_utilization: float | None = None
    policy_names: tuple[str, ...] = ()


class ContributorInsights(FrozenModel):
    """Contributor Insights on one table or GSI (``DescribeContributorInsights``)."""

    #: ``ENABLED``, ``ENABLING``, ``DISABLED``, ``DISABLING``, ``FAILED`` or ``unknown`` (the call failed).
    status: str
    #: ``ACCESSED_AND_THROTTLED_KEYS`` or ``THROTTLED_KEYS`` (None when not reported).
    mode: str | None = None
    #: The CloudWatch rule names DynamoDB created (``DynamoDBContributorInsights-PKT-...``).
    rule_names: tuple[str, ...] = ()

    @property
    def enabled(self) -> bool:
        return self.status == "ENABLED"


CI_DISABLED = ContributorInsights(status="DISABLED")
CI_UNKNOWN = ContributorInsights(status="unknown")


class Capacity(FrozenModel):
    """Throughput settings of a table or GSI. Provisioned units are 0 (not None) for on-demand resources."""

    provisioned_read: int = 0
    provisioned_write: int = 0
    #: On-demand maximums (``OnDemandThroughput``); None when not set (-1 means no maximum in the API).
    on_demand_max_read: int | None = None
    on_demand_max_write: int | None = None
    #: Warm throughput (units per second the resource can serve at once).
    warm_read: int | None = None
    warm_write: int | None = None
    auto_scaling: tuple[ScalingTarget, ...] = ()

    def provisioned(self, access: str) -> int:
        return self.provisioned_read if access == "read" else self.provisioned_write

    def on_demand_max(self, access: str) -> int | None:
        value = self.on_demand_max_read if access == "read" else self.on_demand_max_write
        return value if value is not None and value > 0 else None

    def scaling(self, access: str) -> ScalingTarget | None:
        return next((t for t in self.auto_scaling if t.access == access), None)


class IndexProfile(FrozenModel):
    """One secondary index."""

    name: str
    #: ``GSI`` or ``LSI``. LSIs share the table's capacity and have no CloudWatch dimension of their own.
    type: Literal["GSI", "LSI"]
    partition_key: str | None = None
    sort_key: str | None = None
    projection: str | None = None
    status: str | None = None
    size_bytes: int | None = None
    item_count: int | None = None
    capacity: Capacity = Field(default_factory=Capacity)
    contributor_insights: ContributorInsights = CI_UNKNOWN


class TableProfile(FrozenModel):
    """One table as the inventory saw it. Fields the inventory could not read stay None (see ``gaps``)."""

    name: str
    account: str | None = None
    region: str | None = None
    arn: str | None = None
    status: str | None = None
    billing_mode: BillingMode = UNKNOWN_MODE
    #: ``STANDARD`` or ``STANDARD_INFREQUENT_ACCESS`` (DescribeTable omits it for STANDARD tables).
    table_class: str | None = None
    partition_key: str | None = None
    sort_key: str | None = None
    size_bytes: int | None = None
    item_count: int | None = None
    created: str | None = None
    capacity: Capacity = Field(default_factory=Capacity)
    indexes: tuple[IndexProfile, ...] = ()
    contributor_insights: ContributorInsights = CI_UNKNOWN
    ttl_status: str | None = None
    ttl_attribute: str | None = None
    stream_view_type: str | None = None
    tags: dict[str, str] | None = None
    gaps: tuple[Gap, ...] = ()
    #: The mean size of the items the service's stream watcher sized (exact, from the table's stream), when known.
    stream_item_size_bytes: int | None = None
    #: CloudWatch's consumed write units per write request, as bytes (a lower bound: batches and transactions count
    #: at their most items), when known.
    cloudwatch_item_size_bytes: int | None = None

    @property
    def described_item_size(self) -> int | None:
        """DescribeTable's size over its item count (both updated about every six hours), when both are known."""
        if self.size_bytes and self.item_count:
            return max(1, round(self.size_bytes / self.item_count))
        return None

    @property
    def gsis(self) -> tuple[IndexProfile, ...]:
        return tuple(i for i in self.indexes if i.type == "GSI")

    def gsi(self, name: str) -> IndexProfile | None:
        return next((i for i in self.indexes if i.type == "GSI" and i.name == name), None)

    def capacity_of(self, index: str | None) -> Capacity:
        """The capacity settings of the table (``index=None``) or of one GSI."""
        if index is None:
            return self.capacity
        gsi = self.gsi(index)
        return gsi.capacity if gsi is not None else Capacity()

    def insights_of(self, index: str | None) -> ContributorInsights:
        if index is None:
            return self.contributor_insights
        gsi = self.gsi(index)
        return gsi.contributor_insights if gsi is not None else CI_UNKNOWN

    def gap_lines(self) -> list[str]:
        return [g.describe() for g in self.gaps]

    def summary(self) -> dict[str, object]:
        """The per-table block of the audit output."""
        return {
            "table": self.name,
            "account": self.account,
            "region": self.region,
            "billing_mode": self.billing_mode,
            "table_class": self.table_class,
            "status": self.status,
            "size_bytes": self.size_bytes,
            "item_count": self.item_count,
            "provisioned_read": self.capacity.provisioned_read,
            "provisioned_write": self.capacity.provisioned_write,
            "auto_scaling": [t.model_dump() for t in self.capacity.auto_scaling],
            "global_secondary_indexes": [i.name for i in self.gsis],
            "local_secondary_indexes": [i.name for i in self.indexes if i.type == "LSI"],
            "contributor_insights": self.contributor_insights.status,
            "ttl": self.ttl_status,
            "tags": self.tags,
            "gaps": self.gap_lines(),
        }


#: Where a throughput quota comes from: the account's value (Service Quotas), else DynamoDB's documented default.
QuotaSource = Literal["service_quotas", "default"]


class ThroughputQuotas(FrozenModel):
    """DynamoDB's throughput quotas of one account and Region (units per second), each with its source.

    The defaults are the documented ones (developer guide, ServiceQuotas.html "Throughput default quotas"): 40,000
    read and 40,000 write units per table or GSI (provisioned or on-demand), 80,000 per account for provisioned
    capacity. :func:`auditor.sources.quotas.read_throughput_quotas` reads the account's applied values.
    """

    table_read: float = 40_000.0
    table_write: float = 40_000.0
    account_read: float = 80_000.0
    account_write: float = 80_000.0
    table_read_source: QuotaSource = "default"
    table_write_source: QuotaSource = "default"
    account_read_source: QuotaSource = "default"
    account_write_source: QuotaSource = "default"

    def table(self, access: str) -> tuple[float, QuotaSource]:
        """(the per-table quota, its source) of ``read`` or ``write``."""
        if access == "read":
            return self.table_read, self.table_read_source
        return self.table_write, self.table_write_source

    def account(self, access: str) -> tuple[float, QuotaSource]:
        """(the account's provisioned-capacity quota, its source) of ``read`` or ``write``."""
        if access == "read":
            return self.account_read, self.account_read_source
        return self.account_write, self.account_write_source


class Inventory(FrozenModel):
    """The selected tables and what could not be read."""

    tables: tuple[TableProfile, ...] = ()
    #: The account's throughput quotas (the documented defaults where Service Quotas was not read).
    quotas: ThroughputQuotas = Field(default_factory=ThroughputQuotas)
    #: Account-wide gaps (ListTables, auto scaling sweep, Contributor Insights listing).
    gaps: tuple[Gap, ...] = ()
    #: Tables asked for by name (or listed) that do not exist (any more).
    missing: tuple[str, ...] = ()

    def get(self, name: str) -> TableProfile | None:
        return next((t for t in self.tables if t.name == name), None)

    def all_gaps(self) -> list[Gap]:
        return [*self.gaps, *(g for t in self.tables for g in t.gaps)]
