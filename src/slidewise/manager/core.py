"""The query manager: streams flowing into sub-windows, periodic queries registered and removed while
they run, one-time queries over the current windows, all on separate threads.

:class:`QueryManager` is the core a service drives. :meth:`~QueryManager.append`
(the ingestion thread) cuts each stream into sub-windows of ``t`` time units and
slides its window (a write transaction of :mod:`slidewise.manager.transactions`)
when a sub-window is complete, then tells the periodic scheduler
(:mod:`slidewise.manager.scheduling`). The executor thread (:meth:`~QueryManager.start`)
runs what the scheduler says is due: the queries of one group in one read
transaction (one scan of their shared synopsis, the longest window; each answer
over its own youngest sub-windows). :meth:`~QueryManager.one_time` answers on
the caller's thread with a higher priority, which pre-empts the periodic scan
between two sub-window reads. Each registered query's answers get sequence
numbers (:meth:`~QueryManager.results` resumes after one); :meth:`~QueryManager.stats`
gives throughput, latency, aborts, re-scans, staleness and memory.

Tuples must arrive in timestamp order per stream; one older than the open
sub-window is rejected (counted, kept with its reason in :attr:`QueryManager.rejected`).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from slidewise.cql.queryfile import NAME
from slidewise.errors import ExecutionError, QueryError, SlidewiseError
from slidewise.manager.queries import Compiled, Shared, compile_query
from slidewise.manager.scheduling import PeriodicScheduler
from slidewise.manager.transactions import TransactionScheduler, Txn
from slidewise.manager.window import Window
from slidewise.runtime.outputs import write_atomic
from slidewise.runtime.sources.base import KIND_DTYPE

__all__ = ["Answer", "NameTaken", "QueryManager", "Registered"]

#: priority of one-time queries (periodic ones default to 0)
ONE_TIME_PRIORITY = 10


class NameTaken(QueryError):
    """A query of that name is already registered."""


@dataclass
class Answer:
    """One answer: rows (columns with ``ts`` and ``sign``; None: no row) over versions ``first..latest``."""

    rows: dict[str, np.ndarray] | None
    first: int
    latest: int
    end: int
    staleness: float
    response: float
    aborts: int
    rescans: int
    seq: int = 0  # the first row's sequence number (registered queries)


@dataclass(eq=False)
class Registered:
    name: str
    query: Compiled
    priority: int = 0
    seq: int = 0  # rows answered so far
    batches: list = field(default_factory=list)  # (first seq, rows), oldest first
    kept: int = 0  # rows in batches
    dropped: int = 0  # rows beyond the retention (the oldest first)
    runs: int = 0
    errors: list[str] = field(default_factory=list)
    staleness: float = 0.0  # sums over runs
    response: float = 0.0
    end: int | None = None  # the instant of its latest answer
    resumed: int | None = None  # restored: the instant answered last before the restart (not answered again)


class QueryManager:
    """Windows of ``n`` sub-windows of ``t`` over streams with attribute kinds ``schemas``; ``isolation`` a
    policy of :data:`~slidewise.manager.transactions.POLICIES`, ``scheduling`` one of
    :data:`~slidewise.manager.scheduling.POLICIES`; ``retain`` rows kept per query for :meth:`results`."""

    def __init__(
        self,
        schemas: dict[str, dict[str, str]],
        t: int,
        n: int,
        *,
        isolation: str = "ttu",
        scheduling: str = "hybrid-late-pending",
        rescan: bool = False,
        retain: int = 100_000,
    ):
        self.schemas, self.t, self.n, self.retain = schemas, t, n, retain
        self.windows = {s: Window(s, t, n) for s in schemas}
        self.tx = {s: TransactionScheduler(w, isolation, rescan) for s, w in self.windows.items()}
        self.scheduler = PeriodicScheduler(scheduling)
        self.queries: dict[str, Registered] = {}
        self.lock = threading.Condition()  # registry, scheduler, results
        self.open: dict[str, int | None] = {s: None for s in schemas}  # start of the open sub-window
        self.buffers: dict[str, list[dict]] = {s: [] for s in schemas}
        self.rejected: dict[str, list[tuple[int, str]]] = {s: [] for s in schemas}  # (ts, reason), the first 1000
        self.rejected_rows = dict.fromkeys(schemas, 0)
        self.one_time_runs = 0
        self.one_time_response = 0.0
        self.work = {"merged": 0.0, "ranked": 0.0}  # periodic executions' counted work (see queries.Shared)
        self.started = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- queries --------------------------------------------------------------------------------

    def register(self, name: str, text: str, priority: int = 0, post: float = 0.0) -> Registered:
        """Register a periodic query (it runs from the next slide on); ``post``: the cost of post-processing one
        of its answers, in sub-window merges, for hybrid scheduling's cost model (§8.4.4)."""
        if not isinstance(name, str) or not NAME.fullmatch(name):
            raise QueryError(f"bad query name {name!r}", hint="use letters, digits and _ (not first a digit)")
        query = compile_query(text, self.schemas, self.t, self.n)
        with self.lock:
            if name in self.queries:
                raise NameTaken(f"a query named {name} is registered", hint="remove it first or choose another name")
            reg = self.queries[name] = Registered(name, query, priority)
            self.windows[query.spec.source].builders[query.signature] = query.build
            self.scheduler.add(name, (query.spec.source, query.signature), query.m, query.nk, post)
            self.lock.notify_all()
        return reg

    def remove(self, name: str) -> None:
        with self.lock:
            reg = self.queries.pop(name, None)
            if reg is None:
                raise QueryError(f"no query named {name}", hint=f"registered: {', '.join(sorted(self.queries)) or '(none)'}")
            self.scheduler.remove(name)
            q = reg.query
            if not any(r.query.signature == q.signature for r in self.queries.values()):
                self.windows[q.spec.source].builders.pop(q.signature, None)

    def one_time(self, text: str, priority: int = ONE_TIME_PRIORITY, access: str = "window") -> Answer:
        """Answer ``text`` once over the current window (a window scan by default, §7.2.2)."""
        q = compile_query(text, self.schemas, self.t, self.n, one_time=True, access=access)
        tx = self.tx[q.spec.source]
        txn = tx.run(tx.start(q.nk, q.read, priority))
        rows = q.answer(txn.partials(), txn.end)
        response = txn.committed - txn.started
        with self.lock:
            self.one_time_runs += 1
            self.one_time_response += response
        return Answer(rows, txn.versions[0] if txn.versions else -1, txn.latest, txn.end, txn.staleness, response, txn.aborts, txn.rescans)

    def results(self, name: str, after: int = 0) -> list[tuple[int, int, int, dict]]:
        """Rows of ``name`` with sequence numbers above ``after``: (seq, ts, sign, row)."""
        with self.lock:
            reg = self.queries.get(name)
            if reg is None:
                raise QueryError(f"no query named {name}", hint=f"registered: {', '.join(sorted(self.queries)) or '(none)'}")
            out = []
            for first, rows in reg.batches:
                size = len(rows["ts"])
                if first + size - 1 <= after:
                    continue
                cols = [c for c in rows if c not in ("ts", "sign")]
                for i in range(max(0, after - first + 1), size):
                    out.append((first + i, int(rows["ts"][i]), int(rows["sign"][i]), {c: rows[c][i].item() if hasattr(rows[c][i], "item") else rows[c][i] for c in cols}))
            return out

    def entries(self) -> list[dict]:
        """The registered queries as :meth:`save` writes them (taken under the registry's lock)."""
        with self.lock:
            return [{"name": r.name, "query": r.query.text, "priority": r.priority, "seq": r.seq, "end": r.end} for r in self.queries.values()]

    def save(self, path: str | Path, entries: list[dict] | None = None) -> None:
        """Write the registered queries (name, query, priority, rows answered so far, the instant of the latest
        answer; ``entries``: as :meth:`entries` gave them earlier) to ``path`` as JSON, whole or not at all;
        :meth:`restore` registers them again (a restarted service resumes them)."""
        entries = self.entries() if entries is None else entries
        write_atomic(path, json.dumps({"queries": entries}, indent=1).encode(), "state")

    def restore(self, path: str | Path) -> list[str]:
        """Register the queries :meth:`save` wrote; their sequence numbers go on from where they were, and a window
        they answered is not answered again (with the windows kept, :mod:`slidewise.manager.snapshot`)."""
        try:
            entries = json.loads(Path(path).read_text())["queries"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise ExecutionError(f"cannot read the query manager's state {path}: {e}", hint="delete it to start with no registered queries") from None
        for entry in entries:
            reg = self.register(entry["name"], entry["query"], entry.get("priority", 0))
            reg.seq, reg.end = int(entry.get("seq", 0)), entry.get("end")
            reg.resumed = reg.end
        return [entry["name"] for entry in entries]

    # -- ingestion ------------------------------------------------------------------------------

    def append(self, stream: str, ts: np.ndarray, cols: dict[str, np.ndarray]) -> None:
        """Tuples of ``stream`` in timestamp order (``cols``: every attribute of its schema)."""
        if stream not in self.windows:
            raise ExecutionError(f"unknown stream {stream}", hint=f"the query manager has streams {', '.join(sorted(self.windows))}")
        ts = np.asarray(ts, np.int64)
        if not len(ts):
            return
        cols = {a: _text(v) if self.schemas[stream].get(a) == "str" else v for a, v in cols.items()}
        start = self.open[stream]
        if start is None:
            start = self.open[stream] = self.windows[stream].origin = int(ts[0]) // self.t * self.t
        late = ts < start
        if late.any() or (np.diff(ts) < 0).any():
            keep = ~late & (ts >= np.maximum.accumulate(np.where(late, start, ts)))
            self._reject(
                stream, ts[~keep], f"older than the open sub-window or out of order (tuples must arrive in timestamp order; the open sub-window starts at {start})"
            )
            ts, cols = ts[keep], {a: np.asarray(v)[keep] for a, v in cols.items()}
        while len(ts):
            start = int(self.open[stream])  # type: ignore[arg-type]  # set above; advance keeps it set
            cut = int(np.searchsorted(ts, start + self.t))
            if cut:
                self.buffers[stream].append({"ts": ts[:cut], **{a: np.asarray(v)[:cut] for a, v in cols.items()}})
            if cut == len(ts):
                break
            self.advance(stream, int(ts[cut]))
            ts, cols = ts[cut:], {a: np.asarray(v)[cut:] for a, v in cols.items()}

    def advance(self, stream: str, ts: int) -> None:
        """Close every sub-window of ``stream`` that ends at or before ``ts`` (a heartbeat)."""
        start = self.open[stream]
        if start is None or ts < start + self.t:
            return
        window, gap = self.windows[stream], (ts - start) // self.t
        self._slide(stream)
        gap -= 1
        if gap > self.n:  # more than a window of silence: n empty sub-windows stand for it
            window.origin += (gap - self.n) * self.t
            gap = self.n
        for _ in range(gap):
            self._slide(stream)
        self.open[stream] = window.origin + window.next_version * self.t

    def _slide(self, stream: str) -> None:
        parts = self.buffers[stream]
        names = ["ts", *self.schemas[stream]]
        cols = {a: np.concatenate([p[a] for p in parts]) if parts else np.zeros(0, KIND_DTYPE.get(self.schemas[stream].get(a, "int"), np.int64)) for a in names}
        self.buffers[stream] = []
        self.tx[stream].slide(cols)
        with self.lock:
            self.scheduler.update(lambda g: isinstance(g, tuple) and g[0] == stream)  # groups are (stream, signature)
            self.lock.notify_all()

    def _reject(self, stream: str, ts: np.ndarray, reason: str) -> None:
        self.rejected_rows[stream] += len(ts)
        room = 1000 - len(self.rejected[stream])
        self.rejected[stream].extend((int(x), reason) for x in ts[:room])

    # -- periodic execution ---------------------------------------------------------------------

    def start(self) -> None:
        """Start the executor thread of periodic queries."""
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._loop, name="slidewise-periodic", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        with self.lock:
            self.lock.notify_all()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _loop(self) -> None:
        while not self._stop.is_set():
            with self.lock:
                batch = self.scheduler.next()
                if batch is None:
                    self.lock.wait(0.05)
                    continue
                regs = [self.queries[n] for n in batch]
            self.execute(regs)

    def run_due(self) -> int:
        """Execute everything due now on this thread (without the executor thread); the batches run (a scheduler
        that never idles: as many batches as it has tasks)."""
        done = 0
        while self.scheduler.idle or done < len(self.scheduler.tasks):
            with self.lock:
                batch = self.scheduler.next()
                regs = [self.queries[n] for n in batch or ()]
            if batch is None:
                return done
            self.execute(regs)
            done += 1
        return done

    def execute(self, regs: list[Registered]) -> Txn | None:
        """One read transaction for queries of one group (the longest window); each answers its own, shorter
        windows first, the queries of one signature from one scan of the reads from the youngest and one top-k
        ranking of each window's frequencies (:class:`~slidewise.manager.queries.Shared`; Golab's thesis §8.4.3 answers
        the shorter windows of a CS2 group first). The committed transaction (None: no query)."""
        if not regs:
            return None
        first = regs[0].query
        tx = self.tx[first.spec.source]
        txn = tx.run(tx.start(max(r.query.nk for r in regs), first.read, max(r.priority for r in regs)))
        parts, shared = txn.partials(), Shared([r.query for r in regs])
        for reg in sorted(regs, key=lambda r: r.query.nk):  # shorter windows first: one scan from the youngest read
            if reg.resumed is not None and txn.end <= reg.resumed:
                continue  # answered before the restart (its windows were kept)
            try:
                rows = reg.query.answer(parts, txn.end, shared)
            except (SlidewiseError, ArithmeticError, ValueError, TypeError) as e:  # one failing query does not stop the others
                with self.lock:
                    reg.errors = (reg.errors + [f"{type(e).__name__}: {e}"])[-10:]
                continue
            with self.lock:
                reg.runs += 1
                reg.end = txn.end
                reg.staleness += txn.staleness
                reg.response += txn.committed - txn.started
                if rows is not None and len(rows["ts"]):
                    reg.batches.append((reg.seq + 1, rows))
                    reg.seq += len(rows["ts"])
                    reg.kept += len(rows["ts"])
                    while reg.kept > self.retain and len(reg.batches) > 1:
                        size = len(reg.batches.pop(0)[1]["ts"])
                        reg.kept -= size
                        reg.dropped += size
        with self.lock:
            for k, v in shared.work.items():
                self.work[k] += v
        return txn

    # -- statistics -----------------------------------------------------------------------------

    def _memory(self) -> dict:
        rows, size = {}, {}
        for name, tx in self.tx.items():
            with tx.cond:
                subs = tx.window.contents()
            rows[name] = sum(len(sub) for sub in subs)
            size[name] = sum(a.nbytes for sub in subs for a in sub.cols.values())
        return {"window_rows": rows, "window_bytes": size}

    def stats(self) -> dict:
        """Throughput (re-executions per second), latency, aborts, re-scans, staleness, response and memory."""
        with self.lock:
            elapsed = max(time.monotonic() - self.started, 1e-9)
            runs = sum(r.runs for r in self.queries.values())
            per_query = {
                name: {
                    "period": r.query.m,
                    "window": r.query.nk,
                    "priority": r.priority,
                    "runs": r.runs,
                    "rows": r.seq,
                    "latency": self.scheduler.latency(name),
                    "staleness": r.staleness / r.runs if r.runs else None,
                    "response": r.response / r.runs if r.runs else None,
                    "errors": list(r.errors),
                }
                for name, r in self.queries.items()
            }
            counts = {k: sum(tx.counts[k] for tx in self.tx.values()) for k in ("writes", "commits", "aborts", "rescans")}
            return {
                "elapsed": elapsed,
                "throughput": runs / elapsed,
                "latency": self.scheduler.latency(),
                "scans": self.scheduler.executions,
                "one_time": {"runs": self.one_time_runs, "response": self.one_time_response / self.one_time_runs if self.one_time_runs else None},
                **counts,
                "rejected": dict(self.rejected_rows),
                **self._memory(),
                "result_rows_kept": sum(r.kept for r in self.queries.values()),
                "queries": per_query,
            }


def _text(values: object) -> np.ndarray:
    """A text column with its nulls (None, NaN) as the empty text: slidewise's readers read missing text so,
    and a null GROUP BY key is one group, as on the local engine."""
    values = np.asarray(values, object)
    null = pd.isna(values)
    if null.any():
        values = values.copy()
        values[null] = ""
    return values
