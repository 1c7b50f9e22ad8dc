"""``--out x.csv`` and ``--rejects r.csv`` are one file on Spark, as on the local engine."""

from __future__ import annotations

import pandas as pd
import pytest

from slidewise.cli import main

JOIN = "SELECT * FROM A [RANGE 5], B [RANGE 5] WHERE A.k = B.k"
PLAN = "SELECT RSTREAM(A.k, COUNT(*) AS n) FROM A [RANGE 5] GROUP BY A.k"


def _rows(frame: pd.DataFrame) -> list[tuple]:
    return sorted(map(tuple, frame.astype(str).to_numpy().tolist()))


@pytest.mark.parametrize(("query", "fmt"), [(JOIN, "csv"), (JOIN, "parquet"), (PLAN, "jsonl")])
def test_out_and_rejects_files_equal_the_local_engines(spark, tmp_path, query, fmt):
    (tmp_path / "a.csv").write_text("ts,k\n1,7\n3,8\n2,7\n9,8\n")  # 2 is late (lateness 0)
    (tmp_path / "b.csv").write_text("ts,k\n2,7\n4,8\n")
    read = {"csv": pd.read_csv, "parquet": pd.read_parquet, "jsonl": lambda p: pd.read_json(p, lines=True)}[fmt]
    got = {}
    for engine in ("local", "spark"):
        out, rej = tmp_path / f"{engine}.{fmt}", tmp_path / f"{engine}-rejects.csv"
        argv = ["run", query, "--source", f"A={tmp_path / 'a.csv'}", "--source", f"B={tmp_path / 'b.csv'}", "--out", str(out), "--rejects", str(rej), "-q"]
        assert main([*argv, "--engine", engine]) == 0
        assert out.is_file() and rej.is_file()
        got[engine] = (read(out), pd.read_csv(rej))
    (local, local_rej), (spark_out, spark_rej) = got["local"], got["spark"]
    assert list(spark_out.columns) == list(local.columns) and _rows(spark_out) == _rows(local) and len(local) > 0
    assert list(spark_rej.columns) == list(local_rej.columns) == ["stream", "file", "line", "reason", "row"]
    assert spark_rej["reason"].tolist() == local_rej["reason"].tolist() == ["late by 1 (lateness 0)"]


def test_a_trailing_slash_keeps_the_directory_of_parts(spark, tmp_path):
    (tmp_path / "a.csv").write_text("ts,k\n1,7\n")
    (tmp_path / "b.csv").write_text("ts,k\n2,7\n")
    out = tmp_path / "parts.csv"
    assert main(["run", JOIN, "--source", f"A={tmp_path / 'a.csv'}", "--source", f"B={tmp_path / 'b.csv'}", "--out", f"{out}/", "--engine", "spark", "-q"]) == 0
    assert out.is_dir() and list(out.glob("batch-*/part-*.csv"))
