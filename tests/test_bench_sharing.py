"""``slidewise bench sharing`` on a small stream: shared and one-by-one answers are identical."""

from __future__ import annotations

import json

from slidewise.bench.sharing import _acceptance, queries
from slidewise.cli import main


def test_bench_sharing_small(tmp_path, capsys):
    assert main(["bench", "sharing", "--tuples", "2000", "--queries", "6,12", "--rounds", "2", "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "sharing.json").read_text())
    assert [p["queries"] for p in report["points"]] == [6, 12]
    assert all(p["identical"] and p["results"] > 0 and p["synopses"] <= 5 for p in report["points"])
    assert all(p["repeats"] == 2 and len(p["alone_s_all"]) == len(p["shared_s_all"]) == 2 and p["speedup_cpu"] > 0 for p in report["points"])
    assert report["acceptance"] is None  # no 160-query point
    assert report["kernels"].startswith(("numba", "numpy"))
    err = capsys.readouterr().err
    assert "slidewise bench sharing" in err and "6 queries" in err and "speedup" in err


def test_workload_shape():
    qs = queries(50)
    assert len(qs) == 50 and all("GROUP BY" in q and "SLIDE" in q for q in qs.values())
    assert {q.split("(")[2].split(")")[0].split(" ")[0] for q in qs.values()} <= {"L.bytes", "*"}


def test_bad_rounds(capsys):
    assert main(["bench", "sharing", "--rounds", "0"]) == 2
    assert "--rounds" in capsys.readouterr().err


def test_bad_query_counts(capsys):
    assert main(["bench", "sharing", "--queries", "0,x"]) == 2
    assert "--queries must be positive integers separated by commas, got '0,x'" in capsys.readouterr().err


def test_acceptance_needs_both_ratios_and_identical_answers():
    point = {"queries": 160, "speedup": 5.2, "speedup_cpu": 5.1, "identical": True}
    assert _acceptance([point])["met"]
    assert not _acceptance([point | {"speedup_cpu": 4.9}])["met"]
    assert not _acceptance([point | {"identical": False}])["met"]
    assert _acceptance([point | {"queries": 80}]) is None
