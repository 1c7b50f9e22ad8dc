"""Choosing a W-join operator by cost (Hammad, Aref & Elmagarmid, "Stream Window Join", SSDBM 2003,
§4.3 and §5.3: service time per tuple follows the comparisons per arrival).

Every registered W-join operator (:func:`slidewise.operators.wjoin.by_rank`) but the baselines
(``baseline``) whose ``check`` accepts the query is priced in comparisons per time unit under the statistics (``--stats``
rates and distinct counts, or the uniform defaults of :mod:`slidewise.optimizer.stats`), plus its
``per_arrival`` fact times the arrival rate (and the levels, for a pipeline); the cheapest runs (ties: ``preference``). With
rates ``λ``, the closed bounds ``d`` (or the operator's filter bounds) and ``v`` distinct values
per equi-join attribute:

* ``merge`` (MW-join, GCA, LCA): an arrival of stream ``s`` enumerates, in the operator's order,
  ``λ_j · width_j`` tuples of each next stream ``j`` per partial combination, with ``width_j =
  min(d[j][s], min_i (d[i][j] + d[j][i]))`` over the members ``i`` so far (the tuples of ``j``
  that arrived before the new one inside its period); every step's rows are counted, then the
  equalities the step completes keep ``1/v`` of them. GCA and LCA add one comparison per
  constraint per candidate (the refinement).
* ``pipeline`` (NLW-join, HW-join): level ``k`` joins the m-tuples over ``order[:k]`` (new at
  rate ``R_k``, visited by ``j``'s arrivals for ``min_i d[i][j]``: the one passing its end deletes
  it) with stream ``j = order[k]`` (kept ``max_i (d[j][i] + 1/λ_i)``: a tuple stays until every
  stream below has a later tuple beyond its window, the paper's purge); each new row compares with
  the other side's buffer, one bucket of ``v`` for HW-join, and every row is visited once more by
  the scan that deletes it. ``R_k`` is the rate of new combinations over ``order[:k]``: the merge
  enumeration restricted to those streams, equalities among them applied.

The ``per_arrival`` facts put what an operator spends per arrival beyond its comparisons (all work
on a chunk's arrivals at once) in MW-join comparisons; ``slidewise bench wjoin`` measures them from
CPU times expressed in a vectorised comparison timed between the same passes, so that the machine's
load cancels (:func:`slidewise.bench.wjoin.per_arrival`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast

import numpy as np

from slidewise.errors import SlidewiseError
from slidewise.operators.wjoin import WJOINS, MWJoin, NLWJoin, WJoinOperator, by_rank
from slidewise.operators.wjoin.mw_join import Links, equality_links, greedy_order
from slidewise.optimizer.stats import Statistics, StatsArg, resolve_statistics
from slidewise.plan.wjoin import WJoinQuery

__all__ = ["WJoinChoice", "choose_wjoin", "comparisons", "estimate"]

Selectivity = Callable[[set[int]], float]


@dataclass
class WJoinChoice:
    """The chosen operator class, why, and every applicable operator's estimate (cheapest first)."""

    cls: WJoinOperator
    reason: str
    costs: dict[str, float] = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)
    stats_source: str = "default"

    def describe(self) -> str:
        priced = ", ".join(f"{n} {c:.3g}" for n, c in self.costs.items())
        refused = "".join(f"; not applicable: {why}" for why in self.refused.values())
        return f"{self.reason} (cost in comparisons per time unit, per-arrival work included, {self.stats_source} statistics: {priced}{refused})"


def _selectivity(query: WJoinQuery, stats: Statistics, members: set[int]) -> float:
    sel = 1.0
    for e in query.join.equalities:
        if e.left.stream in members and e.right.stream in members:
            sel /= max(stats[e.left.stream].v(e.left.attr), stats[e.right.stream].v(e.right.attr), 1.0)
    return sel


def _enumeration(d: np.ndarray, rates: np.ndarray, s: int, streams: list[int], sel: Selectivity, links: Links) -> tuple[float, float]:
    """Mode 2 for one arrival of ``s`` over ``streams`` (``s`` among them): the rows enumerated
    (summed over the steps) and the combinations left after the equalities (``sel(members)``)."""
    order = greedy_order(d, s, prefer=links, among=streams)
    rows, enumerated = 1.0, 0.0
    for k, j in enumerate(order[1:], start=1):
        width = min([d[j][s]] + [d[i][j] + d[j][i] for i in order[1:k]])
        rows *= rates[j] * width
        enumerated += rows
        rows *= sel(set(order[: k + 1])) / sel(set(order[:k]))
    return enumerated, rows


def _combinations(d: np.ndarray, rates: np.ndarray, streams: list[int], sel: Selectivity, links: Links) -> float:
    """New combinations over ``streams`` per time unit (equalities among them applied)."""
    if len(streams) == 1:
        return float(rates[streams[0]])
    return float(sum(rates[s] * _enumeration(d, rates, s, streams, sel, links)[1] for s in streams))


def estimate(cls: WJoinOperator, query: WJoinQuery, stats: Statistics) -> float:
    """``cls``'s cost per time unit for ``query`` under ``stats``: :func:`comparisons` plus its
    ``per_arrival`` fact per arrival (per arrival and level for a pipeline)."""
    levels = query.n - 1 if cls.cost_family == "pipeline" else 1
    return comparisons(cls, query, stats) + sum(s.rate for s in stats.streams) * cls.per_arrival * levels


def _wait(rate: float) -> float:
    """The mean time to a stream's next arrival (Poisson arrivals at ``rate``; none: 0)."""
    return 1.0 / rate if rate > 0 else 0.0


def comparisons(cls: WJoinOperator, query: WJoinQuery, stats: Statistics) -> float:
    """``cls``'s comparisons per time unit for ``query`` under ``stats`` (the module docstring)."""
    rates = np.array([s.rate for s in stats.streams], dtype=np.float64)

    def sel(members: set[int]) -> float:
        return _selectivity(query, stats, members)

    links = equality_links(query)

    if cls.cost_family == "merge":
        merge = cast(type[MWJoin], cls)
        d = np.array(merge.filter_bounds(query), dtype=np.float64)
        total = 0.0
        for s in range(query.n):
            enumerated, left = _enumeration(d, rates, s, list(range(query.n)), sel, links)
            total += rates[s] * (enumerated + (left * len(query.constraints) if merge.refines else 0.0))
        return total
    op = cast(NLWJoin, cls(query))
    d, order, total = op.d, op.order, 0.0
    for k in range(1, query.n):
        j, members = order[k], order[:k]
        made = _combinations(d, rates, members, sel, links)
        left = made * min(d[i][j] for i in members)
        right = rates[j] * max(d[j][i] + _wait(rates[i]) for i in members)
        cost = rates[j] * left + made * right
        if cls.hashed:
            key = op.right[k].key
            cost /= max(stats[key[0]].v(key[1]), 1.0) if key is not None else 1.0
        total += cost + made + rates[j]  # every row once more, by the scan that deletes it
    return total


def choose_wjoin(query: WJoinQuery, algorithm: str | None = None, stats: StatsArg = None) -> WJoinChoice:
    """The W-join operator for ``query``: ``algorithm`` if given, else the cheapest estimate."""
    statistics = resolve_statistics(query.join, stats)
    ranked = by_rank()
    costs: dict[str, float] = {}
    refused: dict[str, str] = {}
    for cls in ranked:
        if cls.baseline:  # run when named only
            continue
        try:
            cls.check(query)
        except SlidewiseError as e:
            refused[cls.name] = e.message
            continue
        costs[cls.name] = estimate(cls, query, statistics)
    costs = dict(sorted(costs.items(), key=lambda kv: (kv[1], WJOINS[kv[0]].preference)))
    if algorithm in WJOINS:
        WJOINS[algorithm].check(query)
        return WJoinChoice(WJOINS[algorithm], "chosen with --algorithm", costs, refused, statistics.source)
    best = next(iter(costs))
    return WJoinChoice(WJOINS[best], f"cheapest estimate of {', '.join(c.name for c in ranked if c.name in costs)}", costs, refused, statistics.source)
