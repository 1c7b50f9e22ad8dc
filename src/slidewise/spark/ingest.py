"""Spark streaming sources of the runner: file directories (CSV, JSON lines, Parquet), ``rate``, control.

Schema. :func:`inspect_stream` opens each input once with slidewise's own
reader (:func:`~slidewise.runtime.sources.open_source`): column kinds and the
timestamp unit follow exactly the local engine's rules, and a missing or
unreadable input, an empty directory or files that disagree on the schema are
:class:`~slidewise.errors.SourceError` s before Spark starts.

Reading. Spark's file stream source reads the directory (or the one file) as
text columns (CSV with ``enforceSchema=false`` so a later file with another
header fails the query, its integer columns and timestamps as ``long``:
:func:`native_longs`; JSON lines with every field as text) or native
columns (Parquet), plus ``_metadata.file_path`` / ``file_block_start``. In a
``mapInArrow`` step (:func:`scan_batches`, in the executors, in scan order)
every row gets its ordinal within its file split — the input order, stable on
replay — and is converted by slidewise's converters through
:func:`convert_table`: the same int64 timestamps, column values and bad-row
reasons as the local engine. Rows Spark itself marks corrupt (wrong field
count, broken JSON) become rejects with the local engine's reasons; line
numbers count records (plus the CSV header) within the file. Each Arrow batch
leaves as (at most) two packed chunk rows, tuples and rejects
(:mod:`slidewise.spark.layout`).

``rate:rowsPerSecond=N[,distinct=K]`` is Spark's rate source as a stream with
``ts`` (event time in ms), ``a = value mod K`` (default 1000) and ``x = value
mod 100``. ``kafka://`` topics: :mod:`slidewise.spark.kafka_source`; Spark DataFrames:
:mod:`slidewise.spark.dataframe`. The *control* source is a JSON directory the runner writes an
end-of-input marker into (see :mod:`slidewise.spark.join_runner`).
"""

from __future__ import annotations

import csv
import functools
import urllib.parse
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from slidewise.errors import OptionError, SourceError
from slidewise.kafka.uri import is_kafka
from slidewise.runtime.rejects import Rejects
from slidewise.runtime.sources import open_source
from slidewise.spark.layout import EOF, REJECT, TUPLE, WIRE_DDL, Layout, StreamInfo, pack, wire_batch

#: the files of a directory source Spark reads, per format (plain or Hadoop-compressed text)
DIRECTORY_GLOBS = {"csv": "*.{csv,csv.gz,csv.bz2}", "json": "*.{jsonl,ndjson,json,jsonl.gz,ndjson.gz,json.gz,jsonl.bz2}", "parquet": "*.parquet"}
_FORMAT_OF = (
    ("parquet", (".parquet",)),
    ("csv", (".csv", ".csv.gz", ".csv.bz2")),
    ("json", (".jsonl", ".ndjson", ".json", ".jsonl.gz", ".ndjson.gz", ".json.gz", ".jsonl.bz2")),
)
_ARROW_OF = {"int": pa.int64(), "float": pa.float64(), "bool": pa.bool_(), "str": pa.string()}


# --------------------------------------------------------------------------- driver side


def inspect_stream(alias: str, name: str, spec, *, ts_column: str, ts_unit: str, lateness: int, work_dir: Path) -> tuple[StreamInfo, dict]:
    """Schema and reading recipe of one FROM stream: ``(StreamInfo, read options)``; the recipe keeps ``ts_column``."""
    info, recipe = _inspect_stream(alias, name, spec, ts_column=ts_column, ts_unit=ts_unit, lateness=lateness, work_dir=work_dir)
    return info, {**recipe, "ts_column": ts_column}


def _inspect_stream(alias: str, name: str, spec, *, ts_column: str, ts_unit: str, lateness: int, work_dir: Path) -> tuple[StreamInfo, dict]:
    from slidewise.spark.dataframe import inspect_frame, is_frame

    if is_frame(spec):
        info, recipe = inspect_frame(alias, name, spec, ts_column=ts_column, ts_unit=ts_unit, lateness=lateness)
        return info, {**recipe, "frame": spec}
    if is_kafka(spec):
        from slidewise.spark.kafka_source import inspect_topic

        return inspect_topic(alias, name, spec, ts_column=ts_column, ts_unit=ts_unit, lateness=lateness)
    if isinstance(spec, str) and spec.startswith("rate:"):
        opts = _rate_options(spec)
        return StreamInfo(alias, name, {"a": "int", "x": "int"}, "ms", lateness, "rate"), opts
    if not isinstance(spec, (str, Path)):
        spec = _materialise(name, spec, work_dir)
    src = open_source(name, spec, ts_column=ts_column, ts_unit=ts_unit)
    files = [Path(f) for f in src.files]
    fmts = {_format(f) for f in files}
    if len(fmts) != 1 or None in fmts:
        raise SourceError(
            f"stream {alias}: the Spark engine reads one format per source, found {', '.join(sorted(str(f) for f in fmts))}",
            location=str(spec),
            hint="keep CSV, JSON lines and Parquet files in separate directories",
        )
    fmt = fmts.pop()
    path = Path(spec)
    recipe = {"fmt": fmt, "dir": str(path if path.is_dir() else path.parent), "glob": DIRECTORY_GLOBS[fmt] if path.is_dir() else _glob_escape(path.name)}
    if fmt == "csv":
        recipe["columns"] = _csv_header(files[0])
        recipe["longs"] = native_longs(src, recipe["columns"], ts_column)
    elif fmt == "json":
        recipe["columns"] = [ts_column, *src.kinds]
    info = StreamInfo(alias, name, dict(src.kinds), src.ts_unit, lateness, fmt, 1 if fmt == "csv" else 0, (str(Path(recipe["dir"]).resolve()), recipe["dir"]))
    return info, recipe


def native_longs(src, columns: list[str], ts_column: str) -> list[str]:
    """The CSV columns Spark parses itself as ``long``: integer attributes, and the timestamp when
    every file's is an integer number. A text Spark cannot parse as a long is the local reader's
    to judge (:func:`convert_raw`); one it can (optional sign, decimal digits, in range) the local
    reader reads as the same integer."""
    longs = {a for a, k in src.kinds.items() if k == "int"}
    if src.ts_unit != "iso" and src.ts_samples and all(_integers(s) for s in src.ts_samples):
        longs.add(ts_column)
    return [c for c in columns if c in longs]


def _integers(sample) -> bool:
    """Whether a sample of timestamps holds integer numbers only (text or typed)."""
    if sample is None or len(sample) == 0:
        return False
    try:
        return pc.cast(sample.drop_null(), pa.int64()) is not None
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return False


def _format(path: Path) -> str | None:
    return file_format(path.name)


def file_format(name: str) -> str | None:
    """The format of a file by its name (``csv``, ``json``, ``parquet``), or None."""
    name = name.lower()
    for fmt, exts in _FORMAT_OF:
        if name.endswith(exts):
            return fmt
    return None


def _glob_escape(name: str) -> str:
    return "".join(f"[{c}]" if c in "*?[]{}\\" else c for c in name)


def _csv_header(path: Path) -> list[str]:
    with pa.input_stream(str(path), compression="detect") as f:
        first = f.read(1 << 20).decode("utf-8-sig", "replace")
    return next(csv.reader([first.split("\n", 1)[0].rstrip("\r")]), [])


def _rate_options(spec: str) -> dict:
    opts = {"fmt": "rate", "rowsPerSecond": "1000", "distinct": "1000"}
    for part in filter(None, spec[len("rate:") :].split(",")):
        k, sep, v = part.partition("=")
        if not sep or not v.strip().isdigit():
            raise OptionError(f"bad rate source option {part!r}", hint="write rate:rowsPerSecond=1000,distinct=100")
        opts[k.strip()] = v.strip()
    return opts


def _materialise(name: str, spec, work_dir: Path) -> str:
    """An in-memory source (DataFrame, dict, Arrow table) as a Parquet directory Spark can stream."""
    import pandas as pd
    import pyarrow.parquet as pq

    if isinstance(spec, dict):
        spec = pd.DataFrame(spec)
    table = spec if isinstance(spec, pa.Table) else pa.Table.from_pandas(spec, preserve_index=False)
    out = work_dir / "inputs" / name
    out.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, out / "part-00000.parquet")
    return str(out)


def file_reader(reader, recipe: dict, parquet_schema=None):
    """``(reader, column names)``: a Spark file reader (stream or batch) set up for ``recipe``.

    Parquet is read with ``parquet_schema``; CSV / JSON lines read each column
    as a string (CSV: the recipe's ``longs`` as ``long``, parsed by Spark) plus
    ``_corrupt`` (permissive mode), so malformed rows become rejects instead of
    failing the query.
    """
    fmt = recipe["fmt"]
    if fmt == "parquet":
        return reader.format("parquet").schema(parquet_schema), parquet_schema.fieldNames()
    names = list(recipe["columns"])
    longs = set(recipe.get("longs", ()))
    ddl = ", ".join(f"`{c}` {'long' if c in longs else 'string'}" for c in names) + ", _corrupt string"
    reader = reader.format(fmt).schema(ddl).option("mode", "PERMISSIVE").option("columnNameOfCorruptRecord", "_corrupt")
    if fmt == "csv":
        reader = reader.option("header", True).option("enforceSchema", False).option("escape", '"')
    return reader, names


def chained(body, then=None):
    """``body`` (a ``mapInArrow`` body) with ``then`` applied to its output batches, in the same Python
    step (no second pass through the JVM); the worker settles after it (:func:`slidewise.spark.worker.settle`)."""
    return functools.partial(_chain, body=body, then=then)


def _chain(batches, *, body, then):
    from slidewise.spark.worker import settled

    out = body(batches)
    return settled(out if then is None else then(out))


def stream_frame(spark, index: int, info: StreamInfo, recipe: dict, layout: Layout, ts_column: str, max_files: int | None = None, then=None):
    """The streaming DataFrame of stream ``index`` in the wire layout (packed chunks); the recipe's
    ``ts_column`` wins; ``then``: a stateless step on its output batches (:func:`chained`)."""
    from pyspark.sql import functions as F

    ts_column = recipe.get("ts_column", ts_column)

    fmt = recipe["fmt"]
    if fmt == "frame":
        from slidewise.spark.dataframe import frame_wire

        return frame_wire(recipe["frame"], index, layout, ts_column, then=then)
    if fmt == "kafka":
        from slidewise.spark.kafka_source import topic_frame

        return topic_frame(spark, index, info, recipe, layout, ts_column, then=then)
    if fmt == "rate":
        raw = spark.readStream.format("rate").option("rowsPerSecond", recipe["rowsPerSecond"]).option("numPartitions", recipe.get("numPartitions", "1")).load()
        body = functools.partial(rate_batches, stream=index, layout=layout, distinct=int(recipe["distinct"]))
        return raw.mapInArrow(chained(body, then), WIRE_DDL)
    reader = spark.readStream.option("pathGlobFilter", recipe["glob"])
    if max_files:
        reader = reader.option("maxFilesPerTrigger", int(max_files))
    if fmt == "parquet":
        first = sorted(p for p in Path(recipe["dir"]).iterdir() if _format(p) == "parquet")[0]
        reader, names = file_reader(reader, recipe, spark.read.parquet(str(first)).schema)
    else:
        reader, names = file_reader(reader, recipe)
    raw = reader.load(recipe["dir"])
    corrupt = F.col("_corrupt") if fmt != "parquet" else F.lit(None).cast("string")
    raw = raw.select(
        *[F.col(f"`{c}`").alias(f"v{j}") for j, c in enumerate(names)],
        corrupt.alias("_corrupt"),
        F.col("_metadata.file_path").alias("_f"),
        F.col("_metadata.file_block_start").alias("_o"),
    )
    body = functools.partial(scan_batches, stream=index, layout=layout, names=tuple(names), ts_column=ts_column)
    return raw.mapInArrow(chained(body, then), WIRE_DDL)


def control_frame(spark, control_dir: str, layout: Layout, then=None):
    """End-of-input markers written by the runner, as wire rows of kind EOF; one marker file per
    micro-batch (:func:`slidewise.spark.dataframe.end_after` writes placeholders, ``eof`` 0, before one)."""
    raw = spark.readStream.format("json").schema("eof bigint").option("maxFilesPerTrigger", 1).load(control_dir).filter("eof = 1")
    return raw.mapInArrow(chained(functools.partial(control_batches, layout=layout), then), WIRE_DDL)


# --------------------------------------------------------------------------- executor side


def convert_table(table: pa.Table, info: StreamInfo, ts_column: str):
    """slidewise's conversion of raw rows: ``(ts, cols, bad, reasons, raws)``, one entry per row.

    Runs :func:`open_source` on the rows with the stream's column kinds and
    timestamp unit (so values, units and reasons are the local engine's). A
    valid padding row is appended first so that a batch whose timestamps are
    all bad still yields per-row reasons instead of a source error.
    """
    n = table.num_rows
    full = pa.concat_tables([table, _padding_row(table.schema, ts_column, info.unit)])
    src = open_source(info.source, full, ts_column=ts_column, ts_unit=info.unit, chunk_rows=n + 1)
    src.kinds = dict(info.kinds)
    rej = Rejects()
    ts = np.zeros(n, np.int64)
    cols = {a: np.full(n, "", dtype=object) if k == "str" else np.zeros(n, _ARROW_OF[k].to_pandas_dtype()) for a, k in info.kinds.items()}
    for chunk in src.chunks(rej):
        idx = chunk.lines - 1
        keep = idx < n
        ts[idx[keep]] = chunk.ts[keep]
        for a in cols:
            cols[a][idx[keep]] = chunk.cols[a][keep]
    bad = np.zeros(n, bool)
    reasons = np.full(n, None, dtype=object)
    raws = np.full(n, None, dtype=object)
    if rej.total:
        t = rej.table()
        idx = t.column("line").to_numpy() - 1
        keep = idx < n
        idx = idx[keep]
        bad[idx] = True
        reasons[idx] = np.asarray(t.column("reason").to_pylist(), dtype=object)[keep]
        raws[idx] = np.asarray(t.column("row").to_pylist(), dtype=object)[keep]
    return ts, cols, bad, reasons, raws


def _padding_row(schema: pa.Schema, ts_column: str, unit: str) -> pa.Table:
    cols = {}
    for f in schema:
        if f.name != ts_column:
            cols[f.name] = pa.nulls(1, f.type)
        elif pa.types.is_string(f.type) or pa.types.is_large_string(f.type):
            cols[f.name] = pa.array(["1970-01-01T00:00:00" if unit == "iso" else "0"], f.type)
        elif pa.types.is_date(f.type):
            cols[f.name] = pa.array([0], pa.int32()).cast(pa.date32()).cast(f.type)
        else:
            cols[f.name] = pa.array([0], pa.int64()).cast(f.type)
    return pa.table(cols, schema=schema)


def scan_batches(batches, *, stream: int, layout: Layout, names: tuple[str, ...], ts_column: str):
    """``mapInArrow`` body for file sources: ordinals within file splits, conversion, rejects, packing."""
    info = layout.streams[stream]
    counters: dict[tuple[str, int], int] = {}
    for b in batches:
        if b.num_rows:
            yield wire_batch(scan_rows(b, stream, info, names, ts_column, counters))


def scan_rows(b, stream: int, info: StreamInfo, names: tuple[str, ...], ts_column: str, counters: dict) -> list[dict]:
    """The wire rows of one raw batch of stream ``stream`` (``counters``: the ordinals so far per file split)."""
    files = b.column("_f").to_numpy(zero_copy_only=False)
    offsets = b.column("_o").to_numpy(zero_copy_only=False).astype(np.int64)
    ordinal = split_ordinals(files, offsets, counters)
    ts, cols, bad, reasons, raws = convert_raw(b, names, info, ts_column)
    lines = ordinal + 1 + np.where(offsets == 0, info.header_lines, 0)
    return wire_chunks(stream, bad, ts, cols, ordinal, files, offsets, lines, reasons, raws)


def convert_raw(b, names: tuple[str, ...], info: StreamInfo, ts_column: str, known: list[str | None] | None = None):
    """One raw record batch (columns ``v0..``, ``_corrupt``) converted: ``convert_table`` plus the
    rows the reader could not parse, marked bad with the reason and their text. ``known``: per row,
    the reason of a corrupt row when its decoder gave one (Avro), else it is the local reader's for the text.
    Columns Spark parsed (CSV ``longs``): a batch with a row Spark could not parse or with a missing
    value there is converted from its text instead (:func:`_as_text`), so the verdict is the local reader's."""
    table = pa.table({c: b.column(f"v{j}") for j, c in enumerate(names)})
    corrupt = b.column("_corrupt")
    broken = corrupt.is_valid().to_numpy(zero_copy_only=False)
    if info.fmt == "csv" and any(not pa.types.is_string(t) for t in table.schema.types):
        table, broken = _as_text(table, corrupt, broken)
    ts, cols, bad, reasons, raws = convert_table(table, info, ts_column)
    if broken.any():
        texts = np.asarray(corrupt.to_pylist(), dtype=object)
        idx = np.flatnonzero(broken)
        reasons[idx] = [(known[j] if known is not None else None) or _malformed(texts[j], len(names), info.fmt) for j in idx]
        raws[idx] = [(texts[j] or "").rstrip("\r\n") for j in idx]
        bad = bad | broken
    return ts, cols, bad, reasons, raws


def _as_text(table: pa.Table, corrupt, broken: np.ndarray) -> tuple[pa.Table, np.ndarray]:
    """A CSV batch with natively parsed columns as the text columns the local reader judges, and
    the rows still broken (a wrong field count), when a row needs it: one Spark marked corrupt
    (a value it could not parse: its fields are read from its text) or a null in a parsed column
    (an empty field). Else ``table`` unchanged (the fast path: nothing to judge)."""
    typed = [c for c, t in zip(table.column_names, table.schema.types) if not pa.types.is_string(t)]
    missing = functools.reduce(np.logical_or, (table.column(c).is_null().to_numpy(zero_copy_only=False) for c in typed))
    if not (broken.any() or missing.any()):
        return table, broken
    cols = {c: table.column(c).cast(pa.string()).to_pylist() for c in table.column_names}
    still = broken.copy()
    for j in np.flatnonzero(broken).tolist():
        fields = next(csv.reader([(corrupt[j].as_py() or "").rstrip("\r\n")]), [])
        if len(fields) == len(cols):
            still[j] = False
            for c, v in zip(cols, fields):
                cols[c][j] = v
    return pa.table({c: pa.array(v, pa.string()) for c, v in cols.items()}), still


def wire_chunks(stream: int, bad, ts, cols, q, files, offsets, lines, reasons, raws, *, shown=None) -> list[dict]:
    """Wire rows: one chunk of the good tuples, one of the rejects (if any); ``shown``: the rejects'
    file names (default ``files``)."""
    rows = []
    ok = ~bad
    if ok.any():
        names, fi = factorize_runs(files[ok])
        rows.append(
            {
                "k": TUPLE,
                "s": stream,
                "q": int(ok.sum()),
                "p": pack({"t": ts[ok], "q": q[ok], "o": offsets[ok], "fi": fi, "files": names, **{a: v[ok] for a, v in cols.items()}}),
            }
        )
    if bad.any():
        rows.append(
            {
                "k": REJECT,
                "s": stream,
                "q": int(bad.sum()),
                "p": pack(
                    {
                        "file": (files if shown is None else shown)[bad].astype(object),
                        "line": lines[bad].astype(np.int64),
                        "reason": reasons[bad].astype(object),
                        "raw": raws[bad].astype(object),
                    }
                ),
            }
        )
    return rows


def factorize_runs(values: np.ndarray) -> tuple[list[str], np.ndarray]:
    """``(sorted distinct values as str, index of each value)`` of a column made of long runs of
    one value (a file name per row): only the runs' first values are sorted."""
    n = len(values)
    if n == 0:
        return [], np.zeros(0, np.int32)
    change = np.ones(n, bool)
    change[1:] = values[1:] != values[:-1]
    heads = np.flatnonzero(change)
    names, inverse = np.unique(values[heads].astype(str), return_inverse=True)
    return names.tolist(), np.repeat(inverse.astype(np.int32), np.diff(np.append(heads, n)))


def split_ordinals(files: np.ndarray, offsets: np.ndarray, counters: dict) -> np.ndarray:
    """Row ordinal within its (file, split) across the batches of one partition (scan order)."""
    n = len(files)
    change = np.ones(n, bool)
    change[1:] = (files[1:] != files[:-1]) | (offsets[1:] != offsets[:-1])
    starts = np.flatnonzero(change)
    ends = np.append(starts[1:], n)
    out = np.empty(n, np.int64)
    for s, e in zip(starts, ends):
        key = (files[s], int(offsets[s]))
        base = counters.get(key, 0)
        out[s:e] = base + np.arange(e - s)
        counters[key] = base + (e - s)
    return out


def _malformed(text: str | None, expected: int, fmt: str) -> str:
    """The local engine's reason for a row Spark found corrupt."""
    text = (text or "").rstrip("\r\n")
    if fmt == "csv":
        return f"malformed row: expected {expected} fields, found {len(next(csv.reader([text]), []))}"
    import json

    try:
        obj = json.loads(text)
    except ValueError as e:
        return f"malformed JSON line: {getattr(e, 'msg', e)} at column {getattr(e, 'colno', '?')}"
    return "malformed JSON line: not an object" if not isinstance(obj, dict) else "malformed JSON line"


def rate_batches(batches, *, stream: int, layout: Layout, distinct: int):
    """``mapInArrow`` body for the rate source."""
    for b in batches:
        n = b.num_rows
        if n == 0:
            continue
        value = b.column("value").to_numpy(zero_copy_only=False).astype(np.int64)
        micros = b.column("timestamp").cast(pa.int64()).to_numpy(zero_copy_only=False)
        cols = {"a": value % distinct, "x": value % 100}
        files = np.full(n, "rate", dtype=object)
        zero = np.zeros(n, np.int64)
        none = np.full(n, None, object)
        yield wire_batch(wire_chunks(stream, np.zeros(n, bool), np.floor_divide(micros, 1000), cols, value, files, zero, zero, none, none))


def control_batches(batches, *, layout: Layout):
    """``mapInArrow`` body for the control source: one EOF row per marker."""
    for b in batches:
        if b.num_rows:
            yield wire_batch([{"k": EOF} for _ in range(b.num_rows)])


def file_path(uri: str) -> str:
    """A local path for a ``file:`` URI (other URIs unchanged)."""
    if uri.startswith("file:"):
        return urllib.parse.unquote(urllib.parse.urlparse(uri).path)
    return uri
