"""MW-join: the merge W-join (Hammad, Aref & Elmagarmid, "Stream Window Join: Tracking Moving
Objects in Sensor-Network Databases", SSDBM 2003, §3.2).

The paper's MW-join alternates two modes over the streams' buffers. Mode 1 searches the time axis
for a period holding one tuple of every stream and drops the tuples left of it; Mode 2 enumerates
the combinations inside the period. Here, as for the other joins of slidewise, each result is
produced when its last member arrives (in the global order), and a chunk's arrivals of one stream
are processed together, columnar:

* Mode 1 (period search, dropping tuples): the removal rule drops from each buffer the tuples
  that no later arrival can meet, ``ts + reach < τ`` with ``τ`` the chunk's last timestamp
  (:meth:`~slidewise.plan.wjoin.WJoinQuery.reach`); buffers are in ``ts`` order, so this is a
  prefix. A new tuple's period over stream ``j`` is ``[τ - d[j][i], τ + d[i][j]]`` with the
  closed bounds ``d`` (for a single window ``w`` the paper's ``[TSmax - w, TSmin + w]``); as
  ``reach`` bounds every ``d``, the dropped tuples lie outside every later period.
* Mode 2 (enumeration inside the period): streams are added one by one (:func:`result_orders`: a
  stream an equality links to those before first, then the tightest period); each partial combination carries its own period, shrunk by every member
  added, and a binary search finds the buffered tuples inside it that arrived before the new
  tuple. An equality prunes the partial combinations at the step that adds its second stream
  (the paper applies the join predicate to complete combinations; testing it early gives the
  same results with fewer rows enumerated); the other predicates are evaluated over the columns of
  the complete combinations.

Buffers are columnar: per stream the arrived chunks, concatenated, with a start index (Mode 1) and
per new tuple an end found by position (the tuples that arrived before it). Results come in the
order of the arrivals that complete them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import reduce

import numpy as np

from slidewise.model.batch import ResultBatch, StreamBatch
from slidewise.operators.joins.base import Snapshots
from slidewise.plan.expr import Cmp, Col, Expr, evaluate
from slidewise.plan.wjoin import WJoinQuery

__all__ = ["Links", "MWJoin", "Rows", "equality_links", "greedy_order", "integer_bounds", "result_orders", "results", "take_rows"]

Rows = dict[int, dict[str, np.ndarray]]  # per member stream: "pos", "ts" and its value columns


def take_rows(rows: Rows, idx: np.ndarray) -> Rows:
    return {s: {c: v[idx] for c, v in cols.items()} for s, cols in rows.items()}


Links = Callable[[list[int]], Iterable[int]]


def integer_bounds(d: np.ndarray) -> np.ndarray:
    """The window bounds ``d`` rounded down, for integer timestamps (``ts >= x - d`` iff ``ts >= x - floor(d)``,
    ``ts <= x + d`` iff ``ts <= x + floor(d)``); an infinite one as 2^62."""
    return np.clip(np.floor(d), -(2**62), 2**62).astype(np.int64)


def equality_links(query: WJoinQuery) -> Links:
    """The streams an equality of ``query`` links to those of ``order``."""
    eqs = query.join.equalities
    return lambda order: {e.left.stream for e in eqs if e.right.stream in order} | {e.right.stream for e in eqs if e.left.stream in order}


def greedy_order(d: np.ndarray, first: int, linked: Links | None = None, prefer: Links | None = None, among: Iterable[int] | None = None) -> list[int]:
    """The streams (``among`` them, default all) from ``first`` on, each next one the one with the
    tightest period to those before (``min_i d[i][j] + d[j][i]``), among ``linked(order)`` if
    given, and among ``prefer(order)`` first if any."""
    order, rest = [first], set(range(len(d)) if among is None else among) - {first}
    while rest:
        allowed = rest if linked is None else rest & set(linked(order))
        preferred = set() if prefer is None else set(prefer(order))
        nxt = min(allowed, key=lambda j: (j not in preferred, min(d[i][j] + d[j][i] for i in order), j))
        order.append(nxt)
        rest.discard(nxt)
    return order


def result_orders(query: WJoinQuery) -> list[list[int]]:
    """Per stream, MW-join's Mode 2 order for its arrivals: a stream an equality links to those
    before first (its equality prunes at once), then the tightest period. Results of one arrival
    come in this order's lexicographic order of member positions, whatever the operator."""
    d, links = np.array(query.bounds(), dtype=np.float64), equality_links(query)
    return [greedy_order(d, i, prefer=links) for i in range(query.n)]


def results(rows: Rows, predicates: list[Expr], aliases: list[str], reach: np.ndarray) -> ResultBatch | None:
    """The complete combinations ``rows`` (every stream of FROM) that satisfy ``predicates``:
    ``ts`` their last member's, ``exp`` the first instant a member leaves its buffer."""
    n = len(aliases)
    ok = np.ones(len(rows[0]["pos"]), bool)
    for p in predicates:
        ok &= np.broadcast_to(np.asarray(evaluate(p, lambda st, attr: rows[st][attr]), bool), ok.shape)
    if not ok.any():
        return None
    if not ok.all():
        rows = take_rows(rows, np.flatnonzero(ok))
    members = np.stack([rows[k]["pos"] for k in range(n)], axis=1)
    member_ts = np.stack([rows[k]["ts"] for k in range(n)])
    cols: dict[str, np.ndarray] = {}
    for k, alias in enumerate(aliases):
        cols[f"{alias}.ts"] = rows[k]["ts"]
        cols.update({f"{alias}.{c}": v for c, v in rows[k].items() if c not in ("pos", "ts")})
    exp = np.min(member_ts + reach[:, None], axis=0)
    return ResultBatch(members, member_ts.max(axis=0), exp, np.ones(len(members), np.int8), cols)


class _Buffer:
    """One stream's tuples in arrival (and ``ts``) order, columnar; ``start``: the first one kept."""

    def __init__(self) -> None:
        self.pos = np.empty(0, np.int64)
        self.ts = np.empty(0, np.int64)
        self.cols: dict[str, np.ndarray] = {}
        self.start = 0

    def append(self, batch: StreamBatch) -> None:
        if not len(batch):
            return
        keep = slice(self.start, None)
        self.pos = np.concatenate([self.pos[keep], batch.pos])
        self.ts = np.concatenate([self.ts[keep], batch.ts])
        self.cols = {k: np.concatenate([self.cols[k][keep], v]) if k in self.cols else v for k, v in batch.cols.items()}
        self.start = 0

    def rows(self, idx: np.ndarray) -> dict[str, np.ndarray]:
        return {"pos": self.pos[idx], "ts": self.ts[idx], **{c: v[idx] for c, v in self.cols.items()}}

    def __len__(self) -> int:
        return len(self.pos) - self.start


class MWJoin(Snapshots):
    """The merge W-join over ``query``'s streams (see the module docstring)."""

    name = "mw-join"
    #: facts read by the W-join planner (:mod:`slidewise.optimizer.wjoin`): the cost formula family
    #: (``merge``: Mode 2's enumeration; ``pipeline``: binary window joins), the tie rank, and the
    #: fixed cost of one arrival in comparisons, per level for a pipeline (``slidewise bench wjoin``
    #: measures it; every operator handles a chunk's arrivals together)
    cost_family = "merge"
    preference = 0
    per_arrival = 10.0  # as measured by slidewise bench wjoin (3000 tuples in chunks of 1,024, 2-6 streams)
    hashed = False
    refines = False
    #: a baseline for ``slidewise bench wjoin``: run when named, never chosen by the planner
    baseline = False
    #: the candidate ranges are scanned (checked against the period), not exact
    scans = False

    def __init__(self, query: WJoinQuery) -> None:
        self.query = query
        self.n = query.n
        self.d = np.array(self.filter_bounds(query), dtype=np.float64)
        self.whole = integer_bounds(self.d)
        self.reach = np.array(query.reach(), dtype=np.int64)  # a result's exp
        self.keep = self.d.max(axis=1).astype(np.int64)  # Mode 1: a tuple is dropped once the clock passes ts + keep
        self.aliases = query.join.aliases
        self.buffers = [_Buffer() for _ in range(self.n)]
        self.orders = [greedy_order(self.d, i, prefer=equality_links(query)) for i in range(self.n)]
        # Mode 2 for the arrivals of stream s: per member k, the bounds its timestamp t puts on the period
        # over the streams order[1:] as t * sign + shift (then lo, then -hi: both shrink by a maximum)
        self.sign = np.repeat(np.array([1, -1], np.int64), self.n - 1)
        self.shift = [{k: -np.concatenate((self.whole[o[1:], k], self.whole[k, o[1:]])) for k in o} for o in self.orders]
        eqs = [Cmp("=", e.left, e.right) for e in query.join.equalities]
        # an equality is tested at the step of Mode 2 that adds the later of its two streams
        self.step_eqs = [
            {
                j: [p for p, e in zip(eqs, query.join.equalities) if j in (e.left.stream, e.right.stream) and {e.left.stream, e.right.stream} <= set(o[: o.index(j) + 1])]
                for j in o[1:]
            }
            for o in self.orders
        ]
        self.predicates: list[Expr] = list(query.join.filters)
        self.comparisons = 0

    @classmethod
    def check(cls, query: WJoinQuery) -> None:
        """Every W-join runs on the merge W-join."""

    @staticmethod
    def filter_bounds(query: WJoinQuery) -> list[list[float]]:
        """The bounds Mode 1 and Mode 2 search with: the query's closed bounds (exact, no refinement)."""
        return query.bounds()

    def refine(self, idx: dict[int, np.ndarray], stream: int) -> dict[int, np.ndarray]:
        """The enumerated combinations ``idx`` that satisfy the query (all of them: the bounds are exact)."""
        return idx

    def state_tuples(self) -> int:
        return sum(len(b) for b in self.buffers)

    def process(self, chunk: list[StreamBatch]) -> ResultBatch:
        """Join one chunk of arrivals (one batch per stream, in global order): the combinations of
        every arrival, in the order of the completing arrivals (each result's last member), read
        from the buffers at once."""
        for b in chunk:
            self.buffers[b.stream].append(b)
        parts = [p for p in (self._arrive(b.stream, b.pos) for b in chunk if len(b)) if p is not None]
        last = max((int(b.ts[-1]) for b in chunk if len(b)), default=None)
        if not parts:
            out = None
        else:
            idx = {k: np.concatenate([p[0][k] for p in parts]) if len(parts) > 1 else parts[0][0][k] for k in range(self.n)}
            if len(parts) > 1:
                o = np.argsort(np.concatenate([p[1] for p in parts]), kind="stable")
                idx = {k: v[o] for k, v in idx.items()}
            out = results({k: self.buffers[k].rows(idx[k]) for k in range(self.n)}, self.predicates, self.aliases, self.reach)
        if last is not None:
            self._remove(last, sum(len(b) for b in chunk))
        return out or ResultBatch.empty(self.n)

    def finish(self) -> ResultBatch:
        return ResultBatch.empty(self.n)

    def _remove(self, clock: int, arrivals: int) -> None:
        """Mode 1: the removal rule at ``clock`` (after every chunk of ``arrivals``)."""
        for j, b in enumerate(self.buffers):
            b.start = max(b.start, int(np.searchsorted(b.ts, clock - self.keep[j], "left")))

    def _candidates(self, j: int, idx: dict[int, np.ndarray], lo: np.ndarray, hi: np.ndarray, end: np.ndarray) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
        """Per partial combination ``idx``: the range ``[first, last)`` of stream ``j``'s buffer to
        enumerate (in the order of the returned permutation, ``None``: buffer order). Mode 2's ranges
        are exact: inside the period ``[lo, hi]``, arrived before (``end``)."""
        b = self.buffers[j]
        first = np.maximum(np.searchsorted(b.ts, lo, "left"), b.start)
        return None, first, np.minimum(np.searchsorted(b.ts, hi, "right"), end)

    def _holds(self, eqs: list[Cmp], members: dict[int, np.ndarray], take: np.ndarray, picked: np.ndarray, j: int) -> np.ndarray:
        """Where the equalities ``eqs`` hold on the partial combinations ``members`` (rows ``take``)
        extended by stream ``j``'s tuples ``picked``; integer columns (no NULL) compared at once, a
        member's value read per partial combination, then per row."""

        def get(st: int, attr: str) -> np.ndarray:
            b = self.buffers[st]
            col = b.ts if attr == "ts" else b.cols[attr]
            return col[picked] if st == j else col[members[st]][take]

        def holds(p: Cmp) -> np.ndarray:
            if isinstance(p.left, Col) and isinstance(p.right, Col):
                a, b = get(p.left.stream, p.left.attr), get(p.right.stream, p.right.attr)
                if a.dtype.kind in "iub" and b.dtype.kind in "iub":
                    return a == b
            return np.asarray(evaluate(p, get), bool)

        return reduce(np.logical_and, map(holds, eqs))

    def _arrive(self, stream: int, pos: np.ndarray) -> tuple[dict[int, np.ndarray], np.ndarray] | None:
        """Mode 2 for the new tuples ``pos`` of ``stream`` (all buffered already): the combinations
        (per stream, buffer indices) and their completing arrivals. The partial combinations are one
        2-D array of buffer indices (a column per stream added) and one of their periods over the
        streams of Mode 2's order (their lower bounds, then their upper bounds negated, so that one
        maximum shrinks both), integers: for integer timestamps ``ts >= x - d`` iff ``ts >= x - floor(d)``."""
        bufs, order, shift, m = self.buffers, self.orders[stream], self.shift[stream], self.n - 1
        idx = np.empty((len(pos), self.n), np.intp)  # the members added so far: columns 0..c-1
        idx[:, 0] = np.searchsorted(bufs[stream].pos, pos)
        period = np.multiply.outer(bufs[stream].ts[idx[:, 0]], self.sign) + shift[stream]  # over order[1:]: lo, then -hi
        root: np.ndarray | None = None  # per partial combination, its new tuple (None: one each, in order)
        for c, j in enumerate(order[1:], 1):
            b = bufs[j]
            end = np.searchsorted(b.pos, pos)  # per new tuple: the tuples that arrived before it
            end = end if root is None else end[root]
            members = {s: idx[:, i] for i, s in enumerate(order[:c])}
            lo, hi = period[:, c - 1], -period[:, m + c - 1]
            perm, first, last = self._candidates(j, members, lo, hi, end)
            counts = np.maximum(last - first, 0)
            through = np.cumsum(counts)  # per partial combination, the rows through its own
            rows = int(through[-1])
            take = np.repeat(np.arange(len(counts)), counts)
            picked = np.repeat(first - through + counts, counts) + np.arange(rows)
            if perm is not None or self.scans:  # a scan: keep what arrived before and lies in the period
                picked = picked if perm is None else perm[picked]
                before = picked < end[take]
                take, picked = take[before], picked[before]
                rows = len(picked)
                inside = (b.ts[picked] >= lo[take]) & (b.ts[picked] <= hi[take])
                self.comparisons += rows
                take, picked = take[inside], picked[inside]
                rows = len(picked)
            else:
                self.comparisons += rows
            if rows == 0:
                return None
            if self.step_eqs[stream][j]:  # the equalities the new member completes, before the rows are extended
                keep = np.flatnonzero(self._holds(self.step_eqs[stream][j], members, take, picked, j))
                if len(keep) < rows:
                    if not len(keep):
                        return None
                    take, picked = take[keep], picked[keep]
            idx = idx[take]
            idx[:, c] = picked
            root = take if root is None else root[take]
            if c < m:  # shrink every partial combination's period
                period = period[take]
                np.maximum(period, np.multiply.outer(b.ts[picked], self.sign) + shift[j], out=period)
        found = self.refine({s: idx[:, c] for c, s in enumerate(order)}, stream)
        if not len(found[stream]):
            return None
        return found, bufs[stream].pos[found[stream]]
