"""Reading and writing topics with kafka-python: assigned partitions, offsets kept by the caller.

No consumer groups: a reader assigns every partition of its topic and seeks to offsets it was
given (the local engine: the beginning; Spark: its checkpoint). :func:`end_offsets` asks the
broker for each partition's end and confirms it by fetching the last batch (some brokers report
the end of a multi-record batch as its base offset + 1).

Writing (:class:`TopicWriter`): each result is one JSON message whose key names it (``run``
prefix, then the caller's tag); keys of ``run`` already in the topic are read once when the
writer opens and skipped, so output replayed after a crash is written once. The producer is
idempotent (``enable_idempotence``), so retried sends are not duplicated either.
"""

from __future__ import annotations

import contextlib
import io
import json
import time
from collections.abc import Iterator

import pandas as pd

from slidewise.errors import MALFORMED_AVRO, OptionError, SourceError
from slidewise.kafka.uri import KafkaURI

_POLL_MS = 500
#: seconds a bounded read waits for a partition that reports more messages than it returns
_STALL_SECONDS = 30.0


def _why(e: Exception) -> str:
    text = str(e)
    return text if text.startswith(type(e).__name__) else f"{type(e).__name__}: {text}"


def _client_error(uri: KafkaURI, e: Exception, what: str):
    return SourceError(f"cannot {what} Kafka at {','.join(uri.servers)}: {_why(e)}", location=uri.text, hint="check the broker address and that it is running")


def consumer(uri: KafkaURI):
    """A consumer of ``uri``'s topic with every partition assigned (no group, no auto commit)."""
    from kafka import KafkaConsumer, TopicPartition
    from kafka.errors import KafkaError

    try:
        c = KafkaConsumer(bootstrap_servers=uri.servers, group_id=None, enable_auto_commit=False, auto_offset_reset="earliest")
        parts = c.partitions_for_topic(uri.topic)
    except KafkaError as e:
        raise _client_error(uri, e, "read from") from None
    if not parts:
        c.close()
        raise SourceError(f"no topic {uri.topic!r}", location=uri.text, hint="create the topic or check its name")
    c.assign([TopicPartition(uri.topic, p) for p in sorted(parts)])
    return c


def end_offsets(c, uri: KafkaURI) -> dict[int, int]:
    """Each assigned partition's end offset (the next offset to be written), confirmed by a fetch."""
    tps = sorted(c.assignment(), key=lambda tp: tp.partition)
    ends = {tp.partition: int(o) for tp, o in c.end_offsets(tps).items()}
    for tp in tps:
        if ends[tp.partition] > 0:
            c.seek(tp, ends[tp.partition] - 1)
    pending = {tp.partition for tp in tps if ends[tp.partition] > 0}
    deadline = time.monotonic() + _STALL_SECONDS
    while pending and time.monotonic() < deadline:
        for tp, msgs in c.poll(_POLL_MS).items():
            if msgs:
                ends[tp.partition] = max(ends[tp.partition], msgs[-1].offset + 1)
                pending.discard(tp.partition)
    return ends


def beginnings(c) -> dict[int, int]:
    """Each assigned partition's first offset."""
    return {tp.partition: int(o) for tp, o in c.beginning_offsets(list(c.assignment())).items()}


def messages(c, uri: KafkaURI, start: dict[int, int], end: dict[int, int]) -> Iterator:
    """Every message (kafka-python ``ConsumerRecord``) from ``start`` (inclusive) to ``end`` (exclusive), per
    poll in partition order; a partition that stops returning messages for ``_STALL_SECONDS`` is an error."""
    from kafka import TopicPartition

    pending = {p for p in end if end[p] > start.get(p, 0)}
    for p in pending:
        c.seek(TopicPartition(uri.topic, p), start.get(p, 0))
    deadline = time.monotonic() + _STALL_SECONDS
    try:
        while pending:
            got = c.poll(_POLL_MS)
            for tp, msgs in got.items():
                p = tp.partition
                if p not in pending:
                    continue
                yield from (m for m in msgs if m.offset < end[p])
                if msgs and msgs[-1].offset >= end[p] - 1:
                    pending.discard(p)
                    c.pause(tp)
            if got:
                deadline = time.monotonic() + _STALL_SECONDS
            elif time.monotonic() > deadline:
                raise SourceError(
                    f"topic {uri.topic!r} stopped returning messages before its end offsets {end}", location=uri.text, hint="check the broker; rerun to continue"
                )
    finally:
        c.resume(*c.paused())


def read(c, uri: KafkaURI, start: dict[int, int], end: dict[int, int]) -> list[tuple[int, int, bytes | None]]:
    """``(partition, offset, value)`` of every message from ``start`` (inclusive) to ``end`` (exclusive)."""
    return [(m.partition, m.offset, m.value) for m in messages(c, uri, start, end)]


def read_bounded(uri: KafkaURI) -> list[tuple[int, int, bytes | None]]:
    """Every message of the topic up to the end offsets seen now."""
    c = consumer(uri)
    try:
        return read(c, uri, beginnings(c), end_offsets(c, uri))
    finally:
        c.close()


class TopicWriter:
    """Writes result frames to a topic once: messages keyed ``run/tag``; keys of ``run`` in the topic are skipped."""

    def __init__(self, uri: KafkaURI, run: str):
        from kafka import KafkaProducer
        from kafka.errors import KafkaError

        self.uri, self.run = uri, run
        self._ensure_topic()
        self.done = self._written_keys()
        try:
            self.producer = KafkaProducer(bootstrap_servers=uri.servers, enable_idempotence=True, acks="all")
        except KafkaError as e:
            raise _client_error(uri, e, "write to") from None
        self.sent = 0

    def _ensure_topic(self) -> None:
        from kafka import KafkaAdminClient
        from kafka.admin import NewTopic
        from kafka.errors import KafkaError, TopicAlreadyExistsError

        try:
            admin = KafkaAdminClient(bootstrap_servers=self.uri.servers)
        except KafkaError as e:
            raise _client_error(self.uri, e, "write to") from None
        try:
            if self.uri.topic not in admin.list_topics():
                with contextlib.suppress(TopicAlreadyExistsError):
                    admin.create_topics([NewTopic(self.uri.topic, self.uri.partitions, 1)])
        except KafkaError as e:
            raise _client_error(self.uri, e, "create a topic on") from None
        finally:
            admin.close()

    def _written_keys(self) -> set[bytes]:
        """Keys of ``run`` already in the topic (the whole topic is read: Kafka cannot filter by key)."""
        prefix = self.run.encode() + b"/"
        c = consumer(self.uri)
        try:
            return {m.key for m in messages(c, self.uri, beginnings(c), end_offsets(c, self.uri)) if m.key is not None and m.key.startswith(prefix)}
        finally:
            c.close()

    def write(self, frame: pd.DataFrame, tags: list[str]) -> int:
        """Send the rows of ``frame`` (one JSON object each) keyed by ``tags``; rows already written are skipped."""
        from kafka.errors import KafkaError

        if not len(frame):
            return 0
        lines = frame.to_json(orient="records", lines=True, date_format="iso").splitlines()
        n = 0
        try:
            for line, tag in zip(lines, tags):
                key = f"{self.run}/{tag}".encode()
                if key in self.done:
                    continue
                self.producer.send(self.uri.topic, key=key, value=line.encode())
                self.done.add(key)
                n += 1
            self.producer.flush()
        except KafkaError as e:
            raise OptionError(
                f"writing to Kafka failed: {_why(e)}", location=self.uri.text, hint="check the broker; rerun the same command to write what is missing"
            ) from None
        self.sent += n
        return n

    def close(self) -> None:
        self.producer.flush()
        self.producer.close()


def message_lines(values: list[bytes | None], uri: KafkaURI) -> bytes:
    """Message values as the text of a JSON-lines or CSV (with header) file, one record per message
    (Avro: per record, see :func:`avro_records`; an undecodable one as ``MALFORMED_AVRO + reason``)."""
    if uri.format == "avro":
        return b"".join((r if isinstance(r, str) else json.dumps(r, default=_avro_text)).replace("\n", " ").encode() + b"\n" for _, r in avro_records(values, uri))
    body = [(v or b"").replace(b"\r", b" ").replace(b"\n", b" ") for v in values]
    if uri.format == "csv":
        import csv

        head = io.StringIO()
        csv.writer(head, lineterminator="\n").writerow(uri.columns)
        return head.getvalue().encode() + b"".join(v + b"\n" for v in body)
    return b"".join(v + b"\n" for v in body)


def decode_text(values: list[bytes | None], names: list[str], fmt: str) -> tuple[dict[str, list], list[str | None]]:
    """JSON objects or CSV records as text columns ``names`` (the raw layout of the Spark engine's
    readers: numbers, booleans as JSON text) and each value's text when it does not parse (else None)."""
    texts = [(v or b"").decode("utf-8", "replace") for v in values]
    if fmt == "csv":
        import csv

        rows = [next(csv.reader([t]), []) for t in texts]
        objs = [dict(zip(names, r)) if len(r) == len(names) else None for r in rows]
    else:
        objs = []
        for text in texts:
            try:
                objs.append(json.loads(text))
            except ValueError:
                objs.append(None)
    return _text_columns(objs, texts, names)


def _text_columns(objs: list, texts: list[str], names: list[str]) -> tuple[dict[str, list], list[str | None]]:
    """Columns ``names`` of the objects ``objs`` as text (see :func:`_cell`); a non-object is corrupt: its ``texts`` entry."""
    cols: dict[str, list] = {n: [] for n in names}
    corrupt: list[str | None] = []
    for obj, text in zip(objs, texts):
        ok = isinstance(obj, dict)
        corrupt.append(None if ok else text)
        for n in names:
            cols[n].append(_cell(obj.get(n)) if ok else None)
    return cols, corrupt


def _cell(x) -> str | None:
    """A value as text: strings as they are, JSON values as their JSON text, other Avro values by :func:`_avro_text`."""
    if x is None or isinstance(x, str):
        return x
    if isinstance(x, (bool, int, float, list, dict)):
        return json.dumps(x, default=_avro_text)
    return _avro_text(x)


_CONTAINER = b"Obj\x01"


def avro_schema(uri: KafkaURI):
    """The parsed writer schema of ``uri`` (``&schema=PATH``), or None when none is given."""
    if not uri.schema:
        return None
    import fastavro

    hint = "give &schema=PATH of a readable Avro schema (.avsc JSON), or send Avro object container files"
    try:
        with open(uri.schema, encoding="utf-8") as f:
            return fastavro.parse_schema(json.load(f))
    except (OSError, ValueError, fastavro.schema.SchemaParseException, KeyError, TypeError) as e:
        raise SourceError(f"cannot read the Avro schema {uri.schema!r}: {_why(e)}", location=uri.text, hint=hint) from None


def avro_records(values: list[bytes | None], uri: KafkaURI) -> list[tuple[int, dict | str]]:
    """``(message index, record)`` of every value: a schemaless record of ``uri``'s schema, or every record
    of an Avro object container (``Obj\\x01...``); a value that does not decode as ``MALFORMED_AVRO + reason``."""
    import fastavro

    schema = avro_schema(uri)
    out: list[tuple[int, dict | str]] = []
    for i, v in enumerate(values):
        v = v or b""
        try:
            if v.startswith(_CONTAINER):
                recs = list(fastavro.reader(io.BytesIO(v)))
            elif schema is None:
                raise SourceError(
                    f"topic {uri.topic!r}: a message is not an Avro object container and no schema was given",
                    location=uri.text,
                    hint="add &schema=PATH (the writer schema, .avsc JSON) to the Kafka address",
                )
            else:
                buf = io.BytesIO(v)
                recs = [fastavro.schemaless_reader(buf, schema, None)]
                if buf.tell() != len(v):
                    raise ValueError(f"{len(v) - buf.tell()} bytes left after the record")
        except SourceError:
            raise
        except Exception as e:  # noqa: BLE001 - fastavro raises many kinds on bad bytes
            out.append((i, f"{MALFORMED_AVRO}does not decode with {'its container' if v.startswith(_CONTAINER) else 'the writer schema'} ({_why(e)})"))
            continue
        out.extend((i, r if isinstance(r, dict) else f"{MALFORMED_AVRO}not a record") for r in recs)
    return out


def _avro_text(x):
    """JSON for Avro values JSON has no type for: bytes as text, logical types (dates, decimals, UUIDs) as str."""
    return x.decode("utf-8", "replace") if isinstance(x, bytes) else str(x)


def decode_avro(values: list[bytes | None], names: list[str], uri: KafkaURI) -> tuple[list[int], dict[str, list], list[str | None]]:
    """Avro values as text columns (the raw layout of the Spark engine's file readers: numbers, booleans as
    JSON text), each row's corrupt text (None if it decoded; else its reject reason, ``MALFORMED_AVRO + reason``)
    and its message index (a container gives several)."""
    recs = avro_records(values, uri)
    cols, corrupt = _text_columns([r if isinstance(r, dict) else None for _, r in recs], [r if isinstance(r, str) else "" for _, r in recs], names)
    return [i for i, _ in recs], cols, corrupt
