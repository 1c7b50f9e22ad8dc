"""Columnar multi-way window equi-join: a whole chunk of arrivals at a time (the default path).

Idea: vectorising the multi-way hash join of Golab & Özsu, VLDB 2003
long version §3.4 — instead of scanning the hash bucket ``B(i, k)``
of every other window for each new tuple ``k`` in nested loops, each window is
kept *sorted* by ``(join key, global pos)``
(:class:`~slidewise.windows.columnar.SortedWindow`), so the tuples of window
``i`` that join ``k`` form one contiguous range of ``k``'s key block, and all
ranges of a chunk are found by a few vectorised binary searches.

Algorithm (``columnar``), per chunk:

1. Pushed-down filters: single-stream conjuncts on time-window streams drop
   failing arrivals (they can be neither member nor origin). Count windows
   count every arrival, so their rows stay; their filters run in step 4.
2. Join values of window contents and new arrivals of all streams are coded to
   dense, order-preserving int64 codes (ints, floats, strings, ...). The
   chunk's rows are put in ``(code, pos)`` order (a counting sort on the dense
   positions, then a stable radix sort on narrow codes) and merged into each
   window (sorted runs: no re-sort of the state).
3. Every new row ``k`` (stream ``o``) is an origin. For each other stream
   ``i`` its partners are the rows with ``k``'s key, ``pos < k.pos`` and
   ``ts >= k.ts - T_i`` (time window) or arrival counter ``>= c_i(k) - N_i``
   (count window: ``c_i(k)`` = arrivals of ``i`` before ``k``) — a range
   ``[lo, hi)`` of ``k``'s key block. ``hi`` falls out of the merge order
   (window rows with a code ``<=`` k's, plus ``i``'s new rows before ``k``);
   ``lo`` is one ``searchsorted`` on a packed ``(code, ts | counter)`` key
   with the origins as sorted queries. ``[PARTITION BY p ROWS N]``: if ``p``
   is the join key, the last ``N`` rows of the block before ``k``; otherwise
   the block's rows before ``k``, each checked against the position of the
   arrival that evicts it (per-partition counters).
4. Results are the cartesian products of the ranges, built stream by stream
   with ``np.repeat`` / cumsum offsets (no loop per tuple or result): in the
   join order (``order``) when there are filters — each evaluated with
   :func:`~slidewise.plan.expr.evaluate` on the gathered columns as soon as its
   streams are bound — else widest ranges last. Columns are gathered (one
   contiguous ``members`` column per stream); results come in origin order.
5. Expiration: each window keeps only the rows a later arrival can join.

Semantics: exactly the eager evaluation of docs/semantics.md; every chunk's results are
returned by :meth:`process`. Lazy (``query.slide = D``): an arrival with
``eval_time(ts, D) = τ`` is held back until a tuple with ``ts > τ`` is seen (or
:meth:`advance` past ``τ``, or :meth:`finish`), then joined as above; since held rows come after all released
ones in global order, this is the eager join of a delayed input, and the
windows keep the expired tuples those evaluations need. ``restore=False`` drops
the short-lived results (``exp < τ``) inside the search: a time-window partner
needs ``ts >= τ - T_i`` instead of ``ts >= k.ts - T_i``. Input ``sign`` is
ignored; results have ``sign = +1``.

Comparisons (``comparisons``): each range bound counts what a binary search
of the ``R``-row window costs, ``ceil(log2(R + 1))`` key comparisons — two
bounds per origin and other stream (``hi`` is actually read off the merge,
which is cheaper); each candidate combination checked against a filter or an
eviction position counts one more. Timestamps are not counted separately
(they are part of the searched key).

Complexity per chunk of ``m`` arrivals over windows of ``R`` rows: ``O(R + m)``
merging, and sorting too while there are at most 65,536 key codes (integer
keys of small span need no coding; other keys an ``O((R + m) log(R + m))``
coding sort), ``O(m log(R + m))`` searches,
``O(results + candidates)`` materialisation. Chunks should not be much smaller
than the windows, since every chunk touches the window contents once. Memory:
the window contents, the chunk and its results (lazy: plus the held-back
arrivals, about one interval ``D``).

>>> from slidewise.model.batch import StreamBatch
>>> from slidewise.plan.expr import Col
>>> from slidewise.plan.query import Equality, JoinQuery, StreamRef, WindowSpec
>>> q = JoinQuery((StreamRef("A", "A", WindowSpec("range", 5)),
...                StreamRef("B", "B", WindowSpec("rows", 2))),
...               (Equality(Col(0, "k", "A"), Col(1, "k", "B")),))
>>> op = ColumnarJoin(q)
>>> res = op.process([StreamBatch(0, [0, 2, 3], [1, 2, 9], {"k": [7, 8, 7]}),
...                   StreamBatch(1, [1, 4], [2, 9], {"k": [7, 7]})])
>>> res.keys()
[((0, 1), 2, 6, 1), ((3, 1), 9, 14, 1), ((3, 4), 9, 14, 1)]
>>> list(res.cols), op.state_tuples()
(['A.ts', 'A.k', 'B.ts', 'B.k'], 3)
"""

from __future__ import annotations

import math

import numpy as np

from slidewise.errors import ExecutionError, PlanError
from slidewise.model.batch import NO_EXP, ResultBatch, StreamBatch
from slidewise.operators.joins.base import JoinOperator
from slidewise.plan.expr import Expr, evaluate, streams_of
from slidewise.plan.query import JoinQuery
from slidewise.windows.columnar import Fresh, Merged, SortedWindow, cat, count_at_most, dense_codes, lex_searchsorted

__all__ = ["ColumnarJoin"]


class ColumnarJoin(JoinOperator):
    """Vectorised eager/lazy multi-way window equi-join on a common key."""

    name = "columnar"
    summary = "columnar batch equi-join on a common key: sorted windows, binary searches, vectorised products"
    preference = {"eager": 1, "lazy": 1}
    priced_as = ("hash", "hash-lazy")

    def __init__(self, query: JoinQuery, **kwargs) -> None:
        super().__init__(query, **kwargs)
        if self.negatives and query.has_count_windows:
            raise PlanError("the columnar join does not produce negative tuples for count windows", hint="use --algorithm nlj")
        keys = query.key_columns()
        assert keys is not None
        self.windows = [SortedWindow(s.window, k) for s, k in zip(query.streams, keys)]
        self.slide = query.slide
        self.no_restore = bool(self.slide) and not query.restore
        # single-stream filters of time windows run on arrival; all others in the join
        self.pushed: list[list[Expr]] = [[] for _ in range(self.n)]
        self.filters: list[tuple[Expr, frozenset[int]]] = []
        for f in query.filters:
            streams = frozenset(streams_of(f))
            if len(streams) == 1 and not self.windows[next(iter(streams))].counting:
                self.pushed[next(iter(streams))].append(f)
            else:
                self.filters.append((f, streams))
        self.origin_filters = [[f for f, s in self.filters if s == {i}] for i in range(self.n)]
        self.max_ts: int | None = None
        self.held: list[list[StreamBatch]] = [[] for _ in range(self.n)]
        self.seen_max_ts: int | None = None

    @classmethod
    def check(cls, query: JoinQuery) -> None:
        if query.key_columns() is None:
            raise PlanError(
                "the columnar join needs every stream equi-joined on one common attribute", hint="use --algorithm hybrid or --algorithm nlj for other join graphs"
            )

    # ------------------------------------------------------------------ driver

    def process(self, chunk: list[StreamBatch]) -> ResultBatch:
        batches = self._by_stream(chunk)
        if not self.slide:
            return self._join(batches)
        # lazy: release the arrivals whose evaluation instant has passed
        for i, b in enumerate(batches):
            if len(b) or not self.held[i]:
                self.held[i].append(b)
        seen = [int(b.ts[-1]) for b in batches if len(b)]
        if not seen:
            return ResultBatch.empty(self.n)
        return self._fire(max(seen))

    def advance(self, bound: int) -> ResultBatch:
        """No arrival with ``ts < bound`` will come: fire the lazy evaluations before ``bound``.

        Eager evaluation has nothing to fire. An engine that knows a watermark
        (e.g. a Spark key bucket that sees no new rows) calls this so results
        still appear at their evaluation instants.
        """
        if not self.slide or not any(len(b) for h in self.held for b in h):
            return ResultBatch.empty(self.n)
        return self._fire(int(bound))

    def _fire(self, top: int) -> ResultBatch:
        """Join the held arrivals of every evaluation instant before ``top``."""
        top = max(top, self.seen_max_ts) if self.seen_max_ts is not None else top
        self.seen_max_ts = top
        tau = ((top - 1) // self.slide) * self.slide  # instants < top have fired
        ready, rest = [], []
        for i in range(self.n):
            b = _concat(self.held[i], i)
            cut = int(np.searchsorted(b.ts, tau, "right"))
            ready.append(b.take(slice(0, cut)))
            rest.append(b.take(slice(cut, None)))
        self.held = [[r] for r in rest]
        return self._join(ready)

    def finish(self) -> ResultBatch:
        if not self.slide or not any(len(b) for h in self.held for b in h):
            return ResultBatch.empty(self.n)
        ready = [_concat(self.held[i], i) for i in range(self.n)]
        self.held = [[] for _ in range(self.n)]
        return self._join(ready)

    def state_tuples(self) -> int:
        return sum(len(w) for w in self.windows) + sum(len(b) for h in self.held for b in h)

    def _by_stream(self, chunk: list[StreamBatch]) -> list[StreamBatch]:
        out: list[StreamBatch | None] = [None] * self.n
        for b in chunk:
            if not all(isinstance(v, np.ndarray) for v in b.cols.values()):
                b = StreamBatch(b.stream, b.pos, b.ts, {c: np.asarray(v) for c, v in b.cols.items()}, b.sign)
            w = self.windows[b.stream]
            for attr in (w.key, w.partition):
                if len(b) and attr not in (None, "ts") and attr not in b.cols:
                    raise ExecutionError(f"stream {self.query.aliases[b.stream]} has no column {attr!r}", hint=f"its columns are {sorted(b.cols)}")
            out[b.stream] = b
        return [b if b is not None else StreamBatch.empty(i, self.windows[i].names or []) for i, b in enumerate(out)]

    # ------------------------------------------------------------------ core

    def _join(self, batches: list[StreamBatch]) -> ResultBatch:
        """Eager join of one chunk (contiguous positions) against the windows."""
        n, wins = self.n, self.windows
        sizes = [len(b) for b in batches]
        if not any(sizes):
            return ResultBatch.empty(n)
        chunk_max = max(int(b.ts[-1]) for b in batches if len(b))
        self.max_ts = chunk_max if self.max_ts is None else max(self.max_ts, chunk_max)
        pmin = min(int(b.pos[0]) for b in batches if len(b))
        pmax = max(int(b.pos[-1]) for b in batches if len(b))

        fresh: list[Fresh] = []
        for i, b in enumerate(batches):
            keep = _all_true(self.pushed[i], b) if self.pushed[i] and len(b) else None
            fresh.append(wins[i].admit(b, keep))

        codes = dense_codes([w.key_values() for w in wins] + [SortedWindow.fresh_key(f, w.key) for f, w in zip(fresh, wins)])
        scodes, ncodes = codes[:n], codes[n:]

        # all new rows, globally in (code, pos) order; each stream's rows keep that order
        counts = [len(f) for f in fresh]
        offs = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        sid = np.repeat(np.arange(n, dtype=np.int8), counts)
        acode = np.concatenate(ncodes)
        apos = np.concatenate([f.pos for f in fresh])
        n_codes = max((int(c.max()) for c in codes if len(c)), default=-1) + 1
        order = _key_pos_order(acode, apos - pmin, pmax - pmin + 1, n_codes)
        osid = sid[order]
        is_stream = [osid == i for i in range(n)]
        ranks = [np.flatnonzero(is_stream[i]) for i in range(n)]
        own = [order[ranks[i]] - offs[i] for i in range(n)]
        state_le = [count_at_most(scodes[i], n_codes, len(apos)) for i in range(n)]
        merged = [wins[i].merge(scodes[i], fresh[i], ncodes[i], own[i], state_le[i]) for i in range(n)]
        # upper bounds come from the global order: new rows of stream i before each rank
        new_before = [np.cumsum(is_stream[i]) if counts[i] and n > 2 else None for i in range(n)]

        probes = []
        for o in range(n):
            q, g, at = own[o], ranks[o], merged[o].new_at
            if n == 2:  # a rank counts the origin's own predecessors and the other stream's rows
                g = g - np.arange(len(g))
            if self.origin_filters[o] and len(q):
                ok = _all_true(self.origin_filters[o], fresh[o])[q]
                q, g, at = q[ok], g[ok], at[ok]
            if len(q):
                before = [g if n == 2 else new_before[i][g] if new_before[i] is not None else None for i in range(n)]
                probes.append(self._probe(o, q, at, ncodes[o][q], before, fresh, merged, state_le, n_codes))
        results = self._expand(merged, probes, pmin, pmax)

        for i in range(n):
            wins[i].retain(merged[i], self.max_ts)
        return results

    def _probe(self, o, q, at, q_code, before, fresh, merged, state_le, n_codes):
        """Partner ranges in every other window of stream ``o``'s new rows ``q``.

        ``q`` is in ``(code, pos)`` order, ``at`` its merged indices in its own
        window, ``before[i]`` the number of stream ``i``'s new rows preceding
        each in ``(code, pos)`` order. Returns the origins with a non-empty
        product: ``(pos, ts, lo, len)`` with ``lo[i]`` / ``len[i]`` per stream
        (the origin's own stream: its merged index, length 1).
        """
        f = fresh[o]
        q_pos, q_ts = f.pos[q], f.ts[q]
        tau = -((-q_ts) // self.slide) * self.slide if self.no_restore else None
        alive = None
        if tau is not None:  # an origin that is itself short-lived has no long-lived result
            w = self.windows[o]
            if w.timed:
                alive = q_ts + w.spec.length >= tau
        los, lens = [], []
        for i in range(self.n):
            if i == o:
                los.append(None)
                lens.append(None)
                continue
            m = merged[i]
            hi = state_le[i](q_code)  # the window's rows all precede: those with code <= q's
            if before[i] is not None:
                hi += before[i]
            lo = self._lower(i, m, fresh[i], q_code, q_pos, q_ts if tau is None else tau, hi, n_codes)
            self.comparisons += 2 * len(q) * math.ceil(math.log2(len(m) + 1))
            ln = hi - lo
            alive = ln > 0 if alive is None else alive & (ln > 0)
            los.append(lo)
            lens.append(ln)
        keep = np.flatnonzero(alive)
        los[o] = at[keep]
        lens[o] = np.ones(len(keep), np.int64)
        for i in range(self.n):
            if i != o:
                los[i], lens[i] = los[i][keep], lens[i][keep]
        return q_pos[keep], q_ts[keep], los, lens

    def _lower(self, i: int, m: Merged, fresh: Fresh, q_code, q_pos, q_ts, hi, n_codes):
        """First row of merged window ``i`` a query ``(code, pos, ts)`` can join; ``hi``: upper bounds.

        ``q_ts`` is the origin's ``ts`` (or, without restore, its evaluation instant).
        """
        w = self.windows[i]
        spec = w.spec
        if w.timed:
            return lex_searchsorted(m.code, m.ts, q_code, q_ts - spec.length, "left", n_codes)
        if w.partition is not None:
            lo = np.searchsorted(m.code, q_code, "left")
            return np.maximum(lo, hi - spec.size) if w.partition == w.key else lo
        if w.counting:
            before = fresh.arrivals_before + _count_before(fresh.all_pos, q_pos)
            return lex_searchsorted(m.code, m.cnt, q_code, before - spec.size, "left", n_codes)
        return np.searchsorted(m.code, q_code, "left")  # unbounded

    def _expand(self, merged, probes, pmin, pmax) -> ResultBatch:
        """Cartesian products of the partner ranges, stream by stream, filters as early as possible."""
        n = self.n
        if not probes or not sum(len(p[0]) for p in probes):
            return self._gather(merged, {i: np.empty(0, np.int64) for i in range(n)}, np.empty(0, np.int64))
        p_pos = np.concatenate([p[0] for p in probes])
        p_ts = np.concatenate([p[1] for p in probes])
        lo = [np.concatenate([p[2][i] for p in probes]) for i in range(n)]
        lens = [np.concatenate([p[3][i] for p in probes]) for i in range(n)]
        # origins in position order (positions of a chunk are dense: a counting sort)
        if pmax - pmin < 4 * len(p_pos) + 4096:
            slot = np.full(pmax - pmin + 1, -1, np.int64)
            slot[p_pos - pmin] = np.arange(len(p_pos))
            pr = slot[slot >= 0]
        else:
            pr = np.argsort(p_pos)

        idx: dict[int, np.ndarray] = {}
        pending = list(self.filters)
        stages = self.order
        if not pending:  # a pure product: the widest ranges last keeps intermediate arrays small
            fan = [float(lens[s].mean()) for s in range(n)]
            stages = sorted(range(n), key=lambda s: fan[s])
        for s in stages:
            ln = lens[s][pr]
            total = int(ln.sum())
            if total == len(pr):
                idx[s] = lo[s][pr]
            else:
                first = lo[s][pr] - (np.cumsum(ln) - ln)  # row of offset 0 in the expansion
                idx = {b: np.repeat(v, ln) for b, v in idx.items()}
                idx[s] = np.repeat(first, ln) + np.arange(total, dtype=np.int64)
                pr = np.repeat(pr, ln)
            mask = None
            m = merged[s]
            if m.evict is not None:
                mask = m.evict[idx[s]] > p_pos[pr]
                self.comparisons += len(pr)
            bound = set(idx)
            ready = [f for f, streams in pending if streams <= bound]
            pending = [(f, st) for f, st in pending if not st <= bound]
            for f in ready:
                if mask is not None:
                    pr, idx = pr[mask], {b: v[mask] for b, v in idx.items()}
                    mask = None
                self.comparisons += len(pr)
                got = evaluate(f, lambda st, attr: merged[st].column(attr, idx[st]))
                mask = np.broadcast_to(np.asarray(got, bool), (len(pr),))
            if mask is not None:
                pr, idx = pr[mask], {b: v[mask] for b, v in idx.items()}
        return self._gather(merged, idx, p_ts[pr])

    def _gather(self, merged, idx, ts) -> ResultBatch:
        total = len(ts)
        members = np.empty((self.n, total), np.int64).T  # one contiguous column per stream
        exp = tmp = None
        cols: dict[str, np.ndarray] = {}
        for i, ref in enumerate(self.query.streams):
            m, w = merged[i], self.windows[i]
            if total >= len(m) > 0:  # many results per row: gather from merged-order columns
                at, pos, src_ts, src = idx[i], m.merged_pos(), m.ts, m.merged_cols()
            else:
                at, pos, src_ts, src = m.perm[idx[i]], m.cat_pos, m.cat_ts, m.cat_cols
            if total:
                np.take(pos, at, out=members[:, i])
            member_ts = src_ts[at]
            cols[f"{ref.alias}.ts"] = member_ts
            for c, v in src.items():
                cols[f"{ref.alias}.{c}"] = v[at]
            if w.timed:
                if exp is None:
                    exp = member_ts + w.spec.length
                else:
                    tmp = np.add(member_ts, w.spec.length, out=tmp)
                    np.minimum(exp, tmp, out=exp)
        if exp is None:
            exp = np.full(total, NO_EXP, np.int64)
        return ResultBatch(members, ts, exp, np.ones(total, np.int8), cols)


def _all_true(filters: list[Expr], rows) -> np.ndarray:
    """Rows (a StreamBatch or Fresh) passing every single-stream filter in ``filters``."""

    def get(_stream: int, attr: str):
        return rows.ts if attr == "ts" else rows.cols[attr]

    ok = np.ones(len(rows.pos), bool)
    for f in filters:
        ok &= np.broadcast_to(np.asarray(evaluate(f, get), bool), ok.shape)
    return ok


def _key_pos_order(code: np.ndarray, rel_pos: np.ndarray, span: int, n_codes: int) -> np.ndarray:
    """Indices sorting rows by ``(code, pos)``; ``rel_pos`` unique in ``[0, span)``.

    Positions of a chunk are dense, so a counting sort puts rows in position
    order; a stable (radix) sort on narrow codes then groups them by key.
    """
    if len(code) == 0:
        return np.empty(0, np.int64)
    if n_codes <= 1 << 16 and span <= 4 * len(code) + 4096:
        slot = np.full(span, -1, np.int64)
        slot[rel_pos] = np.arange(len(code))
        by_pos = slot[slot >= 0]
        narrow = code[by_pos].astype(np.uint8 if n_codes <= 1 << 8 else np.uint16)
        return by_pos[np.argsort(narrow, kind="stable")]
    if n_codes * span < (1 << 62):
        return np.argsort(code * span + rel_pos)
    return np.lexsort((rel_pos, code))


def _count_before(sorted_pos: np.ndarray, q_pos: np.ndarray) -> np.ndarray:
    """For each query position, how many of ``sorted_pos`` are smaller."""
    if len(sorted_pos) == 0 or len(q_pos) == 0:
        return np.zeros(len(q_pos), np.int64)
    lo, hi = int(sorted_pos[0]), int(sorted_pos[-1])
    if hi - lo < 8 * len(q_pos) + 4096:  # dense prefix count, linear
        marks = np.zeros(hi - lo + 2, np.int64)
        marks[sorted_pos - lo + 1] = 1
        prefix = np.cumsum(marks)
        return prefix[np.clip(q_pos - lo, 0, hi - lo + 1)]
    return np.searchsorted(sorted_pos, q_pos)


def _concat(batches: list[StreamBatch], stream: int) -> StreamBatch:
    parts = [b for b in batches if len(b)]
    if not parts:
        return batches[0] if batches else StreamBatch.empty(stream, [])
    if len(parts) == 1:
        return parts[0]
    names = list(parts[0].cols)
    cols = {}
    for c in names:
        col = parts[0].cols[c]
        for p in parts[1:]:
            col = cat(col, p.cols[c])
        cols[c] = col
    return StreamBatch(stream, np.concatenate([p.pos for p in parts]), np.concatenate([p.ts for p in parts]), cols, np.concatenate([p.sign for p in parts]))
