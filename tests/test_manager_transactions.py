"""The query manager's sub-windows and concurrency control (Golab's thesis ch. 7): every committed query
read a contiguous window (the latest one under serial, LWS and TTU), and its answer is the oracle's
over exactly the sub-windows it claims to have read."""

from __future__ import annotations

import threading

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slidewise.errors import QueryError
from slidewise.manager.queries import Shared, compile_query
from slidewise.manager.transactions import POLICIES, TransactionScheduler
from slidewise.manager.window import Window

SCHEMAS = {"S": {"src": "int", "bytes": "int"}}
T = 10


def queries(n: int) -> list[tuple]:
    """(CQL, oracle over a DataFrame) pairs for windows of n sub-windows."""

    def q1(df):
        df = df[df.bytes > 2]
        g = df.groupby("src").agg(b=("bytes", "sum"), c=("bytes", "size")).reset_index()
        return {"S.src": g.src.to_numpy(), "b": g.b.to_numpy(), "c": g.c.to_numpy()}

    def q2(df):
        g = df.groupby("src").agg(hi=("bytes", "max"), lo=("bytes", "min"), c=("bytes", "size")).reset_index()
        g = g[g.c > 1]
        return {"S.src": g.src.to_numpy(), "hi": g.hi.to_numpy(), "lo": g.lo.to_numpy()}

    def q3(df):
        return {"total": np.array([df.bytes.sum()])} if len(df) else {"total": np.array([], np.int64)}

    def top_median(k: int):
        def q(df):
            g = df.groupby("src").bytes
            return {"S.src": np.array(sorted(g.groups), np.int64), "t": np.array([top(v, k) for _, v in g], object), "m": g.quantile(0.5).to_numpy()}

        return q

    def q4(df):
        g = df.groupby("src").bytes
        return {"S.src": np.array(sorted(g.groups), np.int64), "top": np.array([top(v, 2) for _, v in g], object), "q": g.quantile(0.3).to_numpy()}

    return [
        (f"SELECT RSTREAM(S.src, SUM(S.bytes) AS b, COUNT(*) AS c) FROM S [RANGE {min(2, n) * T - 1} SLIDE {T}] WHERE S.bytes > 2 GROUP BY S.src", q1),
        (f"SELECT RSTREAM(S.src, MAX(S.bytes) AS hi, MIN(S.bytes) AS lo) FROM S [RANGE {n * T - 1} SLIDE {2 * T}] GROUP BY S.src HAVING COUNT(*) > 1", q2),
        (f"SELECT SUM(S.bytes) AS total FROM S [RANGE {max(1, n - 1) * T - 1}]", q3),
        (f"SELECT RSTREAM(S.src, TOPK(2, S.bytes) AS top, QUANTILE(S.bytes, 0.3) AS q) FROM S [RANGE {n * T - 1} SLIDE {T}] GROUP BY S.src", q4),
        (f"SELECT RSTREAM(S.src, TOPK(1, S.bytes) AS t, MEDIAN(S.bytes) AS m) FROM S [RANGE {min(2, n) * T - 1} SLIDE {T}] GROUP BY S.src", top_median(1)),
        (f"SELECT RSTREAM(S.src, TOPK(3, S.bytes) AS t, MEDIAN(S.bytes) AS m) FROM S [RANGE {n * T - 1} SLIDE {2 * T}] GROUP BY S.src", top_median(3)),
    ]


def siblings(compiled: list[tuple], q) -> tuple:
    """The other queries of ``q``'s signature over no more sub-windows (one synopsis: they run jointly)."""
    return tuple((r, o) for r, o in compiled if r is not q and r.signature == q.signature and r.nk <= q.nk and r.access == q.access)


def top(values: pd.Series, k: int) -> str:
    """TOPK's oracle: the ``k`` most frequent values (count descending, then value) joined by ``,``."""
    counts = values.value_counts()
    return ",".join(str(v) for v in sorted(counts.index, key=lambda v: (-counts[v], v))[:k])


def batch(rng: np.random.Generator, j: int, rows: int) -> dict[str, np.ndarray]:
    return {"ts": np.sort(rng.integers(j * T, (j + 1) * T, rows)), "src": rng.integers(0, 5, rows), "bytes": rng.integers(0, 9, rows)}


def check(q, oracle, txn, written: dict[int, dict], latest_now: int, policy: str, siblings: tuple = ()) -> None:
    """The answer of a committed ``txn`` equals ``oracle`` over the versions it read, which are contiguous
    and (except under ws) the latest. ``siblings``: (query, oracle) of ``q``'s signature and no longer window,
    answered first over the same reads in one joint execution (one merge, one sort per window), each over
    its own youngest sub-windows."""
    versions = txn.versions
    assert versions == list(range(txn.latest - len(versions) + 1, txn.latest + 1))
    assert len(versions) == min(q.nk, txn.latest + 1)
    if policy == "ws":
        assert txn.latest <= latest_now
    else:
        assert txn.latest == latest_now
    shared, parts = Shared(), txn.partials()
    for query, want in [*siblings, (q, oracle)]:
        got = query.answer(parts, (txn.latest + 1) * T - 1, shared)
        mine = versions[max(0, len(versions) - query.nk) :]
        expect(got, want(pd.concat([pd.DataFrame(written[v]) for v in mine]) if mine else pd.DataFrame({"ts": [], "src": [], "bytes": []})), txn.latest)


def expect(got, want: dict, latest: int) -> None:
    if got is None:
        assert all(len(v) == 0 for v in want.values())
        return
    assert (got["ts"] == (latest + 1) * T - 1).all() and (got["sign"] == 1).all()
    for col, vals in want.items():
        if vals.dtype.kind == "f":
            np.testing.assert_allclose(got[col].astype(float), vals, err_msg=col)
        else:
            np.testing.assert_array_equal(got[col], vals, err_msg=col)


@settings(max_examples=60, deadline=None)
@given(
    policy=st.sampled_from(POLICIES),
    rescan=st.booleans(),
    n=st.integers(1, 5),
    access=st.sampled_from(["window", "synopsis"]),
    seed=st.integers(0, 2**32 - 1),
    ops=st.lists(st.tuples(st.sampled_from(["slide", "begin", "step", "step", "step"]), st.integers(0, 50)), max_size=120),
)
def test_random_interleavings_commit_contiguous_latest_windows(policy, rescan, n, access, seed, ops):
    rng = np.random.default_rng(seed)
    window = Window("S", T, n)
    sched = TransactionScheduler(window, policy, rescan=rescan)
    compiled = [(compile_query(text, SCHEMAS, T, n, one_time="RSTREAM" not in text, access=access), oracle) for text, oracle in queries(n)]
    written: dict[int, dict] = {}
    running: list[tuple] = []
    committed = 0
    for op, arg in ops:
        if op == "slide":
            cols = batch(rng, window.next_version, arg % 7)
            sub = sched.slide(cols, block=False)
            if sub is not None:
                written[sub.version] = cols
        elif op == "begin":
            q, oracle = compiled[arg % len(compiled)]
            txn = sched.begin(q.nk, q.read, priority=arg % 2, block=False)
            if txn is not None:
                running.append((q, oracle, txn))
        elif running:
            q, oracle, txn = running[arg % len(running)]
            if sched.step(txn, block=False):
                running.remove((q, oracle, txn))
                check(q, oracle, txn, written, window.latest, policy, siblings(compiled, q))
                committed += 1
    for q, oracle, txn in sorted(running, key=lambda r: -r[2].priority):  # the rest, without slides: higher priority first (one thread)
        sched.run(txn)
        check(q, oracle, txn, written, window.latest, policy, siblings(compiled, q))
    if policy not in ("lws", "ttu") or rescan:
        assert sched.counts["aborts"] == 0
    if not rescan:
        assert sched.counts["rescans"] == 0


def _history(policy: str) -> TransactionScheduler:
    """The thesis's histories He / Hf (§7.4.2): five sub-windows, one query, two slides while it reads."""
    window = Window("S", T, 5)
    sched = TransactionScheduler(window, policy)
    rng = np.random.default_rng(1)
    for j in range(5):
        sched.slide(batch(rng, j, 3))
    q = compile_query("SELECT RSTREAM(COUNT(*) AS c) FROM S [RANGE 49 SLIDE 10]", SCHEMAS, T, 5)
    txn = sched.begin(q.nk, q.read)
    order = []
    read = txn.read
    txn.read = lambda sub: order.append(sub.version % 5) or read(sub)
    sched.step(txn)
    sched.slide(batch(rng, 5, 3))
    for _ in range(3):
        sched.step(txn)
    sched.slide(batch(rng, 6, 3))
    sched.run(txn)
    sched.order = order
    return sched


def test_ttu_reads_youngest_first_and_avoids_the_abort_lws_makes():
    """He = r[4] w5[0] r[0] r[3] r[2] w6[1] r[1] commits; Hf (slot order) aborts at w5."""
    ttu, lws = _history("ttu"), _history("lws")
    assert ttu.order == [4, 0, 3, 2, 1] and ttu.counts["aborts"] == 0
    assert lws.order[:1] == [0] and lws.counts["aborts"] >= 1


def test_a_waiting_serial_slide_and_a_snapshot_read():
    window = Window("S", T, 3)
    serial = TransactionScheduler(window, "serial")
    q = compile_query("SELECT RSTREAM(COUNT(*) AS c) FROM S [RANGE 29 SLIDE 10]", SCHEMAS, T, 3)
    rng = np.random.default_rng(2)
    serial.slide(batch(rng, 0, 4))
    txn = serial.begin(q.nk, q.read)
    assert serial.slide(batch(rng, 1, 4), block=False) is None and serial.begin(1, q.read, block=False) is None
    serial.run(txn)
    assert serial.slide(batch(rng, 1, 4), block=False) is not None

    ws = TransactionScheduler(Window("S", T, 3), "ws")
    ws.slide(batch(rng, 0, 4))
    txn = ws.begin(q.nk, q.read)
    ws.slide(batch(rng, 1, 4))
    ws.run(txn)
    assert txn.versions == [0] and txn.latest == 0 and ws.window.latest == 1


def test_rescan_drops_the_expired_partial_instead_of_aborting():
    sched = TransactionScheduler(Window("S", T, 3), "lws", rescan=True)
    q = compile_query("SELECT RSTREAM(COUNT(*) AS c) FROM S [RANGE 29 SLIDE 10]", SCHEMAS, T, 3)
    rng = np.random.default_rng(3)
    for j in range(3):
        sched.slide(batch(rng, j, 2))
    txn = sched.begin(q.nk, q.read)
    sched.step(txn)  # reads version 0, the oldest
    sched.slide(batch(rng, 3, 2))  # version 0 expires
    sched.run(txn)
    assert txn.versions == [1, 2, 3] and txn.rescans == 1 and txn.aborts == 0


@pytest.mark.parametrize("policy", ["ttu", "lws", "ws", "serial"])
def test_threads_ingest_and_query_concurrently(policy):
    """An ingestion thread slides while a periodic and a high-priority one-time thread scan."""
    n = 4
    window = Window("S", T, n)
    sched = TransactionScheduler(window, policy)
    (text1, oracle1), (text2, oracle2), *_ = queries(n)
    periodic = compile_query(text2, SCHEMAS, T, n)
    once = compile_query(text1.replace("RSTREAM", "RSTREAM"), SCHEMAS, T, n, access="window")
    written: dict[int, dict] = {}
    rng = np.random.default_rng(4)
    for j in range(n):
        written[j] = batch(rng, j, 200)
        sched.slide(written[j])
    stop, enough = threading.Event(), threading.Event()
    results, errors, commits = [], [], {"periodic": 0, "once": 0}

    def ingest():
        # at least 400 slides, and on until each query thread has committed 3 times (a cap: then they commit
        # in a window that no longer moves): no assumption on how fast the threads run relative to each other
        r = np.random.default_rng(5)
        while window.next_version < 400 or (not enough.is_set() and window.next_version < 20_000):
            cols = batch(r, window.next_version, 200)
            written[window.next_version] = cols  # only this thread writes
            sched.slide(cols)

    turn = threading.Semaphore(0)  # a one-time query after each periodic commit: it would starve the periodic one

    def query(q, oracle, priority, kind):
        try:
            while not stop.is_set():
                if kind == "once" and commits["once"] and not turn.acquire(timeout=1):
                    continue  # stop is checked again
                txn = sched.run(sched.begin(q.nk, q.read, priority))
                results.append((q, oracle, txn, txn.latest))
                commits[kind] += 1
                if kind == "periodic":
                    turn.release()
                if min(commits.values()) >= 3:
                    enough.set()
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)
            enough.set()

    threads = [
        threading.Thread(target=ingest),
        threading.Thread(target=query, args=(periodic, oracle2, 0, "periodic")),
        threading.Thread(target=query, args=(once, oracle1, 1, "once")),
    ]
    for th in threads:
        th.start()
    threads[0].join(timeout=120)
    enough.wait(timeout=120)
    stop.set()
    for th in threads[1:]:
        th.join(timeout=60)
    assert not errors and min(commits.values()) >= 3 and not any(th.is_alive() for th in threads)
    for q, oracle, txn, latest in results:
        check(q, oracle, txn, written, latest if policy != "ws" else window.latest, policy)


def test_queries_the_manager_refuses_get_one_message():
    with pytest.raises(QueryError, match="not a whole number of sub-windows of 10"):
        compile_query("SELECT RSTREAM(COUNT(*) AS c) FROM S [RANGE 14 SLIDE 10]", SCHEMAS, T, 3)
    with pytest.raises(QueryError, match="SLIDE 5 is not a multiple"):
        compile_query("SELECT RSTREAM(COUNT(*) AS c) FROM S [RANGE 9 SLIDE 5]", SCHEMAS, T, 3)
    with pytest.raises(QueryError, match="periodic one-stream aggregates only"):
        compile_query("SELECT S.src FROM S [RANGE 9]", SCHEMAS, T, 3)
    with pytest.raises(QueryError, match="unknown stream R"):
        compile_query("SELECT RSTREAM(COUNT(*) AS c) FROM R [RANGE 9 SLIDE 10]", SCHEMAS, T, 3)
    with pytest.raises(QueryError) as refused:
        compile_query("SELECT RSTREAM(APPROX_COUNT_DISTINCT(S.bytes) AS c) FROM S [RANGE 9 SLIDE 10]", SCHEMAS, T, 3)
    assert str(refused.value) == (
        "the query manager answers COUNT, SUM, AVG, MIN, MAX, MEDIAN, QUANTILE and TOPK, DISTINCT or not, not APPROX_COUNT_DISTINCT"
        " (hint: use the exact aggregate, or run the query with `slidewise run`)"
    )


def test_a_one_time_query_preempts_a_periodic_scan_between_reads():
    """A higher-priority transaction suspends a running one after its current sub-window read (§7.4.1)."""
    sched = TransactionScheduler(Window("S", T, 4), "ttu")
    rng = np.random.default_rng(6)
    for j in range(4):
        sched.slide(batch(rng, j, 2))
    order, gate, reading = [], threading.Event(), threading.Event()

    def slow(sub):
        order.append(("periodic", sub.version))
        reading.set()
        gate.wait(10)

    low = sched.begin(4, slow, priority=0)
    worker = threading.Thread(target=sched.run, args=(low,))
    worker.start()
    reading.wait(10)
    high = sched.begin(2, lambda sub: order.append(("one-time", sub.version)), priority=1)
    gate.set()
    sched.run(high)
    worker.join(10)
    assert order == [("periodic", 3), ("one-time", 3), ("one-time", 2), ("periodic", 2), ("periodic", 1), ("periodic", 0)]
    assert low.done and low.versions == [0, 1, 2, 3] and high.versions == [2, 3]


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), sizes=st.lists(st.integers(1, 6), min_size=1, max_size=5), shuffle=st.randoms(use_true_random=False))
def test_a_joint_execution_scans_its_reads_once_from_the_youngest(seed, sizes, shuffle):
    """Golab's thesis §8.3.1 (CS2): the queries of one synopsis over different windows share one scan of the
    reads from the youngest, each window's state taken on the way; asked shorter windows first, each read's
    counters are merged once, and in any order the answers are each query's alone."""
    rng = np.random.default_rng(seed)
    window = Window("S", T, 6)
    for j in range(6):
        window.write(batch(rng, j, 8))
    texts = [
        f"SELECT RSTREAM(S.src, TOPK({1 + i % 3}, S.bytes) AS t, MEDIAN(S.bytes) AS m, MAX(S.bytes) AS hi) FROM S [RANGE {k * T - 1} SLIDE {T}] GROUP BY S.src"
        for i, k in enumerate(sizes)
    ]
    qs = [compile_query(text, SCHEMAS, T, 6) for text in texts]
    parts = [q.read(sub) for sub in window.contents() for q in qs[:1]]
    alone = [q.answer(parts, 59) for q in qs]
    order = list(range(len(qs)))
    shuffle.shuffle(order)
    shared = Shared(qs)
    for i in order:
        got = qs[i].answer(parts, 59, shared)
        assert got.keys() == alone[i].keys() and all(np.array_equal(got[c], alone[i][c]) for c in got)
    ascending = Shared(qs)
    for q in sorted(qs, key=lambda q: q.nk):
        q.answer(parts, 59, ascending)
    counters = sum(len(f.counts) for _, p in parts[-max(sizes) :] for f in p if hasattr(f, "counts"))
    groups = sum(len(u[0]) for u, _ in parts[-max(sizes) :])
    assert ascending.work["merged"] == counters + 2 * groups  # frequencies once, COUNT(*) and MAX per group once
    assert shared.work["merged"] >= ascending.work["merged"]
