"""NLW-join: the nested-loop W-join (Hammad, Aref & Elmagarmid, "Stream Window Join: Tracking
Moving Objects in Sensor-Network Databases", SSDBM 2003, §3.1.1).

A left-deep pipeline of binary window joins: level ``k`` joins the m-tuples over the streams
``order[:k]`` (left; the first source at level 1) with the source ``order[k]`` (right). Every
m-tuple carries its members' timestamps; its period over stream ``j`` is
``[max_i(ts_i - d[j][i]), min_i(ts_i + d[i][j])]`` over its members ``i`` with the closed bounds
``d`` (for a single window ``w`` the paper's ``[TSmax - w, TSmin + w]``). A new tuple probes the
other side's buffer for the rows whose period holds it, the new (m+1)-tuples are stored in the
next level's left buffer and climb on; a result is produced when its last member arrives.
Equalities are tested at the first level where both their streams are present, the other
predicates on complete results.

Removal rule (the paper's per-buffer timestamp vectors): a buffered row is dropped once it lies
beyond the window of every later tuple of the other side. The paper keeps the largest timestamp
per source stream of the other side; as slidewise processes arrivals in the global ``ts`` order,
every later tuple of any stream is at or after the clock, so the rule drops a left m-tuple when
its ``end = min_i(ts_i + d[i][j]) < clock`` and a right tuple of ``j`` when its
``end = ts_j + max_i d[j][i] < clock``.

Execution is columnar, a chunk of arrivals at a time, level by level (the chunk's new rows are
appended to the level's buffers first). The per-arrival algorithm compares a new row with every
row of the other side that arrived before it and that the removal rule, run at the new row's
arrival, keeps (``end`` at or after its ``ts``). Per m-tuple these rows form one range of the
other side in arrival order: the tuples from the first one kept at its ``ts`` (every later tuple
is kept, its ``end`` is later still) up to the last one arriving while it is kept. Two binary
searches give each m-tuple's range, and the window test runs vectorised over every pair of the
ranges: ``comparisons`` counts exactly the pairs tested, and neither they nor the results depend on
how the arrivals are chunked. Rows made before the chunk are compared with the chunk's new rows
only. The removal rule runs over each buffer once per chunk (one vector comparison).

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

_NONE = np.empty(0, np.int64)
_LAST = np.iinfo(np.int64).max


def _len(rows: Rows | None) -> int:
    return 0 if rows is None else len(next(iter(rows.values()))["pos"])


def _concat(a: Rows | None, b: Rows | None) -> Rows | None:
    if not _len(a):
        return b
    if not _len(b):
        return a
    assert a is not None and b is not None
    return {s: {c: np.concatenate([v, b[s][c]]) for c, v in cols.items()} for s, cols in a.items()}


class _Side:
    """One side's buffer of a pipeline level, columnar: per row the bounds of its period over the
    other side's stream (``lo``, ``end``; a right tuple: its ``ts`` and its removal bound) and the
    position and ``ts`` of the arrival that made it (``made``, ``at``); hashed on ``key`` (none:
    NLW's one bucket)."""

    FIELDS = ("lo", "end", "made", "at")

    def __init__(self, key: tuple[int, str] | None) -> None:
        self.key = key
        self.rows: Rows | None = None
        self.lo = self.end = self.made = self.at = _NONE

    def keys_of(self, rows: Rows | None) -> np.ndarray | None:
        return None if self.key is None or rows is None else rows[self.key[0]][self.key[1]]

    def add(self, rows: Rows | None, *fields: np.ndarray) -> None:
        if _len(rows):
            self.rows = _concat(self.rows, rows)
            for f, v in zip(self.FIELDS, fields):
                setattr(self, f, np.concatenate([getattr(self, f), v]))

    def remove(self, clock: int) -> None:
        """The removal rule at ``clock``."""
        keep = self.end >= clock
        if not keep.all():
            idx = np.flatnonzero(keep)
            self.rows = _take(self.rows, idx) if self.rows is not None else None
            for f in self.FIELDS:
                setattr(self, f, getattr(self, f)[idx])

    def __len__(self) -> int:
        return len(self.end)


class _Sorted:
    """A bucket-sorted side: ``code`` ascending, within a bucket the ``values`` ascending; binary
    searches of ``(code, value)`` over one composite integer per value kind (``code * m + value``)."""

    def __init__(self, code: np.ndarray, top: int, **values: np.ndarray) -> None:
        self.code, self.top, self.values = code, top, values
        self.keyed: dict[str, tuple[np.ndarray, int, int, int]] = {}

    def search(self, kind: str, q_code: np.ndarray, q_value: np.ndarray, side: str) -> np.ndarray:
        """Per query, ``np.searchsorted`` of ``(q_code, q_value)`` in the pairs ``(code, values[kind])``."""
        value = self.values[kind]
        if not len(value):
            return np.zeros(len(q_value), np.int64)
        if kind not in self.keyed:
            lo, hi = int(value.min()) - 1, int(value.max()) + 1
            m = hi - lo + 1
            wide = self.top * m >= 2**62
            self.keyed[kind] = (value if wide else value - lo if self.top == 0 else self.code * m + (value - lo), lo, hi, m)
        keyed, lo, hi, m = self.keyed[kind]
        if self.top * m >= 2**62:  # too wide for one integer: ranks among the values and the queries
            every = np.unique(np.concatenate([value, q_value]))
            m = len(every) + 1
            return np.searchsorted(self.code * m + np.searchsorted(every, value), q_code * m + np.searchsorted(every, q_value), side)  # type: ignore[call-overload]
        q = np.clip(q_value, lo, hi) - lo
        return np.searchsorted(keyed, q if self.top == 0 else q_code * m + q, side)  # type: ignore[call-overload]


class NLWJoin(Snapshots):
    """The nested-loop W-join over ``query``'s streams (see the module docstring)."""

    name = "nlw-join"
    cost_family = "pipeline"  # planner facts: see MWJoin
    preference = 1
    per_arrival = 0.0  # per arrival and level
    hashed = False
    baseline = False

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
        self.limit = [int(self.d[j][self.order[:k]].max()) if k else 0 for k, j in enumerate(self.order)]
        self.mw_orders = np.array(result_orders(query))
        eqs = query.join.equalities
        self.level_eqs = [[Cmp("=", e.left, e.right) for e in eqs if max(self.level[e.left.stream], self.level[e.right.stream]) == k] for k in range(self.n)]
        self.filters = list(query.join.filters)
        self.comparisons = 0

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

    def finish(self) -> ResultBatch:
        return ResultBatch.empty(self.n)

    def process(self, chunk: list[StreamBatch]) -> ResultBatch:
        """Join one chunk of arrivals (one batch per stream, in global order), level by level."""
        new: dict[int, Rows] = {b.stream: {b.stream: {"pos": b.pos, "ts": b.ts, **b.cols}} for b in chunk if len(b)}
        if not new:
            return ResultBatch.empty(self.n)
        start = min(int(b.pos[0]) for b in chunk if len(b))  # the chunk's first arrival
        rows = new.get(self.order[0])
        made = _NONE if rows is None else rows[self.order[0]]["pos"]
        for k in range(1, self.n):
            j, members = self.order[k], self.order[:k]
            if rows is not None and _len(rows):
                self.left[k].add(rows, *self._period(rows, members, j), made, np.max(np.stack([rows[i]["ts"] for i in members]), axis=0))
            if j in new:
                ts = new[j][j]["ts"]
                self.right[k].add(new[j], ts, ts + self.limit[k], new[j][j]["pos"], ts)
            rows, made = self._level(k, start)
        clock = max(int(b.ts[-1]) for b in chunk if len(b))
        for side in self.left[1:] + self.right[1:]:
            side.remove(clock)
        return self._results(rows, made)

    def _period(self, rows: Rows | None, members: list[int], j: int) -> tuple[np.ndarray, np.ndarray]:
        """Per m-tuple of ``rows`` (over ``members``): its period over stream ``j`` (module docstring),
        bounds rounded inwards to integers."""
        if rows is None or not _len(rows):
            return _NONE, _NONE
        ts = np.stack([rows[i]["ts"] for i in members])
        lo, hi = np.max(ts - self.d[j][members][:, None], axis=0), np.min(ts + self.d[members, j][:, None], axis=0)
        return np.ceil(lo).astype(np.int64), np.floor(hi).astype(np.int64)

    def _level(self, k: int, start: int) -> tuple[Rows | None, np.ndarray]:
        """Level ``k``: its m-tuples joined with its tuples, every pair but those of two rows made
        before the chunk's first arrival ``start``; counts the per-arrival comparisons. The new
        (m+1)-tuples, and the positions of the arrivals that made them."""
        left, right = self.left[k], self.right[k]
        if not len(left) or not len(right):
            return None, _NONE
        assert left.rows is not None and right.rows is not None
        lcode, rcode, top = self._codes(k)
        # rows made before the chunk count as made together, before every new one
        lmade, rmade = np.maximum(left.made, start - 1), np.maximum(right.made, start - 1)
        o = np.argsort(rcode, kind="stable") if top else np.arange(len(right))  # per bucket in arrival order: ts, made and end rise together
        r = _Sorted(rcode[o], top, ts=right.lo[o], made=rmade[o], end=right.end[o])
        # the per-arrival comparisons, per new m-tuple: the tuples that arrived before it and that the
        # removal rule keeps at its ts (end >= at: from ``kept`` on, as every later tuple's end is), then
        # the tuples arriving after it while the rule keeps it (ts <= its end: up to ``upto``); per
        # older m-tuple the latter only. A range of its bucket, compared, the window test vectorised.
        after = r.search("made", lcode, lmade, "right")
        kept = r.search("end", lcode, np.where(lmade < start, _LAST, left.at), "left")
        first = np.minimum(kept, after)
        counts = np.maximum(r.search("ts", lcode, left.end, "right"), after) - first
        total = int(counts.sum())
        self.comparisons += total
        a = np.repeat(np.arange(len(left)), counts)
        b = np.repeat(first - np.cumsum(counts) + counts, counts) + np.arange(total)
        ts = r.values["ts"][b]
        inside = np.flatnonzero((ts >= left.lo[a]) & (ts <= left.end[a]))
        if not len(inside):
            return None, _NONE
        a, b = a[inside], o[b[inside]]
        joined, made = {**_take(left.rows, a), **_take(right.rows, b)}, np.maximum(left.made[a], right.made[b])
        if self.level_eqs[k]:
            ok = np.ones(len(a), bool)
            for p in self.level_eqs[k]:
                ok &= np.asarray(evaluate(p, lambda st, attr: joined[st][attr]), bool)
            keep = np.flatnonzero(ok)
            joined, made = _take(joined, keep), made[keep]
        return joined, made

    def _codes(self, k: int) -> tuple[np.ndarray, np.ndarray, int]:
        """The hash key codes of level ``k``'s left and right rows (equal keys, equal codes; small
        integer keys are their own codes) and the largest code; none (all 0) without a key."""
        left, right = self.left[k], self.right[k]
        keys = [left.keys_of(left.rows), right.keys_of(right.rows)]
        if keys[0] is None or keys[1] is None:
            return np.zeros(len(left), np.int64), np.zeros(len(right), np.int64), 0
        every = np.concatenate(keys)
        every = every.astype(np.int64) if every.dtype.kind == "b" else every
        if every.dtype.kind in "iu" and int(every.max()) - int(every.min()) < 4 * len(every):
            codes = (every - every.min()).astype(np.int64)
        else:
            codes = np.unique(every, return_inverse=True)[1].reshape(-1).astype(np.int64)
        return codes[: len(left)], codes[len(left) :], int(codes.max(initial=0))

    def _results(self, rows: Rows | None, made: np.ndarray) -> ResultBatch:
        """The complete combinations in MW-join's order: by completing arrival, then its Mode 2 order."""
        if not _len(rows):
            return ResultBatch.empty(self.n)
        assert rows is not None
        pos = np.stack([rows[s]["pos"] for s in range(self.n)], axis=1)
        orders = self.mw_orders[np.argmax(pos, axis=1)]  # the completing member's stream's order
        ranked = np.take_along_axis(pos, orders, axis=1)
        rows = _take(rows, np.lexsort([*ranked[:, :0:-1].T, made]))
        return results(rows, self.filters, self.aliases, self.reach) or ResultBatch.empty(self.n)
