"""Binary join with per-direction structures (Kang et al. §4.2) against the oracle."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slidewise.errors import OptionError, PlanError
from slidewise.operators.joins import algorithms, get_algorithm
from slidewise.operators.joins.binary import BinaryJoin, probe_key
from slidewise.optimizer.binary import PROFILE_ENV
from slidewise.optimizer.planner import choose as plan_query
from slidewise.optimizer.structures import cost_based_structures
from slidewise.plan.expr import BinOp, Cmp, Func, Lit
from slidewise.plan.query import WindowSpec
from tests.oracle import oracle
from tests.streams import build_tuples, col, common_key, join_cases, query_of, raw_streams, run_operator, windows_st

COMBINATIONS = ["".join(p) for p in itertools.product("NHBT", repeat=2)]
chunk_st = st.integers(1, 9)
node_st = st.integers(3, 5)
buckets_st = st.integers(1, 4)


def test_registered():
    assert algorithms()["binary"] is BinaryJoin
    assert BinaryJoin.summary


@pytest.mark.parametrize("directions", COMBINATIONS)
@given(case=join_cases(2, 2, kinds=("range", "rows")), chunk=chunk_st, node=node_st, buckets=buckets_st)
def test_all_combinations_equal_oracle(directions, case, chunk, node, buckets):
    """Every one of the 16 combinations, time and count windows, equi-join plus filters."""
    query, tuples = case
    op = BinaryJoin(query, directions=directions, node_size=node, buckets=buckets)
    assert run_operator(op, tuples, chunk) == oracle(query, tuples)


@st.composite
def theta_cases(draw):
    """Two streams joined only by a comparison or a band on ``x`` (no equality)."""
    windows = [draw(windows_st(("range", "rows"))), draw(windows_st(("range", "rows")))]
    c = draw(st.integers(0, 3))
    forms = [
        Cmp("<=", col(0, "x"), BinOp("+", col(1, "x"), Lit(c))),
        Cmp(">", col(1, "x"), col(0, "x")),
        Cmp("<=", Func("abs", (BinOp("-", col(0, "x"), col(1, "x")),)), Lit(c)),
        Cmp("<", Func("abs", (BinOp("-", col(1, "x"), col(0, "x")),)), Lit(c)),
        Cmp("=", col(0, "x"), BinOp("-", col(1, "x"), Lit(c))),
    ]
    filters = draw(st.lists(st.sampled_from(forms), min_size=1, max_size=2))
    if draw(st.booleans()):
        filters.append(Cmp(">=", col(1, "b"), Lit(1)))
    return query_of(windows, (), filters), build_tuples(draw(raw_streams(2)))


@pytest.mark.parametrize("directions", ["".join(p) for p in itertools.product("NBT", repeat=2)])
@given(case=theta_cases(), chunk=chunk_st, node=node_st)
def test_range_probes_equal_oracle(directions, case, chunk, node):
    query, tuples = case
    op = BinaryJoin(query, directions=directions, node_size=node)
    assert all(k.kind == "range" for k in op.keys)
    assert run_operator(op, tuples, chunk) == oracle(query, tuples)


@given(join_cases(2, 2, kinds=("range", "rows")), chunk_st)
def test_nested_loops_counts_like_nlj(case, chunk):
    """NN makes exactly the comparisons of the eager NLJ (Golab & Özsu §3.2) on two streams."""
    query, tuples = case
    nn, nlj = BinaryJoin(query, directions="NN"), get_algorithm("nlj")(query)
    assert run_operator(nn, tuples, chunk) == run_operator(nlj, tuples, chunk)
    assert nn.comparisons == nlj.comparisons


@given(join_cases(2, 2, kinds=("range", "rows"), predicates=("common",)), chunk_st, buckets_st)
def test_hash_counts_like_hash(case, chunk, buckets):
    query, tuples = case
    hh, hj = BinaryJoin(query, directions="HH", buckets=buckets), get_algorithm("hash")(query, buckets=buckets)
    assert run_operator(hh, tuples, chunk) == run_operator(hj, tuples, chunk)
    assert hh.comparisons == hj.comparisons


def test_direction_stats_count_probes_and_updates():
    query = query_of([WindowSpec("rows", 3), WindowSpec("rows", 2)], common_key(2))
    raw = [(i % 2, i, i % 3, 0, 0) for i in range(20)]  # 10 arrivals per stream
    op = BinaryJoin(query, directions="TH", node_size=3)
    run_operator(op, build_tuples(raw), 4)
    s1, s2 = op.direction_stats()
    assert (s1["direction"], s1["method"], s1["window"]) == ("S2->S1", "T", "S1")
    assert (s2["direction"], s2["method"], s2["window"]) == ("S1->S2", "H", "S2")
    assert s1["probes"] == 10 and s2["probes"] == 10  # each arrival probes the other window
    assert s1["inserts"] == 10 and s1["invalidations"] == 7  # physical window: one out per arrival once full
    assert s2["inserts"] == 10 and s2["invalidations"] == 8
    assert s1["comparisons"] + s2["comparisons"] == op.comparisons > 0


def test_time_window_invalidations():
    query = query_of([WindowSpec("range", 2), WindowSpec("range", 2)], common_key(2))
    raw = [(i % 2, i, 0, 0, 0) for i in range(10)]
    op = BinaryJoin(query, directions="BN", node_size=3)
    got = run_operator(op, build_tuples(raw), 3)
    assert got == oracle(query, build_tuples(raw))
    s1, s2 = op.direction_stats()
    assert s1["inserts"] == s2["inserts"] == 5
    assert s1["invalidations"] + s2["invalidations"] == 10 - op.state_tuples()


def test_hash_needs_equality_and_trees_need_a_key():
    band = query_of([WindowSpec("rows", 3)] * 2, (), [Cmp("<", col(0, "x"), col(1, "x"))])
    with pytest.raises(PlanError) as err:
        BinaryJoin(band, directions="HN")
    assert "N, B, T" in err.value.hint
    cross = query_of([WindowSpec("rows", 3)] * 2, (), [Cmp(">", col(0, "x"), Lit(1))])
    with pytest.raises(PlanError):
        BinaryJoin(cross, directions="NT")
    assert BinaryJoin(cross).directions == "NN"  # no key at all: only scans


def test_bad_options():
    q = query_of([WindowSpec("rows", 3)] * 2, common_key(2))
    for bad in (
        {"directions": "HX"},
        {"directions": "H"},
        {"node_size": 2},
        {"rates": (1, 0)},
        {"rates": "fast"},
        {"buckets": [1]},
        {"bucket_size": 0},
        {"shuffle": True},
    ):
        with pytest.raises(OptionError):
            BinaryJoin(q, **bad)


def test_check_rejects_other_queries():
    with pytest.raises(PlanError):
        BinaryJoin.check(query_of([WindowSpec("rows", 3)] * 3, common_key(3)))
    with pytest.raises(PlanError):
        BinaryJoin.check(query_of([WindowSpec("range", 3, slide=2)] * 2, common_key(2)))


def test_probe_key_shapes():
    q = query_of([WindowSpec("rows", 3)] * 2, (), [Cmp("<=", Func("abs", (BinOp("-", col(1, "x"), col(0, "x")),)), Lit(2)), Cmp(">", col(0, "x"), Lit(1))])
    key = probe_key(q, 1, 0)
    assert key.kind == "range" and key.attr == "x" and len(key.lows) == len(key.highs) == 1
    assert probe_key(q, 0, 1).kind == "range"  # x > 1 and the band bound S1.x too
    assert probe_key(query_of([WindowSpec("rows", 3)] * 2, common_key(2)), 0, 1).kind == "eq"


def test_cost_based_default_uses_profile_or_paper_weights(monkeypatch, tmp_path):
    """Without ``directions`` the planner's cost model picks per window (paper weights without a profile)."""
    monkeypatch.setenv(PROFILE_ENV, str(tmp_path / "absent.json"))
    q = query_of([WindowSpec("rows", 9500), WindowSpec("rows", 500)], common_key(2))
    directions, why = cost_based_structures(q, {"rates": (2, 998)})  # Table 3, first workload
    assert directions == "BN" and "Eq. 7" in why
    assert plan_query(q, "binary", rates=(2, 998)).build().directions == "BN"
    band = query_of([WindowSpec("rows", 9500), WindowSpec("rows", 500)], (), [Cmp("<", col(0, "x"), col(1, "x"))])
    assert cost_based_structures(band, {"rates": (2, 998)})[0][0] in "BT"
    assert BinaryJoin(q).directions == BinaryJoin(band).directions == "NN"  # built directly: scans


@st.composite
def other_windows_cases(draw):
    """[NOW], [UNBOUNDED] and partitioned count windows on either side."""
    kinds = [WindowSpec("now"), WindowSpec("unbounded"), WindowSpec("rows", 2, partition_by="b"), WindowSpec("range", 3)]
    windows = [draw(st.sampled_from(kinds)), draw(st.sampled_from(kinds))]
    return query_of(windows, common_key(2)), build_tuples(draw(raw_streams(2)))


@pytest.mark.parametrize("directions", ["NH", "HB", "BT", "TN"])
@given(case=other_windows_cases(), chunk=chunk_st)
def test_now_unbounded_and_partitioned_windows(directions, case, chunk):
    query, tuples = case
    op = BinaryJoin(query, directions=directions, node_size=3, buckets=2)
    assert run_operator(op, tuples, chunk) == oracle(query, tuples)
