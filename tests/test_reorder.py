"""Reorder and merge: global order (ts, stream, input order), watermarks, late rows as rejects."""

from __future__ import annotations

from importlib import resources

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slidewise.errors import ExecutionError, OptionError
from slidewise.runtime.rejects import Rejects
from slidewise.runtime.reorder import Merger, merge_all
from slidewise.runtime.sources import open_source

#: the bundled Zeek sample: real epoch-seconds timestamps, out of order
ZEEK_DNS = resources.files("slidewise") / "data" / "demo" / "dns.csv"


def drain(m: Merger) -> list[list]:
    return list(m.drain())


def flat(chunks) -> list[tuple]:
    """(pos, stream, ts, k) of every released tuple, in position order."""
    rows = [(int(p), b.stream, int(t), int(k)) for chunk in chunks for b in chunk for p, t, k in zip(b.pos, b.ts, b.cols.get("k", b.pos))]
    return sorted(rows)


def test_ties_go_by_stream_then_input_order():
    #   ts:    1      1      1      2
    #   A:   a0(k0)        a1(k1)
    #   B:          b0(k2)        b1(k3)
    m = Merger(["A", "B"], 0)
    m.push(1, [1, 2], {"k": np.array([2, 3])})
    m.push(0, [1, 1], {"k": np.array([0, 1])})
    m.finish()
    rows = flat(drain(m))
    assert [(s, t, k) for _, s, t, k in rows] == [(0, 1, 0), (0, 1, 1), (1, 1, 2), (1, 2, 3)]
    assert [p for p, *_ in rows] == [0, 1, 2, 3]


def test_release_waits_for_every_stream_and_is_strict():
    m = Merger(["A", "B"], 0)
    m.push(0, [1, 2, 3], {"k": np.arange(3)})
    assert m.pop() is None  # B has sent nothing: everything waits
    m.push(1, [2], {"k": np.array([9])})
    chunk = m.pop()  # W = min(3, 2) = 2: only ts < 2 is final
    assert [b.ts.tolist() for b in chunk] == [[1], []]
    assert m.pop() is None
    m.mark_finished(1)  # B is done: A alone holds the bound (3)
    assert [b.ts.tolist() for b in m.pop()] == [[2], [2]]
    m.finish()
    assert [b.ts.tolist() for b in m.pop()] == [[3], []]
    assert m.pop() is None


def test_pop_respects_chunk_rows_and_contiguous_positions():
    m = Merger(["A", "B"], 0, chunk_rows=3)
    m.push(0, np.arange(0, 10, 2), {"k": np.arange(5)})
    m.push(1, np.arange(1, 10, 2), {"k": np.arange(5)})
    m.finish()
    chunks = drain(m)
    assert [sum(len(b) for b in c) for c in chunks] == [3, 3, 3, 1]
    start = 0
    for c in chunks:
        pos = np.sort(np.concatenate([b.pos for b in c]))
        assert pos.tolist() == list(range(start, start + len(pos)))
        start += len(pos)
        assert all(len(b) == 0 or (np.diff(b.pos) > 0).all() for b in c)
        assert [b.stream for b in c] == [0, 1]


def test_late_rows_are_rejected_with_reason_file_and_line():
    rej = Rejects()
    m = Merger(["A"], 5, rej)
    m.push(0, [10, 20, 14, 16, 30], {"k": np.arange(5)}, lines=np.arange(2, 7), file="a.csv")
    m.finish()
    assert [t for _, _, t, _ in flat(drain(m))] == [10, 16, 20, 30]
    frame = rej.to_frame()
    assert frame[["stream", "file", "line", "reason", "row"]].values.tolist() == [["A", "a.csv", 4, "late by 6 ms (lateness 5)", "14,2"]]
    assert rej.summary() == {"late": 1} and m.late.tolist() == [1] and m.admitted.tolist() == [4]


def test_empty_batches_carry_the_schema():
    m = Merger(["A", "B"], 0, schemas=[{"k": np.int64}, {"k": np.int64, "s": np.dtype(object)}])
    m.push(0, [1], {"k": np.array([1])})
    m.finish()
    ((a, b),) = drain(m)
    assert len(a) == 1 and len(b) == 0 and b.cols["s"].dtype == object


def test_bad_arguments():
    with pytest.raises(OptionError, match="lateness"):
        Merger(["A"], -1)
    with pytest.raises(OptionError, match="2 lateness values for 3 streams"):
        Merger(["A", "B", "C"], [1, 2])
    m = Merger(["A"], 0)
    m.mark_finished(0)
    with pytest.raises(ExecutionError, match="finished"):
        m.push(0, [1], {"k": np.array([1])})


# --------------------------------------------------------------------------- property


@st.composite
def merge_cases(draw):
    n = draw(st.integers(1, 3))
    streams = []
    for _ in range(n):
        length = draw(st.integers(0, 12))
        base = draw(st.lists(st.integers(0, 3), min_size=length, max_size=length))
        jitter = draw(st.lists(st.integers(-4, 0), min_size=length, max_size=length))
        streams.append((np.cumsum(base) + np.array(jitter, dtype=np.int64)).astype(np.int64) if length else np.empty(0, np.int64))
    lateness = draw(st.lists(st.integers(0, 5), min_size=n, max_size=n))
    # a schedule of (stream, rows) pushes interleaving the streams, with pops in between
    schedule = []
    offsets = [0] * n
    while any(offsets[i] < len(streams[i]) for i in range(n)):
        i = draw(st.sampled_from([i for i in range(n) if offsets[i] < len(streams[i])]))
        k = draw(st.integers(1, len(streams[i]) - offsets[i]))
        schedule.append((i, offsets[i], offsets[i] + k, draw(st.booleans())))
        offsets[i] += k
    return streams, lateness, schedule, draw(st.integers(1, 5))


def true_max_lateness(ts: np.ndarray) -> int:
    if len(ts) < 2:
        return 0
    return int((np.maximum.accumulate(ts)[:-1] - ts[1:]).max(initial=0))


@settings(max_examples=150, deadline=None)
@given(merge_cases())
def test_merge_property(case):
    streams, lateness, schedule, chunk_rows = case
    n = len(streams)
    rej = Rejects()
    m = Merger([f"S{i}" for i in range(n)], lateness, rej, chunk_rows=chunk_rows)
    chunks = []
    for i, lo, hi, pop in schedule:
        m.push(i, streams[i][lo:hi], {"k": np.arange(lo, hi)}, lines=np.arange(lo, hi) + 1, file=f"f{i}")
        if pop:
            chunks += drain(m)
    for i in range(n):
        m.mark_finished(i)
    chunks += drain(m)
    assert m.pop() is None and m.buffered == 0

    # reference: a row is late iff ts < (max ts before it on its stream) - lateness
    late = {(i, k) for i in range(n) for k in range(len(streams[i])) if k and streams[i][k] < streams[i][:k].max() - lateness[i]}
    rejected = {(int(s[1:]), int(line) - 1) for s, line in zip(rej.table()["stream"].to_pylist(), rej.table()["line"].to_pylist())}
    assert rejected == late and rej.total == len(late)

    rows = flat(chunks)
    emitted = [(s, k) for _, s, _, k in rows]
    assert len(emitted) == len(set(emitted))  # exactly once
    assert set(emitted) | late == {(i, k) for i in range(n) for k in range(len(streams[i]))}
    assert not set(emitted) & late
    assert [p for p, *_ in rows] == list(range(len(rows)))  # positions 0..N-1
    keys = [(t, s, k) for _, s, t, k in rows]  # k is the input order
    assert keys == sorted(keys)  # (ts, stream, input order)
    for c in chunks:  # each chunk: contiguous range
        pos = np.sort(np.concatenate([b.pos for b in c]))
        assert len(pos) <= chunk_rows and (len(pos) == 0 or pos[-1] - pos[0] == len(pos) - 1)


@settings(max_examples=60, deadline=None)
@given(merge_cases())
def test_enough_lateness_rejects_nothing(case):
    streams, _, schedule, chunk_rows = case
    lateness = [true_max_lateness(s) for s in streams]
    m = Merger([f"S{i}" for i in range(len(streams))], lateness, chunk_rows=chunk_rows)
    out = 0
    for i, lo, hi, pop in schedule:
        m.push(i, streams[i][lo:hi], {"k": np.arange(lo, hi)})
        if pop:
            out += sum(len(b) for c in drain(m) for b in c)
    m.finish()
    out += sum(len(b) for c in drain(m) for b in c)
    assert m.rejects.total == 0 and out == sum(len(s) for s in streams)


# --------------------------------------------------------------------------- merge_all over sources


def test_merge_all_zeek_dns_lateness(tmp_path):
    """Real out-of-order data: the 200-row Zeek dns head, in epoch ms."""
    p = tmp_path / "dns.csv"
    with open(ZEEK_DNS) as f:
        p.write_text("".join(next(f) for _ in range(201)))
    ts = np.concatenate([c.ts for c in open_source("dns", p).chunks()])
    need = true_max_lateness(ts)
    assert need > 0
    for lateness, want_late in ((need, 0), (need - 1, None), (0, None)):
        rej = Rejects()
        got = sum(len(b) for chunk in merge_all([open_source("dns", p)], lateness, rej, 64) for b in chunk)
        late = rej.total
        assert got + late == 200
        if want_late is not None:
            assert late == want_late
        else:
            assert late > 0 and all(r.startswith("late by ") and r.endswith(f" ms (lateness {lateness})") for r in rej.table()["reason"].to_pylist())


def test_merge_all_reads_the_stream_that_holds_back_and_stays_bounded():
    n = 20_000
    a = {"ts": np.arange(0, 2 * n, 2), "k": np.arange(n)}
    b = {"ts": np.arange(1, 2 * n, 2), "k": np.arange(n)}
    srcs = [open_source("A", a, chunk_rows=500), open_source("B", b, chunk_rows=500)]
    m = Merger(["A", "B"], 0, chunk_rows=500, schemas=[s.schema for s in srcs])
    peak = 0
    total = 0
    last = -1
    for chunk in merge_all(srcs, merger=m):
        peak = max(peak, m.buffered)
        ts = np.sort(np.concatenate([x.ts for x in chunk]))
        assert ts[0] > last
        last = ts[-1]
        total += sum(len(x) for x in chunk)
    assert total == 2 * n and peak <= 2000


def test_merge_all_collects_source_rejects_and_late_rows(tmp_path):
    a = tmp_path / "a.csv"
    a.write_text("ts,k\n10,1\n20,1\n5,1\nxx,1\n30,1\n")
    b = tmp_path / "b.csv"
    b.write_text("ts,k\n11,1\n")
    rej = Rejects()
    out = list(merge_all([open_source("A", a), open_source("B", b)], 0, rej))
    assert sum(len(x) for c in out for x in c) == 4
    assert rej.summary() == {"late": 1, "non-numeric timestamp": 1}
    path = tmp_path / "out" / "rejects.csv"
    assert rej.write(path) == 2
    text = path.read_text().splitlines()
    assert text[0] == "stream,file,line,reason,row"
    assert f"A,{a},4,late by 15 (lateness 0),\"5,1\"" in text
