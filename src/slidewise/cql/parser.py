"""Entry points of the CQL parser: :func:`parse`, :func:`parse_plan`, :func:`parse_any`.

``grammar.lark`` holds two grammars, each compiled once (LALR(1), contextual
lexer) on first use: the select–project–join grammar above its
``---- full dialect`` marker (start ``start``, used by :func:`parse`) and the
whole file with start ``full`` (the dialect of Golab's thesis §3.4, used by
:func:`parse_plan` and :func:`parse_any`). Lark exceptions never leave this
module: :mod:`slidewise.cql.diagnostics` turns them into
:class:`~slidewise.errors.QueryError`; :mod:`slidewise.cql.join_builder` builds a
:class:`~slidewise.plan.query.JoinQuery`, :mod:`slidewise.cql.plan_builder` a
:class:`~slidewise.plan.logical.Plan`.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable
from pathlib import Path

from lark import Lark, Tree
from lark.exceptions import LarkError, UnexpectedCharacters

from slidewise.cql.diagnostics import empty_query, from_lark, query_error
from slidewise.cql.frequent import build_frequent, frequent_call
from slidewise.cql.join_builder import Builder, _pos
from slidewise.cql.plan_builder import PlanBuilder, output_name
from slidewise.errors import QueryError, SourceError
from slidewise.plan.logical import AGG_FUNCS, Plan
from slidewise.plan.query import JoinQuery
from slidewise.plan.wjoin import WJoinQuery

GRAMMAR = Path(__file__).with_name("grammar.lark")
FULL_MARKER = "// ---- full dialect"


def _compile(text: str, start: str) -> Lark:
    """The LALR parser of ``text``, loaded from the user's cache when built before (lark checks the file's
    grammar and options hash; building takes about 0.2 s of every run)."""
    return Lark(text, parser="lalr", lexer="contextual", start=start, propagate_positions=True, maybe_placeholders=True, cache=_cache_file(text, start) or False)


def _cache_file(text: str, start: str) -> str | None:
    """A file for the compiled parser in a private per-user directory (``$XDG_CACHE_HOME/slidewise`` or
    ``~/.cache/slidewise``, mode 0700, ours); None (no cache) when there is no such directory."""
    import hashlib

    import lark

    try:
        root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "slidewise"
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = root.stat()
        if st.st_uid != os.getuid() or st.st_mode & 0o077:  # pickles load only from a directory no one else writes
            return None
    except (OSError, RuntimeError, AttributeError):
        return None
    digest = hashlib.sha256(f"{lark.__version__}\0{start}\0{text}".encode()).hexdigest()[:24]
    return str(root / f"cql-{start}-{digest}.lark")


@functools.cache
def _lark() -> Lark:
    """The select–project–join grammar (the text above the full-dialect marker)."""
    text = GRAMMAR.read_text(encoding="utf-8")
    return _compile(text.split(FULL_MARKER, 1)[0], "start")


@functools.cache
def _full_lark() -> Lark:
    """The full dialect (start symbol ``full``)."""
    return _compile(GRAMMAR.read_text(encoding="utf-8"), "full")


def _check_text(text: object) -> None:
    if not isinstance(text, str):
        raise QueryError(f"a query must be text, got {type(text).__name__}")
    if not text.strip():
        raise empty_query(text)


def _tree(lark: Lark, text: str) -> Tree:
    try:
        return lark.parse(text)
    except UnexpectedCharacters as e:
        raise from_lark(text, e, _accepts_before_error(lark, text)) from None
    except LarkError as e:
        raise from_lark(text, e) from None


def _guard_depth(build: Callable[[], object]):
    try:
        return build()
    except RecursionError:
        raise QueryError("query is nested too deeply", hint="simplify the expression or split it into several conditions") from None


def parse(text: str) -> JoinQuery:
    """Parse a select–project–join query into a :class:`JoinQuery`; raise :class:`QueryError` if it is wrong.

    A query of the full dialect (DISTINCT, GROUP BY, UNION, NOT EXISTS, ...)
    is an error here that points at the feature and names
    :func:`parse_plan` / :func:`parse_any`.
    """
    _check_text(text)
    try:
        tree = _tree(_lark(), text)
    except QueryError as spj_error:
        raise _general_query_error(text, spj_error) from None
    return _guard_depth(lambda: Builder(text).build(tree))


def _general_query_error(text: str, spj_error: QueryError) -> QueryError:
    """``spj_error``, or why ``text`` (a general query) needs :func:`parse_plan`."""
    try:
        tree = _tree(_full_lark(), text)
    except QueryError:
        return spj_error
    features = general_features(tree, frozenset(), outputs=False)
    if not features:
        return spj_error
    try:
        _guard_depth(lambda: PlanBuilder(text).build(tree))
    except QueryError as e:  # a general query, but a wrong one: say what is wrong
        return e
    feature, (line, column) = features[0]
    return query_error(
        text,
        f"this query uses {feature}, which needs a general logical plan, not a select–project–join query",
        line,
        column,
        hint="use slidewise.cql.parse_plan(text) or parse_any(text) (the command line does)",
    )


def parse_plan(text: str, tables: Iterable[str] = frozenset()) -> Plan:
    """Parse any query of the full dialect into an unbound logical :class:`Plan`.

    ``tables``: names given as tables (``--table R=PATH``); a reference to one
    in FROM without ``TABLE`` is a non-retroactive relation (NRR).
    """
    _check_text(text)
    tree = _tree(_full_lark(), text)
    return _guard_depth(lambda: _build_plan(text, tree, frozenset(tables)))


def parse_any(text: str, tables: Iterable[str] = frozenset()) -> JoinQuery | Plan:
    """A :class:`JoinQuery` for a plain select–project–join query, else a :class:`Plan`.

    Plain means: one SELECT over streams (no table), no DISTINCT, aggregate,
    GROUP BY, UNION, EXCEPT, NOT EXISTS or subquery, and output ISTREAM,
    ISTREAM_RESTORE or none. Syntax errors are those of the full dialect.
    A WINDOW clause after FROM makes it a W-join (:mod:`slidewise.cql.wjoin`).
    """
    _check_text(text)
    from slidewise.cql.wjoin import has_window_clause, parse_wjoin

    if has_window_clause(text):
        return parse_wjoin(text)  # type: ignore[return-value]  # a W-join: the join engine runs it
    tables = frozenset(tables)
    tree = _tree(_full_lark(), text)
    if general_features(tree, tables) or frequent_call(tree) is not None:
        return _guard_depth(lambda: _build_plan(text, tree, tables))
    return parse(text)


def _build_plan(text: str, tree: Tree, tables: frozenset[str]) -> Plan:
    """The plan of a full-dialect tree; a FREQUENT query's (:mod:`slidewise.cql.frequent`) if it calls one."""
    call = frequent_call(tree)
    if call is not None:
        return build_frequent(text, tree, call, tables)
    return PlanBuilder(text, tables).build(tree)


def general_features(tree: Tree, tables: frozenset[str], outputs: bool = True) -> list[tuple[str, tuple[int, int]]]:
    """What makes a full-dialect parse tree a general query, with positions, in text order.

    Empty for a plain select–project–join query (what :func:`parse_any`
    returns as a JoinQuery). ``outputs=False`` ignores RSTREAM / DSTREAM,
    which :func:`~slidewise.cql.parser.parse` accepts.
    """
    found: list[tuple[str, tuple[int, int]]] = []
    plain_outputs = {"istream"} | (set() if outputs else {"rstream", "dstream"})
    for t in tree.iter_subtrees():
        ch = t.children
        if t.data in ("union", "except_"):
            found.append((str(ch[1]).upper(), _pos(ch[1])))
        elif t.data == "subquery_ref":
            found.append(("a subquery in FROM", _pos(t)))
        elif t.data == "table_ref":
            found.append(("TABLE", _pos(ch[0])))
        elif t.data == "ref" and str(ch[0]) in tables:
            found.append((f"table {ch[0]}", _pos(ch[0])))
        elif t.data == "exists":
            found.append(("NOT EXISTS", _pos(ch[0])))
        elif t.data in ("agg_star", "agg_distinct") or (t.data == "func" and str(ch[0]).lower() in AGG_FUNCS):
            found.append((f"aggregate {str(ch[0]).upper()}", _pos(ch[0])))
        elif t.data == "group_by":
            found.append(("GROUP BY", _pos(t)))
        elif t.data in ("p_head", "p_head_call", "full_wrapped"):
            if t.data != "full_wrapped" and ch[1] is not None:
                found.append(("DISTINCT", _pos(ch[1])))
            tok = ch[0].children[0] if isinstance(ch[0], Tree) else ch[0]
            if tok is not None:
                kind, restore = output_name(tok)
                if kind not in plain_outputs or (restore and kind != "istream"):
                    found.append((f"{kind.upper()}{'_RESTORE' if restore else ''} output", _pos(tok)))
    return sorted(found, key=lambda f: f[1])


def _accepts_before_error(lark: Lark, text: str) -> set[str] | None:
    """Terminals the parser accepts just before the character the lexer rejected."""
    interactive = lark.parse_interactive(text)
    try:
        for _ in interactive.iter_parse():
            pass
    except UnexpectedCharacters:
        return interactive.accepts()
    except LarkError:
        return None
    return None


def load_query(query: str | os.PathLike) -> JoinQuery:
    """Parse a query given as text, as the name of a ``*.cql`` file, or as a path object.

    Text is a file name only when it is one word ending in ``.cql`` (a missing
    one is a :class:`SourceError`); any ``os.PathLike`` (``--query-file``) is
    read as a file. Errors in a file's query name the file; the text of a file
    not named ``*.cql`` is never shown. Query text that looks like a path and
    does not parse gets a hint on how to read a file.
    """
    return _load(query, parse)


def load_any(query: str | os.PathLike, tables: Iterable[str] = frozenset()) -> JoinQuery | Plan:
    """:func:`load_query` with :func:`parse_any`: a JoinQuery or a Plan."""
    return _load(query, lambda text: parse_any(text, tables))


def load_join(query: str | os.PathLike) -> JoinQuery | WJoinQuery:
    """:func:`load_query`, or a W-join (:class:`~slidewise.plan.wjoin.WJoinQuery`) for a WINDOW clause after FROM."""
    from slidewise.cql.wjoin import has_window_clause, parse_wjoin

    return _load(query, lambda text: parse_wjoin(text) if has_window_clause(text) else parse(text))


QUERY_SUFFIX = ".cql"
MAX_QUERY_BYTES = 16 << 20
FILE_HINT = "to read a query from a file, name it *.cql or use --query-file PATH (from Python: a pathlib.Path)"


def _load(query, parse_text: Callable[[str], object]):
    if isinstance(query, os.PathLike):
        return _load_file(os.fspath(query), parse_text)
    word = query.strip() if isinstance(query, str) else ""
    one_word = bool(word) and not any(c.isspace() for c in word)
    if one_word and word.lower().endswith(QUERY_SUFFIX):
        return _load_file(word, parse_text)
    try:
        return parse_text(query)
    except QueryError as e:
        if one_word and ("/" in word or os.path.exists(word)):  # a path given as query text
            e.hint = f"{word!r} is read as query text, not as a file; {FILE_HINT}"
        raise


def read_query_file(path: str, *, missing: str, large: str, unreadable: str) -> str:
    """The UTF-8 text of query file ``path``; a SourceError (with the hint given for the case) if it is
    missing, larger than MAX_QUERY_BYTES or unreadable."""
    if not os.path.isfile(path):
        what = "is not a regular file" if os.path.exists(path) else "not found"
        raise SourceError(f"query file {what}: {path}", hint=missing)
    try:
        if os.path.getsize(path) > MAX_QUERY_BYTES:
            raise SourceError(f"query file {path} is larger than {MAX_QUERY_BYTES >> 20} MiB", hint=large)
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise SourceError(f"cannot read query file {path}: {e}", hint=unreadable) from None


def _load_file(path: str, parse_text: Callable[[str], object]):
    """The query in file ``path``; its text appears in errors only if it is named ``*.cql``."""
    text = read_query_file(
        path,
        missing="pass an existing file or the query text itself",
        large="is it really a query? pass a CQL text file",
        unreadable="pass a readable UTF-8 text file or the query text itself",
    )
    try:
        return parse_text(text)
    except QueryError as e:
        if not path.lower().endswith(QUERY_SUFFIX):
            where = f" at line {e.line}, column {e.column}" if e.line is not None else ""
            raise QueryError(
                f"query file {path} does not hold a valid query (error{where}; its text is not shown because the file is not named *{QUERY_SUFFIX})",
                hint="check the path given to --query-file",
            ) from None
        e.location = f"query file {path}" + (f", line {e.line}, column {e.column}" if e.line is not None else "")
        raise
