"""CSV and JSON lines files: blocks of bytes cut at record boundaries, exact line numbers, malformed rows.

Block sizes (``_SAMPLE_BYTES``, ``_MIN_BLOCK``, ``_MAX_BLOCK``, ``_PRESCAN_BYTES``)
are read from :mod:`slidewise.runtime.sources` on each use.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.json as pajson

from slidewise.errors import MALFORMED_AVRO, SourceError
from slidewise.runtime import sources as _pkg  # the package, for its block sizes
from slidewise.runtime.sources.base import _KIND_ARROW, _Block, _check_text, _Info, _missing_ts, _one_line
from slidewise.runtime.sources.convert import _match, _missing_mask
from slidewise.runtime.sources.schema import _few_strays, _info_from_table


def _open_stream(path: Path):
    try:
        return pa.input_stream(str(path), compression="detect")
    except (OSError, pa.ArrowException) as e:
        raise SourceError(f"cannot read file: {_one_line(e)}", location=str(path), hint="check that the file exists and is readable") from None


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


def _has_quoted_newline(body: bytes) -> bool:
    if b'"' not in body:
        return False
    nl, rec_nl = _record_ends(np.frombuffer(body, np.uint8), True)
    return len(nl) != len(rec_nl)


def _raw_texts(block: bytes, starts: np.ndarray, recs: np.ndarray):
    """Callable: indices into ``recs`` -> those records' text (trailing newline stripped)."""

    def texts(idx: np.ndarray) -> pa.Array:
        offsets = np.concatenate((starts, [len(block)])).astype(np.int64)
        arr = pa.LargeBinaryArray.from_buffers(pa.large_binary(), len(starts), [None, pa.py_buffer(offsets), pa.py_buffer(block)])
        taken = arr.take(pa.array(recs[idx], pa.int64()))
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
        #: columns whose type was declared (``--schema``): read as declared, never second-guessed
        self.declared: set[str] = set()

    def _first_block(self) -> bytes | None:
        gen = self._chunks_of_bytes(_pkg._SAMPLE_BYTES)
        try:
            first = next(gen, None)
            self._whole = first is None or next(gen, None) is None  # the sample is the whole file
        finally:
            gen.close()
        if first is not None:
            _check_text(first[0], self.file)
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
                    raise SourceError(f"cannot read file: {_one_line(e)}", location=self.file, hint="check that the file is readable and not corrupt") from None
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

    def _block_bytes(self, chunk_rows: int) -> int:
        return int(min(max(chunk_rows * self._bytes_per_row * 1.2, _pkg._MIN_BLOCK), _pkg._MAX_BLOCK))

    def _widen(self, info: _Info) -> None:
        """Past a partial sample: integer columns with missing values become float (NaN), boolean ones text."""
        if not self._whole:
            for c in self._with_missing(info.kinds):
                info.kinds[c] = "float" if info.kinds[c] == "int" else "str"

    def _with_missing(self, kinds: dict[str, str]) -> set[str]:
        """Integer and boolean columns with a missing value anywhere in the first _PRESCAN_BYTES."""
        cols = [c for c, k in kinds.items() if k in ("int", "bool")]
        found: set[str] = set()
        scanned = 0
        for block, _ in self._chunks_of_bytes(8 * _pkg._MIN_BLOCK):
            if scanned == 0:
                block = self._skip_header(block)
            scanned += len(block)
            missing = self._missing_in(block, [c for c in cols if c not in found], kinds)
            if missing is None:  # the block cannot hold a missing value
                continue
            found |= missing
            if len(found) == len(cols) or scanned > _pkg._PRESCAN_BYTES:
                break
        return found

    def _skip_header(self, block: bytes) -> bytes:
        return block

    def _missing_in(self, block: bytes, cols: list[str], kinds: dict[str, str]) -> set[str] | None:
        """Columns of ``cols`` with a missing value in ``block`` (None: the block cannot hold one)."""
        raise NotImplementedError

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


# --------------------------------------------------------------------------- CSV


class _CsvReader(_TextReader):
    quotes_matter = True

    def __init__(self, path: Path):
        super().__init__(path)
        self.header: list[str] | None = None

    def inspect(self, ts_column: str) -> _Info:
        block = self._first_block()
        if block is None:
            raise SourceError("empty file (no header line)", location=self.file, hint="a CSV source needs a header line naming its columns")
        body, _ = self._split_header(block)
        if ts_column not in self.header:
            raise _missing_ts(self.file, self.header, ts_column)
        if not body.strip():
            empty = pa.table({c: pa.array([], pa.string()) for c in self.header})
            return _Info(list(self.header), {c: "str" for c in self.header if c != ts_column}, pa.string(), empty.column(ts_column).combine_chunks())
        table, _, _ = self._parse(body, {ts_column: pa.string()}, sample=True)
        self._bytes_per_row = len(body) / max(1, body.count(b"\n"))
        info = _info_from_table(table, ts_column, dirty_numbers=True)
        hits = self._zero_hits(body, [c for c, k in info.kinds.items() if k in ("int", "float")], sample=True)
        for c, hit in (hits or {}).items():
            if hit.any():
                info.kinds[c] = "str"  # "00123" read as a number would lose its zeros
        self._widen(info)
        return info

    def _skip_header(self, block: bytes) -> bytes:
        return self._split_header(block)[0]

    def _missing_in(self, block: bytes, cols: list[str], kinds: dict[str, str]) -> set[str] | None:
        if not _may_hold_missing(block):
            return None
        read = pacsv.ReadOptions(column_names=self.header)
        parse = pacsv.ParseOptions(invalid_row_handler=lambda row: "skip", newlines_in_values=_has_quoted_newline(block))
        for types in ({c: _KIND_ARROW[kinds[c]] for c in cols}, {c: pa.string() for c in cols}):
            conv = pacsv.ConvertOptions(include_columns=cols, column_types=types, strings_can_be_null=False)
            try:
                table = pacsv.read_csv(io.BytesIO(block), read_options=read, parse_options=parse, convert_options=conv)
            except pa.ArrowInvalid:
                continue
            return {c for c in cols if _missing_mask(table.column(c).combine_chunks()).any()}
        return set()

    def _split_header(self, block: bytes) -> tuple[bytes, int]:
        """Body after the header record, and the number of physical lines of the header."""
        end = block.find(b"\n") + 1 or len(block)
        if block.count(b'"', 0, end) % 2:  # a quoted newline inside the header
            _, ends = _record_ends(np.frombuffer(block, np.uint8), True)
            end = int(ends[0]) + 1 if len(ends) else len(block)
        head = block[:end].decode("utf-8", "replace").rstrip("\r\n")
        names = next(csv.reader([head]), []) if head.strip() else []
        if not names:
            raise SourceError("empty header line", location=f"{self.file}:1", hint="a CSV source needs a header line naming its columns")
        dup = sorted({c for c in names if names.count(c) > 1})
        if dup or any(not c.strip() for c in names):
            what = f"duplicate column name {dup[0]!r}" if dup else "empty column name"
            raise SourceError(f"bad header: {what}", location=f"{self.file}:1", hint="give every column a distinct name")
        self.header = names
        return block[end:], max(1, block[:end].count(b"\n"))

    def _parse(self, body: bytes, types: dict, sample: bool = False, threads: bool = True, quoted_newlines: bool | None = None):
        """pyarrow parse of one block -> (table or None on a conversion error, invalid rows, error)."""
        bad: list = []

        def handler(row):
            bad.append((row.expected_columns, row.actual_columns, row.number, row.text))
            return "skip"

        if quoted_newlines is None:
            quoted_newlines = _has_quoted_newline(body)
        # pyarrow fails on a record longer than its block (default 1 MiB): size the block to the longest
        block_size = max(1 << 20, self._longest_record(body, quoted_newlines) + 2)
        read = pacsv.ReadOptions(column_names=self.header, use_threads=threads, block_size=block_size)
        parse = pacsv.ParseOptions(invalid_row_handler=handler, newlines_in_values=quoted_newlines)
        conv = pacsv.ConvertOptions(column_types=types, strings_can_be_null=False)
        try:
            table = pacsv.read_csv(io.BytesIO(body), read_options=read, parse_options=parse, convert_options=conv)
        except pa.ArrowInvalid as e:
            if "conversion error" in str(e) and not sample:
                return None, bad, str(e)
            raise SourceError(f"cannot parse CSV: {_one_line(e)}", location=self.file, hint="check that the file is UTF-8 CSV with a header line") from None
        if not sample and bad and any(b[2] is None for b in bad):
            return self._parse(body, types, threads=False, quoted_newlines=quoted_newlines)
        return table, bad, None

    def blocks(self, kinds, ts_column, rejects, stream, chunk_rows) -> Iterator[_Block]:
        typed = {c: _KIND_ARROW[k] for c, k in kinds.items()}
        typed[ts_column] = pa.string()
        first = True
        for block, lines_before in self._chunks_of_bytes(self._block_bytes(chunk_rows)):
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
            too_long = (ends - starts) > _pkg._MAX_ROW_BYTES
            if too_long.any():
                block, (buf, starts, ends, lines, qnl) = self._drop_rows(block, starts, ends, lines, too_long, rejects, stream)
                if not len(starts):
                    continue
            table, bad, _ = self._parse(block, typed, quoted_newlines=qnl)
            utf8 = None
            if table is None:  # some value does not convert: read the block as text, check per column
                table, bad, err = self._parse(block, {c: pa.string() for c in self.header}, quoted_newlines=qnl)
            if table is None:  # invalid UTF-8: read bytes, reject the rows that do not decode
                table, bad, err = self._parse(block, {c: pa.binary() for c in self.header}, quoted_newlines=qnl)
                if table is None:
                    raise SourceError(
                        f"cannot parse CSV: {_one_line(Exception(err))}", location=f"{self.file}:{lines_before + 1}", hint="check that the file is CSV with a header line"
                    ) from None
                table, utf8 = _decode_utf8(table)
            lens = ends - starts
            empty = (lens == 0) | ((lens == 1) & (buf[np.minimum(starts, len(buf) - 1)] == 13))
            nonempty = np.flatnonzero(~empty)
            if bad:
                bad_rows = np.array([b[2] - 1 for b in bad], np.int64)
                reasons = [f"malformed row: expected {b[0]} fields, found {b[1]}" for b in bad]
                rejects.add_many(stream, self.file, lines[nonempty[bad_rows]], reasons, [b[3] for b in bad], kind="malformed row")
                valid = np.delete(nonempty, bad_rows)
            else:
                valid = nonempty
            if len(valid) != table.num_rows:  # defensive: the record scan and pyarrow disagree
                raise SourceError(
                    f"cannot align {table.num_rows} parsed rows with {len(valid)} records",
                    location=f"{self.file}:{lines_before + 1}",
                    hint="the file may hold unbalanced quotes",
                )
            zeros = self._leading_zeros(block, kinds, qnl, len(valid), stream) if utf8 is None else None
            yield _Block(table, lines[valid].astype(np.int64), _raw_texts(block, starts, valid), len(bad), utf8 or zeros)

    def _leading_zeros(self, block: bytes, kinds: dict[str, str], qnl: bool, n: int, stream: str) -> tuple | None:
        """(bad mask, reasons) of rows with a number like ``00123`` in an inferred numeric column:
        reading it as a number would change its text (the sample had none, or the column were text)."""
        hits = self._zero_hits(block, [c for c, k in kinds.items() if k in ("int", "float") and c not in self.declared], qnl)
        if hits is None or any(len(h) != n for h in hits.values()):
            return None
        bad, reasons = np.zeros(n, bool), np.full(n, None, dtype=object)
        for c, hit in hits.items():
            hit = hit & ~bad
            reasons[hit] = f"value with leading zeros in number column {c!r} (inferred from the first rows); declare it as text: --schema {stream}={c}:string"
            bad |= hit
        return (bad, reasons) if bad.any() else None

    def _zero_hits(self, block: bytes, cols: list[str], qnl: bool | None = None, sample: bool = False) -> dict[str, np.ndarray] | None:
        """Per column of ``cols``: which rows of ``block`` hold a number with leading zeros, as text
        (``None``: none can, by a byte scan, or the block does not parse as text)."""
        if not cols or not _has_leading_zero(block):
            return None
        texts, _, _ = self._parse(block, {c: pa.string() for c in self.header}, sample=sample, quoted_newlines=qnl)
        if texts is None:
            return None
        return {c: _match(pc.utf8_trim_whitespace(texts.column(c).combine_chunks()), _LEADING_ZERO_RE) for c in cols}

    def _drop_rows(self, block: bytes, starts, ends, lines, drop: np.ndarray, rejects, stream):
        """Reject the records ``drop`` (longer than ``_MAX_ROW_BYTES``) and give the block without them,
        with its records, each keeping its line in the file."""
        limit = _pkg._MAX_ROW_BYTES
        idx = np.flatnonzero(drop)
        rejects.add_many(
            stream,
            self.file,
            lines[idx],
            [f"row too long: {int(ends[i] - starts[i]):,} bytes (at most {limit:,} are read)" for i in idx],
            [block[starts[i] : starts[i] + 200].decode("utf-8", "replace") + "..." for i in idx],
            kind="row too long",
        )
        keep = np.flatnonzero(~drop)
        rest = b"".join(block[starts[i] : ends[i]] + b"\n" for i in keep)
        records = self._records(rest, 0, b'"' in rest)
        return rest, (*records[:3], lines[keep], records[4])

    def _longest_record(self, body: bytes, quoted_newlines: bool) -> int:
        if len(body) <= 1 << 20:
            return 0
        _, ends = _record_ends(np.frombuffer(body, np.uint8), quoted_newlines)
        return int(np.diff(np.concatenate(([-1], ends, [len(body)]))).max())


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


_LEADING_ZERO_RE = r"^[+-]?0\d"


def _has_leading_zero(block: bytes) -> bool:
    """Whether some field of the CSV block may start with a zero followed by a digit (vectorised)."""
    buf = np.frombuffer(b"\n" + block, np.uint8)  # a leading newline: the first field starts after a delimiter
    nxt = buf[2:]
    z = (buf[1:-1] == 48) & (nxt >= 48) & (nxt <= 57)
    if not z.any():
        return False
    p = buf[:-2]
    if (z & ((p == 44) | (p == 10) | (p == 34) | (p == 32) | (p == 9) | (p == 13))).any():  # , newline " space tab CR
        return True
    signed = np.flatnonzero(z & ((p == 45) | (p == 43)))  # -0 +0: a field start only after a delimiter
    return bool(len(signed) and np.isin(buf[np.maximum(signed - 1, 0)], (44, 10, 34, 32, 9, 13)).any())


def _may_hold_missing(block: bytes) -> bool:
    """False when no field of the CSV block can be null: no empty field and no null token
    (every non-empty default null token contains 'n', 'N' or '#')."""
    return block.startswith(b",") or block.rstrip(b"\r\n").endswith(b",") or any(t in block for t in (b",,", b",\n", b",\r", b"\n,", b'""', b"n", b"N", b"#"))


# --------------------------------------------------------------------------- JSON lines


class _JsonReader(_TextReader):
    def inspect(self, ts_column: str) -> _Info:
        block = self._first_block()
        if block is None or not block.strip():
            raise SourceError("empty file (no JSON lines)", location=self.file, hint="a JSON lines source needs one object per line")
        if block.lstrip()[:1] == b"[":
            raise SourceError("a JSON array, not JSON lines", location=self.file, hint="write one JSON object per line (JSON lines, .jsonl)")
        self._bytes_per_row = len(block) / max(1, block.count(b"\n"))
        try:
            table = _read_json(block)
        except pa.ArrowInvalid:
            info = self._infer_python(block, ts_column)
        else:
            info = _info_from_table(table, ts_column)
            # nested values stay nested when read (and become JSON text per column later)
            self._keep = {f.name: f.type for f in table.schema if pa.types.is_nested(f.type) and f.name != ts_column}
        self._widen(info)
        self._info = info
        return info

    def _missing_in(self, block: bytes, cols: list[str], kinds: dict[str, str]) -> set[str]:
        """Null or absent values."""
        schema = pa.schema([pa.field(c, _KIND_ARROW[kinds[c]]) for c in cols])
        try:
            table = _read_json(block, schema)
        except pa.ArrowInvalid:
            return {c for obj in _json_objects(block) for c in cols if obj.get(c) is None}
        return {c for c in cols if table.column(c).null_count}

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
            has_null = counts[type(None)] > 0 or sum(counts.values()) < n_obj  # null or absent
            n_int, n_num = counts[int], counts[int] + counts[float]
            n_other = sum(counts.values()) - n_num - counts[type(None)]
            if n_other == 0 and counts.keys() - {type(None)} == {bool}:
                kinds[k] = "bool"
            elif _few_strays(n_num, n_other):
                kinds[k] = "int" if n_int == n_num and not has_null else "float"
            else:
                kinds[k] = "str"
        ts_types = {t for t, c in seen.get(ts_column, {}).items() if c} - {type(None)}
        ts_type = pa.int64() if ts_types == {int} else pa.float64() if ts_types and ts_types <= {int, float} else pa.string()
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
        for block, lines_before in self._chunks_of_bytes(self._block_bytes(chunk_rows)):
            buf, starts, ends, lines, _ = self._records(block, lines_before, False)
            ink = ~((buf == 32) | (buf == 9) | (buf == 13) | (buf == 10))
            cs = np.concatenate(([0], np.cumsum(ink)))
            nonblank = np.flatnonzero(cs[ends] - cs[starts] > 0)
            if len(nonblank):
                yield from self._parse_range(block, starts, ends, lines, nonblank, rejects, stream)

    def _parse_range(self, block, starts, ends, lines, recs, rejects, stream) -> Iterator[_Block]:
        """Parse records ``recs`` with pyarrow; on failure split in halves, single lines in Python."""
        piece = block[int(starts[recs[0]]) : int(ends[recs[-1]])]
        try:
            table = _read_json(piece, self._schema)
            if table.num_rows == len(recs):
                yield _Block(table, lines[recs].astype(np.int64), _raw_texts(block, starts, recs))
                return
        except pa.ArrowInvalid:
            pass
        if len(recs) > 8:
            mid = len(recs) // 2
            yield from self._parse_range(block, starts, ends, lines, recs[:mid], rejects, stream)
            yield from self._parse_range(block, starts, ends, lines, recs[mid:], rejects, stream)
            return
        good, cols = [], {f.name: [] for f in self._schema}
        for r in recs:
            text = block[starts[r] : ends[r]].decode("utf-8", "replace").rstrip("\r")
            try:
                obj = json.loads(text)
                reason = None if isinstance(obj, dict) else "malformed JSON line: not an object"
            except ValueError as e:
                reason = text if text.startswith(MALFORMED_AVRO) else f"malformed JSON line: {getattr(e, 'msg', e)} at column {getattr(e, 'colno', '?')}"
            if reason:
                rejects.add(stream, self.file, int(lines[r]), reason, text, kind=reason.split(":")[0])
                continue
            good.append(r)
            for c in cols:
                cols[c].append(_json_text(obj.get(c)))
        good = np.array(good, np.int64)
        table = pa.table({c: pa.array(v, pa.string()) for c, v in cols.items()})
        yield _Block(table, lines[good].astype(np.int64), _raw_texts(block, starts, good), len(recs) - len(good))


def _read_json(piece: bytes, schema: pa.Schema | None = None) -> pa.Table:
    """pyarrow read of JSON lines; with ``schema``, exactly its columns (other fields ignored)."""
    longest = max((len(x) for x in piece.split(b"\n")), default=0) if len(piece) > (1 << 20) else len(piece)
    read = pajson.ReadOptions(block_size=max(1 << 20, longest + 2))
    parse = None if schema is None else pajson.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
    return pajson.read_json(io.BytesIO(piece), read_options=read, parse_options=parse)


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
