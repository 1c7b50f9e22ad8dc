"""The full CQL dialect -> logical plans (Golab's thesis §3.4, §3.6), routing and errors.

Plans are compared as indented trees of ``Node.label()`` lines (root first),
plus the exact fields where the label hides them (columns, aliases, modes).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slidewise.cql import load_any, parse, parse_any, parse_plan
from slidewise.errors import QueryError
from slidewise.plan.expr import And, BinOp, Cmp, Col, Lit
from slidewise.plan.logical import AggCall, Aggregate, Distinct, Join, Negation, Output, Plan, Project, Scan, Select, Subquery, Union, walk
from slidewise.plan.query import JoinQuery, SelectItem, WindowSpec


def tree(node) -> str:
    """The plan as text: one label per line, children indented by two spaces."""
    lines: list[str] = []

    def visit(n, depth):
        lines.append("  " * depth + n.label())
        for c in n.children:
            visit(c, depth + 1)

    visit(node, 0)
    return "\n".join(lines)


def plan_of(text: str, **kw) -> Plan:
    plan = parse_plan(text, **kw)
    assert isinstance(plan, Plan) and isinstance(plan.root, Output)
    assert plan.text == text
    return plan


# -- Golab's thesis §3.6: Queries 1-4 ----------------------------------------------------

QUERY_1 = """SELECT Rstream(*)
FROM Link1 [RANGE 60], Link2 [RANGE 60]
WHERE Link1.source = Link2.source
  AND Link1.protocol = 'ftp'
  AND Link2.protocol = 'ftp'"""


def test_query_1_join_of_two_links_with_the_protocol_filter_pushed_down():
    plan = plan_of(QUERY_1)
    assert tree(plan.root) == (
        "RSTREAM\n"
        "  Join ON Link1.source = Link2.source\n"
        "    Select Link1.protocol = 'ftp'\n"
        "      Window Link1[RANGE 60]\n"
        "    Select Link2.protocol = 'ftp'\n"
        "      Window Link2[RANGE 60]"
    )
    assert plan.aliases == ("Link1", "Link2")
    join = plan.root.child
    assert join.equalities == ((Col(0, "source", "Link1"), Col(1, "source", "Link2")),)
    assert join.filters == ()
    assert plan.root.child.inputs[1].predicate == Cmp("=", Col(1, "protocol", "Link2"), Lit("ftp"))
    assert plan.scans()[0].columns is None  # unbound


def test_query_2_distinct_source_addresses():
    plan = plan_of("SELECT Rstream(DISTINCT source) FROM Link1 [RANGE 60]")
    assert tree(plan.root) == ("RSTREAM\n  Distinct\n    Project Link1.source\n      Window Link1[RANGE 60]")
    assert plan.root.child.child.items == (SelectItem(Col(0, "source", "Link1")),)


QUERY_3 = """SELECT Rstream(*)
FROM Link1 [RANGE 60]
WHERE NOT EXISTS (
  SELECT Rstream(*)
  FROM Link2 [RANGE 60]
  WHERE Link2.source = Link1.source)"""


def test_query_3_negation_on_the_source_address():
    plan = plan_of(QUERY_3)
    assert tree(plan.root) == ("RSTREAM\n  Negation NOT EXISTS ON Link1.source = Link2.source\n    Window Link1[RANGE 60]\n    Window Link2[RANGE 60]")
    neg = plan.root.child
    assert (neg.mode, neg.on) == ("anti", ((Col(0, "source", "Link1"), Col(1, "source", "Link2")),))


QUERY_4 = """SELECT Rstream(*)
FROM Link1 [RANGE 60], Link3 [RANGE 60]
WHERE Link1.source = Link3.source AND Link3.protocol = 'ftp'
  AND NOT EXISTS (SELECT * FROM Link2 [RANGE 60]
                  WHERE Link2.source = Link1.source AND Link2.length > 100)"""


def test_query_4_negation_above_the_join_with_a_third_link():
    plan = plan_of(QUERY_4)
    assert tree(plan.root) == (
        "RSTREAM\n"
        "  Negation NOT EXISTS ON Link1.source = Link2.source\n"
        "    Join ON Link1.source = Link3.source\n"
        "      Window Link1[RANGE 60]\n"
        "      Select Link3.protocol = 'ftp'\n"
        "        Window Link3[RANGE 60]\n"
        "    Select Link2.length > 100\n"
        "      Window Link2[RANGE 60]"
    )
    assert plan.aliases == ("Link1", "Link3", "Link2")
    assert plan.root.child.on == ((Col(0, "source", "Link1"), Col(2, "source", "Link2")),)


# -- Golab's thesis §3.4 examples ---------------------------------------------------------


def test_wstream_keeps_the_last_ten_results_of_a_join():
    plan = plan_of("SELECT Wstream(*)[ROWS 10] FROM Stream1 [RANGE 1 min], Stream2 [RANGE 1 min] WHERE Stream1.a = Stream2.a")
    assert tree(plan.root) == ("WSTREAM[ROWS 10]\n  Join ON Stream1.a = Stream2.a\n    Window Stream1[RANGE 60000]\n    Window Stream2[RANGE 60000]")
    assert (plan.root.kind, plan.root.window, plan.root.restore) == ("wstream", WindowSpec("rows", 10), False)


def test_sum_over_a_count_window_on_the_output_of_an_internal_periodic_sum():
    plan = plan_of("SELECT SUM(X.s) FROM (SELECT SUM(a) AS s FROM Stream1 [RANGE 6 sec SLIDE 6 sec INTERNAL]) [ROWS 10] AS X")
    assert tree(plan.root) == (
        "ISTREAM every 6000\n  Aggregate SUM(X.s)\n    Subquery X[ROWS 10]\n      Aggregate s\n        Window Stream1[RANGE 6000 SLIDE 6000] INTERNAL"
    )
    assert plan.aliases == ("Stream1", "X")
    outer, inner = plan.root.child, plan.root.child.child.child
    assert outer.aggs == (AggCall("sum", Col(1, "s", "X")),)
    assert inner.aggs == (AggCall("sum", Col(0, "a", "Stream1"), alias="s"),)
    assert plan.root.child.child.window == WindowSpec("rows", 10)


def test_rstream_restore_of_a_periodic_join():
    plan = plan_of("SELECT RSTREAM_RESTORE(*) FROM Stream1 [RANGE 1 min SLIDE 10 sec], Stream2 [RANGE 1 min SLIDE 10 sec] WHERE Stream1.a = Stream2.a")
    assert (plan.root.kind, plan.root.restore, plan.root.slide) == ("rstream", True, 10_000)
    assert plan.root.label() == "RSTREAM_RESTORE every 10000"


def test_join_of_internal_windows_needs_no_output_operator():
    plan = plan_of("SELECT * FROM S1 [RANGE 5 INTERNAL], S2 [ROWS 3] INTERNAL WHERE S1.a = S2.a")
    assert [s.window.internal for s in plan.scans()] == [True, True]
    assert plan.root.kind == "istream"


@pytest.mark.parametrize(
    "text, kind, restore",
    [
        ("SELECT ISTREAM * FROM S", "istream", False),
        ("SELECT DSTREAM * FROM S", "dstream", False),
        ("SELECT RSTREAM * FROM S", "rstream", False),
        ("SELECT ISTREAM_RESTORE * FROM S", "istream", True),
        ("SELECT RSTREAM_RESTORE(*) FROM S", "rstream", True),
        ("DSTREAM(SELECT * FROM S)", "dstream", False),
        ("SELECT * FROM S", "istream", False),
        ("SELECT WSTREAM(S.a)[RANGE 5 s] FROM S", "wstream", False),
    ],
)
def test_every_output_operator(text, kind, restore):
    root = plan_of(text).root
    assert (root.kind, root.restore) == (kind, restore)


# -- relations, subqueries, aggregates, set operations ----------------------------------


def test_tables_nrr_by_name_and_retroactive_with_table():
    plan = plan_of("SELECT S.a, r2.b FROM S [RANGE 5], R AS r2, TABLE Q WHERE S.k = r2.k AND S.k = Q.k", tables={"R"})
    assert tree(plan.root) == ("ISTREAM\n  Project S.a, r2.b\n    Join ON S.k = r2.k AND S.k = Q.k\n      Window S[RANGE 5]\n      NRR r2\n      Table Q")
    scans = plan.scans()
    assert [(s.alias, s.source, s.kind, s.window) for s in scans] == [("S", "S", "stream", WindowSpec("range", 5)), ("r2", "R", "nrr", None), ("Q", "Q", "table", None)]
    with pytest.raises(QueryError, match="R is called r2 here"):
        parse_plan("SELECT R.b FROM S, R AS r2", tables={"R"})


def test_join_equalities_filters_and_constant_conditions():
    plan = plan_of("SELECT * FROM S [RANGE 5], R, TABLE Q WHERE S.k = R.k AND S.k = Q.k AND S.x > R.y AND 1 = 1 AND S.z < 3 AND S.w = 'a'", tables={"R"})
    assert tree(plan.root) == (
        "ISTREAM\n"
        "  Select 1 = 1\n"
        "    Join ON S.k = R.k AND S.k = Q.k AND S.x > R.y\n"
        "      Select S.z < 3 AND S.w = 'a'\n"
        "        Window S[RANGE 5]\n"
        "      NRR R\n"
        "      Table Q"
    )
    join = plan.root.child.child
    assert join.filters == (Cmp(">", Col(0, "x", "S"), Col(1, "y", "R")),)
    assert isinstance(join.inputs[0].predicate, And)


def test_group_by_with_every_aggregate():
    plan = plan_of("SELECT S.a AS src, COUNT(*) AS n, COUNT(DISTINCT S.b), SUM(S.c), AVG(S.c), MIN(S.c), MAX(S.c) FROM S [RANGE 10] WHERE S.c > 0 GROUP BY S.a")
    agg = plan.root.child
    assert isinstance(agg, Aggregate)
    assert agg.keys == (SelectItem(Col(0, "a", "S"), "src"),)
    c = Col(0, "c", "S")
    assert agg.aggs == (
        AggCall("count", None, False, "n"),
        AggCall("count", Col(0, "b", "S"), True),
        AggCall("sum", c),
        AggCall("avg", c),
        AggCall("min", c),
        AggCall("max", c),
    )
    assert agg.label() == ("Aggregate n, COUNT(DISTINCT S.b), SUM(S.c), AVG(S.c), MIN(S.c), MAX(S.c) GROUP BY src")
    assert isinstance(agg.child, Select)


def test_group_by_may_name_a_select_alias():
    agg = plan_of("SELECT S.a % 10 AS bucket, COUNT(*) AS n FROM S GROUP BY bucket").root.child
    assert agg.keys == (SelectItem(BinOp("%", Col(0, "a", "S"), Lit(10)), "bucket"),)


def test_select_order_other_than_keys_then_aggregates_adds_a_project():
    plan = plan_of("SELECT COUNT(*) AS n, S.a FROM S [RANGE 10] GROUP BY S.a, S.b")
    assert tree(plan.root) == ("ISTREAM\n  Project n, S.a\n    Aggregate n GROUP BY S.a, S.b\n      Window S[RANGE 10]")
    assert plan.root.child.items == (SelectItem(Col(-1, "n", ""), "n"), SelectItem(Col(-1, "S.a", ""), "S.a"))


def test_having_filters_groups_by_an_aggregate_a_key_or_an_alias():
    plan = plan_of("SELECT S.a, COUNT(*) AS n FROM S [RANGE 10] GROUP BY S.a HAVING COUNT(*) > 2 AND S.a != 0")
    assert tree(plan.root) == ("ISTREAM\n  Select n > 2 AND S.a != 0\n    Aggregate n GROUP BY S.a\n      Window S[RANGE 10]")
    by_alias = plan_of("SELECT S.a, COUNT(*) AS n FROM S [RANGE 10] GROUP BY S.a HAVING n > 2")
    assert by_alias.root.child.predicate == Cmp(">", Col(-1, "n", ""), Lit(2))


def test_having_may_read_an_aggregate_the_select_list_lacks():
    plan = plan_of("SELECT S.a FROM S [RANGE 10] GROUP BY S.a HAVING SUM(S.b) >= 5")
    assert tree(plan.root) == ("ISTREAM\n  Project S.a\n    Select SUM(S.b) >= 5\n      Aggregate SUM(S.b) GROUP BY S.a\n        Window S[RANGE 10]")


@pytest.mark.parametrize(
    "text, message",
    [
        ("SELECT * FROM S [RANGE 5] HAVING S.a > 1", "HAVING without GROUP BY or aggregates"),
        ("SELECT S.a FROM S [RANGE 5] GROUP BY S.a HAVING S.b > 1", "HAVING reads S.b, which is neither a GROUP BY key"),
        ("SELECT S.a FROM S [RANGE 5] WHERE NOT EXISTS (SELECT * FROM T [RANGE 2] WHERE T.a = S.a HAVING COUNT(*) > 1)", "HAVING in a NOT EXISTS subquery"),
    ],
)
def test_having_errors_say_why(text, message):
    with pytest.raises(QueryError, match=message):
        parse_plan(text)


def test_distinct_goes_above_the_aggregate_and_select_distinct_star():
    assert tree(plan_of("SELECT DISTINCT COUNT(*) FROM S GROUP BY S.a").root).splitlines()[1:] == [
        "  Distinct",
        "    Project COUNT(*)",
        "      Aggregate COUNT(*) GROUP BY S.a",
        "        Window S[UNBOUNDED]",
    ]
    assert tree(plan_of("SELECT DISTINCT * FROM S [ROWS 4]").root) == ("ISTREAM\n  Distinct\n    Window S[ROWS 4]")


def test_union_chain_is_one_bag_union_and_except_is_a_bag_difference():
    plan = plan_of("SELECT S.a FROM S [RANGE 5] UNION ALL SELECT T.b FROM T [ROWS 3] UNION SELECT U.c FROM U EXCEPT SELECT V.d FROM V [NOW]")
    assert tree(plan.root) == (
        "ISTREAM\n"
        "  Negation EXCEPT\n"
        "    Union\n"
        "      Project S.a\n"
        "        Window S[RANGE 5]\n"
        "      Project T.b\n"
        "        Window T[ROWS 3]\n"
        "      Project U.c\n"
        "        Window U[UNBOUNDED]\n"
        "    Project V.d\n"
        "      Window V[NOW]"
    )
    neg = plan.root.child
    assert (neg.mode, neg.on) == ("except", ())
    assert isinstance(neg.left, Union) and len(neg.left.inputs) == 3


def test_union_output_operator_given_once():
    plan = plan_of("SELECT RSTREAM S.a FROM S UNION SELECT T.a FROM T")
    assert plan.root.kind == "rstream" and isinstance(plan.root.child, Union)


def test_subquery_in_from_without_window_and_aliases_of_the_whole_query():
    plan = plan_of(
        "SELECT X.a, T.b FROM (SELECT S.a FROM S [RANGE 5] WHERE S.b = 1) AS X, T [RANGE 5] WHERE X.a = T.a AND NOT EXISTS (SELECT * FROM U [RANGE 5] WHERE U.a = T.a)"
    )
    assert plan.aliases == ("S", "X", "T", "U")
    assert tree(plan.root) == (
        "ISTREAM\n"
        "  Project X.a, T.b\n"
        "    Negation NOT EXISTS ON T.a = U.a\n"
        "      Join ON X.a = T.a\n"
        "        Subquery X\n"
        "          Project S.a\n"
        "            Select S.b = 1\n"
        "              Window S[RANGE 5]\n"
        "        Window T[RANGE 5]\n"
        "      Window U[RANGE 5]"
    )
    sub = plan.root.child.child.left.inputs[0]
    assert isinstance(sub, Subquery) and sub.window is None
    assert plan.root.child.child.left.equalities == ((Col(1, "a", "X"), Col(2, "a", "T")),)


def test_unqualified_columns_resolve_to_the_only_input():
    plan = plan_of("SELECT a, COUNT(*) AS n FROM Link1 [RANGE 5] WHERE b > 2 GROUP BY a")
    agg = plan.root.child
    assert agg.keys == (SelectItem(Col(0, "a", "Link1")),)
    assert agg.child.predicate == Cmp(">", Col(0, "b", "Link1"), Lit(2))
    neg = plan_of("SELECT * FROM A WHERE NOT EXISTS (SELECT * FROM B WHERE x = A.y)").root.child
    assert neg.on == ((Col(0, "y", "A"), Col(1, "x", "B")),)


def test_multiple_not_exists_stack_in_where_order():
    plan = plan_of("SELECT * FROM A [RANGE 5] WHERE NOT EXISTS (SELECT * FROM B WHERE B.k = A.k) AND A.x = 1 AND NOT EXISTS (SELECT * FROM C WHERE C.k = A.k)")
    assert [n.label() for n in walk(plan.root) if isinstance(n, (Negation, Select))] == [
        "Negation NOT EXISTS ON A.k = C.k",
        "Negation NOT EXISTS ON A.k = B.k",
        "Select A.x = 1",
    ]


def shown_conditions(plan: Plan) -> list:
    return [e for n in walk(plan.root) for e in ([n.predicate] if isinstance(n, Select) else list(n.filters) if isinstance(n, Join) else [])]


def test_labels_round_trip_through_the_parser():
    """Every condition an explain line shows parses back to the same expression."""
    plan = plan_of(QUERY_4.replace("'ftp'", "'ftp' AND ((Link3.x + 1) * 2 <> -Link1.y OR NOT (Link1.z >= 2)) AND Link3.s != 'it''s' AND ABS(Link1.q % 3) / 2 < 1.5"))
    shown = shown_conditions(plan)
    assert len(shown) == 4
    for expr in shown:
        again = plan_of(f"SELECT * FROM Link1, Link3, Link2 WHERE {expr}")
        assert " AND ".join(map(str, shown_conditions(again))) == str(expr)
        assert shown_conditions(again) == [expr]


# -- parse_any routing and parse() -----------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "SELECT * FROM S1 [RANGE 5], S2 [ROWS 3] WHERE S1.a = S2.a",
        "SELECT ISTREAM S1.a FROM S1",
        "SELECT ISTREAM_RESTORE * FROM S1 [RANGE 5 SLIDE 1]",
        "ISTREAM(SELECT * FROM S1 [RANGE 5 INTERNAL])",
    ],
)
def test_parse_any_keeps_the_join_query_path_for_plain_queries(text):
    got = parse_any(text)
    assert isinstance(got, JoinQuery) and got == parse(text)


@pytest.mark.parametrize(
    "text",
    [
        "SELECT RSTREAM * FROM S1",
        "SELECT DSTREAM * FROM S1",
        "SELECT DISTINCT S1.a FROM S1",
        "SELECT COUNT(*) FROM S1",
        "SELECT SUM(S1.a) FROM S1",
        "SELECT S1.a FROM S1 GROUP BY S1.a",
        "SELECT * FROM S1 UNION SELECT * FROM S2",
        "SELECT * FROM S1 EXCEPT SELECT * FROM S2",
        "SELECT * FROM S1 WHERE NOT EXISTS (SELECT * FROM S2 WHERE S2.a = S1.a)",
        "SELECT * FROM TABLE R1",
        "SELECT * FROM S1, R WHERE S1.a = R.a",
        "SELECT * FROM (SELECT * FROM S1) AS X",
        "SELECT WSTREAM(*)[ROWS 5] FROM S1",
        "SELECT RSTREAM_RESTORE * FROM S1 [RANGE 5 SLIDE 1]",
    ],
)
def test_parse_any_returns_a_plan_for_general_queries(text):
    assert isinstance(parse_any(text, tables={"R"}), Plan)


def test_parse_plan_of_a_plain_query_is_a_plan_too():
    plan = parse_plan("SELECT S1.a FROM S1 [RANGE 5], S2 WHERE S1.a = S2.a")
    assert tree(plan.root) == ("ISTREAM\n  Project S1.a\n    Join ON S1.a = S2.a\n      Window S1[RANGE 5]\n      Window S2[UNBOUNDED]")


def test_parse_points_general_queries_to_parse_plan():
    with pytest.raises(QueryError) as info:
        parse("SELECT RSTREAM(DISTINCT S.a) FROM S [RANGE 5]")
    e = info.value
    assert "uses DISTINCT" in e.message and "parse_plan" in e.hint
    assert (e.line, e.column) == (1, 16)


def test_parse_any_syntax_errors_list_the_full_dialect():
    with pytest.raises(QueryError) as info:
        parse_any("SELECT * FROM S1 [RANGE 5] WHER S1.a = 2")
    assert info.value.hint == "did you mean WHERE? a word right after a FROM item is read as its alias"
    assert (info.value.line, info.value.column) == (1, 28)
    with pytest.raises(QueryError) as info:
        parse_any("SELECT")
    assert info.value.hint == "expected one of: DISTINCT, an output operator such as ISTREAM, an expression, '*'"


def test_load_any_reads_a_query_file(tmp_path):
    path = tmp_path / "q3.cql"
    path.write_text(QUERY_3, encoding="utf-8")
    assert isinstance(load_any(path), Plan)
    assert isinstance(load_any("SELECT * FROM S1, R WHERE S1.a = R.a", tables={"R"}), Plan)
    path.write_text("SELECT * FROM S [RANGE 5]\nWHERE COUNT(*) > 1", encoding="utf-8")
    with pytest.raises(QueryError) as info:
        load_any(path)
    assert info.value.location == f"query file {path}, line 2, column 7"


# -- errors that explain why --------------------------------------------------------------

ERRORS = [
    (
        "window_over_distinct",
        "SELECT * FROM (SELECT DISTINCT S.a FROM S [RANGE 5]) [RANGE 5] AS X",
        ["window over DISTINCT's output", "duplicates or expired rows", "§3.3.3"],
        (1, 54),
    ),
    (
        "window_over_external",
        "SELECT * FROM (SELECT S.a FROM S [RANGE 5]) [RANGE 5] AS X",
        ["append-only", "S[RANGE 5]", "external window", "§3.3.3", "INTERNAL"],
        (1, 45),
    ),
    (
        "window_over_negation",
        "SELECT * FROM (SELECT * FROM S [RANGE 5 INTERNAL] WHERE NOT EXISTS (SELECT * FROM T WHERE T.a = S.a)) [ROWS 5] AS X",
        ["output of NOT EXISTS", "§3.3.3"],
        (1, 103),
    ),
    ("window_over_table", "SELECT * FROM (SELECT * FROM TABLE Q) [ROWS 5] AS X", ["TABLE Q", "retroactive"], (1, 39)),
    ("internal_under_distinct", "SELECT DISTINCT S.a FROM S [RANGE 5 INTERNAL]", ["INTERNAL window on S under DISTINCT", "violates their semantics", "§3.3.2"], (1, 37)),
    ("internal_after_brackets", "SELECT DISTINCT S.a FROM S [RANGE 5] INTERNAL", ["under DISTINCT"], (1, 38)),
    (
        "internal_under_not_exists",
        "SELECT * FROM S [RANGE 5] WHERE NOT EXISTS (SELECT * FROM T [RANGE 5 INTERNAL] WHERE T.a = S.a)",
        ["on T under NOT EXISTS", "§3.3.2"],
        (1, 70),
    ),
    ("internal_under_except", "SELECT S.a FROM S [RANGE 5] EXCEPT SELECT T.a FROM T [ROWS 5 INTERNAL]", ["under EXCEPT"], (1, 62)),
    ("wstream_restore", "SELECT WSTREAM_RESTORE(*)[ROWS 10] FROM S [RANGE 5 SLIDE 1]", ["WSTREAM has no restore form", "periodic re-evaluation", "§3.4"], (1, 8)),
    ("wstream_over_distinct", "SELECT WSTREAM(DISTINCT S.a)[ROWS 10] FROM S [RANGE 5]", ["WSTREAM over the output of DISTINCT", "§3.3.3"], (1, 8)),
    ("wstream_over_negation", "SELECT WSTREAM(*)[ROWS 10] FROM S WHERE NOT EXISTS (SELECT * FROM T WHERE T.a = S.a)", ["WSTREAM over the output of NOT EXISTS"], (1, 8)),
    ("wstream_without_window", "SELECT WSTREAM * FROM S", ["WSTREAM needs a window"], (1, 8)),
    ("window_on_table", "SELECT * FROM TABLE Q [RANGE 5]", ["TABLE Q", "takes no window"], (1, 23)),
    ("window_on_nrr", "SELECT * FROM R [ROWS 5]", ["R is a table", "takes no window"], (1, 17)),
    ("not_grouped", "SELECT S.a, S.b, COUNT(*) FROM S [RANGE 5] GROUP BY S.a", ["S.b is neither aggregated nor in GROUP BY", "no single value"], (1, 13)),
    ("not_grouped_no_group_by", "SELECT S.a, COUNT(*) FROM S", ["neither aggregated nor in GROUP BY"], (1, 8)),
    ("star_group_by", "SELECT * FROM S GROUP BY S.a", ["SELECT * with GROUP BY"], (1, 17)),
    ("aggregate_in_where", "SELECT * FROM S [RANGE 5] WHERE COUNT(*) > 5", ["aggregate COUNT in WHERE", "before any group exists"], (1, 33)),
    ("aggregate_in_group_by", "SELECT COUNT(*) FROM S GROUP BY MAX(S.a)", ["aggregate MAX in GROUP BY"], (1, 33)),
    ("aggregate_in_expression", "SELECT SUM(S.a) + 1 FROM S", ["inside an expression"], (1, 8)),
    ("nested_aggregate", "SELECT SUM(MAX(S.a)) FROM S", ["inside another aggregate"], (1, 12)),
    ("sum_star", "SELECT SUM(*) FROM S", ["only COUNT(*) counts rows"], (1, 8)),
    ("different_slides", "SELECT * FROM S [RANGE 5 SLIDE 2], T [RANGE 5 SLIDE 3]", ["different SLIDE intervals [2, 3]"], (1, 47)),
    (
        "different_slides_in_subquery",
        "SELECT * FROM S [RANGE 5 SLIDE 2], (SELECT COUNT(*) AS n FROM T [RANGE 5 SLIDE 3 INTERNAL]) [ROWS 2] AS X",
        ["different SLIDE"],
        (1, 74),
    ),
    ("union_arity", "SELECT S.a, S.b FROM S UNION SELECT T.a FROM T", ["UNION inputs have different numbers of columns: 2 and 1"], (1, 24)),
    ("except_arity", "SELECT S.a FROM S EXCEPT SELECT COUNT(*), T.a FROM T GROUP BY T.a", ["EXCEPT inputs have different numbers of columns: 1 and 2"], (1, 19)),
    ("unknown_correlation_alias", "SELECT * FROM S [RANGE 5] WHERE NOT EXISTS (SELECT * FROM T WHERE T.a = U.a)", ["unknown alias 'U'"], (1, 73)),
    ("non_equality_correlation", "SELECT * FROM S WHERE NOT EXISTS (SELECT * FROM T WHERE T.a > S.a)", ["mixes the outer query in"], (1, 57)),
    ("duplicate_alias", "SELECT S.a FROM S UNION SELECT S.a FROM S", ["alias 'S' names two inputs"], (1, 41)),
    ("alias_inside_subquery", "SELECT X.a FROM (SELECT * FROM S) AS X WHERE S.a = 1", ["unknown alias 'S'"], (1, 46)),
    ("unqualified_many_inputs", "SELECT a FROM S, T", ["unqualified column 'a' in a query over 2 inputs"], (1, 8)),
    ("exists_without_not", "SELECT * FROM S WHERE EXISTS (SELECT * FROM T)", ["only be used as NOT EXISTS"], (1, 23)),
    ("not_exists_under_or", "SELECT * FROM S WHERE S.a = 1 OR NOT EXISTS (SELECT * FROM T)", ["a conjunct of WHERE"], (1, 38)),
    ("output_in_subquery", "SELECT * FROM (SELECT DSTREAM * FROM S) AS X", ["DSTREAM inside a subquery"], (1, 23)),
    ("unnamed_subquery", "SELECT * FROM (SELECT * FROM S)", ["subquery in FROM needs a name"], (1, 15)),
    ("union_outputs_differ", "SELECT RSTREAM(*) FROM S UNION SELECT DSTREAM(*) FROM T", ["different output operators"], (1, 39)),
    ("window_after_rstream", "SELECT RSTREAM(*)[ROWS 5] FROM S", ["only WSTREAM takes a window"], (1, 18)),
]


@pytest.mark.parametrize("text, words, where", [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_errors_explain_why_and_where(text, words, where):
    with pytest.raises(QueryError) as info:
        parse_plan(text, tables={"R"})
    e = info.value
    for w in words:
        assert w in str(e)
    assert (e.line, e.column) == where
    assert e.hint and e.excerpt.endswith("^")


def test_window_over_distinct_hint_and_caret():
    with pytest.raises(QueryError) as info:
        parse_plan("SELECT *\nFROM (SELECT DISTINCT S.a FROM S [RANGE 5])\n     [RANGE 5] AS X")
    assert str(info.value) == (
        "query line 3, column 6: a window over DISTINCT's output would hold duplicates or expired rows "
        "(Golab's thesis §3.3.3) (hint: drop the window on the subquery, or DISTINCT inside it)\n"
        "     [RANGE 5] AS X\n"
        "     ^"
    )


_WORDS = [
    "SELECT",
    "DISTINCT",
    "RSTREAM(",
    "WSTREAM(",
    "*",
    "FROM",
    "S1",
    "S2",
    "a",
    "S1.a",
    "[",
    "]",
    "RANGE",
    "ROWS",
    "5",
    "INTERNAL",
    "AS",
    "X",
    ",",
    "WHERE",
    "AND",
    "NOT",
    "EXISTS",
    "(",
    ")",
    "=",
    "COUNT",
    "SUM",
    "GROUP",
    "BY",
    "UNION",
    "ALL",
    "EXCEPT",
    "TABLE",
]


@given(st.lists(st.sampled_from(_WORDS), max_size=16).map(" ".join))
def test_token_soup_raises_only_query_errors(text):
    try:
        parse_any(text)
    except QueryError as e:
        assert e.message and "Token(" not in str(e) and "$END" not in str(e)


def test_plan_nodes_used():  # every node type of plan.logical is reachable from the parser
    plans = [
        plan_of(t) for t in (QUERY_1, QUERY_4, "SELECT DISTINCT a FROM S UNION SELECT b FROM T", "SELECT COUNT(*) FROM (SELECT * FROM R) AS X", "SELECT * FROM TABLE Q")
    ]
    kinds = {type(n) for p in plans for n in walk(p.root)}
    assert {Scan, Select, Project, Join, Union, Distinct, Negation, Aggregate, Subquery, Output} <= kinds
