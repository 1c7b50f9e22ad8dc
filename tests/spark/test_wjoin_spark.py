"""W-joins on Spark (:mod:`slidewise.spark.join`): the same rows as the local engine.

In-process first (sequencer and a bucket hosting each W-join operator as Spark calls them, the
operator's state as sealed bytes between micro-batches, a fresh logic object per call). Then on
Spark (``local[2]``): a Form 1 query (every pair within one ``w``: the join path), a Form 3 query
with a missing constraint and a DWINDOW query (the W-join operators, one key bucket), and a run
stopped after its first committed micro-batch and rerun on its checkpoint.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

import slidewise
from slidewise.cql.wjoin import parse_wjoin
from slidewise.errors import SlidewiseError
from slidewise.operators.wjoin import WJOINS
from slidewise.plan.bind import bind_query
from slidewise.spark.bucket import BucketJoin
from tests.spark.harness import csv_files, norm, simulate, wait_for_first_commit

FORM1 = "SELECT * FROM A, B, C WINDOW = 4 WHERE A.id = B.id AND B.id = C.id"
FORM3 = "SELECT * FROM A, B, C WINDOW(A, B) = 5 AND WINDOW(B, C) = 3 WHERE A.id = B.id AND B.id = C.id"
DIRECTED = "SELECT * FROM A, B, C DWINDOW(A, B) = 4 AND WINDOW(B, C) = 2 WHERE A.id = B.id AND A.x < C.x"


def _frames(seed: int, n: int = 40) -> dict[str, pd.DataFrame]:
    """Three streams with ties and bursts (steps 0, 1, 2 and 9)."""
    rng = np.random.default_rng(seed)
    return {s: pd.DataFrame({"ts": np.cumsum(rng.choice([0, 0, 1, 2, 9], n)), "id": rng.integers(0, 3, n), "x": rng.integers(0, 5, n)}).astype(np.int64) for s in "ABC"}


def _local(query: str, frames: dict, algorithm: str | None = None):
    return slidewise.run(query, frames, algorithm=algorithm)


@pytest.mark.parametrize("query", [FORM3, DIRECTED])
@pytest.mark.parametrize("algorithm", list(WJOINS))
def test_bucket_hosting_a_wjoin_operator_equals_the_local_engine(query, algorithm):
    wq = parse_wjoin(query)
    try:
        WJOINS[algorithm].check(wq)
    except SlidewiseError:
        pytest.skip(f"{algorithm} does not apply")
    wq = replace(wq, join=bind_query(wq.join, [{"id": "int", "x": "int"}] * 3))
    for seed in range(3):
        frames = _frames(seed)
        want = norm(_local(query, frames, algorithm).results)
        assert want, seed
        for batches in (1, 4):
            got, _ = simulate(
                wq.join, None, batches=batches, inputs=frames, columns=("id", "x"), logic=lambda lay: BucketJoin(wq.join, lay, algorithm=algorithm, wjoin=wq)
            )
            assert norm(got) == want, (seed, batches)


# ---------------------------------------------------------------- on Spark


@pytest.mark.spark
def test_spark_wjoins_equal_local(spark, tmp_path):
    """Form 1 on the join path's operator; Form 3 (a missing constraint) and DWINDOW on HW-join and
    NLW-join (the planner's choice) in one bucket; the same rows as the local engine."""
    frames = _frames(5, n=60)
    for s, df in frames.items():
        csv_files(df, tmp_path / s, 2)
    sources = {s: str(tmp_path / s) for s in frames}
    for query, algorithm, ran in ((FORM1, None, "columnar"), (FORM3, "hw-join", "hw-join"), (DIRECTED, None, "mw-join")):
        res = slidewise.run(query, sources, engine="spark", spark=spark, once=True, algorithm=algorithm)
        local = _local(query, frames, algorithm)
        assert res.stats["algorithm"] == local.stats["algorithm"] == ran, query
        want = norm(local.results)
        assert want and norm(res.results) == want, query
        assert res.stats["inputs"] == {s: len(df) for s, df in frames.items()}
        assert res.stats["buckets"] == 1 or algorithm is None and query == FORM1


@pytest.mark.spark
def test_spark_wjoin_restart_after_stop_is_exactly_once(spark, runs, tmp_path):
    """Stop a live W-join run after its first committed micro-batch, add files, rerun on the
    checkpoint to the end of input: the local engine's rows over all files, none lost or repeated."""
    from slidewise.spark import read_results
    from slidewise.spark.join_runner import run_spark, start_spark

    frames = _frames(7, n=80)
    half = {s: len(df) // 2 for s, df in frames.items()}
    for s, df in frames.items():
        csv_files(df.iloc[: half[s]], tmp_path / s, 2)
    sources = {s: str(tmp_path / s) for s in frames}
    ckpt, out = tmp_path / "ckpt", tmp_path / "out.parquet"
    opts = dict(spark=spark, checkpoint=str(ckpt), out=str(out), max_files_per_trigger=1, algorithm="nlw-join")
    run = start_spark(FORM3, sources, once=False, trigger="1s", **opts)
    runs.append(run)
    wait_for_first_commit(ckpt)
    run.stop()
    assert not run.ended
    for s, df in frames.items():
        csv_files(df.iloc[half[s] :], tmp_path / s, 2, first=2)
    res = run_spark(FORM3, sources, once=True, **opts)
    assert res.stats["input_ended"] and res.stats["algorithm"] == "nlw-join"  # its buffers sealed between micro-batches
    want = norm(_local(FORM3, frames).results)
    assert want and norm(read_results(out)) == want
