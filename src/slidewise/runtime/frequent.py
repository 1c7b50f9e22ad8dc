"""Run a frequent-items query (:class:`slidewise.plan.frequent.FrequentQuery`) over one stream.

:class:`FrequentRun` cuts the merged, lateness-checked chunks into
sub-windows — time ``(j·s − s, j·s]`` for ``[RANGE T SLIDE D]``, arrivals
``j·s .. j·s + s − 1`` (counted before WHERE) for ``[ROWS N SLIDE D]`` —
summarises each complete one once with
:func:`slidewise.synopses.frequent.summarize` (the tuples are then
dropped) and answers every evaluation from
:class:`~slidewise.synopses.frequent.WindowCounters`: the window
``τ − T < ts ≤ τ`` at ``τ = kD`` from
``ceil(first ts / D)·D`` to ``ceil(last ts / D)·D`` for a time window (the
instants of the pane path), after every ``D``-th arrival for a count window
(``ts`` = that arrival's). An evaluation's rows, by frequency descending
then item: the item, ``frequency``, ``threshold`` (δ), ``guaranteed``, ``ts``,
``sign`` (+1, RSTREAM).
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from slidewise.plan.expr import evaluate
from slidewise.plan.frequent import FrequentQuery
from slidewise.synopses.frequent import Summaries, WindowCounters, summarize

__all__ = ["FrequentRun", "bind_frequent", "execute_frequent"]


def bind_frequent(q: FrequentQuery, kinds: dict[str, str]) -> FrequentQuery:
    """``q`` typed against its stream's columns (``kinds``: attribute -> kind); a PlanError without the item
    or over a changelog (both engines)."""
    from slidewise.errors import PlanError
    from slidewise.plan.bind import bind
    from slidewise.plan.logical import CHANGELOG

    if CHANGELOG in kinds:
        raise PlanError(
            f"stream {q.scan.source} is a changelog (it has a {CHANGELOG} column), and FREQUENT keeps only top-k summaries, which cannot take retractions back",
            hint=f"count with GROUP BY over it instead, or rename the {CHANGELOG} column if it is an ordinary attribute",
        )
    q = bind(q, {q.scan.source: kinds})  # type: ignore[assignment]  # bind keeps the plan's class
    if q.item not in kinds:
        raise PlanError(f"FREQUENT counts column {q.scan.alias}.{q.item}, which {q.scan.source} does not have", hint=f"its columns: {', '.join(kinds)}")
    return q


class FrequentRun:
    """Feed arrivals with :meth:`add`, then :meth:`finish`; rows go to ``emit(cols)`` as column dicts."""

    def __init__(self, q: FrequentQuery, emit, kind: str | None = None, item_dtype: np.dtype | None = None):
        self.q, self.emit = q, emit
        self.item_dtype = item_dtype if item_dtype is not None and np.dtype(item_dtype).kind in "biuf" else None
        self.kind = kind or ("exact" if q.exact else q.summary)
        self.s, self.b, self.D = q.sub_window, q.sub_windows, q.slide
        self.counters = WindowCounters(q.k)
        self.carry: tuple[np.ndarray, np.ndarray] | None = None  # sub-window ids and items of the open sub-window
        self.pending: list[Summaries] = []
        self.seen = 0  # arrivals so far (count windows)
        self.eval_ts: dict[int, int] = {}  # count windows: evaluation -> ts of its last arrival
        self.next_eval: int | None = 1 if q.counting else None
        self.last_ts: int | None = None
        self.results = self.evaluations = 0
        self.rows: list[tuple] = []

    # ---------------------------------------------------------------- input

    def add(self, ts: np.ndarray, cols: dict[str, np.ndarray]) -> None:
        """Arrivals in timestamp order (the stream's attributes by name)."""
        n = len(ts)
        if not n:
            return
        q = self.q
        if q.counting:
            pos = self.seen + np.arange(n, dtype=np.int64)
            sub = pos // self.s
            for e in range(self.seen // self.D + 1, (self.seen + n) // self.D + 1):
                self.eval_ts[e] = int(ts[e * self.D - 1 - self.seen])
            self.seen += n
            frontier = self.seen // self.s
        else:
            if self.next_eval is None:
                self.next_eval = -(-int(ts[0]) // self.D)
            sub = -(-ts.astype(np.int64) // self.s)
            frontier = int(sub[-1])
        self.last_ts = int(ts[-1])
        values = cols[q.item]
        if q.where is not None:

            def get(_stream, a):
                return ts if a == "ts" else cols[a]

            keep = np.broadcast_to(np.asarray(evaluate(q.where, get), dtype=bool), ts.shape)
            sub, values = sub[keep], values[keep]
        self._cut(sub, values, frontier)
        self._evaluate(self.seen // self.D if q.counting else -(-self.last_ts // self.D) - 1)

    def finish(self) -> None:
        if self.last_ts is None:
            return
        if not self.q.counting:
            self._cut(np.zeros(0, np.int64), np.zeros(0), None)
            self._evaluate(-(-self.last_ts // self.D))
        self._flush()

    def _cut(self, sub: np.ndarray, values: np.ndarray, frontier: int | None) -> None:
        """Summarise the sub-windows before ``frontier`` (all if None); keep the rest open."""
        if self.carry is not None:
            sub, values = np.concatenate([self.carry[0], sub]), np.concatenate([self.carry[1], values])
        done = len(sub) if frontier is None else int(np.searchsorted(sub, frontier, "left"))
        self.carry = (sub[done:], values[done:]) if done < len(sub) else None
        if done:
            self.pending.append(summarize(sub[:done], values[:done], self.q.k, self.kind))

    # ---------------------------------------------------------------- evaluations

    def _evaluate(self, upto: int) -> None:
        """Answer every evaluation up to ``upto`` (all their sub-windows are complete)."""
        q, s, b, D = self.q, self.s, self.b, self.D
        count = int(q.counting)
        while self.next_eval is not None and self.next_eval <= upto:
            e = self.next_eval
            last = e * D // s - count
            self._feed(last)
            self.counters.expire(last - b + 1)
            if not self.counters.subs:  # an empty window: jump to the first one holding the next sub-window
                nxt = self._next_sub()
                self.next_eval = upto + 1 if nxt is None else max(e + 1, -(-(nxt + count) * s // D))
                continue
            ans = self.counters.answer()
            instant = self.eval_ts.pop(e) if count else e * D
            self.evaluations += 1
            if len(ans.items):
                self.rows.append((ans.items, ans.frequency, ans.threshold, ans.guaranteed, instant))
            self.next_eval = e + 1
        if count:
            for e in [e for e in self.eval_ts if e < (self.next_eval or 1)]:
                del self.eval_ts[e]
        self._flush()

    def _feed(self, last: int) -> None:
        """Move the pending summaries of sub-windows up to ``last`` into the window."""
        while self.pending:
            sm = self.pending[0]
            n = int(np.searchsorted(sm.ids, last, "right"))
            self.counters.extend(sm.before(n))
            if n < len(sm.ids):
                self.pending[0] = sm.after(n)
                return
            self.pending.pop(0)

    # ---------------------------------------------------------------- state between calls (Spark)

    def snapshot(self) -> tuple[dict, Summaries, tuple[np.ndarray, np.ndarray] | None]:
        """The run between calls, columnar: its scalars, one :class:`Summaries` of the sub-windows held
        (in the window, then pending; items as values), the open sub-window's ids and items."""
        held = Summaries.concat([self.counters.summaries(), *self.pending])
        meta = {
            "seen": self.seen,
            "next_eval": self.next_eval,
            "last_ts": self.last_ts,
            "eval_ts": sorted(self.eval_ts.items()),
            "results": self.results,
            "evaluations": self.evaluations,
        }
        return meta, held, self.carry

    def restore(self, meta: dict, held: Summaries, carry: tuple[np.ndarray, np.ndarray] | None) -> None:
        """Continue from :meth:`snapshot` (on a new run: the held summaries re-enter the window at the
        next evaluation, which gives the same counters)."""
        self.seen, self.next_eval, self.last_ts = meta["seen"], meta["next_eval"], meta["last_ts"]
        self.eval_ts = {int(e): int(t) for e, t in meta["eval_ts"]}
        self.results, self.evaluations = meta["results"], meta["evaluations"]
        self.pending = [held] if len(held.ids) else []
        self.carry = carry

    def _next_sub(self) -> int | None:
        return int(self.pending[0].ids[0]) if self.pending else None

    def _flush(self) -> None:
        if not self.rows:
            return
        sizes = [len(r[0]) for r in self.rows]
        items = np.concatenate([r[0] for r in self.rows])
        if self.item_dtype is not None:
            items = items.astype(self.item_dtype)
        cols = {
            self.q.item: items,
            "frequency": np.concatenate([r[1] for r in self.rows]),
            "threshold": np.repeat(np.array([r[2] for r in self.rows], np.int64), sizes),
            "guaranteed": np.concatenate([r[3] for r in self.rows]),
            "ts": np.repeat(np.array([r[4] for r in self.rows], np.int64), sizes),
            "sign": np.ones(sum(sizes), np.int8),
        }
        self.rows = []
        self.results += len(items)
        self.emit(cols)


def execute_frequent(q: FrequentQuery, opened, names, *, out, collect, lateness, chunk_rows, rejects, rejects_to, progress) -> tuple:
    """Run ``q`` over the opened sources (the one stream of ``q``): (frame or None, stats)."""
    from slidewise.runtime.join_engine import interrupted, run_counts
    from slidewise.runtime.outputs import GuardedRun
    from slidewise.runtime.progress import Progress
    from slidewise.runtime.reorder import merge_all
    from slidewise.runtime.sinks import BackgroundSink, collected_frame, open_sink

    columns = [*q.columns, "ts", "sign"]
    frames: list = []
    writer = None

    def emit(cols):
        if writer is not None:
            writer.write(cols)
        if collect:
            frames.append(pd.DataFrame(cols))

    source = q.scan.source
    run = FrequentRun(q, emit, item_dtype=dict(opened[names.index(source)].schema).get(q.item))
    bar = Progress(enabled=progress)
    inputs = dict.fromkeys(names, 0)
    started = time.perf_counter()
    with GuardedRun(chunk_rows, bar) as guard:
        writer = guard.sink = BackgroundSink(open_sink(out, columns)) if out is not None else None
        for chunk in merge_all(opened, lateness, rejects, chunk_rows):
            b = chunk[names.index(source)]
            if len(b):
                inputs[source] += len(b)
                run.add(b.ts, b.cols)
            bar.update(sum(inputs.values()), run.results, rejects.total)
        run.finish()
    stop = guard.stop
    guard.finish(rejects, rejects_to)
    seconds = time.perf_counter() - started
    stats = {
        "query": q.text,
        "strategy": "frequent",
        "path": q.describe(),
        **run_counts(inputs, run.results, 0, rejects, seconds),
        "state_tuples_peak": 0,
        "negative_tuples": 0,
        "evaluations": run.evaluations,
        "state_bytes_peak": run.counters.peak_bytes,
        **interrupted(stop),
    }
    frame = None
    if collect:
        frame = collected_frame(frames, columns)
    return frame, stats
