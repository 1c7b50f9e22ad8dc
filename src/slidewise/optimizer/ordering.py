"""Join ordering: the papers' heuristic, an exact search, and the optimizer rule ``order_joins``.

Papers: Golab & Özsu, VLDB 2003 long version §5.1 (heuristic:
descending selectivity, then fast streams moved up but not to the top,
about n^f orders for f fast streams), §5.2 (general lazy: per-origin orders,
the origin's window cut to τ), §5.3 (hash joins: bucket sizes), §5.4 (joins on
different attributes: greedy on the join graph); Golab's thesis
§5.3.2 (the same heuristic and its examples, Tables 5.3–5.6).

Only pipelined, right-deep plans are considered (no intermediate result is
materialised): n! global orders, each origin probing first and then the
global order (``nlj``, ``hash``, ``lazy``...), or n·n! per-origin orders for
``general-lazy``. Costs come from :class:`~slidewise.optimizer.cost.CostModel`.

* :func:`exact_search` enumerates every global order (n ≤ :data:`EXACT_MAX`)
  by depth-first extension of prefixes. With new tuples probing first, the
  cost of appending stream j after a prefix set S depends on S and j only
  (every origin i ≠ j has joined exactly S ∪ {i} above j), so each of the
  2^n·n extensions is priced once and shared by all orders. For
  ``general-lazy`` each origin's order is searched on its own (costs add up).
  When window sizes depend on the order (grouped lazy operators insert new
  tuples stream by stream, :attr:`CostModel.ordered`), an origin already in
  the prefix also depends on the streams before it (its front), so that
  part is priced per (origin, front, prefix, stream) while origins after the
  prefix still share (prefix, stream).
* :func:`heuristic_search`: start from the selectivity order — the pair of
  windows with the smallest join, then repeatedly the stream giving the
  smallest intermediate result, preferring streams joined by a predicate to
  those that would make a cross product (which is the greedy most-selective-
  edge walk on the join graph when streams join on different attributes); try
  both orders of the first pair; then, if some streams are much faster than
  the others (:func:`fast_streams`), every placement of them higher in the
  order but not first. The cheapest candidate under the model wins.
  Finally the cheapest candidate is improved by moving single streams while
  that helps (:func:`improve`; slidewise's addition — the papers' heuristic
  alone is ``refine=False``).
* :func:`order_joins` is the optimizer rule: plan in, plan out. ``search``
  ``auto`` uses the exact search for n ≤ :data:`AUTO_EXACT_MAX`.

Ties between equal costs (to 9 significant digits) go to the order that is
lexicographically first in FROM positions, so results are deterministic.

>>> from slidewise.cql import load_query
>>> from slidewise.optimizer.stats import parse_stats
>>> from slidewise.optimizer.cost import CostModel
>>> q = load_query("SELECT * FROM S1 [RANGE 100], S2 [RANGE 100], S3 [RANGE 100], S4 [RANGE 100] "
...                "WHERE S1.a = S2.a AND S2.a = S3.a AND S3.a = S4.a")
>>> st = parse_stats(["S1:rate=10,distinct=40", "S2:rate=1,distinct=100",
...                   "S3:rate=1,distinct=8", "S4:rate=1,distinct=5"], q)
>>> h = heuristic_search(CostModel(q, st))
>>> h.order, h.cost.total, h.alternatives[0]
((1, 0, 2, 3), 16200.0, ((1, 0, 2, 3), 16200.0))
>>> selectivity_order(CostModel(q, st))
(1, 2, 3, 0)
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from slidewise.errors import OptionError
from slidewise.optimizer.cost import CostModel, PlanCost

if TYPE_CHECKING:
    from slidewise.plan.physical import PhysicalPlan
    from slidewise.plan.query import JoinQuery

__all__ = [
    "AUTO_EXACT_MAX",
    "EXACT_MAX",
    "SEARCHES",
    "OrderSearch",
    "exact_search",
    "fast_streams",
    "heuristic_search",
    "improve",
    "order_joins",
    "search",
    "selectivity_order",
]

#: largest n for which ``--search exact`` is allowed
EXACT_MAX = 8
#: largest n for which ``--search auto`` uses the exact search
AUTO_EXACT_MAX = 6
SEARCHES = ("auto", "heuristic", "exact")
#: a stream is "fast" if the rates above a gap are at least this many times those below
FAST_GAP = 2.0
#: at most this many streams are treated as fast (n^f candidate orders)
MAX_FAST = 3

Order = tuple[int, ...]
Valid = Callable[[Order], bool] | None


@dataclass
class OrderSearch:
    """The outcome of a join-order search.

    ``order``: the global order; ``orders``: the probe sequence per origin;
    ``alternatives``: the global orders priced, cheapest first (for
    ``general`` models: the per-origin candidates are in ``per_origin``);
    ``considered``: how many orders were priced; ``steps``: how the heuristic
    got there (text, for explain).
    """

    order: Order
    cost: PlanCost
    method: str
    considered: int
    alternatives: list[tuple[Order, float]]
    per_origin: dict[int, list[tuple[Order, float]]] = field(default_factory=dict)
    steps: list[str] = field(default_factory=list)

    @property
    def orders(self) -> dict[int, Order]:
        return self.cost.orders


def rank(cost: float, order: Sequence[int]) -> tuple:
    """Sort key: cost to 9 significant digits, then the order itself."""
    return (float(f"{cost:.9g}"), tuple(order))


def _names(model: CostModel, order: Sequence[int]) -> str:
    return ",".join(model.query.aliases[i] for i in order)


# --------------------------------------------------------------- exact ----


def _extension_cost(model: CostModel) -> Callable[[int, int, list[int]], float]:
    """``add(S, j, prefix)``: comparisons per unit time spent in loop j when the global prefix is S
    (its order does not matter here)."""
    memo: dict[tuple[int, int], float] = {}
    naive = model.kind == "naive"
    mult = [model.multiplier(i) for i in range(model.n)]

    def add(mask: int, j: int, _prefix: list[int]) -> float:
        key = (mask, j)
        hit = memo.get(key)
        if hit is None:
            if naive:
                hit = sum(mult[i] * model.step(i, mask, j) for i in range(model.n))
            else:
                hit = sum(mult[i] * model.step(i, mask | 1 << i, j) for i in range(model.n) if i != j)
            memo[key] = hit
        return hit

    return add


def _enumerate(n: int, add: Callable[[int, int, list[int]], float]) -> Iterator[tuple[Order, float]]:
    """Every permutation of ``range(n)`` with its summed extension cost (depth first).

    ``add(mask, j, prefix)``: the cost of appending ``j`` to ``prefix`` (the
    streams of ``mask``, in order).
    """
    order: list[int] = []

    def rec(mask: int, acc: float) -> Iterator[tuple[Order, float]]:
        if len(order) == n:
            yield tuple(order), acc
            return
        for j in range(n):
            if not mask >> j & 1:
                step = add(mask, j, order)
                order.append(j)
                yield from rec(mask | 1 << j, acc + step)
                order.pop()

    yield from rec(0, 0.0)


def _ordered_extension_cost(model: CostModel) -> Callable[[int, int, list[int]], float]:
    """:func:`_extension_cost` for order-dependent windows (:attr:`CostModel.ordered`).

    Appending j after prefix S (in this order): origins after the prefix have
    every stream of S and j in their front, so their share depends on (S, j)
    only; an origin i of S has the streams before it as its front.
    """
    n = model.n
    mult = [model.multiplier(i) for i in range(n)]
    later: dict[tuple[int, int], float] = {}
    inside: dict[tuple[int, int, int, int], float] = {}

    def add(mask: int, j: int, prefix: list[int]) -> float:
        key = (mask, j)
        hit = later.get(key)
        if hit is None:
            front = mask | 1 << j
            hit = later[key] = sum(mult[i] * model.step(i, mask | 1 << i, j, front) for i in range(n) if not (mask >> i & 1) and i != j)
        before = 0  # the streams before origin i in the prefix
        for i in prefix:
            k = (i, before, mask, j)
            part = inside.get(k)
            if part is None:
                part = inside[k] = mult[i] * model.step(i, mask, j, before)
            hit += part
            before |= 1 << i
        return hit

    return add


def exact_search(model: CostModel, valid: Valid = None) -> OrderSearch:
    """The cheapest plan over all n! global orders (all n·n! per-origin orders for ``general``)."""
    n = model.n
    if n > EXACT_MAX:
        raise OptionError(f"the exact join-order search handles at most {EXACT_MAX} streams, the query has {n}", hint="use --search heuristic")
    if model.kind == "general":
        return _exact_general(model)
    orders = _enumerate(n, _ordered_extension_cost(model) if model.ordered else _extension_cost(model))
    priced = [(o, c) for o, c in orders if valid is None or valid(o)]
    if not priced:
        raise OptionError("no join order is valid for this algorithm", hint="choose another algorithm with --algorithm")
    priced.sort(key=lambda oc: rank(oc[1], oc[0]))
    best = priced[0][0]
    return OrderSearch(best, model.cost(best), "exact", len(priced), priced, steps=[f"priced all {len(priced)} global orders"])


def _exact_general(model: CostModel) -> OrderSearch:
    per_origin: dict[int, list[tuple[Order, float]]] = {}
    for i in range(model.n):
        priced = [(seq, model.origin_cost(i, seq)) for seq in itertools.permutations(range(model.n))]
        priced.sort(key=lambda oc: rank(oc[1], oc[0]))
        per_origin[i] = priced
    orders = {i: per_origin[i][0][0] for i in range(model.n)}
    global_order = _global_for(orders)
    considered = sum(len(p) for p in per_origin.values())
    return OrderSearch(
        global_order,
        model.cost_orders(orders),
        "exact",
        considered,
        [(global_order, model.cost_orders(orders).total)],
        per_origin,
        [f"priced all {considered} per-origin orders ({model.n}·{model.n}!)"],
    )


def _global_for(orders: dict[int, Order]) -> Order:
    """A representative global order for per-origin plans: the first origin's order."""
    return tuple(orders[0])


# ----------------------------------------------------------- heuristic ----


def fast_streams(rates: Sequence[float]) -> list[int]:
    """Streams above the largest gap (ratio ≥ :data:`FAST_GAP`) in the sorted rates.

    >>> fast_streams([10, 1, 1, 3]), fast_streams([11, 10, 1, 1]), fast_streams([1, 1, 1.5])
    ([0], [0, 1], [])
    """
    n = len(rates)
    if n < 2:
        return []
    by_rate = sorted(range(n), key=lambda i: (-rates[i], i))
    best_gap, cut = 1.0, 0
    for k in range(min(n - 1, MAX_FAST)):
        lo = rates[by_rate[k + 1]]
        gap = rates[by_rate[k]] / lo if lo > 0 else float("inf")
        if gap > best_gap:
            best_gap, cut = gap, k + 1
    return sorted(by_rate[:cut]) if best_gap >= FAST_GAP else []


def _connected(model: CostModel, mask: int, j: int) -> bool:
    """Does an equality (or theta predicate) join stream j with one of ``mask``?"""
    if any(c in model._prefix(mask, None)[1] for c in model.member[j]):
        return True
    return any(f & (1 << j) and f & mask and not f & ~(mask | 1 << j) for f, _ in model.filters)


def selectivity_order(model: CostModel, origin: int | None = None, first: int | None = None) -> Order:
    """Greedy order by join size: smallest pair first, then the smallest next join.

    Streams joined to the prefix by a predicate go before cross products (the
    join-graph walk of Golab & Özsu §5.4). With ``origin`` (per-origin search for
    general lazy) that stream counts as its λ·τ new tuples.
    """
    n = model.n
    if n == 1:
        return (0,)
    if first is None:
        pairs = []
        for a, b in itertools.combinations(range(n), 2):
            linked = _connected(model, 1 << a, b)
            pairs.append((not linked, rank(model.phi(1 << a | 1 << b, origin), (a, b)), (a, b)))
        order = list(min(pairs)[2])
    else:
        order = [first]
    mask = sum(1 << s for s in order)
    while len(order) < n:
        cands = []
        for j in range(n):
            if not mask >> j & 1:
                cands.append((not _connected(model, mask, j), rank(model.phi(mask | 1 << j, origin), (j,)), j))
        j = min(cands)[2]
        order.append(j)
        mask |= 1 << j
    return tuple(order)


def _moves(order: Order, fast: list[int]) -> list[Order]:
    """Every placement of the fast streams higher up, never at the top (Golab & Özsu §5.1)."""
    out = {order}
    frontier = [order]
    for f in sorted(fast, key=order.index):
        nxt = []
        for o in frontier:
            cur = o.index(f)
            rest = [s for s in o if s != f]
            for p in range(1, cur + 1):
                nxt.append(tuple(rest[:p] + [f] + rest[p:]))
            nxt.append(o)
        frontier = list(dict.fromkeys(nxt))
        out.update(frontier)
    return sorted(out)


def improve(model: CostModel, order: Order, valid: Valid = None) -> tuple[Order, float, int]:
    """Iterative improvement: move one stream elsewhere while that lowers the cost.

    Returns the local optimum, its cost and the number of orders priced.
    """
    best, best_cost = tuple(order), model.cost(order).total
    priced, improved = 0, True
    while improved:
        improved = False
        for i in range(model.n):
            rest = best[:i] + best[i + 1 :]
            for p in range(model.n):
                if p == i:
                    continue
                cand = rest[:p] + (best[i],) + rest[p:]
                if valid is not None and not valid(cand):
                    continue
                priced += 1
                c = model.cost(cand).total
                if rank(c, cand) < rank(best_cost, best):
                    best, best_cost, improved = cand, c, True
                    break
            if improved:
                break
    return best, best_cost, priced


def heuristic_search(model: CostModel, valid: Valid = None, *, refine: bool = True) -> OrderSearch:
    """The papers' heuristic (see the module docstring); ~n^f orders priced.

    ``refine``: then improve the cheapest candidate by single-stream moves
    (:func:`improve`) — slidewise's addition; ``refine=False`` is the papers'
    heuristic alone.
    """
    if model.kind == "general":
        return _heuristic_general(model)
    names = model.query.aliases
    start = selectivity_order(model)
    swapped = (start[1], start[0]) + start[2:] if model.n > 1 else start
    fast = fast_streams(model.rate)
    cands = sorted(set(_moves(start, fast)) | set(_moves(swapped, fast)))
    priced = [(o, model.cost(o).total) for o in cands if valid is None or valid(o)]
    steps = [f"selectivity order {_names(model, start)} ({model.cost(start).total:,.0f})"]
    if fast:
        steps.append("fast stream(s) " + ", ".join(names[f] for f in fast) + " tried higher in the order, not first")
    if not priced:  # no candidate is valid for this algorithm: fall back to all orders
        if model.n <= EXACT_MAX:
            found = exact_search(model, valid)
            found.method = "heuristic (fell back to exact)"
            return found
        raise OptionError("no join order found by the heuristic is valid for this algorithm", hint="choose an order with --order or another algorithm")
    priced.sort(key=lambda oc: rank(oc[1], oc[0]))
    best = priced[0][0]
    steps.append(f"cheapest of {len(priced)} candidates: {_names(model, best)} ({priced[0][1]:,.0f})")
    considered = len(priced)
    if refine:
        better, cost, extra = improve(model, best, valid)
        considered += extra
        if better != best:
            steps.append(f"single-stream moves improve it to {_names(model, better)} ({cost:,.0f})")
            priced = sorted(priced + [(better, cost)], key=lambda oc: rank(oc[1], oc[0]))
            best = better
    method = "heuristic" if model.query.key_columns() is not None else "heuristic (join graph)"
    return OrderSearch(best, model.cost(best), method, considered, priced, steps=steps)


def _heuristic_general(model: CostModel) -> OrderSearch:
    """Per origin: the lazy order (origin first), the selectivity order with the origin cut to τ, fast moves."""
    base = selectivity_order(model)
    fast = fast_streams(model.rate)
    per_origin: dict[int, list[tuple[Order, float]]] = {}
    for i in range(model.n):
        lazy = (i,) + tuple(s for s in base if s != i)
        start = selectivity_order(model, origin=i)
        cands = set(_moves(start, fast)) | {lazy}
        priced = sorted(((o, model.origin_cost(i, o)) for o in cands), key=lambda oc: rank(oc[1], oc[0]))
        per_origin[i] = priced
    orders = {i: per_origin[i][0][0] for i in range(model.n)}
    cost = model.cost_orders(orders)
    considered = sum(len(p) for p in per_origin.values())
    return OrderSearch(
        _global_for(orders),
        cost,
        "heuristic",
        considered,
        [(_global_for(orders), cost.total)],
        per_origin,
        [f"per origin: origin first, selectivity order with the origin's window cut to τ, fast-stream moves ({considered} orders)"],
    )


# -------------------------------------------------------------- driver ----


def search(model: CostModel, method: str = "auto", valid: Valid = None) -> OrderSearch:
    """Run the search ``method`` (``auto``: exact for n ≤ :data:`AUTO_EXACT_MAX`, else heuristic)."""
    if method not in SEARCHES:
        raise OptionError(f"unknown join-order search {method!r}", hint=f"use one of {', '.join(SEARCHES)}")
    if method == "exact" or (method == "auto" and model.n <= AUTO_EXACT_MAX):
        found = exact_search(model, valid)
        if method == "auto":
            found.steps.insert(0, f"n = {model.n} ≤ {AUTO_EXACT_MAX}: exact search")
        return found
    found = heuristic_search(model, valid)
    if method == "auto":
        found.steps.insert(0, f"n = {model.n} > {AUTO_EXACT_MAX}: heuristic search")
    return found


def price_forced(model: CostModel, order: Order, reference: OrderSearch) -> OrderSearch:
    """An order given with ``--order``: its cost, with the search's alternatives for comparison."""
    cost = model.cost(order)
    alts = reference.alternatives
    if all(o != order for o, _ in alts):
        alts = sorted(alts + [(order, cost.total)], key=lambda oc: rank(oc[1], oc[0]))
    return OrderSearch(
        order,
        cost,
        "forced with --order",
        reference.considered,
        alts,
        reference.per_origin,
        [f"--order {_names(model, order)}; the model's choice would be {_names(model, reference.order)} ({reference.cost.total:,.0f})"],
    )


# ---------------------------------------------------------------- rule ----


def valid_orders(query: JoinQuery, algorithm: str) -> Valid:
    """Which global orders the registered ``algorithm`` can run (its ``order_filter``; ``None``: all)."""
    from slidewise.operators.joins import get_algorithm

    return get_algorithm(algorithm).order_filter(query)


def order_joins(plan: PhysicalPlan) -> PhysicalPlan:
    """Optimizer rule: choose the join order of ``plan`` from the cost model (plan in, plan out).

    Prices orders with :func:`~slidewise.optimizer.cost.model_for` the plan's
    model algorithm, statistics and buckets; keeps a forced ``--order`` but
    records what the model would choose.
    """
    from slidewise.optimizer.cost import model_for

    query, name = plan.query, plan.model_algorithm
    assert name is not None and plan.stats is not None  # choose() runs the rules only with a model
    buckets = plan.buckets if plan.buckets is not None else plan.options.get("buckets")
    model = model_for(query, plan.stats, name, buckets)
    if model.hashed:
        plan.buckets = list(model.buckets)
    valid = valid_orders(query, name)
    found = search(model, plan.search_method, valid)
    if plan.forced_order:
        found = price_forced(model, tuple(plan.order), found)
    plan.search = found
    plan.order = list(found.order)
    return plan
