"""APPROX_COUNT_DISTINCT and APPROX_QUANTILE (Apache DataSketches HLL and KLL) against recomputation.

The pane path's estimates are within the sketches' documented error bounds of
the exact answer over the window contents: a distinct count within
:func:`~slidewise.operators.aggregates.sketches.count_error` (3 standard errors)
of the true count, a quantile a value of the window whose rank is within
:func:`~slidewise.operators.aggregates.sketches.rank_error` of ``p``. HLL is
deterministic; KLL flips coins when it compacts (more than ``k`` values), so
there the check is the 99 %-confidence bound, which the tests' windows stay
far inside. The per-tuple plan answers exactly (a sketch cannot delete), which
equals the oracle.
"""

from __future__ import annotations

import math
import sys
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

from slidewise.cql import parse_plan
from slidewise.errors import OptionError, PlanError, QueryError
from slidewise.operators.aggregates import REGISTRY, ApproxCountDistinct, ApproxQuantile, accumulator
from slidewise.operators.aggregates.sketches import count_error, rank_error
from slidewise.optimizer.pane_plan import match
from slidewise.plan.bind import bind
from slidewise.runtime.plan_engine import execute_plan
from slidewise.synopses import SYNOPSES
from tests.oracle_plans import expected_output
from tests.test_sliding_aggregate import rows, streams


def count_ok(estimate: int, exact: int) -> bool:
    return abs(estimate - exact) <= count_error() * exact


def rank_ok(q: float, xs, p: float) -> bool:
    """``q`` is a value of ``xs`` whose rank (ties: any of theirs) is within the rank error of ``p``."""
    xs = np.sort(np.asarray(xs, np.float64))
    n, eps = len(xs), rank_error()
    below, upto = np.searchsorted(xs, q, "left"), np.searchsorted(xs, q, "right")
    return upto > below and below / n - eps <= p <= upto / n + eps


def test_registry_and_sketch_parameters():
    assert REGISTRY["approx_count_distinct"] is ApproxCountDistinct and REGISTRY["approx_quantile"] is ApproxQuantile
    assert not ApproxCountDistinct.subtractable and not ApproxQuantile.subtractable
    assert 0.04 < count_error() < 0.05 and 0.013 < rank_error() < 0.014  # lg_k 12, 3 standard errors; k 200, 99 %


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_sketches_over_the_interval_synopses_are_within_their_bounds(data):
    panes, groups, n = data.draw(st.integers(1, 12)), data.draw(st.integers(1, 3)), data.draw(st.sampled_from([0, 5, 60, 900, 3000]))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    pane, group = rng.integers(0, panes, n), rng.integers(0, groups, n)
    values = rng.integers(0, data.draw(st.sampled_from([3, 50, 5000])), n)
    p = data.draw(st.sampled_from([0.0, 0.1, 0.5, 0.95, 1.0]))
    lo = rng.integers(0, panes + 1, 6)
    hi = np.minimum(panes, lo + rng.integers(0, panes + 1, 6))
    for acc in (accumulator("approx_count_distinct", values.dtype), accumulator("approx_quantile", values.dtype, param=p)):
        partials = acc.partial(values, pane, group, (panes, groups))
        for kind in ("interval", "basic interval"):
            got, null = acc.value(SYNOPSES[kind](acc, partials, lo, hi))
            for k in range(len(lo)):
                for g in range(groups):
                    xs = values[(pane >= lo[k]) & (pane < hi[k]) & (group == g)]
                    if isinstance(acc, ApproxCountDistinct):
                        assert null is None and count_ok(int(got[k, g]), len(set(xs.tolist()))), (kind, k, g)
                    elif not len(xs):
                        assert null is not None and null[k, g]
                    else:
                        assert (null is None or not null[k, g]) and rank_ok(got[k, g], xs, p), (kind, k, g)


def test_text_and_nulls():
    text = np.array(["a", "b", None, "a", "c"], object)
    zeros = np.zeros(5, np.int64)
    acc = accumulator("approx_count_distinct", text.dtype)
    assert acc.value(acc.partial(text, zeros, zeros, (1, 1)))[0].tolist() == [[3]]
    floats = np.array([np.nan, 2.0, np.nan, 1.0, 3.0])
    acc = accumulator("approx_quantile", floats.dtype, param=0.5)
    assert acc.value(acc.partial(floats, zeros, zeros, (1, 2)))[0][0, 0] == 2.0
    assert acc.value(acc.partial(floats, zeros, zeros, (1, 2)))[1].tolist() == [[False, True]]  # a group without values: null


QUERY = (
    "SELECT RSTREAM(S.a, APPROX_COUNT_DISTINCT(S.x) AS d, APPROX_QUANTILE(S.x, 0.9) AS q9, APPROX_QUANTILE(S.f, 0.25) AS q1, "
    "APPROX_COUNT_DISTINCT(S.k) AS dk, COUNT(*) AS n) FROM S [RANGE 499 SLIDE 50] WHERE S.x != 7 GROUP BY S.a"
)


def long_stream(seed: int = 3, n: int = 8000) -> pd.DataFrame:
    """About 1,300 tuples per window and group: both sketches past their exact range."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "ts": np.sort(rng.integers(0, 3000, n)),
            "a": rng.integers(0, 3, n),
            "x": rng.integers(0, 4000, n),
            "f": rng.normal(size=n).round(3),
            "k": rng.integers(0, 900, n).astype(str).astype(object),
        }
    )


def test_pane_path_estimates_are_within_the_bounds_of_the_window_contents():
    frame = long_stream()
    plan = parse_plan(QUERY)
    res = execute_plan(plan, {"S": frame}, collect=True)
    assert res.stats["path"].startswith("sliding aggregate: interval synopsis and running synopsis, pane s=50, b=10")
    got = rows(res.results)
    assert {r[-2] for r in got} == set(range(0, 3001, 50)) and len(got) > 3 * 60
    kept = frame[frame.x != 7]
    for a, d, q9, q1, dk, n, ts, sign in got:
        w = kept[(kept.ts >= ts - 499) & (kept.ts <= ts) & (kept.a == a)]
        assert n == len(w) and sign == 1
        assert count_ok(d, w.x.nunique()) and count_ok(dk, w.k.nunique())
        assert rank_ok(q9, w.x, 0.9) and rank_ok(q1, w.f, 0.25)
    assert sum(d != kept[(kept.ts >= ts - 499) & (kept.ts <= ts) & (kept.a == a)].x.nunique() for a, d, *_, ts, _s in got) > 0  # estimated, not counted


APPROX = ["APPROX_COUNT_DISTINCT(S.b)", "APPROX_COUNT_DISTINCT(S.k)", "APPROX_COUNT_DISTINCT(S.f)", "APPROX_QUANTILE(S.b, 0.5)", "APPROX_QUANTILE(S.f, 0.9)"]


@given(frame=streams(), aggs=st.lists(st.sampled_from(APPROX), min_size=1, max_size=3, unique=True), keys=st.sampled_from([[], ["S.a"], ["S.k"]]))
def test_pane_path_and_per_tuple_plan_against_the_oracle(frame, aggs, keys):
    """Small windows: the per-tuple plan equals the oracle (exact answers); the pane path has the same
    rows, with estimates within the bounds (exact here: below both sketches' exact range)."""
    length, slide = 6, 3
    items = keys + [f"{a} AS c{i}" for i, a in enumerate(aggs)] + ["COUNT(*) AS n"]
    query = f"SELECT RSTREAM({', '.join(items)}) FROM S [RANGE {length} SLIDE {slide}]" + (f" GROUP BY {', '.join(keys)}" if keys else "")
    note(query)
    plan = parse_plan(query)
    run = execute_plan(plan, {"S": frame}, collect=True)
    assert run.stats["path"].startswith("sliding aggregate:")
    panes = rows(run.results)
    exact = rows(execute_plan(plan, {"S": frame}, collect=True, panes=False).results)
    bound = bind(plan, {"S": ["a", "k", "b", "f"]})
    cols = len(bound.root.schema)
    want = Counter(
        {(t, tuple(None if isinstance(v, float) and math.isnan(v) else v for v in vals), s): m for (t, vals, s), m in expected_output(bound, {"S": frame}).items()}
    )
    assert Counter((r[cols], r[:cols], r[cols + 1]) for r in exact) == want
    assert len(panes) == len(exact)
    for p_row, e_row in zip(panes, exact):
        assert p_row[: len(keys)] == e_row[: len(keys)] and p_row[-3:] == e_row[-3:]
        for i, a in enumerate(aggs):
            got, true = p_row[len(keys) + i], e_row[len(keys) + i]
            if a.startswith("APPROX_COUNT"):
                assert got == true
            else:
                attr, p = a[len("APPROX_QUANTILE(S.") : -1].split(", ")
                ts = p_row[-2]
                xs = frame[(frame.ts >= ts - length) & (frame.ts <= ts)]
                for k, key in zip(keys, p_row):
                    xs = xs[xs[k[2:]] == key]
                xs = xs[attr].dropna()
                assert (got is None) == (true is None) == (not len(xs))
                assert got is None or rank_ok(got, xs, float(p))


def test_explain_shows_the_interval_synopsis_of_the_sketches():
    spec = match(parse_plan("SELECT RSTREAM(S.a, APPROX_QUANTILE(S.x, 0.5) AS m) FROM S [RANGE 99 SLIDE 10] GROUP BY S.a"))
    assert spec.describe().startswith("sliding aggregate: running synopsis and interval synopsis, pane s=10, b=10")
    spec = match(parse_plan("SELECT RSTREAM(APPROX_COUNT_DISTINCT(S.x)) FROM S [RANGE 3 SLIDE 2]"))
    assert spec.synopsis(spec.aggs[0]) == "basic interval"


@pytest.mark.parametrize(
    "query, error, message",
    [
        ("SELECT RSTREAM(APPROX_QUANTILE(S.x, 1.5)) FROM S [RANGE 4 SLIDE 2]", QueryError, "APPROX_QUANTILE's fraction 1.5 is outside [0, 1]"),
        ("SELECT RSTREAM(APPROX_QUANTILE(S.x, -0.1)) FROM S [RANGE 4 SLIDE 2]", QueryError, "APPROX_QUANTILE's fraction -0.1 is outside [0, 1]"),
        ("SELECT RSTREAM(APPROX_QUANTILE(S.x, S.y)) FROM S [RANGE 4 SLIDE 2]", QueryError, "APPROX_QUANTILE's fraction must be a number literal, got S.y"),
        ("SELECT RSTREAM(APPROX_QUANTILE(S.x)) FROM S [RANGE 4 SLIDE 2]", QueryError, "APPROX_QUANTILE takes 2 arguments, got 1"),
        ("SELECT RSTREAM(APPROX_COUNT_DISTINCT(S.x, 2)) FROM S [RANGE 4 SLIDE 2]", QueryError, "APPROX_COUNT_DISTINCT takes 1 argument, got 2"),
        ("SELECT RSTREAM(APPROX_COUNT_DISTINCT(DISTINCT S.x)) FROM S [RANGE 4 SLIDE 2]", QueryError, "APPROX_COUNT_DISTINCT(DISTINCT ...) is not defined"),
        ("SELECT RSTREAM(APPROX_QUANTILE(S.k, 0.5)) FROM S [RANGE 4 SLIDE 2]", PlanError, "APPROX_QUANTILE needs a number, S.k is text"),
    ],
)
def test_bad_arguments_are_one_clear_message(query, error, message):
    with pytest.raises(error) as e:
        bind(parse_plan(query), {"S": {"x": "int", "y": "int", "k": "str"}})
    assert message in str(e.value) and "query line 1" in str(e.value)


def test_without_the_extra_a_query_names_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasketches", None)  # as if not installed: its import fails
    with pytest.raises(OptionError) as e:
        bind(parse_plan("SELECT RSTREAM(S.a, APPROX_COUNT_DISTINCT(S.x) AS d) FROM S [RANGE 4 SLIDE 2] GROUP BY S.a"), {"S": {"a": "int", "x": "int"}})
    assert str(e.value) == ("query line 1, column 21: APPROX_COUNT_DISTINCT needs datasketches, which is not installed (hint: pip install 'slidewise[sketches]')")


def test_queries_sharing_sketch_partials_answer_as_alone():
    from slidewise.many import run_many

    frame = long_stream(seed=5, n=4000)
    queries = {
        "wide": "SELECT RSTREAM(S.a, APPROX_COUNT_DISTINCT(S.x) AS d) FROM S [RANGE 399 SLIDE 40] GROUP BY S.a",
        "narrow": "SELECT RSTREAM(S.a, APPROX_COUNT_DISTINCT(S.x) AS d, APPROX_QUANTILE(S.f, 0.5) AS m) FROM S [RANGE 79 SLIDE 40] WHERE S.x > 3 GROUP BY S.a",
    }
    shared, alone = run_many(queries, {"S": frame}), run_many(queries, {"S": frame}, shared=False)
    wide = rows(shared.results["wide"].results)
    assert wide == rows(alone.results["wide"].results) and wide  # HLL is deterministic
    for row in rows(shared.results["narrow"].results):
        w = frame[(frame.ts >= row[-2] - 79) & (frame.ts <= row[-2]) & (frame.a == row[0]) & (frame.x > 3)]
        assert count_ok(row[1], w.x.nunique()) and rank_ok(row[2], w.f, 0.5)
