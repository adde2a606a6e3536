"""Key-value redaction for messages that leave the account (Slack).

Key values stay raw in the CLI, the in-account store and the report; in messages sent to third parties they are
redacted by default: the entity prefix is kept and the rest hashed (``USER#…a1b2c3``, an HMAC with a salt).
:func:`redact_finding` finds keys in a finding's evidence and replaces them in its text too; :func:`redact_text`
is the fallback for text without structure. Pure. The rules are in docs/untrusted-values.md.
"""

from __future__ import annotations

import copy
import hashlib
import hmac
import re
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

ELLIPSIS = "…"
HASH_CHARS = 6
#: Longest leading upper-case word kept as an entity prefix (as ``auditor.kernel.aggregates.templates.MAX_LITERAL``).
MAX_ENTITY = 24
#: A value cut short in text (``{value:.60}``) is recognised after ``attr=`` from this many characters on.
MIN_TRUNCATED_MATCH = 16
#: Raw values at least this long are replaced anywhere in text, not only after ``attr=``.
MIN_STANDALONE = 4

#: Finding fields whose text is searched for raw key values (identifiers such as ``table`` are left alone).
TEXT_FIELDS = ("title", "summary", "recommendation", "evidence")

_ENTITY = re.compile(rf"[A-Z][A-Z0-9_]{{0,{MAX_ENTITY - 1}}}[#:|]")
#: What :func:`redact_value` produces: redacting is idempotent, a token is never redacted again.
_REDACTED = re.compile(rf"(?:[A-Z][A-Z0-9_]{{0,{MAX_ENTITY - 1}}}[#:|])?{ELLIPSIS}[0-9a-f]{{{HASH_CHARS}}}")
#: ``attr=`` must not be glued to a preceding name character (``xpk=`` is not ``pk=``).
_TOKEN_CHAR = re.compile(r"[\w.-]")
_WORD = re.compile(r"\w")
#: Characters that may follow a value a detector cut short (``({label:.80})``, ``{value:.60} on Orders``).
_CUT_END = frozenset(" \t\n),;]}'\"")
_TEXT_KV = re.compile(r"(?P<attr>\b[A-Za-z_][\w.-]{0,63})=(?P<val>[^\s,;()\[\]{}<>\"']+)")
_TEXT_ENTITY = re.compile(rf"(?<![\w#:|])[A-Z][A-Z0-9_]{{0,{MAX_ENTITY - 1}}}[#|][^\s,;()\[\]{{}}<>\"']+")


def stringify(value: Any) -> str:
    """The text form a key value is hashed and matched in."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS, default=str).decode()


def _digest(text: str, salt: str) -> str:
    data = text.encode("utf-8", "surrogatepass")
    if salt:
        return hmac.new(salt.encode(), data, hashlib.sha256).hexdigest()[:HASH_CHARS]
    return hashlib.sha256(data).hexdigest()[:HASH_CHARS]


def entity_prefix(text: str) -> str:
    """The kept prefix of ``text`` (``"USER#"``), or ``""`` when it does not start with an entity name."""
    m = _ENTITY.match(text)
    return m.group(0) if m else ""


def is_redacted(text: str) -> bool:
    """Whether ``text`` is already a redaction token (``USER#…a1b2c3``)."""
    return _REDACTED.fullmatch(text) is not None


def redact_value(value: Any, salt: str = "") -> str:
    """``USER#123`` -> ``USER#…a1b2c3``; the same value (and salt) always gives the same token.

    A value that already is a token is returned as it is, so redacting twice changes nothing.
    """
    text = stringify(value)
    if is_redacted(text):
        return text
    return f"{entity_prefix(text)}{ELLIPSIS}{_digest(text, salt)}"


def redact_key(key: Mapping[str, Any], salt: str = "") -> dict[str, Any]:
    """A key map with every attribute value redacted (names kept; ``None`` values stay ``None``).

    A DynamoDB-JSON typed value (``{"S": "USER#1"}``) keeps its type descriptor: ``{"S": "USER#…a1b2c3"}``.
    """
    return {str(name): _redact_any(v, salt) for name, v in key.items()}


def _redact_any(value: Any, salt: str) -> Any:
    if value is None:
        return None
    if isinstance(value, Mapping) and len(value) == 1:
        (type_name, inner), *_ = value.items()
        if type_name in ("S", "N", "B") and not isinstance(inner, Mapping | list):
            return {type_name: redact_value(inner, salt)}
    return redact_value(value, salt)


# ----------------------------------------------------------------------------- findings


class _Collector:
    """Redacts key values found in evidence and remembers each raw value (with its attribute) for the text pass."""

    def __init__(self, salt: str) -> None:
        self.salt = salt
        #: raw text -> (attribute names it was logged under, its redacted token)
        self.raw: dict[str, tuple[set[str], str]] = {}

    def value(self, value: Any, attr: str | None = None) -> Any:
        if value is None:
            return None
        if isinstance(value, Mapping) and len(value) == 1:
            (type_name, inner), *_ = value.items()
            if type_name in ("S", "N", "B") and not isinstance(inner, Mapping | list):
                return {type_name: self.value(inner, attr)}
        text = stringify(value)
        if is_redacted(text):
            return text
        token = redact_value(text, self.salt)
        attrs, _ = self.raw.setdefault(text, (set(), token))
        if attr:
            attrs.add(attr)
        return token

    def key_map(self, key: Mapping[str, Any]) -> dict[str, Any]:
        return {str(name): self.value(v, str(name)) for name, v in key.items()}

    def key_field(self, value: Any) -> Any:
        """A ``key``/``*_key`` field: a key map, a list of them, or a bare value."""
        if isinstance(value, Mapping):
            return self.key_map(value)
        if isinstance(value, list):
            return [self.key_field(v) for v in value]
        return self.value(value)

    def keys_field(self, name: str, value: Any) -> Any:
        """A ``keys``/``*_keys`` field: key maps, ``{"key": ..., ...}`` records, or bare values.

        A scalar under a ``*_keys`` name is a count (``distinct_partition_keys``), not a key, and is kept.
        """
        if isinstance(value, list):
            return [self._keys_item(v) for v in value]
        if isinstance(value, Mapping):
            if all(isinstance(v, Mapping | list) or v is None for v in value.values()):
                return {str(k): self._keys_item(v) for k, v in value.items()}
            return self.key_map(value)
        return self.value(value) if name == "keys" else value

    def _keys_item(self, item: Any) -> Any:
        if isinstance(item, Mapping):
            if "key" in item or any(_is_key_field(str(k)) for k in item):
                return self.walk(item)
            return self.key_map(item)
        if isinstance(item, list):
            return [self._keys_item(v) for v in item]
        return self.value(item)

    def values_field(self, value: Any) -> Any:
        """A ``values`` list: each entry's ``value`` (or each bare entry) is a key value."""
        if not isinstance(value, list):
            return self.walk(value)
        out: list[Any] = []
        for item in value:
            if isinstance(item, Mapping):
                red = self.walk(item)
                if "value" in item:
                    red["value"] = self.value(item["value"])
                out.append(red)
            else:
                out.append(self.value(item))
        return out

    def walk(self, node: Any) -> Any:
        if isinstance(node, Mapping):
            out: dict[str, Any] = {}
            for k, v in node.items():
                name = str(k)
                if _is_keys_field(name):
                    out[name] = self.keys_field(name, v)
                elif _is_key_field(name):
                    out[name] = self.key_field(v)
                elif name == "values":
                    out[name] = self.values_field(v)
                else:
                    out[name] = self.walk(v)
            return out
        if isinstance(node, list):
            return [self.walk(v) for v in node]
        return node


def _is_key_field(name: str) -> bool:
    return name == "key" or name.endswith("_key")


def _is_keys_field(name: str) -> bool:
    return name == "keys" or name.endswith("_keys")


def redact_finding(finding: Mapping[str, Any], salt: str = "") -> dict[str, Any]:
    """A deep copy of a Finding JSON dict with every key value redacted, in the evidence and in all text.

    The input is not modified. Raw key values found in the evidence are also replaced wherever they appear in
    the title, summary and recommendation and in other strings of the evidence (sample error messages); the
    identifying fields (id, table, index, account, region, times) are kept as they are.
    """
    collector = _Collector(salt)
    out = copy.deepcopy(dict(finding))
    evidence = out.get("evidence")
    if isinstance(evidence, Mapping):
        out["evidence"] = collector.walk(evidence)
    if not collector.raw:
        return out
    matcher = _TextMatcher(collector.raw)
    return {k: (_replace_strings(v, matcher) if k in TEXT_FIELDS else v) for k, v in out.items()}


def _replace_strings(node: Any, matcher: _TextMatcher) -> Any:
    if isinstance(node, str):
        return matcher.sub(node)
    if isinstance(node, Mapping):
        return {k: _replace_strings(v, matcher) for k, v in node.items()}
    if isinstance(node, list):
        return [_replace_strings(v, matcher) for v in node]
    return node


class _TextMatcher:
    """Finds raw key values in text (after ``attr=``, possibly truncated, and as whole tokens) in one pass."""

    def __init__(self, raw: Mapping[str, tuple[set[str], str]]) -> None:
        self.raw = raw
        # Longest first, so ``USER#12`` wins over ``USER#1`` at the same position.
        self.standalone = sorted((t for t in raw if len(t) >= MIN_STANDALONE), key=len, reverse=True)
        self.by_attr: dict[str, list[str]] = {}
        for text, (attrs, _) in raw.items():
            for attr in attrs:
                self.by_attr.setdefault(attr, []).append(text)
        for texts in self.by_attr.values():
            texts.sort(key=len, reverse=True)

    def sub(self, text: str) -> str:
        if not text:
            return text
        spans = sorted(self._spans(text), key=lambda s: (s[0], -s[1]))
        out: list[str] = []
        pos = 0
        for start, end, token in spans:
            if start < pos:
                continue  # overlaps a span already replaced
            out.append(text[pos:start])
            out.append(token)
            pos = end
        out.append(text[pos:])
        return "".join(out)

    def _spans(self, text: str) -> Iterable[tuple[int, int, str]]:
        for attr, values in self.by_attr.items():
            marker = f"{attr}="
            start = text.find(marker)
            while start != -1:
                vstart = start + len(marker)
                if start == 0 or not _TOKEN_CHAR.match(text[start - 1]):
                    span = self._after_attr(text, vstart, values)
                    if span is not None:
                        yield span
                start = text.find(marker, vstart)
        for value in self.standalone:
            start = text.find(value)
            while start != -1:
                end = start + len(value)
                if _standalone_ok(text, start, end, value):
                    yield start, end, self.raw[value][1]
                start = text.find(value, start + 1)

    def _after_attr(self, text: str, vstart: int, values: list[str]) -> tuple[int, int, str] | None:
        best: tuple[int, int, str] | None = None
        for value in values:
            n = _common_prefix(text, vstart, value)
            if n == 0:
                continue
            end = vstart + n
            if n == len(value):
                if _glued(value[-1], text, end):
                    continue  # ``pk=USER#1`` must not match inside ``pk=USER#12``
                return vstart, end, self.raw[value][1]
            # The text holds only a prefix of the value: a detector cut it short (``{value:.60}``), or it is
            # another value sharing a prefix. Cut short means a long prefix, or a prefix that ends the token.
            if (n >= MIN_TRUNCATED_MATCH or end == len(text) or text[end] in _CUT_END) and (
                best is None or n > best[1] - vstart
            ):
                best = (vstart, end, self.raw[value][1])
        return best


def _common_prefix(text: str, start: int, value: str) -> int:
    n = 0
    limit = min(len(value), len(text) - start)
    while n < limit and text[start + n] == value[n]:
        n += 1
    return n


def _glued(edge: str, text: str, pos: int) -> bool:
    """Whether the word character ``edge`` of a match continues into ``text[pos]`` (so it is part of a longer word)."""
    return 0 <= pos < len(text) and _WORD.match(edge) is not None and _WORD.match(text[pos]) is not None


def _standalone_ok(text: str, start: int, end: int, value: str) -> bool:
    return not (_glued(value[0], text, start - 1) or _glued(value[-1], text, end))


def redact_text(text: str, salt: str = "") -> str:
    """Best-effort redaction of unstructured text (used only when a message arrives without its finding).

    Three passes: evidence lines shaped ``name: <JSON>`` whose name is a key field (``key``, ``top_keys``,
    ``values``...; the SNS publisher's readable message has them) get their values redacted as in
    :func:`redact_finding`, and those raw values are then replaced everywhere in the text; then the value of
    every ``name=value`` token; then every ``ENTITY#...`` token. :func:`redact_finding` is exact; this is not.
    """
    collector = _Collector(salt)
    lines = text.split("\n")
    for i, line in enumerate(lines):
        m = _EVIDENCE_LINE.match(line)
        if m is None or not (_is_key_field(m["name"]) or _is_keys_field(m["name"]) or m["name"] == "values"):
            continue
        try:
            parsed = orjson.loads(m["json"])
        except orjson.JSONDecodeError:  # cut short by the publisher ("..."): redact every JSON string and number
            lines[i] = m["head"] + _JSON_SCALAR.sub(lambda v: _json_token(v, salt), m["json"])
            continue
        redacted = collector.walk({m["name"]: parsed})[m["name"]]
        lines[i] = m["head"] + orjson.dumps(redacted, option=orjson.OPT_SORT_KEYS).decode()
    text = "\n".join(lines)
    if collector.raw:
        text = _TextMatcher(collector.raw).sub(text)

    def kv(m: re.Match[str]) -> str:
        val = m.group("val")
        return m.group(0) if ELLIPSIS in val else f"{m.group('attr')}={redact_value(val, salt)}"

    text = _TEXT_KV.sub(kv, text)

    def entity(m: re.Match[str]) -> str:
        token = m.group(0)
        return token if ELLIPSIS in token else redact_value(token, salt)

    return _TEXT_ENTITY.sub(entity, text)


_EVIDENCE_LINE = re.compile(r"(?P<head>\s*(?P<name>[A-Za-z_]\w*):\s+)(?P<json>[\[{].*)$")
#: A JSON object member's scalar value (string, possibly cut short, or number) after ``"name":``.
_JSON_SCALAR = re.compile(r'(?P<lead>"(?:[^"\\]|\\.)*"\s*:\s*)(?P<val>"(?:[^"\\]|\\.)*"?|-?\d[\d.eE+-]*)')


def _json_token(m: re.Match[str], salt: str) -> str:
    raw = m["val"]
    value = raw.strip('"') if raw.startswith('"') else raw
    return f'{m["lead"]}"{redact_value(value, salt)}"'
