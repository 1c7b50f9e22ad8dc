"""Physical operators for logical plan nodes (Golab's thesis §3.5.2).

:func:`build` maps a logical node, under a :class:`Context` (strategy, input
update patterns, calendar partitions), to its incremental operator:

=================  =========================================================
Select / Project   :class:`SelectRows` / :class:`ProjectRows` (stateless)
Union              :class:`UnionRows`
Distinct           ``ctx.options["distinct"]`` if given (``delta_star``,
                   ``naive``, ``strict``); else UPA → δ* over non-STR input
                   and strict over STR input (§3.5.2's heuristic), NT →
                   strict (counting on negative tuples), DIRECT → naive
Negation           :class:`NegationRows` (NOT EXISTS / EXCEPT)
Aggregate          :class:`AggregateRows`
Join               two windows → :class:`DeltaJoin`; a window and an NRR or
                   TABLE → :class:`RelationJoin`; n > 2 inputs → a
                   left-deep chain of binary joins (:func:`build_join_chain`)
=================  =========================================================

Scans, subqueries and the output operator are built by the executor
(``operators/window_scan.py``, ``operators/output.py``).
"""

from __future__ import annotations

from dataclasses import replace

from slidewise.errors import PlanError
from slidewise.operators.aggregate import AggregateRows
from slidewise.operators.delta_join import DeltaJoin
from slidewise.operators.distinct import DeltaStar, DistinctNaive, DistinctStrict
from slidewise.operators.incremental import STRATEGIES, Context, Incremental
from slidewise.operators.negation import NegationRows
from slidewise.operators.project import ProjectRows
from slidewise.operators.relation_join import RelationJoin, relation_kind
from slidewise.operators.select import SelectRows, column_index
from slidewise.operators.union import UnionRows
from slidewise.plan.expr import Col, Expr
from slidewise.plan.logical import Aggregate, Distinct, Join, Negation, Node, Pattern, Project, Select, Union

__all__ = ["DISTINCT_FORMS", "JoinChain", "build", "build_join_chain", "distinct_form", "join_pattern"]

DISTINCT_FORMS = {"delta_star": DeltaStar, "naive": DistinctNaive, "strict": DistinctStrict}


def distinct_form(ctx: Context) -> str:
    """The duplicate-elimination form for ``ctx`` (see the module table)."""
    form = ctx.options.get("distinct")
    if form is not None:
        if form not in DISTINCT_FORMS:
            raise PlanError(f"unknown distinct form {form!r}", hint=f"use one of {', '.join(DISTINCT_FORMS)}")
        return form
    if ctx.strategy == "nt":
        return "strict"
    if ctx.strategy == "direct":
        return "naive"
    strict_input = bool(ctx.inputs) and ctx.inputs[0] == Pattern.STR
    return "strict" if strict_input else "delta_star"


def join_pattern(patterns) -> Pattern:
    """Update pattern of a join of inputs with ``patterns`` (§3.5.1 rules 1 and 3)."""
    patterns = list(patterns)
    if Pattern.STR in patterns:
        return Pattern.STR
    moving = [p for p in patterns if p != Pattern.MONO]
    if not moving:
        return Pattern.MONO
    return moving[0] if len(moving) == 1 else Pattern.WK


def build(node: Node, ctx: Context) -> Incremental:
    """The incremental operator for ``node`` under ``ctx``."""
    if ctx.strategy not in STRATEGIES:
        raise PlanError(f"unknown processing strategy {ctx.strategy!r}", hint=f"use one of {', '.join(STRATEGIES)}")
    if isinstance(node, Select):
        return SelectRows(node, ctx)
    if isinstance(node, Project):
        return ProjectRows(node, ctx)
    if isinstance(node, Union):
        return UnionRows(node, ctx)
    if isinstance(node, Distinct):
        return DISTINCT_FORMS[distinct_form(ctx)](node, ctx)
    if isinstance(node, Negation):
        return NegationRows(node, ctx)
    if isinstance(node, Aggregate):
        return AggregateRows(node, ctx)
    if isinstance(node, Join):
        if len(node.inputs) == 2:
            return _binary_join(node, ctx)
        return build_join_chain(node, ctx)
    raise PlanError(
        f"{type(node).__name__} nodes are built by the executor, not by plan_ops", hint="scans and subqueries: operators/window_scan.py; output: operators/output.py"
    )


def _binary_join(node: Join, ctx: Context) -> Incremental:
    kinds = [relation_kind(i) for i in node.inputs]
    if kinds[0] and kinds[1]:
        raise PlanError("a join of two relations is not a stream query", hint="join each relation with a stream window")
    if kinds[0] or kinds[1]:
        return RelationJoin(node, ctx)
    return DeltaJoin(node, ctx)


def _available(col: Col, schema: tuple[str, ...], aliases) -> bool:
    try:
        column_index(col, schema, aliases)
    except PlanError:
        return False
    return True


def _cols(expr: Expr):
    if isinstance(expr, Col):
        yield expr
    for name in ("left", "right", "item"):
        sub = getattr(expr, name, None)
        if isinstance(sub, Expr):
            yield from _cols(sub)
    for sub in getattr(expr, "items", ()) or getattr(expr, "args", ()):
        yield from _cols(sub)


class JoinChain(Incremental):
    """A left-deep chain of binary joins hosting an n-way Join node (same protocol).

    Input ``i`` of the node enters step ``max(i, 1) - 1`` (inputs 0 and 1 the
    first step); each step's output is pushed into the next step's left side
    within the same call, after that step's :meth:`expire`.
    """

    name = "join-chain"

    def __init__(self, node: Join, ctx: Context, steps: list[Incremental]):
        super().__init__(node, ctx)
        self.steps = steps

    def push(self, side, rows, now):
        if side <= 1:
            out, start = self.steps[0].push(side, rows, now), 1
        else:
            out, start = self.steps[side - 1].push(1, rows, now), side
        for step in self.steps[start:]:
            if not out:
                break
            out = step.push(0, out, now)
        return out

    def expire(self, now):
        carry: list = []
        for step in self.steps:
            out = step.expire(now)
            if carry:
                out = out + step.push(0, carry, now)
            carry = out
        return carry

    def next_event(self):
        times = [t for t in (s.next_event() for s in self.steps) if t is not None]
        return min(times) if times else None

    def state_size(self):
        return sum(s.state_size() for s in self.steps)


def build_join_chain(node: Join, ctx: Context) -> JoinChain:
    """Binary steps ``((in0 ⋈ in1) ⋈ in2) ⋈ ...``; each predicate goes to the first step that sees its columns."""
    n = len(node.inputs)
    if n < 2:
        raise PlanError("a join needs at least two inputs", hint="drop the join for a single input")
    patterns = tuple(ctx.inputs) + (Pattern.WKS,) * (n - len(ctx.inputs))
    equalities, filters = list(node.equalities), list(node.filters)
    steps: list[Incremental] = []
    left: Node = node.inputs[0]
    left_pattern = patterns[0]
    for i in range(1, n):
        right = node.inputs[i]
        schema = left.schema + right.schema
        last = i == n - 1
        eqs = [e for e in equalities if last or all(_available(c, schema, ctx.aliases) for c in e)]
        fls = [f for f in filters if last or all(_available(c, schema, ctx.aliases) for c in _cols(f))]
        equalities = [e for e in equalities if e not in eqs]
        filters = [f for f in filters if f not in fls]
        step_node = Join((left, right), tuple(eqs), tuple(fls))
        out_pattern = join_pattern((left_pattern, patterns[i]))
        step_ctx = replace(ctx, inputs=(left_pattern, patterns[i]), output=out_pattern, options=dict(ctx.options))
        steps.append(_binary_join(step_node, step_ctx))
        left, left_pattern = step_node, out_pattern
    return JoinChain(node, ctx, steps)
