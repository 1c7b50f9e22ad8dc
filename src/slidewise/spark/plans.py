"""General plans (seed 003 ch. 3) on Spark Structured Streaming: ``run_plan_spark``.

::

    file sources ──mapInArrow: convert──┐  (slidewise.spark.ingest, one stream per source)
    control (end of input) ─────────────┤ union
                                        ▼
      groupBy(s).transformWithStateInPandas(SequencerProcessor)   input order, late rejects, buckets
                                        ▼
      groupBy(b).transformWithStateInPandas(PlanProcessor)        the local executor's operator
                                        ▼                         network per bucket (plan_state)
             results, rejects, stats  ──▶ foreachBatch (driver: collect / file sink)

Sources, sequencer and end-of-input marker are the join engine's
(:mod:`slidewise.spark.ingest`, :mod:`slidewise.spark.sequencer`,
:mod:`slidewise.spark.runner`); the bucket stage hosts
:class:`~slidewise.spark.plan_state.PlanBucket`. Buckets are a hash of the
plan's partitioning attribute (:func:`~slidewise.spark.plan_state.partition_attribute`)
or one bucket with a warning. The run is available-now: every file present at
the start, then end of input. Results are written by the driver (collected,
or a local file sink as the local engine's ``out``).

Relations (``--table``, NRR or retroactive ``TABLE``) are small: the driver
reads them with the local engine's reader and merger
(:func:`slidewise.runtime.plans._open_table`, :func:`~slidewise.runtime.reorder.merge_all`:
same rows, same rejects), checks them through the relations' own operators
(bad ``op``, reused NRR key: the local :class:`~slidewise.errors.SourceError`
before Spark starts) and ships their update rows inside the bucket logic, so
every bucket holds every relation (:class:`~slidewise.spark.plan_state.PlanBucket`).
Only stream tuples are partitioned; a plan whose output rows can come from
relations alone runs in one bucket.
"""

from __future__ import annotations

import functools
import json
import pickle
import shutil
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

import pandas as pd
from pyspark.sql.streaming import StatefulProcessor

from slidewise.errors import OptionError, PlanError, SourceError
from slidewise.plan.logical import Plan
from slidewise.runtime.engine import RunResult, run_counts
from slidewise.runtime.rejects import Rejects
from slidewise.spark.plan_state import (ADMITTED, OUT_DDL, REJECTS, RESULT, STATE_DDL, STATS, PlanBucket,
                                        partition_attribute)

__all__ = ["PlanProcessor", "run_plan_spark"]


class PlanProcessor(StatefulProcessor):
    """Stage 2 for general plans (key: bucket): :class:`PlanBucket` with one binary ValueState."""

    def __init__(self, logic: PlanBucket):
        self._pickled = pickle.dumps(logic, protocol=pickle.HIGHEST_PROTOCOL)
        self._logic = None

    def __getstate__(self):
        return {"_pickled": self._pickled, "_logic": None}

    def init(self, handle) -> None:
        self.state = handle.getValueState("plan_bucket", STATE_DDL)

    def handleInputRows(self, key, rows, timerValues):
        parts = [p for p in rows if len(p)]
        if not parts:
            return
        frame = parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)
        if self._logic is None:
            self._logic = pickle.loads(self._pickled)
        old = self.state.get()
        blob, out = self._logic.process(int(key[0]), bytes(old[0]) if old else None, frame)
        self.state.update((blob,))
        yield from out

    def close(self) -> None:
        pass


class _PlanSink:
    """``foreachBatch`` target: unpacks results, rejects and stats on the driver."""

    def __init__(self, columns: list[str], sources: list[str], *, out=None, collect: bool = True,
                 rejects: Rejects | None = None):
        from slidewise.runtime.sinks import open_sink

        self.columns, self.sources = columns, sources
        self.sink = open_sink(out, columns) if out is not None else None
        self.collect = collect
        self.frames: list[pd.DataFrame] = []
        self.rejects = rejects if rejects is not None else Rejects()
        self.inputs: Counter = Counter()
        self.results = self.retractions = self.negatives = self.instants = 0
        self.state: dict[int, tuple[int, int]] = {}
        self.seen: set[int] = set()

    def __call__(self, df, batch_id: int) -> None:
        from slidewise.spark.bucket import reject_kind
        from slidewise.spark.layout import unpack

        if batch_id in self.seen:   # a replayed batch within this run
            return
        self.seen.add(batch_id)
        for r in df.collect():
            k = r["k"]
            if k == RESULT:
                cols = unpack(r["p"])
                if self.sink is not None:
                    self.sink.write(cols)
                if self.collect:
                    self.frames.append(pd.DataFrame(cols))
                self.retractions += r["n0"]
                self.results += r["q"] - r["n0"]
            elif k == REJECTS:
                rej = unpack(r["p"])
                for f, line, reason, raw in zip(rej["file"], rej["line"], rej["reason"], rej["raw"]):
                    self.rejects.add(self.sources[r["s"]], f, int(line), reason, raw, kind=reject_kind(reason))
            elif k == ADMITTED:
                self.inputs[self.sources[r["s"]]] += r["q"]
            elif k == STATS:
                peak, _ = self.state.get(r["s"], (0, 0))
                self.state[r["s"]] = (max(peak, r["n0"]), r["n1"])
                self.negatives += r["n2"]
                self.instants += r["n3"]

    def frame(self) -> pd.DataFrame:
        if self.frames:
            return pd.concat(self.frames, ignore_index=True)
        return pd.DataFrame({c: pd.Series(dtype="object") for c in self.columns})


def run_plan_spark(plan: str | Plan, sources: dict[str, object], tables: dict | None = None, *,
                   strategy: str = "upa", partitions: int = 10, out=None, collect: bool | None = None,
                   lateness: int = 0, ts_column: str = "ts", ts_unit: str = "auto", rejects_path: str | None = None,
                   master: str | None = None, conf: dict | None = None, spark=None, buckets: int | None = None,
                   options: dict | None = None, rewrite: bool = False, max_files_per_trigger: int | None = None,
                   **_ignored) -> RunResult:
    """Run a general plan on Spark over the files present now, to the end of its inputs.

    Results equal :func:`slidewise.runtime.plans.execute_plan` with the same
    arguments (the multiset of ``(ts, vals, sign)``).
    """
    from slidewise.cql.parser import load_any
    from slidewise.operators.incremental import STRATEGIES
    from slidewise.runtime.plans import _bind
    from slidewise.spark.ingest import control_frame, inspect_stream, stream_frame
    from slidewise.spark.keying import Keying
    from slidewise.spark.layout import WIRE_DDL, Layout
    from slidewise.spark.processor import SequencerProcessor
    from slidewise.spark.runner import _spark_error
    from slidewise.spark.sequencer import SequencerLogic
    from slidewise.spark.session import default_partitions, get_session

    if strategy not in STRATEGIES:
        raise OptionError(f"unknown strategy {strategy!r}", hint=f"use one of {', '.join(STRATEGIES)}")
    if isinstance(plan, str):
        plan = load_any(plan, tables or {})
        if not isinstance(plan, Plan):
            from slidewise.cql.parser import parse_plan

            plan = parse_plan(plan.text)
    scans = plan.scans()
    names = list(dict.fromkeys(s.source for s in scans if not s.is_relation))
    table_names = list(dict.fromkeys(s.source for s in scans if s.is_relation))
    tables = dict(tables or {})
    if not names:
        raise PlanError("the query reads relations only; the Spark engine needs at least one stream",
                        hint="run it with --engine local")
    for name in names:
        if name not in sources:
            raise SourceError(f"no input given for stream {name!r}",
                              hint=f"pass --source {name}=PATH (FROM reads: {', '.join(names)})")
    for name in table_names:
        if name not in tables:
            raise SourceError(f"no input given for table {name!r}", hint=f"pass --table {name}=PATH")
    if not isinstance(lateness, int) or lateness < 0:
        raise OptionError(f"lateness must be a non-negative integer, got {lateness!r}")
    rejects = Rejects()
    table_rows, table_schemas = _read_tables({n: tables[n] for n in table_names}, lateness, ts_column, ts_unit,
                                             rejects)
    root = Path(tempfile.mkdtemp(prefix="slidewise-spark-plan-"))
    (root / "control").mkdir()
    try:
        infos, recipes = [], []
        for name in names:
            info, recipe = inspect_stream(name, name, sources[name], ts_column=ts_column, ts_unit=ts_unit,
                                          lateness=lateness, work_dir=root)
            infos.append(info)
            recipes.append(recipe)
        plan = _bind(plan, {**table_schemas, **{n: list(i.kinds) for n, i in zip(names, infos)}})
        if rewrite:
            from slidewise.plan.rewrite import choose_plan

            chosen, _ = choose_plan(plan, strategy=strategy, partitions=partitions)
            if chosen.root.schema == plan.root.schema:
                plan = chosen
        attr, why = partition_attribute(plan)
        warnings = []
        if attr is None:
            keying = Keying("single", 1)
            warnings.append(f"{why}: the plan runs in one key bucket (one task)")
        else:
            kinds = {i.kinds[attr] for i in infos}
            kind = "str" if kinds == {"str"} else "float" if "float" in kinds else "int"
            p = buckets or (int(spark.conf.get("spark.sql.shuffle.partitions")) if spark is not None
                            else default_partitions())
            keying = Keying("hash", p, keys=(attr,) * len(names), key_kind=kind)
        layout = Layout(tuple(infos))
        logic = PlanBucket(plan, names, [list(i.kinds) for i in infos], [lateness] * len(names),
                           strategy=strategy, partitions=partitions, options=options, tables=table_rows)
        _check_tables(logic.new_state().runner, table_rows)  # operator and table errors now, not in a task
        started = time.perf_counter()
        session = spark if spark is not None else get_session(master, conf)
        frames = [stream_frame(session, i, info, recipes[i], layout, ts_column, max_files_per_trigger)
                  for i, info in enumerate(infos)]
        frames.append(control_frame(session, str(root / "control"), layout))
        union = functools.reduce(lambda a, b: a.union(b), frames)
        sequenced = union.groupBy("s").transformWithStateInPandas(
            statefulProcessor=SequencerProcessor(SequencerLogic(layout, keying)),
            outputStructType=WIRE_DDL, outputMode="Append", timeMode="None")
        output = sequenced.groupBy("b").transformWithStateInPandas(
            statefulProcessor=PlanProcessor(logic), outputStructType=OUT_DDL, outputMode="Append",
            timeMode="None")
        sink = _PlanSink(logic.columns, names, out=out, collect=(out is None) if collect is None else collect,
                         rejects=rejects)
        query = (output.writeStream.foreachBatch(sink).option("checkpointLocation", str(root / "query")).start())
        try:
            query.processAllAvailable()
            marker = root / "control" / f"eof-{uuid.uuid4().hex}.json"
            tmp = marker.with_name("." + marker.name)
            tmp.write_text(json.dumps({"eof": 1}) + "\n")
            tmp.rename(marker)
            query.processAllAvailable()
        except Exception as e:
            raise _spark_error(e, None) from None
        finally:
            query.stop()
            if sink.sink is not None:
                sink.sink.close()
        seconds = time.perf_counter() - started
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if rejects_path:
        sink.rejects.write(rejects_path)
    stats = {
        "query": plan.text or plan.root.label(),
        "engine": "spark",
        "mode": "stream",
        "strategy": strategy,
        "partitions": int(partitions),
        **run_counts({**{n: len(table_rows[n][0]) for n in table_names},   # relations once, not per bucket
                      **{n: int(sink.inputs.get(n, 0)) for n in names}}, int(sink.results), int(sink.retractions),
                     sink.rejects, seconds),
        "state_tuples_peak": int(sum(s for s, _ in sink.state.values())),  # sum of per-bucket peaks
        "state_bytes_slidewise": int(sum(b for _, b in sink.state.values())),
        "negative_tuples": int(sink.negatives),
        "instants": int(sink.instants),
        "keying": f"hash of {attr} mod {keying.buckets} buckets" if attr else "one bucket (single task)",
        "buckets": keying.buckets,
        "warnings": warnings,
    }
    return RunResult(sink.frame() if sink.collect else None, stats, sink.rejects)


def _read_tables(tables: dict[str, object], lateness: int, ts_column: str, ts_unit: str, rejects: Rejects,
                 chunk_rows: int = 65536) -> tuple[dict, dict]:
    """Each relation's admitted update rows ``name -> (ts, cols)`` in ``(ts, file order)``, and its schema.

    The local engine's reading: :func:`slidewise.runtime.plans._open_table`
    and :func:`~slidewise.runtime.reorder.merge_all` (late and bad rows go to
    ``rejects``), the same ``op`` column check as
    :func:`~slidewise.runtime.plans.execute_plan`.
    """
    import numpy as np

    from slidewise.runtime.plans import _open_table
    from slidewise.runtime.reorder import merge_all

    if not tables:
        return {}, {}
    names = list(tables)
    opened = [_open_table(n, tables[n], ts_column, ts_unit, chunk_rows) for n in names]
    for name, src in zip(names, opened):
        if "op" in src.schema and src.schema["op"] != np.dtype(object):
            raise SourceError(f"table {name}: column op must hold '+' or '-'", hint="'+' inserts, '-' deletes")
    parts: dict[str, list] = {n: [] for n in names}
    for chunk in merge_all(opened, lateness, rejects, chunk_rows):
        for i, b in enumerate(chunk):
            if len(b):
                parts[names[i]].append(b)
    rows = {}
    for name, src in zip(names, opened):
        got = parts[name]
        if got:
            rows[name] = (np.concatenate([b.ts for b in got]),
                          {c: np.concatenate([b.cols[c] for b in got]) for c in got[0].cols})
        else:
            rows[name] = (np.empty(0, np.int64), {c: np.empty(0, dt) for c, dt in src.schema.items()})
    return rows, {n: list(src.schema) for n, src in zip(names, opened)}


def _check_tables(runner, tables: dict) -> None:
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
