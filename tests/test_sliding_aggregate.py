"""The pane path of periodic sliding GROUP BY (optimizer.pane_plan, runtime.pane_engine, synopses, aggregates).

Every random case runs three ways: the pane path, the per-tuple plan
(``execute_plan(..., panes=False)``) and the brute-force recomputation of
``tests/oracle_plans.py`` at every evaluation instant; rows, their order, ``ts``
and ``sign`` must agree exactly (float inputs are multiples of 1/4, so sums
are exact in every order).
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from slidewise.cql import parse_plan
from slidewise.operators.aggregates import REGISTRY, Max, Min, Sum, accumulator
from slidewise.optimizer.pane_plan import match
from slidewise.plan.bind import bind
from slidewise.runtime.plan_engine import execute_plan
from slidewise.synopses import SYNOPSES
from tests.oracle_plans import _quantile as quantile
from tests.oracle_plans import expected_output
from tests.streams import value_streams

AGGS = [
    "COUNT(*)",
    "COUNT(S.b)",
    "SUM(S.b)",
    "AVG(S.b)",
    "MIN(S.b)",
    "MAX(S.b)",
    "COUNT(S.f)",
    "SUM(S.f)",
    "AVG(S.f)",
    "MIN(S.f)",
    "MAX(S.f)",
    "COUNT(DISTINCT S.b)",
    "COUNT(DISTINCT S.k)",
    "SUM(DISTINCT S.f)",
    "AVG(DISTINCT S.b)",
    "MAX(DISTINCT S.f)",
    "COUNT(DISTINCT S.f)",
    "TOPK(2, S.b)",
    "TOPK(1, S.f)",
    "MEDIAN(S.b)",
    "MEDIAN(S.f)",
    "QUANTILE(S.b, 0.25)",
    "QUANTILE(S.f, 1)",
    "QUANTILE(S.b, 0)",
    "MEDIAN(DISTINCT S.b)",
    "QUANTILE(S.f, 0.75)",
]
WHERE = [None, "S.b > 1", "S.b != 2 OR S.a = 0", "NOT (S.f < 0)", "ABS(S.b - 2) <= 1 AND S.k != 'y'"]
HAVING = [None, "COUNT(*) > 1", "c0 >= 2 OR c0 < 1"]


def streams() -> st.SearchStrategy[pd.DataFrame]:
    """One sorted stream: ties, bursts, gaps; int and text keys; int and float (NaN) values."""
    return value_streams(("a", "k", "b", "f"), max_len=25, max_start=6, texts="xyz")


def time_windows() -> st.SearchStrategy[str]:
    """``[RANGE length SLIDE slide]``: empty-length windows, slides longer than the window."""
    return st.builds(lambda length, slide: f"[RANGE {length} SLIDE {slide}]", st.integers(0, 15), st.integers(1, 6))


@st.composite
def queries(draw, aggregates: list[str] = AGGS, windows: st.SearchStrategy[str] | None = None) -> str:
    """A periodic GROUP BY over S: random keys, ``aggregates``, WHERE, HAVING and output kind, in a window
    drawn from ``windows`` (time windows unless given)."""
    keys = draw(st.sampled_from([[], ["S.a"], ["S.k"], ["S.a", "S.k"], ["S.k", "S.a"]]))
    aggs = draw(st.lists(st.sampled_from(aggregates), min_size=1, max_size=4, unique=True))
    items = keys + [f"{a} AS c{i}" for i, a in enumerate(aggs)]
    if draw(st.booleans()):
        items = draw(st.permutations(items))
    window = draw(windows if windows is not None else time_windows())
    where, having = draw(st.sampled_from(WHERE)), draw(st.sampled_from(HAVING))
    having = None if having and "c0" in having and not aggs[0].startswith("COUNT") else having
    kind = draw(st.sampled_from(["RSTREAM", "RSTREAM", "ISTREAM", "DSTREAM"]))
    return (
        f"SELECT {kind}({', '.join(items)}) FROM S {window}"
        + (f" WHERE {where}" if where else "")
        + (f" GROUP BY {', '.join(keys)}" if keys else "")
        + (f" HAVING {having}" if having else "")
    )


def rows(frame: pd.DataFrame | None) -> list[tuple]:
    if frame is None or not len(frame):
        return []
    return [
        tuple(None if (isinstance(v, float) and math.isnan(v)) else (v.item() if hasattr(v, "item") else v) for v in r) for r in frame.itertuples(index=False, name=None)
    ]


@given(frame=streams(), query=queries())
def test_pane_path_equals_the_plan_and_the_oracle(frame, query):
    note(query)
    note(frame.to_records(index=False).tolist())
    plan = parse_plan(query)
    panes = execute_plan(plan, {"S": frame}, collect=True)
    assert panes.stats["path"].startswith("sliding aggregate:")
    tuples = execute_plan(plan, {"S": frame}, collect=True, panes=False)
    assert "path" not in tuples.stats
    got, want = rows(panes.results), rows(tuples.results)
    assert got == want
    assert list(panes.results.columns) == list(tuples.results.columns)
    bound = bind(plan, {"S": ["a", "k", "b", "f"]})
    cols = len(bound.root.schema)
    assert Counter((r[cols], r[:cols], r[cols + 1]) for r in got) == Counter(
        {(t, tuple(None if isinstance(v, float) and math.isnan(v) else v for v in vals), s): m for (t, vals, s), m in expected_output(bound, {"S": frame}).items()}
    )


def test_late_rows_and_reordering_are_the_executors():
    frame = pd.DataFrame({"ts": [5, 3, 9, 1, 12, 30, 14], "a": [1, 2, 1, 2, 1, 1, 2]})
    q = parse_plan("SELECT RSTREAM(S.a, COUNT(*) AS n) FROM S [RANGE 9 SLIDE 4] GROUP BY S.a")
    a = execute_plan(q, {"S": frame}, collect=True, lateness=3)
    b = execute_plan(q, {"S": frame}, collect=True, lateness=3, panes=False)
    assert rows(a.results) == rows(b.results)
    assert a.stats["rejects"] == b.stats["rejects"] == 2
    assert a.stats["rejects_by_reason"] == b.stats["rejects_by_reason"]


def test_the_last_windows_end_at_the_slide_after_the_last_input():
    frame = pd.DataFrame({"ts": [1, 2, 11], "a": [7, 7, 8]})
    res = execute_plan(parse_plan("SELECT RSTREAM(S.a, COUNT(*) AS n) FROM S [RANGE 100 SLIDE 5] GROUP BY S.a"), {"S": frame}, collect=True)
    assert rows(res.results) == [(7, 2, 5, 1), (7, 2, 10, 1), (7, 2, 15, 1), (8, 1, 15, 1)]


def test_other_shapes_and_types_keep_the_plan():
    frame = pd.DataFrame({"ts": [1, 2], "a": [1.5, 2.5], "k": ["x", "y"]})
    for q in [
        "SELECT RSTREAM(S.a, COUNT(*) AS n) FROM S [RANGE 4 SLIDE 2] GROUP BY S.a",  # float key
        "SELECT RSTREAM(S.k, MIN(S.k) AS m) FROM S [RANGE 4 SLIDE 2] GROUP BY S.k",
    ]:  # MIN of text
        res = execute_plan(parse_plan(q), {"S": frame}, collect=True)
        assert "path" not in res.stats
    for q in [
        "SELECT ISTREAM(S.a, COUNT(*) AS n) FROM S [RANGE 4] GROUP BY S.a",
        "SELECT RSTREAM(S.a, COUNT(*) AS n) FROM S [RANGE 4] GROUP BY S.a",
        "SELECT ISTREAM_RESTORE(S.a, COUNT(*) AS n) FROM S [RANGE 4 SLIDE 2] GROUP BY S.a",
        "SELECT DSTREAM(COUNT(*) AS n) FROM S [RANGE 4 SLIDE 2] GROUP BY S.a",  # a bag of counts
        "SELECT RSTREAM(S.a, COUNT(*) AS n) FROM S [ROWS 4] GROUP BY S.a",
        "SELECT RSTREAM(S.a, COUNT(*) AS n) FROM S [RANGE 4 SLIDE 2 INTERNAL] GROUP BY S.a",
        "SELECT RSTREAM(S.a, COUNT(*) AS n) FROM S [RANGE 4 SLIDE 2] WHERE S.b / 2 > 1 GROUP BY S.a",
        "SELECT RSTREAM_RESTORE(S.a, COUNT(*) AS n) FROM S [RANGE 4 SLIDE 2] GROUP BY S.a",
        "SELECT RSTREAM(S.a, SUM(S.b + 1) AS n) FROM S [RANGE 4 SLIDE 2] GROUP BY S.a",
    ]:
        assert match(parse_plan(q)) is None, q


def test_explain_names_the_synopsis_and_panes(capsys):
    from slidewise.cli import main

    query = "SELECT RSTREAM(S.a, COUNT(*) AS n, MAX(S.b)) FROM S [RANGE 999 SLIDE 10] GROUP BY S.a"
    assert main(["explain", query]) == 0
    out = capsys.readouterr().out
    assert (
        "path         sliding aggregate: running synopsis and interval synopsis, pane s=10, b=100; "
        "partials kept per group / probed per answer: running 101 / 2, interval 580 / 2"
    ) in out
    spec = match(parse_plan("SELECT RSTREAM(S.a, MIN(S.b) AS m) FROM S [RANGE 12 SLIDE 10] GROUP BY S.a"))
    assert (spec.pane, spec.panes) == (1, 13)
    assert (
        match(parse_plan("SELECT RSTREAM(MIN(S.b)) FROM S [RANGE 3 SLIDE 2]")).describe()
        == "sliding aggregate: running synopsis and basic interval synopsis, pane s=2, b=2; "
        "partials kept per group / probed per answer: running 3 / 2, basic interval 2 / 2"
    )


# ---- synopses and accumulators against brute force --------------------------------------------


@given(data=st.data())
def test_synopses_equal_brute_force(data):
    panes, groups = data.draw(st.integers(1, 40)), data.draw(st.integers(1, 5))
    n = data.draw(st.integers(0, 60))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    pane, group = rng.integers(0, panes, n), rng.integers(0, groups, n)
    values = rng.integers(-9, 9, n)
    lo = rng.integers(0, panes + 1, 8)
    hi = np.minimum(panes, lo + rng.integers(0, panes + 1, 8))
    for name in REGISTRY:
        if name in ("topk", "approx_count_distinct", "approx_quantile"):  # tests/test_topk.py, tests/test_sketches.py
            continue
        acc = accumulator(name, np.dtype(np.int64), param=0.25)
        partials = acc.partial(values, pane, group, (panes, groups))
        kinds = ["running", "interval", "basic interval"] if acc.subtractable else ["interval", "basic interval"]
        for kind in kinds:
            got, null = acc.value(SYNOPSES[kind](acc, partials, lo, hi))
            for k in range(len(lo)):
                for g in range(groups):
                    xs = values[(pane >= lo[k]) & (pane < hi[k]) & (group == g)].tolist()
                    want = {
                        "count": len(xs),
                        "sum": sum(xs) if xs else None,
                        "avg": sum(xs) / len(xs) if xs else None,
                        "min": min(xs, default=None),
                        "max": max(xs, default=None),
                        "median": quantile(xs, 0.25),
                        "quantile": quantile(xs, 0.25),
                    }[name]
                    value = None if null is not None and null[k, g] else got[k, g].item()
                    assert value == want, (name, kind, k, g)


@given(data=st.data())
def test_distinct_frequency_counts_equal_brute_force(data):
    panes, groups, n = data.draw(st.integers(1, 12)), data.draw(st.integers(1, 4)), data.draw(st.integers(0, 40))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    pane, group, values = rng.integers(0, panes, n), rng.integers(0, groups, n), rng.integers(-3, 3, n)
    lo = rng.integers(0, panes + 1, 6)
    hi = np.minimum(panes, lo + rng.integers(0, panes + 1, 6))
    for func in ("count", "sum", "avg"):
        acc = accumulator(func, np.dtype(np.int64), distinct=True)
        got, null = acc.value(SYNOPSES["running"](acc, acc.partial(values, pane, group, (panes, groups)), lo, hi))
        for k in range(len(lo)):
            for g in range(groups):
                xs = set(values[(pane >= lo[k]) & (pane < hi[k]) & (group == g)].tolist())
                want = {"count": len(xs), "sum": sum(xs) if xs else None, "avg": sum(xs) / len(xs) if xs else None}[func]
                assert (None if null is not None and null[k, g] else got[k, g].item()) == want


def test_accumulators_ignore_nan_and_keep_types():
    vals = np.array([1.5, np.nan, -2.0])
    pane, group = np.zeros(3, np.int64), np.zeros(3, np.int64)
    assert Sum(vals.dtype).value(Sum(vals.dtype).partial(vals, pane, group, (1, 1)))[0].tolist() == [[-0.5]]
    assert Min(np.dtype(bool)).value(Min(np.dtype(bool)).partial(np.array([True, False]), pane[:2], group[:2], (1, 1)))[0].dtype == bool
    assert Max(vals.dtype).value(Max(vals.dtype).partial(vals[1:2], pane[:1], group[:1], (1, 1)))[1].tolist() == [[True]]
    with pytest.raises(ValueError, match="not subtractable"):
        SYNOPSES["running"](Min(vals.dtype), Min(vals.dtype).partial(vals, pane, group, (1, 1)), np.array([0]), np.array([1]))


def test_small_blocks_and_many_groups_give_the_same_rows(monkeypatch):
    """Blocks split when a block meets far more groups than the one before (bounded matrices)."""
    from slidewise.runtime import pane_engine as sliding

    rng = np.random.default_rng(3)
    ts = np.sort(
        np.concatenate(
            [
                rng.integers(0, 200, 300),
                rng.integers(200, 202, 300),  # a burst
                rng.integers(203, 300, 100),
            ]
        )
    )
    frame = pd.DataFrame({"ts": ts, "a": np.where((ts < 200) | (ts > 202), ts % 3, rng.integers(0, 500, 700)), "b": rng.integers(-5, 5, 700)})
    q = parse_plan("SELECT RSTREAM(S.a, COUNT(*) AS n, MAX(S.b) AS m) FROM S [RANGE 29 SLIDE 3] GROUP BY S.a")
    want = rows(execute_plan(q, {"S": frame}, collect=True).results)
    monkeypatch.setattr(sliding, "BLOCK_CELLS", 8)
    calls = []
    block = sliding.PaneRun._block
    monkeypatch.setattr(sliding.PaneRun, "_block", lambda self, *a: calls.append(a[:2]) or block(self, *a))
    res = execute_plan(q, {"S": frame}, collect=True)
    assert rows(res.results) == want
    assert any(k1 - k0 > 1 for k0, k1 in calls) and len(calls) > res.stats["passes"]  # a block was split
    assert want == rows(execute_plan(q, {"S": frame}, collect=True, panes=False).results)
