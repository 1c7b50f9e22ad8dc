"""In-memory sources: a pandas DataFrame, an Arrow table, a dict of columns, an iterable of dicts.

"Lines" are 1-based row numbers; the file name is ``<DataFrame>``, ``<Table>``,
``<dict>`` or ``<records>``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pandas as pd
import pyarrow as pa

from slidewise.errors import SourceError
from slidewise.runtime.sources.base import _Block, _Info, _table_block
from slidewise.runtime.sources.schema import _info_from_table


def _frame_table(df: pd.DataFrame) -> pa.Table:
    cols = {}
    for c in df.columns:
        values = df[c]
        try:
            cols[str(c)] = pa.array(values, from_pandas=True)
        except (pa.ArrowException, TypeError, ValueError):
            cols[str(c)] = pa.array([None if v is None or (isinstance(v, float) and v != v) else str(v) for v in values.tolist()], pa.string())
    return pa.table(cols) if cols else pa.table({})


class _MemoryReader:
    def __init__(self, file: str, table: pa.Table):
        self.file, self.table = file, table

    def inspect(self, ts_column: str) -> _Info:
        return _info_from_table(self.table, ts_column)

    def blocks(self, kinds, ts_column, rejects, stream, chunk_rows) -> Iterator[_Block]:
        n = self.table.num_rows
        for start in range(0, n, chunk_rows):
            yield _table_block(self.table.slice(start, chunk_rows), start)


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
            raise SourceError(f"records must be dicts, got {type(bad).__name__}", location=self.file, hint="pass an iterable of {column: value} dicts")
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
            if table.num_rows != len(rows):  # only empty records: keep the rows so they are rejected
                table = pa.table({ts_column: pa.nulls(len(rows))})
            for c in [ts_column, *kinds]:
                if c not in table.column_names:
                    table = table.append_column(c, pa.nulls(table.num_rows))
            yield _table_block(table, start)
            start += len(rows)
