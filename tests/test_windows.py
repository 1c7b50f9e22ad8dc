"""Window buffers: FIFO time window (eager / lazy expiration), circular count
window (Golab & Özsu §3.6) and the partitioned count window."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slidewise.model.batch import Tup
from slidewise.plan.query import WindowSpec
from slidewise.windows.count import CountWindow, PartitionedCountWindow, count_window
from slidewise.windows.fifo import TimeWindow


def tup(pos, ts, k=0):
    return Tup(0, pos, ts, 1, {"k": k})


def ts_of(window):
    return [t.ts for t in window]


# -- time window -----------------------------------------------------------------


def test_time_window_eager_expiration_boundaries():
    # T = 10, at now = 15 the window holds 5 <= ts <= 15:
    #   ts:  1   5   9   15
    #        x  [5 ........15]
    w = TimeWindow(10)
    for i, ts in enumerate((1, 5, 9, 15)):
        w.insert(tup(i, ts))
    assert ts_of(w.expire(15)) == [1]
    assert ts_of(w) == [5, 9, 15] and len(w) == 3
    assert w.exp(w.oldest) == 15 and w.newest.ts == 15
    assert ts_of(w.expire(16)) == [5]
    assert w.expire(16) == []


def test_time_window_lazy_expiration_purges_only_at_multiples():
    w = TimeWindow(10, expire_every=5)
    for i, ts in enumerate((1, 2, 8)):
        w.insert(tup(i, ts))
    assert w.expire(10) == []  # purge at 10: nothing older than 0
    assert w.expire(14) == [] and len(w) == 3  # ts 1, 2 stale at 14, kept until 15
    assert ts_of(w.live(14)) == [8]  # readers skip stale tuples
    assert not w.is_live(w.oldest, 14) and w.is_live(w.newest, 14)
    assert ts_of(w.expire(15)) == [1, 2]  # 15 reached: purge
    assert w.expire(18) == []  # next purge at 20
    assert ts_of(w.expire(19, force=True)) == [8]  # force ignores the schedule
    assert len(w) == 0


def test_time_window_from_spec():
    assert TimeWindow.from_spec(WindowSpec("range", 7)).length == 7
    assert TimeWindow.from_spec(WindowSpec("now")).length == 0
    with pytest.raises(ValueError, match="count window"):
        TimeWindow.from_spec(WindowSpec("rows", 3))
    with pytest.raises(ValueError):
        TimeWindow(5, expire_every=0)


# -- count window -------------------------------------------------------------


def test_count_window_circular_overwrite():
    # N = 3: the 4th arrival overwrites the oldest slot
    #   slots: [a b c] -> [d b c] (head moves to b)
    w = CountWindow(3)
    assert [w.insert(x) for x in "abc"] == [None, None, None]
    assert w.insert("d") == "a"
    assert list(w) == ["b", "c", "d"] and len(w) == 3
    assert w._buf == ["d", "b", "c"]  # one overwrite, no shifting
    assert (w.oldest, w.newest, w[1], w[-1]) == ("b", "d", "c", "d")
    assert list(w.entries()) == [(1, "b"), (2, "c"), (3, "d")]
    with pytest.raises(IndexError):
        w[3]


def test_count_window_lazy_counters():
    # §3.6: without eager eviction the array grows; counters tell validity
    w = CountWindow(2)
    w.insert("a")
    for x in "bcd":
        w.append(x)
    assert list(w.entries()) == [(0, "a"), (1, "b"), (2, "c"), (3, "d")]
    assert w.valid_after(1, arrivals=3) and not w.valid_after(0, arrivals=3)
    assert w.trim() == ["a", "b"]
    assert list(w.entries()) == [(2, "c"), (3, "d")]
    assert w.insert("e") == "c" and list(w) == ["d", "e"]


def test_count_window_insert_after_growth_evicts_down():
    w = CountWindow(2)
    for x in "abcd":
        w.append(x)
    assert w.insert("e") == "c"  # a, b, c evicted; the last one is reported
    assert list(w) == ["d", "e"]


# -- partitioned count window ---------------------------------------------------


def test_partitioned_count_window():
    # [PARTITION BY k ROWS 2]
    #   k=0: p0 p2 p4 -> p0 evicted by p4
    #   k=1: p1 p3
    w = PartitionedCountWindow(2, "k")
    evicted = [w.insert(tup(p, p, k=p % 2)) for p in range(5)]
    assert [e.pos if e else None for e in evicted] == [None, None, None, None, 0]
    assert [t.pos for t in w] == [1, 2, 3, 4]  # arrival order across partitions
    assert [t.pos for t in w.partition(0)] == [2, 4]
    assert list(w.partition(7)) == []
    assert [(c, t.pos) for c, t in w.entries(0)] == [(1, 2), (2, 4)]
    assert (w.arrivals(0), w.arrivals(1), len(w)) == (3, 2, 4)
    assert sorted(w.partitions()) == [0, 1]


def test_partitioned_count_window_lazy_and_callable_key():
    w = PartitionedCountWindow(1, key=lambda t: t.ts % 2)
    for p in range(4):
        w.append(tup(p, p))
    assert len(w) == 4
    assert sorted(t.pos for t in w.trim()) == [0, 1]
    assert [t.pos for t in w] == [2, 3] and len(w) == 2


def test_count_window_factory():
    assert isinstance(count_window(WindowSpec("rows", 3)), CountWindow)
    part = count_window(WindowSpec("rows", 3, partition_by="k"))
    assert isinstance(part, PartitionedCountWindow) and part.size == 3
    with pytest.raises(ValueError, match="not a count window"):
        count_window(WindowSpec("range", 3))
    with pytest.raises(ValueError):
        CountWindow(0)


@given(st.lists(st.integers(0, 3), max_size=30), st.integers(0, 40), st.integers(0, 40))
def test_live_before_is_the_filtered_queue(gaps, at, before):
    """The binary-searched run equals filtering every item (ts >= at - T, pos < before)."""
    w = TimeWindow(5)
    ts = 0
    for pos, gap in enumerate(gaps):
        ts += gap
        w.insert(Tup(0, pos, ts, 1, {}))
    expect = [t.pos for t in w if t.ts >= at - 5 and t.pos < before]
    assert [t.pos for t in w.live_before(at, before)] == expect
