"""Familiar SQL in the CQL dialect: each construct runs and equals its CQL spelling.

JOIN ... ON, aliases without AS, INTERVAL sizes, BETWEEN and IN are sugar the
parser lowers to the existing spelling (so their parsed queries are equal);
LIKE, CASE, COALESCE and the text and number functions are evaluated by
every path that evaluates expressions (columnar and per-tuple joins, the
plan operators' row functions). Unsupported constructs people paste get one
error that names them and shows the CQL way.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import slidewise
from slidewise.cql import parse, parse_any
from slidewise.errors import PlanError, QueryError
from slidewise.plan.expr import Cmp, Col, Func, Like, Lit, Not, evaluate

S = {"ts": [1, 2, 3, 4, 5, 6, 7, 8], "k": [1, 2, 1, 3, 2, 1, 4, 2], "a": [0, 5, 10, 15, 20, 25, None, 3], "name": ["abc", "abd", "xbc", "ab", None, "a%c", "ABC", "b"]}
R = {"ts": [1, 3, 5, 7], "k": [1, 2, 3, 1], "b": [7.5, None, 1.0, 2.0]}
SOURCES = {"S": pd.DataFrame(S), "R": pd.DataFrame(R)}


def rows(query: str, **options) -> list:
    result = slidewise.run(query, SOURCES, **options).results
    return sorted(map(repr, result.astype(object).where(result.notna(), None).values.tolist()))


# ----------------------------------------------------------------- pure sugar


@pytest.mark.parametrize(
    "sql, cql",
    [
        ("SELECT * FROM S [RANGE 5] s JOIN R [RANGE 5] r ON s.k = r.k WHERE s.a > 1", "SELECT * FROM S [RANGE 5] AS s, R [RANGE 5] AS r WHERE s.k = r.k AND s.a > 1"),
        ("SELECT * FROM S [RANGE 5] s INNER JOIN R [RANGE 5] r ON s.k = r.k AND r.b > 1", "SELECT * FROM S [RANGE 5] AS s, R [RANGE 5] AS r WHERE s.k = r.k AND r.b > 1"),
        ("SELECT * FROM S [RANGE INTERVAL '5' SECOND] s", "SELECT * FROM S [RANGE 5 SECONDS] AS s"),
        (
            "SELECT * FROM S [RANGE INTERVAL 2 MINUTES SLIDE INTERVAL '1' MINUTE] s JOIN R [RANGE 2 MINUTES SLIDE 1 MINUTE] r ON s.k = r.k",
            "SELECT * FROM S [RANGE 2 MINUTES SLIDE 1 MINUTE] AS s, R [RANGE 2 MINUTES SLIDE 1 MINUTE] AS r WHERE s.k = r.k",
        ),
        ("SELECT * FROM S WHERE S.a BETWEEN 5 AND 15", "SELECT * FROM S WHERE S.a >= 5 AND S.a <= 15"),
        ("SELECT * FROM S WHERE S.a NOT BETWEEN 5 AND 15", "SELECT * FROM S WHERE NOT (S.a >= 5 AND S.a <= 15)"),
        ("SELECT * FROM S WHERE S.k IN (1, 3)", "SELECT * FROM S WHERE S.k = 1 OR S.k = 3"),
        ("SELECT * FROM S WHERE S.k NOT IN (1, 3) -- a comment\n", "SELECT * FROM S WHERE NOT (S.k = 1 OR S.k = 3)"),
    ],
)
def test_sugar_parses_to_its_cql_spelling(sql, cql):
    assert parse(sql) == parse(cql).__class__(**{**vars(parse(cql)), "text": sql})
    assert rows(sql) == rows(cql)


def test_general_queries_take_join_on_and_sugar():
    sql = "SELECT s.k, COUNT(*) AS n FROM S [RANGE 5] s JOIN R [RANGE 5] r ON s.k = r.k WHERE s.a BETWEEN 0 AND 20 AND s.k IN (1, 2) GROUP BY s.k"
    cql = "SELECT s.k, COUNT(*) AS n FROM S [RANGE 5] AS s, R [RANGE 5] AS r WHERE s.k = r.k AND s.a >= 0 AND s.a <= 20 AND (s.k = 1 OR s.k = 2) GROUP BY s.k"
    assert rows(sql) == rows(cql) and rows(sql)


def test_comments_are_ignored():
    assert rows("-- all of S\nSELECT * -- every column\nFROM S [RANGE 2] -- a window\n") == rows("SELECT * FROM S [RANGE 2]")


# --------------------------------------------------------- new expressions


@pytest.mark.parametrize("algorithm", [None, "nlj", "hash"])
def test_like_matches_as_sql(algorithm):
    got = rows("SELECT S.ts FROM S [RANGE 1] WHERE S.name LIKE 'ab%'", algorithm=algorithm)
    assert got == rows("SELECT S.ts FROM S [RANGE 1] WHERE S.ts IN (1, 2, 4)")
    # '_' is one character; a '%' in the text is any character
    assert rows("SELECT S.ts FROM S WHERE S.name NOT LIKE 'ab%'", algorithm=algorithm) == rows("SELECT S.ts FROM S WHERE S.ts NOT IN (1, 2, 4)")
    assert rows("SELECT S.ts FROM S WHERE S.name LIKE 'a_c'", algorithm=algorithm) == rows("SELECT S.ts FROM S WHERE S.ts IN (1, 6)")


def test_functions_per_tuple_columnar_and_per_row_agree():
    query = (
        "SELECT S.ts, COALESCE(S.a, -1) AS a, CASE WHEN S.a > 10 THEN 'big' WHEN S.a >= 0 THEN 'small' "
        "ELSE 'none' END AS size, UPPER(S.name) AS u, LOWER(S.name) AS l, LENGTH(S.name) AS n, "
        "SUBSTR(S.name, 2, 2) AS s2, ROUND(S.a / 3, 1) AS r, FLOOR(S.a / 4) AS f, CEIL(S.a / 4) AS c "
        "FROM S [RANGE 1]"
    )
    want = rows(query)
    assert rows(query, algorithm="nlj") == want
    first = slidewise.run(query, SOURCES).results
    items = ["a", "size", "u", "l", "n", "s2", "r", "f", "c"]
    # the plan path (row functions of the plan operators): a DISTINCT query over the same items
    plan = slidewise.run(query.replace("SELECT S.ts,", "SELECT DISTINCT S.ts AS t,"), SOURCES).results
    assert len(want) == 8
    assert plan.sort_values("t")[items].fillna(-9).values.tolist() == first[items].fillna(-9).values.tolist()
    assert first["a"].tolist() == [0, 5, 10, 15, 20, 25, -1, 3]
    assert first["size"].tolist() == ["small", "small", "small", "big", "big", "big", "none", "small"]
    assert first["u"].tolist()[:5] == ["ABC", "ABD", "XBC", "AB", ""]
    assert first["s2"].tolist()[:4] == ["bc", "bd", "bc", "b"]
    assert first["f"].tolist()[:3] == [0.0, 1.0, 2.0] and first["c"].tolist()[:3] == [0.0, 2.0, 3.0]


def test_case_without_else_is_null_and_filters():
    got = slidewise.run("SELECT S.ts FROM S WHERE CASE WHEN S.k = 1 THEN S.a END > 5", SOURCES).results
    assert got["S.ts"].tolist() == [3, 6]


def test_plan_filters_take_like_and_case():
    sql = "SELECT s.k, COUNT(*) AS n FROM S [RANGE 10] s WHERE s.name LIKE 'a%' AND COALESCE(s.a, 0) < 30 GROUP BY s.k"
    cql = "SELECT s.k, COUNT(*) AS n FROM S [RANGE 10] AS s WHERE s.ts IN (1, 2, 4, 6) GROUP BY s.k"
    assert rows(sql) == rows(cql)


# ------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "query, message",
    [
        (
            "SELECT * FROM S s LEFT JOIN R r ON s.k = r.k",
            "query line 1, column 19: LEFT JOIN is not supported: slidewise joins are inner joins (hint: write "
            "FROM A [RANGE t] a JOIN B [RANGE t] b ON a.k = b.k (or FROM A a, B b WHERE a.k = b.k); rows without "
            "a partner are not produced)",
        ),
        ("SELECT * FROM S s FULL OUTER JOIN R r ON s.k = r.k", "FULL JOIN is not supported"),
        ("SELECT s.k, COUNT(*) FROM S s GROUP BY TUMBLE(s.ts, INTERVAL '5' SECOND)", "unexpected"),
        (
            "SELECT s.k, COUNT(*) FROM S s GROUP BY TUMBLE(s.ts, 5)",
            "query line 1, column 40: TUMBLE(...) is not supported: in CQL a window belongs to its stream (hint: write "
            "[RANGE 5 SECONDS SLIDE 5 SECONDS] after the stream name, e.g. FROM S [RANGE 5 SECONDS SLIDE 5 SECONDS] s "
            "... GROUP BY s.k)",
        ),
        ("SELECT s.k, COUNT(*) FROM S s GROUP BY window(s.ts, 5), s.k", "WINDOW(...) is not supported"),
        ("SELECT HOP(S.ts, 5, 10) FROM S", "HOP(...) is not supported"),
        ("SELECT * FROM S [ROWS INTERVAL '5' SECOND]", "ROWS counts tuples and takes no INTERVAL"),
        ("SELECT * FROM S [RANGE INTERVAL 'five' SECOND]", "INTERVAL needs a number, got 'five'"),
        ("SELECT * FROM S1 [RANGE 5] s WHER s.a = 2", "unexpected 'WHER'"),
        ("SELECT SUBSTR(S.name) FROM S", "SUBSTR takes 2 to 3 arguments, got 1"),
    ],
)
def test_unsupported_constructs_are_named(query, message):
    with pytest.raises(QueryError) as info:
        parse_any(query)
    assert message in str(info.value)


@pytest.mark.parametrize(
    "query, message",
    [
        (
            "SELECT SUM(S.a) OVER (PARTITION BY S.k) FROM S",
            "query line 1, column 17: window functions (OVER ...) are not supported (hint: put the window on the stream "
            "and aggregate per group: SELECT S.k, SUM(S.a) FROM S [RANGE 5 SECONDS] GROUP BY S.k)",
        ),
        (
            "SELECT * FROM S [RANGE 5] ORDER BY S.ts",
            "query line 1, column 27: ORDER BY is not supported: results come in timestamp order (hint: drop ORDER BY (TOPK(S.x, k) keeps the k most frequent values))",
        ),
        (
            "SELECT * FROM S [RANGE 5] s LIMIT 10",
            "query line 1, column 29: LIMIT is not supported: a continuous query has no last row (hint: drop LIMIT; [ROWS n] keeps the n most recent tuples of a stream)",
        ),
    ],
)
def test_foreign_clauses_are_named(query, message):
    for parse_text in (parse, parse_any):
        with pytest.raises(QueryError) as info:
            parse_text(query)
        assert str(info.value).splitlines()[0] == message


@pytest.mark.parametrize(
    "query, message",
    [
        ("SELECT * FROM S WHERE S.k LIKE '1%'", "LIKE needs text, got S.k (integer)"),
        ("SELECT UPPER(S.k) FROM S", "UPPER needs text, got S.k (integer)"),
        ("SELECT ROUND(S.name) FROM S", "ROUND needs a number, got S.name (text)"),
        ("SELECT COALESCE(S.name, 0) FROM S", "COALESCE's arguments S.name (text) and 0 (integer) have different types"),
        ("SELECT CASE WHEN S.k = 1 THEN S.name ELSE S.k END FROM S", "CASE's values S.name (text) and S.k (integer) have different types"),
    ],
)
def test_type_errors_of_the_new_functions(query, message):
    with pytest.raises(PlanError) as info:
        slidewise.run(query, SOURCES)
    assert message in str(info.value)


def test_like_of_null_is_unknown_and_coalesce_case_take_the_first():
    text = np.array(["ab", None, "b"], dtype=object)
    get = {"name": text, "a": np.array([1.0, np.nan, np.nan]), "b": np.array([np.nan, 2.0, np.nan])}
    get = get.__getitem__
    name, a, b = Col(0, "name", "S"), Col(0, "a", "S"), Col(0, "b", "S")
    assert evaluate(Like(name, "a%"), lambda s, c: get(c)).tolist() == [True, False, False]
    assert evaluate(Not(Like(name, "a%")), lambda s, c: get(c)).tolist() == [False, False, True]
    assert evaluate(Func("coalesce", (a, b, Lit(0))), lambda s, c: get(c)).tolist() == [1.0, 2.0, 0.0]
    case = Func("case", (Cmp(">", a, Lit(0)), Lit("pos"), Like(name, "b")))
    assert str(case) == "CASE WHEN S.a > 0 THEN 'pos' ELSE S.name LIKE 'b' END"
    per_tuple = [evaluate(Not(Like(name, "a%")), lambda s, c, i=i: get(c)[i]) for i in range(3)]
    assert [bool(v) for v in per_tuple] == [False, False, True]
