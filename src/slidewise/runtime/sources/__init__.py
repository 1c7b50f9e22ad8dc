"""Input sources: CSV, JSON lines and Parquet files or directories, and in-memory data.

:func:`open_source` inspects the input and returns a :class:`Source`; its
``chunks()`` yields :class:`RawChunk` s (int64 timestamps, numpy columns,
1-based file line numbers) in input order. A directory is read in sorted name
order (hidden and ``_``-prefixed files skipped); its files must share a schema.
Text files may be compressed (``.csv.gz``, ``.jsonl.zst``, ...).

Schema: integers -> int64, floats -> float64, booleans -> bool, anything else
-> str (object arrays). Text files are typed from their first MiB; a column of
numbers with at most max(1, 1%) stray values there is numeric (the stray rows
become rejects); an integer column with a missing value anywhere (a scan of up
to 512 MiB) is read as float64 with NaN.

Timestamps (docs/semantics.md, "Time and order"), ``ts_unit``: ``auto`` – integers as
they are, floats as epoch seconds and ISO-8601 text both to epoch ms, never
guessing: a sample mixing units is an error; ``raw``
– integers as they are; ``s`` / ``ms`` / ``us`` / ``ns`` – epoch numbers in
that unit, to ms (rounded down); ``iso`` – ISO-8601 text to ms.

Bad rows (wrong field count, bad JSON, unparseable or missing timestamp,
unparseable number, invalid UTF-8, a CSV record longer than ``_MAX_ROW_BYTES``)
become rejects with file, line and reason and never stop a run; a missing or
unreadable input, a file that is not UTF-8 text (UTF-16, binary), a missing
timestamp column, timestamps whose unit ``auto`` cannot tell (magnitudes of
different epoch units, numbers beside ISO-8601 text) or files with different
schemas raise :class:`~slidewise.errors.SourceError`.

Reading is columnar: pyarrow parses blocks of bytes cut at record boundaries
(found with numpy, quote-aware), which keeps line numbers exact; Python only
touches rejected rows.

Modules: ``source`` (:func:`open_source`, :class:`Source`, locating inputs),
``schema`` (type and timestamp-unit inference), ``convert`` (values to numpy,
bad values to rejects), ``text`` (CSV and JSON lines), ``parquet``, ``memory``
(DataFrame, Arrow table, dict of columns, iterable of dicts), ``base`` (shared
types and errors).

>>> src = open_source("S", {"ts": [2.5, 1.0], "k": [7, 8]})
>>> src.schema, [(c.ts.tolist(), c.lines.tolist()) for c in src.chunks()]
({'k': dtype('int64')}, [([2500, 1000], [1, 2])])
"""

from __future__ import annotations

from slidewise.runtime.sources.base import RawChunk
from slidewise.runtime.sources.source import FORMATS, TS_UNITS, Source, open_source, open_stream

__all__ = ["FORMATS", "TS_UNITS", "RawChunk", "Source", "open_source", "open_stream"]

# Text-file block sizes. The text readers look them up here on each use, so
# setting them on this package (as tests do) takes effect.
_SAMPLE_BYTES = 1 << 20  # text files: schema and timestamp unit are inferred from this much
_MIN_BLOCK, _MAX_BLOCK = 1 << 20, 64 << 20  # bytes parsed per pyarrow call
_MAX_ROW_BYTES = 64 << 20  # CSV records longer than this are rejected, not read
_PRESCAN_BYTES = 512 << 20  # text files: integer columns are checked for missing values this far
