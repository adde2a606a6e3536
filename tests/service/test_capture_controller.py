"""The capture controller against moto (CloudTrail selectors, DynamoDB, CloudWatch) and botocore Stubber faults."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest
from botocore.stub import Stubber

from auditor.cost.plan import ALWAYS_ON_EVENTS, ALWAYS_ON_NAME, SLICE_NAME, PlannerConfig
from auditor.service.capture import STATE_SK, CaptureClients, run_controller, state_pk
from tests.cw_support import aws, create_table, minutes, put_points
from tests.moto_server import create_state_table

TRAIL = "audit-stack-dynamodb-data-events"
STATE = "auditor-state"
OTHER = {"Name": "Management events", "FieldSelectors": [{"Field": "eventCategory", "Equals": ["Management"]}]}
INITIAL = {
    "Name": "DynamoDB table data events",
    "FieldSelectors": [
        {"Field": "eventCategory", "Equals": ["Data"]},
        {"Field": "resources.type", "Equals": ["AWS::DynamoDB::Table"]},
    ],
}


@pytest.fixture
def env(aws_reset: str) -> dict[str, Any]:
    s3, ct, ddb, cw = (aws(s, aws_reset) for s in ("s3", "cloudtrail", "dynamodb", "cloudwatch"))
    s3.create_bucket(Bucket="trail-bucket")
    ct.create_trail(Name=TRAIL, S3BucketName="trail-bucket")
    ct.put_event_selectors(TrailName=TRAIL, AdvancedEventSelectors=[OTHER, INITIAL])
    create_state_table(ddb, STATE)
    return {"ct": ct, "ddb": ddb, "cw": cw, "clients": CaptureClients(ct, cw, ddb)}


def _now() -> datetime:
    t = int(time.time())
    return datetime.fromtimestamp(t - t % 3600 + 5, UTC)  # the first slice of the hour: every table is read


def _selectors(ct: Any) -> list[dict[str, Any]]:
    return list(ct.get_event_selectors(TrailName=TRAIL)["AdvancedEventSelectors"])


def _arns(selectors: list[dict[str, Any]]) -> set[str]:
    out: set[str] = set()
    for s in selectors:
        if s["Name"] == SLICE_NAME:
            for c in s["FieldSelectors"]:
                if c["Field"] == "resources.ARN":
                    out |= set(c["Equals"])
    return out


def _run(env: dict[str, Any], now: datetime, **kw: Any) -> Any:
    kw.setdefault("fixed_usd_month", 0.0)  # a few tables: the default estimate (100s of tables) would take it all
    return run_controller(env["clients"], trail=TRAIL, state_table=STATE, now=now, sleep=lambda s: None, **kw)


def test_first_run_replaces_full_capture_keeps_other_selectors_and_records_the_plan(env: dict[str, Any]) -> None:
    create_table(env["ddb"], "Quiet")
    now = _now()
    result = _run(env, now)
    assert result.status == "applied"
    sels = _selectors(env["ct"])
    names = [s["Name"] for s in sels]
    assert names[0] == "Management events"
    assert "DynamoDB table data events" not in names  # the full-capture selector is replaced
    always = next(s for s in sels if s["Name"] == ALWAYS_ON_NAME)
    assert {"Field": "eventName", "Equals": list(ALWAYS_ON_EVENTS)} in always["FieldSelectors"]
    # A quiet provisioned table (100 RCU/WCU: $57/month, a $0.57 share) costs nothing to capture: continuous, and
    # the plan is recorded before it takes effect.
    arn = env["ddb"].describe_table(TableName="Quiet")["Table"]["TableArn"]
    assert _arns(sels) == {arn}
    slice_start = int(now.timestamp()) // 300 * 300
    item = env["ddb"].get_item(
        TableName=STATE, Key={"pk": {"S": state_pk(TRAIL)}, "sk": {"S": f"PLAN#{slice_start:012d}"}}
    )["Item"]
    plan = orjson.loads(item["plan"]["S"])
    assert plan["captures"] == [
        {
            "table": "Quiet",
            "reason": "continuous",
            "fraction": 1.0,
            "every": 1,
            "seconds": None,
            "window_start": slice_start,
            "window_end": slice_start + 300,
        }
    ]
    # The same slice again changes nothing on the trail.
    again = _run(env, now)
    assert again.status == "unchanged"
    assert again.puts == 0


def test_budget_zero_keeps_the_always_on_selector_only(env: dict[str, Any]) -> None:
    create_table(env["ddb"], "Orders", on_demand=True)
    result = _run(env, _now(), config=PlannerConfig(budget_percent=0))
    assert result.status == "applied"
    sels = _selectors(env["ct"])
    assert [s["Name"] for s in sels] == ["Management events", ALWAYS_ON_NAME]
    assert "budget 0" in result.notes[0]


def test_table_created_and_deleted_between_runs(env: dict[str, Any]) -> None:
    ddb = env["ddb"]
    create_table(ddb, "Old")
    now = _now()
    _run(env, now)
    old_arn = ddb.describe_table(TableName="Old")["Table"]["TableArn"]
    assert _arns(_selectors(env["ct"])) == {old_arn}
    ddb.delete_table(TableName="Old")
    create_table(ddb, "New")
    result = _run(env, datetime.fromtimestamp(now.timestamp() + 300, UTC))
    assert result.status == "applied"
    new_arn = ddb.describe_table(TableName="New")["Table"]["TableArn"]
    assert _arns(_selectors(env["ct"])) == {new_arn}  # an Equals ARN must name a real table


def test_burst_above_half_a_partition_is_probed_then_put_back(env: dict[str, Any]) -> None:
    ddb, cw = env["ddb"], env["cw"]
    create_table(ddb, "Busy", read=5000, write=5000)
    now = _now()
    end = (int(now.timestamp()) // 60 - 2) * 60
    put_points(cw, "ConsumedWriteCapacityUnits", "Busy", minutes(end - 600, 10, 700 * 60))
    puts: list[list[dict[str, Any]]] = []
    real_put = env["ct"].put_event_selectors

    def spy(**kw: Any) -> Any:
        puts.append(kw["AdvancedEventSelectors"])
        return real_put(**kw)

    env["ct"].put_event_selectors = spy
    result = _run(env, now, config=PlannerConfig(budget_percent=100))
    arn = ddb.describe_table(TableName="Busy")["Table"]["TableArn"]
    assert result.status == "applied"
    assert [c["reason"] for c in result.plan["captures"]] == ["burst"]
    assert len(puts) == 2
    assert _arns(puts[0]) == {arn}  # the probe
    assert _arns(puts[1]) == set()  # put back without it
    assert any(s["Name"] == ALWAYS_ON_NAME for s in puts[1])


def test_two_runs_at_once_one_wins_by_the_conditional_write(env: dict[str, Any]) -> None:
    create_table(env["ddb"], "Quiet")
    now = _now()
    _run(env, now)
    ddb = env["ddb"]
    real_get = ddb.get_item
    state = real_get(TableName=STATE, Key={"pk": {"S": state_pk(TRAIL)}, "sk": {"S": STATE_SK}})

    # The second run read the state before the first one wrote: it sees the old version and loses.
    first = _run(env, datetime.fromtimestamp(now.timestamp() + 300, UTC))
    assert first.status in ("applied", "unchanged")
    ddb.get_item = lambda **kw: state
    try:
        loser = _run(env, datetime.fromtimestamp(now.timestamp() + 300, UTC))
    finally:
        del ddb.get_item
    assert loser.status == "lost_race"
    assert loser.puts == 0


def test_trail_changed_by_someone_else_is_reported_not_fought(env: dict[str, Any]) -> None:
    create_table(env["ddb"], "Quiet")
    now = _now()
    _run(env, now)
    theirs = [OTHER, INITIAL]  # an operator puts full capture back
    env["ct"].put_event_selectors(TrailName=TRAIL, AdvancedEventSelectors=theirs)
    result = _run(env, datetime.fromtimestamp(now.timestamp() + 300, UTC))
    assert result.status == "trail_changed"
    assert [s["Name"] for s in _selectors(env["ct"])] == ["Management events", "DynamoDB table data events"]


def test_trail_deleted(env: dict[str, Any]) -> None:
    env["ct"].delete_trail(Name=TRAIL)
    result = _run(env, _now())
    assert result.status == "trail_missing"


def _stubbed(env: dict[str, Any]) -> tuple[CaptureClients, Stubber]:
    """A CloudTrail client whose calls are stubbed (moto never throttles or rejects selectors)."""
    import boto3

    ct = boto3.client("cloudtrail", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    return CaptureClients(ct, env["cw"], env["ddb"]), Stubber(ct)


GET_RESPONSE = {
    "TrailARN": f"arn:aws:cloudtrail:us-east-1:123456789012:trail/{TRAIL}",
    "AdvancedEventSelectors": [OTHER, INITIAL],
}


def test_throttled_update_is_retried_with_backoff(env: dict[str, Any]) -> None:
    create_table(env["ddb"], "Quiet")
    clients, stub = _stubbed(env)
    stub.add_response("get_event_selectors", GET_RESPONSE, {"TrailName": TRAIL})
    stub.add_client_error("put_event_selectors", "ThrottlingException", "Rate exceeded", 400)
    stub.add_client_error("put_event_selectors", "ThrottlingException", "Rate exceeded", 400)
    stub.add_response("put_event_selectors", {"TrailARN": GET_RESPONSE["TrailARN"]})
    waits: list[float] = []
    with stub:
        result = run_controller(
            clients, trail=TRAIL, state_table=STATE, now=_now(), sleep=waits.append, fixed_usd_month=0.0
        )
    stub.assert_no_pending_responses()
    assert result.status == "applied"
    assert result.puts == 3
    assert waits == [1.0, 2.0]


def test_rejected_update_falls_back_to_the_last_good_configuration(env: dict[str, Any]) -> None:
    create_table(env["ddb"], "Quiet")
    now = _now()
    good = _run(env, now)  # on moto: recorded as the last good configuration
    assert good.status == "applied"
    applied = _selectors(env["ct"])
    clients, stub = _stubbed(env)
    create_table(env["ddb"], "Second")
    stub.add_response("get_event_selectors", {"TrailARN": GET_RESPONSE["TrailARN"], "AdvancedEventSelectors": applied})
    stub.add_client_error("put_event_selectors", "InvalidEventSelectorsException", "Resource ARN does not exist", 400)
    expected_fallback = list(applied)
    stub.add_response(
        "put_event_selectors",
        {"TrailARN": GET_RESPONSE["TrailARN"]},
        {"TrailName": TRAIL, "AdvancedEventSelectors": expected_fallback},
    )
    with stub:
        result = run_controller(
            clients,
            trail=TRAIL,
            state_table=STATE,
            now=datetime.fromtimestamp(now.timestamp() + 300, UTC),
            sleep=lambda s: None,
            fixed_usd_month=0.0,
        )
    stub.assert_no_pending_responses()
    assert result.status == "fallback"
    assert "InvalidEventSelectorsException" in result.detail


def test_rejected_update_without_a_last_good_keeps_the_always_on_selector(env: dict[str, Any]) -> None:
    create_table(env["ddb"], "Quiet")
    clients, stub = _stubbed(env)
    stub.add_response("get_event_selectors", GET_RESPONSE)
    stub.add_client_error("put_event_selectors", "InvalidEventSelectorsException", "rejected", 400)
    captured: list[Any] = []
    stub.add_response("put_event_selectors", {"TrailARN": GET_RESPONSE["TrailARN"]})
    with stub:
        original = clients.cloudtrail.put_event_selectors

        def spy(**kw: Any) -> Any:
            captured.append(kw["AdvancedEventSelectors"])
            return original(**kw)

        clients.cloudtrail.put_event_selectors = spy  # type: ignore[method-assign]
        result = run_controller(
            clients, trail=TRAIL, state_table=STATE, now=_now(), sleep=lambda s: None, fixed_usd_month=0.0
        )
    assert result.status == "fallback"
    assert [s["Name"] for s in captured[-1]] == ["Management events", ALWAYS_ON_NAME]


def test_scan_and_partiql_pages_are_read_once_a_day_per_table(env: dict[str, Any]) -> None:
    from auditor.sources.scan_requests import read_scan_pages

    create_table(env["ddb"], "Scanned")
    end = int(time.time()) // 60 * 60 - 120
    for k in range(12):  # twelve requests logged as two datapoints each of Scan and ExecuteStatement
        put_points(env["cw"], "SuccessfulRequestLatency", "Scanned", {end - 3600 + k * 60: 5.0}, operation="Scan")
    put_points(
        env["cw"], "SuccessfulRequestLatency", "Scanned", {end - 600: 5.0, end - 540: 5.0}, operation="ExecuteStatement"
    )
    rates = read_scan_pages(env["cw"], ["Scanned", "Other"], end - 86_400, end)
    assert rates["Scanned"] * 86_400 == pytest.approx(14)
    assert rates.get("Other", 0.0) == 0.0
    # the controller keeps the day's reading in its state, and reads again the next day only
    result = _run(env, _now())
    assert result.status == "applied"
    item = env["ddb"].get_item(TableName=STATE, Key={"pk": {"S": state_pk(TRAIL)}, "sk": {"S": STATE_SK}})["Item"]
    assert _now().strftime("%Y-%m-%d") in str(item)


def test_with_a_trail_it_does_not_own_the_controller_advises_once_a_day(env: dict[str, Any]) -> None:
    from auditor.service.capture import advise_controller

    create_table(env["ddb"], "Quiet")
    before = _selectors(env["ct"])
    day = datetime.fromtimestamp(int(time.time()) // 86_400 * 86_400 + 30, UTC)
    advice = advise_controller(env["clients"], trail="their-trail", state_table=STATE, now=day)
    assert advice.status == "advised"
    assert advice.detail.startswith("aws cloudtrail put-event-selectors --trail-name their-trail ")
    selectors = orjson.loads(advice.detail.split("--advanced-event-selectors ", 1)[1].strip("'"))
    assert selectors[0]["Name"] == ALWAYS_ON_NAME
    # one quiet table: its $0.57 budget does not pay the stack's fixed costs, so scans and PartiQL only (the guard:
    # never every table)
    assert len(selectors) == 1 and any("no sampling" in n for n in advice.notes)
    assert any("replaces the trail's selectors" in n for n in advice.notes)
    assert _selectors(env["ct"]) == before  # nothing written to the trail
    later = advise_controller(env["clients"], trail=None, state_table=STATE, now=day.replace(minute=5))
    assert later.status == "idle"


def test_a_table_whose_scans_reach_the_cap_gets_a_capture_cap_finding_once_a_day(env: dict[str, Any]) -> None:
    from auditor.models.finding import FindingKind
    from auditor.state.findings_store import FindingsStore
    from tests.cw_support import dims, put_data

    create_table(env["ddb"], "Scanned")
    create_table(env["ddb"], "Quiet")
    now = _now()
    stats = {"SampleCount": 20_000.0, "Sum": 100_000.0, "Minimum": 5.0, "Maximum": 5.0}
    put_data(
        env["cw"],
        [
            {
                "MetricName": "SuccessfulRequestLatency",
                "Dimensions": dims("Scanned", None, "Scan"),
                "Timestamp": datetime.fromtimestamp(now.timestamp() - 3600, UTC),
                "StatisticValues": stats,
            }
        ],
    )
    env["clients"].findings = FindingsStore(env["ddb"], STATE)  # recorded through the lifecycle when given a store
    result = _run(env, now)  # 20,000 scans a day of one page: $0.61 a month, above a quarter of the $0.57 budget
    assert result.status == "applied"
    [finding] = result.findings
    assert (finding.kind, finding.table) == (FindingKind.CAPTURE_CAP, "Scanned")
    assert result.as_dict()["findings"] == [finding.id]
    stored = FindingsStore(env["ddb"], STATE).open_findings(finding.account, finding.region, "Scanned")
    assert [s.finding.id for s in stored] == [finding.id]
    # the next slice of the same day: the day's finding is already recorded
    assert _run(env, datetime.fromtimestamp(now.timestamp() + 300, UTC)).findings == []


def _plant_scans(env: dict[str, Any], table: str, at: datetime, count: float) -> None:
    from tests.cw_support import dims, put_data

    stats = {"SampleCount": count, "Sum": count * 5, "Minimum": 5.0, "Maximum": 5.0}
    put_data(
        env["cw"],
        [
            {
                "MetricName": "SuccessfulRequestLatency",
                "Dimensions": dims(table, None, "Scan"),
                "Timestamp": at,
                "StatisticValues": stats,
            }
        ],
    )


def test_a_capture_cap_finding_is_stored_published_once_and_not_alerted_again_the_next_day(
    env: dict[str, Any], aws_reset: str
) -> None:
    """With the findings store, the topic and the lifecycle settings (what the deployed handler passes): the finding
    is recorded and published through the outbox; the next day's run sees it again (same id) and queues nothing."""
    from auditor.models.finding import FindingKind
    from auditor.service.record import LifecycleParams
    from auditor.state.findings_store import FindingsStore

    sns, sqs = aws("sns", aws_reset), aws("sqs", aws_reset)
    topic = sns.create_topic(Name="findings")["TopicArn"]
    queue = sqs.create_queue(QueueName="alerts")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=queue_arn, Attributes={"RawMessageDelivery": "false"})
    create_table(env["ddb"], "Scanned")
    create_table(env["ddb"], "Quiet")
    now = _now()
    tomorrow = datetime.fromtimestamp(now.timestamp() + 86_400, UTC)
    for day in (now, tomorrow):
        _plant_scans(env, "Scanned", datetime.fromtimestamp(day.timestamp() - 3600, UTC), 20_000.0)
    store = FindingsStore(env["ddb"], STATE)
    clients: CaptureClients = env["clients"]
    clients.findings, clients.sns, clients.lifecycle = store, sns, LifecycleParams(topic_arn=topic)

    first = _run(env, now)
    [finding] = first.findings
    assert finding.kind is FindingKind.CAPTURE_CAP and first.published >= 1
    assert first.as_dict()["published"] == first.published
    [state] = store.open_findings(finding.account, finding.region, "Scanned")
    assert state.finding.id == finding.id
    messages = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10, MessageAttributeNames=["All"])["Messages"]
    bodies = [orjson.loads(m["Body"]) for m in messages]
    kinds = [b.get("MessageAttributes", {}).get("kind", {}).get("Value") for b in bodies]
    assert kinds.count("capture_cap") == 1, kinds  # the finding's own message, once (with the run's digest)
    for m in messages:
        sqs.delete_message(QueueUrl=queue, ReceiptHandle=m["ReceiptHandle"])
    assert store.pending(10) == []  # the outbox is drained

    second = _run(env, tomorrow)
    assert [f.id for f in second.findings] == [finding.id]  # the same finding id the next day
    assert second.published == 0
    assert sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10).get("Messages", []) == []


# ------------------------------------------------------------------------------ Contributor Insights on demand
#: moto has no Contributor Insights: these calls go to botocore Stubbers, answered as the API references document
#: them (DynamoDB UpdateContributorInsights and DescribeContributorInsights, CloudWatch GetInsightRuleReport).
_CI_CALLS = {"describe_contributor_insights", "update_contributor_insights", "get_insight_rule_report"}
_RULES = ["DynamoDBContributorInsights-PKC-Hot-1764547200000", "DynamoDBContributorInsights-PKT-Hot-1764547200000"]


class _Split:
    """A client whose Contributor Insights calls go to a stubbed client (in the order made), the rest to moto."""

    def __init__(self, moto: Any, stubbed: Any, order: list[str]) -> None:
        self._moto, self._stubbed, self._order = moto, stubbed, order

    def __getattr__(self, name: str) -> Any:
        if name not in _CI_CALLS:
            return getattr(self._moto, name)
        call = getattr(self._stubbed, name)

        def recorded(**kw: Any) -> Any:
            self._order.append(f"{name}:{kw.get('ContributorInsightsAction') or kw.get('RuleName', '')}")
            return call(**kw)

        return recorded


def _insights_env(env: dict[str, Any]) -> tuple[CaptureClients, Stubber, Stubber, list[str]]:
    import boto3

    creds = {"region_name": "us-east-1", "aws_access_key_id": "x", "aws_secret_access_key": "x"}
    ddb, cw = boto3.client("dynamodb", **creds), boto3.client("cloudwatch", **creds)
    order: list[str] = []
    clients = CaptureClients(env["ct"], _Split(env["cw"], cw, order), _Split(env["ddb"], ddb, order))  # type: ignore[arg-type]
    return clients, Stubber(ddb), Stubber(cw), order


def _report(at: datetime) -> dict[str, Any]:
    """A GetInsightRuleReport answer: one key at 120,000 consumed units in a minute (two thirds of a partition)."""
    return {
        "KeyLabels": ["pk"],
        "AggregationStatistic": "Sum",
        "AggregateValue": 150_000.0,
        "ApproximateUniqueCount": 4,
        "Contributors": [
            {
                "Keys": ["DEVICE#7"],
                "ApproximateAggregateValue": 120_000.0,
                "Datapoints": [{"Timestamp": at, "ApproximateValue": 120_000.0}],
            }
        ],
        "MetricDatapoints": [{"Timestamp": at, "MaxContributorValue": 120_000.0}],
    }


def test_insights_on_demand_enables_then_a_later_run_reads_the_report_before_disabling(env: dict[str, Any]) -> None:
    """A table at 30 % of a partition gets accessed-keys Contributor Insights for 2 slices; a run after the window
    (here 4 slices later: the run at its end timed out) reads each rule's report first, turns it into a hot_key
    finding, then disables it, and forgets it."""
    ddb, cw = env["ddb"], env["cw"]
    create_table(ddb, "Hot", read=5000, write=5000)
    now = _now()
    end = (int(now.timestamp()) // 60 - 2) * 60
    put_points(cw, "ConsumedWriteCapacityUnits", "Hot", minutes(end - 600, 10, 300 * 60))  # 300 WCU/s: 30 %
    clients, ddb_stub, cw_stub, order = _insights_env(env)
    config = PlannerConfig(budget_percent=100, insights_slices=2)
    ddb_stub.add_response(
        "describe_contributor_insights",
        {"TableName": "Hot", "ContributorInsightsStatus": "DISABLED"},
        {"TableName": "Hot"},
    )
    ddb_stub.add_response(
        "update_contributor_insights",
        {
            "TableName": "Hot",
            "ContributorInsightsStatus": "ENABLING",
            "ContributorInsightsMode": "ACCESSED_AND_THROTTLED_KEYS",
        },
        {
            "TableName": "Hot",
            "ContributorInsightsAction": "ENABLE",
            "ContributorInsightsMode": "ACCESSED_AND_THROTTLED_KEYS",
        },
    )
    with ddb_stub, cw_stub:
        first = run_controller(
            clients, trail=TRAIL, state_table=STATE, now=now, config=config, sleep=lambda s: None, fixed_usd_month=0.0
        )
    ddb_stub.assert_no_pending_responses()
    assert first.plan is not None and first.plan["insights"] == ["Hot"]
    assert not any(c["reason"] == "burst" for c in first.plan["captures"])  # no probe while insights name the key
    slice_index = int(now.timestamp()) // 300
    item = ddb.get_item(TableName=STATE, Key={"pk": {"S": state_pk(TRAIL)}, "sk": {"S": STATE_SK}})["Item"]
    assert orjson.loads(item["state"]["S"])["insights_on"] == {"Hot": [slice_index, slice_index + 2]}

    later = datetime.fromtimestamp(now.timestamp() + 4 * 300, UTC)
    at = datetime.fromtimestamp(end, UTC)
    ddb_stub.add_response(
        "describe_contributor_insights",
        {
            "TableName": "Hot",
            "ContributorInsightsRuleList": _RULES,
            "ContributorInsightsStatus": "ENABLED",
            "ContributorInsightsMode": "ACCESSED_AND_THROTTLED_KEYS",
            "LastUpdateDateTime": now,
        },
        {"TableName": "Hot"},
    )
    for rule in _RULES:
        throttled = "PKT" in rule
        answer = _report(at) | ({"Contributors": [], "AggregateValue": 0.0} if throttled else {})
        cw_stub.add_response("get_insight_rule_report", answer)
    ddb_stub.add_response(
        "update_contributor_insights",
        {"TableName": "Hot", "ContributorInsightsStatus": "DISABLING"},
        {"TableName": "Hot", "ContributorInsightsAction": "DISABLE"},
    )
    with ddb_stub, cw_stub:
        second = run_controller(
            clients, trail=TRAIL, state_table=STATE, now=later, config=config, sleep=lambda s: None, fixed_usd_month=0.0
        )
    ddb_stub.assert_no_pending_responses()
    cw_stub.assert_no_pending_responses()
    assert order[-4:] == [
        "describe_contributor_insights:",
        f"get_insight_rule_report:{_RULES[0]}",
        f"get_insight_rule_report:{_RULES[1]}",
        "update_contributor_insights:DISABLE",
    ]  # the report is read before the rules are deleted
    [finding] = second.findings
    assert (
        finding.kind.value == "hot_key"
        and finding.table == "Hot"
        and finding.evidence["source"] == "contributor_insights"
    )
    assert "DEVICE#7" in finding.model_dump_json()
    item = ddb.get_item(TableName=STATE, Key={"pk": {"S": state_pk(TRAIL)}, "sk": {"S": STATE_SK}})["Item"]
    assert orjson.loads(item["state"]["S"])["insights_on"] == {}


def test_insights_already_on_are_someone_elses_and_left_alone(env: dict[str, Any]) -> None:
    ddb, cw = env["ddb"], env["cw"]
    create_table(ddb, "Hot", read=5000, write=5000)
    now = _now()
    end = (int(now.timestamp()) // 60 - 2) * 60
    put_points(cw, "ConsumedWriteCapacityUnits", "Hot", minutes(end - 600, 10, 300 * 60))
    clients, ddb_stub, _, order = _insights_env(env)
    ddb_stub.add_response(
        "describe_contributor_insights",
        {"TableName": "Hot", "ContributorInsightsStatus": "ENABLED", "ContributorInsightsMode": "THROTTLED_KEYS"},
        {"TableName": "Hot"},
    )
    with ddb_stub:
        result = run_controller(
            clients,
            trail=TRAIL,
            state_table=STATE,
            now=now,
            config=PlannerConfig(budget_percent=100, insights_slices=2),
            sleep=lambda s: None,
            fixed_usd_month=0.0,
        )
    ddb_stub.assert_no_pending_responses()
    assert order == ["describe_contributor_insights:"]  # no UpdateContributorInsights
    assert any("enabled by someone else" in n for n in result.notes)
    item = ddb.get_item(TableName=STATE, Key={"pk": {"S": state_pk(TRAIL)}, "sk": {"S": STATE_SK}})["Item"]
    assert orjson.loads(item["state"]["S"])["insights_on"] == {}  # never disabled by the controller
