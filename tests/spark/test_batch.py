"""Batch replay on Spark (``--mode batch``) against the oracle and the local engine.

Each test packs many fixed random cases into one input — case ``k`` shifted
by ``k * GAP`` in time and tagged ``c = k``, with ``c`` equi-joined — so one
Spark job checks them all: windows never reach across cases (``GAP`` is far
beyond every window and a multiple of every SLIDE) and the ``c`` equality
keeps results within a case.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from slidewise.api import run
from slidewise.model.batch import NO_EXP
from slidewise.plan.expr import BinOp, Cmp, Func, Lit
from slidewise.plan.query import Equality, WindowSpec
from slidewise.spark.batch import run_batch
from tests.oracle import oracle
from tests.streams import build_tuples, col, common_key, query_of

pytestmark = pytest.mark.spark

GAP = 50_400_000  # 5040 * 10**4: a multiple of every SLIDE up to 10
CASES = 12


def _rows(n: int, length: int, seed: int) -> list[tuple[int, int, int, int, int]]:
    """``(stream, ts, a, b, x)`` in input order: ties, bursts, small values (as ``streams.raw_streams``)."""
    rng = np.random.default_rng(seed)
    out, ts = [], 0
    for _ in range(length):
        ts += int(rng.choice([0, 0, 1, 1, 2, 3, 7]))
        out.append((int(rng.integers(0, n)), ts, int(rng.integers(0, 3)), int(rng.integers(0, 3)), int(rng.integers(0, 7))))
    return out


def packed(query, seed: int, *, length: int = 16):
    """``(query joined on c, sources, expected)``: CASES oracle-checked cases in one input.

    ``expected`` is a Counter of ``(member ids, ts, exp, sign)``; ids are input row numbers.
    """
    n = query.n
    restore = query.restore or not query.slide
    rows, expected = [], Counter()
    for k in range(CASES):
        raw = _rows(n, length, seed * 100 + k)
        order = sorted(range(len(raw)), key=lambda j: (raw[j][1], raw[j][0], j))  # pos -> input index
        base, shift = len(rows), k * GAP
        for (members, ts, exp, sign), m in oracle(query, build_tuples(raw), restore=restore).items():
            ids = tuple(base + order[p] for p in members)
            expected[(ids, ts + shift, exp if exp == NO_EXP else exp + shift, sign)] += m
        rows += [(s, ts + shift, a, b, x, k) for s, ts, a, b, x in raw]
    sources = {}
    for i, ref in enumerate(query.streams):
        mine = [(j, r) for j, r in enumerate(rows) if r[0] == i]
        sources[ref.source] = pd.DataFrame(
            {
                "ts": [r[1] for _, r in mine],
                "a": [r[2] for _, r in mine],
                "b": [r[3] for _, r in mine],
                "x": [r[4] for _, r in mine],
                "c": [r[5] for _, r in mine],
                "id": [j for j, _ in mine],
            },
            columns=["ts", "a", "b", "x", "c", "id"],
        ).astype("int64")
    tagged = replace(query, equalities=query.equalities + tuple(Equality(col(i, "c"), col(i + 1, "c")) for i in range(n - 1)))
    return tagged, sources, expected


def keys(frame: pd.DataFrame, query) -> Counter:
    ids = frame[[f"{a}.id" for a in query.aliases]].to_numpy().tolist()
    return Counter(zip(map(tuple, ids), frame["ts"].tolist(), frame["exp"].tolist(), frame["sign"].tolist()))


def same_rows(a: pd.DataFrame, b: pd.DataFrame) -> None:
    assert list(a.columns) == list(b.columns)
    assert sorted(map(tuple, a.to_numpy().tolist())) == sorted(map(tuple, b.to_numpy().tolist()))


CONFIGS = {
    # 2-way, a time and a count window, a selection; with negative tuples
    "2way-time-count-negatives": (query_of([WindowSpec("range", 4), WindowSpec("rows", 2)], common_key(2), [Cmp(">", col(1, "x"), Lit(1))]), True, 16),
    # 3-way: partitioned count window, a chain on different attributes and a theta predicate
    "3way-partition-different-theta": (
        query_of(
            [WindowSpec("rows", 2, partition_by="b"), WindowSpec("range", 5), WindowSpec("rows", 3)],
            [Equality(col(0, "a"), col(1, "a")), Equality(col(1, "b"), col(2, "b"))],
            [Cmp("<=", Func("abs", (BinOp("-", col(0, "x"), col(2, "x")),)), Lit(3))],
        ),
        False,
        16,
    ),
    # 4-way time windows, lazy without restore (short-lived results dropped)
    "4way-lazy-norestore": (query_of([WindowSpec("range", t, slide=7) for t in (14, 9, 16, 11)], common_key(4)), False, 30),
    # 4-way lazy restore with NOW and UNBOUNDED windows and a count window
    "4way-lazy-restore-now-unbounded": (
        replace(query_of([WindowSpec("range", 12, slide=3), WindowSpec("rows", 3), WindowSpec("unbounded"), WindowSpec("now")], common_key(4)), restore=True),
        False,
        24,
    ),
}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_batch_equals_oracle_and_local(spark, name):
    query, negatives, length = CONFIGS[name]
    tagged, sources, expected = packed(query, seed=len(name), length=length)
    assert sum(expected.values()) > 20, "the fixed cases should produce results"
    got = run_batch(tagged, sources, spark=spark, negatives=negatives)
    positives = got.results[got.results["sign"] > 0]
    assert keys(positives, tagged) == expected
    assert got.stats["results"] == sum(expected.values())
    options = {"algorithm": "hash", "negatives": True} if negatives else {}
    local = run(tagged, sources, **options).results
    same_rows(got.results, local)
    if negatives:
        assert got.stats["retractions"] == int((local["sign"] < 0).sum()) > 0


def test_cli_batch_files_rejects_and_lateness(spark, tmp_path):
    """``run --engine spark --mode batch`` on CSV (a directory of two files), JSON lines and Parquet
    with bad and late rows: the same result file and rejects as ``--engine local``."""
    from slidewise.cli import main

    s1 = tmp_path / "s1"
    s1.mkdir()
    (s1 / "part-0.csv").write_text("ts,a,x\n1,1,5\n2,2,6\n3,1\n4,1,7\nabc,1,1\n6,2,3\n")
    (s1 / "part-1.csv").write_text("ts,a,x\n8,1,2\n7,1,4\n2,1,9\n10,2,1\n12,1,0\n")
    (tmp_path / "s2.jsonl").write_text(
        "\n".join(
            [
                '{"ts": 2, "a": 1, "x": 1}',
                '{"ts": 5, "a": "zz", "x": 2}',
                '{"ts": 6, "a": 2, "x": 3}',
                '{"ts": 9, "a": 1, "x": 4}',
                '{"ts": 7, "a": 1, "x": 5}',
                '{"ts": 11, "a": 1, "x": 6}',
            ]
        )
        + "\n"
    )
    pd.DataFrame({"ts": [0, 3, 7, 9, 12, 13], "a": [1, 1, 2, 1, 1, 2], "x": [1, 2, 3, 4, 5, 6]}).to_parquet(tmp_path / "s3.parquet")
    query = "SELECT * FROM S1 [RANGE 5], S2 [ROWS 2], S3 [RANGE 4] WHERE S1.a = S2.a AND S2.a = S3.a AND S3.x > 1"
    common = ["run", query, "--source", f"S1={s1}", "--source", f"S2={tmp_path / 's2.jsonl'}", "--source", f"S3={tmp_path / 's3.parquet'}", "--lateness", "1", "--quiet"]
    out = {}
    for engine in ("local", "spark"):
        args = common + [
            "--engine",
            engine,
            "--out",
            str(tmp_path / f"{engine}.csv"),
            "--rejects",
            str(tmp_path / f"{engine}-rejects.csv"),
            "--stats-json",
            str(tmp_path / f"{engine}.json"),
        ]
        assert main(args + (["--mode", "batch"] if engine == "spark" else [])) == 0
        out[engine] = (pd.read_csv(tmp_path / f"{engine}.csv"), pd.read_csv(tmp_path / f"{engine}-rejects.csv"))
    (local, local_rej), (batch, batch_rej) = out["local"], out["spark"]
    assert len(local) > 3
    same_rows(batch, local)
    assert len(local_rej) == 5  # a short row, a bad ts, a late row, a bad value, a late JSON row
    where = ["stream", "file", "line", "reason"]
    same_rows(batch_rej[where], local_rej[where])
    # the row text too, but for JSON lines: Spark keeps no line text of a parsed row (CSV values instead)
    csv_rows = local_rej["file"].str.endswith(".csv")
    same_rows(batch_rej[batch_rej["file"].str.endswith(".csv")], local_rej[csv_rows])


def test_batch_evaluates_like_and_text_functions_and_refuses_the_others(spark):
    from slidewise.cql import parse
    from slidewise.errors import PlanError

    sources = {"S": pd.DataFrame({"ts": [1, 2, 3, 4], "k": [1, 1, 2, 1], "name": ["abc", "Abd", "a.c", "xa%"]}), "R": pd.DataFrame({"ts": [2, 3, 4], "k": [1, 2, 1]})}
    query = parse(
        "SELECT S.ts, UPPER(S.name) AS u, LOWER(S.name) AS l FROM S [RANGE 3] s JOIN R [RANGE 3] r ON s.k = r.k WHERE S.name LIKE 'a_c' OR S.name NOT LIKE '%a%'".replace(
            "S.", "s."
        )
    )
    got = run_batch(query, sources, spark=spark)
    same_rows(got.results, run(query, sources).results)
    assert sorted(got.results["u"]) == ["A.C", "ABC", "ABC", "ABD", "ABD"]  # LIKE is case-sensitive
    with pytest.raises(PlanError, match="batch replay cannot evaluate COALESCE"):
        run_batch(parse("SELECT COALESCE(s.k, 0) FROM S [RANGE 3] s, R [RANGE 3] r WHERE s.k = r.k"), sources, spark=spark)
