"""Many named queries at once (slidewise.run_many): query files, the sharing rules, shared synopses.

Every query answered from a shared synopsis must give exactly the rows of its
run alone; the random cases mix windows, slides, output kinds, aggregates,
HAVING and WHERE conditions (common ones, and ones on the group keys that the
shared synopsis applies as group filters).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, note
from hypothesis import strategies as st

import slidewise
from slidewise.cli import main
from slidewise.cql import parse_plan
from slidewise.cql.queryfile import parse_queries
from slidewise.errors import PlanError, QueryError
from slidewise.optimizer.pane_plan import match
from slidewise.optimizer.sharing import pane_width, share, split_where, why_not
from slidewise.plan.bind import bind
from tests.test_sliding_aggregate import rows, streams

AGGS = ["COUNT(*)", "SUM(S.b)", "AVG(S.f)", "MIN(S.b)", "MAX(S.f)", "COUNT(DISTINCT S.b)", "MEDIAN(S.b)", "QUANTILE(S.f, 0.25)", "COUNT(S.f)", "AVG(S.b)"]
WHERE = [None, "S.b > 0", "S.a < 2", "S.a != 1 AND S.b > 0", "S.k = 'x' OR S.a = 3"]


@st.composite
def query_sets(draw) -> dict[str, str]:
    keys = draw(st.sampled_from([["S.a"], ["S.a", "S.k"], []]))
    out = {}
    for i in range(draw(st.integers(1, 6))):
        aggs = draw(st.lists(st.sampled_from(AGGS), min_size=1, max_size=3, unique=True))
        items = keys + [f"{a} AS c{j}" for j, a in enumerate(aggs)]
        length, slide = draw(st.integers(0, 12)), draw(st.integers(1, 5))
        where = draw(st.sampled_from(WHERE if keys else WHERE[:2]))
        kind = draw(st.sampled_from(["RSTREAM", "RSTREAM", "ISTREAM", "DSTREAM"]))
        having = " HAVING COUNT(*) > 1" if draw(st.booleans()) else ""
        out[f"q{i}"] = (
            f"SELECT {kind}({', '.join(items)}) FROM S [RANGE {length} SLIDE {slide}]"
            + (f" WHERE {where}" if where else "")
            + (f" GROUP BY {', '.join(keys)}" if keys else "")
            + (having if keys else "")
        )
    return out


@given(frame=streams(), queries=query_sets(), chunk=st.sampled_from([3, 65536]))
def test_shared_answers_equal_each_query_alone(frame, queries, chunk):
    note(queries)
    many = slidewise.run_many(queries, {"S": frame}, chunk_rows=chunk)
    assert not many.stats["alone"]
    assert sum(len(g["queries"]) for g in many.stats["shared"]) == len(queries)
    for name, q in queries.items():
        alone = slidewise.run(q, {"S": frame}, chunk_rows=chunk).results
        got = many.results[name].results
        assert list(got.columns) == list(alone.columns)
        assert rows(got) == rows(alone), name


def test_groups_filters_and_states():
    frame = pd.DataFrame({"ts": np.arange(40), "a": np.arange(40) % 4, "b": np.arange(40) % 7})
    queries = {
        "n": "SELECT RSTREAM(S.a, COUNT(*) AS n, AVG(S.b) AS m) FROM S [RANGE 9 SLIDE 5] GROUP BY S.a",
        "s": "SELECT RSTREAM(X.a, SUM(X.b) AS s) FROM S [RANGE 5 SLIDE 3] AS X WHERE X.a >= 2 GROUP BY X.a",
        "m": "SELECT RSTREAM(S.a, MEDIAN(S.b) AS m, COUNT(DISTINCT S.b) AS d) FROM S [RANGE 11 SLIDE 4] WHERE S.b > 2 GROUP BY S.a",
        "q": "SELECT RSTREAM(S.a, QUANTILE(S.b, 0.9) AS q) FROM S [RANGE 3 SLIDE 2] WHERE S.b > 2 AND S.a = 1 GROUP BY S.a",
        "d": "SELECT DISTINCT S.a FROM S [RANGE 3]",
    }
    many = slidewise.run_many(queries, {"S": frame})
    shared = many.stats["shared"]
    assert [g["queries"] for g in shared] == [["n", "s"], ["m", "q"]]
    assert shared[0]["synopsis"] == "S GROUP BY a, pane s=1" and shared[0]["states"] == ["count(*)", "sum(b)"]
    assert shared[1]["synopsis"] == "S WHERE S.b > 2 GROUP BY a, pane s=2"
    assert shared[1]["states"] == ["count(*)", "cumulative frequencies(b)", "frequencies(b)"]
    assert shared[0]["memory_saved_bytes"] > 0 and shared[0]["buffers_saved"] == 1
    assert many.stats["alone"] == ["d"]
    for name, q in queries.items():
        assert rows(many.results[name].results) == rows(slidewise.run(q, {"S": frame}).results)
    assert set(many.results["s"].results["X.a"]) == {2, 3}


def test_last_evaluations_of_different_slides_share_a_block():
    # every member's last evaluation falls at another instant (ceil(last ts / D)·D): one block answers them all
    frame = pd.DataFrame({"ts": np.arange(400) // 4, "a": np.arange(400) % 3, "b": np.arange(400) % 7})
    queries = {f"q{d}": f"SELECT RSTREAM(S.a, SUM(S.b) AS s) FROM S [RANGE 9 SLIDE {d}] GROUP BY S.a" for d in range(1, 9)}
    many = slidewise.run_many(queries, {"S": frame})
    assert [g["blocks"] for g in many.stats["shared"]] == [6]
    for name, q in queries.items():
        assert rows(many.results[name].results) == rows(slidewise.run(q, {"S": frame}).results)


def _spec(q):
    return match(bind(parse_plan(q), {"S": {"a": "int", "b": "int", "k": "str"}, "R": {"a": "int", "b": "int"}}))


def test_sharing_rules():
    base = "SELECT RSTREAM(S.a, COUNT(*) AS n) FROM S [RANGE 9 SLIDE 5]"
    a = _spec(base + " GROUP BY S.a")
    assert why_not(a, _spec("SELECT RSTREAM(S.a, MAX(S.b) AS m) FROM S [RANGE 99 SLIDE 7] GROUP BY S.a")) == []
    assert why_not(a, _spec(base.replace("FROM S [RANGE 9 SLIDE 5]", "FROM R [RANGE 9 SLIDE 5] AS S") + " GROUP BY S.a")) == ["streams S and R differ"]
    assert why_not(a, _spec(base + " GROUP BY S.a, S.k")) == ["GROUP BY a and a, k differ"]
    assert why_not(a, _spec(base + " WHERE S.a = 1 GROUP BY S.a")) == []  # a group filter
    assert why_not(a, _spec(base + " WHERE S.b = 1 GROUP BY S.a")) == []  # a cover (COUNT)
    assert why_not(_spec("SELECT RSTREAM(S.a, MEDIAN(S.b) AS m) FROM S [RANGE 9 SLIDE 5] GROUP BY S.a"), _spec(base + " WHERE S.b = 1 GROUP BY S.a")) == [
        "their WHERE conditions differ beyond conjuncts on the group keys, and not every aggregate is COUNT, "
        "SUM, AVG, MIN or MAX (whose partials a cover of the predicates can share)"
    ]
    tuples, groups = split_where(_spec(base + " WHERE S.b > 1 AND S.a + 1 < 3 AND S.a > S.b GROUP BY S.a"))
    assert sorted(map(str, tuples)) == ["S.a > S.b", "S.b > 1"] and str(groups) == "(S.a + 1) < 3"
    assert pane_width([_spec(base + " GROUP BY S.a"), _spec("SELECT RSTREAM(COUNT(*)) FROM S [RANGE 19 SLIDE 15]")]) == 5
    med = "SELECT RSTREAM(S.a, MEDIAN(S.b) AS n) FROM S [RANGE 9 SLIDE 5]"
    groups = share({"x": _spec(med + " GROUP BY S.a"), "y": _spec(med + " WHERE S.a = 2 GROUP BY S.a"), "z": _spec(med + " WHERE S.b = 2 GROUP BY S.a")})
    assert [[m.name for m in g.members] for g in groups] == [["x", "y"], ["z"]]
    assert groups[0].members[1].group_filter is not None


QUERIES = """-- bandwidth
small: SELECT RSTREAM(S.k, SUM(S.x) AS s) FROM S [RANGE 9 SLIDE 5] GROUP BY S.k;

-- a comment; with a semicolon
name_q: SELECT RSTREAM(S.k, COUNT(*) AS n) FROM S [RANGE 9 SLIDE 5] WHERE S.name != 'a;b' GROUP BY S.k ;
"""


def test_query_file_statements():
    named = parse_queries(QUERIES, "q.cql")
    assert [(q.index, q.name, q.line, q.column) for q in named] == [(1, "small", 2, 1), (2, "name_q", 5, 1)]


@pytest.mark.parametrize(
    "text,message",
    [
        (QUERIES + "\n" * 3 + "  third: SELECT RSTREAM(S.k FROM S [RANGE 9 SLIDE 5] GROUP BY S.k;", "q.cql line 9, column 29: query 3 (third): unexpected 'FROM'"),
        (QUERIES + "SELECT * FROM S [RANGE 3];", "q.cql line 6, column 1: query 3: a statement must start with its name"),
        (QUERIES + "small: SELECT * FROM S [RANGE 3];", "q.cql line 6, column 1: query 3 (small): the name 'small' is used twice (first by query 1)"),
        (
            QUERIES + "bad: SELECT RSTREAM(S.k, QUANTILE(S.x, 2) AS q) FROM S [RANGE 3 SLIDE 1] GROUP BY S.k;",
            "q.cql line 6, column 40: query 3 (bad): QUANTILE's fraction 2 is outside [0, 1]",
        ),
        ("-- nothing\n ; ;", "q.cql holds no query"),
    ],
)
def test_query_file_errors(text, message):
    with pytest.raises(QueryError) as e:
        parse_queries(text, "q.cql")
    assert str(e.value).startswith(message), str(e.value)


def test_run_many_cli(tmp_path, capsys):
    (tmp_path / "s.csv").write_text("ts,k,x,name\n1,a,1,zeta\n2,a,5,alpha\n3,b,2,beta\n7,a,3,mu\n12,b,4,gamma\n")
    (tmp_path / "q.cql").write_text(QUERIES + "d: SELECT DISTINCT S.k FROM S [RANGE 3];\n")
    out = tmp_path / "out"
    code = main(["run-many", str(tmp_path / "q.cql"), "--source", f"S={tmp_path / 's.csv'}", "--out-dir", str(out), "--stats-json", str(tmp_path / "stats.json")])
    assert code == 0
    assert sorted(p.name for p in out.iterdir()) == ["d.csv", "name_q.csv", "small.csv"]
    assert (out / "small.csv").read_text().splitlines()[:3] == ["S.k,s,ts,sign", "a,6,5,1", "b,2,5,1"]
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert stats["shared"][0]["queries"] == ["small", "name_q"] and stats["alone"] == ["d"]  # a cover (SS4)
    assert stats["shared"][0]["rules"] == ["SS1", "SS4", "CS1", "CS6"] and not stats["rules"]["CS8"]["applied"]
    err = capsys.readouterr().err
    assert "3 queries in" in err and "small: 6 results" in err and "by SS1, SS4, CS1, CS6: small, name_q" in err
    # a type error of query 2 names it and its place in the file; no output is written
    (tmp_path / "bad.cql").write_text(QUERIES.replace("SUM(S.x)", "SUM(S.x)").replace("COUNT(*) AS n", "MEDIAN(S.name) AS n"))
    code = main(["run-many", str(tmp_path / "bad.cql"), "--source", f"S={tmp_path / 's.csv'}", "--out-dir", str(tmp_path / "out2")])
    assert code == 2
    err = capsys.readouterr().err
    assert f"slidewise: error: {tmp_path / 'bad.cql'} line 5, column 29: query 2 (name_q): MEDIAN needs a number" in err


def test_plan_errors_name_the_query():
    with pytest.raises(PlanError, match=r"query 2 \(b\): .*unknown stream|query 2 \(b\)"):
        slidewise.run_many(
            {"a": "SELECT RSTREAM(COUNT(*)) FROM S [RANGE 3 SLIDE 1]", "b": "SELECT RSTREAM(S.k, SUM(S.k) AS s) FROM S [RANGE 3 SLIDE 1] GROUP BY S.k"},
            {"S": pd.DataFrame({"ts": [1, 2], "k": ["x", "y"]})},
        )


def test_api_names_and_positions():
    with pytest.raises(QueryError) as e:
        slidewise.run_many({"a": "SELECT RSTREAM(COUNT(*)) FROM S [RANGE 3 SLIDE 1]", "b": "SELECT FROM S"}, {})
    assert str(e.value).startswith("query line 1, column 8: query 2 (b): unexpected 'FROM'")
    with pytest.raises(slidewise.OptionError, match="query 1: 'a b' is not a valid name"):
        slidewise.run_many({"a b": "SELECT RSTREAM(COUNT(*)) FROM S [RANGE 3 SLIDE 1]"}, {})


def test_run_options_as_for_run():
    from slidewise.options import RunOptions

    frame = pd.DataFrame({"ts": [3, 1, 2, 5, 4, 9], "a": [1, 2, 1, 2, 1, 2]})
    queries = {"n": "SELECT RSTREAM(S.a, COUNT(*) AS n) FROM S [RANGE 3 SLIDE 1] GROUP BY S.a", "d": "SELECT DISTINCT S.a FROM S [RANGE 3]"}
    by_keyword = slidewise.run_many(queries, {"S": frame}, lateness=1, chunk_rows=2)
    given = slidewise.run_many(queries, {"S": frame}, run_options=RunOptions(lateness=5, chunk_rows=2), lateness=1)  # keywords override
    for name in queries:
        assert rows(given.results[name].results) == rows(by_keyword.results[name].results)
        assert given.results[name].stats["rejects"] == by_keyword.results[name].stats["rejects"]
    assert by_keyword.results["n"].stats["rejects"] == 1
    with pytest.raises(slidewise.OptionError, match="run_many writes one result per query, not one out"):
        slidewise.run_many(queries, {"S": frame}, out="x.csv")
    with pytest.raises(TypeError, match="unknown run option 'latenes'"):
        slidewise.run_many(queries, {"S": frame}, latenes=2)
