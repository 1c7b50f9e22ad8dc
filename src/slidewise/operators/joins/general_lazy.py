"""General lazy multi-way NLJ: an arbitrary join order per origin stream.

Paper: Golab & Özsu, VLDB 2003 long version §3.3, algorithms
*General Lazy Multi-Way NLJ* / *GeneralComputeJoin*; count windows via the
§3.6 counters.

Algorithm (``general-lazy``): new tuples are inserted into their windows as
they are evaluated; at each evaluation NOW (multiples of D = ``query.slide``,
scheduling as in :mod:`slidewise.operators.joins.lazy`), for each stream i the
nested loops follow the order ``O_i`` (option ``orders``: origin → list of
stream indices or aliases; default: origin first, then the global order,
i.e. Golab & Özsu's *Lazy Multi-Way NLJ*). Stream i sits at position ``p`` of
``O_i``; its loop scans only the tuples that arrived since the last evaluation.
The loops above ``p`` scan whole windows with predicates only; the loop at
``p`` checks that every member bound so far arrived before ``k`` and is inside
its window at ``k``'s arrival, and the loops below ``p`` check each scanned
tuple the same way. Those timestamp/counter checks are not counted as
comparisons; each predicate evaluation is.

Semantics: the timestamp checks make every result valid relative to its
origin ``k`` and each result is found once (from its origin), so the algorithm
naturally has *restore* semantics — provided expired tuples are kept until the
evaluation (lazy expiration after it: ``exp < NOW``). For *no-restore*
(``query.restore`` false) it first purges every tuple with ``exp < NOW``
(new ones included), which removes exactly the short-lived results, and after
evaluating drops ``exp < NOW + D``.

Complexity: loops above ``p`` are not restricted by ``k``, so an order with the
new tuples deep inside pays for full scans of the windows above them; the
optimiser's per-origin order decides when that is worth it (Golab & Özsu §4, §5.2).
"""

from __future__ import annotations

from slidewise.errors import PlanError
from slidewise.model.batch import Tup
from slidewise.operators.joins.base import ResultBuilder
from slidewise.operators.joins.lazy import LazyNestedLoopJoin
from slidewise.operators.joins.nlj import Level, compile_levels
from slidewise.plan.query import JoinQuery


class GeneralLazyNLJ(LazyNestedLoopJoin):
    """General lazy multi-way NLJ with per-origin join orders (Golab & Özsu §3.3)."""

    name = "general-lazy"
    summary = "lazy NLJ every SLIDE with any join order per origin stream (Golab & Özsu §3.3)"
    preference = {"lazy": 5}
    compared = {"lazy": 3}
    cost_family = "general"
    options_allowed = frozenset({"orders"})

    @classmethod
    def check(cls, query: JoinQuery) -> None:
        cls._require_lazy("general-lazy", query)

    def __init__(self, query: JoinQuery, **kwargs) -> None:
        super().__init__(query, **kwargs)
        self.orders = self._orders(self.options.get("orders") or {})
        self.general_levels = {i: compile_levels(query, o) for i, o in self.orders.items()}

    def _orders(self, given: dict) -> dict[int, list[int]]:
        def idx(s) -> int:
            return self.query.index(s) if isinstance(s, str) else int(s)

        orders = {i: self.origin_order(i) for i in range(self.n)}
        for origin, order in given.items():
            i, order = idx(origin), [idx(s) for s in order]
            if sorted(order) != list(range(self.n)) or i not in range(self.n):
                raise PlanError(
                    f"join order {order} for origin {origin} is not a permutation of the {self.n} streams",
                    hint="list every stream of FROM once, e.g. orders={0: [1, 0, 2]}",
                )
            orders[i] = order
        return orders

    def evaluate(self, now: int, new: list[list[Tup]], out: ResultBuilder) -> None:
        restore = self.query.restore
        if not restore:
            self.purge(now)
        if self.count_streams:
            self.snapshot_counters(new)
        drop = None if restore else now
        arrived = [[t for t in ts if self.add_new(t, drop)] for ts in new]
        for i in self.order:
            if arrived[i]:
                levels = self.general_levels[i]
                self._loop(levels, 0, [None] * self.n, None, i, arrived[i], out)
        self.purge(now if restore else now + self.slide)

    def _loop(self, levels: list[Level], depth: int, members: list, k: Tup | None, origin: int, new: list[Tup], out: ResultBuilder) -> None:
        """Loops of ``O_origin`` from ``depth``; ``k`` is the new tuple once its loop is entered."""
        if depth == len(levels):
            out.add(list(members), ts=k.ts)
            return
        level = levels[depth]
        s = level.stream
        if s == origin:  # the loop over the new tuples: check everything bound above
            bound = [members[lv.stream] for lv in levels[:depth]]
            for u in new:
                if not all(m.pos < u.pos and self.valid(m, u) for m in bound):
                    continue
                members[s] = u
                if self.passes(level, members):
                    self._loop(levels, depth + 1, members, u, origin, new, out)
        else:
            for u in self.windows[s]:
                if k is not None and not (u.pos < k.pos and self.valid(u, k)):
                    continue
                members[s] = u
                if self.passes(level, members):
                    self._loop(levels, depth + 1, members, k, origin, new, out)
        members[s] = None
