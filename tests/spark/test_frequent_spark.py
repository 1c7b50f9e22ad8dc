"""FREQUENT on Spark (:mod:`slidewise.spark.frequent`) equals the local engine.

In-process first (sequencer and the FREQUENT bucket as Spark runs them,
state as sealed bytes between micro-batches): random streams with ties and
gaps, count and time windows, WHERE, lateness, several micro-batches, a
continued run after an end of input. Then on Spark (``local[2]``): a ROWS and
a RANGE query, and a run stopped after its first committed micro-batch and
rerun on its checkpoint with more files.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from slidewise.cql import parse_any
from slidewise.runtime.frequent import bind_frequent
from slidewise.runtime.plan_engine import execute_plan
from slidewise.spark.frequent import FrequentBucket
from slidewise.spark.keying import Keying
from slidewise.spark.layout import wire_frame
from tests.spark.harness import csv_files, cut, norm, run_buckets, sequence_into_buckets, sequencer, step_rows, wait_for_first_commit

KINDS = {"src": "str", "a": "int"}
QUERIES = [
    "SELECT RSTREAM FREQUENT(S.src, 2) FROM S [ROWS 12 SLIDE 4]",
    "SELECT RSTREAM FREQUENT(S.a, 1) FROM S [ROWS 9 SLIDE 6] WHERE S.src <> 'z'",
    "SELECT RSTREAM FREQUENT(S.src, 2) FROM S [RANGE 12 SLIDE 4] WHERE S.a > 0",
    "SELECT RSTREAM FREQUENT(S.a, 2) FROM S [RANGE 5 SLIDE 6]",
    "SELECT RSTREAM FREQUENT(S.a, 1, exact => true) FROM S [RANGE 10 SLIDE 3]",
]

streams = (
    st.integers(1, 60)
    .flatmap(
        lambda n: st.tuples(
            st.lists(st.sampled_from([0, 0, 1, 2, 9]), min_size=n, max_size=n),
            st.lists(st.sampled_from("xyz"), min_size=n, max_size=n),
            st.lists(st.integers(0, 3), min_size=n, max_size=n),
        )
    )
    .map(lambda t: pd.DataFrame({"ts": np.cumsum(np.asarray(t[0], np.int64)), "src": t[1], "a": np.asarray(t[2], np.int64)}))
)


def local(query: str, frame: pd.DataFrame, lateness: int = 0) -> Counter:
    return norm(execute_plan(parse_any(query), {"S": frame}, collect=True, lateness=lateness).results)


def simulate(query: str, steps: list, lateness: int = 0) -> tuple[Counter, list[str], FrequentBucket]:
    """Sequencer and the FREQUENT bucket in-process over ``steps`` (frames of S per micro-batch, or
    ``"eof"``): the results, the reject reasons and the bucket logic."""
    logic = FrequentBucket(bind_frequent(parse_any(query), KINDS), KINDS, lateness)
    return (*run_buckets(logic, KINDS, steps, Keying("single", 1), lateness), logic)


@given(frame=streams, query=st.sampled_from(QUERIES), points=st.lists(st.integers(0, 60), max_size=3))
def test_frequent_bucket_equals_the_local_engine(frame, query, points):
    note(frame.to_records(index=False).tolist())
    got, rejects, _ = simulate(query, [*cut(frame, points), "eof"])
    assert got == local(query, frame) and not rejects


@given(frame=streams, query=st.sampled_from(QUERIES), at=st.integers(0, 60))
def test_a_continued_run_equals_one_run_over_the_kept_tuples(frame, query, at):
    """End of input, then more input on the same state: one run over the tuples after the first end's
    last instant; those at or before it are late rejects."""
    first, rest = frame.iloc[:at], frame.iloc[at:]
    got, rejects, logic = simulate(query, [first, "eof", rest, "eof"])
    if not len(first):
        assert got == local(query, frame) and not rejects
        return
    q, last = logic.spec, int(first.ts.max())
    done = last if q.counting else -(-last // q.slide) * q.slide
    late = rest.ts <= done
    assert got == local(query, pd.concat([first, rest[~late]]))
    assert len(rejects) == int(late.sum())
    assert all(r.startswith(f"late: at or before ts {done}") for r in rejects)


def test_lateness_reorders_as_the_local_engine():
    frame = pd.DataFrame({"ts": [5, 3, 9, 1, 12, 30, 14, 29, 31, 31, 33], "src": list("xyzxyzxyzxx"), "a": [1, 2, 1, 2, 1, 1, 2, 2, 1, 2, 1]})
    for query in QUERIES:
        got, rejects, _ = simulate(query, [frame.iloc[:4], frame.iloc[4:7], frame.iloc[7:], "eof"], lateness=3)
        assert got == local(query, frame, lateness=3), query
        assert len(rejects) == 2 and all(r.startswith("late by") for r in rejects)


def test_state_holds_the_summaries_not_the_tuples():
    """After 1,000 tuples, a count window's state is the top-k summaries of its sub-windows and the
    open sub-window's tuples (fewer than s), not the window's tuples."""
    n = 1000
    frame = pd.DataFrame({"ts": np.arange(n), "src": np.asarray(list("xyzw"))[np.arange(n) % 4], "a": np.arange(n) % 50})
    got, _, logic = simulate("SELECT RSTREAM FREQUENT(S.a, 3) FROM S [ROWS 500 SLIDE 30]", [frame])
    assert sum(got.values()) > 0
    ((b, parts),) = sequence_into_buckets(sequencer(KINDS, Keying("single", 1)), {}, wire_frame(step_rows(frame, 0, KINDS))).items()
    blob, frames = logic.process(b, None, pd.concat(parts, ignore_index=True))
    st_, run = logic._load(blob, lambda cols: None)
    held = run.pending[0]
    assert len(st_["buffer"]["t"]) == 1  # the last tuple waits for the release bound
    assert len(held.ids) <= 500 // 10 + 30 // 10 and len(held.items) <= 3 * len(held.ids)  # b + D/s top-3 lists
    assert run.carry is None or len(run.carry[0]) < 10


# ---------------------------------------------------------------- on Spark


def _frame(seed: int, n: int = 90) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"ts": np.cumsum(rng.choice([0, 0, 1, 2, 3, 15], n)), "src": rng.choice(list("xyzw"), n), "a": rng.integers(0, 4, n)})


SPARK_CASES = {"rows": QUERIES[1], "range": QUERIES[2]}


@pytest.mark.spark
@pytest.mark.parametrize("name", list(SPARK_CASES))
def test_spark_frequent_equals_local(spark, tmp_path, name):
    from slidewise.spark.plan_runner import run_plan_spark

    query, frame = SPARK_CASES[name], _frame(3)
    csv_files(frame, tmp_path / "S", 3)
    res = run_plan_spark(query, {"S": str(tmp_path / "S")}, spark=spark, max_files_per_trigger=1, once=True)
    assert res.stats["path"].startswith("frequent items:")
    want = local(query, frame)
    assert want and norm(res.results) == want
    assert res.stats["micro_batches"] >= 3 and res.stats["inputs"] == {"S": len(frame)}


@pytest.mark.spark
def test_spark_frequent_restart_after_stop_is_exactly_once(spark, runs, tmp_path):
    """Stop a live run after its first committed micro-batch, add files, rerun on the checkpoint to the
    end of input: the local engine's rows over all files, none lost or repeated."""
    from slidewise.spark import read_results
    from slidewise.spark.plan_runner import run_plan_spark, start_plan_spark

    query, frame = SPARK_CASES["rows"], _frame(8, n=120)
    half = len(frame) // 2
    csv_files(frame.iloc[:half], tmp_path / "S", 2)
    ckpt, out = tmp_path / "ckpt", tmp_path / "out.parquet"
    opts = dict(spark=spark, checkpoint=str(ckpt), out=str(out), max_files_per_trigger=1)
    run = start_plan_spark(query, {"S": str(tmp_path / "S")}, once=False, trigger="1s", **opts)
    runs.append(run)
    wait_for_first_commit(ckpt)
    run.stop()  # mid-stream: its input has not ended
    assert not run.ended
    csv_files(frame.iloc[half:], tmp_path / "S", 2, first=2)
    res = run_plan_spark(query, {"S": str(tmp_path / "S")}, once=True, **opts)
    assert res.stats["input_ended"]
    assert norm(read_results(out)) == local(query, frame)
