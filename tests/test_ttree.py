"""T-tree index and T-tree window (Kang et al. §4.2; Lehman & Carey) against a sorted-list reference."""

from __future__ import annotations

from bisect import insort

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slidewise.model.batch import Tup
from slidewise.plan.query import WindowSpec
from slidewise.windows.ttree import TTree, TTreeWindow
from tests.test_btree import keys, ops_st, run_against_reference


@given(st.integers(2, 6), ops_st)
def test_ttree_matches_sorted_list(node_size, ops):
    run_against_reference(TTree(node_size), ops)


@given(st.integers(2, 5), st.integers(1, 5), ops_st)
def test_ttree_any_min_fill(node_size, min_fill, ops):
    run_against_reference(TTree(node_size, min_fill=min_fill), ops)


@given(st.integers(2, 5), st.lists(keys, min_size=1, max_size=300), st.integers(1, 40))
def test_ttree_fifo_sliding(node_size, values, window):
    tree, ref = TTree(node_size), []
    for pos, k in enumerate(values):
        tree.insert(k, pos, pos)
        insort(ref, (k, pos, pos))
        if pos >= window:
            old = values[pos - window]
            assert tree.delete(old, pos - window) == pos - window
            ref.remove((old, pos - window, pos - window))
        tree.check()
    assert list(tree.entries()) == ref


def test_ttree_height_is_logarithmic_in_nodes():
    tree = TTree(node_size=100)
    for pos in range(20000):
        tree.insert((pos * 7919) % 10007, pos, pos)
        if pos >= 5000:
            old = pos - 5000
            tree.delete((old * 7919) % 10007, old)
    tree.check()
    # 5000 entries in nodes of <= 100: >= 50 nodes; AVL height <= 1.44 log2(nodes + 2)
    assert 6 <= tree.height <= 12


def test_ttree_errors():
    tree = TTree(2)
    tree.insert(1, 0, "a")
    with pytest.raises(KeyError):
        tree.insert(1, 0, "b")
    with pytest.raises(KeyError):
        tree.delete(2, 0)
    with pytest.raises(ValueError):
        TTree(1)


def test_ttree_window_count_and_range():
    w = TTreeWindow(WindowSpec("rows", 4), "a", node_size=2)
    for p in range(10):
        w.insert(Tup(1, p, p, 1, {"a": p % 5}))
    assert [t.pos for t in w] == [6, 7, 8, 9]
    assert [t.pos for t in w.range(1, 3)] == [6, 7, 8]
    assert [t.pos for t in w.range(1, 3, lo_inclusive=False, hi_inclusive=False)] == [7]
    assert w.comparisons > 0
