"""Column pruning (plan.prune): scans read only what the plan uses, and answers do not change."""

from __future__ import annotations

import pandas as pd
import pytest

from slidewise.cql import parse_plan
from slidewise.plan.bind import bind
from slidewise.plan.prune import prune_columns
from slidewise.runtime.plan_engine import execute_plan

SCHEMAS = {"S": ["ts", "a", "b", "c", "d"], "T": ["ts", "a", "e", "f"], "R": ["ts", "op", "a", "name", "x"]}


def columns(text: str) -> dict[str, tuple]:
    plan = prune_columns(bind(parse_plan(text, tables={"R"}), SCHEMAS))
    return {s.alias: s.columns for s in plan.scans()}


@pytest.mark.parametrize(
    "text, expected",
    [
        ("SELECT RSTREAM(DISTINCT S.a) FROM S [RANGE 5]", {"S": ("a",)}),
        ("SELECT * FROM S [RANGE 5]", {"S": ("a", "b", "c", "d")}),
        ("SELECT S.a FROM S [RANGE 5] WHERE S.b > 2", {"S": ("a", "b")}),
        ("SELECT S.a, T.f FROM S [RANGE 5], T [RANGE 5] WHERE S.a = T.a", {"S": ("a",), "T": ("a", "f")}),
        ("SELECT S.a, COUNT(*) AS n FROM S [RANGE 5] GROUP BY S.a", {"S": ("a",)}),
        ("SELECT S.a, SUM(S.c) AS n FROM S [RANGE 5] GROUP BY S.a", {"S": ("a", "c")}),
        ("SELECT COUNT(*) AS n FROM S [RANGE 5]", {"S": ()}),
        ("SELECT S.b FROM S [PARTITION BY d ROWS 2]", {"S": ("b", "d")}),
        # whole rows: DISTINCT over the window itself, negation
        ("SELECT DISTINCT * FROM S [RANGE 5]", {"S": ("a", "b", "c", "d")}),
        ("SELECT S.a FROM S [RANGE 5] WHERE NOT EXISTS (SELECT * FROM T [RANGE 5] WHERE T.a = S.a)", {"S": ("a", "b", "c", "d"), "T": ("a", "e", "f")}),
        # a self-join: one column set per source
        ("SELECT X.b FROM S [RANGE 5] AS X, S [RANGE 5] AS Y WHERE X.a = Y.a", {"X": ("a", "b"), "Y": ("a", "b")}),
        # relations are never pruned (their first attribute is the key)
        ("SELECT S.b FROM S [RANGE 5], R WHERE S.a = R.a", {"S": ("a", "b"), "R": ("a", "name", "x")}),
    ],
)
def test_pruned_columns(text, expected):
    assert columns(text) == expected


def test_unpruned_plan_is_returned_as_is():
    plan = bind(parse_plan("SELECT * FROM S [RANGE 5]"), SCHEMAS)
    assert prune_columns(plan) is plan


@pytest.mark.parametrize(
    "text",
    [
        "SELECT RSTREAM(DISTINCT S.a) FROM S [RANGE 3]",
        "SELECT S.a, SUM(S.c) AS n FROM S [RANGE 4] GROUP BY S.a",
        "SELECT S.b, T.f FROM S [RANGE 3], T [ROWS 2] WHERE S.a = T.a AND S.c < T.e",
        "SELECT S.b, R.name FROM S [RANGE 3], R WHERE S.a = R.a",
    ],
)
@pytest.mark.parametrize("strategy", ["nt", "upa"])
def test_answers_are_those_of_the_whole_rows(text, strategy):
    s = pd.DataFrame({"ts": [1, 2, 2, 4, 7, 8], "a": [1, 2, 1, 1, 2, 1], "b": list("uvwxyz"), "c": [5, 1, 4, 2, 8, 3], "d": [0.5] * 6})
    t = pd.DataFrame({"ts": [1, 3, 5, 6], "a": [1, 1, 2, 1], "e": [9, 9, 0, 9], "f": list("pqrs")})
    r = pd.DataFrame({"ts": [0, 0, 3], "op": ["+", "+", "-"], "a": [1, 2, 1], "name": list("xyz"), "x": [1, 2, 3]})
    streams, tables = {"S": s, "T": t}, {"R": r} if " R " in text + " " else {}
    pruned = execute_plan(parse_plan(text, tables=tables), streams, tables, strategy=strategy, collect=True).results

    import slidewise.runtime.plan_engine as plans

    keep = plans.prune_columns
    plans.prune_columns = lambda plan: plan
    try:
        whole = execute_plan(parse_plan(text, tables=tables), streams, tables, strategy=strategy, collect=True).results
    finally:
        plans.prune_columns = keep
    assert pruned.to_dict("list") == whole.to_dict("list")
    assert len(whole)
