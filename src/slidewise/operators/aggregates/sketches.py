"""APPROX_COUNT_DISTINCT(x) and APPROX_QUANTILE(x, p): mergeable sketches of Apache DataSketches.

A pane partial is one sketch per (pane, group) cell (an object array; None
for a cell without values): an HLL sketch (Flajolet et al.'s HyperLogLog,
``lg_k`` = :data:`HLL_LG_K`) of the distinct values, or a KLL sketch
(Karnin, Lang and Liberty, ``k`` = :data:`KLL_K`) of the numbers. Both merge
(a union of two sketches is the sketch of the union, within the same error
bound), so they go through the interval synopses like MIN/MAX; neither
subtracts. The library is the ``sketches`` extra (``pip install
'slidewise[sketches]'``), imported when a partial is first built.

Error bounds (the library's a priori bounds, :func:`count_error`,
:func:`rank_error`): the distinct count is within ±3 standard errors
(``3 · 1.04 / √4096`` ≈ 4.9 %, ~99.7 % confidence; exact below about 192
values, where the sketch keeps a list of hashes); the quantile is a value of
the window whose rank is within ``ε ≈ 1.33 %`` of ``p · n`` (99 % confidence;
exact up to ``k`` values).

Where tuples leave one at a time (the per-tuple operator: joins, count windows,
outputs at every change) a sketch cannot delete, so those paths answer the
exact aggregate (:func:`exact`) — which is within any error bound.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from slidewise.errors import require_extra
from slidewise.operators.aggregates.base import Accumulator, State, flat_index, not_null

#: HLL sketches keep 2**HLL_LG_K registers (relative standard error 1.04 / 2**(HLL_LG_K / 2) ≈ 1.6 %)
HLL_LG_K = 12
#: KLL sketches' accuracy parameter (normalized rank error ≈ 1.33 % with 99 % confidence)
KLL_K = 200
#: each approximate aggregate -> the exact aggregate its per-tuple form computes (and DISTINCT)
EXACT = {"approx_count_distinct": ("count", True), "approx_quantile": ("quantile", False)}


def library():
    """The ``datasketches`` module (an OptionError naming the extra when it is not installed)."""
    require_extra("sketches", "APPROX_COUNT_DISTINCT and APPROX_QUANTILE")
    import datasketches

    return datasketches


def exact(call):
    """The exact aggregate the per-tuple operator computes for an approximate one ``call`` (an AggCall)."""
    func, distinct = EXACT[call.func]
    return replace(call, func=func, distinct=distinct)


def count_error(num_std_devs: int = 3) -> float:
    """The relative error bound of an APPROX_COUNT_DISTINCT of a merged sketch, ``num_std_devs`` standard errors."""
    rel_err = library().hll_sketch.get_rel_err
    return max(abs(rel_err(upper, True, HLL_LG_K, num_std_devs)) for upper in (True, False))


def rank_error() -> float:
    """The normalized rank error of an APPROX_QUANTILE (99 % confidence, one quantile of one window)."""
    return float(library().kll_doubles_sketch.get_normalized_rank_error(KLL_K, False))


class Sketch(Accumulator):
    """Cells are sketches (None: no value); merging builds new sketches, so partials are never changed."""

    def partial(self, values, pane_codes, group_codes, shape) -> State:
        lib = library()
        flat = flat_index(pane_codes, group_codes, shape)
        ok = not_null(values) if values.dtype != object else np.array([v is not None for v in values], bool)
        if ok is not None:
            flat, values = flat[ok], values[ok]
        cells = np.full(shape[0] * shape[1], None, object)
        order = np.argsort(flat, kind="stable")
        flat, values = flat[order], values[order]
        starts = np.flatnonzero(np.r_[True, flat[1:] != flat[:-1]]) if len(flat) else np.empty(0, np.int64)
        for a, z in zip(starts.tolist(), np.r_[starts[1:], len(flat)].tolist()):
            cells[flat[a]] = self.sketch(lib, values[a:z])  # one element: never taken for a sequence
        return (cells.reshape(shape),)

    def merge(self, a: State, b: State) -> State:
        return (_merge_cells(a[0], b[0], self.union),)

    def identity(self, shape) -> State:
        return (np.full(shape, None, object),)

    def sketch(self, lib, values: np.ndarray):
        """The sketch of one cell's values."""
        raise NotImplementedError

    def union(self, a, b):
        """A new sketch of the union of two sketches."""
        raise NotImplementedError


class ApproxCountDistinct(Sketch):
    """``APPROX_COUNT_DISTINCT(x)`` of numbers or text: an HLL sketch per cell; int64 estimate (rounded), 0 if no value."""

    share_key = "hll"

    def sketch(self, lib, values):
        h = lib.hll_sketch(HLL_LG_K)
        update = h.update
        for v in values.tolist():
            update(v)
        return h

    def union(self, a, b):
        u = library().hll_union(HLL_LG_K)
        u.update(a)
        u.update(b)
        return u.get_result()

    def value(self, state):
        cells = state[0]
        out = np.zeros(cells.shape, np.int64)
        present = np.not_equal(cells, None)
        out[present] = [round(s.get_estimate()) for s in cells[present].tolist()]
        return out, None


class ApproxQuantile(Sketch):
    """``APPROX_QUANTILE(x, p)`` of numbers: a KLL sketch per cell; float64, a value of the window; null if no value."""

    share_key = "kll"

    def __init__(self, dtype: np.dtype | None = None, p: float = 0.5):
        super().__init__(dtype)
        self.p = p

    def sketch(self, lib, values):
        k = lib.kll_doubles_sketch(KLL_K)
        k.update(values.astype(np.float64))
        return k

    def union(self, a, b):
        k = library().kll_doubles_sketch(KLL_K)
        k.merge(a)
        k.merge(b)
        return k

    def value(self, state):
        cells = state[0]
        out = np.zeros(cells.shape, np.float64)
        present = np.not_equal(cells, None)
        out[present] = [s.get_quantile(self.p) for s in cells[present].tolist()]
        empty = ~present
        return out, (empty if empty.any() else None)


def _merge_cells(a: np.ndarray, b: np.ndarray, union) -> np.ndarray:
    """Cell-wise union of two object arrays of sketches (None: empty)."""
    out = np.where(np.equal(a, None), b, a)  # one side empty: the other (shared, never changed)
    both = np.not_equal(a, None) & np.not_equal(b, None)
    if both.any():
        out[both] = objects([union(x, y) for x, y in zip(a[both].tolist(), b[both].tolist())])
    return out


def objects(items: list) -> np.ndarray:
    """A 1-d object array of ``items`` (numpy would take a sketch that iterates for a sequence)."""
    out = np.empty(len(items), object)
    for i, x in enumerate(items):
        out[i] = x
    return out
