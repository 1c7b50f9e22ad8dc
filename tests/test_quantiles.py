"""MEDIAN and QUANTILE: the accumulator, the per-tuple operator and the pane path against recomputation.

The pane path and the per-tuple plan of periodic queries are in the random
cases of ``test_sliding_aggregate.py``; here the per-tuple operator over
unperiodic time windows (a row per change) and fractions that are not dyadic.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pandas as pd
from hypothesis import given, note
from hypothesis import strategies as st

from slidewise import synopses
from slidewise.cql import parse_plan
from slidewise.operators.aggregates import accumulator, quantile
from slidewise.plan.bind import bind
from slidewise.runtime.plan_engine import execute_plan
from slidewise.synopses import SYNOPSES
from slidewise.synopses.batch import WindowBatch
from tests.oracle_plans import expected_output
from tests.test_sliding_aggregate import rows, streams


@given(
    frame=streams(),
    length=st.integers(0, 12),
    agg=st.sampled_from(["MEDIAN(S.b)", "MEDIAN(S.f)", "QUANTILE(S.b, 0.25)", "QUANTILE(S.f, 0.75)", "MEDIAN(DISTINCT S.b)"]),
    keys=st.sampled_from([[], ["S.a"], ["S.k"]]),
)
def test_per_tuple_operator_equals_the_oracle(frame, length, agg, keys):
    query = f"SELECT ISTREAM({', '.join(keys + [f'{agg} AS m', 'COUNT(*) AS n'])}) FROM S [RANGE {length}]" + (f" GROUP BY {', '.join(keys)}" if keys else "")
    note(query)
    plan = parse_plan(query)
    got = rows(execute_plan(plan, {"S": frame}, collect=True).results)
    bound = bind(plan, {"S": ["a", "k", "b", "f"]})
    cols = len(bound.root.schema)
    want = Counter(
        {(t, tuple(None if isinstance(v, float) and math.isnan(v) else v for v in vals), s): m for (t, vals, s), m in expected_output(bound, {"S": frame}).items()}
    )
    assert Counter((r[cols], r[:cols], r[cols + 1]) for r in got) == want


@given(data=st.data())
def test_any_fraction_equals_numpy(data):
    panes, groups, n = data.draw(st.integers(1, 10)), data.draw(st.integers(1, 4)), data.draw(st.integers(0, 50))
    p = data.draw(st.floats(0, 1))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    pane, group, values = rng.integers(0, panes, n), rng.integers(0, groups, n), rng.normal(size=n).round(2)
    lo = rng.integers(0, panes + 1, 6)
    hi = np.minimum(panes, lo + rng.integers(0, panes + 1, 6))
    acc = accumulator("quantile", values.dtype, param=p)
    got, null = acc.value(SYNOPSES["running"](acc, acc.partial(values, pane, group, (panes, groups)), lo, hi))
    for k in range(len(lo)):
        for g in range(groups):
            xs = values[(pane >= lo[k]) & (pane < hi[k]) & (group == g)]
            if not len(xs):
                assert null is not None and null[k, g]
            else:
                assert math.isclose(got[k, g], float(np.quantile(xs, p)), rel_tol=1e-12, abs_tol=1e-12)


def test_median_of_panes_and_tuples_agree_on_a_longer_stream():
    rng = np.random.default_rng(5)
    ts = np.sort(rng.integers(0, 2000, 3000))
    frame = pd.DataFrame({"ts": ts, "a": rng.integers(0, 7, 3000), "x": rng.integers(0, 1000, 3000)})
    q = parse_plan("SELECT RSTREAM(S.a, MEDIAN(S.x) AS m, QUANTILE(S.x, 0.9) AS q9) FROM S [RANGE 99 SLIDE 10] GROUP BY S.a")
    panes = execute_plan(q, {"S": frame}, collect=True)
    assert panes.stats["path"].startswith("sliding aggregate: running synopsis")
    got = rows(panes.results)
    assert got == rows(execute_plan(q, {"S": frame}, collect=True, panes=False).results)
    window = frame[(frame.ts > 1000 - 100) & (frame.ts <= 1000) & (frame.a == 3)].x
    row = next(r for r in got if r[0] == 3 and r[3] == 1000)
    assert row[1] == float(np.median(window)) and math.isclose(row[2], float(np.quantile(window, 0.9)))


@given(data=st.data())
def test_reading_the_running_merges_equals_forming_each_window(data):
    """``between`` (a binary search per window and group over the running merges) gives exactly what
    ``value`` gives of the windows' states, and one batch of several queries' windows gives each its own."""
    panes, groups, n = data.draw(st.integers(1, 12)), data.draw(st.integers(1, 5)), data.draw(st.integers(0, 80))
    p = data.draw(st.sampled_from([0.0, 0.25, 0.5, 0.9, 1.0]))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    pane, group = rng.integers(0, panes, n), rng.integers(0, groups, n)
    values = rng.integers(0, data.draw(st.integers(1, 30)), n)
    acc = accumulator("quantile", values.dtype, param=p)
    part = acc.partial(values, pane, group, (panes, groups))
    lo = rng.integers(0, panes + 1, 7)
    hi = np.minimum(panes, lo + rng.integers(0, panes + 1, 7))
    want = acc.value(SYNOPSES["running"](acc, part, lo, hi))
    saved = quantile.SEARCH_PAIRS
    try:
        for pairs in (0, 10**9):  # the binary search, and forming the states
            quantile.SEARCH_PAIRS = pairs
            got = synopses.values(SYNOPSES["running"], acc, part, lo, hi)
            assert np.array_equal(got[0], want[0])
            assert (got[1] is None or not got[1].any()) if want[1] is None else np.array_equal(got[1], want[1])
    finally:
        quantile.SEARCH_PAIRS = saved
    batch = WindowBatch()
    handles = [batch.request(acc, SYNOPSES["running"], part, lo[a:b], hi[a:b]) for a, b in ((0, 3), (2, 7), (5, 5))]
    for (a, b), h in zip(((0, 3), (2, 7), (5, 5)), handles):
        vals, null = batch.result(h)
        assert np.array_equal(vals, want[0][a:b])
        assert np.array_equal(np.zeros(vals.shape, bool) if null is None else null, np.zeros(vals.shape, bool) if want[1] is None else want[1][a:b])


@given(data=st.data())
def test_a_batch_reads_the_cells_of_non_zero_counts(data):
    """``present`` finds each window's non-zero counts in column order, ``take`` reads any request there."""
    panes, groups, n = data.draw(st.integers(1, 10)), data.draw(st.integers(1, 5)), data.draw(st.integers(0, 60))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    pane, group, values = rng.integers(0, panes, n), rng.integers(0, groups, n), rng.integers(0, 9, n)
    count, total = accumulator("count"), accumulator("sum", values.dtype)
    parts = count.partial(None, pane, group, (panes, groups)), total.partial(values, pane, group, (panes, groups))
    lo = rng.integers(0, panes + 1, 6)
    hi = np.minimum(panes, lo + rng.integers(0, panes + 1, 6))
    batch = WindowBatch()
    asked = [
        (batch.request(count, SYNOPSES["running"], parts[0], lo[a:b], hi[a:b]), batch.request(total, SYNOPSES["running"], parts[1], lo[a:b], hi[a:b]), a, b)
        for a, b in ((0, 4), (3, 6))
    ]
    n_all = count.value(SYNOPSES["running"](count, parts[0], lo, hi))[0]
    s_all = total.value(SYNOPSES["running"](total, parts[1], lo, hi))[0]
    for hc, hs, a, b in asked:
        [per_window], cols = batch.present([hc])
        rows = np.repeat(np.arange(b - a), per_window)
        assert per_window.tolist() == np.count_nonzero(n_all[a:b], axis=1).tolist()
        assert np.array_equal(np.flatnonzero(n_all[a:b]), rows * groups + cols)
        assert np.array_equal(batch.take([hc], [per_window], cols)[0], n_all[a:b][rows, cols])
        assert np.array_equal(batch.take([hs], [per_window], cols)[0], s_all[a:b][rows, cols])


def test_the_sorting_networks_sort_every_row_of_zeros_and_ones():
    """The 0-1 principle: a comparator network that sorts every 0-1 row sorts every row."""
    for width, network in quantile.NETWORKS.items():
        for bits in range(1 << width):
            row = [bits >> k & 1 for k in range(width)]
            for a, b in network:
                if row[a] > row[b]:
                    row[a], row[b] = row[b], row[a]
            assert row == sorted(row), (width, bits)


@given(data=st.data())
def test_runs_of_rows_equal_numpy(data):
    """``runs``: the quantile of each row's first ``n`` values (rows padded by repeating the last, as the
    cells of tuples are read), through the sorting networks (rows of 2, 4, 8) or a sort of rows."""
    width = data.draw(st.sampled_from([1, 2, 3, 4, 8, 16]))
    rows = data.draw(st.integers(0, 20))
    p = data.draw(st.sampled_from([0.0, 0.25, 0.5, 0.9, 1.0]))
    dtype = data.draw(st.sampled_from([np.int64, np.int32, np.float64, np.uint8, np.bool_]))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    n = rng.integers(max(1, width // 2 + 1) if width > 1 else 1, width + 1, rows)
    values = rng.integers(0, data.draw(st.integers(1, 6)), (rows, width)).astype(dtype)
    if dtype is np.float64:
        values -= 2.5
    index = np.minimum(np.arange(width), (n - 1)[:, None])
    values = np.take_along_axis(values, index, axis=1)  # past n: the last value repeated
    acc = accumulator("quantile", np.dtype(dtype), param=p)
    got = acc.runs(values, n)
    for r in range(rows):
        want = float(np.quantile(values[r, : n[r]].astype(np.float64), p))
        assert math.isclose(got[r], want, rel_tol=1e-12, abs_tol=1e-12), (values[r], n[r])
