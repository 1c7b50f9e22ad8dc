"""Row layouts shared by the stages of the Spark pipeline (driver and workers).

All streams travel in one *wide* row layout so they can be unioned and
shuffled together; the attribute ``j`` of stream ``i`` is column ``c{i}_{j}``
(null in other streams' rows). Columns:

====  =========  ============================================================
k     tinyint    row kind: 0 tuple, 1 reject, 2 frontier marker, 3 end of input
b     int        key bucket (set by the sequencer)
s     tinyint    stream index in FROM
q     bigint     before the sequencer: row ordinal within its file split;
                 after: the stream's input sequence number (markers: admitted count)
t     bigint     event time, int64 as the local engine converts it
f     string     file (URI) of the row
o     bigint     byte offset of the file split (rejects: line number)
rr    string     reject reason
rw    string     rejected row's text
====  =========  ============================================================

The join operator's output layout has ``k`` (0 result, 1 reject, 2 bucket
stats, 3 admitted count of a stream), the result columns ``r0 ..`` in output
order (names in :attr:`Layout.out_names`), reject columns ``rs rf rl rr rw rk``
(stream, file, line, reason, row, reason kind) and counters ``n0 .. n4`` (stats
rows: bucket in ``rl``; state tuples, state bytes, comparisons, retractions,
results of the call).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from slidewise.model.batch import ResultBatch
from slidewise.operators.project import output_columns, output_names
from slidewise.plan.query import JoinQuery

KIND_DDL = {"int": "bigint", "float": "double", "bool": "boolean", "str": "string",
            "tinyint": "tinyint"}
KIND_ARROW = {"int": pa.int64(), "float": pa.float64(), "bool": pa.bool_(), "str": pa.string(),
              "tinyint": pa.int8()}
TUPLE, REJECT, MARKER, EOF = 0, 1, 2, 3
RESULT, STATS, ADMITTED = 0, 2, 3
WIDE_META = (("k", "tinyint"), ("b", "int"), ("s", "tinyint"), ("q", "bigint"), ("t", "bigint"),
             ("f", "string"), ("o", "bigint"), ("rr", "string"), ("rw", "string"))
OUT_TAIL = (("rs", "string"), ("rf", "string"), ("rl", "bigint"), ("rr", "string"), ("rw", "string"),
            ("rk", "string"), ("n0", "bigint"), ("n1", "bigint"), ("n2", "bigint"), ("n3", "bigint"),
            ("n4", "bigint"))
_META_ARROW = {"tinyint": pa.int8(), "int": pa.int32(), "bigint": pa.int64(), "string": pa.string(),
               "double": pa.float64(), "boolean": pa.bool_()}


@dataclass(frozen=True)
class StreamInfo:
    """One FROM stream as the pipeline sees it: names, column kinds, timestamps, input format."""

    alias: str
    source: str
    kinds: dict[str, str]          # attribute -> int | float | bool | str (ts excluded), file order
    unit: str = "raw"              # resolved timestamp unit of the source
    lateness: int = 0
    fmt: str = "csv"               # csv | json | parquet | rate
    header_lines: int = 0          # lines before the first record (CSV header)
    dirs: tuple[str, str] = ("", "")  # input directory: absolute, and as the user wrote it

    def display(self, uri: str) -> str:
        """A file URI from Spark as the user named it (relative paths stay relative)."""
        from slidewise.spark.ingest import file_path

        path = file_path(uri) if isinstance(uri, str) else ""
        absolute, given = self.dirs
        if absolute and path.startswith(absolute + "/"):
            return str(Path(given) / path[len(absolute) + 1:])
        return path

    @property
    def label(self) -> str:
        """Unit label for reject reasons: '' for raw numbers, else 'ms'."""
        return "" if self.unit == "raw" else "ms"


@dataclass(frozen=True)
class Layout:
    """The wide input layout of all streams and the output layout of the join."""

    streams: tuple[StreamInfo, ...]
    out_names: tuple[str, ...] = ()
    out_kinds: tuple[str, ...] = ()

    @classmethod
    def build(cls, query: JoinQuery, streams: list[StreamInfo]) -> Layout:
        names, kinds = result_kinds(query, [s.kinds for s in streams])
        return cls(tuple(streams), tuple(names), tuple(kinds))

    def col(self, stream: int, attr: str) -> str:
        """Wide column of ``attr`` of ``stream``."""
        return f"c{stream}_{list(self.streams[stream].kinds).index(attr)}"

    def attr_columns(self, stream: int) -> list[tuple[str, str, str]]:
        """``(wide column, attribute, kind)`` of every attribute of ``stream``."""
        return [(f"c{stream}_{j}", a, k) for j, (a, k) in enumerate(self.streams[stream].kinds.items())]

    def wide_fields(self) -> list[tuple[str, str]]:
        out = list(WIDE_META)
        for i in range(len(self.streams)):
            out += [(c, KIND_DDL[k]) for c, _, k in self.attr_columns(i)]
        return out

    def wide_ddl(self) -> str:
        return ", ".join(f"{n} {t}" for n, t in self.wide_fields())

    def wide_arrow(self) -> pa.Schema:
        return pa.schema([(n, _META_ARROW[t]) for n, t in self.wide_fields()])

    def out_fields(self) -> list[tuple[str, str]]:
        return [("k", "tinyint")] + [(f"r{j}", KIND_DDL[k]) for j, k in enumerate(self.out_kinds)] + list(OUT_TAIL)

    def out_ddl(self) -> str:
        return ", ".join(f"{n} {t}" for n, t in self.out_fields())

    def out_arrow(self) -> pa.Schema:
        return pa.schema([(n, _META_ARROW[t]) for n, t in self.out_fields()])


def result_kinds(query: JoinQuery, kinds: list[dict[str, str]]) -> tuple[list[str], list[str]]:
    """Output column names and kinds, found by projecting one made-up result row."""
    names = output_names(query, [list(k) for k in kinds])
    sample = {"int": np.array([1], np.int64), "float": np.array([1.5]), "bool": np.array([True]),
              "str": np.array(["x"], dtype=object)}
    cols = {}
    for ref, k in zip(query.streams, kinds):
        cols[f"{ref.alias}.ts"] = np.array([1], np.int64)
        for a, kind in k.items():
            cols[f"{ref.alias}.{a}"] = sample[kind]
    res = ResultBatch(np.zeros((1, query.n), np.int64), np.array([1], np.int64), np.array([2], np.int64),
                      np.ones(1, np.int8), cols)
    with np.errstate(all="ignore"):
        values = output_columns(query, res)
    out = []
    for n in names:
        dt = np.asarray(values[n]).dtype
        out.append("tinyint" if n == "sign" else "bool" if dt.kind == "b" else "int" if dt.kind in "iu"
                   else "float" if dt.kind == "f" else "str")
    return names, out
