"""``slidewise bench aggregation`` on a small WA: both DuckDB forms agree with the pane path."""

from __future__ import annotations

import json

import duckdb
import pytest

from slidewise.bench import aggregation
from slidewise.bench.aggregation import FORMS, duckdb_sql, print_summary, run_aggregation_bench
from slidewise.cql import parse_plan
from slidewise.runtime.plan_engine import execute_plan


def test_bench_smoke(tmp_path, capsys):
    report = run_aggregation_bench(tuples=3000, out_dir=tmp_path, plan_tuples=500)
    s = report["summary"]
    assert s["answers equal"] and s["slidewise rows in output order"]
    assert s["best DuckDB form"] in FORMS.values()
    assert report["rounds"][0]["slidewise"]["path"].startswith("sliding aggregate: running synopsis")
    assert json.loads((tmp_path / "aggregation.json").read_text())["summary"]["tuples"] == 3000
    assert (tmp_path / "aggregation.png").stat().st_size > 0
    print_summary(s)
    out = capsys.readouterr().out
    assert "slidewise engine (--out parquet)" in out and "answers equal: True" in out
    assert "ratio whole-process CPU time per round" in out and s["table"]["slidewise whole process"]["cpu_s"] > 0


@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("length,slide", [(9, 2), (4, 3), (0, 1), (6, 10)])
def test_duckdb_forms_equal_the_engine(form, length, slide):
    import pandas as pd

    frame = pd.DataFrame({"ts": [0, 1, 1, 4, 9, 9, 10, 23, 24, 40], "a": [1, 2, 1, 1, 3, 2, 2, 1, 3, 1]})
    q = f"SELECT RSTREAM(S.a, COUNT(*) AS n) FROM S [RANGE {length} SLIDE {slide}] GROUP BY S.a"
    want = execute_plan(parse_plan(q), {"S": frame}, collect=True, panes=False).results
    con = duckdb.connect()
    con.register("S", frame)
    kmin, kmax = -(-0 // slide), -(-40 // slide)
    got = con.sql(duckdb_sql(form, kmin, kmax, length, slide) + ' ORDER BY ts, "S.a"').fetchall()
    assert got == [tuple(r) for r in want[["S.a", "n", "ts", "sign"]].itertuples(index=False, name=None)]


def test_cli_rejects_bad_counts(capsys):
    from slidewise.cli import main

    assert main(["bench", "aggregation", "--tuples", "0"]) == 2
    assert "--tuples must be positive, got 0" in capsys.readouterr().err
    assert main(["bench", "aggregation", "--spark-window-tuples", "0"]) == 2
    assert "--spark-window-tuples must be positive, got 0" in capsys.readouterr().err
    assert aggregation.QUERY.startswith("SELECT RSTREAM(S.a, COUNT(*) AS n) FROM S [RANGE 999 SLIDE 10]")


def test_cli_rejects_bad_spark_options(capsys):
    from slidewise.cli import main

    assert main(["bench", "aggregation", "--spark-batch", "0"]) == 2
    assert "--spark-batch must be positive, got 0" in capsys.readouterr().err
    assert main(["bench", "aggregation", "--spark-timeout", "-1"]) == 2
    assert "--spark-timeout must be positive, got -1" in capsys.readouterr().err


def test_spark_system_past_its_timeout_is_recorded_not_finished(tmp_path):
    from slidewise.bench.aggregation_spark import isolated, slidewise_spark_child

    got = isolated(slidewise_spark_child, {"input": str(tmp_path), "out": str(tmp_path / "o"), "checkpoint": str(tmp_path / "c")}, 0.3)
    assert got == {"finished": False, "timeout_s": 0.3, "note": "did not finish in 0.3 s (process start to end, JVM start included)"}


def _spark_run(n: int, mine_s: float, peer: dict, *, equal: bool = True) -> dict:
    row = {"finished": True, "micro_batches": 3, "state_bytes_peak": 10, "cpu_s": 1.0}
    return {
        "slidewise-spark": {**row, "tuples": n, "seconds": mine_s, "state_rows_peak": 3, "pane_cells_peak": 7},
        "spark-window": {**row, "state_rows_peak": 600_000, **peer},
        "checks": {"slidewise on Spark equals local": True, "Spark window() equals local": equal},
    }


@pytest.mark.parametrize(
    "peer,equal,holds,measured,why",
    [
        (
            {"tuples": 1000, "seconds": 12.0},
            True,
            True,
            12.0,
            "same run, 1,000 tuples each: 12.0x (1,000 vs 83 tuples/s); answers equal: True; state rows peak 3 vs 600,000",
        ),
        (
            {"tuples": 1000, "seconds": 12.0},
            False,
            False,
            12.0,
            "same run, 1,000 tuples each: 12.0x (1,000 vs 83 tuples/s); answers equal: False; state rows peak 3 vs 600,000",
        ),
        (
            {"tuples": 1000, "seconds": 5.0},
            True,
            False,
            5.0,
            "same run, 1,000 tuples each: 5.0x (1,000 vs 200 tuples/s); answers equal: True; state rows peak 3 vs 600,000",
        ),
        ({"tuples": 500, "seconds": 10.0}, True, None, 20.0, "window() ran on the first 500 of 1,000 tuples, not the same input: 20.0x"),
        (
            {"tuples": 1000, "finished": False, "timeout_s": 50.0, "note": "did not finish in 50 s"},
            True,
            None,
            ">= 50.00",
            "Spark window() did not finish in 50 s on 1,000 tuples, so its rate is below 20 tuples/s and the ratio is at least 50.00",
        ),
    ],
)
def test_spark_conclusion(peer, equal, holds, measured, why, capsys):
    from slidewise.bench.aggregation_spark import CLAIM, print_spark, summarize_spark

    summary = summarize_spark(_spark_run(1000, 1.0, peer, equal=equal), 1000)
    c = summary["conclusion"]
    assert (c["claim"], c["holds"], c["measured"]) == (CLAIM, holds, measured)
    assert c["why"].startswith(why)
    print_spark(summary)
    assert f"holds: {holds} (measured {measured}): {why}" in capsys.readouterr().out


def test_spark_conclusion_states_the_cpu_ratio():
    from slidewise.bench.aggregation_spark import summarize_spark

    summary = summarize_spark(_spark_run(1000, 1.0, {"tuples": 500, "seconds": 6.0, "cpu_s": 4.0}), 1000)
    assert summary["ratio of CPU seconds per tuple, Spark window() / slidewise on Spark"] == 8.0
    summary = summarize_spark(_spark_run(1000, 1.0, {"tuples": 1000, "seconds": 12.0, "cpu_s": 9.0}), 1000)
    assert summary["conclusion"]["why"].endswith("; CPU seconds 1.0 vs 9.0 (9.0x; on a shared machine the steadier measure within one run)")
