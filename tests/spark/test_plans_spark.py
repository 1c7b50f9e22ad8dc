"""General plans (seed 003 ch. 3) on the Spark engine equal the local executor (issue 5, "Both engines").

Thesis Queries 1–3 (§3.6) and a GROUP BY on small generated link streams
written as CSV files, compared as multisets of ``(ts, vals, sign)`` with
:func:`slidewise.runtime.plans.execute_plan`. The bucket logic is also run
in-process (no JVM) over several micro-batches.
"""

from __future__ import annotations

import os
from collections import Counter

import numpy as np
import pandas as pd
import pytest

from harness import sequence_into_buckets
from slidewise.cql.parser import parse_plan
from slidewise.runtime.plans import _bind, execute_plan
from slidewise.spark.keying import Keying
from slidewise.spark.layout import EOF, TUPLE, Layout, StreamInfo, pack, wire_frame
from slidewise.spark.plan_state import RESULT, PlanBucket, partition_attribute
from slidewise.spark.sequencer import SequencerLogic

W = 6
Q1 = (f"SELECT RSTREAM(*) FROM Link1 [RANGE {W}], Link2 [RANGE {W}] "
      "WHERE Link1.src = Link2.src AND Link1.proto = 1")
Q2 = f"SELECT RSTREAM(DISTINCT Link1.src) FROM Link1 [RANGE {W}]"
Q3 = (f"SELECT RSTREAM(*) FROM Link1 [RANGE {W}] WHERE NOT EXISTS "
      f"(SELECT * FROM Link2 [RANGE {W}] WHERE Link2.src = Link1.src)")
AGG = f"SELECT RSTREAM(Link1.src, COUNT(*) AS n) FROM Link1 [RANGE {W}] GROUP BY Link1.src"
COLUMNS = ["src", "dst", "proto"]


def links(seed: int, n: int = 60) -> dict[str, pd.DataFrame]:
    """Two link streams: increasing ts with ties, few source addresses."""
    rng = np.random.default_rng(seed)
    out = {}
    for name in ("Link1", "Link2"):
        ts = np.cumsum(rng.choice([0, 1, 1, 2, 3], n))
        out[name] = pd.DataFrame({"ts": ts, "src": rng.integers(0, 5, n), "dst": rng.integers(0, 3, n),
                                  "proto": rng.integers(0, 3, n)}).astype("int64")
    return out


def rows_of(frame: pd.DataFrame) -> Counter:
    """A result frame as a multiset of ``(ts, vals, sign)``."""
    if frame is None or not len(frame):
        return Counter()
    vals = [c for c in frame.columns if c not in ("ts", "sign")]
    return Counter((int(r[-2]), tuple(r[:-2]), int(r[-1])) for r in frame[vals + ["ts", "sign"]].itertuples(index=False))


def local(query: str, data: dict, strategy: str) -> Counter:
    plan = parse_plan(query)
    used = {s.source for s in plan.scans()}
    return rows_of(execute_plan(plan, {k: v for k, v in data.items() if k in used}, strategy=strategy,
                                collect=True).results)


def simulate(query: str, data: dict, strategy: str, *, batches: int = 3, buckets: int = 4) -> Counter:
    """Sequencer and plan buckets in-process, as Spark runs them (state as bytes between calls)."""
    plan = parse_plan(query)
    names = list(dict.fromkeys(s.source for s in plan.scans()))
    plan = _bind(plan, {n: COLUMNS for n in names})
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
            rows.append({"k": TUPLE, "s": i, "q": len(idx), "p": pack(
                {"t": sub["ts"].to_numpy(np.int64), "q": idx.astype(np.int64), "o": np.zeros(len(idx), np.int64),
                 "fi": np.zeros(len(idx), np.int32), "files": [f"file:///in/{n}.csv"],
                 **{a: sub[a].to_numpy() for a in COLUMNS}})})
        if step == batches:
            rows.append({"k": EOF, "s": 0})
        by_bucket = sequence_into_buckets(seq, seq_state, wire_frame(rows))
        for b, parts in sorted(by_bucket.items()):
            logic = PlanBucket(plan, names, [COLUMNS] * len(names), [0] * len(names), strategy=strategy)
            blobs[b], frames = logic.process(b, blobs.get(b), pd.concat(parts, ignore_index=True))
            for f in frames:
                for r in f[f["k"] == RESULT].itertuples(index=False):
                    import pickle

                    out += rows_of(pd.DataFrame(pickle.loads(r.p)))
    return out


def test_partition_attribute_of_thesis_queries():
    schemas = {"Link1": COLUMNS, "Link2": COLUMNS}
    for q in (Q1, Q2, Q3, AGG):
        assert partition_attribute(_bind(parse_plan(q), schemas)) == ("src", None)
    other = _bind(parse_plan(f"SELECT RSTREAM(DISTINCT Link1.dst) FROM Link1 [RANGE {W}]"), schemas)
    assert partition_attribute(other) == ("dst", None)
    join = _bind(parse_plan(f"SELECT RSTREAM(Link1.dst) FROM Link1 [RANGE {W}], Link2 [RANGE {W}] "
                            "WHERE Link1.src = Link2.src"), schemas)
    assert partition_attribute(join)[0] is None   # output rows lack src: per-bucket netting would differ
    rows = _bind(parse_plan("SELECT RSTREAM(DISTINCT Link1.src) FROM Link1 [ROWS 3]"), schemas)
    assert partition_attribute(rows)[0] is None


@pytest.mark.parametrize("query", [Q1, Q2, Q3, AGG], ids=["q1", "q2", "q3", "agg"])
@pytest.mark.parametrize("strategy", ["upa", "nt"])
def test_buckets_in_process_equal_local(query, strategy):
    data = links(7)
    want = local(query, data, strategy)
    assert want
    assert simulate(query, data, strategy) == want


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
@pytest.mark.parametrize("query,strategy,per_trigger", [(Q1, "upa", 1), (Q2, "nt", None), (Q3, "upa", None),
                                                        (AGG, "upa", None)],
                         ids=["q1-upa-3-batches", "q2-nt", "q3-upa", "agg-upa"])
def test_spark_equals_local(spark, tmp_path, query, strategy, per_trigger):
    from slidewise.spark.plans import run_plan_spark

    data = links(11, n=40)
    want = local(query, data, strategy)
    sources = _write_inputs(tmp_path, data)
    used = {s.source for s in parse_plan(query).scans()}
    res = run_plan_spark(query, {k: v for k, v in sources.items() if k in used}, strategy=strategy, spark=spark,
                         max_files_per_trigger=per_trigger)
    assert rows_of(res.results) == want
    assert res.stats["keying"].startswith("hash of src")
    assert res.stats["inputs"] == {k: 40 for k in sorted(used)}
    assert res.stats["results"] + res.stats["retractions"] == sum(want.values())


def test_tables_on_spark_are_a_clear_error(tmp_path):
    from slidewise.errors import PlanError
    from slidewise.spark.plans import run_plan_spark

    query = f"SELECT RSTREAM(*) FROM Link1 [RANGE {W}], R WHERE Link1.src = R.src"
    with pytest.raises(PlanError, match="streams only"):
        run_plan_spark(query, {"Link1": links(1)["Link1"]}, {"R": pd.DataFrame({"src": [1], "x": [2]})})
