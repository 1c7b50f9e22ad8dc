"""Logical query description shared by the parser, the planner and the operators."""

from slidewise.plan.expr import And, BinOp, Cmp, Col, Expr, Func, Lit, Not, Or, columns_of, evaluate
from slidewise.plan.query import Equality, JoinQuery, SelectItem, StreamRef, WindowSpec

__all__ = [
    "And",
    "BinOp",
    "Cmp",
    "Col",
    "Equality",
    "Expr",
    "Func",
    "JoinQuery",
    "Lit",
    "Not",
    "Or",
    "SelectItem",
    "StreamRef",
    "WindowSpec",
    "columns_of",
    "evaluate",
]
