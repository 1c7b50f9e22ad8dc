"""Row stores and the calendar queue (Golab's thesis §3.5.2): insert, delete, expire, lookup."""

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slidewise.errors import PlanError
from slidewise.model.batch import NO_EXP
from slidewise.operators.state.calendar import CalendarQueue
from slidewise.operators.state.stores import CalendarStore, FifoStore, HashStore, ScanStore, make_store
from slidewise.plan.logical import Pattern


def row(k, ts, exp):
    return ((k, ts), ts, exp, 1)


STORES = [HashStore, ScanStore, FifoStore, lambda key=None: CalendarStore(key, partitions=3)]


@pytest.mark.parametrize("make", STORES, ids=["hash", "scan", "fifo", "calendar"])
def test_insert_lookup_delete(make):
    s = make(key=lambda v: v[0])
    for r in (row("a", 1, 11), row("b", 2, 12), row("a", 3, 13), row("a", 3, 13)):
        s.insert(r)
    assert len(s) == 4
    assert sorted(r[1] for r in s.lookup("a")) == [1, 3, 3]
    assert s.delete(("a", 3), 13) and len(s) == 3
    assert not s.delete(("a", 3), 99)  # wrong exp: nothing cancelled
    assert sorted(r[1] for r in s.lookup("a")) == [1, 3]
    assert s.delete(("b", 2), 12) and s.lookup("b") == ()
    assert Counter(r[1] for r in s) == Counter({1: 1, 3: 1})


@pytest.mark.parametrize("make", STORES[1:4], ids=["scan", "fifo", "calendar"])
def test_expire_by_time(make):
    s = make()
    for ts in range(10):
        s.insert(row("k", ts, ts + 5))
    s.delete(("k", 2), 7)  # premature deletion
    assert sorted(r[1] for r in s.expire(8)) == [0, 1]  # exp 5, 6 < 8; exp 7 was deleted
    assert s.next_expiry() is not None and s.next_expiry() <= 8
    assert sorted(r[1] for r in s.expire(12)) == [3, 4, 5, 6]
    assert len(s) == 3 and sorted(r[1] for r in s.lookup(("k", 7))) == [7]


def test_hash_store_never_expires_by_time():
    s = HashStore()
    s.insert(row("a", 0, 1))
    assert s.expire(100) == [] and len(s) == 1 and s.next_expiry() is None


def test_no_exp_rows_stay_and_delete_by_lookup():
    for s in (FifoStore(), CalendarStore(), ScanStore()):
        s.insert(row("a", 0, NO_EXP))
        s.insert(row("b", 0, 4))
        assert [r[0] for r in s.expire(10)] == [("b", 0)]
        assert len(s) == 1 and s.delete(("a", 0), NO_EXP) and len(s) == 0


def test_fifo_out_of_order_insert_and_tombstones():
    s = FifoStore(key=lambda v: v[0])
    for ts, exp in ((0, 10), (1, 20), (2, 15)):  # windows of different lengths mixed
        s.insert(row("k", ts, exp))
    assert s.delete(("k", 0), 10)
    assert s.expire(11) == []
    assert [r[2] for r in s.expire(16)] == [15]
    assert [r[2] for r in s.lookup("k")] == [20]


def test_make_store_by_strategy_and_pattern():
    assert isinstance(make_store("nt", Pattern.WK), HashStore)
    assert isinstance(make_store("direct", Pattern.WKS), ScanStore)
    assert isinstance(make_store("upa", Pattern.WKS), FifoStore)
    assert isinstance(make_store("upa", Pattern.MONO), FifoStore)
    s = make_store("upa", Pattern.WK, partitions=50)
    assert isinstance(s, CalendarStore) and s.calendar.partitions == 50
    with pytest.raises(PlanError, match="strategy"):
        make_store("eager", Pattern.WK)


def test_calendar_fig_3_6_partitions():
    # Fig. 3.6: 5 partitions of width 10, window 50, time 50; here partition i holds the
    # days [10d, 10d + 10) with d mod 5 = i, so exps 50-59 and 100-109 share partition 0.
    q = CalendarQueue(partitions=5, width=10)
    for exp in (51, 60, 61, 75, 88, 99, 100):
        q.insert(((exp,), exp - 50, exp, 1))
    q.expire(50)
    assert sum(q.partition_sizes()) == 7
    # at 61 the day 50-59 is popped whole; the boundary day 60-69 is scanned
    assert [r[2] for r in q.expire(61)] == [51, 60]
    assert q.partition_sizes() == [1, 1, 1, 1, 1]  # 100 | 61 | 75 | 88 | 99
    q.insert(((105,), 55, 105, 1))  # the next "year" reuses partition 0
    assert q.partition_sizes()[0] == 2
    assert [r[2] for r in q.expire(101)] == [61, 75, 88, 99, 100]
    assert [r[2] for r in q.expire(106)] == [105] and len(q) == 0


def test_calendar_far_future_rows_share_partitions():
    q = CalendarQueue(partitions=2, width=5)
    q.insert((("near",), 0, 3, 1))
    q.insert((("far",), 0, 23, 1))  # same partition (day 0 and day 4 -> 0)
    assert [r[0] for r in q.expire(10)] == [("near",)]
    assert q.next_expiry() == 23
    assert q.delete((("far",), 0, 23, 1)) and len(q) == 0


def test_calendar_rejects_bad_partitions():
    with pytest.raises(PlanError, match="partition"):
        CalendarQueue(partitions=0)


@given(st.lists(st.tuples(st.integers(0, 3), st.integers(1, 30), st.booleans()), max_size=40), st.sampled_from(["scan", "fifo", "calendar"]), st.integers(1, 7))
def test_stores_agree_with_a_list(ops, kind, partitions):
    """Random inserts (exp = ts + life), premature deletions and expirations, against a plain list."""
    s = {"scan": ScanStore, "fifo": FifoStore, "calendar": lambda key: CalendarStore(key, partitions=partitions)}[kind](key=lambda v: v[0])
    ref: list = []
    now = 0
    for k, life, delete in ops:
        now += 1
        expired = s.expire(now)
        due = [r for r in ref if r[2] < now]
        ref = [r for r in ref if r[2] >= now]
        assert Counter(expired) == Counter(due)
        if delete and ref:
            victim = ref[len(ref) // 2]
            assert s.delete(victim[0], victim[2])
            ref.remove(victim)
        r = ((k, now), now, now + life, 1)
        s.insert(r)
        ref.append(r)
        assert len(s) == len(ref)
        assert Counter(s.lookup(k)) == Counter(x for x in ref if x[0][0] == k)
        nxt = s.next_expiry()
        assert nxt is None or nxt <= min(x[2] for x in ref)
