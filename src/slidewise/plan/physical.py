"""The physical plan of a join query: the chosen operator, its join order, buckets and the optimizer's findings.

Data only: :func:`slidewise.optimizer.planner.choose` fills it in (the
algorithm from the operators' facts, the order and buckets from the cost
model); engines call :meth:`PhysicalPlan.build` and explain reads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from slidewise.errors import PlanError
from slidewise.plan.query import JoinQuery

if TYPE_CHECKING:
    from slidewise.operators.joins import JoinOperator
    from slidewise.optimizer.ordering import OrderSearch
    from slidewise.optimizer.stats import Statistics

__all__ = ["PhysicalPlan", "parse_order"]


@dataclass
class PhysicalPlan:
    """The chosen operator class, its global join order, options and the optimizer's findings.

    ``stats``: the statistics the cost model used (``None`` for one stream);
    ``model_algorithm``: the algorithm whose formulas priced the plan;
    ``search``: the :class:`~slidewise.optimizer.ordering.OrderSearch` (chosen
    order, cost, alternatives; per-origin orders go to operators of the
    ``general`` cost family); ``buckets``: hash buckets per window (``hashed``
    operators); ``notes``: why, one line per decision, for explain.
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
        if self.algorithm.cost_family == "general" and self.search is not None:
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
        return {names[o]: [names[o]] + [names[s] for s in self.order if s != o] for o in range(self.query.n)}


def parse_order(query: JoinQuery, order: str | list[str] | None) -> list[int]:
    """``"S2,S1,S3"`` (aliases) -> stream indices; default: FROM order."""
    if order is None:
        return list(range(query.n))
    names = order.split(",") if isinstance(order, str) else list(order)
    names = [n.strip() for n in names if n.strip()]
    idx = [query.index(n) for n in names]
    if sorted(idx) != list(range(query.n)):
        raise PlanError(f"--order {','.join(names)} must list every stream of FROM exactly once", hint=f"e.g. --order {','.join(reversed(query.aliases))}")
    return idx
