"""Several queries sharing one Spark streaming query's pane state (:mod:`slidewise.spark.many`).

In-process first: the sharing groups of the local planner
(:func:`slidewise.optimizer.sharing.share`: same keys, WHERE equal up to key
conjuncts or a cover of COUNT/SUM/AVG/MIN/MAX) run as one
:class:`~slidewise.spark.panes.PaneBucket` per group through the sequencer
and key buckets, each query's rows routed by its member index; every query's
rows equal its local run alone. Then on Spark (``local[2]``):
``run_many(..., engine="spark")`` equals the local ``run_many``, the shared
queries run in one streaming query, and a run stopped after its first
committed micro-batch, rerun on its checkpoint with more files, loses and
repeats no row.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from slidewise.cql.parser import parse_plan
from slidewise.optimizer.pane_plan import match
from slidewise.optimizer.sharing import share
from slidewise.plan.bind import bind
from slidewise.plan.prune import prune_columns
from slidewise.spark.keying import Keying
from slidewise.spark.layout import unpack
from slidewise.spark.panes import PaneBucket, stream_dtypes
from slidewise.spark.plan_state import REJECTS, RESULT, partition_attribute
from tests.spark.harness import bucket_rows, csv_files, norm
from tests.spark.test_panes_spark import KINDS, local
from tests.test_sliding_aggregate import streams

AGGS = ["COUNT(*)", "COUNT(S.b)", "SUM(S.b)", "AVG(S.b)", "MIN(S.b)", "MAX(S.f)", "SUM(S.f)"]
WHERE = [None, "S.b > 1", "S.b != 2 OR S.a = 0", "NOT (S.f < 0)", "S.a = 1"]


@st.composite
def query_sets(draw) -> dict[str, str]:
    """2 to 4 queries over S with the same GROUP BY (so the planner may share them)."""
    keys = draw(st.sampled_from([[], ["S.a"], ["S.a", "S.k"]]))
    out = {}
    for i in range(draw(st.integers(2, 4))):
        aggs = draw(st.lists(st.sampled_from(AGGS), min_size=1, max_size=3, unique=True))
        items = keys + [f"{a} AS c{j}" for j, a in enumerate(aggs)]
        length, slide = draw(st.integers(0, 12)), draw(st.integers(1, 5))
        where = draw(st.sampled_from(WHERE))
        where = None if where == "S.a = 1" and "S.a" not in keys else where
        kind = draw(st.sampled_from(["RSTREAM", "RSTREAM", "ISTREAM", "DSTREAM"]))
        out[f"q{i}"] = (
            f"SELECT {kind}({', '.join(items)}) FROM S [RANGE {length} SLIDE {slide}]"
            + (f" WHERE {where}" if where else "")
            + (f" GROUP BY {', '.join(keys)}" if keys else "")
        )
    return out


def simulate(queries: dict[str, str], steps: list, buckets: int) -> tuple[dict[str, Counter], list]:
    """Each sharing group as one PaneBucket over ``steps`` (frames of S, or ``"eof"``), in-process as
    Spark runs it; every query's rows and the groups."""
    plans = {n: prune_columns(bind(parse_plan(q), {"S": KINDS})) for n, q in queries.items()}
    groups = share({n: match(p) for n, p in plans.items()})
    got: dict[str, Counter] = {n: Counter() for n in queries}
    for g in groups:
        logic = PaneBucket(g, list(KINDS), stream_dtypes(KINDS), 0)
        attr, _ = partition_attribute(plans[g.members[0].name])
        keying = Keying("hash", buckets, keys=(attr,), key_kind=KINDS[attr]) if attr else Keying("single", 1)
        for r in bucket_rows(logic, KINDS, steps, keying):
            assert r.k != REJECTS
            if r.k == RESULT:
                got[g.members[r.s].name] += norm(pd.DataFrame(unpack(r.p))[logic.member_columns[r.s]])
    return got, groups


@given(frame=streams(), queries=query_sets(), cut=st.integers(0, 25), buckets=st.integers(1, 3))
def test_each_shared_query_equals_its_local_run_alone(frame, queries, cut, buckets):
    note(queries)
    got, groups = simulate(queries, [frame.iloc[:cut], frame.iloc[cut:], "eof"], buckets)
    assert len(groups) < len(queries) or len({tuple(g.keys) for g in groups}) > 1 or not groups
    for name, q in queries.items():
        assert got[name] == local(q, frame), name


@given(frame=streams(), queries=query_sets(), cut=st.integers(1, 25))
def test_a_continued_shared_run_equals_one_run(frame, queries, cut):
    """End of input, then later tuples on the same group state (a rerun on the checkpoint): each query's
    rows over both runs equal its local run over all tuples."""
    note(queries)
    first, rest = frame.iloc[:cut], frame.iloc[cut:].copy()
    rest["ts"] += 40  # after the first run's last instant (slides are at most 5)
    got, _ = simulate(queries, [first, "eof", rest, "eof"], 2)
    whole = pd.concat([first, rest], ignore_index=True)
    for name, q in queries.items():
        assert got[name] == local(q, whole), name


def test_one_state_holds_each_shared_partial_once():
    """COUNT(*) and SUM(S.b) of three queries with different windows and predicates: one group over a
    cover, three partials (COUNT(*), SUM/AVG's (sum, count) of b, MAX of f)."""
    queries = {
        "a": "SELECT RSTREAM(S.a, COUNT(*) AS n, SUM(S.b) AS s) FROM S [RANGE 9 SLIDE 2] GROUP BY S.a",
        "b": "SELECT RSTREAM(S.a, AVG(S.b) AS v) FROM S [RANGE 5 SLIDE 3] WHERE S.b > 1 GROUP BY S.a",
        "c": "SELECT ISTREAM(S.a, MAX(S.f) AS m) FROM S [RANGE 14 SLIDE 4] WHERE S.a = 1 GROUP BY S.a",
    }
    plans = {n: prune_columns(bind(parse_plan(q), {"S": KINDS})) for n, q in queries.items()}
    (g,) = share({n: match(p) for n, p in plans.items()})
    logic = PaneBucket(g, list(KINDS), stream_dtypes(KINDS), 0)
    assert g.pane == 1 and [(acc.share_key, attr) for acc, attr in logic.shared] == [("count", None), ("sum", "b"), ("max", "f")]
    rng = np.random.default_rng(3)
    n = 60
    frame = pd.DataFrame({"ts": np.sort(rng.integers(0, 40, n)), "a": rng.integers(0, 3, n), "k": ["x"] * n, "b": rng.integers(0, 4, n), "f": rng.normal(size=n)})
    got, _ = simulate(queries, [frame, "eof"], 2)
    for name, q in queries.items():
        assert got[name] == local(q, frame), name


# ---------------------------------------------------------------- on Spark

SPARK_QUERIES = {
    "counts": "SELECT RSTREAM(S.a, COUNT(*) AS n) FROM S [RANGE 9 SLIDE 3] GROUP BY S.a",
    "sums": "SELECT ISTREAM(S.a, SUM(S.b) AS s, MAX(S.f) AS m) FROM S [RANGE 14 SLIDE 5] WHERE S.b > 0 GROUP BY S.a",
    "other": "SELECT RSTREAM(S.k, COUNT(*) AS n) FROM S [RANGE 4 SLIDE 2] GROUP BY S.k",
}


def _frame(seed: int, n: int = 90) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    ts = np.cumsum(rng.choice([0, 1, 2, 3, 9], n))
    return pd.DataFrame({"ts": ts, "a": rng.integers(0, 4, n), "k": rng.choice(list("xyz"), n), "b": rng.integers(-2, 5, n), "f": rng.choice([-1.5, 0.25, 2.0], n)})


def _rows(frame: pd.DataFrame | None) -> Counter:
    return norm(frame) if frame is not None else Counter()


@pytest.mark.spark
def test_spark_run_many_shares_one_streaming_query_and_restarts_exactly_once(spark, tmp_path):
    """Two queries over S grouped by a share one streaming query and one pane state; the third (grouped
    by k) runs as a group of its own. A first run over half the files, then a rerun on the checkpoint with the rest: every query's
    rows over both runs equal the local run_many over all tuples, none lost or repeated."""
    import slidewise

    frame = _frame(4)
    half = len(frame) // 2
    csv_files(frame.iloc[:half], tmp_path / "S", 2)
    ckpt = tmp_path / "ckpt"
    opts = dict(engine="spark", spark=spark, checkpoint=str(ckpt), max_files_per_trigger=1, once=True, collect=True)
    first = slidewise.run_many(SPARK_QUERIES, {"S": str(tmp_path / "S")}, **opts)
    group, other = first.stats["shared"]  # "other" groups by k: a group of its own
    assert group["queries"] == ["counts", "sums"] and group["streaming_queries"] == 1 and group["engine"] == "spark"
    assert group["states"] == ["count(*)", "max(f)", "sum(b)"] and group["rules"][:1] == ["SS1"]
    assert other["queries"] == ["other"] and first.stats["alone"] == []
    assert first.results["counts"].stats["synopsis"] == group["synopsis"]
    # the rest of the tuples, after the first run's end (later than its last instant)
    rest = frame.iloc[half:].copy()
    rest["ts"] += 40
    csv_files(rest, tmp_path / "S", 2, first=2)
    second = slidewise.run_many(SPARK_QUERIES, {"S": str(tmp_path / "S")}, **opts)
    want = slidewise.run_many(SPARK_QUERIES, {"S": pd.concat([frame.iloc[:half], rest], ignore_index=True)})
    for name in SPARK_QUERIES:
        got = _rows(first.results[name].results) + _rows(second.results[name].results)
        assert got == _rows(want.results[name].results), name
        assert want.results[name].stats["results"] > 0
    assert sorted(p.name for p in ckpt.iterdir()) == ["group-counts", "group-other"]


def test_run_many_spark_options_need_the_spark_engine(tmp_path, capsys):
    from slidewise.cli import main

    (tmp_path / "q.cql").write_text(f"counts: {SPARK_QUERIES['counts']};\n")
    _frame(1).to_csv(tmp_path / "s.csv", index=False)
    args = ["run-many", str(tmp_path / "q.cql"), "--source", f"S={tmp_path / 's.csv'}", "--out-dir", str(tmp_path / "out")]
    assert main([*args, "--checkpoint", str(tmp_path / "ck")]) == 2
    assert "--checkpoint applies to the Spark engine, but this run uses the local engine" in capsys.readouterr().err
    assert main(args) == 0 and (tmp_path / "out" / "counts.csv").is_file()


@pytest.mark.spark
def test_spark_run_many_runs_a_query_the_pane_path_refuses_as_its_own_streaming_query(spark, tmp_path):
    """The pane path on Spark refuses COUNT(DISTINCT) (the local one runs it): on Spark that query runs
    alone, through the operator network, with its own checkpoint beside the shared group's; it is listed
    as alone, and every query's rows equal the local run_many's."""
    import slidewise

    queries = {
        "counts": SPARK_QUERIES["counts"],
        "kinds": "SELECT RSTREAM(S.a, COUNT(DISTINCT S.k) AS d) FROM S [RANGE 9 SLIDE 3] GROUP BY S.a",
    }
    frame = _frame(5)
    csv_files(frame, tmp_path / "S", 2)
    ckpt = tmp_path / "ckpt"
    got = slidewise.run_many(queries, {"S": str(tmp_path / "S")}, engine="spark", spark=spark, checkpoint=str(ckpt), once=True, collect=True)
    want = slidewise.run_many(queries, {"S": frame})
    assert got.stats["alone"] == ["kinds"] and want.stats["alone"] == []
    assert [g["queries"] for g in got.stats["shared"]] == [["counts"]]
    for name in queries:
        assert _rows(got.results[name].results) == _rows(want.results[name].results), name
        assert want.results[name].stats["results"] > 0
    assert sorted(p.name for p in ckpt.iterdir()) == ["group-counts", "kinds"]
