"""GCA and LCA: the conservative filter–refine W-joins for different windows (Hammad, Aref &
Elmagarmid, "Stream Window Join: Tracking Moving Objects in Sensor-Network Databases", SSDBM 2003,
§5.1; missing constraints completed first by shortest paths, §5.2).

Both run MW-join (:mod:`~slidewise.operators.wjoin.mw_join`: Mode 1, Mode 2, its removal rule)
under looser, symmetric bounds — the filter step — and keep the combinations whose timestamps
satisfy every window constraint of the query — the refinement step, one comparison per
constraint and candidate:

* GCA (global conservative approach): one window for every pair, the largest closed bound
  ``W = max_ij d[i][j]`` (Form 2 treated as Form 1);
* LCA (local conservative approach): per stream its local window ``w_i = max_j max(d[i][j],
  d[j][i])``; a tuple of ``i`` confines every other stream to ``[ts - w_i, ts + w_i]``, so the
  filter bound between ``i`` and ``j`` is ``min(w_i, w_j)``.

Buffers keep what the filter's window needs (GCA: ``W`` for every stream), as in the paper; the
results (members, ``ts``, ``exp``, their order) are MW-join's.
"""

from __future__ import annotations

import numpy as np

from slidewise.operators.wjoin.mw_join import MWJoin, result_orders
from slidewise.plan.wjoin import WJoinQuery

__all__ = ["GCAJoin", "LCAJoin", "local_windows"]


def local_windows(query: WJoinQuery) -> np.ndarray:
    """Per stream, the largest closed bound between it and another stream (either direction)."""
    d = np.array(query.bounds(), dtype=np.float64)
    return np.maximum(d, d.T).max(axis=1)


class GCAJoin(MWJoin):
    """The global conservative approach (see the module docstring)."""

    name = "gca"
    preference = 3
    refines = True

    def __init__(self, query: WJoinQuery) -> None:
        super().__init__(query)
        self.mw_orders = result_orders(query)
        self.constraints = query.constraints

    @staticmethod
    def filter_bounds(query: WJoinQuery) -> list[list[float]]:
        w = local_windows(query).max()
        return [[0.0 if i == j else float(w) for j in range(query.n)] for i in range(query.n)]

    def refine(self, idx: dict[int, np.ndarray], stream: int) -> dict[int, np.ndarray]:
        """The candidates whose timestamps satisfy every constraint, in MW-join's order (Mode 2 enumerates
        in the lexicographic order of its own stream order: sorted only where that differs)."""
        ts = {k: self.buffers[k].ts[v] for k, v in idx.items()}
        self.comparisons += len(idx[stream]) * len(self.constraints)
        ok = np.ones(len(idx[stream]), bool)
        for c in self.constraints:
            gap = ts[c.b] - ts[c.a]
            ok &= (gap >= 0 if c.directed else gap >= -c.w) & (gap <= c.w)
        keep = np.flatnonzero(ok)
        if self.orders[stream] == self.mw_orders[stream]:  # Mode 2 enumerated them in MW-join's order
            return {k: v[keep] for k, v in idx.items()}
        pos = {k: self.buffers[k].pos[v[keep]] for k, v in idx.items()}
        order = np.lexsort([pos[k] for k in reversed(self.mw_orders[stream])])
        return {k: v[keep][order] for k, v in idx.items()}


class LCAJoin(GCAJoin):
    """The local conservative approach (see the module docstring)."""

    name = "lca"
    preference = 4

    @staticmethod
    def filter_bounds(query: WJoinQuery) -> list[list[float]]:
        w = local_windows(query)
        out = np.minimum(w[:, None], w[None, :])
        np.fill_diagonal(out, 0.0)
        return out.tolist()
