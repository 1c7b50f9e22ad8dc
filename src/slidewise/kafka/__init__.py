"""Kafka topics as sources and sinks of both engines (the ``kafka`` extra: kafka-python).

``kafka://HOST:PORT/topic?format=json|csv&...`` names a topic (:mod:`slidewise.kafka.uri`).
Reading (:mod:`slidewise.kafka.io`): partitions are assigned explicitly (no consumer groups)
and offsets are kept by slidewise; a bounded read stops at the end offsets seen at its start.
Message values are JSON objects or CSV records (:mod:`slidewise.kafka.io`), converted by
the local engine's rules. Writing: one JSON object per result; every message carries a key
that identifies the result (run identity, then a per-batch or per-content ordinal), and a
writer skips keys already in the topic, so a run replayed after a crash writes each result once.

Engines: the local engine reads a topic up to its end offsets at start (``--once``) and runs
over it as in-memory data (:mod:`slidewise.kafka.local`); Spark reads it with its own Kafka
connector when the jar is on the classpath, else with a Python streaming data source over
kafka-python whose offsets live in Spark's checkpoint (:mod:`slidewise.spark.kafka_source`).
"""

from __future__ import annotations

from slidewise.kafka.uri import KafkaURI, is_kafka

__all__ = ["KafkaURI", "is_kafka"]
