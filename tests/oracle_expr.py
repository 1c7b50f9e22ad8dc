"""An independent scalar evaluator of expressions, for the plan oracle (tests/oracle_plans.py).

It shares nothing with :mod:`slidewise.plan.expr` but the expression classes:
SQL's rules written out plainly, one row at a time. NULL is ``None``;
conditions are three-valued (``True``, ``False``, ``None`` for unknown) and a
row is kept only where its condition is ``True``. ``x / 0`` and ``x % 0`` are
NULL; ``LIKE`` matches ``%`` (any run) and ``_`` (one character) by dynamic
programming; ``CASE`` takes the first branch whose condition is true (NULL
without ``ELSE``); ``COALESCE`` the first non-NULL argument; ``CAST`` of text
that is no number is NULL, to an integer truncates toward zero; ``SUBSTR``
counts from 1.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from slidewise.plan.expr import And, BinOp, Cmp, Col, Expr, Func, Like, Lit, Not, Or

__all__ = ["holds", "value"]


def holds(expr: Expr, get: Callable[[int, str], object]) -> bool:
    """Whether a row is kept by condition ``expr`` (true, not false or unknown)."""
    return value(expr, get) is True


def _null(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def value(expr: Expr, get: Callable[[int, str], object]):
    """The value of ``expr`` for one row (``get(stream, attr)``); None for NULL."""
    if isinstance(expr, Col):
        v = get(expr.stream, expr.attr)
        v = v.item() if hasattr(v, "item") else v
        return None if _null(v) else v
    if isinstance(expr, Lit):
        return expr.value
    if isinstance(expr, Not):
        v = value(expr.item, get)
        return None if v is None else not v
    if isinstance(expr, And):
        vs = [value(i, get) for i in expr.items]
        return False if any(v is False for v in vs) else None if any(v is None for v in vs) else True
    if isinstance(expr, Or):
        vs = [value(i, get) for i in expr.items]
        return True if any(v is True for v in vs) else None if any(v is None for v in vs) else False
    if isinstance(expr, Cmp):
        a, b = value(expr.left, get), value(expr.right, get)
        if a is None or b is None:
            return None
        return {"=": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[expr.op]
    if isinstance(expr, Like):
        v = value(expr.item, get)
        return None if v is None else _like(str(v), expr.pattern)
    if isinstance(expr, BinOp):
        a, b = value(expr.left, get), value(expr.right, get)
        if a is None or b is None or (expr.op in "/%" and b == 0):
            return None
        return {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "/": lambda: a / b, "%": lambda: a % b}[expr.op]()
    if isinstance(expr, Func):
        return _func(expr, get)
    raise TypeError(f"the oracle does not know {expr!r}")


def _func(expr: Func, get):
    name, args = expr.name, expr.args
    if name == "case":  # (c1, v1, c2, v2, ..., [default])
        for c, v in zip(args[0::2], args[1::2]):
            if value(c, get) is True:
                return value(v, get)
        return value(args[-1], get) if len(args) % 2 else None
    if name == "coalesce":
        return next((v for v in (value(a, get) for a in args) if v is not None), None)
    if name == "cast":
        return _cast(value(args[0], get), expr.cast_kind)
    vs = [value(a, get) for a in args]
    if vs[0] is None:
        return None
    x = vs[0]
    if name == "abs":
        return abs(x)
    if name in ("floor", "ceil"):
        return float(math.floor(x) if name == "floor" else math.ceil(x))
    if name == "round":
        return round(x, int(vs[1]) if len(vs) > 1 else 0)
    if name in ("lower", "upper"):
        return x.lower() if name == "lower" else x.upper()
    if name == "length":
        return len(x)
    if name == "substr":
        begin = max(int(vs[1]) - 1, 0)
        return x[begin:] if len(vs) < 3 else x[begin : max(int(vs[1]) - 1 + int(vs[2]), begin)]
    raise TypeError(f"the oracle does not know function {name}")


def _cast(v, kind: str):
    if v is None:
        return None
    if kind == "str":
        return str(v)
    try:
        number = float(str(v).strip()) if isinstance(v, str) else float(v)
    except ValueError:
        return None
    return int(number) if kind == "int" and math.isfinite(number) else number


def _like(text: str, pattern: str) -> bool:
    """``text LIKE pattern`` by dynamic programming over (text prefix, pattern prefix)."""
    ok = [True] + [False] * len(text)  # the empty pattern prefix matches the empty text prefix
    for p in pattern:
        if p == "%":
            nxt, seen = [], False
            for m in ok:
                seen = seen or m
                nxt.append(seen)
        else:
            nxt = [False] + [ok[i] and (p == "_" or text[i] == p) for i in range(len(text))]
        ok = nxt
    return ok[-1]
