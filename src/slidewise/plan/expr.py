"""Scalar expressions of the query language, evaluated per tuple or per column.

One evaluator serves both the per-tuple paper operators (``get`` returns Python
scalars) and the columnar paths (``get`` returns numpy arrays): arithmetic and
comparisons broadcast, boolean connectives use ``numpy.logical_*``.

>>> e = Cmp(">", Col(0, "x", "S1"), Lit(3))
>>> bool(evaluate(e, lambda s, a: {"x": 5}[a]))
True
>>> str(e)
'S1.x > 3'
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


class Expr:
    """Base class of expression nodes (immutable dataclasses)."""


@dataclass(frozen=True)
class Col(Expr):
    """Attribute ``attr`` of the stream at index ``stream`` in FROM (``ts`` allowed); ``stream = -1``:
    the column named ``attr`` of the plan node below (an aggregate's output, e.g. in HAVING)."""

    stream: int
    attr: str
    name: str = ""  # stream alias, for display

    def __str__(self) -> str:
        if self.stream < 0 and not self.name:   # an output column of the node below, by name
            return self.attr
        return f"{self.name or f'#{self.stream}'}.{self.attr}"


@dataclass(frozen=True)
class Lit(Expr):
    value: object

    def __str__(self) -> str:
        if isinstance(self.value, str):  # CQL's quoting, so a shown condition parses back
            return "'" + self.value.replace("'", "''") + "'"
        return str(self.value)


@dataclass(frozen=True)
class BinOp(Expr):
    op: str  # + - * / %
    left: Expr
    right: Expr

    def __str__(self) -> str:
        return f"({self.left} {self.op} {self.right})"


@dataclass(frozen=True)
class Cmp(Expr):
    op: str  # = != < <= > >=
    left: Expr
    right: Expr

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

    def __str__(self) -> str:
        return f"{self.name.upper()}({', '.join(map(str, self.args))})"


_BINOPS: dict[str, Callable] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul,
    "/": operator.truediv, "%": operator.mod,
}
_CMPS: dict[str, Callable] = {
    "=": operator.eq, "!=": operator.ne, "<": operator.lt,
    "<=": operator.le, ">": operator.gt, ">=": operator.ge,
}
_FUNCS: dict[str, Callable] = {"abs": np.abs}
FUNCTIONS = frozenset(_FUNCS)


def evaluate(expr: Expr, get: Callable[[int, str], object]):
    """Value of ``expr`` where ``get(stream, attr)`` supplies column values."""
    if isinstance(expr, Col):
        return get(expr.stream, expr.attr)
    if isinstance(expr, Lit):
        return expr.value
    if isinstance(expr, BinOp):
        return _BINOPS[expr.op](evaluate(expr.left, get), evaluate(expr.right, get))
    if isinstance(expr, Cmp):
        return _CMPS[expr.op](evaluate(expr.left, get), evaluate(expr.right, get))
    if isinstance(expr, And):
        out = evaluate(expr.items[0], get)
        for item in expr.items[1:]:
            out = np.logical_and(out, evaluate(item, get))
        return out
    if isinstance(expr, Or):
        out = evaluate(expr.items[0], get)
        for item in expr.items[1:]:
            out = np.logical_or(out, evaluate(item, get))
        return out
    if isinstance(expr, Not):
        return np.logical_not(evaluate(expr.item, get))
    if isinstance(expr, Func):
        return _FUNCS[expr.name](*(evaluate(a, get) for a in expr.args))
    raise TypeError(f"not an expression: {expr!r}")


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
    if isinstance(expr, Func):
        return set().union(*(columns_of(a) for a in expr.args))
    return set()


def streams_of(expr: Expr) -> set[int]:
    """The stream indices an expression reads."""
    return {s for s, _ in columns_of(expr)}
