"""Pane partials of sparse cells (many more (pane, group) cells than tuples) built from the occupied cells
equal the dense builds: counts, sums, counts cumulated along the pairs, the interval synopsis's compaction."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from slidewise.operators.aggregates import accumulator
from slidewise.operators.aggregates.base import SPARSE, counts, cumulative_counts, sums
from slidewise.synopses import interval


@st.composite
def cells(draw):
    """Flat cell indices of a (rows x width) shape: few tuples in many cells (sparse), or many in few."""
    rows, width = draw(st.integers(1, 40)), draw(st.integers(0, 300))
    size = rows * width
    n = draw(st.integers(0, max(1, size // SPARSE // 2) if draw(st.booleans()) else 3 * size)) if size else 0
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    flat = np.sort(rng.integers(0, max(size, 1), n))
    return flat, (rows, width)


@given(cells())
def test_counts_sums_and_cumulative_counts_equal_the_dense_ones(case):
    flat, (rows, width) = case
    size = rows * width
    dense = np.bincount(flat, minlength=size).reshape(rows, width)
    got = counts(flat, (rows, width))
    assert got.dtype == np.int32 and np.array_equal(got, dense)
    weights = (flat % 7).astype(np.float64) - 2.5
    assert np.array_equal(sums(flat, weights, size), np.bincount(flat, weights=weights, minlength=size))
    cum = cumulative_counts(flat, (rows, width))
    assert cum.dtype == np.int32 and np.array_equal(cum, np.cumsum(dense, axis=1))


@given(cells())
def test_compacted_cells_count_the_held_cells_before_each_key(case):
    flat, (rows, width) = case
    acc = accumulator("max", np.dtype(np.int64), False, None)
    parts = acc.partial(flat % 11, flat // max(width, 1), flat % max(width, 1), (rows, width))
    before, row = interval._compact(acc, parts, None)
    held = np.ascontiguousarray((parts[1] > 0).T).reshape(-1)
    assert np.array_equal(before, np.concatenate([[0], np.cumsum(held)]))
    assert np.array_equal(row[0], parts[0].T.reshape(-1)[held])
