"""The multi-way window join as one Spark Structured Streaming pipeline.

::

    file / rate sources ──mapInArrow: convert──┐  (sibling directories: one file source, slidewise.spark.files)
    control (end of input) ────────────────────┤ union (packed chunks, stream id s)
                                               ▼
        route_batches, in each source's mapInArrow: key buckets, file-split segments for every bucket
                                               ▼
        groupBy(b).transformWithStateInPandas(JoinProcessor)        the one stateful stage, key = bucket
            input order, late rejects and sequence numbers from the segments
            (:mod:`slidewise.spark.route`), buffer until the watermark, then the hosted operator
                                               ▼
                     results, rejects, per-bucket stats  ──▶ foreachBatch sink

Unlike chained binary stream-stream joins, no intermediate join result is
materialised: an n-way join is one stateful operator whose per-bucket state is
the n windows of the hosted operator. Spark provides sources, shuffles,
state store (RocksDB), triggers, checkpoints and sinks; slidewise provides
the semantics (order, lateness, windows, lazy evaluation) by hosting the same
operator as the local engine (the planner's choice, by default ``columnar``).

A W-join (:class:`~slidewise.plan.wjoin.WJoinQuery`) takes the same pipeline:
with every pair within one ``w`` as the join path's query
(:func:`~slidewise.runtime.join_engine.as_join`), else hosting the W-join
operator the W-join planner picks (:func:`~slidewise.runtime.join_engine.wjoin_operator`)
in one key bucket (one task; partitioning by the equi-join key is not done yet).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from pathlib import Path

from slidewise.errors import OptionError, SourceError
from slidewise.model.time import MAX_DURATION, parse_duration
from slidewise.optimizer.planner import choose
from slidewise.options import DEFAULT_CHUNK_ROWS, RunOptions
from slidewise.plan.logical import CHANGELOG
from slidewise.plan.physical import PhysicalPlan
from slidewise.plan.query import JoinQuery
from slidewise.plan.wjoin import WJoinQuery
from slidewise.spark.bucket import BucketJoin
from slidewise.spark.files import group_frame, groups
from slidewise.spark.ingest import control_frame, inspect_stream, stream_frame
from slidewise.spark.keying import Keying, choose_keying
from slidewise.spark.layout import WIRE_DDL, Layout, StreamInfo
from slidewise.spark.route import route_batches


class ChangelogJoin(Exception):
    """Raised by :func:`plan_join` for a join over a changelog stream: run ``plan`` (the query as a
    general plan, whose operators retract) instead."""

    def __init__(self, plan):
        super().__init__("a join over a changelog runs as a general plan")
        self.plan = plan


@dataclass
class JoinPlan:
    """What the driver decided before starting Spark: schemas, operator, keying. A W-join hosted
    as one has ``wjoin`` (bound) and its operator's name in ``wjoin_algorithm``, and no ``plan``."""

    query: JoinQuery
    plan: PhysicalPlan | None
    keying: Keying
    layout: Layout
    recipes: list[dict]
    warnings: list[str] = field(default_factory=list)
    options: dict = field(default_factory=dict)
    wjoin: WJoinQuery | None = None
    wjoin_algorithm: str | None = None

    @property
    def streams(self) -> list[StreamInfo]:
        return list(self.layout.streams)

    def head(self) -> dict:
        """The stats' operator facts, as the local engine reports them."""
        q = self.query
        if self.plan is None:
            return {"algorithm": self.wjoin_algorithm, "join_order": list(q.aliases), "orders": {}}
        return {"algorithm": self.plan.algorithm.name, "join_order": [q.aliases[i] for i in self.plan.order], "orders": self.plan.orders()}


def checked_lateness(lateness) -> int:
    """``lateness`` (time units, or a duration such as ``"2s"``) as a non-negative int, else OptionError."""
    lat = parse_duration(lateness, what="lateness") if isinstance(lateness, str) else lateness
    if not isinstance(lat, int) or isinstance(lat, bool) or not 0 <= lat <= MAX_DURATION:
        raise OptionError(
            f"lateness must be an integer from 0 to {MAX_DURATION}, got {lateness!r}", hint="lateness is in timestamp units, e.g. 5000 for 5 s of epoch-ms timestamps"
        )
    return lat


def plan_join(
    query: JoinQuery | WJoinQuery,
    sources: dict[str, object],
    *,
    buckets: int,
    ts_column: str = "ts",
    ts_unit: str = "auto",
    lateness: int = 0,
    algorithm: str | None = None,
    order=None,
    options: dict | None = None,
    work_dir: Path,
    streams: RunOptions | None = None,
) -> JoinPlan:
    """Inspect the inputs (local reader rules) and fix operator, keying and layouts; a
    :class:`ChangelogJoin` when a stream is a changelog.

    ``streams``: run options whose per-stream settings (:meth:`~slidewise.options.RunOptions.for_stream`)
    replace ``ts_column``, ``ts_unit`` and ``lateness`` for the streams they name."""
    from slidewise.plan.bind import bind_query
    from slidewise.runtime.join_engine import as_join, changelog_plan, wjoin_operator

    wjoin = query if isinstance(query, WJoinQuery) else None
    if wjoin is not None and (form1 := as_join(wjoin, algorithm, order)) is not None:
        wjoin, query = None, form1  # every pair within one w: the join path's query
    query = wjoin.join if wjoin is not None else query

    missing = [s.source for s in query.streams if s.source not in sources]
    if missing:
        raise SourceError(
            f"no input given for stream {missing[0]!r}", hint=f"pass --source {missing[0]}=PATH (FROM reads: {', '.join(dict.fromkeys(s.source for s in query.streams))})"
        )
    base = RunOptions(lateness=checked_lateness(lateness), ts_column=ts_column, ts_unit=ts_unit, streams=streams.streams if streams is not None else None)
    infos, recipes = [], []
    for ref in query.streams:
        own = base.for_stream(ref.source)
        info, recipe = inspect_stream(
            ref.alias, ref.source, sources[ref.source], ts_column=own.ts_column, ts_unit=own.ts_unit, lateness=checked_lateness(own.lateness), work_dir=work_dir
        )
        infos.append(replace(info, idle=streams.idle_timeout(ref.source) if streams is not None else None))
        recipes.append(recipe)
    if any(CHANGELOG in i.kinds for i in infos):  # retractions: the general plan's operators, as on the local engine
        given = [n for n, v in (("algorithm", algorithm), ("order", order), *(options or {}).items()) if v]
        raise ChangelogJoin(changelog_plan(wjoin or query, given))
    query = bind_query(query, [dict(i.kinds) for i in infos])
    rate = ["rate source: timestamps are Spark's generation times (ms)"] if any(r["fmt"] == "rate" for r in recipes) else []
    if wjoin is not None:  # the W-join planner's operator, in one key bucket
        wjoin = replace(wjoin, join=query)
        name = wjoin_operator(wjoin, algorithm, order, options).name  # option errors now, not inside a Spark task
        single = Keying("single", 1, warnings=("a W-join runs in one key bucket (one task)",))
        return JoinPlan(query, None, single, Layout.build(query, infos), recipes, [*single.warnings, *rate], {}, wjoin, name)
    plan = choose(query, algorithm, order, **(options or {}))
    plan.build()  # option errors now, not inside a Spark task
    keying = choose_keying(query, [i.kinds for i in infos], buckets)
    return JoinPlan(query, plan, keying, Layout.build(query, infos), recipes, [*keying.warnings, *rate], dict(options or {}))


def build_stream(
    spark,
    jp: JoinPlan,
    *,
    control_dir: str | None,
    ts_column: str = "ts",
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    max_files: int | None = None,
    key: bytes | None = None,
    ended: bool = False,
):
    """The streaming (or, over batch DataFrame inputs, batch) DataFrame of the join's output (layout
    :meth:`Layout.out_ddl`). ``control_dir``: where end-of-input markers appear (None: no end but
    ``ended``); ``ended``: the input ends with the inputs (batch); ``key``: the state key
    (:func:`~slidewise.spark.state_codec.run_key`)."""
    from slidewise.spark.layout import EOF, wire_frame
    from slidewise.spark.processor import JoinProcessor

    layout = jp.layout
    route = functools.partial(route_batches, layout=layout, keying=jp.keying)  # in each source's mapInArrow
    frames = []
    for group in groups(jp.recipes):  # streams in sibling directories share one file source
        if len(group) > 1:
            frames.append(group_frame(spark, group, layout, jp.recipes, ts_column, max_files, then=route))
        else:
            frames.append(stream_frame(spark, group[0], layout.streams[group[0]], jp.recipes[group[0]], layout, ts_column, max_files, then=route))
    if ended:
        frames.append(spark.createDataFrame(wire_frame([{"k": EOF, "b": b} for b in range(jp.keying.buckets)]), WIRE_DDL))
    elif control_dir is not None:
        frames.append(control_frame(spark, control_dir, layout, then=route))
    union = functools.reduce(lambda a, b: a.union(b), frames)
    logic = bucket_logic(jp, chunk_rows=chunk_rows, key=key)
    return union.groupBy("b").transformWithStateInPandas(statefulProcessor=JoinProcessor(logic), outputStructType=layout.out_ddl(), outputMode="Append", timeMode="None")


def bucket_logic(jp: JoinPlan, *, chunk_rows: int = DEFAULT_CHUNK_ROWS, key: bytes | None = None) -> BucketJoin:
    """The join stage's logic (the hosted operator of the plan's algorithm and order)."""
    q = jp.query
    if jp.plan is None:
        return BucketJoin(q, jp.layout, algorithm=jp.wjoin_algorithm, wjoin=jp.wjoin, chunk_rows=chunk_rows, key=key)
    return BucketJoin(q, jp.layout, algorithm=jp.plan.algorithm.name, order=[q.aliases[i] for i in jp.plan.order], options=jp.options, chunk_rows=chunk_rows, key=key)
