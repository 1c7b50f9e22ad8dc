"""Random small streams and queries for property tests, and a harness that
feeds an operator in chunks and collects its results as oracle keys."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pandas as pd
from hypothesis import strategies as st

from slidewise.model.batch import StreamBatch, Tup
from slidewise.operators.joins.base import JoinOperator
from slidewise.plan.expr import BinOp, Cmp, Col, Func, Lit
from slidewise.plan.query import Equality, JoinQuery, StreamRef, WindowSpec

COLUMNS = ("a", "b", "x")
NAMES = ("S1", "S2", "S3", "S4", "S5", "S6")


def build_tuples(raw: list[tuple[int, int, int, int, int]]) -> list[Tup]:
    """``(stream, ts, a, b, x)`` rows in input order -> Tups with global positions.

    Global order is (ts, stream, input order), as the engine assigns it.
    """
    keyed = sorted(enumerate(raw), key=lambda e: (e[1][1], e[1][0], e[0]))
    return [Tup(s, pos, ts, 1, {"a": a, "b": b, "x": x}) for pos, (_, (s, ts, a, b, x)) in enumerate(keyed)]


def chunks(n: int, tuples: list[Tup], size: int) -> list[list[StreamBatch]]:
    """Split tuples (in pos order) into chunks of ``size`` positions, one batch per stream."""
    out = []
    for start in range(0, max(len(tuples), 1), max(size, 1)):
        part = tuples[start : start + size]
        batches = []
        for i in range(n):
            ts_ = [t for t in part if t.stream == i]
            batches.append(
                StreamBatch(
                    i,
                    np.array([t.pos for t in ts_], np.int64),
                    np.array([t.ts for t in ts_], np.int64),
                    {c: np.array([t.vals[c] for t in ts_], np.int64) for c in COLUMNS},
                )
            )
        out.append(batches)
    return out


def run_operator(op: JoinOperator, tuples: list[Tup], chunk_size: int = 7) -> Counter:
    """Feed ``tuples`` to ``op`` chunk by chunk and return its results as oracle keys."""
    got: Counter = Counter()
    for chunk in chunks(op.n, tuples, chunk_size):
        got.update(_checked_keys(op, op.process(chunk)))
    got.update(_checked_keys(op, op.finish()))
    return got


def _checked_keys(op: JoinOperator, res) -> list:
    for ref in op.query.streams:
        col = res.cols.get(f"{ref.alias}.ts")
        if len(res):
            assert col is not None, f"result column {ref.alias}.ts missing"
    return res.keys()


def query_of(windows: list[WindowSpec], equalities=(), filters=()) -> JoinQuery:
    refs = tuple(StreamRef(NAMES[i], NAMES[i], w) for i, w in enumerate(windows))
    return JoinQuery(refs, tuple(equalities), tuple(filters))


def col(i: int, attr: str) -> Col:
    return Col(i, attr, NAMES[i])


def common_key(n: int, attr: str = "a") -> list[Equality]:
    """S1.a = S2.a AND S2.a = S3.a ..."""
    return [Equality(col(i, attr), col(i + 1, attr)) for i in range(n - 1)]


@st.composite
def windows_st(draw, kinds=("range", "rows"), slide: int | None = None):
    kind = draw(st.sampled_from(kinds))
    if kind == "rows":
        part = draw(st.sampled_from([None, None, None, "b"]))
        return WindowSpec("rows", draw(st.integers(1, 4)), partition_by=part)
    return WindowSpec("range", draw(st.integers(0, 8)), slide=slide)


@st.composite
def raw_streams(draw, n: int, max_len: int = 14):
    """Input rows ``(stream, ts, a, b, x)``: small values, ties in ts, bursts, empty streams."""
    length = draw(st.integers(0, max_len))
    rows = []
    ts = 0
    for _ in range(length):
        ts += draw(st.sampled_from([0, 0, 1, 1, 2, 3, 7]))  # ties and bursts
        s = draw(st.integers(0, n - 1))
        rows.append((s, ts, draw(st.integers(0, 2)), draw(st.integers(0, 2)), draw(st.integers(0, 6))))
    return rows


@st.composite
def join_cases(draw, n_min: int = 2, n_max: int = 4, kinds=("range", "rows"), predicates=("common", "different", "theta"), lazy: bool = False, max_len: int = 14):
    """A random (query, tuples) pair."""
    n = draw(st.integers(n_min, n_max))
    slide = draw(st.integers(1, 6)) if lazy else None
    windows = [draw(windows_st(kinds, slide)) for _ in range(n)]
    kind = draw(st.sampled_from(predicates))
    equalities, filters = [], []
    if kind == "common":
        equalities = common_key(n)
    elif kind == "different":
        # a join graph on different attributes: a chain alternating a and b
        equalities = [Equality(col(i, "ab"[i % 2]), col(i + 1, "ab"[i % 2])) for i in range(n - 1)]
    else:  # theta: band on x between neighbours plus one equality
        equalities = [Equality(col(0, "a"), col(1, "a"))]
        filters = [Cmp("<=", Func("abs", (BinOp("-", col(i, "x"), col(i + 1, "x")),)), Lit(2)) for i in range(1, n - 1)]
    if draw(st.booleans()):
        filters.append(Cmp(">", col(draw(st.integers(0, n - 1)), "x"), Lit(1)))
    tuples = build_tuples(draw(raw_streams(n, max_len)))
    return query_of(windows, equalities, filters), tuples


@st.composite
def dense_cases(draw, max_len: int = 18, **kwargs):
    """A query from ``join_cases`` over denser streams (two values, small ts steps): more results."""
    query, _ = draw(join_cases(**kwargs))
    rows, ts = [], 0
    for _ in range(draw(st.integers(0, max_len))):
        ts += draw(st.sampled_from([0, 0, 1, 1, 2]))
        rows.append((draw(st.integers(0, query.n - 1)), ts, draw(st.integers(0, 1)), draw(st.integers(0, 1)), draw(st.integers(0, 4))))
    return query, build_tuples(rows)


@st.composite
def value_streams(draw, names: tuple[str, str, str, str], max_len: int, max_start: int, texts: str) -> pd.DataFrame:
    """One sorted stream for aggregate tests: ties, bursts, gaps (empty windows); columns ``ts`` and
    ``names`` = (int key, text key, int value, float value with NaN)."""
    n = draw(st.integers(0, max_len))
    ts, rows = draw(st.integers(0, max_start)), []
    for _ in range(n):
        ts += draw(st.sampled_from([0, 0, 1, 1, 2, 3, 7, 20]))
        f = draw(st.sampled_from([math.nan, -1.5, -0.25, 0.0, 0.75, 2.5]))
        rows.append((ts, draw(st.integers(0, 3)), draw(st.sampled_from(texts)), draw(st.integers(-2, 4)), f))
    i, t, v, f_ = names
    return pd.DataFrame(rows, columns=["ts", *names]).astype({"ts": "int64", i: "int64", t: object, v: "int64", f_: "float64"})
