"""The options of one run, with their defaults, in one place.

:class:`RunOptions` is what the Python API (:func:`slidewise.run`), the
command line and both engines (local: :func:`slidewise.runtime.join_engine.execute`,
:func:`slidewise.runtime.plan_engine.execute_plan`; Spark:
:func:`slidewise.spark.join_runner.start_spark`,
:func:`slidewise.spark.plan_runner.start_plan_spark`) take for how a run reads its
inputs, orders them and writes its outputs. Each engine function also accepts
the fields as keyword arguments (``lateness=500``); :meth:`RunOptions.of`
merges the two.

>>> RunOptions(lateness="2s").lateness
2000
>>> RunOptions.of(None, chunk_rows=1024, progress=True).chunk_rows
1024
>>> RunOptions(partitions=0)
Traceback (most recent call last):
...
slidewise.errors.OptionError: partitions must be an integer from 1 to 1048576, got 0 (hint: calendar queue partitions for UPA, e.g. 10 or 50)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import Any

from slidewise.errors import OptionError

__all__ = ["DEFAULT_CHUNK_ROWS", "DEFAULTS", "MAX_PARTITIONS", "RUN_FIELDS", "STRATEGIES", "TS_UNITS", "RunOptions"]

#: rows per processing chunk (reading, merging, operators) unless a run says otherwise
DEFAULT_CHUNK_ROWS = 65536
#: the processing strategies of general plans: negative tuples, direct expiration, update-pattern aware
STRATEGIES = ("nt", "direct", "upa")
#: upper bound of the UPA calendar queue's partitions (each one is allocated up front)
MAX_PARTITIONS = 1 << 20
#: timestamp units of the readers (:func:`slidewise.runtime.sources.open_source`)
TS_UNITS = ("auto", "raw", "s", "ms", "us", "ns", "iso")


@dataclass(frozen=True)
class RunOptions:
    """How a run reads, orders and writes (any engine).

    ``lateness``: allowed out-of-orderness (time units, or text such as ``"10s"``);
    ``ts_column`` / ``ts_unit``: the timestamp column and its unit; ``chunk_rows``:
    rows per processing chunk; ``out``: result file / directory, ``"-"`` or a
    callback; ``collect``: keep results in memory (None: when there is no ``out``);
    ``rejects``: where rejected rows go; ``progress``: a progress line;
    ``strategy`` / ``partitions``: how general plans run (``nt``, ``direct``,
    ``upa``; UPA calendar queue partitions); ``schemas``: declared column types,
    stream -> {column: type} (see :func:`declared_schemas`), other columns inferred;
    ``streams``: per-stream ``lateness``, ``ts_column`` and ``ts_unit``, stream ->
    {setting: value}, over the run's own (see :meth:`for_stream`), and ``idle_timeout``
    (:meth:`idle_timeout`; Spark and followed topics only).
    """

    lateness: int = 0
    ts_column: str = "ts"
    ts_unit: str = "auto"
    chunk_rows: int = DEFAULT_CHUNK_ROWS
    out: str | Callable | None = None
    collect: bool | None = None
    rejects: str | None = None
    progress: bool = False
    strategy: str = "upa"
    partitions: int = 10
    schemas: dict | None = None
    streams: dict | None = None

    def __post_init__(self) -> None:  # chunk_rows and ts_unit: checked by the readers (open_source)
        from slidewise.model.time import parse_duration

        if self.schemas is not None:
            object.__setattr__(self, "schemas", declared_schemas(self.schemas))

        object.__setattr__(self, "lateness", parse_duration(self.lateness, what="lateness"))
        if self.streams is not None:
            object.__setattr__(self, "streams", stream_settings(self.streams))
        if self.strategy not in STRATEGIES:
            raise OptionError(f"unknown strategy {self.strategy!r}", hint=f"use one of {', '.join(STRATEGIES)}")
        if not _is_int(self.partitions) or not 1 <= self.partitions <= MAX_PARTITIONS:
            raise OptionError(
                f"partitions must be an integer from 1 to {MAX_PARTITIONS}, got {self.partitions!r}", hint="calendar queue partitions for UPA, e.g. 10 or 50"
            )

    @classmethod
    def of(cls, given: RunOptions | None = None, **changes: Any) -> RunOptions:
        """``given`` (default: all defaults) with ``changes``; a TypeError for a name that is no option."""
        unknown = sorted(set(changes) - set(RUN_FIELDS))
        if unknown:
            raise TypeError(f"unknown run option {unknown[0]!r}")
        base = given if given is not None else DEFAULTS
        return replace(base, **changes) if changes else base

    @classmethod
    def split(cls, given: RunOptions | None, kwargs: dict[str, Any]) -> tuple[RunOptions, dict[str, Any]]:
        """The run options among ``kwargs`` (merged into ``given``) and the other keyword arguments."""
        run = {k: v for k, v in kwargs.items() if k in RUN_FIELDS}
        return cls.of(given, **run), {k: v for k, v in kwargs.items() if k not in RUN_FIELDS}

    def for_stream(self, name: str) -> RunOptions:
        """These options with stream ``name``'s own lateness, timestamp column and unit."""
        own = {k: v for k, v in (self.streams or {}).get(name, {}).items() if k != "idle_timeout"}
        return replace(self, **own) if own else self

    def idle_timeout(self, name: str) -> float | None:
        """Stream ``name``'s idle timeout (seconds of processing time), or None."""
        return (self.streams or {}).get(name, {}).get("idle_timeout")

    def lateness_of(self, sources) -> list[int]:
        """The lateness of each source (objects with a ``name``), for :class:`~slidewise.runtime.reorder.Merger`."""
        return [self.for_stream(s.name).lateness for s in sources]

    def check_streams(self, names) -> None:
        """An OptionError when ``streams`` or ``schemas`` name a stream that is not among ``names``."""
        names = list(dict.fromkeys(names))
        for what, given in (("--source-option", self.streams), ("--schema", self.schemas)):
            unknown = sorted(set(given or {}) - set(names))
            if unknown:
                raise OptionError(f"{what} names an unknown stream {unknown[0]!r}", hint=f"streams: {', '.join(names) or '(none)'}")

    def collecting(self) -> bool:
        """Whether results are kept in memory: ``collect`` if given, else when there is no ``out``."""
        return self.out is None if self.collect is None else bool(self.collect)


#: declared column type -> reader kind
SCHEMA_TYPES = {
    "string": "str", "text": "str", "str": "str",
    "int": "int", "bigint": "int", "integer": "int", "long": "int",
    "double": "float", "float": "float",
    "bool": "bool", "boolean": "bool",
}  # fmt: skip
_SCHEMA_HINT = "write NAME=col:type,col:type (types: string, int, double, bool) or NAME=PATH of a JSON object {column: type}"


def declared_schemas(schemas: dict) -> dict[str, dict[str, str]]:
    """Stream -> {column: kind} from stream -> {column: type name}; an OptionError for an unknown type."""
    if not isinstance(schemas, dict):
        raise OptionError(f"schemas must be a dict of stream -> {{column: type}}, got {type(schemas).__name__}", hint=_SCHEMA_HINT)
    out = {}
    for stream, cols in schemas.items():
        if not isinstance(cols, dict):
            raise OptionError(f"the schema of {stream!r} must map column -> type, got {type(cols).__name__}", hint=_SCHEMA_HINT)
        out[str(stream)] = {}
        for col, typ in cols.items():
            kind = SCHEMA_TYPES.get(str(typ).strip().lower()) if isinstance(typ, str) else None
            if kind is None and typ in SCHEMA_TYPES.values():
                kind = typ
            if kind is None:
                raise OptionError(f"unknown type {typ!r} for column {col!r} of {stream!r}", hint="use string, int, double or bool")
            out[str(stream)][str(col)] = kind
    return out


def parse_schema_option(pairs: list[str] | None) -> dict[str, dict[str, str]] | None:
    """``--schema NAME=col:type,...`` / ``NAME=PATH`` / ``NAME=@PATH`` (a JSON object) -> stream -> {column: type}."""
    import json
    from pathlib import Path

    if not pairs:
        return None
    out: dict[str, dict[str, str]] = {}
    for pair in pairs:
        name, sep, spec = (x.strip() for x in pair.partition("="))
        if not sep or not name or not spec:
            raise OptionError(f"bad --schema {pair!r}", hint=_SCHEMA_HINT)
        if name in out:
            raise OptionError(f"--schema {name} is given twice", hint="give each stream's schema once")
        if spec.startswith("@") or spec.lower().endswith((".json", ".schema")) or (":" not in spec and Path(spec).is_file()):
            path = Path(spec.removeprefix("@"))
            try:
                cols = json.loads(path.read_text(encoding="utf-8"))
            except OSError as e:
                raise OptionError(f"cannot read --schema file {path}: {e.strerror or e}", hint=_SCHEMA_HINT) from None
            except ValueError as e:
                raise OptionError(f"--schema file {path} is not JSON: {e}", hint=_SCHEMA_HINT) from None
            if not isinstance(cols, dict):
                raise OptionError(f"--schema file {path} must hold a JSON object", hint=_SCHEMA_HINT)
            out[name] = cols
            continue
        cols = {}
        for item in spec.split(","):
            col, sep, typ = (x.strip() for x in item.partition(":"))
            if not sep or not col or not typ:
                raise OptionError(f"bad --schema column {item.strip()!r} in {pair!r}", hint=_SCHEMA_HINT)
            cols[col] = typ
        out[name] = cols
    return out


#: the per-stream settings (``--source-option NAME.KEY=VALUE``): spelling -> RunOptions field
STREAM_SETTINGS = {
    "lateness": "lateness",
    "ts_column": "ts_column",
    "ts-column": "ts_column",
    "ts": "ts_column",
    "ts_unit": "ts_unit",
    "ts-unit": "ts_unit",
    "idle-timeout": "idle_timeout",
    "idle_timeout": "idle_timeout",
}
_STREAM_HINT = (
    "write --source-option NAME.KEY=VALUE with KEY lateness (e.g. 5s), ts-column (a column name), ts-unit ("
    + ", ".join(TS_UNITS)
    + ") or idle-timeout (seconds of processing time, e.g. 30 or 500ms)"
)


def stream_settings(streams: dict) -> dict[str, dict]:
    """Stream -> {field: checked value} from stream -> {setting: value}; an OptionError naming a bad one."""
    from slidewise.model.time import parse_duration

    if not isinstance(streams, dict):
        raise OptionError(f"streams must be a dict of stream -> {{setting: value}}, got {type(streams).__name__}", hint=_STREAM_HINT)
    out: dict[str, dict] = {}
    for stream, given in streams.items():
        if not isinstance(given, dict):
            raise OptionError(f"the settings of stream {stream!r} must map setting -> value, got {type(given).__name__}", hint=_STREAM_HINT)
        own: dict = {}
        for key, value in given.items():
            field = STREAM_SETTINGS.get(str(key).strip().lower())
            if field is None:
                raise OptionError(f"unknown setting {key!r} for stream {stream!r}", hint=_STREAM_HINT)
            if field == "idle_timeout":
                value = _idle_seconds(value, stream)
            if field == "lateness":
                value = parse_duration(value, what=f"the lateness of {stream}")
            elif field == "ts_unit" and value not in TS_UNITS:
                raise OptionError(f"unknown timestamp unit {value!r} for stream {stream!r}", hint=f"use one of {', '.join(TS_UNITS)}")
            elif field == "ts_column" and (not isinstance(value, str) or not value):
                raise OptionError(f"the timestamp column of stream {stream!r} must be a column name, got {value!r}", hint=_STREAM_HINT)
            own[field] = value
        out[str(stream)] = own
    return out


def _idle_seconds(value, stream) -> float:
    """An idle timeout in seconds of processing time: a number of seconds, or text with a unit (``500ms``, ``2s``)."""
    from slidewise.model.time import parse_duration

    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = parse_duration(value, what=f"the idle timeout of {stream}") / 1000 if isinstance(value, str) and not value.strip().isdigit() else -1.0
    if not seconds > 0 or seconds != seconds:
        raise OptionError(f"the idle timeout of stream {stream!r} must be a positive number of seconds, got {value!r}", hint="e.g. --source-option C.idle-timeout=30")
    return seconds


def parse_stream_options(pairs: list[str] | None) -> dict[str, dict[str, str]] | None:
    """``--source-option NAME.KEY=VALUE`` (repeatable) -> stream -> {key: value} (checked by :func:`stream_settings`)."""
    if not pairs:
        return None
    out: dict[str, dict[str, str]] = {}
    for pair in pairs:
        target, sep, value = pair.partition("=")
        name, dot, key = target.strip().rpartition(".")
        if not sep or not dot or not name or not key or not value.strip():
            raise OptionError(f"bad --source-option {pair!r}", hint=_STREAM_HINT)
        if key.strip().lower() not in STREAM_SETTINGS:
            raise OptionError(f"unknown setting {key!r} in --source-option {pair!r}", hint=_STREAM_HINT)
        out.setdefault(name, {})[key.strip().lower()] = value.strip()
    return out


def _is_int(value) -> bool:
    import numpy as np

    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


#: the names of :class:`RunOptions`' fields
RUN_FIELDS = tuple(f.name for f in fields(RunOptions))
#: every option at its default
DEFAULTS = RunOptions()
