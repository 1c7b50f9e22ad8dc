"""Files of named queries for :func:`slidewise.run_many`.

One statement per query, each ``name: query``, statements separated by
``;`` (``;`` inside quotes and ``--`` comments does not count)::

    -- bandwidth per source, two windows
    per_src: SELECT RSTREAM(L.src, SUM(L.bytes) AS b) FROM L [RANGE 59 SLIDE 10] GROUP BY L.src;
    per_src_long: SELECT RSTREAM(L.src, MEDIAN(L.bytes) AS m) FROM L [RANGE 599 SLIDE 60] GROUP BY L.src;

A name is a letter or ``_`` followed by letters, digits and ``_`` (it names
the query's output file), unique in the file. Errors of statement *i* name it
— ``query 7 (top_src)`` — and point at the line and column in the file.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from slidewise.cql.diagnostics import line_col
from slidewise.cql.parser import parse_any, read_query_file
from slidewise.errors import QueryError, SlidewiseError

__all__ = ["NAME", "NamedQuery", "load_queries", "located", "parse_queries"]

#: a query's name
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NAME = re.compile(rf"\s*({NAME.pattern})\s*:")
_TOKEN = re.compile(r"'(?:[^']|'')*'?|--[^\n]*|;|[^';-]+|-")


@dataclass
class NamedQuery:
    """A statement of a query file: its number (from 1), name, text and parsed query."""

    index: int
    name: str
    text: str  # the query text padded with the blanked file before it (positions are the file's)
    query: object  # a JoinQuery or a Plan
    line: int  # where the name starts
    column: int
    where: str = "query"  # the file, for errors


def located(error: SlidewiseError, index: int, name: str | None, where: str = "query") -> SlidewiseError:
    """``error`` of statement ``index`` with its number and name in front; ``where`` replaces ``query`` in
    its location ("query line 3, column 7" -> "queries.cql line 3, column 7")."""
    label = f"query {index}" + (f" ({name})" if name else "")
    error.message = f"{label}: {error.message}"
    if error.location and error.location.startswith("query line") and where != "query":
        error.location = where + error.location[len("query") :]
    return error


def _statements(text: str):
    """``(start offset, statement text)`` of each ``;``-separated statement that is not blank or comment only."""
    start, parts, meaningful = 0, [], False
    for m in _TOKEN.finditer(text):
        tok = m.group()
        if tok == ";":
            if meaningful:
                parts.append((start, text[start : m.start()]))
            start, meaningful = m.end(), False
        elif not tok.startswith("--") and tok.strip():
            meaningful = True
    if meaningful:
        parts.append((start, text[start:]))
    return parts


def parse_queries(text: str, where: str = "query", tables=frozenset()) -> list[NamedQuery]:
    """The named queries of a query file's ``text``; ``where`` names the file in errors."""
    out: list[NamedQuery] = []
    names: dict[str, int] = {}
    for i, (start, stmt) in enumerate(_statements(text), 1):
        body = re.sub(r"^(\s|--[^\n]*)*", "", stmt)  # comments before the name
        at = start + len(stmt) - len(body)
        line, column = line_col(text, at)
        m = _NAME.match(body)
        if m is None:
            raise located(
                QueryError(
                    "a statement must start with its name and a colon", line=line, column=column, hint="write name: SELECT ...; with a name of letters, digits and _"
                ),
                i,
                None,
                where,
            )
        name = m.group(1)
        if name in names:
            raise located(
                QueryError(f"the name {name!r} is used twice (first by query {names[name]})", line=line, column=column, hint="give every query its own name"),
                i,
                name,
                where,
            )
        names[name] = i
        offset = at + m.end()
        padded = re.sub(r"[^\n]", " ", text[:offset]) + text[offset : start + len(stmt)]
        try:
            query = parse_any(padded, tables)
        except SlidewiseError as e:
            raise located(e, i, name, where) from None
        out.append(NamedQuery(i, name, padded, query, line, column, where))
    if not out:
        raise QueryError(f"{where} holds no query", hint="write one statement per query: name: SELECT ...;")
    return out


def load_queries(path: str | os.PathLike, tables=frozenset()) -> list[NamedQuery]:
    """The named queries of the file ``path``."""
    path = os.fspath(path)
    text = read_query_file(path, missing="pass a file of statements name: SELECT ...;", large="is it really a query file?", unreadable="pass a readable UTF-8 text file")
    return parse_queries(text, path, tables)
