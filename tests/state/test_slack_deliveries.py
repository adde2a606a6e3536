"""SlackDeliveries against the moto server: a message is claimed once, posted once, and a stop in between is seen."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError

from auditor.state import keys
from auditor.state.slack_deliveries import SLACK_DELIVERY_RETENTION_DAYS, Claim, SlackDeliveries
from tests.moto_server import client, create_state_table

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)


@pytest.fixture
def ddb(aws_reset: str) -> Any:
    return client("dynamodb", aws_reset)


@pytest.fixture
def store(ddb: Any) -> SlackDeliveries:
    return SlackDeliveries(ddb, create_state_table(ddb))


def _item(ddb: Any, message_key: str) -> dict[str, Any]:
    key = {keys.PK: {"S": keys.slack_delivery_pk(message_key)}, keys.SK: {"S": keys.SLACK_DELIVERY_SK}}
    return ddb.get_item(TableName="auditor-state", Key=key, ConsistentRead=True).get("Item", {})


def test_a_new_message_is_marked_posting_then_posted(store: SlackDeliveries, ddb: Any) -> None:
    claim, token = store.begin("evt-1", T0)
    assert claim is Claim.NEW and token
    item = _item(ddb, "evt-1")
    assert item[keys.PK]["S"] == "SLACK#evt-1" and item["state"]["S"] == "posting"
    assert int(item[keys.TTL_ATTR]["N"]) == int((T0 + timedelta(days=SLACK_DELIVERY_RETENTION_DAYS)).timestamp())
    store.posted("evt-1", token, T0 + timedelta(seconds=1))
    assert _item(ddb, "evt-1")["state"]["S"] == "posted"


def test_a_posted_message_is_found_posted(store: SlackDeliveries) -> None:
    _, token = store.begin("evt-1", T0)
    store.posted("evt-1", token, T0)
    assert store.begin("evt-1", T0 + timedelta(minutes=1))[0] is Claim.POSTED


def test_a_message_left_posting_is_unsure(store: SlackDeliveries, ddb: Any) -> None:
    """An earlier delivery stopped between Slack's answer and the mark: Slack may have the message."""
    store.begin("evt-1", T0)
    claim, token = store.begin("evt-1", T0 + timedelta(minutes=1))
    assert claim is Claim.UNSURE
    store.posted("evt-1", token, T0 + timedelta(minutes=1))
    assert _item(ddb, "evt-1")["token"]["S"] == token
    assert store.begin("evt-1", T0 + timedelta(minutes=2))[0] is Claim.POSTED


def test_a_refused_post_makes_the_next_delivery_new(store: SlackDeliveries, ddb: Any) -> None:
    _, token = store.begin("evt-1", T0)
    store.refused("evt-1", token, T0)
    assert _item(ddb, "evt-1")["state"]["S"] == "failed"
    assert store.begin("evt-1", T0 + timedelta(minutes=1))[0] is Claim.NEW


def test_a_refusal_never_overwrites_a_later_delivery(store: SlackDeliveries, ddb: Any) -> None:
    _, first = store.begin("evt-1", T0)
    _, second = store.begin("evt-1", T0)  # another delivery took it over and posted it
    store.posted("evt-1", second, T0)
    store.refused("evt-1", first, T0)
    assert _item(ddb, "evt-1")["state"]["S"] == "posted"


def test_a_put_sent_again_after_its_answer_was_lost_is_its_own(store: SlackDeliveries, ddb: Any) -> None:
    """botocore sends the conditional put again after a read timeout: the item it finds carries its own token."""
    real = ddb.put_item
    calls: list[str] = []

    def put_twice(**kw: Any) -> Any:
        calls.append(kw["Item"]["token"]["S"])
        real(**kw)  # carried out, the answer lost
        return real(**kw)

    ddb.put_item = put_twice
    assert store.begin("evt-1", T0)[0] is Claim.NEW and len(calls) == 1


def test_other_errors_raise(store: SlackDeliveries) -> None:
    missing = SlackDeliveries(store._client, "no-such-table")
    with pytest.raises(ClientError):
        missing.begin("evt-1", T0)
    with pytest.raises(ClientError):
        missing.refused("evt-1", "token", T0)


def test_a_long_message_key_is_hashed() -> None:
    assert keys.slack_delivery_pk("evt-1") == "SLACK#evt-1"
    long_pk = keys.slack_delivery_pk("x" * 500)
    assert long_pk.startswith(keys.SLACK_PREFIX) and len(long_pk) == len(keys.SLACK_PREFIX) + 64
