"""Multi-way hash join over hash-bucketed windows, eager (``hash``) and lazy (``hash-lazy``).

Paper: Golab & Özsu, VLDB 2003 long version §3.4, *Multi-Way Hash
Join* / *ComputeHashJoin* (the NLJ of §3.2 where every loop scans one hash
bucket ``B_{j,k}`` instead of window ``S_j``; the NLJ is the case ``b_j = 1``),
lazy variant from §3.3 (*Lazy Multi-Way NLJ*) and §3.6 (counters ``cnt`` for
count windows under lazy evaluation); windowed hash join with circular-buffer
buckets, ICEIS 2005 fragment (§5–6); negative tuples for strict
non-monotonic (count-window) inputs, Golab PhD thesis 2006 §5.2.1–5.2.2.
This module also holds :class:`BucketProbeJoin`, the engine that ``hybrid``
and ``count`` share, and :class:`Retractions`, the one place negative tuples
are made.

Algorithm: when tuple ``k`` arrives on stream ``i`` (eager), all windows are
purged of tuples expired at ``k.ts``, ``k`` is inserted (a count window evicts
its oldest tuple in the same step), and the other windows are visited in
nested loops in ``origin_order(i)`` with the checks of the NLJ
(:func:`~slidewise.operators.joins.nlj.compile_levels`: equalities closed into
classes of equal columns, the origin's column as representative). At the loop
of window ``j``, only bucket ``h_j(v) mod b_j`` is scanned, where ``v`` is the
value of the bound column that ``j``'s hash attribute is equated with.

Hash attributes: window ``j`` is hashed on the attribute by which it is probed
in the probe order of every other origin; on a common join attribute that is
the attribute itself. If for some origin no bound column is equated with ``j``,
or different origins probe ``j`` on different attributes, the operator raises
:class:`PlanError` for that join order, ``check`` for the FROM order (use
``hybrid``, which scans such windows, or ``nlj``).

Options: ``buckets`` (int, or a list with one int per stream: ``b_i``; default
``min(window size, 64)`` — N for ``[ROWS N]``, T for ``[RANGE T]``);
``expire_every`` (``hash`` only: lazy expiration every Δ time units, the
probes then skip stale tuples). Comparisons (``comparisons``) count predicate
evaluations exactly as ``nlj`` does, but only over the probed bucket.

Lazy evaluation (``hash-lazy``, needs ``query.slide = D``): arrivals are
inserted at once but joined at the evaluation instant ``τ = ceil(ts / D)·D``,
run when the first tuple with ``ts > τ`` arrives or at :meth:`finish`. The
pending tuples are taken as origins in arrival order; a probed tuple ``u``
must have arrived before the origin ``k`` and be in its window at ``k``'s
arrival (``u.ts >= k.ts - T``: in a time window's bucket these tuples are one
run, found by binary search, so stale and newer tuples cost nothing; count
windows: the §3.6 counter test per tuple, see :mod:`slidewise.windows.hashed`).
Restore semantics (``query.restore``) yields every eager result; no-restore
also requires every member to have ``exp >= τ``, so exactly the results with
``exp < eval_time(origin.ts, D)`` are omitted. After an evaluation the windows keep only what a later origin
can use (restore: ``exp > τ``; no-restore: ``exp >= τ + D``).

Negative tuples (``negatives=True``, eager only): a result is retracted
(``sign = -1``, ``ts`` = the evicting arrival's ts) when its first
count-window member is evicted (docs/semantics.md).

Complexity per arrival: as the NLJ with every window size divided by its
bucket count, for well-spread keys (Golab & Özsu §4–5.3). State: the windows.

>>> from slidewise.plan.query import JoinQuery, StreamRef, WindowSpec, Equality
>>> from slidewise.plan.expr import Col
>>> import numpy as np
>>> from slidewise.model.batch import StreamBatch
>>> q = JoinQuery((StreamRef("A", "A", WindowSpec("range", 5)),
...                StreamRef("B", "B", WindowSpec("range", 5))),
...               (Equality(Col(0, "a", "A"), Col(1, "a", "B")),))
>>> op = HashJoin(q, buckets=4)
>>> res = op.process([StreamBatch(0, [0, 1], [1, 1], {"a": np.array([7, 6])}),
...                   StreamBatch(1, [2], [3], {"a": np.array([7])})])
>>> res.keys(), op.comparisons
([((0, 2), 3, 6, 1)], 1)
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Callable, Sequence
from typing import ClassVar

from slidewise.errors import OptionError, PlanError
from slidewise.model.batch import ResultBatch, StreamBatch, Tup, merge_in_order
from slidewise.operators.joins.base import ResultBuilder
from slidewise.operators.joins.nlj import Level, NestedLoopJoin, compile_levels
from slidewise.plan.query import JoinQuery, WindowSpec, eval_time
from slidewise.windows.hashed import HashWindow

#: upper bound of the default bucket count per window
MAX_DEFAULT_BUCKETS = 64
#: upper bound of any bucket count (each bucket costs memory before a tuple arrives)
MAX_BUCKETS = 1 << 16


def default_buckets(spec: WindowSpec) -> int:
    """``min(window size, 64)``, at least 1 (an unbounded window gets 64)."""
    if spec.kind == "unbounded":
        return MAX_DEFAULT_BUCKETS
    return max(1, min(spec.size, MAX_DEFAULT_BUCKETS))


def probe_candidates(levels_by_origin: dict[int, list[Level]], n: int) -> list[dict[int, list[str]]]:
    """Per stream ``j``: ``{origin: [attrs of j equated with a column bound before j]}``."""
    out: list[dict[int, list[str]]] = [{} for _ in range(n)]
    for origin, levels in levels_by_origin.items():
        for level in levels[1:]:
            attrs = [a for a, other, _ in level.eqs if other != level.stream]
            out[level.stream][origin] = list(dict.fromkeys(attrs))
    return out


def hash_attributes(query: JoinQuery, levels_by_origin: dict[int, list[Level]], *, all_hashed: bool, algorithm: str) -> list[str | None]:
    """The attribute each window is hashed on (``None``: not hashed, scanned).

    ``all_hashed``: every window must be probed through its buckets by every
    other origin on one attribute, else :class:`PlanError`. Otherwise each
    window takes the attribute usable for most origins (hybrid).
    """
    names = query.aliases
    keys: list[str | None] = []
    for j, per_origin in enumerate(probe_candidates(levels_by_origin, query.n)):
        if not all_hashed:
            votes: dict[str, int] = {}
            for attrs in per_origin.values():
                for a in attrs:
                    votes[a] = votes.get(a, 0) + 1
            keys.append(max(votes, key=lambda a: votes[a]) if votes else None)
            continue
        common: list[str] | None = None
        for origin, attrs in per_origin.items():
            order = ", ".join(names[s.stream] for s in levels_by_origin[origin])
            if not attrs:
                raise PlanError(
                    f"{algorithm}: for arrivals on {names[origin]} (probe order {order}) window {names[j]} is not equi-joined with a stream probed before it",
                    hint="use --algorithm hybrid (scans such windows) or nlj, or a join order where every window follows a stream it is equi-joined with",
                )
            common = attrs if common is None else [a for a in common if a in attrs]
        if common == []:
            probed = sorted({a for attrs in per_origin.values() for a in attrs})
            raise PlanError(
                f"{algorithm}: window {names[j]} is probed on different attributes "
                f"({', '.join(probed)}) depending on the arriving stream; one hash table per "
                f"window cannot serve them all",
                hint="use --algorithm hybrid (hashes one attribute, scans otherwise) or nlj",
            )
        keys.append(common[0] if common else None)
    return keys


class Retractions:
    """Negative tuples for results with count-window members (docs/semantics.md; thesis §5.2).

    Every emitted result is indexed under each of its count-window members;
    when a member is evicted, the results indexed under it that are not yet
    retracted are retracted, with the evicting arrival's timestamp. Memory:
    one entry per (live result, count member).
    """

    def __init__(self, query: JoinQuery) -> None:
        self.count_streams = [i for i, s in enumerate(query.streams) if s.window.is_count]
        self._by_member: dict[int, list[list]] = defaultdict(list)

    def register(self, members: list[Tup]) -> None:
        if not self.count_streams:
            return
        record = [members, False]
        for i in self.count_streams:
            self._by_member[members[i].pos].append(record)

    def evicted(self, tuples: list[Tup], ts: int, out: ResultBuilder) -> None:
        """``tuples`` left their count window at the arrival with timestamp ``ts``."""
        for old in tuples:
            for record in self._by_member.pop(old.pos, ()):
                if not record[1]:
                    record[1] = True
                    out.add(record[0], sign=-1, ts=ts)

    def __len__(self) -> int:
        return len(self._by_member)


class BucketProbeJoin(NestedLoopJoin):
    """Nested loops over :class:`HashWindow` buckets, eager or lazy (not registered).

    Subclasses set ``all_hashed`` (every loop must use a bucket) and
    ``evaluation``: ``"eager"``, ``"lazy"`` (needs ``query.slide``) or
    ``"query"`` (lazy iff the query has a SLIDE).
    """

    supports_negatives = True
    hashed = True
    all_hashed: ClassVar[bool] = True
    evaluation: ClassVar[str] = "eager"
    options_allowed: ClassVar[frozenset[str]] = frozenset({"buckets", "expire_every"})

    def __init__(self, query: JoinQuery, *, order: list[int] | None = None, negatives: bool = False, **options) -> None:
        unknown = sorted(set(options) - self.options_allowed)
        if unknown:
            raise OptionError(f"unknown option(s) for {self.name}: {', '.join(unknown)}", hint=f"{self.name} accepts {', '.join(sorted(self.options_allowed))}")
        super().__init__(query, order=order, negatives=negatives, **options)
        self.slide = self._lazy_interval()
        self.lazy = self.slide is not None
        self.restore = query.restore
        if self.negatives and self.lazy:
            raise PlanError(f"{self.name}: negative tuples need eager evaluation", hint="drop SLIDE (or the slide option) to get retractions")
        expire_every = options.get("expire_every")
        if expire_every is not None and (not isinstance(expire_every, int) or expire_every < 1):
            raise OptionError(f"expire_every must be a positive integer, got {expire_every!r}", hint="e.g. expire_every=10 (time units)")
        self.keys = hash_attributes(query, self.levels, all_hashed=self.all_hashed, algorithm=self.name)
        counts = self._bucket_counts(options.get("buckets"))
        self.windows = [
            HashWindow(spec, counts[i], self.keys[i], expire_every=None if self.lazy else expire_every, retain=self.lazy) for i, spec in enumerate(self.specs)
        ]
        #: windows whose probes must check membership (stale or newer tuples inside)
        self.checked = [self.lazy or (expire_every is not None and not s.is_count) for s in self.specs]
        #: checked time windows: their probes read the run of members valid for the origin
        self.sliced = [c and not s.is_count for c, s in zip(self.checked, self.specs)]
        self.probes = {o: [self._probe_source(level) for level in levels] for o, levels in self.levels.items()}
        self.retractions = Retractions(query) if self.negatives else None
        self.pending: deque[Tup] = deque()
        self.out = ResultBuilder(query)

    # -- planning -------------------------------------------------------------
    @classmethod
    def order_filter(cls, query: JoinQuery) -> Callable[[Sequence[int]], bool] | None:
        """Off a common key, ``all_hashed`` operators run only the orders that hash every window."""
        if not cls.all_hashed or query.key_columns() is not None:
            return None

        def valid(order: Sequence[int]) -> bool:
            try:
                hash_attributes(query, levels_for(query, list(order)), all_hashed=True, algorithm=cls.name)
            except PlanError:
                return False
            return True

        return valid

    def _lazy_interval(self) -> int | None:
        """Re-evaluation interval D, or ``None`` for eager evaluation."""
        if self.evaluation == "eager":
            return None
        return self.query.slide

    def _bucket_counts(self, buckets) -> list[int]:
        if buckets is None:
            counts = [default_buckets(s) for s in self.specs]
        elif isinstance(buckets, int) and not isinstance(buckets, bool):
            counts = [buckets] * self.n
        else:
            counts = list(buckets)
            if len(counts) != self.n:
                raise OptionError(f"buckets lists {len(counts)} counts for {self.n} streams", hint="give one int for all windows or one per stream in FROM")
        for b in counts:
            if not isinstance(b, int) or isinstance(b, bool) or not 1 <= b <= MAX_BUCKETS:
                raise OptionError(f"bucket counts must be integers from 1 to {MAX_BUCKETS}, got {b!r}", hint="e.g. buckets=8 or buckets=[8, 8, 2]")
        return [b if key is not None else 1 for b, key in zip(counts, self.keys)]

    def _probe_source(self, level: Level) -> tuple[int, str] | None:
        """The bound column whose value selects the bucket of ``level``'s window."""
        key = self.keys[level.stream]
        for attr, other, oattr in level.eqs:
            if attr == key and other != level.stream:
                return other, oattr
        return None

    # -- processing -----------------------------------------------------------
    def process(self, chunk: list[StreamBatch]) -> ResultBatch:
        for k in merge_in_order(chunk):
            if self.lazy:
                self._evaluate(before=k.ts)
                self.windows[k.stream].insert(k)
                self.pending.append(k)
                continue
            for w in self.windows:
                w.expire(k.ts)
            evicted = self.windows[k.stream].insert(k)
            if evicted and self.retractions is not None:
                self.retractions.evicted(evicted, k.ts, self.out)
            self._join(k, None)
        return self.out.build()

    def finish(self) -> ResultBatch:
        if self.lazy:
            self._evaluate(before=None)
        return self.out.build()

    def _evaluate(self, before: int | None) -> None:
        """Run the evaluations at instants below ``before`` (all with ``None``)."""
        pending, slide = self.pending, self.slide
        while pending and (before is None or eval_time(pending[0].ts, slide) < before):
            now = eval_time(pending[0].ts, slide)
            while pending and pending[0].ts <= now:
                k = pending.popleft()
                self.windows[k.stream].advance(k)
                self._join(k, None if self.restore else now)
            horizon = now + 1 if self.restore else now + slide
            for w in self.windows:
                w.expire(horizon, force=True)

    def _join(self, k: Tup, now: int | None) -> None:
        """ComputeHashJoin for origin ``k``; ``now``: no-restore instant (needs exp >= now)."""
        if now is not None and self.windows[k.stream].exp(k) < now:
            return
        levels = self.levels[k.stream]
        members: list = [None] * self.n
        members[k.stream] = k
        if self.passes(levels[0], members):
            self._loop(levels, self.probes[k.stream], 1, members, k, now)

    def _loop(self, levels: list[Level], probes: list, depth: int, members: list, k: Tup, now: int | None) -> None:
        if depth == len(levels):
            result = list(members)
            self.out.add(result, ts=k.ts)
            if self.retractions is not None:
                self.retractions.register(result)
            return
        level = levels[depth]
        s = level.stream
        w = self.windows[s]
        source = probes[depth]
        checked = self.checked[s]
        if source is None:
            candidates = w.scan()
        elif self.sliced[s]:
            # valid for k: ts >= k.ts - T and arrived before k; no-restore: also exp >= now
            at = k.ts if now is None else max(k.ts, now)
            candidates, checked = w.probe_live(members[source[0]].get(source[1]), at, k.pos), False
        else:
            candidates = w.probe(members[source[0]].get(source[1]))
        for u in candidates:
            if checked and (not w.contains(u, k) or (now is not None and w.exp(u) < now)):
                continue
            members[s] = u
            if self.passes(level, members):
                self._loop(levels, probes, depth + 1, members, k, now)
        members[s] = None

    def bucket_counts(self) -> list[int]:
        """``b_i`` per window (1 for windows that are not hashed)."""
        return [w.b for w in self.windows]


def levels_for(query: JoinQuery, order: list[int]) -> dict[int, list[Level]]:
    """Probe levels per origin for global order ``order`` (origin first, as ``origin_order``)."""
    return {i: compile_levels(query, [i] + [s for s in order if s != i]) for i in range(query.n)}


def check_hashable(query: JoinQuery, algorithm: str) -> None:
    """PlanError unless, in FROM order, every window can be probed through one hash table.

    (In a random search over 3- and 4-way joins on two attributes, no query
    was hashable in some order but not in FROM order.)
    """
    hash_attributes(query, levels_for(query, list(range(query.n))), all_hashed=True, algorithm=algorithm)


class HashJoin(BucketProbeJoin):
    """Eager multi-way hash join (Golab & Özsu §3.4)."""

    name = "hash"
    summary = "eager multi-way hash join, one bucket scanned per window (Golab & Özsu §3.4)"
    preference = {"eager": 2}
    compared = {"eager": 2}

    @classmethod
    def check(cls, query: JoinQuery) -> None:
        if query.slide:
            raise PlanError(
                f"hash evaluates eagerly but the query asks for lazy re-evaluation every {query.slide} (SLIDE)", hint="use --algorithm hash-lazy, or drop SLIDE"
            )
        check_hashable(query, cls.name)


class LazyHashJoin(BucketProbeJoin):
    """Lazy multi-way hash join, restore or no-restore semantics (Golab & Özsu §3.3–3.4)."""

    name = "hash-lazy"
    summary = "lazy multi-way hash join every SLIDE, restore or no-restore (Golab & Özsu §3.4)"
    evaluation = "lazy"
    options_allowed = frozenset({"buckets"})
    preference = {"lazy": 2}
    compared = {"lazy": 4}
    operator_windows = True

    @classmethod
    def check(cls, query: JoinQuery) -> None:
        if not query.slide:
            raise PlanError("hash-lazy evaluates lazily and needs a re-evaluation interval", hint="declare [RANGE T SLIDE D] on the windows, or use --algorithm hash")
        check_hashable(query, cls.name)
