"""The pane path on Spark (:mod:`slidewise.spark.panes`) equals the local engine.

The bucket logic runs in-process first (sequencer and pane buckets as Spark
runs them, state as sealed bytes between micro-batches) on random streams and
queries — RSTREAM / ISTREAM / DSTREAM, COUNT / SUM / AVG / MIN / MAX, WHERE,
HAVING, ties, gaps (empty windows), several micro-batches, an end of input
and a continued run — then on Spark (``local[2]``): a few fixed cases, and a
run stopped after its first committed micro-batch and rerun on its
checkpoint with more files (no row lost or repeated).
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from slidewise.cql.parser import parse_plan
from slidewise.plan.bind import bind
from slidewise.plan.prune import prune_columns
from slidewise.runtime.plan_engine import execute_plan
from slidewise.spark.keying import Keying
from slidewise.spark.layout import wire_frame
from slidewise.spark.panes import PaneBucket, pane_bucket
from slidewise.spark.plan_state import RESULT, partition_attribute
from tests.spark.harness import bucket_rows, csv_files, cut, norm, run_buckets, sequence_into_buckets, sequencer, step_rows, wait_for_first_commit
from tests.test_sliding_aggregate import HAVING, WHERE, streams

KINDS = {"a": "int", "k": "str", "b": "int", "f": "float"}
AGGS = ["COUNT(*)", "COUNT(S.b)", "SUM(S.b)", "AVG(S.b)", "MIN(S.b)", "MAX(S.b)", "COUNT(S.f)", "SUM(S.f)", "AVG(S.f)", "MIN(S.f)", "MAX(S.f)"]


@st.composite
def queries(draw) -> str:
    keys = draw(st.sampled_from([[], ["S.a"], ["S.k"], ["S.a", "S.k"]]))
    aggs = draw(st.lists(st.sampled_from(AGGS), min_size=1, max_size=3, unique=True))
    items = keys + [f"{a} AS c{i}" for i, a in enumerate(aggs)]
    length, slide = draw(st.integers(0, 15)), draw(st.integers(1, 6))
    where, having = draw(st.sampled_from(WHERE)), draw(st.sampled_from(HAVING))
    having = None if having and "c0" in having and not aggs[0].startswith("COUNT") else having
    kind = draw(st.sampled_from(["RSTREAM", "ISTREAM", "DSTREAM"]))
    return (
        f"SELECT {kind}({', '.join(items)}) FROM S [RANGE {length} SLIDE {slide}]"
        + (f" WHERE {where}" if where else "")
        + (f" GROUP BY {', '.join(keys)}" if keys else "")
        + (f" HAVING {having}" if having else "")
    )


def local(query: str, frame: pd.DataFrame, lateness: int = 0) -> Counter:
    return norm(execute_plan(parse_plan(query), {"S": frame}, collect=True, lateness=lateness).results)


def simulate(query: str, steps: list, buckets: int = 3, lateness: int = 0) -> tuple[Counter, list[str]]:
    """Sequencer and pane buckets in-process over ``steps`` (frames of S per micro-batch, or ``"eof"``);
    the results and the reject reasons."""
    plan = prune_columns(bind(parse_plan(query), {"S": KINDS}))
    logic = pane_bucket(plan, ["S"], [KINDS], lateness, info=sequencer(KINDS, Keying("single", 1), lateness).layout.streams[0])
    assert isinstance(logic, PaneBucket)
    attr, _ = partition_attribute(plan)
    keying = Keying("hash", buckets, keys=(attr,), key_kind=KINDS[attr]) if attr else Keying("single", 1)
    return run_buckets(logic, KINDS, steps, keying, lateness)


@given(frame=streams(), query=queries(), points=st.lists(st.integers(0, 25), max_size=3), buckets=st.integers(1, 3))
def test_pane_buckets_equal_the_local_engine(frame, query, points, buckets):
    note(query)
    note(frame.to_records(index=False).tolist())
    got, rejects = simulate(query, [*cut(frame, points), "eof"], buckets=buckets)
    assert got == local(query, frame) and not rejects


@given(frame=streams(), query=queries(), at=st.integers(0, 25))
def test_a_continued_run_equals_one_run_over_the_kept_tuples(frame, query, at):
    """End of input, then more input on the same state: the union of both runs is one run over the
    tuples after the first end; the tuples at or before it are late rejects."""
    note(query)
    first, rest = frame.iloc[:at], frame.iloc[at:]
    got, rejects = simulate(query, [first, "eof", rest, "eof"])
    if not len(first):
        assert got == local(query, frame) and not rejects
        return
    slide = int(query.split("SLIDE ")[1].split("]")[0])
    done = -(-int(first.ts.max()) // slide) * slide
    late = rest.ts <= done
    assert got == local(query, pd.concat([first, rest[~late]]))
    assert len(rejects) == int(late.sum())
    assert all(r.startswith(f"late: at or before ts {done}") for r in rejects)


def test_lateness_reorders_as_the_local_engine():
    frame = pd.DataFrame(
        {"ts": [5, 3, 9, 1, 12, 30, 14, 29, 31], "a": [1, 2, 1, 2, 1, 1, 2, 2, 1], "k": list("xyzxyzxyz"), "b": [1, 2, 3, 4, 5, 6, 7, 8, 9], "f": [0.5] * 9}
    )
    query = "SELECT ISTREAM(S.a, COUNT(*) AS n, MAX(S.b) AS m) FROM S [RANGE 9 SLIDE 4] GROUP BY S.a"
    got, rejects = simulate(query, [frame.iloc[:4], frame.iloc[4:7], frame.iloc[7:], "eof"], lateness=3)
    assert got == local(query, frame, lateness=3)
    assert len(rejects) == 2 and all(r.startswith("late by") for r in rejects)


def test_state_holds_the_pane_partials_of_open_windows_only():
    """After the first micro-batch of 1,000 tuples (one per time unit, 10 groups), a bucket keeps the
    (group, pane) partials of the windows still open: b panes of width s, no tuple."""
    query = "SELECT RSTREAM(S.a, COUNT(*) AS n, SUM(S.b) AS s) FROM S [RANGE 99 SLIDE 10] GROUP BY S.a"
    plan = prune_columns(bind(parse_plan(query), {"S": KINDS}))
    logic = pane_bucket(plan, ["S"], [KINDS], 0)
    n = 1000
    frame = pd.DataFrame({"ts": np.arange(n), "a": np.arange(n) % 10, "k": ["x"] * n, "b": np.ones(n, np.int64), "f": np.zeros(n)})
    ((b, parts),) = sequence_into_buckets(sequencer(KINDS, Keying("single", 1)), {}, wire_frame(step_rows(frame, 0, KINDS))).items()
    blob, frames = logic.process(b, None, pd.concat(parts, ignore_index=True))
    st_ = logic._load(blob)
    # the window at 1000, (900, 1000], is next: panes 91 .. 100 of ((p-1)s, ps]; pane 100 has 9 tuples so far
    assert st_["p0"] == 91 and st_["partials"][0][0].shape == (10, 10) and st_["groups"] == 10
    stats = frames[0][frames[0].k == 2]
    assert int(stats.n0.iloc[0]) == 99  # non-empty (group, pane) cells
    res = frames[0][frames[0].k == RESULT]
    assert int(res.q.sum()) == 1 + 99 * 10  # windows 0 (ts 0 only) .. 990 answered


def test_distinct_relations_and_joins_keep_the_operator_network():
    kinds = [KINDS]
    for q in [
        "SELECT RSTREAM(S.a, COUNT(DISTINCT S.b) AS n) FROM S [RANGE 9 SLIDE 2] GROUP BY S.a",
        "SELECT RSTREAM(S.a, COUNT(*) AS n) FROM S [RANGE 9] GROUP BY S.a",
        "SELECT RSTREAM(S.a, APPROX_COUNT_DISTINCT(S.b) AS n) FROM S [RANGE 9 SLIDE 2] GROUP BY S.a",  # sketches: exact on the network
        "SELECT RSTREAM(S.a, APPROX_QUANTILE(S.f, 0.5) AS n) FROM S [RANGE 9 SLIDE 2] GROUP BY S.a",
    ]:
        plan = prune_columns(bind(parse_plan(q), {"S": KINDS}))
        assert pane_bucket(plan, ["S"], kinds, 0) is None, q


# ---------------------------------------------------------------- on Spark


def _frame(seed: int, n: int = 80) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    ts = np.cumsum(rng.choice([0, 0, 1, 2, 3, 15], n))
    return pd.DataFrame({"ts": ts, "a": rng.integers(0, 4, n), "k": rng.choice(list("xyz"), n), "b": rng.integers(-2, 5, n), "f": rng.choice([-1.5, 0.25, 2.0], n)})


SPARK_CASES = {
    "rstream-count-sum": "SELECT RSTREAM(S.a, COUNT(*) AS n, SUM(S.b) AS s) FROM S [RANGE 9 SLIDE 3] GROUP BY S.a",
    "istream-avg-min-max": ("SELECT ISTREAM(S.k, AVG(S.f) AS v, MIN(S.b) AS lo, MAX(S.b) AS hi) FROM S [RANGE 11 SLIDE 4] WHERE S.b > -2 GROUP BY S.k"),
    "dstream-having": ("SELECT DSTREAM(S.a, S.k, COUNT(*) AS n) FROM S [RANGE 5 SLIDE 2] GROUP BY S.a, S.k HAVING COUNT(*) > 1"),
}


@pytest.mark.spark
@pytest.mark.parametrize("name", list(SPARK_CASES))
def test_spark_pane_path_equals_local(spark, tmp_path, name):
    from slidewise.spark.plan_runner import run_plan_spark

    query, frame = SPARK_CASES[name], _frame(5)
    csv_files(frame, tmp_path / "S", 3)
    res = run_plan_spark(query, {"S": str(tmp_path / "S")}, spark=spark, max_files_per_trigger=1, once=True)
    assert res.stats["path"].startswith("sliding aggregate:")
    want = local(query, frame)
    assert want and norm(res.results) == want
    assert res.stats["micro_batches"] >= 3 and res.stats["inputs"] == {"S": len(frame)}


@pytest.mark.spark
def test_spark_answers_approximate_aggregates_exactly(spark, tmp_path):
    """APPROX_* on Spark run on the operator network (pane partials there are Arrow columns, a sketch is
    not): the exact answers of the local per-tuple plan."""
    from slidewise.spark.plan_runner import run_plan_spark

    query = "SELECT RSTREAM(S.a, APPROX_COUNT_DISTINCT(S.b) AS d, APPROX_QUANTILE(S.f, 0.5) AS m) FROM S [RANGE 9 SLIDE 3] GROUP BY S.a"
    frame = _frame(6)
    csv_files(frame, tmp_path / "S", 2)
    res = run_plan_spark(query, {"S": str(tmp_path / "S")}, spark=spark, max_files_per_trigger=1, once=True)
    assert "path" not in res.stats
    want = norm(execute_plan(parse_plan(query), {"S": frame}, collect=True, panes=False).results)
    assert want and norm(res.results) == want


@pytest.mark.spark
def test_spark_pane_path_restart_after_stop_is_exactly_once(spark, runs, tmp_path):
    """Stop a live run after its first committed micro-batch, add files, rerun on the checkpoint to the
    end of input: the local engine's rows over all files, none lost or repeated."""
    from slidewise.spark import read_results
    from slidewise.spark.plan_runner import run_plan_spark, start_plan_spark

    query = SPARK_CASES["istream-avg-min-max"]
    frame = _frame(8, n=120)
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


def test_buckets_write_their_parts_and_a_batch_holds_one_attempts(tmp_path):
    """With a staging directory the buckets write their rows as files (PART rows name them, no packed
    rows); the driver moves the files a committed batch names into ``batch-NNNNNN``: a replayed batch
    (another attempt's files) replaces them, an attempt that never committed is never read, and the
    staging directory goes when the run ends."""
    from slidewise.spark import read_results
    from slidewise.spark.plan_runner import _PlanSink
    from slidewise.spark.plan_state import PART
    from slidewise.spark.sinks import STAGED, staging

    query = SPARK_CASES["rstream-count-sum"]
    frame = _frame(5)
    plan = prune_columns(bind(parse_plan(query), {"S": KINDS}))
    logic = pane_bucket(plan, ["S"], [KINDS], 0, info=sequencer(KINDS, Keying("single", 1)).layout.streams[0])
    out = tmp_path / "out.parquet"
    logic.parts = str(staging(out, "parquet"))
    keying = Keying("hash", 2, keys=("a",), key_kind="int")

    def attempt():
        rows = list(bucket_rows(logic, KINDS, [frame, "eof"], keying))
        assert not any(r.k == RESULT for r in rows)
        return [r._asdict() for r in rows]

    first, replay, orphan = attempt(), attempt(), attempt()
    assert len(list((out / f"{STAGED}.parquet").glob("*.parquet"))) == sum(r["k"] == PART for r in first + replay + orphan) > 1
    sink = _PlanSink(logic.columns, ["S"], out=str(out), collect=False)
    sink.take(first, 0)
    sink = _PlanSink(logic.columns, ["S"], out=str(out), collect=False)  # a restarted driver replays batch 0
    sink.staged = out / f"{STAGED}.parquet"
    sink.take(replay, 0)
    sink.close()
    assert not sink.staged.exists() and sink.results == sum(n for n in local(query, frame).values())
    assert norm(read_results(out)) == local(query, frame)
    assert sorted(p.name for p in out.glob("batch-000000/*")) == [f"part-{j:05d}.parquet" for j in range(sum(r["k"] == PART for r in replay))]


@pytest.mark.spark
def test_spread_keys_put_each_bucket_on_its_own_partition(spark):
    """slidewise's copy of Spark's int hash agrees with Spark's ``hash()``, and the pane path's grouping keys
    land one per partition (grouped by bucket number, buckets 0 and 1 of 2 share one)."""
    from slidewise.spark.keying import spark_hash_int, spread_keys

    values = [0, 1, 2, 3, 12, 15, -7, 2**31 - 1]
    got = spark.createDataFrame([(v,) for v in values], "v int").selectExpr("hash(v) AS h").collect()
    assert [r["h"] for r in got] == [spark_hash_int(v) for v in values]
    assert spark_hash_int(0) % 2 == spark_hash_int(1) % 2
    for n in (1, 2, 3, 4, 8):
        assert [spark_hash_int(k) % n for k in spread_keys(n)] == list(range(n))
