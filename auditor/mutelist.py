"""``--mutelist FILE``: the CLI's accepted findings, in the rule shape of the service's suppression rules.

A mute list is a JSON array of rules, each with any of ``table``, ``kind``, ``principal``, ``key`` (globs, like
``SUPPRESS_RULES_JSON``, see :mod:`auditor.lifecycle`), ``until`` (ISO-8601; the rule stops muting then) and an
optional ``reason``. A finding matching an active rule is muted: it is left out of ``--fail-on`` and listed as
muted in the output, with the rule that muted it. A rule whose ``until`` has passed mutes nothing and is named by
:func:`expired_rules` (the CLI warns about each).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import Field, TypeAdapter, ValidationError

from auditor.exceptions import InputError
from auditor.lifecycle import SuppressRule
from auditor.models.finding import Finding, isoformat_z

DEFAULT_REASON = "muted by --mutelist"
#: A UTF-8 byte order mark, which some editors write at the start of a file: it is skipped.
UTF8_BOM = b"\xef\xbb\xbf"


class MuteRule(SuppressRule):
    """A suppression rule whose ``reason`` is optional (a CI mute list often has none)."""

    reason: str = Field(default=DEFAULT_REASON, min_length=1, max_length=500)


_RULES = TypeAdapter(list[MuteRule])


@dataclass(frozen=True, slots=True)
class Muted:
    """A finding and the rule that muted it."""

    finding: Finding
    rule: MuteRule

    def to_dict(self) -> dict[str, Any]:
        """The finding's JSON with a ``muted_by`` object (the rule's fields that are set)."""
        doc = self.finding.model_dump(mode="json")
        rule = self.rule.model_dump(mode="json", exclude_none=True)
        if self.rule.until is not None:
            rule["until"] = isoformat_z(self.rule.until)
        doc["muted_by"] = rule
        return doc


def load_mutelist(path: str) -> tuple[MuteRule, ...]:
    """Read and validate a mute list (UTF-8 JSON; a leading byte order mark is skipped).

    Raises:
        InputError: the file cannot be read, is not JSON, is not an array, or a rule is invalid (the message
            names the rule's position and field).
    """
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read the mute list: {exc.strerror or exc}") from exc
    try:
        return tuple(_RULES.validate_json(data.removeprefix(UTF8_BOM)))
    except ValidationError as exc:
        err = exc.errors()[0]
        if err["type"] == "json_invalid":
            raise InputError(f"{path}: mute list is not valid JSON: {err['msg']}") from exc
        loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"])
        msg = str(err["msg"]).removeprefix("Value error, ")
        raise InputError(f"{path}: mute list rule{loc or ' list'}: {msg}") from exc


def expired_rules(rules: Sequence[MuteRule], now: datetime) -> list[str]:
    """One line per rule whose ``until`` is past at ``now``: the rule's position, what it names, and when it expired."""
    lines = []
    for n, rule in enumerate(rules):
        if rule.until is not None and not rule.active(now):
            names = rule.model_dump(mode="json", exclude_none=True, include={"table", "kind", "principal", "key"})
            what = ", ".join(f"{k}={v}" for k, v in names.items())
            lines.append(f"mute rule [{n}] ({what}) expired at {isoformat_z(rule.until)}: it mutes nothing")
    return lines


def apply_mutelist(
    findings: Sequence[Finding], rules: Sequence[MuteRule], now: datetime
) -> tuple[list[Finding], list[Muted]]:
    """Split ``findings`` into those still reported and those muted by an active rule (first match wins)."""
    kept: list[Finding] = []
    muted: list[Muted] = []
    for f in findings:
        rule = next((r for r in rules if r.matches(f, now)), None)
        if rule is None:
            kept.append(f)
        else:
            muted.append(Muted(f, rule))
    return kept, muted
