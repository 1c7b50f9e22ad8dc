"""Hash-bucketed sliding window: ``b`` buckets over one window, each bucket a queue.

Golab & Özsu, VLDB 2003 long version §3.4 (one hash table of
``b_i`` buckets per window, ``B(i, k) = h_i(k.attr)``; the hash functions are
modular divisions by ``b_i`` as in their §6.1 set-up) and §3.6 (count windows
and their buckets as circular arrays; the counter ``cnt`` used under lazy
evaluation); windowed hash join with circular-buffer hash buckets, ICEIS 2005
fragment (§5–6); Golab, PhD thesis 2006 §5.2.3 (a hash
window expires bucket by bucket).

Semantics (docs/semantics.md)
* Time window ``[RANGE T]``: every bucket is a FIFO
  (:class:`~slidewise.windows.fifo.TimeWindow`); arrivals come in ``ts`` order,
  so a bucket's expired tuples (``ts + T < now``) are a prefix of it. A global
  arrival-order queue tells which buckets hold expired tuples, so expiration
  costs O(expired), not O(b). Eager expiration purges on every
  :meth:`HashWindow.expire`; lazy expiration (``expire_every=Δ``) purges at
  multiples of Δ only, and readers check :meth:`HashWindow.contains`.
* Count window ``[ROWS N]`` / ``[PARTITION BY k ROWS N]``: every bucket is a
  :class:`CircularBucket`; per partition, a circular array
  (:class:`~slidewise.windows.count.CountWindow`) holds the window. Tuple
  ``u`` carries ``cnt(u)``, its 1-based arrival number in its partition.
  Inserting the (N+1)-th tuple of a partition evicts that
  partition's oldest, which (unpartitioned) is the head of its bucket: insertion
  and invalidation in one step. With partitions the evicted tuple may sit
  inside its bucket and is removed there.
* Lazy evaluation (``retain=True``) cannot evict on arrival, since pending
  origins still need tuples that later arrivals push out. The join replays the
  arrivals in order with :meth:`HashWindow.advance`; a count-window tuple is in
  the window at the replayed arrival iff ``replayed(part) - cnt(u) < N`` (the
  paper's counter test, with arrival positions instead of timestamps so that
  ties are exact); ``advance`` evicts what no later origin can see.

Complexity: insert O(1) (hash + append; partitioned eviction O(bucket));
expiration O(1) amortised per tuple; probing a bucket O(bucket size) ≈
O(window / b) for well-spread keys. Memory: the window contents plus one queue
entry per tuple.

>>> from slidewise.model.batch import Tup
>>> from slidewise.plan.query import WindowSpec
>>> w = HashWindow(WindowSpec("range", 10), buckets=2, key="a")
>>> for pos, (ts, a) in enumerate([(1, 4), (5, 3), (12, 6)]):
...     _ = w.insert(Tup(0, pos, ts, 1, {"a": a}))
>>> [t.ts for t in w.probe(0)], [t.ts for t in w.probe(1)]
([1, 12], [5])
>>> [t.ts for t in w.expire(12)], len(w)
([1], 2)
>>> c = HashWindow(WindowSpec("rows", 2), buckets=2, key="a")
>>> [[e.pos for e in c.insert(Tup(0, p, p, 1, {"a": p}))] for p in range(4)]
[[], [], [0], [1]]
>>> [t.pos for t in c.scan()]
[2, 3]
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterable, Iterator

import numpy as np

from slidewise.model.batch import Tup
from slidewise.plan.query import WindowSpec
from slidewise.windows.count import CountWindow
from slidewise.windows.fifo import TimeWindow

__all__ = ["CircularBucket", "HashWindow", "bucket_of"]


def bucket_of(value, buckets: int) -> int:
    """Bucket of a join-attribute value: ``h(v) mod b`` (``h`` = identity on ints).

    >>> bucket_of(7, 4), bucket_of(7.0, 4), bucket_of(-1, 4)
    (3, 3, 3)
    """
    if buckets == 1:
        return 0
    if isinstance(value, (int, np.integer)):
        return int(value) % buckets
    if isinstance(value, float) and value.is_integer():
        return int(value) % buckets
    return hash(value) % buckets


class CircularBucket:
    """A growable circular buffer of tuples in arrival order (the ICEIS 2005 paper §5–6).

    ``append`` writes at the tail, ``popleft`` advances the head; when full the
    buffer doubles. ``remove`` deletes one tuple (O(1) at the head, otherwise
    the tuples after it shift one slot).

    >>> b = CircularBucket(2)
    >>> for x in (1, 2, 3):
    ...     b.append(x)
    >>> b.popleft(), list(b), b.capacity
    (1, [2, 3], 4)
    >>> b.append(4)
    >>> b.remove(3)
    >>> list(b)
    [2, 4]
    """

    __slots__ = ("_slots", "_head", "_size")

    def __init__(self, capacity: int = 4) -> None:
        self._slots: list = [None] * max(1, capacity)
        self._head = 0
        self._size = 0

    @property
    def capacity(self) -> int:
        return len(self._slots)

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator:
        slots, cap, head = self._slots, len(self._slots), self._head
        for i in range(self._size):
            yield slots[(head + i) % cap]

    def append(self, item) -> None:
        cap = len(self._slots)
        if self._size == cap:
            self._slots = list(self) + [None] * cap
            self._head, cap = 0, 2 * cap
        self._slots[(self._head + self._size) % cap] = item
        self._size += 1

    def popleft(self):
        if not self._size:
            raise IndexError("pop from an empty bucket")
        item = self._slots[self._head]
        self._slots[self._head] = None
        self._head = (self._head + 1) % len(self._slots)
        self._size -= 1
        return item

    def remove(self, item) -> None:
        """Delete ``item`` (compared by identity); ``ValueError`` if absent."""
        slots, cap = self._slots, len(self._slots)
        for i in range(self._size):
            if slots[(self._head + i) % cap] is item:
                break
        else:
            raise ValueError("item not in bucket")
        if i == 0:
            self.popleft()
            return
        for j in range(i, self._size - 1):
            slots[(self._head + j) % cap] = slots[(self._head + j + 1) % cap]
        slots[(self._head + self._size - 1) % cap] = None
        self._size -= 1


class HashWindow:
    """One sliding window split into ``buckets`` hash buckets on attribute ``key``.

    ``key=None`` (or ``buckets=1``) keeps a single bucket: the plain window.
    ``expire_every=Δ`` selects lazy expiration for time windows; ``retain=True``
    defers count-window eviction to :meth:`advance` (lazy evaluation).
    """

    def __init__(self, spec: WindowSpec, buckets: int = 1, key: str | None = None, *, expire_every: int | None = None, retain: bool = False) -> None:
        if buckets < 1:
            raise ValueError(f"a hash window needs at least one bucket, got {buckets}")
        if expire_every is not None and expire_every < 1:
            raise ValueError(f"expire_every must be a positive interval, got {expire_every}")
        self.spec = spec
        self.key = key
        self.b = buckets if key is not None else 1
        self.is_count = spec.is_count
        self.expire_every = expire_every
        self.retain = retain
        self._next_purge: int | None = None
        if self.is_count:
            self.size = spec.size
            self._buckets: list = [CircularBucket(min(spec.size, 8)) for _ in range(self.b)]
            self._parts: dict[object, CountWindow] = {}  # the window, per partition
            self._cnt: dict[int, int] = {}  # pos -> arrival number in its partition
            self._replayed: Counter = Counter()  # partition -> arrivals replayed
        else:
            self.length = spec.length
            self._buckets = [TimeWindow(spec.length) for _ in range(self.b)]
            self._order: deque = deque()  # (ts, bucket) in arrival order

    # -- hashing -----------------------------------------------------------
    def bucket_index(self, value) -> int:
        return bucket_of(value, self.b)

    def _bucket_of_tuple(self, t: Tup) -> int:
        return 0 if self.b == 1 else bucket_of(t.get(self.key), self.b)

    def _part(self, t: Tup):
        return t.vals[self.spec.partition_by] if self.spec.partition_by else None

    # -- updates -----------------------------------------------------------
    def insert(self, t: Tup) -> list[Tup]:
        """Add an arrival; return the tuples it evicts (count windows, unless ``retain``)."""
        idx = self._bucket_of_tuple(t)
        if not self.is_count:
            self._buckets[idx].insert(t)
            self._order.append((t.ts, idx))
            return []
        part = self._part(t)
        window = self._parts.get(part)
        if window is None:
            window = self._parts[part] = CountWindow(self.size)
        self._buckets[idx].append(t)
        if self.retain:
            window.append(t)
            self._cnt[t.pos] = window.arrivals
            return []
        evicted = window.insert(t)  # one overwrite of the oldest slot
        self._cnt[t.pos] = self._replayed[part] = window.arrivals
        return [] if evicted is None else [self._drop(evicted)]

    def advance(self, t: Tup) -> list[Tup]:
        """Replay arrival ``t`` (inserted with ``retain``): evict what left the window then.

        Evicts the tuples of ``t``'s partition with ``cnt <= cnt(t) - N``; no
        origin replayed later can see them. A no-op for time windows and
        without ``retain`` (:meth:`insert` evicted already).
        """
        if not self.is_count or not self.retain:
            return []
        part = self._part(t)
        now = self._replayed[part] = self._cnt[t.pos]
        window = self._parts[part]
        return [self._drop(old) for old in window.trim(window.arrivals - now + self.size)]

    def _drop(self, old: Tup) -> Tup:
        del self._cnt[old.pos]
        self._buckets[self._bucket_of_tuple(old)].remove(old)
        return old

    def expire(self, now: int, *, force: bool = False) -> list[Tup]:
        """Time windows: remove and return tuples with ``ts + T < now`` (oldest first).

        Under lazy expiration only at multiples of ``expire_every`` (or with
        ``force``). Count windows expire by :meth:`insert` / :meth:`advance`.
        """
        if self.is_count:
            return []
        if self.expire_every is not None and not force:
            if self._next_purge is not None and now < self._next_purge:
                return []
            self._next_purge = (now // self.expire_every + 1) * self.expire_every
        bound = now - self.length
        order, touched = self._order, []
        while order and order[0][0] < bound:
            touched.append(order.popleft()[1])
        out: list[Tup] = []
        for idx in dict.fromkeys(touched):
            out.extend(self._buckets[idx].expire(now, force=True))
        out.sort(key=lambda t: t.pos)
        return out

    # -- reading -----------------------------------------------------------
    def probe(self, value) -> Iterable[Tup]:
        """The bucket that join-attribute value ``value`` maps to, in arrival order."""
        return self._buckets[bucket_of(value, self.b)]

    def probe_live(self, value, at: int, before_pos: int) -> Iterator[Tup]:
        """Time windows: the tuples of ``value``'s bucket inside the window at time ``at`` that
        arrived before position ``before_pos`` (without visiting the others)."""
        return self._buckets[bucket_of(value, self.b)].live_before(at, before_pos)

    def scan(self) -> Iterator[Tup]:
        """Every tuple held, bucket by bucket (what an NLJ scans)."""
        for bucket in self._buckets:
            yield from bucket

    def contains(self, u: Tup, at: Tup) -> bool:
        """Was ``u`` inside this window when ``at`` (another stream's arrival) arrived?

        Needed when the window may hold stale or newer tuples (lazy expiration,
        lazy evaluation). For count windows ``at`` must be the last arrival
        replayed by :meth:`advance` (or inserted, without ``retain``).
        """
        if u.pos >= at.pos:
            return False
        if self.is_count:
            return self._replayed[self._part(u)] - self._cnt[u.pos] < self.size
        return u.ts >= at.ts - self.length

    def exp(self, u: Tup) -> int:
        """Expiration time of ``u`` (``NO_EXP`` for count windows)."""
        return self.spec.exp(u.ts)

    def cnt(self, u: Tup) -> int:
        """Count windows: ``u``'s arrival number in its partition (1-based)."""
        return self._cnt[u.pos]

    def bucket_sizes(self) -> list[int]:
        return [len(b) for b in self._buckets]

    def __len__(self) -> int:
        if self.is_count:
            return len(self._cnt)
        return len(self._order)

    def __iter__(self) -> Iterator[Tup]:
        """Every tuple held, in arrival order."""
        return iter(sorted(self.scan(), key=lambda t: t.pos))

    def __repr__(self) -> str:
        kind = "count" if self.is_count else "time"
        return f"HashWindow({self.spec}, {kind}, b={self.b} on {self.key!r}, {len(self)} tuples)"
