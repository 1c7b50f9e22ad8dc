"""Input sources: CSV, JSON lines and Parquet files or directories, and in-memory data.

:func:`open_source` inspects the input and returns a :class:`Source`; its
``chunks()`` yields :class:`RawChunk` s (int64 timestamps, numpy columns,
1-based file line numbers) in input order. A directory is read in sorted name
order (hidden and ``_``-prefixed files skipped); its files must share a schema.
Text files may be compressed (``.csv.gz``, ``.jsonl.zst``, ...).

Schema: integers -> int64, floats -> float64, booleans -> bool, anything else
-> str (object arrays). Text files are typed from their first MiB; a column of
numbers with at most max(1, 1%) stray values there is numeric (the stray rows
become rejects); an integer column with a missing value anywhere (a scan of up
to 512 MiB) is read as float64 with NaN.

Timestamps (DESIGN §1 "Time and order"), ``ts_unit``: ``auto`` – integers as
they are, floats as epoch seconds and ISO-8601 text both to epoch ms; ``raw``
– integers as they are; ``s`` / ``ms`` / ``us`` / ``ns`` – epoch numbers in
that unit, to ms (rounded down); ``iso`` – ISO-8601 text to ms.

Bad rows (wrong field count, bad JSON, unparseable or missing timestamp,
unparseable number, invalid UTF-8) become rejects with file, line and reason
and never stop a run; a missing or unreadable input, a missing timestamp column
or files with different schemas raise :class:`~slidewise.errors.SourceError`.

Reading is columnar: pyarrow parses blocks of bytes cut at record boundaries
(found with numpy, quote-aware), which keeps line numbers exact; Python only
touches rejected rows.

>>> src = open_source("S", {"ts": [2.5, 1.0], "k": [7, 8]})
>>> src.schema, [(c.ts.tolist(), c.lines.tolist()) for c in src.chunks()]
({'k': dtype('int64')}, [([2500, 1000], [1, 2])])
"""

from __future__ import annotations

import csv
import io
import itertools
import json
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.json as pajson
import pyarrow.parquet as pq

from slidewise.errors import OptionError, SourceError
from slidewise.runtime.rejects import Rejects, rows_as_text

TS_UNITS = ("auto", "raw", "s", "ms", "us", "ns", "iso")
#: File extension -> format. Text formats may also be compressed (``.csv.gz`` ...).
FORMATS = {".csv": "csv", ".jsonl": "json", ".ndjson": "json", ".json": "json", ".parquet": "parquet"}
_COMPRESSIONS = (".gz", ".bz2", ".zst", ".lz4")
_KIND_DTYPE = {"int": np.dtype(np.int64), "float": np.dtype(np.float64), "bool": np.dtype(np.bool_),
               "str": np.dtype(object)}
_KIND_ARROW = {"int": pa.int64(), "float": pa.float64(), "bool": pa.bool_(), "str": pa.string()}
_NULLS = pa.array(pacsv.ConvertOptions().null_values, pa.string())
_TRUE = pa.array([v.lower() for v in pacsv.ConvertOptions().true_values] + ["t", "yes"], pa.string())
_FALSE = pa.array([v.lower() for v in pacsv.ConvertOptions().false_values] + ["f", "no"], pa.string())
_INT_RE = r"^[+-]?\d{1,18}$"
_FLOAT_RE = r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$|^[+-]?(?i:inf|infinity|nan)$"
_TS_LIMIT = 2 ** 62  # keeps ts + window arithmetic inside int64
_SCALE = {"raw": 1, "ms": 1, "s": 1000, "us": 1 / 1000, "ns": 1 / 1_000_000}
_SAMPLE_BYTES = 1 << 20   # text files: schema and timestamp unit are inferred from this much
_MIN_BLOCK, _MAX_BLOCK = 1 << 20, 64 << 20  # bytes parsed per pyarrow call
_PRESCAN_BYTES = 512 << 20  # text files: integer columns are checked for missing values this far


@dataclass
class RawChunk:
    """Admitted rows of one file in input order: ``ts`` int64, columns, 1-based file lines."""

    ts: np.ndarray
    cols: dict[str, np.ndarray]
    lines: np.ndarray
    file: str

    def __len__(self) -> int:
        return len(self.ts)

    def take(self, idx) -> RawChunk:
        return RawChunk(self.ts[idx], {k: v[idx] for k, v in self.cols.items()}, self.lines[idx], self.file)


def open_source(name: str, spec, *, ts_column: str = "ts", ts_unit: str = "auto",
                chunk_rows: int = 65536, rejects: Rejects | None = None) -> Source:
    """Open ``spec`` as stream ``name``: a path (file or directory), a DataFrame,
    a dict of columns or an iterable of dicts. Reads only a sample now."""
    if ts_unit not in TS_UNITS:
        raise OptionError(f"unknown timestamp unit {ts_unit!r}", hint=f"use one of {', '.join(TS_UNITS)}")
    if not isinstance(chunk_rows, (int, np.integer)) or chunk_rows < 1:
        raise OptionError(f"chunk_rows must be a positive integer, got {chunk_rows!r}")
    readers = _readers(spec)
    infos = []
    for r in readers:
        try:
            infos.append(r.inspect(ts_column))
        except (pa.ArrowException, UnicodeDecodeError) as e:  # never a pyarrow traceback
            raise SourceError(f"cannot read: {_one_line(e)}", location=r.file,
                              hint="check the file's format and encoding (UTF-8)") from None
    units = [_resolve_unit(r, info, ts_column, ts_unit) for r, info in zip(readers, infos)]
    kinds = _unify(readers, infos, units, ts_column)
    return Source(name, readers, kinds, ts_column, units[0] if units else "raw", int(chunk_rows), rejects)


class Source:
    """One input stream. ``schema``: column -> numpy dtype (``ts`` excluded), in file order."""

    def __init__(self, name: str, readers: list, kinds: dict[str, str], ts_column: str, ts_unit: str,
                 chunk_rows: int, rejects: Rejects | None):
        self.name = name
        self._readers = readers
        self.kinds = kinds
        self.schema: dict[str, np.dtype] = {k: _KIND_DTYPE[v] for k, v in kinds.items()}
        self.ts_column = ts_column
        self.ts_unit = ts_unit
        #: unit of the converted timestamps, for messages: "ms", or "" for raw numbers
        self.ts_label = "" if ts_unit == "raw" else "ms"
        self.chunk_rows = chunk_rows
        self.rejects = rejects if rejects is not None else Rejects()
        self.rows_read = 0
        self.rows_rejected = 0

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
                except (pa.ArrowException, UnicodeDecodeError) as e:  # never a pyarrow traceback
                    raise SourceError(f"cannot read: {_one_line(e)}", location=reader.file,
                                      hint="check the file's format and encoding (UTF-8)") from None
                self.rows_rejected += rej.total - before + block.malformed
                for start in range(0, len(chunk), self.chunk_rows):
                    part = chunk.take(slice(start, start + self.chunk_rows)) if len(chunk) > self.chunk_rows \
                        else chunk
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
            raise SourceError(f"cannot read a dict of columns: {_one_line(e)}", location="<dict>",
                              hint="give equal-length lists or arrays, e.g. {'ts': [1, 2], 'a': [5, 6]}") from None
        return [_MemoryReader("<dict>", _frame_table(frame))]
    if isinstance(spec, (str, Path)):
        return _path_readers(Path(spec))
    if isinstance(spec, Iterable):
        return [_RecordsReader("<records>", iter(spec))]
    raise SourceError(f"cannot read a source from {type(spec).__name__}",
                      hint="give a file or directory path, a pandas DataFrame, a dict of columns "
                           "or an iterable of dicts")


def _format_of(path: Path) -> str | None:
    name = path.name.lower()
    for comp in _COMPRESSIONS:
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
        raise SourceError("no such file or directory", location=str(path),
                          hint="check the path given to --source NAME=PATH")
    if path.is_dir():
        try:
            entries = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith((".", "_")))
        except OSError as e:
            raise SourceError(f"cannot list directory: {e.strerror or e}", location=str(path),
                              hint="check its permissions") from None
        files = [p for p in entries if _format_of(p)]
        if not files:
            raise SourceError("directory holds no data files", location=str(path), hint=_EXT_HINT)
        return [_file_reader(p) for p in files]
    return [_file_reader(path)]


def _file_reader(path: Path):
    fmt = _format_of(path)
    if fmt is None:
        raise SourceError(f"unknown file type {path.suffix or '(no extension)'!r}", location=str(path),
                          hint=_EXT_HINT)
    return {"csv": _CsvReader, "json": _JsonReader, "parquet": _ParquetReader}[fmt](path)


def _one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


def _open_stream(path: Path):
    try:
        return pa.input_stream(str(path), compression="detect")
    except (OSError, pa.ArrowException) as e:
        raise SourceError(f"cannot read file: {_one_line(e)}", location=str(path),
                          hint="check that the file exists and is readable") from None


# --------------------------------------------------------------------------- schema inference

def _arrow_kind(t: pa.DataType, has_nulls: bool = False) -> str:
    if pa.types.is_integer(t):
        return "float" if has_nulls else "int"
    if pa.types.is_floating(t) or pa.types.is_decimal(t):
        return "float"
    if pa.types.is_boolean(t):
        return "bool"
    return "str"


def _widen(info: _Info, with_missing: set[str]) -> None:
    """Integer columns with missing values become float (NaN), boolean ones text."""
    for c in with_missing:
        info.kinds[c] = "float" if info.kinds[c] == "int" else "str"


@dataclass
class _Info:
    names: list[str]                 # all columns in order, ts included
    kinds: dict[str, str]            # inferred kind per column (ts excluded)
    ts_type: pa.DataType | None      # arrow type of the ts column as read
    ts_sample: pa.Array | None       # sample of ts values (for unit detection and checks)


def _info_from_table(table: pa.Table, ts_column: str, dirty_numbers: bool = False) -> _Info:
    """Kinds of a sample table; ``dirty_numbers``: text columns that are numbers but for
    a few values (see :func:`_mostly_numbers`) are numeric, the few values become rejects."""
    names = list(table.column_names)
    kinds = {}
    for f in table.schema:
        if f.name == ts_column:
            continue
        kinds[f.name] = _arrow_kind(f.type, table.column(f.name).null_count > 0)
        if dirty_numbers and pa.types.is_string(f.type):
            kinds[f.name] = _mostly_numbers(table.column(f.name).combine_chunks()) or "str"
    ts = table.column(ts_column).combine_chunks() if ts_column in names else None
    return _Info(names, kinds, ts.type if ts is not None else None, ts)


def _mostly_numbers(text: pa.Array) -> str | None:
    """"int" / "float" when all but at most max(1, 1%) of the present values are numbers."""
    s = pc.utf8_trim_whitespace(text)
    present = ~_missing_mask(s)
    is_num = _match(s, _FLOAT_RE) & present
    n_num, n_bad = int(is_num.sum()), int(present.sum() - is_num.sum())
    if n_num <= n_bad or n_bad > max(1, n_num // 100):
        return None
    whole = int((_match(s, _INT_RE) & present).sum()) == n_num
    return "int" if whole and not (~present).any() else "float"


def _missing_ts(file: str, names: list[str], ts_column: str) -> SourceError:
    cols = ", ".join(names) if names else "(none)"
    return SourceError(f"no timestamp column {ts_column!r}", location=file,
                       hint=f"the columns are: {cols}; choose the timestamp column with --ts-column")


def _resolve_unit(reader, info: _Info, ts_column: str, ts_unit: str) -> str:
    if ts_column not in info.names:
        raise _missing_ts(reader.file, info.names, ts_column)
    t = info.ts_type
    temporal = pa.types.is_timestamp(t) or pa.types.is_date(t)
    numeric = pa.types.is_integer(t) or pa.types.is_floating(t)
    if not (temporal or numeric or pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_null(t)):
        raise SourceError(f"timestamp column {ts_column!r} has type {t}", location=reader.file,
                          hint="timestamps must be numbers or ISO-8601 text")
    if ts_unit == "iso" and numeric:
        raise SourceError(f"timestamp column {ts_column!r} holds numbers, not ISO-8601 text",
                          location=reader.file, hint="use --ts-unit auto, raw, s, ms, us or ns")
    if temporal:
        unit = "iso"
    elif ts_unit != "auto":
        unit = ts_unit
    elif pa.types.is_integer(t) or pa.types.is_null(t):
        unit = "raw"
    elif pa.types.is_floating(t):
        unit = "s"
    else:
        unit = _detect_text_unit(info.ts_sample)
    sample = info.ts_sample
    if sample is not None and len(sample) and unit in ("raw", "s", "ms", "us", "ns", "iso"):
        ts, bad, _ = _ts_values(sample, unit)
        present = ~_missing_mask(sample)
        if present.any() and not (present & ~bad).any():
            first = sample.filter(pa.array(present)).slice(0, 1).to_pylist()[0]
            raise SourceError(f"no timestamp in the first {int(present.sum())} rows parses as "
                              f"{'ISO-8601' if unit == 'iso' else unit + ' (numbers)'}, e.g. {str(first)[:40]!r}",
                              location=reader.file,
                              hint=f"check --ts-column (now {ts_column!r}) and --ts-unit (now {unit!r})")
    return unit


def _detect_text_unit(sample: pa.Array | None) -> str:
    """``auto`` for a text timestamp column: numbers if most values are numbers, else ISO-8601."""
    if sample is None or len(sample) == 0:
        return "raw"
    s = pc.utf8_trim_whitespace(sample.cast(pa.string()))
    present = ~_missing_mask(s)
    n = int(present.sum())
    if n == 0:
        return "raw"
    is_int = _match(s, _INT_RE) & present
    is_num = _match(s, _FLOAT_RE) & present
    if is_num.sum() * 2 >= n:
        return "raw" if is_int.sum() * 2 >= is_num.sum() else "s"
    return "iso"


def _unify(readers, infos: list[_Info], units: list[str], ts_column: str) -> dict[str, str]:
    """One schema for all files of a source, or a SourceError naming two files that differ."""
    first, kinds = readers[0], dict(infos[0].kinds)
    for reader, info, unit in zip(readers[1:], infos[1:], units[1:]):
        diff = sorted(set(kinds) ^ set(info.kinds))
        clash = [f"{c} ({kinds[c]} vs {info.kinds[c]})" for c in kinds
                 if c in info.kinds and kinds[c] != info.kinds[c] and {kinds[c], info.kinds[c]} != {"int", "float"}]
        if unit != units[0]:
            clash.insert(0, f"{ts_column} (timestamps as {units[0]} vs {unit})")
        if diff or clash:
            what = ", ".join(diff + clash)
            raise SourceError(f"files do not share a schema: {first.file} and {reader.file} differ in {what}",
                              location=str(Path(first.file).parent),
                              hint="all files of one source need the same columns and column types")
        for c in kinds:
            if kinds[c] != info.kinds[c]:
                kinds[c] = "float"
    return kinds


# --------------------------------------------------------------------------- value conversion

@dataclass
class _Block:
    """Rows parsed from one block of a file (typed or text columns), with their lines."""

    table: pa.Table
    lines: np.ndarray
    raw: object          # callable: row indices -> pa.Array of row texts
    malformed: int = 0   # rows already rejected by the reader
    bad: tuple | None = None   # (mask, reasons) of rows the reader found bad but kept for line alignment


def _match(s: pa.Array, pattern: str) -> np.ndarray:
    return pc.fill_null(pc.match_substring_regex(s, pattern), False).to_numpy(zero_copy_only=False)


def _missing_mask(arr: pa.Array) -> np.ndarray:
    """Null, or text that the CSV reader would read as null ("", "NA", "null", ...)."""
    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
        m = pc.or_kleene(pc.is_null(arr), pc.is_in(pc.utf8_trim_whitespace(arr), value_set=_NULLS))
        return pc.fill_null(m, True).to_numpy(zero_copy_only=False)
    if pa.types.is_floating(arr.type):
        return pc.fill_null(pc.is_nan(arr), True).to_numpy(zero_copy_only=False)
    return pc.is_null(arr).to_numpy(zero_copy_only=False)


def _texts(arr: pa.Array, idx: np.ndarray) -> list[str]:
    vals = arr.take(pa.array(idx, pa.int64())).to_pylist()
    return ["" if v is None else str(v)[:60] for v in vals]


def _parse_numbers(s: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Trimmed text -> (int values, float values, is_int, is_float); floats include ints."""
    n = len(s)
    try:
        iv = pc.cast(s, pa.int64())
        ok = pc.is_valid(iv).to_numpy(zero_copy_only=False)
        ivals = iv.fill_null(0).to_numpy(zero_copy_only=False)
        return ivals, ivals.astype(np.float64), ok, ok
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    try:  # all numbers, some with a fraction or exponent
        fv = pc.cast(s, pa.float64())
        ok = pc.is_valid(fv).to_numpy(zero_copy_only=False)
        return np.zeros(n, np.int64), fv.to_numpy(zero_copy_only=False), np.zeros(n, bool), ok
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    is_int = _match(s, _INT_RE)
    is_float = _match(s, _FLOAT_RE)
    ivals = np.zeros(n, np.int64)
    fvals = np.full(n, np.nan)
    if is_int.any():
        sub = pc.replace_substring_regex(s.filter(pa.array(is_int)), r"^\+", "")
        ivals[is_int] = pc.cast(sub, pa.int64()).to_numpy(zero_copy_only=False)
    if is_float.any():
        fvals[is_float] = pc.cast(s.filter(pa.array(is_float)), pa.float64()).to_numpy(zero_copy_only=False)
    return ivals, fvals, is_int, is_float


def _ts_values(arr, unit: str) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Timestamps -> (int64 values, bad mask, reasons (object array, None where fine) or None)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    n = len(arr)
    t = arr.type
    out = np.zeros(n, np.int64)
    reasons = np.full(n, None, dtype=object)
    if pa.types.is_null(t):
        reasons[:] = "missing timestamp"
        return out, np.ones(n, bool), reasons
    if (pa.types.is_string(t) or pa.types.is_large_string(t)) and unit != "iso" and arr.null_count == 0:
        fast = _fast_numeric_ts(arr, unit, reasons)
        if fast is not None:
            return fast
    missing = _missing_mask(arr)
    bad = missing.copy()
    reasons[missing] = "missing timestamp"
    if pa.types.is_timestamp(t) or pa.types.is_date(t):
        if pa.types.is_date(t):
            arr = arr.cast(pa.date64())
        else:
            arr = pc.cast(arr, pa.timestamp("ms", t.tz), safe=False)
        out = arr.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        return out, bad, (reasons if bad.any() else None)
    if pa.types.is_integer(t):
        out = _scale_ints(arr.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64), unit, bad, reasons)
    elif pa.types.is_floating(t):
        fv = arr.to_numpy(zero_copy_only=False).astype(np.float64)
        out = _scale_floats(fv, ~missing, unit, bad, reasons, arr)
    else:  # text
        s = pc.utf8_trim_whitespace(arr.cast(pa.string()))
        if unit == "iso":
            ms, ok = _parse_iso(s)
            out = ms
            fail = ~ok & ~missing
            if fail.any():
                idx = np.flatnonzero(fail)
                reasons[idx] = [f"unparseable timestamp {v!r} (expected ISO-8601)" for v in _texts(s, idx)]
                bad |= fail
        else:
            ivals, fvals, is_int, is_float = _parse_numbers(s)
            fail = ~is_float & ~missing
            if fail.any():
                idx = np.flatnonzero(fail)
                reasons[idx] = [f"non-numeric timestamp {v!r}" for v in _texts(s, idx)]
                bad |= fail
            out = _scale_ints(ivals, unit, bad, reasons)
            floats = is_float & ~is_int
            if floats.any():
                out[floats] = _scale_floats(fvals, floats, unit, bad, reasons, s)[floats]
    return out, bad, (reasons if bad.any() else None)


def _fast_numeric_ts(arr: pa.Array, unit: str, reasons: np.ndarray):
    """Text timestamps that are all clean numbers: one cast, no per-value checks."""
    bad = np.zeros(len(arr), bool)
    # a failing cast is slow (~100 ns per value): try the likely type first
    for typ in ((pa.float64(), pa.int64()) if unit == "s" else (pa.int64(), pa.float64())):
        try:
            vals = pc.cast(arr, typ).to_numpy(zero_copy_only=False)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            continue
        if typ == pa.int64():
            out = _scale_ints(vals, unit, bad, reasons)
        elif np.isfinite(vals).all():
            out = _scale_floats(vals, np.ones(len(vals), bool), unit, bad, reasons, arr)
        else:
            return None
        return out, bad, (reasons if bad.any() else None)
    return None


def _scale_ints(v: np.ndarray, unit: str, bad: np.ndarray, reasons: np.ndarray) -> np.ndarray:
    if unit == "s":
        over = np.abs(v) >= _TS_LIMIT // 1000
        if over.any():
            reasons[over & ~bad] = "timestamp out of range"
            bad |= over
            v = np.where(over, 0, v)
        return v * 1000
    if unit == "us":
        return np.floor_divide(v, 1000)
    if unit == "ns":
        return np.floor_divide(v, 1_000_000)
    return v


def _scale_floats(fv: np.ndarray, valid: np.ndarray, unit: str, bad: np.ndarray, reasons: np.ndarray,
                  text: pa.Array) -> np.ndarray:
    """Float timestamps -> int64 ms (floor, after rounding away binary noise below 1 µs)."""
    with np.errstate(invalid="ignore", over="ignore"):
        scaled = np.round(fv * _SCALE[unit], 3)
        whole = np.floor(scaled)
        nonfinite = valid & ~np.isfinite(scaled)
        fractional = valid & np.isfinite(scaled) & (whole != scaled) & (unit == "raw")
        out_of_range = valid & np.isfinite(scaled) & (np.abs(whole) >= _TS_LIMIT)
    for mask, what in ((nonfinite, "non-finite timestamp"), (fractional, "non-integer timestamp"),
                       (out_of_range, "timestamp out of range")):
        mask = mask & ~bad
        if mask.any():
            idx = np.flatnonzero(mask)
            reasons[idx] = [f"{what} {v!r}" for v in _texts(text, idx)]
            bad |= mask
    return np.where(bad | ~valid, 0, whole).astype(np.int64)


def _parse_iso(s: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """ISO-8601 text -> (epoch ms, ok). Arrow's parser first, pandas for mixed offsets."""
    for typ in (pa.timestamp("ns"), pa.timestamp("ns", "UTC")):
        try:
            ns = pc.cast(s, typ)
            ok = pc.is_valid(ns).to_numpy(zero_copy_only=False)
            return np.floor_divide(ns.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False), 10**6), ok
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass
    parsed = pd.to_datetime(pd.Series(s.to_numpy(zero_copy_only=False), dtype=object), utc=True,
                            format="ISO8601", errors="coerce")
    ok = parsed.notna().to_numpy()
    ns = np.where(ok, parsed.dt.tz_convert(None).to_numpy(dtype="datetime64[ns]").view(np.int64), 0)
    return np.floor_divide(ns, 10**6).astype(np.int64), ok


def _column(arr, kind: str, name: str) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """One column -> (numpy values of ``kind``, bad mask or None, reasons or None)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    n, t = len(arr), arr.type
    text = pa.types.is_string(t) or pa.types.is_large_string(t)
    if kind == "str":
        if not text:
            try:
                arr = pc.cast(arr, pa.string())
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                arr = pa.array([None if v is None else (v if isinstance(v, str) else json.dumps(v, default=str))
                                for v in arr.to_pylist()], pa.string())
        vals = arr.fill_null("").to_numpy(zero_copy_only=False)
        return (vals if vals.dtype == object else vals.astype(object)), None, None
    reasons = np.full(n, None, dtype=object)
    label = {"int": "integer", "float": "float", "bool": "boolean"}[kind]
    missing = _missing_mask(arr) if text or kind != "float" else None
    bad = np.zeros(n, bool)
    if kind == "float":
        if text:
            s = pc.utf8_trim_whitespace(arr)
            _, fvals, _, is_float = _parse_numbers(s)
            fail = ~is_float & ~missing
            vals = np.where(missing, np.nan, fvals)
        else:
            vals = pc.cast(arr, pa.float64()).to_numpy(zero_copy_only=False).astype(np.float64)
            fail = np.zeros(n, bool)
        if fail.any():
            idx = np.flatnonzero(fail)
            reasons[idx] = [f"unparseable value {v!r} in {label} column {name!r}" for v in _texts(arr, idx)]
            bad |= fail
        return vals, (bad if bad.any() else None), (reasons if bad.any() else None)
    if kind == "bool":
        if text:
            low = pc.utf8_lower(pc.utf8_trim_whitespace(arr))
            is_t = pc.fill_null(pc.is_in(low, value_set=_TRUE), False).to_numpy(zero_copy_only=False)
            is_f = pc.fill_null(pc.is_in(low, value_set=_FALSE), False).to_numpy(zero_copy_only=False)
            vals, fail = is_t, ~is_t & ~is_f & ~missing
        elif pa.types.is_boolean(t):
            vals, fail = arr.fill_null(False).to_numpy(zero_copy_only=False).astype(bool), np.zeros(n, bool)
        else:
            vals, fail = pc.not_equal(arr, 0).fill_null(False).to_numpy(zero_copy_only=False), np.zeros(n, bool)
    else:  # int
        if text:
            s = pc.utf8_trim_whitespace(arr)
            ivals, fvals, is_int, is_float = _parse_numbers(s)
            whole = is_float & ~is_int & np.isfinite(fvals) & (np.floor(fvals) == fvals) & (np.abs(fvals) < 2**62)
            vals = np.where(whole, np.nan_to_num(fvals).astype(np.int64), ivals)
            fail = ~(is_int | whole) & ~missing
        elif pa.types.is_integer(t) or pa.types.is_boolean(t):
            vals, fail = arr.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False), np.zeros(n, bool)
        else:
            fv = pc.cast(arr, pa.float64()).to_numpy(zero_copy_only=False).astype(np.float64)
            ok = np.isfinite(fv) & (np.floor(fv) == fv)
            vals, fail = np.where(ok, np.nan_to_num(fv), 0).astype(np.int64), ~ok & ~missing
    if fail.any():
        idx = np.flatnonzero(fail)
        reasons[idx] = [f"unparseable value {v!r} in {label} column {name!r}" for v in _texts(arr, idx)]
        bad |= fail
    if missing.any():
        reasons[missing & ~bad] = f"missing value in {label} column {name!r}"
        bad |= missing
    return vals, (bad if bad.any() else None), (reasons if bad.any() else None)


def _convert(block: _Block, file: str, kinds: dict[str, str], ts_column: str, unit: str,
             rejects: Rejects, stream: str) -> RawChunk:
    table, lines = block.table, block.lines
    n = table.num_rows
    ts, bad, reasons = _ts_values(table.column(ts_column), unit)
    if block.bad is not None:
        if reasons is None:
            reasons = np.full(n, None, dtype=object)
        first = block.bad[0] & ~bad
        reasons[first] = block.bad[1][first]
        bad = bad | block.bad[0]
    cols = {}
    for name, kind in kinds.items():
        arr = table.column(name) if name in table.column_names else pa.nulls(n, _KIND_ARROW[kind])
        vals, cbad, creasons = _column(arr, kind, name)
        cols[name] = vals
        if cbad is not None:
            if reasons is None:
                reasons = np.full(n, None, dtype=object)
            first = cbad & ~bad
            reasons[first] = creasons[first]
            bad = bad | cbad
    if not bad.any():
        return RawChunk(ts, cols, lines, file)
    idx = np.flatnonzero(bad)
    rejects.add_many(stream, file, lines[idx], reasons[idx].tolist(), block.raw(idx))
    keep = ~bad
    return RawChunk(ts[keep], {k: v[keep] for k, v in cols.items()}, lines[keep], file)


# --------------------------------------------------------------------------- text files

def _record_ends(buf: np.ndarray, quotes: bool) -> tuple[np.ndarray, np.ndarray]:
    """Newline positions, and those that end a record (a newline inside quotes does not)."""
    nl = np.flatnonzero(buf == 10)
    if not quotes:
        return nl, nl
    q = np.flatnonzero(buf == 34)
    return nl, nl[(np.searchsorted(q, nl) & 1) == 0]


def _last_boundary(buf: bytes, quotes: bool) -> int:
    """Offset just after the last newline that ends a record (0 if none)."""
    p = buf.rfind(b"\n")
    if not quotes or p < 0:
        return p + 1
    total = buf.count(b'"')
    for _ in range(64):
        if (total - buf.count(b'"', p)) % 2 == 0:
            return p + 1
        p = buf.rfind(b"\n", 0, p)
        if p < 0:
            return 0
    _, ends = _record_ends(np.frombuffer(buf, np.uint8), True)
    return int(ends[-1]) + 1 if len(ends) else 0


def _raw_texts(block: bytes, starts: np.ndarray):
    """Callable: record indices -> their text (trailing newline stripped)."""
    def texts(rec_idx: np.ndarray) -> pa.Array:
        offsets = np.concatenate((starts, [len(block)])).astype(np.int64)
        arr = pa.LargeBinaryArray.from_buffers(pa.large_binary(), len(starts),
                                               [None, pa.py_buffer(offsets), pa.py_buffer(block)])
        taken = arr.take(pa.array(rec_idx, pa.int64()))
        try:
            s = taken.cast(pa.large_string())
        except pa.ArrowInvalid:
            s = pa.array([b.decode("utf-8", "replace") for b in taken.to_pylist()], pa.large_string())
        return pc.utf8_rtrim(s, characters="\r\n").cast(pa.string())
    return texts


class _TextReader:
    """Shared block loop of CSV and JSON lines files: blocks end on a record boundary."""

    quotes_matter = False

    def __init__(self, path: Path):
        self.path = path
        self.file = str(path)
        self._bytes_per_row = 100.0

    def _first_block(self) -> bytes | None:
        gen = self._chunks_of_bytes(_SAMPLE_BYTES)
        try:
            first = next(gen, None)
            self._whole = first is None or next(gen, None) is None  # the sample is the whole file
        finally:
            gen.close()
        return None if first is None else first[0]

    def _chunks_of_bytes(self, block_bytes: int) -> Iterator[tuple[bytes, int]]:
        """(block, number of physical lines before it) for the whole file; BOM removed."""
        stream = _open_stream(self.path)
        try:
            carry, lines_before, eof, first = b"", 0, False, True
            while not eof:
                try:
                    data = stream.read(block_bytes)
                except (OSError, pa.ArrowException) as e:
                    raise SourceError(f"cannot read file: {_one_line(e)}", location=self.file,
                                      hint="check that the file is readable and not corrupt") from None
                eof = not data
                carry += data
                if first:
                    carry, first = carry.removeprefix(b"\xef\xbb\xbf"), False
                cut = len(carry) if eof else _last_boundary(carry, self.quotes_matter)
                if cut:
                    block, carry = carry[:cut], carry[cut:]
                    yield block, lines_before
                    lines_before += block.count(b"\n")
        finally:
            stream.close()

    @staticmethod
    def _records(block: bytes, lines_before: int, quotes: bool):
        """Per record: start, end (exclusive, before the newline) and 1-based physical line."""
        buf = np.frombuffer(block, np.uint8)
        nl, rec_nl = _record_ends(buf, quotes)
        starts = np.concatenate(([0], rec_nl + 1))
        ends = np.concatenate((rec_nl, [len(block)]))
        if starts[-1] >= len(block):
            starts, ends = starts[:-1], ends[:-1]
        lines = lines_before + 1 + np.searchsorted(nl, starts)
        return buf, starts, ends, lines, len(rec_nl) < len(nl)


class _CsvReader(_TextReader):
    quotes_matter = True

    def __init__(self, path: Path):
        super().__init__(path)
        self.header: list[str] | None = None

    def inspect(self, ts_column: str) -> _Info:
        block = self._first_block()
        if block is None:
            raise SourceError("empty file (no header line)", location=self.file,
                              hint="a CSV source needs a header line naming its columns")
        body, _ = self._split_header(block)
        if ts_column not in self.header:
            raise _missing_ts(self.file, self.header, ts_column)
        if not body.strip():
            empty = pa.table({c: pa.array([], pa.string()) for c in self.header})
            return _Info(list(self.header), {c: "str" for c in self.header if c != ts_column},
                         pa.string(), empty.column(ts_column).combine_chunks())
        table, _, _ = self._parse(body, {ts_column: pa.string()}, sample=True)
        self._bytes_per_row = len(body) / max(1, body.count(b"\n"))
        info = _info_from_table(table, ts_column, dirty_numbers=True)
        if not self._whole:
            _widen(info, self._with_missing(info.kinds))
        return info

    def _with_missing(self, kinds: dict[str, str]) -> set[str]:
        """Integer and boolean columns with a missing value anywhere in the first _PRESCAN_BYTES."""
        cols = [c for c, k in kinds.items() if k in ("int", "bool")]
        found: set[str] = set()
        scanned = 0
        for block, _ in self._chunks_of_bytes(8 * _MIN_BLOCK):
            if scanned == 0:
                block, _ = self._split_header(block)
            scanned += len(block)
            if not _may_hold_missing(block):
                continue
            read = pacsv.ReadOptions(column_names=self.header)
            parse = pacsv.ParseOptions(invalid_row_handler=lambda row: "skip",
                                       newlines_in_values=b'"' in block and _has_quoted_newline(block))
            todo = [c for c in cols if c not in found]
            for types in ({c: _KIND_ARROW[kinds[c]] for c in todo}, {c: pa.string() for c in todo}):
                conv = pacsv.ConvertOptions(include_columns=todo, column_types=types, strings_can_be_null=False)
                try:
                    table = pacsv.read_csv(io.BytesIO(block), read_options=read, parse_options=parse,
                                           convert_options=conv)
                except pa.ArrowInvalid:
                    continue
                found |= {c for c in todo if _missing_mask(table.column(c).combine_chunks()).any()}
                break
            if len(found) == len(cols) or scanned > _PRESCAN_BYTES:
                break
        return found

    def _split_header(self, block: bytes) -> tuple[bytes, int]:
        """Body after the header record, and the number of physical lines of the header."""
        end = block.find(b"\n") + 1 or len(block)
        if block.count(b'"', 0, end) % 2:  # a quoted newline inside the header
            _, ends = _record_ends(np.frombuffer(block, np.uint8), True)
            end = int(ends[0]) + 1 if len(ends) else len(block)
        head = block[:end].decode("utf-8", "replace").rstrip("\r\n")
        names = next(csv.reader([head]), []) if head.strip() else []
        if not names:
            raise SourceError("empty header line", location=f"{self.file}:1",
                              hint="a CSV source needs a header line naming its columns")
        dup = sorted({c for c in names if names.count(c) > 1})
        if dup or any(not c.strip() for c in names):
            what = f"duplicate column name {dup[0]!r}" if dup else "empty column name"
            raise SourceError(f"bad header: {what}", location=f"{self.file}:1",
                              hint="give every column a distinct name")
        self.header = names
        return block[end:], max(1, block[:end].count(b"\n"))

    def _parse(self, body: bytes, types: dict, sample: bool = False, threads: bool = True,
               quoted_newlines: bool | None = None):
        """pyarrow parse of one block -> (table or None on a conversion error, invalid rows, error)."""
        bad: list = []

        def handler(row):
            bad.append((row.expected_columns, row.actual_columns, row.number, row.text))
            return "skip"

        read = pacsv.ReadOptions(column_names=self.header, use_threads=threads)
        if quoted_newlines is None:
            quoted_newlines = b'"' in body and _has_quoted_newline(body)
        parse = pacsv.ParseOptions(invalid_row_handler=handler, newlines_in_values=quoted_newlines)
        conv = pacsv.ConvertOptions(column_types=types, strings_can_be_null=False)
        try:
            table = pacsv.read_csv(io.BytesIO(body), read_options=read, parse_options=parse, convert_options=conv)
        except pa.ArrowInvalid as e:
            if "conversion error" in str(e) and not sample:
                return None, bad, str(e)
            raise SourceError(f"cannot parse CSV: {_one_line(e)}", location=self.file,
                              hint="check that the file is UTF-8 CSV with a header line") from None
        if not sample and bad and any(b[2] is None for b in bad):
            return self._parse(body, types, threads=False, quoted_newlines=quoted_newlines)
        return table, bad, None

    def blocks(self, kinds, ts_column, rejects, stream, chunk_rows) -> Iterator[_Block]:
        block_bytes = int(min(max(chunk_rows * self._bytes_per_row * 1.2, _MIN_BLOCK), _MAX_BLOCK))
        typed = {c: _KIND_ARROW[k] for c, k in kinds.items()}
        typed[ts_column] = pa.string()
        first = True
        for block, lines_before in self._chunks_of_bytes(block_bytes):
            if first:
                block, header_lines = self._split_header(block)
                lines_before += header_lines
                first = False
                if ts_column not in self.header:
                    raise _missing_ts(self.file, self.header, ts_column)
            if not block:
                continue
            quotes = b'"' in block
            buf, starts, ends, lines, qnl = self._records(block, lines_before, quotes)
            table, bad, _ = self._parse(block, typed, quoted_newlines=qnl)
            utf8 = None
            if table is None:  # some value does not convert: read the block as text, check per column
                table, bad, err = self._parse(block, {c: pa.string() for c in self.header}, quoted_newlines=qnl)
            if table is None:  # invalid UTF-8: read bytes, reject the rows that do not decode
                table, bad, err = self._parse(block, {c: pa.binary() for c in self.header}, quoted_newlines=qnl)
                if table is None:
                    raise SourceError(f"cannot parse CSV: {_one_line(Exception(err))}",
                                      location=f"{self.file}:{lines_before + 1}",
                                      hint="check that the file is CSV with a header line") from None
                table, utf8 = _decode_utf8(table)
            lens = ends - starts
            empty = (lens == 0) | ((lens == 1) & (buf[np.minimum(starts, len(buf) - 1)] == 13))
            nonempty = np.flatnonzero(~empty)
            if bad:
                bad_rows = np.array([b[2] - 1 for b in bad], np.int64)
                reasons = [f"malformed row: expected {b[0]} fields, found {b[1]}" for b in bad]
                rejects.add_many(stream, self.file, lines[nonempty[bad_rows]], reasons, [b[3] for b in bad],
                                 kind="malformed row")
                valid = np.delete(nonempty, bad_rows)
            else:
                valid = nonempty
            if len(valid) != table.num_rows:  # defensive: the record scan and pyarrow disagree
                raise SourceError(f"cannot align {table.num_rows} parsed rows with {len(valid)} records",
                                  location=f"{self.file}:{lines_before + 1}",
                                  hint="the file may hold unbalanced quotes")
            raw_all = _raw_texts(block, starts)
            yield _Block(table, lines[valid].astype(np.int64), lambda idx, v=valid, r=raw_all: r(v[idx]),
                         len(bad), utf8)


def _decode_utf8(table: pa.Table) -> tuple[pa.Table, tuple | None]:
    """Binary columns -> text; rows with bytes that are not UTF-8 are marked bad (error path only)."""
    n = table.num_rows
    bad = np.zeros(n, bool)
    reasons = np.full(n, None, dtype=object)
    cols = {}
    for name in table.column_names:
        try:
            cols[name] = table.column(name).cast(pa.string())
            continue
        except pa.ArrowInvalid:
            pass
        out = []
        for i, v in enumerate(table.column(name).to_pylist()):
            try:
                out.append(None if v is None else v.decode("utf-8"))
            except UnicodeDecodeError:
                out.append(v.decode("utf-8", "replace"))
                if not bad[i]:
                    bad[i], reasons[i] = True, f"invalid UTF-8 in column {name!r}"
        cols[name] = pa.array(out, pa.string())
    return pa.table(cols), ((bad, reasons) if bad.any() else None)


def _may_hold_missing(block: bytes) -> bool:
    """False when no field of the CSV block can be null: no empty field and no null token
    (every non-empty default null token contains 'n', 'N' or '#')."""
    return (block.startswith(b",") or block.rstrip(b"\r\n").endswith(b",")
            or any(t in block for t in (b",,", b",\n", b",\r", b"\n,", b'""', b"n", b"N", b"#")))


def _has_quoted_newline(body: bytes) -> bool:
    nl, rec_nl = _record_ends(np.frombuffer(body, np.uint8), True)
    return len(nl) != len(rec_nl)


class _JsonReader(_TextReader):
    def inspect(self, ts_column: str) -> _Info:
        block = self._first_block()
        if block is None or not block.strip():
            raise SourceError("empty file (no JSON lines)", location=self.file,
                              hint="a JSON lines source needs one object per line")
        if block.lstrip()[:1] == b"[":
            raise SourceError("a JSON array, not JSON lines", location=self.file,
                              hint="write one JSON object per line (JSON lines, .jsonl)")
        self._bytes_per_row = len(block) / max(1, block.count(b"\n"))
        try:
            table = pajson.read_json(io.BytesIO(block), read_options=self._read_options(block))
        except pa.ArrowInvalid:
            info = self._infer_python(block, ts_column)
        else:
            info = _info_from_table(table, ts_column)
            # nested values stay nested when read (and become JSON text per column later)
            self._keep = {f.name: f.type for f in table.schema
                          if pa.types.is_nested(f.type) and f.name != ts_column}
        if not self._whole:
            _widen(info, self._with_missing(info.kinds))
        self._info = info
        return info

    def _with_missing(self, kinds: dict[str, str]) -> set[str]:
        """Integer and boolean columns with a missing value (null or absent) in the first _PRESCAN_BYTES."""
        cols = [c for c, k in kinds.items() if k in ("int", "bool")]
        found: set[str] = set()
        scanned = 0
        for block, _ in self._chunks_of_bytes(8 * _MIN_BLOCK):
            scanned += len(block)
            todo = [c for c in cols if c not in found]
            schema = pa.schema([pa.field(c, _KIND_ARROW[kinds[c]]) for c in todo])
            try:
                table = pajson.read_json(io.BytesIO(block), read_options=self._read_options(block),
                                         parse_options=pajson.ParseOptions(explicit_schema=schema,
                                                                           unexpected_field_behavior="ignore"))
                found |= {c for c in todo if table.column(c).null_count}
            except pa.ArrowInvalid:
                for obj in _json_objects(block):
                    found |= {c for c in todo if obj.get(c) is None}
            if len(found) == len(cols) or scanned > _PRESCAN_BYTES:
                break
        return found

    @staticmethod
    def _read_options(piece: bytes) -> pajson.ReadOptions:
        longest = max((len(x) for x in piece.split(b"\n")), default=0) if len(piece) > (1 << 20) else len(piece)
        return pajson.ReadOptions(block_size=max(1 << 20, longest + 2))

    def _infer_python(self, block: bytes, ts_column: str) -> _Info:
        seen: dict[str, Counter] = {}
        ts_texts = []
        n_obj = 0
        for obj in _json_objects(block):
            n_obj += 1
            for k, v in obj.items():
                seen.setdefault(k, Counter())[type(v)] += 1
            ts_texts.append(_json_text(obj.get(ts_column)))
        kinds = {}
        for k, counts in seen.items():
            has_null = counts[type(None)] > 0 or sum(counts.values()) < n_obj   # null or absent
            n_int, n_num = counts[int], counts[int] + counts[float]
            n_other = sum(counts.values()) - n_num - counts[type(None)]
            if n_other == 0 and counts.keys() - {type(None)} == {bool}:
                kinds[k] = "bool"
            elif n_num > n_other and n_other <= max(1, n_num // 100):   # numbers but for a few values
                kinds[k] = "int" if n_int == n_num and not has_null else "float"
            else:
                kinds[k] = "str"
        ts_types = {t for t, c in seen.get(ts_column, {}).items() if c} - {type(None)}
        ts_type = pa.int64() if ts_types == {int} else pa.float64() if ts_types and ts_types <= {int, float} \
            else pa.string()
        kinds.pop(ts_column, None)
        self._keep = {}
        return _Info(list(seen), kinds, ts_type, pa.array(ts_texts, pa.string()) if ts_column in seen else None)

    def blocks(self, kinds, ts_column, rejects, stream, chunk_rows) -> Iterator[_Block]:
        info = getattr(self, "_info", None) or self.inspect(ts_column)
        if ts_column not in info.names:
            raise _missing_ts(self.file, info.names, ts_column)
        t = info.ts_type
        ts_type = pa.string() if pa.types.is_null(t) or pa.types.is_timestamp(t) or pa.types.is_date(t) else t
        fields = [pa.field(ts_column, ts_type)]
        fields += [pa.field(c, self._keep.get(c, _KIND_ARROW[k])) for c, k in kinds.items()]
        self._schema = pa.schema(fields)
        block_bytes = int(min(max(chunk_rows * self._bytes_per_row * 1.2, _MIN_BLOCK), _MAX_BLOCK))
        for block, lines_before in self._chunks_of_bytes(block_bytes):
            buf, starts, ends, lines, _ = self._records(block, lines_before, False)
            ink = ~((buf == 32) | (buf == 9) | (buf == 13) | (buf == 10))
            cs = np.concatenate(([0], np.cumsum(ink)))
            nonblank = np.flatnonzero(cs[ends] - cs[starts] > 0)
            if len(nonblank):
                raw_all = _raw_texts(block, starts)
                yield from self._parse_range(block, starts, ends, lines, nonblank, raw_all, rejects, stream)

    def _parse_range(self, block, starts, ends, lines, recs, raw_all, rejects, stream) -> Iterator[_Block]:
        """Parse records ``recs`` with pyarrow; on failure split in halves, single lines in Python."""
        piece = block[int(starts[recs[0]]):int(ends[recs[-1]])]
        try:
            table = pajson.read_json(io.BytesIO(piece), read_options=self._read_options(piece),
                                     parse_options=pajson.ParseOptions(explicit_schema=self._schema,
                                                                       unexpected_field_behavior="ignore"))
            if table.num_rows == len(recs):
                yield _Block(table, lines[recs].astype(np.int64), lambda idx, v=recs: raw_all(v[idx]))
                return
        except pa.ArrowInvalid:
            pass
        if len(recs) > 8:
            mid = len(recs) // 2
            yield from self._parse_range(block, starts, ends, lines, recs[:mid], raw_all, rejects, stream)
            yield from self._parse_range(block, starts, ends, lines, recs[mid:], raw_all, rejects, stream)
            return
        good, cols = [], {f.name: [] for f in self._schema}
        for r in recs:
            text = block[starts[r]:ends[r]].decode("utf-8", "replace").rstrip("\r")
            try:
                obj = json.loads(text)
                reason = None if isinstance(obj, dict) else "malformed JSON line: not an object"
            except ValueError as e:
                reason = f"malformed JSON line: {getattr(e, 'msg', e)} at column {getattr(e, 'colno', '?')}"
            if reason:
                rejects.add(stream, self.file, int(lines[r]), reason, text, kind="malformed JSON line")
                continue
            good.append(r)
            for c in cols:
                cols[c].append(_json_text(obj.get(c)))
        good = np.array(good, np.int64)
        table = pa.table({c: pa.array(v, pa.string()) for c, v in cols.items()})
        yield _Block(table, lines[good].astype(np.int64), lambda idx, v=good: raw_all(v[idx]), len(recs) - len(good))


def _json_text(v) -> str | None:
    if v is None:
        return None
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return v
    if isinstance(v, (int, float)):
        return repr(v)
    return json.dumps(v)


def _json_objects(block: bytes) -> Iterator[dict]:
    for line in block.splitlines():
        try:
            obj = json.loads(line) if line.strip() else None
        except ValueError:
            continue
        if isinstance(obj, dict):
            yield obj


# --------------------------------------------------------------------------- parquet and memory

class _ParquetReader:
    def __init__(self, path: Path):
        self.path, self.file = path, str(path)

    def _open(self) -> pq.ParquetFile:
        try:
            return pq.ParquetFile(str(self.path))
        except (OSError, pa.ArrowException) as e:
            raise SourceError(f"cannot read Parquet file: {_one_line(e)}", location=self.file,
                              hint="check that the file is a complete Parquet file") from None

    def inspect(self, ts_column: str) -> _Info:
        f = self._open()
        schema = f.schema_arrow
        meta = f.metadata
        nulls: dict[str, bool] = {}
        for g in range(meta.num_row_groups):
            group = meta.row_group(g)
            for j in range(group.num_columns):
                col = group.column(j)
                st = col.statistics
                has = st is None or not st.has_null_count or st.null_count > 0
                nulls[col.path_in_schema] = nulls.get(col.path_in_schema, False) or has
        nullable = {fl.name: pa.types.is_integer(fl.type) and nulls.get(fl.name, False) for fl in schema}
        sample = None
        if ts_column in schema.names and f.metadata.num_rows:
            sample = next(f.iter_batches(batch_size=4096, columns=[ts_column])).column(0)
        kinds = {fl.name: _arrow_kind(fl.type, nullable[fl.name]) for fl in schema if fl.name != ts_column}
        ts_type = schema.field(ts_column).type if ts_column in schema.names else None
        return _Info(list(schema.names), kinds, ts_type, sample)

    def blocks(self, kinds, ts_column, rejects, stream, chunk_rows) -> Iterator[_Block]:
        f = self._open()
        row = 0
        try:
            for batch in f.iter_batches(batch_size=chunk_rows, columns=[ts_column, *kinds]):
                table = pa.Table.from_batches([batch])
                lines = np.arange(row + 1, row + 1 + table.num_rows, dtype=np.int64)
                row += table.num_rows
                yield _Block(table, lines, _table_texts(table))
        except (OSError, pa.ArrowException) as e:
            raise SourceError(f"cannot read Parquet file: {_one_line(e)}", location=f"{self.file} (row {row + 1})",
                              hint="check that the file is a complete Parquet file") from None


def _table_texts(table: pa.Table):
    def texts(idx: np.ndarray) -> pa.Array:
        sub = table.take(pa.array(idx, pa.int64()))
        return rows_as_text({c: sub.column(c).to_numpy(zero_copy_only=False) for c in sub.column_names})
    return texts


def _frame_table(df: pd.DataFrame) -> pa.Table:
    cols = {}
    for c in df.columns:
        values = df[c]
        try:
            cols[str(c)] = pa.array(values, from_pandas=True)
        except (pa.ArrowException, TypeError, ValueError):
            cols[str(c)] = pa.array([None if v is None or (isinstance(v, float) and v != v) else str(v)
                                     for v in values.tolist()], pa.string())
    return pa.table(cols) if cols else pa.table({})


class _MemoryReader:
    def __init__(self, file: str, table: pa.Table):
        self.file, self.table = file, table

    def inspect(self, ts_column: str) -> _Info:
        return _info_from_table(self.table, ts_column)

    def blocks(self, kinds, ts_column, rejects, stream, chunk_rows) -> Iterator[_Block]:
        n = self.table.num_rows
        for start in range(0, n, chunk_rows):
            part = self.table.slice(start, chunk_rows)
            lines = np.arange(start + 1, start + 1 + part.num_rows, dtype=np.int64)
            yield _Block(part, lines, _table_texts(part))


class _RecordsReader:
    """An iterable of dicts, consumed once; the first ``_SAMPLE_ROWS`` rows fix the schema."""

    _SAMPLE_ROWS = 65536

    def __init__(self, file: str, it: Iterator):
        self.file = file
        self._it = it
        self._first: list | None = None
        self._done = False

    def _table(self, rows: list) -> pa.Table:
        bad = next((r for r in rows if not isinstance(r, dict)), None)
        if bad is not None:
            raise SourceError(f"records must be dicts, got {type(bad).__name__}", location=self.file,
                              hint="pass an iterable of {column: value} dicts")
        return _frame_table(pd.DataFrame.from_records(rows)) if rows else pa.table({})

    def inspect(self, ts_column: str) -> _Info:
        self._first = list(itertools.islice(self._it, self._SAMPLE_ROWS))
        return _info_from_table(self._table(self._first), ts_column)

    def blocks(self, kinds, ts_column, rejects, stream, chunk_rows) -> Iterator[_Block]:
        if self._done:
            return
        self._done = True
        start = 0
        pending = iter(self._first or [])
        source = itertools.chain(pending, self._it)
        while True:
            rows = list(itertools.islice(source, chunk_rows))
            if not rows:
                return
            table = self._table(rows)
            for c in [ts_column, *kinds]:
                if c not in table.column_names:
                    table = table.append_column(c, pa.nulls(table.num_rows))
            lines = np.arange(start + 1, start + 1 + len(rows), dtype=np.int64)
            start += len(rows)
            yield _Block(table, lines, _table_texts(table))
