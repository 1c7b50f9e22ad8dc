"""The running synopsis (Golab's thesis, §2.3.4): a subtractable aggregate over a window of panes
is the difference of two running aggregates, ``f(panes < hi) − f(panes < lo)``.

The thesis keeps the b most recent running intervals while the window slides;
here the running merges of a block of panes are one cumulative sum per state
component, and every window of the block is answered by one subtraction.
"""

from __future__ import annotations

import numpy as np


def windows(acc, partials: tuple, lo: np.ndarray, hi: np.ndarray, memo: dict | None = None) -> tuple:
    """The state of each window ``[lo[k], hi[k])`` of pane rows (``acc`` subtractable); ``memo`` keeps the
    running merges of partials that several queries probe (keyed by the partials' identity)."""
    if not acc.subtractable:
        raise ValueError(f"{type(acc).__name__} is not subtractable: use an interval synopsis")
    run = memoized(memo, "running", partials, acc.prefix)  # row i: the panes before i
    return acc.subtract(tuple(_rows(r, hi) for r in run), tuple(_rows(r, lo) for r in run))


def cells(acc, partials: tuple, lo: np.ndarray, hi: np.ndarray, col: np.ndarray, memo: dict | None = None) -> tuple:
    """The state of the cells ``(window [lo[c], hi[c]) of pane rows, column col[c])``: two probes of the
    running merges per cell (1-D state components)."""
    if not acc.subtractable:
        raise ValueError(f"{type(acc).__name__} is not subtractable: use an interval synopsis")
    run = memoized(memo, "running", partials, acc.prefix)
    width = run[0].shape[1]
    top, bottom = hi * width + col, lo * width + col
    return acc.subtract(tuple(r.reshape(-1).take(top) for r in run), tuple(r.reshape(-1).take(bottom) for r in run))


def memoized(memo: dict | None, kind: str, partials: tuple, build):
    """``build(partials)``, kept in ``memo`` (if given) under ``kind`` and the partials' identity."""
    key = (kind, id(partials))
    if memo is None:
        return build(partials)
    if key not in memo:
        memo[key] = build(partials)
    return memo[key]


def _rows(x: np.ndarray, index: np.ndarray) -> np.ndarray:
    """``x[index]``; a view when ``index`` is a run of consecutive rows (windows of equal panes)."""
    n = len(index)
    if n and int(index[-1]) - int(index[0]) == n - 1 and (n < 3 or bool(np.all(np.diff(index) == 1))):
        return x[int(index[0]) : int(index[-1]) + 1]
    return x[index]
