"""Count windows with SLIDE (``[ROWS n SLIDE m]``) on the pane path, against the oracle.

docs/semantics.md, "Count windows with SLIDE", is the contract and
``tests/oracle_plans.py`` (``count_answers``) its executable form: evaluation k
follows the (k·m)-th arrival and answers the query over the last n of the first
k·m arrivals (WHERE after the window), stamped with that arrival's ``ts``. Every
registered aggregate runs here over random streams (ties, bursts, empty groups,
n < m, n not a multiple of m, streams shorter than one window), chunked finely
and coarsely; the errors of bad windows and other shapes are pinned.
"""

from __future__ import annotations

import math
from collections import Counter

import pandas as pd
import pytest
from hypothesis import given, note
from hypothesis import strategies as st

import slidewise
from slidewise.cli import main
from slidewise.cql import parse_plan
from slidewise.errors import PlanError, QueryError
from slidewise.operators.aggregates import REGISTRY
from slidewise.optimizer.pane_plan import match
from slidewise.plan.bind import bind
from slidewise.runtime.plan_engine import execute_plan
from tests.oracle_plans import expected_output
from tests.test_run_many import AGGS as MANY_AGGS
from tests.test_run_many import WHERE as MANY_WHERE
from tests.test_sliding_aggregate import AGGS, rows, streams
from tests.test_sliding_aggregate import queries as time_queries

#: every registered aggregate with an exact answer here (HLL counts exactly on windows this small)
COUNT_AGGS = [*AGGS, "APPROX_COUNT_DISTINCT(S.b)", "APPROX_COUNT_DISTINCT(S.k)"]
#: estimates (KLL picks an item, it does not interpolate): compared with the time window of the same tuples
ESTIMATES = ["APPROX_QUANTILE(S.b, 0.5)", "APPROX_QUANTILE(S.f, 0.9)"]


def test_every_registered_aggregate_is_drawn():
    assert {a.split("(")[0].lower() for a in COUNT_AGGS + ESTIMATES} == set(REGISTRY)


def count_windows() -> st.SearchStrategy[str]:
    """``[ROWS n SLIDE m]``: n < m, n = m, n > m, gcd 1 or not."""
    return st.builds(lambda n, m: f"[ROWS {n} SLIDE {m}]", st.integers(1, 12), st.integers(1, 8))


def queries(aggregates: list[str] = COUNT_AGGS) -> st.SearchStrategy[str]:
    """The sliding-aggregate tests' queries over count windows with SLIDE."""
    return time_queries(aggregates, count_windows())


def oracle_rows(query: str, frame: pd.DataFrame) -> Counter:
    bound = bind(parse_plan(query), {"S": ["a", "k", "b", "f"]})
    return Counter(
        {(t, tuple(None if isinstance(v, float) and math.isnan(v) else v for v in vals), s): c for (t, vals, s), c in expected_output(bound, {"S": frame}).items()}
    )


@given(frame=streams(), query=queries(), chunk=st.sampled_from([1, 2, 3, 65536]))
def test_pane_path_equals_the_oracle(frame, query, chunk):
    note(query)
    note(frame.to_records(index=False).tolist())
    res = execute_plan(parse_plan(query), {"S": frame}, collect=True, chunk_rows=chunk)
    assert res.stats["path"].startswith("sliding aggregate:") and " arrivals, b=" in res.stats["path"]
    got = rows(res.results)
    cols = len(res.results.columns) - 2
    assert Counter((r[cols], r[:cols], r[cols + 1]) for r in got) == oracle_rows(query, frame)
    assert [r[cols] for r in got] == sorted(r[cols] for r in got)  # evaluation by evaluation


@given(frame=streams(), query=queries(COUNT_AGGS + ESTIMATES), chunk=st.sampled_from([1, 3, 65536]))
def test_one_arrival_per_instant_makes_rows_a_range(frame, query, chunk):
    """With ``ts`` = arrival number, ``[ROWS n SLIDE m]`` is ``[RANGE n−1 SLIDE m]`` up to the last whole slide."""
    note(query)
    frame = frame.assign(ts=range(1, len(frame) + 1))
    n, m = (int(x) for x in query.split("[ROWS ")[1].split("]")[0].split(" SLIDE "))
    counted = rows(slidewise.run(query, {"S": frame}, chunk_rows=chunk).results)
    timed = rows(slidewise.run(query.replace(f"[ROWS {n} SLIDE", f"[RANGE {n - 1} SLIDE"), {"S": frame}, chunk_rows=chunk).results)
    assert counted == [r for r in timed if r[-2] <= len(frame) // m * m]


def test_windows_ties_and_partial_first_windows():
    # arrivals 1..8; evaluation k after arrival 2k; window = the last 3 of them (fewer at first)
    frame = pd.DataFrame({"ts": [1, 1, 2, 3, 3, 5, 5, 8], "k": list("abaabbaa"), "v": [1, 2, 3, 4, 5, 6, 7, 8]})
    q = "SELECT RSTREAM(S.k, COUNT(*) AS n, SUM(S.v) AS s) FROM S [ROWS 3 SLIDE 2] GROUP BY S.k"
    got = rows(slidewise.run(q, {"S": frame}).results)
    assert got == [
        ("a", 1, 1, 1, 1),
        ("b", 1, 2, 1, 1),
        ("a", 2, 7, 3, 1),
        ("b", 1, 2, 3, 1),
        ("a", 1, 4, 5, 1),
        ("b", 2, 11, 5, 1),
        ("a", 2, 15, 8, 1),
        ("b", 1, 6, 8, 1),
    ]
    # a burst at one ts: three evaluations carry ts 4; WHERE filters the window, it does not move it
    burst = pd.DataFrame({"ts": [4] * 6 + [9], "k": list("aabbab") + ["a"], "v": [1, 2, 3, 4, 5, 6, 7]})
    q = "SELECT ISTREAM(S.k, MAX(S.v) AS m) FROM S [ROWS 2 SLIDE 2] WHERE S.v != 3 GROUP BY S.k"
    assert rows(slidewise.run(q, {"S": burst}).results) == [("a", 2, 4, 1), ("b", 4, 4, 1), ("a", 5, 4, 1), ("b", 6, 4, 1)]
    d = "SELECT DSTREAM(S.k, MAX(S.v) AS m) FROM S [ROWS 2 SLIDE 2] WHERE S.v != 3 GROUP BY S.k"
    assert rows(slidewise.run(d, {"S": burst}).results) == [("a", 2, 4, -1), ("b", 4, 4, -1)]


def test_fewer_arrivals_than_the_slide_give_no_evaluation():
    frame = pd.DataFrame({"ts": [1, 2, 3], "k": [1, 1, 2]})
    assert rows(slidewise.run("SELECT RSTREAM(S.k, COUNT(*) AS n) FROM S [ROWS 10 SLIDE 4] GROUP BY S.k", {"S": frame}).results) == []
    # the arrivals after the last multiple of the slide are never evaluated
    got = rows(slidewise.run("SELECT RSTREAM(COUNT(*) AS n) FROM S [ROWS 10 SLIDE 2]", {"S": frame}).results)
    assert got == [(2, 2, 1)]


def test_explain_shows_panes_of_arrivals(capsys):
    query = "SELECT RSTREAM(S.a, COUNT(*) AS n, MIN(S.b) AS m) FROM S [ROWS 1000 SLIDE 40] GROUP BY S.a"
    assert main(["explain", query]) == 0
    out = capsys.readouterr().out
    assert "RSTREAM every 40 arrivals" in out
    assert "path         sliding aggregate: running synopsis and interval synopsis, pane s=40 arrivals, b=25; " in out
    assert "(a float group key or MIN/MAX/SUM/AVG of text is an error here)" in out
    spec = match(parse_plan("SELECT RSTREAM(S.a, MIN(S.b) AS m) FROM S [ROWS 6 SLIDE 4] GROUP BY S.a"))
    assert (spec.counted, spec.length, spec.slide, spec.pane, spec.panes) == (True, 5, 4, 2, 3)


def test_run_many_shares_count_windows_with_count_windows_only():
    frame = pd.DataFrame(
        {
            "ts": [1, 1, 2, 4, 4, 4, 7, 9, 9, 12, 15, 15],
            "a": [1, 2, 1, 1, 3, 2, 1, 2, 2, 3, 1, 1],
            "k": list("xyxyzxyzxyzx"),
            "b": [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8],
            "f": [0.5] * 12,
        }
    )
    queries = {
        "c1": "SELECT RSTREAM(S.a, COUNT(*) AS n, SUM(S.b) AS s) FROM S [ROWS 4 SLIDE 2] GROUP BY S.a",
        "c2": "SELECT ISTREAM(S.a, MAX(S.b) AS m) FROM S [ROWS 6 SLIDE 3] GROUP BY S.a",
        "c3": "SELECT RSTREAM(S.a, AVG(S.b) AS v) FROM S [ROWS 5 SLIDE 5] WHERE S.b > 2 GROUP BY S.a",
        "t1": "SELECT RSTREAM(S.a, COUNT(*) AS n, SUM(S.b) AS s) FROM S [RANGE 3 SLIDE 2] GROUP BY S.a",
    }
    for chunk in (1, 5, 65536):
        many = slidewise.run_many(queries, {"S": frame}, chunk_rows=chunk)
        groups = [sorted(g["queries"]) for g in many.stats["shared"]]
        assert ["t1"] in groups and not any("t1" in g and len(g) > 1 for g in groups)
        assert ["c1", "c2", "c3"] in groups  # c3 by a cover (its WHERE)
        for name, q in queries.items():
            assert rows(many.results[name].results) == rows(slidewise.run(q, {"S": frame}, chunk_rows=chunk).results), name
            if name.startswith("c"):
                got = rows(many.results[name].results)
                assert Counter((r[-2], r[:-2], r[-1]) for r in got) == oracle_rows(q, frame.astype({"f": "float64"}))


@st.composite
def count_query_sets(draw) -> dict[str, str]:
    """Named count-window queries over S with one key set (and now and then a time window among them)."""
    keys = draw(st.sampled_from([["S.a"], ["S.a", "S.k"], []]))
    out = {}
    for i in range(draw(st.integers(1, 5))):
        aggs = draw(st.lists(st.sampled_from(MANY_AGGS), min_size=1, max_size=3, unique=True))
        items = keys + [f"{a} AS c{j}" for j, a in enumerate(aggs)]
        n, m = draw(st.integers(1, 10)), draw(st.integers(1, 5))
        window = f"[RANGE {n} SLIDE {m}]" if draw(st.integers(0, 4)) == 0 else f"[ROWS {n} SLIDE {m}]"
        where = draw(st.sampled_from(MANY_WHERE if keys else MANY_WHERE[:2]))
        kind = draw(st.sampled_from(["RSTREAM", "RSTREAM", "ISTREAM", "DSTREAM"]))
        having = " HAVING COUNT(*) > 1" if keys and draw(st.booleans()) else ""
        out[f"q{i}"] = (
            f"SELECT {kind}({', '.join(items)}) FROM S {window}" + (f" WHERE {where}" if where else "") + (f" GROUP BY {', '.join(keys)}" if keys else "") + having
        )
    return out


@given(frame=streams(), queries=count_query_sets(), chunk=st.sampled_from([1, 3, 65536]))
def test_shared_count_windows_equal_each_query_alone(frame, queries, chunk):
    note(queries)
    many = slidewise.run_many(queries, {"S": frame}, chunk_rows=chunk)
    assert not many.stats["alone"]
    for g in many.stats["shared"]:
        assert len({"ROWS" in queries[q] for q in g["queries"]}) == 1  # count windows share with count windows only
    for name, q in queries.items():
        alone = slidewise.run(q, {"S": frame}, chunk_rows=chunk).results
        assert rows(many.results[name].results) == rows(alone), name


# ---- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (
            "SELECT RSTREAM(COUNT(*)) FROM S [ROWS 0 SLIDE 2]",
            "query line 1, column 39: window size must be positive, got 0 (hint: write e.g. [RANGE 100] or [ROWS 50])",
        ),
        (
            "SELECT RSTREAM(COUNT(*)) FROM S [ROWS 5 SLIDE 0]",
            "query line 1, column 47: SLIDE of a count window must be a positive number of arrivals, got 0 "
            "(hint: write e.g. [ROWS 5 SLIDE 2]: the window is evaluated after every m-th arrival)",
        ),
        (
            "SELECT RSTREAM(COUNT(*)) FROM S [ROWS 5 SLIDE -3]",
            "query line 1, column 47: SLIDE of a count window must be a positive number of arrivals, got -3",
        ),
        ("SELECT RSTREAM(COUNT(*)) FROM S [ROWS 5 SLIDE 2 SECONDS]", "query line 1, column 49: ROWS counts tuples and takes no time unit"),
        ("SELECT RSTREAM(COUNT(*)) FROM S [ROWS 5 SLIDE 1.5]", "query line 1, column 47: ROWS needs a whole number of tuples, got 1.5"),
        (
            "SELECT * FROM S1 [ROWS 5 SLIDE 2]",
            "query line 1, column 26: SLIDE on a count window needs a periodic GROUP BY (or aggregate) over one stream: RSTREAM, ISTREAM or DSTREAM "
            "(hint: write e.g. SELECT RSTREAM(S.k, COUNT(*) AS n) FROM S [ROWS 100 SLIDE 10] GROUP BY S.k, or SELECT RSTREAM FREQUENT(S.x, 5) "
            "FROM S [ROWS 10000 SLIDE 100]; without SLIDE a count window follows every arrival)",
        ),
        ("SELECT RSTREAM DISTINCT S.a FROM S [ROWS 5 SLIDE 2]", "query line 1, column 44: SLIDE on a count window needs a periodic GROUP BY"),
        ("SELECT RSTREAM(A.k, COUNT(*)) FROM A [ROWS 5 SLIDE 2], B [ROWS 5] WHERE A.k = B.k GROUP BY A.k", "query line 1, column 46: SLIDE on a count window needs"),
        ("SELECT RSTREAM_RESTORE(S.k, COUNT(*)) FROM S [ROWS 5 SLIDE 2] GROUP BY S.k", "query line 1, column 54: SLIDE on a count window needs"),
        ("SELECT RSTREAM(S.k, COUNT(*)) FROM S [ROWS 5 SLIDE 2], T [RANGE 4 SLIDE 2] GROUP BY S.k", "query line 1, column 46: SLIDE on a count window needs"),
        (
            "SELECT RSTREAM(S.k, COUNT(*)) FROM S [PARTITION BY k ROWS 5 SLIDE 2] GROUP BY S.k",
            "query line 1, column 61: SLIDE on a count window is given to the query (periodic GROUP BY or FREQUENT), not to a window of a PARTITION BY or of a join",
        ),
    ],
)
def test_bad_count_windows_are_one_located_error(query, message, capsys):
    with pytest.raises(QueryError) as e:
        parse_plan(query)
    assert str(e.value).startswith(message)
    assert main(["explain", query]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and message in err


def test_queries_the_pane_path_cannot_take_are_errors_naming_them():
    frame = pd.DataFrame({"ts": [1, 2, 3], "x": [0.5, 1.5, 0.5], "k": ["a", "b", "a"]})
    for query, why in [
        ("SELECT RSTREAM(S.x, COUNT(*) AS n) FROM S [ROWS 4 SLIDE 2] GROUP BY S.x", "and group key S.x is a float column (NaN keys)"),
        ("SELECT RSTREAM(S.k, MIN(S.k) AS m) FROM S [ROWS 4 SLIDE 2] GROUP BY S.k", "and m over a non-numeric column"),
        ("SELECT RSTREAM(S.k, SUM(S.x + 1) AS m) FROM S [ROWS 4 SLIDE 2] GROUP BY S.k", "and this query is not of its form"),
    ]:
        with pytest.raises(PlanError) as e:
            slidewise.run(query, {"S": frame})
        assert str(e.value).startswith(f"{query}: a count window with SLIDE runs on the pane path only, {why} (hint: group by plain integer")
    q = "SELECT RSTREAM(S.k, COUNT(*) AS n) FROM S [ROWS 4 SLIDE 2] GROUP BY S.k"
    with pytest.raises(PlanError, match="runs on the pane path only, and panes=False asks for the operator network"):
        execute_plan(parse_plan(q), {"S": frame}, panes=False)


def test_the_query_manager_refuses_count_windows():
    from slidewise.manager.queries import compile_query

    with pytest.raises(QueryError, match=r"the query manager's sub-windows are time intervals: a count window with SLIDE \(\[ROWS n SLIDE m\]\) is not supported here"):
        compile_query("SELECT RSTREAM(S.a, COUNT(*) AS n) FROM S [ROWS 4 SLIDE 2] GROUP BY S.a", {"S": {"a": "int"}}, 1, 10)


def test_the_spark_engine_refuses_count_windows_before_spark_starts(capsys, tmp_path):
    src = tmp_path / "s.csv"
    src.write_text("ts,k\n1,7\n2,8\n")
    query = "SELECT RSTREAM(S.k, COUNT(*) AS n) FROM S [ROWS 4 SLIDE 2] GROUP BY S.k"
    assert main(["run", query, "--source", f"S={src}", "--engine", "spark"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"slidewise: error: {query}: a count window with SLIDE ([ROWS n SLIDE m]) does not run on the Spark engine or its stages "
        "(Kafka topics followed with --checkpoint) (hint: run it with --engine local, without --checkpoint)"
    ]
