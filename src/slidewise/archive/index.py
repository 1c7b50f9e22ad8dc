"""An on-disk archive of rows with variable lifetimes, kept by a doubly partitioned index.

Golab, "Sliding Window Query Processing over Data Streams" (PhD thesis, Waterloo
2006), ch. 4: rows with a key and an expiration time ``exp`` are buffered and
added by periodic updates; an update at ``now`` also removes every row with
``exp < now``, so the archive always holds exactly the rows with
``exp >= now`` (its current time). Rows go to the cells of a
:class:`~slidewise.archive.layout.Layout`; an update rewrites only the cells
that receive rows or hold expired ones (``min_exp < now`` in the manifest).

* ``rebuild`` (REINDEX for the wave index): a touched cell is read, purged,
  merged with its new rows and re-clustered into one file sorted by key.
* ``norebuild`` (DEL): new rows become one more sorted run of the cell; runs
  whose rows all expired are dropped unread, runs with some expired rows
  are rewritten without them.

Memory: an update streams each touched cell through a merge of its sorted
files and its new rows (:mod:`slidewise.archive.merge`), and scans
(:meth:`Archive.scan`; :meth:`Archive.probe` joins a scan's batches into one table)
read batches of at most a row group, skipping row groups by their key statistics.
Batches and the row groups of new files are cut to ``memory_mb`` (the working
set's budget, beyond the rows an update is given), so neither grows with the
archive. An update filters a given table one cell at a time, and reads an
iterable of parts part by part, spilling them by cell as sorted runs
(:meth:`Archive._arrivals`); :mod:`slidewise.archive.memory` holds the process's
allocators to the budget.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeAlias

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from slidewise.archive import memory, merge, store
from slidewise.archive.layout import Layout
from slidewise.errors import ExecutionError, OptionError

#: rows an update is given: a table of any kind, or a record batch
Rows: TypeAlias = pa.Table | pa.RecordBatch | pd.DataFrame | dict
#: a cell's new rows: its sorted runs, in batches of the given number of rows
NewRuns: TypeAlias = Callable[[int], list[Iterator[pa.Table]]]
#: the default budget of an archive's working set (``memory_mb``)
MEMORY_MB = 64.0
MB = 1 << 20


class Archive:
    """An archive directory: ``create`` a new one or ``open`` an existing one, then ``update`` and probe it."""

    def __init__(self, root: Path, manifest: dict, *, memory_mb: float = MEMORY_MB):
        if not memory_mb > 0:
            raise OptionError(f"the archive's memory budget must be positive, not {memory_mb} MB", hint=f"e.g. --archive-memory {MEMORY_MB:g}")
        memory.bound()
        self.root = root
        self.manifest = manifest
        self.layout = Layout.from_json(manifest["layout"])
        self.memory = int(memory_mb * MB)
        self._base = manifest  # the manifest on disk (``update(commit=False)`` changes only ``manifest``)
        self._meta: dict[str, pq.FileMetaData] = {}  # of live files only

    @classmethod
    def create(
        cls,
        root: str | Path,
        *,
        key: str,
        exp: str = "exp",
        variant: str = "rebuild",
        n: int = 16,
        every: int = 1,
        max_lifetime: int | None = None,
        g: int | None = None,
        e: int | None = None,
        row_group_rows: int = 65536,
        memory_mb: float = MEMORY_MB,
    ) -> Archive:
        """A new, empty archive at ``root`` (an empty or missing directory)."""
        root = Path(root)
        if root.exists() and (not root.is_dir() or any(root.iterdir())):
            raise OptionError("the archive directory exists and is not empty", location=str(root), hint="open it with Archive.open, or give a new directory")
        if row_group_rows < 1:
            raise OptionError(f"row_group_rows must be positive, not {row_group_rows}", hint="e.g. 65536")
        layout = Layout.make(variant, n=n, every=every, max_lifetime=max_lifetime, g=g, e=e)
        manifest = {
            "format": store.FORMAT,
            "key": key,
            "exp": exp,
            "layout": layout.to_json(),
            "row_group_rows": int(row_group_rows),
            "now": None,
            "updates": 0,
            "schema": None,
            "cells": {},
            "previous": [],
            "next_file": 0,
        }
        archive = cls(root, manifest, memory_mb=memory_mb)  # the budget is checked before anything is written
        root.mkdir(parents=True, exist_ok=True)
        store.write_manifest(root, manifest)
        return archive

    @classmethod
    def open(cls, root: str | Path, *, memory_mb: float = MEMORY_MB) -> Archive:
        """The archive at ``root`` as its last completed update left it; ``memory_mb`` bounds updates' and probes' working set."""
        root = Path(root)
        return cls(root, store.read_manifest(root), memory_mb=memory_mb)

    # --- facts -----------------------------------------------------------------------------
    @property
    def key(self) -> str:
        return self.manifest["key"]

    @property
    def exp(self) -> str:
        return self.manifest["exp"]

    @property
    def now(self) -> int | None:
        """The instant of the last update: the archive holds exactly the rows with ``exp >= now``."""
        return self.manifest["now"]

    @property
    def updates(self) -> int:
        return self.manifest["updates"]

    @property
    def schema(self) -> pa.Schema | None:
        return store.decode_schema(self.manifest["schema"])

    def rows(self) -> int:
        return sum(f["rows"] for files in self.manifest["cells"].values() for f in files)

    def live_files(self) -> list[str]:
        """Absolute paths of the live Parquet files (for other readers, e.g. ``spark.read.parquet``)."""
        return [str(self.root / name) for name in store.live_names(self.manifest)]

    def cell_rows(self) -> list[int]:
        """Rows per cell, cells 0 .. n-1."""
        cells = self.manifest["cells"]
        return [sum(f["rows"] for f in cells.get(str(c), [])) for c in range(self.layout.n)]

    # --- update ----------------------------------------------------------------------------
    def update(self, now: int, rows: Rows | Iterable[Rows] | None = None, *, commit: bool = True) -> dict:
        """Add ``rows`` and remove every row with ``exp < now``, atomically; counts of what was done.

        ``rows``: a table (Arrow, pandas, dict of columns), or an iterable of them or of
        record batches (e.g. a ``pyarrow.RecordBatchReader``), read part by part (:meth:`_arrivals`).
        ``commit=False``: the new files are written but the manifest on disk is not
        swapped until :meth:`commit`, so several updates become durable at once
        (a process killed before reopens to the state before all of them).
        """
        now = int(now)
        if self.now is not None and now < self.now:
            raise ExecutionError(f"archive update at {now} is before its current time {self.now}", location=str(self.root), hint="updates go forward in time")
        m = self.manifest
        stats = {
            "now": now,
            "inserted": 0,
            "expired_on_arrival": 0,
            "deleted": 0,
            "cells_touched": 0,
            "files_read": 0,
            "rows_read": 0,
            "files_written": 0,
            "rows_written": 0,
        }
        store.collect_garbage(self.root, store.referenced(self._base) | store.referenced(m))
        arriving, width = self._arrivals(rows, now, stats)
        cells = {c: list(files) for c, files in m["cells"].items()}
        touched = sorted(set(arriving) | {int(c) for c, files in cells.items() if any(f["min_exp"] < now for f in files)})
        rebuild = self._rebuild if self.layout.strategy == "rebuild" else self._runs
        for cell in touched:
            files = cells.pop(str(cell), [])
            kept = rebuild(cell, files, arriving.get(cell), width, now, stats)
            if kept:
                cells[str(cell)] = kept
        stats["cells_touched"] = len(touched)
        new = {**m, "now": now, "updates": m["updates"] + 1, "cells": cells, "previous": store.live_names(self._base)}
        self.manifest = new
        if commit:
            self.commit()
        memory.release()
        return stats

    def commit(self, **fields: Any) -> None:
        """Swap the manifest on disk for the one of the updates so far, with ``fields`` set (e.g. a writer's state)."""
        new = {**self.manifest, **fields}
        store.write_manifest(self.root, new)
        self.manifest = self._base = new
        store.collect_garbage(self.root, store.referenced(new))

    def add_file(self, table: pa.Table, prefix: str) -> str:
        """Write ``table`` as a new file of the archive's directory that no cell lists (e.g. rows not yet due); its name.

        It is kept while a committed manifest names it in ``writer.pending``.
        """
        m = self.manifest
        name = f"{prefix}-{m['next_file']:08d}.parquet"
        m["next_file"] += 1
        store.write_parquet(self.root / name, table, m["row_group_rows"])
        return name

    def _arrivals(self, rows: Rows | Iterable[Rows] | None, now: int, stats: dict) -> tuple[dict[int, NewRuns], float]:
        """The given rows by cell: per cell that receives rows, its new rows as sorted runs in batches of a given size; their row bytes.

        A table is filtered one cell at a time, when its cell is updated, so it is never copied whole.
        An iterable is read part by part: a part's rows wait by cell, and once they hold a quarter of the
        budget each cell's are written as a sorted run file (removed with the update's garbage), so an
        update holds one part and a quarter of the budget of the rows it is given, however many.
        """
        if rows is None or isinstance(rows, (pa.Table, pa.RecordBatch, pd.DataFrame, dict)):
            table = self._incoming(rows)
            if table is None or not self._record_schema(table):
                return {}, 0.0
            where, whole = self._route(table, now, stats), table

            def runs(cell: int, size: int) -> list[Iterator[pa.Table]]:
                return [merge.slices(self._sorted(whole.filter(pa.array(where == cell))), size)]

            return {int(cell): functools.partial(runs, int(cell)) for cell in np.unique(where[where >= 0])}, table.nbytes / table.num_rows
        held: dict[int, list[pa.Table]] = {}
        spills: dict[int, list[Path]] = {}
        held_bytes, width = 0, 0.0
        for part in rows:
            table = self._incoming(part)
            if table is None or not self._record_schema(table):
                continue
            where = self._route(table, now, stats)
            width = max(width, table.nbytes / table.num_rows)
            for cell in np.unique(where[where >= 0]):
                piece = table.filter(pa.array(where == cell))
                held.setdefault(int(cell), []).append(piece)
                held_bytes += piece.nbytes
            if held_bytes > self.memory // 4:
                for cell, pieces in held.items():
                    path = self.root / f"spill-{self.manifest['next_file']:08d}.parquet"
                    self.manifest["next_file"] += 1
                    size = self._rows_per_batch(width)
                    merge.write(path, self.schema, merge.slices(self._sorted(pa.concat_tables(pieces)), size), size)
                    spills.setdefault(cell, []).append(path)
                held, held_bytes = {}, 0

        def parts(cell: int, size: int) -> list[Iterator[pa.Table]]:
            runs = [merge.read(path, size) for path in spills.get(cell, [])]
            return runs + ([merge.slices(self._sorted(pa.concat_tables(held[cell])), size)] if cell in held else [])

        return {cell: functools.partial(parts, cell) for cell in set(held) | set(spills)}, width

    def _record_schema(self, table: pa.Table) -> int:
        """The first rows given fix the files' schema (before any file is written); ``table``'s rows."""
        if self.manifest["schema"] is None:
            self.manifest["schema"] = store.encode_schema(table.schema)
        return table.num_rows

    def _route(self, table: pa.Table, now: int, stats: dict) -> np.ndarray:
        """The cell of each of ``table``'s rows (-1: expired on arrival), counted in ``stats``."""
        exp = table.column(self.exp).to_numpy(zero_copy_only=False)
        alive = exp >= now
        stats["expired_on_arrival"] += int((~alive).sum())
        stats["inserted"] += int(alive.sum())
        return np.where(alive, self.layout.cells(now, exp), -1)

    def _incoming(self, rows: Rows | None) -> pa.Table | None:
        """``rows`` as an Arrow table of the archive's schema; an ExecutionError naming what does not fit."""
        if rows is None:
            return None
        if isinstance(rows, pa.RecordBatch):
            rows = pa.Table.from_batches([rows])
        table = rows if isinstance(rows, pa.Table) else pa.Table.from_pandas(rows, preserve_index=False) if isinstance(rows, pd.DataFrame) else pa.table(rows)
        for col, role in ((self.key, "key"), (self.exp, "expiration")):
            if col not in table.column_names:
                raise ExecutionError(f"the rows lack the archive's {role} column {col!r}", location=str(self.root), hint=f"they have {table.column_names}")
        if not pa.types.is_integer(table.schema.field(self.exp).type):
            raise ExecutionError(
                f"the archive's expiration column {self.exp!r} must be integer, not {table.schema.field(self.exp).type}",
                location=str(self.root),
                hint="exp is an instant in the rows' time unit",
            )
        if table.column(self.exp).null_count:
            raise ExecutionError(
                f"{table.column(self.exp).null_count} rows have no expiration time", location=str(self.root), hint=f"every row needs a value in {self.exp!r}"
            )
        schema = self.schema
        if schema is None:
            return table.cast(pa.schema([f.with_type(pa.int64()) if f.name == self.exp else f for f in table.schema]))
        if table.column_names != schema.names:
            raise ExecutionError("the rows' columns differ from the archive's", location=str(self.root), hint=f"archive: {schema.names}; rows: {table.column_names}")
        try:
            return table.cast(schema)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise ExecutionError(f"the rows do not fit the archive's column types: {exc}", location=str(self.root), hint=f"archive schema: {schema}") from None

    def _sorted(self, table: pa.Table) -> pa.Table:
        return table.sort_by([(self.key, "ascending"), (self.exp, "ascending")])

    def _rows_per_batch(self, row_bytes: float) -> int:
        """Rows per batch and per row group of a new file, for rows of ``row_bytes`` within the budget."""
        return merge.batch_rows(self.memory, row_bytes, self.manifest["row_group_rows"])

    def _row_bytes(self, entry: dict) -> float:
        """The Arrow bytes per row of a live file, from its row group metadata."""
        meta = pq.read_metadata(self.root / entry["file"])
        return sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups)) / max(meta.num_rows, 1)

    def _write(self, tables: Iterator[pa.Table], cell: int, rows: int, stats: dict) -> dict | None:
        """``tables`` (sorted) as one new file of ``cell``, row group by row group; its manifest entry (None if empty)."""
        m = self.manifest
        name = f"u{m['updates'] + 1:07d}-c{cell:04d}-{m['next_file']:08d}.parquet"
        m["next_file"] += 1
        lo, hi = [], []

        def seen(tables: Iterator[pa.Table]) -> Iterator[pa.Table]:
            for table in tables:
                exp = pc.min_max(table.column(self.exp))
                lo.append(exp["min"].as_py())
                hi.append(exp["max"].as_py())
                yield table

        schema = store.decode_schema(m["schema"])
        assert schema is not None
        written = merge.write(self.root / name, schema, seen(tables), rows)
        if not written:
            return None
        stats["files_written"] += 1
        stats["rows_written"] += written
        return {"file": name, "rows": written, "min_exp": int(min(lo)), "max_exp": int(max(hi))}

    def _read_alive(self, entry: dict, now: int, rows: int, stats: dict) -> Iterator[pa.Table]:
        """A live file's rows with ``exp >= now``, in batches of at most ``rows``."""
        stats["files_read"] += 1
        stats["rows_read"] += entry["rows"]
        expiring = entry["min_exp"] < now

        def keep(table: pa.Table) -> pa.Table:
            if not expiring:
                return table
            alive = table.filter(pc.greater_equal(table.column(self.exp), now))
            stats["deleted"] += table.num_rows - alive.num_rows
            return alive

        return merge.read(self.root / entry["file"], rows, keep)

    def _rebuild(self, cell: int, files: list[dict], new: NewRuns | None, width: float, now: int, stats: dict) -> list[dict]:
        """Rebuild: the cell's live rows and its new rows merged into one file, batch by batch."""
        widths, live = [], []
        for entry in files:
            if entry["max_exp"] < now:
                stats["deleted"] += entry["rows"]
            else:
                live.append(entry)
                widths.append(self._row_bytes(entry))
        if new is not None:
            widths.append(width)
        if not widths:
            return []
        rows = self._rows_per_batch(max(widths))
        runs = [self._read_alive(entry, now, rows, stats) for entry in live]
        if new is not None:
            runs.extend(new(rows))
        written = self._write(merge.merge(runs, self.key, self.exp), cell, rows, stats)
        return [] if written is None else [written]

    def _runs(self, cell: int, files: list[dict], new: NewRuns | None, width: float, now: int, stats: dict) -> list[dict]:
        """NoRebuild: drop runs that expired whole, rewrite runs that expired in part, add the new rows as a run."""
        kept = []
        for entry in files:
            if entry["max_exp"] < now:
                stats["deleted"] += entry["rows"]
            elif entry["min_exp"] < now:
                rows = self._rows_per_batch(self._row_bytes(entry))
                rewritten = self._write(self._read_alive(entry, now, rows, stats), cell, rows, stats)
                if rewritten is not None:
                    kept.append(rewritten)
            else:
                kept.append(entry)
        if new is not None:
            rows = self._rows_per_batch(width)
            runs = new(rows)
            written = self._write(runs[0] if len(runs) == 1 else merge.merge(runs, self.key, self.exp), cell, rows, stats)
            if written is not None:
                kept.append(written)
        return kept

    # --- probes ----------------------------------------------------------------------------
    def probe(self, key: object) -> pa.Table:
        """The rows with ``key`` (exp >= now), as one table."""
        value = self._key_value(key)
        answer = self._concat(self._select(value, value))
        memory.release()
        return answer

    def scan(self, lo: object = None, hi: object = None) -> Iterator[pa.Table]:
        """The rows with ``lo <= key <= hi`` (either bound may be None), in batches cut to the budget (at most a row group)."""
        return self._released(self._select(None if lo is None else self._key_value(lo), None if hi is None else self._key_value(hi)))

    @staticmethod
    def _released(tables: Iterator[pa.Table]) -> Iterator[pa.Table]:
        yield from tables
        memory.release()

    def read(self, lo: object = None, hi: object = None) -> pa.Table:
        """:meth:`scan` as one table."""
        return self._concat(self.scan(lo, hi))

    def _concat(self, parts: Iterator[pa.Table]) -> pa.Table:
        tables = list(parts)
        if tables:
            return pa.concat_tables(tables)
        schema = self.schema
        return schema.empty_table() if schema is not None else pa.table({})

    def _key_value(self, key: Any) -> Any:
        """``key`` in the type of the key column (a probe from the command line gives text)."""
        schema = self.schema
        if schema is None:
            return key
        kind = schema.field(self.key).type
        try:
            if pa.types.is_integer(kind):
                return int(key)
            if pa.types.is_floating(kind):
                return float(key)
            if pa.types.is_string(kind) or pa.types.is_large_string(kind):
                return str(key)
        except (TypeError, ValueError):
            raise OptionError(
                f"key {key!r} is no value of the archive's key column {self.key!r} ({kind})", location=str(self.root), hint="give a key of that type"
            ) from None
        return key

    def _select(self, lo: object, hi: object) -> Iterator[pa.Table]:
        now = self.now
        names = store.live_names(self.manifest)
        self._meta = {name: meta for name, meta in self._meta.items() if name in set(names)}
        for name in names:
            path = self.root / name
            meta = self._meta.get(name)
            pf = pq.ParquetFile(path, metadata=meta, pre_buffer=False, buffer_size=1 << 16)
            if meta is None:
                self._meta[name] = pf.metadata
            col = pf.schema_arrow.get_field_index(self.key)
            for i in range(pf.metadata.num_row_groups):
                st = pf.metadata.row_group(i).column(col).statistics
                if st is not None and st.has_min_max and ((lo is not None and st.max < lo) or (hi is not None and st.min > hi)):
                    continue
                group = pf.metadata.row_group(i)
                rows = self._rows_per_batch(group.total_byte_size / max(group.num_rows, 1))
                for batch in pf.iter_batches(batch_size=rows, row_groups=[i], use_threads=False):
                    table = pa.Table.from_batches([batch])
                    keys = table.column(self.key)
                    mask = pc.greater_equal(table.column(self.exp), now) if now is not None else None
                    for bound, op in ((lo, pc.greater_equal), (hi, pc.less_equal)):
                        if bound is not None:
                            cond = op(keys, bound)
                            mask = cond if mask is None else pc.and_(mask, cond)
                    if mask is not None:
                        table = table.filter(mask)
                    if table.num_rows:
                        yield table
