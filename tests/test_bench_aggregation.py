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
