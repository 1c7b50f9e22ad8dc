"""Parquet files: read in batches of ``chunk_rows``; "lines" are 1-based row numbers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from slidewise.errors import SourceError
from slidewise.runtime.sources.base import _Block, _Info, _one_line, _table_block
from slidewise.runtime.sources.schema import _arrow_kind


def _parquet_error(e: BaseException, location: str) -> SourceError:
    return SourceError(f"cannot read Parquet file: {_one_line(e)}", location=location, hint="check that the file is a complete Parquet file")


class _ParquetReader:
    def __init__(self, path: Path):
        self.path, self.file = path, str(path)

    def _open(self) -> pq.ParquetFile:
        try:
            # pre_buffer=False: read row groups as they are consumed, so memory
            # does not grow with the file (pre-buffering holds every column chunk)
            return pq.ParquetFile(str(self.path), pre_buffer=False)
        except (OSError, pa.ArrowException) as e:
            raise _parquet_error(e, self.file) from None

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
                block = _table_block(table, row)
                row += table.num_rows
                yield block
        except (OSError, pa.ArrowException) as e:
            raise _parquet_error(e, f"{self.file} (row {row + 1})") from None
