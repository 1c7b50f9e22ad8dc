"""The WINDOW clause of W-join queries (Hammad, Aref & Elmagarmid, SSDBM 2003, §2)::

    SELECT ... FROM A, B, C WINDOW(A, B) = 10 AND DWINDOW(B, C) = 5 s [WHERE ...]
    SELECT ... FROM A, B, C WINDOW = 10 [WHERE ...]

The clause sits between FROM and WHERE; its items are joined by AND. ``WINDOW = w`` constrains
every pair; ``WINDOW(A, B) = w`` means ``|A.ts - B.ts| <= w``; ``DWINDOW(A, B) = w`` means
``0 <= B.ts - A.ts <= w``. ``w`` takes the time units of window sizes (``5 s``) or none. The
rest of the query is parsed by :func:`~slidewise.cql.parse` with the clause blanked out (so
every location stays true); the streams take no window of their own.
"""

from __future__ import annotations

import re

from slidewise.cql.diagnostics import line_col, query_error
from slidewise.cql.join_builder import UNITS
from slidewise.cql.parser import parse
from slidewise.errors import QueryError
from slidewise.plan.wjoin import WindowConstraint, WJoinQuery

__all__ = ["has_window_clause", "parse_wjoin"]

# the clause: from the first WINDOW/DWINDOW keyword followed by "(" or "=" up to WHERE (or the next clause), ";" or the end
_START = re.compile(r"(?<![.\w])(d?window)\s*(?=[(=])", re.I)
_END = re.compile(r"\b(?:where|group|having|order|limit)\b|;|$", re.I)
_ITEM = re.compile(
    r"\s*(?P<kw>d?window)\s*(?:\(\s*(?P<a>[a-z_]\w*)\s*,\s*(?P<b>[a-z_]\w*)\s*\))?\s*=\s*"
    r"(?P<neg>-\s*)?(?P<num>\d+)\s*(?P<unit>(?!and\b|where\b)[a-z]+)?\s*",
    re.I,
)
_AND = re.compile(r"and\b", re.I)
_USAGE = "write e.g. FROM A, B WINDOW(A, B) = 10 AND DWINDOW(B, C) = 5 WHERE ..., or WINDOW = 10 for every pair"


def has_window_clause(text: str) -> bool:
    """Does ``text`` hold a W-join WINDOW clause after FROM?"""
    m = re.search(r"\bfrom\b", text, re.I)
    if m is None:
        return False
    end = _END.search(text, m.end())
    return _START.search(text, m.end(), end.start()) is not None


def _error(text: str, offset: int, message: str, hint: str = _USAGE) -> QueryError:
    return query_error(text, message, *line_col(text, offset), hint)


def parse_wjoin(text: str) -> WJoinQuery:
    """Parse a W-join query; a located :class:`QueryError` for every mistake."""
    m_from = re.search(r"\bfrom\b", text, re.I)
    start = _START.search(text, m_from.end()) if m_from else None
    if start is None:
        raise QueryError("no WINDOW clause after FROM", hint=_USAGE)
    end = _END.search(text, start.start()).start()
    items = []
    pos = start.start()
    while True:
        m = _ITEM.match(text, pos, end)
        if m is None:
            raise _error(text, pos + len(text[pos:end]) - len(text[pos:end].lstrip()), "cannot read this window constraint")
        items.append(m)
        pos = m.end()
        if pos >= end:
            break
        a = _AND.match(text, pos, end)
        if a is None:
            raise _error(text, pos, "expected AND or WHERE after a window constraint")
        pos = a.end()
    try:
        join = parse(text[: start.start()] + " " * (end - start.start()) + text[end:])
    except QueryError as e:  # the same location, shown in the text as written
        if e.line is None or e.column is None:
            raise
        raise query_error(text, e.message, e.line, e.column, e.hint) from None
    aliases = [a.lower() for a in join.aliases]
    constraints: list[WindowConstraint] = []
    for m in items:
        w = int(m["num"])
        if m["unit"]:
            if m["unit"].lower() not in UNITS:
                raise _error(text, m.start("unit"), f"unknown time unit {m['unit']!r}", hint="use ms, s, min, h or d, or no unit for the source's own timestamp units")
            w *= UNITS[m["unit"].lower()]
        if m["neg"]:
            raise _error(text, m.start("neg"), f"negative window -{m['num']}", hint="a window is a distance >= 0")
        directed = m["kw"].lower() == "dwindow"
        if m["a"] is None:
            if directed:
                raise _error(text, m.start("kw"), "DWINDOW needs its two streams", hint="write DWINDOW(A, B) = w: A's tuple first, B's at most w later")
            constraints += [WindowConstraint(i, j, w) for i in range(join.n) for j in range(i + 1, join.n)]
            continue
        ends = []
        for g in ("a", "b"):
            if m[g].lower() not in aliases:
                raise _error(text, m.start(g), f"unknown stream {m[g]!r} in a window constraint", hint=f"name a stream of FROM: {', '.join(join.aliases)}")
            ends.append(aliases.index(m[g].lower()))
        if ends[0] == ends[1]:
            raise _error(text, m.start("b"), f"window constraint between {m['a']} and itself", hint="a constraint names two different streams of FROM")
        constraints.append(WindowConstraint(ends[0], ends[1], w, directed))
    for s in join.streams:
        if s.window.kind != "unbounded":
            raise QueryError(
                f"stream {s.alias} has its own window {s.window} in a W-join", hint="a W-join's windows are its WINDOW constraints; drop the [ ... ] after the stream"
            )
    try:
        return WJoinQuery(join, tuple(constraints))
    except QueryError as e:
        raise _error(text, start.start(), e.message, e.hint or _USAGE) from None
