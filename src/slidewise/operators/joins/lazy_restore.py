"""Lazy multi-way NLJ with restore semantics (short-lived results recovered).

Paper: Golab, PhD thesis 2006 §5.2.2, Algorithm 5
(*LazyRestoreComputeJoin*); restore vs no-restore semantics in §3.3.4.

Algorithm (``lazy-restore``), at evaluation NOW (scheduling as in
:mod:`slidewise.operators.joins.lazy`):

1. for each stream i in the global order: insert its new tuples and group them
   by the values of the columns of i that the predicates read; for each group,
   with ``mints`` = the smallest ts in the group, run the nested loops of
   ``origin_order(i)`` once, scanning only tuples with ``exp >= mints`` (a
   superset: no member can be valid for any group member otherwise);
2. at the innermost loop, for each group member ``g``, re-check that every
   member is inside its window when the result's origin arrived. The thesis
   checks ``exp >= g.ts``; here the origin is the member with the greatest
   position, which may be a new tuple of another stream that arrived after
   ``g`` — checking against it keeps results exact. Count-window members use
   the §3.6 counters (Golab & Özsu) instead of ``exp``;
3. afterwards, drop tuples already expired at NOW (``exp < NOW``) and trim
   count windows to their last N arrivals. Tuples expiring before NOW + D are
   kept: they may still form short-lived results with the next arrivals.

Semantics: restore — every eager result, each exactly once, emitted at the
evaluation instant of its origin (``ts`` = origin ts). A query without
``restore`` is answered with restore semantics too (a superset of its
no-restore answer). Cost: the timestamp re-checks of step 2 (not counted as
comparisons) and up to D·λ_i extra tuples per window compared with ``lazy``.
"""

from __future__ import annotations

from collections.abc import Callable

from slidewise.model.batch import Tup
from slidewise.operators.joins.base import ResultBuilder
from slidewise.operators.joins.lazy import GroupedLazyJoin
from slidewise.plan.query import JoinQuery


class LazyRestoreNLJ(GroupedLazyJoin):
    """Lazy multi-way NLJ with restore semantics (thesis Alg. 5)."""

    name = "lazy-restore"
    summary = "lazy NLJ every SLIDE with restore semantics: short-lived results recovered (Alg. 5)"
    preference = {"lazy": 3}
    compared = {"lazy": 2}
    restores = True

    @classmethod
    def check(cls, query: JoinQuery) -> None:
        cls._require_lazy("lazy-restore", query)

    def after(self, now: int) -> None:
        self.purge(now)

    def outer_valid(self, group: list[Tup]) -> Callable[[Tup], bool]:
        mints = min(g.ts for g in group)
        specs = self.specs

        def valid(u: Tup) -> bool:
            spec = specs[u.stream]
            return spec.is_count or u.ts + spec.length >= mints

        return valid

    def leaf(self, i: int, group: list[Tup], out: ResultBuilder) -> Callable[[list], None]:
        def emit(members: list) -> None:
            others = max((m for m in members if m.stream != i), key=lambda m: m.pos, default=None)
            for g in group:
                members[i] = g
                origin = g if others is None or g.pos > others.pos else others
                if all(self.valid(m, origin) for m in members if m is not origin):
                    out.add(list(members), ts=origin.ts)
            members[i] = group[0]

        return emit
