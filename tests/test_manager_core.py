"""The query manager's core: registering and removing queries while data flows, periodic answers with
sequence numbers, one-time queries, statistics, and the threads together."""

from __future__ import annotations

import threading

import numpy as np
import pandas as pd
import pytest

from slidewise.errors import ExecutionError, QueryError
from slidewise.manager.core import NameTaken, QueryManager

SCHEMAS = {"S": {"src": "int", "bytes": "int"}}
T, N = 10, 4
SUM_BY_SRC = "SELECT RSTREAM(S.src, SUM(S.bytes) AS b) FROM S [RANGE {r} SLIDE {d}] GROUP BY S.src"


def data(rng, lo: int, hi: int, rows: int) -> tuple[np.ndarray, dict]:
    ts = np.sort(rng.integers(lo, hi, rows))
    return ts, {"src": rng.integers(0, 6, rows), "bytes": rng.integers(1, 100, rows)}


def oracle(frame: pd.DataFrame, end: int, span: int) -> dict[int, int]:
    inside = frame[(frame.ts > end - span) & (frame.ts <= end)]
    return {int(k): int(v) for k, v in inside.groupby("src").bytes.sum().items()}


def test_periodic_answers_have_sequence_numbers_and_match_the_window():
    qm = QueryManager(SCHEMAS, T, N, scheduling="conservative")
    qm.register("short", SUM_BY_SRC.format(r=2 * T - 1, d=T))
    qm.register("long", SUM_BY_SRC.format(r=N * T - 1, d=2 * T))
    rng = np.random.default_rng(0)
    frames = []
    for j in range(8):
        ts, cols = data(rng, j * T, (j + 1) * T, 30)
        frames.append(pd.DataFrame({"ts": ts, **cols}))
        qm.append("S", ts, cols)
        qm.run_due()  # after the slide of sub-window j - 1: every query with fresh data runs
    frame = pd.concat(frames)
    rows = qm.results("short")
    assert [r[0] for r in rows] == list(range(1, len(rows) + 1))
    last_end = rows[-1][1]
    assert last_end == 7 * T - 1  # the open sub-window (70..79) is not in any answer yet
    got = {r[3]["S.src"]: r[3]["b"] for r in rows if r[1] == last_end}
    assert got == oracle(frame, last_end, 2 * T)
    long_rows = qm.results("long")
    assert {r[3]["S.src"]: r[3]["b"] for r in long_rows if r[1] == last_end} == oracle(frame, last_end, N * T)
    assert qm.results("short", after=len(rows) - 2) == rows[-2:]  # resumable
    stats = qm.stats()
    assert stats["queries"]["short"]["runs"] >= 6 and stats["aborts"] == 0 and stats["rejected"] == {"S": 0}
    assert stats["window_rows"]["S"] == N * 30


def test_one_time_queries_read_the_current_window():
    qm = QueryManager(SCHEMAS, T, N)
    rng = np.random.default_rng(1)
    ts, cols = data(rng, 0, 6 * T + 5, 400)
    qm.append("S", ts, cols)
    frame = pd.DataFrame({"ts": ts, **cols})
    answer = qm.one_time("SELECT S.src, SUM(S.bytes) AS b FROM S [RANGE 29] GROUP BY S.src")
    assert (answer.first, answer.latest, answer.end) == (3, 5, 6 * T - 1)
    assert dict(zip(answer.rows["S.src"].tolist(), answer.rows["b"].tolist())) == oracle(frame, answer.end, 3 * T)
    synopsis = qm.one_time("SELECT S.src, SUM(S.bytes) AS b FROM S [RANGE 29] GROUP BY S.src", access="synopsis")
    np.testing.assert_array_equal(synopsis.rows["b"], answer.rows["b"])


def test_registration_errors_and_removal():
    qm = QueryManager(SCHEMAS, T, N)
    qm.register("q", SUM_BY_SRC.format(r=T - 1, d=T))
    with pytest.raises(NameTaken, match="a query named q is registered"):
        qm.register("q", SUM_BY_SRC.format(r=T - 1, d=T))
    with pytest.raises(QueryError, match="bad query name '1x'"):
        qm.register("1x", SUM_BY_SRC.format(r=T - 1, d=T))
    with pytest.raises(QueryError, match="not a whole number of sub-windows"):
        qm.register("r", SUM_BY_SRC.format(r=T, d=T))
    with pytest.raises(QueryError, match="no query named nope"):
        qm.remove("nope")
    with pytest.raises(ExecutionError, match="unknown stream X"):
        qm.append("X", np.array([1]), {})
    qm.remove("q")
    assert qm.stats()["queries"] == {} and not qm.windows["S"].builders


def test_late_tuples_are_rejected_with_a_reason_and_long_silence_is_bounded():
    qm = QueryManager(SCHEMAS, T, N)
    qm.append("S", np.array([5, 25]), {"src": np.array([1, 1]), "bytes": np.array([1, 2])})
    qm.append("S", np.array([3, 26, 24]), {"src": np.array([1, 1, 1]), "bytes": np.array([4, 5, 6])})
    assert qm.stats()["rejected"] == {"S": 2} and "timestamp order" in qm.rejected["S"][0][1]
    qm.append("S", np.array([10**9]), {"src": np.array([2]), "bytes": np.array([7])})
    assert qm.windows["S"].next_version <= 3 + N + 1
    answer = qm.one_time("SELECT SUM(S.bytes) AS b FROM S [RANGE 39]")
    assert answer.rows is None and answer.end == 10**9 // T * T - 1


def test_threads_ingest_execute_and_answer_one_time_queries():
    """Ingestion, the periodic executor and one-time queries on three threads; every answer matches the
    oracle over the window it names."""
    qm = QueryManager(SCHEMAS, T, N, isolation="ttu")
    for i, (r, d) in enumerate([(T - 1, T), (2 * T - 1, T), (N * T - 1, 2 * T), (3 * T - 1, 3 * T)]):
        qm.register(f"q{i}", SUM_BY_SRC.format(r=r, d=d))
    frames = []
    done, halfway, changed = threading.Event(), threading.Event(), threading.Event()

    def ingest():
        rng = np.random.default_rng(2)
        for j in range(150):
            if j == 75:
                halfway.set()
                changed.wait(30)
            ts, cols = data(rng, j * T, (j + 1) * T, 300)
            frames.append(pd.DataFrame({"ts": ts, **cols}))
            qm.append("S", ts, cols)
        done.set()

    qm.start()
    feeder = threading.Thread(target=ingest)
    feeder.start()
    answers = []
    while not done.is_set():
        answers.append(qm.one_time("SELECT S.src, SUM(S.bytes) AS b FROM S [RANGE 29] GROUP BY S.src"))
        if halfway.is_set() and not changed.is_set():  # queries come and go while the data flows
            qm.register("late", SUM_BY_SRC.format(r=2 * T - 1, d=2 * T))
            qm.remove("q0")
            qm.register("q0", SUM_BY_SRC.format(r=T - 1, d=T))
            changed.set()
    feeder.join()
    qm.stop()
    frame = pd.concat(frames)
    for a in answers:
        if a.rows is not None:
            assert a.latest - a.first + 1 == min(3, a.latest + 1)  # the window fills up first
            assert dict(zip(a.rows["S.src"].tolist(), a.rows["b"].tolist())) == oracle(frame, a.end, 3 * T)
    stats = qm.stats()
    assert stats["throughput"] > 0 and stats["one_time"]["runs"] == len(answers)
    for name in ("q0", "q1", "q2", "q3", "late"):
        rows = qm.results(name)
        assert [r[0] for r in rows] == list(range(1, len(rows) + 1)) and not stats["queries"][name]["errors"]
        end = rows[-1][1]
        span = {"q0": T, "q1": 2 * T, "q2": N * T, "q3": 3 * T, "late": 2 * T}[name]
        assert {r[3]["S.src"]: r[3]["b"] for r in rows if r[1] == end} == oracle(frame, end, span)


def test_a_restarted_manager_resumes_its_registered_queries(tmp_path):
    qm = QueryManager(SCHEMAS, T, N)
    qm.register("a", SUM_BY_SRC.format(r=T - 1, d=T), priority=2)
    qm.register("b", SUM_BY_SRC.format(r=2 * T - 1, d=2 * T))
    rng = np.random.default_rng(3)
    for j in range(3):
        qm.append("S", *data(rng, j * T, (j + 1) * T, 20))
        qm.run_due()
    seq = qm.queries["a"].seq
    qm.save(tmp_path / "state.json")
    again = QueryManager(SCHEMAS, T, N)
    assert again.restore(tmp_path / "state.json") == ["a", "b"]
    assert again.queries["a"].priority == 2 and again.queries["a"].seq == seq
    for j in range(3, 5):
        again.append("S", *data(rng, j * T, (j + 1) * T, 20))
        again.run_due()
    assert again.results("a")[0][0] == seq + 1
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ExecutionError, match="cannot read the query manager's state"):
        again.restore(tmp_path / "bad.json")


def test_topk_and_quantile_queries_share_one_merge_and_one_sort_per_window():
    """TOPK and QUANTILE keep frequency counts, one synopsis for every k and p of an attribute (Golab's
    thesis §8.3.1): a joint execution merges the reads once and sorts each window's counts once, and every
    answer is the oracle's."""
    texts = {
        "top1": "SELECT RSTREAM(S.src, TOPK(1, S.bytes) AS v) FROM S [RANGE 29 SLIDE 10] GROUP BY S.src",
        "top3": "SELECT RSTREAM(S.src, TOPK(3, S.bytes) AS v) FROM S [RANGE 29 SLIDE 20] GROUP BY S.src",
        "top2_long": "SELECT RSTREAM(S.src, TOPK(2, S.bytes) AS v) FROM S [RANGE 39 SLIDE 10] GROUP BY S.src",
        "median": "SELECT RSTREAM(S.src, MEDIAN(S.bytes) AS v) FROM S [RANGE 29 SLIDE 10] GROUP BY S.src",
        "q90": "SELECT RSTREAM(S.src, QUANTILE(S.bytes, 0.9) AS v) FROM S [RANGE 19 SLIDE 10] GROUP BY S.src",
    }
    oracles = {
        "top1": (3 * T, lambda v: top(v, 1)),
        "top3": (3 * T, lambda v: top(v, 3)),
        "top2_long": (N * T, lambda v: top(v, 2)),
        "median": (3 * T, lambda v: float(v.quantile(0.5))),
        "q90": (2 * T, lambda v: float(v.quantile(0.9))),
    }
    work = {}
    for scheduling in ("aggressive", "edf"):
        qm = QueryManager(SCHEMAS, T, N, scheduling=scheduling)
        for name, text in texts.items():
            qm.register(name, text)
        assert len({r.query.signature for r in qm.queries.values()}) == 1
        rng = np.random.default_rng(4)
        frames = []
        for j in range(N + 1):
            ts, cols = data(rng, j * T, (j + 1) * T, 40)
            cols["bytes"] = cols["bytes"] % 7  # repeated values: ties in the top-k lists
            frames.append(pd.DataFrame({"ts": ts, **cols}))
            qm.append("S", ts, cols)
        qm.advance("S", (N + 1) * T)
        qm.run_due()
        frame = pd.concat(frames)
        end = (N + 1) * T - 1
        for name, (span, want) in oracles.items():
            got = {r[3]["S.src"]: r[3]["v"] for r in qm.results(name) if r[1] == end}
            inside = frame[(frame.ts > end - span) & (frame.ts <= end)]
            expected = {int(k): want(v) for k, v in inside.groupby("src").bytes}
            assert got.keys() == expected.keys() and all(got[k] == pytest.approx(v) for k, v in expected.items()), name
        work[scheduling] = dict(qm.work)
    # one joint execution: one merge of the longest window, and one sort for top1 and top3 (one window)
    assert work["aggressive"]["merged"] < work["edf"]["merged"] / 2  # edf: each query alone
    assert work["aggressive"]["ranked"] < work["edf"]["ranked"]


def top(values: pd.Series, k: int) -> str:
    counts = values.value_counts()
    return ",".join(str(v) for v in sorted(counts.index, key=lambda v: (-counts[v], v))[:k])


def test_null_text_group_keys_group_as_on_the_local_engine():
    """A null text key (None or NaN) is one group, the empty text, as slidewise's readers and the local engine
    make it; its rows are answered, not dropped, and the manager does not crash."""
    from slidewise.api import run

    text = "SELECT RSTREAM(S.k, COUNT(*) AS c, TOPK(1, S.v) AS t, MEDIAN(S.v) AS m) FROM S [RANGE 19 SLIDE 10] GROUP BY S.k"
    rows = {"ts": [1, 2, 3, 4, 12, 13, 25], "k": ["a", None, "b", np.nan, None, "a", "b"], "v": [1, 2, 3, 4, 5, 5, 7]}
    qm = QueryManager({"S": {"k": "str", "v": "int"}}, T, N)
    qm.register("q", text)
    qm.append("S", np.array(rows["ts"][:-1]), {"k": np.array(rows["k"][:-1], object), "v": np.array(rows["v"][:-1])})
    qm.advance("S", 20)
    qm.run_due()
    got = {r[3]["S.k"]: (r[3]["c"], r[3]["t"], r[3]["m"]) for r in qm.results("q") if r[1] == 19}
    assert got == {"": (3, "2", 4.0), "a": (2, "1", 3.0), "b": (1, "3", 3.0)}
    local = run(text, {"S": rows}, ts_unit="raw").results
    at = local[local.ts == 20].sort_values("S.k")  # the local engine's window (0, 20] ends at 20: the same rows
    assert {k: (c, t, m) for k, c, t, m in zip(at["S.k"], at.c, at.t, at.m)} == got


def test_re_executions_without_an_update_repeat_the_previous_answer():
    """A scheduler that never idles (Algorithms 9-11 as written) re-executes queries between updates: each such
    re-execution answers the same window as the query's previous run, with the same rows (the oracle's)."""
    qm = QueryManager(SCHEMAS, T, N, scheduling="hybrid-late-pending", retain=10_000)
    qm.scheduler.idle = False
    qm.register("sum", SUM_BY_SRC.format(r=2 * T - 1, d=T))
    qm.register("top", f"SELECT RSTREAM(TOPK(2, S.src) AS v) FROM S [RANGE {N * T - 1} SLIDE {2 * T}]")
    rng = np.random.default_rng(3)
    frames: list[pd.DataFrame] = []
    answers: dict[str, list] = {name: [] for name in qm.queries}
    for j in range(8):
        ts, cols = data(rng, j * T, (j + 1) * T, 30)
        frames.append(pd.DataFrame({"ts": ts, **cols}))
        qm.append("S", ts, cols)
        for _ in range(4):  # more runs than tasks: some without an update
            batch = qm.scheduler.next()
            qm.execute([qm.queries[n] for n in batch])
            for name in batch:
                reg = qm.queries[name]
                answers[name].append((reg.end, {c: v.tolist() for c, v in reg.batches[-1][1].items()} if reg.batches else None))
    frame = pd.concat(frames)
    repeats = 0
    for name, runs in answers.items():
        for (end, rows), (prev_end, prev) in zip(runs[1:], runs):
            if end == prev_end:
                repeats += 1
                assert rows == prev, name
    assert repeats >= 8
    for end, rows in answers["sum"]:
        if end > 0:
            assert dict(zip(rows["S.src"], rows["b"])) == oracle(frame, end, 2 * T)
    assert qm.run_due() == len(qm.scheduler.tasks)  # never idle: one batch per task, then it returns
