"""XJoin adapted to W-joins: a baseline of Hammad, Aref & Elmagarmid, "Stream Window Join: Tracking
Moving Objects in Sensor-Network Databases" (SSDBM 2003, §4.3, Fig. 8), after Urhan & Franklin's
XJoin (IEEE Data Engineering Bulletin 2000), its in-memory stage: a symmetric hash join.

Every stream's buffer is a hash table on its equi-join attributes; a new tuple probes, stream by
stream in MW-join's order (a stream an equality links to those before first), the bucket of the
linked member's value, and keeps the tuples that arrived before it and meet the window constraints
with the members so far. The hash tables are purged only every ``purge`` arrivals, as the ripple
join's buffers (:mod:`~slidewise.operators.wjoin.ripple_join`). ``comparisons`` counts every tuple
of a probed bucket. Needs equalities connecting every stream (as HW-join). Results are MW-join's.
"""

from __future__ import annotations

import numpy as np

from slidewise.operators.wjoin.hw_join import HWJoin
from slidewise.operators.wjoin.ripple_join import RippleJoin
from slidewise.plan.wjoin import WJoinQuery

__all__ = ["XJoin"]


class XJoin(RippleJoin):
    """The adapted XJoin with periodic purges (see the module docstring)."""

    name = "xjoin"
    preference = 11
    hashed = True

    @classmethod
    def check(cls, query: WJoinQuery) -> None:
        """The equalities must connect every stream (HW-join's check, under this name)."""
        HWJoin.check.__func__(cls, query)  # type: ignore[attr-defined]

    def __init__(self, query: WJoinQuery) -> None:
        super().__init__(query)
        self.tables: dict[tuple[int, str], tuple[tuple[int, int], np.ndarray, np.ndarray]] = {}

    def _link(self, j: int, members: list[int]) -> tuple[int, str, str] | None:
        """An equality between ``j`` and a member: (member, its attribute, ``j``'s attribute)."""
        for e in self.query.join.equalities:
            for mine, other in ((e.left, e.right), (e.right, e.left)):
                if mine.stream == j and other.stream in members:
                    return other.stream, other.attr, mine.attr
        return None

    def _table(self, j: int, attr: str) -> tuple[np.ndarray, np.ndarray]:
        """Stream ``j``'s hash table on ``attr``: its buffer indices by value, and the sorted values."""
        b = self.buffers[j]
        version = (b.start, len(b.pos), int(b.pos[-1]) if len(b.pos) else -1)  # an append that replaces purged rows keeps (start, len)
        cached = self.tables.get((j, attr))
        if cached is None or cached[0] != version:
            values = (b.ts if attr == "ts" else b.cols.get(attr, b.ts))[b.start :]  # no column: nothing buffered
            order = np.argsort(values, kind="stable")
            cached = (version, order + b.start, values[order])
            self.tables[(j, attr)] = cached
        return cached[1], cached[2]

    def _candidates(self, j: int, idx: dict[int, np.ndarray], lo: np.ndarray, hi: np.ndarray, end: np.ndarray) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
        """The bucket of the linked member's value (the whole buffer if no equality links ``j``)."""
        link = self._link(j, list(idx))
        if link is None:
            return super()._candidates(j, idx, lo, hi, end)
        i, attr_i, attr_j = link
        bi = self.buffers[i]
        probe = (bi.ts if attr_i == "ts" else bi.cols[attr_i])[idx[i]]
        perm, values = self._table(j, attr_j)
        return perm, np.searchsorted(values, probe, "left"), np.searchsorted(values, probe, "right")
