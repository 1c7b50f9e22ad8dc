"""Hash-bucketed windows: bucket FIFOs / circular buffers, eager and lazy expiration."""

from __future__ import annotations

from collections import defaultdict

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slidewise.model.batch import Tup
from slidewise.plan.query import WindowSpec
from slidewise.windows.hashed import CircularBucket, HashWindow, bucket_of


def tup(pos: int, ts: int, a: int = 0, b: int = 0) -> Tup:
    return Tup(0, pos, ts, 1, {"a": a, "b": b})


def positions(items) -> list[int]:
    return [t.pos for t in items]


# -- hashing and the circular bucket --------------------------------------------


def test_bucket_of_is_modular_and_consistent_across_numeric_types():
    assert [bucket_of(v, 4) for v in (0, 1, 5, -1, 7.0)] == [0, 1, 1, 3, 3]
    assert bucket_of("x", 1) == 0
    assert bucket_of("x", 8) == bucket_of("x", 8)


def test_circular_bucket_wraps_around_without_growing():
    b = CircularBucket(3)
    for x in range(3):
        b.append(x)
    for x in range(3, 10):  # steady state: one out, one in
        assert b.popleft() == x - 3
        b.append(x)
    assert list(b) == [7, 8, 9] and b.capacity == 3


def test_circular_bucket_grows_and_removes_inside():
    b = CircularBucket(2)
    items = [object() for _ in range(5)]
    for it in items:
        b.append(it)
    assert b.capacity == 8 and len(b) == 5
    b.remove(items[2])  # inside: later items shift left
    b.remove(items[0])  # head: O(1)
    assert list(b) == [items[1], items[3], items[4]]
    with pytest.raises(ValueError):
        b.remove(items[0])
    for _ in range(3):
        b.popleft()
    with pytest.raises(IndexError):
        b.popleft()


# -- time windows: one FIFO per bucket ---------------------------------------------


def test_time_buckets_are_fifos_and_expire_eagerly():
    #   ts:  1    2    4    6    9         window [RANGE 5], b = 2 on a
    #   a:   0    1    2    3    4         bucket 0: ts 1, 4, 9   bucket 1: ts 2, 6
    w = HashWindow(WindowSpec("range", 5), buckets=2, key="a")
    for pos, (ts, a) in enumerate([(1, 0), (2, 1), (4, 2), (6, 3), (9, 4)]):
        assert w.insert(tup(pos, ts, a)) == []
    assert positions(w.probe(0)) == [0, 2, 4] and positions(w.probe(7)) == [1, 3]
    assert w.bucket_sizes() == [3, 2]
    # at τ = 9 the window holds 4 <= ts <= 9: ts 1 and 2 expire, from both buckets
    assert positions(w.expire(9)) == [0, 1]
    assert positions(w.probe(0)) == [2, 4] and positions(w.probe(1)) == [3]
    assert len(w) == 3 and positions(w) == [2, 3, 4]


def test_time_window_lazy_expiration_purges_at_multiples_and_probes_check():
    w = HashWindow(WindowSpec("range", 2), buckets=2, key="a", expire_every=5)
    assert w.expire(1) == []  # purges (nothing yet), next purge at 5
    for pos, ts in enumerate([0, 1, 2, 3]):
        w.insert(tup(pos, ts, pos))
    assert w.expire(4) == []  # before 5: no purge
    assert len(w) == 4  # stale tuples stay ...
    origin = tup(9, 4)
    assert [w.contains(t, origin) for t in w] == [False, False, True, True]  # ... but are skipped
    assert positions(w.expire(5)) == [0, 1, 2]
    assert positions(w) == [3]


def test_time_window_force_expiration_and_exp():
    w = HashWindow(WindowSpec("range", 3), expire_every=100)
    w.insert(tup(0, 1))
    assert w.exp(tup(0, 1)) == 4
    assert positions(w.expire(5, force=True)) == [0]


# -- count windows: circular buckets ------------------------------------------------


def test_count_window_overwrites_oldest_at_its_bucket_head():
    #   arrivals (a):  0  1  0  0     [ROWS 3], b = 2 on a
    #   4th arrival evicts the 1st, the head of bucket 0
    w = HashWindow(WindowSpec("rows", 3), buckets=2, key="a")
    evicted = [positions(w.insert(tup(p, p, a))) for p, a in enumerate([0, 1, 0, 0])]
    assert evicted == [[], [], [], [0]]
    assert positions(w.probe(0)) == [2, 3] and positions(w.probe(1)) == [1]
    assert w.cnt(tup(3, 3)) == 4


def test_partitioned_count_window_evicts_inside_a_bucket():
    # [PARTITION BY b ROWS 1], one bucket: partition 1's arrival evicts only partition 1's tuple
    w = HashWindow(WindowSpec("rows", 1, partition_by="b"), buckets=1, key="a")
    w.insert(tup(0, 0, b=1))
    w.insert(tup(1, 0, b=2))
    assert positions(w.insert(tup(2, 0, b=1))) == [0]
    assert positions(w.scan()) == [1, 2]
    assert positions(w.insert(tup(3, 0, b=2))) == [1]
    assert len(w) == 2


def test_count_window_retained_for_lazy_evaluation_uses_counters():
    # [ROWS 2] under lazy evaluation: nothing is evicted on arrival; replaying
    # arrival p makes tuples with cnt <= cnt(p) - 2 invisible and evicts them.
    w = HashWindow(WindowSpec("rows", 2), buckets=2, key="a", retain=True)
    arrivals = [tup(p, 0, a=p) for p in range(4)]
    for t in arrivals:
        assert w.insert(t) == []
    assert len(w) == 4
    w.advance(arrivals[0])
    w.advance(arrivals[1])
    later = tup(10, 0)
    # replayed up to the 2nd arrival: the 1st and 2nd are in, the 3rd/4th not yet arrived for
    # origins before them, but in for an origin after them
    assert [w.contains(t, later) for t in arrivals] == [True, True, True, True]
    assert [w.contains(t, tup(2, 0)) for t in arrivals] == [True, True, False, False]
    assert positions(w.advance(arrivals[2])) == [0]
    assert [w.contains(t, tup(3, 0)) for t in arrivals[1:]] == [True, True, False]
    assert positions(w.advance(arrivals[3])) == [1]
    assert positions(w) == [2, 3]
    assert w.expire(100) == []  # count windows do not expire by time


@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 5), st.integers(0, 2)), max_size=40), st.integers(1, 4), st.integers(1, 5), st.booleans())
def test_count_buckets_hold_exactly_the_last_n_per_partition(rows, size, buckets, partitioned):
    spec = WindowSpec("rows", size, partition_by="b" if partitioned else None)
    w = HashWindow(spec, buckets=buckets, key="a")
    history: dict[int, list[Tup]] = defaultdict(list)
    for pos, (dts, a, b) in enumerate(rows):
        t = tup(pos, dts, a, b)
        w.insert(t)
        history[b if partitioned else 0].append(t)
    expected = sorted(t.pos for ts in history.values() for t in ts[-size:])
    assert positions(w) == expected
    for t in w.scan():
        assert t in list(w.probe(t.get("a")))
    assert sum(w.bucket_sizes()) == len(w)


@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 5)), max_size=40), st.integers(0, 6), st.integers(1, 5))
def test_time_buckets_hold_exactly_the_window(rows, length, buckets):
    w = HashWindow(WindowSpec("range", length), buckets=buckets, key="a")
    ts, inserted = 0, []
    for pos, (dts, a) in enumerate(rows):
        ts += dts
        w.expire(ts)
        t = tup(pos, ts, a)
        w.insert(t)
        inserted.append(t)
        assert positions(w) == [u.pos for u in inserted if u.ts >= ts - length]
        assert all(list(w.probe(b)) == sorted(w.probe(b), key=lambda u: u.pos) for b in range(buckets))


def test_rejects_bad_arguments():
    with pytest.raises(ValueError):
        HashWindow(WindowSpec("range", 5), buckets=0, key="a")
    with pytest.raises(ValueError):
        HashWindow(WindowSpec("range", 5), expire_every=0)
    assert HashWindow(WindowSpec("range", 5), buckets=8).b == 1  # no key: one bucket
