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


def read_lines(name: str, body: bytes, suffix: str, kinds: dict, append, **options) -> tuple[int, Rejects]:
    """``body`` (CSV with its header, or JSON lines) read with the local engine's readers as stream ``name`` of
    attribute ``kinds``, each chunk to ``append(stream, ts, cols)``: the rows appended and the rejects."""
    rejects, rows = Rejects(), 0
    with tempfile.TemporaryDirectory(prefix="slidewise-tail-") as tmp:
        piece = Path(tmp) / f"new.{suffix}"
        piece.write_bytes(body)
        source = open_source(name, piece, schema=kinds, rejects=rejects, **options)
        for chunk in source.chunks():
            append(name, chunk.ts, {a: chunk.cols[a] for a in kinds})
            rows += len(chunk)
    return rows, rejects


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
        rows, rejects = read_lines(self.name, body, "csv" if csv else "jsonl", self.kinds, append, ts_column=self.ts_column, ts_unit=self.ts_unit)
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


class KafkaTail:
    """Stream ``name`` read from a Kafka topic (``kafka://HOST:PORT/TOPIC?format=...``, the URI of ``run``'s
    Kafka sources): each :meth:`poll` reads the messages up to the end offsets seen then, in (partition,
    offset) order, as the local engine reads a topic (:func:`~slidewise.kafka.io.message_lines`), and appends
    them. The schema is declared or read from the messages in the topic at start. Offsets: partition ->
    [next offset, messages read]."""

    def __init__(self, name: str, uri: str, *, ts_column: str = "ts", ts_unit: str = "auto", schema: dict[str, str] | None = None, offsets: dict | None = None):
        from slidewise.errors import require_extra
        from slidewise.kafka.uri import KafkaURI

        self.uri = KafkaURI.parse(uri)
        require_extra("kafka", "a kafka:// source")
        from slidewise.kafka.io import beginnings, consumer, end_offsets, message_lines, read

        self.name, self.ts_column = name, ts_column
        self.consumer = consumer(self.uri)
        start = beginnings(self.consumer)
        self.pos: dict[str, list[int]] = {str(p): list((offsets or {}).get(str(p), (o, 0))) for p, o in start.items()}
        self.rejects = Rejects()
        self.rows = 0
        msgs = sorted(read(self.consumer, self.uri, start, end_offsets(self.consumer, self.uri)))
        if not msgs and schema is None:
            raise SourceError(
                f"topic {self.uri.topic!r} is empty: its schema cannot be read from it",
                location=self.uri.text,
                hint=f"declare it: --schema {name}=ts:int,a:int,... (or produce a message first)",
            )
        with tempfile.TemporaryDirectory(prefix="slidewise-tail-") as tmp:  # the schema and unit, as a file's
            if msgs:
                first = Path(tmp) / ("first.csv" if self.uri.format == "csv" else "first.jsonl")
                first.write_bytes(message_lines([m[2] for m in msgs], self.uri))
            else:  # declared columns only, as a header-only file
                first = Path(tmp) / "first.csv"
                first.write_text(",".join(dict.fromkeys([ts_column, *(schema or {})])) + "\n")
            found = open_source(name, first, ts_column=ts_column, ts_unit=ts_unit, schema=schema)
            self.kinds, self.ts_unit = dict(found.kinds), found.ts_unit

    def offsets(self) -> dict[str, list[int]]:
        return {p: list(v) for p, v in self.pos.items()}

    def poll(self, append) -> int:
        """Read the messages up to the end offsets now; ``append(stream, ts, cols)`` them; rows read."""
        from slidewise.kafka.io import end_offsets, message_lines, read

        ends = end_offsets(self.consumer, self.uri)
        start = {int(p): v[0] for p, v in self.pos.items()}
        if all(ends[p] <= start.get(p, 0) for p in ends):
            return 0
        msgs = sorted(read(self.consumer, self.uri, start, ends))
        consumed = sum(v[1] for v in self.pos.values())
        for p, o in ends.items():
            self.pos[str(p)] = [max(o, start.get(p, 0)), self.pos.get(str(p), [0, 0])[1] + sum(1 for m in msgs if m[0] == p)]
        if not msgs:
            return 0
        suffix = "csv" if self.uri.format == "csv" else "jsonl"
        rows, rejects = read_lines(self.name, message_lines([m[2] for m in msgs], self.uri), suffix, self.kinds, append, ts_column=self.ts_column, ts_unit=self.ts_unit)
        if rejects.total:  # a reject's line: the message's place among those read (a CSV body's line 1 is its header)
            t = rejects.table()
            shift = consumed - (1 if suffix == "csv" else 0)
            self.rejects.add_many(self.name, self.uri.label, t["line"].to_numpy() + shift, t["reason"].combine_chunks(), t["row"].combine_chunks())
        self.rows += rows
        return rows

    def close(self) -> None:
        self.consumer.close()
