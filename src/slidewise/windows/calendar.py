"""Calendar queue of rows partitioned by expiration time (seed 003 §3.5.2, Fig. 3.6).

Golab's thesis stores the state of weak non-monotonic inputs (whose insertion
order differs from their expiration order) in a calendar queue [Brown 1988]:
a circular array of ``partitions`` "days", each holding the rows whose ``exp``
falls in a range of ``width`` time units. Day ``d`` covers
``[d·width, (d+1)·width)`` and lives in partition ``d mod partitions``; as time
advances the partitions are reused for later days (in Fig. 3.6, 5 partitions
of width 10 at time 50; at time 60 the left-most one holds exps 101–110).
Rows more than one "year" ahead share a partition with nearer rows.

Operations (rows are tuples whose ``row[2]`` is ``exp``; ``NO_EXP`` rows are
kept aside and never expire):

* :meth:`insert` — O(1): append to the row's partition;
* :meth:`expire` — pops whole due partitions (every row of a past day whose
  partition holds no later-year row) and scans only the partitions that may
  mix due and live rows (the boundary day, or one holding later-year rows);
* :meth:`delete` — a premature deletion (negative tuple) scans the row's
  partition; the thesis notes this cost (§3.5.2).

``width`` defaults to ``ceil(lifetime / partitions)`` of the first row inserted
(``exp - ts``), so the partitions span about one window. Correctness never
depends on it, only speed.

>>> q = CalendarQueue(partitions=5, width=10)
>>> for exp in (55, 62, 71, 58, 160):
...     q.insert(((exp,), 0, exp, 1))
>>> [r[2] for r in q.expire(60)]     # day 50-59 popped whole
[55, 58]
>>> [r[2] for r in q.expire(63)]     # boundary day 60-69 scanned
[62]
>>> len(q), q.next_expiry()
(2, 71)
"""

from __future__ import annotations

from slidewise.errors import PlanError
from slidewise.model.batch import NO_EXP

__all__ = ["CalendarQueue"]


class CalendarQueue:
    """Rows partitioned by ``exp`` into a circular array of ``partitions`` days."""

    def __init__(self, partitions: int = 10, width: int | None = None):
        if int(partitions) < 1:
            raise PlanError(f"a calendar queue needs at least one partition, got {partitions}",
                            hint="use e.g. --partitions 10 (the thesis tests 10 and 50)")
        if width is not None and int(width) < 1:
            raise PlanError(f"calendar partition width must be positive, got {width}",
                            hint="leave it unset to derive it from the first row's lifetime")
        self.partitions = int(partitions)
        self.width = None if width is None else int(width)
        self._buckets: list[list] = [[] for _ in range(self.partitions)]
        self._lo = [NO_EXP] * self.partitions   # lower bound of the exps in each partition
        self._hi = [-1] * self.partitions       # upper bound
        self._never: list = []
        self._floor: int | None = None          # every row with exp < floor has been popped
        self._n = 0

    def _slot(self, exp: int) -> int:
        day = exp // self.width
        if self._floor is not None and exp < self._floor:
            day = self._floor // self.width     # already due: keep it in the boundary day
        return day % self.partitions

    def insert(self, row) -> None:
        """Add ``row`` to the partition of its ``exp`` (``row[2]``)."""
        exp = row[2]
        self._n += 1
        if exp == NO_EXP:
            self._never.append(row)
            return
        if self.width is None:
            life = exp - row[1]
            self.width = max(1, -(-life // self.partitions))
        i = self._slot(exp)
        self._buckets[i].append(row)
        if exp < self._lo[i]:
            self._lo[i] = exp
        if exp > self._hi[i]:
            self._hi[i] = exp

    def _filter(self, i: int, now: int, out: list) -> None:
        keep = []
        lo, hi = NO_EXP, -1
        for r in self._buckets[i]:
            e = r[2]
            if e < now:
                out.append(r)
            else:
                keep.append(r)
                if e < lo:
                    lo = e
                if e > hi:
                    hi = e
        self._buckets[i], self._lo[i], self._hi[i] = keep, lo, hi

    def _pop(self, i: int, out: list) -> None:
        out.extend(self._buckets[i])
        self._buckets[i], self._lo[i], self._hi[i] = [], NO_EXP, -1

    def expire(self, now: int) -> list:
        """Remove and return the rows with ``exp < now`` (day by day)."""
        out: list = []
        if self.width is None:
            self._floor = now if self._floor is None else max(self._floor, now)
            return out
        w, parts, lo, hi = self.width, self.partitions, self._lo, self._hi
        first = (min(lo) if self._floor is None else self._floor) // w
        last = now // w
        if last - first >= parts:
            days = [d % parts for d in range(last - parts + 1, last + 1)]
        else:
            days = [d % parts for d in range(first, last + 1)]
        for i in days:
            if lo[i] >= now:
                continue
            if hi[i] < now:
                self._pop(i, out)
            else:
                self._filter(i, now, out)
        self._n -= len(out)
        self._floor = now if self._floor is None else max(self._floor, now)
        return out

    def delete(self, row) -> bool:
        """Remove one row equal to ``row`` (a premature deletion); scans its partition."""
        exp = row[2]
        if exp == NO_EXP:
            return self._remove_from(self._never, row)
        if self.width is not None:
            natural = (exp // self.width) % self.partitions
            if self._remove_from(self._buckets[natural], row):
                return True
            for b in self._buckets:   # inserted while already due: in an earlier boundary day
                if self._remove_from(b, row):
                    return True
        return False

    def _remove_from(self, bucket: list, row) -> bool:
        try:
            bucket.remove(row)
        except ValueError:
            return False
        self._n -= 1
        return True

    def next_expiry(self) -> int | None:
        """A lower bound of the smallest finite ``exp`` held (exact after :meth:`expire`), or None."""
        m = min(self._lo)
        return None if m == NO_EXP else m

    def partition_sizes(self) -> list[int]:
        """Rows per partition (for tests and explain)."""
        return [len(b) for b in self._buckets]

    def __len__(self) -> int:
        return self._n

    def __iter__(self):
        for b in self._buckets:
            yield from b
        yield from self._never
