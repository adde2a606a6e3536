"""DynamoDB list prices: a bundled, dated table, a price-file loader and an optional AWS Pricing API refresh.

Every price set carries its ``source`` and ``as_of`` date, and every billing result repeats them. An unknown region
never crashes: :func:`bundled_prices` falls back to the us-east-1 table and labels the result, or raises
:class:`PricingError` when asked to be strict. The Pricing API refresh is :mod:`auditor.sources.pricing_api`. The
bundled figures are in docs/billing-simulation.md.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError

from auditor.exceptions import InputError
from auditor.models.base import FrozenModel, read_json_file

TableClass = Literal["STANDARD", "STANDARD_INFREQUENT_ACCESS"]
Dimension = Literal["read", "write"]

#: Date the bundled figures were read from the AWS Price List.
BUNDLED_AS_OF = "2026-09-06"
BUNDLED_SOURCE = "bundled list prices (AWS Price List, us-east-1 offer file)"
DEFAULT_FALLBACK_REGION = "us-east-1"
HOURS_PER_YEAR = 8760


class PricingError(InputError):
    """No usable prices (unknown region in strict mode, an incomplete Pricing API answer, a bad price file)."""


class ClassPrices(FrozenModel):
    """The prices of one table class, in USD."""

    read_request_unit: float = Field(gt=0, description="on-demand, per read request unit")
    write_request_unit: float = Field(gt=0, description="on-demand, per write request unit")
    rcu_hour: float = Field(gt=0, description="provisioned, per read capacity unit-hour")
    wcu_hour: float = Field(gt=0, description="provisioned, per write capacity unit-hour")
    storage_gb_month: float = Field(gt=0, description="per GB-month (2^30 bytes)")

    def request_unit(self, dim: Dimension) -> float:
        """On-demand price per request unit of ``dim``."""
        return self.read_request_unit if dim == "read" else self.write_request_unit

    def capacity_hour(self, dim: Dimension) -> float:
        """Provisioned price per capacity unit-hour of ``dim``."""
        return self.rcu_hour if dim == "read" else self.wcu_hour

    def break_even_utilisation(self, dim: Dimension) -> float:
        """Average consumed/provisioned below which on-demand is cheaper than provisioned (0..1)."""
        return self.capacity_hour(dim) / (3600 * self.request_unit(dim))


class ReservedOffer(FrozenModel):
    """A reserved-capacity offer: per block of 100 units, an upfront fee and an hourly fee."""

    dimension: Dimension
    years: Literal[1, 3]
    upfront_per_100: float = Field(ge=0)
    hourly_per_100: float = Field(ge=0)

    @property
    def per_unit_hour(self) -> float:
        """Effective price of one reserved unit-hour, upfront fee amortised over the term."""
        return (self.upfront_per_100 / (HOURS_PER_YEAR * self.years) + self.hourly_per_100) / 100


class RegionPrices(FrozenModel):
    """The price set of one region, with where it came from. This is also the ``--prices FILE`` format."""

    region: str = Field(min_length=1)
    currency: Literal["USD"] = "USD"
    standard: ClassPrices
    standard_ia: ClassPrices
    reserved: tuple[ReservedOffer, ...] = ()
    source: str = Field(min_length=1)
    as_of: date
    #: When these are another region's prices used as a labelled default: the region that was asked for.
    fallback_for: str | None = None

    def for_class(self, table_class: TableClass) -> ClassPrices:
        """The prices of ``table_class``."""
        return self.standard if table_class == "STANDARD" else self.standard_ia

    def reserved_offer(self, dim: Dimension, years: int) -> ReservedOffer | None:
        """The reserved-capacity offer for ``dim`` and term, if known."""
        return next((o for o in self.reserved if o.dimension == dim and o.years == years), None)

    def label(self) -> dict[str, Any]:
        """What a result records about its prices."""
        return {
            "region": self.fallback_for or self.region,
            "price_region": self.region,
            "currency": self.currency,
            "source": self.source,
            "as_of": self.as_of.isoformat(),
            "fallback": self.fallback_for is not None,
        }


_US_EAST_1 = RegionPrices(
    region="us-east-1",
    standard=ClassPrices(
        read_request_unit=0.125e-6,
        write_request_unit=0.625e-6,
        rcu_hour=0.00013,
        wcu_hour=0.00065,
        storage_gb_month=0.25,
    ),
    standard_ia=ClassPrices(
        read_request_unit=0.155e-6,
        write_request_unit=0.78e-6,
        rcu_hour=0.00016,
        wcu_hour=0.00081,
        storage_gb_month=0.10,
    ),
    reserved=(
        ReservedOffer(dimension="read", years=1, upfront_per_100=30.0, hourly_per_100=0.0025),
        ReservedOffer(dimension="write", years=1, upfront_per_100=150.0, hourly_per_100=0.0128),
        ReservedOffer(dimension="read", years=3, upfront_per_100=36.0, hourly_per_100=0.0016),
        ReservedOffer(dimension="write", years=3, upfront_per_100=180.0, hourly_per_100=0.0081),
    ),
    source=BUNDLED_SOURCE,
    as_of=date.fromisoformat(BUNDLED_AS_OF),
)

_BUNDLED: dict[str, RegionPrices] = {_US_EAST_1.region: _US_EAST_1}


def known_regions() -> list[str]:
    """Regions with bundled prices."""
    return sorted(_BUNDLED)


def bundled_prices(region: str, *, allow_fallback: bool = True) -> RegionPrices:
    """The bundled prices of ``region``; for an unknown region the labelled us-east-1 default (or an error).

    Raises:
        PricingError: ``region`` has no bundled prices and ``allow_fallback`` is false.
    """
    prices = _BUNDLED.get(region)
    if prices is not None:
        return prices
    if not allow_fallback:
        raise PricingError(
            f"no bundled DynamoDB prices for region {region!r} (bundled: {', '.join(known_regions())}); "
            "pass a price file (--prices) or refresh from the AWS Pricing API"
        )
    default = _BUNDLED[DEFAULT_FALLBACK_REGION]
    return default.model_copy(
        update={
            "fallback_for": region,
            "source": f"{default.source}; {DEFAULT_FALLBACK_REGION} prices used as a labelled default for {region}",
        }
    )


def load_price_file(path: str | Path) -> RegionPrices:
    """Read a price file (the JSON form of :class:`RegionPrices`).

    Raises:
        PricingError: the file cannot be read, is not JSON, or does not have the shape.
    """
    p = Path(path)
    data = read_json_file(p, "price file", PricingError)
    try:
        return RegionPrices.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(part) for part in err["loc"]) or "(top level)"
        raise PricingError(f"{p}: {where}: {err['msg']}") from exc
