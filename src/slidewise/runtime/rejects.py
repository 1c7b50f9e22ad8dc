"""Rejected input rows: which stream and file, which line, why, and the row itself.

Sources reject malformed rows and unparseable values; the merger rejects
tuples later than the declared lateness (docs/semantics.md). Nothing is dropped
silently: every reject is counted per reason kind (``summary()``) and can be
written as CSV with the columns ``stream,file,line,reason,row``.

>>> r = Rejects()
>>> r.add("S1", "s1.csv", 4, "non-numeric timestamp 'abc'", "abc,1")
>>> r.add_many("S1", "s1.csv", [7, 9], "late by 5 ms (lateness 0)", ["3,1", "2,1"], kind="late")
>>> r.total, r.summary()
(3, {'non-numeric timestamp': 1, 'late': 2})
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa

from slidewise.errors import OptionError
from slidewise.runtime.outputs import write_atomic
from slidewise.runtime.sinks import csv_bytes

#: Columns of a rejects file, in order.
REJECT_COLUMNS = ("stream", "file", "line", "reason", "row")

_KIND = re.compile(r"^[^'\"0-9:(]*")


def reason_kind(reason: str) -> str:
    """The fixed part of a reason, used for counting: text before the first quote, digit or colon.

    >>> reason_kind("malformed row: expected 12 fields, found 9")
    'malformed row'
    >>> reason_kind("non-numeric timestamp 'abc'")
    'non-numeric timestamp'
    """
    kind = _KIND.match(reason).group(0).strip()
    return kind or reason


class Rejects:
    """Collects rejected rows from sources and the merger, columnar.

    Rows are kept in memory as Arrow tables (one per ``add_many`` call) until
    :meth:`write`; the counts are exact at all times.
    """

    def __init__(self) -> None:
        self._parts: list[pa.Table] = []
        self._by_kind: Counter = Counter()
        self._by_stream: Counter = Counter()
        self.total = 0

    def __len__(self) -> int:
        return self.total

    def add(self, stream: str | int, file: str, line: int, reason: str, raw: str = "", *, kind: str | None = None) -> None:
        """Record one rejected row."""
        self.add_many(stream, file, [line], reason, [raw], kind=kind)

    def add_many(self, stream: str | int, file: str, lines, reasons, raws=None, *, kind: str | None = None) -> None:
        """Record rejected rows of one stream and file.

        ``lines``: 1-based line numbers (array-like); ``reasons``: one string
        for all rows or one per row; ``raws``: the rows' text (array-like of
        str) or ``None``; ``kind``: the counting key (default: derived from
        each reason with :func:`reason_kind`).
        """
        lines = np.asarray(lines, dtype=np.int64).reshape(-1)
        n = len(lines)
        if n == 0:
            return
        if isinstance(reasons, str):
            reason_arr = pa.array(np.full(n, reasons, dtype=object), pa.string())
            kinds = Counter({kind or reason_kind(reasons): n})
        else:
            reason_arr = reasons if isinstance(reasons, pa.Array) else pa.array(list(reasons), pa.string())
            if len(reason_arr) != n:
                raise ValueError(f"{len(reason_arr)} reasons for {n} rejected rows")
            if kind is not None:
                kinds = Counter({kind: n})
            else:
                counts = reason_arr.value_counts().to_pylist()
                kinds = Counter()
                for item in counts:  # one entry per distinct reason, not per row
                    kinds[reason_kind(item["values"] or "")] += item["counts"]
        if raws is None:
            raw_arr = pa.nulls(n, pa.string())
        else:
            raw_arr = raws if isinstance(raws, pa.Array) else pa.array(list(raws), pa.string())
            if len(raw_arr) != n:
                raise ValueError(f"{len(raw_arr)} raw rows for {n} rejected rows")
        stream_name = str(stream)
        self._parts.append(
            pa.table(
                {
                    "stream": pa.array(np.full(n, stream_name, dtype=object), pa.string()),
                    "file": pa.array(np.full(n, str(file), dtype=object), pa.string()),
                    "line": pa.array(lines, pa.int64()),
                    "reason": reason_arr.cast(pa.string()),
                    "row": raw_arr.cast(pa.string()),
                }
            )
        )
        self._by_kind.update(kinds)
        self._by_stream[stream_name] += n
        self.total += n

    def summary(self) -> dict[str, int]:
        """Counts per reason kind, e.g. ``{"late": 12, "malformed row": 1}``."""
        return dict(self._by_kind)

    def by_stream(self) -> dict[str, int]:
        """Counts per stream."""
        return dict(self._by_stream)

    def table(self) -> pa.Table:
        """All rejects as one Arrow table with :data:`REJECT_COLUMNS`."""
        if not self._parts:
            return pa.table(
                {
                    "stream": pa.array([], pa.string()),
                    "file": pa.array([], pa.string()),
                    "line": pa.array([], pa.int64()),
                    "reason": pa.array([], pa.string()),
                    "row": pa.array([], pa.string()),
                }
            )
        if len(self._parts) > 1:
            self._parts = [pa.concat_tables(self._parts)]
        return self._parts[0]

    def to_frame(self):
        """All rejects as a pandas DataFrame."""
        return self.table().to_pandas()

    def write(self, path: str | Path) -> int:
        """Write all rejects as CSV (``stream,file,line,reason,row``), whole or not at all; the row count."""
        try:
            data = csv_bytes(self.table())
        except pa.ArrowException as e:
            raise OptionError(f"cannot write rejects file: {e}", location=str(path), hint="choose a writable path for --rejects") from None
        write_atomic(path, data, "--rejects")
        return self.total


def rows_as_text(cols: dict[str, np.ndarray]) -> pa.Array:
    """Each row of ``cols`` as one CSV line (no header), for the ``row`` column of rejects."""
    names = list(cols)
    n = len(next(iter(cols.values()))) if cols else 0
    if n == 0 or not names:
        return pa.array([""] * n, pa.string())
    try:
        table = pa.table({k: pa.array(v, from_pandas=True) for k, v in cols.items()})
        text = csv_bytes(table, header=False).decode("utf-8", "replace")
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if len(lines) == n:
            return pa.array(lines, pa.string())
    except (pa.ArrowException, TypeError, ValueError):
        pass
    # values with embedded newlines or mixed Python objects: slow but exact
    columns = [np.asarray(cols[k]).tolist() for k in names]
    return pa.array([",".join("" if v is None else str(v) for v in row) for row in zip(*columns)], pa.string())
