"""Eager multi-way nested-loops join (NLJ), and the probe machinery the NLJ family shares.

Paper: Golab & Özsu, VLDB 2003 long version §3.2, algorithms
*Eager Multi-Way NLJ* / *ComputeJoin* and Table 4; Golab, PhD thesis 2006
§5.2.1, Algorithm 2 and Table 5.2.

Algorithm (``nlj``): when tuple ``k`` arrives on stream ``i`` it is inserted
into its window, every other window is purged of tuples expired at ``k.ts``
(count windows evict on insertion: circular arrays, §3.6), and the other
windows are scanned in nested loops in the order ``origin_order(i)`` — ``k``
on top, then the global order. A scanned tuple continues to the next loop only
if every predicate that has just become evaluable holds. Results are emitted
immediately (eager evaluation), ``ts`` = ``k.ts``, ``exp`` = min member exp.

Predicates (generalising the paper's common attribute ``a``): equalities are
closed transitively into classes of equal columns; when a loop binds stream
``s``, each column of ``s`` in a class with an already bound column is compared
with the earliest bound one (the origin's, when it is in the class — the
paper's ``k.a = u.a``). Every other conjunct is evaluated in the first loop
where all its streams are bound (``query.filters_within``). Each such
evaluation counts one comparison (``comparisons``); window/timestamp checks
are not counted. Checks stop at the first false predicate.

Complexity per arrival: each loop scans its whole window once per partial
result reaching it, so the work is Σ over loops of (partial results of the
loops above) × (window size) (Golab & Özsu §4 and App. A turn this into
per-unit-time costs). State: exactly the window contents.

>>> from slidewise.plan.query import JoinQuery, StreamRef, WindowSpec, Equality
>>> from slidewise.plan.expr import Col
>>> q = JoinQuery((StreamRef("A", "A", WindowSpec("range", 5)),
...                StreamRef("B", "B", WindowSpec("range", 5))),
...               (Equality(Col(0, "a", "A"), Col(1, "a", "B")),))
>>> op = EagerNLJ(q)
>>> import numpy as np
>>> from slidewise.model.batch import StreamBatch
>>> a7 = {"a": np.array([7])}
>>> res = op.process([StreamBatch(0, [0], [1], a7), StreamBatch(1, [1], [3], a7)])
>>> res.keys(), op.comparisons
([((0, 1), 3, 6, 1)], 1)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from slidewise.errors import OptionError, PlanError
from slidewise.model.batch import ResultBatch, StreamBatch, Tup, merge_in_order
from slidewise.operators.joins.base import JoinOperator, ResultBuilder
from slidewise.plan.expr import Expr, evaluate, streams_of
from slidewise.plan.query import JoinQuery
from slidewise.windows.count import count_window
from slidewise.windows.fifo import TimeWindow


@dataclass(frozen=True)
class Level:
    """The checks made when a nested loop binds ``stream``.

    ``eqs``: ``(attr, other_stream, other_attr)`` – compare the bound tuple's
    ``attr`` with ``other_attr`` of the member already bound for ``other_stream``;
    ``filters``: conjuncts whose streams became all bound at this loop.
    """

    stream: int
    eqs: tuple[tuple[str, int, str], ...]
    filters: tuple[Expr, ...]


def equality_classes(query: JoinQuery) -> list[list[tuple[int, str]]]:
    """Columns ``(stream, attr)`` grouped by transitive equality (deterministic order)."""
    parent: dict[tuple[int, str], tuple[int, str]] = {}

    def find(c):
        parent.setdefault(c, c)
        while parent[c] != c:
            parent[c] = parent[parent[c]]
            c = parent[c]
        return c

    for eq in query.equalities:
        left, right = (eq.left.stream, eq.left.attr), (eq.right.stream, eq.right.attr)
        parent[find(left)] = find(right)
    groups: dict = {}
    for c in sorted(parent):
        groups.setdefault(find(c), []).append(c)
    return sorted(groups.values())


def compile_levels(query: JoinQuery, seq: list[int]) -> list[Level]:
    """Per-loop checks when streams are bound in the order ``seq`` (``seq[0]`` first)."""
    classes = equality_classes(query)
    bound: dict[int, int] = {}  # stream -> loop depth
    levels = []
    for depth, s in enumerate(seq):
        eqs: list[tuple[str, int, str]] = []
        for cls in classes:
            mine = [a for st, a in cls if st == s]
            if not mine:
                continue
            prior = [c for c in cls if c[0] in bound]
            if prior:
                rep = min(prior, key=lambda c: bound[c[0]])
                eqs += [(a, rep[0], rep[1]) for a in mine]
            else:
                eqs += [(a, s, mine[0]) for a in mine[1:]]
        before = set(bound)
        bound[s] = depth
        filters = tuple(f for f in query.filters_within(set(bound)) if depth == 0 or not streams_of(f) <= before)
        levels.append(Level(s, tuple(eqs), filters))
    return levels


def make_window(query: JoinQuery, stream: int, *, expire_every: int | None = None):
    """The buffer for one stream's window: FIFO for time windows, circular array for counts."""
    spec = query.streams[stream].window
    if spec.is_count:
        return count_window(spec)
    return TimeWindow.from_spec(spec, expire_every=expire_every)


class NestedLoopJoin(JoinOperator):
    """Shared state and loops of the faithful per-tuple NLJ operators (not registered)."""

    #: does this operator emit retractions (``negatives=True``)? None of the NLJ family does
    supports_negatives: ClassVar[bool] = False
    #: operator options accepted besides ``order`` / ``negatives``
    options_allowed: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, query: JoinQuery, **kwargs) -> None:
        super().__init__(query, **kwargs)
        unknown = sorted(set(self.options) - self.options_allowed)
        if unknown:
            accepted = ", ".join(sorted(self.options_allowed)) or "no options"
            raise OptionError(f"unknown option(s) for {self.name}: {', '.join(unknown)}", hint=f"{self.name} accepts {accepted}")
        if self.negatives and not self.supports_negatives:
            raise PlanError(
                f"algorithm {self.name!r} does not produce negative tuples (retractions)", hint="run without negative tuples, or choose an algorithm that emits them"
            )
        self.specs = [s.window for s in query.streams]
        self.windows = [make_window(query, i, expire_every=self._expire_every()) for i in range(self.n)]
        #: probe levels per origin stream, for the order origin first then the global order
        self.levels = {i: compile_levels(query, self.origin_order(i)) for i in range(self.n)}

    def _expire_every(self) -> int | None:
        """Lazy-expiration interval for time windows (``None``: eager expiration)."""
        return None

    @staticmethod
    def _require_eager(cls_name: str, query: JoinQuery) -> None:
        if query.slide:
            raise PlanError(
                f"{cls_name} evaluates eagerly but the query asks for lazy re-evaluation every {query.slide} (SLIDE)",
                hint="use --algorithm lazy, lazy-restore or general-lazy, or drop SLIDE",
            )

    # -- predicate checks (counted) ----------------------------------------
    def passes(self, level: Level, members: list) -> bool:
        """Evaluate the predicates of ``level``; ``members[level.stream]`` is already bound."""
        u = members[level.stream]
        for attr, other, oattr in level.eqs:
            self.comparisons += 1
            if u.get(attr) != members[other].get(oattr):
                return False
        if level.filters:

            def get(s: int, a: str):
                return members[s].get(a)

            for f in level.filters:
                self.comparisons += 1
                if not evaluate(f, get):
                    return False
        return True

    def probe(self, levels: list[Level], depth: int, members: list, emit: Callable[[list], None], valid: Callable[[Tup], bool] | None = None) -> None:
        """Nested loops over ``self.windows`` for ``levels[depth:]``; ``emit`` each full match.

        ``valid`` (not counted) filters scanned tuples before the predicates,
        like the timestamp conditions of the paper's for-loops.
        """
        if depth == len(levels):
            emit(members)
            return
        level = levels[depth]
        s = level.stream
        for u in self.windows[s]:
            if valid is not None and not valid(u):
                continue
            members[s] = u
            if self.passes(level, members):
                self.probe(levels, depth + 1, members, emit, valid)
        members[s] = None

    def state_tuples(self) -> int:
        return sum(len(w) for w in self.windows)

    def insert(self, t: Tup) -> None:
        """Insert an arrival into its window (count windows evict the oldest in the same step)."""
        self.windows[t.stream].insert(t)

    def expire_all(self, now: int, *, force: bool = False) -> None:
        """Purge time windows of tuples expired at ``now`` (per each window's policy)."""
        for w in self.windows:
            if isinstance(w, TimeWindow):
                w.expire(now, force=force)


class EagerNLJ(NestedLoopJoin):
    """Eager multi-way NLJ with eager expiration (Golab & Özsu §3.2, thesis Alg. 2)."""

    name = "nlj"
    summary = "eager multi-way nested-loops join, new tuple probed first (Golab & Özsu §3.2, Alg. 2)"
    preference = {"eager": 4}
    compared = {"eager": 1}

    @classmethod
    def check(cls, query: JoinQuery) -> None:
        cls._require_eager("nlj", query)

    def process(self, chunk: list[StreamBatch]) -> ResultBatch:
        out = ResultBuilder(self.query)
        for k in merge_in_order(chunk):
            self.insert(k)
            self.expire_all(k.ts)
            self.join_new(k, out)
        return out.build()

    def join_new(self, k: Tup, out: ResultBuilder, valid: Callable[[Tup], bool] | None = None) -> None:
        """ComputeJoin: probe the other windows for the new tuple ``k``."""
        levels = self.levels[k.stream]
        members: list = [None] * self.n
        members[k.stream] = k
        if not self.passes(levels[0], members):
            return
        self.probe(levels, 1, members, lambda m: out.add(list(m), ts=k.ts), valid)
