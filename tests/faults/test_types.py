"""Fault suite: types at planning time and NULL on division by zero, through the CLI.

A comparison of a number column with a text literal (or the reverse) casts
the literal; a mismatch that no cast can mend (text vs number columns, a
join key text vs int, arithmetic on text, a literal that is no number) is
one located error before any output or rejects file exists and before the
input is read beyond schema inference; ``/`` and ``%`` by zero are NULL.
"""

from __future__ import annotations

import csv
import hashlib
from pathlib import Path

import pandas as pd
import pytest

from tests.faults.conftest import assert_clear_error, run_cli

S1_ROWS = "ts,a,b,k\n1,1,x,1\n2,2,3,2\n3,0,y,3\n4,1,3,4\nbad,row\n"
S2_ROWS = "ts,k\n1,a\n2,b\n3,1\n"


@pytest.fixture
def data(tmp_path: Path) -> Path:
    (tmp_path / "s1.csv").write_text(S1_ROWS)  # a, k int; b text; one malformed row
    (tmp_path / "s2text.csv").write_text(S2_ROWS)  # k text
    return tmp_path


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _run(data: Path, query: str, *extra: str, s2: bool = False):
    before = {p.name: _digest(p) for p in data.glob("*.csv")}
    sources = ["--source", f"S1={data / 's1.csv'}"] + (["--source", f"S2={data / 's2text.csv'}"] if s2 else [])
    outcome = run_cli("run", query, *sources, "--out", str(data / "out" / "res.csv"), "--rejects", str(data / "out" / "rejects.csv"), "--quiet", *extra)
    assert {p.name: _digest(p) for p in data.glob("*.csv")} == before  # inputs untouched
    return outcome


def _rows(data: Path) -> list[dict]:
    with open(data / "out" / "res.csv", newline="") as f:
        return list(csv.DictReader(f))


def _nothing_written(data: Path) -> None:
    assert not (data / "out" / "res.csv").exists()
    assert not (data / "out" / "rejects.csv").exists()  # the malformed row was never read


def _clean(outcome) -> None:
    assert outcome.code == 0, outcome.err
    assert "Warning" not in outcome.err and "Traceback" not in outcome.err, outcome.err


# ------------------------------------------------------------------ casts that give the right answer


def test_text_column_equals_a_number_literal(data):
    outcome = _run(data, "SELECT S1.ts, S1.b FROM S1 [RANGE 10] WHERE S1.b = 3")
    _clean(outcome)
    assert [(r["S1.ts"], r["S1.b"]) for r in _rows(data)] == [("2", "3"), ("4", "3")]


def test_integer_column_equals_a_text_literal(data):
    outcome = _run(data, "SELECT S1.ts, S1.a FROM S1 [RANGE 10] WHERE S1.a = '1'")
    _clean(outcome)
    assert [(r["S1.ts"], r["S1.a"]) for r in _rows(data)] == [("1", "1"), ("4", "1")]
    assert "bad" in (data / "out" / "rejects.csv").read_text()  # the malformed row is reported, not lost


def test_general_plan_casts_the_same_way(data):
    outcome = _run(data, "SELECT DISTINCT S1.a FROM S1 [RANGE 10] WHERE S1.a = '1' AND S1.b = 3")
    _clean(outcome)
    assert [r["S1.a"] for r in _rows(data)] == ["1"]


# ------------------------------------------------------------------ NULL on division by zero


def test_division_by_zero_in_a_predicate_is_not_true(data):
    outcome = _run(data, "SELECT * FROM S1 [RANGE 10] WHERE S1.a / 0 > 1")
    _clean(outcome)
    assert _rows(data) == []


def test_not_of_a_null_comparison_is_not_true(data):
    outcome = _run(data, "SELECT S1.ts FROM S1 [RANGE 10] WHERE NOT (S1.a / S1.a > 0)")
    _clean(outcome)
    assert _rows(data) == []  # a / a is 1 (not > 0 is false) or NULL for a = 0 (unknown)


def test_projected_division_and_modulo_by_zero_are_null(data):
    outcome = _run(data, "SELECT S1.ts, S1.a / 0 AS d, S1.a % 0 AS m, S1.k % S1.a AS r FROM S1 [RANGE 10]")
    _clean(outcome)
    rows = _rows(data)
    assert [(r["d"], r["m"]) for r in rows] == [("", "")] * 4
    assert [r["r"] for r in rows] == ["0", "0", "", "0"]  # k % a: a float column (NULL where a = 0)


def test_general_plan_projects_null_too(data):
    outcome = _run(data, "SELECT DISTINCT S1.ts, S1.a % 0 AS m FROM S1 [RANGE 10] WHERE NOT (S1.k / S1.a < 1)")
    _clean(outcome)
    assert [(r["S1.ts"], r["m"]) for r in _rows(data)] == [("1", ""), ("2", ""), ("4", "")]


# ------------------------------------------------------------------ mismatches: one error, nothing written


def test_literal_that_is_no_number(data):
    outcome = _run(data, "SELECT * FROM S1 [RANGE 10] WHERE S1.a = 'abc'")
    assert_clear_error(outcome, "query line 1, column 35:", "cannot compare S1.a (integer) with 'abc' (text)", "hint: compare S1.a with a number")
    _nothing_written(data)


def test_text_column_ordered_against_a_number(data):
    outcome = _run(data, "SELECT * FROM S1 [RANGE 10] WHERE S1.b > 3")
    assert_clear_error(outcome, "query line 1, column 35:", "cannot order S1.b (text) against 3 (integer)", "write S1.b > '3' to compare text")
    _nothing_written(data)


def test_arithmetic_on_text(data):
    outcome = _run(data, "SELECT S1.b + 1 FROM S1 [RANGE 10]")
    assert_clear_error(outcome, "query line 1, column 8:", "cannot compute S1.b (text) + 1 (integer)", "'+' needs numbers")
    _nothing_written(data)


def test_text_column_compared_with_a_number_column(data):
    outcome = _run(data, "SELECT * FROM S1 [RANGE 10] WHERE S1.b < S1.a")
    assert_clear_error(outcome, "cannot compare S1.b (text) with S1.a (integer)")
    _nothing_written(data)


def test_join_of_a_text_key_with_an_integer_key(data):
    outcome = _run(data, "SELECT * FROM S1 [RANGE 10], S2 [RANGE 10] WHERE S1.k = S2.k", s2=True)
    assert_clear_error(outcome, "query line 1, column 50:", "join keys S1.k (integer) and S2.k (text) have different types")
    _nothing_written(data)


def test_general_plan_join_key_mismatch(data):
    outcome = _run(data, "SELECT DISTINCT S1.a FROM S1 [RANGE 10], S2 [RANGE 10] WHERE S1.k = S2.k", s2=True)
    assert_clear_error(outcome, "join keys S1.k (integer) and S2.k (text) have different types")
    _nothing_written(data)


def test_cast_makes_a_text_key_meet_an_integer_key(data):
    outcome = _run(data, "SELECT S1.ts, S2.ts FROM S1 [RANGE 10], S2 [RANGE 10] WHERE CAST(S2.k AS BIGINT) = S1.k", s2=True)
    _clean(outcome)
    assert [(r["S1.ts"], r["S2.ts"]) for r in _rows(data)] == [("1", "3")]  # 'a', 'b' are no numbers: NULL


def test_cast_of_an_unknown_type_is_a_query_error(data):
    outcome = _run(data, "SELECT CAST(S1.a AS DATE) FROM S1 [RANGE 10]")
    assert_clear_error(outcome, "query line 1, column 21: unknown type 'DATE' in CAST")
    _nothing_written(data)


# ------------------------------------------------------------------ the Spark engine binds the same way


@pytest.mark.spark
def test_spark_join_key_mismatch_is_the_same_error(data):
    outcome = _run(data, "SELECT * FROM S1 [RANGE 10], S2 [RANGE 10] WHERE S1.k = S2.k", "--engine", "spark", s2=True)
    assert_clear_error(outcome, "query line 1, column 50:", "join keys S1.k (integer) and S2.k (text) have different types")
    assert not (data / "out" / "res.csv").exists()


@pytest.mark.spark
def test_spark_batch_casts_and_divides_to_null(data):
    """Batch replay evaluates in Spark SQL (try_divide, try_mod, try_cast): the local answers."""
    outcome = _run(data, "SELECT S1.ts, S1.a % 0 AS m FROM S1 [RANGE 10] WHERE S1.a = '1' AND NOT (S1.k / 0 > 1)", "--engine", "spark", "--mode", "batch")
    assert outcome.code == 0, outcome.err
    assert _rows(data) == []
    outcome = _run(data, "SELECT S1.ts, S1.a % 0 AS m FROM S1 [RANGE 10] WHERE S1.a = '1'", "--engine", "spark", "--mode", "batch")
    assert outcome.code == 0, outcome.err
    assert [(r["S1.ts"], r["m"]) for r in _rows(data)] == [("1", ""), ("4", "")]
    outcome = _run(data, "SELECT S1.ts, S2.ts FROM S1 [RANGE 10], S2 [RANGE 10] WHERE CAST(S2.k AS BIGINT) = S1.k", "--engine", "spark", "--mode", "batch", s2=True)
    assert outcome.code == 0, outcome.err
    assert [(r["S1.ts"], r["S2.ts"]) for r in _rows(data)] == [("1", "3")]


def _table_run(data: Path, *extra: str):
    (data / "t.csv").write_text("ts,id,name\n0,1,x\n0,2,y\n")
    return _run(data, "SELECT DISTINCT S1.a FROM S1 [RANGE 10], TABLE T WHERE S1.a = T.name", "--table", f"T={data / 't.csv'}", *extra)


def test_table_key_mismatch(data):
    assert_clear_error(_table_run(data), "query line 1, column 56:", "join keys S1.a (integer) and T.name (text) have different types")
    _nothing_written(data)


@pytest.mark.spark
def test_spark_table_key_mismatch_before_the_table_is_read(data):
    assert_clear_error(_table_run(data, "--engine", "spark"), "query line 1, column 56:", "join keys S1.a (integer) and T.name (text) have different types")
    _nothing_written(data)


@pytest.mark.spark
def test_spark_stream_casts_and_divides_to_null(data):
    """Streaming runs the local operators per bucket: the local answer (text arrives as numpy str arrays)."""
    query = "SELECT S1.ts, S1.a % 0 AS m, CAST(S1.b AS INT) AS n FROM S1 [RANGE 10], S2 [RANGE 10] WHERE S1.a = '1' AND CAST(S2.k AS BIGINT) = S1.k"
    outcome = _run(data, query, s2=True)
    _clean(outcome)
    local = _rows(data)
    assert [(r["S1.ts"], r["m"], r["n"]) for r in local] == [("1", "", "")]
    sources = ["--source", f"S1={data / 's1.csv'}", "--source", f"S2={data / 's2text.csv'}"]
    outcome = run_cli("run", query, *sources, "--engine", "spark", "--once", "--out", str(data / "spark"), "--quiet")
    assert outcome.code == 0, outcome.err[-2000:]
    got = pd.concat([pd.read_parquet(p) for p in sorted((data / "spark").glob("batch-*/*.parquet"))])
    assert got[["S1.ts", "ts", "exp", "sign"]].values.tolist() == [[1, 3, 11, 1]]
    assert got[["m", "n"]].isna().all().all()
