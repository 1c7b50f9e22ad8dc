"""``slidewise bench aggregation --spark`` on a tiny WA: slidewise on Spark and Spark's window() give the
local engine's answer (window() over the windows both emit), with their state rows."""

from __future__ import annotations

import pandas as pd
import pytest

import slidewise
from slidewise.bench.aggregation import DISTINCT, QUERY
from slidewise.bench.aggregation_spark import print_spark, run_spark_systems, summarize_spark
from slidewise.runtime.generate import generate, write_streams

pytestmark = pytest.mark.spark


def test_aggregation_bench_on_spark_smoke(spark, tmp_path, capsys):
    n = 3000
    path = write_streams(generate([1], DISTINCT, n, seed=0), tmp_path, "parquet", names=["S"])[0]
    local_out = str(tmp_path / "local.parquet")
    keys = ("spark.sql.streaming.stateStore.providerClass", "spark.sql.shuffle.partitions", "spark.driver.extraJavaOptions")
    before = {k: spark.conf.get(k, None) for k in keys}
    slidewise.run(QUERY, {"S": str(path)}, out=local_out)
    got = run_spark_systems(pd.read_parquet(path), local_out, tmp_path, batch=750, window_tuples=n // 2, window_batch=750, isolate=False)
    checks = got["checks"]
    settings = got["settings"]
    assert settings["slidewise on Spark conf"]["spark.sql.streaming.stateStore.providerClass"].endswith("RocksDBStateStoreProvider")
    assert settings["Spark window() conf"]["spark.sql.streaming.stateStore.providerClass"].endswith("HDFSBackedStateStoreProvider")
    assert (
        "750 tuples per micro-batch; groupBy(window(et, '1000 seconds', '10 seconds', '1 second'), a).count(); withWatermark(et, '0 seconds')"
        in (settings["Spark window()"])
    )
    assert {k: spark.conf.get(k, None) for k in keys} == before  # both systems' settings restored on the running session
    assert got["slidewise-spark"]["finished"] and got["spark-window"]["finished"]
    assert checks["slidewise on Spark equals local"] and checks["Spark window() equals local"]
    assert checks["Spark window() compared over"].startswith("the first 1,500 tuples: windows ts <= 1499 (")
    assert checks["Spark window() rows not compared"] > 0  # the windows that also need later tuples
    mine, peer = got["slidewise-spark"], got["spark-window"]
    assert mine["path"].startswith("sliding aggregate:") and mine["rows"] == checks["local rows"]
    assert mine["micro_batches"] == 5 and peer["micro_batches"] >= 4  # 4 files + end of input; 2 files + 2 sentinels
    assert (mine["tuples"], peer["tuples"]) == (n, n // 2)
    assert 0 < mine["state_rows_peak"] < peer["state_rows_peak"]
    summary = summarize_spark(got, n)
    print_spark(summary)
    out = capsys.readouterr().out
    assert "ratio of tuples/s, slidewise on Spark / Spark window()" in out and "Spark window() aggregation" in out
    assert "Spark window() seconds for 3,000 tuples at its rate (extrapolated)" in out
    assert summary["conclusion"]["holds"] is None and summary["conclusion"]["why"].startswith("window() ran on the first 1,500 of 3,000 tuples, not the same input: ")
