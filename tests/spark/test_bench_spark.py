"""``slidewise bench spark`` on tiny inputs: counts against the local engine, JSON and PNG (W4:
chained joins), and Spark's initial-watermark drop on a two-way join, reproduced and avoided."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from slidewise.bench.spark import expected_results, run_spark_bench, run_spark_join, write_workload
from slidewise.bench.workloads import Workload

pytestmark = pytest.mark.spark


def test_bench_spark_smoke(spark, tmp_path):
    report = run_spark_bench("W4", tuples=1500, out_dir=str(tmp_path), slices=2, isolate=False, spark=spark, warmup=False, progress=False)
    saved = json.loads((tmp_path / "spark.json").read_text())
    assert (tmp_path / "spark.png").stat().st_size > 10_000
    assert set(saved["workloads"]) == {"W4"}
    for name, w in report["workloads"].items():
        expected = w["expected"]["results"]
        assert expected > 0
        join = w["engines"]["spark-join"]
        assert join["results"] == expected and join["counts_match"], name
        assert join["micro_batches"] >= 2 and join["peak_state_rows"] > 0
        assert join["stateful_operators"] == 3  # chained binary joins
        mine = w["engines"]["slidewise"]
        assert mine["results"] == expected and mine["counts_match"], name
        assert mine["micro_batches"] == 2  # two files per stream, the end of input with the second
        assert mine["peak_state_rows"] > 0 and mine["state_tuples_peak"] > 0
        assert "tuples_per_s_ratio" in w["ratios"] and "state_tuples_ratio" in w["ratios"] and "tuples_per_cpu_s_ratio" in w["ratios"]
        assert mine["cpu_s"] > 0 and join["cpu_s"] > 0  # the engine's processes' CPU seconds
        for engine in (join, mine):  # both engines ran with the same, reported Spark settings
            assert engine["spark_settings"] == join["spark_settings"]
            assert engine["spark_settings"]["spark.sql.shuffle.partitions"] == spark.conf.get("spark.sql.shuffle.partitions")
            assert engine["spark_settings"]["spark.driver.extraJavaOptions"] == "-XX:TieredStopAtLevel=1"  # without the log4j file


def test_spark_join_initial_watermark_drop(spark):
    """Event time = ts ms drops the tuple at ts 0 (not above the initial watermark 0); ts + 1 does not."""
    wl = Workload("T2", "2 streams, few values", (1, 1), (5, 5), (2, 2), 300)
    with tempfile.TemporaryDirectory() as tmp:
        sources = write_workload(wl, wl.tuples, 1, Path(tmp))
        expected = expected_results(wl, sources)
        assert expected["results_with_ts0_member"] > 0
        exact = run_spark_join(spark, wl, sources, shift_ms=1)
        raw = run_spark_join(spark, wl, sources, shift_ms=0)
    assert exact["results"] == expected["results"]
    assert raw["results"] == expected["results"] - expected["results_with_ts0_member"]
