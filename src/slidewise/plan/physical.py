"""Choosing a join algorithm and a join order for a query (the physical plan).

Without ``--algorithm`` the planner takes the first algorithm in
:data:`PREFERENCE` whose ``check()`` accepts the query: the columnar batch
path for equi-joins on a common key, then the hash and hybrid operators, then
nested loops. Lazy queries (``SLIDE``) prefer the algorithms built for lazy
re-evaluation. Cost-based choice comes with the optimizer (issue 4).
"""

from __future__ import annotations

from dataclasses import dataclass

from slidewise.errors import PlanError
from slidewise.operators.joins import JoinOperator, algorithms, get_algorithm
from slidewise.plan.query import JoinQuery

PREFERENCE = ("columnar", "hash", "hybrid", "nlj")
LAZY_PREFERENCE = ("columnar", "hash-lazy", "lazy-restore", "lazy", "general-lazy")


@dataclass
class PhysicalPlan:
    """The chosen operator class, its global join order and options."""

    query: JoinQuery
    algorithm: type[JoinOperator]
    order: list[int]
    reason: str
    options: dict

    def build(self) -> JoinOperator:
        return self.algorithm(self.query, order=self.order, **self.options)

    def orders(self) -> dict[str, list[str]]:
        """Probe order per origin stream: the origin first, then the global order."""
        names = self.query.aliases
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


def choose(query: JoinQuery, algorithm: str | None = None, order: str | list[str] | None = None,
           **options) -> PhysicalPlan:
    """Pick the operator for ``query`` (``algorithm`` forces one) and validate options."""
    idx = parse_order(query, order)
    if query.n == 1:
        algorithm = algorithm or "select"
    if algorithm:
        cls = get_algorithm(algorithm)
        cls.check(query)
        return PhysicalPlan(query, cls, idx, "chosen with --algorithm", options)
    registered = algorithms()
    reasons = []
    for name in (LAZY_PREFERENCE if query.slide else PREFERENCE):
        cls = registered.get(name)
        if cls is None:
            continue
        try:
            cls.check(query)
        except PlanError as e:
            reasons.append(f"{name}: {e.message}")
            continue
        why = "first applicable of " + ", ".join(LAZY_PREFERENCE if query.slide else PREFERENCE)
        return PhysicalPlan(query, cls, idx, why, options)
    raise PlanError("no join algorithm can evaluate this query: " + "; ".join(reasons),
                    hint="simplify the predicates or pick one with --algorithm")
