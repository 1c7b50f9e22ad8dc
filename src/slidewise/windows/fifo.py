"""FIFO buffer of a time-based sliding window ``[RANGE T]``, eager or lazy expiration.

Golab & Özsu, VLDB 2003 long version §3.1–3.3 and §4.1; Golab,
PhD thesis 2006 §5.2.1–5.2.2 (eager vs. lazy expiration, Alg. 2–5).

Semantics (docs/semantics.md): at time τ the window holds the items with
``τ - T <= ts <= τ``; an item's expiration time is ``exp = ts + T``, and it has
*expired at* ``now`` iff ``exp < now``. Items are appended in arrival order,
which is non-decreasing ``ts`` order, so expired items always form a prefix:
expiration pops from the head.

* Eager expiration (``expire_every=None``): :meth:`expire` purges on every call.
* Lazy expiration (``expire_every=Δ``): :meth:`expire` purges only when ``now``
  has reached the next multiple of Δ, so stale items stay in the buffer up to Δ
  time units; readers must then skip them with :meth:`live` (the thesis'
  timestamp padding, Alg. 3).
* :meth:`expire` with ``force=True`` purges regardless of the policy (lazy
  join algorithms decide the purge bound themselves, e.g. ``NOW + Δ`` in Alg. 4).

Items are any objects with an integer ``ts`` attribute (e.g.
:class:`~slidewise.model.batch.Tup`).

Complexity: insert O(1); expiration O(1) amortised per item (each item is
popped once); iteration O(len). Memory: the window contents, plus under lazy
expiration up to Δ·λ stale items.

>>> from types import SimpleNamespace as T
>>> w = TimeWindow(10)
>>> for ts in (1, 5, 12):
...     w.insert(T(ts=ts))
>>> [t.ts for t in w.expire(12)], [t.ts for t in w]
([1], [5, 12])
>>> lazy = TimeWindow(10, expire_every=5)
>>> for ts in (1, 5):
...     lazy.insert(T(ts=ts))
>>> lazy.expire(10)          # purges (nothing stale yet); next purge at 15
[]
>>> lazy.insert(T(ts=12))
>>> lazy.expire(12), [t.ts for t in lazy.live(12)], len(lazy)   # ts=1 stale but kept
([], [5, 12], 3)
>>> [t.ts for t in lazy.expire(15)]
[1]
"""

from __future__ import annotations

from bisect import bisect_left
from collections import deque
from collections.abc import Iterator
from itertools import islice
from operator import attrgetter
from typing import Any

from slidewise.plan.query import WindowSpec

_TS, _POS = attrgetter("ts"), attrgetter("pos")


class TimeWindow:
    """Sliding time window of length ``length`` kept as a FIFO queue.

    ``expire_every=None`` → eager expiration; an integer Δ → lazy expiration
    (purge at most once per Δ time units, at multiples of Δ).
    """

    __slots__ = ("length", "expire_every", "_items", "_next_purge")

    def __init__(self, length: int, *, expire_every: int | None = None) -> None:
        if length < 0:
            raise ValueError(f"window length must be >= 0, got {length}")
        if expire_every is not None and expire_every < 1:
            raise ValueError(f"expire_every must be a positive interval, got {expire_every}")
        self.length = length
        self.expire_every = expire_every
        self._items: deque = deque()
        self._next_purge: int | None = None

    @classmethod
    def from_spec(cls, spec: WindowSpec, *, expire_every: int | None = None) -> TimeWindow:
        """Window for a ``range`` / ``unbounded`` / ``now`` :class:`WindowSpec`."""
        if spec.is_count:
            raise ValueError(f"{spec} is a count window; use slidewise.windows.count")
        return cls(spec.length, expire_every=expire_every)

    # -- updates ---------------------------------------------------------
    def insert(self, item: Any) -> None:
        """Append a newly arrived item (arrivals come in non-decreasing ``ts``)."""
        self._items.append(item)

    def expire(self, now: int, *, force: bool = False) -> list:
        """Remove and return the items expired at ``now`` (``ts + T < now``), oldest first.

        Under lazy expiration nothing is removed unless ``now`` has reached the
        next purge instant (a multiple of ``expire_every``) or ``force`` is set.
        """
        if self.expire_every is not None and not force:
            if self._next_purge is not None and now < self._next_purge:
                return []
            self._next_purge = (now // self.expire_every + 1) * self.expire_every
        bound = now - self.length
        items = self._items
        out = []
        while items and items[0].ts < bound:
            out.append(items.popleft())
        return out

    def clear(self) -> None:
        self._items.clear()

    # -- reading ---------------------------------------------------------
    def exp(self, item: Any) -> int:
        """Expiration time ``ts + T`` of an item."""
        return item.ts + self.length

    def is_live(self, item: Any, at: int) -> bool:
        """Is ``item`` inside the window at time ``at`` (``at - T <= ts``)?"""
        return item.ts >= at - self.length

    def live(self, at: int) -> Iterator:
        """Items inside the window at time ``at`` (skips stale ones left by lazy expiration).

        Items newer than ``at`` are included: the caller decides about them.
        """
        bound = at - self.length
        for item in self._items:
            if item.ts >= bound:
                yield item

    def live_before(self, at: int, before_pos: int) -> Iterator:
        """Items inside the window at time ``at`` that arrived before position ``before_pos``.

        Items carry ``ts`` and ``pos``, both non-decreasing in arrival order,
        so these are one run of the queue, found by two binary searches:
        stale and newer items are never visited.
        """
        items = self._items
        lo = bisect_left(items, at - self.length, key=_TS)
        return islice(items, lo, bisect_left(items, before_pos, lo, key=_POS))

    def __iter__(self) -> Iterator:
        """All buffered items in arrival order (stale ones too under lazy expiration)."""
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    @property
    def oldest(self) -> Any | None:
        return self._items[0] if self._items else None

    @property
    def newest(self) -> Any | None:
        return self._items[-1] if self._items else None

    def __repr__(self) -> str:
        mode = "eager" if self.expire_every is None else f"lazy/{self.expire_every}"
        return f"TimeWindow(T={self.length}, {mode}, {len(self)} items)"
