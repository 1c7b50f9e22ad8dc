"""NLW-join: the nested-loop W-join (Hammad, Aref & Elmagarmid, "Stream Window Join: Tracking
Moving Objects in Sensor-Network Databases", SSDBM 2003, §3.1.1).

A left-deep pipeline of binary window joins: level ``k`` joins the m-tuples over the streams
``order[:k]`` (left; the first source at level 1) with the source ``order[k]`` (right). Every
m-tuple carries its members' timestamps; its period over stream ``j`` is
``[max_i(ts_i - d[j][i]), min_i(ts_i + d[i][j])]`` over its members ``i`` with the closed bounds
``d`` (for a single window ``w`` the paper's ``[TSmax - w, TSmin + w]``). A new tuple probes the
other side's buffer for the rows whose period holds it (here a columnar scan), the new
(m+1)-tuples are stored in the next level's left buffer and climb on; a result is produced when
its last member arrives. Equalities are tested at the first level where both their streams are
present, the other predicates on complete results.

Removal rule (the paper's per-buffer timestamp vectors): a buffered row is dropped once it lies
beyond the window of every later tuple of the other side. The paper keeps the largest timestamp
per source stream of the other side; as slidewise processes arrivals in the global ``ts`` order,
every later tuple of any stream is at or after the clock, so the rule drops a left m-tuple when
``min_i(ts_i + d[i][j]) < clock`` and a right tuple of ``j`` when ``ts_j + max_i d[j][i] < clock``.

Results (members, ts, exp and their order within an arrival) are those of
:class:`~slidewise.operators.wjoin.mw_join.MWJoin`.
"""

from __future__ import annotations

import numpy as np

from slidewise.model.batch import ResultBatch, StreamBatch
from slidewise.operators.joins.base import Snapshots
from slidewise.operators.wjoin.mw_join import Rows, result_orders, results
from slidewise.operators.wjoin.mw_join import take_rows as _take
from slidewise.plan.expr import Cmp, evaluate
from slidewise.plan.wjoin import WJoinQuery

__all__ = ["NLWJoin"]


def _len(rows: Rows) -> int:
    return len(next(iter(rows.values()))["pos"])


def _concat(a: Rows | None, b: Rows) -> Rows:
    if a is None or not _len(a):
        return b
    return {s: {c: np.concatenate([v, b[s][c]]) for c, v in cols.items()} for s, cols in a.items()}


class _Side:
    """One side's buffer of a pipeline level, split in buckets by ``key`` (one bucket: NLW)."""

    def __init__(self, key: tuple[int, str] | None) -> None:
        self.key = key
        self.buckets: dict[object, Rows] = {}

    def keys_of(self, rows: Rows) -> np.ndarray | None:
        return None if self.key is None else rows[self.key[0]][self.key[1]]

    def add(self, rows: Rows) -> None:
        keys = self.keys_of(rows)
        if keys is None:
            self.buckets[None] = _concat(self.buckets.get(None), rows)
            return
        for k in np.unique(keys):
            self.buckets[k.item()] = _concat(self.buckets.get(k.item()), _take(rows, np.flatnonzero(keys == k)))

    def probe(self, value: object) -> Rows | None:
        return self.buckets.get(None if self.key is None else value)

    def drop(self, bucket: object, keep: np.ndarray) -> None:
        if keep.all():
            return
        if keep.any():
            self.buckets[bucket] = _take(self.buckets[bucket], np.flatnonzero(keep))
        else:
            del self.buckets[bucket]

    def __len__(self) -> int:
        return sum(_len(r) for r in self.buckets.values())


class NLWJoin(Snapshots):
    """The nested-loop W-join over ``query``'s streams (see the module docstring)."""

    name = "nlw-join"
    cost_family = "pipeline"  # planner facts: see MWJoin
    preference = 1
    per_arrival = 915.0  # per arrival and level
    hashed = False
    baseline = False
    sweep = 64  # HW-join: every so many arrivals, the removal rule visits every bucket

    def __init__(self, query: WJoinQuery) -> None:
        self.check(query)
        self.query = query
        self.n = query.n
        self.d = np.array(query.bounds(), dtype=np.float64)
        self.reach = np.array(query.reach(), dtype=np.int64)
        self.aliases = query.join.aliases
        self.order = self._pipeline_order()
        self.level = {s: k for k, s in enumerate(self.order)}
        keys = [self._keys(k) for k in range(self.n)]  # (left key, right key) of level k >= 1
        self.left = [_Side(keys[k][0]) for k in range(self.n)]  # left[k]: m-tuples over order[:k]
        self.right = [_Side(keys[k][1]) for k in range(self.n)]  # right[k]: source order[k]
        self.mw_orders = result_orders(query)
        eqs = query.join.equalities
        self.level_eqs = [[Cmp("=", e.left, e.right) for e in eqs if max(self.level[e.left.stream], self.level[e.right.stream]) == k] for k in range(self.n)]
        self.filters = list(query.join.filters)
        self.comparisons = 0
        self.arrivals = 0

    @classmethod
    def check(cls, query: WJoinQuery) -> None:
        """Every W-join runs on the nested-loop pipeline."""

    def _pipeline_order(self) -> list[int]:
        """The streams bottom-up: MW-join's order from the first stream (:func:`result_orders`)."""
        return result_orders(self.query)[0]

    def _keys(self, k: int) -> tuple[tuple[int, str] | None, tuple[int, str] | None]:
        """The bucket keys of level ``k``'s left and right buffers (none: one bucket)."""
        return None, None

    def state_tuples(self) -> int:
        return sum(len(s) for s in self.left[1:] + self.right[1:])

    def process(self, chunk: list[StreamBatch]) -> ResultBatch:
        """Join one chunk of arrivals (one batch per stream, in global order)."""
        arrivals = sorted((int(p), b.stream, i, b) for b in chunk for i, p in enumerate(b.pos))
        parts = [self._arrive(b, i) for _, _, i, b in arrivals]
        return ResultBatch.concat([p for p in parts if p is not None], self.n)

    def finish(self) -> ResultBatch:
        return ResultBatch.empty(self.n)

    def _remove(self, clock: int, bucket: object = None, everywhere: bool = True) -> None:
        """The removal rule (module docstring) over every level, in ``bucket`` or everywhere."""
        for k in range(1, self.n):
            j, members = self.order[k], self.order[:k]
            for side, limit in ((self.left[k], None), (self.right[k], self.d[j][members].max())):
                for b in list(side.buckets) if everywhere else [bucket] if bucket in side.buckets else []:
                    rows = side.buckets[b]
                    end = self._period(rows, members, j)[1] if limit is None else rows[j]["ts"] + limit
                    side.drop(b, end >= clock)

    def _period(self, rows: Rows, members: list[int], j: int) -> tuple[np.ndarray, np.ndarray]:
        """Per m-tuple of ``rows`` (over ``members``): its period over stream ``j`` (module docstring)."""
        ts = np.stack([rows[i]["ts"] for i in members])
        return np.max(ts - self.d[j][members][:, None], axis=0), np.min(ts + self.d[members, j][:, None], axis=0)

    def _arrive(self, batch: StreamBatch, i: int) -> ResultBatch | None:
        s, ts = batch.stream, int(batch.ts[i])
        new: Rows = {s: {"pos": batch.pos[i : i + 1], "ts": batch.ts[i : i + 1], **{c: v[i : i + 1] for c, v in batch.cols.items()}}}
        self.arrivals += 1
        sweep = self.arrivals % self.sweep == 0 or self.right[1].key is None
        if sweep:
            self._remove(ts)
        k = self.level[s]
        if k == 0:
            self.left[1].add(new)
            rows: Rows | None = new
            start = 1
        else:
            rows = self._join(self.left[k], new, k, probe_right=False, clock=ts, sweep=sweep)
            self.right[k].add(new)
            start = k + 1
        for level in range(start, self.n):
            if rows is None or not _len(rows):
                return None
            if level > 1:
                self.left[level].add(rows)
            rows = self._join(self.right[level], rows, level, probe_right=True, clock=ts, sweep=sweep)
        if rows is None or not _len(rows):
            return None
        return self._results(rows, s)

    def _join(self, side: _Side, rows: Rows, k: int, probe_right: bool, clock: int, sweep: bool) -> Rows | None:
        """``rows`` (new left m-tuples, or one new right tuple) joined with ``side``'s buffer at level ``k``."""
        j, members = self.order[k], self.order[:k]
        probe_keys = self._probe_keys(side, rows, probe_right)
        out: Rows | None = None
        for value in np.unique(probe_keys) if probe_keys is not None else [None]:
            bucket = None if value is None else value.item()
            if not sweep and bucket is not None:
                self._remove(clock, bucket, everywhere=False)
            other = side.probe(bucket)
            if other is None:
                continue
            mine = rows if probe_keys is None else _take(rows, np.flatnonzero(probe_keys == value))
            left, right = (mine, other) if probe_right else (other, mine)
            t_j = right[j]["ts"]
            lo, hi = self._period(left, members, j)
            self.comparisons += len(lo) * len(t_j)
            a, b = np.nonzero((t_j[None, :] >= lo[:, None]) & (t_j[None, :] <= hi[:, None]))
            joined = {**_take(left, a), **_take(right, b)}
            if len(a) and self.level_eqs[k]:
                ok = np.ones(len(a), bool)
                for p in self.level_eqs[k]:
                    ok &= np.asarray(evaluate(p, lambda st, attr, r=joined: r[st][attr]), bool)
                joined = _take(joined, np.flatnonzero(ok))
            out = _concat(out, joined) if _len(joined) else out
        return out

    def _probe_keys(self, side: _Side, rows: Rows, probe_right: bool) -> np.ndarray | None:
        """The values ``rows`` probe ``side``'s buckets with (none: NLW's single bucket)."""
        return None

    def _results(self, rows: Rows, s: int) -> ResultBatch | None:
        rows = _take(rows, np.lexsort([rows[o]["pos"] for o in reversed(self.mw_orders[s][1:])]))  # MW-join's order
        return results(rows, self.filters, self.aliases, self.reach)
