"""One error hierarchy for everything a user can get wrong.

Every user-facing error carries a one-line ``message``, an optional
``location`` (file:line, query line:column, stream name) and an optional
``hint`` telling how to fix it. The CLI prints ``str(error)`` and exits
non-zero; it never shows a traceback for a :class:`SlidewiseError`.
``str(error)`` escapes control characters (file contents, column names),
so a message never drives the terminal.
"""

from __future__ import annotations

import re

#: control characters (C0, DEL, C1) and bidirectional overrides: never sent to a terminal raw
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` with control characters escaped (``\\x1b``, ``\\u202e``); tabs and newlines kept."""
    return _CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}", text)


class SlidewiseError(Exception):
    """Base class of all errors slidewise reports to users."""

    exit_code = 2

    def __init__(self, message: str, *, location: str | None = None, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.location = location
        self.hint = hint

    def __str__(self) -> str:
        text = f"{self.location}: {self.message}" if self.location else self.message
        if self.hint:
            text += f" (hint: {self.hint})"
        return printable(text.replace("\n", " "))


class QueryError(SlidewiseError):
    """The query text cannot be parsed; carries line, column and a caret excerpt."""

    def __init__(self, message: str, *, line: int | None = None, column: int | None = None, excerpt: str | None = None, hint: str | None = None):
        loc = f"query line {line}, column {column}" if line is not None else None
        super().__init__(message, location=loc, hint=hint)
        self.line, self.column, self.excerpt = line, column, excerpt

    def __str__(self) -> str:
        text = super().__str__()
        if self.excerpt:
            text += "\n" + printable(self.excerpt)
        return text


class PlanError(SlidewiseError):
    """The query parses but cannot be planned (unknown stream, unsupported combination)."""


class SourceError(SlidewiseError):
    """An input file or source is missing, unreadable or of the wrong shape."""


class ExecutionError(SlidewiseError):
    """A run failed for a reason that is not the user's input (should be rare)."""


class OptionError(SlidewiseError):
    """A command-line or API option has a bad value."""


class CheckpointError(SlidewiseError):
    """A checkpoint directory is damaged, was changed outside slidewise, or lost its state."""


#: the optional extras of ``pip install 'slidewise[...]'`` and the modules each provides
EXTRAS = {
    "spark": ("pyspark", "google.protobuf"),
    "bench": ("duckdb", "matplotlib", "psutil"),
    "kafka": ("kafka", "fastavro"),
    "sketches": ("datasketches",),
    "serve": ("starlette", "uvicorn"),
}


def require_extra(extra: str, what: str) -> None:
    """An OptionError naming the extra when one of its modules does not import (``what`` needs it)."""
    import importlib

    for module in EXTRAS[extra]:
        try:
            importlib.import_module(module)
        except ImportError:
            raise OptionError(f"{what} needs {module.split('.')[-1]}, which is not installed", hint=f"pip install 'slidewise[{extra}]'") from None


#: a value a reader could not decode, written into a record file as ``MALFORMED_AVRO + reason``:
#: the file readers take that text as the reject reason (see ``slidewise.kafka.io.avro_records``)
MALFORMED_AVRO = "malformed Avro record: "
