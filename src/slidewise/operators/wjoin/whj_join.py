"""The windowed hash join with circular-buffer hash buckets of a fragment of an ICEIS 2005 paper on
windowed join operators (its §2 and conclusions; cost terms after Kang, Naughton & Viglas,
"Evaluating Window Joins over Unbounded Streams", ICDE 2003, §4.2 Eq. 4).

The binary windowed nested-loops join of :mod:`~slidewise.operators.wjoin.wnl_join` (an arrival
invalidates the opposite window) with each window hashed on the equi-join attribute: one bucket
per value in the window, each a FIFO of the tuples in arrival order (the paper's circular buffer;
here a :class:`collections.deque`). As tuples expire in arrival order, an expired tuple is the head
of its bucket: invalidation touches one tuple per expired tuple, never scans a bucket. A probe
touches the bucket of the new tuple's value only, all of it inside the window. Per arrival the
work is one insert, the expired tuples and the matching bucket — linear in the input rate (plus
the results), not quadratic as with buckets whose invalidation scans them (Viglas & Naughton).
Needs an equality between the two streams.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from slidewise.errors import OptionError
from slidewise.operators.wjoin.wnl_join import WNLJoin
from slidewise.plan.wjoin import WJoinQuery

__all__ = ["WHJoin"]


class WHJoin(WNLJoin):
    """The windowed hash join with circular-buffer buckets (see the module docstring)."""

    name = "whj"
    preference = 22
    hashed = True

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
        self.buckets: list[dict[object, deque[int]]] = [{}, {}]  # per stream: value -> positions, arrival order

    def _value(self, x: int, i: int) -> object:
        b, attr = self.buffers[x], self.keys[x]
        return (b.ts if attr == "ts" else b.cols[attr])[i].item()

    def _expire(self, x: int, start: int, stop: int) -> None:
        buckets = self.buckets[x]
        for i in range(start, stop):
            v = self._value(x, i)
            ring = buckets[v]
            ring.popleft()
            if not ring:
                del buckets[v]

    def _probe(self, o: int, s: int, i: int, ts: int) -> np.ndarray | None:
        ring = self.buckets[o].get(self._value(s, i))
        if ring is None:
            return None
        self.comparisons += len(ring)
        return np.searchsorted(self.buffers[o].pos, np.fromiter(ring, np.int64, len(ring)))

    def _insert(self, s: int, i: int) -> None:
        self.buckets[s].setdefault(self._value(s, i), deque()).append(int(self.buffers[s].pos[i]))
        self.comparisons += 1
