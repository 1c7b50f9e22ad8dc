"""Choosing a join algorithm, a join order and hash-bucket counts for a query (the physical plan).

Algorithm: without ``--algorithm`` the planner takes the registered
algorithm of lowest ``preference`` rank for the query's evaluation mode whose
``check()`` accepts the query (:func:`preference`) — the columnar batch path
for equi-joins on a common key, then the hash and hybrid operators, then
nested loops; lazy queries (``SLIDE``) rank the algorithms built for lazy
re-evaluation.

Order and buckets: the optimizer :data:`RULES` run on the plan, sqlglot
style (each rule a function plan → plan in its own module under
:mod:`slidewise.optimizer`):

1. :func:`~slidewise.optimizer.ordering.order_joins` prices join orders with
   the per-unit-time cost model (Golab & Özsu §4–5, thesis §5.3) under the
   statistics — declared with ``--stats``, or the uniform defaults derived
   from the windows — and picks the cheapest global order (per-origin orders
   for the ``general`` cost family, ``general-lazy``): exact search for
   n ≤ 6, the papers' heuristic beyond, or as ``search`` says. ``--order``
   forces the order; it is priced and shown against the alternatives.
2. :func:`~slidewise.optimizer.buckets.allocate_buckets` spreads the hash
   buckets over the windows of a ``hashed`` algorithm (more for bigger
   windows, Golab & Özsu §6.5) unless ``--buckets`` fixes them, then lets the
   order be re-chosen for the new bucket counts.
3. :func:`~slidewise.optimizer.structures.choose_structures` picks the
   ``binary`` join's per-window structures with the Kang et al. cost model
   unless ``directions`` is given.

The cost model describes the faithful per-tuple operators. An operator
without one names a stand-in (its ``priced_as`` fact): the columnar path,
still the default for equi-joins, is priced with the ``hash`` model
(``hash-lazy`` with ``SLIDE``), so the order it is given and the costs
``explain`` shows are that model's.
"""

from __future__ import annotations

from typing import Any

from slidewise.errors import PlanError
from slidewise.operators.joins import JoinOperator, by_rank, get_algorithm, mode_of
from slidewise.optimizer.buckets import allocate_buckets
from slidewise.optimizer.ordering import order_joins
from slidewise.optimizer.stats import StatsArg, resolve_statistics
from slidewise.optimizer.structures import choose_structures
from slidewise.plan.physical import PhysicalPlan, parse_order
from slidewise.plan.query import JoinQuery

__all__ = ["RULES", "choose", "preference"]

#: the optimizer rules, applied in this order (each: plan -> plan)
RULES = (order_joins, allocate_buckets, choose_structures)


def preference(query: JoinQuery) -> list[type[JoinOperator]]:
    """The algorithms the planner tries for ``query``, first choice first (``preference`` ranks)."""
    return by_rank("preference", mode_of(query.slide))


def _pick_algorithm(query: JoinQuery, algorithm: str | None) -> tuple[type[JoinOperator], str]:
    if algorithm:
        cls = get_algorithm(algorithm)
        cls.check(query)
        return cls, "chosen with --algorithm"
    ranked = preference(query)
    reasons = []
    for cls in ranked:
        try:
            cls.check(query)
        except PlanError as e:
            reasons.append(f"{cls.name}: {e.message}")
            continue
        return cls, "first applicable of " + ", ".join(c.name for c in ranked)
    raise PlanError("no join algorithm can evaluate this query: " + "; ".join(reasons), hint="simplify the predicates or pick one with --algorithm")


def choose(
    query: JoinQuery, algorithm: str | None = None, order: str | list[str] | None = None, *, stats: StatsArg = None, search: str = "auto", **options: Any
) -> PhysicalPlan:
    """Plan ``query``: pick the operator (``algorithm`` forces one), then run the optimizer rules.

    ``stats``: ``--stats`` specs (``["S1:rate=10,distinct=500", ...]``), a
    mapping ``{alias: {field: value}}`` or a
    :class:`~slidewise.optimizer.stats.Statistics`; ``None`` uses the uniform
    defaults. ``search``: ``auto``, ``heuristic`` or ``exact``. ``order``
    forces the global order; ``options`` go to the operator (``buckets``...).
    """
    idx = parse_order(query, order)
    if query.n == 1:
        algorithm = algorithm or "select"
    cls, why = _pick_algorithm(query, algorithm)
    plan = PhysicalPlan(query, cls, idx, why, options, search_method=search, forced_order=order is not None, forced_buckets="buckets" in options)
    if query.n == 1:
        return plan
    plan.stats = resolve_statistics(query, stats)
    plan.model_algorithm = cls.model_name(query)
    if plan.model_algorithm is None:
        return plan
    for rule in RULES:
        plan = rule(plan)
    return plan
