"""Adaptive re-planning: re-order a running join when its statistics drift.

Golab & Özsu, VLDB 2003 long version §5.4 ("fluctuating stream
arrival rates": re-run the ordering heuristic when rates change beyond a
threshold) and §5.1 (rates and distinct counts drive the order through the
per-unit-time cost); Kang, Naughton & Viglas §6 name adaptive
optimisation of window joins as the next step.

* **Measure**: :class:`~slidewise.optimizer.stats.OnlineStats` slides λ_i and
  v_i over each window as chunks arrive.
* **Detect**: drift when some stream's rate or distinct count moved by at
  least ``factor`` (default 2×) either way since the last plan.
* **Re-plan**: run the planner's order search
  (:func:`~slidewise.optimizer.ordering.search` over
  :func:`~slidewise.optimizer.cost.model_for` the running operator) on the
  measured statistics and take the cheapest order the operator accepts;
  migrate only if it is at least ``min_gain`` cheaper than the current one.
* **Migrate** (:func:`migrate_order`): between two chunks. A probe order
  decides in which nesting the windows are scanned, never which tuples they
  hold or which combinations qualify (the semantics of docs/semantics.md depend on positions and
  windows only), so swapping the order between chunks loses and duplicates
  nothing; ``tests/test_adaptive.py`` checks this against the oracle at
  random drift points with random new orders.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from slidewise.errors import PlanError
from slidewise.model.batch import StreamBatch
from slidewise.operators.joins.base import JoinOperator
from slidewise.optimizer.stats import Statistics
from slidewise.plan.query import JoinQuery

#: operator attributes derived from the join order (rebuilt by :func:`migrate_order`)
ORDER_STATE = ("levels", "probes", "naive_levels", "general_levels", "orders")
#: operator attributes that shape window contents: a new order must leave them equal
WINDOW_SHAPE = ("keys",)


def migrate_order(op: JoinOperator, order: list[int]) -> bool:
    """Give ``op`` the global join ``order`` between two chunks; ``False`` if it cannot take it.

    Uses ``op.set_order(order)`` when the operator has one; otherwise builds a
    state-less operator of the same class with the new order and copies its
    order-derived plan (:data:`ORDER_STATE`) — refused when the order would
    change how windows are stored (:data:`WINDOW_SHAPE`, e.g. the attribute a
    hash window is keyed on) or the algorithm rejects the order.
    """
    order = [int(s) for s in order]
    if sorted(order) != list(range(op.n)):
        raise PlanError(f"join order {order} is not a permutation of the {op.n} streams")
    if order == list(op.order):
        return True
    setter = getattr(op, "set_order", None)
    if callable(setter):
        return setter(order) is not False
    try:
        fresh = type(op)(op.query, order=order, negatives=op.negatives, **op.options)
    except PlanError:
        return False
    if any(getattr(fresh, a, None) != getattr(op, a, None) for a in WINDOW_SHAPE):
        return False
    op.order = order
    for attr in ORDER_STATE:
        if hasattr(fresh, attr):
            setattr(op, attr, getattr(fresh, attr))
    return True


@dataclass
class AdaptiveOptions:
    """``factor``: drift that triggers a re-plan; ``min_gain``: relative cost drop needed to migrate."""

    factor: float = 2.0
    min_gain: float = 0.05
    panes: int = 8

    def __post_init__(self) -> None:
        if not (math.isfinite(self.factor) and self.factor > 1):
            from slidewise.errors import OptionError

            raise OptionError(
                f"--adaptive needs a drift factor above 1, got {self.factor:g}", hint="e.g. --adaptive 2 (re-plan when a rate or distinct count doubles or halves)"
            )


def drift(old: Statistics, new: Statistics, factor: float) -> str | None:
    """The first statistic that moved by ``factor`` or more (``"S2 rate 1 -> 4.2"``), else ``None``."""
    for a, b in zip(old.streams, new.streams):
        pairs = [("rate", a.rate, b.rate)] + [(f"distinct {k}", a.distinct[k], b.distinct[k]) for k in a.distinct if k in b.distinct]
        for what, x, y in pairs:
            if x > 0 and y > 0 and max(x / y, y / x) >= factor:
                return f"{b.alias} {what} {x:.4g} -> {y:.4g}"
    return None


def plan_costs(query: JoinQuery, stats: Statistics, op: JoinOperator, current: list[int]) -> list[tuple[float, list[int]]]:
    """``(cost per time unit, order)`` for candidate global orders, cheapest first.

    The planner's own machinery: the running operator's cost formulas
    (its ``model_name``,
    :func:`~slidewise.optimizer.cost.model_for` with its actual bucket
    counts) and :func:`~slidewise.optimizer.ordering.search` (exact for small
    ``n``, the papers' heuristic beyond); the current order is always priced.
    """
    from slidewise.optimizer.cost import model_for
    from slidewise.optimizer.ordering import search, valid_orders

    name = type(op).model_name(query)
    if name is None:
        raise PlanError(f"no cost model for algorithm {getattr(op, 'name', '?')!r}")
    buckets = op.bucket_counts() if hasattr(op, "bucket_counts") else None
    model = model_for(query, stats, name, buckets)
    found = search(model, "auto", valid_orders(query, name))
    ranked = [(float(cost), list(order)) for order, cost in found.alternatives]
    if all(order != current for _, order in ranked):
        ranked.append((model.cost(current).total, list(current)))
    return sorted(ranked, key=lambda e: (float(f"{e[0]:.9g}"), e[1]))


class AdaptiveReplanner:
    """Per-chunk hook: measure, detect drift, re-plan and migrate; records every re-plan."""

    def __init__(self, query: JoinQuery, options: AdaptiveOptions | None = None):
        from slidewise.optimizer.stats import OnlineStats

        self.query = query
        self.opt = options or AdaptiveOptions()
        self.online = OnlineStats(query, panes=self.opt.panes)
        self.baseline: Statistics | None = None
        self.first_ts: int | None = None
        self.chunks = 0
        self.events: list[dict] = []

    @classmethod
    def from_option(cls, query: JoinQuery, value: AdaptiveOptions | bool | float | str) -> AdaptiveReplanner:
        if isinstance(value, AdaptiveOptions):
            return cls(query, value)
        if value is True:
            return cls(query)
        return cls(query, AdaptiveOptions(factor=float(value)))

    def observe(self, op: JoinOperator, chunk: Sequence[StreamBatch]) -> None:
        """Account for ``chunk`` (before the operator sees it) and re-plan on drift."""
        self.chunks += 1
        self.online.observe(chunk)
        if self.first_ts is None:
            self.first_ts = min((int(b.ts[0]) for b in chunk if len(b)), default=None)
        if self.query.n < 2:
            return
        stats = self.online.statistics()
        if self.baseline is None:
            # the first estimates are trusted once the longest window has been covered
            if self.online.now is not None and self.first_ts is not None and self.online.now - self.first_ts >= self.online.horizon:
                self.baseline = stats
            return
        reason = drift(self.baseline, stats, self.opt.factor)
        if reason is None:
            return
        self.baseline = stats
        self.replan(op, stats, reason, first_pos=min((int(b.pos[0]) for b in chunk if len(b)), default=None))

    def replan(self, op: JoinOperator, stats: Statistics, reason: str, first_pos: int | None = None) -> dict:
        names = self.query.aliases
        old = list(op.order)
        kept = [names[i] for i in old]
        event: dict[str, Any] = {"chunk": self.chunks, "before_pos": first_pos, "reason": reason, "old": kept, "new": kept, "migrated": False}
        try:
            ranked = plan_costs(self.query, stats, op, old)
        except PlanError as err:  # no cost formula for this plan: keep the order, say why
            event["error"] = err.message
            self.events.append(event)
            return event
        cost_old = next(c for c, o in ranked if o == old) if any(o == old for _, o in ranked) else math.inf
        event |= {
            "cost_old": round(cost_old, 3),
            "cost_new": round(cost_old, 3),
            "rates": {s.alias: round(s.rate, 6) for s in stats.streams},
        }
        for cost, order in ranked:
            if order == old or cost > cost_old * (1 - self.opt.min_gain):
                break
            if migrate_order(op, order):
                event.update(new=[names[i] for i in order], migrated=True, cost_new=round(cost, 3))
                break
        self.events.append(event)
        return event

    def stats(self) -> list[dict]:
        return list(self.events)
