"""Tests of the PartiQL statement parser (auditor.kernel.partiql)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from auditor.kernel.calls import Statement
from auditor.kernel.partiql import (
    _SHAPES,
    _SHAPES_MAX,
    REDACTED_TOKEN,
    _by_shape,
    _parse,
    _parse_fresh,
    _parse_simple,
    _tokenize,
    parse_statement,
)

# The statements of the official AWS CloudTrail samples.
AWS_SELECT = (
    "SELECT * FROM Music WHERE Artist = 'No One You Know' AND SongTitle = 'Call Me Today' "
    "AND nonKeyAttr = ***(Redacted)"
)
AWS_UPDATE = "UPDATE Music SET Album = ***(Redacted) WHERE Artist = 'Acme Band' AND SongTitle = 'PartiQL Rocks'"
AWS_INSERT = "INSERT INTO Music VALUE {'Artist' : ***(Redacted), 'SongTitle' : ***(Redacted), 'Album' : ***(Redacted)}"


def test_aws_sample_select() -> None:
    s = parse_statement(AWS_SELECT)
    assert s == Statement(
        verb="SELECT",
        table="Music",
        index=None,
        key_equalities={"Artist": "No One You Know", "SongTitle": "Call Me Today"},
        redacted_equalities=("nonKeyAttr",),
        full_scan=False,
        constrained=("Artist", "SongTitle"),
    )


def test_aws_sample_update() -> None:
    s = parse_statement(AWS_UPDATE)
    assert s.verb == "UPDATE"
    assert s.table == "Music"
    assert s.key_equalities == {"Artist": "Acme Band", "SongTitle": "PartiQL Rocks"}
    # the SET clause is no condition: Album is not constrained
    assert s.redacted_equalities == ()
    assert s.full_scan is False


def test_aws_sample_insert() -> None:
    s = parse_statement(AWS_INSERT)
    assert s.verb == "INSERT"
    assert s.table == "Music"
    assert s.key_equalities == {}
    assert s.redacted_equalities == ()
    assert s.full_scan is False


def test_redacted_token_constant() -> None:
    assert REDACTED_TOKEN == "***(Redacted)"


@pytest.mark.parametrize(
    ("text", "verb", "table", "index"),
    [
        ('SELECT * FROM "Music"', "SELECT", "Music", None),
        ('SELECT * FROM "Music"."ArtistIndex" WHERE Artist = \'x\'', "SELECT", "Music", "ArtistIndex"),
        ("SELECT Artist FROM Music.ArtistIndex WHERE Artist = 'x'", "SELECT", "Music", "ArtistIndex"),
        ('select * from "my-table.v2"', "SELECT", "my-table.v2", None),
        ('SELECT * FROM "we""ird"', "SELECT", 'we"ird', None),
        ("DELETE FROM Music WHERE Artist = 'a' AND SongTitle = 'b'", "DELETE", "Music", None),
        ("INSERT INTO \"Music\" VALUE {'Artist': ***(Redacted)}", "INSERT", "Music", None),
        ("update Music set x = 1 where Artist = 'a'", "UPDATE", "Music", None),
        ("EXISTS(SELECT * FROM Music WHERE Artist = 'a' AND SongTitle = 'b')", "EXISTS", "Music", None),
        ("  SELECT\n*\tFROM Music\nWHERE Artist='a'", "SELECT", "Music", None),
        ("(SELECT * FROM Music WHERE Artist = 'a')", "SELECT", "Music", None),
    ],
)
def test_verb_table_index(text: str, verb: str, table: str, index: str | None) -> None:
    s = parse_statement(text)
    assert (s.verb, s.table, s.index) == (verb, table, index)


def test_index_only_for_reads() -> None:
    assert parse_statement("UPDATE Music SET a = 1 WHERE pk = 'x'").index is None


def test_exists_equalities() -> None:
    s = parse_statement("EXISTS(SELECT * FROM Music WHERE Artist = 'a' AND SongTitle = ***(Redacted))")
    assert s.key_equalities == {"Artist": "a"}
    assert s.redacted_equalities == ("SongTitle",)
    assert s.full_scan is False


def test_quoted_attribute_and_escaped_quote() -> None:
    s = parse_statement("""SELECT * FROM Music WHERE "Artist" = 'it''s me' AND "Song""Title" = 'x'""")
    assert s.key_equalities == {"Artist": "it's me", 'Song"Title': "x"}


def test_string_with_keywords_inside() -> None:
    s = parse_statement("SELECT * FROM Music WHERE pk = 'a OR b WHERE c = ''d''' AND sk = 'x'")
    assert s.key_equalities == {"pk": "a OR b WHERE c = 'd'", "sk": "x"}
    assert s.full_scan is False


@pytest.mark.parametrize(
    ("literal", "value"),
    [("123", 123), ("-5", -5), ("1.5", 1.5), ("0", 0), ("1e3", 1000.0), ("+7", 7)],
)
def test_number_literals(literal: str, value: float) -> None:
    s = parse_statement(f"SELECT * FROM T WHERE pk = {literal}")
    assert s.key_equalities == {"pk": value}
    assert type(s.key_equalities["pk"]) is type(value)


def test_reversed_equality() -> None:
    s = parse_statement("SELECT * FROM T WHERE 'USER#1' = pk")
    assert s.key_equalities == {"pk": "USER#1"}


def test_reserved_word_attribute() -> None:
    assert parse_statement("SELECT * FROM T WHERE value = 'x'").key_equalities == {"value": "x"}


def test_redacted_never_in_key_equalities() -> None:
    s = parse_statement("SELECT * FROM T WHERE pk = ***(Redacted) AND sk = ***(Redacted)")
    assert s.key_equalities == {}
    assert s.redacted_equalities == ("pk", "sk")
    # CloudTrail redacts non-key values only: by AWS's rule neither attribute is a key, so this reads everything
    assert s.full_scan is True
    assert s.constrained == ()


def test_customers_email_select_is_a_full_scan() -> None:
    s = parse_statement('SELECT * FROM "Customers" WHERE "email" = ***(Redacted)')
    assert (s.table, s.full_scan, s.redacted_equalities) == ("Customers", True, ("email",))
    assert parse_statement('SELECT * FROM "Customers" WHERE "email" = ***(Redacted)', partition_key="email").full_scan


def test_parameter_placeholder_is_hidden_equality() -> None:
    s = parse_statement("SELECT * FROM T WHERE pk = ?")
    assert s.key_equalities == {}
    assert s.redacted_equalities == ("pk",)
    assert s.full_scan is False  # without a schema, a parameter may be the partition key
    assert s.constrained == ("pk",)
    assert parse_statement("SELECT * FROM T WHERE email = ?", partition_key="id").full_scan is True
    assert parse_statement("SELECT * FROM T WHERE id = ?", partition_key="id").full_scan is False


@pytest.mark.parametrize(
    "text",
    [
        "SELECT * FROM Music",
        "SELECT * FROM Music WHERE Price > 10",
        "SELECT * FROM Music WHERE Price BETWEEN 1 AND 10",
        "SELECT * FROM Music WHERE begins_with(SongTitle, 'Call')",
        "SELECT * FROM Music WHERE contains(Tags, 'rock') AND Price < 3",
        "SELECT * FROM Music WHERE Artist <> 'x'",
        "SELECT * FROM Music WHERE Artist = 'a' OR Artist = 'b'",
        "SELECT * FROM Music WHERE NOT Artist = 'a'",
        "SELECT * FROM Music WHERE info.genre = 'rock'",
        "SELECT * FROM Music WHERE Artist IS MISSING",
        "UPDATE Music SET a = 1",
        "DELETE FROM Music",
        "DELETE FROM Music WHERE Price >= 3",
    ],
)
def test_full_scan_without_top_level_equality(text: str) -> None:
    s = parse_statement(text)
    assert s.full_scan is True
    assert s.key_equalities == {}


def test_or_discards_all_equalities() -> None:
    s = parse_statement("SELECT * FROM T WHERE pk = 'a' AND sk = 'b' OR pk = 'c'")
    assert s.key_equalities == {}
    assert s.full_scan is True


def test_or_inside_parentheses_keeps_outer_and() -> None:
    s = parse_statement("SELECT * FROM T WHERE pk = 'a' AND (sk = 'b' OR sk = 'c')")
    assert s.key_equalities == {"pk": "a"}
    assert s.full_scan is False


def test_parenthesised_conjunction_is_looked_into() -> None:
    s = parse_statement("SELECT * FROM T WHERE (pk = 'a' AND sk BETWEEN 1 AND 5) AND x = 2")
    assert s.key_equalities == {"pk": "a", "x": 2}


def test_between_and_is_not_a_conjunction() -> None:
    s = parse_statement("SELECT * FROM T WHERE sk BETWEEN 'a' AND 'b' AND pk = 'p'")
    assert s.key_equalities == {"pk": "p"}
    assert s.full_scan is False


def test_in_list_is_no_single_equality_but_no_scan() -> None:
    s = parse_statement("SELECT * FROM T WHERE pk IN ['a', 'b']")
    assert s.key_equalities == {}
    assert s.redacted_equalities == ()
    assert s.full_scan is False  # AWS runs pk IN [...] as key lookups


def test_returning_and_order_by_end_where() -> None:
    s = parse_statement("UPDATE T SET a = 1 WHERE pk = 'x' RETURNING ALL NEW *")
    assert s.key_equalities == {"pk": "x"}
    s = parse_statement("SELECT * FROM T WHERE pk = 'x' ORDER BY sk DESC")
    assert s.key_equalities == {"pk": "x"}


def test_update_set_clause_with_parentheses() -> None:
    s = parse_statement("UPDATE T SET l = list_append(l, [***(Redacted)]) SET n = n + 1 WHERE pk = 'x'")
    assert s.key_equalities == {"pk": "x"}
    assert s.full_scan is False


class TestPartitionKey:
    def test_equality_on_partition_key(self) -> None:
        assert parse_statement("SELECT * FROM T WHERE pk = 'a'", partition_key="pk").full_scan is False

    def test_redacted_equality_is_no_key_condition(self) -> None:
        # a redacted value is a non-key value by CloudTrail's rule, whatever the configured schema says
        assert parse_statement("SELECT * FROM T WHERE pk = ***(Redacted)", partition_key="pk").full_scan is True

    def test_equality_on_other_attribute_only(self) -> None:
        s = parse_statement("SELECT * FROM T WHERE sk = 'a' AND other = ***(Redacted)", partition_key="pk")
        assert s.full_scan is True
        assert s.key_equalities == {"sk": "a"}

    def test_in_on_partition_key(self) -> None:
        assert parse_statement("SELECT * FROM T WHERE pk IN ['a']", partition_key="pk").full_scan is False

    def test_case_sensitive(self) -> None:
        assert parse_statement("SELECT * FROM T WHERE PK = 'a'", partition_key="pk").full_scan is True

    def test_insert_never_full_scan(self) -> None:
        assert parse_statement(AWS_INSERT, partition_key="Artist").full_scan is False

    def test_aws_update_with_key(self) -> None:
        assert parse_statement(AWS_UPDATE, partition_key="Artist").full_scan is False
        assert parse_statement(AWS_UPDATE, partition_key="Album").full_scan is True


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "garbage",
        "DROP TABLE Music",
        "SELECT",
        "SELECT * FROM",
        "SELECT * FROM Music WHERE",
        "SELECT * FROM Music WHERE pk = 'unterminated",
        'SELECT * FROM "Music',
        "EXISTS(",
        "EXISTS(UPDATE x)",
        "((((((",
        ")))) SELECT",
        "INSERT",
        "UPDATE",
        "DELETE",
        "***(Redacted)",
        "SELECT * FROM Music WHERE pk = ***(Redac",
        "\x00\xff\u2028 SELECT",
        "SELECT * FROM Music WHERE = = = AND AND OR",
        "SELECT * FROM Music WHERE (((pk = 'a'",
        "'" * 1001,
    ],
)
def test_never_raises_on_garbage(text: str) -> None:
    s = parse_statement(text)
    assert isinstance(s, Statement)
    assert s.verb in {"SELECT", "INSERT", "UPDATE", "DELETE", "EXISTS", "UNKNOWN"}


@pytest.mark.parametrize("text", ["", "garbage", "DROP TABLE Music", "CREATE TABLE x"])
def test_unknown_text(text: str) -> None:
    s = parse_statement(text)
    assert s.verb == "UNKNOWN"
    assert s.table is None
    assert s.full_scan is False


def test_non_string_input_is_unknown() -> None:
    assert parse_statement(None).verb == "UNKNOWN"  # type: ignore[arg-type]
    assert parse_statement(123).table is None  # type: ignore[arg-type]


def test_truncated_statement_keeps_what_is_readable() -> None:
    s = parse_statement("SELECT * FROM Music WHERE Artist = 'No One' AND SongTitle = 'Call M")
    assert s.table == "Music"
    assert s.key_equalities["Artist"] == "No One"


_FRAGMENTS = st.sampled_from(
    ["SELECT", "*", "FROM", "Music", '"Music"', ".", '"Idx"', "WHERE", "pk", "=", "'a'", "'it''s'", "12", "-",
     "AND", "OR", "(", ")", "[", "]", "{", "}", "BETWEEN", "IN", "***(Redacted)", "?", "EXISTS", "INSERT", "INTO",
     "VALUE", "UPDATE", "SET", "DELETE", "RETURNING", ",", ";", "'", '"', "<>", "NOT"]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(_FRAGMENTS, max_size=20).map(" ".join))
def test_internal_parser_never_raises(text: str) -> None:
    # Bypass the public catch-all, so that a parser bug cannot hide behind it.
    statement = _parse(_tokenize(text), "pk")
    assert statement.verb in {"SELECT", "INSERT", "UPDATE", "DELETE", "EXISTS", "UNKNOWN"}
    if statement.verb in {"INSERT", "UNKNOWN"}:
        assert statement.full_scan is False


# --- the quick reader of the common forms agrees with the tokenizing parser ----------------------------------


def _full(text: str, partition_key: str | None = None) -> Statement:
    return _parse(_tokenize(text), partition_key)


@pytest.mark.parametrize(
    "text",
    [
        AWS_SELECT,
        AWS_UPDATE,
        AWS_INSERT,
        "SELECT * FROM \"Profiles\" WHERE userId = 'USER#8540397320'",
        "SELECT * FROM \"Profiles\" WHERE userId = 'USER#1' AND status = ***(Redacted)",
        "SELECT title, price FROM \"Catalog\" WHERE pk = 'P1'",
        'SELECT * FROM "Catalog" WHERE price > ***(Redacted)',
        "SELECT * FROM \"Catalog\" WHERE pk = 'P1' AND sk = 'DETAILS' AND inStock = ***(Redacted)",
        "select * from Music where Artist = 'x' and n = 12 and f = 1.5e3 and q = ? and r <> 'y'",
        "SELECT * FROM \"Music\".\"ArtistIndex\" WHERE Artist = 'it''s'",
        'SELECT * FROM "a ""b"" c" WHERE "weird ""attr""" = \'v\' AND val = 1',
        "SELECT * FROM Music",
        "SELECT * FROM Music.Idx",
        "  SELECT\t*\nFROM Music\r\nWHERE pk = '' AND pk = 'again' AND h = ***(Redacted) AND h = ?  ",
        "UPDATE \"Catalog\" SET price = ***(Redacted) WHERE pk = 'P1' AND sk = 'DETAILS'",
        "UPDATE Music SET a = 1, b = 'two', c = ? WHERE pk = 'x'",
        "UPDATE Music.Idx SET a = 1",
        "DELETE FROM Music WHERE Artist = 'x' AND SongTitle = 'y'",
        'DELETE FROM "Music"."Idx" WHERE pk = 7',
        "DELETE FROM Music",
        "INSERT INTO \"Catalog\" VALUE {'pk' : ***(Redacted), 'sk' : ***(Redacted)}",
        'INSERT INTO "T"x garbage',
    ],
)
def test_common_forms_take_the_quick_reader(text: str) -> None:
    for partition_key in (None, "pk", "Artist"):
        quick = _parse_simple(text, partition_key)
        assert quick is not None
        assert quick == _full(text, partition_key)


@pytest.mark.parametrize(
    "text",
    [
        "SELECT * FROM Music WHERE pk = 'a' OR pk = 'b'",
        "SELECT * FROM Music WHERE pk IN ['a', 'b']",
        "SELECT * FROM Music WHERE pk BETWEEN 1 AND 2",
        "SELECT * FROM Music WHERE (pk = 'a')",
        "SELECT * FROM Music WHERE 'a' = pk",
        "SELECT * FROM Music WHERE pk = -1",
        "SELECT * FROM Music WHERE pk = 'a';",
        "SELECT * FROM Music WHERE pk = 'a' ORDER BY sk",
        "SELECT * FROM Music WHERE pk = 'unterminated",
        "SELECT * FROM Music WHERE pk = 'a'b",
        "SELECT * FROM Music WHERE pk = 1e",
        "SELECT * FROM Music WHERE pk = 'a' ANDsk = 'b'",
        "SELECT * FROM Music WHERE pk = 'a'AND sk = 'b'",
        "SELECT * FROM Music WHERE value = 'a' AND and = 'b'",
        "SELECT * FROM Music WHERE where = 'a'",
        "SELECT * FROM Music WHERE value = 1",  # a keyword as a name: the tokenizer decides
        "SELECT a, from FROM Music",
        "SELECT * FROM from WHERE pk = 'a'",
        "SELECT * FROM Music.where",
        "SELECT * FROM Music AS m WHERE pk = 'a'",
        "SELECT *FROM Music",
        "SELECT * FROM Music WHERE pk\u00a0= 'a'",
        "SELECT * FROM Music WHERE pk = \u0663",
        "\u017fELECT * FROM Music",
        "(SELECT * FROM Music)",
        "EXISTS(SELECT * FROM Music WHERE pk = 'a')",
        "UPDATE Music SET a = a + 1 WHERE pk = 'x'",
        "UPDATE Music SET where = 1 WHERE pk = 'x'",
        "UPDATE Music REMOVE a WHERE pk = 'x'",
        "DELETE Music WHERE pk = 'x'",
        "INSERT Music VALUE {}",
        "INSERT INTO value VALUE {}",
    ],
)
def test_other_forms_take_the_tokenizer(text: str) -> None:
    assert _parse_simple(text, None) is None
    assert parse_statement(text) == _full(text)


_WORDS = st.sampled_from(
    ["pk", "sk", "Music", '"Music"', '"a ""b"""', '"Idx"', "value", "from", "and", "$x", "_y", "e5", "\u00e9"]
)
_LITERALS = st.sampled_from(
    ["'a'", "'it''s'", "''", "'AND x = ''y'''", "'unterminated", "12", "007", "1.5", "1.", ".5", "1e3", "1e", "-1",
     "***(Redacted)", "***(", "?", "NULL", "pk", "'a'b", "\u0663"]
)  # fmt: skip
_OPS = st.sampled_from(["=", "=", "=", "<", ">", "<=", ">=", "<>", "!=", "==", "=<", "IN", "<<"])
_BLANKS = st.sampled_from([" ", " ", "  ", "\t", "\n", "", "\u00a0"])
_KEYWORD = st.sampled_from(["SELECT", "select", "Select", "FROM", "from", "WHERE", "where", "AND", "and", "OR"])


@st.composite
def _statements(draw: st.DrawFn) -> str:
    blank = draw(_BLANKS)
    conditions = [
        draw(_WORDS) + draw(_BLANKS) + draw(_OPS) + draw(_BLANKS) + draw(_LITERALS)
        for _ in range(draw(st.integers(1, 4)))
    ]
    joiner = blank + draw(st.sampled_from(["AND", "and", "AND", "OR"])) + draw(_BLANKS)
    where = blank + draw(st.sampled_from(["WHERE", "where", "", "ORDER"])) + draw(_BLANKS) + joiner.join(conditions)
    table = draw(_WORDS) + draw(st.sampled_from(["", "", "." + draw(_WORDS), " . " + draw(_WORDS)]))
    head = draw(
        st.sampled_from(
            [
                f"SELECT * FROM {table}",
                f"select {draw(_WORDS)}, {draw(_WORDS)} {draw(_KEYWORD)} {table}",
                f"UPDATE {table} SET {draw(_WORDS)} = {draw(_LITERALS)}, {draw(_WORDS)} = {draw(_LITERALS)}",
                f"DELETE FROM {table}",
                f"INSERT INTO {table} VALUE {{'pk': ***(Redacted)}}",
            ]
        )
    )
    return draw(st.sampled_from(["", " ", "("])) + head + where + draw(st.sampled_from(["", " ", ";", ")"]))


@settings(max_examples=500, deadline=None)
@given(_statements(), st.sampled_from([None, "pk", "sk"]))
def test_quick_reader_agrees_with_the_tokenizer(text: str, partition_key: str | None) -> None:
    quick = _parse_simple(text, partition_key)
    if quick is not None:
        assert quick == _full(text, partition_key)


# --- statements read by their shape (other literal values) agree with a fresh reading ------------------------


def _shaped(text: str, partition_key: str | None) -> Statement | None:
    parts = text.split("'")
    return _by_shape(parts, partition_key) if len(parts) > 2 else None


@pytest.mark.parametrize(
    "texts",
    [
        [AWS_SELECT, AWS_SELECT.replace("No One You Know", "Other").replace("Call Me Today", "")],
        [AWS_UPDATE, AWS_UPDATE.replace("Acme Band", "x y z")],
        ["SELECT * FROM \"Profiles\" WHERE userId = 'USER#1'", "SELECT * FROM \"Profiles\" WHERE userId = 'USER#2'"],
        ["SELECT * FROM \"Music\".\"Idx\" WHERE a = 'x' AND a = 'y' AND b = ***(Redacted)"] * 2,
        [
            "SELECT * FROM Music WHERE a = 'x' AND n = 12 AND c = ?",
            "SELECT * FROM Music WHERE a = '#3' AND n = 12 AND c = ?",
        ],
        ["SELECT * FROM Music WHERE a = 'x' OR b = 'y'", "SELECT * FROM Music WHERE a = 'z' OR b = 'w'"],
        [
            "SELECT * FROM Music WHERE a IN ['x', 'y'] AND b = 'q'",
            "SELECT * FROM Music WHERE a IN ['1', '2'] AND b = 'r'",
        ],
        ["SELECT * FROM Music WHERE (a = 'x') AND 'y' = b", "SELECT * FROM Music WHERE (a = 'AND') AND 'OR' = b"],
        ["DELETE FROM Music WHERE a = 'x'", "DELETE FROM Music WHERE a = 'WHERE b = 1'"],
        ["EXISTS(SELECT * FROM Music WHERE a = 'x')", "EXISTS(SELECT * FROM Music WHERE a = ')')"],
        ["'x' SELECT", "'y' SELECT"],
        ["SELECT * FROM Music WHERE a = 'x'b", "SELECT * FROM Music WHERE a = '\"'b"],
    ],
)
def test_a_statement_read_by_its_shape_is_the_one_read_afresh(texts: list[str]) -> None:
    for text in texts:
        for partition_key in (None, "a", "Artist"):
            shaped = _shaped(text, partition_key)
            assert shaped is not None
            assert shaped == _parse_fresh(text, partition_key) == parse_statement(text, partition_key)


@pytest.mark.parametrize(
    "text",
    [
        "SELECT * FROM Music WHERE a = 'it''s'",  # an escaped quote
        "SELECT * FROM Music WHERE a = 'unterminated",
        "SELECT * FROM \"it's\" WHERE a = 'x'",  # a quote inside a quoted name
        "SELECT * FROM Music WHERE a = ***(it's) AND b = 'x'",  # inside a redacted value
        "SELECT * FROM Music WHERE a = ***(it's",
        AWS_INSERT,  # an INSERT's names are literals
        "INSERT INTO Music VALUE {'a': 'x', 'b': 1}",
    ],
)
def test_a_statement_whose_quotes_do_not_tell_its_literals_is_read_afresh(text: str) -> None:
    assert _shaped(text, None) is None
    assert parse_statement(text) == _parse_fresh(text, None)


_CONTENTS = st.text(alphabet=st.characters(blacklist_characters="'"), max_size=6)


@settings(max_examples=500, deadline=None)
@given(_statements(), st.sampled_from([None, "pk", "sk"]), st.lists(_CONTENTS, min_size=8, max_size=8))
def test_statements_of_one_shape_are_read_as_afresh(text: str, partition_key: str | None, contents: list[str]) -> None:
    parts = text.split("'")
    other = list(parts)
    other[1::2] = [contents[i % len(contents)] for i in range(len(other[1::2]))]
    for each in (text, "'".join(other)):  # the second one of the same shape, with other values
        shaped = _shaped(each, partition_key)
        if shaped is not None:
            assert shaped == _parse_fresh(each, partition_key)
        assert parse_statement(each, partition_key) == _parse_fresh(each, partition_key)


def test_the_shapes_stay_bounded() -> None:
    for n in range(_SHAPES_MAX + 10):
        text = f"SELECT * FROM T{n} WHERE pk = 'v{n}'"
        assert _shaped(text, None) == _parse_fresh(text, None)
        assert len(_SHAPES) <= _SHAPES_MAX


_TRICKY = st.lists(st.sampled_from([*'ab #1"*()[]{},;.=?<>-\\\n', "AND", "OR", "WHERE", "***("]), max_size=6).map(
    "".join
)


@settings(max_examples=500, deadline=None)
@given(
    st.lists(
        st.tuples(_WORDS, _OPS, st.one_of(_TRICKY.map(lambda c: "'" + c + "'"), _LITERALS)), min_size=1, max_size=4
    ),
    st.sampled_from(
        [
            'SELECT * FROM "Music" WHERE ',
            "SELECT * FROM Music.Idx WHERE ",
            "DELETE FROM T WHERE ",
            "UPDATE T SET a = 'x', b = 1 WHERE ",
            "EXISTS(SELECT * FROM T WHERE ",
        ]
    ),
    st.sampled_from([" AND ", " and ", " OR ", " AND (", ") AND "]),
    st.sampled_from([None, "pk", "sk"]),
)
def test_conditions_on_literals_of_any_text_are_read_as_afresh(
    conditions: list[tuple[str, str, str]], head: str, joiner: str, partition_key: str | None
) -> None:
    text = head + joiner.join(f"{attribute} {op} {literal}" for attribute, op, literal in conditions)
    for each in (text, text.replace("a", "b")):
        shaped = _shaped(each, partition_key)
        if shaped is not None:
            assert shaped == _parse_fresh(each, partition_key)
