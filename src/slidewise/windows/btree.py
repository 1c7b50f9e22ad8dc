"""A sliding window indexed by a main-memory B+tree on its join attribute.

Paper: Kang, Naughton & Viglas, *Evaluating Window Joins over Unbounded
Streams* (ICDE 2003) §4.2, "one-way B+tree index nested loops join"
(cost Eq. 5): window B is indexed by a B+tree of node size ``N``; a probe
walks from the root to a leaf with a binary search per node, and every
arrival costs an insertion plus the invalidation of an expired tuple, each a
root-to-leaf search followed by a structural update. As in the paper's
testbed, arrival order is kept separately (a FIFO of the window's tuples) and
the tuple leaving the window is deleted from the index by its key.

Index (:class:`BPlusTree`): entries are ``(key, pos, item)`` ordered by
``(key, pos)``; ``pos`` (the global arrival rank) makes every entry unique, so
equal join values are allowed and the oldest of them is deleted exactly.
Leaves hold at most ``order`` entries and inner nodes at most ``order``
separators (fan-out ``order + 1``, the paper's ``log_{N+1}``); nodes other than
the root keep at least ``order // 2``. Leaves are chained for range scans.

Window (:class:`TreeWindow`, :class:`BTreeWindow`): the windows of docs/semantics.md —
``[RANGE T]`` / ``[NOW]`` expire tuples with ``ts + T < now`` from the FIFO
head; ``[ROWS N]`` evicts the oldest tuple on the (N+1)-th arrival (one insert,
one invalidation, as the paper's physical windows); ``[PARTITION BY k ROWS N]``
keeps one FIFO per partition; ``[UNBOUNDED]`` never expires.

Comparisons (``comparisons``): a binary search over ``m`` keys counts
``ceil(log2(m + 1))`` (the paper's ``ceil(log2 N)`` per node), and a range scan
one per entry it reads. Keys must be totally ordered (no NaN).

Complexity: probe O(log_{N+1}(W/N) · log2 N + matches); insert / delete the
same plus O(N) list shifting in one node. Memory: the window plus one FIFO
slot per tuple.

>>> t = BPlusTree(order=3)
>>> for pos, key in enumerate([5, 1, 5, 3, 9, 7]):
...     t.insert(key, pos, f"t{pos}")
>>> t.equal(5), t.range(2, 7), t.height
(['t0', 't2'], ['t3', 't0', 't2', 't5'], 2)
>>> t.delete(5, 0), len(t), t.equal(5)
('t0', 5, ['t2'])
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Iterator
from typing import Any

from slidewise.plan.query import WindowSpec

#: ``pos`` sentinels: ``(key, LOW)`` sorts before and ``(key, HIGH)`` after every entry of ``key``
LOW = float("-inf")
HIGH = float("inf")

__all__ = ["BPlusTree", "BTreeWindow", "TreeWindow", "range_bounds"]


def range_bounds(lo, hi, lo_inclusive: bool = True, hi_inclusive: bool = True) -> tuple[tuple, tuple]:
    """Composite ``(key, pos)`` bounds selecting keys in the interval ``lo .. hi``.

    ``None`` means unbounded on that side (the bound is then ``None``).
    """
    low = None if lo is None else (lo, LOW if lo_inclusive else HIGH)
    high = None if hi is None else (hi, HIGH if hi_inclusive else LOW)
    return low, high


class _Leaf:
    __slots__ = ("entries", "next")

    def __init__(self, entries: list) -> None:
        self.entries = entries
        self.next: _Leaf | None = None


class _Inner:
    __slots__ = ("keys", "children")

    def __init__(self, keys: list, children: list) -> None:
        self.keys = keys
        self.children = children


class SortedTree:
    """What the B+tree and the T-tree share: the entry count and the key comparisons made."""

    def __init__(self) -> None:
        self.size = 0
        #: key comparisons made by searches and scans (see module docstring)
        self.comparisons = 0

    def __len__(self) -> int:
        return self.size


class BPlusTree(SortedTree):
    """B+tree of ``(key, pos, item)`` entries with node capacity ``order`` (>= 3)."""

    def __init__(self, order: int = 100) -> None:
        if order < 3:
            raise ValueError(f"B+tree node size must be >= 3, got {order}")
        super().__init__()
        self.order = order
        self.min_fill = order // 2
        self.root: _Leaf | _Inner = _Leaf([])

    # -- reading ----------------------------------------------------------
    @property
    def height(self) -> int:
        """Number of levels, leaves included (1 for a lone leaf)."""
        h, node = 1, self.root
        while isinstance(node, _Inner):
            node, h = node.children[0], h + 1
        return h

    def _leaf_for(self, probe) -> _Leaf:
        """The leaf where entries ``>= probe`` start (``None``: the leftmost leaf)."""
        node = self.root
        while isinstance(node, _Inner):
            if probe is None:
                node = node.children[0]
                continue
            self.comparisons += len(node.keys).bit_length()
            node = node.children[bisect_right(node.keys, probe)]
        return node

    def range(self, lo=None, hi=None, lo_inclusive: bool = True, hi_inclusive: bool = True) -> list:
        """Items with ``lo <= key <= hi`` (strict with ``*_inclusive=False``), in key order."""
        low, high = range_bounds(lo, hi, lo_inclusive, hi_inclusive)
        leaf = self._leaf_for(low)
        if low is None:
            i = 0
        else:
            self.comparisons += len(leaf.entries).bit_length()
            i = bisect_left(leaf.entries, low)
        out = []
        while leaf is not None:
            entries = leaf.entries
            for j in range(i, len(entries)):
                e = entries[j]
                self.comparisons += 1
                if high is not None and e > high:
                    return out
                out.append(e[2])
            leaf, i = leaf.next, 0
        return out

    def equal(self, key) -> list:
        """Items whose key equals ``key``, oldest (smallest ``pos``) first."""
        return self.range(key, key)

    def entries(self) -> Iterator[tuple]:
        """All ``(key, pos, item)`` entries in key order."""
        leaf = self._leaf_for(None)
        while leaf is not None:
            yield from leaf.entries
            leaf = leaf.next

    def __iter__(self) -> Iterator:
        return (e[2] for e in self.entries())

    # -- insertion -------------------------------------------------------
    def insert(self, key, pos: int, item: Any = None) -> None:
        """Add an entry; ``(key, pos)`` must not be present (``KeyError`` otherwise)."""
        split = self._insert(self.root, (key, pos, item))
        if split is not None:
            sep, right = split
            self.root = _Inner([sep], [self.root, right])
        self.size += 1

    def _insert(self, node, entry):
        if isinstance(node, _Leaf):
            entries = node.entries
            self.comparisons += len(entries).bit_length()
            i = bisect_left(entries, entry[:2])
            if i < len(entries) and entries[i][:2] == entry[:2]:
                raise KeyError(f"entry {entry[:2]} already in the B+tree")
            entries.insert(i, entry)
            if len(entries) <= self.order:
                return None
            mid = len(entries) // 2
            right = _Leaf(entries[mid:])
            del entries[mid:]
            right.next, node.next = node.next, right
            return right.entries[0][:2], right
        self.comparisons += len(node.keys).bit_length()
        i = bisect_right(node.keys, entry)
        split = self._insert(node.children[i], entry)
        if split is None:
            return None
        sep, right = split
        node.keys.insert(i, sep)
        node.children.insert(i + 1, right)
        if len(node.keys) <= self.order:
            return None
        mid = len(node.keys) // 2
        up = node.keys[mid]
        sibling = _Inner(node.keys[mid + 1 :], node.children[mid + 1 :])
        del node.keys[mid:]
        del node.children[mid + 1 :]
        return up, sibling

    # -- deletion ---------------------------------------------------------
    def delete(self, key, pos: int) -> Any:
        """Remove the entry ``(key, pos)`` and return its item (``KeyError`` if absent)."""
        item = self._delete(self.root, (key, pos))
        root = self.root
        if isinstance(root, _Inner) and not root.keys:
            self.root = root.children[0]
        self.size -= 1
        return item

    def _delete(self, node, probe: tuple):
        if isinstance(node, _Leaf):
            entries = node.entries
            self.comparisons += len(entries).bit_length()
            i = bisect_left(entries, probe)
            if i == len(entries) or entries[i][:2] != probe:
                raise KeyError(f"entry {probe} not in the B+tree")
            return entries.pop(i)[2]
        self.comparisons += len(node.keys).bit_length()
        i = bisect_right(node.keys, probe)
        item = self._delete(node.children[i], probe)
        child = node.children[i]
        size = len(child.entries) if isinstance(child, _Leaf) else len(child.keys)
        if size < self.min_fill:
            self._rebalance(node, i)
        return item

    def _rebalance(self, parent: _Inner, i: int) -> None:
        """Child ``i`` of ``parent`` underflows: borrow from a sibling or merge with one."""
        kids = parent.children
        child = kids[i]
        left = kids[i - 1] if i > 0 else None
        right = kids[i + 1] if i + 1 < len(kids) else None
        if isinstance(child, _Leaf):
            if left is not None and len(left.entries) > self.min_fill:
                child.entries.insert(0, left.entries.pop())
                parent.keys[i - 1] = child.entries[0][:2]
            elif right is not None and len(right.entries) > self.min_fill:
                child.entries.append(right.entries.pop(0))
                parent.keys[i] = right.entries[0][:2]
            elif left is not None:
                self._merge_leaves(parent, i - 1)
            elif right is not None:
                self._merge_leaves(parent, i)
            return
        if left is not None and len(left.keys) > self.min_fill:
            child.keys.insert(0, parent.keys[i - 1])
            child.children.insert(0, left.children.pop())
            parent.keys[i - 1] = left.keys.pop()
        elif right is not None and len(right.keys) > self.min_fill:
            child.keys.append(parent.keys[i])
            child.children.append(right.children.pop(0))
            parent.keys[i] = right.keys.pop(0)
        elif left is not None:
            self._merge_inner(parent, i - 1)
        elif right is not None:
            self._merge_inner(parent, i)

    @staticmethod
    def _merge_leaves(parent: _Inner, i: int) -> None:
        """Merge leaf ``i + 1`` into leaf ``i``."""
        a, b = parent.children[i], parent.children[i + 1]
        a.entries.extend(b.entries)
        a.next = b.next
        del parent.keys[i]
        del parent.children[i + 1]

    @staticmethod
    def _merge_inner(parent: _Inner, i: int) -> None:
        """Merge inner node ``i + 1`` into inner node ``i`` (the separator comes down)."""
        a, b = parent.children[i], parent.children[i + 1]
        a.keys.append(parent.keys[i])
        a.keys.extend(b.keys)
        a.children.extend(b.children)
        del parent.keys[i]
        del parent.children[i + 1]

    # -- invariants (tests) ---------------------------------------------------
    def check(self) -> None:
        """Assert the B+tree invariants (order, occupancy, equal leaf depth, leaf chain)."""
        depths: set[int] = set()
        leaves: list[_Leaf] = []

        def walk(node, lo, hi, depth, is_root):
            if isinstance(node, _Leaf):
                keys = [e[:2] for e in node.entries]
                assert keys == sorted(keys) and len(set(keys)) == len(keys)
                assert len(keys) <= self.order
                assert is_root or len(keys) >= self.min_fill
                assert all((lo is None or k >= lo) and (hi is None or k < hi) for k in keys)
                depths.add(depth)
                leaves.append(node)
                return
            assert len(node.children) == len(node.keys) + 1
            assert node.keys == sorted(node.keys) and len(node.keys) <= self.order
            assert (is_root and node.keys) or len(node.keys) >= self.min_fill
            bounds = [lo, *node.keys, hi]
            for j, c in enumerate(node.children):
                walk(c, bounds[j], bounds[j + 1], depth + 1, False)

        walk(self.root, None, None, 0, True)
        assert len(depths) == 1
        for a, b in zip(leaves, leaves[1:]):
            assert a.next is b
        assert leaves[-1].next is None
        assert sum(len(leaf.entries) for leaf in leaves) == self.size


class TreeWindow:
    """A sliding window kept as arrival-order FIFO(s) plus an ordered index on ``key``.

    ``index`` is a :class:`BPlusTree` or a :class:`~slidewise.windows.ttree.TTree`
    (anything with ``insert(key, pos, item)``, ``delete(key, pos)``,
    ``range(...)``, ``equal(key)`` and ``comparisons``). Items are
    :class:`~slidewise.model.batch.Tup`-like: ``ts``, ``pos`` and ``get(attr)``.
    """

    def __init__(self, spec: WindowSpec, key: str, index) -> None:
        self.spec = spec
        self.key = key
        self.index = index
        self.is_count = spec.is_count
        self.partition = spec.partition_by
        self.length = None if self.is_count else spec.length
        self.expires = spec.kind in ("range", "now")
        self._fifo: deque = deque()
        self._parts: dict[Any, deque] = {}

    def insert(self, t) -> list:
        """Add an arrival; return the tuples it evicts (count windows: the oldest one)."""
        self.index.insert(t.get(self.key), t.pos, t)
        if self.partition is None:
            fifo = self._fifo
        else:
            part = t.get(self.partition)
            fifo = self._parts.get(part)
            if fifo is None:
                fifo = self._parts[part] = deque()
        fifo.append(t)
        if not self.is_count or len(fifo) <= self.spec.size:
            return []
        old = fifo.popleft()
        self.index.delete(old.get(self.key), old.pos)
        return [old]

    def expire(self, now: int) -> list:
        """Time windows: remove and return the tuples with ``ts + T < now``, oldest first."""
        if not self.expires:
            return []
        bound = now - self.length
        fifo, out = self._fifo, []
        while fifo and fifo[0].ts < bound:
            old = fifo.popleft()
            self.index.delete(old.get(self.key), old.pos)
            out.append(old)
        return out

    def equal(self, value) -> list:
        """Tuples whose key equals ``value`` (oldest first)."""
        return self.index.equal(value)

    def range(self, lo=None, hi=None, lo_inclusive: bool = True, hi_inclusive: bool = True) -> list:
        """Tuples with key in ``lo .. hi`` (``None``: unbounded), in key order."""
        return self.index.range(lo, hi, lo_inclusive, hi_inclusive)

    @property
    def comparisons(self) -> int:
        return self.index.comparisons

    def __len__(self) -> int:
        return len(self.index)

    def __iter__(self) -> Iterator:
        """The window's tuples in arrival order."""
        if self.partition is None:
            return iter(self._fifo)
        return iter(sorted((t for f in self._parts.values() for t in f), key=lambda t: t.pos))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.spec} on {self.key!r}, {len(self)} tuples)"


class BTreeWindow(TreeWindow):
    """:class:`TreeWindow` over a :class:`BPlusTree` of node size ``node_size``."""

    def __init__(self, spec: WindowSpec, key: str, node_size: int = 100) -> None:
        super().__init__(spec, key, BPlusTree(node_size))
