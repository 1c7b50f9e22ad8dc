"""Reference semantics (docs/semantics.md) of multi-way window joins — simple on purpose.

Enumerates every combination of one tuple per stream and keeps those that
satisfy the contract literally. Exponential; only for small test streams.
Every join algorithm and both engines are compared against it.

Result identity: ``(members, ts, exp, sign)`` where ``members`` is the tuple of
member positions (stream order), ``ts`` the origin's timestamp and ``exp`` the
minimum member expiration.
"""

from __future__ import annotations

import itertools
from collections import Counter

from slidewise.model.batch import Tup
from slidewise.plan.expr import evaluate
from slidewise.plan.query import JoinQuery, eval_time


def _window_rank(query: JoinQuery, tuples: list[Tup]) -> dict[int, tuple[int, object]]:
    """For count windows: pos -> (arrival index within its stream/partition, partition value)."""
    rank: dict[int, tuple[int, object]] = {}
    counters: Counter = Counter()
    for t in tuples:
        w = query.streams[t.stream].window
        part = t.vals[w.partition_by] if w.partition_by else None
        rank[t.pos] = (counters[(t.stream, part)], part)
        counters[(t.stream, part)] += 1
    return rank


def _arrivals_before(tuples: list[Tup], query: JoinQuery, stream: int, part, pos: int) -> int:
    """How many tuples of ``stream`` (and partition ``part``) have arrived up to position ``pos``."""
    w = query.streams[stream].window
    return sum(1 for t in tuples if t.stream == stream and t.pos <= pos and (w.partition_by is None or t.vals[w.partition_by] == part))


def in_window(query: JoinQuery, tuples: list[Tup], rank, member: Tup, at: Tup) -> bool:
    """Is ``member`` inside its window when tuple ``at`` (later or equal) arrives?"""
    w = query.streams[member.stream].window
    if w.is_count:
        idx, part = rank[member.pos]
        return _arrivals_before(tuples, query, member.stream, part, at.pos) - idx <= w.size
    return at.ts - w.length <= member.ts


def predicates_hold(query: JoinQuery, members: tuple[Tup, ...]) -> bool:
    def get(stream: int, attr: str):
        return members[stream].get(attr)

    for eq in query.equalities:
        if evaluate(eq.left, get) != evaluate(eq.right, get):
            return False
    return all(bool(evaluate(f, get)) for f in query.filters)


def oracle(query: JoinQuery, tuples: list[Tup], *, restore: bool = True, negatives: bool = False) -> Counter:
    """Multiset of results of ``query`` over the whole input ``tuples``.

    ``restore=False`` (lazy, ``query.slide = D``): drop the short-lived results,
    those whose ``exp`` is before the evaluation instant ``ceil(ts/D)*D``.
    ``negatives=True``: also a retraction (``sign=-1``) of each result when its
    first count-window member leaves its window; ``ts`` = the evicting
    arrival's timestamp.
    """
    tuples = sorted(tuples, key=lambda t: t.pos)
    per_stream = [[t for t in tuples if t.stream == i] for i in range(query.n)]
    rank = _window_rank(query, tuples)
    windows = [s.window for s in query.streams]
    out: Counter = Counter()
    for members in itertools.product(*per_stream):
        origin = max(members, key=lambda t: t.pos)
        if not all(in_window(query, tuples, rank, m, origin) for m in members if m is not origin):
            continue
        if not predicates_hold(query, members):
            continue
        exp = min(w.exp(m.ts) for w, m in zip(windows, members))
        if query.slide and not restore and exp < eval_time(origin.ts, query.slide):
            continue
        key = tuple(m.pos for m in members)
        out[(key, origin.ts, exp, 1)] += 1
        if negatives:
            evictions = [_evictor(query, tuples, rank, m) for m in members if windows[m.stream].is_count]
            evictions = [e for e in evictions if e is not None]
            if evictions:
                first = min(evictions, key=lambda t: t.pos)
                out[(key, first.ts, exp, -1)] += 1
    return out


def _evictor(query: JoinQuery, tuples: list[Tup], rank, member: Tup) -> Tup | None:
    """The arrival that pushes ``member`` out of its count window, if any."""
    w = query.streams[member.stream].window
    idx, part = rank[member.pos]
    for t in tuples:
        if t.stream == member.stream and rank[t.pos][1] == part and rank[t.pos][0] == idx + w.size:
            return t
    return None


def short_lived(query: JoinQuery, tuples: list[Tup]) -> Counter:
    """The results lazy no-restore evaluation omits (eager minus no-restore)."""
    return oracle(query, tuples) - oracle(query, tuples, restore=False)
