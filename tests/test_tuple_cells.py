"""Cells evaluated from the block's tuples (``synopses.tuples``): the values read at the non-zero counts of
windows equal the whole windows' values through the synopsis — short cells from their tuples, long ones
(more than ``LONGEST`` tuples) through the synopsis, partials deferred until a cell needs them."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from slidewise.operators.aggregates import accumulator
from slidewise.operators.aggregates.extremes import LEVELS
from slidewise.runtime.pane_engine import Tally
from slidewise.synopses import SYNOPSES, running, tuples, values
from slidewise.synopses.batch import WindowBatch

#: (aggregate, parameter, synopsis, dtype)
AGGREGATES = [
    ("count", None, "running", np.int64),
    ("sum", None, "running", np.int64),
    ("sum", None, "running", np.float64),
    ("avg", None, "running", np.int64),
    ("min", None, "interval", np.int64),
    ("max", None, "interval", np.float64),
    ("max", None, "interval", np.bool_),
    ("quantile", 0.5, "running", np.int64),
    ("quantile", 0.25, "running", np.float64),
    ("quantile", 0.9, "running", np.int64),
    ("quantile distinct", 0.5, "running", np.int64),
]


@st.composite
def blocks(draw):
    """Tuples in panes and groups (ties; a few groups, so some cells hold more than ``LONGEST`` tuples; NaN
    sometimes) and windows of pane rows (empty ones, repeated ones)."""
    panes, groups = draw(st.integers(1, 12)), draw(st.integers(1, 6))
    many = draw(st.booleans())
    n = draw(st.integers(0, 150 if many else 30))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    pane = np.sort(rng.integers(0, panes, n))
    group = rng.integers(0, groups, n)
    value = rng.integers(-3, 4, n).astype(np.float64)
    if draw(st.booleans()) and n:
        value[rng.integers(0, n)] = np.nan
    ends = draw(st.lists(st.tuples(st.integers(0, panes), st.integers(0, panes)), min_size=1, max_size=12))
    lo = np.array([min(a, b) for a, b in ends], np.int64)
    hi = np.array([max(a, b) for a, b in ends], np.int64)
    return panes, groups, pane, group, value, lo, hi


@settings(max_examples=200, deadline=None)
@given(blocks(), st.sampled_from(AGGREGATES), st.integers(1, 3))
def test_values_from_tuples_equal_whole_windows(block, aggregate, queries):
    panes, groups, pane, group, value, lo, hi = block
    func, param, synopsis, dtype = aggregate
    if dtype is not np.float64:
        value = np.nan_to_num(value).astype(dtype)
    acc = accumulator(func.split()[0], np.dtype(dtype), func.endswith("distinct"), param)
    shape = (panes, groups)
    count = Tally()
    tally = count.partial(None, pane, group, shape)
    memo: dict = {}
    part = tuples.partial(memo, tuples.Tuples(group, groups), acc, value, lambda: acc.partial(value, pane, group, shape))
    batch = WindowBatch(memo)
    asks = [(lo[i::queries], hi[i::queries]) for i in range(queries)]
    handles = [(batch.request(count, running.windows, tally, a, b), batch.request(acc, SYNOPSES[synopsis], part, a, b)) for a, b in asks]
    per_windows, column = batch.present([c for c, _ in handles])
    got_vals, got_null = batch.take([v for _, v in handles], per_windows, column, handles[0][0][0])
    oracle = accumulator(func.split()[0], np.dtype(dtype), func.endswith("distinct"), param)
    n = values(running.windows, count, tally, lo, hi)[0]
    want_vals, want_null = values(SYNOPSES[synopsis], oracle, oracle.partial(value, pane, group, shape), lo, hi)
    rows = [np.nonzero(n[i::queries]) for i in range(queries)]
    want_vals = np.concatenate([want_vals[i::queries][r] for i, r in enumerate(rows)])
    want_null = np.zeros(len(want_vals), bool) if want_null is None else np.concatenate([want_null[i::queries][r] for i, r in enumerate(rows)])
    got_null = np.zeros(len(got_vals), bool) if got_null is None else got_null
    assert got_vals.dtype == want_vals.dtype
    assert np.array_equal(got_null, want_null)
    assert np.array_equal(np.where(want_null, 0, got_vals), np.where(want_null, 0, want_vals))


def test_long_cells_through_the_synopsis_short_ones_without_a_partial():
    """A median of more than its ``longest_run`` tuples is read through the synopsis (the partial is then
    built); with short cells only, the deferred partial is never built. MAX reads cells of any length from
    the tuples (``ranges``: sparse tables of values and of blocks of values), never building the partial."""
    for func, longest, long_built in (("max", 2 ** (LEVELS + 3) + 5, False), ("median", 256, True)):
        _long_cell(func, longest, long_built)


def _long_cell(func: str, longest: int, long_built: bool) -> None:
    acc = accumulator(func, np.dtype(np.int64))
    for n, built in ((longest, False), (longest + 1, long_built)):
        pane, group, value = np.zeros(n, np.int64), np.zeros(n, np.int64), np.arange(n, dtype=np.int64)[::-1].copy()
        memo: dict = {}
        part = tuples.partial(memo, tuples.Tuples(group, 1), acc, value, lambda: acc.partial(value, pane, group, (1, 1)))
        count = Tally()
        batch = WindowBatch(memo)
        c = batch.request(count, running.windows, count.partial(None, pane, group, (1, 1)), np.array([0]), np.array([1]))
        v = batch.request(acc, SYNOPSES["interval"], part, np.array([0]), np.array([1]))
        per, column = batch.present([c])
        assert batch.take([v], per, column, c[0])[0].tolist() == [n - 1 if func == "max" else (n - 1) / 2]
        assert (part.state is not None) == built


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_ranges_equal_runs(data):
    """``ranges`` (MIN/MAX: sparse tables of values and blocks; SUM/AVG: prefix sums, wrapping like the row sums) gives every run
    the value ``runs`` gives it from its row of values."""
    func = data.draw(st.sampled_from(["min", "max", "sum", "avg", "count", "quantile"]))
    dtype = np.dtype(data.draw(st.sampled_from([np.int64, np.int32, np.uint8, np.bool_, np.float64])))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    size = data.draw(st.sampled_from([80, 2 ** (LEVELS + 4) + 10]))  # cells over several blocks of 2**LEVELS
    big = data.draw(st.booleans()) and dtype == np.int64  # sums that wrap int64
    values = rng.integers(2**62 if big else -50, 2**63 - 1 if big else 50, size).astype(dtype)
    n = rng.integers(1, size + 1, data.draw(st.integers(0, 30)))
    start = (rng.random(len(n)) * (size - n + 1)).astype(np.int64)
    acc = accumulator(func, dtype)
    got = acc.ranges(values, start, n, {}) if acc.ranges is not None else None
    if got is None:  # float sums (added in the synopsis's order), quantiles without the compiled kernel: rows of values only
        assert func in ("sum", "avg", "quantile")
        return
    out, rest = got
    # quantiles (the compiled kernel): the runs longer than the accumulator's longest left to the synopsis
    assert rest.tolist() == (np.flatnonzero(n > acc.longest_run).tolist() if func == "quantile" else [])
    keep = np.setdiff1d(np.arange(len(n)), rest)
    width = int(n.max()) if len(n) else 1
    index = np.minimum(start[:, None] + np.arange(width), (start + n - 1)[:, None])
    want = acc.runs(values[index][keep], n[keep])
    assert out.dtype == want.dtype
    assert out[keep].tolist() == want.tolist()


def test_a_reused_column_id_is_not_a_stale_hit():
    """The caches keyed by a column's id hold the column and check it: a new column at a reused id (simulated by an
    entry of another column under its id) gets its own values, and a partial not attached reads nothing."""
    layout = tuples.Tuples(np.array([1, 0, 1, 0]), 2)
    column = np.array([10, 20, 30, 40])
    other = np.array([7, 7, 7, 7])
    layout.sorted[id(column)] = (other, other)
    layout.derived[id(column)] = (other, {"stale": True})
    assert layout.values(column).tolist() == [20, 40, 10, 30]
    assert layout.derived_of(column) == {}
    memo: dict = {}
    attached, stranger = (np.zeros(1),), (np.zeros(1),)
    assert tuples.attach(memo, attached, layout, column)
    memo["tuples", id(stranger)] = memo.pop(("tuples", id(attached)))
    assert tuples.runs(None, stranger, memo, np.zeros((1, 1), np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)) is None
