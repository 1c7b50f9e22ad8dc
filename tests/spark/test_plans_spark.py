"""General plans (Golab's thesis ch. 3) on the Spark engine equal the local executor.

Thesis Queries 1–3 (§3.6) and a GROUP BY on small generated link streams
written as CSV files, compared as multisets of ``(ts, vals, sign)`` with
:func:`slidewise.runtime.plan_engine.execute_plan`; joins with a non-retroactive
relation and a retroactive TABLE updated while the stream runs (broadcast to
every bucket). The bucket logic is also run in-process (no JVM) over several
micro-batches.
"""

from __future__ import annotations

import os
from collections import Counter

import numpy as np
import pandas as pd
import pytest

from slidewise.cql.parser import parse_plan
from slidewise.plan.bind import bind
from slidewise.runtime.plan_engine import execute_plan
from slidewise.spark.keying import Keying
from slidewise.spark.layout import EOF, TUPLE, Layout, StreamInfo, pack, wire_frame
from slidewise.spark.plan_state import RESULT, PlanBucket, partition_attribute
from slidewise.spark.sequencer import SequencerLogic
from tests.spark.harness import sequence_into_buckets

W = 6
Q1 = f"SELECT RSTREAM(*) FROM Link1 [RANGE {W}], Link2 [RANGE {W}] WHERE Link1.src = Link2.src AND Link1.proto = 1"
Q2 = f"SELECT RSTREAM(DISTINCT Link1.src) FROM Link1 [RANGE {W}]"
Q3 = f"SELECT RSTREAM(*) FROM Link1 [RANGE {W}] WHERE NOT EXISTS (SELECT * FROM Link2 [RANGE {W}] WHERE Link2.src = Link1.src)"
AGG = f"SELECT RSTREAM(Link1.src, COUNT(*) AS n) FROM Link1 [RANGE {W}] GROUP BY Link1.src"
NRR = f"SELECT RSTREAM(*) FROM Link1 [RANGE {W}], R WHERE Link1.src = R.src"
TABLE = f"SELECT RSTREAM(Link1.src, R.label, COUNT(*) AS n) FROM Link1 [RANGE {W}], TABLE R WHERE Link1.src = R.src GROUP BY Link1.src, R.label"
COLUMNS = ["src", "dst", "proto"]


def relation(retroactive: bool) -> pd.DataFrame:
    """Updates of R (key src) before and while the stream runs: deletes, new keys, one after its end;
    a retroactive TABLE also re-inserts a deleted key with a new label."""
    rows = [(0, "+", 0, 10), (0, "+", 1, 11), (0, "+", 2, 12), (0, "+", 3, 13), (8, "-", 1, 11), (12, "+", 4, 14), (12, "-", 2, 12), (20, "+", 5, 15), (100, "+", 6, 16)]
    if retroactive:
        rows += [(30, "-", 3, 13), (30, "+", 3, 23), (31, "+", 1, 21)]
    frame = pd.DataFrame(rows, columns=["ts", "op", "src", "label"])
    return frame.sort_values("ts", kind="stable", ignore_index=True)


def links(seed: int, n: int = 60) -> dict[str, pd.DataFrame]:
    """Two link streams: increasing ts with ties, few source addresses."""
    rng = np.random.default_rng(seed)
    out = {}
    for name in ("Link1", "Link2"):
        ts = np.cumsum(rng.choice([0, 1, 1, 2, 3], n))
        out[name] = pd.DataFrame({"ts": ts, "src": rng.integers(0, 5, n), "dst": rng.integers(0, 3, n), "proto": rng.integers(0, 3, n)}).astype("int64")
    return out


def rows_of(frame: pd.DataFrame) -> Counter:
    """A result frame as a multiset of ``(ts, vals, sign)``."""
    if frame is None or not len(frame):
        return Counter()
    vals = [c for c in frame.columns if c not in ("ts", "sign")]
    return Counter((int(r[-2]), tuple(r[:-2]), int(r[-1])) for r in frame[vals + ["ts", "sign"]].itertuples(index=False))


def local(query: str, data: dict, strategy: str, tables: dict | None = None) -> Counter:
    plan = parse_plan(query, list(tables or ()))
    used = {s.source for s in plan.scans()}
    return rows_of(execute_plan(plan, {k: v for k, v in data.items() if k in used}, tables, strategy=strategy, collect=True).results)


def simulate(query: str, data: dict, strategy: str, *, batches: int = 3, buckets: int = 4, tables: dict | None = None) -> Counter:
    """Sequencer and plan buckets in-process, as Spark runs them (state as bytes between calls)."""
    from slidewise.runtime.rejects import Rejects
    from slidewise.spark.plan_stream import read_tables

    plan = parse_plan(query, list(tables or ()))
    names = list(dict.fromkeys(s.source for s in plan.scans() if not s.is_relation))
    table_rows, schemas = read_tables(tables or {}, 0, "ts", "auto", Rejects())
    plan = bind(plan, {**schemas, **{n: COLUMNS for n in names}})
    attr, _ = partition_attribute(plan)
    keying = Keying("hash", buckets, keys=(attr,) * len(names)) if attr else Keying("single", 1)
    layout = Layout(tuple(StreamInfo(n, n, {c: "int" for c in COLUMNS}, "raw", 0, "csv", 1) for n in names))
    seq = SequencerLogic(layout, keying)
    seq_state: dict = {}
    blobs: dict = {}
    out = Counter()
    cuts = [np.array_split(np.arange(len(data[n])), batches) for n in names]
    for step in range(batches + 1):
        rows = []
        for i, n in enumerate(names):
            if step == batches:
                break
            idx = cuts[i][step]
            sub = data[n].iloc[idx]
            rows.append(
                {
                    "k": TUPLE,
                    "s": i,
                    "q": len(idx),
                    "p": pack(
                        {
                            "t": sub["ts"].to_numpy(np.int64),
                            "q": idx.astype(np.int64),
                            "o": np.zeros(len(idx), np.int64),
                            "fi": np.zeros(len(idx), np.int32),
                            "files": [f"file:///in/{n}.csv"],
                            **{a: sub[a].to_numpy() for a in COLUMNS},
                        }
                    ),
                }
            )
        if step == batches:
            rows.append({"k": EOF, "s": 0})
        by_bucket = sequence_into_buckets(seq, seq_state, wire_frame(rows))
        for b, parts in sorted(by_bucket.items()):
            logic = PlanBucket(plan, names, [COLUMNS] * len(names), [0] * len(names), strategy=strategy, tables=table_rows)
            blobs[b], frames = logic.process(b, blobs.get(b), pd.concat(parts, ignore_index=True))
            for f in frames:
                for r in f[f["k"] == RESULT].itertuples(index=False):
                    import pickle

                    out += rows_of(pd.DataFrame(pickle.loads(r.p)))
    return out


def test_partition_attribute_of_thesis_queries():
    schemas = {"Link1": COLUMNS, "Link2": COLUMNS}
    for q in (Q1, Q2, Q3, AGG):
        assert partition_attribute(bind(parse_plan(q), schemas)) == ("src", None)
    other = bind(parse_plan(f"SELECT RSTREAM(DISTINCT Link1.dst) FROM Link1 [RANGE {W}]"), schemas)
    assert partition_attribute(other) == ("dst", None)
    join = bind(parse_plan(f"SELECT RSTREAM(Link1.dst) FROM Link1 [RANGE {W}], Link2 [RANGE {W}] WHERE Link1.src = Link2.src"), schemas)
    assert partition_attribute(join)[0] is None  # output rows lack src: per-bucket netting would differ
    rows = bind(parse_plan("SELECT RSTREAM(DISTINCT Link1.src) FROM Link1 [ROWS 3]"), schemas)
    assert partition_attribute(rows)[0] is None
    # relations are broadcast: partitioned on the streams' attribute, unless relation rows reach the output alone
    schemas["R"] = ["op", "src", "label"]
    for q in (NRR, TABLE, Q3.replace(f"Link2 [RANGE {W}]", "R").replace("Link2.", "R.")):
        assert partition_attribute(bind(parse_plan(q, ["R"]), schemas)) == ("src", None)
    for q in (
        f"SELECT RSTREAM(R.src) FROM R UNION SELECT RSTREAM(Link1.src) FROM Link1 [RANGE {W}]",
        f"SELECT RSTREAM(*) FROM R WHERE NOT EXISTS (SELECT * FROM Link1 [RANGE {W}] WHERE Link1.src = R.src)",
    ):
        assert partition_attribute(bind(parse_plan(q, ["R"]), schemas))[0] is None


@pytest.mark.parametrize("query", [Q1, Q2, Q3, AGG], ids=["q1", "q2", "q3", "agg"])
@pytest.mark.parametrize("strategy", ["upa", "nt"])
def test_buckets_in_process_equal_local(query, strategy):
    data = links(7)
    want = local(query, data, strategy)
    assert want
    assert simulate(query, data, strategy) == want


@pytest.mark.parametrize("query", [NRR, TABLE], ids=["nrr", "table"])
@pytest.mark.parametrize("strategy", ["upa", "nt"])
def test_buckets_with_a_relation_in_process_equal_local(query, strategy):
    tables = {"R": relation(retroactive=query is TABLE)}
    data = links(7)
    want = local(query, data, strategy, tables)
    assert any(sign < 0 for _ts, _v, sign in want)
    assert simulate(query, data, strategy, tables=tables) == want


def _write_inputs(tmp_path, data: dict, parts: int = 2) -> dict[str, str]:
    """Each stream as a directory of ``parts`` CSV files, older files first."""
    out = {}
    for name, df in data.items():
        d = tmp_path / name
        d.mkdir()
        for j, idx in enumerate(np.array_split(np.arange(len(df)), parts)):
            f = d / f"part-{j:03d}.csv"
            df.iloc[idx].to_csv(f, index=False)
            os.utime(f, (1_000_000 + j, 1_000_000 + j))
        out[name] = str(d)
    return out


@pytest.mark.spark
@pytest.mark.parametrize(
    "query,strategy,per_trigger", [(Q1, "upa", 1), (Q2, "nt", None), (Q3, "upa", None), (AGG, "upa", None)], ids=["q1-upa-3-batches", "q2-nt", "q3-upa", "agg-upa"]
)
def test_spark_equals_local(spark, tmp_path, query, strategy, per_trigger):
    from slidewise.spark.plan_runner import run_plan_spark

    data = links(11, n=40)
    want = local(query, data, strategy)
    sources = _write_inputs(tmp_path, data)
    used = {s.source for s in parse_plan(query).scans()}
    res = run_plan_spark(
        query, {k: v for k, v in sources.items() if k in used}, strategy=strategy, spark=spark, max_files_per_trigger=per_trigger, once=True
    )  # directories: live unless once
    assert rows_of(res.results) == want
    assert res.stats["keying"].startswith("hash of src")
    assert res.stats["inputs"] == {k: 40 for k in sorted(used)}
    assert res.stats["results"] + res.stats["retractions"] == sum(want.values())


@pytest.mark.spark
@pytest.mark.parametrize("query,strategy", [(NRR, "upa"), (TABLE, "nt")], ids=["nrr-upa", "table-nt"])
def test_spark_with_a_relation_equals_local(spark, tmp_path, query, strategy):
    from slidewise.spark.plan_runner import run_plan_spark

    data = links(11, n=40)
    path = tmp_path / "r.csv"
    relation(retroactive=query is TABLE).to_csv(path, index=False)
    tables = {"R": str(path)}
    want = local(query, data, strategy, tables)
    assert any(sign < 0 for _ts, _v, sign in want)
    sources = _write_inputs(tmp_path, {"Link1": data["Link1"]})
    res = run_plan_spark(query, sources, tables, strategy=strategy, spark=spark, max_files_per_trigger=1, once=True)
    assert rows_of(res.results) == want
    assert res.stats["keying"].startswith("hash of src") and res.stats["buckets"] > 1
    n = len(relation(retroactive=query is TABLE))
    assert res.stats["inputs"] == {"R": n, "Link1": 40}  # the relation once, not once per bucket


def test_reused_nrr_key_is_the_local_error_on_spark(tmp_path, capsys):
    from slidewise.cli import main
    from slidewise.errors import SourceError
    from slidewise.spark.plan_runner import run_plan_spark

    data = links(1)
    bad = pd.concat([relation(False), pd.DataFrame({"ts": [30], "op": ["+"], "src": [1], "label": [21]})], ignore_index=True).sort_values(
        "ts", kind="stable", ignore_index=True
    )
    with pytest.raises(SourceError) as local_err:
        execute_plan(parse_plan(NRR, ["R"]), {"Link1": data["Link1"]}, {"R": bad})
    assert "reused at ts 30" in local_err.value.message
    with pytest.raises(SourceError) as spark_err:  # on the driver, before Spark starts
        run_plan_spark(NRR, {"Link1": data["Link1"]}, {"R": bad})
    assert str(spark_err.value) == str(local_err.value)
    with pytest.raises(SourceError, match="unknown op 'x'"):
        run_plan_spark(NRR, {"Link1": data["Link1"]}, {"R": bad.assign(op=bad["op"].replace("-", "x"))})
    data["Link1"].to_csv(tmp_path / "link1.csv", index=False)
    bad.to_csv(tmp_path / "r.csv", index=False)
    code = main(
        ["run", NRR, "--source", f"Link1={tmp_path / 'link1.csv'}", "--table", f"R={tmp_path / 'r.csv'}", "--engine", "spark"]
    )  # the CLI's Spark path with --table
    assert code != 0 and f"slidewise: error: {local_err.value}" in capsys.readouterr().err
