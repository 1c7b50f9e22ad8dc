"""Changelog inputs (a ``sign`` column: −1 retracts an earlier equal row) on the Spark engine.

The bucket stage hosts the local executor's operator network, which does the
retracting; partitioning keeps a retraction with its row (it names every
attribute, the key among them). In process (no JVM): random plans over streams
with random retractions, through the sequencer and key buckets over several
micro-batches, equal the oracle. On Spark: a join, a GROUP BY, a DISTINCT and a
negation over changelog files equal the local engine.
"""

from __future__ import annotations

import os

import pandas as pd
import pytest
from hypothesis import given, note, settings

import slidewise
from slidewise.errors import OptionError, PlanError
from tests.oracle_plans import expected_output
from tests.spark.harness import simulate_plan
from tests.test_changelog import changelog_cases
from tests.test_plan_properties import STRATEGIES, describe


@pytest.mark.parametrize("strategy", STRATEGIES)
@settings(max_examples=60)
@given(case=changelog_cases())
def test_spark_stages_with_retractions_match_the_oracle(strategy, case):
    p, streams, tables = case
    note(describe(p, streams, tables))
    expected = expected_output(p, streams, tables)
    got = simulate_plan(p, streams, tables, strategy)
    assert got == expected, f"missing {expected - got}, extra {got - expected}"


S = pd.DataFrame(
    {"ts": [1, 2, 3, 3, 4, 5, 6, 7, 8, 9], "k": [1, 2, 1, 3, 2, 1, 3, 2, 1, 3], "v": [5, 6, 5, 7, 6, 8, 7, 6, 8, 9], "sign": [1, 1, -1, 1, 1, 1, -1, -1, 1, 1]}
)
R = pd.DataFrame({"ts": [1, 2, 4, 6, 8], "k": [1, 2, 3, 1, 2], "w": [0, 1, 0, 1, 0], "sign": [1, 1, 1, -1, 1]})


def _rows(frame: pd.DataFrame) -> list[tuple]:
    return sorted(map(tuple, frame.astype(str).to_numpy().tolist()))


def _files(tmp_path) -> dict[str, str]:
    for name, frame in (("S", S), ("R", R)):
        d = tmp_path / name
        d.mkdir()
        half = len(frame) // 2
        frame.iloc[:half].to_csv(d / "part-000.csv", index=False)
        frame.iloc[half:].to_csv(d / "part-001.csv", index=False)
        for j in range(2):  # Spark reads a directory's files oldest first
            os.utime(d / f"part-00{j}.csv", (1_000_000 + j, 1_000_000 + j))
    return {"S": str(tmp_path / "S"), "R": str(tmp_path / "R")}


@pytest.mark.spark
@pytest.mark.parametrize("output", ["", "RSTREAM "], ids=["istream", "rstream"])
def test_a_join_over_changelogs_runs_as_a_plan_on_spark_equal_to_local(spark, tmp_path, output):
    sources = _files(tmp_path)
    q = f"SELECT {output}S.k, S.v, R.w FROM S [RANGE 5], R [RANGE 5] WHERE S.k = R.k"
    local = slidewise.run(q, sources)
    on_spark = slidewise.run(q, sources, engine="spark", spark=spark, once=True, max_files_per_trigger=1)
    assert (local.results["sign"] < 0).any() == bool(output)
    assert list(on_spark.results.columns) == list(local.results.columns) == ["S.k", "S.v", "R.w", "ts", "sign"]
    assert _rows(on_spark.results) == _rows(local.results)


@pytest.mark.spark
@pytest.mark.parametrize(
    "query",
    [
        "SELECT RSTREAM(S.k, COUNT(*) AS n, SUM(S.v) AS total) FROM S [RANGE 4] GROUP BY S.k",
        "SELECT RSTREAM(S.k, COUNT(*) AS n) FROM S [RANGE 4 SLIDE 2] GROUP BY S.k",
        "SELECT RSTREAM DISTINCT S.k FROM S [RANGE 3]",
        "SELECT RSTREAM(*) FROM S [RANGE 4] WHERE NOT EXISTS (SELECT * FROM R [RANGE 4] WHERE R.k = S.k)",
    ],
    ids=["group-by", "periodic-group-by", "distinct", "negation"],
)
def test_general_plans_over_changelogs_on_spark_equal_local(spark, tmp_path, query):
    sources = _files(tmp_path)
    used = {n: p for n, p in sources.items() if f"{n} [" in query}
    local = slidewise.run(query, used)
    on_spark = slidewise.run(query, used, engine="spark", spark=spark, once=True, max_files_per_trigger=1)
    inserts_only = {n: f[f["sign"] > 0].drop(columns="sign") for n, f in (("S", S), ("R", R)) if n in used}
    assert _rows(local.results) != _rows(slidewise.run(query, inserts_only).results)  # the retractions count
    assert _rows(on_spark.results) == _rows(local.results)


def test_changelogs_are_refused_by_batch_replay_and_frequent_before_the_session(tmp_path):
    from slidewise.spark.batch import run_batch

    sources = _files(tmp_path)
    with pytest.raises(
        OptionError, match=r"stream S is a changelog \(its input has a sign column: -1 rows retract an earlier row\), which runs as a general plan, and --mode batch"
    ):
        run_batch("SELECT * FROM S [RANGE 4], R [RANGE 4] WHERE S.k = R.k", sources)
    with pytest.raises(PlanError, match=r"stream S is a changelog \(it has a sign column\), and FREQUENT keeps only top-k summaries"):
        slidewise.run("SELECT RSTREAM FREQUENT(S.k, 2) FROM S [ROWS 4 SLIDE 2]", {"S": sources["S"]}, engine="spark", once=True)
    with pytest.raises(OptionError, match=r"a stream with a sign column is a changelog \(-1 rows retract\), which runs as a general plan, and --algorithm cannot"):
        slidewise.run("SELECT * FROM S [RANGE 4], R [RANGE 4] WHERE S.k = R.k", sources, engine="spark", algorithm="hash", once=True)
