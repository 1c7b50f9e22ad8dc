"""B+tree index and B+tree window (Kang et al. §4.2) against a sorted-list reference."""

from __future__ import annotations

from bisect import insort

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slidewise.model.batch import Tup
from slidewise.plan.query import WindowSpec
from slidewise.windows.btree import BPlusTree, BTreeWindow

# operations: ("ins", key) | ("del_oldest",) | ("del_any", index) | ("eq", key) | ("range", lo, hi, lo_inc, hi_inc)
keys = st.integers(-3, 12)
ops_st = st.lists(
    st.one_of(
        st.tuples(st.just("ins"), keys),
        st.tuples(st.just("del_oldest")),
        st.tuples(st.just("del_any"), st.integers(0, 1000)),
        st.tuples(st.just("eq"), keys),
        st.tuples(st.just("range"), st.one_of(st.none(), keys), st.one_of(st.none(), keys), st.booleans(), st.booleans()),
    ),
    max_size=200,
)


def reference_range(ref, lo, hi, lo_inc=True, hi_inc=True):
    out = []
    for k, _p, item in ref:
        if lo is not None and (k < lo or (k == lo and not lo_inc)):
            continue
        if hi is not None and (k > hi or (k == hi and not hi_inc)):
            continue
        out.append(item)
    return out


def run_against_reference(tree, ops):
    """Apply ``ops`` to ``tree`` and to a sorted list; compare every answer and the invariants."""
    ref: list[tuple] = []
    fifo: list[tuple] = []
    pos = 0
    for op in ops:
        if op[0] == "ins":
            tree.insert(op[1], pos, f"i{pos}")
            insort(ref, (op[1], pos, f"i{pos}"))
            fifo.append((op[1], pos))
            pos += 1
        elif op[0] in ("del_oldest", "del_any") and fifo:
            k, p = fifo.pop(0 if op[0] == "del_oldest" else op[1] % len(fifo))
            item = tree.delete(k, p)
            assert item == f"i{p}"
            ref.remove((k, p, item))
        elif op[0] == "eq":
            assert tree.equal(op[1]) == reference_range(ref, op[1], op[1])
        elif op[0] == "range":
            assert tree.range(*op[1:]) == reference_range(ref, *op[1:])
        tree.check()
        assert len(tree) == len(ref)
    assert list(tree.entries()) == ref
    assert list(tree) == [e[2] for e in ref]


@given(st.integers(3, 6), ops_st)
def test_btree_matches_sorted_list(order, ops):
    run_against_reference(BPlusTree(order), ops)


@given(st.integers(3, 5), st.lists(keys, min_size=1, max_size=300), st.integers(1, 40))
def test_btree_fifo_sliding(order, values, window):
    """The sliding pattern of a count window: insert, and past ``window`` delete the oldest."""
    tree, ref = BPlusTree(order), []
    for pos, k in enumerate(values):
        tree.insert(k, pos, pos)
        insort(ref, (k, pos, pos))
        if pos >= window:
            old = values[pos - window]
            assert tree.delete(old, pos - window) == pos - window
            ref.remove((old, pos - window, pos - window))
        tree.check()
    assert list(tree.entries()) == ref


def test_btree_height_and_node_size_follow_the_paper():
    tree = BPlusTree(order=100)
    for pos in range(5000):
        tree.insert(pos % 977, pos, pos)
    tree.check()
    # ceil(log_101(ceil(5000 / 100))) + 1 = 2 levels (Eq. 5's height) at most, 3 with half-full leaves
    assert tree.height in (2, 3)
    before = tree.comparisons
    assert tree.equal(5) == [p for p in range(5000) if p % 977 == 5]
    assert tree.comparisons > before


def test_btree_errors():
    tree = BPlusTree(3)
    tree.insert(1, 0, "a")
    with pytest.raises(KeyError):
        tree.insert(1, 0, "b")
    with pytest.raises(KeyError):
        tree.delete(1, 5)
    with pytest.raises(ValueError):
        BPlusTree(2)


def test_btree_string_keys():
    tree = BPlusTree(3)
    for pos, k in enumerate("banana"):
        tree.insert(k, pos, pos)
    assert tree.equal("a") == [1, 3, 5] and tree.range("b", "m") == [0]


# -- the window -------------------------------------------------------------------


def tup(pos, ts, a, b=0):
    return Tup(0, pos, ts, 1, {"a": a, "b": b})


def test_count_window_evicts_oldest():
    w = BTreeWindow(WindowSpec("rows", 3), "a", node_size=3)
    evicted = [w.insert(tup(p, p, p % 2)) for p in range(5)]
    assert [[t.pos for t in e] for e in evicted] == [[], [], [], [0], [1]]
    assert [t.pos for t in w] == [2, 3, 4]
    assert [t.pos for t in w.equal(0)] == [2, 4]
    assert [t.pos for t in w.range(None, None)] == [2, 4, 3]


def test_time_window_expires_prefix():
    w = BTreeWindow(WindowSpec("range", 10), "a", node_size=4)
    for p, ts in enumerate([1, 5, 12, 12, 30]):
        w.insert(tup(p, ts, ts % 3))
    assert [t.ts for t in w.expire(12)] == [1]
    assert [t.ts for t in w.expire(22)] == [5]
    assert len(w) == 3 and [t.ts for t in w.expire(41)] == [12, 12, 30]
    assert len(w) == 0 and w.index.size == 0


def test_partitioned_count_window():
    w = BTreeWindow(WindowSpec("rows", 1, partition_by="b"), "a", node_size=3)
    assert w.insert(tup(0, 0, 7, b=1)) == []
    assert w.insert(tup(1, 0, 7, b=2)) == []
    assert [t.pos for t in w.insert(tup(2, 1, 8, b=1))] == [0]
    assert [t.pos for t in w] == [1, 2]


@given(st.lists(st.tuples(st.integers(0, 3), keys), max_size=80), st.integers(0, 6))
def test_time_window_contents(rows, length):
    """After expire(now) the window holds exactly the tuples with ts >= now - T."""
    w = BTreeWindow(WindowSpec("range", length), "a", node_size=3)
    ts, seen = 0, []
    for pos, (gap, a) in enumerate(rows):
        ts += gap
        t = tup(pos, ts, a)
        w.insert(t)
        seen.append(t)
        w.expire(ts)
        live = [u for u in seen if u.ts >= ts - length]
        assert [u.pos for u in w] == [u.pos for u in live]
        for v in range(-3, 13):
            assert [u.pos for u in w.equal(v)] == [u.pos for u in live if u.get("a") == v]
