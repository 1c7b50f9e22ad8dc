"""Types shared by the readers (:class:`RawChunk`, ``_Block``, ``_Info``), their errors and the text check."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from slidewise.errors import SourceError
from slidewise.runtime.rejects import rows_as_text

KIND_DTYPE = {"int": np.dtype(np.int64), "float": np.dtype(np.float64), "bool": np.dtype(np.bool_), "str": np.dtype(object)}
_KIND_ARROW = {"int": pa.int64(), "float": pa.float64(), "bool": pa.bool_(), "str": pa.string()}


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


@dataclass
class _Info:
    names: list[str]  # all columns in order, ts included
    kinds: dict[str, str]  # inferred kind per column (ts excluded)
    ts_type: pa.DataType | None  # arrow type of the ts column as read
    ts_sample: pa.Array | None  # sample of ts values (for unit detection and checks)


@dataclass
class _Block:
    """Rows parsed from one block of a file (typed or text columns), with their lines."""

    table: pa.Table
    lines: np.ndarray
    raw: object  # callable: row indices -> pa.Array of row texts
    malformed: int = 0  # rows already rejected by the reader
    bad: tuple | None = None  # (mask, reasons) of rows the reader found bad but kept for line alignment


def _table_block(table: pa.Table, rows_before: int) -> _Block:
    """A block of a whole table whose row ``i`` is line ``rows_before + 1 + i``."""
    lines = np.arange(rows_before + 1, rows_before + 1 + table.num_rows, dtype=np.int64)
    return _Block(table, lines, _table_texts(table))


def _table_texts(table: pa.Table):
    def texts(idx: np.ndarray) -> pa.Array:
        sub = table.take(pa.array(idx, pa.int64()))
        return rows_as_text({c: sub.column(c).to_numpy(zero_copy_only=False) for c in sub.column_names})

    return texts


def _one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


def _unreadable(file: str, e: BaseException) -> SourceError:
    """A pyarrow or decoding failure, as a one-line error (never a pyarrow traceback)."""
    return SourceError(f"cannot read: {_one_line(e)}", location=file, hint="check the file's format and encoding (UTF-8)")


def _missing_ts(file: str, names: list[str], ts_column: str) -> SourceError:
    cols = ", ".join(names) if names else "(none)"
    return SourceError(f"no timestamp column {ts_column!r}", location=file, hint=f"the columns are: {cols}; choose the timestamp column with --ts-column")


_BOMS = ((b"\x00\x00\xfe\xff", "UTF-32"), (b"\xff\xfe\x00\x00", "UTF-32"), (b"\xfe\xff", "UTF-16"), (b"\xff\xfe", "UTF-16"))


def _check_text(sample: bytes, file: str) -> None:
    """A SourceError unless the start of a text file is UTF-8: UTF-16/32, binary data, another encoding."""
    encoding = next((name for bom, name in _BOMS if sample.startswith(bom)), None)
    if encoding:
        what = f"looks like {encoding} (byte-order mark)"
    elif (nul := sample.find(b"\x00")) >= 0:
        head = sample[:4096]
        if head.count(b"\x00") * 3 >= len(head) and head[1::2].count(b"\x00") * 4 >= len(head[1::2]) * 3:
            encoding, what = "UTF-16LE", "looks like UTF-16 without a byte-order mark (NUL bytes between letters)"
        elif head.count(b"\x00") * 3 >= len(head) and head[0::2].count(b"\x00") * 4 >= len(head[0::2]) * 3:
            encoding, what = "UTF-16BE", "looks like UTF-16 without a byte-order mark (NUL bytes between letters)"
        else:
            what = f"binary data (a NUL byte at byte {nul})"
    else:
        try:
            sample.split(b"\n", 1)[0].decode("utf-8")
            return
        except UnicodeDecodeError as e:
            encoding, what = "LATIN1", f"invalid UTF-8 at byte {e.start} of the first line"
    hint = f"convert it, e.g. iconv -f {encoding} -t UTF-8 {file} > converted{_suffix(file)}" if encoding else "give a CSV or JSON lines text file (UTF-8)"
    raise SourceError(f"file is not UTF-8 text: {what}", location=file, hint=hint)


def _suffix(file: str) -> str:
    name = Path(file).name
    return name[name.index(".") :] if "." in name else ".csv"
