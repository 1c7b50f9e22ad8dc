"""Hash-bucket allocation across the windows of a multi-way hash join, and the rule ``allocate_buckets``.

Paper: Golab & Özsu, VLDB 2003 long version §5.3 (a window's
average bucket holds W_i/b_i tuples, so unequal tables change the best
order) and §6.5 / Fig. 4b (given a total number of buckets, giving more to
the large — fast or long — windows beats equal tables; their strategies
"equal", "1 to slow", "5 to slow", "10 to slow"); Golab's thesis
§5.4.3 (allocate more buckets to windows expected to hold more tuples).

Strategies for a budget of B buckets over the hashed windows:

* ``equal``: B/n each (the remainder to the largest windows);
* ``proportional``: b_i ∝ W_i, at least one each;
* ``slow=k``: k buckets to every slow window (not :func:`fast_streams`), the
  rest shared by the fast ones (Golab & Özsu Fig. 4b);
* ``model``: the counts minimising the cost model for the chosen order. Each
  loop scans one window, so the cost is a sum of one term per window and a
  dynamic programme over the budget is exact; a window never gets more than
  max(v) buckets (no gain beyond), and among equal costs fewer buckets win, so
  fewer than B may be used.

The paper warns that very large tables pay when expiration visits every
bucket; slidewise's hashed windows expire through an arrival-order queue in
O(expired) (:mod:`slidewise.windows.hashed`), so only join cost is modelled.

>>> allocate_equal(10, [True, True, True]), allocate_proportional(12, [100, 100, 1000], [True] * 3)
([4, 3, 3], [2, 2, 8])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from slidewise.optimizer.cost import CostModel, bucket_share, model_for
from slidewise.optimizer.ordering import fast_streams

if TYPE_CHECKING:
    from slidewise.plan.physical import PhysicalPlan

__all__ = ["STRATEGIES", "allocate", "allocate_buckets", "allocate_equal", "allocate_model", "allocate_proportional", "allocate_slow"]

STRATEGIES = ("equal", "proportional", "model", "slow=k")


def allocate_equal(total: int, hashed: Sequence[bool], sizes: Sequence[float] | None = None) -> list[int]:
    """``total`` split evenly over the hashed windows (the remainder to the largest)."""
    idx = [i for i, h in enumerate(hashed) if h]
    out = [1] * len(hashed)
    if not idx:
        return out
    q, r = divmod(max(total, len(idx)), len(idx))
    by_size = sorted(idx, key=lambda i: (-(sizes[i] if sizes else 0), i))
    for i in idx:
        out[i] = q
    for i in by_size[:r]:
        out[i] += 1
    return out


def allocate_proportional(total: int, sizes: Sequence[float], hashed: Sequence[bool]) -> list[int]:
    """b_i ∝ W_i (largest remainders), at least one bucket per hashed window."""
    idx = [i for i, h in enumerate(hashed) if h]
    out = [1] * len(hashed)
    spare = total - len(idx)
    weight = sum(sizes[i] for i in idx)
    if spare <= 0 or weight <= 0:
        return out
    shares = {i: spare * sizes[i] / weight for i in idx}
    for i in idx:
        out[i] += int(shares[i])
    left = total - sum(out[i] for i in idx)
    for i in sorted(idx, key=lambda i: (-(shares[i] - int(shares[i])), i))[:left]:
        out[i] += 1
    return out


def allocate_slow(total: int, rates: Sequence[float], hashed: Sequence[bool], per_slow: int) -> list[int]:
    """``per_slow`` buckets for each slow window, the rest split over the fast ones (Golab & Özsu Fig. 4b)."""
    fast = set(fast_streams(rates)) & {i for i, h in enumerate(hashed) if h}
    if not fast:
        return allocate_equal(total, hashed)
    out = [per_slow if h and i not in fast else 1 for i, h in enumerate(hashed)]
    left = max(len(fast), total - sum(out[i] for i in range(len(out)) if hashed[i] and i not in fast))
    share = allocate_equal(left, [i in fast for i in range(len(hashed))])
    for i in fast:
        out[i] = share[i]
    return out


def allocate_model(total: int, model: CostModel, orders: Mapping[int, Sequence[int]], fronts: dict[int, int] | None = None) -> list[int]:
    """The counts (at most ``total`` in all) that minimise the model's cost of the plan ``orders``.

    The cost separates per window (:meth:`CostModel.bucket_terms`), so a
    knapsack-style dynamic programme over the budget finds the exact minimum;
    among equal costs it uses the fewest buckets.
    """
    import numpy as np

    hashed = [model.hash_class[i] is not None for i in range(model.n)]
    idx = [i for i, h in enumerate(hashed) if h]
    out = [1] * model.n
    if not idx or total <= len(idx):
        return out
    _, coef = model.bucket_terms(orders, fronts)
    cap = total - len(idx) + 1  # most buckets one window can get
    v = [model.member[i][hc] if (hc := model.hash_class[i]) is not None else 1.0 for i in range(model.n)]
    best = np.full(total + 1, np.inf)
    best[0] = 0.0
    choice = []
    for i in idx:
        values = [v[i], *coef[i]]
        integral = all(float(x).is_integer() for x in values)
        useful = min(cap, max(1, int(max(values)))) if integral else cap  # no gain beyond max(m, v)
        f = np.array([sum(c * bucket_share(m, v[i], b) for m, c in coef[i].items()) for b in range(1, useful + 1)])
        f += np.arange(1, useful + 1) * 1e-12 * max(1.0, float(f.max(initial=0.0)))
        new = np.full(total + 1, np.inf)
        arg = np.zeros(total + 1, dtype=np.int64)
        for b in range(1, useful + 1):
            cand = np.full(total + 1, np.inf)
            cand[b:] = best[:-b] + f[b - 1]
            better = cand < new
            new[better], arg[better] = cand[better], b
        best = new
        choice.append(arg)
    spent = int(np.argmin(best))
    for i, arg in zip(reversed(idx), reversed(choice)):
        b = int(arg[spent])
        out[i] = b
        spent -= b
    return out


def allocate(strategy: str, total: int, model: CostModel, order: Sequence[int]) -> list[int]:
    """Bucket counts per window under ``strategy`` (one of :data:`STRATEGIES`; ``slow=5`` etc.).

    ``model`` must be a hash model (built with bucket counts); ``order`` is the
    global join order the ``model`` strategy optimises for.
    """
    hashed = [model.hash_class[i] is not None for i in range(model.n)]
    if strategy == "equal":
        return allocate_equal(total, hashed, model.size)
    if strategy == "proportional":
        return allocate_proportional(total, model.size, hashed)
    if strategy.startswith("slow="):
        return allocate_slow(total, model.rate, hashed, int(strategy.split("=", 1)[1]))
    if strategy == "model":
        return allocate_model(total, model, {i: model.probe_sequence(i, order) for i in range(model.n)}, model.fronts(order))
    raise ValueError(f"unknown bucket allocation strategy {strategy!r}; use one of {STRATEGIES}")


def allocate_buckets(plan: PhysicalPlan) -> PhysicalPlan:
    """Optimizer rule: spread the hash buckets of a hash-family plan by the model (plan in, plan out).

    Only when the plan runs a hash-family operator and ``--buckets`` was not
    given. The budget is what the operators' defaults would use in total
    (``min(window size, 64)`` per window); the order is re-chosen for the new
    counts unless ``--order`` fixed it.
    """
    from slidewise.operators.joins.hash import default_buckets
    from slidewise.optimizer.ordering import order_joins

    name = plan.model_algorithm
    if plan.forced_buckets or plan.buckets is None or plan.algorithm.name != name:
        return plan
    query = plan.query
    assert plan.stats is not None and plan.search is not None  # order_joins ran before
    budget = sum(default_buckets(s.window) for s in query.streams)
    model = model_for(query, plan.stats, name, plan.buckets)
    if all(c is None for c in model.hash_class):  # nothing is equi-joined: no hash tables
        return plan
    before = plan.search.cost.total
    counts = allocate_model(budget, model, plan.search.orders, plan.search.cost.fronts)
    if counts == plan.buckets:
        return plan
    plan.buckets = counts
    plan = order_joins(plan)
    assert plan.search is not None
    plan.notes.append(
        f"hash buckets by the model (budget {budget}, used {sum(counts)}): "
        + ", ".join(f"{a} {b}" for a, b in zip(query.aliases, counts))
        + f"; predicted {before:,.0f} -> {plan.search.cost.total:,.0f}"
    )
    return plan
