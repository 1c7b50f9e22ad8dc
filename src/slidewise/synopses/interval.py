"""The interval synopsis (Golab's thesis, §2.3.4): for aggregates that merge but do not subtract
(MIN, MAX), partials of dyadic intervals — b panes, b/2 pairs, ... — so a window of b panes is
the merge of at most 2 log b stored intervals.

All windows are decomposed level by level at once (the bottom-up walk of a
segment tree): at each level a window whose left end is a right child takes
that node and moves right, and likewise at its right end.

For an idempotent merge (MIN, MAX: ``acc.idempotent``) the intervals of 2^l panes
start at every pane instead (the sparse table of range-minimum queries, Bender and
Farach-Colton, "The LCA Problem Revisited", LATIN 2000, §3), and a window of
b panes is the merge of the two intervals of 2^⌊log2 b⌋ panes at its ends: two
probes per window for log b levels of the panes kept.
"""

from __future__ import annotations

import numpy as np

from slidewise.synopses.running import memoized


def levels(acc, partials: tuple) -> list[tuple]:
    """Level 0 = the panes; level l+1 merges pairs of level l (an odd tail padded with the identity)."""
    out = [partials]
    cur = partials
    while cur[0].shape[0] > 1:
        if cur[0].shape[0] % 2:
            pad = acc.identity((1,) + cur[0].shape[1:])
            cur = tuple(np.concatenate([c, p]) for c, p in zip(cur, pad))
        cur = acc.merge(tuple(c[0::2] for c in cur), tuple(c[1::2] for c in cur))
        out.append(cur)
    return out


def windows(acc, partials: tuple, lo: np.ndarray, hi: np.ndarray, memo: dict | None = None) -> tuple:
    """The state of each window ``[lo[k], hi[k])`` of pane rows, from the dyadic intervals; ``memo`` keeps
    the intervals of partials that several queries probe (keyed by the partials' identity)."""
    if getattr(acc, "idempotent", False):
        return _overlapping(acc, partials, lo, hi, memo)
    tree = memoized(memo, "interval", partials, lambda p: levels(acc, p))
    res = acc.identity((len(lo),) + partials[0].shape[1:])
    lo, hi = lo.astype(np.int64).copy(), hi.astype(np.int64).copy()
    for level in tree:
        take = (lo & 1).astype(bool) & (lo < hi)
        if take.any():
            res = _merge_rows(acc, res, take, level, lo[take])
            lo[take] += 1
        take = (hi & 1).astype(bool) & (lo < hi)
        if take.any():
            hi[take] -= 1
            res = _merge_rows(acc, res, take, level, hi[take])
        lo >>= 1
        hi >>= 1
        if not (lo < hi).any():
            break
    return res


def _merge_rows(acc, res: tuple, rows: np.ndarray, level: tuple, nodes: np.ndarray) -> tuple:
    merged = acc.merge(tuple(r[rows] for r in res), tuple(x[nodes] for x in level))
    for r, m in zip(res, merged):
        r[rows] = m
    return res


def doubling(acc, partials: tuple, depth: int, levels: list[tuple] | None = None) -> list[tuple]:
    """Level l: row i merges the panes ``i .. i + 2^l − 1`` (rows while they fit), for l = 0 .. ``depth``
    (continuing ``levels``, the first ones, if given)."""
    out = list(levels) if levels else [partials]
    for level in range(len(out), depth + 1):
        cur, half = out[-1], 1 << (level - 1)
        if cur[0].shape[0] <= half:
            break
        out.append(acc.merge(tuple(c[:-half] for c in cur), tuple(c[half:] for c in cur)))
    return out


def _table(acc, partials: tuple, need: int, memo: dict | None) -> list[tuple]:
    """The intervals of 2^l panes starting at every pane, l = 0 .. ``need`` (kept in ``memo``)."""
    key = ("doubling", id(partials))
    table = None if memo is None else memo.get(key)
    if table is None or len(table) <= need:
        table = doubling(acc, partials, need, table)
        if memo is not None:
            memo[key] = table
    return table


def _levels(width: np.ndarray) -> np.ndarray:
    """⌊log2 width⌋ (exact for integers); -1 for an empty window."""
    level = np.frexp(np.maximum(width, 1))[1].astype(np.int64) - 1
    level[width <= 0] = -1
    return level


def _overlapping(acc, partials: tuple, lo: np.ndarray, hi: np.ndarray, memo: dict | None) -> tuple:
    """Each window ``[lo, hi)`` as the merge of the intervals of 2^l panes at its two ends (``acc.merge``
    idempotent in the value; the count component then only tells whether a cell has values)."""
    return _probe(acc, partials, lo.astype(np.int64), hi.astype(np.int64), memo)


def _probe(acc, rows: tuple, lo: np.ndarray, hi: np.ndarray, memo: dict | None) -> tuple:
    """The merge of ``rows[lo[i]:hi[i]]`` for each i: the two intervals of 2^l rows at its ends (from the
    doubling table of ``rows``), identity where ``hi <= lo``."""
    width = hi - lo
    res = acc.identity((len(lo),) + rows[0].shape[1:])
    if not len(lo) or width.max(initial=0) <= 0:
        return res
    table = _table(acc, rows, int(width.max()).bit_length() - 1, memo)
    level = _levels(width)
    for lv in np.unique(level[level >= 0]).tolist():
        at = np.flatnonzero(level == lv)
        part = table[lv]
        merged = acc.merge(tuple(x[lo[at]] for x in part), tuple(x[hi[at] - (1 << lv)] for x in part))
        if len(at) == len(lo):
            return merged
        for r, m in zip(res, merged):
            r[at] = m
    return res


def _compact(acc, partials: tuple, memo: dict | None) -> tuple[np.ndarray, tuple]:
    """The cells of ``partials`` with values, column-major (each column's panes in order): their states as
    one row, and for each key ``column × panes + pane`` how many of them come before it (kept in ``memo``)."""
    key = ("compact", id(partials))
    if memo is not None and key in memo:
        return memo[key]
    empty = acc.identity((1, 1))
    held = np.logical_or.reduce([x != e for x, e in zip(partials, empty)])
    col, pane = np.nonzero(held.T)  # column-major
    at = col * held.shape[0] + pane
    # before[k] = cells held before key k: a step at each held cell (a dense running count costs more)
    kind = np.int32 if held.size < 2**31 else np.int64  # half the memory the probes read
    before = np.repeat(np.arange(len(at) + 1, dtype=kind), np.diff(at, prepend=-1, append=held.size))
    out = before, tuple(x[pane, col] for x in partials)
    if memo is not None:
        memo[key] = out
    return out


def cells(acc, partials: tuple, lo: np.ndarray, hi: np.ndarray, col: np.ndarray, memo: dict | None = None) -> tuple:
    """The state of the cells ``(window [lo[c], hi[c]) of pane rows, column col[c])`` (``acc`` idempotent):
    a cell's panes with values are a run of the column-major compacted cells (:func:`_compact`: sparse
    groups keep few), merged by two probes of the intervals of 2^l of them (1-D state components)."""
    before, row = _compact(acc, partials, memo)
    panes = partials[0].shape[0]
    return _probe(acc, row, before.take(col * panes + lo), before.take(col * panes + hi), memo)
