"""DynamoDB's throughput quotas from Service Quotas: moto server for the fallback (moto's Service Quotas knows only
the ``vpc`` service and answers NoSuchResourceException for DynamoDB's codes), botocore Stubber with the response
shape of the Service Quotas API reference (GetServiceQuota, ServiceQuota) for applied values and errors."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from auditor.models.inventory import Gap, ThroughputQuotas
from auditor.models.metrics import ApiStats
from auditor.sources.inventory import TableSelector, collect_inventory
from auditor.sources.quotas import QUOTA_CODES, read_throughput_quotas
from tests.cw_support import aws, create_table

#: The DynamoDB page of the AWS General Reference: code -> (quota name, documented default).
DOCUMENTED = {
    "L-CF0CBE56": ("Table-level read throughput limit", 40_000.0),
    "L-AB614373": ("Table-level write throughput limit", 40_000.0),
    "L-34F6A552": ("Account-level read throughput limit (Provisioned mode)", 80_000.0),
    "L-34F8CCC8": ("Account-level write throughput limit (Provisioned mode)", 80_000.0),
}


def _quota(code: str, value: float) -> dict[str, Any]:
    """A GetServiceQuota response (Service Quotas API reference, ServiceQuota)."""
    name, _ = DOCUMENTED[code]
    return {
        "Quota": {
            "ServiceCode": "dynamodb",
            "ServiceName": "Amazon DynamoDB",
            "QuotaArn": f"arn:aws:servicequotas:us-east-1:123456789012:dynamodb/{code}",
            "QuotaCode": code,
            "QuotaName": name,
            "Value": value,
            "Unit": "None",
            "Adjustable": True,
            "GlobalQuota": False,
        }
    }


def _client() -> Any:
    return boto3.client(
        "service-quotas", region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing"
    )


def test_the_codes_are_dynamodbs_throughput_quotas() -> None:
    assert set(QUOTA_CODES.values()) == set(DOCUMENTED)
    defaults = ThroughputQuotas()
    for field, code in QUOTA_CODES.items():
        assert getattr(defaults, field) == DOCUMENTED[code][1]


def test_applied_values_are_read_and_the_rest_keep_their_defaults() -> None:
    client = _client()
    stats, gaps = ApiStats(), []
    with Stubber(client) as stub:
        stub.add_response(
            "get_service_quota", _quota("L-CF0CBE56", 60_000.0), {"ServiceCode": "dynamodb", "QuotaCode": "L-CF0CBE56"}
        )
        stub.add_client_error(
            "get_service_quota",
            "NoSuchResourceException",
            "The request failed because the specified service does not exist.",
        )
        stub.add_response("get_service_quota", _quota("L-34F6A552", 150_000.0))
        stub.add_response("get_service_quota", _quota("L-34F8CCC8", 80_000.0))
        quotas = read_throughput_quotas(client, stats, gaps)
        stub.assert_no_pending_responses()
    assert quotas.table("read") == (60_000.0, "service_quotas")
    assert quotas.table("write") == (40_000.0, "default")  # no applied value: the default holds, no gap
    assert quotas.account("read") == (150_000.0, "service_quotas")
    assert quotas.account("write") == (80_000.0, "service_quotas")
    assert gaps == [] and stats.calls["servicequotas:GetServiceQuota"] == 4


def test_access_denied_keeps_every_default_and_is_a_gap() -> None:
    client = _client()
    stats, gaps = ApiStats(), []
    with Stubber(client) as stub:
        stub.add_client_error("get_service_quota", "AccessDeniedException", "You do not have sufficient permission.")
        quotas = read_throughput_quotas(client, stats, gaps)
        stub.assert_no_pending_responses()  # denied once: the others are not asked
    assert quotas == ThroughputQuotas()
    assert [(g.call, g.error_code, g.facet) for g in gaps] == [
        ("servicequotas:GetServiceQuota", "AccessDeniedException", "quotas")
    ]
    assert isinstance(gaps[0], Gap)


def test_the_inventory_reads_the_quotas_on_moto_and_falls_back_to_the_defaults(aws_reset: str) -> None:
    ddb, aas, sq = (
        aws("dynamodb", aws_reset),
        aws("application-autoscaling", aws_reset),
        aws("service-quotas", aws_reset),
    )
    create_table(ddb, "Orders", read=50, write=20)
    stats = ApiStats()
    inv = collect_inventory(ddb, aas, TableSelector(), stats=stats, quotas=sq)
    assert inv.quotas == ThroughputQuotas()  # moto: NoSuchResourceException for DynamoDB's codes
    assert stats.calls["servicequotas:GetServiceQuota"] == 4
    assert not [g for g in inv.gaps if g.facet == "quotas"]
    assert collect_inventory(ddb, aas, TableSelector(), stats=ApiStats()).quotas == ThroughputQuotas()


@pytest.mark.parametrize("value", [0, None])
def test_a_quota_without_a_usable_value_keeps_its_default(value: float | None) -> None:
    client = _client()
    answer = _quota("L-CF0CBE56", 1.0)
    answer["Quota"].pop("Value")
    if value is not None:
        answer["Quota"]["Value"] = value
    with Stubber(client) as stub:
        stub.add_response("get_service_quota", answer)
        for _ in ("L-AB614373", "L-34F6A552", "L-34F8CCC8"):
            stub.add_client_error("get_service_quota", "NoSuchResourceException", "no applied value", 400)
        assert read_throughput_quotas(client, ApiStats(), []) == ThroughputQuotas()
