"""Values at (window, group) cells (``synopses.cells``, ``WindowBatch.take`` with a count request): the
same values and nulls as whole windows (``synopses.values``), and the rows of ``WindowBatch.present``."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from slidewise.operators.aggregates import accumulator
from slidewise.runtime.pane_engine import Tally
from slidewise.synopses import SYNOPSES, cells, running, values
from slidewise.synopses.batch import WindowBatch

#: (aggregate, parameter, synopsis): every accumulator with a cell-by-cell evaluation, and one without
AGGREGATES = [
    ("count", None, "running"),
    ("sum", None, "running"),
    ("avg", None, "running"),
    ("min", None, "interval"),
    ("max", None, "interval"),
    ("max", None, "basic interval"),
    ("quantile", 0.5, "running"),
    ("quantile", 0.25, "running"),
    ("quantile distinct", 0.5, "running"),
]


def _accumulator(func: str, param):
    return accumulator(func.split()[0], np.dtype(np.float64), func.endswith("distinct"), param)


def _same(got: tuple, want: tuple) -> None:
    """Equal null masks, and equal values where not null."""
    gv, gn = got
    wv, wn = want
    gn = np.zeros(gv.shape, bool) if gn is None else gn
    wn = np.zeros(wv.shape, bool) if wn is None else wn
    assert np.array_equal(gn, wn)
    assert np.array_equal(np.where(wn, 0, gv), np.where(wn, 0, wv))


@st.composite
def blocks(draw):
    """Tuples in panes and groups (some groups and panes empty, ties, nulls as NaN) and windows of pane rows
    (empty ones, repeated ones)."""
    panes, groups = draw(st.integers(1, 30)), draw(st.integers(1, 12))
    rows = draw(st.lists(st.tuples(st.integers(0, panes - 1), st.integers(0, groups - 1), st.integers(-2, 3), st.booleans()), max_size=80))
    rows.sort(key=lambda r: r[0])
    pane = np.array([r[0] for r in rows], np.int64)
    group = np.array([r[1] for r in rows], np.int64)
    value = np.array([np.nan if r[3] and draw(st.booleans()) else float(r[2]) for r in rows], np.float64)
    ends = draw(st.lists(st.tuples(st.integers(0, panes), st.integers(0, panes)), min_size=1, max_size=20))
    lo = np.array([min(a, b) for a, b in ends], np.int64)
    hi = np.array([max(a, b) for a, b in ends], np.int64)
    return panes, groups, pane, group, value, lo, hi


@settings(max_examples=120, deadline=None)
@given(blocks(), st.sampled_from(AGGREGATES))
def test_cells_equal_whole_windows(block, aggregate):
    """``cells`` at every (window, group) cell equals ``values`` over whole windows (or declines: None)."""
    panes, groups, pane, group, value, lo, hi = block
    func, param, synopsis = aggregate
    acc = _accumulator(func, param)
    part = acc.partial(value, pane, group, (panes, groups))
    syn = SYNOPSES[synopsis]
    want = values(syn, acc, part, lo, hi, {})
    w, g = np.divmod(np.arange(len(lo) * groups), groups)
    got = cells(syn, acc, part, lo[w], hi[w], g, {})
    if synopsis == "basic interval" or func.endswith("distinct"):
        assert got is None
        return
    assert got is not None
    _same(got, (want[0].reshape(-1), None if want[1] is None else want[1].reshape(-1)))


@settings(max_examples=120, deadline=None)
@given(blocks(), st.sampled_from(AGGREGATES), st.integers(1, 3))
def test_batch_rows_read_at_cells_equal_whole_windows(block, aggregate, queries):
    """Several requests over one partial (windows repeated across them): the values ``take`` reads at the
    non-zero counts equal the whole windows' values at those cells, for every request."""
    panes, groups, pane, group, value, lo, hi = block
    func, param, synopsis = aggregate
    acc = _accumulator(func, param)
    count = Tally()
    shape = (panes, groups)
    part, tally = acc.partial(value, pane, group, shape), count.partial(None, pane, group, shape)
    asks = [(lo[i::queries], hi[i::queries]) for i in range(queries)] + [(lo, hi)]
    sparse, dense = WindowBatch(), WindowBatch()
    handles = []
    for a, b in asks:
        handles.append(tuple(batch.request(x, s, p, a, b) for batch in (sparse, dense) for x, s, p in ((count, running.windows, tally), (acc, SYNOPSES[synopsis], part))))
    each = []
    for cs, vs, cd, vd in handles:
        [per_window], column = sparse.present([cs])
        n = dense.result(cd)[0]
        assert np.array_equal(per_window, np.count_nonzero(n, axis=1))
        assert np.array_equal(column, np.nonzero(n)[1])
        vals, null = dense.result(vd)
        rows = np.nonzero(n)
        each.append((per_window, column, sparse.take([vs], [per_window], column, cs[0])))
        _same(each[-1][2], (vals[rows], None if null is None else null[rows]))
    # every request of one batch key at once: each one's rows and values, concatenated
    per_windows, column = sparse.present([h[0] for h in handles])
    assert all(np.array_equal(p, e[0]) for p, e in zip(per_windows, each))
    assert np.array_equal(column, np.concatenate([e[1] for e in each]))
    got = sparse.take([h[1] for h in handles], per_windows, column, handles[0][0][0])
    want = (np.concatenate([e[2][0] for e in each]), np.concatenate([np.zeros(len(e[2][0]), bool) if e[2][1] is None else e[2][1] for e in each]))
    _same(got, want)
