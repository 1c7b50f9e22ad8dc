"""Changelog inputs: a stream with a ``sign`` column, whose −1 rows retract an earlier equal row.

The general-plan executor under every strategy equals the oracle (tests/oracle_plans.py,
"Changelog streams") on random plans — joins, DISTINCT, negation, aggregates, unions —
over streams with random retractions; count and INTERNAL windows and FREQUENT over a changelog
are refused with one message; a join query reads a changelog as a general plan. The Spark
engine: tests/spark/test_changelog_spark.py.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pandas as pd
import pytest
from hypothesis import given, note
from hypothesis import strategies as st

import slidewise
from slidewise.errors import PlanError, SourceError
from slidewise.plan.bind import with_children
from slidewise.plan.logical import Node, Plan, Scan
from slidewise.plan.query import WindowSpec
from tests.oracle_plans import expected_output
from tests.plan_cases import plan_cases
from tests.test_plan_properties import STRATEGIES, describe, run


def _time_windows(node: Node) -> Node:
    """``node`` with every stream's count window made a time window of the same size, INTERNAL made external."""
    if isinstance(node, Scan) and node.window is not None:
        w = node.window
        return replace(node, window=WindowSpec("range", w.size, slide=w.slide) if w.is_count else replace(w, internal=False))
    return with_children(node, [_time_windows(c) for c in node.children]) if node.children else node


@st.composite
def changelog(draw, frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with random retractions: of earlier rows (0..6 later) and of rows never inserted."""
    rows = [(int(t), int(a), int(b), 1) for t, a, b in frame[["ts", "a", "b"]].itertuples(index=False)]
    for _ in range(draw(st.integers(0, max(1, len(rows))))):
        if rows and draw(st.integers(0, 4)):
            t, a, b, _ = draw(st.sampled_from([r for r in rows if r[3] > 0]))
            t = min(30, t + draw(st.sampled_from([0, 0, 1, 2, 3, 6])))
        else:
            t, a, b = draw(st.integers(0, 30)), draw(st.integers(0, 2)), draw(st.integers(0, 3))
        at = max([i + 1 for i, r in enumerate(rows) if r[0] <= t], default=0)
        rows.insert(draw(st.integers(min(at, len(rows)), at)) if rows and rows[at - 1][0] == t else at, (t, a, b, -1))
    return pd.DataFrame(rows, columns=["ts", "a", "b", "sign"]).astype("int64")


@st.composite
def changelog_cases(draw):
    p, streams, tables = draw(plan_cases())
    p = Plan(_time_windows(p.root), p.aliases)
    return p, {k: draw(changelog(v)) for k, v in streams.items()}, tables


@pytest.mark.parametrize("strategy", STRATEGIES)
@given(case=changelog_cases())
def test_changelog_plans_match_the_oracle(strategy, case):
    p, streams, tables = case
    note(describe(p, streams, tables))
    expected = expected_output(p, streams, tables)
    got = run(p, streams, tables, strategy, 1)
    assert got == expected, f"missing {expected - got}, extra {got - expected}"


S = pd.DataFrame({"ts": [1, 2, 3, 4, 5], "k": [1, 2, 1, 2, 1], "sign": [1, 1, -1, 1, -1]})
R = pd.DataFrame({"ts": [2, 4], "k": [1, 2]})


def test_distinct_and_counts_subtract_retracted_rows():
    d = slidewise.run("SELECT RSTREAM DISTINCT S.k FROM S [RANGE 10]", {"S": S})
    assert d.results.to_numpy().tolist() == [[1, 1, 1], [2, 2, 1], [1, 3, -1]]
    n = slidewise.run("SELECT RSTREAM(S.k, COUNT(*) AS n) FROM S [RANGE 10] GROUP BY S.k", {"S": S})
    assert n.results.to_numpy().tolist() == [[1, 1, 1, 1], [2, 1, 2, 1], [1, 1, 3, -1], [2, 1, 4, -1], [2, 2, 4, 1]]


def test_a_join_query_reads_a_changelog_as_a_plan_and_retracts_its_results():
    q = "SELECT RSTREAM S.k, R.ts FROM S [RANGE 10], R [RANGE 10] WHERE S.k = R.k"
    r = slidewise.run(q, {"S": S, "R": R})
    assert r.results.columns.tolist() == ["S.k", "R.ts", "ts", "sign"]
    assert r.results.to_numpy().tolist() == [[1, 2, 2, 1], [1, 2, 3, -1], [2, 4, 4, 1], [2, 4, 4, 1]]
    assert slidewise.run("SELECT * FROM S [RANGE 10], R [RANGE 10] WHERE S.k = R.k", {"S": S, "R": R}).stats["strategy"] == "upa"


def test_count_windows_over_a_changelog_are_refused():
    with pytest.raises(PlanError, match=r"stream S \(source S\) is a changelog \(it has a sign column\), and a count window over it is not supported"):
        slidewise.run("SELECT RSTREAM DISTINCT S.k FROM S [ROWS 3]", {"S": S})


def test_a_sign_other_than_plus_or_minus_one_is_an_error():
    with pytest.raises(SourceError, match=r"stream S: sign must be 1 or -1, got 0"):
        slidewise.run("SELECT RSTREAM DISTINCT S.k FROM S [RANGE 3]", {"S": S.assign(sign=[1, 0, 1, 1, 1])})


def test_the_oracle_retracts_the_oldest_equal_row_in_the_window():
    from tests.plan_cases import plan, stream

    scan = stream("S1", WindowSpec("range", 10))
    streams = {"S1": pd.DataFrame({"ts": [1, 5, 6], "a": [7, 7, 7], "b": [0, 0, 0], "sign": [1, 1, -1]})}
    assert expected_output(plan(scan, "rstream"), streams) == Counter({(1, (1, 7, 0), 1): 1, (5, (5, 7, 0), 1): 1, (6, (1, 7, 0), -1): 1})


def test_frequent_over_a_changelog_is_refused():
    with pytest.raises(PlanError, match=r"stream S is a changelog \(it has a sign column\), and FREQUENT keeps only top-k summaries"):
        slidewise.run("SELECT RSTREAM FREQUENT(S.k, 2) FROM S [ROWS 4 SLIDE 2]", {"S": S})


def test_run_many_runs_a_changelog_query_alone_with_retractions(tmp_path):
    S.to_csv(tmp_path / "s.csv", index=False)
    q = "SELECT RSTREAM(S.k, COUNT(*) AS n) FROM S [RANGE 9 SLIDE 5] GROUP BY S.k"
    many = slidewise.run_many({"a": q}, {"S": str(tmp_path / "s.csv")})
    assert many.results["a"].results.to_numpy().tolist() == slidewise.run(q, {"S": S}).results.to_numpy().tolist()
    assert many.stats["alone"] == ["a"]
