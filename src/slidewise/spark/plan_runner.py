"""General plans (Golab's thesis ch. 3) on Spark Structured Streaming: ``run_plan_spark``.

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
:mod:`slidewise.spark.join_runner`); the bucket stage hosts
:class:`~slidewise.spark.plan_state.PlanBucket`. Buckets are a hash of the
plan's partitioning attribute (:func:`~slidewise.spark.plan_state.partition_attribute`)
or one bucket with a warning. Results are unpacked on the driver and go where
the join engine on Spark puts them (:class:`_PlanSink`: collected, or a
directory of per-micro-batch parts, replaced on replay).

Runs are the join runner's (:class:`~slidewise.spark.join_runner.SparkRun`, as
:class:`PlanRun`): ``once`` (available-now, the default for file inputs: the
files present, then the end-of-input marker, then stop) or live (directories:
micro-batches every ``trigger`` until Ctrl-C or ``timeout``); ``checkpoint``
keeps Spark's checkpoint, the control directory and ``slidewise.json`` (query,
key buckets, strategy, partitions: another query's checkpoint, or other
values, are refused).

End of input and continued runs — as the join runner: an end of input (the
end of an available-now run) is final for what it covers. Every bucket
releases its buffer and runs every instant up to the global last input
timestamp (the next slide multiple for periodic plans; the last relation
update if later), so the run's answer is complete, as the local engine's.
Rerunning the same command on the checkpoint with new files continues: the
sources read only the new files, the buckets restore their operator state
and emit the results of the new input only, so the union of the runs equals
one run over all inputs. A new tuple at or before the end of an earlier run
cannot join instants already closed: it becomes a reject (``late: at or
before ts T, where an earlier run's input ended``), never silently dropped.
A live run stopped by Ctrl-C or a timeout has not ended its input: its
buffered tuples and pending instants wait in the state for the next run.

A FREQUENT query runs :class:`~slidewise.spark.frequent.FrequentBucket` in
one bucket (the local engine's :class:`~slidewise.runtime.frequent.FrequentRun`).

Relations (``--table``, NRR or retroactive ``TABLE``) are small: the driver
reads them with the local engine's reader and merger
(:func:`slidewise.runtime.plan_engine.open_table`, :func:`~slidewise.runtime.reorder.merge_all`:
same rows, same rejects), checks them through the relations' own operators
(bad ``op``, reused NRR key: the local :class:`~slidewise.errors.SourceError`
before Spark starts) and ships their update rows inside the bucket logic, so
every bucket holds every relation (:class:`~slidewise.spark.plan_state.PlanBucket`).
Only stream tuples are partitioned; a plan whose output rows can come from
relations alone runs in one bucket.
"""

from __future__ import annotations

import functools
import logging
import os
import pickle
import shutil
import time
import uuid
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
from pyspark.sql.streaming import StatefulProcessor

from slidewise.errors import OptionError, PlanError
from slidewise.options import DEFAULT_CHUNK_ROWS, RunOptions
from slidewise.plan.logical import Plan
from slidewise.runtime.join_engine import RunResult, run_counts
from slidewise.runtime.rejects import Rejects
from slidewise.spark.join_runner import SparkRun
from slidewise.spark.plan_state import ADMITTED, OUT_DDL, REJECTS, RESULT, STATE_DDL, STATS, PlanBucket, partition_attribute
from slidewise.spark.sinks import FILE_KINDS, FileOutputs, collected, print_console, refuse_other_parts, write_batch_rejects

__all__ = ["PlanProcessor", "PlanRun", "run_plan_spark", "start_plan_spark"]


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


#: options of :func:`slidewise.run` / ``slidewise run`` that a general plan on Spark does not take, with the
#: hint of their error (the join engine's options; the overload options exist in the local engine only)
REFUSED = {
    "algorithm": "choose the processing strategy with --strategy nt|direct|upa",
    "order": "choose the processing strategy with --strategy nt|direct|upa",
    "stats": "the stream statistics steer join planning only",
    "search": "the join-order search applies to join queries only",
    "negatives": "general plans emit retractions (sign -1) as their output operator says",
    "overload": "load shedding runs on the local engine's join queries only",
    "adaptive": "adaptive re-ordering runs on the local engine's join queries only",
    "chunk_rows": "on Spark, micro-batch sizes come from --conf slidewise.maxFilesPerTrigger=N",
}


#: keyword options of :func:`run_plan_spark` that :func:`slidewise.run` passes through on Spark
SPARK_OPTIONS = ("master", "conf", "spark", "trigger", "once", "checkpoint", "buckets", "max_files_per_trigger", "ui", "timeout")


def refuse_options(given: dict) -> None:
    """An OptionError naming the first option of :data:`REFUSED` that ``given`` sets (not None / False;
    ``chunk_rows`` other than :data:`DEFAULT_CHUNK_ROWS`), or ``mode="batch"``."""
    if given.get("chunk_rows") == DEFAULT_CHUNK_ROWS:
        given = {**given, "chunk_rows": None}
    if given.get("mode") not in (None, "stream"):
        raise OptionError(
            f"--mode {given['mode']} runs join queries only; general queries run as a stream", hint="drop --mode batch (--once processes the recorded files and stops)"
        )
    for name, hint in REFUSED.items():
        if given.get(name) not in (None, False):
            flag = {"negatives": "--negative-tuples", "overload": "--cpu-budget/--memory-budget"}.get(name, "--" + name.replace("_", "-"))
            raise OptionError(f"option {flag} ({name}) does not apply to this general query on the Spark engine", hint=hint)


class _PlanSink:
    """``foreachBatch`` target: unpacks results, rejects and stats on the driver.

    Results go where the Spark join engine's :class:`~slidewise.spark.sinks.BatchSink` puts them:
    a directory (``.parquet`` / ``.csv`` / ``.jsonl``) with one ``batch-NNNNNN/part-00000.EXT`` per
    micro-batch (replaced when Spark replays the batch, so with a checkpoint exactly once; read it with
    :func:`slidewise.spark.read_results`), ``"-"`` (CSV on stdout), ``"console"``, a callable, or
    memory (``collect``). Rejects go to ``rejects_dir/batch-NNNNNN.csv``.
    """

    def __init__(
        self,
        columns: list[str],
        sources: list[str],
        *,
        out=None,
        collect: bool = True,
        rejects: Rejects | None = None,
        rejects_dir: str | None = None,
        progress: bool = False,
        run_id: str = "",
    ):
        from slidewise.runtime.sinks import open_sink
        from slidewise.spark.sinks import sink_kind

        self.columns, self.sources = columns, sources
        self.out, self.kind = out, sink_kind(out)
        self.sink = open_sink(out, columns) if self.kind in ("stdout", "callable") else None
        self.collect = collect
        self.rejects_dir, self.progress = rejects_dir, progress
        self.frames: list[pd.DataFrame] = []
        self.rejects = rejects if rejects is not None else Rejects()
        self.inputs: Counter = Counter()
        self.results = self.retractions = self.negatives = self.instants = 0
        self.state: dict[int, tuple[int, int]] = {}
        self.seen: set[int] = set()
        self.batches: list[int] = []
        self.run_id, self._topic = run_id, None  # a kafka:// out: message keys, writer
        if self.kind in FILE_KINDS:
            Path(out).mkdir(parents=True, exist_ok=True)

    def __call__(self, df, batch_id: int) -> None:
        from slidewise.spark.bucket import reject_kind
        from slidewise.spark.layout import unpack

        if batch_id in self.seen:  # a replayed batch within this run
            return
        results, rejected, admitted = [], Rejects(), 0
        for r in df.collect():
            k = r["k"]
            if k == RESULT:
                results.append(unpack(r["p"]))
                self.retractions += r["n0"]
                self.results += r["q"] - r["n0"]
            elif k == REJECTS:
                rej = pd.DataFrame(unpack(r["p"]))
                rej["kind"] = rej["reason"].map({x: reject_kind(x) for x in set(rej["reason"])})
                for (f, kind), part in rej.groupby(["file", "kind"], sort=False, dropna=False):
                    args = (self.sources[r["s"]], f, part["line"].to_numpy(np.int64), part["reason"].tolist(), part["raw"].tolist())
                    for target in (self.rejects, rejected):
                        target.add_many(*args, kind=kind)
            elif k == ADMITTED:
                self.inputs[self.sources[r["s"]]] += r["q"]
                admitted += r["q"]
            elif k == STATS:
                peak, _ = self.state.get(r["s"], (0, 0))
                self.state[r["s"]] = (max(peak, r["n0"]), r["n1"])
                self.negatives += r["n2"]
                self.instants += r["n3"]
        self._write(results, batch_id)
        write_batch_rejects(self.rejects_dir, batch_id, rejected)
        self.seen.add(batch_id)
        self.batches.append(batch_id)
        if self.progress:
            logging.getLogger(__name__).info(
                "batch %d: %s tuples in, %s output rows, %s rejects, state %s tuples",
                batch_id,
                f"{admitted:,}",
                f"{sum(len(c['ts']) for c in results):,}",
                f"{len(rejected):,}",
                f"{sum(s for s, _ in self.state.values()):,}",
            )

    def _write(self, results: list[dict], batch_id: int) -> None:
        from slidewise.runtime.sinks import open_sink

        if self.collect:
            self.frames += [pd.DataFrame(cols) for cols in results]
        if self.kind in FILE_KINDS:
            # idempotent per batch id: a replayed batch leaves exactly its own output
            target = Path(self.out) / f"batch-{batch_id:06d}"
            shutil.rmtree(target, ignore_errors=True)
            if not results:
                return
            tmp = Path(self.out) / f".batch-{batch_id:06d}.tmp"
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir()
            sink = open_sink(tmp / f"part-00000{_EXT[self.kind]}", self.columns)
            for cols in results:
                sink.write(cols)
            sink.close()
            os.replace(tmp, target)
        elif self.sink is not None:
            for cols in results:
                self.sink.write(cols)
        elif self.kind == "kafka" and results:
            from slidewise.spark.kafka_source import BatchWriter

            if self._topic is None:
                self._topic = BatchWriter(self.out, self.run_id)
            frame = pd.concat([pd.DataFrame(c) for c in results], ignore_index=True)
            self._topic.write(frame[[c for c in self.columns if c in frame.columns]], batch_id)
        elif self.kind == "console" and results:
            print_console(pd.concat([pd.DataFrame(c) for c in results], ignore_index=True), batch_id, "output rows")

    def close(self) -> None:
        if self.sink is not None:
            self.sink.close()
            self.sink = None
        if self._topic is not None:
            self._topic.close()
            self._topic = None

    def frame(self) -> pd.DataFrame:
        return collected(self.frames, self.columns)


_EXT = {"parquet": ".parquet", "csv": ".csv", "json": ".jsonl"}


class PlanRun(SparkRun):
    """A running general plan on Spark: the join runner's :class:`~slidewise.spark.join_runner.SparkRun`
    (start, once / live, end of input, Ctrl-C, stop) with the plan's stats."""

    def __init__(self, spark, frame, sink: _PlanSink, *, info: dict, layout=None, **kwargs):
        super().__init__(spark, None, frame, sink, **kwargs)
        self.info, self.layout = info, layout

    def stats(self) -> dict:
        sink, info = self.sink, self.info
        seconds = self.seconds if self.seconds is not None else time.perf_counter() - self.started
        inputs = {**info["table_inputs"], **{n: int(sink.inputs.get(n, 0)) for n in info["streams"]}}
        return {
            **info["head"],
            **run_counts(inputs, int(sink.results), int(sink.retractions), sink.rejects, seconds),
            "state_tuples_peak": int(sum(s for s, _ in sink.state.values())),  # sum of per-bucket peaks
            "state_bytes_slidewise": int(sum(b for _, b in sink.state.values())),
            "negative_tuples": int(sink.negatives),
            "instants": int(sink.instants),
            **info["tail"],
            **self.spark_stats(),
        }


def run_plan_spark(plan: str | Plan, sources: dict[str, object], tables: dict | None = None, *, timeout: float | None = None, **options) -> RunResult:
    """Run a general plan on Spark to the end of its inputs (``once``) or until ``timeout`` / Ctrl-C.

    Options as :func:`start_plan_spark`. With ``once`` the results equal
    :func:`slidewise.runtime.plan_engine.execute_plan` with the same arguments (the
    multiset of ``(ts, vals, sign)``).
    """
    from slidewise.spark.join_runner import drive

    return drive(start_plan_spark(plan, sources, tables, **options), timeout)


def start_plan_spark(
    plan: str | Plan,
    sources: dict[str, object],
    tables: dict | None = None,
    *,
    run_options: RunOptions | None = None,
    master: str | None = None,
    conf: dict | None = None,
    spark=None,
    buckets: int | None = None,
    options: dict | None = None,
    rewrite: bool = False,
    max_files_per_trigger: int | None = None,
    trigger: str | None = None,
    once: bool | None = None,
    checkpoint: str | None = None,
    ui: bool = False,
    **settings,
) -> PlanRun:
    """Start a general plan's Spark streaming query; the running :class:`PlanRun`.

    ``run_options`` (:class:`~slidewise.options.RunOptions`), or its fields as keyword
    ``settings``, as the local executor's; ``chunk_rows`` is not used here.

    The Spark options are the join runner's (:func:`slidewise.spark.join_runner.start_spark`):
    ``once`` (available-now: the files present, then end of input; default when every
    source is a file), ``trigger`` (micro-batch interval of a live run), ``checkpoint``
    (rerunning continues: see the module doc), ``buckets`` (key buckets; also
    ``--conf slidewise.buckets=N``), ``max_files_per_trigger``, ``master``, ``conf``,
    ``spark``. ``out`` as the join runner's (a directory of per-batch parts, ``"-"``,
    ``"console"``, a callable, or None: collected); ``rejects``:
    a directory of per-batch reject CSVs. ``strategy``, ``partitions``, ``options``,
    ``rewrite``: the plan executor's (:func:`slidewise.runtime.plan_engine.execute_plan`).
    """
    from slidewise.cql.parser import load_any
    from slidewise.plan.bind import bind
    from slidewise.plan.prune import prune_columns
    from slidewise.runtime.frequent import bind_frequent
    from slidewise.runtime.plan_engine import open_table, plan_inputs
    from slidewise.spark.frequent import FrequentBucket
    from slidewise.spark.ingest import control_frame, inspect_stream, stream_frame
    from slidewise.spark.join import checked_lateness
    from slidewise.spark.join_runner import _checkpoint_meta, _partitions, open_checkpoint, removed_on_error, start_options, timed_session
    from slidewise.spark.keying import Keying
    from slidewise.spark.layout import WIRE_DDL, Layout
    from slidewise.spark.panes import PaneBucket, pane_bucket
    from slidewise.spark.processor import SequencerProcessor
    from slidewise.spark.sequencer import SequencerLogic
    from slidewise.spark.state_codec import run_key

    given = RunOptions.of(run_options, **settings)
    strategy, partitions, out = given.strategy, given.partitions, given.out
    ts_column, ts_unit = given.ts_column, given.ts_unit
    if isinstance(plan, (str, os.PathLike)):
        plan = load_any(plan, tables or {})
        if not isinstance(plan, Plan):
            from slidewise.cql.parser import parse_plan

            plan = parse_plan(plan.text)
    from slidewise.plan.frequent import FrequentQuery

    frequent = isinstance(plan, FrequentQuery)
    identity = plan.text or plan.root.label()
    tables = dict(tables or {})
    if all(s.is_relation for s in plan.scans()):
        raise PlanError("the query reads relations only; the Spark engine needs at least one stream", hint="run it with --engine local")
    names, table_names = plan_inputs(plan, sources, tables)
    given.check_streams(sources)
    spark_given = {"conf": conf, "buckets": buckets, "max_files_per_trigger": max_files_per_trigger, "trigger": trigger, "once": once, "master": master}
    opts = start_options([sources.get(n) for n in names], out=out, lateness=given.lateness, **spark_given)
    lateness = opts.lateness
    rejects_dir = given.rejects
    rejected = Rejects()
    opened_tables = {n: open_table(n, tables[n], ts_column, ts_unit, given.chunk_rows) for n in table_names}  # schemas only
    settings = {"strategy": strategy, "partitions": int(partitions)}
    root, temp = open_checkpoint(checkpoint)
    files = FileOutputs(root, out, rejects_dir)  # --out x.csv / --rejects r.csv: parts in the checkpoint, one file at the end
    out, rejects_dir = files.out_parts, files.rejects_parts
    with removed_on_error(root, temp):
        meta = _checkpoint_meta(root, identity, sources, opts.buckets or _partitions(spark, opts.conf), write=False, settings=settings)
        outputs = refuse_other_parts(root, {"--out": out if opts.kind in FILE_KINDS else None, "--rejects": rejects_dir})
        infos, recipes = [], []
        for name in names:
            own = given.for_stream(name)
            info, recipe = inspect_stream(name, name, sources[name], ts_column=own.ts_column, ts_unit=own.ts_unit, lateness=checked_lateness(own.lateness), work_dir=root)
            infos.append(info)
            recipes.append(recipe)
        if opts.once:
            from slidewise.spark.kafka_source import bound

            bound(recipes)
        if frequent:  # global over one stream (slidewise.spark.frequent): one bucket
            plan = bind_frequent(plan, dict(infos[0].kinds))
        else:
            plan = bind(plan, {**{n: dict(t.kinds) for n, t in opened_tables.items()}, **{n: dict(i.kinds) for n, i in zip(names, infos)}})
        table_rows, _ = _read_tables(opened_tables, lateness, ts_column, ts_unit, rejected)  # once the plan binds
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
            kinds = {i.kinds[attr] for i in infos}
            key_kind = "str" if kinds == {"str"} else "float" if "float" in kinds else "int"
            keying = Keying("hash", int(meta["buckets"]), keys=(attr,) * len(names), key_kind=key_kind)
        layout = Layout(tuple(infos))
        key = run_key(persistent=not temp)
        logic: PaneBucket | PlanBucket | FrequentBucket | None
        if frequent:
            logic = FrequentBucket(plan, dict(infos[0].kinds), infos[0].lateness, key=key)
        else:
            logic = pane_bucket(plan, names, [dict(i.kinds) for i in infos], infos[0].lateness, tables=table_rows, key=key)
        if logic is None:  # not a periodic one-stream GROUP BY (slidewise.spark.panes): the operator network
            logic = PlanBucket(
                plan,
                names,
                [list(i.kinds) for i in infos],
                [i.lateness for i in infos],
                strategy=strategy,
                partitions=partitions,
                options=options,
                tables=table_rows,
                key=key,
            )
            _check_tables(logic.new_state().runner, table_rows)  # operator and table errors now, not in a task
        session, session_seconds = timed_session(spark, master, opts.conf, ui)
        _checkpoint_meta(root, identity, sources, meta["buckets"], write=True, settings=settings, outputs=outputs)
        frames = [stream_frame(session, i, info, recipes[i], layout, ts_column, opts.max_files) for i, info in enumerate(infos)]
        frames.append(control_frame(session, str(root / "control"), layout))
        union = functools.reduce(lambda a, b: a.union(b), frames)
        sequenced = union.groupBy("s").transformWithStateInPandas(
            statefulProcessor=SequencerProcessor(SequencerLogic(layout, keying)), outputStructType=WIRE_DDL, outputMode="Append", timeMode="None"
        )
        output = sequenced.groupBy("b").transformWithStateInPandas(statefulProcessor=PlanProcessor(logic), outputStructType=OUT_DDL, outputMode="Append", timeMode="None")
        sink = _PlanSink(
            logic.columns,
            names,
            out=out,
            collect=bool(given.collect) if given.collect is not None else opts.kind == "memory",
            rejects=rejected,
            rejects_dir=rejects_dir,
            progress=given.progress,
            run_id=f"{identity}@{root.resolve()}" if not temp else uuid.uuid4().hex,
        )
        if len(rejected) and rejects_dir:  # the relations' rejects, read on the driver
            Path(rejects_dir).mkdir(parents=True, exist_ok=True)
            rejected.write(Path(rejects_dir) / "relations.csv")
        info = {
            "head": {
                "query": plan.text or plan.root.label(),
                "engine": "spark",
                "mode": "stream",
                "strategy": strategy,
                "partitions": int(partitions),
                **({"path": logic.spec.describe()} if not isinstance(logic, PlanBucket) else {}),
            },
            "tail": {"keying": f"hash of {attr} mod {keying.buckets} buckets" if attr else "one bucket (single task)", "buckets": keying.buckets, "warnings": warnings},
            "streams": names,
            "table_inputs": {n: len(table_rows[n][0]) for n in table_names},  # relations once, not per bucket
        }
        run = PlanRun(
            session, output, sink, info=info, layout=layout, root=root, temp=temp, once=opts.once, interval=opts.interval, session_seconds=session_seconds, files=files
        )
        run.start()
    return run


def _read_tables(tables: dict[str, object], lateness: int, ts_column: str, ts_unit: str, rejects: Rejects, chunk_rows: int = DEFAULT_CHUNK_ROWS) -> tuple[dict, dict]:
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
