"""Kafka on the local engine: topics read up to their end offsets at start, results written once.

:func:`run_local` reads each ``kafka://`` source from its beginning to the end offsets seen at
start (``--once``) into a JSON-lines or CSV file of a temporary directory (Avro records as JSON lines; one record per
message, so values, types and reject reasons are the file readers'; a reject's line is the
message's place in that read, in (partition, offset) order; errors name the topic, rejects the
temporary file), runs the query over them and sends the results to a
``kafka://`` ``out`` through a :class:`~slidewise.kafka.io.TopicWriter`.

Exactly once. The local engine keeps no operator state between runs, so a run recomputes from
the beginning of its topics; every result message is keyed by the query's identity, a hash of
its row and the row's occurrence number, and a restarted run skips the keys already in the
output topic: after a crash the rerun completes the output and the topic holds each result once.
A rerun over a *grown* topic is a new input: ``--once`` ended the last one (its last windows were
flushed as final), so results of the new run are added and the old ones stay.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from collections import Counter
from pathlib import Path

import pandas as pd

from slidewise.errors import SlidewiseError
from slidewise.kafka.io import TopicWriter, message_lines, read_bounded
from slidewise.kafka.uri import KafkaURI, is_kafka


def run_local(run, query, sources: dict, *, out=None, **options):
    """``run(query, sources, out=out, **options)`` (:func:`slidewise.run`, local engine) with topics read
    to a temporary directory first and results sent to a topic."""
    work = Path(tempfile.mkdtemp(prefix="slidewise-kafka-"))
    writer = None
    try:
        given = dict(sources)
        for name, spec in sources.items():
            if is_kafka(spec):
                given[name] = topic_file(KafkaURI.parse(spec), work / name)
        if is_kafka(out):
            identity = getattr(query, "text", None) or str(query)
            writer = ResultWriter(KafkaURI.parse(out), identity)
            options.setdefault("collect", False)
        try:
            return run(query, given, out=writer if writer is not None else out, **options)
        except SlidewiseError as e:  # name the topic, not its temporary file
            for name, spec in sources.items():
                if is_kafka(spec) and e.location and e.location.startswith(given[name]):
                    e.location = spec + e.location[len(given[name]) :]
            raise
    finally:
        if writer is not None:
            writer.close()
        shutil.rmtree(work, ignore_errors=True)


def topic_file(uri: KafkaURI, stem: Path) -> str:
    """The topic up to its end offsets now, as a JSON-lines or CSV file ``stem.jsonl`` / ``stem.csv``."""
    msgs = read_bounded(uri)
    msgs.sort(key=lambda m: (m[0], m[1]))
    path = stem.with_suffix(".csv" if uri.format == "csv" else ".jsonl")
    path.write_bytes(message_lines([m[2] for m in msgs], uri))
    return str(path)


def content_tags(frame: pd.DataFrame, seen: Counter | None = None) -> list[str]:
    """Per row: a hash of its JSON text and its occurrence number (counted in ``seen`` across calls)."""
    seen = Counter() if seen is None else seen
    lines = frame.to_json(orient="records", lines=True, date_format="iso").splitlines() if len(frame) else []
    tags = []
    for line in lines:
        digest = hashlib.sha1(line.encode()).hexdigest()[:20]
        tags.append(f"{digest}#{seen[digest]}")
        seen[digest] += 1
    return tags


class ResultWriter:
    """The ``out`` callable of a local run: each result frame to the topic, keyed by content and occurrence."""

    def __init__(self, uri: KafkaURI, identity: str):
        self.writer = TopicWriter(uri, hashlib.sha1(identity.encode()).hexdigest()[:12])
        self.seen: Counter = Counter()

    def __call__(self, frame: pd.DataFrame) -> None:
        self.writer.write(frame, content_tags(frame, self.seen))

    def close(self) -> None:
        self.writer.close()


class BatchWriter:
    """Results of micro-batch ``b`` to a topic, keyed ``b:<content>#<occurrence>`` under the run's identity."""

    def __init__(self, text: str, run: str):
        self.writer = TopicWriter(KafkaURI.parse(text) if isinstance(text, str) else text, hashlib.sha1(run.encode()).hexdigest()[:12])

    def write(self, frame, batch_id: int) -> int:
        return self.writer.write(frame, [f"{batch_id}:{t}" for t in content_tags(frame)])

    def close(self) -> None:
        self.writer.close()
