"""A running ``slidewise serve``: the query manager, the ingestion thread over the sources, the state directory.

The state directory (``--state DIR``) holds ``queries.json`` (the registered queries and their sequence
numbers, :meth:`~slidewise.manager.core.QueryManager.save`, rewritten at every change), ``offsets.json``
(how far each source file or topic partition was read), ``windows/`` (the windows' contents with the offsets
they were read to, :mod:`slidewise.manager.snapshot`, written when they moved), ``results/NAME.jsonl`` (every
answered row, appended by the ingestion thread) and ``rejects.csv`` (rejected input rows with reasons, written
at stop). A service started again with the same directory registers its queries again, puts the windows back,
reads the sources on from their offsets and numbers new answers after the old ones: it answers as an
uninterrupted service would.
"""

from __future__ import annotations

import json
import math
import socket
import sys
import threading
from pathlib import Path

import numpy as np

from slidewise.errors import ExecutionError, OptionError, SlidewiseError
from slidewise.kafka.uri import is_kafka
from slidewise.manager import snapshot
from slidewise.manager.core import QueryManager
from slidewise.runtime.outputs import write_atomic
from slidewise.serve.tail import KafkaTail, Tail

__all__ = ["Service", "plain"]


def plain(value):
    """``value`` as JSON: numpy scalars as Python ones, non-finite floats as None."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


class Service:
    """Streams ``sources`` (name -> file, directory or ``kafka://`` topic) into a :class:`QueryManager` of ``n`` sub-windows of ``t``."""

    def __init__(
        self,
        sources: dict[str, str],
        t: int,
        n: int,
        *,
        state: str | Path | None = None,
        ts_column: str = "ts",
        ts_unit: str = "auto",
        schemas: dict[str, dict[str, str]] | None = None,
        isolation: str = "ttu",
        scheduling: str = "hybrid-late-pending",
        poll: float = 0.2,
        archive: str | Path | None = None,
        archive_memory: float | None = None,
    ):
        if not sources:
            raise OptionError("slidewise serve needs at least one --source NAME=PATH|DIR|kafka://HOST:PORT/TOPIC", hint="e.g. --source S=traffic.csv")
        self.state = Path(state) if state is not None else None
        #: an archive directory (``run --archive``) that ``GET /archive/probe`` reads, reopened per probe
        self.archive = Path(archive) if archive is not None else None
        if archive_memory is not None and (archive is None or not archive_memory > 0):
            hint = "add --archive DIR, or drop it" if archive is None else "MB of a probe's working set, e.g. --archive-memory 64"
            raise OptionError("--archive-memory needs --archive DIR" if archive is None else f"--archive-memory must be positive, not {archive_memory}", hint=hint)
        #: the budget of a probe's working set (``--archive-memory``), MB
        self.archive_memory = archive_memory
        offsets: dict[str, dict[str, int]] = {}
        saved = None
        if self.state is not None:
            self.state.mkdir(parents=True, exist_ok=True)
            (self.state / "results").mkdir(exist_ok=True)
            saved = snapshot.extra(self.state / "windows")
            if saved is not None:  # the windows and the offsets they were read to
                offsets = saved["offsets"]
            elif (self.state / "offsets.json").exists():
                try:
                    offsets = json.loads((self.state / "offsets.json").read_text())
                except (OSError, ValueError) as e:
                    raise ExecutionError(
                        f"cannot read the sources' offsets {self.state / 'offsets.json'}: {e}", hint="delete it to read the sources from their start"
                    ) from None
        self.tails = {
            name: (KafkaTail if is_kafka(path) else Tail)(name, path, ts_column=ts_column, ts_unit=ts_unit, schema=(schemas or {}).get(name), offsets=offsets.get(name))
            for name, path in sources.items()
        }
        self.qm = QueryManager({name: tail.kinds for name, tail in self.tails.items()}, t, n, isolation=isolation, scheduling=scheduling)
        self.poll = poll
        self.stopping = False
        self.errors: list[str] = []
        self.logged: dict[str, int] = {}  # query -> the last sequence number in its results file
        self._io = threading.Lock()  # the state files
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if self.state is not None and (self.state / "queries.json").exists():
            for name in self.qm.restore(self.state / "queries.json"):
                self.logged[name] = self.qm.queries[name].seq
        if saved is not None and self.state is not None:
            snapshot.load(self.qm, self.state / "windows")
        self._saved = self._moved()

    # -- queries --------------------------------------------------------------------------------

    def register(self, name: str, text: str, priority: int = 0) -> None:
        with self._io:  # not while the answers are persisted: a new query's file starts empty
            self.qm.register(name, text, priority)
            self.logged[name] = 0
            if self.state is not None:
                (self.state / "results" / f"{name}.jsonl").unlink(missing_ok=True)
        self._save()

    def remove(self, name: str) -> None:
        with self._io:
            self.qm.remove(name)
            self.logged.pop(name, None)
            if self.state is not None:
                (self.state / "results" / f"{name}.jsonl").unlink(missing_ok=True)
        self._save()

    def results(self, name: str, after: int = 0) -> list[tuple]:
        """Rows of ``name`` after sequence number ``after``: from its results file, then the manager's memory."""
        rows: list[tuple] = []
        last = after
        if self.state is not None:
            with self._io:
                path = self.state / "results" / f"{name}.jsonl"
                lines = path.read_text().splitlines() if path.exists() else []
            for line in lines:
                r = json.loads(line)
                if r["seq"] > last:
                    rows.append((r["seq"], r["ts"], r["sign"], r["row"]))
                    last = r["seq"]
        return rows + [plain(r) for r in self.qm.results(name, last)]

    def one_time(self, text: str) -> dict:
        a = self.qm.one_time(text)
        rows = [] if a.rows is None else [dict(zip(a.rows, values)) for values in zip(*(a.rows[c].tolist() for c in a.rows))]
        return plain({"rows": rows, "first": a.first, "latest": a.latest, "end": a.end, "staleness": a.staleness, "response": a.response, "aborts": a.aborts})

    def probe(self, key: str) -> dict:
        """The archive's unexpired rows with ``key`` at its last complete update: ``{"now", "rows"}``."""
        from slidewise.archive import Archive

        assert self.archive is not None
        archive = Archive.open(self.archive) if self.archive_memory is None else Archive.open(self.archive, memory_mb=self.archive_memory)
        table = archive.probe(key)
        return plain({"now": archive.now, "rows": table.to_pylist()})

    def stats(self) -> dict:
        s = self.qm.stats()
        s["sources"] = {name: {"rows": t.rows, "rejected": t.rejects.total, "files": len(t.pos)} for name, t in self.tails.items()}
        s["errors"] = list(self.errors)
        return plain(s)

    # -- ingestion and the state directory ------------------------------------------------------

    def start(self) -> None:
        self.qm.start()
        self._thread = threading.Thread(target=self._ingest, name="slidewise-ingest", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self.stopping = True
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.qm.stop()
        for tail in self.tails.values():
            if isinstance(tail, KafkaTail):
                tail.close()
        self._persist()
        self._save()
        if self.state is not None:
            for name, tail in self.tails.items():
                if tail.rejects.total:
                    tail.rejects.write(self.state / f"rejects-{name}.csv")

    def _ingest(self) -> None:
        while not self._stop.is_set():
            for tail in self.tails.values():
                try:
                    tail.poll(self.qm.append)
                except SlidewiseError as e:  # reported in /stats; the other sources go on
                    if str(e) not in self.errors:
                        self.errors = (self.errors + [str(e)])[-10:]
            self._persist()
            self._stop.wait(self.poll)

    def _persist(self, windows: bool = True) -> None:
        """Append new answers to the results files, snapshot the windows with the offsets (``windows``: on the
        ingestion thread, or once it stopped), then save the queries as of those answers (a service killed at
        any point restarts with consistent files)."""
        if self.state is None:
            return
        with self._io:
            with self.qm.lock:  # the answers and the queries' sequence numbers and instants, together
                queries = self.qm.entries()
                new = {name: self.qm.results(name, self.logged[name]) for name in self.logged if name in self.qm.queries}
            for name, rows in new.items():
                if rows:
                    with open(self.state / "results" / f"{name}.jsonl", "a") as fh:
                        fh.write("".join(json.dumps({"seq": s, "ts": ts, "sign": sign, "row": plain(row)}, default=str) + "\n" for s, ts, sign, row in rows))
                    self.logged[name] = rows[-1][0]
            if windows:
                offsets = {n: t.offsets() for n, t in self.tails.items()}
                if self._moved() != self._saved:  # the windows with the offsets they were read to
                    snapshot.save(self.qm, self.state / "windows", {"offsets": offsets})
                    self._saved = self._moved()
                write_atomic(self.state / "offsets.json", json.dumps(offsets).encode(), "state")
            self.qm.save(self.state / "queries.json", queries)

    def _moved(self) -> tuple:
        """Where the windows are: each stream's next version and rows in its open sub-window."""
        return tuple((w.next_version, sum(len(p["ts"]) for p in self.qm.buffers[s])) for s, w in self.qm.windows.items())

    def _save(self) -> None:
        """The registered queries saved (with their answers so far), on a thread that does not append."""
        self._persist(windows=False)


def serve(service: Service, host: str, port: int) -> None:
    """Run the API over ``service`` under uvicorn until SIGINT / SIGTERM, then stop and save (exit status 0)."""
    import uvicorn

    from slidewise.serve.app import make_app

    class Server(uvicorn.Server):
        def handle_exit(self, sig, frame) -> None:  # a graceful stop: the signal is not raised again afterwards
            super().handle_exit(sig, frame)
            self._captured_signals.clear()

    try:  # bound here: a taken port is one error, and the address printed is the one listened on
        sock = socket.create_server((host, port))
    except OSError as e:
        raise OptionError(f"cannot listen on {host}:{port}: {e.strerror or e}", hint="is the port taken? choose another --port") from None
    server = Server(uvicorn.Config(make_app(service), log_level="warning", timeout_graceful_shutdown=2))
    service.start()
    host, port = sock.getsockname()[:2]
    print(f"slidewise: serving on http://{host}:{port}", file=sys.stderr, flush=True)
    try:
        server.run(sockets=[sock])
    finally:
        service.stop()
        sock.close()
    print("slidewise: stopped" + (f" (state kept in {service.state})" if service.state else ""), file=sys.stderr, flush=True)
