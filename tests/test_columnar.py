"""The columnar join (``columnar``, the default path) against the oracle of docs/semantics.md.

Property tests on random small streams: 2–5 streams on a common key, time and
count windows (partitioned too), ties in ts, bursts, empty streams, chunks of
1..10 positions and one big chunk; theta filters; lazy restore / no-restore;
string and float keys; bounded state on a long input; plan-time rejections.
"""

from __future__ import annotations

import bisect
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slidewise.errors import ExecutionError, PlanError
from slidewise.model.batch import StreamBatch
from slidewise.operators.joins import DEFAULT, get_algorithm
from slidewise.operators.joins.columnar import ColumnarJoin
from slidewise.plan.expr import And, BinOp, Cmp, Func, Lit, Not, Or
from slidewise.plan.query import Equality, JoinQuery, StreamRef, WindowSpec
from slidewise.windows import columnar as colwin
from tests.oracle import oracle
from tests.streams import build_tuples, chunks, col, common_key, join_cases, query_of, raw_streams, run_operator, windows_st

chunk_sizes = st.one_of(st.integers(1, 10), st.just(10_000))


def run(query, tuples, size):
    return run_operator(ColumnarJoin(query), tuples, size)


def test_registered_as_default():
    assert DEFAULT == "columnar" and get_algorithm("columnar") is ColumnarJoin


@given(join_cases(n_min=2, n_max=5, predicates=("common",)), chunk_sizes)
def test_eager_matches_oracle(case, size):
    query, tuples = case
    assert run(query, tuples, size) == oracle(query, tuples)


@given(join_cases(n_min=2, n_max=4, kinds=("range",), predicates=("common",), lazy=True), chunk_sizes)
def test_lazy_restore_matches_oracle(case, size):
    query, tuples = case
    query = JoinQuery(query.streams, query.equalities, query.filters, restore=True)
    assert run(query, tuples, size) == oracle(query, tuples)


@settings(max_examples=200)
@given(join_cases(n_min=2, n_max=4, kinds=("range",), predicates=("common",), lazy=True), chunk_sizes)
def test_lazy_no_restore_matches_oracle(case, size):
    query, tuples = case
    assert not query.restore
    assert run(query, tuples, size) == oracle(query, tuples, restore=False)


def test_no_restore_drops_short_lived_origin():
    """SLIDE 4: the S1 tuple at ts 1 (T = 1, exp 2) and its results expire before
    the evaluation at 4; the S2 tuple (T = 6, exp 7) survives it.

        ts      0 1 2 3 4
        S1 [1]  . a . . .     exp 2  < 4   short-lived, omitted
        S2 [6]  a . . . .     exp 6 >= 4
        S1 [1]  . . . a .     exp 4 >= 4   kept with S2 (exp 6)
    """
    q = query_of([WindowSpec("range", 1, slide=4), WindowSpec("range", 6, slide=4)], common_key(2))
    tuples = build_tuples([(1, 0, 1, 0, 0), (0, 1, 1, 0, 0), (0, 3, 1, 0, 0)])
    want = oracle(q, tuples, restore=False)
    assert sorted(want) == [((2, 0), 3, 4, 1)]
    for size in (1, 2, 3):
        assert run(q, tuples, size) == want
    restore = JoinQuery(q.streams, q.equalities, restore=True)
    assert run(restore, tuples, 3) == oracle(restore, tuples) == want + Counter({((1, 0), 1, 2, 1): 1})


@st.composite
def theta_filter(draw, n):
    """A random conjunct over 1–3 streams' x, b, ts; sometimes OR / NOT / a constant."""

    def term():
        i = draw(st.integers(0, n - 1))
        return col(i, draw(st.sampled_from(["x", "b", "ts"])))

    kind = draw(st.sampled_from(["band", "cmp", "lit", "or", "not", "const"]))
    op = draw(st.sampled_from(["<", "<=", ">", ">=", "=", "!="]))
    if kind == "band":
        return Cmp("<=", Func("abs", (BinOp("-", term(), term()),)), Lit(draw(st.integers(0, 3))))
    if kind == "cmp":
        return Cmp(op, term(), BinOp("+", term(), Lit(draw(st.integers(-2, 2)))))
    if kind == "lit":
        return Cmp(op, term(), Lit(draw(st.integers(0, 5))))
    if kind == "or":
        return Or((Cmp(op, term(), term()), Cmp(">", term(), Lit(3))))
    if kind == "not":
        return Not(And((Cmp(op, term(), term()), Cmp("<", term(), Lit(4)))))
    return Cmp("=", Lit(1), Lit(draw(st.integers(0, 1))))


@st.composite
def theta_cases(draw, lazy=False):
    n = draw(st.integers(2, 4))
    slide = draw(st.integers(1, 5)) if lazy else None
    kinds = ("range",) if lazy else ("range", "rows")
    windows = [draw(windows_st(kinds, slide)) for _ in range(n)]
    filters = draw(st.lists(theta_filter(n), min_size=1, max_size=3))
    tuples = build_tuples(draw(raw_streams(n)))
    return query_of(windows, common_key(n), filters), tuples


@given(theta_cases(), chunk_sizes)
def test_theta_filters_match_oracle(case, size):
    query, tuples = case
    assert run(query, tuples, size) == oracle(query, tuples)


@given(theta_cases(lazy=True), chunk_sizes, st.booleans())
def test_lazy_theta_filters_match_oracle(case, size, restore):
    query, tuples = case
    query = JoinQuery(query.streams, query.equalities, query.filters, restore=restore)
    assert run(query, tuples, size) == oracle(query, tuples, restore=restore)


@given(join_cases(n_min=2, n_max=3, predicates=("common",)), chunk_sizes)
def test_other_join_order_same_results(case, size):
    query, tuples = case
    order = list(range(query.n))[::-1]
    assert run_operator(ColumnarJoin(query, order=order), tuples, size) == oracle(query, tuples)


all_windows = st.one_of(st.sampled_from([WindowSpec("unbounded"), WindowSpec("now")]), windows_st(("range", "rows")))


@given(st.lists(all_windows, min_size=2, max_size=4), st.data(), chunk_sizes)
def test_unbounded_and_now_windows(windows, data, size):
    tuples = build_tuples(data.draw(raw_streams(len(windows))))
    query = query_of(windows, common_key(len(windows)))
    assert run(query, tuples, size) == oracle(query, tuples)


@given(st.integers(2, 3), st.lists(st.sampled_from([None, "a", "b"]), min_size=3, max_size=3), st.data(), chunk_sizes)
def test_partitioned_count_windows(n, parts, data, size):
    windows = [WindowSpec("rows", data.draw(st.integers(1, 3)), partition_by=parts[i]) for i in range(n)]
    tuples = build_tuples(data.draw(raw_streams(n, max_len=16)))
    query = query_of(windows, common_key(n))
    assert run(query, tuples, size) == oracle(query, tuples)


KEY_KINDS = {  # key column a -> other types; injective, so results are unchanged
    "ip": lambda a: np.array([f"10.0.{v}.1" for v in a.tolist()]),
    "object": lambda a: np.array([str(v) for v in a.tolist()], dtype=object),
    "float": lambda a: a / 2,
}


@given(join_cases(n_min=2, n_max=4, predicates=("common",)), chunk_sizes, st.sampled_from(sorted(KEY_KINDS)))
def test_string_and_float_keys(case, size, kind):
    query, tuples = case
    op = ColumnarJoin(query)
    got: Counter = Counter()
    for batches in chunks(query.n, tuples, size):
        for b in batches:
            b.cols["a"] = KEY_KINDS[kind](b.cols["a"])
        res = op.process(batches)
        got.update(res.keys())
        if len(res):
            assert res.cols["S1.a"].dtype.kind == {"ip": "U", "float": "f", "object": "O"}[kind]
    got.update(op.finish().keys())
    assert got == oracle(query, tuples)


def test_nan_keys_join_nothing():
    q = query_of([WindowSpec("range", 10)] * 2, common_key(2))
    op = ColumnarJoin(q)
    res = op.process([StreamBatch(0, [0, 2], [0, 1], {"a": [np.nan, 1.0]}), StreamBatch(1, [1, 3], [0, 1], {"a": [np.nan, 1.0]})])
    assert res.keys() == [((2, 3), 1, 11, 1)]


def test_packed_search_overflow_fallback(monkeypatch):
    """Huge key spans switch the packed (code, minor) search to dense ranks."""
    rng = np.random.default_rng(1)
    a_major = np.sort(rng.integers(0, 6, 50))
    a_minor = np.concatenate([np.sort(rng.integers(0, 30, (a_major == k).sum())) for k in range(6)])
    q_major, q_minor = rng.integers(-1, 8, 200), rng.integers(-3, 33, 200)
    for side in ("left", "right"):
        fast = colwin.lex_searchsorted(a_major, a_minor, q_major, q_minor, side)
        ranked = colwin._rank_searchsorted(a_major, a_minor, q_major, q_minor, side)
        pairs = list(zip(a_major.tolist(), a_minor.tolist()))
        bis = bisect.bisect_left if side == "left" else bisect.bisect_right
        want = [bis(pairs, (x, y)) for x, y in zip(q_major.tolist(), q_minor.tolist())]
        assert fast.tolist() == want and ranked.tolist() == want
    monkeypatch.setattr(colwin, "COMPOSITE_LIMIT", 4)
    q = query_of([WindowSpec("range", 3), WindowSpec("rows", 2)], common_key(2))
    tuples = build_tuples([(i % 2, i // 3, (i * 7) % 3, 0, 0) for i in range(40)])
    assert run(q, tuples, 6) == oracle(q, tuples)


def test_huge_integer_keys():
    q = query_of([WindowSpec("range", 5)] * 2, common_key(2))
    big = np.iinfo(np.int64).max - 3
    res = ColumnarJoin(q).process([StreamBatch(0, [0, 2], [0, 1], {"a": [big, -big]}), StreamBatch(1, [1, 3], [0, 1], {"a": [big, -big]})])
    assert sorted(res.keys()) == [((0, 1), 0, 5, 1), ((2, 3), 1, 6, 1)]


@pytest.mark.parametrize(
    "windows",
    [
        [WindowSpec("range", 50), WindowSpec("range", 20), WindowSpec("now")],
        [WindowSpec("rows", 30), WindowSpec("range", 40), WindowSpec("rows", 5, partition_by="b")],
        [WindowSpec("range", 30, slide=7)] * 3,
    ],
)
def test_state_bounded_on_long_input(windows):
    """After every chunk the windows hold their contents only (lazy: plus < 2 intervals)."""
    rng = np.random.default_rng(7)
    n, length = len(windows), 30_000
    stream = rng.integers(0, n, length)
    ts = np.cumsum(rng.integers(0, 2, length))
    a, b = rng.integers(0, 20, length), rng.integers(0, 4, length)
    q = query_of(windows, common_key(n))
    op = ColumnarJoin(q)
    results = 0
    for start in range(0, length, 997):
        sl = slice(start, start + 997)
        batches = []
        for i in range(n):
            pick = np.flatnonzero(stream[sl] == i) + start
            batches.append(StreamBatch(i, pick, ts[pick], {"a": a[pick], "b": b[pick], "x": a[pick]}))
        results += len(op.process(batches))
        now = ts[min(start + 996, length - 1)]
        seen = slice(0, start + 997)
        contents = 0
        for i, w in enumerate(windows):
            mine = stream[seen] == i
            if w.kind == "rows" and w.partition_by:
                contents += min(mine.sum(), w.size * 4)
            elif w.kind == "rows":
                contents += min(mine.sum(), w.size)
            else:
                contents += (mine & (ts[seen] >= now - w.length - 2 * (w.slide or 0))).sum()
        assert op.state_tuples() <= contents + 5
    results += len(op.finish())
    assert results > 0


def test_rejects_non_common_key():
    q = query_of([WindowSpec("range", 5)] * 3, [Equality(col(0, "a"), col(1, "a")), Equality(col(1, "b"), col(2, "b"))])
    with pytest.raises(PlanError) as err:
        ColumnarJoin(q)
    assert "--algorithm hybrid" in str(err.value)


def test_missing_key_column_is_a_clear_error():
    q = query_of([WindowSpec("range", 5)] * 2, common_key(2))
    with pytest.raises(ExecutionError, match="S2 has no column 'a'"):
        ColumnarJoin(q).process([StreamBatch(0, [0], [0], {"a": [1]}), StreamBatch(1, [1], [0], {"b": [1]})])


def test_rejects_count_window_negatives():
    q = query_of([WindowSpec("rows", 2), WindowSpec("range", 5)], common_key(2))
    with pytest.raises(PlanError, match="negative"):
        ColumnarJoin(q, negatives=True)


def test_result_columns_and_order():
    q = JoinQuery((StreamRef("L", "L", WindowSpec("range", 10)), StreamRef("R", "R", WindowSpec("range", 10))), (Equality(col(0, "a"), col(1, "a")),))
    op = ColumnarJoin(q)
    res = op.process(
        [StreamBatch(0, [0, 3, 4], [1, 2, 2], {"a": [1, 1, 2], "y": [5, 6, 7]}), StreamBatch(1, [1, 2, 5], [1, 2, 3], {"a": [1, 1, 1], "z": ["p", "q", "r"]})]
    )
    assert list(res.cols) == ["L.ts", "L.a", "L.y", "R.ts", "R.a", "R.z"]
    assert res.members.tolist() == [[0, 1], [0, 2], [3, 1], [3, 2], [0, 5], [3, 5]]
    assert res.cols["R.z"].tolist() == ["p", "q", "p", "q", "r", "r"]
    assert res.ts.tolist() == [1, 2, 2, 2, 3, 3]
    assert op.comparisons > 0
