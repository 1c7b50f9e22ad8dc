"""Idle streams on the Spark engine (``--source-option NAME.idle-timeout=SECONDS``).

Acceptance: two streams with different lateness and an idle third one. The
bucket stage releases nothing while the third stream is silent, until its
timeout (processing time) passes; then output appears before it resumes.
When it resumes, its tuples behind what was released are rejects with the
reason, and the answer equals the local engine's over the tuples admitted. In
process (the sequencer and the bucket stage, a fake clock); then once live on
Spark with directories that grow.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest

import slidewise
from slidewise.cql.parser import parse_plan
from slidewise.plan.bind import bind
from slidewise.spark.keying import Keying
from slidewise.spark.layout import EOF, TUPLE, Layout, StreamInfo, pack, unpack, wire_frame
from slidewise.spark.plan_state import REJECTS, RESULT, PlanBucket, partition_attribute
from slidewise.spark.sequencer import SequencerLogic
from tests.spark.harness import sequence_into_buckets

Q = "SELECT RSTREAM(*) FROM A [RANGE 3], B [RANGE 3] WHERE A.k = B.k AND NOT EXISTS (SELECT * FROM C [RANGE 3] WHERE C.k = A.k)"
LATENESS = {"A": 0, "B": 2, "C": 0}


def _frame(ts: list[int], ks: list[int]) -> pd.DataFrame:
    return pd.DataFrame({"ts": ts, "k": ks}).astype("int64")


#: (clock seconds, rows per stream) per micro-batch: C sends at first, then is silent past its timeout, then resumes
STEPS = [
    (0.0, {"A": _frame([1, 2, 3], [1, 2, 1]), "B": _frame([1, 3, 2], [1, 1, 2]), "C": _frame([1], [2])}),
    (3.0, {"A": _frame([4, 5, 6], [1, 2, 1]), "B": _frame([5, 4, 6], [2, 1, 1])}),
    (9.0, {"A": _frame([7, 8, 9, 10], [1, 1, 2, 1]), "B": _frame([8, 7, 10, 9], [1, 1, 2, 2])}),
    (10.0, {"C": _frame([5, 9, 11], [1, 1, 2]), "A": _frame([11, 12], [2, 1]), "B": _frame([12, 11], [1, 2])}),
]


def _rows(res: pd.DataFrame, columns: list[str]) -> Counter:
    vals = [c for c in columns if c not in ("ts", "sign")]
    return Counter((int(t), tuple(int(v) for v in r), int(s)) for r, t, s in zip(res[vals].itertuples(index=False, name=None), res["ts"], res["sign"]))


def _wire_rows(data, names: list[str], seen: dict[str, int]) -> list[dict]:
    """One micro-batch's rows as the sources hand them on (each stream's tuples packed, or the end marker)."""
    if data == "eof":
        return [{"k": EOF, "s": 0}]
    rows = []
    for i, n in enumerate(names):
        if n not in data:
            continue
        f = data[n]
        q = seen[n] + np.arange(len(f), dtype=np.int64)
        seen[n] += len(f)
        cols = {
            "t": f["ts"].to_numpy(np.int64),
            "q": q,
            "o": np.zeros(len(f), np.int64),
            "fi": np.zeros(len(f), np.int32),
            "files": [f"file:///in/{n}.csv"],
            "k": f["k"].to_numpy(np.int64),
        }
        rows.append({"k": TUPLE, "s": i, "q": len(f), "p": pack(cols)})
    return rows


def test_an_idle_stream_is_left_out_after_its_timeout_and_rejoins(monkeypatch):
    names = ["A", "B", "C"]
    plan = bind(parse_plan(Q), {n: ["k"] for n in names})
    attr, _ = partition_attribute(plan)
    keying = Keying("hash", 2, keys=(attr,) * 3)
    layout = Layout(tuple(StreamInfo(n, n, {"k": "int"}, "raw", LATENESS[n], "csv", 1, idle=5.0 if n == "C" else None) for n in names))
    seq, seq_state, blobs = SequencerLogic(layout, keying), {}, {}
    logic = PlanBucket(plan, names, [["k"]] * 3, [LATENESS[n] for n in names], idle=[i.idle for i in layout.streams], strategy="upa")
    clock = [0.0]
    logic.clock = lambda: clock[0]
    seen = dict.fromkeys(names, 0)
    out, rejects, per_step = Counter(), [], []
    for now, data in [*STEPS, (11.0, "eof")]:
        clock[0] = now
        rows = _wire_rows(data, names, seen)
        got = Counter()
        for b, parts in sorted(sequence_into_buckets(seq, seq_state, wire_frame(rows)).items()):
            blobs[b], frames = logic.process(b, blobs.get(b), pd.concat(parts, ignore_index=True))
            for f in frames:
                for r in f.itertuples(index=False):
                    if r.k == RESULT:
                        got += _rows(pd.DataFrame(unpack(r.p)), logic.columns)
                    elif r.k == REJECTS:
                        rejects += list(unpack(r.p)["reason"])
        per_step.append(got)
        out += got
    assert not per_step[0] and not per_step[1]  # C not idle yet (3 s < 5 s): it holds A and B back
    assert per_step[2]  # C idle for 9 s: A and B's tuples below min(10 - 0, 10 - 2) are answered before C resumes
    assert max(ts for ts, _v, _s in per_step[2]) < 8
    assert rejects == ["late: below ts 8, released while stream C was idle"]  # C's ts 5; its 9 and 11 join
    admitted = {n: pd.concat([d[n] for _t, d in STEPS if n in d], ignore_index=True) for n in names}
    admitted["C"] = admitted["C"][admitted["C"]["ts"] != 5]
    local = slidewise.run(Q, admitted, streams={n: {"lateness": LATENESS[n]} for n in names})
    assert out == _rows(local.results, list(local.results.columns))


def test_an_idle_stream_in_a_join_on_the_router_path():
    """The join path's bucket stage (the router's segments, the hosted join operator) leaves C out the same way."""
    from slidewise.cql import load_query
    from slidewise.plan.bind import bind_query
    from slidewise.spark.bucket import BucketJoin
    from slidewise.spark.keying import choose_keying
    from slidewise.spark.layout import RESULT as JOIN_RESULT
    from tests.spark.harness import route_into_buckets

    q = load_query("SELECT * FROM A [RANGE 3], B [RANGE 3], C [RANGE 9] WHERE A.k = B.k AND B.k = C.k")
    names = ["A", "B", "C"]
    infos = tuple(StreamInfo(n, n, {"k": "int"}, "raw", LATENESS[n], "csv", 1, idle=5.0 if n == "C" else None) for n in names)
    q = bind_query(q, [dict(i.kinds) for i in infos])
    layout = Layout.build(q, list(infos))
    keying = choose_keying(q, [i.kinds for i in infos], 2)
    join = BucketJoin(q, layout)
    clock = [0.0]
    join.clock = lambda: clock[0]
    seen, blobs = dict.fromkeys(names, 0), {}
    per_step, reasons = [], []
    for now, data in [*STEPS, (11.0, "eof")]:
        clock[0] = now
        rows = _wire_rows(data, names, seen)
        got = 0
        for b, parts in sorted(route_into_buckets(layout, keying, wire_frame(rows)).items()):
            blobs[b], frames = join.process(b, blobs.get(b), pd.concat(parts, ignore_index=True))
            for f in frames:
                got += int((f["k"] == JOIN_RESULT).sum())
                if "rr" in f:
                    reasons += [r for r in f["rr"].dropna().tolist() if r]
        per_step.append(got)
    assert per_step[:2] == [0, 0] and per_step[2] > 0  # answered before C resumes
    assert reasons == ["late by 3 (lateness 0)"]  # C's ts 5, behind the released bound 8
    admitted = {n: pd.concat([d[n] for _t, d in STEPS if n in d], ignore_index=True) for n in names}
    admitted["C"] = admitted["C"][admitted["C"]["ts"] != 5]
    local = slidewise.run(q.text, admitted, streams={n: {"lateness": LATENESS[n]} for n in names})
    assert sum(per_step) == len(local.results) > 0


@pytest.mark.spark
def test_live_spark_answers_before_an_idle_stream_resumes(spark, runs, tmp_path):
    """Live directories, C silent for longer than its 3 s timeout: A and B's answer appears before C
    resumes; then C resumes (one tuple behind the released bound is a reject) and ending the input gives
    the local engine's answer over the admitted tuples."""
    import os
    import time

    from slidewise.spark.plan_runner import start_plan_spark

    dirs = {n: tmp_path / n for n in LATENESS}

    def drop(step: int) -> None:
        for n, f in STEPS[step][1].items():
            dirs[n].mkdir(exist_ok=True)
            path = dirs[n] / f"part-{step:03d}.csv"
            f.to_csv(path, index=False)
            os.utime(path, (1_000_000 + step, 1_000_000 + step))

    settings = {"B": {"lateness": 2}, "C": {"idle-timeout": 3}}
    drop(0)
    run = start_plan_spark(Q, {n: str(d) for n, d in dirs.items()}, spark=spark, trigger="1s", buckets=2, streams=settings)
    runs.append(run)
    assert run.process_all_available()
    drop(1)
    assert run.process_all_available()
    time.sleep(4)  # C has sent nothing for longer than its timeout
    drop(2)
    assert run.process_all_available()
    assert len(run.sink.frame())  # output before C resumes
    drop(3)
    assert run.process_all_available()
    run.end_input()
    res = run.result()
    assert res.rejects.by_stream() == {"C": 1}
    admitted = {n: pd.concat([d[n] for _t, d in STEPS if n in d], ignore_index=True) for n in LATENESS}
    admitted["C"] = admitted["C"][admitted["C"]["ts"] != 5]
    local = slidewise.run(Q, admitted, streams={n: {"lateness": LATENESS[n]} for n in LATENESS})
    assert _rows(res.results, list(res.results.columns)) == _rows(local.results, list(local.results.columns))
