"""MEDIAN and QUANTILE(x, p): exact, from frequency counts per (group, value), which subtract.

The state is that of :class:`~slidewise.operators.aggregates.distinct.Distinct`
(a multiset of values per group as counts per (group, value) pair), kept
running along the pairs; it adds and subtracts, so a window's multiset goes
through the running synopsis like COUNT. The quantile
interpolates linearly between the order statistics around rank ``(n − 1)·p``
(SQL's ``PERCENTILE_CONT``, DuckDB's ``quantile_cont``, numpy's default):
:func:`interpolate`, which the per-tuple operator
(:mod:`slidewise.operators.aggregate`) uses too. Float result; nulls ignored;
null if no value; ``DISTINCT`` counts each value once.
"""

from __future__ import annotations

import numpy as np

from slidewise import kernels
from slidewise.operators.aggregates.base import cumulative_counts
from slidewise.operators.aggregates.distinct import Distinct


def ranks(n, p: float):
    """The ranks ``(i, j)`` (0-based) of the order statistics around ``(n − 1)·p`` and the weight of ``j``."""
    h = (np.asarray(n, dtype=np.float64) - 1) * p
    i = np.floor(h)
    return i.astype(np.int64), np.minimum(i + 1, np.maximum(np.asarray(n) - 1, 0)).astype(np.int64), h - i


def interpolate(lo, hi, frac):
    """The quantile between order statistics ``lo`` <= ``hi`` at weight ``frac`` of ``hi``."""
    return lo + (hi - lo) * frac


def of_sorted(values: list, p: float) -> float | None:
    """The quantile ``p`` of a sorted list of numbers (None if empty)."""
    if not values:
        return None
    i, j, frac = ranks(len(values), p)
    return float(interpolate(np.float64(values[int(i)]), np.float64(values[int(j)]), frac))


#: sorting networks of rows of 2, 4 and 8 values (compare-exchanges of positions, in order; Knuth, The Art
#: of Computer Programming vol. 3, §5.3.4; 19 for 8 values), for :meth:`Quantile.runs`
NETWORKS = {
    2: ((0, 1),),
    4: ((0, 1), (2, 3), (0, 2), (1, 3), (1, 2)),
    8: ((0, 2), (1, 3), (4, 6), (5, 7), (0, 4), (1, 5), (2, 6), (3, 7), (0, 1), (2, 3), (4, 5), (6, 7), (2, 4), (3, 5), (1, 4), (3, 6), (1, 2), (3, 4), (5, 6)),
}

#: :meth:`Quantile.between` searches the pairs when groups have this many on average (else forms the states)
SEARCH_PAIRS = 16


class Quantile(Distinct):
    """``QUANTILE(x, p)`` (MEDIAN: p = 0.5) of numeric ``x``; the partial's columns are (group, value) pairs,
    its cells the counts of values up to each pair (running along the pairs: still additive, so every
    synopsis applies, and a window's ranks need no scan of its own)."""

    share_key = "cumulative frequencies"
    #: cells of up to this many values are sorted (:meth:`runs`): the synopsis probes a partial of every
    #: (group, value) pair of the block, which costs more to build than sorting a few long cells
    longest_run = 256

    @property
    def tuplewise(self) -> bool:  # type: ignore[override]
        return not self.distinct

    def __init__(self, dtype: np.dtype | None = None, p: float = 0.5, distinct: bool = False):
        super().__init__(dtype, "quantile")
        self.p, self.distinct = p, distinct

    def answer_key(self) -> tuple:
        return (*super().answer_key(), self.p, self.distinct)

    def partial(self, values, pane_codes, group_codes, shape):
        return (cumulative_counts(*self.pair_cells(values, pane_codes, group_codes, shape)),)

    def from_counts(self, counts: np.ndarray) -> tuple:
        return (np.cumsum(counts, axis=1, dtype=np.int32),)

    def value(self, state):
        cum = state[0]
        windows, width = cum.shape
        if self.distinct:  # each present value once
            cum = np.cumsum(np.diff(cum, axis=1, prepend=0) > 0, axis=1, dtype=np.int32)
        bounds = np.searchsorted(self.pair_group, np.arange(self.groups + 1))
        run = np.concatenate([np.zeros((windows, 1), cum.dtype), cum], axis=1)
        base = run[:, bounds[:-1]]  # values before each group
        n = (run[:, bounds[1:]] - base).astype(np.int64)
        empty = n == 0
        if not width:
            return np.zeros(n.shape), (empty if empty.any() else None)
        # one sorted flat array: row w shifted by w * (its largest total + 1), so searchsorted finds ranks per row
        step = int(cum[:, -1].max()) + 1
        kind = np.int32 if windows * step < 2**31 else np.int64  # int32: half the memory the search walks
        off = np.arange(windows, dtype=kind)[:, None] * kind(step)
        flat = (cum.astype(kind, copy=False) + off).ravel()
        i, j, frac = ranks(n, self.p)
        values = self.pair_value.astype(np.float64)

        def at(rank):
            k = np.searchsorted(flat, (base.astype(kind, copy=False) + np.maximum(rank, 0).astype(kind) + off).ravel(), "right").reshape(n.shape)
            return values[np.clip(k - np.arange(windows)[:, None] * width, 0, width - 1)]

        out = interpolate(at(i), at(j), frac)
        return np.where(empty, 0.0, out), (empty if empty.any() else None)

    def runs(self, values, n):
        if self.distinct:
            return None
        if values.shape[1] == 1:  # one value: ranks 0 and 0 at weight 0
            v = values[:, 0].astype(np.float64)
            return interpolate(v, v, 0.0)
        # the padding last, then the order statistics of each row; integers sorted as int64 (faster row sorts
        # than float64; the conversion to float64 keeps their order)
        integer = values.dtype.kind in "ib" or (values.dtype.kind == "u" and values.dtype.itemsize < 8)
        pad = np.iinfo(np.int64).max if integer else np.inf
        i, j, frac = ranks(n, self.p)
        row = np.arange(len(n))
        network = NETWORKS.get(values.shape[1])
        if network is not None:  # short rows: compare-exchanges of whole columns (np.sort pays per row)
            v = np.array(values.T, dtype=np.int64 if integer else np.float64, order="C")  # v[k]: each row's k-th value
            for k in range(1, len(v)):
                np.copyto(v[k], pad, where=n <= k)
            for a, b in network:
                low = np.minimum(v[a], v[b])
                np.maximum(v[a], v[b], out=v[b])
                v[a] = low
            v = v.T
        else:
            v = values.astype(np.int64 if integer else np.float64)
            v = np.where(np.arange(v.shape[1]) < n[:, None], v, pad)
            v.sort(axis=1)
        return interpolate(v[row, i].astype(np.float64), v[row, j].astype(np.float64), frac)

    def ranges(self, values, start, n, derived):  # type: ignore[override]
        """Each run of at most :attr:`longest_run` values sorted in place of :meth:`runs`' rows (the compiled
        :func:`slidewise.kernels.quantile_runs`, same order statistics and interpolation); None without
        it (then :meth:`runs`)."""
        sort = None if self.distinct else kernels.kernel("quantile_runs", len(start))
        if sort is None:
            return None
        if values.dtype.kind == "b" or values.dtype == np.float16:  # (types the compiled loop does not take)
            values = values.astype(np.uint8 if values.dtype.kind == "b" else np.float32)
        return sort(values, start, n, float(self.p), self.longest_run)

    def between(self, run: tuple, lo: np.ndarray, hi: np.ndarray):
        """:meth:`value` of the windows ``run[hi] − run[lo]`` (running merges, as :meth:`prefix` gives) without
        forming their states: the counts at each group's bounds, and each rank by a binary search over the
        group's pairs, probing ``run`` at O(log pairs of the group) cells per (window, group) instead of
        at every pair."""
        cum = run[0]
        width = cum.shape[1]
        if self.distinct or width < SEARCH_PAIRS * self.groups:  # few pairs per group: forming the states costs less
            return self.value(self.subtract(tuple(r[hi] for r in run), tuple(r[lo] for r in run)))
        if not width:  # no values in the block
            return np.zeros((len(lo), self.groups)), np.ones((len(lo), self.groups), bool)
        flat = cum.reshape(-1)
        top, bottom = hi.astype(np.int64)[:, None] * width, lo.astype(np.int64)[:, None] * width

        def count(k):  # values of each (window, group) in the pairs up to k (a valid pair, or -1: none)
            return flat.take(top + k, mode="clip") - flat.take(bottom + k, mode="clip")

        bounds = np.searchsorted(self.pair_group, np.arange(self.groups + 1))
        start, end = bounds[:-1], bounds[1:]
        base = np.where(start > 0, count(np.maximum(start - 1, 0)), 0)
        n = (np.where(end > 0, count(np.maximum(end - 1, 0)), 0) - base).astype(np.int64)
        empty = n == 0
        i, j, frac = ranks(n, self.p)
        values = self.pair_value.astype(np.float64)
        # the groups with the most pairs first: the search's step 2**m only concerns the groups of more pairs
        span = end - start
        order = np.argsort(-span, kind="stable")
        span, first, stop = span[order], start[order] - 1, end[order]
        base = base[:, order]

        def at(rank):  # per (window, group): the first pair whose count up to it exceeds base + rank
            target = base + np.maximum(rank[:, order], 0)
            pos = np.repeat(first[None, :], len(lo), axis=0)  # the last pair with count <= target
            step = 1 << max(int(span[0]).bit_length() - 1, 0) if len(span) else 0
            while step:
                m = int(np.searchsorted(-span, -step, "right"))  # groups of at least ``step`` pairs
                p = pos[:, :m]
                cand = p + step
                np.copyto(p, cand, where=(cand < stop[:m]) & (count(cand) <= target[:, :m]))
                step >>= 1
            out = np.empty(pos.shape)
            out[:, order] = values[np.clip(pos + 1, 0, width - 1)]
            return out

        out = interpolate(at(i), at(j), frac)
        return np.where(empty, 0.0, out), (empty if empty.any() else None)

    def between_cells(self, run: tuple, lo: np.ndarray, hi: np.ndarray, col: np.ndarray):
        """The value at the cells ``(window run[hi[c]] − run[lo[c]], group col[c])`` (1-D), by the binary search
        of :meth:`between` over each cell's group of pairs; None for DISTINCT (then :meth:`value` answers)."""
        if self.distinct:
            return None
        cum = run[0]
        width = cum.shape[1]
        if not width:
            return np.zeros(len(lo)), np.ones(len(lo), bool)
        flat = cum.reshape(-1)
        top, bottom = hi * width, lo * width

        def count(cells, k):  # values of the cells' windows in the pairs up to k (a valid pair, or -1: none)
            return flat.take(top[cells] + k, mode="clip") - flat.take(bottom[cells] + k, mode="clip")

        every = slice(None)
        bounds = np.searchsorted(self.pair_group, np.arange(self.groups + 1))
        start, end = bounds[col], bounds[col + 1]
        base = np.where(start > 0, count(every, np.maximum(start - 1, 0)), 0)
        n = (np.where(end > 0, count(every, np.maximum(end - 1, 0)), 0) - base).astype(np.int64)
        empty = n == 0
        i, j, frac = ranks(n, self.p)
        values = self.pair_value.astype(np.float64)
        span = end - start
        top_step = 1 << max(int(span.max(initial=0)).bit_length() - 1, 0)

        def at(rank, cells):  # per cell of ``cells``: the first pair whose count up to it exceeds base + rank
            target = base[cells] + np.maximum(rank[cells], 0)
            pos, stop, wide = start[cells] - 1, end[cells], span[cells]  # pos: the last pair with count <= target
            step = top_step
            while step:
                live = np.flatnonzero(wide > step)  # from start − 1, a cell of at most ``step`` pairs cannot move by it
                cand = pos[live] + step
                ok = (cand < stop[live]) & (count(cells[live], cand) <= target[live])
                pos[live[ok]] = cand[ok]
                step >>= 1
            return values[np.clip(pos + 1, 0, width - 1)]

        cells = np.arange(len(col))
        low = at(i, cells)
        high = low.copy()
        # the upper order statistic only where it weighs (finite values: a weight 0 adds exactly 0)
        again = np.flatnonzero((j != i) & ((frac != 0) | ~np.isfinite(values).all()))
        high[again] = at(j, again)
        out = interpolate(low, high, frac)
        return np.where(empty, 0.0, out), (empty if empty.any() else None)
