"""Entry points of the CQL parser: :func:`parse` and :func:`load_query`.

``grammar.lark`` is compiled once (LALR(1), contextual lexer) on first use.
Lark exceptions never leave this module: :mod:`slidewise.cql.diagnostics`
turns them into :class:`~slidewise.errors.QueryError`, and
:mod:`slidewise.cql.builder` turns the tree into a
:class:`~slidewise.plan.query.JoinQuery`.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from lark import Lark
from lark.exceptions import LarkError, UnexpectedCharacters

from slidewise.cql.builder import Builder
from slidewise.cql.diagnostics import empty_query, from_lark
from slidewise.errors import QueryError, SourceError
from slidewise.plan.query import JoinQuery

GRAMMAR = Path(__file__).with_name("grammar.lark")
QUERY_SUFFIXES = (".cql", ".sql", ".txt", ".query")


@functools.cache
def _lark() -> Lark:
    return Lark(GRAMMAR.read_text(encoding="utf-8"), parser="lalr", lexer="contextual",
                propagate_positions=True, maybe_placeholders=True)


def parse(text: str) -> JoinQuery:
    """Parse one CQL query into a :class:`JoinQuery`; raise :class:`QueryError` if it is wrong."""
    if not isinstance(text, str):
        raise QueryError(f"a query must be text, got {type(text).__name__}")
    if not text.strip():
        raise empty_query(text)
    try:
        tree = _lark().parse(text)
    except UnexpectedCharacters as e:
        raise from_lark(text, e, _accepts_before_error(text)) from None
    except LarkError as e:
        raise from_lark(text, e) from None
    try:
        return Builder(text).build(tree)
    except RecursionError:
        raise QueryError("query is nested too deeply",
                         hint="simplify the expression or split it into several conditions") from None


def _accepts_before_error(text: str) -> set[str] | None:
    """Terminals the parser accepts just before the character the lexer rejected."""
    interactive = _lark().parse_interactive(text)
    try:
        for _ in interactive.iter_parse():
            pass
    except UnexpectedCharacters:
        return interactive.accepts()
    except LarkError:
        return None
    return None


def load_query(text_or_path: str | os.PathLike) -> JoinQuery:
    """Parse a query given as text or as the path of a file holding it.

    An argument that names an existing file is read (UTF-8); one that looks
    like a file name (a single word ending in ``.cql``, ``.sql``, ``.txt`` or
    ``.query``) but does not exist is a :class:`SourceError`. Errors in a
    file's query name the file in their location.
    """
    arg = os.fspath(text_or_path)
    if os.path.isfile(arg):
        try:
            text = Path(arg).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise SourceError(f"cannot read query file {arg}: {e}",
                              hint="pass a readable UTF-8 text file or the query text itself") from None
        try:
            return parse(text)
        except QueryError as e:
            if e.line is not None:
                e.location = f"query file {arg}, line {e.line}, column {e.column}"
            else:
                e.location = f"query file {arg}"
            raise
    stripped = arg.strip()
    if stripped and not any(c.isspace() for c in stripped) and stripped.lower().endswith(QUERY_SUFFIXES):
        raise SourceError(f"query file not found: {stripped}",
                          hint="pass an existing file or the query text itself")
    return parse(arg)
