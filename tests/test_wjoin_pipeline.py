"""NLW-join and HW-join (Hammad, Aref & Elmagarmid, "Stream Window Join", SSDBM 2003, §3.1.1 Fig. 5
and §3.1.2) against a literal one-tuple-at-a-time pipeline: the columnar operators count exactly its
comparisons and keep exactly its buffers, for any chunking."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from slidewise.cql.wjoin import parse_wjoin
from slidewise.model.batch import StreamBatch
from slidewise.operators.wjoin import WJOINS
from slidewise.operators.wjoin.nlw_join import NLWJoin
from slidewise.plan.expr import evaluate
from tests.test_wjoin import _tuples, cases


def per_arrival(op: NLWJoin, arrivals: list[tuple[int, int, int, int]]) -> tuple[int, int, list[int], int]:
    """The binary pipeline of Fig. 5, one arrival ``(stream, pos, ts, k)`` at a time: the new tuple
    updates its input's time-stamps vector, is inserted in its buffer and scans the other input's
    buffer (HW: its bucket), deleting each row out of the window of the other input's vector
    (IsOut) and joining the others inside its period (IsIn); after every ``op.sweep``-th arrival the
    update routine deletes the rows out of the window from every bucket. The comparisons (rows
    visited by the scans), the complete m-tuples (before the filters), the final buffer sizes and the
    rows the scans deleted."""
    n, order, d = op.n, op.order, op.d
    vmax = [-math.inf] * n
    left: list[list[dict]] = [[] for _ in range(n)]
    right: list[list[dict]] = [[] for _ in range(n)]

    def key(side, row):
        return None if side.key is None else row[side.key[0]]["k"]

    def left_out(k, row):  # the m-tuple is more than its window from V_right
        return vmax[order[k]] > min(row[i]["ts"] + d[i][order[k]] for i in order[:k])

    def right_out(k, row):  # the tuple is more than its window from every entry of V_left
        return all(vmax[i] > row[order[k]]["ts"] + d[order[k]][i] for i in order[:k])

    def inside(k, mt, t):
        j = order[k]
        lo = math.ceil(max(mt[i]["ts"] - d[j][i] for i in order[:k]))
        hi = math.floor(min(mt[i]["ts"] + d[i][j] for i in order[:k]))
        if not lo <= t[j]["ts"] <= hi:
            return False
        row = {**mt, **t}
        return all(bool(np.asarray(evaluate(p, lambda s, a: np.array([row[s][a]])))[0]) for p in op.level_eqs[k])

    count, done, purged = 0, 0, 0
    for s, pos, ts, k in arrivals:
        vmax[s] = ts
        t = {s: {"ts": ts, "k": k}}
        level = order.index(s)
        if level == 0:
            climbing = [t]
        else:  # a right arrival at its level
            right[level].append(t)
            climbing, kept = [], []
            for row in left[level]:
                if key(op.left[level], row) != key(op.right[level], t):
                    kept.append(row)  # another bucket: not visited
                    continue
                count += 1
                if left_out(level, row):
                    purged += 1
                    continue
                else:
                    kept.append(row)
                    if inside(level, row, t):
                        climbing.append({**row, **t})
            left[level] = kept
        for up in range(max(level, 0) + 1, n):
            produced = []
            for mt in climbing:
                left[up].append(mt)
                kept = []
                for row in right[up]:
                    if key(op.right[up], row) != key(op.left[up], mt):
                        kept.append(row)
                        continue
                    count += 1
                    if right_out(up, row):
                        purged += 1
                        continue
                    kept.append(row)
                    if inside(up, mt, row):
                        produced.append({**mt, **row})
                right[up] = kept
            climbing = produced
        done += len(climbing)
        if op.sweep and (pos + 1) % op.sweep == 0:
            for up in range(1, n):
                left[up] = [r for r in left[up] if not left_out(up, r)]
                right[up] = [r for r in right[up] if not right_out(up, r)]
    return count, done, [len(left[k]) + len(right[k]) for k in range(1, n)], purged


def _chunks(tuples, chunk: int, n: int) -> list[list[StreamBatch]]:
    out = []
    for start in range(0, len(tuples), chunk):
        part = tuples[start : start + chunk]
        out.append(
            [
                StreamBatch(
                    s,
                    [t.pos for t in part if t.stream == s],
                    [t.ts for t in part if t.stream == s],
                    {"k": np.array([t.vals["k"] for t in part if t.stream == s], np.int64)},
                )
                for s in range(n)
            ]
        )
    return out


def _feed(op: NLWJoin, tuples, chunk: int) -> None:
    for batches in _chunks(tuples, chunk, op.n):
        op.process(batches)


def _pipeline_case(data):
    """A drawn case for NLW-join or HW-join (hashed): (hashed, text, query, operator class, tuples, chunk)."""
    hashed = data.draw(st.booleans())
    text, rows, chunk = data.draw(cases(equi=hashed))
    query = parse_wjoin(text)
    cls = WJOINS["hw-join" if hashed else "nlw-join"]
    cls.check(query)
    return hashed, text, query, cls, _tuples(rows), chunk


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_columnar_pipelines_are_the_per_arrival_algorithm(data):
    """Comparisons and buffers of NLW-join and HW-join (its update routine every 1 to 9 arrivals)
    are those of the per-arrival pipeline, whatever the chunks and the form of the bucket keys."""
    hashed, text, query, cls, tuples, chunk = _pipeline_case(data)
    op = cls(query)
    if hashed:
        op.sweep = data.draw(st.integers(1, 9))
    op.wide = data.draw(st.sampled_from([2**62, 0]))  # 0: the buckets' keys as complex numbers
    count, _, sizes, purged = per_arrival(op, [(t.stream, t.pos, t.ts, t.vals["k"]) for t in tuples])
    _feed(op, tuples, chunk)
    assert (op.comparisons, op.purged) == (count, purged), text
    assert [len(op.left[k]) + len(op.right[k]) for k in range(1, op.n)] == sizes, text


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_the_first_levels_inputs_are_interchangeable(data):
    """The operators put the stream of the first level with fewer arrivals in the first chunk as its
    left input: either way round, the same results (members, ts, exp, columns, order), comparisons,
    deletions and buffers, for any chunking."""
    hashed, text, query, cls, tuples, chunk = _pipeline_case(data)
    sweep = data.draw(st.integers(1, 9))
    runs = []
    for swap in (False, True):
        op = cls(query)
        if swap:
            op._arrange([op.order[1], op.order[0], *op.order[2:]])
        op.arranged = True
        if hashed:
            op.sweep = sweep
        out = []
        for batches in _chunks(tuples, chunk, op.n):
            r = op.process(batches)
            out.append((r.members.tolist(), r.ts.tolist(), r.exp.tolist(), {c: v.tolist() for c, v in r.cols.items()}))
        runs.append((out, op.comparisons, op.purged, op.inside, [len(op.left[k]) + len(op.right[k]) for k in range(1, op.n)]))
    assert runs[0] == runs[1], text


def test_the_slower_stream_is_the_first_levels_left_input():
    """The first chunk's arrivals choose: B has fewer, so B is at the bottom of the pipeline."""
    query = parse_wjoin("SELECT * FROM A, B, C WINDOW = 5 WHERE A.k = B.k AND B.k = C.k")
    for algorithm in ("nlw-join", "hw-join"):
        op = WJOINS[algorithm](query)
        assert op.order[:2] == [0, 1]
        streams = np.array([0, 0, 2, 1, 0, 2, 0, 1, 2])  # A 4, B 2, C 3 arrivals
        op.process([StreamBatch(s, np.flatnonzero(streams == s), np.flatnonzero(streams == s), {"k": np.zeros(int((streams == s).sum()), np.int64)}) for s in range(3)])
        assert op.order == [1, 0, 2], algorithm


def test_a_slow_stream_keeps_the_nested_loop_visiting_old_tuples():
    """The paper's purge: a buffered tuple leaves only when the other input's vector passes it, so
    with a slow stream below, the fast stream's old tuples stay and are visited (the saving the
    paper credits to MW-join on variable-rate streams)."""
    query = parse_wjoin("SELECT * FROM A, B WINDOW = 2")
    op = WJOINS["nlw-join"](query)
    fast = [StreamBatch(0, [0], [0], {}), StreamBatch(1, list(range(1, 101)), list(range(100)), {})]
    op.process(fast)
    assert op.order == [0, 1] and len(op.right[1]) == 100  # no A arrived since: B's tuples all stay
    op.process([StreamBatch(0, [101], [100], {}), StreamBatch(1, [], [], {})])
    assert len(op.right[1]) == 2 and op.comparisons == 4 + 100 and op.purged == 1 + 98  # B's tuples up to ts 3 visited A's first; A's scan visited every B tuple


def test_update_routine_on_bench_data():
    """Longer runs than the drawn cases: the bench's generated streams, HW-join's update routine
    every 100 arrivals (it also deletes rows made by its own arrival), chunks of 1024."""
    from slidewise.bench.wjoin import _batches, generate

    query = parse_wjoin("SELECT * FROM A, B, C WINDOW(A, B) = 30 AND DWINDOW(B, C) = 10 WHERE A.k = B.k AND B.k = C.k")
    data = generate([2000.0, 500.0, 1000.0], 1200, 6, seed=4)
    op = WJOINS["hw-join"](query)
    op.sweep = 100
    count, done, sizes, purged = per_arrival(op, list(zip(data["stream"].tolist(), range(len(data["ts"])), data["ts"].tolist(), data["k"].tolist())))
    results = sum(len(op.process(chunk)) for chunk in _batches(data, query.n, 1024))
    assert (op.comparisons, results, [len(op.left[k]) + len(op.right[k]) for k in range(1, 3)], op.purged) == (count, done, sizes, purged)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from([1, 3, 2**20, 2**40, 2**62]), min_size=1, max_size=6), st.integers(0, 40), st.integers(0, 2**32))
def test_packed_lexorder_is_lexsort(spans, rows, seed):
    """The results' order: ``np.lexsort`` of distinct rows of integer keys (each in its own range),
    packed while they fit."""
    from slidewise.operators.wjoin.nlw_join import _lexorder

    rng = np.random.default_rng(seed)
    lo = [int(x) for x in rng.integers(-(2**40), 2**40, len(spans))]
    keys = np.unique(np.stack([rng.integers(a, a + span, rows) for a, span in zip(lo, spans)], axis=1), axis=0)
    cols = list(keys[rng.permutation(len(keys))].T)
    assert _lexorder(cols, lo, [a + span - 1 for a, span in zip(lo, spans)]).tolist() == np.lexsort(cols).tolist()
