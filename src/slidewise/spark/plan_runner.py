"""General plans (Golab's thesis ch. 3) on Spark Structured Streaming: ``run_plan_spark``.

The pipeline is :mod:`slidewise.spark.plan_stream`'s (planned by
:func:`~slidewise.spark.plan_stream.plan_general`, built by
:func:`~slidewise.spark.plan_stream.build_plan_stream`, as for
:func:`slidewise.spark.query`): sources, sequencer and end-of-input marker
are the join engine's, the bucket stage hosts the pane path, FREQUENT, or
:class:`~slidewise.spark.plan_state.PlanBucket`. Buckets are a hash of the
plan's partitioning attribute (:func:`~slidewise.spark.plan_state.partition_attribute`)
or one bucket with a warning. Here results are unpacked on the driver
(``foreachBatch``) and go where the join engine on Spark puts them
(:class:`_PlanSink`: collected, or a directory of per-micro-batch parts,
replaced on replay).

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

import logging
import os
import shutil
import time
import uuid
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from slidewise.errors import OptionError
from slidewise.options import DEFAULT_CHUNK_ROWS, RunOptions
from slidewise.plan.logical import Plan
from slidewise.runtime.join_engine import RunResult, run_counts
from slidewise.runtime.rejects import Rejects
from slidewise.spark.join_runner import SparkRun
from slidewise.spark.plan_state import ADMITTED, PART, REJECTS, RESULT, STATS, PlanBucket
from slidewise.spark.sinks import FILE_KINDS, PART_EXT, FileOutputs, collected, print_console, refuse_other_parts, write_batch_rejects

__all__ = ["PlanRun", "run_plan_spark", "start_plan_spark"]


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
SPARK_OPTIONS = ("master", "conf", "spark", "trigger", "once", "checkpoint", "buckets", "max_files_per_trigger", "ui", "timeout", "archive")


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
        archive=None,
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
        self.archive = archive  # an ArchiveWriter the results also go to, exactly once per batch
        self.staged: Path | None = None  # where the buckets write result parts (written_by_buckets)
        if self.kind in FILE_KINDS:
            Path(out).mkdir(parents=True, exist_ok=True)

    def __call__(self, df, batch_id: int) -> None:
        if batch_id in self.seen:  # a replayed batch within this run
            return
        self.take(df.collect(), batch_id)

    def take(self, rows: list, batch_id: int) -> None:
        """The collected output rows of micro-batch ``batch_id``."""
        from slidewise.spark.bucket import reject_kind
        from slidewise.spark.layout import unpack

        results, parts, rejected, admitted = [], [], Rejects(), 0
        for r in rows:
            k = r["k"]
            if k in (RESULT, PART):
                if k == RESULT:
                    results.append(unpack(r["p"]))
                else:
                    parts.append(bytes(r["p"]).decode())
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
        self._write(results, batch_id, parts)
        write_batch_rejects(self.rejects_dir, batch_id, rejected)
        self.seen.add(batch_id)
        self.batches.append(batch_id)
        if self.progress:
            logging.getLogger(__name__).info(
                "batch %d: %s tuples in, %s output rows, %s rejects, state %s tuples",
                batch_id,
                f"{admitted:,}",
                f"{sum(len(c['ts']) for c in results) + sum(r['q'] for r in rows if r['k'] == PART):,}",
                f"{len(rejected):,}",
                f"{sum(s for s, _ in self.state.values()):,}",
            )

    def _write(self, results: list[dict], batch_id: int, parts: list[str] = ()) -> None:
        """The batch's results: packed ``results`` and the files ``parts`` the buckets wrote (file sinks only)."""
        from slidewise.runtime.sinks import open_sink

        if self.collect:
            self.frames += [pd.DataFrame(cols) for cols in results]
        if self.archive is not None and results:
            self.archive.write_batch(pd.concat([pd.DataFrame(c) for c in results], ignore_index=True), batch_id, self.run_id)
        if self.kind in FILE_KINDS:
            # idempotent per batch id: a replayed batch leaves exactly its own output
            target = Path(self.out) / f"batch-{batch_id:06d}"
            shutil.rmtree(target, ignore_errors=True)
            if not results and not parts:
                return
            tmp = Path(self.out) / f".batch-{batch_id:06d}.tmp"
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir()
            for j, part in enumerate(parts):  # the buckets' files of this attempt, moved in
                os.replace(part, tmp / f"part-{j:05d}{PART_EXT[self.kind]}")
            if results:
                sink = open_sink(tmp / f"part-{len(parts):05d}{PART_EXT[self.kind]}", self.columns)
                for cols in results:
                    sink.write(cols)
                sink.close()
            os.replace(tmp, target)
        elif self.sink is not None:
            for cols in results:
                self.sink.write(cols)
        elif self.kind == "kafka" and results:
            from slidewise.kafka.local import BatchWriter

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
        if self.staged is not None:  # what is left there belongs to no committed batch
            shutil.rmtree(self.staged, ignore_errors=True)

    def frame(self) -> pd.DataFrame:
        return collected(self.frames, self.columns)


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


def written_by_buckets(session, gp, out, kind: str) -> Path | None:
    """The staging directory where the pane path's buckets write their result parts themselves
    (:func:`~slidewise.spark.sinks.stage_part`; set on ``gp.logic``), or None: only for a result
    directory (``kind`` of :data:`~slidewise.spark.sinks.FILE_KINDS`) and a local master, whose
    Python workers see the driver's file system."""
    from slidewise.spark.panes import PaneBucket
    from slidewise.spark.sinks import staging

    if not isinstance(gp.logic, PaneBucket) or kind not in FILE_KINDS or not session.sparkContext.master.startswith("local"):
        return None
    where = staging(out, kind)
    gp.logic.parts = str(where)
    return where


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
    archive: dict | None = None,
    group=None,
    member_outs: list | None = None,
    member_collect: bool = False,
    identity: str | None = None,
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
    ``archive``: the ``archive*`` options of :func:`slidewise.run` (results also into an archive,
    exactly once per micro-batch).
    ``group``: a sharing group (:class:`~slidewise.optimizer.sharing.Group`) whose first query is ``plan``,
    run as one query with one pane state (:mod:`slidewise.spark.many`); its queries' rows go to
    ``member_outs`` (collected with ``member_collect``); ``identity``: what the checkpoint is for.
    """
    from slidewise.runtime.plan_engine import open_table, plan_inputs
    from slidewise.spark.join_runner import _checkpoint_meta, _partitions, archive_writer, open_checkpoint, removed_on_error, start_options, timed_session
    from slidewise.spark.plan_stream import build_plan_stream, load_plan, plan_general, stateful_stages
    from slidewise.spark.state_codec import run_key

    given = RunOptions.of(run_options, **settings)
    strategy, partitions, out = given.strategy, given.partitions, given.out
    ts_column, ts_unit = given.ts_column, given.ts_unit
    plan = load_plan(plan, tables or {})
    identity = identity or plan.text or plan.root.label()
    tables = dict(tables or {})
    names, table_names = plan_inputs(plan, sources, tables)
    given.check_streams(sources)
    spark_given = {"conf": conf, "buckets": buckets, "max_files_per_trigger": max_files_per_trigger, "trigger": trigger, "once": once, "master": master}
    opts = start_options([sources.get(n) for n in names], out=out, lateness=given.lateness, **spark_given)
    rejects_dir = given.rejects
    rejected = Rejects()
    writer = archive_writer(archive)
    opened_tables = {n: open_table(n, tables[n], ts_column, ts_unit, given.chunk_rows) for n in table_names}  # schemas only
    settings = {"strategy": strategy, "partitions": int(partitions)}
    root, temp = open_checkpoint(checkpoint)
    files = FileOutputs(root, out, rejects_dir)  # --out x.csv / --rejects r.csv: parts in the checkpoint, one file at the end
    out, rejects_dir = files.out_parts, files.rejects_parts
    with removed_on_error(root, temp):
        meta = _checkpoint_meta(root, identity, sources, opts.buckets or _partitions(spark, opts.conf), write=False, settings=settings)
        outputs = refuse_other_parts(root, {"--out": out if opts.kind in FILE_KINDS else None, "--rejects": rejects_dir})
        gp = plan_general(
            plan,
            sources,
            names,
            opened_tables,
            ts_column=ts_column,
            ts_unit=ts_unit,
            lateness=opts.lateness,
            buckets=int(meta["buckets"]),
            key=run_key(persistent=not temp),
            rejected=rejected,
            work_dir=root,
            strategy=strategy,
            partitions=partitions,
            options=options,
            rewrite=rewrite,
            streams=given,
        )
        if group is not None:  # one pane state for the group's queries
            from slidewise.spark.many import shared_logic

            shared_logic(group, gp)
        if opts.once:
            from slidewise.spark.kafka_source import bound

            bound(gp.recipes)
        settings["stages"] = stateful_stages(gp)  # a checkpoint of the other shape is refused (its state cannot be read)
        _checkpoint_meta(root, identity, sources, meta["buckets"], write=False, settings=settings)
        session, session_seconds = timed_session(spark, master, opts.conf, ui)
        _checkpoint_meta(root, identity, sources, meta["buckets"], write=True, settings=settings, outputs=outputs)
        staged = written_by_buckets(session, gp, out, opts.kind) if group is None and writer is None else None
        output = build_plan_stream(session, gp, control_dir=str(root / "control"), ts_column=ts_column, max_files=opts.max_files)
        logic, attr, keying = gp.logic, gp.attr, gp.keying
        sink = _PlanSink(
            gp.columns,
            names,
            out=out,
            collect=bool(given.collect) if given.collect is not None else opts.kind == "memory",
            rejects=rejected,
            rejects_dir=rejects_dir,
            progress=given.progress,
            run_id=f"{identity}@{root.resolve()}" if not temp else uuid.uuid4().hex,
            archive=writer,
        )
        sink.staged = staged
        if group is not None:
            from slidewise.spark.many import shared_parts

            main = {"rejects": rejected, "rejects_dir": rejects_dir, "progress": given.progress}
            sink, files = shared_parts(group, gp, root, member_outs or [], files, collect=member_collect, run_id=sink.run_id, **main)  # type: ignore[assignment]
        if len(rejected) and rejects_dir:  # the relations' rejects, read on the driver
            Path(rejects_dir).mkdir(parents=True, exist_ok=True)
            rejected.write(Path(rejects_dir) / "relations.csv")
        info = {
            "head": {
                "query": gp.plan.text or gp.plan.root.label(),
                "engine": "spark",
                "mode": "stream",
                "strategy": strategy,
                "partitions": int(partitions),
                **({"path": logic.spec.describe()} if not isinstance(logic, PlanBucket) else {}),
            },
            "tail": {
                "keying": f"hash of {attr} mod {keying.buckets} buckets" if attr else "one bucket (single task)",
                "buckets": keying.buckets,
                "warnings": gp.warnings,
            },
            "streams": names,
            "table_inputs": {n: len(gp.table_rows[n][0]) for n in table_names},  # relations once, not per bucket
            "logic": gp.logic,
        }
        run = PlanRun(
            session, output, sink, info=info, layout=gp.layout, root=root, temp=temp, once=opts.once, interval=opts.interval, session_seconds=session_seconds, files=files
        )
        run.start()
    return run
