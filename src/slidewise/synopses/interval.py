"""The interval synopsis (Golab's thesis, §2.3.4): for aggregates that merge but do not subtract
(MIN, MAX), partials of dyadic intervals — b panes, b/2 pairs, ... — so a window of b panes is
the merge of at most 2 log b stored intervals.

All windows are decomposed level by level at once (the bottom-up walk of a
segment tree): at each level a window whose left end is a right child takes
that node and moves right, and likewise at its right end.
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
