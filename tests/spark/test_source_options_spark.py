"""Per-stream lateness, timestamp column and unit on Spark: the local engine's rows and rejects."""

from __future__ import annotations

import pandas as pd

import slidewise
from slidewise.spark import run_spark
from slidewise.spark.plan_runner import run_plan_spark

Q = "SELECT * FROM A [RANGE 10], B [RANGE 10] WHERE A.k = B.k"
A = pd.DataFrame({"ts": [1, 5, 2, 9, 6, 12], "k": [1, 1, 2, 1, 2, 1]})
B = pd.DataFrame({"time": [3, 2, 8, 6, 11], "k": [1, 2, 1, 2, 1]})
SETTINGS = {"A": {"lateness": 3}, "B": {"lateness": 0, "ts-column": "time"}}


def _rows(frame: pd.DataFrame) -> list[tuple]:
    return sorted(map(tuple, frame.astype(str).to_numpy().tolist()))


def test_join_and_plan_take_per_stream_settings(spark, tmp_path):
    A.to_csv(tmp_path / "a.csv", index=False)
    B.to_csv(tmp_path / "b.csv", index=False)
    sources = {"A": str(tmp_path / "a.csv"), "B": str(tmp_path / "b.csv")}
    local = slidewise.run(Q, sources, streams=SETTINGS)
    assert local.rejects.by_stream() == {"B": 2}
    on_spark = run_spark(Q, sources, spark=spark, once=True, streams=SETTINGS)
    assert on_spark.stats["rejects"] == 2 and _rows(on_spark.results) == _rows(local.results)
    plan = "SELECT RSTREAM DISTINCT A.k FROM A [RANGE 4], B [RANGE 4] WHERE A.k = B.k"
    local_plan = slidewise.run(plan, sources, streams=SETTINGS)
    spark_plan = run_plan_spark(plan, sources, spark=spark, once=True, streams=SETTINGS)
    assert spark_plan.stats["rejects"] == local_plan.stats["rejects"] == 2
    assert _rows(spark_plan.results) == _rows(local_plan.results)
