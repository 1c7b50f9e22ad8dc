"""Row layouts shared by the stages of the Spark pipeline (driver and workers).

Tuples travel *packed*: a row of the wire layout carries a whole chunk of
tuples of one stream as a payload of numpy arrays (:func:`pack`). PySpark's
``transformWithStateInPandas`` turns every input row into a Python tuple on
its way in (tens of µs per row), so the stateful stages get a few chunk rows
per stream and micro-batch instead of one row per tuple; the columnar join
then works on the arrays directly. Wire columns:

====  =========  ============================================================
k     tinyint    0 tuples chunk, 1 rejects chunk, 2 frontier marker, 3 end of input,
                 4 segments, 5 routed tuples chunk (:mod:`slidewise.spark.route`)
b     int        key bucket (set by the sequencer or the router)
s     tinyint    stream index in FROM
q     bigint     chunk: number of rows; marker: tuples admitted (bucket 0 only)
t     bigint     marker: the stream's largest timestamp so far
p     binary     chunk payload (:func:`pack`)
====  =========  ============================================================

Payloads: scanned tuples ``{t, q (row ordinal in its file split), o (split
offset), fi (index into files), files, <attr>...}``; sequenced tuples ``{t, q
(the stream's sequence number), <attr>...}``; rejects ``{file, line, reason,
raw}``.

The join's output layout has ``k`` (0 result, 1 reject, 2 bucket stats, 3
admitted count of a stream), the result columns ``r0 ..`` in output order
(names in :attr:`Layout.out_names`), reject columns ``rs rf rl rr rw rk``
(stream, file, line, reason, row, reason kind) and counters ``n0 .. n4``
(stats rows: bucket in ``rl``; state tuples, state bytes, comparisons,
retractions, results of the call). Results leave Python column-wise, so they
need no packing.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from slidewise.model.batch import ResultBatch
from slidewise.operators.project import output_columns, output_names
from slidewise.plan.query import JoinQuery

KIND_DDL = {"int": "bigint", "float": "double", "bool": "boolean", "str": "string", "tinyint": "tinyint"}
KIND_NUMPY = {"int": np.int64, "float": np.float64, "bool": np.bool_, "str": object}
TUPLE, REJECT, MARKER, EOF = 0, 1, 2, 3
SEGMENT, ROUTED = 4, 5  # the one-stage join's rows (:mod:`slidewise.spark.route`)
RESULT, STATS, ADMITTED = 0, 2, 3
WIRE = (("k", "tinyint"), ("b", "int"), ("s", "tinyint"), ("q", "bigint"), ("t", "bigint"), ("p", "binary"))
WIRE_DDL = ", ".join(f"{n} {t}" for n, t in WIRE)
OUT_TAIL = (
    ("rs", "string"),
    ("rf", "string"),
    ("rl", "bigint"),
    ("rr", "string"),
    ("rw", "string"),
    ("rk", "string"),
    ("n0", "bigint"),
    ("n1", "bigint"),
    ("n2", "bigint"),
    ("n3", "bigint"),
    ("n4", "bigint"),
)
_ARROW = {"tinyint": pa.int8(), "int": pa.int32(), "bigint": pa.int64(), "string": pa.string(), "double": pa.float64(), "boolean": pa.bool_(), "binary": pa.binary()}
WIRE_ARROW = pa.schema([(n, _ARROW[t]) for n, t in WIRE])


def pack(arrays: dict) -> bytes:
    """A chunk payload: a dict of numpy arrays (and small lists) as bytes."""
    return pickle.dumps(arrays, protocol=pickle.HIGHEST_PROTOCOL)


def unpack(payload) -> dict:
    return pickle.loads(bytes(payload))


def concat(chunks: list[dict]) -> dict:
    """One chunk from several with the same keys (``files`` indices remapped)."""
    if len(chunks) == 1:
        return chunks[0]
    out = {}
    if "files" in chunks[0]:
        files = sorted({f for c in chunks for f in c["files"]})
        rank = {f: i for i, f in enumerate(files)}
        out["files"] = files
        out["fi"] = np.concatenate([np.asarray([rank[f] for f in c["files"]], np.int32)[c["fi"]] if len(c["fi"]) else c["fi"] for c in chunks])
    for key in chunks[0]:
        if key not in ("files", "fi"):
            out[key] = np.concatenate([c[key] for c in chunks])
    return out


def take(chunk: dict, idx) -> dict:
    return {k: (v if k == "files" else v[idx]) for k, v in chunk.items()}


def wire_frame(rows: list[dict]) -> pd.DataFrame:
    """Wire-layout rows (dicts with any of ``k b s q t p``; absent numbers 0, absent payload null)."""
    data = {n: [r.get(n, None if n == "p" else 0) for r in rows] for n, _ in WIRE}
    frame = pd.DataFrame(data)
    for n, t in WIRE:
        if t != "binary":
            frame[n] = frame[n].astype({"tinyint": np.int8, "int": np.int32, "bigint": np.int64}[t])
    return frame


def wire_batch(rows: list[dict]) -> pa.RecordBatch:
    """Wire-layout rows as an Arrow batch (for ``mapInArrow``; built without pandas: a few rows
    per call, where a DataFrame's fixed cost would dominate)."""
    arrays = [pa.array([r.get(n, None if t == "binary" else 0) for r in rows], _ARROW[t]) for n, t in WIRE]
    return pa.RecordBatch.from_arrays(arrays, schema=WIRE_ARROW)


@dataclass(frozen=True)
class StreamInfo:
    """One FROM stream as the pipeline sees it: names, column kinds, timestamps, input format."""

    alias: str
    source: str
    kinds: dict[str, str]  # attribute -> int | float | bool | str (ts excluded), file order
    unit: str = "raw"  # resolved timestamp unit of the source
    lateness: int = 0
    fmt: str = "csv"  # csv | json | parquet | rate
    header_lines: int = 0  # lines before the first record (CSV header)
    dirs: tuple[str, str] = ("", "")  # input directory: absolute, and as the user wrote it
    idle: float | None = None  # idle timeout, seconds of processing time (slidewise.spark.idle)

    @property
    def label(self) -> str:
        """Unit label for reject reasons: '' for raw numbers, else 'ms'."""
        return "" if self.unit == "raw" else "ms"

    def display(self, uri: str) -> str:
        """A file URI from Spark as the user named it (relative paths stay relative)."""
        from slidewise.spark.ingest import file_path

        path = file_path(uri) if isinstance(uri, str) else ""
        absolute, given = self.dirs
        if absolute and path.startswith(absolute + "/"):
            return str(Path(given) / path[len(absolute) + 1 :])
        return path


@dataclass(frozen=True)
class Layout:
    """The streams' schemas and the output layout of the join."""

    streams: tuple[StreamInfo, ...]
    out_names: tuple[str, ...] = ()
    out_kinds: tuple[str, ...] = ()

    @classmethod
    def build(cls, query: JoinQuery, streams: list[StreamInfo]) -> Layout:
        names, kinds = result_kinds(query, [s.kinds for s in streams])
        return cls(tuple(streams), tuple(names), tuple(kinds))

    def out_fields(self) -> list[tuple[str, str]]:
        return [("k", "tinyint")] + [(f"r{j}", KIND_DDL[k]) for j, k in enumerate(self.out_kinds)] + list(OUT_TAIL)

    def out_ddl(self) -> str:
        return ", ".join(f"{n} {t}" for n, t in self.out_fields())


def result_kinds(query: JoinQuery, kinds: list[dict[str, str]]) -> tuple[list[str], list[str]]:
    """Output column names and kinds, found by projecting one made-up result row."""
    names = output_names(query, [list(k) for k in kinds])
    sample = {"int": np.array([1], np.int64), "float": np.array([1.5]), "bool": np.array([True]), "str": np.array(["x"], dtype=object)}
    cols = {}
    for ref, k in zip(query.streams, kinds):
        cols[f"{ref.alias}.ts"] = np.array([1], np.int64)
        for a, kind in k.items():
            cols[f"{ref.alias}.{a}"] = sample[kind]
    res = ResultBatch(np.zeros((1, query.n), np.int64), np.array([1], np.int64), np.array([2], np.int64), np.ones(1, np.int8), cols)
    with np.errstate(all="ignore"):
        values = output_columns(query, res)
    out = []
    for n in names:
        dt = np.asarray(values[n]).dtype
        out.append("tinyint" if n == "sign" else "bool" if dt.kind == "b" else "int" if dt.kind in "iu" else "float" if dt.kind == "f" else "str")
    return names, out
