"""The windowed nested-loops join of a fragment of an ICEIS 2005 paper on windowed join operators
(§2 and its comparison with Viglas & Naughton's nested-loops join; cost terms after Kang, Naughton
& Viglas, "Evaluating Window Joins over Unbounded Streams", ICDE 2003, §4.1).

A binary window join processed one arrival at a time, in the global order. Each stream keeps a
window of its tuples in arrival (and ``ts``) order; what differs is which window an arrival
invalidates, which is what the paper analyses (in work and memory):

* ``wnl-join`` (:class:`WNLJoin`) invalidates the *opposite* window on arrival — it drops the other
  stream's tuples that neither this nor a later arrival can meet (``ts + d < clock``, ``d`` the
  closed bound) — and scans it: every tuple left lies strictly within the window, no timestamp
  check is needed. A stream's own window is invalidated only when the other stream delivers.
* ``wnl-own`` (:class:`WNLOwnJoin`) invalidates its *own* window on arrival (Viglas & Naughton;
  Kang et al.'s Eq. 1 ``probe(b) + insert(a) + invalidate(a)``) and scans the opposite window as
  it stands, which may still hold tuples outside the window (if that stream stalls): a timestamp
  check per scanned tuple keeps only the tuples within it (the unchecked variant would emit them).

``comparisons`` counts the tuples touched (Kang et al.'s unit): scanned by the probe, inserted,
invalidated. ``peak`` and ``held`` (summed over arrivals) record the tuples the windows hold after
each arrival: the memory of the invalidation strategy. Results (members, ts, exp, order) are
MW-join's. Two streams only.
"""

from __future__ import annotations

import numpy as np

from slidewise.errors import OptionError
from slidewise.model.batch import ResultBatch, StreamBatch
from slidewise.operators.joins.base import Snapshots
from slidewise.operators.wjoin.mw_join import Rows, _Buffer, results
from slidewise.plan.expr import Cmp, Expr
from slidewise.plan.wjoin import WJoinQuery

__all__ = ["WNLJoin", "WNLOwnJoin"]


class WNLJoin(Snapshots):
    """The windowed nested-loops join invalidating the opposite window (see the module docstring)."""

    name = "wnl-join"
    cost_family = "baseline"  # planner facts: see MWJoin; a baseline is never chosen by the planner
    preference = 20
    per_arrival = 0.0
    hashed = False
    refines = False
    baseline = True
    #: the window an arrival invalidates: ``"opposite"`` or ``"own"``
    invalidates = "opposite"

    @classmethod
    def check(cls, query: WJoinQuery) -> None:
        """A binary join: exactly two streams."""
        if query.n != 2:
            raise OptionError(f"{cls.name} joins two streams, the query joins {query.n}", hint="use --algorithm mw-join, nlw-join or hw-join for more streams")

    def __init__(self, query: WJoinQuery) -> None:
        self.check(query)
        self.query = query
        self.n = 2
        self.d = np.array(query.bounds(), dtype=np.float64)
        self.reach = np.array(query.reach(), dtype=np.int64)
        self.aliases = query.join.aliases
        self.buffers = [_Buffer(), _Buffer()]
        self.predicates: list[Expr] = [Cmp("=", e.left, e.right) for e in query.join.equalities] + list(query.join.filters)
        self.comparisons = 0
        self.arrivals = 0
        self.peak = 0
        self.held = 0

    def state_tuples(self) -> int:
        return sum(len(b) for b in self.buffers)

    def process(self, chunk: list[StreamBatch]) -> ResultBatch:
        """Join one chunk of arrivals (one batch per stream, in global order), one arrival at a time."""
        for b in chunk:
            self.buffers[b.stream].append(b)
        arrivals = sorted((int(p), b.stream) for b in chunk for p in b.pos)
        parts = [self._arrive(p, s) for p, s in arrivals]
        return ResultBatch.concat([p for p in parts if p is not None], self.n)

    def finish(self) -> ResultBatch:
        return ResultBatch.empty(self.n)

    def _invalidate(self, x: int, clock: int) -> None:
        """Drop stream ``x``'s tuples that no arrival of the other stream from ``clock`` on can meet."""
        b = self.buffers[x]
        start = max(b.start, int(np.searchsorted(b.ts, clock - self.d[x][1 - x], "left")))
        self.comparisons += start - b.start
        b.start = start

    def _arrive(self, p: int, s: int) -> ResultBatch | None:
        o, b = 1 - s, self.buffers[s]
        i = int(np.searchsorted(b.pos, p))
        ts = int(b.ts[i])
        self.arrivals += 1
        if self.invalidates == "opposite":
            self._invalidate(o, ts)
        found = self._probe(o, s, i, ts)
        self._insert(s, i)
        if self.invalidates == "own":
            self._invalidate(s, ts)
        other = self.buffers[o]
        held = int(np.searchsorted(other.pos, p)) - other.start + i + 1 - b.start
        self.peak = max(self.peak, held)
        self.held += held
        if found is None or not len(found):
            return None
        rows: Rows = {s: b.rows(np.full(len(found), i)), o: other.rows(found)}
        return results(rows, self.predicates, self.aliases, self.reach)

    def _probe(self, o: int, s: int, i: int, ts: int) -> np.ndarray | None:
        """The indices of stream ``o``'s window that join the new tuple ``i`` of ``s`` (a scan)."""
        b = self.buffers[o]
        found = np.arange(b.start, int(np.searchsorted(b.pos, self.buffers[s].pos[i])))
        self.comparisons += len(found)
        if self.invalidates == "own":  # the window may hold tuples beyond it: check each
            found = found[b.ts[found] >= ts - self.d[o][s]]
        return found

    def _insert(self, s: int, i: int) -> None:
        self.comparisons += 1


class WNLOwnJoin(WNLJoin):
    """The windowed nested-loops join invalidating its own window (see the module docstring)."""

    name = "wnl-own"
    preference = 21
    invalidates = "own"
