"""Row stores for the state of incremental operators, one per strategy (Golab's thesis §2.3.3, §3.5.2).

Every store holds signed-tuple rows ``(vals, ts, exp, sign)`` (see
:mod:`slidewise.operators.incremental`) and offers one interface:

* ``insert(row)``;
* ``delete(vals, exp) -> bool`` — remove one row with these values and
  ``exp`` (what a negative tuple cancels); ``remove`` returns the row itself;
* ``expire(now) -> list[row]`` — remove and return the rows with ``exp < now``;
* ``lookup(key)`` — the rows whose ``key(vals)`` equals ``key`` (``key`` is the
  function given at construction; ``None`` means the whole ``vals``). The
  result is the store's own bucket: copy it before changing the store;
* ``next_expiry()`` — a lower bound of the smallest ``exp`` held (or None);
* ``len()`` and iteration (in no particular order).

The stores differ in how they find expired rows:

* :class:`HashStore` (NT): a hash table of multisets; rows leave only by
  ``delete`` (every expiration arrives as a negative tuple), never by time;
* :class:`ScanStore` (DIRECT): rows expire by ``exp``, found by scanning the
  whole state — the direct approach's cost (§2.3.3); a hash index still
  serves lookups and deletions;
* :class:`FifoStore` (UPA, WKS input): rows arrive in expiration order, so
  expiration pops from the head of a deque (O(1) per row); a row arriving
  out of order is placed by a short scan from the tail;
* :class:`CalendarStore` (UPA, WK or STR input): a
  :class:`~slidewise.operators.state.calendar.CalendarQueue` partitioned by ``exp``.

``NO_EXP`` rows (monotonic inputs, count windows) live only in the index.
:func:`make_store` picks the store for a strategy and input pattern.

>>> s = make_store("upa", Pattern.WKS, key=lambda v: v[0])
>>> for ts, k in ((1, "a"), (2, "b"), (3, "a")):
...     s.insert(((k, ts), ts, ts + 10, 1))
>>> [r[1] for r in s.lookup("a")], [r[1] for r in s.expire(13)], len(s)
([1, 3], [1, 2], 1)
"""

from __future__ import annotations

from collections import deque

from slidewise.errors import PlanError
from slidewise.model.batch import NO_EXP
from slidewise.operators.incremental import STRATEGIES
from slidewise.operators.state.calendar import CalendarQueue
from slidewise.plan.logical import Pattern

__all__ = ["CalendarStore", "FifoStore", "HashStore", "ScanStore", "make_store"]


class HashStore:
    """Hash table ``key -> list of rows``; rows leave by :meth:`delete` only (NT)."""

    kind = "hash"

    def __init__(self, key=None):
        self.key = key
        self._index: dict = {}
        self.index_get = self._index.get  # key -> bucket or None, without a method call in between
        self._n = 0

    def _key(self, vals):
        return vals if self.key is None else self.key(vals)

    def insert(self, row) -> None:
        k = row[0] if self.key is None else self.key(row[0])
        bucket = self._index.get(k)
        if bucket is None:
            self._index[k] = self._new_bucket(row)
        else:
            bucket.append(row)
        self._n += 1

    def _new_bucket(self, row):
        return [row]

    def _unindex(self, vals, exp):
        """Remove one row ``(vals, *, exp, *)`` from the index; return it or None."""
        k = self._key(vals)
        bucket = self._index.get(k)
        if bucket is None:
            return None
        for i, r in enumerate(bucket):
            if r[2] == exp and r[0] == vals:
                del bucket[i]
                if not bucket:
                    del self._index[k]
                self._n -= 1
                return r
        return None

    def _unindex_row(self, row) -> None:
        """Remove a row known to be indexed (after it left the expiration structure)."""
        k = row[0] if self.key is None else self.key(row[0])
        bucket = self._index[k]
        if bucket[0] is row or bucket[0] == row:
            if len(bucket) == 1:
                del self._index[k]
            elif isinstance(bucket, deque):
                bucket.popleft()
            else:
                del bucket[0]
        else:
            bucket.remove(row)

    def remove(self, vals, exp):
        """Remove one row with ``vals`` and ``exp``; return it, or None if absent."""
        return self._unindex(vals, exp)

    def delete(self, vals, exp) -> bool:
        return self.remove(vals, exp) is not None

    def expire(self, now: int) -> list:
        return []

    def next_expiry(self) -> int | None:
        return None

    def lookup(self, key):
        return self._index.get(key, ())

    def keys(self):
        return self._index.keys()

    def __len__(self) -> int:
        return self._n

    def __iter__(self):
        for bucket in self._index.values():
            yield from bucket


class ScanStore(HashStore):
    """DIRECT state: expiration scans every row for ``exp < now`` (§2.3.3)."""

    kind = "scan"

    def __init__(self, key=None):
        super().__init__(key)
        self._min_exp = NO_EXP  # lower bound: no scan while nothing can be due

    def insert(self, row) -> None:
        super().insert(row)
        if row[2] < self._min_exp:
            self._min_exp = row[2]

    def expire(self, now: int) -> list:
        if self._min_exp >= now:
            return []
        out: list = []
        lo = NO_EXP
        empty = []
        for k, bucket in self._index.items():
            keep = []
            for r in bucket:
                e = r[2]
                if e < now:
                    out.append(r)
                else:
                    keep.append(r)
                    if e < lo:
                        lo = e
            if len(keep) != len(bucket):
                if keep:
                    self._index[k] = keep
                else:
                    empty.append(k)
        for k in empty:
            del self._index[k]
        self._n -= len(out)
        self._min_exp = lo
        return out

    def next_expiry(self) -> int | None:
        return None if self._min_exp == NO_EXP else self._min_exp


class FifoStore(HashStore):
    """UPA state for WKS input: a deque in ``exp`` order, expired from the head (§3.5.2)."""

    kind = "fifo"

    def __init__(self, key=None):
        super().__init__(key)
        self._queue: deque = deque()
        self._dead: dict = {}  # rows deleted early, skipped when they reach the head

    def _new_bucket(self, row):
        return deque((row,))

    def insert(self, row) -> None:
        super().insert(row)
        exp = row[2]
        if exp == NO_EXP:
            return
        q = self._queue
        if not q or q[-1][2] <= exp:
            q.append(row)
            return
        i = len(q) - 1  # out of order (e.g. mixed window lengths)
        while i >= 0 and q[i][2] > exp:
            i -= 1
        q.insert(i + 1, row)

    def remove(self, vals, exp):
        row = self._unindex(vals, exp)
        if row is not None and exp != NO_EXP:
            self._dead[row] = self._dead.get(row, 0) + 1
        return row

    def expire(self, now: int) -> list:
        q = self._queue
        out: list = []
        dead = self._dead
        while q and q[0][2] < now:
            row = q.popleft()
            if dead and row in dead:
                c = dead.pop(row)
                if c > 1:
                    dead[row] = c - 1
                continue
            self._unindex_row(row)
            out.append(row)
        self._n -= len(out)
        return out

    def next_expiry(self) -> int | None:
        return self._queue[0][2] if self._queue else None


class CalendarStore(HashStore):
    """UPA state for WK (or STR) input: a calendar queue by ``exp`` plus a hash index (§3.5.2).

    ``indexed=False`` keeps the calendar queue alone, for state nobody looks
    up by value and whose rows leave by expiration (a WK answer: §3.5.2 keeps
    weak non-monotonic results in a calendar queue); :meth:`lookup` is then
    unavailable and :meth:`remove` scans the row's partition.
    """

    kind = "calendar"

    def __init__(self, key=None, partitions: int = 10, width: int | None = None, *, indexed: bool = True):
        super().__init__(key)
        self.calendar = CalendarQueue(partitions, width)
        self.indexed = indexed
        if not indexed:
            self.index_get = self.lookup

    def insert(self, row) -> None:
        if not self.indexed:
            self.calendar.insert(row)  # NO_EXP rows: kept aside by the calendar
            self._n += 1
            return
        super().insert(row)
        if row[2] != NO_EXP:
            self.calendar.insert(row)

    def remove(self, vals, exp):
        if not self.indexed:
            row = self.calendar.take(vals, exp)
            self._n -= row is not None
            return row
        row = self._unindex(vals, exp)
        if row is not None and exp != NO_EXP:
            self.calendar.delete(row)
        return row

    def expire(self, now: int) -> list:
        if self.calendar._next >= now:
            return []
        out = self.calendar.expire(now)
        if self.indexed:
            for row in out:
                self._unindex_row(row)
        self._n -= len(out)
        return out

    def next_expiry(self) -> int | None:
        t = self.calendar._next
        return None if t == NO_EXP else t

    def lookup(self, key):
        if not self.indexed:
            raise PlanError("this calendar store keeps no index by value", hint="build it with indexed=True")
        return super().lookup(key)

    def __iter__(self):
        return iter(self.calendar) if not self.indexed else super().__iter__()


def make_store(strategy: str, pattern: Pattern, key=None, partitions: int = 10, *, lookups: bool = True):
    """The state structure for an input of update ``pattern`` under ``strategy`` (§3.5.2).

    ``nt`` → :class:`HashStore`; ``direct`` → :class:`ScanStore`; ``upa`` →
    :class:`FifoStore` for MONO/WKS input, :class:`CalendarStore` with
    ``partitions`` days for WK and STR input (STR rows that never expire by
    time stay in its hash index; premature deletions scan one partition).
    ``lookups=False``: the owner never looks rows up by value, so a WK
    calendar store keeps no hash index.
    """
    if strategy not in STRATEGIES:
        raise PlanError(f"unknown processing strategy {strategy!r}", hint=f"use one of {', '.join(STRATEGIES)}")
    if strategy == "nt":
        return HashStore(key)
    if strategy == "direct":
        return ScanStore(key)
    if pattern <= Pattern.WKS:
        return FifoStore(key)
    return CalendarStore(key, partitions, indexed=lookups or pattern == Pattern.STR)
