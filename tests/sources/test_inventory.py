"""The inventory source against moto server (real HTTP), and through botocore Stubber for what moto lacks."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from botocore.stub import Stubber

from auditor.exceptions import InputError
from auditor.models.metrics import ApiStats
from auditor.sources.inventory import TableSelector, collect_inventory, parse_tag
from tests.cw_support import aws, create_table


@pytest.fixture
def clients(aws_reset: str) -> tuple[Any, Any]:
    return aws("dynamodb", aws_reset), aws("application-autoscaling", aws_reset)


def test_profiles_tables_indexes_capacity_tags_ttl_and_auto_scaling(clients: tuple[Any, Any]) -> None:
    ddb, aas = clients
    create_table(ddb, "Orders", gsis=["byStatus", "byCustomer"], read=50, write=20, tags={"team": "shop"})
    create_table(ddb, "Sessions", on_demand=True, sort_key=True)
    create_table(ddb, "Wide", on_demand=True, gsis=[f"g{i:02d}" for i in range(20)])  # the GSI maximum
    ddb.update_time_to_live(TableName="Sessions", TimeToLiveSpecification={"Enabled": True, "AttributeName": "exp"})
    aas.register_scalable_target(
        ServiceNamespace="dynamodb",
        ResourceId="table/Orders",
        ScalableDimension="dynamodb:table:WriteCapacityUnits",
        MinCapacity=5,
        MaxCapacity=200,
    )
    aas.put_scaling_policy(
        PolicyName="orders-write",
        ServiceNamespace="dynamodb",
        ResourceId="table/Orders",
        ScalableDimension="dynamodb:table:WriteCapacityUnits",
        PolicyType="TargetTrackingScaling",
        TargetTrackingScalingPolicyConfiguration={
            "TargetValue": 70.0,
            "PredefinedMetricSpecification": {"PredefinedMetricType": "DynamoDBWriteCapacityUtilization"},
        },
    )
    aas.register_scalable_target(
        ServiceNamespace="dynamodb",
        ResourceId="table/Orders/index/byStatus",
        ScalableDimension="dynamodb:index:ReadCapacityUnits",
        MinCapacity=1,
        MaxCapacity=10,
    )
    stats = ApiStats()

    inv = collect_inventory(ddb, aas, TableSelector(), stats=stats)

    assert [t.name for t in inv.tables] == ["Orders", "Sessions", "Wide"]
    orders, sessions, wide = inv.tables
    assert (orders.account, orders.region, orders.billing_mode) == ("123456789012", "us-east-1", "PROVISIONED")
    assert (orders.capacity.provisioned_read, orders.capacity.provisioned_write) == (50, 20)
    assert [g.name for g in orders.gsis] == ["byStatus", "byCustomer"]
    assert orders.gsi("byStatus") is not None and orders.gsi("byStatus").capacity.provisioned_write == 5
    assert orders.tags == {"team": "shop"}
    write_scaling = orders.capacity.scaling("write")
    assert write_scaling is not None
    assert (write_scaling.min_capacity, write_scaling.max_capacity, write_scaling.target_utilization) == (5, 200, 70.0)
    assert write_scaling.policy_names == ("orders-write",)
    assert orders.capacity.scaling("read") is None
    gsi_scaling = orders.capacity_of("byStatus").scaling("read")
    assert gsi_scaling is not None and gsi_scaling.max_capacity == 10
    assert sessions.billing_mode == "PAY_PER_REQUEST"
    assert (sessions.capacity.provisioned_read, sessions.capacity.provisioned_write) == (0, 0)
    assert (sessions.sort_key, sessions.ttl_status, sessions.ttl_attribute) == ("sk", "ENABLED", "exp")
    assert len(wide.gsis) == 20
    # moto does not implement Contributor Insights: one account-wide gap, the status is "unknown", nothing fails
    assert [(g.call, g.facet) for g in inv.gaps] == [("dynamodb:ListContributorInsights", "contributor_insights")]
    assert orders.contributor_insights.status == "unknown"
    assert stats.calls["dynamodb:DescribeTable"] == 3
    assert stats.calls["dynamodb:ListContributorInsights"] == 1
    # only the provisioned table and its GSIs are looked up for auto scaling (one chunk of ids)
    assert stats.calls["application-autoscaling:DescribeScalableTargets"] == 1


def test_select_by_prefix_names_and_tag(clients: tuple[Any, Any]) -> None:
    ddb, aas = clients
    create_table(ddb, "prod-orders", tags={"env": "prod"})
    create_table(ddb, "prod-carts", on_demand=True, tags={"env": "prod"})
    create_table(ddb, "dev-orders", tags={"env": "dev"})

    def names(selector: TableSelector) -> list[str]:
        return [t.name for t in collect_inventory(ddb, aas, selector, stats=ApiStats()).tables]

    assert names(TableSelector(prefix="prod-")) == ["prod-carts", "prod-orders"]
    assert names(TableSelector(tag=("env", "dev"))) == ["dev-orders"]
    assert names(TableSelector(prefix="prod-", tag=("env", "dev"))) == []
    stats = ApiStats()
    inv = collect_inventory(ddb, aas, TableSelector(names=("dev-orders", "gone")), stats=stats)
    assert [t.name for t in inv.tables] == ["dev-orders"]
    assert inv.missing == ("gone",)
    assert [g.error_code for g in inv.gaps if g.table == "gone"] == ["ResourceNotFoundException"]
    assert "dynamodb:ListTables" not in stats.calls  # named tables are described directly


def test_list_tables_is_paginated(clients: tuple[Any, Any]) -> None:
    ddb, _ = clients
    for i in range(105):
        create_table(ddb, f"t{i:03d}", on_demand=True)
    stats = ApiStats()
    inv = collect_inventory(ddb, None, TableSelector(prefix="t10"), stats=stats, max_workers=4)
    assert [t.name for t in inv.tables] == [f"t{i:03d}" for i in range(100, 105)]
    assert stats.calls["dynamodb:ListTables"] == 2  # 100 names per page
    assert stats.calls["dynamodb:DescribeTable"] == 5


def test_a_table_deleted_mid_run_is_recorded_and_the_others_are_audited(
    clients: tuple[Any, Any], aws_reset: str
) -> None:
    ddb, aas = clients
    for name in ("A", "B", "C"):
        create_table(ddb, name)
    deleter = aws("dynamodb", aws_reset)

    def delete_b(**_: Any) -> None:
        deleter.delete_table(TableName="B")

    ddb.meta.events.register("after-call.dynamodb.ListTables", delete_b)
    inv = collect_inventory(ddb, aas, TableSelector(), stats=ApiStats())
    assert [t.name for t in inv.tables] == ["A", "C"]
    assert inv.missing == ("B",)


def test_parse_tag() -> None:
    assert parse_tag("env=prod") == ("env", "prod")
    assert parse_tag("k=") == ("k", "")
    with pytest.raises(InputError, match="KEY=VALUE"):
        parse_tag("env")


# ---------------------------------------------------------------- Stubber: AccessDenied and Contributor Insights

NOW = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)


def _describe(name: str) -> dict[str, Any]:
    """A DescribeTable response as the API reference shapes it."""
    return {
        "Table": {
            "TableName": name,
            "TableArn": f"arn:aws:dynamodb:eu-west-1:111122223333:table/{name}",
            "TableStatus": "ACTIVE",
            "CreationDateTime": NOW,
            "AttributeDefinitions": [
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "status", "AttributeType": "S"},
            ],
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
            "BillingModeSummary": {"BillingMode": "PAY_PER_REQUEST"},
            "ProvisionedThroughput": {"ReadCapacityUnits": 0, "WriteCapacityUnits": 0},
            "OnDemandThroughput": {"MaxReadRequestUnits": 500, "MaxWriteRequestUnits": -1},
            "WarmThroughput": {"ReadUnitsPerSecond": 12000, "WriteUnitsPerSecond": 4000, "Status": "ACTIVE"},
            "TableClassSummary": {"TableClass": "STANDARD_INFREQUENT_ACCESS"},
            "TableSizeBytes": 2048,
            "ItemCount": 10,
            "GlobalSecondaryIndexes": [
                {
                    "IndexName": "byStatus",
                    "KeySchema": [{"AttributeName": "status", "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": "KEYS_ONLY"},
                    "IndexStatus": "ACTIVE",
                    "ProvisionedThroughput": {"ReadCapacityUnits": 0, "WriteCapacityUnits": 0},
                    "IndexSizeBytes": 512,
                    "ItemCount": 10,
                    "IndexArn": f"arn:aws:dynamodb:eu-west-1:111122223333:table/{name}/index/byStatus",
                }
            ],
        }
    }


def test_access_denied_on_one_call_is_a_gap_and_contributor_insights_rules_are_read() -> None:
    import boto3

    ddb = boto3.client("dynamodb", region_name="eu-west-1", aws_access_key_id="x", aws_secret_access_key="x")
    aas = boto3.client(
        "application-autoscaling", region_name="eu-west-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    rules = [
        "DynamoDBContributorInsights-PKT-Carts-1764583200000",
        "DynamoDBContributorInsights-PKC-Carts-1764583200000",
    ]
    with Stubber(ddb) as s:
        s.add_response("list_tables", {"TableNames": ["Carts"]}, {"Limit": 100})
        s.add_response("describe_table", _describe("Carts"), {"TableName": "Carts"})
        s.add_client_error(
            "list_tags_of_resource",
            service_error_code="AccessDeniedException",
            service_message="User is not authorized to perform: dynamodb:ListTagsOfResource",
            http_status_code=400,
        )
        s.add_response(
            "describe_time_to_live",
            {"TimeToLiveDescription": {"TimeToLiveStatus": "ENABLED", "AttributeName": "expires"}},
            {"TableName": "Carts"},
        )
        s.add_response(
            "list_contributor_insights",
            {
                "ContributorInsightsSummaries": [
                    {
                        "TableName": "Carts",
                        "ContributorInsightsStatus": "ENABLED",
                        "ContributorInsightsMode": "THROTTLED_KEYS",
                    },
                    {"TableName": "Carts", "IndexName": "byStatus", "ContributorInsightsStatus": "DISABLED"},
                    {"TableName": "Other", "ContributorInsightsStatus": "ENABLED"},
                ]
            },
            {"MaxResults": 100},
        )
        s.add_response(
            "describe_contributor_insights",
            {
                "TableName": "Carts",
                "ContributorInsightsRuleList": rules,
                "ContributorInsightsStatus": "ENABLED",
                "LastUpdateDateTime": NOW,
                "ContributorInsightsMode": "THROTTLED_KEYS",
            },
            {"TableName": "Carts"},
        )
        stats = ApiStats()
        inv = collect_inventory(ddb, aas, TableSelector(), stats=stats, max_workers=1)
        s.assert_no_pending_responses()

    (carts,) = inv.tables
    assert carts.tags is None
    assert [g.describe() for g in carts.gaps] == [
        "dynamodb:ListTagsOfResource on Carts: AccessDeniedException (tags unknown)"
    ]
    assert (carts.account, carts.region, carts.table_class) == (
        "111122223333",
        "eu-west-1",
        "STANDARD_INFREQUENT_ACCESS",
    )
    assert carts.billing_mode == "PAY_PER_REQUEST"
    assert (carts.capacity.on_demand_max_read, carts.capacity.on_demand_max("write")) == (500, None)
    assert (carts.ttl_status, carts.ttl_attribute) == ("ENABLED", "expires")
    assert carts.contributor_insights.enabled and carts.contributor_insights.rule_names == tuple(rules)
    assert carts.contributor_insights.mode == "THROTTLED_KEYS"
    assert carts.insights_of("byStatus").status == "DISABLED"
    assert carts.gsi("byStatus") is not None and carts.gsi("byStatus").size_bytes == 512
    assert "application-autoscaling:DescribeScalableTargets" not in stats.calls  # on-demand: nothing to scale


def test_denied_describe_keeps_the_table_with_unknown_facets_and_denied_listing_stops_cleanly() -> None:
    import boto3

    ddb = boto3.client("dynamodb", region_name="eu-west-1", aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(ddb) as s:
        s.add_client_error("describe_table", "AccessDeniedException", "denied", 400, expected_params={"TableName": "T"})
        s.add_client_error("list_contributor_insights", "AccessDeniedException", "denied", 400)
        inv = collect_inventory(ddb, None, TableSelector(names=("T",)), stats=ApiStats(), max_workers=1)
    (t,) = inv.tables
    assert (t.name, t.billing_mode, t.arn) == ("T", "unknown", None)
    assert [g.facet for g in inv.all_gaps()] == ["contributor_insights", "table"]

    with Stubber(ddb) as s:
        s.add_client_error("list_tables", "AccessDeniedException", "denied", 400)
        inv = collect_inventory(ddb, None, TableSelector(), stats=ApiStats())
    assert inv.tables == ()
    assert [g.describe() for g in inv.gaps] == ["dynamodb:ListTables: AccessDeniedException (tables unknown)"]
