"""Price table: the bundled figures, unknown regions, price files and the AWS Pricing API refresh.

The Pricing API is stubbed with botocore's Stubber (moto does not implement it); responses are shaped like the
``GetProducts`` reference: ``PriceList`` is a list of JSON *strings*, one product each, with ``product``,
``serviceCode``, ``terms.OnDemand.<sku.offer>.priceDimensions.<rate>.pricePerUnit.USD`` (a decimal string).
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import boto3
import orjson
import pytest
from botocore.stub import Stubber

from auditor.billing.pricing import (
    PricingError,
    RegionPrices,
    bundled_prices,
    known_regions,
    load_price_file,
)
from auditor.exceptions import InputError
from auditor.sources.pricing_api import (
    ON_DEMAND_FAMILY,
    PROVISIONED_FAMILY,
    STORAGE_FAMILY,
    PriceBook,
    fetch_prices,
    pricing_api_region,
    pricing_client,
)

# -------------------------------------------------------------------------------------------------- bundled


def test_bundled_us_east_1_prices_are_the_dated_list_prices() -> None:
    p = bundled_prices("us-east-1")
    assert p.region == "us-east-1" and p.fallback_for is None
    assert p.as_of == date(2026, 9, 6)
    assert "bundled" in p.source
    std, ia = p.standard, p.standard_ia
    assert (std.read_request_unit, std.write_request_unit) == (0.125e-6, 0.625e-6)
    assert (std.rcu_hour, std.wcu_hour, std.storage_gb_month) == (0.00013, 0.00065, 0.25)
    assert (ia.read_request_unit, ia.write_request_unit) == (0.155e-6, 0.78e-6)
    assert (ia.rcu_hour, ia.wcu_hour, ia.storage_gb_month) == (0.00016, 0.00081, 0.10)
    assert p.for_class("STANDARD") is std and p.for_class("STANDARD_INFREQUENT_ACCESS") is ia


def test_break_even_utilisation_after_the_november_2024_cut() -> None:
    std = bundled_prices("us-east-1").standard
    # On-demand is cheaper when provisioned capacity would run below P_hr / (3600 P_req) = 28.9 % utilisation.
    assert std.break_even_utilisation("read") == pytest.approx(0.28889, abs=1e-5)
    assert std.break_even_utilisation("write") == pytest.approx(0.28889, abs=1e-5)


def test_reserved_capacity_offers_and_effective_rates() -> None:
    p = bundled_prices("us-east-1")
    one_year_read = p.reserved_offer("read", 1)
    assert one_year_read is not None
    # $30 upfront per 100 RCU over 8,760 h, plus $0.0025/h per 100: $0.0000592 per RCU-hour (-54 %).
    assert one_year_read.per_unit_hour == pytest.approx(0.0000592, rel=1e-3)
    three_year_write = p.reserved_offer("write", 3)
    assert three_year_write is not None
    assert three_year_write.per_unit_hour == pytest.approx(0.000149, rel=1e-2)


def test_unknown_region_falls_back_to_a_labelled_default_or_fails_clearly() -> None:
    p = bundled_prices("eu-west-1")
    assert p.region == "us-east-1" and p.fallback_for == "eu-west-1"
    label = p.label()
    assert label["region"] == "eu-west-1" and label["price_region"] == "us-east-1" and label["fallback"] is True
    assert "labelled default for eu-west-1" in label["source"]
    assert label["as_of"] == "2026-09-06"
    with pytest.raises(PricingError, match="no bundled DynamoDB prices for region 'eu-west-1'") as err:
        bundled_prices("eu-west-1", allow_fallback=False)
    assert isinstance(err.value, InputError)  # the CLI reports it as an input error, never a crash
    assert "us-east-1" in known_regions()


# ---------------------------------------------------------------------------------------------- price files


def test_price_file_round_trip_and_errors(tmp_path: Path) -> None:
    custom = bundled_prices("us-east-1").model_copy(update={"region": "eu-west-1", "source": "my price sheet"})
    path = tmp_path / "prices.json"
    path.write_bytes(orjson.dumps(custom.model_dump(mode="json")))
    loaded = load_price_file(path)
    assert loaded == custom
    assert loaded.label()["source"] == "my price sheet"

    with pytest.raises(PricingError, match="cannot read price file"):
        load_price_file(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(PricingError, match="not valid JSON"):
        load_price_file(tmp_path / "bad.json")
    doc = custom.model_dump(mode="json")
    doc["standard"]["rcu_hour"] = -1
    (tmp_path / "neg.json").write_bytes(orjson.dumps(doc))
    with pytest.raises(PricingError, match=r"neg.json: standard.rcu_hour: Input should be greater than 0"):
        load_price_file(tmp_path / "neg.json")


# -------------------------------------------------------------------------------------------- Pricing API

REGION = "eu-west-1"


def _product(
    family: str,
    usagetype: str,
    prices: list[tuple[str, str, str]],
    *,
    group: str | None = None,
    volume_type: str | None = None,
    sku: str = "SKU",
    region: str = REGION,
    effective: str = "2024-11-01T00:00:00Z",
) -> str:
    """One PriceList entry (a JSON string): ``prices`` are (beginRange, endRange, USD) bands."""
    attributes: dict[str, Any] = {
        "servicecode": "AmazonDynamoDB",
        "location": "EU (Ireland)",
        "locationType": "AWS Region",
        "regionCode": region,
        "usagetype": usagetype,
        "servicename": "Amazon DynamoDB",
    }
    if group is not None:
        attributes["group"] = group
        attributes["groupDescription"] = "DynamoDB throughput"
    if volume_type is not None:
        attributes["volumeType"] = volume_type
    offer = f"{sku}.JRTCKXETXF"
    dims = {
        f"{offer}.{n}": {
            "unit": usagetype,
            "endRange": end,
            "description": f"${usd} per unit",
            "appliesTo": [],
            "rateCode": f"{offer}.{n}",
            "beginRange": begin,
            "pricePerUnit": {"USD": usd},
        }
        for n, (begin, end, usd) in enumerate(prices)
    }
    doc = {
        "product": {"productFamily": family, "attributes": attributes, "sku": sku},
        "serviceCode": "AmazonDynamoDB",
        "terms": {
            "OnDemand": {
                offer: {
                    "priceDimensions": dims,
                    "sku": sku,
                    "effectiveDate": effective,
                    "offerTermCode": "JRTCKXETXF",
                    "termAttributes": {},
                }
            }
        },
        "version": "20241101000000",
        "publicationDate": "2024-11-01T00:00:00Z",
    }
    return orjson.dumps(doc).decode()


def _request(family: str, token: str | None = None, region: str = REGION) -> dict[str, Any]:
    params: dict[str, Any] = {
        "ServiceCode": "AmazonDynamoDB",
        "Filters": [
            {"Type": "TERM_MATCH", "Field": "productFamily", "Value": family},
            {"Type": "TERM_MATCH", "Field": "regionCode", "Value": region},
        ],
        "FormatVersion": "aws_v1",
        "MaxResults": 100,
    }
    if token:
        params["NextToken"] = token
    return params


def _pricing_client(api_region: str = "us-east-1") -> Any:
    return boto3.client("pricing", region_name=api_region, aws_access_key_id="testing", aws_secret_access_key="testing")


# Illustrative figures for the test region (not real prices): only the parsing is under test.
PROVISIONED_PAGE_1 = [
    _product(
        PROVISIONED_FAMILY,
        "EU-ReadCapacityUnit-Hrs",
        [("0", "18600", "0.0000000000"), ("18600", "Inf", "0.0001470000")],  # free tier band first
        group="DDB-ReadUnits",
        sku="P1",
    ),
    _product(PROVISIONED_FAMILY, "EU-WriteCapacityUnit-Hrs", [("0", "Inf", "0.0007350000")], group="DDB-WriteUnits"),
]
PROVISIONED_PAGE_2 = [
    _product(PROVISIONED_FAMILY, "EU-IA-ReadCapacityUnit-Hrs", [("0", "Inf", "0.0001840000")], group="DDB-ReadUnitsIA"),
    _product(
        PROVISIONED_FAMILY, "EU-IA-WriteCapacityUnit-Hrs", [("0", "Inf", "0.0009190000")], group="DDB-WriteUnitsIA"
    ),
    # Replicated writes (global tables) carry a write group but are not single-region WCUs.
    _product(PROVISIONED_FAMILY, "EU-ReplWriteCapacityUnit-Hrs", [("0", "Inf", "0.0099")], group="DDB-WriteUnits"),
]
ON_DEMAND_PAGE = [
    _product(ON_DEMAND_FAMILY, "EU-ReadRequestUnits", [("0", "Inf", "0.0000001415")], group="DDB-ReadUnits"),
    _product(ON_DEMAND_FAMILY, "EU-WriteRequestUnits", [("0", "Inf", "0.0000007063")], group="DDB-WriteUnits"),
    # A vector-search SKU in the same family has no "group": it must be skipped, not crash the parser.
    _product(ON_DEMAND_FAMILY, "EU-VectorSearchUnits", [("0", "Inf", "0.5")]),
    _product(ON_DEMAND_FAMILY, "EU-IA-ReadRequestUnits", [("0", "Inf", "0.0000001770")], group="DDB-ReadUnitsIA"),
    _product(ON_DEMAND_FAMILY, "EU-IA-WriteRequestUnits", [("0", "Inf", "0.0000008830")], group="DDB-WriteUnitsIA"),
]
STORAGE_PAGE = [
    _product(
        STORAGE_FAMILY,
        "EU-TimedStorage-ByteHrs",
        [("0", "25", "0.0000000000"), ("25", "Inf", "0.2830000000")],
        volume_type="Amazon DynamoDB - Indexed DataStore",
    ),
    _product(
        STORAGE_FAMILY,
        "EU-IA-TimedStorage-ByteHrs",
        [("0", "Inf", "0.1130000000")],
        volume_type="Amazon DynamoDB - Indexed DataStore - IA",
    ),
]


def test_fetch_prices_reads_every_page_and_skips_products_without_a_group() -> None:
    client = _pricing_client()
    with Stubber(client) as stub:
        stub.add_response(
            "get_products",
            {"FormatVersion": "aws_v1", "PriceList": PROVISIONED_PAGE_1, "NextToken": "page-2"},
            _request(PROVISIONED_FAMILY),
        )
        stub.add_response(
            "get_products",
            {"FormatVersion": "aws_v1", "PriceList": PROVISIONED_PAGE_2},
            _request(PROVISIONED_FAMILY, "page-2"),
        )
        stub.add_response(
            "get_products", {"FormatVersion": "aws_v1", "PriceList": ON_DEMAND_PAGE}, _request(ON_DEMAND_FAMILY)
        )
        stub.add_response(
            "get_products", {"FormatVersion": "aws_v1", "PriceList": STORAGE_PAGE}, _request(STORAGE_FAMILY)
        )
        prices = fetch_prices(client, REGION, as_of=date(2026, 12, 1), reserved_from=bundled_prices("us-east-1"))
        stub.assert_no_pending_responses()  # the second page was requested with its NextToken
    assert prices.region == REGION and prices.fallback_for is None
    assert prices.as_of == date(2024, 11, 1)  # the offer's effective date, not the day it was read
    assert prices.source == (
        "AWS Pricing API GetProducts, read 2026-12-01 (12 products, 1 without a group attribute skipped)"
    )
    std, ia = prices.standard, prices.standard_ia
    assert std.rcu_hour == 0.000147  # the paid band, not the free tier
    assert std.wcu_hour == 0.000735  # the replicated-write product did not overwrite it
    assert (ia.rcu_hour, ia.wcu_hour) == (0.000184, 0.000919)
    assert (std.read_request_unit, std.write_request_unit) == (1.415e-7, 7.063e-7)
    assert (ia.read_request_unit, ia.write_request_unit) == (1.77e-7, 8.83e-7)
    assert (std.storage_gb_month, ia.storage_gb_month) == (0.283, 0.113)
    assert prices.reserved == ()  # reserved offers are only copied for the same region
    label = prices.label()
    assert label["source"].startswith("AWS Pricing API") and label["as_of"] == "2024-11-01"


def test_fetch_prices_names_what_is_missing() -> None:
    client = _pricing_client()
    with Stubber(client) as stub:
        stub.add_response(
            "get_products",
            {"FormatVersion": "aws_v1", "PriceList": PROVISIONED_PAGE_1},
            _request(PROVISIONED_FAMILY),
        )
        stub.add_response("get_products", {"FormatVersion": "aws_v1", "PriceList": []}, _request(ON_DEMAND_FAMILY))
        stub.add_response("get_products", {"FormatVersion": "aws_v1", "PriceList": []}, _request(STORAGE_FAMILY))
        with pytest.raises(PricingError, match=r"no price for standard.read_request_unit, .*standard_ia.rcu_hour"):
            fetch_prices(client, REGION, as_of=date(2026, 12, 1))


def test_region_prices_model_rejects_nonsense() -> None:
    doc = bundled_prices("us-east-1").model_dump(mode="json")
    doc["standard"]["read_request_unit"] = 0
    with pytest.raises(ValueError, match="greater than 0"):
        RegionPrices.model_validate(doc)


def _region_pages(region: str, prefix: str, rcu: str, wcu: str, rru: str, wru: str, effective: str) -> list[Any]:
    """One region's three product families, one page each (the figures are the test's, IA = standard x 1.25)."""

    def ia(price: str) -> str:
        return f"{float(price) * 1.25:.10f}"

    def product(family: str, usage: str, price: str, **kw: Any) -> str:
        return _product(family, f"{prefix}{usage}", [("0", "Inf", price)], region=region, effective=effective, **kw)

    return [
        [
            product(PROVISIONED_FAMILY, "ReadCapacityUnit-Hrs", rcu, group="DDB-ReadUnits"),
            product(PROVISIONED_FAMILY, "WriteCapacityUnit-Hrs", wcu, group="DDB-WriteUnits"),
            product(PROVISIONED_FAMILY, "IA-ReadCapacityUnit-Hrs", ia(rcu), group="DDB-ReadUnitsIA"),
            product(PROVISIONED_FAMILY, "IA-WriteCapacityUnit-Hrs", ia(wcu), group="DDB-WriteUnitsIA"),
        ],
        [
            product(ON_DEMAND_FAMILY, "ReadRequestUnits", rru, group="DDB-ReadUnits"),
            product(ON_DEMAND_FAMILY, "WriteRequestUnits", wru, group="DDB-WriteUnits"),
            product(ON_DEMAND_FAMILY, "IA-ReadRequestUnits", ia(rru), group="DDB-ReadUnitsIA"),
            product(ON_DEMAND_FAMILY, "IA-WriteRequestUnits", ia(wru), group="DDB-WriteUnitsIA"),
        ],
        [
            product(STORAGE_FAMILY, "TimedStorage-ByteHrs", "0.25", volume_type="Amazon DynamoDB - Indexed DataStore"),
            product(
                STORAGE_FAMILY,
                "IA-TimedStorage-ByteHrs",
                "0.10",
                volume_type="Amazon DynamoDB - Indexed DataStore - IA",
            ),
        ],
    ]


def _stubbed(api_region: str, region: str, pages: list[Any]) -> tuple[Any, Stubber]:
    client = _pricing_client(api_region)
    stub = Stubber(client)
    for family, page in zip((PROVISIONED_FAMILY, ON_DEMAND_FAMILY, STORAGE_FAMILY), pages, strict=True):
        stub.add_response(
            "get_products", {"FormatVersion": "aws_v1", "PriceList": page}, _request(family, region=region)
        )
    stub.activate()
    return client, stub


def test_price_book_reads_two_regions_from_their_pricing_endpoints_once_each() -> None:
    us, us_stub = _stubbed(
        "us-east-1",
        "us-east-1",
        _region_pages("us-east-1", "", "0.00013", "0.00065", "0.000000125", "0.000000625", "2024-11-01T00:00:00Z"),
    )
    eu, eu_stub = _stubbed(
        "eu-central-1",
        "eu-west-1",
        _region_pages(
            "eu-west-1", "EU-", "0.000147", "0.000735", "0.0000001415", "0.0000007063", "2025-03-01T00:00:00Z"
        ),
    )
    asked: list[str] = []

    def client_for(api_region: str) -> Any:
        asked.append(api_region)
        return {"us-east-1": us, "eu-central-1": eu}[api_region]

    book = PriceBook(client_for, date(2026, 12, 3))
    east, warning = book.get("us-east-1")
    assert warning is None and east.standard.rcu_hour == 0.00013 and east.standard.write_request_unit == 6.25e-7
    assert east.as_of == date(2024, 11, 1) and east.source.startswith("AWS Pricing API GetProducts, read 2026-12-03")
    assert east.reserved == bundled_prices("us-east-1").reserved  # RC offers are not in these families
    west, warning = book.get("eu-west-1")
    assert warning is None and (west.standard.rcu_hour, west.standard.read_request_unit) == (0.000147, 1.415e-7)
    assert west.as_of == date(2025, 3, 1) and west.label()["price_region"] == "eu-west-1"
    # Cached per run: asking again makes no call (the stubs have no responses left and would fail).
    assert book.get("eu-west-1")[0] is west and book.get("us-east-1")[0] is east
    assert asked == ["us-east-1", "eu-central-1"]
    us_stub.assert_no_pending_responses()
    eu_stub.assert_no_pending_responses()


def test_price_book_falls_back_to_the_bundled_table_with_a_label() -> None:
    client = _pricing_client()
    with Stubber(client) as stub:
        stub.add_client_error("get_products", "AccessDeniedException", "not authorized to perform pricing:GetProducts")
        prices, warning = PriceBook(lambda _r: client, date(2026, 12, 3)).get("us-east-1")
    assert prices.standard == bundled_prices("us-east-1").standard
    assert "the AWS Pricing API was not used (AccessDeniedException: " in prices.source
    assert warning is not None and "using the bundled prices of us-east-1, as of 2026-09-06" in warning
    # Offline (no client), the bundled table without a warning; an unknown region keeps its fallback label.
    offline = PriceBook(None, date(2026, 12, 3))
    assert offline.get("us-east-1") == (bundled_prices("us-east-1"), None)
    assert offline.get("eu-west-1")[0].fallback_for == "eu-west-1"


@pytest.mark.parametrize(
    ("region", "endpoint"),
    [
        ("us-west-2", "us-east-1"),
        ("sa-east-1", "us-east-1"),
        ("eu-west-1", "eu-central-1"),
        ("ap-northeast-1", "ap-south-1"),
    ],
)
def test_pricing_endpoint_per_region(region: str, endpoint: str) -> None:
    assert pricing_api_region(region) == endpoint


def test_a_local_endpoint_is_not_asked_for_prices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:5999")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with pytest.raises(PricingError, match="not the AWS Pricing API"):
        pricing_client("us-east-1")
    prices, warning = PriceBook(pricing_client, date(2026, 12, 3)).get("us-east-1")
    assert prices.standard == bundled_prices("us-east-1").standard and warning is not None
    monkeypatch.delenv("AWS_ENDPOINT_URL")
    assert pricing_client("eu-central-1").meta.endpoint_url == "https://api.pricing.eu-central-1.amazonaws.com"
