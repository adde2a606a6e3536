"""A small, forgiving parser for the PartiQL statements CloudTrail logs for DynamoDB.

It reads a statement's verb, its table (and index), the equality literals of its WHERE clause, and whether it reads
the whole table. It never raises: text it cannot understand gives verb ``UNKNOWN`` and table ``None``. The WHERE
clause rules (top-level AND only, redacted values, parameters, ``IN``) are in docs/kernel.md.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Final

from auditor.kernel.calls import Statement

__all__ = ["REDACTED_TOKEN", "parse_statement"]

#: How CloudTrail replaces a hidden literal in a logged PartiQL statement.
REDACTED_TOKEN = "***(Redacted)"

# Token kinds.
_STR = 1  # 'string literal'
_QID = 2  # "quoted identifier"
_NUM = 3  # number literal
_ID = 4  # bare identifier or keyword
_RED = 5  # ***(Redacted)
_OP = 6  # punctuation / operator
_PARAM = 7  # ? parameter placeholder

_TOKEN_RE = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<red>\*\*\*\([^)]*\)?)
  | (?P<str>'(?:[^']|'')*'?)
  | (?P<qid>"(?:[^"]|"")*"?)
  | (?P<num>(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<id>[A-Za-z_$][A-Za-z0-9_$]*)
  | (?P<op><=|>=|<>|!=|<<|>>|\|\||.)
    """,
    re.VERBOSE | re.DOTALL,
)

_KIND_BY_GROUP = {"red": _RED, "str": _STR, "qid": _QID, "num": _NUM, "id": _ID, "op": _OP}

_Token = tuple[int, str]

_KEYWORDS = frozenset(
    {
        "SELECT",
        "FROM",
        "WHERE",
        "AND",
        "OR",
        "NOT",
        "IN",
        "IS",
        "BETWEEN",
        "INSERT",
        "INTO",
        "VALUE",
        "UPDATE",
        "SET",
        "REMOVE",
        "DELETE",
        "EXISTS",
        "RETURNING",
        "ORDER",
        "BY",
        "MISSING",
        "NULL",
        "TRUE",
        "FALSE",
    }
)
_VERBS = frozenset({"SELECT", "INSERT", "UPDATE", "DELETE", "EXISTS"})
#: Keywords that end a WHERE clause.
_WHERE_END = frozenset({"RETURNING", "ORDER"})
_OPEN = frozenset({"(", "[", "{", "<<"})
_CLOSE = frozenset({")", "]", "}", ">>"})

_UNKNOWN = Statement(verb="UNKNOWN", table=None)

#: The value :func:`_literal` gives for a ``?`` parameter (hidden, but unlike ``***(Redacted)`` possibly a key).
_PARAM_VALUE: Any = object()


def parse_statement(text: object, partition_key: object = None) -> Statement:
    """Parse one PartiQL statement as CloudTrail logs it.

    ``partition_key``, when known, makes ``full_scan`` precise: a SELECT/UPDATE/DELETE is a full scan unless
    that attribute (the partition key of the statement's target: its index, if it names one) has an equality (a
    visible literal or a ``?`` parameter) or an ``IN`` list reachable through top-level ANDs. Without it, any such
    top-level condition is taken to be on the partition key. An equality whose value is ``***(Redacted)`` counts
    only on an index: CloudTrail redacts the values of the table's non-key attributes, and an index's key
    attributes are such attributes, so on ``"Table"."Index"`` it may be the index's key (:func:`_hidden_keys`).

    Never raises: unparseable text gives ``Statement(verb="UNKNOWN", table=None)``. Results are cached, so
    treat the returned ``key_equalities`` dict as read-only.
    """
    if not isinstance(text, str):  # ``object``: logged values are whatever the JSON held
        return _UNKNOWN
    key = partition_key if isinstance(partition_key, str) else None
    try:
        parts = text.split("'")
        if len(parts) > 2:  # string literals: maybe a statement of a shape already read, with other values
            shaped = _by_shape(parts, key)
            if shaped is not None:
                return shaped
        return _parse_cached(text, key)
    except Exception:  # the contract is "never raise on garbage"
        return _UNKNOWN


@lru_cache(maxsize=4096)
def _parse_cached(text: str, partition_key: str | None) -> Statement:
    return _parse_fresh(text, partition_key)


def _parse_fresh(text: str, partition_key: str | None) -> Statement:
    simple = _parse_simple(text, partition_key)
    if simple is not None:
        return simple
    return _parse(_tokenize(text), partition_key)


# --- statements of one shape with other literal values ------------------------------------------------------
#
# Most statements repeat a few shapes with other string literals (``... WHERE pk = 'USER#1'``). Nothing but the
# values of the equalities depends on what a string literal holds (its quotes tell where it starts and ends), so a
# statement whose text, split at its quotes, shows exactly where its literals are is read once per shape (the text
# with its literals emptied): the shape's statement is read from the text with a marker in each literal, and each
# equality on a marker takes that literal's text. A text whose quotes could be anything but the bounds of plain
# literals (an escaped quote ``''``, an unterminated literal, a quote inside a quoted name or a ``***(...)``), or
# an INSERT (whose names are literals), is read as before.

#: Statements by shape, as (the statement read with markers, [(attribute, index of its literal in the split)]), or
#: None for a shape that is read in full each time. Bounded: cleared when full, each entry no longer than its text.
_SHAPES: Final[dict[tuple[str, str | None], tuple[Statement, list[tuple[str, int]]] | None]] = {}
_SHAPES_MAX: Final = 1024


def _by_shape(parts: list[str], partition_key: str | None) -> Statement | None:
    """The statement whose text is ``"'".join(parts)`` (more than one part), read by its shape; None: not one whose
    literals its quotes alone tell."""
    outside = parts[0::2]
    key = ("'".join(outside), partition_key)
    try:
        entry = _SHAPES[key]
    except KeyError:
        entry = _read_shape(parts, outside, partition_key)
        if len(_SHAPES) >= _SHAPES_MAX:
            _SHAPES.clear()
        _SHAPES[key] = entry
    if entry is None:
        return None
    template, slots = entry
    if not slots:
        return template
    equalities = dict(template.key_equalities)
    for attribute, at in slots:
        equalities[attribute] = parts[at]
    return Statement(
        template.verb,
        template.table,
        template.index,
        equalities,
        template.redacted_equalities,
        template.full_scan,
        template.constrained,
        template.insert_names,
    )


def _read_shape(
    parts: list[str], outside: list[str], partition_key: str | None
) -> tuple[Statement, list[tuple[str, int]]] | None:
    """The entry of :data:`_SHAPES` for a text split at its quotes (``outside``: the parts between literals)."""
    if len(parts) % 2 == 0:  # an odd number of quotes: a literal runs to the end
        return None
    for pos, part in enumerate(outside):
        if (0 < pos < len(outside) - 1 and not part) or part.count('"') % 2:
            return None  # an escaped quote (``''``), or a quote inside a quoted name
        red = part.rfind("***(")
        if red >= 0 and part.find(")", red) < 0:
            return None  # a quote inside ``***(...)``
    marked = list(parts)
    markers: dict[str, int] = {}
    for at in range(1, len(parts), 2):
        marked[at] = marker = f"#{at}"
        markers[marker] = at
    template = _parse_fresh("'".join(marked), partition_key)
    if template.verb == "INSERT" or template.insert_names:
        return None
    slots: list[tuple[str, int]] = []
    for attribute, value in template.key_equalities.items():
        if type(value) is str:
            found = markers.get(value)
            if found is None:  # pragma: no cover - a string value is always a literal, and so a marker here
                return None
            slots.append((attribute, found))
    return template, slots


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    append = tokens.append
    for m in _TOKEN_RE.finditer(text):
        group = m.lastgroup
        if group == "ws" or group is None:
            continue
        value = m.group()
        if group == "op" and value == "?":
            append((_PARAM, value))
        else:
            append((_KIND_BY_GROUP[group], value))
    return tokens


def _nesting(tok: _Token) -> int:
    """How ``tok`` changes the bracket depth: 1 opens, -1 closes, 0 for any other token."""
    if tok[0] == _OP:
        if tok[1] in _OPEN:
            return 1
        if tok[1] in _CLOSE:
            return -1
    return 0


def _keyword(tok: _Token) -> str | None:
    """The upper-cased keyword of an identifier token, or None."""
    if tok[0] == _ID:
        upper = tok[1].upper()
        if upper in _KEYWORDS:
            return upper
    return None


def _name(tok: _Token) -> str | None:
    """The name an identifier token stands for (quotes removed), or None if the token is no name."""
    kind, value = tok
    if kind == _QID:
        if len(value) >= 2 and value.endswith('"'):
            return value[1:-1].replace('""', '"')
        return value[1:].replace('""', '"')  # unterminated (truncated statement)
    if kind == _ID and value.upper() not in _KEYWORDS:
        return value
    return None


#: Identifiers that cannot be an attribute on either side of ``=``.
_NOT_ATTRIBUTES = frozenset({"AND", "OR", "NOT", "IN", "IS", "BETWEEN", "NULL", "MISSING", "TRUE", "FALSE"})


def _attribute(tok: _Token) -> str | None:
    """Like ``_name`` but lenient: an unquoted reserved word such as ``value`` may still name an attribute."""
    if tok[0] == _ID:
        return None if tok[1].upper() in _NOT_ATTRIBUTES else tok[1]
    return _name(tok)


def _string_value(value: str) -> str:
    if len(value) >= 2 and value.endswith("'"):
        return value[1:-1].replace("''", "'")
    return value[1:].replace("''", "'")


def _number_value(value: str) -> int | float:
    if "." in value or "e" in value or "E" in value:
        return float(value)
    return int(value)


def _parse(tokens: list[_Token], partition_key: str | None) -> Statement:
    n = len(tokens)
    i = 0
    # Tolerate wrapping parentheses around the whole statement.
    while i < n and tokens[i] == (_OP, "("):
        i += 1
    if i >= n:
        return _UNKNOWN
    verb = _keyword(tokens[i])
    if verb not in _VERBS:
        return _UNKNOWN
    i += 1

    if verb == "EXISTS":
        # EXISTS(SELECT ... FROM t WHERE ...): the facts come from the inner SELECT.
        while i < n and tokens[i] == (_OP, "("):
            i += 1
        if i >= n or _keyword(tokens[i]) != "SELECT":
            return Statement(verb="EXISTS", table=None)
        i += 1
        return _parse_select(tokens, i, "EXISTS", partition_key)
    if verb == "SELECT":
        return _parse_select(tokens, i, "SELECT", partition_key)
    if verb == "INSERT":
        if i < n and _keyword(tokens[i]) == "INTO":
            i += 1
        table, _index, i = _table_ref(tokens, i)
        return Statement(verb="INSERT", table=table, insert_names=_value_names(tokens[i:]))
    if verb == "DELETE":
        if i < n and _keyword(tokens[i]) == "FROM":
            i += 1
        table, _index, i = _table_ref(tokens, i)
        return _with_where(tokens, i, "DELETE", table, None, partition_key)
    # UPDATE
    table, _index, i = _table_ref(tokens, i)
    return _with_where(tokens, i, "UPDATE", table, None, partition_key)


def _parse_select(tokens: list[_Token], i: int, verb: str, partition_key: str | None) -> Statement:
    n = len(tokens)
    depth = 0
    while i < n:
        tok = tokens[i]
        depth += _nesting(tok)
        if depth == 0 and _keyword(tok) == "FROM":
            break
        i += 1
    else:
        return Statement(verb=verb, table=None)
    table, index, i = _table_ref(tokens, i + 1)
    return _with_where(tokens, i, verb, table, index, partition_key)


def _table_ref(tokens: list[_Token], i: int) -> tuple[str | None, str | None, int]:
    """Read ``Table``, ``"Table"``, ``Table.Index`` or ``"Table"."Index"`` at ``i``."""
    n = len(tokens)
    if i >= n:
        return None, None, i
    table = _name(tokens[i])
    if table is None:
        return None, None, i
    i += 1
    index = None
    if i + 1 < n and tokens[i] == (_OP, "."):
        index = _name(tokens[i + 1])
        if index is not None:
            i += 2
    return table, index, i


def _with_where(
    tokens: list[_Token],
    i: int,
    verb: str,
    table: str | None,
    index: str | None,
    partition_key: str | None,
) -> Statement:
    """Find the WHERE clause after ``i`` and build the statement from it."""
    n = len(tokens)
    depth = 0
    start = -1
    while i < n:
        tok = tokens[i]
        depth += _nesting(tok)
        if depth < 0:  # the closing parenthesis of EXISTS( ... )
            break
        if depth == 0:
            if tok == (_OP, ";"):
                break
            kw = _keyword(tok)
            if start < 0 and kw == "WHERE":
                start = i + 1
            elif start >= 0 and kw in _WHERE_END:
                break
        i += 1

    equalities: dict[str, Any] = {}
    redacted: list[str] = []
    constrained: set[str] = set()
    if start >= 0:
        _conjunction(tokens[start:i], equalities, redacted, constrained)
    _hidden_keys(index, redacted, constrained)

    if partition_key is not None:
        full_scan = partition_key not in constrained
    else:
        full_scan = not constrained
    return Statement(
        verb=verb,
        table=table,
        index=index,
        key_equalities=equalities,
        redacted_equalities=tuple(redacted),
        full_scan=full_scan,
        constrained=tuple(sorted(constrained)),
    )


def _hidden_keys(index: str | None, redacted: list[str], constrained: set[str]) -> None:
    """On an index, an equality with a redacted value may be on the index's key: it constrains.

    CloudTrail redacts the values of the attributes that are not keys of the *table*; an index's key attributes are
    such attributes, so the value that selects the index's partition is always redacted. Whether the attribute is the
    index's partition key is decided with the index's key schema at detection time (the statement is kept with its
    ``constrained`` attributes, as one with a ``?`` parameter is).
    """
    if index is not None:
        constrained.update(redacted)


#: At most this many attribute names are kept from an INSERT's ``VALUE {...}``.
MAX_INSERT_NAMES = 16


def _value_names(tokens: list[_Token]) -> tuple[str, ...]:
    """The attribute names of an INSERT's ``VALUE {'name': value, ...}`` (top level of the tuple only)."""
    names: list[str] = []
    depth = 0
    for pos, tok in enumerate(tokens):
        depth += _nesting(tok)
        if depth == 1 and tok[0] in (_STR, _QID) and pos + 1 < len(tokens) and tokens[pos + 1] == (_OP, ":"):
            name = _string_value(tok[1]) if tok[0] == _STR else _name(tok)
            if name and name not in names:
                names.append(name)
                if len(names) >= MAX_INSERT_NAMES:
                    break
    return tuple(names)


def _split_top(tokens: list[_Token], keyword: str) -> list[list[_Token]]:
    """Split at depth-0 ``keyword`` (AND/OR); the AND of ``BETWEEN x AND y`` is not a split point."""
    parts: list[list[_Token]] = []
    current: list[_Token] = []
    depth = 0
    in_between = False
    for tok in tokens:
        depth += _nesting(tok)
        if depth == 0 and tok[0] == _ID:
            kw = _keyword(tok)
            if kw == "BETWEEN":
                in_between = True
            elif kw == "AND" and in_between:
                in_between = False
                current.append(tok)
                continue
            elif kw == keyword:
                parts.append(current)
                current = []
                continue
        current.append(tok)
    parts.append(current)
    return parts


def _conjunction(
    tokens: list[_Token],
    equalities: dict[str, Any],
    redacted: list[str],
    constrained: set[str],
) -> None:
    """Collect the equalities reachable through top-level ANDs of a condition."""
    if len(_split_top(tokens, "OR")) > 1:
        return  # a disjunction guarantees no single equality
    for part in _split_top(tokens, "AND"):
        if len(part) >= 2 and part[0] == (_OP, "(") and part[-1] == (_OP, ")") and _wraps(part):
            _conjunction(part[1:-1], equalities, redacted, constrained)
            continue
        _condition(part, equalities, redacted, constrained)


def _wraps(part: list[_Token]) -> bool:
    """True if the first token's parenthesis closes at the last token."""
    depth = 0
    last = len(part) - 1
    for pos, tok in enumerate(part):
        step = _nesting(tok)
        depth += step
        if step < 0 and depth == 0:
            return pos == last
    return False


def _literal(tokens: list[_Token]) -> tuple[bool, Any, bool]:
    """Read a literal operand: (is_literal, value, is_hidden)."""
    if len(tokens) == 1:
        kind, value = tokens[0]
        if kind == _STR:
            return True, _string_value(value), False
        if kind == _NUM:
            return True, _number_value(value), False
        if kind == _RED:
            return True, None, True
        if kind == _PARAM:
            return True, _PARAM_VALUE, True
    elif len(tokens) == 2 and tokens[0][0] == _OP and tokens[0][1] in ("-", "+") and tokens[1][0] == _NUM:
        number = _number_value(tokens[1][1])
        return True, (-number if tokens[0][1] == "-" else number), False
    return False, None, False


def _condition(
    part: list[_Token],
    equalities: dict[str, Any],
    redacted: list[str],
    constrained: set[str],
) -> None:
    """Record one conjunct if it is ``attr = literal`` (either side) or ``attr IN [...]``."""
    if len(part) < 3:
        return
    if _keyword(part[1]) == "IN":
        attr = _attribute(part[0])
        if attr is not None:
            constrained.add(attr)
        return
    eq = -1
    for pos, tok in enumerate(part):
        if tok == (_OP, "="):
            eq = pos
            break
    if eq <= 0:
        return
    left, right = part[:eq], part[eq + 1 :]
    attr = _attribute(left[0]) if len(left) == 1 else None
    is_literal, value, hidden = _literal(right)
    if attr is None or not is_literal:
        attr = _attribute(right[0]) if len(right) == 1 else None
        is_literal, value, hidden = _literal(left)
        if attr is None or not is_literal:
            return
    if hidden:
        if value is _PARAM_VALUE:
            constrained.add(attr)  # ``= ?``: the value is not logged, but it may be the key
        if attr not in redacted:
            redacted.append(attr)
    else:
        constrained.add(attr)
        equalities[attr] = value


# --- the common statements, without the tokenizer ------------------------------------------------------------
#
# Nearly every logged statement is one of ``SELECT <*|names> FROM t[.i] [WHERE ...]``, ``UPDATE t SET a = v, ...
# [WHERE ...]``, ``DELETE FROM t [WHERE ...]`` or ``INSERT INTO t ...``, with a WHERE clause of ``attr <op>
# literal`` conditions joined by AND. ``_parse_simple`` reads exactly those with a few anchored regular expressions
# (several times faster than tokenizing) and gives up (None) on anything else, which ``_parse`` then reads. What it
# accepts it reads as ``_parse`` does: its patterns are the tokenizer's (possessive, so a token is never cut
# shorter than the tokenizer cuts it), every keyword must stand alone between blanks, and a bare name that is a
# keyword makes it give up, so no clause boundary can be seen differently. ASCII-only ``\s``/``\d``: other
# blanks or digits outside literals also make it give up.

_S_IDENT = r'(?:"[^"]*+(?:""[^"]*+)*+"|[A-Za-z_$][A-Za-z0-9_$]*+)'
_S_LITERAL = (
    r"(?:('[^']*+(?:''[^']*+)*+')"  # a string
    r"|((?:\d++(?:\.\d*+)?+|\.\d++)(?:[eE][+-]?+\d++)?+)"  # a number
    r"|(\*\*\*\([^)]*+\)|\?))"  # hidden
)
#: What may follow a table reference: WHERE, or the end (group ``end``).
_S_AFTER_TABLE = r"(?:\s++(?i:WHERE)\s++|(?P<end>\s*+\Z))"
_S_TABLE = rf"(?P<table>{_S_IDENT})(?:\s*+\.\s*+(?P<index>{_S_IDENT}))?+"
_S_SELECT_RE = re.compile(
    rf"\s*+(?i:SELECT)\s++(?P<names>\*|{_S_IDENT}(?:\s*+,\s*+{_S_IDENT})*+)\s++(?i:FROM)\s++{_S_TABLE}{_S_AFTER_TABLE}",
    re.ASCII,
)
_S_DELETE_RE = re.compile(rf"\s*+(?i:DELETE)\s++(?i:FROM)\s++{_S_TABLE}{_S_AFTER_TABLE}", re.ASCII)
_S_UPDATE_RE = re.compile(rf"\s*+(?i:UPDATE)\s++{_S_TABLE}\s++(?i:SET)\s++", re.ASCII)
_S_INSERT_RE = re.compile(rf"\s*+(?i:INSERT)\s++(?i:INTO)\s++{_S_TABLE}", re.ASCII)
_S_IDENT_RE = re.compile(_S_IDENT, re.ASCII)
#: ``attr = literal`` of a SET clause, then a comma (group 5), WHERE, or the end (group 6).
_S_ASSIGN_RE = re.compile(rf"({_S_IDENT})\s*+=\s*+{_S_LITERAL}(?:(\s*+,\s*+)|\s++(?i:WHERE)\s++|(\s*+\Z))", re.ASCII)
#: ``attr <op> literal`` of a WHERE clause, then AND or the end (group 6).
_S_CONDITION_RE = re.compile(
    rf"({_S_IDENT})\s*+(<>|!=|<=|>=|=|<|>)\s*+{_S_LITERAL}(?:\s++(?i:AND)\s++|(\s*+\Z))", re.ASCII
)


def _simple_name(token: str) -> str | None:
    """The name of an identifier token; None for a bare keyword (where ``_parse`` would see the keyword)."""
    if token[0] == '"':
        return token[1:-1].replace('""', '"')
    return None if token.upper() in _KEYWORDS else token


def _parse_simple(text: str, partition_key: str | None) -> Statement | None:
    """``_parse(_tokenize(text), partition_key)`` for the common statement forms, else None."""
    m = _S_SELECT_RE.match(text)
    if m is not None:
        verb = "SELECT"
        names = m.group("names")
        if names != "*":
            for name in _S_IDENT_RE.finditer(names):
                if _simple_name(name.group()) is None:
                    return None
    else:
        m = _S_DELETE_RE.match(text)
        if m is not None:
            verb = "DELETE"
        else:
            m = _S_UPDATE_RE.match(text)
            if m is not None:
                verb = "UPDATE"
            else:
                m = _S_INSERT_RE.match(text)
                if m is None:
                    return None
                table = _simple_name(m.group("table"))
                if table is None or (m.group("index") is not None and _simple_name(m.group("index")) is None):
                    return None
                rest = text[m.end() :]
                names = _value_names(_tokenize(rest)) if "'" in rest or '"' in rest else ()
                return Statement("INSERT", table, insert_names=names)
    table_token, index_token = m.group("table", "index")
    table = _simple_name(table_token)
    index = None if index_token is None else _simple_name(index_token)
    if table is None or (index_token is not None and index is None):
        return None
    if verb != "SELECT":
        index = None  # _parse keeps the index of a SELECT only
    pos = m.end()
    at_end = verb != "UPDATE" and m.group("end") is not None
    if verb == "UPDATE":  # SET a = literal, ...: assignments, no conditions
        while True:
            assign = _S_ASSIGN_RE.match(text, pos)
            if assign is None or _simple_name(assign.group(1)) is None:
                return None
            pos = assign.end()
            if assign.group(5) is None:  # no comma: WHERE or the end
                at_end = assign.group(6) is not None
                break

    equalities: dict[str, Any] = {}
    redacted: list[str] = []
    constrained: set[str] = set()
    while not at_end:
        condition = _S_CONDITION_RE.match(text, pos)
        if condition is None:
            return None
        attr, op, string, number, _hidden, end = condition.groups()
        if attr[0] == '"':
            attr = attr[1:-1].replace('""', '"')
        elif attr.upper() in _KEYWORDS:
            return None
        if op == "=":
            if string is not None:
                constrained.add(attr)
                equalities[attr] = string[1:-1].replace("''", "'")
            elif number is not None:
                constrained.add(attr)
                equalities[attr] = _number_value(number)
            else:
                if _hidden == "?":
                    constrained.add(attr)
                if attr not in redacted:
                    redacted.append(attr)
        pos = condition.end()
        at_end = end is not None
    _hidden_keys(index, redacted, constrained)

    full_scan = partition_key not in constrained if partition_key is not None else not constrained
    return Statement(verb, table, index, equalities, tuple(redacted), full_scan, tuple(sorted(constrained)))
