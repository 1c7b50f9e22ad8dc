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

Execution is columnar, a chunk of arrivals at a time, level by level: the chunk's new rows of a
level are joined with the other side's buffer and with each other by binary search over the
buffers sorted by ``ts`` (the pairs inside the period, no row scanned in vain), and the removal
rule runs once per chunk over each buffer (one vector comparison). ``comparisons`` counts what the
per-arrival algorithm compares: each new row against every row of the other side that arrived
before it and that the removal rule, run at the new row's arrival, keeps (``end >= its ts``);
these counts come from the same binary searches, so they do not depend on the chunking.

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


def _len(rows: Rows | None) -> int:
    return 0 if rows is None else len(next(iter(rows.values()))["pos"])


def _concat(a: Rows | None, b: Rows | None) -> Rows | None:
    if not _len(a):
        return b
    if not _len(b):
        return a
    assert a is not None and b is not None
    return {s: {c: np.concatenate([v, b[s][c]]) for c, v in cols.items()} for s, cols in a.items()}


class _Part:
    """Rows of one side of a level, each with its ``end`` (removal rule), the position and ``ts`` of
    the arrival that made it (``made``, ``at``) and its hash key code (``code``; 0: no key)."""

    def __init__(self, rows: Rows | None, end: np.ndarray, made: np.ndarray = _NONE, at: np.ndarray = _NONE) -> None:
        self.rows, self.end, self.made, self.at = rows, end, made, at
        self.code = np.zeros(len(end), np.int64)

    def __len__(self) -> int:
        return len(self.end)


class _Side:
    """One side's buffer of a pipeline level, columnar; hashed on ``key`` (none: NLW's one bucket)."""

    def __init__(self, key: tuple[int, str] | None) -> None:
        self.key = key
        self.rows: Rows | None = None
        self.end = np.empty(0, np.float64)

    def keys_of(self, rows: Rows | None) -> np.ndarray | None:
        return None if self.key is None or rows is None else rows[self.key[0]][self.key[1]]

    def part(self) -> _Part:
        """The buffered rows, made before any new row (``made`` -1)."""
        return _Part(self.rows, self.end, np.full(len(self.end), -1, np.int64), np.full(len(self.end), -1, np.int64))

    def add(self, new: _Part) -> None:
        if len(new):
            self.rows, self.end = _concat(self.rows, new.rows), np.concatenate([self.end, new.end])

    def remove(self, clock: int) -> None:
        """The removal rule at ``clock``."""
        keep = self.end >= clock
        if not keep.all():
            idx = np.flatnonzero(keep)
            self.rows, self.end = (_take(self.rows, idx) if self.rows is not None else None), self.end[idx]

    def __len__(self) -> int:
        return len(self.end)


def _ranks(*values: np.ndarray) -> list[np.ndarray]:
    """``values`` as ranks among all of them (order and ties kept), for composite integer keys."""
    every = np.unique(np.concatenate([np.asarray(v, np.float64) for v in values]))
    return [np.searchsorted(every, np.asarray(v, np.float64)) for v in values]


def _search(code: np.ndarray, value: np.ndarray, q_code: np.ndarray, q_value: np.ndarray, side: str) -> np.ndarray:
    """Per query, ``np.searchsorted`` of ``(q_code, q_value)`` in the pairs ``(code, value)`` (sorted)."""
    r, q = _ranks(value, q_value)
    m = int(max(r.max(initial=0), q.max(initial=0))) + 1
    return np.searchsorted(code * m + r, q_code * m + q, side)  # type: ignore[call-overload]


class NLWJoin(Snapshots):
    """The nested-loop W-join over ``query``'s streams (see the module docstring)."""

    name = "nlw-join"
    cost_family = "pipeline"  # planner facts: see MWJoin
    preference = 1
    per_arrival = 915.0  # per arrival and level
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
        self.limit = [float(self.d[j][self.order[:k]].max()) if k else 0.0 for k, j in enumerate(self.order)]
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
        first = new.get(self.order[0])
        rows: Rows | None = first
        made = _NONE if first is None else first[self.order[0]]["pos"]
        for k in range(1, self.n):
            j, members = self.order[k], self.order[:k]
            at = np.max(np.stack([rows[i]["ts"] for i in members]), axis=0) if _len(rows) else _NONE  # type: ignore[index]
            lnew = _Part(rows, self._period(rows, members, j)[1], made, at)
            r = new.get(j)
            rnew = _Part(r, _NONE if r is None else r[j]["ts"] + self.limit[k], _NONE if r is None else r[j]["pos"], _NONE if r is None else r[j]["ts"])
            rows, made = self._level(k, lnew, rnew)
            self.left[k].add(lnew)
            self.right[k].add(rnew)
        clock = max(int(b.ts[-1]) for b in chunk if len(b))
        for side in self.left[1:] + self.right[1:]:
            side.remove(clock)
        return self._results(rows, made)

    def _period(self, rows: Rows | None, members: list[int], j: int) -> tuple[np.ndarray, np.ndarray]:
        """Per m-tuple of ``rows`` (over ``members``): its period over stream ``j`` (module docstring)."""
        if not _len(rows):
            return np.empty(0, np.float64), np.empty(0, np.float64)
        assert rows is not None
        ts = np.stack([rows[i]["ts"] for i in members])
        return np.max(ts - self.d[j][members][:, None], axis=0), np.min(ts + self.d[members, j][:, None], axis=0)

    def _level(self, k: int, lnew: _Part, rnew: _Part) -> tuple[Rows | None, np.ndarray]:
        """Level ``k``: the chunk's new m-tuples ``lnew`` and new tuples ``rnew`` joined with the
        buffers and each other, counting the per-arrival comparisons. The new (m+1)-tuples, and the
        positions of the arrivals that made them."""
        lold, rold = self.left[k].part(), self.right[k].part()
        self._code(k, lold, lnew, rold, rnew)
        self.comparisons += _kept(lold, rnew) + _kept(rold, lnew) + _kept_new(lnew, rnew)
        out: Rows | None = None
        made = _NONE
        for left, rights in ((lnew, [rold, rnew]), (lold, [rnew])):  # every pair but old with old
            rights = [p for p in rights if len(p)]
            if not len(left) or not rights:
                continue
            right = (
                rights[0]
                if len(rights) == 1
                else _Part(_concat(rights[0].rows, rights[1].rows), np.concatenate([p.end for p in rights]), np.concatenate([p.made for p in rights]))
            )
            right.code = np.concatenate([p.code for p in rights])
            a, b = self._pairs(k, left, right)
            if not len(a):
                continue
            assert left.rows is not None and right.rows is not None
            joined, jmade = {**_take(left.rows, a), **_take(right.rows, b)}, np.maximum(left.made[a], right.made[b])
            if self.level_eqs[k]:
                ok = np.ones(len(a), bool)
                for p in self.level_eqs[k]:
                    ok &= np.asarray(evaluate(p, lambda st, attr, r=joined: r[st][attr]), bool)
                keep = np.flatnonzero(ok)
                joined, jmade = _take(joined, keep), jmade[keep]
            out, made = _concat(out, joined), np.concatenate([made, jmade])
        return out, made

    def _pairs(self, k: int, left: _Part, right: _Part) -> tuple[np.ndarray, np.ndarray]:
        """The pairs (left row, right row) of one bucket with the right tuple inside the left m-tuple's period."""
        j = self.order[k]
        assert right.rows is not None
        lo, hi = self._period(left.rows, self.order[:k], j)
        o = np.lexsort([right.rows[j]["ts"], right.code])
        code, ts = right.code[o], right.rows[j]["ts"][o]
        first = _search(code, ts, left.code, np.ceil(lo), "left")
        counts = np.maximum(_search(code, ts, left.code, np.floor(hi), "right") - first, 0)
        total = int(counts.sum())
        a = np.repeat(np.arange(len(left)), counts)
        return a, o[np.repeat(first - np.cumsum(counts) + counts, counts) + np.arange(total)]

    def _code(self, k: int, *parts: _Part) -> None:
        """The hash key codes of ``parts`` (left, left, right, right) at level ``k``: equal keys, equal codes."""
        sides = (self.left[k], self.left[k], self.right[k], self.right[k])
        keys = [side.keys_of(p.rows) if len(p) else None for side, p in zip(sides, parts)]
        present = [v for v in keys if v is not None]
        if not present:
            return
        _, codes = np.unique(np.concatenate(present), return_inverse=True)
        at = 0
        for p, v in zip(parts, keys):
            if v is not None:
                p.code = codes.reshape(-1)[at : at + len(v)].astype(np.int64)
                at += len(v)

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


def _kept(old: _Part, new: _Part) -> int:
    """Per new row, the old rows of its bucket with ``end`` at or after its ``ts`` (kept by the
    removal rule at its arrival), summed."""
    if not len(old) or not len(new):
        return 0
    o = np.lexsort([old.end, old.code])
    code = old.code[o]
    return int((np.searchsorted(code, new.code, "right") - _search(code, old.end[o], new.code, new.at, "left")).sum())


def _kept_new(lnew: _Part, rnew: _Part) -> int:
    """The pairs of a chunk's new m-tuples and new tuples of one bucket that the later one's arrival
    compares: the earlier one arrived before it and is kept at its ``ts``. Per m-tuple, the right
    tuples (whose ``made``, ``ts`` and ``end`` rise together) of both kinds are a range."""
    if not len(lnew) or not len(rnew):
        return 0
    o = np.lexsort([rnew.made, rnew.code])
    code, made = rnew.code[o], rnew.made[o]
    after = _search(code, made, lnew.code, lnew.made, "right")  # arrived after the m-tuple, ts within its end
    probing = np.maximum(_search(code, rnew.at[o], lnew.code, lnew.end, "right") - after, 0)
    before = _search(code, made, lnew.code, lnew.made, "left")  # arrived before it, end at or after its ts
    probed = np.maximum(before - _search(code, rnew.end[o], lnew.code, lnew.at, "left"), 0)
    return int(probing.sum() + probed.sum())
