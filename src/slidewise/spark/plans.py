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
or a local file sink as the local engine's ``out``); streams only — relations
(``--table``) are not supported on Spark yet.
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

    def __init__(self, columns: list[str], sources: list[str], *, out=None, collect: bool = True):
        from slidewise.runtime.sinks import open_sink

        self.columns, self.sources = columns, sources
        self.sink = open_sink(out, columns) if out is not None else None
        self.collect = collect
        self.frames: list[pd.DataFrame] = []
        self.rejects = Rejects()
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
    if tables or any(s.is_relation for s in scans):
        raise PlanError("the Spark engine runs general queries over streams only so far; this one reads a table",
                        hint="run it with --engine local")
    names = list(dict.fromkeys(s.source for s in scans))
    for name in names:
        if name not in sources:
            raise SourceError(f"no input given for stream {name!r}",
                              hint=f"pass --source {name}=PATH (FROM reads: {', '.join(names)})")
    if not isinstance(lateness, int) or lateness < 0:
        raise OptionError(f"lateness must be a non-negative integer, got {lateness!r}")
    root = Path(tempfile.mkdtemp(prefix="slidewise-spark-plan-"))
    (root / "control").mkdir()
    try:
        infos, recipes = [], []
        for name in names:
            info, recipe = inspect_stream(name, name, sources[name], ts_column=ts_column, ts_unit=ts_unit,
                                          lateness=lateness, work_dir=root)
            infos.append(info)
            recipes.append(recipe)
        plan = _bind(plan, {n: list(i.kinds) for n, i in zip(names, infos)})
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
                           strategy=strategy, partitions=partitions, options=options)
        logic.new_state()  # operator errors now, not inside a Spark task
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
        sink = _PlanSink(logic.columns, names, out=out, collect=(out is None) if collect is None else collect)
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
        **run_counts({n: int(sink.inputs.get(n, 0)) for n in names}, int(sink.results), int(sink.retractions),
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
