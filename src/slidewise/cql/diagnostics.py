"""Turn parse failures into :class:`~slidewise.errors.QueryError` with a caret excerpt.

Lark reports terminal names (``LSQB``, ``$END``, ...); users should read the
tokens they could have written instead. :func:`from_lark` translates lark's
exceptions, :func:`query_error` builds an error at any source position, and
:func:`describe_expected` renders a set of terminal names.

>>> print(excerpt("SELECT * FROM S1 WHER", 1, 18))
SELECT * FROM S1 WHER
                 ^
>>> describe_expected({"WHERE", "COMMA", "$END"})
"WHERE, ',', end of query"
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedEOF, UnexpectedToken

from slidewise.errors import QueryError, printable

# Terminals that are not keywords, described in words.
_WORDS = {
    "NAME": "a name",
    "NUMBER": "a number",
    "STRING": "a string",
    "CMP": "a comparison operator",
    "OUTPUT_CALL": "ISTREAM(",
    "P_OUTPUT_CALL": "ISTREAM(",
    "ALIAS": "an alias",
    "JOIN_KIND": "INNER JOIN",
}
# Punctuation, in the order it is listed.
_PUNCT = {
    "COMMA": ",",
    "SEMICOLON": ";",
    "LPAR": "(",
    "RPAR": ")",
    "LSQB": "[",
    "RSQB": "]",
    "DOT": ".",
    "STAR": "*",
    "PLUS": "+",
    "MINUS": "-",
    "SLASH": "/",
    "PERCENT": "%",
}
_OUTPUTS = {
    "ISTREAM",
    "RSTREAM",
    "DSTREAM",
    "ISTREAM_RESTORE",
    "RSTREAM_RESTORE",
    "OUTPUT_CALL",
    "WSTREAM",
    "WSTREAM_RESTORE",
    "P_OUTPUT_CALL",
}  # the last three: full dialect only
_EXPR_START = {"LPAR", "MINUS", "NAME", "NUMBER", "STRING"}
RESERVED = {"SELECT", "FROM", "WHERE", "AND", "OR", "NOT", "AS"}  # see NAME in grammar.lark
# SQL words of other systems that CQL spells differently -> (message, the CQL way)
_FOREIGN = {
    "over": (
        "window functions (OVER ...) are not supported",
        "put the window on the stream and aggregate per group: SELECT S.k, SUM(S.a) FROM S [RANGE 5 SECONDS] GROUP BY S.k",
    ),
    "order": ("ORDER BY is not supported: results come in timestamp order", "drop ORDER BY (TOPK(S.x, k) keeps the k most frequent values)"),
    "limit": ("LIMIT is not supported: a continuous query has no last row", "drop LIMIT; [ROWS n] keeps the n most recent tuples of a stream"),
}
_MAX_SHOWN = 30  # characters of an offending token quoted in a message


def excerpt(text: str, line: int, column: int) -> str:
    """Source line ``line`` (1-based) and a caret under ``column`` (1-based)."""
    lines = text.splitlines() or [""]
    src = lines[line - 1] if 0 < line <= len(lines) else ""
    before = printable(src[: max(column - 1, 0)])  # escaped control characters widen the line
    pad = "".join("\t" if ch == "\t" else " " for ch in before)
    pad += " " * max(column - 1 - len(src), 0)
    return f"{printable(src)}\n{pad}^"


def line_col(text: str, offset: int) -> tuple[int, int]:
    """The 1-based line and column of character ``offset`` of ``text``."""
    return text.count("\n", 0, offset) + 1, offset - (text.rfind("\n", 0, offset) + 1) + 1


def query_error(text: str, message: str, line: int, column: int, hint: str | None = None) -> QueryError:
    """A :class:`QueryError` at ``line``/``column`` of ``text`` with its excerpt."""
    return QueryError(message, line=line, column=column, excerpt=excerpt(text, line, column), hint=hint)


def describe_expected(names: Iterable[str]) -> str:
    """Readable list of the tokens lark could accept (terminal names in, words out)."""
    return ", ".join(_expected_items(names))


def _expected_items(names: Iterable[str]) -> list[str]:
    names = set(names)
    groups: list[str] = []
    if "ISTREAM" in names:
        names -= _OUTPUTS
        groups.append("an output operator such as ISTREAM")
    if _EXPR_START <= names:
        names -= _EXPR_START | {"NOT", "EXISTS", "CASE"}
        groups.append("an expression")
    if "SLIDE" in names and "NAME" in names:
        names.discard("NAME")
        groups.append("a time unit")
    names.discard("OUTER")  # LEFT OUTER JOIN: only to name it in an error
    names.discard("ALIAS" if "AS" in names else "")
    keywords = sorted(n for n in names if n.isupper() and n not in _WORDS and n not in _PUNCT and not n.startswith(("$", "_")))
    words = [_WORDS[n] for n in sorted(names) if n in _WORDS]
    punct = [f"'{_PUNCT[n]}'" for n in _PUNCT if n in names]
    tail = ["end of query"] if "$END" in names else []
    return keywords + groups + words + punct + tail


def _expected_hint(names: Iterable[str], got: str | None = None) -> str | None:
    names = set(names)
    if not names:
        return None
    items = _expected_items(names)
    hint = ("expected one of: " if len(items) > 1 else "expected ") + ", ".join(items)
    if got:
        keywords = [n for n in names if n.isalpha() and n.isupper() and n not in _WORDS]
        close = difflib.get_close_matches(got.upper(), keywords, n=1, cutoff=0.75)
        if close:
            hint = f"did you mean {close[0]}? {hint}"
        elif "COMMA" in names:
            hint = f"is a ',' missing before it? {hint}"
    return hint


def _misspelt_keyword_alias(before: str, expected: Iterable[str]) -> tuple[str, str] | None:
    """``(word, keyword)`` when the word before an unexpected token, an alias without AS, looks like a
    misspelt keyword the parser would have taken in its place."""
    if "ALIAS" in expected or "AS" in expected or not before or not (before[-1].isalnum() or before[-1] == "_"):
        return None
    word = before.split()[-1] if before.split() else ""
    if not word.isidentifier():
        return None
    keywords = [n for n in expected if n.isalpha() and n.isupper() and n not in _WORDS and n != "OUTER"]
    close = difflib.get_close_matches(word.upper(), keywords, n=1, cutoff=0.75)
    return (word, close[0]) if close and close[0] != word.upper() else None


def _shown(value: str) -> str:
    value = value if len(value) <= _MAX_SHOWN else value[: _MAX_SHOWN - 3] + "..."
    return f"'{value}'"


def from_lark(text: str, exc: LarkError, accepts: Iterable[str] | None = None) -> QueryError:
    """Translate a lark exception raised while parsing ``text``.

    ``accepts``, if known, are the terminals the parser could take where an
    unexpected character stopped the lexer (lark only lists the lexer's).
    """
    if isinstance(exc, UnexpectedToken):
        tok = exc.token
        expected = exc.accepts or exc.expected
        if tok.type == "$END":
            if tok.end_line is None:  # no token at all: only blanks and comments
                return empty_query(text)
            return query_error(text, "unexpected end of query", tok.end_line, tok.end_column, _expected_hint(expected))
        foreign = _FOREIGN.get(tok.value.lower())
        if foreign is not None:
            return query_error(text, foreign[0], tok.line, tok.column, foreign[1])
        hint = _expected_hint(expected, tok.value if tok.type in ("NAME", "ALIAS") else None)
        before = text.splitlines()[tok.line - 1][: tok.column - 1].rstrip() if tok.line else ""
        words = before.split()
        if tok.value == "[" and words and words[-1].isidentifier() and "ALIAS" not in expected:
            word = words[-1]  # "FROM S1 [RANGE 5] S2 [RANGE 5]": S2 was read as S1's alias
            return query_error(
                text,
                f"unexpected {_shown(word)}",
                tok.line,
                len(before) - len(word) + 1,
                "is a ',' missing before it? a window follows its stream's name, then the alias: FROM S [RANGE 5] s",
            )
        alias = _misspelt_keyword_alias(before, expected)
        if alias is not None:  # "FROM S WHER S.a = 1": WHER was read as an alias without AS
            word, keyword = alias
            return query_error(
                text, f"unexpected {_shown(word)}", tok.line, len(before) - len(word) + 1, f"did you mean {keyword}? a word right after a FROM item is read as its alias"
            )
        if tok.value == "=" and before.endswith("="):
            hint = "compare with a single '=', e.g. S1.a = S2.a"
        elif tok.type in RESERVED and "NAME" in expected:
            hint = f"{tok.type} is a reserved word and cannot name a stream or an attribute"
        return query_error(text, f"unexpected {_shown(tok.value)}", tok.line, tok.column, hint)
    if isinstance(exc, UnexpectedCharacters):
        char = exc.char
        if char == "'":
            return query_error(text, "unterminated string literal", exc.line, exc.column, "close it with a single quote, e.g. 'text'")
        if char == '"':
            hint = "string literals use single quotes, e.g. 'text'"
        elif char == "!":
            hint = "write 'not equal' as != or <>"
        else:
            hint = _expected_hint(accepts if accepts is not None else exc.allowed or ())
        return query_error(text, f"unexpected character {char!r}", exc.line, exc.column, hint)
    if isinstance(exc, UnexpectedEOF):
        lines = text.splitlines() or [""]
        return query_error(text, "unexpected end of query", len(lines), len(lines[-1]) + 1, _expected_hint(exc.expected))
    first = str(exc).strip().splitlines()
    return QueryError(f"cannot parse query: {first[0] if first else type(exc).__name__}")


def empty_query(text: str) -> QueryError:
    """The error for a query of only blanks and comments."""
    return QueryError("empty query", line=1, column=1, excerpt=excerpt(text, 1, 1) if text.strip() else None, hint="write e.g. SELECT * FROM S1 [RANGE 10]")
