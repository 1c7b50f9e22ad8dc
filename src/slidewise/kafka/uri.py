"""``kafka://HOST:PORT[,HOST:PORT]/topic?format=json|csv|avro&columns=a,b&schema=PATH&partitions=1`` parsed and checked.

``format=avro``: each value is one Avro binary record (no container header) of the writer schema
``schema=PATH`` (an ``.avsc`` JSON file), or an Avro object container file with its own schema.

>>> u = KafkaURI.parse("kafka://127.0.0.1:9092/dns?format=csv&columns=ts,a")
>>> u.servers, u.topic, u.format, u.columns
(['127.0.0.1:9092'], 'dns', 'csv', ['ts', 'a'])
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass, field

from slidewise.errors import OptionError

FORMATS = ("json", "csv", "avro")
PREFIX = "kafka://"
_HINT = "write kafka://HOST:PORT/TOPIC?format=json (or format=csv&columns=ts,a,b, or format=avro&schema=record.avsc)"
_OPTIONS = ("format", "columns", "schema", "partitions")


def is_kafka(spec) -> bool:
    """A ``kafka://`` URI."""
    return isinstance(spec, str) and spec.startswith(PREFIX)


def uses_kafka(sources: dict, out) -> bool:
    """Whether a run reads a ``kafka://`` source or writes a ``kafka://`` ``out``."""
    return is_kafka(out) or any(is_kafka(s) for s in sources.values())


@dataclass(frozen=True)
class KafkaURI:
    """A topic: bootstrap servers, topic, value format; ``columns``: the CSV field names (values
    carry no header); ``partitions``: partitions of a topic the sink creates; ``schema``: the Avro
    writer schema file (values without a container header)."""

    servers: list[str]
    topic: str
    format: str = "json"
    columns: list[str] = field(default_factory=list)
    partitions: int = 1
    text: str = ""
    schema: str = ""

    @classmethod
    def parse(cls, text: str) -> KafkaURI:
        u = urllib.parse.urlsplit(text)
        topic = urllib.parse.unquote(u.path.lstrip("/"))
        if u.scheme != "kafka" or not u.netloc or not topic or "/" in topic:
            raise OptionError(f"bad Kafka address {text!r}", hint=_HINT)
        opts = dict(urllib.parse.parse_qsl(u.query, keep_blank_values=True))
        unknown = [k for k in opts if k not in _OPTIONS]
        if unknown:
            raise OptionError(f"unknown Kafka option {unknown[0]!r} in {text!r}", hint=f"options: {', '.join(_OPTIONS)}")
        fmt = opts.get("format", "json").lower()
        if fmt not in FORMATS:
            raise OptionError(f"unknown Kafka value format {fmt!r} in {text!r}", hint="use format=json, format=csv or format=avro")
        columns = [c.strip() for c in opts.get("columns", "").split(",") if c.strip()]
        if fmt == "csv" and not columns:
            raise OptionError(f"format=csv needs the field names: {text}", hint="add &columns=ts,a,b (CSV messages carry no header)")
        parts = opts.get("partitions", "1")
        if not parts.isdigit() or int(parts) < 1:
            raise OptionError(f"partitions must be a positive integer in {text!r}")
        return cls(u.netloc.split(","), topic, fmt, columns, int(parts), text, opts.get("schema", ""))

    @property
    def label(self) -> str:
        """How rejects name the topic."""
        return f"kafka:{self.topic}"
