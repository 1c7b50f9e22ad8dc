"""The basic interval synopsis (Golab's thesis, §2.3.4): only the b panes are kept and a window
merges each of its panes (b probes); cheaper to maintain than the interval synopsis, slower
to probe.
"""

from __future__ import annotations

import numpy as np


def windows(acc, partials: tuple, lo: np.ndarray, hi: np.ndarray, memo: dict | None = None) -> tuple:
    """The state of each window ``[lo[k], hi[k])`` of pane rows, merging pane by pane (nothing to memoize)."""
    res = acc.identity((len(lo),) + partials[0].shape[1:])
    if not len(lo):
        return res
    width = hi - lo
    last = partials[0].shape[0] - 1
    for j in range(int(width.max(initial=0))):
        inside = j < width
        rows = np.minimum(lo + j, last)
        probe = tuple(x[rows] for x in partials)
        if not inside.all():
            empty = acc.identity(probe[0].shape)
            probe = tuple(np.where(_col(inside, p), p, e) for p, e in zip(probe, empty))
        res = acc.merge(res, probe)
    return res


def _col(mask: np.ndarray, like: np.ndarray) -> np.ndarray:
    return mask.reshape((-1,) + (1,) * (like.ndim - 1))
