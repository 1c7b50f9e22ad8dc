"""Growing files and directories as streams of the query manager.

A :class:`Tail` follows one ``--source NAME=PATH|DIR``: each :meth:`~Tail.poll` reads the complete
lines appended to each file since the last poll (a directory's files in name order, new files as
they appear) with the local engine's readers (:func:`~slidewise.runtime.sources.open_source` over
the new lines, the first read's schema and timestamp unit declared) and appends them to the
manager; Parquet and compressed files are read whole once, when they appear. Offsets (:meth:`~Tail.offsets`) let a restarted service go on where it stopped. Rejected
rows are counted and their first reasons kept (:attr:`Tail.rejects`).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from slidewise.errors import SourceError
from slidewise.runtime.rejects import Rejects
from slidewise.runtime.sources import open_source
from slidewise.runtime.sources.source import COMPRESSIONS, format_of

__all__ = ["Tail"]


class Tail:
    """Stream ``name`` read from ``path`` (a file or a directory of files of one schema)."""

    def __init__(
        self,
        name: str,
        path: str | Path,
        *,
        ts_column: str = "ts",
        ts_unit: str = "auto",
        schema: dict[str, str] | None = None,
        offsets: dict[str, list[int]] | None = None,
    ):
        self.name, self.path, self.ts_column = name, Path(path), ts_column
        first = open_source(name, self.path, ts_column=ts_column, ts_unit=ts_unit, schema=schema)  # the schema and unit, from what exists now
        self.kinds, self.ts_unit = dict(first.kinds), first.ts_unit
        self.pos: dict[str, list[int]] = {f: list(v) for f, v in (offsets or {}).items()}  # file -> [bytes, lines] read
        self.headers: dict[str, bytes] = {}
        self.rejects = Rejects()
        self.rows = 0

    def files(self) -> list[Path]:
        if not self.path.is_dir():
            return [self.path]
        return sorted(p for p in self.path.iterdir() if p.is_file() and not p.name.startswith((".", "_")) and format_of(p))

    def offsets(self) -> dict[str, list[int]]:
        """File -> [bytes, lines] read so far (``offsets=`` of a restarted tail)."""
        return {f: list(v) for f, v in self.pos.items()}

    def poll(self, append) -> int:
        """Read what was appended since the last poll; ``append(stream, ts, cols)`` each chunk; rows read."""
        read = 0
        for f in self.files():
            read += self._poll_file(f, append)
        self.rows += read
        return read

    def _poll_file(self, f: Path, append) -> int:
        key = str(f)
        if format_of(f) == "parquet" or f.name.lower().endswith(COMPRESSIONS):  # not appended to: read whole once
            return self._read_whole(f, append) if key not in self.pos else 0
        start, consumed = self.pos.get(key, (0, 0))
        try:
            with open(f, "rb") as fh:
                fh.seek(start)
                data = fh.read()
        except OSError as e:
            raise SourceError(f"cannot read: {e.strerror or e}", location=key, hint="check the path given to --source NAME=PATH") from None
        end = data.rfind(b"\n") + 1  # complete lines only: a line being written waits for the next poll
        if end == 0:
            return 0
        body = data[:end]
        csv = format_of(f) == "csv"
        if csv:
            if start == 0:
                cut = body.find(b"\n") + 1
                self.headers[key], body = body[:cut], body[cut:]
            elif key not in self.headers:
                with open(f, "rb") as fh:
                    self.headers[key] = fh.readline()
            body = self.headers[key] + body if body else b""
        self.pos[key] = [start + end, consumed + data.count(b"\n", 0, end)]
        if not body.strip() or (csv and body == self.headers[key]):
            return 0
        rejects, rows = Rejects(), 0
        with tempfile.TemporaryDirectory(prefix="slidewise-tail-") as tmp:
            piece = Path(tmp) / ("new.csv" if csv else "new.jsonl")
            piece.write_bytes(body)
            source = open_source(self.name, piece, ts_column=self.ts_column, ts_unit=self.ts_unit, schema=self.kinds, rejects=rejects)
            for chunk in source.chunks():
                append(self.name, chunk.ts, {a: chunk.cols[a] for a in self.kinds})
                rows += len(chunk)
        if rejects.total:  # the piece's lines as the file's (a CSV piece repeats the header as its line 1)
            shift = consumed - (1 if csv and start else 0)
            t = rejects.table()
            self.rejects.add_many(self.name, key, t["line"].to_numpy() + shift, t["reason"].combine_chunks(), t["row"].combine_chunks())
        return rows

    def _read_whole(self, f: Path, append) -> int:
        source = open_source(self.name, f, ts_column=self.ts_column, ts_unit=self.ts_unit, schema=self.kinds, rejects=self.rejects)
        rows = 0
        for chunk in source.chunks():
            append(self.name, chunk.ts, {a: chunk.cols[a] for a in self.kinds})
            rows += len(chunk)
        self.pos[str(f)] = [f.stat().st_size, 0]
        return rows
