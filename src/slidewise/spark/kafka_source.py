"""Kafka on the Spark engine: topics as streams of ``(partition, offset, value)`` and results to a topic.

Reading. With Spark's own Kafka connector on the classpath (``spark-sql-kafka``) the topic is read
with it; otherwise with :class:`KafkaSource`, a PySpark streaming data source over kafka-python
(registered as ``slidewise_kafka``): offsets are ``{partition: next offset}`` dicts kept in
Spark's checkpoint, partitions assigned, no consumer groups. With ``once`` the end offsets seen
at start bound the read (as Spark's available-now). The schema is inferred from the topic's
first messages by the local reader's rules. JSON and CSV values are parsed by Spark's own readers
(``from_json`` / ``from_csv`` with the file readers' options), Avro ones in ``mapInArrow`` by
:func:`~slidewise.kafka.io.decode_avro` (a container's records sharing their message's offset), into
the text columns of the file readers, converted by :func:`slidewise.spark.ingest.convert_raw`
(:func:`kafka_batches`): the same kinds, units and reject reasons. Input
order within a micro-batch is (partition, offset); a reject's line is its offset + 1.

Writing: :class:`~slidewise.kafka.local.BatchWriter` keys each micro-batch's results by batch id and content, so a
batch Spark replays after a crash is written once (:class:`~slidewise.kafka.io.TopicWriter`).
"""

from __future__ import annotations

import functools
import json
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

from slidewise.kafka.io import beginnings, consumer, decode_avro, end_offsets, message_lines, read
from slidewise.kafka.uri import KafkaURI
from slidewise.spark.layout import WIRE_DDL, Layout, StreamInfo, wire_batch

RAW_DDL = "partition int, offset bigint, value binary"
#: messages read at planning time to infer the schema
SAMPLE = 1000


class KafkaSource(DataSource):
    """``spark.readStream.format("slidewise_kafka").option("uri", "kafka://...")`` [``.option("until", json)``]."""

    @classmethod
    def name(cls) -> str:
        return "slidewise_kafka"

    def schema(self) -> str:
        return RAW_DDL

    def streamReader(self, schema) -> DataSourceStreamReader:
        return KafkaStreamReader(self.options)


class _Range(InputPartition):
    def __init__(self, partition: int, start: int, end: int):
        self.partition, self.start, self.end = partition, start, end


class KafkaStreamReader(DataSourceStreamReader):
    """Offsets ``{"partition": next offset}``; one input partition per Kafka partition with new messages."""

    def __init__(self, options):
        self.text = options["uri"]
        self.until = json.loads(options.get("until") or "null")
        self._consumer = None

    @property
    def _c(self):
        if self._consumer is None:
            self._consumer = consumer(KafkaURI.parse(self.text))
        return self._consumer

    def initialOffset(self) -> dict:
        return {str(p): o for p, o in beginnings(self._c).items()}

    def latestOffset(self) -> dict:
        ends = {str(p): e for p, e in end_offsets(self._c, KafkaURI.parse(self.text)).items()}
        if self.until is not None:
            ends = {p: min(e, int(self.until.get(p, 0))) for p, e in ends.items()}
        return ends

    def partitions(self, start: dict, end: dict):
        return [_Range(int(p), int(start.get(p, 0)), int(e)) for p, e in sorted(end.items(), key=lambda x: int(x[0])) if int(e) > int(start.get(p, 0))]

    def read(self, partition: _Range):
        uri = KafkaURI.parse(self.text)
        c = consumer(uri)
        try:
            yield from read(c, uri, {partition.partition: partition.start}, {partition.partition: partition.end})
        finally:
            c.close()

    def commit(self, end: dict) -> None:
        pass

    def stop(self) -> None:
        if self._consumer is not None:
            self._consumer.close()


# --------------------------------------------------------------------------- driver side


def inspect_topic(alias: str, name: str, text: str, *, ts_column: str, ts_unit: str, lateness: int):
    """``(StreamInfo, recipe)`` of a topic: kinds and unit from its first messages (local reader rules)."""
    from slidewise.errors import SourceError
    from slidewise.runtime.sources import open_source

    uri = KafkaURI.parse(text)
    c = consumer(uri)
    try:
        start = beginnings(c)
        ends = end_offsets(c, uri)
        msgs = read(c, uri, start, {p: min(e, start[p] + SAMPLE) for p, e in ends.items()})
    finally:
        c.close()
    if not msgs:
        raise SourceError(
            f"stream {alias}: topic {uri.topic!r} is empty, and its schema is read from its first messages",
            location=text,
            hint="start the run once the topic has messages",
        )
    with tempfile.TemporaryDirectory(prefix="slidewise-kafka-") as work:
        path = Path(work) / ("sample.csv" if uri.format == "csv" else "sample.jsonl")  # Avro: as JSON lines
        path.write_bytes(message_lines([m[2] for m in sorted(msgs)], uri))
        src = open_source(name, str(path), ts_column=ts_column, ts_unit=ts_unit)
        kinds = dict(src.kinds)
    names = list(uri.columns) if uri.format == "csv" else [ts_column, *kinds]
    info = StreamInfo(alias, name, kinds, src.ts_unit, lateness, uri.format, 0, ("", uri.label))
    return info, {"fmt": "kafka", "uri": text, "names": names, "ends": {str(p): e for p, e in ends.items()}}


def bound(recipes: list[dict]) -> None:
    """``once``: every topic is read up to the end offsets seen when it was inspected."""
    for r in recipes:
        if r["fmt"] == "kafka":
            r["until"] = json.dumps(r["ends"])


def has_connector(spark) -> bool:
    """Whether Spark's own Kafka connector is on the classpath (never on Spark Connect)."""
    try:
        spark._jvm.java.lang.Class.forName("org.apache.spark.sql.kafka010.KafkaSourceProvider")
        return True
    except Exception:  # noqa: BLE001 - no JVM access or no such class
        return False


def topic_frame(spark, index: int, info: StreamInfo, recipe: dict, layout: Layout, ts_column: str, then=None):
    """Stream ``index`` (a topic) in the wire layout."""
    uri = KafkaURI.parse(recipe["uri"])
    if has_connector(spark):
        reader = (
            spark.readStream.format("kafka").option("kafka.bootstrap.servers", ",".join(uri.servers)).option("subscribe", uri.topic).option("startingOffsets", "earliest")
        )
        raw = reader.load().selectExpr("partition", "offset", "value")
    else:
        spark.dataSource.register(KafkaSource)
        reader = spark.readStream.format(KafkaSource.name()).option("uri", recipe["uri"])
        if recipe.get("until"):
            reader = reader.option("until", recipe["until"])
        raw = reader.load()
    names = tuple(recipe["names"])
    if uri.format != "avro":
        raw = _text_columns(raw, names, uri.format)
    from slidewise.spark.ingest import chained

    body = functools.partial(kafka_batches, stream=index, layout=layout, names=names, ts_column=ts_column, uri=recipe["uri"])
    return raw.mapInArrow(chained(body, then), WIRE_DDL)


def _text_columns(raw, names: tuple[str, ...], fmt: str):
    """JSON or CSV message values parsed by Spark's own readers (``from_json`` / ``from_csv`` with the file
    readers' options, :func:`slidewise.spark.ingest.file_reader`): text columns ``v0..`` and ``_corrupt``."""
    from pyspark.sql import functions as F

    ddl = ", ".join(f"`{c}` string" for c in names) + ", _corrupt string"
    options = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": "_corrupt", **({"escape": '"'} if fmt == "csv" else {})}
    parse = F.from_csv if fmt == "csv" else F.from_json
    text = F.col("value").cast("string")
    parsed = raw.where(F.length(F.trim(text)) > 0).select("partition", "offset", parse(text, ddl, options).alias("r"))  # blank: skipped, as blank lines
    return parsed.select("partition", "offset", *[F.col("r").getField(c).alias(f"v{j}") for j, c in enumerate(names)], F.col("r._corrupt").alias("_corrupt"))


# --------------------------------------------------------------------------- executor side


def kafka_batches(batches, *, stream: int, layout: Layout, names: tuple[str, ...], ts_column: str, uri: str = ""):
    """``mapInArrow`` body: message values decoded to text columns, converted, packed (order: partition, offset;
    an Avro container's records share their message's offset)."""
    from slidewise.spark.ingest import convert_raw, wire_chunks

    info = layout.streams[stream]
    for b in batches:
        n = b.num_rows
        if n == 0:
            continue
        raw, rows, known = b, np.arange(n), None
        if info.fmt == "avro":
            index, cols, corrupt = decode_avro(b.column("value").to_pylist(), list(names), KafkaURI.parse(uri))
            rows, known = np.asarray(index, dtype=np.int64), corrupt  # a corrupt record's text is its reason
            raw = pa.RecordBatch.from_pydict({**{f"v{j}": pa.array(cols[c], pa.string()) for j, c in enumerate(names)}, "_corrupt": pa.array(corrupt, pa.string())})
        ts, conv, bad, reasons, raws = convert_raw(raw, names, info, ts_column, known)
        partition = b.column("partition").to_numpy(zero_copy_only=False).astype(np.int64)[rows]
        offset = b.column("offset").to_numpy(zero_copy_only=False).astype(np.int64)[rows]
        files = np.full(len(rows), info.dirs[1], dtype=object)
        yield wire_batch(wire_chunks(stream, bad, ts, conv, offset, files, partition, offset + 1, reasons, raws))
