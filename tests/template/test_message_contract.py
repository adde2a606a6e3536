"""template.yaml's SNS subscription filter policies against the message contract (auditor.messages).

Every ``FilterPolicy`` of the resolved stack (every variant, both Slack modes) may name only message attributes the
contract declares, and only values those attributes can take: a kind, severity or status renamed in the contract
(or misspelt in the template) fails here instead of silently filtering every message out. A policy that selects
finding events by excluding the other kinds must exclude every other kind the service publishes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from auditor.lifecycle import EventKind
from auditor.messages import AttributeName, MessageKind
from auditor.models.finding import FindingKind, Severity
from tests.template.variants import VARIANTS, load_template, resolve

#: The ``kind`` values on the wire: every message kind but ``finding`` (a finding event carries its finding kind).
NOT_FINDING_KINDS = {k.value for k in MessageKind if k is not MessageKind.FINDING}
#: The values an attribute a filter policy tests can take, per the contract (other attributes: any string).
VALUES: dict[str, set[str]] = {
    AttributeName.KIND: NOT_FINDING_KINDS | {k.value for k in FindingKind},
    AttributeName.SEVERITY: {s.value for s in Severity},
    AttributeName.STATUS: {e.value for e in EventKind} | {MessageKind.DIGEST.value},
}


def _filter_policies(node: Any, where: str) -> Iterator[tuple[str, dict[str, Any], str]]:
    """(where, policy, scope) of every ``FilterPolicy`` under ``node``."""
    if isinstance(node, dict):
        if "FilterPolicy" in node:
            yield where, node["FilterPolicy"], node.get("FilterPolicyScope", "MessageAttributes")
        for key, value in node.items():
            yield from _filter_policies(value, f"{where}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _filter_policies(value, f"{where}[{i}]")


def _all_policies() -> list[tuple[str, dict[str, Any], str]]:
    template = load_template()
    found: dict[str, tuple[str, dict[str, Any], str]] = {}
    for variant, params in VARIANTS.items():
        for mode in ("digest", "finding"):
            stack = resolve(template, {**params, "SlackMessages": mode})
            for where, policy, scope in _filter_policies(stack["Resources"], f"{variant}/{mode}"):
                found.setdefault(repr((where.split(".", 1)[1], policy)), (where, policy, scope))
    return list(found.values())


POLICIES = _all_policies()


def _conditions(policy: dict[str, Any], where: str) -> Iterator[tuple[str, str, str | None]]:
    """(attribute, operator, value) of every condition of a policy; ``$or`` branches included."""
    for key, value in policy.items():
        if key == "$or":
            assert isinstance(value, list), where
            for i, branch in enumerate(value):
                yield from _conditions(branch, f"{where}.$or[{i}]")
            continue
        assert isinstance(value, list), f"{where}.{key}: a message attribute policy lists its conditions"
        for condition in value:
            if isinstance(condition, str):
                yield key, "equals", condition
            elif isinstance(condition, dict) and set(condition) == {"anything-but"}:
                operands = condition["anything-but"]
                for operand in operands if isinstance(operands, list) else [operands]:
                    assert isinstance(operand, str), f"{where}.{key}: extend this test for {operand!r}"
                    yield key, "anything-but", operand
            elif isinstance(condition, dict) and set(condition) == {"exists"}:
                yield key, "exists", None
            else:
                pytest.fail(f"{where}.{key}: extend this test for the condition {condition!r}")


def test_the_template_has_the_subscriptions_this_test_is_about() -> None:
    places = {where.split(".", 1)[1].split(".", 1)[0] for where, _, _ in POLICIES}
    assert {"AlertEmailSubscription", "NotifierFunction", "SecurityHubFunction"} <= places


@pytest.mark.parametrize(("where", "policy", "scope"), POLICIES, ids=[w for w, _, _ in POLICIES])
def test_a_filter_policy_names_only_attributes_and_values_of_the_contract(
    where: str, policy: dict[str, Any], scope: str
) -> None:
    assert scope == "MessageAttributes", f"{where}: the contract is in the message attributes"
    conditions = list(_conditions(policy, where))
    assert conditions, f"{where}: an empty policy"
    for attribute, operator, value in conditions:
        assert attribute in set(AttributeName), f"{where}: {attribute!r} is not a message attribute of the contract"
        if value is not None and attribute in VALUES:
            assert value in VALUES[attribute], f"{where}: {attribute} {operator} {value!r} is no value of the contract"


def _kind_exclusions(policy: dict[str, Any]) -> Iterator[set[str]]:
    """The operands of every ``anything-but`` condition on ``kind`` (``$or`` branches included)."""
    for branch in policy.get("$or", []):
        yield from _kind_exclusions(branch)
    for condition in policy.get(AttributeName.KIND, []):
        if isinstance(condition, dict) and "anything-but" in condition:
            operands = condition["anything-but"]
            yield set(operands if isinstance(operands, list) else [operands])


@pytest.mark.parametrize(("where", "policy", "scope"), POLICIES, ids=[w for w, _, _ in POLICIES])
def test_a_policy_that_selects_finding_events_by_kind_excludes_every_other_kind(
    where: str, policy: dict[str, Any], scope: str
) -> None:
    for excluded in _kind_exclusions(policy):
        assert excluded == NOT_FINDING_KINDS, f"{where}: finding events are every kind but {sorted(NOT_FINDING_KINDS)}"


def test_some_policy_selects_finding_events_by_excluding_the_other_kinds() -> None:
    assert any(list(_kind_exclusions(policy)) for _, policy, _ in POLICIES)
