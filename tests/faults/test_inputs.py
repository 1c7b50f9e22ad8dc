"""Fault tests: hostile inputs, timestamps, numeric limits, query files and what reaches the terminal.

Each test runs the CLI (local engine) on one hostile case and checks the exit
status, the message, and that inputs are untouched and no row was lost or
invented.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pandas as pd
import pytest

from tests.faults.conftest import assert_clear_error, run_cli

HUGE = "99999999999999999999999"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _csv(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _run(query: str, path: Path, *args: str, cwd: Path | None = None):
    return run_cli("run", query, "--source", f"S={path}", "--quiet", *args, cwd=cwd)


def test_timestamps_near_the_int64_maximum_are_rejected_not_overflowed(tmp_path):
    src = _csv(tmp_path, "big.csv", "ts,a\n5,1\n9223372036854775000,1\n9223372036854775001,1\n")
    before = _digest(src)
    out, rejects = tmp_path / "out.csv", tmp_path / "rejects.csv"
    res = _run("SELECT * FROM S [RANGE 10000]", src, "--ts-unit", "raw", "--out", str(out), "--rejects", str(rejects))
    assert res.code == 0, res.err
    rows = pd.read_csv(out)
    assert rows["S.ts"].tolist() == [5] and rows["exp"].tolist() == [10005]  # no negative exp
    rej = pd.read_csv(rejects)
    assert rej["line"].tolist() == [3, 4] and set(rej["reason"]) == {"timestamp out of range"}
    assert _digest(src) == before
    only_big = _csv(tmp_path, "only_big.csv", "ts,a\n9223372036854775000,1\n")
    assert_clear_error(_run("SELECT * FROM S [RANGE 10]", only_big), "only_big.csv", "out of range")


def test_ambiguous_timestamp_units_are_an_error_naming_the_choices(tmp_path):
    src = _csv(tmp_path, "mixed.csv", "ts,a\n1,1\n1700000000000000000,2\n1700000000000000001,2\n")
    query = "SELECT S.ts, S.a FROM S [RANGE 10] WHERE S.a = 2"
    assert_clear_error(_run(query, src), "mixed.csv", "'ts'", "'1'", "'1700000000000000000'", "--ts-unit", "raw", "ns", "iso")
    out = tmp_path / "out.csv"
    res = _run(query, src, "--ts-unit", "ns", "--out", str(out))
    assert res.code == 0, res.err
    assert pd.read_csv(out)["S.ts"].tolist() == [1_700_000_000_000, 1_700_000_000_000]


def test_numbers_beside_iso_text_are_ambiguous(tmp_path):
    src = _csv(tmp_path, "iso.csv", "ts,a\n2024-01-01T00:00:00,1\n1700000000,2\n")
    assert_clear_error(_run("SELECT * FROM S [RANGE 10]", src), "iso.csv", "ISO-8601 text", "--ts-unit")


@pytest.mark.parametrize("value", [HUGE, HUGE + "s", "2305843009213693952"])
def test_huge_lateness_is_an_option_error(tmp_path, value):
    src = _csv(tmp_path, "s.csv", "ts,a\n1,1\n")
    assert_clear_error(_run("SELECT * FROM S [RANGE 10]", src, "--lateness", value), "--lateness", "out of range", "allowed range is 0 to 2305843009213693951")


@pytest.mark.parametrize(
    "query, fragment",
    [
        (f"SELECT * FROM S [RANGE {HUGE}]", "too large"),
        (f"SELECT * FROM S [RANGE 10 SLIDE {HUGE}]", "too large"),
        (f"SELECT * FROM S [ROWS {HUGE}]", "too large"),
        (f"SELECT * FROM S [RANGE {HUGE} SECONDS]", "too large"),
        (f"SELECT * FROM S [RANGE 10] WHERE S.a * {HUGE} > 1", f"integer {HUGE} is out of range"),
        (f"SELECT DISTINCT S.a FROM S [RANGE 10] WHERE S.a > {HUGE}", f"integer {HUGE} is out of range"),
    ],
)
def test_huge_numbers_in_the_query_are_query_errors(tmp_path, query, fragment):
    src = _csv(tmp_path, "s.csv", "ts,a\n1,1\n")
    assert_clear_error(_run(query, src), "query line 1", fragment)


@pytest.mark.parametrize(
    "option, fragment",
    [
        (["--buckets", HUGE, "--algorithm", "hash"], "from 1 to 65536"),
        (["--partitions", HUGE], "from 1 to 1048576"),
    ],
)
def test_huge_counts_are_option_errors(tmp_path, option, fragment):
    src = _csv(tmp_path, "s.csv", "ts,a\n1,1\n")
    query = "SELECT DISTINCT S.a FROM S [RANGE 10]" if "--partitions" in option else "SELECT * FROM S [RANGE 10], S [RANGE 10] AS T WHERE S.a = T.a"
    assert_clear_error(_run(query, src, *option), fragment)


@pytest.mark.parametrize(
    "option, fragment",
    [
        (["--tuples", HUGE], "up to 1,000,000,000"),
        (["--distinct", f"{HUGE},1"], "positive integers up to 4611686018427387904"),
    ],
)
def test_huge_generate_options_are_option_errors(tmp_path, option, fragment):
    assert_clear_error(run_cli("generate", *option, "--out", str(tmp_path / "gen")), fragment)
    assert not (tmp_path / "gen").exists()


def test_a_csv_row_of_several_megabytes_is_read(tmp_path):
    src = tmp_path / "long.csv"
    src.write_text("ts,a,s\n1,1,x\n2,1," + "y" * 5_000_000 + "\n3,1,z\n4,2,w\n", encoding="utf-8")
    out = tmp_path / "out.csv"
    res = _run("SELECT S.ts, S.a, S.s FROM S [RANGE 10]", src, "--out", str(out))
    assert res.code == 0, res.err
    rows = pd.read_csv(out)
    assert rows["S.ts"].tolist() == [1, 2, 3, 4]
    assert len(rows["S.s"][1]) == 5_000_000


@pytest.mark.parametrize(
    "word, query",
    [
        ("AND", "SELECT S.ts FROM S [RANGE 10] WHERE {}"),
        ("OR", "SELECT S.ts FROM S [RANGE 10] WHERE {}"),
        ("AND", "SELECT DISTINCT S.a FROM S [RANGE 10] WHERE {}"),
    ],
)
def test_chains_of_20000_conditions_parse_and_run(tmp_path, word, query):
    src = _csv(tmp_path, "s.csv", "ts,a\n1,1\n2,2\n3,3\n")
    terms = [f"S.a {'!=' if word == 'AND' else '='} {i}" for i in range(3, 20_003)]  # AND: drops a = 3
    if word == "OR":
        terms[:0] = ["S.a = 1"]
    qf = tmp_path / "chain.cql"
    qf.write_text(query.format(f" {word} ".join(terms)), encoding="utf-8")
    out = tmp_path / "out.csv"
    res = _run(str(qf), src, "--out", str(out))
    assert res.code == 0, res.err
    got = pd.read_csv(out)
    col = "S.a" if "DISTINCT" in query else "S.ts"
    assert sorted(got[col]) == ([1, 2] if word == "AND" else [1, 3])


def _ascii_only(text: str) -> None:
    assert all(c in "\n\t" or " " <= c <= "~" for c in text), repr(text)


@pytest.mark.parametrize(
    "name, data, fragment",
    [
        ("u16.csv", "ts,a\n1,1\n".encode("utf-16"), "looks like UTF-16 (byte-order mark)"),
        ("u16le.csv", "ts,a\n1,1\n".encode("utf-16-le"), "looks like UTF-16 without a byte-order mark"),
        ("bin.csv", bytes(range(256)) * 8, "binary data (a NUL byte at byte 0)"),
        ("latin.csv", "ts,café\n1,1\n".encode("latin-1"), "invalid UTF-8 at byte 6 of the first line"),
    ],
)
def test_files_that_are_not_utf8_text_get_an_encoding_diagnosis(tmp_path, name, data, fragment):
    src = tmp_path / name
    src.write_bytes(data)
    res = _run("SELECT * FROM S [RANGE 10]", src)
    err = assert_clear_error(res, name, "file is not UTF-8 text", fragment)
    if "bin" not in name:
        assert "iconv" in err
    _ascii_only(res.err)
    assert src.read_bytes() == data


def test_control_characters_in_column_names_are_escaped(tmp_path):
    src = _csv(tmp_path, "esc.csv", "ts,\x1b[31mred\x1b[0m\n1,1\n")
    res = _run("SELECT S.nope FROM S [RANGE 10]", src)
    assert_clear_error(res, "no column 'nope'", "\\x1b[31mred\\x1b[0m")
    assert "\x1b" not in res.err
    no_ts = _csv(tmp_path, "no_ts.csv", "x,\x1b]0;title\x07\n1,1\n")
    res = _run("SELECT * FROM S [RANGE 10]", no_ts)
    assert_clear_error(res, "no timestamp column 'ts'", "\\x1b]0;title\\x07")
    _ascii_only(res.err)


def test_control_characters_in_the_result_table_are_escaped(tmp_path):
    src = _csv(tmp_path, "esc.csv", "ts,\x1b[31mred\x1b[0m,s\n1,1,\x1b[2Jboom\n")
    res = run_cli("run", "SELECT * FROM S [RANGE 10]", "--source", f"S={src}")
    assert res.code == 0, res.err
    assert "\x1b" not in res.out + res.err
    assert "\\x1b[31mred" in res.out and "\\x1b[2Jboom" in res.out


SECRET = "admin:$6$Zq9-s3cr3t-hash:19000:0:99999:7:::\n"


def test_a_path_as_query_text_is_not_read_and_gets_a_hint(tmp_path):
    secret = _csv(tmp_path, "shadow", SECRET)
    src = _csv(tmp_path, "s.csv", "ts,a\n1,1\n")
    res = run_cli("run", "./shadow", "--source", f"S={src}", cwd=tmp_path)
    assert_clear_error(res, "is read as query text, not as a file", "*.cql", "--query-file")
    assert "s3cr3t" not in res.err
    res = run_cli("run", "--query-file", str(secret), "--source", f"S={src}")
    assert_clear_error(res, f"query file {secret} does not hold a valid query", "not shown")
    assert "s3cr3t" not in res.err and "admin" not in res.err
    assert secret.read_text() == SECRET


def test_query_files_by_cql_name_or_query_file_option(tmp_path):
    src = _csv(tmp_path, "s.csv", "ts,a\n1,1\n2,2\n")
    (tmp_path / "q.sql").write_text("SELECT S.ts FROM S [RANGE 10] WHERE S.a = 2\n")
    (tmp_path / "q.cql").write_text("SELECT S.ts FROM S [RANGE 10] WHERE S.a = 2\n")
    for args in (["q.cql"], ["--query-file", "q.sql"]):
        out = tmp_path / "out.csv"
        res = run_cli("run", *args, "--source", f"S={src}", "--out", str(out), "--quiet", cwd=tmp_path)
        assert res.code == 0, res.err
        assert pd.read_csv(out)["S.ts"].tolist() == [2]
        os.remove(out)
    res = run_cli("explain", "--query-file", "q.sql", cwd=tmp_path)
    assert res.code == 0 and "S[RANGE 10]" in res.out, res.err
    assert_clear_error(run_cli("run", "q.sql", "--source", f"S={src}", cwd=tmp_path), "--query-file")
    assert_clear_error(run_cli("run", "q.cql", "--query-file", "q.sql", "--source", f"S={src}", cwd=tmp_path), "given twice")
    (tmp_path / "bad.cql").write_text("SELECT * FROM S [RANGE 10] WHER S.a = 1\n")
    assert_clear_error(run_cli("run", "bad.cql", "--source", f"S={src}", cwd=tmp_path), "query file bad.cql, line 1", "WHER S.a = 1")
