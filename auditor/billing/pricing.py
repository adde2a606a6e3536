"""DynamoDB list prices: a bundled, dated table, a price-file loader and an optional AWS Pricing API refresh.

Every price set carries its ``source`` and ``as_of`` date, and every billing result repeats them, so a reader
knows which prices a dollar figure used. An unknown region never crashes: :func:`bundled_prices` falls back to
the us-east-1 table and labels the result (``fallback_for``), or raises :class:`PricingError` when asked to be
strict.

Bundled figures (USD, list prices, us-east-1; research note ``reference/billing.md`` section 2):

- on-demand, Standard: $0.125 per million read request units, $0.625 per million write request units (after the
  November 2024 cut); Standard-IA: $0.155 and $0.78 per million;
- provisioned, Standard: $0.00013 per RCU-hour, $0.00065 per WCU-hour; Standard-IA: $0.00016 and $0.00081;
- storage: $0.25 per GB-month Standard, $0.10 per GB-month Standard-IA (the 25 GB free tier is ignored);
- reserved capacity (Standard, provisioned only), per 100 units: 1 year RCU $30 upfront + $0.0025/h, WCU $150 +
  $0.0128/h; 3 years RCU $36 + $0.0016/h, WCU $180 + $0.0081/h.

The Pricing API refresh (:func:`fetch_prices`) reads the ``Provisioned IOPS``, ``Amazon DynamoDB PayPerRequest
Throughput`` and ``Database Storage`` product families of one region, follows ``NextToken`` to the last page,
skips products without a ``group`` attribute (vector-search SKUs have none) and zero-priced free-tier bands.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any, Literal, Protocol
from urllib.parse import urlsplit

import orjson
from botocore.exceptions import BotoCoreError, ClientError
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from auditor.exceptions import InputError

TableClass = Literal["STANDARD", "STANDARD_INFREQUENT_ACCESS"]
Dimension = Literal["read", "write"]

#: Date the bundled figures were read from the AWS Price List (research note, section 2).
BUNDLED_AS_OF = "2026-09-06"
BUNDLED_SOURCE = "bundled list prices (AWS Price List, us-east-1 offer file)"
DEFAULT_FALLBACK_REGION = "us-east-1"
HOURS_PER_YEAR = 8760


class PricingError(InputError):
    """No usable prices (unknown region in strict mode, an incomplete Pricing API answer, a bad price file)."""


class ClassPrices(BaseModel):
    """The prices of one table class, in USD."""

    model_config = ConfigDict(frozen=True, extra="forbid")

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


class ReservedOffer(BaseModel):
    """A reserved-capacity offer: per block of 100 units, an upfront fee and an hourly fee."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    dimension: Dimension
    years: Literal[1, 3]
    upfront_per_100: float = Field(ge=0)
    hourly_per_100: float = Field(ge=0)

    @property
    def per_unit_hour(self) -> float:
        """Effective price of one reserved unit-hour, upfront fee amortised over the term."""
        return (self.upfront_per_100 / (HOURS_PER_YEAR * self.years) + self.hourly_per_100) / 100


class RegionPrices(BaseModel):
    """The price set of one region, with where it came from. This is also the ``--prices FILE`` format."""

    model_config = ConfigDict(frozen=True, extra="forbid")

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
    try:
        data = orjson.loads(p.read_bytes())
    except OSError as exc:
        raise PricingError(f"{p}: cannot read price file: {exc.strerror or exc}") from exc
    except orjson.JSONDecodeError as exc:
        raise PricingError(f"{p}: price file is not valid JSON: {exc}") from exc
    try:
        return RegionPrices.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(part) for part in err["loc"]) or "(top level)"
        raise PricingError(f"{p}: {where}: {err['msg']}") from exc


# ---------------------------------------------------------------------------------------------- Pricing API


class PricingClient(Protocol):
    """The one call of the ``pricing`` boto3 client used here."""

    def get_products(self, **kwargs: Any) -> Any:  # pragma: no cover - protocol
        """``pricing:GetProducts``."""
        ...


PROVISIONED_FAMILY = "Provisioned IOPS"
ON_DEMAND_FAMILY = "Amazon DynamoDB PayPerRequest Throughput"
STORAGE_FAMILY = "Database Storage"

#: Pricing API ``group`` attribute → (table class field, dimension).
_GROUPS: dict[str, tuple[str, Dimension]] = {
    "DDB-ReadUnits": ("standard", "read"),
    "DDB-WriteUnits": ("standard", "write"),
    "DDB-ReadUnitsIA": ("standard_ia", "read"),
    "DDB-WriteUnitsIA": ("standard_ia", "write"),
}
_STORAGE_VOLUME_TYPES = {
    "Amazon DynamoDB - Indexed DataStore": "standard",
    "Amazon DynamoDB - Indexed DataStore - IA": "standard_ia",
}


def _offer_date(item: dict[str, Any]) -> date | None:
    """The latest ``effectiveDate`` of a product's on-demand terms (the date of the offer it prices)."""
    best: date | None = None
    for term in (item.get("terms") or {}).get("OnDemand", {}).values():
        text = str(term.get("effectiveDate") or "")[:10]
        try:
            day = date.fromisoformat(text)
        except ValueError:
            continue
        if best is None or day > best:
            best = day
    return best


def _paid_price(item: dict[str, Any]) -> float | None:
    """The non-zero USD price of a product's on-demand term (the band above any free tier)."""
    best: tuple[float, float] | None = None  # (beginRange, price)
    for term in (item.get("terms") or {}).get("OnDemand", {}).values():
        for dim in (term.get("priceDimensions") or {}).values():
            try:
                price = float(dim["pricePerUnit"]["USD"])
            except (KeyError, TypeError, ValueError):
                continue
            if price <= 0:
                continue
            try:
                begin = float(dim.get("beginRange", 0) or 0)
            except ValueError:
                begin = 0.0
            if best is None or begin > best[0]:
                best = (begin, price)
    return best[1] if best else None


def _products(client: PricingClient, family: str, region: str) -> list[dict[str, Any]]:
    """Every product of ``family`` in ``region``, all pages."""
    out: list[dict[str, Any]] = []
    token: str | None = None
    while True:
        kwargs: dict[str, Any] = {
            "ServiceCode": "AmazonDynamoDB",
            "Filters": [
                {"Type": "TERM_MATCH", "Field": "productFamily", "Value": family},
                {"Type": "TERM_MATCH", "Field": "regionCode", "Value": region},
            ],
            "FormatVersion": "aws_v1",
            "MaxResults": 100,
        }
        if token:
            kwargs["NextToken"] = token
        page = client.get_products(**kwargs)
        for raw in page.get("PriceList", []):
            item = orjson.loads(raw) if isinstance(raw, (str, bytes)) else raw
            if isinstance(item, dict):
                out.append(item)
        token = page.get("NextToken")
        if not token:
            return out


def fetch_prices(
    client: PricingClient,
    region: str,
    *,
    as_of: date,
    reserved_from: RegionPrices | None = None,
) -> RegionPrices:
    """Current list prices of ``region`` from the AWS Pricing API (``GetProducts``, every page).

    ``client`` is a ``pricing`` client in one of the API's regions (us-east-1, eu-central-1, ap-south-1).
    ``as_of`` is the date recorded in the result (the caller's clock). Reserved-capacity offers are not in these
    product families; they are copied from ``reserved_from`` when it is given and for the same region.

    Raises:
        PricingError: a throughput or storage price of either table class is missing from the answer.
    """
    found: dict[tuple[str, str], float] = {}
    offer_dates: list[date] = []
    skipped = 0
    counted = 0
    for family, field in ((PROVISIONED_FAMILY, "capacity"), (ON_DEMAND_FAMILY, "request")):
        for item in _products(client, family, region):
            counted += 1
            attrs = (item.get("product") or {}).get("attributes") or {}
            group = attrs.get("group")
            if not group:
                skipped += 1  # e.g. vector-search SKUs in the PayPerRequest family
                continue
            if "repl" in str(attrs.get("usagetype", "")).lower() or group not in _GROUPS:
                continue  # replicated writes (global tables) and other groups are not modelled
            price = _paid_price(item)
            if price is None:
                continue
            cls, dim = _GROUPS[group]
            key = f"{dim}_request_unit" if field == "request" else ("rcu_hour" if dim == "read" else "wcu_hour")
            if (cls, key) not in found:
                found[(cls, key)] = price
                offer_dates += [d for d in (_offer_date(item),) if d is not None]
    for item in _products(client, STORAGE_FAMILY, region):
        counted += 1
        attrs = (item.get("product") or {}).get("attributes") or {}
        storage_cls = _STORAGE_VOLUME_TYPES.get(str(attrs.get("volumeType", "")))
        price = _paid_price(item)
        if storage_cls is None or price is None:
            continue
        if (storage_cls, "storage_gb_month") not in found:
            found[(storage_cls, "storage_gb_month")] = price
            offer_dates += [d for d in (_offer_date(item),) if d is not None]
    fields = ("read_request_unit", "write_request_unit", "rcu_hour", "wcu_hour", "storage_gb_month")
    missing = [f"{cls}.{f}" for cls in ("standard", "standard_ia") for f in fields if (cls, f) not in found]
    if missing:
        raise PricingError(
            f"the AWS Pricing API returned no price for {', '.join(missing)} in region {region!r} "
            f"({counted} products read)"
        )
    reserved = reserved_from.reserved if reserved_from and reserved_from.region == region else ()
    offer = max(offer_dates) if offer_dates else None
    return RegionPrices(
        region=region,
        standard=ClassPrices(**{f: found[("standard", f)] for f in fields}),
        standard_ia=ClassPrices(**{f: found[("standard_ia", f)] for f in fields}),
        reserved=reserved,
        source=(
            f"AWS Pricing API GetProducts, read {as_of.isoformat()} ({counted} products, {skipped} without a group "
            "attribute skipped)"
        ),
        as_of=offer or as_of,
    )


#: The Pricing API answers in these regions only; each serves every region's prices.
PRICING_API_REGIONS = ("us-east-1", "eu-central-1", "ap-south-1")


def pricing_api_region(region: str) -> str:
    """The Pricing API endpoint region closest to ``region`` (any of them serves every region's prices)."""
    if region.startswith(("eu-", "me-", "af-", "il-")):
        return "eu-central-1"
    if region.startswith("ap-"):
        return "ap-south-1"
    return "us-east-1"


def pricing_client(api_region: str) -> PricingClient:
    """A ``pricing`` boto3 client in ``api_region``, from the standard credential chain."""
    import boto3
    from botocore.config import Config

    config = Config(connect_timeout=5, read_timeout=10, retries={"max_attempts": 3, "mode": "standard"})
    client = boto3.client("pricing", region_name=api_region, config=config)
    host = urlsplit(client.meta.endpoint_url).hostname or ""
    if not host.endswith((".amazonaws.com", ".amazonaws.com.cn")):
        # AWS_ENDPOINT_URL points every client at a local endpoint (moto, LocalStack): it has no price list.
        raise PricingError(f"{client.meta.endpoint_url} is not the AWS Pricing API (a local endpoint)")
    typed: PricingClient = client
    return typed


class PriceBook:
    """Prices per region for one run: the Pricing API when it answers, else the bundled table, labelled.

    Each region is looked up once per run (the answer, or the failure, is kept). ``client_for`` makes a Pricing API
    client for an endpoint region (:func:`pricing_client`); None means offline (bundled prices only).
    """

    def __init__(self, client_for: Callable[[str], PricingClient] | None, today: date) -> None:
        self._client_for = client_for
        self._today = today
        self._cache: dict[str, tuple[RegionPrices, str | None]] = {}
        #: The warnings given so far (one per region at most), for a caller that reports them at the end.
        self.warnings: list[str] = []

    def get(self, region: str) -> tuple[RegionPrices, str | None]:
        """The prices for ``region`` and a warning for the user when they are not the live list prices."""
        cached = self._cache.get(region)
        if cached is not None:
            return cached
        bundled = bundled_prices(region)
        answer: tuple[RegionPrices, str | None]
        if self._client_for is None:
            answer = (bundled, None)
        else:
            try:
                live = fetch_prices(
                    self._client_for(pricing_api_region(region)),
                    region,
                    as_of=self._today,
                    reserved_from=bundled if bundled.fallback_for is None else None,
                )
                answer = (live, None)
            except (BotoCoreError, ClientError, PricingError, ValueError) as exc:  # no credentials, no network, ...
                text = " ".join(str(exc).split())
                reason = f"{type(exc).__name__}: {text if len(text) <= 200 else text[:199] + '…'}"
                fallback = bundled.model_copy(
                    update={"source": f"{bundled.source}; the AWS Pricing API was not used ({reason})"}
                )
                answer = (
                    fallback,
                    f"the AWS Pricing API did not answer for {region} ({reason}); using the bundled prices of "
                    f"{fallback.region}, as of {fallback.as_of.isoformat()}",
                )
        self._cache[region] = answer
        if answer[1] is not None:
            self.warnings.append(answer[1])
        return answer
