"""Fault suite: declared column types (``--schema``) and inference that never changes a value's text."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import slidewise
from slidewise.errors import OptionError, SourceError
from slidewise.options import parse_schema_option
from slidewise.runtime.sources import open_source
from slidewise.runtime.sources.text import _has_leading_zero
from tests.faults.conftest import assert_clear_error, run_cli

QUERY = "SELECT ISTREAM A.id, A.n FROM A [RANGE 10]"
ROWS = "ts,id,n,code\n1,00123,5,7\n2,00042,x,8\n3,7,7,9\n"


@pytest.fixture
def data(tmp_path: Path) -> Path:
    (tmp_path / "a.csv").write_text(ROWS)
    return tmp_path


def _rows(path: Path) -> list[dict]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def test_declared_string_keeps_leading_zeros_and_bad_int_is_a_reject(data: Path) -> None:
    out, rej = data / "out.csv", data / "rej.csv"
    done = run_cli("run", QUERY, "--source", f"A={data / 'a.csv'}", "--schema", "A=id:string,n:int", "--out", str(out), "--rejects", str(rej), "--quiet")
    assert done.code == 0, done.err
    assert [r["A.id"] for r in _rows(out)] == ["00123", "7"]
    (bad,) = _rows(rej)
    assert (bad["line"], bad["reason"]) == ("3", "unparseable value 'x' in integer column 'n'")


def test_schema_file(data: Path) -> None:
    (data / "a.schema").write_text(json.dumps({"id": "text", "n": "bigint"}))
    out = data / "out.csv"
    done = run_cli("run", QUERY, "--source", f"A={data / 'a.csv'}", "--schema", f"A=@{data / 'a.schema'}", "--out", str(out), "--quiet")
    assert done.code == 0, done.err
    assert [r["A.id"] for r in _rows(out)] == ["00123", "7"]


def test_inference_keeps_leading_zeros_as_text(data: Path) -> None:
    kinds = open_source("A", data / "a.csv").kinds
    assert kinds == {"id": "str", "n": "int", "code": "int"}


def test_declared_types_in_json_lines_and_python(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text('{"ts": 1, "id": "00123", "n": 5}\n{"ts": 2, "id": 42, "n": 7.5}\n')
    res = slidewise.run(QUERY, {"A": path}, schemas={"A": {"id": "string", "n": "int"}})
    assert res.results["A.id"].tolist() == ["00123"]
    assert res.stats["rejects"] == 1


@pytest.mark.parametrize(
    ("schema", "fragments"),
    [
        ("B=id:string", ("--schema names an unknown stream 'B'", "hint: streams: A")),
        ("A=id:varchar", ("unknown type 'varchar' for column 'id' of 'A'", "use string, int, double or bool")),
        ("A=nope:int", ("--schema A: no column 'nope' in the input", "columns: id, n, code")),
        ("A=ts:int", ("--schema A: 'ts' is the timestamp column", "--ts-unit")),
        ("A=id", ("bad --schema column 'id' in 'A=id'", "NAME=col:type,col:type")),
        ("A=@missing.json", ("cannot read --schema file", "missing.json")),
    ],
)
def test_schema_errors(data: Path, schema: str, fragments: tuple[str, ...]) -> None:
    assert_clear_error(run_cli("run", QUERY, "--source", f"A={data / 'a.csv'}", "--schema", schema, "--quiet"), *fragments)


def test_schema_refused_with_spark(data: Path) -> None:
    done = run_cli("run", QUERY, "--engine", "spark", "--source", f"A={data / 'a.csv'}", "--schema", "A=id:string", "--quiet")
    assert_clear_error(done, "--schema works with the local engine only")


def test_python_errors(data: Path) -> None:
    with pytest.raises(OptionError, match="unknown type 'char'"):
        slidewise.run(QUERY, {"A": data / "a.csv"}, schemas={"A": {"id": "char"}})
    with pytest.raises(SourceError, match="no column 'x'"):
        slidewise.run(QUERY, {"A": data / "a.csv"}, schemas={"A": {"x": "int"}})
    assert parse_schema_option(["A=id:string, n:int"]) == {"A": {"id": "string", "n": "int"}}


def test_leading_zeros_past_the_sample_are_rejects(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import slidewise.runtime.sources as sources

    monkeypatch.setattr(sources, "_SAMPLE_BYTES", 64)
    monkeypatch.setattr(sources, "_MIN_BLOCK", 64)
    path = tmp_path / "a.csv"
    path.write_text("ts,id\n" + "".join(f"{i},{i + 10}\n" for i in range(1, 40)) + "40,007\n41,08.5\n42,0\n")
    res = slidewise.run("SELECT ISTREAM A.id FROM A [RANGE 100]", {"A": path})
    assert res.results["A.id"].tolist()[-2:] == [39 + 10, 0]
    rejected = res.rejects.to_frame()
    assert rejected["line"].tolist() == [41, 42]
    assert set(rejected["reason"]) == {"value with leading zeros in number column 'id' (inferred from the first rows); declare it as text: --schema A=id:string"}
    declared = slidewise.run("SELECT ISTREAM A.id FROM A [RANGE 100]", {"A": path}, schemas={"A": {"id": "string"}})
    assert declared.results["A.id"].tolist()[-3:] == ["007", "08.5", "0"]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet='0123456789,+-."\n x', max_size=40))
def test_leading_zero_scan_matches_its_definition(text: str) -> None:
    block = text.encode()
    assert _has_leading_zero(block) == bool(re.search(rb'(?:^|[,\n\r" \t])[+-]?0[0-9]', block))
