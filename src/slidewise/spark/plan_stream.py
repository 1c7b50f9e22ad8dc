"""A general plan as one Spark pipeline: the driver's planning (:func:`plan_general`) and the stream
(:func:`build_plan_stream`), shared by ``slidewise run --engine spark``
(:mod:`slidewise.spark.plan_runner`) and the Spark-native API (:func:`slidewise.spark.query`).

::

    inputs ──mapInArrow: convert──┐  (slidewise.spark.ingest, one stream per source)
    end of input ─────────────────┤ union
                                  ▼
      groupBy(s).transformWithStateInPandas(SequencerProcessor)   input order, late rejects, buckets
                                  ▼
      groupBy(b).transformWithStateInPandas(PlanProcessor)        pane partials (panes), FREQUENT
                                  ▼                               (frequent), else the operator network
                    rows of OUT_DDL: results, rejects, stats      (plan_state)

The pane path has one stateful stage, as the join (:mod:`slidewise.spark.route`): the router in the
source's ``mapInArrow`` in place of the sequencer, its buckets sequence the stream themselves, grouped
by :func:`~slidewise.spark.keying.spread_keys` (one bucket per shuffle partition).
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass, field, replace
from pathlib import Path

from slidewise.options import DEFAULT_CHUNK_ROWS, RunOptions
from slidewise.plan.logical import Plan
from slidewise.runtime.rejects import Rejects
from slidewise.spark.keying import Keying
from slidewise.spark.layout import KIND_DDL, Layout, StreamInfo
from slidewise.spark.plan_state import OUT_DDL, RESULT, PlanBucket, partition_attribute

__all__ = ["GeneralPlan", "build_plan_stream", "check_tables", "load_plan", "plan_general", "plan_results", "read_tables", "stateful_stages"]


@dataclass
class GeneralPlan:
    """What the driver decided before starting Spark: the bound plan, its streams, keying and bucket logic."""

    plan: Plan
    names: list[str]
    infos: list[StreamInfo]
    recipes: list[dict]
    keying: Keying
    logic: object  # PaneBucket | PlanBucket | FrequentBucket
    attr: str | None
    table_rows: dict
    kinds: dict[str, str]  # output column -> int | float | bool | str | tinyint
    warnings: list[str] = field(default_factory=list)

    @property
    def layout(self) -> Layout:
        return Layout(tuple(self.infos))

    @property
    def columns(self) -> list[str]:
        return list(self.logic.columns)  # type: ignore[attr-defined]


def plan_general(
    plan,
    sources: dict[str, object],
    names: list[str],
    opened_tables: dict,
    *,
    ts_column: str,
    ts_unit: str,
    lateness: int,
    buckets: int,
    key: bytes,
    rejected: Rejects,
    work_dir: Path,
    strategy: str = "nt",
    partitions: int = 1,
    options: dict | None = None,
    rewrite: bool = True,
    streams: RunOptions | None = None,
) -> GeneralPlan:
    """Inspect the streams ``names`` (local reader rules), bind, rewrite and prune ``plan`` (a Plan or a
    FrequentQuery), read the relations ``opened_tables`` (their rejects into ``rejected``) and choose the
    keying and bucket logic; operator and relation errors are raised here, before Spark starts. ``streams``:
    per-stream lateness and timestamp settings (:meth:`RunOptions.for_stream`) over ``ts_column``, ``ts_unit``, ``lateness``."""
    from slidewise.errors import PlanError
    from slidewise.plan.bind import bind_typed
    from slidewise.plan.frequent import FrequentQuery
    from slidewise.plan.prune import prune_columns
    from slidewise.runtime.frequent import bind_frequent
    from slidewise.spark.frequent import FrequentBucket
    from slidewise.spark.ingest import inspect_stream
    from slidewise.spark.join import checked_lateness
    from slidewise.spark.panes import pane_bucket

    frequent = isinstance(plan, FrequentQuery)
    if not frequent and plan.root.count_slide:  # the pane path here counts time panes; arrival numbers need one global order
        text = " ".join((plan.text or plan.root.label()).split())
        raise PlanError(
            f"{text}: a count window with SLIDE ([ROWS n SLIDE m]) does not run on the Spark engine or its stages (Kafka topics followed with --checkpoint)",
            hint="run it with --engine local, without --checkpoint",
        )
    infos, recipes = [], []
    for name in names:
        own = streams.for_stream(name) if streams is not None else None
        info, recipe = inspect_stream(
            name,
            name,
            sources[name],
            ts_column=own.ts_column if own else ts_column,
            ts_unit=own.ts_unit if own else ts_unit,
            lateness=checked_lateness(own.lateness) if own else lateness,
            work_dir=work_dir,
        )
        infos.append(replace(info, idle=streams.idle_timeout(name)) if streams is not None else info)
        recipes.append(recipe)
    kinds: dict[str, str | None]
    if frequent:  # global over one stream (slidewise.spark.frequent): one bucket
        plan = bind_frequent(plan, dict(infos[0].kinds))
        kinds = {plan.item: infos[0].kinds.get(plan.item), "frequency": "int", "threshold": "int", "guaranteed": "bool"}
    else:
        plan, kinds = bind_typed(plan, {**{n: dict(t.kinds) for n, t in opened_tables.items()}, **{n: dict(i.kinds) for n, i in zip(names, infos)}})
    table_rows, _ = read_tables(opened_tables, lateness, ts_column, ts_unit, rejected)  # once the plan binds
    if rewrite and not frequent:
        from slidewise.optimizer.rewrite import choose_plan

        chosen, _ = choose_plan(plan, strategy=strategy, partitions=partitions)
        if chosen.root.schema == plan.root.schema:
            plan = chosen
    if not frequent:
        plan = prune_columns(plan)
    attr, why = (None, None) if frequent else partition_attribute(plan)
    warnings = []
    if attr is None:
        keying = Keying("single", 1)
        if why:
            warnings.append(f"{why}: the plan runs in one key bucket (one task)")
            logging.getLogger(__name__).warning(warnings[-1])
    else:
        stream_kinds = {i.kinds[attr] for i in infos}
        key_kind = "str" if stream_kinds == {"str"} else "float" if "float" in stream_kinds else "int"
        keying = Keying("hash", int(buckets), keys=(attr,) * len(names), key_kind=key_kind)
    logic: object
    if frequent:
        logic = FrequentBucket(plan, dict(infos[0].kinds), infos[0].lateness, key=key)
    else:
        logic = pane_bucket(plan, names, [dict(i.kinds) for i in infos], infos[0].lateness, tables=table_rows, key=key, info=infos[0])
    if logic is None:  # not a periodic one-stream GROUP BY (slidewise.spark.panes): the operator network
        logic = PlanBucket(
            plan,
            names,
            [list(i.kinds) for i in infos],
            [i.lateness for i in infos],
            idle=[i.idle for i in infos],
            strategy=strategy,
            partitions=partitions,
            options=options,
            tables=table_rows,
            key=key,
        )
        check_tables(logic.new_state().runner, table_rows)
    out_kinds = {c: kinds.get(c) or "str" for c in logic.columns}  # type: ignore[attr-defined]
    out_kinds.update(ts="int", sign="tinyint")
    return GeneralPlan(plan, list(names), infos, recipes, keying, logic, attr, table_rows, out_kinds, warnings)  # type: ignore[arg-type]


def build_plan_stream(spark, gp: GeneralPlan, *, control_dir: str | None, ts_column: str = "ts", max_files: int | None = None, ended: bool = False):
    """The streaming (over batch inputs with ``ended``: batch) DataFrame of the plan's output rows
    (:data:`~slidewise.spark.plan_state.OUT_DDL`). ``control_dir``: where end-of-input markers appear."""
    from pyspark.sql import functions as F

    from slidewise.spark.ingest import control_frame, stream_frame
    from slidewise.spark.keying import spread_keys
    from slidewise.spark.layout import EOF, WIRE_DDL, wire_frame
    from slidewise.spark.processor import PlanProcessor, SequencerProcessor
    from slidewise.spark.route import route_batches
    from slidewise.spark.sequencer import SequencerLogic

    layout = gp.layout
    routed = stateful_stages(gp) == 1
    then = functools.partial(route_batches, layout=layout, keying=gp.keying) if routed else None
    frames = [stream_frame(spark, i, info, gp.recipes[i], layout, ts_column, max_files, then=then) for i, info in enumerate(gp.infos)]
    if ended:
        frames.append(spark.createDataFrame(wire_frame([{"k": EOF, "b": b} for b in range(gp.keying.buckets)] if routed else [{"k": EOF}]), WIRE_DDL))
    elif control_dir is not None:
        frames.append(control_frame(spark, control_dir, layout, then=then))
    union = functools.reduce(lambda a, b: a.union(b), frames)
    key = "b"
    if routed:  # grouped by a key per bucket that Spark's partitioning spreads: one bucket per core
        keys = F.array(*[F.lit(k) for k in spread_keys(gp.keying.buckets)])
        union, key = union.withColumn("g", F.element_at(keys, F.col("b") + 1)), "g"
    else:
        union = union.groupBy("s").transformWithStateInPandas(
            statefulProcessor=SequencerProcessor(SequencerLogic(layout, gp.keying)), outputStructType=WIRE_DDL, outputMode="Append", timeMode="None"
        )
    return union.groupBy(key).transformWithStateInPandas(statefulProcessor=PlanProcessor(gp.logic), outputStructType=OUT_DDL, outputMode="Append", timeMode="None")


def stateful_stages(gp: GeneralPlan) -> int:
    """Stateful stages per micro-batch: the pane path sequences its one stream in its buckets
    (:mod:`slidewise.spark.route`), other plans go through the sequencer first."""
    from slidewise.spark.panes import PaneBucket

    return 1 if isinstance(gp.logic, PaneBucket) and gp.logic.info is not None else 2


def plan_results(frame, gp: GeneralPlan):
    """The result rows of a plan output frame, one row per result with the CLI's column names, typed."""
    import pyarrow as pa
    from pyspark.sql import functions as F

    ddl = ", ".join(f"`{c}` {KIND_DDL[gp.kinds[c]]}" for c in gp.columns)
    arrow = {"int": pa.int64(), "float": pa.float64(), "bool": pa.bool_(), "str": pa.string(), "tinyint": pa.int8()}
    schema = pa.schema([(c, arrow[gp.kinds[c]]) for c in gp.columns])
    return frame.filter(F.col("k") == RESULT).select("p").mapInArrow(functools.partial(_result_batches, schema=schema), ddl)


def _result_batches(batches, *, schema):
    """``mapInArrow`` body: packed result chunks as Arrow batches of ``schema`` (values of an unknown
    kind as text)."""
    import pyarrow as pa

    from slidewise.spark.layout import unpack

    for b in batches:
        for payload in b.column("p").to_pylist():
            cols = unpack(payload)
            arrays = []
            for f in schema:
                values = cols[f.name]
                if pa.types.is_string(f.type):
                    values = [None if v is None else str(v) for v in values]
                arrays.append(pa.array(values, f.type, from_pandas=True))
            yield pa.RecordBatch.from_arrays(arrays, schema=schema)


def read_tables(tables: dict[str, object], lateness: int, ts_column: str, ts_unit: str, rejects: Rejects, chunk_rows: int = DEFAULT_CHUNK_ROWS) -> tuple[dict, dict]:
    """Each relation's admitted update rows ``name -> (ts, cols)`` in ``(ts, file order)``, and its schema
    (``tables``: name -> input, or the :class:`~slidewise.runtime.sources.Source` already opened).

    The local engine's reading: :func:`slidewise.runtime.plan_engine.open_table`
    and :func:`~slidewise.runtime.reorder.merge_all` (late and bad rows go to
    ``rejects``) and ``op`` column check as
    :func:`~slidewise.runtime.plan_engine.execute_plan`.
    """
    import numpy as np

    from slidewise.runtime.plan_engine import open_table
    from slidewise.runtime.reorder import merge_all
    from slidewise.runtime.sources import Source

    if not tables:
        return {}, {}
    names = list(tables)
    opened = [
        t if isinstance(t, Source) else open_table(n, t, ts_column, ts_unit, chunk_rows)  # checks ``op``
        for n, t in tables.items()
    ]
    parts: dict[str, list] = {n: [] for n in names}
    for chunk in merge_all(opened, lateness, rejects, chunk_rows):
        for i, b in enumerate(chunk):
            if len(b):
                parts[names[i]].append(b)
    rows = {}
    for name, src in zip(names, opened):
        got = parts[name]
        if got:
            rows[name] = (np.concatenate([b.ts for b in got]), {c: np.concatenate([b.cols[c] for b in got]) for c in got[0].cols})
        else:
            rows[name] = (np.empty(0, np.int64), {c: np.empty(0, dt) for c, dt in src.schema.items()})
    return rows, {n: dict(src.kinds) for n, src in zip(names, opened)}


def check_tables(runner, tables: dict) -> None:
    """Push every relation's rows through its own operators (the relation scans) on the driver: a
    bad ``op``, a key inserted twice, a delete of a missing key or a reused NRR key is the local
    engine's :class:`~slidewise.errors.SourceError`, raised before Spark starts."""
    from slidewise.spark.plan_state import _Batch

    for name, (ts, cols) in tables.items():
        if len(ts):
            runner.add(name, _Batch(ts, cols), is_table=True)
    for t in sorted(runner.queue):
        for leaves, rows in runner.queue.pop(t):
            for i in leaves:
                runner.ops[i].push(0, rows, t)


def load_plan(plan, tables) -> Plan:
    """``plan`` (query text, a ``*.cql`` file name, a path, or a Plan / FrequentQuery) as a plan; a
    PlanError for a query over relations only (the Spark engine needs a stream)."""
    import os

    from slidewise.cql.parser import load_any, parse_plan
    from slidewise.errors import PlanError

    if isinstance(plan, (str, os.PathLike)):
        plan = load_any(plan, tables)
        if not isinstance(plan, Plan):
            plan = parse_plan(plan.text)
    if all(s.is_relation for s in plan.scans()):
        raise PlanError("the query reads relations only; the Spark engine needs at least one stream", hint="run it with --engine local")
    return plan
