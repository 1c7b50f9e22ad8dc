"""The thesis's NT state for the update-pattern experiments (Golab's thesis §3.6.1).

The thesis's NT operators keep hash tables of 10 partitions, each lookup
scanning its partition; slidewise's NT state indexes rows by value
(:class:`~slidewise.operators.state.stores.HashStore`). :func:`thesis_hash_tables`
runs a plan with the thesis's tables instead: while it is active, every NT
operator built gets a :class:`PartitionedHashStore`. The core knows nothing
of this variant.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from slidewise.errors import PlanError
from slidewise.operators.incremental import Context
from slidewise.operators.state.stores import HashStore

__all__ = ["PartitionedHashStore", "thesis_hash_tables"]


class PartitionedHashStore(HashStore):
    """NT state as in the thesis's experiments (§3.6.1: hash tables of 10 partitions): ``partitions``
    buckets of rows; a lookup or deletion scans its key's bucket, O(state / partitions).

    >>> s = PartitionedHashStore(partitions=2)
    >>> for v in ("a", "b", "a"):
    ...     s.insert(((v,), 1, 11, 1))
    >>> len(s.lookup(("a",))), s.delete(("a",), 11), len(s.lookup(("a",))), len(s)
    (2, True, 1, 2)
    """

    kind = "hash-partitioned"

    def __init__(self, key=None, partitions: int = 10):
        super().__init__(key)
        if partitions < 1:
            raise PlanError(f"a hash table needs at least one partition, got {partitions}", hint="e.g. 10 (the thesis's setting)")
        self.partitions = partitions
        self._buckets: list[list] = [[] for _ in range(partitions)]
        self.index_get = self._get  # a bound method, not a lambda: operator state is pickled

    def _get(self, k):
        """As the index's ``dict.get``: the rows of key ``k`` or None."""
        return self.lookup(k) or None

    def _bucket(self, k) -> list:
        return self._buckets[hash(k) % self.partitions]

    def insert(self, row) -> None:
        self._bucket(self._key(row[0])).append(row)
        self._n += 1

    def _unindex(self, vals, exp):
        bucket = self._bucket(self._key(vals))
        for i, r in enumerate(bucket):
            if r[2] == exp and r[0] == vals:
                del bucket[i]
                self._n -= 1
                return r
        return None

    def _unindex_row(self, row) -> None:
        self._bucket(self._key(row[0])).remove(row)

    def lookup(self, key):
        if self.key is None:
            return [r for r in self._bucket(key) if r[0] == key] or ()
        key_of = self.key
        return [r for r in self._bucket(key) if key_of(r[0]) == key] or ()

    def keys(self):
        return {self._key(r[0]) for r in self}

    def __iter__(self):
        for bucket in self._buckets:
            yield from bucket


@contextmanager
def thesis_hash_tables(partitions: int = 10) -> Iterator[None]:
    """Within the block, NT operators keep :class:`PartitionedHashStore` state of ``partitions`` buckets."""
    if partitions < 1:
        raise PlanError(f"a hash table needs at least one partition, got {partitions}", hint="e.g. 10 (the thesis's setting)")
    core = Context.store

    def store(ctx: Context, pattern, key=None, *, lookups: bool = True):
        if ctx.strategy != "nt":
            return core(ctx, pattern, key, lookups=lookups)
        return PartitionedHashStore(key, partitions)

    Context.store = store  # type: ignore[method-assign]
    try:
        yield
    finally:
        Context.store = core  # type: ignore[method-assign]
