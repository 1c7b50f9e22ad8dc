"""Selection over a single windowed stream (a query with one stream in FROM).

For ``SELECT ... FROM S [window] WHERE cond`` with ISTREAM output, every
arriving tuple that satisfies ``cond`` is a result at its own time; ``exp`` is
its expiration under the window. Vectorised over the chunk.
"""

from __future__ import annotations

import numpy as np

from slidewise.errors import PlanError
from slidewise.model.batch import NO_EXP, ResultBatch, StreamBatch
from slidewise.operators.joins.base import JoinOperator
from slidewise.plan.expr import evaluate
from slidewise.plan.query import JoinQuery


class Select(JoinOperator):
    """Filter one stream's arrivals by the WHERE conjuncts (one-stream queries)."""

    name = "select"
    summary = "selection over a single stream (one-stream queries)"
    priced_as = (None, None)

    @classmethod
    def check(cls, query: JoinQuery) -> None:
        if query.n != 1:
            raise PlanError("the select operator serves one-stream queries", hint="use a join algorithm for several streams")
        if query.slide:
            raise PlanError("SLIDE on a one-stream selection is not supported yet", hint="drop SLIDE: a selection's answer does not depend on evaluation times")

    def process(self, chunk: list[StreamBatch]) -> ResultBatch:
        batch = chunk[0]
        keep = np.ones(len(batch), dtype=bool)
        for f in self.query.filters:
            self.comparisons += int(keep.sum())
            keep &= np.asarray(evaluate(f, lambda s, a: batch.ts if a == "ts" else batch.cols[a]), dtype=bool)
        b = batch.take(keep)
        w = self.query.streams[0].window
        exp = np.full(len(b), NO_EXP, np.int64) if w.exp(0) == NO_EXP else b.ts + w.length
        alias = self.query.streams[0].alias
        cols = {f"{alias}.ts": b.ts, **{f"{alias}.{k}": v for k, v in b.cols.items()}}
        return ResultBatch(b.pos[:, None], b.ts, exp, b.sign, cols)

    def state_tuples(self) -> int:
        return 0


# --- general plans (Golab's thesis §3.2.2): selection over signed tuples --------------------------

import operator as _op  # noqa: E402

from slidewise.operators.incremental import Incremental  # noqa: E402
from slidewise.plan.expr import BINOPS, CMPS, And, BinOp, Cmp, Col, Func, Like, Lit, Not, Or, arithmetic, like, scalar_function  # noqa: E402


def column_index(col: Col, schema: tuple[str, ...], aliases: tuple[str, ...]) -> int:
    """Position of ``col`` in ``schema`` (as :func:`slidewise.plan.logical.column_getter` resolves it)."""
    if col.stream < 0:
        name = col.attr
    elif col.stream < len(aliases):
        name = f"{aliases[col.stream]}.{col.attr}"
    else:
        name = f"{col.name}.{col.attr}"
    try:
        return schema.index(name)
    except ValueError:
        raise PlanError(f"column {name} is not an input of this operator", hint=f"available columns: {', '.join(schema)}") from None


def row_function(expr, schema: tuple[str, ...], aliases: tuple[str, ...]):
    """Compile ``expr`` into ``f(vals)`` over value tuples of ``schema`` (scalar Python semantics; NULL
    and three-valued logic as :mod:`slidewise.plan.expr`: a condition is ``None`` where unknown)."""
    if isinstance(expr, Col):
        i = column_index(expr, schema, aliases)
        return _op.itemgetter(i)
    if isinstance(expr, Lit):
        v = expr.value
        return lambda vals: v
    if isinstance(expr, BinOp):
        op, fn = expr.op, BINOPS[expr.op]
        left, right = row_function(expr.left, schema, aliases), row_function(expr.right, schema, aliases)
        if op in ("/", "%"):
            return lambda vals: arithmetic(op, left(vals), right(vals))
        if isinstance(expr.right, Lit):
            c = expr.right.value
            return lambda vals: fn(left(vals), c)
        return lambda vals: fn(left(vals), right(vals))
    if isinstance(expr, Cmp):
        fn = CMPS[expr.op]
        left, right = row_function(expr.left, schema, aliases), row_function(expr.right, schema, aliases)
        if isinstance(expr.right, Lit):
            c = expr.right.value

            def compare_lit(vals):
                a = left(vals)
                return None if a is None or a != a else fn(a, c)

            return compare_lit

        def compare(vals):
            a, b = left(vals), right(vals)
            return None if a is None or b is None or a != a or b != b else fn(a, b)

        return compare
    if isinstance(expr, (And, Or)):
        parts = [row_function(i, schema, aliases) for i in expr.items]
        decisive = not isinstance(expr, And)  # the value that settles the connective

        def connective(vals):
            out = not decisive
            for p in parts:
                v = p(vals)
                if v is None:
                    out = None
                elif bool(v) == decisive:
                    return decisive
            return out

        return connective
    if isinstance(expr, Not):
        inner = row_function(expr.item, schema, aliases)

        def negation(vals):
            v = inner(vals)
            return None if v is None else not v

        return negation
    if isinstance(expr, Like):
        item, pattern = row_function(expr.item, schema, aliases), expr.pattern
        return lambda vals: like(item(vals), pattern)
    if isinstance(expr, Func):
        fn = scalar_function(expr.name)
        parts = [row_function(a, schema, aliases) for a in expr.args]
        return lambda vals: fn(*(p(vals) for p in parts))
    raise PlanError(f"cannot evaluate {expr!r} per row", hint="use columns, literals, arithmetic and comparisons")


class SelectRows(Incremental):
    """σ over signed tuples: keeps the rows (either sign) whose values satisfy the predicate.

    Weakest non-monotonic (§3.2.2, Fig. 3.1(a)): lifetimes are untouched, so
    a negative row passes exactly when its positive row did. Stateless.
    """

    name = "select"

    def __init__(self, node, ctx):
        super().__init__(node, ctx)
        self.test = row_function(node.predicate, node.child.schema, ctx.aliases)

    def push(self, side, rows, now):
        test = self.test
        return [r for r in rows if test(r[0])]

    def advance(self, inputs, lo, hi):
        """Stateless: every group filtered in one pass (empty groups dropped)."""
        test = self.test
        out = []
        for t, rows in inputs[0][1] if inputs else ():
            kept = [r for r in rows if test(r[0])]
            if kept:
                out.append((t, kept))
        return out
