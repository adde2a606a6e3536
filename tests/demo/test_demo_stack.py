"""The demo's local stack (auditor.demo.stack) against template.yaml."""

from __future__ import annotations

from auditor.demo.stack import SLACK_FILTER_POLICY
from tests.template.test_filter_policies import _policies


def test_the_demo_subscribes_its_notifier_with_the_templates_default_slack_policy() -> None:
    _, slack = _policies({})
    assert slack == SLACK_FILTER_POLICY
