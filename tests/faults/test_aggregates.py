"""Fault suite: bad aggregates, through the CLI.

SUM / AVG of text, unknown functions, aggregates where no aggregate may
stand (WHERE, GROUP BY, inside an expression or another aggregate) and
``COUNT(DISTINCT *)`` are each one located message with a hint, exit 2,
before the output file exists; COUNT / MIN / MAX take text (text order).
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tests.faults.conftest import assert_clear_error, run_cli

ROWS = "ts,k,x,name\n1,a,1,zeta\n2,a,5,alpha\n3,b,2,beta\n7,a,3,mu\n12,b,4,gamma\n"
PANES = "FROM S [RANGE 10 SLIDE 5]"  # a periodic one-stream GROUP BY: the pane path
TUPLES = "FROM S [RANGE 10]"  # the per-tuple operator network


@pytest.fixture
def data(tmp_path: Path) -> Path:
    (tmp_path / "s.csv").write_text(ROWS)  # k, name text; x int
    return tmp_path


def _run(data: Path, query: str):
    out = data / "out" / "res.csv"
    outcome = run_cli("run", query, "--source", f"S={data / 's.csv'}", "--out", str(out), "--quiet")
    return outcome, out


def _rejected(data: Path, query: str, *fragments: str) -> str:
    outcome, out = _run(data, query)
    err = assert_clear_error(outcome, *fragments)
    assert not out.exists()
    return err


@pytest.mark.parametrize("frm", [PANES, TUPLES])
@pytest.mark.parametrize(
    "call,column",
    [
        ("SUM(S.name)", 21),
        ("AVG(S.name)", 21),
        ("SUM(DISTINCT S.name)", 21),
        ("AVG(S.k)", 21),
    ],
)
def test_sum_avg_of_text(data, frm, call, column):
    func = call.split("(")[0]
    arg = call.removeprefix(f"{func}(").removeprefix("DISTINCT ").removesuffix(")")
    _rejected(
        data,
        f"SELECT RSTREAM(S.k, {call} AS s) {frm} GROUP BY S.k",
        f"query line 1, column {column}: {func} needs a number, {arg} is text",
        f"{func}(CAST({arg} AS DOUBLE))",
        "COUNT, MIN and MAX work on text",
    )


def test_sum_of_text_literal(data):
    _rejected(data, f"SELECT S.k, SUM('abc') AS s {TUPLES} GROUP BY S.k", "query line 1, column 13: SUM needs a number, 'abc' is text")


def test_avg_of_text_in_having(data):
    _rejected(data, f"SELECT S.k {TUPLES} GROUP BY S.k HAVING AVG(S.name) > 1", "query line 1, column 50: AVG needs a number, S.name is text")


def test_arithmetic_on_text_inside_aggregate(data):
    _rejected(
        data,
        f"SELECT RSTREAM(S.k, SUM(S.name + 1) AS s) {PANES} GROUP BY S.k",
        "query line 1, column 25: cannot compute S.name (text) + 1 (integer): '+' needs numbers",
        "CAST(S.name AS DOUBLE)",
    )


@pytest.mark.parametrize("frm", [PANES, TUPLES])
def test_count_min_max_take_text(data, frm):
    outcome, out = _run(data, f"SELECT RSTREAM(S.k, MIN(S.name) AS lo, MAX(S.name) AS hi, COUNT(S.name) AS n, COUNT(DISTINCT S.name) AS d) {frm} GROUP BY S.k")
    assert outcome.code == 0, outcome.err
    rows = list(csv.DictReader(out.open()))
    at10 = {r["S.k"]: (r["lo"], r["hi"], r["n"], r["d"]) for r in rows if int(r["ts"]) <= 10}  # last row
    assert at10 == {"a": ("alpha", "zeta", "3", "3"), "b": ("beta", "beta", "1", "1")}


@pytest.mark.parametrize("name", ["MODE", "FOO", "mode"])
@pytest.mark.parametrize("form", ["{}(S.x)", "{}(DISTINCT S.x)", "{}(*)"])
def test_unknown_function(data, name, form):
    err = _rejected(
        data,
        f"SELECT RSTREAM(S.k, {form.format(name)} AS m) {PANES} GROUP BY S.k",
        f"query line 1, column 21: unknown function '{name}'",
        "functions: ABS, CEIL, COALESCE, FLOOR, LENGTH, LOWER, ROUND, SUBSTR, UPPER, CAST(x AS type); aggregates: COUNT, SUM, AVG, MIN, MAX, MEDIAN, QUANTILE",
    )
    assert err.count("error:") == 1


def test_unknown_function_in_having(data):
    _rejected(
        data,
        f"SELECT S.k {TUPLES} GROUP BY S.k HAVING MODE(S.x) > 1",
        "query line 1, column 50: unknown function 'MODE'",
        "aggregates: COUNT, SUM, AVG, MIN, MAX, MEDIAN, QUANTILE",
    )


def test_scalar_function_as_aggregate(data):
    _rejected(
        data,
        f"SELECT S.k, ABS(DISTINCT S.x) {TUPLES} GROUP BY S.k",
        "query line 1, column 13: ABS is not an aggregate",
        "aggregates: COUNT, SUM, AVG, MIN, MAX, MEDIAN, QUANTILE",
    )


@pytest.mark.parametrize(
    "query,fragments",
    [
        (f"SELECT S.k {TUPLES} WHERE SUM(S.x) > 1 GROUP BY S.k", ("query line 1, column 36: aggregate SUM in WHERE", "aggregate in a subquery and filter outside it")),
        (f"SELECT S.k {TUPLES} GROUP BY COUNT(*)", ("query line 1, column 39: aggregate COUNT in GROUP BY", "group by columns")),
        (f"SELECT S.k, SUM(MAX(S.x)) AS s {TUPLES} GROUP BY S.k", ("query line 1, column 17: aggregate MAX inside another aggregate", "aggregate in a subquery")),
        (f"SELECT S.k {TUPLES} GROUP BY S.k HAVING SUM(COUNT(*)) > 1", ("query line 1, column 54: aggregate COUNT inside another aggregate", "aggregate in a subquery")),
        (f"SELECT S.k, SUM(S.x) + 1 AS s {TUPLES} GROUP BY S.k", ("query line 1, column 13: aggregate SUM inside an expression", "compute with it in an outer query")),
        (
            f"SELECT RSTREAM(S.k, COUNT(DISTINCT *) AS n) {PANES} GROUP BY S.k",
            ("query line 1, column 21: COUNT(DISTINCT *) is not defined", "write COUNT(*) to count rows"),
        ),
        (f"SELECT S.k, MIN(*) AS m {TUPLES} GROUP BY S.k", ("query line 1, column 13: MIN(*) is not defined: only COUNT(*) counts rows",)),
        (f"SELECT S.k, COUNT(S.x, S.k) AS n {TUPLES} GROUP BY S.k", ("query line 1, column 13: COUNT takes 1 argument, got 2",)),
    ],
    ids=["where", "group_by", "nested", "nested_having", "in_expression", "count_distinct_star", "min_star", "two_arguments"],
)
def test_misplaced_aggregates(data, query, fragments):
    _rejected(data, query, *fragments)


@pytest.mark.parametrize("frm", [PANES, TUPLES])
@pytest.mark.parametrize(
    "call,fragments",
    [
        ("MEDIAN(S.name)", ("query line 1, column 21: MEDIAN needs a number, S.name is text", "MEDIAN(CAST(S.name AS DOUBLE)) takes the median of its numbers")),
        ("QUANTILE(S.k, 0.5)", ("query line 1, column 21: QUANTILE needs a number, S.k is text", "QUANTILE(CAST(S.k AS DOUBLE), 0.9)")),
        ("QUANTILE(S.x, 1.5)", ("query line 1, column 35: QUANTILE's fraction 1.5 is outside [0, 1]", "p = 0 is the minimum, 0.5 the median, 1 the maximum")),
        ("QUANTILE(S.x, -0.1)", ("query line 1, column 35: QUANTILE's fraction -0.1 is outside [0, 1]",)),
        ("QUANTILE(S.x, S.x)", ("query line 1, column 35: QUANTILE's fraction must be a number literal, got S.x", "write a constant between 0 and 1")),
        ("QUANTILE(S.x, '0.5')", ("query line 1, column 35: QUANTILE's fraction must be a number literal",)),
        ("QUANTILE(S.x)", ("query line 1, column 21: QUANTILE takes 2 arguments, got 1", "QUANTILE(S.x, 0.9)")),
        ("MEDIAN(S.x, 0.5)", ("query line 1, column 21: MEDIAN takes 1 argument, got 2",)),
        ("MEDIAN(*)", ("query line 1, column 21: MEDIAN(*) is not defined: only COUNT(*) counts rows",)),
    ],
    ids=["median_text", "quantile_text", "p_above", "p_below", "p_column", "p_text", "p_missing", "median_two", "star"],
)
def test_bad_quantiles(data, frm, call, fragments):
    err = _rejected(data, f"SELECT RSTREAM(S.k, {call} AS m) {frm} GROUP BY S.k", *fragments)
    assert err.count("error:") == 1


@pytest.mark.parametrize("frm", [PANES, TUPLES])
def test_median_and_quantile(data, frm):
    outcome, out = _run(data, f"SELECT RSTREAM(S.k, MEDIAN(S.x) AS m, QUANTILE(S.x, 0.25) AS q) {frm} GROUP BY S.k")
    assert outcome.code == 0, outcome.err
    rows = list(csv.DictReader(out.open()))
    at10 = {r["S.k"]: (float(r["m"]), float(r["q"])) for r in rows if int(r["ts"]) <= 10}  # a: 1 5 3, b: 2
    assert at10 == {"a": (3.0, 2.0), "b": (2.0, 2.0)}
