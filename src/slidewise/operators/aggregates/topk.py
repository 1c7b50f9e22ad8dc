"""TOPK(k, x): the ``k`` most frequent values of ``x`` per group, exactly (frequency counts, which subtract).

The exact counterpart of the frequent-items query (Golab's thesis ch. 6,
:mod:`slidewise.synopses.frequent`) inside GROUP BY: the state is one
count per (group, value) pair present in the block, as for the DISTINCT
aggregates (:mod:`~slidewise.operators.aggregates.distinct`), so it runs on
the running synopsis. :meth:`TopK.value` ranks each window's pairs of a group
(:func:`ranked`: count descending, then value) and gives the first ``k``
values as text (:func:`joined`: joined by ``,``; null for a group without
values); the per-tuple operator (:mod:`slidewise.operators.aggregate`) ranks
with the same two functions (:func:`top_of`).
"""

from __future__ import annotations

import numpy as np

from slidewise.operators.aggregates.distinct import Distinct


def ranked(counts, values, *outer) -> np.ndarray:
    """TOPK's order of entries: by the ``outer`` keys (the first most significant), then count descending,
    then value."""
    return np.lexsort((values, -np.asarray(counts), *reversed(outer)))


def joined(values) -> str:
    """A top-k list as text: its values joined by ``,``."""
    return ",".join(str(v) for v in values)


def top_of(counts: dict, k: int) -> str | None:
    """The top-``k`` text of one multiset ``{value: count}``, None if it is empty."""
    if not counts:
        return None
    values = list(counts)
    order = ranked(np.fromiter(counts.values(), np.int64, len(values)), np.asarray(values))
    return joined(values[i] for i in order[:k].tolist())


#: cells selected from one by one at most; beyond, one sort of every entry is faster than a Python loop
SELECT_CELLS = 64


def select(cell: np.ndarray, counts: np.ndarray, col: np.ndarray, width: int, depth: int) -> tuple[np.ndarray, float] | None:
    """The entries that rank among the first ``depth`` of their cell (``cell`` non-decreasing; ``col`` below
    ``width``, unique in a cell), in their order: each cell of more than ``depth`` entries selects them with
    :func:`numpy.argpartition` (linear) on :func:`ranked`'s order as one key. The work: entries selected from.
    None: more than :data:`SELECT_CELLS` cells to select from (sort them all instead)."""
    start = np.flatnonzero(np.r_[True, cell[1:] != cell[:-1]]) if len(cell) else np.zeros(0, np.int64)
    end = np.r_[start[1:], len(cell)].astype(np.int64)
    big = np.flatnonzero(end - start > depth)
    if not len(big):
        return np.arange(len(cell)), 0.0
    if len(big) > SELECT_CELLS:
        return None
    key = col - counts.astype(np.int64) * width  # count descending, then value: ascending and unique in a cell
    keep = np.ones(len(cell), bool)
    for a, z in zip(start[big].tolist(), end[big].tolist()):
        keep[a:z] = False
        keep[a + np.argpartition(key[a:z], depth - 1)[:depth]] = True
    return np.flatnonzero(keep), float((end[big] - start[big]).sum())


class TopK(Distinct):
    """``TOPK(k, x)``: the partial's columns are (group, value) pairs, as :class:`Distinct`'s."""

    def __init__(self, dtype: np.dtype | None = None, k: int = 1):
        super().__init__(dtype, "count")
        self.k = k

    def answer_key(self) -> tuple:
        return (*super().answer_key(), self.k)

    def value(self, state):
        return self.top(self.rank(state, self.k))

    def rank(self, state, depth: int | None = None) -> tuple:
        """The sort of :meth:`value`, which does not depend on ``k`` (queries differing only in ``k`` share it):
        the shape, per (window, group) cell its pairs in :func:`ranked` order with their ranks, and the work
        done. ``depth``: only each cell's first ``depth`` pairs, selected (:func:`select`) and then sorted,
        which serves every ``k <= depth`` (or all pairs sorted, see :data:`SELECT_CELLS`). Work: entries
        selected from plus ``n*log2(n+1)`` for ``n`` sorted."""
        counts = state[0]
        windows, pairs = counts.shape
        if not pairs or not windows:
            return (windows, self.groups), None, 0.0
        # value rank of each pair (its column order is group-major, values ascending within a group)
        row = np.repeat(np.arange(windows), pairs)
        col = np.tile(np.arange(pairs), windows)
        flat = counts.ravel()
        keep = flat > 0
        row, col, flat = row[keep], col[keep], flat[keep]
        cell = row * self.groups + self.pair_group[col]  # non-decreasing: rows, then group-major columns
        work = 0.0
        chosen = None if depth is None else select(cell, flat, col, pairs, max(depth, 1))
        if chosen is not None:
            pick, work = chosen
            cell, col, flat = cell[pick], col[pick], flat[pick]
        order = ranked(flat, col, cell)  # per (window, group); a group's pairs are in value order
        work += len(order) * float(np.log2(len(order) + 1))
        cell, col = cell[order], col[order]
        start = np.flatnonzero(np.r_[True, cell[1:] != cell[:-1]])
        rank = np.arange(len(cell)) - np.repeat(start, np.diff(np.r_[start, len(cell)]))
        return (windows, self.groups), (cell, col, rank), work

    def top(self, ranking: tuple):
        """The first ``k`` values of each cell of :meth:`rank`'s sort, as text, and the null mask."""
        shape, found = ranking[0], ranking[1]
        out = np.full(shape, None, object)
        if found is None:
            return out, np.ones(out.shape, bool)
        cell, col, rank = found
        top = rank < self.k
        cell, col = cell[top], col[top]
        if not len(cell):
            return out, np.ones(out.shape, bool)
        bounds = np.flatnonzero(np.r_[True, cell[1:] != cell[:-1], True])
        values = self.pair_value[col].tolist()
        flat_out = out.reshape(-1)
        for a, z in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            flat_out[cell[a]] = joined(values[a:z])
        null = np.equal(out, None)
        return out, (null if null.any() else None)
