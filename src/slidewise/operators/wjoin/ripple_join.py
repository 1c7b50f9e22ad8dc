"""The ripple join adapted to W-joins: a baseline of Hammad, Aref & Elmagarmid, "Stream Window Join:
Tracking Moving Objects in Sensor-Network Databases" (SSDBM 2003, §4.3, Fig. 7), after Haas &
Hellerstein's ripple join (SIGMOD 1999).

A symmetric nested-loop join over the streams' raw buffers: a new tuple scans, stream by stream in
MW-join's order (:func:`~slidewise.operators.wjoin.mw_join.result_orders`), every buffered tuple
that arrived before it and keeps those whose timestamps meet the window constraints with the
members so far (the adaptation to the window constraint). The buffers are purged only every
``purge`` arrivals (the paper: every 10,000 tuples) by MW-join's removal rule; in between, the
scans also visit the tuples no later arrival can meet. ``comparisons`` counts every tuple scanned.
Results (members, ts, exp and their order) are MW-join's.
"""

from __future__ import annotations

import numpy as np

from slidewise.operators.wjoin.mw_join import MWJoin
from slidewise.plan.wjoin import WJoinQuery

__all__ = ["RippleJoin"]


class RippleJoin(MWJoin):
    """The adapted ripple join with periodic purges (see the module docstring)."""

    name = "ripple-join"
    cost_family = "baseline"
    preference = 10
    baseline = True
    scans = True
    #: arrivals between two purges of the buffers
    purge = 1000

    def __init__(self, query: WJoinQuery) -> None:
        self.check(query)
        super().__init__(query)
        self.unpurged = 0

    def _remove(self, clock: int, arrivals: int) -> None:
        """The removal rule, once ``purge`` arrivals have come since the last purge."""
        self.unpurged += arrivals
        if self.unpurged >= self.purge:
            super()._remove(clock, arrivals)
            self.unpurged = 0

    def _candidates(self, j: int, idx: dict[int, np.ndarray], lo: np.ndarray, hi: np.ndarray, end: np.ndarray) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
        """The whole buffer up to the new tuple."""
        return None, np.full(len(end), self.buffers[j].start), end
