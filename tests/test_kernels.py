"""The compiled kernels (slidewise.kernels, numba) against their numpy paths and small oracles: equal answers."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slidewise import kernels
from slidewise.bench.sharing import _rows, queries, stream
from slidewise.many import run_many
from slidewise.operators.aggregates import accumulator
from slidewise.operators.aggregates.base import running_sum
from slidewise.operators.aggregates.quantile import of_sorted
from slidewise.synopses import tuples
from slidewise.synopses.batch import WindowBatch
from slidewise.synopses.running import windows as running_windows

pytest.importorskip("numba", reason="the kernels need numba: pip install -e '.[fast]'")


@pytest.fixture(autouse=True, scope="module")
def any_size():
    """Kernels on inputs of any size (the tests' are small), used unless a test switches them off."""
    saved, switch = kernels.MIN_WORK, os.environ.pop("SLIDEWISE_NO_NUMBA", None)
    kernels.MIN_WORK = 0
    yield
    kernels.MIN_WORK = saved
    if switch is not None:
        os.environ["SLIDEWISE_NO_NUMBA"] = switch


def both(f):
    """``f()`` with the kernels, then with the numpy paths (``SLIDEWISE_NO_NUMBA=1``)."""
    fast = f()
    os.environ["SLIDEWISE_NO_NUMBA"] = "1"
    try:
        slow = f()
    finally:
        del os.environ["SLIDEWISE_NO_NUMBA"]
    return fast, slow


def test_the_switch(monkeypatch):
    assert kernels.kernel("nonzero_cells") is not None
    monkeypatch.setenv("SLIDEWISE_NO_NUMBA", "1")
    assert kernels.kernel("nonzero_cells") is None
    monkeypatch.setenv("SLIDEWISE_NO_NUMBA", "0")
    assert kernels.kernel("nonzero_cells") is not None


def test_small_work_waits_for_a_loaded_kernel(monkeypatch):
    monkeypatch.setattr(kernels, "MIN_WORK", 100)
    monkeypatch.setattr(kernels, "_compiled", {})
    assert kernels.kernel("run_bounds", 99) is None
    assert kernels.kernel("run_bounds", 100) is not None
    assert kernels.kernel("run_bounds", 1) is not None  # loaded: any size


def test_a_kernel_that_does_not_import_waits_for_numba(monkeypatch):
    monkeypatch.setattr(kernels, "_compiled", {})
    monkeypatch.setattr(kernels, "_numba", [])
    assert kernels.kernel("nonzero_cells", 1 << 30, imports=False) is None  # numba not imported: numpy
    assert not kernels._numba
    assert kernels.kernel("run_bounds", 1 << 30) is not None  # imports numba
    assert kernels.kernel("nonzero_cells", 1 << 30, imports=False) is not None


@given(st.lists(st.lists(st.integers(-2, 2), min_size=0, max_size=9), min_size=0, max_size=8).filter(lambda r: len({len(x) for x in r}) <= 1))
def test_nonzero_cells_equal_numpy(rows):
    vals = np.array(rows, dtype=np.int32).reshape(len(rows), len(rows[0]) if rows else 0)
    per, columns = kernels.kernel("nonzero_cells")(vals)
    assert per.tolist() == np.count_nonzero(vals, axis=1).tolist()
    assert columns.tolist() == np.nonzero(vals)[1].tolist()


def test_window_batch_finds_the_same_cells():
    rng = np.random.default_rng(3)
    counts = (rng.integers(0, 3, (12, 7)) * (rng.random((12, 7)) < 0.4)).astype(np.int32)
    lo = rng.integers(0, 8, 30)
    hi = lo + rng.integers(0, 5, 30)

    def cells():
        batch = WindowBatch()
        handle = batch.request(accumulator("count", None), running_windows, (counts,), lo, hi)
        per, columns = batch.present([handle])
        return [p.tolist() for p in per], columns.tolist()

    fast, slow = both(cells)
    assert fast == slow


@st.composite
def blocks(draw, floats: bool = False):
    """Tuples of a block (pane, group, value; clock order) and cells (window of pane rows, group) none empty."""
    panes, groups = draw(st.integers(1, 6)), draw(st.integers(1, 5))
    n = draw(st.integers(1, 400))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    pane = np.sort(rng.integers(0, panes, n))
    group = rng.integers(0, groups, n) if draw(st.booleans()) else np.zeros(n, np.int64)
    if floats:
        value = draw(st.sampled_from([rng.normal(0, 1e3, n), rng.integers(-3, 3, n).astype(np.float64), np.full(n, -0.0)]))
    else:
        value = rng.integers(draw(st.sampled_from([-3, -(10**12)])), draw(st.sampled_from([3, 10**12])), n)
    counts = np.zeros((panes, groups), np.int32)
    np.add.at(counts, (pane, group), 1)
    run = running_sum(counts)
    lo = rng.integers(0, panes, 200)
    hi = np.minimum(lo + rng.integers(1, panes + 1, 200), panes)
    col = rng.integers(0, groups, 200)
    keep = run[hi, col] - run[lo, col] > 0
    return group, value, run, lo[keep], hi[keep], col[keep]


def _cell_runs(func, block, p=0.5):
    """``tuples.runs`` of ``func`` over a block: (values, cells left to the synopsis)."""
    group, value, run, lo, hi, col = block
    acc = accumulator(func, value.dtype, False, p) if func == "quantile" else accumulator(func, value.dtype)
    memo: dict = {}
    partial = (np.zeros(0),)
    assert tuples.attach(memo, partial, tuples.Tuples(group, run.shape[1]), value)
    got = tuples.runs(acc, partial, memo, run, lo.astype(np.int64), hi.astype(np.int64), col.astype(np.int64))
    assert got is not None
    return got


def _oracle(func, block, p=0.5):
    """Each cell's value from its tuples, in clock order (the cells of more than ``longest`` left out)."""
    group, value, run, lo, hi, col = block
    pane = np.repeat(np.arange(run.shape[0] - 1), (run[1:] - run[:-1]).sum(axis=1))
    out = []
    for a, b, g in zip(lo, hi, col):
        vals = value[(group == g) & (pane >= a) & (pane < b)]
        out.append({"quantile": lambda v: of_sorted(sorted(v.tolist()), p), "max": np.max, "min": np.min, "sum": np.sum, "count": len}[func](vals))
    return out


@pytest.mark.parametrize("func", ["quantile", "max", "min", "sum", "count"])
@given(block=blocks(), p=st.sampled_from([0.5, 0.0, 1.0, 0.25, 0.9]))
def test_cells_from_tuples_equal_without_kernels_and_the_oracle(func, block, p):
    fast, slow = both(lambda: _cell_runs(func, block, p))
    expected = _oracle(func, block, p)
    for out, left in (fast, slow):
        done = np.setdiff1d(np.arange(len(expected)), left)
        assert set(left.tolist()) == set(slow[1].tolist())
        assert out[done].tolist() == [expected[i] for i in done]


@given(block=blocks(floats=True), p=st.sampled_from([0.5, 0.1, 1.0]))
def test_quantiles_of_float_cells(block, p):
    fast, slow = both(lambda: _cell_runs("quantile", block, p))
    expected = _oracle("quantile", block, p)
    for out, left in (fast, slow):
        done = np.setdiff1d(np.arange(len(expected)), left)
        assert out[done].tolist() == [expected[i] for i in done]


def test_long_runs_are_left_to_the_synopsis():
    values = np.arange(600, dtype=np.int64)[::-1].copy()
    out, left = kernels.kernel("quantile_runs")(values, np.array([0, 10, 0]), np.array([600, 3, 257]), 0.5, 256)
    assert left.tolist() == [0, 2]
    assert out[1] == 588.0


@settings(max_examples=4)
@given(st.integers(0, 1000), st.integers(0, 1000))
def test_run_many_answers_the_same_without_kernels(qseed, sseed):
    qs, frame = queries(12, seed=qseed), stream(1500, seed=sseed)
    fast, slow = both(lambda: run_many(qs, {"L": frame}))
    assert all(_rows(fast.results[q].results) == _rows(slow.results[q].results) for q in qs)


def test_without_numba_the_numpy_paths_answer(monkeypatch):
    """The core install (no numba): no kernel, and run_many still answers."""
    monkeypatch.setattr(kernels, "_numba", [None])
    monkeypatch.setattr(kernels, "_compiled", {})
    assert kernels.kernel("quantile_runs") is None
    qs, frame = queries(6, seed=2), stream(800, seed=2)
    assert all(len(r.results) for r in run_many(qs, {"L": frame}).results.values())


@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.int32, np.uint64, np.float16, np.float32])
@settings(max_examples=10)
@given(block=blocks())
def test_quantiles_and_extremes_of_other_types(dtype, block):
    group, value, run, lo, hi, col = block
    block = (group, (np.abs(value) % 50_000).astype(dtype) if dtype != np.bool_ else value > 0, run, lo, hi, col)
    for func in ("quantile", "max"):
        (fast, left), (slow, _) = both(lambda: _cell_runs(func, block))
        done = np.setdiff1d(np.arange(len(fast)), left)
        assert fast[done].tolist() == slow[done].tolist()
