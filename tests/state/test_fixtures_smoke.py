"""The moto server fixture and the state-table definition work together."""

from __future__ import annotations

from tests.moto_server import client, create_state_table


def test_state_table_has_the_key_design(aws_reset: str) -> None:
    ddb = client("dynamodb", aws_reset)
    name = create_state_table(ddb)
    desc = ddb.describe_table(TableName=name)["Table"]
    assert [k["AttributeName"] for k in desc["KeySchema"]] == ["pk", "sk"]
    assert sorted(i["IndexName"] for i in desc["GlobalSecondaryIndexes"]) == ["gsi1", "gsi2"]
    ddb.put_item(TableName=name, Item={"pk": {"S": "a"}, "sk": {"S": "b"}})
    assert ddb.get_item(TableName=name, Key={"pk": {"S": "a"}, "sk": {"S": "b"}})["Item"]["pk"] == {"S": "a"}
