"""Choosing a join algorithm, a join order and hash-bucket counts for a query (the physical plan).

Algorithm: without ``--algorithm`` the planner takes the first algorithm in
:data:`PREFERENCE` whose ``check()`` accepts the query — the columnar batch
path for equi-joins on a common key, then the hash and hybrid operators, then
nested loops; lazy queries (``SLIDE``) prefer the algorithms built for lazy
re-evaluation (:data:`LAZY_PREFERENCE`).

Order and buckets: the optimizer :data:`RULES` run on the plan, sqlglot
style (each rule a function plan → plan in its own module under
:mod:`slidewise.optimizer`):

1. :func:`~slidewise.optimizer.ordering.order_joins` prices join orders with
   the per-unit-time cost model (Golab & Özsu §4–5, thesis §5.3) under the
   statistics — declared with ``--stats``, or the uniform defaults derived
   from the windows — and picks the cheapest global order (per-origin orders
   for ``general-lazy``): exact search for n ≤ 6, the papers' heuristic
   beyond, or as ``search`` says. ``--order`` forces the order; it is priced
   and shown against the alternatives.
2. :func:`~slidewise.optimizer.buckets.allocate_buckets` spreads the hash
   buckets over the windows of a hash-family algorithm (more for bigger
   windows, Golab & Özsu §6.5) unless ``--buckets`` fixes them, then lets the
   order be re-chosen for the new bucket counts.

The cost model describes the faithful per-tuple operators. The columnar
path, still the default for equi-joins, is priced with the ``hash`` model
(``hash-lazy`` with ``SLIDE``): the order it is given and the costs
``explain`` shows are that model's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from slidewise.errors import PlanError
from slidewise.operators.joins import JoinOperator, algorithms, get_algorithm
from slidewise.optimizer.buckets import allocate_buckets
from slidewise.optimizer.ordering import OrderSearch, order_joins
from slidewise.optimizer.stats import Statistics, StatsArg, resolve_statistics
from slidewise.plan.query import JoinQuery

PREFERENCE = ("columnar", "hash", "hybrid", "nlj")
LAZY_PREFERENCE = ("columnar", "hash-lazy", "lazy-restore", "lazy", "general-lazy")
#: the per-tuple algorithm whose cost model prices an algorithm that has none
MODELLED_AS = {"columnar": ("hash", "hash-lazy"), "select": (None, None)}
#: the optimizer rules, applied in this order (each: plan -> plan)
RULES = (order_joins, allocate_buckets)


@dataclass
class PhysicalPlan:
    """The chosen operator class, its global join order, options and the optimizer's findings.

    ``stats``: the statistics the cost model used (``None`` for one stream);
    ``model_algorithm``: the algorithm whose formulas priced the plan;
    ``search``: the :class:`~slidewise.optimizer.ordering.OrderSearch` (chosen
    order, cost, alternatives); ``buckets``: hash buckets per window (hash
    family); ``notes``: why, one line per decision, for explain.
    """

    query: JoinQuery
    algorithm: type[JoinOperator]
    order: list[int]
    reason: str
    options: dict[str, Any]
    stats: Statistics | None = None
    model_algorithm: str | None = None
    search_method: str = "auto"
    forced_order: bool = False
    forced_buckets: bool = False
    buckets: list[int] | None = None
    search: OrderSearch | None = None
    notes: list[str] = field(default_factory=list)

    def build(self) -> JoinOperator:
        options = dict(self.options)
        if self.buckets is not None and not self.forced_buckets and self.algorithm.name == self.model_algorithm:
            options.setdefault("buckets", list(self.buckets))
        if self.algorithm.name == "general-lazy" and self.search is not None:
            options.setdefault("orders", {i: list(o) for i, o in self.search.orders.items()})
        return self.algorithm(self.query, order=self.order, **options)

    @property
    def predicted_cost(self) -> float | None:
        """Predicted comparisons per unit time of the chosen plan (``None`` without a model)."""
        return self.search.cost.total if self.search is not None else None

    def orders(self) -> dict[str, list[str]]:
        """Probe order per origin stream (origin first, then the global order, unless per-origin)."""
        names = self.query.aliases
        if self.search is not None:
            return {names[o]: [names[s] for s in seq] for o, seq in self.search.orders.items()}
        return {names[o]: [names[o]] + [names[s] for s in self.order if s != o]
                for o in range(self.query.n)}


def parse_order(query: JoinQuery, order: str | list[str] | None) -> list[int]:
    """``"S2,S1,S3"`` (aliases) -> stream indices; default: FROM order."""
    if order is None:
        return list(range(query.n))
    names = order.split(",") if isinstance(order, str) else list(order)
    names = [n.strip() for n in names if n.strip()]
    idx = [query.index(n) for n in names]
    if sorted(idx) != list(range(query.n)):
        raise PlanError(f"--order {','.join(names)} must list every stream of FROM exactly once",
                        hint=f"e.g. --order {','.join(reversed(query.aliases))}")
    return idx


def _pick_algorithm(query: JoinQuery, algorithm: str | None) -> tuple[type[JoinOperator], str]:
    cls: type[JoinOperator] | None
    if algorithm:
        cls = get_algorithm(algorithm)
        cls.check(query)
        return cls, "chosen with --algorithm"
    registered = algorithms()
    reasons = []
    preference = LAZY_PREFERENCE if query.slide else PREFERENCE
    for name in preference:
        cls = registered.get(name)
        if cls is None:
            continue
        try:
            cls.check(query)
        except PlanError as e:
            reasons.append(f"{name}: {e.message}")
            continue
        return cls, "first applicable of " + ", ".join(preference)
    raise PlanError("no join algorithm can evaluate this query: " + "; ".join(reasons),
                    hint="simplify the predicates or pick one with --algorithm")


def model_algorithm(query: JoinQuery, name: str) -> str | None:
    """The algorithm whose cost formulas price ``name`` (itself, or a stand-in for ``columnar``)."""
    if name not in MODELLED_AS:
        return name
    eager, lazy = MODELLED_AS[name]
    return lazy if query.slide else eager


def choose(query: JoinQuery, algorithm: str | None = None, order: str | list[str] | None = None,
           *, stats: StatsArg = None, search: str = "auto", **options: Any) -> PhysicalPlan:
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
    plan = PhysicalPlan(query, cls, idx, why, options, search_method=search,
                        forced_order=order is not None, forced_buckets="buckets" in options)
    if query.n == 1:
        return plan
    plan.stats = resolve_statistics(query, stats)
    plan.model_algorithm = model_algorithm(query, cls.name)
    if plan.model_algorithm is None:
        return plan
    for rule in RULES:
        plan = rule(plan)
    return plan
