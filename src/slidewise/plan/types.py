"""Types of expressions, fixed when a query is bound to its sources' columns.

Kinds are the sources' (:mod:`slidewise.runtime.sources`): ``int``, ``float``,
``bool`` and ``str`` (text); ``ts`` is ``int``; ``None`` is unknown and never
checked. The rules:

* integers, floats and booleans are numbers and compare and compute with each
  other; text compares with text only;
* a literal meeting another kind takes that kind where it can: against a
  number ``'1'`` is ``1`` (``'abc'`` is an error); against text ``3`` is
  ``'3'`` in ``=`` and ``!=`` (ordering text against a number is an error:
  text orders character by character);
* ``+ - * / %`` and ``ABS`` need numbers; ``/`` is a float, ``%`` is a float
  (NULL where the divisor is 0) unless its divisor is a non-zero constant;
* ``CAST(x AS INT | BIGINT | DOUBLE | FLOAT | TEXT | STRING)`` has that kind,
  whatever ``x``'s (NULL where text is no number);
* the two columns of a join or NOT EXISTS equality have the same kind family;
* ``SUM`` and ``AVG`` need numbers; ``COUNT``, ``MIN`` and ``MAX`` take text too
  (MIN / MAX in text order); ``COUNT`` is an integer, ``AVG`` a float, the
  others keep their argument's kind.

A mismatch is one :class:`~slidewise.errors.PlanError` naming both sides,
their types and the position in the query, raised before any input is read
beyond schema inference and before any output is written.

>>> from slidewise.plan.expr import Cmp, Col, Lit
>>> kinds = {"a": "int", "b": "str"}.get
>>> typer = Typer(lambda c: kinds(c.attr))
>>> str(typer.condition(Cmp("=", Col(0, "a", "S1"), Lit("1")))), str(typer.condition(Cmp("=", Col(0, "b", "S1"), Lit(3))))
('S1.a = 1', "S1.b = '3'")
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from slidewise.errors import OptionError, PlanError, require_extra
from slidewise.plan.expr import FUNCTION_KINDS, NUMBER_FUNCTIONS, TEXT_FUNCTIONS, And, BinOp, Cmp, Col, Expr, Func, Like, Lit, Not, Or, columns_of, evaluate

if TYPE_CHECKING:
    from slidewise.plan.logical import AggCall

__all__ = ["Typer", "kind_name", "literal_kind"]

_NAMES: dict[str | None, str] = {"int": "integer", "float": "float", "bool": "boolean", "str": "text"}
_INT_RE = re.compile(r"[+-]?\d+")
_FLOAT_RE = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
#: aggregates of numbers only -> what they do with them (for the hint)
NUMERIC_AGGREGATES = {
    "sum": "adds",
    "avg": "averages",
    "median": "takes the median of",
    "quantile": "takes the quantile of",
    "approx_quantile": "estimates the quantile of",
}

_TEXT_WHY = "a column is text when a value in its source is not a number"


def _to_number(expr: Expr) -> str:
    return f"CAST({expr} AS DOUBLE)"


def kind_name(kind: str | None) -> str:
    """The user-facing name of a kind: integer, float, boolean, text."""
    return _NAMES.get(kind, "unknown type")


def literal_kind(value: object) -> str | None:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    return None


def _family(kind: str | None) -> str | None:
    return None if kind is None else "text" if kind == "str" else "number"


def _location(*exprs: Expr | AggCall) -> str | None:
    for e in exprs:
        pos = getattr(e, "pos", None)
        if pos is not None:
            return f"query line {pos[0]}, column {pos[1]}"
    return None


def _side(expr: Expr, kind: str | None) -> str:
    return f"{expr} ({kind_name(kind)})"


class Typer:
    """Types expressions over columns whose kinds ``kind_of(col)`` gives (``None``: unknown)."""

    def __init__(self, kind_of: Callable[[Col], str | None]):
        self.kind_of = kind_of

    def condition(self, expr: Expr) -> Expr:
        """``expr`` with its literals cast; a PlanError for a type mismatch."""
        return self.typed(expr)[0]

    def typed(self, expr: Expr) -> tuple[Expr, str | None]:
        """``(expr with literals cast, its kind)``."""
        if isinstance(expr, Col):
            return expr, ("int" if expr.attr == "ts" else None if expr.attr == "*" else self.kind_of(expr))
        if isinstance(expr, Lit):
            return expr, literal_kind(expr.value)
        if isinstance(expr, Cmp):
            return self._compare(expr), "bool"
        if isinstance(expr, (And, Or)):
            return replace(expr, items=tuple(self.condition(i) for i in expr.items)), "bool"
        if isinstance(expr, Not):
            return replace(expr, item=self.condition(expr.item)), "bool"
        if isinstance(expr, BinOp):
            return self._arithmetic(expr)
        if isinstance(expr, Func) and expr.name == "cast":
            return replace(expr, args=(self.typed(expr.args[0])[0], expr.args[1])), expr.cast_kind
        if isinstance(expr, Like):
            item, kind = self.typed(expr.item)
            if kind is not None and _family(kind) != "text":
                raise PlanError(
                    f"LIKE needs text, got {_side(item, kind)}", location=_location(expr, item), hint=f"CAST({item} AS TEXT) LIKE {Lit(expr.pattern)} matches its digits"
                )
            return replace(expr, item=item), "bool"
        if isinstance(expr, Func):
            return self._function(expr)
        return expr, None

    def _function(self, expr: Func) -> tuple[Func, str | None]:
        """A call with its arguments typed: numbers for ABS / ROUND / FLOOR / CEIL (and the positions of
        SUBSTR), text for LOWER / UPPER / LENGTH / SUBSTR, one type for COALESCE's arguments and CASE's values."""
        name = expr.name
        if name == "case":
            args = [self.typed(a) if i % 2 or i == len(expr.args) - 1 else (self.condition(a), "bool") for i, a in enumerate(expr.args)]
            values = [(a, k) for i, (a, k) in enumerate(args) if i % 2 or i == len(args) - 1]
        else:
            args = [self.typed(a) for a in expr.args]
            values = args
        typed = replace(expr, args=tuple(a for a, _ in args))
        if name in NUMBER_FUNCTIONS or name in TEXT_FUNCTIONS:
            for i, (a, k) in enumerate(args):
                wants = "text" if name in TEXT_FUNCTIONS and i == 0 else "a number"
                if _family(k) is not None and _family(k) != wants.removeprefix("a "):
                    fix = f"{_to_number(a)} is its number (NULL where it is none)" if wants == "a number" else f"CAST({a} AS TEXT) is its text"
                    raise PlanError(
                        f"{name.upper()} needs {wants}, got {_side(a, k)}", location=_location(expr, a), hint=f"{_TEXT_WHY}; {fix}" if wants == "a number" else fix
                    )
            return typed, FUNCTION_KINDS.get(name, args[0][1])
        known = [(a, k) for a, k in values if k is not None and not (isinstance(a, Lit) and a.value is None)]
        for a, k in known[1:]:
            if _family(k) != _family(known[0][1]):
                word = "CASE's values" if name == "case" else f"{name.upper()}'s arguments"
                raise PlanError(
                    f"{word} {_side(*known[0])} and {_side(a, k)} have different types",
                    location=_location(expr, a),
                    hint=f"give them one type, e.g. CAST({a} AS TEXT) or {_to_number(a)}",
                )
        if not known:
            return typed, None
        kinds = {k for _, k in known}
        return typed, (known[0][1] if len(kinds) == 1 else "float" if _family(known[0][1]) == "number" else "str")

    def aggregate(self, call: AggCall) -> tuple[AggCall, str | None]:
        """``(call with its argument typed, the kind of its result)``; a PlanError for SUM / AVG of text,
        an OptionError naming the extra for APPROX_* without it."""
        if call.func.startswith("approx_"):
            try:
                require_extra("sketches", call.func.upper())
            except OptionError as e:
                raise OptionError(e.message, location=_location(call), hint=e.hint) from None
        if call.arg is None:
            return call, "int"
        arg, kind = self.typed(call.arg)
        if call.func in NUMERIC_AGGREGATES and _family(kind) == "text":
            name = call.func.upper()
            verb = NUMERIC_AGGREGATES[call.func]
            extra = ", 0.9" if call.func in ("quantile", "approx_quantile") else ""
            raise PlanError(
                f"{name} needs a number, {arg} is text",
                location=_location(call, arg),
                hint=f"{_TEXT_WHY}; {name}({_to_number(arg)}{extra}) {verb} "
                "its numbers (NULL where it is none); COUNT, MIN and MAX work on text "
                "(MIN / MAX in text order)",
            )
        out = {"count": "int", "avg": "float", "median": "float", "quantile": "float", "topk": "str", "approx_count_distinct": "int", "approx_quantile": "float"}.get(
            call.func, kind
        )
        return (call if arg == call.arg else replace(call, arg=arg, alias=call.alias or call.name)), out

    def pair(self, left: Col, right: Col, what: str = "join keys", other: Typer | None = None) -> None:
        """Both columns of an equality (join key, NOT EXISTS pair) have the same kind family;
        ``other`` types ``right`` if it is over other columns."""
        lk, rk = self.typed(left)[1], (other or self).typed(right)[1]
        if _family(lk) and _family(rk) and _family(lk) != _family(rk):
            text, number = (left, right) if lk == "str" else (right, left)
            raise PlanError(
                f"{what} {_side(left, lk)} and {_side(right, rk)} have different types",
                location=_location(left, right),
                hint=f"a text value never equals a number ({_TEXT_WHY}); give both columns one "
                f"type in their sources, or compare CAST({text} AS BIGINT) = {number} "
                "(a filter, slower than a join key)",
            )

    # -- rules ---------------------------------------------------------------
    def _compare(self, expr: Cmp) -> Cmp:
        (left, lk), (right, rk) = self.typed(expr.left), self.typed(expr.right)
        if _family(lk) and _family(rk) and _family(lk) != _family(rk):
            if isinstance(right, Lit) and not isinstance(left, Lit):
                right = self._cast(right, lk, expr, left)
            elif isinstance(left, Lit) and not isinstance(right, Lit):
                left = self._cast(left, rk, expr, right)
            else:
                text, number = (left, right) if lk == "str" else (right, left)
                raise PlanError(
                    f"cannot compare {_side(left, lk)} with {_side(right, rk)}",
                    location=_location(expr, left, right),
                    hint=f"text and numbers never compare ({_TEXT_WHY}); {_to_number(text)} compares as numbers, CAST({number} AS TEXT) as text",
                )
        return replace(expr, left=left, right=right)

    def _arithmetic(self, expr: BinOp) -> tuple[BinOp, str | None]:
        (left, lk), (right, rk) = self.typed(expr.left), self.typed(expr.right)
        if _family(lk) == "text" and isinstance(left, Lit) and self._number(left) is not None:
            left = replace(left, value=self._number(left))
            lk = literal_kind(left.value)
        if _family(rk) == "text" and isinstance(right, Lit) and self._number(right) is not None:
            right = replace(right, value=self._number(right))
            rk = literal_kind(right.value)
        if "text" in (_family(lk), _family(rk)):
            text = left if _family(lk) == "text" else right
            raise PlanError(
                f"cannot compute {_side(left, lk)} {expr.op} {_side(right, rk)}: '{expr.op}' needs numbers",
                location=_location(expr, left, right),
                hint=f"{_TEXT_WHY}; {_to_number(text)} is its number (NULL where it is none)",
            )
        typed = replace(expr, left=left, right=right)
        if lk is None or rk is None:
            return typed, None
        if expr.op == "/":
            return typed, "float"
        if expr.op == "%" and not (not columns_of(right) and evaluate(right, None) != 0):  # type: ignore[arg-type]  # no columns: get is never called
            return typed, "float"
        return typed, ("int" if {lk, rk} <= {"int", "bool"} else "float")

    def _cast(self, lit: Lit, kind: str | None, expr: Expr, other: Expr) -> Lit:
        """``lit`` as a value of ``kind``'s family; a PlanError if it is not one (or if a number
        would order as text)."""
        op = getattr(expr, "op", "=")
        if _family(kind) == "text":
            if op not in ("=", "!="):
                raise PlanError(
                    f"cannot order {_side(other, kind)} against {_side(lit, literal_kind(lit.value))}",
                    location=_location(expr, other, lit),
                    hint=f"text orders character by character ('10' < '9'); write {other} {op} "
                    f"'{lit.value}' to compare text, or {_to_number(other)} {op} {lit} to compare numbers",
                )
            return replace(lit, value=str(lit.value))
        if kind == "bool" and str(lit.value).strip().lower() in ("true", "false"):
            return replace(lit, value=str(lit.value).strip().lower() == "true")
        number = self._number(lit)
        if number is None:
            raise PlanError(
                f"cannot compare {_side(other, kind)} with {_side(lit, 'str')}: {lit} is not a number",
                location=_location(expr, other, lit),
                hint=f"compare {other} with a number, e.g. {other} {op} 1, or CAST({other} AS TEXT) {op} {lit} to compare text",
            )
        return replace(lit, value=number)

    @staticmethod
    def _number(lit: Lit) -> int | float | None:
        text = str(lit.value).strip()
        if _INT_RE.fullmatch(text):
            return int(text)
        if _FLOAT_RE.fullmatch(text):
            return float(text)
        return None
