"""Choosing the binary join's window structures with the Kang et al. cost model.

Paper: Kang, Naughton & Viglas, *Evaluating Window Joins over Unbounded
Streams* (ICDE 2003) §4.2 and §5.1: the directions are independent, so the
cheapest combination is the cheapest structure per window
(:func:`slidewise.optimizer.binary.choose`), among the structures the
predicates allow (hash needs an equality, trees an equality or a range).
Weights: the calibrated profile if present, else the paper's Eq. 7.

The planner runs :func:`choose_structures` as a rule; the operator
(:class:`~slidewise.operators.joins.binary.BinaryJoin`) builds the
``directions`` it is given.
"""

from __future__ import annotations

from typing import Any

from slidewise.operators.joins.binary import BinaryJoin, structure_inputs
from slidewise.optimizer.binary import choose, load_weights
from slidewise.plan.physical import PhysicalPlan
from slidewise.plan.query import JoinQuery

__all__ = ["choose_structures", "cost_based_structures"]


def cost_based_structures(query: JoinQuery, options: dict[str, Any]) -> tuple[str, str]:
    """The cheapest combination ``XY`` for ``query`` under ``options`` (``rates``) and why."""
    inputs = structure_inputs(query, options)
    weights = load_weights()
    pick = choose(*inputs.rates, *inputs.windows, weights, methods_a=tuple(inputs.allowed[0]), methods_b=tuple(inputs.allowed[1]))
    return pick.combination, f"cheapest by the cost model ({weights.source})"


def choose_structures(plan: PhysicalPlan) -> PhysicalPlan:
    """Fill the binary join's ``directions`` by the cost model unless given."""
    if issubclass(plan.algorithm, BinaryJoin) and plan.options.get("directions") is None:
        combination, _why = cost_based_structures(plan.query, plan.options)
        plan.options = {**plan.options, "directions": combination}
    return plan
