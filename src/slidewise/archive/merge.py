"""Bounded-memory building blocks of archive updates: sorted runs merged and written batch by batch.

An update of a sub-index merges its sorted files with its new rows. Holding
whole files would make an update's memory grow with the archive; here every
input is an iterator of sorted tables of at most a few thousand rows (one
Parquet row group or a slice of the new rows), :func:`merge` holds one table
per input, and :func:`write` appends row groups to the new file as they come.
So an update's working set is a few batches per input, whatever the sizes of
the sub-indices; :func:`batch_rows` sizes the batches to a memory budget.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

#: the working set of an update or probe in batches of ``batch_rows`` (one per merged input, the merged
#: batch, its sort and the row group being written, Parquet's decoded and encoded pages)
SHARES = 16
#: the fewest rows a batch or row group is cut to, however small the budget
MIN_ROWS = 64


def batch_rows(budget: int, row_bytes: float, cap: int) -> int:
    """Rows per batch and row group so that :data:`SHARES` batches of ``row_bytes`` rows fit ``budget`` bytes (at most ``cap``)."""
    return min(int(cap), max(MIN_ROWS, int(budget // (SHARES * max(row_bytes, 1.0)))))


def slices(table: pa.Table, rows: int) -> Iterator[pa.Table]:
    """``table`` in zero-copy slices of at most ``rows`` rows."""
    for start in range(0, table.num_rows, rows):
        yield table.slice(start, rows)


def read(path: Path, rows: int, keep: Callable[[pa.Table], pa.Table] | None = None) -> Iterator[pa.Table]:
    """The Parquet file at ``path`` in batches of at most ``rows`` rows, read without read-ahead or threads."""
    pf = pq.ParquetFile(path, pre_buffer=False, buffer_size=1 << 16)
    try:
        for batch in pf.iter_batches(batch_size=rows, use_threads=False):
            table = pa.Table.from_batches([batch])
            if keep is not None:
                table = keep(table)
            if table.num_rows:
                yield table
    finally:
        pf.close()


def merge(runs: Iterable[Iterator[pa.Table]], key: str, exp: str) -> Iterator[pa.Table]:
    """Runs each sorted by (key, exp) merged into one sorted stream, holding one table per run.

    Each round takes the smallest last row of the runs' current tables (the
    frontier): every row at or before it, in any run, can be emitted, and the
    run it came from is used up, so each round consumes a whole table.
    Null keys sort last, as Arrow's ``sort_by`` puts them.
    """

    def order(table: pa.Table, i: int) -> tuple:
        k = table.column(key)[i].as_py()
        return (1, 0, table.column(exp)[i].as_py()) if k is None else (0, k, table.column(exp)[i].as_py())

    def upto(table: pa.Table, bound: tuple) -> int:  # rows at or before ``bound`` (a prefix: the table is sorted)
        lo, hi = 0, table.num_rows
        while lo < hi:
            mid = (lo + hi) // 2
            if order(table, mid) <= bound:
                lo = mid + 1
            else:
                hi = mid
        return lo

    iters = [iter(r) for r in runs]
    heads = {i: t for i, it in enumerate(iters) if (t := next(it, None)) is not None}
    while heads:
        if len(heads) == 1:
            ((i, table),) = heads.items()
            yield table
            yield from iters[i]
            return
        lasts = {i: order(t, t.num_rows - 1) for i, t in heads.items()}
        first = min(lasts, key=lambda i: lasts[i])
        parts = []
        for i in list(heads):
            table = heads[i]
            cut = table.num_rows if i == first else upto(table, lasts[first])
            if cut:
                parts.append(table.slice(0, cut))
            if cut < table.num_rows:
                heads[i] = table.slice(cut)
            elif (nxt := next(iters[i], None)) is not None:
                heads[i] = nxt
            else:
                del heads[i]
        yield pa.concat_tables(parts).sort_by([(key, "ascending"), (exp, "ascending")])


def write(path: Path, schema: pa.Schema, tables: Iterable[pa.Table], rows: int) -> int:
    """``tables`` into a new Parquet file at ``path`` in row groups of ``rows`` rows, fsynced; the rows written.

    A file that would have no rows is not left behind (0 is returned).
    """
    written, pending, held = 0, [], 0
    with pq.ParquetWriter(str(path), schema) as writer:
        for table in tables:
            pending.append(table)
            held += table.num_rows
            while held >= rows:
                whole = pa.concat_tables(pending)
                writer.write_table(whole.slice(0, rows), row_group_size=rows)
                rest = whole.slice(rows)
                pending, held, written = ([rest] if rest.num_rows else []), rest.num_rows, written + rows
        if held:
            writer.write_table(pa.concat_tables(pending), row_group_size=rows)
            written += held
    if not written:
        path.unlink(missing_ok=True)
        return 0
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return written
