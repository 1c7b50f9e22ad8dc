"""The windowed hash join with circular-buffer hash buckets of a fragment of an ICEIS 2005 paper on
windowed join operators (its §2 and conclusions; cost terms after Kang, Naughton & Viglas,
"Evaluating Window Joins over Unbounded Streams", ICDE 2003, §4.2 Eq. 4).

The binary windowed nested-loops join of :mod:`~slidewise.operators.wjoin.wnl_join` (an arrival
invalidates the opposite window) with each window hashed on the equi-join attribute: a
:class:`~slidewise.windows.hashed.HashWindow` of ``buckets`` buckets, each a FIFO in arrival order
(the paper's circular buffer). As tuples expire in arrival order, an expired tuple is the head of
its bucket: invalidation touches one tuple per expired tuple, never scans a bucket. A probe
touches the bucket of the new tuple's value only, all of it inside the window. Per arrival the
work is one insert, the expired tuples and one bucket (with ``buckets`` above the values in a
window: the matches) — linear in the input rate, plus the results; not quadratic as with buckets
whose invalidation scans them (Viglas & Naughton). Needs an equality between the two streams.
"""

from __future__ import annotations

import numpy as np

from slidewise.errors import OptionError
from slidewise.model.batch import Tup
from slidewise.operators.wjoin.wnl_join import WNLJoin
from slidewise.plan.query import WindowSpec
from slidewise.plan.wjoin import WJoinQuery
from slidewise.windows.hashed import HashWindow

__all__ = ["WHJoin"]


class WHJoin(WNLJoin):
    """The windowed hash join with circular-buffer buckets (see the module docstring)."""

    name = "whj"
    preference = 22
    hashed = True
    #: hash buckets per window
    buckets = 1024

    @classmethod
    def check(cls, query: WJoinQuery) -> None:
        """Two streams with an equality between them."""
        super().check(query)
        if not query.join.equalities:
            raise OptionError(f"{cls.name} needs an equi-join predicate between the two streams", hint="add WHERE A.x = B.y, or use --algorithm wnl-join")

    def __init__(self, query: WJoinQuery) -> None:
        super().__init__(query)
        e = query.join.equalities[0]
        self.keys = {e.left.stream: e.left.attr, e.right.stream: e.right.attr}
        self.windows = [HashWindow(WindowSpec("range", int(self.d[x][1 - x])), self.buckets, self.keys[x]) for x in range(2)]

    def _value(self, x: int, i: int) -> object:
        b, attr = self.buffers[x], self.keys[x]
        return (b.ts if attr == "ts" else b.cols[attr])[i].item()

    def _invalidate(self, x: int, clock: int) -> None:
        super()._invalidate(x, clock)  # counts the expired tuples
        self.windows[x].expire(clock)

    def _probe(self, o: int, s: int, i: int, ts: int) -> np.ndarray | None:
        bucket = list(self.windows[o].probe(self._value(s, i)))
        self.comparisons += len(bucket)
        return np.searchsorted(self.buffers[o].pos, np.array([t.pos for t in bucket], np.int64))

    def _insert(self, s: int, i: int) -> None:
        b = self.buffers[s]
        self.windows[s].insert(Tup(s, int(b.pos[i]), int(b.ts[i]), 1, {self.keys[s]: self._value(s, i)}))
        self.comparisons += 1
