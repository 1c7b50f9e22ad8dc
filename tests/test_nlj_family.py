"""The faithful NLJ operators (Golab & Özsu §3, thesis Alg. 2–5) against the oracle: the specifics.

tests/test_join_registry.py holds every registered operator to the oracle with
default options; here: ``lazy`` (and ``general-lazy`` without restore) omit
exactly the short-lived results, ``lazy-restore`` and ``general-lazy`` with
restore equal the oracle, options (``expire_every``, per-origin ``orders``)
and the plan checks.
"""

from __future__ import annotations

import dataclasses
import random

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from slidewise.errors import OptionError, PlanError
from slidewise.operators.joins import algorithms, get_algorithm
from slidewise.plan.query import WindowSpec
from tests.oracle import oracle, short_lived
from tests.streams import build_tuples, common_key, dense_cases, join_cases, query_of, run_operator

EAGER = ("naive", "nlj", "nlj-lazy-expiration")
LAZY = ("lazy", "lazy-restore", "general-lazy")
chunk_sizes = st.integers(1, 10)


def cases(**kwargs):
    return st.one_of(join_cases(**kwargs), dense_cases(**kwargs))


def make(name, query, **options):
    return get_algorithm(name)(query, **options)


def with_restore(query, restore: bool):
    return dataclasses.replace(query, restore=restore)


def test_all_registered():
    assert set(EAGER + LAZY) <= set(algorithms())


# -- eager -------------------------------------------------------------------


@given(case=cases(n_min=2, n_max=4), size=chunk_sizes, every=st.integers(1, 9))
def test_lazy_expiration_interval_does_not_matter(case, size, every):
    query, tuples = case
    op = make("nlj-lazy-expiration", query, expire_every=every)
    assert run_operator(op, tuples, size) == oracle(query, tuples)


# -- lazy --------------------------------------------------------------------


@given(case=cases(n_min=2, n_max=5, kinds=("range",), lazy=True), size=chunk_sizes, data=st.data())
def test_lazy_is_no_restore(case, size, data):
    query, tuples = case
    order = list(data.draw(st.permutations(range(query.n))))
    got = run_operator(make("lazy", query, order=order), tuples, size)
    assert got == oracle(query, tuples, restore=False)
    assert oracle(query, tuples) - got == short_lived(query, tuples)


@given(case=cases(n_min=2, n_max=5, kinds=("range",), lazy=True), size=chunk_sizes, data=st.data())
def test_lazy_restore_equals_oracle(case, size, data):
    query, tuples = case
    order = list(data.draw(st.permutations(range(query.n))))
    got = run_operator(make("lazy-restore", query, order=order), tuples, size)
    assert got == oracle(query, tuples)


@given(case=cases(n_min=2, n_max=5, kinds=("range",), lazy=True), size=chunk_sizes, restore=st.booleans(), data=st.data())
def test_general_lazy_any_orders(case, size, restore, data):
    query, tuples = case
    query = with_restore(query, restore)
    orders = {i: list(data.draw(st.permutations(range(query.n)))) for i in range(query.n)}
    got = run_operator(make("general-lazy", query, orders=orders), tuples, size)
    assert got == oracle(query, tuples, restore=restore)
    if not restore:
        assert oracle(query, tuples) - got == short_lived(query, tuples)


@pytest.mark.parametrize("name", LAZY)
@given(case=cases(n_min=2, n_max=4, lazy=True), size=chunk_sizes, data=st.data())
def test_lazy_with_count_windows(name, case, size, data):
    """Lazy operators keep count windows with §3.6 counters (mixed with SLIDE time windows)."""
    query, tuples = case
    assume(query.slide is not None)
    restore = name == "lazy-restore" or (name == "general-lazy" and data.draw(st.booleans()))
    query = with_restore(query, restore) if name == "general-lazy" else query
    order = list(data.draw(st.permutations(range(query.n))))
    options = {"orders": {0: order}} if name == "general-lazy" else {"order": order}
    got = run_operator(make(name, query, **options), tuples, size)
    assert got == oracle(query, tuples, restore=restore)


def test_naive_lazy_skips_timestamp_checks():
    """Golab & Özsu §3.1: the lazy naive NLJ joins a new tuple with partners already expired."""
    query = query_of([WindowSpec("range", 2, slide=10)] * 2, common_key(2))
    tuples = build_tuples([(0, 1, 1, 0, 0), (1, 5, 1, 0, 0)])  # S2 arrives 4 > T after S1
    assert oracle(query, tuples) == {}
    assert len(run_operator(make("naive", query), tuples, 1)) == 1
    for name in LAZY:
        assert run_operator(make(name, query), tuples, 1) == {}


# -- plan checks ---------------------------------------------------------------


def test_check_rules():
    eager = query_of([WindowSpec("range", 5)] * 2, common_key(2))
    lazy = query_of([WindowSpec("range", 5, slide=2)] * 2, common_key(2))
    mixed = query_of([WindowSpec("range", 5, slide=2), WindowSpec("rows", 2)], common_key(2))
    for name in ("nlj", "nlj-lazy-expiration"):
        with pytest.raises(PlanError, match="SLIDE"):
            make(name, lazy)
    for name in LAZY:
        with pytest.raises(PlanError, match="SLIDE"):
            make(name, eager)
    with pytest.raises(PlanError, match="lazy-restore"):
        make("lazy", with_restore(lazy, True))
    with pytest.raises(PlanError, match="time windows"):
        make("naive", mixed)
    with pytest.raises(PlanError, match="negative"):
        make("nlj", eager, negatives=True)
    with pytest.raises(PlanError, match="permutation"):
        make("general-lazy", lazy, orders={0: [0, 0]})
    make("general-lazy", lazy, orders={"S2": ["S1", "S2"]})
    with pytest.raises(OptionError, match="buckets"):
        make("nlj", eager, buckets=4)
    with pytest.raises(OptionError, match="expire_every"):
        make("nlj-lazy-expiration", eager, expire_every=0)


# -- comparisons ---------------------------------------------------------------


def test_comparisons_common_attribute():
    """Common attribute, global order S1,S2,S3: one comparison per scanned tuple per loop."""
    query = query_of([WindowSpec("range", 100)] * 3, common_key(3))
    # S1: a=1,1 ; S2: a=1,2 ; then one S3 tuple with a=1
    rows = [(0, 1, 1, 0, 0), (0, 2, 1, 0, 0), (1, 3, 1, 0, 0), (1, 4, 2, 0, 0), (2, 5, 1, 0, 0)]
    tuples = build_tuples(rows)
    nlj = make("nlj", query)
    run_operator(nlj, tuples, 1)
    # arrivals: S1 (nothing to scan), S1 (0), S2: scans S1 (2), matches 2 -> S3 empty;
    # S2 a=2: scans S1 (2); S3: scans S1 (2 comps), 2 matches each scan S2 (2 comps) -> 6
    assert nlj.comparisons == 0 + 0 + 2 + 2 + 6
    naive = make("naive", query)
    run_operator(naive, tuples, 1)
    # naive on the S3 arrival: for each u in S1 (2): join S2 (2) with {k}: 2 comps, 1 match,
    # then probe u: 1 comp -> 2 * 3 = 6; on S2 arrivals: S3 empty -> 0
    assert naive.comparisons == 6
    assert run_operator(make("nlj", query), tuples, 3) == oracle(query, tuples)


def test_lazy_groups_new_tuples_by_value():
    """Alg. 4 probes once per group of equal new values, not once per new tuple."""
    query = query_of([WindowSpec("range", 100, slide=10)] * 2, common_key(2))
    rows = [(0, 1, 1, 0, 0), (0, 2, 2, 0, 0)] + [(1, 11, 1, 0, 0)] * 5
    tuples = build_tuples(rows)
    op = make("lazy", query)
    assert run_operator(op, tuples, 3) == oracle(query, tuples, restore=False)
    assert op.comparisons == 2  # one group (a=1) scans S1 once; S1's tuples had no partners


# -- state -------------------------------------------------------------------


def _long_stream(n_streams, length, seed=7):
    rng = random.Random(seed)
    rows, ts = [], 0
    for _ in range(length):
        ts += rng.choice([0, 1, 1, 2])
        rows.append((rng.randrange(n_streams), ts, rng.randrange(3), rng.randrange(3), 0))
    return build_tuples(rows)


@pytest.mark.parametrize("name", EAGER + LAZY)
def test_state_is_bounded(name):
    slide = 5 if name in LAZY else None
    windows = [
        WindowSpec("range", 20, slide=slide),
        WindowSpec("range", 10, slide=slide),
        WindowSpec("rows", 4) if slide is None else WindowSpec("range", 5, slide=slide),
    ]
    query = query_of(windows, common_key(3))
    tuples = _long_stream(3, 600)
    op = make(name, query)
    run_operator(op, tuples, 8)
    now = tuples[-1].ts
    inside = sum(1 for t in tuples if not windows[t.stream].is_count and t.ts >= now - windows[t.stream].length)
    inside += sum(min(4, sum(1 for t in tuples if t.stream == i)) for i, w in enumerate(windows) if w.is_count)
    if name in ("naive", "nlj"):  # eager expiration: exactly the windows
        assert op.state_tuples() == inside
    elif name == "nlj-lazy-expiration":  # stale tuples of at most one purge interval
        assert inside <= op.state_tuples() <= inside + 3 * 5
    else:  # lazy evaluation purges at the last evaluation instant (>= last ts)
        assert 0 < op.state_tuples() <= inside
