"""Current DynamoDB list prices from the AWS Pricing API (``pricing:GetProducts``), with the bundled table of
:mod:`auditor.billing.pricing` as the labelled fallback.

:func:`fetch_prices` reads the ``Provisioned IOPS``, ``Amazon DynamoDB PayPerRequest Throughput`` and ``Database
Storage`` product families of one region, follows ``NextToken`` to the last page, skips products without a
``group`` attribute (vector-search SKUs have none) and zero-priced free-tier bands. :class:`PriceBook` asks once per
region per run.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from typing import Any, Protocol
from urllib.parse import urlsplit

import orjson
from botocore.exceptions import BotoCoreError, ClientError

from auditor.billing.pricing import (
    ClassPrices,
    Dimension,
    PricingError,
    RegionPrices,
    bundled_prices,
)


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
