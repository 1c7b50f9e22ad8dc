"""TOPK(k, x) (:class:`slidewise.operators.aggregates.TopK`) on the running synopsis against a brute-force oracle."""

from __future__ import annotations

from collections import Counter

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from slidewise.operators.aggregates import REGISTRY, TopK
from slidewise.synopses import SYNOPSES


def _oracle(xs: list, k: int) -> str | None:
    """The k most frequent values, by count descending then value, joined by ','."""
    if not xs:
        return None
    ranked = sorted(Counter(xs).items(), key=lambda vc: (-vc[1], vc[0]))
    return ",".join(str(v) for v, _ in ranked[:k])


@given(data=st.data())
def test_topk_equals_brute_force(data):
    panes, groups, n = data.draw(st.integers(1, 12)), data.draw(st.integers(1, 4)), data.draw(st.integers(0, 50))
    k = data.draw(st.integers(1, 4))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    pane, group, values = rng.integers(0, panes, n), rng.integers(0, groups, n), rng.integers(-3, 4, n)
    lo = rng.integers(0, panes + 1, 6)
    hi = np.minimum(panes, lo + rng.integers(0, panes + 1, 6))
    acc = TopK(np.dtype(np.int64), k)
    assert acc.subtractable and REGISTRY["topk"] is TopK
    got, null = acc.value(SYNOPSES["running"](acc, acc.partial(values, pane, group, (panes, groups)), lo, hi))
    for w in range(len(lo)):
        for g in range(groups):
            xs = values[(pane >= lo[w]) & (pane < hi[w]) & (group == g)].tolist()
            assert (None if null is not None and null[w, g] else got[w, g]) == _oracle(xs, k)


def test_topk_ignores_nan():
    acc = TopK(np.dtype(np.float64), 2)
    values = np.array([1.5, np.nan, 1.5, 2.0, 3.0, 3.0, 3.0])
    state = acc.partial(values, np.zeros(7, np.int64), np.zeros(7, np.int64), (1, 1))
    got, null = acc.value(SYNOPSES["running"](acc, state, np.array([0]), np.array([1])))
    assert got[0, 0] == "3.0,1.5" and null is None


def test_topk_in_a_group_by_query():
    import pandas as pd
    import pytest

    import slidewise
    from slidewise.cql import parse_plan
    from slidewise.errors import QueryError

    df = pd.DataFrame({"ts": [1, 2, 3, 4, 5, 6], "h": ["a", "a", "a", "b", "b", "b"], "d": [7, 7, 8, 9, 9, 9]})
    q = "SELECT RSTREAM(S.h, TOPK(2, S.d) AS top) FROM S [RANGE 9 SLIDE 3] GROUP BY S.h"
    r = slidewise.run(q, {"S": df})
    assert r.stats["path"].startswith("sliding aggregate: running synopsis")
    assert r.results[r.results.ts == 6][["S.h", "top"]].values.tolist() == [["a", "7,8"], ["b", "9"]]
    with pytest.raises(QueryError, match="TOPK's k must be a whole number of at least 1"):
        parse_plan("SELECT RSTREAM(TOPK(0, S.d)) FROM S [RANGE 9 SLIDE 3]")
    with pytest.raises(QueryError, match=r"TOPK takes k and a column: TOPK\(k, S.x\)"):
        parse_plan("SELECT RSTREAM(TOPK(S.d)) FROM S [RANGE 9 SLIDE 3]")


def test_topk_of_panes_and_tuples_agree():
    """The pane accumulator and the per-tuple operator (``panes=False``; text values take it always) rank
    alike: count descending, then value."""
    import pandas as pd

    from slidewise.cql import parse_plan
    from slidewise.runtime.plan_engine import execute_plan

    rng = np.random.default_rng(7)
    n = 400
    frame = pd.DataFrame({"ts": np.sort(rng.integers(0, 300, n)), "a": rng.integers(0, 3, n), "x": rng.integers(0, 6, n), "w": rng.choice(list("pqrst"), n)})
    q = parse_plan("SELECT RSTREAM(S.a, TOPK(2, S.x) AS tx) FROM S [RANGE 29 SLIDE 5] GROUP BY S.a")
    panes = execute_plan(q, {"S": frame}, collect=True)
    assert panes.stats["path"].startswith("sliding aggregate: running synopsis")
    got = sorted(map(tuple, panes.results.values.tolist()))
    assert got == sorted(map(tuple, execute_plan(q, {"S": frame}, collect=True, panes=False).results.values.tolist()))
    window = frame[(frame.ts > 150 - 30) & (frame.ts <= 150) & (frame.a == 1)]
    assert next(r for r in got if r[0] == 1 and r[2] == 150)[1] == _oracle(window.x.tolist(), 2)
    text = execute_plan(parse_plan("SELECT RSTREAM(S.a, TOPK(3, S.w) AS tw) FROM S [RANGE 29 SLIDE 5] GROUP BY S.a"), {"S": frame}, collect=True).results
    assert text[(text.ts == 150) & (text["S.a"] == 1)].tw.tolist() == [_oracle(window.w.tolist(), 3)]


@given(data=st.data())
def test_ranking_by_selection_serves_every_k_up_to_its_depth_as_the_full_sort(data):
    """:meth:`TopK.rank` at a depth selects each cell's first pairs (linear) and sorts only them: every
    top-k list with k up to the depth equals the full sort's, ties (equal counts) broken by value alike."""
    panes, groups, n = data.draw(st.integers(1, 6)), data.draw(st.integers(1, 4)), data.draw(st.integers(0, 80))
    depth = data.draw(st.integers(1, 6))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    pane, group, values = rng.integers(0, panes, n), rng.integers(0, groups, n), rng.integers(-4, 5, n)
    acc = TopK(np.dtype(np.int64), depth)
    lo, hi = np.zeros(panes, np.int64), np.arange(1, panes + 1)
    state = SYNOPSES["running"](acc, acc.partial(values, pane, group, (panes, groups)), lo, hi)
    full, selected = acc.rank(state), acc.rank(state, depth)
    for k in range(1, depth + 1):
        acc.k = k
        want, got = acc.top(full), acc.top(selected)
        np.testing.assert_array_equal(got[0], want[0])
        assert (got[1] is None) == (want[1] is None)


def test_ranking_by_selection_counts_the_selection_and_the_sort_of_the_selected():
    """The work a ranking reports is what it does: ``n*log2(n+1)`` for a full sort of ``n`` counts; at depth
    ``k`` below ``n``, ``n`` for the selection plus ``k*log2(k+1)`` for the sort of the selected."""
    values = np.repeat(np.arange(1000), np.arange(1000) % 7 + 1)
    acc = TopK(np.dtype(np.int64), 10)
    state = acc.partial(values, np.zeros(len(values), np.int64), np.zeros(len(values), np.int64), (1, 1))
    full, selected = acc.rank(state), acc.rank(state, 10)
    assert full[2] == 1000 * np.log2(1001) and selected[2] == 1000 + 10 * np.log2(11)
    assert acc.top(selected)[0][0, 0] == "6,13,20,27,34,41,48,55,62,69" == acc.top(full)[0][0, 0]
    assert acc.rank(state, 2000)[2] == full[2]  # no cell deeper than the depth: nothing to select


def test_many_cells_to_select_from_are_sorted_at_once():
    """Beyond ``SELECT_CELLS`` cells deeper than the depth, one sort of every entry replaces the per-cell
    selections (counted as that sort), with the same answers."""
    from slidewise.operators.aggregates.topk import SELECT_CELLS

    groups = SELECT_CELLS + 1
    values, group = np.tile(np.arange(5), groups), np.repeat(np.arange(groups), 5)
    acc = TopK(np.dtype(np.int64), 2)
    state = acc.partial(values, np.zeros(len(values), np.int64), group, (1, groups))
    ranking = acc.rank(state, 2)
    assert ranking[2] == len(values) * np.log2(len(values) + 1)
    assert acc.top(ranking)[0].tolist() == [["0,1"] * groups]
