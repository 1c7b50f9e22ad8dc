"""A query's results into an archive: buffered, then added by an update every Δ of result time.

:class:`ArchiveWriter` is a callable sink (one pandas DataFrame of results
per call). A row's expiration is the result's ``exp`` column, or ``ts`` plus
the ``lifetime`` column; rows wait in memory until the first update instant
at or after their ``ts`` (instants on the grid of ``every``), and ``close``
makes a last update at the latest result time, which becomes the archive's
current time. A directory that already holds an archive is continued.
Without ``every``, Δ is the largest lifetime of the first results divided by
4·max(G, E) (so a lifetime spans several rounds of the round-robin).

:meth:`ArchiveWriter.write_batch` is the entry of an engine that replays a
micro-batch after a crash (Spark): all updates a batch brings, the rows not
yet due (as a pending file) and the batch id go into one manifest swap, and
a batch at or before the recorded id of the same run is skipped, so each
batch's rows enter the archive exactly once.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from slidewise.archive.index import MEMORY_MB, Archive
from slidewise.archive.layout import Layout
from slidewise.errors import ExecutionError, OptionError

#: the ``archive*`` keywords of :func:`slidewise.run` (the ``run --archive*`` options)
OPTIONS = ("archive", "archive_key", "archive_lifetime", "archive_every", "archive_variant", "archive_n", "archive_memory")


class ArchiveWriter:
    """Results of a run into the archive at ``root``, keyed by ``key``."""

    @classmethod
    def from_options(cls, options: dict) -> ArchiveWriter:
        """The writer of the ``archive*`` keywords (:data:`OPTIONS`); an OptionError for unknown ones."""
        unknown = sorted(set(options) - set(OPTIONS))
        if unknown:
            raise OptionError(f"unknown option {unknown[0]!r}", hint=f"archive options: {', '.join(OPTIONS)}")
        return cls(
            options["archive"],
            key=options.get("archive_key") or "",
            lifetime=options.get("archive_lifetime"),
            every=options.get("archive_every"),
            variant=options.get("archive_variant") or "rebuild",
            n=options.get("archive_n") or 16,
            memory_mb=MEMORY_MB if options.get("archive_memory") is None else options["archive_memory"],
        )

    def __init__(
        self,
        root: str | Path,
        *,
        key: str,
        lifetime: str | None = None,
        every: int | None = None,
        variant: str = "rebuild",
        n: int = 16,
        memory_mb: float = MEMORY_MB,
    ):
        if not key:
            raise OptionError("--archive needs --archive-key COL", hint="the result column the archive is probed by, e.g. --archive-key dns.orig_h")
        self.root, self.key, self.lifetime, self.every, self.variant, self.n, self.memory_mb = Path(root), key, lifetime, every, variant, n, memory_mb
        Layout.make(variant, n=n, every=every or 1)  # options are checked before the run starts
        if not memory_mb > 0:
            raise OptionError(
                f"--archive-memory must be positive, not {memory_mb}", hint=f"MB of an update's or probe's working set, e.g. --archive-memory {MEMORY_MB:g}"
            )
        self.archive: Archive | None = Archive.open(self.root, memory_mb=memory_mb) if (self.root / "manifest.json").exists() else None
        if self.archive is not None and self.archive.key != key:
            raise OptionError(
                f"the archive is keyed by {self.archive.key!r}, not {key!r}", location=str(self.root), hint=f"use --archive-key {self.archive.key} or a new directory"
            )
        if self.archive is not None:
            self.every = self.archive.layout.every
        if self.root.exists() and self.archive is None and (not self.root.is_dir() or any(self.root.iterdir())):
            raise OptionError("--archive names a directory that holds something else than an archive", location=str(self.root), hint="give a new or empty directory")
        self.buffer: list[pd.DataFrame] = []
        self.next: int | None = None
        self.last_ts: int | None = None
        self.stats: dict[str, Any] = {"dir": str(self.root), "updates": 0, "inserted": 0, "expired_on_arrival": 0, "deleted": 0}
        self.deferred = False  # inside write_batch: updates are committed with the batch
        #: the last micro-batch applied (``run``, ``batch``), kept in the manifest while set
        self.mark: dict | None = None
        state = self.archive.manifest.get("writer") if self.archive is not None else None
        if state:  # a batch writer's rows not yet due and its update clock
            self.buffer = [pq.read_table(self.root / name).to_pandas() for name in state["pending"]]
            self.next, self.last_ts = state["next"], state["last_ts"]
            self.mark = {"run": state["run"], "batch": state["batch"]}

    def write_batch(self, frame: pd.DataFrame, batch_id: int, run: str) -> bool:
        """Micro-batch ``batch_id`` of ``run`` into the archive exactly once; False for a batch already in it."""
        if self.mark is not None and self.mark["run"] == run and batch_id <= self.mark["batch"]:
            return False  # replayed after a crash: its rows are in the archive (or pending)
        self.deferred = True
        try:
            self(frame)
        finally:
            self.deferred = False
        if self.archive is not None:
            self.mark = {"run": run, "batch": int(batch_id)}
            self._commit()
        return True

    def _commit(self) -> None:
        """Swap the manifest: the updates so far and, for a batch writer (``mark``), its pending rows and clock."""
        assert self.archive is not None
        if self.mark is None:
            self.archive.commit(writer=None)
            return
        pending = []
        if self.buffer:
            rows = pd.concat(self.buffer, ignore_index=True)
            self.buffer = [rows]
            pending.append(self.archive.add_file(pa.Table.from_pandas(rows, preserve_index=False), "pending"))
        self.archive.commit(writer={**self.mark, "pending": pending, "next": self.next, "last_ts": self.last_ts})

    def __call__(self, frame: pd.DataFrame) -> None:
        if not len(frame):
            return
        frame = self._with_exp(frame)
        if self.archive is None:
            self._create(frame)
        assert self.archive is not None and self.every is not None
        self.buffer.append(frame)
        ts = frame["ts"].to_numpy()
        self.last_ts = int(ts.max()) if self.last_ts is None else max(self.last_ts, int(ts.max()))
        if self.next is None:
            self.next = max((int(ts.min()) // self.every + 1) * self.every, self.archive.now or 0)
        while self.last_ts >= self.next:
            rows = pd.concat(self.buffer, ignore_index=True)
            due = rows["ts"].to_numpy() <= self.next
            rest, now = rows[~due], self.next
            self.buffer = [rest] if len(rest) else []
            self.next = max(now + self.every, (int(rest["ts"].min()) // self.every + 1) * self.every) if len(rest) else now + self.every
            self._update(now, rows[due])

    def close(self) -> dict:
        """The last update (at the latest result time); the archive's counts."""
        if self.archive is None:
            self.archive = Archive.create(self.root, key=self.key, variant=self.variant, n=self.n, every=self.every or 1, memory_mb=self.memory_mb)
        if self.buffer or self.last_ts is not None:
            rows = pd.concat(self.buffer, ignore_index=True) if self.buffer else None
            now = max(self.last_ts or 0, self.archive.now or 0)
            self.buffer, self.next, self.last_ts = [], None, None
            self._update(now, rows)
        self.stats.update(now=self.archive.now, rows=self.archive.rows(), variant=self.archive.layout.variant, every=self.archive.layout.every)
        return self.stats

    def _with_exp(self, frame: pd.DataFrame) -> pd.DataFrame:
        """The rows with their ``exp``; an ExecutionError for rows an archive cannot hold."""
        columns = list(frame.columns)
        if self.key not in columns:
            raise ExecutionError(f"--archive-key {self.key!r} is not a result column", hint=f"the results have {columns}")
        if "ts" not in columns:
            raise ExecutionError("the archive needs the results' ts column", hint=f"the results have {columns}")
        if "sign" in columns and (frame["sign"].to_numpy() < 0).any():
            raise ExecutionError(
                "the archive keeps results with known lifetimes, but this query retracts results (sign -1)",
                hint="archive an ISTREAM query, or give the lifetime with --archive-lifetime COL",
            )
        if self.lifetime is not None:
            if self.lifetime not in columns:
                raise ExecutionError(f"--archive-lifetime {self.lifetime!r} is not a result column", hint=f"the results have {columns}")
            life = frame[self.lifetime].to_numpy()
            if not np.issubdtype(life.dtype, np.integer) or (life < 0).any():
                raise ExecutionError(f"--archive-lifetime {self.lifetime!r} must hold non-negative integers", hint="lifetimes in the time unit of ts")
            return frame.assign(exp=frame["ts"].to_numpy() + life)
        if "exp" not in columns:
            raise ExecutionError("the results have no exp column to expire archived rows by", hint="give each row's lifetime with --archive-lifetime COL")
        return frame

    def _create(self, frame: pd.DataFrame) -> None:
        life = int((frame["exp"].to_numpy() - frame["ts"].to_numpy()).max())
        layout = Layout.make(self.variant, n=self.n)
        every = self.every or max(1, math.ceil(life / (4 * max(layout.g, layout.e))))
        self.archive = Archive.create(self.root, key=self.key, variant=self.variant, n=self.n, every=every, max_lifetime=max(life, 1), memory_mb=self.memory_mb)
        self.every = every

    def _update(self, now: int, rows: pd.DataFrame | None) -> None:
        assert self.archive is not None
        got = self.archive.update(now, rows, commit=False)
        if not self.deferred:
            self._commit()
        self.stats["updates"] += 1
        for name in ("inserted", "expired_on_arrival", "deleted"):
            self.stats[name] += got[name]
