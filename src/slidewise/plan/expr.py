"""Scalar expressions of the query language, evaluated per tuple or per column.

One evaluator serves both the per-tuple paper operators (``get`` returns Python
scalars) and the columnar paths (``get`` returns numpy arrays): arithmetic and
comparisons broadcast, boolean connectives use ``numpy.logical_*``.

NULL is NaN in a number column and ``None`` in a text column (as the sources
read missing values). ``x / 0`` and ``x % 0`` are NULL; arithmetic on NULL is
NULL. Conditions follow SQL's three-valued logic: a comparison with NULL is
unknown, ``NOT`` unknown is unknown, ``AND`` / ``OR`` are Kleene's, and a
condition's value is true only where it holds (unknown filters a row out).

>>> e = Cmp(">", Col(0, "x", "S1"), Lit(3))
>>> bool(evaluate(e, lambda s, a: {"x": 5}[a]))
True
>>> str(e)
'S1.x > 3'
>>> evaluate(BinOp("/", Col(0, "x", "S1"), Lit(0)), lambda s, a: np.array([1, 0])).tolist()
[nan, nan]
>>> evaluate(Not(Cmp(">", BinOp("%", Col(0, "x"), Lit(0)), Lit(1))), lambda s, a: np.array([5])).tolist()
[False]
"""

from __future__ import annotations

import functools
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd


class Expr:
    """Base class of expression nodes (immutable dataclasses)."""


@dataclass(frozen=True)
class Col(Expr):
    """Attribute ``attr`` of the stream at index ``stream`` in FROM (``ts`` allowed); ``stream = -1``:
    the column named ``attr`` of the plan node below (an aggregate's output, e.g. in HAVING)."""

    stream: int
    attr: str
    name: str = ""  # stream alias, for display
    pos: tuple[int, int] | None = field(default=None, compare=False, repr=False)  # query line, column

    def __str__(self) -> str:
        if self.stream < 0 and not self.name:  # an output column of the node below, by name
            return self.attr
        return f"{self.name or f'#{self.stream}'}.{self.attr}"


@dataclass(frozen=True)
class Lit(Expr):
    value: object
    pos: tuple[int, int] | None = field(default=None, compare=False, repr=False)

    def __str__(self) -> str:
        if isinstance(self.value, str):  # CQL's quoting, so a shown condition parses back
            return "'" + self.value.replace("'", "''") + "'"
        return str(self.value)


@dataclass(frozen=True)
class BinOp(Expr):
    op: str  # + - * / %
    left: Expr
    right: Expr
    pos: tuple[int, int] | None = field(default=None, compare=False, repr=False)

    def __str__(self) -> str:
        return f"({self.left} {self.op} {self.right})"


@dataclass(frozen=True)
class Cmp(Expr):
    op: str  # = != < <= > >=
    left: Expr
    right: Expr
    pos: tuple[int, int] | None = field(default=None, compare=False, repr=False)

    def __str__(self) -> str:
        return f"{self.left} {self.op} {self.right}"


@dataclass(frozen=True)
class And(Expr):
    items: tuple[Expr, ...]

    def __str__(self) -> str:
        return " AND ".join(f"({i})" if isinstance(i, Or) else str(i) for i in self.items)


@dataclass(frozen=True)
class Or(Expr):
    items: tuple[Expr, ...]

    def __str__(self) -> str:
        return "(" + " OR ".join(str(i) for i in self.items) + ")"


@dataclass(frozen=True)
class Not(Expr):
    item: Expr

    def __str__(self) -> str:
        return f"NOT ({self.item})"


@dataclass(frozen=True)
class Func(Expr):
    name: str  # lower-case: abs
    args: tuple[Expr, ...]
    pos: tuple[int, int] | None = field(default=None, compare=False, repr=False)

    @property
    def cast_kind(self) -> str:
        """The target kind of a ``cast`` (int, float, str): its second argument, a literal."""
        kind = self.args[1]
        assert isinstance(kind, Lit) and isinstance(kind.value, str)
        return kind.value

    def __str__(self) -> str:
        if self.name == "cast":
            return f"CAST({self.args[0]} AS {_CAST_NAMES[self.cast_kind]})"
        if self.name == "case":
            whens = " ".join(f"WHEN {c} THEN {v}" for c, v in zip(self.args[0::2], self.args[1::2]))
            default = f" ELSE {self.args[-1]}" if len(self.args) % 2 else ""
            return f"CASE {whens}{default} END"
        return f"{self.name.upper()}({', '.join(map(str, self.args))})"


NAN = float("nan")  # the one NULL of scalar arithmetic (equal to itself by identity, so DISTINCT keeps one)


@dataclass(frozen=True)
class Like(Expr):
    """``item LIKE pattern``: ``%`` matches any run of characters, ``_`` one character (no escape)."""

    item: Expr
    pattern: str
    pos: tuple[int, int] | None = field(default=None, compare=False, repr=False)

    def __str__(self) -> str:
        return f"{self.item} LIKE {Lit(self.pattern)}"


def like_regex(pattern: str) -> str:
    """The anchored regular expression of a LIKE pattern (Python's and Java's syntax)."""
    return "(?s)^" + "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern) + "$"


@functools.cache
def _like_matcher(pattern: str) -> re.Pattern[str]:
    return re.compile(like_regex(pattern))


def like(v: Any, pattern: str) -> Any:
    """Whether ``v`` (scalar or array) matches ``pattern``; ``None`` (unknown) where ``v`` is NULL (scalars)."""
    if isinstance(v, np.ndarray):
        text = pd.Series(v if v.dtype == object else v.astype(str), dtype=object)
        return text.str.fullmatch(like_regex(pattern).removesuffix("$"), na=False).to_numpy(bool)
    return None if is_null(v) else _like_matcher(pattern).match(str(v)) is not None


def coalesce(*args: Any) -> Any:
    """The first argument that is not NULL (per element)."""
    if not any(isinstance(a, np.ndarray) for a in args):
        return next((a for a in args if not is_null(a)), args[-1])
    out = args[-1]
    for a in reversed(args[:-1]):
        out = np.where(is_null(a), out, a)
    return out


def case(*args: Any) -> Any:
    """``CASE WHEN c1 THEN v1 ... [ELSE d] END`` over ``(c1, v1, ..., [d])``: the value of the first
    condition that holds (a condition is true only where it holds), else ``d`` or NULL."""
    pairs = list(zip(args[0::2], args[1::2]))
    text = any(isinstance(v, str) or (isinstance(v, np.ndarray) and v.dtype == object) for _, v in pairs)
    default = args[-1] if len(args) % 2 else (None if text else NAN)
    if not any(isinstance(a, np.ndarray) for a in args):
        return next((v for c, v in pairs if c), default)
    out = default
    for c, v in reversed(pairs):
        out = np.where(c, v, out)
    return out


def _round(v: Any, digits: Any = 0) -> Any:
    return np.round(v, int(digits)) if isinstance(v, np.ndarray) or not is_null(v) else v


def _text(f: Callable[[str], Any], null: Any = None) -> Callable[[Any], Any]:
    """``f`` on text, per element of an array; NULL stays NULL."""

    def apply(v: Any) -> Any:
        if isinstance(v, np.ndarray):
            out = [null if x is None else f(x) for x in v]
            if null is None:
                return np.array(out, dtype=object)
            return np.array(out, dtype=float if any(x is None for x in v) else np.int64)
        return null if v is None else f(v)

    return apply


def _substr(v: Any, start: Any, length: Any = None) -> Any:
    """SQL's SUBSTR: 1-based ``start``; ``length`` characters (all if omitted)."""
    begin = max(int(start) - 1, 0)
    end = None if length is None else max(int(start) - 1 + int(length), begin)
    return _text(lambda x: x[begin:end])(v)


#: the arithmetic and comparison operators on scalars or arrays (``/`` and ``%`` by zero: see :func:`arithmetic`)
BINOPS: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "%": operator.mod,
}
CMPS: dict[str, Callable[[Any, Any], Any]] = {
    "=": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
#: CAST's type names -> kinds (as the sources': int, float, str)
CAST_TYPES = {"int": "int", "bigint": "int", "double": "float", "float": "float", "text": "str", "string": "str"}
_CAST_NAMES = {"int": "INT", "float": "DOUBLE", "str": "TEXT"}


def cast(v: Any, kind: str) -> Any:
    """``v`` (scalar or array) as ``kind``; NULL stays NULL, text that is no number becomes NULL.
    To ``int`` truncates toward zero; an array that may hold NULL (from text or floats) is float64."""
    if not isinstance(v, np.ndarray):
        if is_null(v):
            return None if kind == "str" else NAN
        if kind == "str":
            return str(v)
        try:
            number = float(v)
        except ValueError:
            return NAN
        return int(number) if kind == "int" and np.isfinite(number) else number
    null = is_null(v)
    text = v.dtype.kind in "OUS"  # object (None for NULL) or fixed-width numpy strings
    if kind == "str":
        if text:
            return v
        out = v.astype(str).astype(object)
        if np.any(null):
            out[null] = None
        return out
    if text:
        v = pd.to_numeric(pd.Series(v, dtype=object).str.strip(), errors="coerce").to_numpy(np.float64)
    if kind == "float":
        return v.astype(np.float64)
    return v.astype(np.int64) if v.dtype.kind in "iub" else np.trunc(v)


_FUNCS: dict[str, Callable[..., Any]] = {
    "abs": np.abs,
    "cast": cast,
    "coalesce": coalesce,
    "case": case,
    "round": _round,
    "floor": np.floor,
    "ceil": np.ceil,
    "lower": _text(str.lower),
    "upper": _text(str.upper),
    "length": _text(len, NAN),
    "substr": _substr,
}
#: called by name (CAST and CASE have their own syntax) -> (fewest, most) arguments
FUNCTIONS: dict[str, tuple[int, int]] = {
    "abs": (1, 1),
    "round": (1, 2),
    "floor": (1, 1),
    "ceil": (1, 1),
    "coalesce": (1, 64),
    "lower": (1, 1),
    "upper": (1, 1),
    "length": (1, 1),
    "substr": (2, 3),
}
#: the functions of numbers, of text, and those whose arguments share one type
NUMBER_FUNCTIONS = frozenset(("abs", "round", "floor", "ceil"))
TEXT_FUNCTIONS = frozenset(("lower", "upper", "length", "substr"))
#: the kind of a function's result where it is not its first argument's
FUNCTION_KINDS = {"length": "int", "lower": "str", "upper": "str", "substr": "str", "floor": "float", "ceil": "float"}
CONDITIONS = (Cmp, And, Or, Not, Like)


def scalar_function(name: str) -> Callable[..., Any]:
    """The implementation of function ``name`` (scalars or arrays)."""
    return _FUNCS[name]


def evaluate(expr: Expr, get: Callable[[int, str], object]) -> Any:
    """Value of ``expr`` where ``get(stream, attr)`` supplies column values; a condition's
    value is true only where it holds (false or unknown: false)."""
    if isinstance(expr, CONDITIONS):
        value, unknown = _truth(expr, get)
        return value if unknown is None else np.logical_and(value, np.logical_not(unknown))
    if isinstance(expr, Col):
        return get(expr.stream, expr.attr)
    if isinstance(expr, Lit):
        return expr.value
    if isinstance(expr, BinOp):
        return arithmetic(expr.op, evaluate(expr.left, get), evaluate(expr.right, get))
    if isinstance(expr, Func):
        return _FUNCS[expr.name](*(evaluate(a, get) for a in expr.args))
    raise TypeError(f"not an expression: {expr!r}")


def _truth(expr: Expr, get: Callable[[int, str], object]) -> tuple[Any, Any]:
    """``(value, unknown)`` of a condition: its truth where known, and where it is unknown
    (SQL's NULL; ``None``: nowhere). ``value`` is meaningless where unknown."""
    if isinstance(expr, Cmp):
        a, b = evaluate(expr.left, get), evaluate(expr.right, get)
        na, nb = is_null(a), is_null(b)
        null = na if nb is False else nb if na is False else np.logical_or(na, nb)
        if null is False or not np.any(null):
            return CMPS[expr.op](a, b), None
        return CMPS[expr.op](_filled(a, null), _filled(b, null)), null
    if isinstance(expr, Not):
        value, unknown = _truth(expr.item, get)
        return np.logical_not(value), unknown
    if isinstance(expr, Like):
        v = evaluate(expr.item, get)
        null = is_null(v)
        if not isinstance(v, np.ndarray):
            return (False, True) if null else (like(v, expr.pattern), None)
        return like(v, expr.pattern), (null if np.any(null) else None)
    if isinstance(expr, (And, Or)):
        parts = [_truth(i, get) for i in expr.items]
        join = np.logical_and if isinstance(expr, And) else np.logical_or
        if all(u is None for _, u in parts):
            return functools.reduce(join, [v for v, _ in parts]), None
        # Kleene: AND holds where all hold and fails where one fails; OR the other way round
        meet = np.logical_or if join is np.logical_and else np.logical_and
        holds = functools.reduce(join, [v if u is None else np.logical_and(v, np.logical_not(u)) for v, u in parts])
        fails = functools.reduce(meet, [np.logical_not(v) if u is None else np.logical_not(np.logical_or(v, u)) for v, u in parts])
        return holds, np.logical_not(np.logical_or(holds, fails))
    value = evaluate(expr, get)  # a value used as a condition
    null = is_null(value)
    return (_filled(value, null, False), null) if np.any(null) else (value, None)


def is_null(v: Any) -> Any:
    """Where ``v`` is NULL (NaN or None): a bool array, or ``False`` / ``True`` (never an array) where
    ``v`` cannot hold NULL or is a scalar."""
    if isinstance(v, np.ndarray):
        if v.dtype.kind == "f":
            return np.isnan(v)
        if v.dtype == object:  # text: missing values are None
            return v == None  # noqa: E711 - elementwise
        return False
    return bool(v is None or (isinstance(v, float) and v != v))


def _filled(v: Any, null: Any, fill: Any = None) -> Any:
    """``v`` with its NULLs replaced, so that comparing it raises no TypeError (results there are masked)."""
    if not (isinstance(v, np.ndarray) and v.dtype == object) or not np.any(null):
        return v
    v = v.copy()
    v[null] = "" if fill is None else fill
    return v


def arithmetic(op: str, a: Any, b: Any) -> Any:
    """``a op b`` on scalars or arrays; ``/`` and ``%`` are NULL (NaN) where ``b`` is 0, without a warning.

    ``%`` by a column is float (it may be NULL); by a non-zero constant it keeps ``a``'s type."""
    if op not in ("/", "%"):
        return BINOPS[op](a, b)
    if not isinstance(a, np.ndarray) and not isinstance(b, np.ndarray):  # scalars (per-tuple paths)
        return NAN if b == 0 else BINOPS[op](a, b)
    zero = np.equal(b, 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.true_divide(a, b) if op == "/" else np.mod(a, b)
    if np.ndim(b) == 0:
        return np.full(out.shape, np.nan) if zero else out
    out = out.astype(np.float64, copy=False)  # a new array either way
    np.putmask(out, zero, np.nan)
    return out


def columns_of(expr: Expr) -> set[tuple[int, str]]:
    """The ``(stream, attr)`` pairs an expression reads."""
    if isinstance(expr, Col):
        return {(expr.stream, expr.attr)}
    if isinstance(expr, (BinOp, Cmp)):
        return columns_of(expr.left) | columns_of(expr.right)
    if isinstance(expr, (And, Or)):
        return set().union(*(columns_of(i) for i in expr.items))
    if isinstance(expr, Not):
        return columns_of(expr.item)
    if isinstance(expr, Like):
        return columns_of(expr.item)
    if isinstance(expr, Func):
        return set().union(*(columns_of(a) for a in expr.args))
    return set()


def streams_of(expr: Expr) -> set[int]:
    """The stream indices an expression reads."""
    return {s for s, _ in columns_of(expr)}
