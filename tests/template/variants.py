"""Concrete variants of ``template.yaml``: parameter values fixed, conditions resolved.

CloudFormation decides ``Conditions`` and ``Fn::If`` at deploy time. Static checkers see only the parameter
defaults (checkov drops resources whose condition is false there, and skips IAM checks on policies built with
``Fn::If``), and tests reason more simply about one concrete stack. :func:`resolve` returns what CloudFormation
would deploy for given parameter values: ``Fn::ForEach`` loops (``AWS::LanguageExtensions``) are expanded, resources
and outputs whose condition is false are dropped, ``Fn::If`` is replaced by the chosen branch and ``AWS::NoValue`` is
removed. Every other intrinsic (``Ref``/``GetAtt``/``Sub`` of resources) is kept as written.

``python -m tests.template.variants OUTDIR`` writes ``OUTDIR/<variant>.json`` for every variant in
:data:`VARIANTS` (``make template-check`` runs checkov on them).
"""

from __future__ import annotations

import copy
import json
import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from cfnlint.decode import decode

TEMPLATE_PATH = Path(__file__).resolve().parents[2] / "template.yaml"

ACCOUNT = "111122223333"
SLACK_SECRET_ARN = f"arn:aws:secretsmanager:us-east-1:{ACCOUNT}:secret:ddb-audit/slack-AbC123"
KMS_KEY_ARN = f"arn:aws:kms:us-east-1:{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab"
ORDERS_STREAM_ARN = f"arn:aws:dynamodb:us-east-1:{ACCOUNT}:table/Orders/stream/2026-12-01T00:00:00.000"
DOCUMENTS_STREAM_ARN = f"arn:aws:dynamodb:us-east-1:{ACCOUNT}:table/Documents/stream/2026-11-02T10:20:30.456"

#: Parameter values of the deployments the checks cover (everything else keeps its default).
VARIANTS: dict[str, dict[str, str]] = {
    # The minimal deployment: an existing trail bucket (SSE-S3) read through EventBridge, no Slack, no e-mail.
    "existing-bucket": {"TrailBucketName": "example-trail-bucket"},
    # The same bucket wired by its own S3 notification instead.
    "existing-bucket-s3-notification": {
        "TrailBucketName": "example-trail-bucket",
        "TrailNotification": "S3Notification",
    },
    # Existing SSE-KMS trail bucket under a custom prefix, Slack, one watched stream.
    "existing-bucket-kms-slack": {
        "TrailBucketName": "example-trail-bucket",
        "TrailPrefix": "org/AWSLogs/",
        "TrailKmsKeyArn": KMS_KEY_ARN,
        "SlackWebhookSecretArn": SLACK_SECRET_ARN,
        "ItemSizeStreamArns": DOCUMENTS_STREAM_ARN,
    },
    # An organisation trail's bucket and SSE-KMS key in a log-archive account (the Control Tower layout), its
    # Object Created events forwarded to this account's default event bus.
    "org-trail-log-archive": {
        "TrailBucketName": "aws-controltower-logs-999988887777-us-east-1",
        "TrailBucketAccountId": "999988887777",
        "TrailPrefix": "o-a1b2c3d4e5/AWSLogs/",
        "TrailKmsKeyArn": "arn:aws:kms:us-east-1:999988887777:key/1234abcd-12ab-34cd-56ef-1234567890ab",
    },
    # The same organisation trail's bucket notifying the trail queue directly (S3 sends as the log-archive account).
    "org-trail-s3-notification": {
        "TrailBucketName": "aws-controltower-logs-999988887777-us-east-1",
        "TrailBucketAccountId": "999988887777",
        "TrailPrefix": "o-a1b2c3d4e5/AWSLogs/",
        "TrailNotification": "S3Notification",
    },
    # Every optional part on.
    "all-features": {
        "CreateTrail": "true",
        "EnableEventBridgeSource": "true",
        "SlackWebhookSecretArn": SLACK_SECRET_ARN,
        "AlertEmail": "ops@example.com",
        "ItemSizeStreamArns": f"{ORDERS_STREAM_ARN},{DOCUMENTS_STREAM_ARN}",
        "ExtraOutputs": "security-hub,model-review",
    },
}

FOR_EACH = "Fn::ForEach::"

_NO_VALUE = object()


class VariantError(ValueError):
    """The template uses a construct this resolver does not evaluate, or a parameter has no value."""


def load_template(path: Path = TEMPLATE_PATH) -> dict[str, Any]:
    """The template as plain dicts/lists (intrinsics in their long form: ``{"Fn::GetAtt": [...]}``)."""
    template, matches = decode(str(path))
    if matches or template is None:
        raise VariantError(f"{path}: cannot parse: {[str(m) for m in matches]}")
    plain: dict[str, Any] = json.loads(json.dumps(template))
    return plain


def parameter_values(template: Mapping[str, Any], overrides: Mapping[str, str]) -> dict[str, Any]:
    """Each parameter's value: the override, else the default (lists for ``CommaDelimitedList``)."""
    unknown = set(overrides) - set(template.get("Parameters", {}))
    if unknown:
        raise VariantError(f"unknown parameters: {sorted(unknown)}")
    values: dict[str, Any] = {}
    for name, spec in template.get("Parameters", {}).items():
        if name in overrides:
            raw = overrides[name]
        elif "Default" in spec:
            raw = spec["Default"]
        else:
            raise VariantError(f"parameter {name} has no default and no value")
        values[name] = str(raw).split(",") if spec.get("Type") == "CommaDelimitedList" else str(raw)
    return values


def _condition_evaluator(template: Mapping[str, Any], params: Mapping[str, Any]) -> Callable[[str], bool]:
    definitions = template.get("Conditions", {})
    cache: dict[str, bool] = {}

    def value(node: Any) -> Any:
        if isinstance(node, bool | int | float):
            return str(node).lower() if isinstance(node, bool) else str(node)
        if isinstance(node, str):
            return node
        if isinstance(node, list):
            return [value(item) for item in node]
        if isinstance(node, dict) and len(node) == 1:
            ((fn, arg),) = node.items()
            if fn == "Ref":
                if arg not in params:
                    raise VariantError(f"condition refers to {arg!r}, not a parameter")
                return params[arg]
            if fn == "Condition":
                return condition(arg)
            if fn == "Fn::Equals":
                left, right = (value(x) for x in arg)
                return left == right
            if fn == "Fn::Not":
                return not value(arg[0])
            if fn == "Fn::And":
                return all(value(x) for x in arg)
            if fn == "Fn::Or":
                return any(value(x) for x in arg)
            if fn == "Fn::Join":
                sep, items = arg
                return sep.join(value(items))
        raise VariantError(f"cannot evaluate {node!r} in a condition")

    def condition(name: str) -> bool:
        if name not in cache:
            if name not in definitions:
                raise VariantError(f"unknown condition {name!r}")
            cache[name] = bool(value(definitions[name]))
        return cache[name]

    return condition


def _substitute(node: Any, identifier: str, value: str) -> Any:
    """``node`` with the loop variable replaced: ``{"Ref": identifier}``, ``${identifier}`` in ``Fn::Sub``."""
    if isinstance(node, dict):
        if node == {"Ref": identifier}:
            return value
        if set(node) == {"Fn::Sub"}:
            sub = node["Fn::Sub"]
            if isinstance(sub, str):
                return {"Fn::Sub": sub.replace(f"${{{identifier}}}", value)}
            return {"Fn::Sub": [sub[0].replace(f"${{{identifier}}}", value), _substitute(sub[1], identifier, value)]}
        if any(key.startswith(FOR_EACH) for key in node):
            raise VariantError("nested Fn::ForEach is not evaluated")
        return {key: _substitute(child, identifier, value) for key, child in node.items()}
    if isinstance(node, list):
        return [_substitute(item, identifier, value) for item in node]
    return node


def expand_for_each(section: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any]:
    """A template section with its ``Fn::ForEach::Name: [identifier, collection, {key: body}]`` loops unrolled.

    As ``AWS::LanguageExtensions`` does: one copy per collection item, ``&{identifier}`` in the key replaced by the
    item's letters and digits and ``${identifier}`` by the item itself; a duplicate key is an error.
    """
    out: dict[str, Any] = {}
    for name, body in section.items():
        if not name.startswith(FOR_EACH):
            out[name] = body
            continue
        identifier, collection, templates = body
        if isinstance(collection, dict) and set(collection) == {"Ref"}:
            items = params[collection["Ref"]]
        elif isinstance(collection, list) and all(isinstance(item, str) for item in collection):
            items = collection
        else:
            raise VariantError(f"{name}: cannot evaluate the collection {collection!r}")
        for item in items:
            for key_template, template in templates.items():
                key = key_template.replace(f"&{{{identifier}}}", re.sub(r"[^A-Za-z0-9]", "", item))
                key = key.replace(f"${{{identifier}}}", item)
                if key in out:
                    raise VariantError(f"{name}: duplicate key {key!r}")
                out[key] = _substitute(copy.deepcopy(template), identifier, item)
    return out


def _resolve_node(
    node: Any, condition: Callable[[str], bool], find_in_map: Callable[[list[Any]], Any] | None = None
) -> Any:
    if isinstance(node, dict):
        if node == {"Ref": "AWS::NoValue"}:
            return _NO_VALUE
        if len(node) == 1 and "Fn::If" in node:
            name, when_true, when_false = node["Fn::If"]
            return _resolve_node(when_true if condition(name) else when_false, condition, find_in_map)
        if len(node) == 1 and "Fn::FindInMap" in node and find_in_map is not None:
            return find_in_map(node["Fn::FindInMap"])
        out = {}
        for key, child in node.items():
            resolved = _resolve_node(child, condition, find_in_map)
            if resolved is not _NO_VALUE:
                out[key] = resolved
        return out
    if isinstance(node, list):
        return [r for r in (_resolve_node(item, condition, find_in_map) for item in node) if r is not _NO_VALUE]
    return node


def _map_finder(template: Mapping[str, Any], params: Mapping[str, Any]) -> Callable[[list[Any]], Any]:
    """``Fn::FindInMap`` with literal or ``Ref``-to-parameter arguments."""

    def value(arg: Any) -> Any:
        return params[arg["Ref"]] if isinstance(arg, dict) and set(arg) == {"Ref"} else arg

    def find(args: list[Any]) -> Any:
        name, top, second = (value(a) for a in args)
        return copy.deepcopy(template["Mappings"][name][str(top)][str(second)])

    return find


def resolve(template: Mapping[str, Any], overrides: Mapping[str, str]) -> dict[str, Any]:
    """The stack CloudFormation would deploy with these parameter values (see the module docstring)."""
    params = parameter_values(template, overrides)
    condition = _condition_evaluator(template, params)
    finder = _map_finder(template, params)
    out: dict[str, Any] = {}
    for section, body in template.items():
        if section == "Conditions":
            continue
        if section in ("Resources", "Outputs"):
            kept = {}
            for name, item in expand_for_each(body, params).items():
                if "Condition" in item and not condition(item["Condition"]):
                    continue
                item = {k: v for k, v in item.items() if k != "Condition"}
                kept[name] = _resolve_node(item, condition, finder)
            out[section] = kept
        elif section == "Parameters":
            parameters = copy.deepcopy(body)
            for name, value in overrides.items():
                parameters[name]["Default"] = value
            out[section] = parameters
        else:
            out[section] = _resolve_node(copy.deepcopy(body), condition)
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        sys.stderr.write("usage: python -m tests.template.variants OUTDIR\n")
        return 2
    outdir = Path(argv[0])
    outdir.mkdir(parents=True, exist_ok=True)
    template = load_template()
    for name, overrides in VARIANTS.items():
        (outdir / f"{name}.json").write_text(json.dumps(resolve(template, overrides), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
