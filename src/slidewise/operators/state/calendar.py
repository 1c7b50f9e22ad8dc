"""Calendar queue of rows partitioned by expiration time (Golab's thesis §3.5.2, Fig. 3.6).

Golab's thesis stores the state of weak non-monotonic inputs (whose insertion
order differs from their expiration order) in a calendar queue [Brown 1988]:
a circular array of ``partitions`` "days", each holding the rows whose ``exp``
falls in a range of ``width`` time units. Day ``d`` covers
``[d·width, (d+1)·width)`` and lives in partition ``d mod partitions``; as time
advances the partitions are reused for later days (in Fig. 3.6, 5 partitions
of width 10 at time 50; at time 60 the left-most one holds exps 101–110).
Rows more than one "year" ahead share a partition with nearer rows.

Operations (rows are tuples whose ``row[2]`` is ``exp``; ``NO_EXP`` rows are
kept aside and never expire), amortised costs:

* :meth:`insert` — O(1): append to the row's partition (a binary-search
  insertion if that partition is the sorted boundary day, below);
* :meth:`expire` — O(1) while the smallest ``exp`` held is not due; else a
  partition whose rows are all due is popped whole, and the *boundary day*
  (some rows due, some not) is sorted once by ``exp`` — as in Brown's
  calendar queue, whose days are sorted lists — then its due prefix is cut
  off (binary search) as time advances through the day: O(rows due) plus
  one sort per day, never a rescan of the live rows;
* :meth:`delete` — a premature deletion (negative tuple) scans the row's
  partition; the thesis notes this cost (§3.5.2).

``width`` defaults to ``ceil((lifetime + 1) / (partitions - 1))`` of the first
row inserted (``exp - ts``): the days ahead of the current one span a whole
lifetime, so a new row never lands in the partition of the day being expired
(which is kept sorted: an insertion there is a binary-search insert into a
large list). Correctness never depends on it, only speed.

>>> q = CalendarQueue(partitions=5, width=10)
>>> for exp in (55, 62, 71, 58, 160):
...     q.insert(((exp,), 0, exp, 1))
>>> [r[2] for r in q.expire(60)]     # day 50-59 popped whole
[55, 58]
>>> [r[2] for r in q.expire(63)]     # boundary day 60-69 sorted, due prefix cut
[62]
>>> len(q), q.next_expiry()
(2, 71)
"""

from __future__ import annotations

from bisect import bisect_left, insort
from operator import itemgetter

from slidewise.errors import PlanError
from slidewise.model.batch import NO_EXP

__all__ = ["CalendarQueue"]


_EXP = itemgetter(2)


class CalendarQueue:
    """Rows partitioned by ``exp`` into a circular array of ``partitions`` days."""

    def __init__(self, partitions: int = 10, width: int | None = None):
        if int(partitions) < 1:
            raise PlanError(f"a calendar queue needs at least one partition, got {partitions}", hint="use e.g. --partitions 10 (the thesis tests 10 and 50)")
        if width is not None and int(width) < 1:
            raise PlanError(f"calendar partition width must be positive, got {width}", hint="leave it unset to derive it from the first row's lifetime")
        self.partitions = int(partitions)
        self.width = None if width is None else int(width)
        self._buckets: list[list] = [[] for _ in range(self.partitions)]
        self._sorted = [False] * self.partitions  # bucket sorted by exp (due rows first)
        self._lo = [NO_EXP] * self.partitions  # lower bound of the exps in each partition
        self._hi = [-1] * self.partitions  # upper bound
        self._next = NO_EXP  # lower bound of every finite exp held
        self._never: list = []
        self._n = 0

    def insert(self, row) -> None:
        """Add ``row`` to the partition of its ``exp`` (``row[2]``)."""
        exp = row[2]
        self._n += 1
        if exp == NO_EXP:
            self._never.append(row)
            return
        if self.width is None:
            life = exp - row[1] + 1
            self.width = max(1, -(-life // max(1, self.partitions - 1)))
        i = (exp // self.width) % self.partitions
        if self._sorted[i]:
            insort(self._buckets[i], row, key=_EXP)
        else:
            self._buckets[i].append(row)
        if exp < self._lo[i]:
            self._lo[i] = exp
            if exp < self._next:
                self._next = exp
        if exp > self._hi[i]:
            self._hi[i] = exp

    def _boundary(self, i: int, now: int, out: list) -> None:
        """Expire the due rows of a partition that also holds live ones (sorted once, then cut)."""
        bucket = self._buckets[i]
        if not self._sorted[i]:
            bucket.sort(key=_EXP)
            self._sorted[i] = True
        cut = bisect_left(bucket, now, key=_EXP)
        if cut:
            out.extend(bucket[:cut])
            del bucket[:cut]
        self._lo[i] = bucket[0][2] if bucket else NO_EXP
        if not bucket:
            self._hi[i], self._sorted[i] = -1, False

    def expire(self, now: int) -> list:
        """Remove and return the rows with ``exp < now``."""
        if self._next >= now:
            return []
        out: list = []
        w, parts, lo, hi = self.width, self.partitions, self._lo, self._hi
        first, last = self._next // w, (now - 1) // w
        days = range(first, last + 1) if last - first < parts else range(last - parts + 1, last + 1)
        for d in days:
            i = d % parts
            if lo[i] >= now:
                continue
            if hi[i] < now:
                out.extend(self._buckets[i])
                self._buckets[i], lo[i], hi[i], self._sorted[i] = [], NO_EXP, -1, False
            else:
                self._boundary(i, now, out)
        self._n -= len(out)
        self._next = min(lo)
        return out

    def delete(self, row) -> bool:
        """Remove one row equal to ``row`` (a premature deletion); scans its partition."""
        exp = row[2]
        if exp == NO_EXP:
            return self._remove_from(self._never, row)
        if self.width is None:
            return False
        i = (exp // self.width) % self.partitions
        if not self._remove_from(self._buckets[i], row):
            return False
        if not self._buckets[i]:
            self._lo[i], self._hi[i], self._sorted[i] = NO_EXP, -1, False
        return True

    def take(self, vals, exp):
        """Remove and return one row with values ``vals`` and ``exp`` (a scan of its partition), or None."""
        if exp == NO_EXP:
            bucket = self._never
        elif self.width is None:
            return None
        else:
            bucket = self._buckets[(exp // self.width) % self.partitions]
        for r in bucket:
            if r[2] == exp and r[0] == vals:
                self.delete(r)
                return r
        return None

    def _remove_from(self, bucket: list, row) -> bool:
        try:
            bucket.remove(row)
        except ValueError:
            return False
        self._n -= 1
        return True

    def next_expiry(self) -> int | None:
        """A lower bound of the smallest finite ``exp`` held (exact after :meth:`expire`), or None."""
        return None if self._next == NO_EXP else self._next

    def partition_sizes(self) -> list[int]:
        """Rows per partition (for tests and explain)."""
        return [len(b) for b in self._buckets]

    def __len__(self) -> int:
        return self._n

    def __iter__(self):
        for b in self._buckets:
            yield from b
        yield from self._never
