"""Binary symmetric join of two signed-tuple inputs (Golab's thesis §2.3.3, §3.2.2 Fig. 3.1(b)).

Each input's state is a row store (:func:`slidewise.operators.state.stores.make_store`)
keyed by the input's join attributes. A row from one side probes the other
side's state; every match that passes the remaining filters is a result with
``vals = left vals + right vals``, ``ts = now``, ``exp = min`` of the two
``exp`` (§3.2.2: a join result lives while both members do) and the probing
row's sign — so a negative tuple deletes exactly the results its positive
tuple produced. Then the row is inserted into (or, if negative, deleted
from) its own side's state.

Rows of one side pushed at the same instant do not meet each other; rows of
the other side pushed later in the instant find them, so every pair is
produced exactly once. Under DIRECT/UPA :meth:`expire` drops state rows with
``exp < now`` and emits nothing: the results they produced expire by their
own ``exp`` downstream (weak non-monotonic). Under NT the windows' negative
tuples do the same work through :meth:`push`.

Cost per row: one hash lookup plus the matches; state maintenance depends on
the store (hash deletion by lookup, full scan, FIFO pop, calendar day pop).
"""

from __future__ import annotations

from operator import itemgetter

from slidewise.errors import PlanError
from slidewise.operators.incremental import Incremental
from slidewise.operators.select import column_index, row_function
from slidewise.plan.expr import And
from slidewise.plan.logical import Pattern

__all__ = ["DeltaJoin", "equality_positions"]


def equality_positions(node, aliases):
    """``(left indices, right indices, leftover filters)`` of a binary Join node's equalities.

    A pair whose columns are both on one side cannot key the join and becomes
    a filter (an equality comparison over the combined row).
    """
    from slidewise.plan.expr import Cmp

    left, right = node.inputs
    li, ri, filters = [], [], []
    for a, b in node.equalities:
        sides = []
        for col in (a, b):
            try:
                sides.append((0, column_index(col, left.schema, aliases)))
            except PlanError:
                sides.append((1, column_index(col, right.schema, aliases)))
        (sa, ia), (sb, ib) = sides
        if sa == 0 and sb == 1:
            li.append(ia)
            ri.append(ib)
        elif sa == 1 and sb == 0:
            li.append(ib)
            ri.append(ia)
        else:
            filters.append(Cmp("=", a, b))
    return li, ri, filters


def key_function(indices):
    """``vals -> key``: a scalar for one attribute, a tuple for several, ``()`` for none."""
    if not indices:
        return lambda vals: ()
    return itemgetter(*indices)


class DeltaJoin(Incremental):
    """Symmetric hash join of signed tuples with equality keys and filters (§2.3.3)."""

    name = "delta-join"

    def __init__(self, node, ctx):
        super().__init__(node, ctx)
        if len(node.inputs) != 2:
            raise PlanError(f"DeltaJoin joins two inputs, got {len(node.inputs)}", hint="build n-ary joins with plan_ops.build_join_chain")
        li, ri, extra = equality_positions(node, ctx.aliases)
        filters = tuple(node.filters) + tuple(extra)
        self.filter = None
        if filters:
            pred = filters[0] if len(filters) == 1 else And(filters)
            self.filter = row_function(pred, node.schema, ctx.aliases)
        self.keys = (key_function(li), key_function(ri))
        self.keyed = bool(li)
        pats = tuple(ctx.inputs) + (Pattern.WKS,) * (2 - len(ctx.inputs))
        self.states = (ctx.store(pats[0], self.keys[0]), ctx.store(pats[1], self.keys[1]))

    def push(self, side, rows, now):
        out: list = []
        own, other = self.states[side], self.states[1 - side]
        key, test, keyed = self.keys[side], self.filter, self.keyed
        for row in rows:
            v, _, exp, sign = row
            if sign > 0:
                own.insert(row)
            elif not own.delete(v, exp):
                continue
            k = key(v)
            if keyed and (k is None or (type(k) is tuple and None in k)):
                continue
            for ov, _, oexp, _ in other.lookup(k):
                vals = v + ov if side == 0 else ov + v
                if test is None or test(vals):
                    out.append((vals, now, exp if exp < oexp else oexp, sign))
        return out

    def expire(self, now):
        self.states[0].expire(now)
        self.states[1].expire(now)
        return []

    def next_event(self):
        times = [t for t in (s.next_expiry() for s in self.states) if t is not None]
        return min(times) + 1 if times else None

    def state_size(self):
        return len(self.states[0]) + len(self.states[1])
