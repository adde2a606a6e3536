"""template.yaml's health dashboard and alarms read the metrics the runtime emits (auditor/service/health.py)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from auditor.service import health
from tests.template.test_template import of_type, ref
from tests.template.variants import VARIANTS, load_template, resolve

STACK = {"Ref": "AWS::StackName"}


@pytest.fixture(scope="module", params=sorted(VARIANTS))
def stack(request: pytest.FixtureRequest) -> dict[str, Any]:
    return resolve(load_template(), VARIANTS[request.param])


def _dashboard(stack: dict[str, Any]) -> dict[str, Any]:
    """The dashboard body with the stack name, Region and queue names filled in (``Fn::Sub`` as CloudFormation)."""
    [props] = of_type(stack, "AWS::CloudWatch::Dashboard").values()
    text, variables = props["DashboardBody"]["Fn::Sub"]
    assert variables["TrailDLQName"] == {"Fn::GetAtt": ["TrailDLQ", "QueueName"]}
    parts = variables["OptionalDLQs"]["Fn::Join"][1]
    optional = "".join(re.sub(r"\$\{(\w+)\.QueueName\}", r"\1", p["Fn::Sub"]) if p else "" for p in parts)
    filled = text.replace("${OptionalDLQs}", optional).replace("${TrailDLQName}", "TrailDLQ")
    filled = filled.replace("${AWS::StackName}", "my-stack").replace("${AWS::Region}", "eu-west-1")
    assert "${" not in filled
    body: dict[str, Any] = json.loads(filled)
    return body


def test_the_dashboard_shows_every_health_metric_and_the_stacks_dlqs(stack: dict[str, Any]) -> None:
    shown: set[str] = set()
    queues: list[str] = []
    for widget in _dashboard(stack)["widgets"]:
        previous: list[str] = []
        for row in widget["properties"]["metrics"]:
            names = [p for p in row if isinstance(p, str)]
            names = [prev if name == "." else name for name, prev in zip(names, previous or names, strict=True)]
            previous = names
            if names[0] == health.NAMESPACE:
                assert names[2:] == ["service", "my-stack"], names
                shown.add(names[1])
            else:
                assert names[:3] == ["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName"]
                queues.append(names[3])
    assert shown == set(health.METRIC_NAMES)
    dlqs = {n for n, r in stack["Resources"].items() if r["Type"] == "AWS::SQS::Queue" and n.endswith("DLQ")}
    assert sorted(queues) == sorted(dlqs)


def test_lag_and_outbox_age_alarms_read_the_health_metrics(stack: dict[str, Any]) -> None:
    alarms = {
        p["MetricName"]: p
        for p in of_type(stack, "AWS::CloudWatch::Alarm").values()
        if p.get("Namespace") == health.NAMESPACE
    }
    assert set(alarms) == {"EvaluationLag", "OutboxAge", "UnreadableObjects", "LateContributions"}
    for alarm in alarms.values():
        assert alarm["Dimensions"] == [{"Name": "service", "Value": STACK}]
        assert alarm["Statistic"] == "Maximum" and alarm["ComparisonOperator"] == "GreaterThanThreshold"
        assert alarm["AlarmActions"] == [ref("FindingsTopic")]
    # The evaluator runs every 15 minutes and evaluates a window 20 minutes after its end: two hours is far behind.
    assert alarms["EvaluationLag"]["Threshold"] == 7200 and alarms["EvaluationLag"]["TreatMissingData"] == "breaching"
    assert alarms["OutboxAge"]["Threshold"] == 3600


def test_an_unreadable_trail_object_raises_the_alarm_once_it_is_met(stack: dict[str, Any]) -> None:
    [alarm] = [
        p
        for p in of_type(stack, "AWS::CloudWatch::Alarm").values()
        if p.get("Namespace") == health.NAMESPACE and p["MetricName"] == "UnreadableObjects"
    ]
    assert "UnreadableObjects" in health.METRIC_NAMES
    assert alarm["Dimensions"] == [{"Name": "service", "Value": STACK}]
    # One failed read of one object in a quarter hour is enough (the metric is only emitted when one fails)
    assert alarm["Statistic"] == "Maximum" and alarm["ComparisonOperator"] == "GreaterThanThreshold"
    assert alarm["Threshold"] == 0 and alarm["EvaluationPeriods"] == 1 and alarm["Period"] == 900
    assert alarm["TreatMissingData"] == "notBreaching"
    assert alarm["AlarmActions"] == [ref("FindingsTopic")]


def test_late_contributions_raise_the_alarm_within_the_hour(stack: dict[str, Any]) -> None:
    """A contribution stored after its window was evaluated (the window is evaluated again) is worth knowing about,
    but at most once an hour: the metric is only emitted when some were late."""
    [alarm] = [
        p
        for p in of_type(stack, "AWS::CloudWatch::Alarm").values()
        if p.get("Namespace") == health.NAMESPACE and p["MetricName"] == "LateContributions"
    ]
    assert "LateContributions" in health.METRIC_NAMES
    assert alarm["Dimensions"] == [{"Name": "service", "Value": STACK}]
    assert alarm["Statistic"] == "Maximum" and alarm["ComparisonOperator"] == "GreaterThanThreshold"
    assert alarm["Threshold"] == 0 and alarm["EvaluationPeriods"] == 1 and alarm["Period"] == 3600
    assert alarm["TreatMissingData"] == "notBreaching"
    assert alarm["AlarmActions"] == [ref("FindingsTopic")]
    assert "evaluation_delay_seconds" in alarm["AlarmDescription"]


def test_the_functions_name_the_stack_as_the_metrics_service() -> None:
    env = load_template()["Globals"]["Function"]["Environment"]["Variables"]
    assert env["POWERTOOLS_SERVICE_NAME"] == STACK
