"""The command line: happy paths and the one-line answers to bad input."""

from __future__ import annotations

import json

import pytest

from slidewise.cli import main

Q2 = "SELECT * FROM A [RANGE 10], B [RANGE 10] WHERE A.k = B.k"


@pytest.fixture
def files(tmp_path):
    a = tmp_path / "a.csv"
    a.write_text("ts,k\n1,1\n2,2\n3,1\n")
    b = tmp_path / "b.csv"
    b.write_text("ts,k\n2,1\n4,2\n")
    return tmp_path, a, b


def _one_line_error(capsys, code):
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.startswith("slidewise: error:")
    assert "Traceback" not in err
    return err


def test_run_writes_results_and_stats(files):
    tmp, a, b = files
    out, stats = tmp / "out.csv", tmp / "stats.json"
    code = main(["run", Q2, "--source", f"A={a}", "--source", f"B={b}", "--out", str(out), "--stats-json", str(stats), "--quiet"])
    assert code == 0
    s = json.loads(stats.read_text())
    for key in ("inputs", "results", "rejects", "seconds", "tuples_per_second", "peak_rss_mb", "comparisons", "algorithm", "join_order"):
        assert key in s
    assert s["results"] == 3 and s["inputs"] == {"A": 3, "B": 2}
    assert out.read_text().splitlines()[0] == "A.ts,A.k,B.ts,B.k,ts,exp,sign"


def test_query_from_file_and_order(files, capsys):
    tmp, a, b = files
    qf = tmp / "q.cql"
    qf.write_text(Q2 + "\n")
    code = main(["run", str(qf), "--source", f"A={a}", "--source", f"B={b}", "--order", "B,A", "--algorithm", "nlj", "--stats-json", str(tmp / "s.json"), "--quiet"])
    assert code == 0
    s = json.loads((tmp / "s.json").read_text())
    assert s["join_order"] == ["B", "A"] and s["algorithm"] == "nlj" and s["results"] == 3


def test_bad_query_text(files, capsys):
    tmp, a, b = files
    err = _one_line_error(capsys, main(["run", "SELECT * FROM A [RANGE 10] WHER A.k = 1", "--source", f"A={a}"]))
    assert "line 1" in err and "^" in err


def test_missing_source(files, capsys):
    tmp, a, b = files
    err = _one_line_error(capsys, main(["run", Q2, "--source", f"A={a}"]))
    assert "'B'" in err and "--source B=PATH" in err


def test_missing_file(files, capsys):
    tmp, a, b = files
    err = _one_line_error(capsys, main(["run", Q2, "--source", f"A={a}", "--source", f"B={tmp}/nope.csv"]))
    assert "nope.csv" in err


def test_unknown_algorithm_and_bad_order(files, capsys):
    tmp, a, b = files
    err = _one_line_error(capsys, main(["run", Q2, "--source", f"A={a}", "--source", f"B={b}", "--algorithm", "quantum"]))
    assert "choose one of" in err
    err = _one_line_error(capsys, main(["run", Q2, "--source", f"A={a}", "--source", f"B={b}", "--order", "A,A"]))
    assert "--order" in err


def test_malformed_row_and_non_numeric_ts_are_rejects(files, capsys):
    tmp, a, b = files
    bad = tmp / "bad.csv"
    bad.write_text("ts,k\n1,1\n2,1,9\nabc,1\n5,1\n")
    rej = tmp / "rejects.csv"
    code = main(["run", Q2, "--source", f"A={bad}", "--source", f"B={b}", "--rejects", str(rej), "--stats-json", str(tmp / "s.json"), "--quiet"])
    assert code == 0
    s = json.loads((tmp / "s.json").read_text())
    assert s["rejects"] == 2 and s["inputs"]["A"] == 2
    text = rej.read_text()
    assert "bad.csv" in text and "timestamp" in text


def test_far_out_of_order_is_counted(files, capsys):
    tmp, a, b = files
    late = tmp / "late.csv"
    late.write_text("ts,k\n100,1\n200,1\n3,1\n300,1\n")
    code = main(["run", Q2, "--source", f"A={late}", "--source", f"B={b}", "--lateness", "50", "--stats-json", str(tmp / "s.json"), "--quiet"])
    assert code == 0
    s = json.loads((tmp / "s.json").read_text())
    assert s["rejects"] == 1 and s["inputs"]["A"] == 3


def test_unknown_column(files, capsys):
    tmp, a, b = files
    err = _one_line_error(capsys, main(["run", "SELECT * FROM A [RANGE 1], B [RANGE 1] WHERE A.zz = B.k", "--source", f"A={a}", "--source", f"B={b}"]))
    assert "zz" in err and "columns are" in err


def test_explain_json(capsys):
    code = main(["explain", "SELECT * FROM S1 [RANGE 100], S2 [ROWS 50], S3 [RANGE 100] WHERE S1.a = S2.a AND S2.a = S3.a", "--json"])
    assert code == 0
    info = json.loads(capsys.readouterr().out)
    assert info["orders"]["S2"][0] == "S2" and len(info["orders"]) == 3


def test_demo_runs(capsys):
    assert main(["demo"]) == 0
    err = capsys.readouterr().err
    assert "results from" in err
