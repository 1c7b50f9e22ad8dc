"""MW-join: the merge W-join (Hammad, Aref & Elmagarmid, "Stream Window Join: Tracking Moving
Objects in Sensor-Network Databases", SSDBM 2003, §3.2).

The paper's MW-join alternates two modes over the streams' buffers. Mode 1 searches the time axis
for a period holding one tuple of every stream and drops the tuples left of it; Mode 2 enumerates
the combinations inside the period. Here, as for the other joins of slidewise, tuples are processed
one at a time in the global order and each result is produced when its last member arrives:

* Mode 1 (period search, dropping tuples): for a new tuple at ``τ``, the removal rule drops from
  each buffer the tuples that no later arrival can meet, ``ts + reach < τ``
  (:meth:`~slidewise.plan.wjoin.WJoinQuery.reach`); buffers are in ``ts`` order, so this is a
  prefix. The new tuple's period over stream ``j`` is ``[τ - d[j][i], τ + d[i][j]]`` with the
  closed bounds ``d`` (for a single window ``w`` the paper's ``[TSmax - w, TSmin + w]``).
* Mode 2 (enumeration inside the period): streams are added one by one (in an order that follows
  the constraint graph); each partial combination carries its own period, shrunk by every member
  added, and a binary search finds the buffered tuples inside it. Equalities and filters are
  then evaluated over the columns of the complete combinations.

Buffers are columnar: per stream the arrived chunks, concatenated, with a start index (Mode 1) and
an end found by position (the tuples that arrived before the new one).
"""

from __future__ import annotations

import numpy as np

from slidewise.model.batch import ResultBatch, StreamBatch
from slidewise.plan.expr import Cmp, evaluate
from slidewise.plan.wjoin import WJoinQuery

__all__ = ["MWJoin"]


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

    def __len__(self) -> int:
        return len(self.pos) - self.start


class MWJoin:
    """The merge W-join over ``query``'s streams (see the module docstring)."""

    name = "mw-join"

    def __init__(self, query: WJoinQuery) -> None:
        self.query = query
        self.n = query.n
        self.d = np.array(query.bounds(), dtype=np.float64)
        self.reach = np.array(query.reach(), dtype=np.int64)
        self.aliases = query.join.aliases
        self.buffers = [_Buffer() for _ in range(self.n)]
        self.orders = [self._order(i) for i in range(self.n)]
        self.predicates = [Cmp("=", e.left, e.right) for e in query.join.equalities] + list(query.join.filters)
        self.comparisons = 0

    @classmethod
    def check(cls, query: WJoinQuery) -> None:
        """Every W-join runs on the merge W-join."""

    def _order(self, first: int) -> list[int]:
        """Streams in the order Mode 2 adds them after ``first``: the tightest period first."""
        order, rest = [first], set(range(self.n)) - {first}
        while rest:
            nxt = min(rest, key=lambda j: (min(self.d[i][j] + self.d[j][i] for i in order), j))
            order.append(nxt)
            rest.discard(nxt)
        return order

    def state_tuples(self) -> int:
        return sum(len(b) for b in self.buffers)

    def process(self, chunk: list[StreamBatch]) -> ResultBatch:
        """Join one chunk of arrivals (one batch per stream, in global order)."""
        for b in chunk:
            self.buffers[b.stream].append(b)
        arrivals = sorted((int(p), b.stream, int(t)) for b in chunk for p, t in zip(b.pos, b.ts))
        parts = [self._arrive(pos, stream, ts) for pos, stream, ts in arrivals]
        return ResultBatch.concat([p for p in parts if p is not None], self.n)

    def finish(self) -> ResultBatch:
        return ResultBatch.empty(self.n)

    def _arrive(self, pos: int, stream: int, ts: int) -> ResultBatch | None:
        bufs = self.buffers
        for j, b in enumerate(bufs):  # Mode 1: the removal rule
            b.start = max(b.start, int(np.searchsorted(b.ts, ts - self.reach[j], "left")))
        me = bufs[stream]
        own = int(np.searchsorted(me.pos, pos))
        idx = {stream: np.array([own], np.int64)}
        lo = {j: np.full(1, ts - self.d[j][stream]) for j in range(self.n)}
        hi = {j: np.full(1, ts + self.d[stream][j]) for j in range(self.n)}
        rows = 1
        for j in self.orders[stream][1:]:  # Mode 2: enumeration inside the period
            b = bufs[j]
            end = int(np.searchsorted(b.pos, pos))
            first = np.maximum(np.searchsorted(b.ts[:end], lo[j], "left"), b.start)
            last = np.searchsorted(b.ts[:end], hi[j], "right")
            counts = np.maximum(last - first, 0)
            self.comparisons += int(counts.sum())
            rows = int(counts.sum())
            if rows == 0:
                return None
            take = np.repeat(np.arange(len(counts)), counts)
            offsets = np.arange(rows) - np.repeat(np.cumsum(counts) - counts, counts)
            picked = np.repeat(first, counts) + offsets
            idx = {k: v[take] for k, v in idx.items()}
            idx[j] = picked
            t_j = b.ts[picked]
            for k in range(self.n):  # shrink every partial combination's period
                lo[k] = np.maximum(lo[k][take], t_j - self.d[k][j])
                hi[k] = np.minimum(hi[k][take], t_j + self.d[j][k])
        members = np.stack([bufs[k].pos[idx[k]] for k in range(self.n)], axis=1)
        member_ts = [bufs[k].ts[idx[k]] for k in range(self.n)]
        ok = np.ones(rows, bool)
        if self.predicates:

            def get(s: int, attr: str):
                return member_ts[s] if attr == "ts" else bufs[s].cols[attr][idx[s]]

            for p in self.predicates:
                ok &= np.broadcast_to(np.asarray(evaluate(p, get), bool), ok.shape)
        if not ok.any():
            return None
        exp = np.min(np.stack([member_ts[k] + self.reach[k] for k in range(self.n)]), axis=0)
        cols: dict[str, np.ndarray] = {}
        for k, alias in enumerate(self.aliases):
            cols[f"{alias}.ts"] = member_ts[k][ok]
            for c, v in bufs[k].cols.items():
                cols[f"{alias}.{c}"] = v[idx[k][ok]]
        count = int(ok.sum())
        return ResultBatch(members[ok], np.full(count, ts, np.int64), exp[ok], np.ones(count, np.int8), cols)
