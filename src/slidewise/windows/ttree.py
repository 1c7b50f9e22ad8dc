"""A sliding window indexed by a T-tree on its join attribute.

Paper: Kang, Naughton & Viglas, *Evaluating Window Joins over Unbounded
Streams* (ICDE 2003) §4.2, "one-way T-tree index nested loops join"
(cost Eq. 6); the T-tree is Lehman & Carey's main-memory index (VLDB 1986,
the paper's reference [21]). A T-tree is an AVL tree whose nodes hold up to
``N`` sorted entries; a search compares the key with a node's minimum and
maximum (1.5 comparisons per node on average) to go left, go right, or stop
and binary-search inside the node. Arrival order is kept in a FIFO and the
tuple leaving the window is deleted by key (:class:`~slidewise.windows.btree.TreeWindow`).

Entries are ``(key, pos, item)`` ordered by ``(key, pos)`` (unique, so equal
join values are allowed). Operations (:class:`TTree`):

* insert: find the bounding node (``min <= x <= max``) and insert there; if it
  overflows, its minimum moves down as the new maximum of the left subtree
  (the greatest lower bound position). Without a bounding node, ``x`` joins the
  last node of the search path if it has room, else becomes a new leaf.
* delete: remove from the bounding node; an internal node that falls below
  ``min_fill`` entries takes back its greatest lower bound from the left
  subtree; an emptied leaf or half-leaf is unlinked; a half-leaf absorbs its
  leaf child when both fit in one node.
* AVL rotations after every structural change keep the height
  ``O(log2(W / N))``.
* range / equality probes: in-order walk pruned by each node's bounds.

Comparisons (``comparisons``): one per bound test on the search path, and a
binary search over ``m`` entries counts ``ceil(log2(m + 1))``.

Complexity: probe O(1.5 · log2(W/N) + log2 N + matches); update the same plus
O(N) list shifting and O(log) rotations. Memory: the window plus one FIFO
slot per tuple.

>>> t = TTree(node_size=2)
>>> for pos, key in enumerate([5, 1, 5, 3, 9, 7]):
...     t.insert(key, pos, f"t{pos}")
>>> t.equal(5), t.range(2, 7), t.height
(['t0', 't2'], ['t3', 't0', 't2', 't5'], 3)
>>> t.delete(5, 0), len(t), t.equal(5)
('t0', 5, ['t2'])
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from typing import Any

from slidewise.plan.query import WindowSpec
from slidewise.windows.btree import SortedTree, TreeWindow, range_bounds

__all__ = ["TTree", "TTreeWindow"]


class _Node:
    __slots__ = ("entries", "left", "right", "height")

    def __init__(self, entries: list) -> None:
        self.entries = entries
        self.left: _Node | None = None
        self.right: _Node | None = None
        self.height = 1


def _h(node: _Node | None) -> int:
    return node.height if node is not None else 0


def _update(node: _Node) -> None:
    node.height = 1 + max(_h(node.left), _h(node.right))


def _rotate_right(node: _Node) -> _Node:
    top = node.left
    node.left, top.right = top.right, node
    _update(node)
    _update(top)
    return top


def _rotate_left(node: _Node) -> _Node:
    top = node.right
    node.right, top.left = top.left, node
    _update(node)
    _update(top)
    return top


def _balance(node: _Node) -> _Node:
    """Restore the AVL condition at ``node`` (its subtrees are balanced)."""
    _update(node)
    bf = _h(node.left) - _h(node.right)
    if bf > 1:
        if _h(node.left.left) < _h(node.left.right):
            node.left = _rotate_left(node.left)
        return _rotate_right(node)
    if bf < -1:
        if _h(node.right.right) < _h(node.right.left):
            node.right = _rotate_right(node.right)
        return _rotate_left(node)
    return node


class TTree(SortedTree):
    """T-tree of ``(key, pos, item)`` entries, at most ``node_size`` per node.

    ``min_fill`` (default ``node_size - 2``, at least 1, as Lehman & Carey
    suggest) is the occupancy below which an internal node borrows.
    """

    def __init__(self, node_size: int = 100, min_fill: int | None = None) -> None:
        if node_size < 2:
            raise ValueError(f"T-tree node size must be >= 2, got {node_size}")
        super().__init__()
        self.node_size = node_size
        self.min_fill = max(1, node_size - 2) if min_fill is None else max(1, min(min_fill, node_size))
        self.root: _Node | None = None

    @property
    def height(self) -> int:
        return _h(self.root)

    # -- probes -----------------------------------------------------------
    def range(self, lo=None, hi=None, lo_inclusive: bool = True, hi_inclusive: bool = True) -> list:
        """Items with ``lo <= key <= hi`` (strict with ``*_inclusive=False``), in key order."""
        low, high = range_bounds(lo, hi, lo_inclusive, hi_inclusive)
        out: list = []
        self._range(self.root, low, high, out)
        return out

    def _range(self, node: _Node | None, low, high, out: list) -> None:
        """Lehman & Carey's search: descend by the node bounds to the nodes the range overlaps.

        A node wholly above (below) the range sends the walk left (right) at
        one or two comparisons; in an overlapping node, the left subtree is
        walked with the upper bound dropped (all its entries are below this
        node's minimum, which is within ``high``), the matching slice is taken
        by binary search, and the walk goes on right with the lower bound
        dropped.
        """
        while node is not None:
            entries = node.entries
            if high is not None:
                self.comparisons += 1
                if high < entries[0]:
                    node = node.left
                    continue
            below = True  # the range starts below this node: walk its left subtree
            if low is not None:
                self.comparisons += 1
                if low > entries[-1]:
                    node = node.right
                    continue
                self.comparisons += 1
                below = low < entries[0]
            if below:
                i = 0
                if node.left is not None:
                    self._range(node.left, low, None, out)
            else:
                self.comparisons += len(entries).bit_length()
                i = bisect_left(entries, low)
            j, last = len(entries), False  # last: the range ends in this node
            if high is not None:
                self.comparisons += 1
                if not high > entries[-1]:
                    self.comparisons += len(entries).bit_length()
                    j, last = bisect_right(entries, high), True
            if i < j:
                out.extend([e[2] for e in entries[i:j]])
            if last:
                return
            node, low = node.right, None

    def equal(self, key) -> list:
        """Items whose key equals ``key``, oldest (smallest ``pos``) first."""
        return self.range(key, key)

    def entries(self) -> Iterator[tuple]:
        """All ``(key, pos, item)`` entries in key order."""
        stack, node = [], self.root
        while stack or node is not None:
            while node is not None:
                stack.append(node)
                node = node.left
            node = stack.pop()
            yield from node.entries
            node = node.right

    def __iter__(self) -> Iterator:
        return (e[2] for e in self.entries())

    # -- insertion --------------------------------------------------------
    def insert(self, key, pos: int, item: Any = None) -> None:
        """Add an entry; ``(key, pos)`` must not be present (``KeyError`` otherwise)."""
        self.root = self._insert(self.root, (key, pos, item))
        self.size += 1

    def _insert(self, node: _Node | None, entry: tuple) -> _Node:
        if node is None:
            return _Node([entry])
        entries = node.entries
        key = entry[:2]
        self.comparisons += 1
        if key < entries[0][:2]:
            if node.left is None and len(entries) < self.node_size:
                entries.insert(0, entry)
                return node
            node.left = self._insert(node.left, entry)
            return _balance(node)
        self.comparisons += 1
        if key > entries[-1][:2]:
            if node.right is None and len(entries) < self.node_size:
                entries.append(entry)
                return node
            node.right = self._insert(node.right, entry)
            return _balance(node)
        self.comparisons += len(entries).bit_length()
        i = bisect_left(entries, key)
        if entries[i][:2] == key:
            raise KeyError(f"entry {entry[:2]} already in the T-tree")
        entries.insert(i, entry)
        if len(entries) <= self.node_size:
            return node
        node.left = self._push_max(node.left, entries.pop(0))
        return _balance(node)

    def _push_max(self, node: _Node | None, entry: tuple) -> _Node:
        """Insert ``entry``, greater than every entry of the subtree, as its new maximum."""
        if node is None:
            return _Node([entry])
        if node.right is not None:
            node.right = self._push_max(node.right, entry)
            return _balance(node)
        if len(node.entries) < self.node_size:
            node.entries.append(entry)
            return node
        node.right = _Node([entry])
        return _balance(node)

    # -- deletion ---------------------------------------------------------
    def delete(self, key, pos: int) -> Any:
        """Remove the entry ``(key, pos)`` and return its item (``KeyError`` if absent)."""
        found: list = []
        self.root = self._delete(self.root, (key, pos), found)
        self.size -= 1
        return found[0]

    def _delete(self, node: _Node | None, probe: tuple, found: list) -> _Node | None:
        if node is None:
            raise KeyError(f"entry {probe} not in the T-tree")
        entries = node.entries
        self.comparisons += 1
        if probe < entries[0][:2]:
            node.left = self._delete(node.left, probe, found)
            return _balance(node)
        self.comparisons += 1
        if probe > entries[-1][:2]:
            node.right = self._delete(node.right, probe, found)
            return _balance(node)
        self.comparisons += len(entries).bit_length()
        i = bisect_left(entries, probe)
        if i == len(entries) or entries[i][:2] != probe:
            raise KeyError(f"entry {probe} not in the T-tree")
        found.append(entries.pop(i)[2])
        if node.left is not None and node.right is not None:
            if len(entries) < self.min_fill:  # borrow the greatest lower bound
                node.left, glb = self._pop_max(node.left)
                entries.insert(0, glb)
            return _balance(node)
        if not entries:
            return node.left if node.left is not None else node.right
        child = node.left if node.left is not None else node.right
        if child is not None and child.left is None and child.right is None and len(entries) + len(child.entries) <= self.node_size:
            node.entries = child.entries + entries if child is node.left else entries + child.entries
            node.left = node.right = None
        return _balance(node)

    def _pop_max(self, node: _Node) -> tuple[_Node | None, tuple]:
        """Remove and return the greatest entry of the subtree."""
        if node.right is not None:
            node.right, top = self._pop_max(node.right)
            return _balance(node), top
        top = node.entries.pop()
        if not node.entries:
            return node.left, top
        return node, top

    # -- invariants (tests) ---------------------------------------------------
    def check(self) -> None:
        """Assert the T-tree invariants (AVL balance, heights, global order, occupancy)."""

        def walk(node: _Node | None) -> int:
            if node is None:
                return 0
            assert 1 <= len(node.entries) <= self.node_size
            hl, hr = walk(node.left), walk(node.right)
            assert abs(hl - hr) <= 1 and node.height == 1 + max(hl, hr)
            return node.height

        walk(self.root)
        keys = [e[:2] for e in self.entries()]
        assert keys == sorted(keys) and len(set(keys)) == len(keys) == self.size


class TTreeWindow(TreeWindow):
    """:class:`~slidewise.windows.btree.TreeWindow` over a :class:`TTree` of node size ``node_size``."""

    def __init__(self, spec: WindowSpec, key: str, node_size: int = 100) -> None:
        super().__init__(spec, key, TTree(node_size))
