"""hash, hash-lazy, hybrid and count joins against the reference semantics (tests/oracle.py)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from slidewise.errors import OptionError, PlanError
from slidewise.operators.joins import algorithms, get_algorithm
from slidewise.operators.joins.hash import hash_attributes, levels_for
from slidewise.plan.expr import Cmp, Lit
from slidewise.plan.query import Equality, WindowSpec
from tests.oracle import oracle
from tests.streams import build_tuples, col, common_key, join_cases, query_of, run_operator

FAMILY = ("hash", "hash-lazy", "hybrid", "count")

buckets_st = st.one_of(st.sampled_from([1, 2, 3, 4, 16]), st.lists(st.integers(1, 5), min_size=5, max_size=5))
chunk_st = st.integers(1, 10)


def make(name: str, query, buckets=None, **options):
    if isinstance(buckets, list):
        buckets = buckets[: query.n]
    if buckets is not None:
        options["buckets"] = buckets
    return get_algorithm(name)(query, **options)


def run(name: str, query, tuples, chunk: int = 7, **options):
    return run_operator(make(name, query, **options), tuples, chunk)


def test_family_is_registered():
    algos = algorithms()
    for name in FAMILY:
        assert name in algos and algos[name].summary


# -- eager: equal to the oracle ----------------------------------------------------


@given(join_cases(2, 5, predicates=("common",)), buckets_st, chunk_st)
def test_hash_common_key(case, buckets, chunk):
    query, tuples = case
    assert run("hash", query, tuples, chunk, buckets=buckets) == oracle(query, tuples)


@given(join_cases(2, 4, predicates=("different", "theta")), buckets_st, chunk_st)
def test_hash_other_predicates_or_plan_error(case, buckets, chunk):
    query, tuples = case
    try:
        op = make("hash", query, buckets)
    except PlanError as err:
        assert "hybrid" in err.hint
        return
    assert run_operator(op, tuples, chunk) == oracle(query, tuples)


@given(join_cases(2, 5), buckets_st, chunk_st)
def test_hybrid(case, buckets, chunk):
    query, tuples = case
    assert run("hybrid", query, tuples, chunk, buckets=buckets) == oracle(query, tuples)


@given(join_cases(2, 5, kinds=("rows",)), buckets_st, chunk_st)
def test_count(case, buckets, chunk):
    query, tuples = case
    assert run("count", query, tuples, chunk, buckets=buckets) == oracle(query, tuples)


@given(join_cases(2, 4, kinds=("rows",)), buckets_st, chunk_st, st.integers(1, 6))
def test_count_lazy_with_counters(case, buckets, chunk, slide):
    query, tuples = case
    got = run("count", query, tuples, chunk, buckets=buckets, slide=slide)
    assert got == oracle(query, tuples)


@given(join_cases(2, 4, predicates=("common",)), st.integers(1, 4), chunk_st, st.integers(1, 6))
def test_hash_lazy_expiration_is_eager_semantics(case, buckets, chunk, every):
    query, tuples = case
    got = run("hash", query, tuples, chunk, buckets=buckets, expire_every=every)
    assert got == oracle(query, tuples)


# -- lazy: restore and no-restore ---------------------------------------------------


@given(join_cases(2, 5, predicates=("common",), lazy=True), buckets_st, chunk_st, st.booleans())
def test_hash_lazy(case, buckets, chunk, restore):
    query, tuples = case
    assume(query.slide)  # all-count-window cases have no SLIDE
    query = dataclasses.replace(query, restore=restore)
    got = run("hash-lazy", query, tuples, chunk, buckets=buckets)
    assert got == oracle(query, tuples, restore=restore)


@given(join_cases(2, 5, lazy=True), buckets_st, chunk_st, st.booleans())
def test_hybrid_lazy(case, buckets, chunk, restore):
    query, tuples = case
    assume(query.slide)  # all-count-window cases have no SLIDE
    query = dataclasses.replace(query, restore=restore)
    got = run("hybrid", query, tuples, chunk, buckets=buckets)
    assert got == oracle(query, tuples, restore=restore)


# -- negative tuples for count windows -------------------------------------------------


@given(join_cases(2, 5, kinds=("rows",)), buckets_st, chunk_st)
def test_count_negatives(case, buckets, chunk):
    query, tuples = case
    got = run("count", query, tuples, chunk, buckets=buckets, negatives=True)
    assert got == oracle(query, tuples, negatives=True)


@given(join_cases(2, 5, predicates=("common",)), buckets_st, chunk_st)
def test_hash_negatives_mixed_windows(case, buckets, chunk):
    query, tuples = case
    got = run("hash", query, tuples, chunk, buckets=buckets, negatives=True)
    assert got == oracle(query, tuples, negatives=True)


# -- comparisons: b = 1 is the NLJ; more buckets, fewer comparisons ------------------


def comparisons(name: str, query, tuples, **options) -> int:
    op = make(name, query, **options)
    run_operator(op, tuples, 5)
    return op.comparisons


@given(join_cases(2, 4, predicates=("common",)))
def test_hash_with_one_bucket_compares_like_nlj(case):
    query, tuples = case
    nlj = comparisons("nlj", query, tuples)
    assert comparisons("hash", query, tuples, buckets=1) == nlj
    assert comparisons("hybrid", query, tuples, buckets=1) == nlj


@given(join_cases(2, 4))
def test_hybrid_with_one_bucket_compares_like_nlj(case):
    query, tuples = case
    assert comparisons("hybrid", query, tuples, buckets=1) == comparisons("nlj", query, tuples)


@given(join_cases(2, 4, predicates=("common",), max_len=20))
def test_more_buckets_fewer_comparisons(case):
    query, tuples = case
    counts = [comparisons("hash", query, tuples, buckets=b) for b in (1, 2, 4, 8)]
    assert counts == sorted(counts, reverse=True)


def test_buckets_cut_comparisons_on_distinct_keys():
    query = query_of([WindowSpec("range", 100)] * 2, common_key(2))
    tuples = build_tuples([(i % 2, i, i % 4, 0, 0) for i in range(40)])
    one, four = (comparisons("hash", query, tuples, buckets=b) for b in (1, 4))
    assert four * 4 <= one + 4 and four == sum(oracle(query, tuples).values())


# -- a worked example: Golab & Özsu §3.1, Tables 2 and 3 --------------------------------------


def test_paper_example_three_windows_of_100():
    # S1: ts 90, 100; S2: ts 150, 180; S3: ts 195, 205; all attr = 1; windows 100 long.
    # The S3 tuple at 195 joins only the S1 tuple at 100 (90 expired) and both S2 tuples;
    # the one at 205 joins nothing in S1 (both expired).
    query = query_of([WindowSpec("range", 100)] * 3, common_key(3))
    tuples = build_tuples([(0, 90, 1, 0, 0), (0, 100, 1, 0, 0), (1, 150, 1, 0, 0), (1, 180, 1, 0, 0), (2, 195, 1, 0, 0), (2, 205, 1, 0, 0)])
    expected = {((1, 2, 4), 195, 200, 1): 1, ((1, 3, 4), 195, 200, 1): 1}  # exp = 100 + 100
    assert run("hash", query, tuples, 1, buckets=2) == expected
    assert run("hybrid", query, tuples, 6) == expected
    lazy = query_of([WindowSpec("range", 100, slide=10)] * 3, common_key(3))
    assert run("hash-lazy", dataclasses.replace(lazy, restore=True), tuples) == expected


# -- check() rules -------------------------------------------------------------------


def test_check_rules():
    eager = query_of([WindowSpec("range", 5)] * 2, common_key(2))
    lazy = query_of([WindowSpec("range", 5, slide=2)] * 2, common_key(2))
    counts = query_of([WindowSpec("rows", 3)] * 2, common_key(2))
    theta = query_of([WindowSpec("range", 5)] * 3, [Equality(col(0, "a"), col(1, "a"))], [Cmp("<", col(1, "x"), col(2, "x"))])
    chain = query_of([WindowSpec("range", 5)] * 3, [Equality(col(0, "a"), col(1, "a")), Equality(col(1, "b"), col(2, "b"))])
    lazy_theta = dataclasses.replace(theta, streams=tuple(dataclasses.replace(s, window=WindowSpec("range", 5, slide=2)) for s in theta.streams))
    cases = [
        ("hash", lazy, "hash-lazy"),
        ("hash-lazy", eager, "hash"),
        ("count", eager, "hash"),
        ("hash", theta, "hybrid"),
        ("hash-lazy", lazy_theta, "hybrid"),
        ("hash", chain, "hybrid"),
    ]
    for name, query, hint in cases:
        with pytest.raises(PlanError) as err:
            get_algorithm(name).check(query)
        assert hint in err.value.hint
    for name, query in [("hash", eager), ("hash-lazy", lazy), ("hybrid", theta), ("hybrid", lazy), ("count", counts), ("hybrid", chain)]:
        get_algorithm(name).check(query)


def test_hash_attributes_per_window_and_join_order():
    # S1.a = S2.a, S2.a = S3.b: one class of equal columns, every window has one hash attribute
    query = query_of([WindowSpec("range", 5)] * 3, [Equality(col(0, "a"), col(1, "a")), Equality(col(1, "a"), col(2, "b"))])
    assert make("hash", query, order=[2, 1, 0]).keys == ["a", "a", "b"]
    # S1.a = S2.a, S2.b = S3.b: S2 is probed on a (arrivals on S1) and on b (arrivals on S3)
    chain = query_of([WindowSpec("range", 5)] * 3, [Equality(col(0, "a"), col(1, "a")), Equality(col(1, "b"), col(2, "b"))])
    with pytest.raises(PlanError, match="not equi-joined"):  # FROM order: S1 after S3
        make("hash", chain)
    with pytest.raises(PlanError, match="different attributes"):  # order S2, S1, S3
        hash_attributes(chain, levels_for(chain, [1, 0, 2]), all_hashed=True, algorithm="hash")
    hybrid = make("hybrid", chain)
    assert hybrid.bucket_counts() == [5, 5, 5] and hybrid.keys == ["a", "a", "b"]
    # a window with no equality at all is scanned whole by hybrid
    theta = query_of([WindowSpec("range", 5)] * 3, [Equality(col(0, "a"), col(1, "a"))], [Cmp("<", col(1, "x"), col(2, "x"))])
    assert make("hybrid", theta).bucket_counts() == [5, 5, 1]


def test_option_and_negative_errors():
    query = query_of([WindowSpec("range", 5)] * 2, common_key(2))
    lazy = query_of([WindowSpec("range", 5, slide=2)] * 2, common_key(2))
    for bad in (dict(buckets=0), dict(buckets=[2]), dict(buckets="8"), dict(expire_every=0), dict(bucket=4)):
        with pytest.raises(OptionError):
            make("hash", query, **bad)
    with pytest.raises(OptionError):
        make("count", query_of([WindowSpec("rows", 2)] * 2, common_key(2)), slide=0)
    with pytest.raises(PlanError, match="eager"):
        make("hash-lazy", lazy, negatives=True)


def test_single_stream_and_filters():
    query = query_of([WindowSpec("rows", 2)], filters=[Cmp(">", col(0, "x"), Lit(1))])
    tuples = build_tuples([(0, t, 0, 0, t) for t in range(5)])
    assert run("hybrid", query, tuples) == oracle(query, tuples)
    assert run("count", query, tuples, negatives=True) == oracle(query, tuples, negatives=True)


def test_state_is_bounded_by_the_windows():
    query = query_of([WindowSpec("range", 3), WindowSpec("rows", 2)], common_key(2))
    op = make("hash", query, buckets=4)
    tuples = build_tuples([(i % 2, i, i % 3, 0, 0) for i in range(50)])
    run_operator(op, tuples, 4)
    assert op.state_tuples() <= 2 + 2 and op.bucket_counts() == [4, 4]
