"""Types at binding time (plan/types.py, plan/bind.py) and NULL on division by zero (plan/expr.py).

Typing rules and casts are unit-tested on both binders (select–project–join
queries and general plans); every type error message is pinned; the NULL
semantics of ``/`` and ``%`` are checked columnar, per row and per tuple, and
the engines against both oracles on streams whose divisors are often 0.
"""

from __future__ import annotations

import math
import warnings
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import slidewise
from slidewise.cql import parse, parse_plan
from slidewise.errors import PlanError, QueryError
from slidewise.operators.select import row_function
from slidewise.plan.bind import bind, bind_query
from slidewise.plan.expr import And, BinOp, Cmp, Col, Func, Lit, Not, Or, arithmetic, evaluate
from slidewise.plan.logical import Select, walk
from slidewise.plan.types import Typer
from slidewise.runtime.plan_engine import execute_plan
from tests.oracle import oracle
from tests.oracle_plans import PlanOracle
from tests.streams import build_tuples, raw_streams

KINDS = {"a": "int", "f": "float", "b": "str", "k": "int", "flag": "bool"}
S1 = Col(0, "a", "S1")


def typed(expr):
    return Typer(lambda c: KINDS.get(c.attr)).typed(expr)


# ---------------------------------------------------------------- typing rules


@pytest.mark.parametrize(
    "expr, want, kind",
    [
        (Cmp("=", Col(0, "a", "S1"), Lit("1")), "S1.a = 1", "bool"),
        (Cmp("<", Col(0, "f", "S1"), Lit(" 2.5 ")), "S1.f < 2.5", "bool"),
        (Cmp("=", Col(0, "b", "S1"), Lit(3)), "S1.b = '3'", "bool"),
        (Cmp("!=", Lit(3), Col(0, "b", "S1")), "'3' != S1.b", "bool"),
        (Cmp("<", Col(0, "a", "S1"), Col(0, "f", "S1")), "S1.a < S1.f", "bool"),  # numbers compare
        (Cmp("=", Col(0, "flag", "S1"), Lit(1)), "S1.flag = 1", "bool"),
        (Cmp("!=", Col(0, "flag", "S1"), Lit("True ")), "S1.flag != True", "bool"),
        (BinOp("+", Col(0, "a", "S1"), Lit("1")), "(S1.a + 1)", "int"),
        (BinOp("*", Col(0, "a", "S1"), Col(0, "f", "S1")), "(S1.a * S1.f)", "float"),
        (BinOp("/", Col(0, "a", "S1"), Lit(2)), "(S1.a / 2)", "float"),
        (BinOp("%", Col(0, "a", "S1"), Lit(2)), "(S1.a % 2)", "int"),
        (BinOp("%", Col(0, "a", "S1"), Lit(0)), "(S1.a % 0)", "float"),  # NULL: float
        (BinOp("%", Col(0, "a", "S1"), Col(0, "k", "S1")), "(S1.a % S1.k)", "float"),  # may be NULL
        (Cmp(">", Col(0, "ts", "S1"), Lit("5")), "S1.ts > 5", "bool"),
        (Not(Or((Cmp("=", Col(0, "b", "S1"), Lit(1)), Cmp("=", Col(0, "a", "S1"), Lit("2"))))), "NOT ((S1.b = '1' OR S1.a = 2))", "bool"),
    ],
)
def test_literals_take_the_kind_they_meet(expr, want, kind):
    got, got_kind = typed(expr)
    assert (str(got), got_kind) == (want, kind)


def test_unknown_kinds_are_not_checked():
    expr = Cmp(">", Col(0, "zz", "S1"), Lit("x"))
    assert Typer(lambda c: None).typed(expr)[0] == expr


def test_a_cast_keeps_the_position_and_the_output_name():
    q = bind_query(parse("SELECT S1.a + '1', S1.b FROM S1 [RANGE 5] WHERE S1.a = '1'"), [{"a": "int", "b": "str"}])
    assert str(q.filters[0]) == "S1.a = 1" and q.filters[0].right.pos == (1, 56)
    assert [i.name for i in q.select] == ["(S1.a + '1')", "S1.b"] and str(q.select[0].expr) == "(S1.a + 1)"


def test_bind_query_is_the_identity_when_nothing_is_cast():
    q = parse("SELECT * FROM S1 [RANGE 5], S2 [NOW] WHERE S1.a = S2.a AND S1.b = 'x'")
    assert bind_query(q, [{"a": "int", "b": "str"}, {"a": "float"}]) is q
    assert bind_query(q, [["a", "b"], ["a"]]) is q  # names only: nothing typed


def test_plans_are_typed_through_projections_and_aggregates():
    p = parse_plan("SELECT DISTINCT X.n FROM (SELECT S1.b AS n, COUNT(*) AS c FROM S1 [RANGE 5] GROUP BY S1.b) AS X WHERE X.n = 3 AND X.c > '1'")
    bound = bind(p, {"S1": {"a": "int", "b": "str"}})
    preds = [str(n.predicate) for n in walk(bound.root) if isinstance(n, Select)]
    assert preds == ["X.n = '3' AND X.c > 1"]
    with pytest.raises(PlanError, match=r"cannot order X.n \(text\) against 3 \(integer\)"):
        bind(parse_plan("SELECT DISTINCT X.n FROM (SELECT S1.b AS n FROM S1 [RANGE 5]) AS X WHERE X.n > 3"), {"S1": {"a": "int", "b": "str"}})


def test_plans_bound_with_names_only_are_not_typed():
    p = parse_plan("SELECT DISTINCT S1.a FROM S1 [RANGE 5] WHERE S1.a = '1'")
    assert "S1.a = '1'" in [str(n.predicate) for n in walk(bind(p, {"S1": ["ts", "a"]}).root) if isinstance(n, Select)]


# ---------------------------------------------------------------- pinned messages

JOIN = [
    (
        "text_vs_int_column",
        "SELECT * FROM S1 [RANGE 5], S2 [RANGE 5] WHERE S1.b = S2.a + 1",
        "query line 1, column 48: cannot compare S1.b (text) with (S2.a + 1) (integer) (hint: text and "
        "numbers never compare (a column is text when a value in its source is not a number); CAST(S1.b AS "
        "DOUBLE) compares as numbers, CAST((S2.a + 1) AS TEXT) as text)",
    ),
    (
        "join_key",
        "SELECT * FROM S1 [RANGE 5], S2 [RANGE 5]\nWHERE S1.b = S2.a",
        "query line 2, column 7: join keys S1.b (text) and S2.a (integer) have different types (hint: a text "
        "value never equals a number (a column is text when a value in its source is not a number); give both "
        "columns one type in their sources, or compare CAST(S1.b AS BIGINT) = S2.a (a filter, slower than a "
        "join key))",
    ),
    (
        "not_a_number",
        "SELECT * FROM S1 [RANGE 5] WHERE S1.a = 'abc'",
        "query line 1, column 34: cannot compare S1.a (integer) with 'abc' (text): 'abc' is not a number "
        "(hint: compare S1.a with a number, e.g. S1.a = 1, or CAST(S1.a AS TEXT) = 'abc' to compare text)",
    ),
    (
        "order_text_by_number",
        "SELECT * FROM S1 [RANGE 5] WHERE S1.b > 3",
        "query line 1, column 34: cannot order S1.b (text) against 3 (integer) (hint: text orders character "
        "by character ('10' < '9'); write S1.b > '3' to compare text, or CAST(S1.b AS DOUBLE) > 3 to compare "
        "numbers)",
    ),
    (
        "arithmetic_on_text",
        "SELECT S1.b + 1 FROM S1 [RANGE 5]",
        "query line 1, column 8: cannot compute S1.b (text) + 1 (integer): '+' needs numbers (hint: a column "
        "is text when a value in its source is not a number; CAST(S1.b AS DOUBLE) is its number (NULL where "
        "it is none))",
    ),
    (
        "abs_of_text",
        "SELECT * FROM S1 [RANGE 5] WHERE ABS(S1.b) < 2",
        "query line 1, column 34: ABS needs a number, got S1.b (text) (hint: a column is text when a value in "
        "its source is not a number; CAST(S1.b AS DOUBLE) is its number (NULL where it is none))",
    ),
]


@pytest.mark.parametrize("name, text, message", JOIN, ids=[j[0] for j in JOIN])
def test_type_errors_name_both_sides_and_the_position(name, text, message):
    with pytest.raises(PlanError) as e:
        bind_query(parse(text), [{"a": "int", "b": "str"}, {"a": "int"}])
    assert str(e.value) == message


def test_plan_type_errors_are_the_same_messages():
    with pytest.raises(PlanError) as e:
        bind(parse_plan("SELECT DISTINCT S1.a FROM S1 [RANGE 5] WHERE S1.a = 'abc'"), {"S1": {"a": "int"}})
    assert str(e.value) == (
        "query line 1, column 46: cannot compare S1.a (integer) with 'abc' (text): 'abc' "
        "is not a number (hint: compare S1.a with a number, e.g. S1.a = 1, or CAST(S1.a AS TEXT) = 'abc' "
        "to compare text)"
    )
    with pytest.raises(PlanError) as e:
        bind(
            parse_plan("SELECT DISTINCT S1.a FROM S1 [RANGE 5] WHERE NOT EXISTS (SELECT * FROM S2 [RANGE 5] WHERE S2.b = S1.a)"), {"S1": {"a": "int"}, "S2": {"b": "str"}}
        )
    assert str(e.value).startswith("query line 1, column 98: NOT EXISTS columns S1.a (integer) and S2.b (text) have different types")
    with pytest.raises(PlanError, match=r"^query line 1, column 60: join keys S1.a \(integer\) and S2.b \(text\)"):
        bind(parse_plan("SELECT DISTINCT S1.a FROM S1 [RANGE 5], S2 [RANGE 5] WHERE S1.a = S2.b"), {"S1": {"a": "int"}, "S2": {"b": "str"}})


# ---------------------------------------------------------------- NULL on division by zero


def _get(values):
    return lambda s, a: values[a]


def test_division_and_modulo_by_zero_are_null_columnar_without_a_warning():
    cols = {"a": np.array([7, 7, -7, 0]), "k": np.array([2, 0, 0, 0])}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        div = evaluate(BinOp("/", Col(0, "a"), Col(0, "k")), _get(cols))
        mod = evaluate(BinOp("%", Col(0, "a"), Col(0, "k")), _get(cols))
        by_lit = evaluate(BinOp("%", Col(0, "a"), Lit(0)), _get(cols))
    assert div[0] == 3.5 and np.isnan(div[1:]).all()
    assert mod.dtype == np.float64 and mod[0] == 1 and np.isnan(mod[1:]).all()
    assert np.isnan(by_lit).all()
    assert evaluate(BinOp("%", Col(0, "a"), Lit(3)), _get(cols)).tolist() == [1, 1, 2, 0]  # int stays int


def test_three_valued_logic_columnar():
    cols = {"a": np.array([4, 4, 0]), "k": np.array([2, 0, 1])}
    gt = Cmp(">", BinOp("/", Col(0, "a"), Col(0, "k")), Lit(1))  # true, unknown, false
    eq = Cmp("=", Col(0, "a"), Lit(4))  # true, true, false
    assert evaluate(gt, _get(cols)).tolist() == [True, False, False]
    assert evaluate(Not(gt), _get(cols)).tolist() == [False, False, True]
    assert evaluate(Not(Not(gt)), _get(cols)).tolist() == [True, False, False]
    assert evaluate(Or((Not(gt), eq)), _get(cols)).tolist() == [True, True, True]
    assert evaluate(Not(And((gt, eq))), _get(cols)).tolist() == [False, False, True]
    assert evaluate(Not(Cmp("!=", Col(0, "b"), Lit("x"))), _get({"b": np.array(["x", None], object)})).tolist() == [True, False]


@pytest.mark.parametrize("a, k", [(4, 2), (4, 0), (0, 1), (0, 0)])
def test_per_tuple_and_per_row_paths_agree_with_the_columnar_one(a, k):
    schema = ("S1.a", "S1.k")
    exprs = [
        Cmp(">", BinOp("/", Col(0, "a", "S1"), Col(0, "k", "S1")), Lit(1)),
        Not(Cmp("=", BinOp("%", Col(0, "a", "S1"), Col(0, "k", "S1")), Lit(0))),
        Or((Not(Cmp("<", BinOp("/", Col(0, "a", "S1"), Col(0, "k", "S1")), Lit(3))), Cmp("=", Col(0, "a", "S1"), Lit(0)))),
    ]
    for expr in exprs:
        columnar = bool(evaluate(expr, _get({"a": np.array([a]), "k": np.array([k])}))[0])
        scalar = bool(evaluate(expr, _get({"a": a, "k": k})))
        row = bool(row_function(expr, schema, ("S1",))((a, k)))
        assert columnar == scalar == row, expr
    assert math.isnan(arithmetic("/", a, 0)) and math.isnan(row_function(BinOp("%", Col(0, "a", "S1"), Lit(0)), schema, ("S1",))((a, k)))


# ---------------------------------------------------------------- engines vs oracles, divisors often 0

JOIN_QUERIES = [
    "SELECT * FROM S1 [RANGE 3], S2 [RANGE 3] WHERE S1.a = S2.a AND NOT (S1.x / S2.b > 1)",
    "SELECT * FROM S1 [RANGE 3], S2 [ROWS 2] WHERE S1.a = S2.a AND (S1.x % S2.b = 0 OR NOT (S2.x / S1.a < 2))",
    "SELECT * FROM S1 [RANGE 2], S2 [RANGE 2] WHERE NOT (S1.x % S1.a = 1 AND S2.b / S2.a >= 1)",
]


def _frames(rows):
    tuples = build_tuples(rows)
    frames = {}
    for i, name in enumerate(("S1", "S2")):
        mine = [t for t in tuples if t.stream == i]
        frames[name] = pd.DataFrame({"ts": [t.ts for t in mine], **{c: [t.vals[c] for t in mine] for c in ("a", "b", "x")}}, dtype="int64")
    return tuples, frames


@settings(max_examples=25)
@given(rows=raw_streams(2), q=st.sampled_from(JOIN_QUERIES), algorithm=st.sampled_from([None, "nlj", "hash"]))
def test_join_engine_matches_the_oracle_on_null_divisions(rows, q, algorithm):
    query = parse(q)
    tuples, frames = _frames(rows)
    if algorithm == "hash" and not query.equalities:
        algorithm = None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = slidewise.run(query, frames, algorithm=algorithm)
    assert got.stats["results"] == sum(oracle(query, tuples).values())


PLAN_QUERIES = [
    "SELECT DISTINCT S1.a, S1.x / S1.b AS r FROM S1 [RANGE 3] WHERE NOT (S1.x % S1.b = 1)",
    "SELECT S1.a, COUNT(*) AS n FROM S1 [RANGE 3], S2 [RANGE 3] WHERE S1.a = S2.a AND NOT (S2.x / S1.b < 2) GROUP BY S1.a",
]


def _null_free(counter):
    return Counter({(t, tuple(None if isinstance(v, float) and math.isnan(v) else v for v in vals), s): m for (t, vals, s), m in counter.items()})


@settings(max_examples=25)
@given(rows=raw_streams(2), q=st.sampled_from(PLAN_QUERIES))
def test_plan_engine_matches_the_plan_oracle_on_null_divisions(rows, q):
    _, frames = _frames(rows)
    plan = parse_plan(q)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = execute_plan(plan, frames, collect=True).results
    cols = list(bind(plan, {n: ["ts", "a", "b", "x"] for n in frames}).root.schema)
    got = Counter(
        (int(t), tuple(v.item() if hasattr(v, "item") else v for v in vals), int(s))
        for vals, t, s in zip(res[cols].itertuples(index=False, name=None), res["ts"], res["sign"])
    )
    want = PlanOracle(bind(plan, {n: {"a": "int", "b": "int", "x": "int"} for n in frames}), frames)
    assert _null_free(got) == _null_free(want.expected_output())


@pytest.mark.parametrize("value, want", [(None, False), (float("nan"), False), ("x", False), ("y", True)])
def test_scalar_null_in_a_condition_is_unknown(value, want):
    cond = Not(Cmp("=", Col(0, "b", "S1"), Lit("x")))
    assert bool(evaluate(cond, _get({"b": value}))) is want
    assert bool(row_function(cond, ("S1.b",), ("S1",))((value,))) is want


# ---------------------------------------------------------------- CAST


def test_cast_parses_prints_back_and_types():
    q = parse("SELECT CAST(S1.a AS text), Cast(S1.b AS BigInt) FROM S1 [RANGE 5], S2 [NOW] WHERE CAST(S1.b AS DOUBLE) = S2.a AND CAST(S2.a AS STRING) = 'x'")
    assert [str(i.expr) for i in q.select] == ["CAST(S1.a AS TEXT)", "CAST(S1.b AS INT)"]
    assert parse(f"SELECT * FROM S1 [RANGE 5], S2 [NOW] WHERE {q.filters[0]}").filters == q.filters[:1]
    typed = bind_query(q, [{"a": "int", "b": "str"}, {"a": "int"}])
    assert [str(f) for f in typed.filters] == ["CAST(S1.b AS DOUBLE) = S2.a", "CAST(S2.a AS TEXT) = 'x'"]
    with pytest.raises(PlanError, match=r"cannot order CAST\(S1.a AS TEXT\) \(text\) against 3"):
        bind_query(parse("SELECT * FROM S1 [RANGE 5] WHERE CAST(S1.a AS TEXT) > 3"), [{"a": "int"}])


CAST_ERRORS = [
    (
        "SELECT ABS(S1.a AS INT) FROM S1",
        "query line 1, column 8: ABS takes no AS; only CAST does (hint: write CAST(expr AS INT), "
        "CAST(expr AS DOUBLE) or CAST(expr AS TEXT))\n"
        "SELECT ABS(S1.a AS INT) FROM S1\n"
        "       ^",
    ),
    (
        "SELECT CAST(S1.a AS DATE) FROM S1",
        "query line 1, column 21: unknown type 'DATE' in CAST (hint: use one of INT, BIGINT, DOUBLE, FLOAT, "
        "TEXT, STRING)\n"
        "SELECT CAST(S1.a AS DATE) FROM S1\n"
        "                    ^",
    ),
]


@pytest.mark.parametrize("text, message", CAST_ERRORS)
def test_cast_syntax_errors(text, message):
    with pytest.raises(QueryError) as e:
        parse(text)
    assert str(e.value) == message
    with pytest.raises(QueryError) as e:
        parse_plan(text.replace("SELECT", "SELECT DISTINCT"))
    assert message.split(" (hint")[0].split(": ", 1)[1] in str(e.value)


@pytest.mark.parametrize(
    "kind, values, want",
    [
        ("int", np.array(["1", " 2.7 ", "x", None], object), [1.0, 2.0, None, None]),
        ("float", np.array(["-1.5", "1e3", ""], object), [-1.5, 1000.0, None]),
        ("int", np.array([1.9, -1.9, np.nan]), [1.0, -1.0, None]),
        ("int", np.array([True, False]), [1, 0]),
        ("str", np.array([1, 20]), ["1", "20"]),
        ("str", np.array([1.5, np.nan]), ["1.5", None]),
        ("float", np.array([3, 4]), [3.0, 4.0]),
    ],
)
def test_cast_is_the_same_columnar_per_tuple_and_per_row(kind, values, want):
    expr = Func("cast", (Col(0, "v", "S1"), Lit(kind)))

    def norm(xs):
        return [None if x is None or (isinstance(x, float) and math.isnan(x)) else x for x in xs]

    assert norm(evaluate(expr, _get({"v": values})).tolist()) == want
    assert norm([evaluate(expr, _get({"v": v})) for v in values.tolist()]) == want
    assert norm([row_function(expr, ("S1.v",), ("S1",))((v,)) for v in values.tolist()]) == want


def test_cast_of_fixed_width_numpy_text():
    """The Spark bucket path hands text columns over as numpy str arrays, not object arrays."""
    values = np.array(["1", "x", "2.5"])
    got = evaluate(Func("cast", (Col(0, "v", "S1"), Lit("int"))), _get({"v": values}))
    assert got[0] == 1 and np.isnan(got[1]) and got[2] == 2
    assert evaluate(Func("cast", (Col(0, "v", "S1"), Lit("str"))), _get({"v": values})) is values
    assert evaluate(Not(Cmp("=", Col(0, "v", "S1"), Lit("x"))), _get({"v": values})).tolist() == [True, False, True]
