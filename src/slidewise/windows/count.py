"""Count-based sliding windows ``[ROWS N]`` and ``[PARTITION BY k ROWS N]``.

Golab & Özsu, VLDB 2003 long version §3.6: a count window kept as a
circular array, where inserting a new tuple and invalidating the oldest one is
a single overwrite; for lazy re-evaluation each element carries a counter
``cnt`` (its arrival number in the window) so that validity at an earlier
instant can be checked without eager expiration. Thesis §5.2.2
notes that count windows are strict non-monotonic: expirations are known only
when the evicting tuple arrives (hence negative tuples).

Semantics (docs/semantics.md): the window holds the ``N`` most recently arrived items
(per value of the partition key for :class:`PartitionedCountWindow`). An item
with counter ``c`` is inside the window right after the arrival with counter
``a`` iff ``a - N < c <= a``.

Two ways to use the buffer:

* eager: :meth:`CountWindow.insert` appends and returns the evicted item (the
  overwritten oldest one) or ``None``;
* lazy (§3.6): :meth:`CountWindow.append` never evicts (the array grows), and
  :meth:`CountWindow.trim` evicts down to ``N`` after a re-evaluation;
  :meth:`CountWindow.entries` yields ``(cnt, item)`` to test validity.

Complexity: insert / append O(1) (amortised for growth), trim O(evicted),
iteration O(len); a partitioned window iterates all partitions in arrival
order with a k-way merge, O(len · log partitions).

>>> w = CountWindow(2)
>>> [w.insert(x) for x in "abc"]
[None, None, 'a']
>>> list(w), w.arrivals, list(w.entries())
(['b', 'c'], 3, [(1, 'b'), (2, 'c')])
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable, Iterator
from typing import Any

from slidewise.plan.query import WindowSpec


class CountWindow:
    """The last ``size`` arrivals, as a circular array (oldest first when iterated)."""

    __slots__ = ("size", "arrivals", "_buf", "_head", "_len")

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"count window size must be >= 1, got {size}")
        self.size = size
        #: number of items ever inserted; the newest item's counter is ``arrivals - 1``
        self.arrivals = 0
        self._buf: list = [None] * size
        self._head = 0
        self._len = 0

    # -- updates ---------------------------------------------------------
    def insert(self, item: Any) -> Any | None:
        """Add the newest item; return the item it evicts (the oldest), if any.

        When the window is full this is one overwrite of the oldest slot.
        """
        self.arrivals += 1
        cap = len(self._buf)
        if self._len == self.size == cap:
            old = self._buf[self._head]
            self._buf[self._head] = item
            self._head = (self._head + 1) % cap
            return old
        evicted = None
        while self._len >= self.size:  # a lazily grown buffer: evict down first
            evicted = self._popleft()
        self._push(item)
        return evicted

    def append(self, item: Any) -> None:
        """Add the newest item without evicting (lazy mode; the array grows)."""
        self.arrivals += 1
        self._push(item)

    def trim(self, keep: int | None = None) -> list:
        """Evict the oldest items until at most ``keep`` (default ``size``) remain; return them."""
        keep = self.size if keep is None else keep
        out = []
        while self._len > keep:
            out.append(self._popleft())
        return out

    def clear(self) -> None:
        self.trim(0)

    def _push(self, item: Any) -> None:
        cap = len(self._buf)
        if self._len == cap:  # grow: unroll the ring into a larger array
            self._buf = list(self) + [None] * cap
            self._head = 0
            cap *= 2
        self._buf[(self._head + self._len) % cap] = item
        self._len += 1

    def _popleft(self) -> Any:
        item = self._buf[self._head]
        self._buf[self._head] = None
        self._head = (self._head + 1) % len(self._buf)
        self._len -= 1
        return item

    # -- reading ---------------------------------------------------------
    @property
    def first_cnt(self) -> int:
        """Counter of the oldest buffered item."""
        return self.arrivals - self._len

    def entries(self) -> Iterator[tuple[int, Any]]:
        """``(cnt, item)`` pairs, oldest first (§3.6 counters)."""
        return enumerate(self, self.first_cnt)

    def valid_after(self, cnt: int, arrivals: int) -> bool:
        """Is the item with counter ``cnt`` in the window once ``arrivals`` items have arrived?"""
        return arrivals - self.size <= cnt < arrivals

    def __iter__(self) -> Iterator:
        buf, head, cap = self._buf, self._head, len(self._buf)
        for i in range(self._len):
            yield buf[(head + i) % cap]

    def __getitem__(self, i: int) -> Any:
        if i < 0:
            i += self._len
        if not 0 <= i < self._len:
            raise IndexError("count window index out of range")
        return self._buf[(self._head + i) % len(self._buf)]

    def __len__(self) -> int:
        return self._len

    @property
    def oldest(self) -> Any | None:
        return self[0] if self._len else None

    @property
    def newest(self) -> Any | None:
        return self[-1] if self._len else None

    def __repr__(self) -> str:
        return f"CountWindow(N={self.size}, {len(self)} items, {self.arrivals} arrivals)"


def _key_getter(key: str | Callable[[Any], Hashable]) -> Callable[[Any], Hashable]:
    if callable(key):
        return key
    return lambda item: item.get(key)


class PartitionedCountWindow:
    """``[PARTITION BY k ROWS N]``: one :class:`CountWindow` per value of ``k``.

    ``key`` is an attribute name (read with ``item.get(key)``, as on
    :class:`~slidewise.model.batch.Tup`) or a function of the item. Iteration
    over the whole window follows global arrival order across partitions.
    """

    def __init__(self, size: int, key: str | Callable[[Any], Hashable]) -> None:
        if size < 1:
            raise ValueError(f"count window size must be >= 1, got {size}")
        self.size = size
        self.key = _key_getter(key)
        self._parts: dict[Hashable, CountWindow] = {}
        self._seq = 0
        self._len = 0

    def _part(self, value: Hashable) -> CountWindow:
        part = self._parts.get(value)
        if part is None:
            part = self._parts[value] = CountWindow(self.size)
        return part

    # -- updates ---------------------------------------------------------
    def insert(self, item: Any) -> Any | None:
        """Add ``item`` to its partition; return the item evicted from that partition, if any."""
        part = self._part(self.key(item))
        before = len(part)
        evicted = part.insert((self._seq, item))
        self._seq += 1
        self._len += len(part) - before
        return None if evicted is None else evicted[1]

    def append(self, item: Any) -> None:
        """Lazy mode: add without evicting."""
        self._part(self.key(item)).append((self._seq, item))
        self._seq += 1
        self._len += 1

    def trim(self) -> list:
        """Evict every partition down to ``size`` items; return the evicted items."""
        out = []
        for part in self._parts.values():
            out.extend(item for _, item in part.trim())
        self._len -= len(out)
        return out

    def clear(self) -> None:
        self._parts.clear()
        self._len = 0

    # -- reading ---------------------------------------------------------
    def partition(self, value: Hashable) -> Iterator:
        """Items of one partition, oldest first."""
        part = self._parts.get(value)
        return iter(()) if part is None else (item for _, item in part)

    def entries(self, value: Hashable) -> Iterator[tuple[int, Any]]:
        """``(cnt, item)`` of one partition (counters are per partition)."""
        part = self._parts.get(value)
        return iter(()) if part is None else ((c, item) for c, (_, item) in part.entries())

    def arrivals(self, value: Hashable) -> int:
        """Number of items ever inserted into partition ``value``."""
        part = self._parts.get(value)
        return 0 if part is None else part.arrivals

    def partitions(self) -> list[Hashable]:
        return list(self._parts)

    def __iter__(self) -> Iterator:
        merged = heapq.merge(*self._parts.values(), key=lambda e: e[0])
        return (item for _, item in merged)

    def __len__(self) -> int:
        return self._len

    def __repr__(self) -> str:
        return f"PartitionedCountWindow(N={self.size}, {len(self._parts)} partitions, {len(self)} items)"


def count_window(spec: WindowSpec) -> CountWindow | PartitionedCountWindow:
    """The buffer for a ``rows`` :class:`WindowSpec` (partitioned if it has ``partition_by``)."""
    if not spec.is_count:
        raise ValueError(f"{spec} is not a count window; use slidewise.windows.fifo")
    if spec.partition_by:
        return PartitionedCountWindow(spec.size, spec.partition_by)
    return CountWindow(spec.size)
