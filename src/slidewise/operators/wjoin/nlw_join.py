"""NLW-join: the nested-loop W-join (Hammad, Aref & Elmagarmid, "Stream Window Join: Tracking
Moving Objects in Sensor-Network Databases", SSDBM 2003, §3.1.1).

A left-deep pipeline of binary window joins: level ``k`` joins the m-tuples over the streams
``order[:k]`` (left; the first source at level 1) with the source ``order[k]`` (right). Level 1's
two sources are interchangeable; the one with fewer arrivals in the first chunk is its left input
(the columnar level below works per left row, on the right rows in bulk). Every
m-tuple carries its members' timestamps; its period over stream ``j`` is
``[max_i(ts_i - d[j][i]), min_i(ts_i + d[i][j])]`` over its members ``i`` with the closed bounds
``d`` (for a single window ``w`` the paper's ``[TSmax - w, TSmin + w]``). A new tuple probes the
other side's buffer for the rows whose period holds it, the new (m+1)-tuples are stored in the
next level's left buffer and climb on; a result is produced when its last member arrives.
Equalities are tested at the first level where both their streams are present, the other
predicates on complete results.

Purge (the paper's Fig. 5): each input of a level keeps a time-stamps vector, the largest ``ts``
arrived so far per source stream beneath it (the right input: its stream ``j``; the left input:
every stream of ``order[:k]``). A new row is inserted in its buffer and scans the other input's
buffer (HW-join: its bucket), and the scan deletes every row out of the window of the new row's
vector (IsOut) and tests the others against the new row's period (IsIn). A right tuple is out
once every stream ``i`` below has a tuple later than ``ts_j + d[j][i]``, an m-tuple once stream
``j`` has one later than its ``end``. A row is deleted only by such a scan, never by a clock, so a
slow stream leaves the other side's old rows buffered and visited until its next arrival.

Execution is columnar, a chunk of arrivals at a time, level by level (the chunk's new rows are
appended to the level's buffers first). Per row, ``out`` is the first arrival at which the vector
puts it out; it is deleted by the first scan of the other side at or after ``out`` (and after the
row's own arrival) in its bucket, or by HW-join's update routine. Per m-tuple, the rows it is
compared with form one range of the other side in arrival order: the tuples that arrived before
it and are still buffered when it scans (after the first m-tuple of its arrival in its bucket,
without those that scan deleted), then the tuples arriving while it is buffered, up to the one
whose scan deletes it. Both buffers of a level are kept sorted by bucket, then arrival, one
integer key per row (:class:`_Keys`); binary searches over them, queried in that order, give each
range and each deletion, and the window test runs vectorised over every pair of the ranges: ``comparisons`` counts exactly the rows the scans visit, and neither they,
the results nor the buffers depend on how the arrivals are chunked. Rows made before the chunk are
compared with the chunk's new rows only.

Results (members, ts, exp and their order within an arrival) are those of
:class:`~slidewise.operators.wjoin.mw_join.MWJoin`.
"""

from __future__ import annotations

from functools import reduce

import numpy as np

from slidewise.model.batch import ResultBatch, StreamBatch
from slidewise.operators.joins.base import Snapshots
from slidewise.operators.wjoin.mw_join import Rows, integer_bounds, result_orders, results
from slidewise.operators.wjoin.mw_join import take_rows as _take
from slidewise.plan.expr import Cmp, evaluate
from slidewise.plan.wjoin import WJoinQuery

__all__ = ["NLWJoin"]

_NONE = np.empty(0, np.int64)
_LAST = np.iinfo(np.int64).max
_NEVER, _NO_TS = np.array([_LAST]), np.empty(0, np.int64)  # a stream without arrivals in the chunk
_MINUS_ONE, _ZERO = np.array([-1]), np.zeros(1, np.int64)


def _len(rows: Rows | None) -> int:
    return 0 if rows is None else len(next(iter(rows.values()))["pos"])


def _concat(a: Rows | None, b: Rows | None) -> Rows | None:
    if not _len(a):
        return b
    if not _len(b):
        return a
    assert a is not None and b is not None
    return {s: {c: np.concatenate([v, b[s][c]]) for c, v in cols.items()} for s, cols in a.items()}


def _lexorder(keys: list[np.ndarray], lo: list[int], hi: list[int]) -> np.ndarray:
    """``np.lexsort(keys)`` of integer keys (key ``i`` in ``[lo[i], hi[i]]``) whose rows are distinct:
    consecutive keys packed into one integer while it fits, then sorted once (a stable sort: the
    pipelines' results come in runs of their order, which it merges)."""
    packed: list[np.ndarray] = []
    v, scale = None, 1
    for key, low, high in zip(keys, lo, hi):
        span = high - low + 1
        if v is not None and scale * span >= 2**63:
            packed.append(v)
            v, scale = None, 1
        v = key - low if v is None else v + (key - low) * scale
        scale *= span
    if v is not None:
        packed.append(v)
    return np.argsort(packed[0], kind="stable") if len(packed) == 1 else np.lexsort(packed)


class _Side:
    """One side's buffer of a pipeline level, columnar: per row (the ``fields`` kept) the bounds of
    its period over the other side's stream (``lo``, ``end``; a right tuple: its ``ts`` as ``lo``),
    the position of the arrival that made it (``made``) and the first arrival at which the
    time-stamps vector of the other side puts it out (``out``; ``_LAST`` while none has); hashed on
    ``key`` (none: NLW's one bucket)."""

    def __init__(self, key: tuple[int, str] | None, fields: tuple[str, ...] = ("lo", "end", "made", "out")) -> None:
        self.key, self.fields = key, fields
        self.rows: Rows | None = None
        self.lo = self.end = self.made = self.out = _NONE

    def keys_of(self, rows: Rows | None) -> np.ndarray | None:
        return None if self.key is None or rows is None else rows[self.key[0]][self.key[1]]

    def add(self, rows: Rows | None, *fields: np.ndarray) -> None:
        if _len(rows):
            empty = not len(self)
            self.rows = _concat(self.rows, rows)
            for f, v in zip(self.fields, fields):
                setattr(self, f, v if empty else np.concatenate([getattr(self, f), v]))

    def take(self, idx: np.ndarray) -> None:
        """Keep the rows ``idx``, in that order."""
        self.rows = _take(self.rows, idx) if self.rows is not None else None
        for f in self.fields:
            setattr(self, f, getattr(self, f)[idx])

    def __len__(self) -> int:
        return len(self.out)


class _Keys:
    """One side's rows sorted by bucket, then arrival (``order``): per row its bucket ``code``
    (then a -1), ``made`` (then a 0) and ``key``, one sortable value per (bucket, value) pair
    (:meth:`of`): the integer ``code * m + value - base`` (``c``: ``code * m - base``), or the
    complex ``code + value i`` (compared lexicographically) where the integer could overflow."""

    def __init__(self, code: np.ndarray, made: np.ndarray, m: int, base: int, wide: bool, top: int, in_order: bool = False) -> None:
        self.wide = wide
        if in_order:  # a stable sort by code: a radix sort when the codes fit 16 bits
            self.order = o = np.argsort(code.astype(np.int16) if top < 2**15 else code, kind="stable")
        else:
            self.order = o = np.argsort(code + made * 1j if wide else code * m + made)
        self.code, self.made = np.empty(len(o) + 1, code.dtype), np.empty(len(o) + 1, made.dtype)
        code.take(o, out=self.code[:-1])
        made.take(o, out=self.made[:-1])
        self.code[-1], self.made[-1] = -1, 0
        if wide:
            self.c = self.code[:-1].astype(np.complex128)
        else:
            self.c = self.code[:-1] * m
            self.c -= base
        self.key = self.of(self.c, self.made[:-1])

    def of(self, c: np.ndarray, value: np.ndarray) -> np.ndarray:
        return c + value * 1j if self.wide else c + value

    @staticmethod
    def pair(
        lcode: np.ndarray, lmade: np.ndarray, rcode: np.ndarray, rmade: np.ndarray, base: int, cap: int, wide: int, in_order: tuple[bool, bool] = (False, False)
    ) -> tuple[_Keys, _Keys]:
        """Both sides' keys for values in ``[base, cap]`` (arrivals, and half arrivals from ``2 base``);
        complex if an integer key could reach ``wide``. ``in_order``: per side, whether its rows are
        sorted by code, then ``made``, but for a tail in ``made`` order whose ``made`` follow the others'
        (the buffer a chunk's arrivals were appended to): one stable sort by code orders them."""
        m = cap - base + 1
        top = max(int(lcode.max(initial=0)), int(rcode.max(initial=0)))
        is_wide = (top + 1) * m >= wide
        return _Keys(lcode, lmade, m, base, is_wide, top, in_order[0]), _Keys(rcode, rmade, m, base, is_wide, top, in_order[1])


class NLWJoin(Snapshots):
    """The nested-loop W-join over ``query``'s streams (see the module docstring)."""

    name = "nlw-join"
    cost_family = "pipeline"  # planner facts: see MWJoin
    preference = 1
    per_arrival = 16.0  # per arrival and level, in MW-join comparisons; as measured by slidewise bench wjoin (3000 tuples in chunks of 1,024, 2-6 streams)
    hashed = False
    sweep: int | None = None  # HW-join: the update routine runs after every ``sweep``-th arrival
    wide = 2**62  # bucket keys (:class:`_Keys`) that could reach this are complex numbers
    baseline = False

    def __init__(self, query: WJoinQuery) -> None:
        self.check(query)
        self.query = query
        self.n = query.n
        self.d = np.array(query.bounds(), dtype=np.float64)
        self.whole = integer_bounds(self.d)  # ceil(ts - d) = ts - floor(d), floor(ts + d) = ts + floor(d)
        self.reach = np.array(query.reach(), dtype=np.int64)
        self.aliases = query.join.aliases
        self._arrange(self._pipeline_order())
        self.arranged = False  # the first level's inputs are chosen by the first chunk's arrivals
        self.vmax = np.full(self.n, np.iinfo(np.int64).min)  # per stream, its largest ts before the chunk
        self.mw_orders = np.array(result_orders(query))
        self.filters = list(query.join.filters)
        self.comparisons = 0  # rows the scans visit; of them, deleted (IsOut) and inside the period (IsIn)
        self.purged = self.inside = 0

    @classmethod
    def check(cls, query: WJoinQuery) -> None:
        """Every W-join runs on the nested-loop pipeline."""

    def _arrange(self, order: list[int]) -> None:
        """The pipeline over ``order`` (bottom-up), its buffers empty."""
        self.order = order
        self.level = {s: k for k, s in enumerate(order)}
        keys = [self._keys(k) for k in range(self.n)]  # (left key, right key) of level k >= 1
        self.left = [_Side(keys[k][0]) for k in range(self.n)]  # left[k]: m-tuples over order[:k]
        self.right = [_Side(keys[k][1], ("lo", "made", "out")) for k in range(self.n)]  # right[k]: source order[k] (its ts: lo)
        eqs = self.query.join.equalities
        at = [[e for e in eqs if max(self.level[e.left.stream], self.level[e.right.stream]) == k] for k in range(self.n)]
        self.level_eqs = [[Cmp("=", e.left, e.right) for e in at[k]] for k in range(self.n)]
        # without the equality of the level's bucket key, true of every pair when the codes are the keys'
        self.unkeyed_eqs = [
            [Cmp("=", e.left, e.right) for e in at[k] if {(e.left.stream, e.left.attr), (e.right.stream, e.right.attr)} != {self.left[k].key, self.right[k].key}]
            for k in range(self.n)
        ]

    def _arrange_by(self, new: dict[int, Rows]) -> None:
        """Before the first chunk's arrivals (``new``, per stream) are buffered: the stream of the first
        level with fewer of them becomes its left input. The two sources of the first level are
        interchangeable (the same pairs are compared, deleted and joined either way: a row's period
        and its deletion test are those of its one timestamp against the other stream), but the
        columnar level scans per left row (a probe range each) and per right row only in bulk, so
        the slower stream costs less as the left input."""
        self.arranged = True
        a, b = self.order[:2]  # a W-join has two streams at least
        if _len(new.get(b)) < _len(new.get(a)):
            self._arrange([b, a, *self.order[2:]])

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
        new: dict[int, Rows] = {}
        arrivals: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # per stream: its positions (then _LAST), its ts
        start, last = _LAST, -1  # the chunk's first and last arrivals
        for b in chunk:
            if len(b):
                new[b.stream] = {b.stream: {"pos": b.pos, "ts": b.ts, **b.cols}}
                arrivals[b.stream] = (np.concatenate((b.pos, _NEVER)), b.ts)
                start, last = min(start, int(b.pos[0])), max(last, int(b.pos[-1]))
        if not new:
            return ResultBatch.empty(self.n)
        if not self.arranged:
            self._arrange_by(new)
        rows = new.get(self.order[0])
        made = _NONE if rows is None else rows[self.order[0]]["pos"]
        for k in range(1, self.n):
            j, members = self.order[k], self.order[:k]
            if rows is not None and _len(rows):
                self.left[k].add(rows, *self._period(rows, members, j), made, np.full(len(made), _LAST))
            if j in new:
                ts = new[j][j]["ts"]
                self.right[k].add(new[j], ts, new[j][j]["pos"], np.full(len(ts), _LAST))
            left, right = self.left[k], self.right[k]
            pending = left.out == _LAST  # left: out once stream j passes its end
            left.out[pending] = self._first_beyond(arrivals, j, left.end[pending])
            pending = (right.out == _LAST).nonzero()[0]  # right: out once every stream below passes its reach
            if len(pending):
                right.out[pending] = reduce(np.maximum, [self._first_beyond(arrivals, i, right.lo[pending] + self.whole[j][i]) for i in members])
            rows, made = self._level(k, start, last)
        for i, (_, ts) in arrivals.items():
            self.vmax[i] = max(self.vmax[i], ts[-1])
        return self._results(rows)

    def _first_beyond(self, arrivals: dict[int, tuple[np.ndarray, np.ndarray]], i: int, bound: np.ndarray) -> np.ndarray:
        """Per bound: the first arrival of stream ``i`` with ``ts`` beyond it (-1: before this chunk;
        ``_LAST``: none yet), the moment the time-stamps vector entry of ``i`` passes it. ``arrivals``:
        per stream of the chunk, its positions (then ``_LAST``) and timestamps."""
        pos, ts = arrivals.get(i, (_NEVER, _NO_TS))
        out = pos[ts.searchsorted(bound, "right")]
        out[self.vmax[i] > bound] = -1
        return out

    def _period(self, rows: Rows | None, members: list[int], j: int) -> tuple[np.ndarray, np.ndarray]:
        """Per m-tuple of ``rows`` (over ``members``): its period over stream ``j`` (module docstring),
        bounds rounded inwards to integers."""
        if rows is None or not _len(rows):
            return _NONE, _NONE
        lo = reduce(np.maximum, [rows[i]["ts"] - self.whole[j][i] for i in members])
        return lo, reduce(np.minimum, [rows[i]["ts"] + self.whole[i][j] for i in members])

    def _deleted(self, side: _Side, mine: _Keys, other: _Keys, start: int, cap: int) -> np.ndarray:
        """Per row of ``side`` (in the order of its keys ``mine``): when it is deleted, in half
        arrivals (``2 q``: by the scan of the other side's arrival ``q``, the first one at or after
        its ``out`` in its bucket; ``2 s + 1``: by the update routine after arrival ``s``), at most
        ``cap`` (kept; so are the rows never out). The other side's rows made before ``start``
        scanned before. Counts the rows deleted by a scan."""
        out, made = side.out.take(mine.order), mine.made[:-1]
        scan = np.maximum(out, made + 1)  # the first scan that can delete the row: at or after it
        np.minimum(scan, cap, out=scan)
        np.maximum(scan, start, out=scan)
        at = other.key.searchsorted(other.of(mine.c, scan))
        gone = other.made.take(at)
        gone <<= 1  # by a scan; none in the row's bucket: kept
        gone[other.code.take(at) != mine.code[:-1]] = _LAST
        if self.sweep:  # the routine also sees rows of its own arrival
            at_or_after = np.maximum(out, made, out=out)
            np.minimum(at_or_after, cap, out=at_or_after)
            s = self.sweep  # 2 (the next multiple of s after at_or_after) - 1; by bits when s is a power of 2
            routine = ((at_or_after | (s - 1)) << 1) + 1 if s & (s - 1) == 0 else 2 * ((at_or_after + s) // s * s) - 1
            self.purged += int(np.count_nonzero(gone < routine))
            np.minimum(gone, routine, out=gone)
        else:
            self.purged += int(np.count_nonzero(gone < _LAST))
        return np.minimum(gone, cap, out=gone)

    def _level(self, k: int, start: int, last: int) -> tuple[Rows | None, np.ndarray]:
        """Level ``k``: its m-tuples joined with its tuples, every pair but those of two rows made
        before the chunk's first arrival ``start``; counts the per-arrival comparisons and deletes
        the rows the chunk's scans (and update routine) delete. The new (m+1)-tuples, and the
        positions of the arrivals that made them. Both buffers are left sorted by bucket, then
        arrival, so every binary search runs with sorted (or nearly sorted) queries."""
        left, right = self.left[k], self.right[k]
        if not len(left) and not len(right):
            return None, _NONE
        lcode, rcode, exact = self._codes(k)
        cap = 2 * last + 4  # beyond the chunk: kept
        base = int(min(left.made.min(initial=start), right.made.min(initial=start)))
        # the buffers are sorted (as left by the last chunk), then the chunk's rows; those of a source
        # (the right side, and the left one at level 1) come in arrival order
        lk, rk = _Keys.pair(lcode, left.made, rcode, right.made, base, cap, self.wide, (k == 1, True))
        p, o = lk.order, rk.order
        lgone = self._deleted(left, lk, rk, start, cap)
        rgone = self._deleted(right, rk, lk, start, cap)
        joined: Rows | None = None
        made = _NONE
        if len(left) and len(right):
            assert left.rows is not None and right.rows is not None
            # per m-tuple, the tuples it is compared with form one range of its bucket: those arrived
            # before it and still buffered when it scans (gone at or after its arrival; after it, if
            # an earlier m-tuple of the same arrival scanned the bucket and deleted them), then those
            # arriving while it is buffered (up to the arrival whose scan deletes it). Pairs of rows
            # both made before the chunk were compared before.
            lmade = lk.made[:-1]
            first = np.empty(len(lmade), bool)  # the first m-tuple of its arrival in its bucket
            first[:1] = True
            np.not_equal(lk.key[1:], lk.key[:-1], out=first[1:])
            # gone rises within a bucket, from 2 base; a tuple arriving after the m-tuple is gone after
            # 2 (its arrival) + 1, so the range starts at or before the tuples arriving after it
            gone_key = rk.of(rk.c, rgone - base)
            lo = gone_key.searchsorted(rk.of(lk.c, 2 * lmade - base + ~first))
            old = (lmade < start).nonzero()[0]
            if len(old):
                lo[old] = rk.key.searchsorted(rk.of(lk.c[old], start))
            counts = np.maximum(rk.key.searchsorted(rk.of(lk.c, lgone // 2), "right") - lo, 0)
            total = int(counts.sum())
            self.comparisons += total
            a = np.arange(len(lmade)).repeat(counts)
            b = (lo - counts.cumsum() + counts).repeat(counts) + np.arange(total)
            ts = right.lo[o[b]]
            a = p[a]
            inside = ((ts >= left.lo[a]) & (ts <= left.end[a])).nonzero()[0]
            self.inside += len(inside)
            if len(inside):
                a, b = a[inside], o[b[inside]]
                lrows, rrows = left.rows, right.rows
                eqs = self.unkeyed_eqs[k] if exact else self.level_eqs[k]
                if eqs:
                    ok = np.ones(len(a), bool)
                    for e in eqs:
                        ok &= np.asarray(evaluate(e, lambda st, attr: lrows[st][attr][a] if st in lrows else rrows[st][attr][b]), bool)  # noqa: B023
                    keep = np.flatnonzero(ok)
                    a, b = a[keep], b[keep]
                made = np.maximum(left.made[a], right.made[b])
                if k == self.n - 1 and len(made):  # the results: put in order first, gathered once
                    pos = {s: v["pos"][a] for s, v in lrows.items()} | {s: v["pos"][b] for s, v in rrows.items()}
                    ordered = self._result_order(pos, made)
                    a, b, made = a[ordered], b[ordered], made[ordered]
                    joined = {s: {c: pos[s][ordered] if c == "pos" else v[a if s in lrows else b] for c, v in cols.items()} for s, cols in (lrows | rrows).items()}
                else:
                    joined = {**_take(lrows, a), **_take(rrows, b)}
        left.take(p[lgone > 2 * last + 1])
        right.take(o[rgone > 2 * last + 1])
        return joined, made

    def _codes(self, k: int) -> tuple[np.ndarray, np.ndarray, bool]:
        """The hash key codes of level ``k``'s left and right rows (equal keys, equal codes; small
        integer keys are their own codes; none, all 0, without a key) and whether equal codes are
        equal keys (integers and booleans: a bucket is its key's equality)."""
        left, right = self.left[k], self.right[k]
        keys = [left.keys_of(left.rows), right.keys_of(right.rows)]
        if keys[0] is None or keys[1] is None:
            return np.zeros(len(left), np.int64), np.zeros(len(right), np.int64), False
        every = np.concatenate(keys)
        every = every.astype(np.int64) if every.dtype.kind == "b" else every
        low = every.min() if every.dtype.kind in "iu" else None
        if low is not None and int(every.max()) - int(low) < 4 * len(every):
            codes = (every - low).astype(np.int64, copy=False)
        else:
            codes = np.unique(every, return_inverse=True)[1].reshape(-1).astype(np.int64)
        return codes[: len(left)], codes[len(left) :], every.dtype.kind in "iu"

    def _result_order(self, pos: dict[int, np.ndarray], made: np.ndarray) -> np.ndarray:
        """The order of the complete combinations (their members' positions ``pos``, made by the
        arrivals ``made``) in MW-join's: by completing arrival, then its Mode 2 order."""
        completing = np.zeros(len(made), np.int64)  # the completing member's stream
        for s in range(1, self.n):
            completing[pos[s] == made] = s
        # per member, its position behind the completing arrival (<= 0: fewer bits than the position)
        behind = np.stack([pos[s] - made for s in range(self.n)]).reshape(-1)
        at = completing * len(made) + np.arange(len(made))  # in behind: the completing member's
        ranked = [behind.take(at + (self.mw_orders[:, r] - np.arange(self.n)).take(completing) * len(made)) for r in range(self.n - 1, 0, -1)]  # in its stream's order
        low = int(behind.min())
        return _lexorder([*ranked, made], [low] * (self.n - 1) + [int(made.min())], [0] * (self.n - 1) + [int(made.max())])  # the completing arrival: first

    def _results(self, rows: Rows | None) -> ResultBatch:
        """The complete combinations (in order), through the filters."""
        if not _len(rows):
            return ResultBatch.empty(self.n)
        assert rows is not None
        return results(rows, self.filters, self.aliases, self.reach) or ResultBatch.empty(self.n)
