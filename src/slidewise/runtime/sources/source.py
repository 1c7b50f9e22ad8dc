""":func:`open_source` and :class:`Source`: which reader reads what, and the chunk loop."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from slidewise.errors import OptionError, SourceError
from slidewise.options import DEFAULTS, TS_UNITS, RunOptions
from slidewise.runtime.rejects import Rejects
from slidewise.runtime.sources.base import KIND_DTYPE, RawChunk, _one_line, _unreadable
from slidewise.runtime.sources.convert import _convert
from slidewise.runtime.sources.memory import _frame_table, _MemoryReader, _RecordsReader
from slidewise.runtime.sources.parquet import _ParquetReader
from slidewise.runtime.sources.schema import _declare, _resolve_unit, _unify
from slidewise.runtime.sources.text import _CsvReader, _JsonReader

#: File extension -> format. Text formats may also be compressed (``.csv.gz`` ...).
FORMATS = {".csv": "csv", ".jsonl": "json", ".ndjson": "json", ".json": "json", ".parquet": "parquet"}
#: Compressed text files end in one of these (after the format's extension).
COMPRESSIONS = (".gz", ".bz2", ".zst", ".lz4")


def open_stream(name: str, spec, opts: RunOptions) -> Source:
    """:func:`open_source` with a run's timestamp settings (``name``'s own if it has them), chunk size and ``name``'s declared schema."""
    if opts.idle_timeout(name) is not None:
        raise OptionError(
            f"an idle timeout for stream {name!r} has no effect on the local engine: it reads every input to its end, "
            "the stream holding output back next, so no stream is ever idle",
            hint="drop the idle-timeout setting (it applies to live inputs on --engine spark and to followed Kafka topics)",
        )
    own = opts.for_stream(name)
    return open_source(name, spec, ts_column=own.ts_column, ts_unit=own.ts_unit, chunk_rows=opts.chunk_rows, schema=(opts.schemas or {}).get(name))


def open_source(
    name: str,
    spec,
    *,
    ts_column: str = DEFAULTS.ts_column,
    ts_unit: str = DEFAULTS.ts_unit,
    chunk_rows: int = DEFAULTS.chunk_rows,
    rejects: Rejects | None = None,
    schema: dict[str, str] | None = None,
) -> Source:
    """Open ``spec`` as stream ``name``: a path (file or directory), a DataFrame,
    a dict of columns or an iterable of dicts. Reads only a sample now.
    ``schema``: declared column -> kind (``int``, ``float``, ``bool``, ``str``); others inferred."""
    if ts_unit not in TS_UNITS:
        raise OptionError(f"unknown timestamp unit {ts_unit!r}", hint=f"use one of {', '.join(TS_UNITS)}")
    if not isinstance(chunk_rows, (int, np.integer)) or chunk_rows < 1:
        raise OptionError(f"chunk_rows must be a positive integer, got {chunk_rows!r}")
    readers = _readers(spec)
    infos = []
    for r in readers:
        try:
            infos.append(r.inspect(ts_column))
        except (pa.ArrowException, UnicodeDecodeError) as e:
            raise _unreadable(r.file, e) from None
    units = [_resolve_unit(r, info, ts_column, ts_unit) for r, info in zip(readers, infos)]
    kinds = _unify(readers, infos, units, ts_column)
    if schema:
        kinds = _declare(kinds, schema, name, ts_column, readers[0].file if readers else name)
        for r in readers:
            r.declared = set(schema)
    src = Source(name, readers, kinds, ts_column, units[0] if units else "raw", int(chunk_rows), rejects)
    src.ts_samples = [info.ts_sample for info in infos]
    return src


class Source:
    """One input stream. ``schema``: column -> numpy dtype (``ts`` excluded), in file order."""

    def __init__(self, name: str, readers: list, kinds: dict[str, str], ts_column: str, ts_unit: str, chunk_rows: int, rejects: Rejects | None):
        self.name = name
        self._readers = readers
        self.kinds = kinds
        self.schema: dict[str, np.dtype] = {k: KIND_DTYPE[v] for k, v in kinds.items()}
        self.ts_column = ts_column
        self.ts_unit = ts_unit
        #: unit of the converted timestamps, for messages: "ms", or "" for raw numbers
        self.ts_label = "" if ts_unit == "raw" else "ms"
        self.chunk_rows = chunk_rows
        self.rejects = rejects if rejects is not None else Rejects()
        self.rows_read = 0
        self.rows_rejected = 0
        #: the sampled timestamps per reader, as inspected (set by :func:`open_source`)
        self.ts_samples: list = []

    @property
    def files(self) -> list[str]:
        return [r.file for r in self._readers]

    def __repr__(self) -> str:
        return f"Source({self.name!r}, files={self.files}, ts_unit={self.ts_unit!r}, schema={list(self.schema)})"

    def chunks(self, rejects: Rejects | None = None) -> Iterator[RawChunk]:
        """Admitted rows in input order, at most ``chunk_rows`` per chunk; rejected
        rows go to ``rejects`` (default: ``self.rejects``)."""
        rej = rejects if rejects is not None else self.rejects
        for reader in self._readers:
            blocks = reader.blocks(self.kinds, self.ts_column, rej, self.name, self.chunk_rows)
            while True:
                try:
                    block = next(blocks, None)
                    if block is None:
                        break
                    before = rej.total
                    chunk = _convert(block, reader.file, self.kinds, self.ts_column, self.ts_unit, rej, self.name)
                except (pa.ArrowException, UnicodeDecodeError) as e:
                    raise _unreadable(reader.file, e) from None
                self.rows_rejected += rej.total - before + block.malformed
                for start in range(0, len(chunk), self.chunk_rows):
                    part = chunk.take(slice(start, start + self.chunk_rows)) if len(chunk) > self.chunk_rows else chunk
                    self.rows_read += len(part)
                    yield part


# --------------------------------------------------------------------------- locating inputs


def _readers(spec) -> list:
    if isinstance(spec, pd.DataFrame):
        return [_MemoryReader("<DataFrame>", _frame_table(spec))]
    if isinstance(spec, (pa.Table, pa.RecordBatch)):
        return [_MemoryReader("<Table>", pa.table(spec))]
    if isinstance(spec, dict):
        try:
            frame = pd.DataFrame(spec) if spec else pd.DataFrame()
        except (ValueError, TypeError) as e:
            raise SourceError(
                f"cannot read a dict of columns: {_one_line(e)}", location="<dict>", hint="give equal-length lists or arrays, e.g. {'ts': [1, 2], 'a': [5, 6]}"
            ) from None
        return [_MemoryReader("<dict>", _frame_table(frame))]
    if isinstance(spec, (str, Path)):
        return _path_readers(Path(spec))
    if isinstance(spec, Iterable):
        return [_RecordsReader("<records>", iter(spec))]
    raise SourceError(
        f"cannot read a source from {type(spec).__name__}", hint="give a file or directory path, a pandas DataFrame, a dict of columns or an iterable of dicts"
    )


def format_of(path: Path) -> str | None:
    """The format (``csv``, ``json``, ``parquet``) of a file by its name (None: not a data file)."""
    name = path.name.lower()
    for comp in COMPRESSIONS:
        if name.endswith(comp):
            name = name[: -len(comp)]
            break
    for ext, fmt in FORMATS.items():
        if name.endswith(ext) and not (fmt == "parquet" and name != path.name.lower()):
            return fmt
    return None


_EXT_HINT = "expected .csv, .jsonl, .ndjson, .json (JSON lines) or .parquet files"


def _path_readers(path: Path) -> list:
    if not path.exists():
        raise SourceError("no such file or directory", location=str(path), hint="check the path given to --source NAME=PATH")
    if path.is_dir():
        try:
            entries = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith((".", "_")))
        except OSError as e:
            raise SourceError(f"cannot list directory: {e.strerror or e}", location=str(path), hint="check its permissions") from None
        files = [p for p in entries if format_of(p)]
        if not files:
            raise SourceError("directory holds no data files", location=str(path), hint=_EXT_HINT)
        return [_file_reader(p) for p in files]
    return [_file_reader(path)]


def _file_reader(path: Path):
    fmt = format_of(path)
    if fmt is None:
        raise SourceError(f"unknown file type {path.suffix or '(no extension)'!r}", location=str(path), hint=_EXT_HINT)
    return {"csv": _CsvReader, "json": _JsonReader, "parquet": _ParquetReader}[fmt](path)
