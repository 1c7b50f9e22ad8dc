"""Shared helpers of the Spark tests: fixed random cases, oracle rows, an in-process pipeline.

:func:`simulate` drives the join's stages the way Spark does — the stateless
router (:mod:`slidewise.spark.route`) and the bucket join grouped by bucket, or
(``route=False``, as :mod:`slidewise.spark.follow` does) the sequencer grouped by
stream first — per micro-batch, state carried between calls, without a JVM, so
the logic is tested fast and the Spark tests only need to show that Spark runs it
the same way.
"""

from __future__ import annotations

import math
import os
import time
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from slidewise.plan.expr import BinOp, Cmp, Func, Lit
from slidewise.plan.query import Equality, WindowSpec
from slidewise.spark.bucket import BucketJoin
from slidewise.spark.keying import Keying, choose_keying
from slidewise.spark.layout import EOF, TUPLE, Layout, StreamInfo, pack, unpack, wire_frame
from slidewise.spark.plan_state import REJECTS, RESULT
from slidewise.spark.sequencer import SequencerLogic
from tests.oracle import oracle
from tests.streams import build_tuples, col, common_key, query_of

COLUMNS = ("a", "b", "x")


def raw_rows(n_streams: int, length: int, seed: int) -> list[tuple[int, int, int, int, int]]:
    """``(stream, ts, a, b, x)`` rows like ``streams.raw_streams``: ties, bursts, small values."""
    rng = np.random.default_rng(seed)
    rows, ts = [], 0
    for _ in range(length):
        ts += int(rng.choice([0, 0, 1, 1, 2, 3, 7]))
        rows.append((int(rng.integers(0, n_streams)), ts, int(rng.integers(0, 3)), int(rng.integers(0, 3)), int(rng.integers(0, 7))))
    return rows


def case(kind: str, n: int, seed: int, length: int = 40):
    """A fixed (query, tuples) case: ``kind`` is time, count (mixed), rows, lazy, lazy-restore, band or
    different (attributes)."""
    rng = np.random.default_rng(1000 + seed)
    slide = int(rng.integers(2, 6)) if kind.startswith("lazy") else None
    if kind == "rows":
        windows = [WindowSpec("rows", int(rng.integers(1, 5))) for _ in range(n)]
    elif kind == "count":
        windows = [WindowSpec("rows", int(rng.integers(1, 5))) if i % 2 == 0 else WindowSpec("range", int(rng.integers(0, 9))) for i in range(n)]
    else:
        windows = [WindowSpec("range", int(rng.integers(2, 12)), slide=slide) for _ in range(n)]
    equalities, filters = common_key(n), []
    if kind == "band":
        equalities = []
        filters = [Cmp("<=", Func("abs", (BinOp("-", col(i, "x"), col(i + 1, "x")),)), Lit(1)) for i in range(n - 1)]
    elif kind == "different":
        equalities = [Equality(col(i, "ab"[i % 2]), col(i + 1, "ab"[i % 2])) for i in range(n - 1)]
    q = query_of(windows, equalities, filters)
    if kind == "lazy-restore":
        q = type(q)(q.streams, q.equalities, q.filters, restore=True)
    return q, build_tuples(raw_rows(n, length, seed))


def frames_of(query, tuples) -> dict[str, pd.DataFrame]:
    """Per-source DataFrames in input order."""
    out = {}
    for i, ref in enumerate(query.streams):
        rows = [t for t in tuples if t.stream == i]
        out[ref.source] = pd.DataFrame({"ts": [t.ts for t in rows], **{c: [t.vals[c] for t in rows] for c in COLUMNS}}, dtype="int64")
    return out


def oracle_rows(query, tuples) -> list[tuple]:
    """The oracle's results as sorted ``SELECT *`` rows (member ts and attributes, ts, exp)."""
    want = oracle(query, tuples, restore=query.restore or not query.slide)
    by_pos = {t.pos: t for t in tuples}
    return sorted(
        tuple(v for p in members for v in (by_pos[p].ts, *(by_pos[p].vals[c] for c in COLUMNS))) + (ts, exp)
        for (members, ts, exp, _), count in want.items()
        for _ in range(count)
    )


def result_rows(query, frame: pd.DataFrame) -> list[tuple]:
    """A run's results in the form of :func:`oracle_rows`."""
    cols = [f"{ref.alias}.{c}" for ref in query.streams for c in ("ts", *COLUMNS)] + ["ts", "exp"]
    if frame is None or not len(frame):
        return []
    return sorted(tuple(int(v) for v in row) for row in frame[cols].itertuples(index=False))


def layout_of(query, lateness: int = 0, columns=COLUMNS) -> Layout:
    infos = [StreamInfo(ref.alias, ref.source, {c: "int" for c in columns}, "raw", lateness, "csv", 1) for ref in query.streams]
    return Layout.build(query, infos)


def simulate(
    query,
    tuples,
    *,
    batches: int = 3,
    buckets: int = 4,
    lateness: int = 0,
    restart: bool = True,
    inputs: dict[str, pd.DataFrame] | None = None,
    columns=COLUMNS,
    final: bool = True,
    logic=None,
    route: bool = True,
):
    """Run the stages in-process over ``batches`` micro-batches (then end of input if
    ``final``); returns (results frame, all stage-2 output). ``logic(layout)``: the bucket
    logic (default the planner's join, keyed by :func:`choose_keying`; given: one bucket);
    ``route``: the one-stage router (else the earlier sequencer stage)."""
    layout = layout_of(query, lateness, columns)
    keying = choose_keying(query, [s.kinds for s in layout.streams], buckets) if logic is None else Keying("single", 1)
    make = logic or (lambda lay: BucketJoin(query, lay))
    seq = SequencerLogic(layout, keying)
    join = make(layout)
    inputs = inputs or frames_of(query, tuples)
    seq_state: dict[int, tuple] = {}
    blobs: dict[int, bytes] = {}
    out: list[pd.DataFrame] = []
    per_stream = [inputs[ref.source] for ref in query.streams]
    cuts = [np.array_split(np.arange(len(df)), batches) for df in per_stream]
    for step in range(batches + int(final)):
        rows = []
        if step < batches:
            for i, df in enumerate(per_stream):
                idx = cuts[i][step]
                for part in np.array_split(idx, 2) if len(idx) > 1 else [idx]:  # two chunks per batch
                    if len(part):
                        sub = df.iloc[part]
                        rows.append(
                            {
                                "k": TUPLE,
                                "s": i,
                                "q": len(part),
                                "p": pack(
                                    {
                                        "t": sub["ts"].to_numpy(np.int64),
                                        "q": part.astype(np.int64),
                                        "o": np.zeros(len(part), np.int64),
                                        "fi": np.zeros(len(part), np.int32),
                                        "files": [f"file:///in/{query.streams[i].source}.csv"],
                                        **{a: sub[a].to_numpy() for a in columns},
                                    }
                                ),
                            }
                        )
        else:
            rows.append({"k": EOF, "s": 0})
        if not rows:
            continue
        by_bucket = route_into_buckets(layout, keying, wire_frame(rows)) if route else sequence_into_buckets(seq, seq_state, wire_frame(rows))
        for b, parts in sorted(by_bucket.items()):
            if restart:  # a fresh logic object per call, as a restarted worker would have
                join = make(layout)
            blob, frames = join.process(b, blobs.get(b), pd.concat(parts, ignore_index=True))
            blobs[b] = blob
            out += frames
    allout = pd.concat(out, ignore_index=True) if out else pd.DataFrame()
    res = allout[allout["k"] == 0]
    named = pd.DataFrame({n: res[f"r{j}"].to_numpy() for j, n in enumerate(layout.out_names)})
    return named, allout


def route_into_buckets(layout, keying, batch) -> dict[int, list]:
    """The router in-process: ``batch`` (one Arrow batch per source row, as scans send them) by bucket."""
    from slidewise.spark.layout import WIRE_ARROW
    from slidewise.spark.route import route_batches

    table = pa.Table.from_pandas(batch, schema=WIRE_ARROW, preserve_index=False)
    routed = [b.to_pandas() for b in route_batches(table.to_batches(max_chunksize=1), layout=layout, keying=keying)]
    by_bucket = defaultdict(list)
    for f in routed:
        for b, group in f.groupby("b", sort=True):
            by_bucket[int(b)].append(group)
    return by_bucket


def sequence_into_buckets(seq, seq_state: dict, batch) -> dict[int, list]:
    """Stage 1 in-process: each stream's rows of ``batch`` through the sequencer, output grouped by bucket."""
    stage1 = []
    for s, group in batch.groupby("s", sort=True):
        seq_state[int(s)], frames = seq.process(int(s), seq_state.get(int(s)), group.reset_index(drop=True))
        stage1 += frames
    by_bucket = defaultdict(list)
    for f in stage1:
        for b, group in f.groupby("b", sort=True):
            by_bucket[int(b)].append(group)
    return by_bucket


def step_rows(step, first: int, kinds: dict) -> list[dict]:
    """The sequencer's input rows for one micro-batch of stream S: ``"eof"`` (end of input) or a frame
    whose tuples get input positions from ``first`` on (none for an empty frame)."""
    if isinstance(step, str):
        return [{"k": EOF, "s": 0}]
    if not len(step):
        return []
    columns = {
        "t": step["ts"].to_numpy(np.int64),
        "q": first + np.arange(len(step), dtype=np.int64),
        "o": np.zeros(len(step), np.int64),
        "fi": np.zeros(len(step), np.int32),
        "files": ["file:///in/S.csv"],
        **{a: step[a].to_numpy() for a in kinds},
    }
    return [{"k": TUPLE, "s": 0, "q": len(step), "p": pack(columns)}]


def sequencer(kinds: dict, keying: Keying, lateness: int = 0) -> SequencerLogic:
    """The sequencer of one stream S with columns ``kinds``."""
    return SequencerLogic(Layout((StreamInfo("S", "S", kinds, "raw", lateness, "csv", 1),)), keying)


def norm(frame: pd.DataFrame | None) -> Counter:
    """Result rows as a multiset (NaN as None, numpy scalars as Python values)."""
    if frame is None or not len(frame):
        return Counter()
    return Counter(
        tuple(None if isinstance(v, float) and math.isnan(v) else (v.item() if hasattr(v, "item") else v) for v in r) for r in frame.itertuples(index=False, name=None)
    )


def bucket_rows(logic, kinds: dict, steps: list, keying: Keying, lateness: int = 0):
    """The sequencer of S and a bucket stage ``logic`` (``process(bucket, blob, frame)``) in-process over
    ``steps`` (frames of S per micro-batch, or ``"eof"``), state as bytes per bucket between calls: each
    row the stage emits (``k``, ``p``, ...), in order. A logic with a stream ``info`` (the pane path) gets
    the router's rows instead (:func:`route_into_buckets`: no sequencer stage)."""
    seq, seq_state, blobs, seen = sequencer(kinds, keying, lateness), {}, {}, 0
    routed = getattr(logic, "info", None) is not None
    for step in steps:
        rows = step_rows(step, seen, kinds)
        seen += 0 if isinstance(step, str) else len(step)
        if not rows:
            continue
        batch = wire_frame(rows)
        by_bucket = route_into_buckets(seq.layout, keying, batch) if routed else sequence_into_buckets(seq, seq_state, batch)
        for b, parts in sorted(by_bucket.items()):
            blobs[b], frames = logic.process(b, blobs.get(b), pd.concat(parts, ignore_index=True))
            for f in frames:
                yield from f.itertuples(index=False)


def run_buckets(logic, kinds: dict, steps: list, keying: Keying, lateness: int = 0) -> tuple[Counter, list[str]]:
    """:func:`bucket_rows` of a stage with ``columns``: the results (:func:`norm`) and the reject reasons."""
    out, rejects = Counter(), []
    for r in bucket_rows(logic, kinds, steps, keying, lateness):
        if r.k == RESULT:
            out += norm(pd.DataFrame(unpack(r.p))[logic.columns])
        elif r.k == REJECTS:
            rejects += list(unpack(r.p)["reason"])
    return out, rejects


def cut(frame: pd.DataFrame, points: list[int]) -> list[pd.DataFrame]:
    """``frame`` cut at ``points`` (clipped, deduplicated) into consecutive parts."""
    bounds = sorted({min(p, len(frame)) for p in points} | {0, len(frame)})
    return [frame.iloc[a:b] for a, b in zip(bounds, bounds[1:])]


def csv_files(frame: pd.DataFrame, d: Path, parts: int, first: int = 0) -> None:
    """``frame`` as ``parts`` CSV files ``part-NNN.csv`` in ``d`` (numbered from ``first``, modified in that order)."""
    d.mkdir(parents=True, exist_ok=True)
    for j, idx in enumerate(np.array_split(np.arange(len(frame)), parts)):
        f = d / f"part-{first + j:03d}.csv"
        frame.iloc[idx].to_csv(f, index=False)
        os.utime(f, (1_000_000 + first + j, 1_000_000 + first + j))


def wait_for_first_commit(ckpt: Path, seconds: float = 240) -> None:
    """Wait until the Spark query checkpointed at ``ckpt`` committed its first micro-batch."""
    deadline = time.monotonic() + seconds
    while not (ckpt / "query" / "commits" / "0").exists():
        assert time.monotonic() < deadline, "no committed micro-batch in time"
        time.sleep(0.1)


def simulate_plan(plan, streams: dict, tables: dict | None, strategy: str, *, batches: int = 3, buckets: int = 3) -> Counter:
    """A general ``plan`` (unbound) over ``streams`` (name -> frame with ``ts`` first) and ``tables``, run
    as Spark runs it — sequencer per stream, :class:`~slidewise.spark.plan_state.PlanBucket` per key bucket
    (:func:`~slidewise.spark.plan_state.partition_attribute`), state as bytes between micro-batches — in
    process: the output rows ``Counter[(ts, vals, sign)]``. Each stream arrives in ``batches`` parts, then
    the end of input."""
    from slidewise.plan.bind import bind
    from slidewise.runtime.rejects import Rejects
    from slidewise.spark.plan_state import PlanBucket, partition_attribute
    from slidewise.spark.plan_stream import read_tables

    names = list(dict.fromkeys(s.source for s in plan.scans() if not s.is_relation))
    attrs = {n: [c for c in streams[n].columns if c != "ts"] for n in names}
    table_rows, schemas = read_tables(tables or {}, 0, "ts", "auto", Rejects())
    plan = bind(plan, {**schemas, **attrs})
    attr, _ = partition_attribute(plan)
    keying = Keying("hash", buckets, keys=(attr,) * len(names)) if attr else Keying("single", 1)
    layout = Layout(tuple(StreamInfo(n, n, {c: "int" for c in attrs[n]}, "raw", 0, "csv", 1) for n in names))
    seq, seq_state, blobs, out = SequencerLogic(layout, keying), {}, {}, Counter()
    logic = PlanBucket(plan, names, [attrs[n] for n in names], [0] * len(names), strategy=strategy, tables=table_rows)
    parts = [np.array_split(np.arange(len(streams[n])), batches) for n in names]
    for step in range(batches + 1):
        rows: list[dict] = []
        for i, n in enumerate(names):
            idx = parts[i][step] if step < batches else np.arange(0)
            if not len(idx):
                continue
            sub = streams[n].iloc[idx]
            columns = {
                "t": sub["ts"].to_numpy(np.int64),
                "q": idx.astype(np.int64),
                "o": np.zeros(len(idx), np.int64),
                "fi": np.zeros(len(idx), np.int32),
                "files": [f"file:///in/{n}.csv"],
                **{a: sub[a].to_numpy(np.int64) for a in attrs[n]},
            }
            rows.append({"k": TUPLE, "s": i, "q": len(idx), "p": pack(columns)})
        if step == batches:
            rows.append({"k": EOF, "s": 0})
        if not rows:
            continue
        for b, got in sorted(sequence_into_buckets(seq, seq_state, wire_frame(rows)).items()):
            blobs[b], frames = logic.process(b, blobs.get(b), pd.concat(got, ignore_index=True))
            for f in frames:
                for r in f[f["k"] == RESULT].itertuples(index=False):
                    res = pd.DataFrame(unpack(r.p))
                    vals = [c for c in logic.columns if c not in ("ts", "sign")]
                    for v, ts, sign in zip(res[vals].itertuples(index=False, name=None), res["ts"], res["sign"]):
                        out[(int(ts), tuple(x.item() if hasattr(x, "item") else x for x in v), int(sign))] += 1
    return out
