"""Lazy multi-way NLJ with no-restore semantics, new tuples grouped by join value.

Paper: Golab, PhD thesis 2006 §5.2.2, Algorithm 4
(*LazyComputeJoin*); Golab & Özsu §3.3 (*Lazy Multi-Way NLJ*) and §3.6 (counters
for count windows under lazy re-evaluation). This module also holds
:class:`LazyNestedLoopJoin`, the scheduling shared by the lazy operators.

Scheduling (docs/semantics.md): arrivals are buffered; the evaluation at instant τ (a
multiple of D = ``query.slide``) handles the buffered tuples with ts in
(τ−D, τ] and runs when the first tuple with ts > τ arrives, or at ``finish()``.
Instants without arrivals are skipped.

Algorithm (``lazy``), at evaluation NOW:

1. purge time windows of tuples with ``exp < NOW`` (a catch-up for skipped
   instants; when evaluations run every D it is already done by step 4);
2. for each stream i in the global order: insert its new tuples (dropping those
   with ``exp < NOW``), group them by the values of the columns of i that the
   predicates read (the paper's a-value), and for each group run the nested
   loops of ``origin_order(i)`` once, with the group's representative on top;
   each full match is returned once per group member;
3. no timestamp comparisons are needed: every window tuple has ``exp >= NOW``,
   hence is valid for any origin with ts ≤ NOW. Because stream i's new tuples
   enter its window only at step i, a combination with several new members is
   found exactly once (at its last new stream in the order);
4. purge tuples with ``exp < NOW + D`` (they cannot join at the next evaluation).

Semantics: no-restore — exactly the eager results minus those whose
``exp < eval_time(origin.ts, D)`` (the short-lived ones). Count windows
(strict non-monotonic) are kept as the last N arrivals as of the previous
evaluation plus the new ones, and a count member is accepted at the innermost
loop iff it is among the last N arrivals of its stream (partition) when the
result's origin arrived (§3.6 counters). Comparisons: one per predicate
evaluation, per group rather than per new tuple.
"""

from __future__ import annotations

from abc import abstractmethod
from bisect import bisect_left, bisect_right
from collections.abc import Callable

from slidewise.errors import PlanError
from slidewise.model.batch import ResultBatch, StreamBatch, Tup, merge_in_order
from slidewise.operators.joins.base import ResultBuilder
from slidewise.operators.joins.nlj import NestedLoopJoin
from slidewise.plan.expr import columns_of
from slidewise.plan.query import JoinQuery, eval_time
from slidewise.windows.fifo import TimeWindow


class LazyNestedLoopJoin(NestedLoopJoin):
    """Buffers arrivals and evaluates at multiples of D (not registered)."""

    def __init__(self, query: JoinQuery, **kwargs) -> None:
        super().__init__(query, **kwargs)
        self.slide: int = query.slide  # type: ignore[assignment]
        self.pending: list[Tup] = []
        self.next_eval: int | None = None
        self._positions: dict[tuple[int, object], list[int]] = {}
        #: per stream, the columns its predicates read (the grouping key of Alg. 4/5)
        self.key_attrs = {i: self._key_attrs(i) for i in range(self.n)}

    @staticmethod
    def _require_lazy(cls_name: str, query: JoinQuery) -> None:
        if not query.slide:
            raise PlanError(f"{cls_name} evaluates lazily and needs a re-evaluation interval", hint="declare [RANGE T SLIDE D] on the windows, or use --algorithm nlj")

    def _key_attrs(self, i: int) -> tuple[str, ...]:
        cols: set[str] = set()
        for eq in self.query.equalities:
            cols |= {c.attr for c in (eq.left, eq.right) if c.stream == i}
        for f in self.query.filters:
            cols |= {a for s, a in columns_of(f) if s == i}
        return tuple(sorted(cols))

    # -- scheduling ----------------------------------------------------------
    def process(self, chunk: list[StreamBatch]) -> ResultBatch:
        out = ResultBuilder(self.query)
        for t in merge_in_order(chunk):
            if self.pending and t.ts > self.next_eval:
                self._run(out)
            if not self.pending:
                self.next_eval = eval_time(t.ts, self.slide)
            self.pending.append(t)
        return out.build()

    def finish(self) -> ResultBatch:
        out = ResultBuilder(self.query)
        if self.pending:
            self._run(out)
        return out.build()

    def _run(self, out: ResultBuilder) -> None:
        new: list[list[Tup]] = [[] for _ in range(self.n)]
        for t in self.pending:
            new[t.stream].append(t)
        self.pending = []
        self.evaluate(self.next_eval, new, out)

    @abstractmethod
    def evaluate(self, now: int, new: list[list[Tup]], out: ResultBuilder) -> None:
        """Re-execute the join at instant ``now`` for the new tuples ``new[i]`` of each stream."""

    def state_tuples(self) -> int:
        return super().state_tuples() + len(self.pending)

    # -- window maintenance ----------------------------------------------------
    def add_new(self, t: Tup, now: int | None = None) -> bool:
        """Insert a new tuple without evicting; with ``now``, drop it if ``exp < now``."""
        w = self.windows[t.stream]
        if isinstance(w, TimeWindow):
            if now is not None and w.exp(t) < now:
                return False
            w.insert(t)
        else:
            w.append(t)
        return True

    def purge(self, bound: int) -> None:
        """Time windows: drop ``exp < bound``; count windows: keep the last N (per partition)."""
        for w in self.windows:
            if isinstance(w, TimeWindow):
                w.expire(bound, force=True)
            else:
                w.trim()

    # -- validity of members at the origin's arrival (not counted) --------------
    def snapshot_counters(self, new: list[list[Tup]]) -> None:
        """§3.6 counters: per count stream (partition), the positions of its buffered + new tuples."""
        self._positions = {}
        for i, w in enumerate(self.windows):
            if isinstance(w, TimeWindow):
                continue
            part = self.specs[i].partition_by
            buffered = {t.pos for t in w}
            for t in list(w) + [t for t in new[i] if t.pos not in buffered]:
                key = (i, t.vals[part] if part else None)
                self._positions.setdefault(key, []).append(t.pos)
        for lst in self._positions.values():
            lst.sort()

    def count_valid(self, u: Tup, origin: Tup) -> bool:
        """Is count-window member ``u`` among the last N arrivals of its stream when ``origin`` arrives?"""
        spec = self.specs[u.stream]
        pos = self._positions[(u.stream, u.vals[spec.partition_by] if spec.partition_by else None)]
        return bisect_right(pos, origin.pos) - bisect_left(pos, u.pos) <= spec.size

    def valid(self, u: Tup, origin: Tup) -> bool:
        """Is ``u`` inside its window at the arrival of ``origin`` (``u.pos <= origin.pos``)?"""
        spec = self.specs[u.stream]
        if spec.is_count:
            return self.count_valid(u, origin)
        return u.ts >= origin.ts - spec.length

    @property
    def count_streams(self) -> list[int]:
        return [i for i, s in enumerate(self.specs) if s.is_count]


class GroupedLazyJoin(LazyNestedLoopJoin):
    """Alg. 4/5 skeleton: per stream, insert its new tuples, then probe once per value group."""

    grouped = True
    operator_windows = True

    def evaluate(self, now: int, new: list[list[Tup]], out: ResultBuilder) -> None:
        self.before(now)
        if self.count_streams:
            self.snapshot_counters(new)
        for i in self.order:
            arrived = [t for t in new[i] if self.add_new(t, self.drop_before(now))]
            groups: dict[tuple, list[Tup]] = {}
            for t in arrived:
                groups.setdefault(tuple(t.get(a) for a in self.key_attrs[i]), []).append(t)
            levels = self.levels[i]
            for group in groups.values():
                members: list = [None] * self.n
                members[i] = group[0]
                if self.passes(levels[0], members):
                    self.probe(levels, 1, members, self.leaf(i, group, out), self.outer_valid(group))
        self.after(now)

    def before(self, now: int) -> None:
        """Window maintenance before the evaluation at ``now``."""

    def after(self, now: int) -> None:
        """Window maintenance after the evaluation at ``now``."""

    def drop_before(self, now: int) -> int | None:
        """New tuples with ``exp`` below this are not inserted (``None``: keep all)."""
        return None

    def outer_valid(self, group: list[Tup]) -> Callable[[Tup], bool] | None:
        """Filter on scanned tuples applied before the predicates (none in Alg. 4)."""
        return None

    @abstractmethod
    def leaf(self, i: int, group: list[Tup], out: ResultBuilder) -> Callable[[list], None]:
        """Emit function for a full match of the group's representative."""


class LazyNLJ(GroupedLazyJoin):
    """Lazy multi-way NLJ, no-restore semantics, grouped new tuples (thesis Alg. 4)."""

    name = "lazy"
    summary = "lazy NLJ every SLIDE, no-restore semantics, new tuples grouped by join value (Alg. 4)"
    preference = {"lazy": 4}
    compared = {"lazy": 1}
    restores = False

    @classmethod
    def check(cls, query: JoinQuery) -> None:
        cls._require_lazy("lazy", query)
        if query.restore:
            raise PlanError(
                "lazy implements no-restore semantics, but the query asks for restore semantics (ISTREAM_RESTORE)", hint="use --algorithm lazy-restore (or general-lazy)"
            )

    def before(self, now: int) -> None:
        self.purge(now)

    def drop_before(self, now: int) -> int:
        return now

    def after(self, now: int) -> None:
        self.purge(now + self.slide)

    def leaf(self, i: int, group: list[Tup], out: ResultBuilder) -> Callable[[list], None]:
        counts = self.count_streams

        def emit(members: list) -> None:
            others = max((m for m in members if m.stream != i), key=lambda m: m.pos, default=None)
            for g in group:
                members[i] = g
                origin = g if others is None or g.pos > others.pos else others
                if all(self.count_valid(members[c], origin) for c in counts if c != origin.stream):
                    out.add(list(members), ts=origin.ts)
            members[i] = group[0]

        return emit
