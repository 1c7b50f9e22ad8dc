"""The CQL parser: query text -> JoinQuery (select–project–join part).

User-facing error texts are pinned in tests/test_error_messages.py.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slidewise.cql import UNITS, load_query, parse
from slidewise.errors import QueryError, SourceError
from slidewise.plan.expr import And, BinOp, Cmp, Col, Func, Lit, Not, Or
from slidewise.plan.query import Equality, JoinQuery, SelectItem, StreamRef, WindowSpec

S1x, S2x = Col(0, "x", "S1"), Col(1, "x", "S2")


def test_design_example_parses_to_the_exact_join_query():
    text = "SELECT ISTREAM * FROM S1 [RANGE 100], S2 [ROWS 50], S3 [RANGE 10 SLIDE 5] WHERE S1.a = S2.a AND S2.a = S3.a AND S1.x > 3"
    q = parse(text)
    assert q == JoinQuery(
        streams=(StreamRef("S1", "S1", WindowSpec("range", 100)), StreamRef("S2", "S2", WindowSpec("rows", 50)), StreamRef("S3", "S3", WindowSpec("range", 10, slide=5))),
        equalities=(Equality(Col(0, "a", "S1"), Col(1, "a", "S2")), Equality(Col(1, "a", "S2"), Col(2, "a", "S3"))),
        filters=(Cmp(">", Col(0, "x", "S1"), Lit(3)),),
        select=None,
        output="istream",
        restore=False,
    )
    assert q.text == text
    assert q.slide == 5
    assert q.key_columns() == ("a", "a", "a")
    assert q.describe() == ("JOIN S1[RANGE 100], S2[ROWS 50], S3[RANGE 10 SLIDE 5] WHERE S1.a = S2.a AND S2.a = S3.a AND S1.x > 3")


@pytest.mark.parametrize(
    "text, output, restore",
    [
        ("SELECT * FROM S", "istream", False),
        ("SELECT ISTREAM * FROM S", "istream", False),
        ("select rstream * from S", "rstream", False),
        ("SELECT DStream * FROM S", "dstream", False),
        ("SELECT ISTREAM_RESTORE * FROM S", "istream", True),
        ("SELECT RSTREAM_RESTORE * FROM S", "rstream", True),
        ("SELECT ISTREAM(*) FROM S", "istream", False),
        ("SELECT DSTREAM ( * ) FROM S", "dstream", False),
        ("ISTREAM(SELECT * FROM S)", "istream", False),
        ("RSTREAM(SELECT * FROM S [RANGE 5] WHERE S.a = 1);", "rstream", False),
        ("ISTREAM_RESTORE(SELECT * FROM S [RANGE 5 SLIDE 1])", "istream", True),
    ],
)
def test_output_operators(text, output, restore):
    q = parse(text)
    assert (q.output, q.restore) == (output, restore)
    assert q.select is None


def test_wrapped_select_list_keeps_its_items():
    q = parse("SELECT ISTREAM(S.a, S.b AS c) FROM S")
    assert q.select == (SelectItem(Col(0, "a", "S")), SelectItem(Col(0, "b", "S"), "c"))


def test_select_items_aliases_star_and_arithmetic():
    q = parse("SELECT S1.a, S2.b AS bee, S2.*, (S1.x + S2.x) * 2 AS s, -S1.x FROM S1, S2")
    assert q.select == (
        SelectItem(Col(0, "a", "S1")),
        SelectItem(Col(1, "b", "S2"), "bee"),
        SelectItem(Col(1, "*", "S2")),
        SelectItem(BinOp("*", BinOp("+", S1x, S2x), Lit(2)), "s"),
        SelectItem(BinOp("-", Lit(0), S1x)),
    )
    assert [i.name for i in q.select] == ["S1.a", "bee", "S2.*", "s", "(0 - S1.x)"]


WINDOWS = [
    ("", WindowSpec("unbounded")),
    ("[RANGE 100]", WindowSpec("range", 100)),
    ("[range 0]", WindowSpec("range", 0)),
    ("[RANGE 10 SLIDE 2]", WindowSpec("range", 10, slide=2)),
    ("[ROWS 50]", WindowSpec("rows", 50)),
    ("[PARTITION BY k ROWS 3]", WindowSpec("rows", 3, partition_by="k")),
    ("[Partition By S.k Rows 3]", WindowSpec("rows", 3, partition_by="k")),
    ("[UNBOUNDED]", WindowSpec("unbounded")),
    ("[NOW]", WindowSpec("now")),
    ("[RANGE 5 INTERNAL]", WindowSpec("range", 5, internal=True)),
    ("[ROWS 5] INTERNAL", WindowSpec("rows", 5, internal=True)),
    ("INTERNAL", WindowSpec("unbounded", internal=True)),
    ("[RANGE 2.0]", WindowSpec("range", 2)),
    ("[RANGE 1e3]", WindowSpec("range", 1000)),
]


@pytest.mark.parametrize("window, spec", WINDOWS)
def test_windows(window, spec):
    assert parse(f"SELECT * FROM S {window}").streams == (StreamRef("S", "S", spec),)


@pytest.mark.parametrize(
    "window, size",
    [
        ("[RANGE 5 ms]", 5),
        ("[RANGE 5 milliseconds]", 5),
        ("[RANGE 1 MILLISECOND]", 1),
        ("[RANGE 10s]", 10_000),
        ("[RANGE 10 SECONDS]", 10_000),
        ("[RANGE 1 second]", 1_000),
        ("[RANGE 2 min]", 120_000),
        ("[RANGE 1 Minute]", 60_000),
        ("[RANGE 3 minutes]", 180_000),
        ("[RANGE 1 h]", 3_600_000),
        ("[RANGE 2 HOURS]", 7_200_000),
        ("[RANGE 1 hour]", 3_600_000),
        ("[RANGE 1 day]", 86_400_000),
        ("[RANGE 1.5 s]", 1_500),
        ("[RANGE 0.5 min]", 30_000),
    ],
)
def test_time_units_convert_to_milliseconds(window, size):
    assert parse(f"SELECT * FROM S {window}").streams[0].window.size == size


def test_slide_takes_units_too():
    w = parse("SELECT * FROM S [RANGE 1 min SLIDE 10 s]").streams[0].window
    assert (w.size, w.slide) == (60_000, 10_000)
    assert UNITS["h"] == 3_600_000


def test_same_slide_on_several_windows_is_one_interval():
    q = parse("SELECT * FROM A [RANGE 10 SLIDE 5], B [RANGE 20 SLIDE 5], C [ROWS 3]")
    assert q.slide == 5


def test_self_join_with_aliases():
    q = parse("SELECT a.x, b.x FROM S [RANGE 5] AS a, S [RANGE 7 s] AS b WHERE a.k = b.k")
    assert q.streams == (StreamRef("a", "S", WindowSpec("range", 5)), StreamRef("b", "S", WindowSpec("range", 7_000)))
    assert q.equalities == (Equality(Col(0, "k", "a"), Col(1, "k", "b")),)
    assert q.key_columns() == ("k", "k")
    assert q.select == (SelectItem(Col(0, "x", "a")), SelectItem(Col(1, "x", "b")))


def test_alias_without_window_and_internal_before_alias():
    q = parse("SELECT * FROM Trades AS t, Quotes [RANGE 5] INTERNAL AS q WHERE t.sym = q.sym")
    assert q.aliases == ["t", "q"]
    assert q.streams[0].window == WindowSpec("unbounded")
    assert q.streams[1].window == WindowSpec("range", 5, internal=True)


def test_theta_predicate_goes_to_filters():
    q = parse("SELECT * FROM S1 [RANGE 10], S2 [RANGE 10] WHERE ABS(S1.x - S2.x) <= 2")
    assert q.equalities == ()
    assert q.filters == (Cmp("<=", Func("abs", (BinOp("-", S1x, S2x),)), Lit(2)),)
    assert q.key_columns() is None
    assert str(q.filters[0]) == "ABS((S1.x - S2.x)) <= 2"


def test_conjuncts_split_in_source_order():
    q = parse("SELECT * FROM S1, S2 WHERE S1.x > 1 AND S1.a = S2.b AND S1.a = S1.b AND (S2.y < 0 OR S2.y > 9) AND (S2.c = S1.c AND S2.z != 'q')")
    assert q.equalities == (Equality(Col(0, "a", "S1"), Col(1, "b", "S2")), Equality(Col(1, "c", "S2"), Col(0, "c", "S1")))
    assert [str(f) for f in q.filters] == ["S1.x > 1", "S1.a = S1.b", "(S2.y < 0 OR S2.y > 9)", "S2.z != 'q'"]
    assert q.key_columns() is None  # S1 joins on a and c


def test_equality_under_or_or_not_is_a_filter():
    q = parse("SELECT * FROM S1, S2 WHERE S1.a = S2.a OR S1.b = S2.b")
    assert q.equalities == ()
    assert q.filters == (Or((Cmp("=", Col(0, "a", "S1"), Col(1, "a", "S2")), Cmp("=", Col(0, "b", "S1"), Col(1, "b", "S2")))),)
    q = parse("SELECT * FROM S1, S2 WHERE NOT S1.a = S2.a")
    assert q.filters == (Not(Cmp("=", Col(0, "a", "S1"), Col(1, "a", "S2"))),)


def test_operator_precedence():
    q = parse("SELECT * FROM S WHERE S.a = 1 OR NOT S.b = 2 AND S.c + 2 * S.d % 3 >= -S.e - 1")
    (f,) = q.filters
    a, b, c, d, e = (Col(0, n, "S") for n in "abcde")
    assert f == Or(
        (
            Cmp("=", a, Lit(1)),
            And((Not(Cmp("=", b, Lit(2))), Cmp(">=", BinOp("+", c, BinOp("%", BinOp("*", Lit(2), d), Lit(3))), BinOp("-", BinOp("-", Lit(0), e), Lit(1))))),
        )
    )


@pytest.mark.parametrize(
    "literal, value",
    [
        ("3", 3),
        ("-3", -3),
        ("2.5", 2.5),
        ("-0.25", -0.25),
        ("1e3", 1000.0),
        ("'abc'", "abc"),
        ("'it''s'", "it's"),
        ("''", ""),
    ],
)
def test_literals(literal, value):
    (f,) = parse(f"SELECT * FROM S WHERE S.a = {literal}").filters
    assert f == Cmp("=", Col(0, "a", "S"), Lit(value))
    assert type(f.right.value) is type(value)


def test_not_equal_spellings_and_ts_column():
    q = parse("SELECT * FROM S1, S2 WHERE S1.a <> 1 AND S1.ts != S2.ts")
    assert q.filters == (Cmp("!=", Col(0, "a", "S1"), Lit(1)), Cmp("!=", Col(0, "ts", "S1"), Col(1, "ts", "S2")))


def test_unqualified_columns_with_one_stream():
    q = parse("SELECT a, b + 1 AS c FROM S [ROWS 4] AS s WHERE a > 2")
    assert q.select == (SelectItem(Col(0, "a", "s")), SelectItem(BinOp("+", Col(0, "b", "s"), Lit(1)), "c"))
    assert q.filters == (Cmp(">", Col(0, "a", "s"), Lit(2)),)


def test_keywords_are_case_insensitive_and_non_reserved_ones_are_names():
    q = parse("select S.range, S.rows from S [range 5 slide 5] where S.now = S.slide and S.internal = 1")
    assert q.select == (SelectItem(Col(0, "range", "S")), SelectItem(Col(0, "rows", "S")))
    assert q.filters == (Cmp("=", Col(0, "now", "S"), Col(0, "slide", "S")), Cmp("=", Col(0, "internal", "S"), Lit(1)))
    assert parse("SELECT * FROM rows [RANGE 1] AS range").aliases == ["range"]


def test_comments_whitespace_and_trailing_semicolon():
    q = parse("""
        -- a three-way join
        SELECT *            -- everything
        FROM S1 [RANGE 5],  -- first
             S2 [RANGE 5]
        WHERE S1.a = S2.a;  -- done
    """)
    assert q.key_columns() == ("a", "a")


def test_and_flattens_parentheses():
    q = parse("SELECT * FROM S WHERE (S.a = 1 AND (S.b = 2)) AND S.c = 3")
    assert [str(f) for f in q.filters] == ["S.a = 1", "S.b = 2", "S.c = 3"]


def test_function_names_are_case_insensitive():
    (f,) = parse("SELECT * FROM S WHERE abs(S.a) > Abs(-2)").filters
    assert f == Cmp(">", Func("abs", (Col(0, "a", "S"),)), Func("abs", (Lit(-2),)))


# -- str(expr) round trips ----------------------------------------------------

_COLS = st.builds(Col, st.integers(0, 1), st.sampled_from(["a", "b", "x", "ts"])).map(lambda c: Col(c.stream, c.attr, ("S1", "S2")[c.stream]))
_LITS = st.one_of(
    st.integers(-(10**6), 10**6),
    st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False).filter(lambda v: v != int(v)),
    st.text(st.characters(min_codepoint=32, max_codepoint=126, exclude_characters="'\\"), max_size=5),
).map(Lit)
_VALUES = st.recursive(
    st.one_of(_COLS, _LITS),
    lambda inner: st.one_of(st.builds(BinOp, st.sampled_from("+-*/%"), inner, inner), st.builds(lambda a: Func("abs", (a,)), inner)),
    max_leaves=6,
)
_CMPS = st.builds(Cmp, st.sampled_from(["=", "!=", "<", "<=", ">", ">="]), _VALUES, _VALUES)


def _flat(cls):
    def make(items):
        out = []
        for i in items:
            out.extend(i.items if isinstance(i, cls) else (i,))
        return cls(tuple(out))

    return make


_CONDS = st.recursive(
    _CMPS,
    lambda inner: st.one_of(st.lists(inner, min_size=2, max_size=3).map(_flat(And)), st.lists(inner, min_size=2, max_size=3).map(_flat(Or)), st.builds(Not, inner)),
    max_leaves=5,
)


@given(_CONDS)
def test_condition_str_round_trips(cond):
    q = parse(f"SELECT * FROM S1, S2 WHERE NOT ({cond})")
    assert q.filters == (Not(cond),)


@given(_VALUES)
def test_value_str_round_trips_as_select_item(value):
    (item,) = parse(f"SELECT {value} FROM S1, S2").select
    assert item.expr == value
    assert item.name == str(value)


def test_describe_round_trips():
    q = parse("SELECT * FROM S1 [RANGE 100], S2 [ROWS 50] WHERE S1.a = S2.a AND ABS(S1.x - S2.x) <= 2")
    text = q.describe().replace("JOIN", "SELECT * FROM", 1).replace("[", " [")
    assert parse(text) == q


# -- load_query ---------------------------------------------------------------


def test_load_query_reads_a_file(tmp_path):
    path = tmp_path / "q.cql"
    path.write_text("-- the W2 query\nSELECT * FROM S1 [RANGE 10], S2 [RANGE 10]\nWHERE S1.a = S2.a;\n")
    assert load_query(str(path)) == parse("SELECT * FROM S1 [RANGE 10], S2 [RANGE 10] WHERE S1.a = S2.a")
    assert load_query(path).key_columns() == ("a", "a")


def test_load_query_takes_text():
    assert load_query("SELECT * FROM S [ROWS 2]").streams[0].window == WindowSpec("rows", 2)


def test_load_query_missing_file_is_a_source_error(tmp_path):
    with pytest.raises(SourceError, match="query file not found"):
        load_query(str(tmp_path / "missing.cql"))


def test_load_query_reads_only_cql_names_or_paths(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "q.sql").write_text("SELECT * FROM S [ROWS 2]\n")
    with pytest.raises(QueryError) as info:
        load_query("q.sql")  # text, not a file: only *.cql names are read
    assert "to read a query from a file, name it *.cql or use --query-file" in info.value.hint
    assert load_query(tmp_path / "q.sql").streams[0].window == WindowSpec("rows", 2)


def test_load_query_never_shows_the_text_of_a_file_not_named_cql(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("user:hunter2\n")
    with pytest.raises(QueryError) as info:
        load_query(path)
    assert "hunter2" not in str(info.value) and "not shown" in str(info.value)


def test_chains_of_conditions_are_flat():
    q = parse("SELECT * FROM S [RANGE 1] WHERE " + " AND ".join(f"S.a != {i}" for i in range(5000)))
    assert len(q.filters) == 5000
    q = parse("SELECT * FROM S [RANGE 1] WHERE S.a = 1 AND (" + " OR ".join(f"S.b = {i}" for i in range(5000)) + ")")
    assert len(q.filters) == 2 and len(q.filters[1].items) == 5000


def test_load_query_error_names_the_file(tmp_path):
    path = tmp_path / "bad.cql"
    path.write_text("SELECT *\nFROM S1 [ROWS 0]\n")
    with pytest.raises(QueryError) as info:
        load_query(str(path))
    assert str(info.value) == (
        f"query file {path}, line 2, column 15: window size must be positive, got 0 (hint: write e.g. [RANGE 100] or [ROWS 50])\nFROM S1 [ROWS 0]\n              ^"
    )
    assert (info.value.line, info.value.column) == (2, 15)


def test_compiled_grammar_is_cached_in_a_private_user_directory(tmp_path, monkeypatch):
    from slidewise.cql import parser

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    text = parser.GRAMMAR.read_text(encoding="utf-8")
    path = parser._cache_file(text, "full")
    assert path and (tmp_path / "slidewise").stat().st_mode & 0o777 == 0o700
    built = parser._compile(text, "full")
    loaded = parser._compile(text, "full")  # from the file
    query = "SELECT RSTREAM(S.a, COUNT(*) AS n) FROM S [RANGE 9 SLIDE 2] GROUP BY S.a"
    assert os.path.exists(path) and loaded.parse(query) == built.parse(query)
    (tmp_path / "slidewise").chmod(0o770)  # others may write there: no cache
    assert parser._cache_file(text, "full") is None
