"""Exact text of every user-facing CQL error (pathway's test_error_messages style).

A changed message must be a deliberate change: these strings are what a user
reads on the terminal (``str(QueryError)``: location, message, hint, then the
offending line with a caret under the spot).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slidewise.cql import load_query, parse
from slidewise.errors import QueryError, SourceError

SYNTAX = [
    (
        "misspelled_keyword",
        "SELECT * FROM S1 [RANGE 5] WHER S1.a = 2",
        "query line 1, column 28: unexpected 'WHER' (hint: did you mean WHERE? a word right after a FROM item is read as its alias)\n"
        "SELECT * FROM S1 [RANGE 5] WHER S1.a = 2\n"
        "                           ^",
    ),
    ("misspelled_from", "SELECT * FORM S1", "query line 1, column 10: unexpected 'FORM' (hint: did you mean FROM? expected FROM)\nSELECT * FORM S1\n         ^"),
    (
        "missing_comma",
        "SELECT * FROM S1 [RANGE 5] S2 [RANGE 5]",
        "query line 1, column 28: unexpected 'S2' (hint: is a ',' missing before it? a window follows its stream's name, then the alias: FROM S [RANGE 5] s)\n"
        "SELECT * FROM S1 [RANGE 5] S2 [RANGE 5]\n"
        "                           ^",
    ),
    (
        "end_after_where",
        "SELECT * FROM S1 [RANGE 5] WHERE",
        "query line 1, column 33: unexpected end of query (hint: expected an expression)\nSELECT * FROM S1 [RANGE 5] WHERE\n                                ^",
    ),
    (
        "end_after_select",
        "SELECT",
        "query line 1, column 7: unexpected end of query (hint: expected one of: an output operator such as ISTREAM, an expression, '*')\nSELECT\n      ^",
    ),
    (
        "end_inside_window",
        "SELECT * FROM S1 [RANGE 5",
        "query line 1, column 26: unexpected end of query (hint: expected one of: INTERNAL, SLIDE, a time unit, ']')\n"
        "SELECT * FROM S1 [RANGE 5\n"
        "                         ^",
    ),
    (
        "unclosed_parenthesis",
        "SELECT * FROM S1 WHERE (S1.a = 2",
        "query line 1, column 33: unexpected end of query (hint: expected one of: OR, ')')\nSELECT * FROM S1 WHERE (S1.a = 2\n                                ^",
    ),
    (
        "multiline",
        "SELECT *\nFROM S1 [RANGE 5],\n     S2 [RANGE 5]\nWHERE S1.a = = S2.a",
        "query line 4, column 14: unexpected '=' (hint: compare with a single '=', e.g. S1.a = S2.a)\nWHERE S1.a = = S2.a\n             ^",
    ),
    (
        "double_equals",
        "SELECT * FROM S1 WHERE S1.a == 2",
        "query line 1, column 30: unexpected '=' (hint: compare with a single '=', e.g. S1.a = S2.a)\nSELECT * FROM S1 WHERE S1.a == 2\n                             ^",
    ),
    (
        "double_quotes",
        'SELECT * FROM S1 WHERE S1.a = "x"',
        'query line 1, column 31: unexpected character \'"\' (hint: string literals use single quotes, e.g. \'text\')\n'
        'SELECT * FROM S1 WHERE S1.a = "x"\n'
        "                              ^",
    ),
    (
        "unterminated_string",
        "SELECT * FROM S1 WHERE S1.a = 'abc",
        "query line 1, column 31: unterminated string literal (hint: close it with a single quote, e.g. 'text')\n"
        "SELECT * FROM S1 WHERE S1.a = 'abc\n"
        "                              ^",
    ),
    (
        "bang",
        "SELECT * FROM S1 WHERE S1.a ! 3",
        "query line 1, column 29: unexpected character '!' (hint: write 'not equal' as != or <>)\nSELECT * FROM S1 WHERE S1.a ! 3\n                            ^",
    ),
    (
        "stray_character",
        "SELECT * FROM S1 @",
        "query line 1, column 18: unexpected character '@' (hint: expected one of: AS, INTERNAL, JOIN, WHERE, INNER JOIN, ',', ';', '[', end of query)\n"
        "SELECT * FROM S1 @\n"
        "                 ^",
    ),
    (
        "reserved_word",
        "SELECT * FROM S1 WHERE S1.from = 3",
        "query line 1, column 27: unexpected 'from' (hint: FROM is a reserved word and cannot name a stream or an attribute)\n"
        "SELECT * FROM S1 WHERE S1.from = 3\n"
        "                          ^",
    ),
    ("empty", "   ", "query line 1, column 1: empty query (hint: write e.g. SELECT * FROM S1 [RANGE 10])"),
    ("only_comment", "-- nothing here\n", "query line 1, column 1: empty query (hint: write e.g. SELECT * FROM S1 [RANGE 10])\n-- nothing here\n^"),
]

NAMES = [
    (
        "unqualified_column",
        "SELECT * FROM S1, S2 WHERE a = 1",
        "query line 1, column 28: unqualified column 'a' in a query over 2 streams (hint: qualify it, e.g. S1.a)\n"
        "SELECT * FROM S1, S2 WHERE a = 1\n"
        "                           ^",
    ),
    (
        "unknown_alias",
        "SELECT * FROM S1, S2 WHERE S3.a = 1",
        "query line 1, column 28: unknown stream alias 'S3' (hint: FROM lists S1, S2)\nSELECT * FROM S1, S2 WHERE S3.a = 1\n                           ^",
    ),
    (
        "unknown_alias_close",
        "SELECT * FROM Trades, Quotes WHERE Trade.sym = Quotes.sym",
        "query line 1, column 36: unknown stream alias 'Trade' (hint: did you mean Trades? FROM lists Trades, Quotes)\n"
        "SELECT * FROM Trades, Quotes WHERE Trade.sym = Quotes.sym\n"
        "                                   ^",
    ),
    (
        "unknown_alias_renamed",
        "SELECT * FROM S [RANGE 1] AS x, S [RANGE 2] AS y WHERE S.a = 1",
        "query line 1, column 56: unknown stream alias 'S' (hint: S is called x or y in FROM; write x.a)\n"
        "SELECT * FROM S [RANGE 1] AS x, S [RANGE 2] AS y WHERE S.a = 1\n"
        "                                                       ^",
    ),
    (
        "unknown_alias_select",
        "SELECT S1.a, S4.b FROM S1, S2",
        "query line 1, column 14: unknown stream alias 'S4' (hint: FROM lists S1, S2)\nSELECT S1.a, S4.b FROM S1, S2\n             ^",
    ),
    (
        "unknown_alias_select_star",
        "SELECT S9.* FROM S1, S2",
        "query line 1, column 8: unknown stream alias 'S9' (hint: FROM lists S1, S2)\nSELECT S9.* FROM S1, S2\n       ^",
    ),
    (
        "duplicate_alias",
        "SELECT * FROM S1 [RANGE 5], S1 [RANGE 9]",
        "query line 1, column 29: stream alias used twice in FROM: ['S1', 'S1'] "
        "(hint: give self-joined streams distinct aliases: FROM S [RANGE 5] AS a, S [RANGE 5] AS b)\n"
        "SELECT * FROM S1 [RANGE 5], S1 [RANGE 9]\n"
        "                            ^",
    ),
    (
        "duplicate_explicit_alias",
        "SELECT * FROM S1 AS a, S2 AS a",
        "query line 1, column 30: stream alias used twice in FROM: ['a', 'a'] "
        "(hint: give self-joined streams distinct aliases: FROM S [RANGE 5] AS a, S [RANGE 5] AS b)\n"
        "SELECT * FROM S1 AS a, S2 AS a\n"
        "                             ^",
    ),
    (
        "duplicate_output_column",
        "SELECT S1.a, S1.a FROM S1",
        "query line 1, column 14: output column 'S1.a' appears twice in SELECT (hint: rename one with AS, e.g. S1.a AS a2)\nSELECT S1.a, S1.a FROM S1\n             ^",
    ),
    (
        "output_twice",
        "ISTREAM(SELECT RSTREAM * FROM S1)",
        "query line 1, column 16: output operator given twice (hint: write either ISTREAM(SELECT ...) or SELECT ISTREAM ...)\n"
        "ISTREAM(SELECT RSTREAM * FROM S1)\n"
        "               ^",
    ),
]

WINDOWS = [
    (
        "rows_zero",
        "SELECT * FROM S1 [ROWS 0]",
        "query line 1, column 24: window size must be positive, got 0 (hint: write e.g. [RANGE 100] or [ROWS 50])\nSELECT * FROM S1 [ROWS 0]\n                       ^",
    ),
    (
        "negative_range",
        "SELECT * FROM S1 [RANGE -5]",
        "query line 1, column 25: window size must be positive, got -5 (hint: write e.g. [RANGE 100] or [ROWS 50])\n"
        "SELECT * FROM S1 [RANGE -5]\n"
        "                        ^",
    ),
    (
        "slide_on_rows",
        "SELECT * FROM S1 [ROWS 5 SLIDE 2]",
        "query line 1, column 26: SLIDE on a count window needs a periodic GROUP BY (or aggregate) over one stream: RSTREAM, ISTREAM or DSTREAM "
        "(hint: write e.g. SELECT RSTREAM(S.k, COUNT(*) AS n) FROM S [ROWS 100 SLIDE 10] GROUP BY S.k, or SELECT RSTREAM FREQUENT(S.x, 5) "
        "FROM S [ROWS 10000 SLIDE 100]; without SLIDE a count window follows every arrival)\n"
        "SELECT * FROM S1 [ROWS 5 SLIDE 2]\n"
        "                         ^",
    ),
    (
        "slide_zero",
        "SELECT * FROM S1 [RANGE 5 SLIDE 0]",
        "query line 1, column 27: SLIDE needs a time window and a positive interval (hint: write e.g. [RANGE 100 SLIDE 10])\n"
        "SELECT * FROM S1 [RANGE 5 SLIDE 0]\n"
        "                          ^",
    ),
    (
        "slide_on_unbounded",
        "SELECT * FROM S1 [UNBOUNDED SLIDE 3]",
        "query line 1, column 29: SLIDE needs a time window and a positive interval (hint: write e.g. [RANGE 100 SLIDE 10])\n"
        "SELECT * FROM S1 [UNBOUNDED SLIDE 3]\n"
        "                            ^",
    ),
    (
        "different_slides",
        "SELECT * FROM S1 [RANGE 5 SLIDE 2], S2 [RANGE 5 SLIDE 3]",
        "query line 1, column 49: windows declare different SLIDE intervals [2, 3] (hint: lazy re-evaluation has one interval per query; use the same SLIDE)\n"
        "SELECT * FROM S1 [RANGE 5 SLIDE 2], S2 [RANGE 5 SLIDE 3]\n"
        "                                                ^",
    ),
    (
        "different_slides_units",
        "SELECT * FROM S1 [RANGE 1 min SLIDE 1 s], S2 [RANGE 5 SLIDE 100]",
        "query line 1, column 55: windows declare different SLIDE intervals [100, 1000] (hint: lazy re-evaluation has one interval per query; use the same SLIDE)\n"
        "SELECT * FROM S1 [RANGE 1 min SLIDE 1 s], S2 [RANGE 5 SLIDE 100]\n"
        "                                                      ^",
    ),
    (
        "unknown_unit",
        "SELECT * FROM S1 [RANGE 5 fortnights]",
        "query line 1, column 27: unknown time unit 'fortnights' (hint: use ms, s, min, h or d, or no unit for the source's own timestamp units)\n"
        "SELECT * FROM S1 [RANGE 5 fortnights]\n"
        "                          ^",
    ),
    (
        "unit_on_rows",
        "SELECT * FROM S1 [ROWS 5 s]",
        "query line 1, column 26: ROWS counts tuples and takes no time unit (hint: write [ROWS 5], or [RANGE 5 s] for a time window)\n"
        "SELECT * FROM S1 [ROWS 5 s]\n"
        "                         ^",
    ),
    (
        "fractional_size",
        "SELECT * FROM S1 [RANGE 2.5]",
        "query line 1, column 25: window size must be a whole number, got 2.5 (hint: timestamps are integers; use a smaller unit, e.g. [RANGE 1500 ms])\n"
        "SELECT * FROM S1 [RANGE 2.5]\n"
        "                        ^",
    ),
    (
        "fractional_ms",
        "SELECT * FROM S1 [RANGE 1.0005 s]",
        "query line 1, column 25: 1.0005 s is not a whole number of milliseconds (hint: timestamps are integer milliseconds)\n"
        "SELECT * FROM S1 [RANGE 1.0005 s]\n"
        "                        ^",
    ),
    (
        "fractional_rows",
        "SELECT * FROM S1 [ROWS 2.5]",
        "query line 1, column 24: ROWS needs a whole number of tuples, got 2.5 (hint: write e.g. [ROWS 50])\nSELECT * FROM S1 [ROWS 2.5]\n                       ^",
    ),
    (
        "huge_window",
        "SELECT * FROM S1 [RANGE 99999999999999999999]",
        "query line 1, column 25: window size 99999999999999999999 is too large (hint: use [UNBOUNDED] for a window that never expires)\n"
        "SELECT * FROM S1 [RANGE 99999999999999999999]\n"
        "                        ^",
    ),
    (
        "partition_other_stream",
        "SELECT * FROM S1 [PARTITION BY S2.k ROWS 3]",
        "query line 1, column 32: PARTITION BY names stream 'S2' inside the window of 'S1' (hint: partition by an attribute of this stream, e.g. PARTITION BY k)\n"
        "SELECT * FROM S1 [PARTITION BY S2.k ROWS 3]\n"
        "                               ^",
    ),
]

EXPRESSIONS = [
    (
        "unknown_function",
        "SELECT * FROM S1 WHERE sqrt(S1.a) > 1",
        "query line 1, column 24: unknown function 'sqrt' (hint: functions: ABS, CEIL, COALESCE, FLOOR, LENGTH, LOWER, ROUND, SUBSTR, UPPER, CAST(x AS type); "
        "aggregates: COUNT, SUM, AVG, MIN, MAX, MEDIAN, QUANTILE, TOPK, APPROX_COUNT_DISTINCT, APPROX_QUANTILE)\n"
        "SELECT * FROM S1 WHERE sqrt(S1.a) > 1\n"
        "                       ^",
    ),
    (
        "aggregate_function",
        "SELECT * FROM S1 WHERE SUM(S1.a) > 1",
        "query line 1, column 24: aggregate SUM is not supported in a select–project–join query (hint: available functions: ABS, CEIL, COALESCE, FLOOR, LENGTH, LOWER, "
        "ROUND, SUBSTR, UPPER)\n"
        "SELECT * FROM S1 WHERE SUM(S1.a) > 1\n"
        "                       ^",
    ),
    (
        "wrong_arity",
        "SELECT * FROM S1 WHERE ABS(S1.a, 2) > 1",
        "query line 1, column 24: ABS takes 1 argument, got 2 (hint: write e.g. ABS(S1.x - S2.x))\nSELECT * FROM S1 WHERE ABS(S1.a, 2) > 1\n                       ^",
    ),
    (
        "where_value",
        "SELECT * FROM S1 WHERE S1.a",
        "query line 1, column 24: WHERE expects a condition, got the value S1.a (hint: compare it, e.g. S1.a = 1)\nSELECT * FROM S1 WHERE S1.a\n                       ^",
    ),
    (
        "and_value",
        "SELECT * FROM S1 WHERE S1.a AND S1.b = 1",
        "query line 1, column 24: AND expects a condition, got the value S1.a (hint: compare it, e.g. S1.a = 1)\n"
        "SELECT * FROM S1 WHERE S1.a AND S1.b = 1\n"
        "                       ^",
    ),
    (
        "not_value",
        "SELECT * FROM S1 WHERE NOT S1.a",
        "query line 1, column 28: NOT expects a condition, got the value S1.a (hint: compare it, e.g. S1.a = 1)\n"
        "SELECT * FROM S1 WHERE NOT S1.a\n"
        "                           ^",
    ),
    (
        "arithmetic_on_condition",
        "SELECT * FROM S1 WHERE S1.a + (S1.b > 1) > 2",
        "query line 1, column 32: '+' expects a value, got the condition S1.b > 1 (hint: combine conditions with AND, OR and NOT)\n"
        "SELECT * FROM S1 WHERE S1.a + (S1.b > 1) > 2\n"
        "                               ^",
    ),
    (
        "nested_too_deeply",
        "SELECT * FROM S1 WHERE " + "NOT " * 3000 + "S1.a = 1",
        "query is nested too deeply (hint: simplify the expression or split it into several conditions)",
    ),
]


@pytest.mark.parametrize("query, message", [c[1:] for c in SYNTAX], ids=[c[0] for c in SYNTAX])
def test_syntax_errors(query, message):
    with pytest.raises(QueryError) as info:
        parse(query)
    assert str(info.value) == message


@pytest.mark.parametrize("query, message", [c[1:] for c in NAMES], ids=[c[0] for c in NAMES])
def test_name_errors(query, message):
    with pytest.raises(QueryError) as info:
        parse(query)
    assert str(info.value) == message


@pytest.mark.parametrize("query, message", [c[1:] for c in WINDOWS], ids=[c[0] for c in WINDOWS])
def test_window_errors(query, message):
    with pytest.raises(QueryError) as info:
        parse(query)
    assert str(info.value) == message


@pytest.mark.parametrize("query, message", [c[1:] for c in EXPRESSIONS], ids=[c[0] for c in EXPRESSIONS])
def test_expression_errors(query, message):
    with pytest.raises(QueryError) as info:
        parse(query)
    assert str(info.value) == message


def test_error_fields():
    with pytest.raises(QueryError) as info:
        parse("SELECT *\nFROM S1 [RANGE 5]\nWHER S1.a = 2")
    e = info.value
    assert (e.line, e.column, e.location) == (3, 1, "query line 3, column 1")
    assert e.message == "unexpected 'WHER'"
    assert e.hint == "did you mean WHERE? a word right after a FROM item is read as its alias"
    assert e.excerpt == "WHER S1.a = 2\n^"


def test_caret_follows_tabs():
    with pytest.raises(QueryError) as info:
        parse("SELECT *\tFROM S1\tWHER S1.a = 1")
    assert info.value.excerpt == "SELECT *\tFROM S1\tWHER S1.a = 1\n        \t       \t^"


def test_query_must_be_text():
    with pytest.raises(QueryError) as info:
        parse(42)
    assert str(info.value) == "a query must be text, got int"


def test_missing_query_file():
    with pytest.raises(SourceError) as info:
        load_query("queries/w2.cql")
    assert str(info.value) == ("query file not found: queries/w2.cql (hint: pass an existing file or the query text itself)")


_WORDS = [
    "SELECT",
    "ISTREAM",
    "ISTREAM(",
    "*",
    "FROM",
    "S1",
    "S2",
    "a",
    "S1.a",
    "S2.b",
    "[",
    "]",
    "RANGE",
    "ROWS",
    "SLIDE",
    "PARTITION",
    "BY",
    "NOW",
    "UNBOUNDED",
    "INTERNAL",
    "AS",
    ",",
    "WHERE",
    "AND",
    "OR",
    "NOT",
    "=",
    "<>",
    "<",
    "(",
    ")",
    "+",
    "-",
    "/",
    "ABS",
    "5",
    "-2",
    "1.5",
    "s",
    "min",
    "'x'",
    "'",
    '"',
    ";",
    "--",
    "\n",
    "@",
    ".",
]


@given(st.lists(st.sampled_from(_WORDS), max_size=14).map(" ".join))
def test_token_soup_raises_only_query_errors(text):
    try:
        parse(text)
    except QueryError as e:
        assert e.message and "Token(" not in str(e) and "$END" not in str(e)


@given(st.text(max_size=40))
def test_any_text_raises_only_query_errors(text):
    try:
        parse("SELECT * FROM S1 WHERE " + text)
    except QueryError as e:
        assert e.message
