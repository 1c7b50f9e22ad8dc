"""Running a query on Spark: start, wait, end of input, restart, stats.

:func:`run_spark` is the engine behind ``slidewise run --engine spark`` and
the Python API; :func:`start_spark` returns a :class:`SparkRun` handle for
callers that keep the query running (tests, services).

Checkpoints. ``checkpoint=DIR`` holds Spark's checkpoint (``DIR/query``: source
offsets, committed batches, the RocksDB state of both stateful stages), the
control directory and ``DIR/slidewise.json`` (query text, sources, buckets).
Running the same command again continues where the last committed
micro-batch ended — files already processed are not read again, a batch
interrupted half-way is replayed with the same files and the state of the
batch before it, and its output directory is rewritten: no result is lost or
duplicated (file sinks). A checkpoint of another query is refused. Without
``checkpoint`` a temporary one is used and removed.

Triggers. ``once=True`` (available-now) processes the files present at the
start, then ends the input: every bucket flushes its buffer and pending lazy
evaluations (Spark's own append-mode operators never emit the last windows;
slidewise does), then the query stops. On a first start over file sources the
end comes with the last micro-batch of the files present (:func:`plan_end`:
markers in the control directory, one per micro-batch); otherwise the runner
writes an end-of-input marker when those files are processed and waits for its
micro-batch. It uses
one streaming query (``processAllAvailable`` twice) rather than two
``Trigger.AvailableNow`` runs: every query start costs Spark one driver-side
Python process per stateful operator. Rows arriving after an end of input
are behind what was released and become rejects. Without ``once`` the query
runs micro-batches every ``trigger`` until interrupted (Ctrl-C stops it
cleanly; a later run with the same checkpoint continues) or ``timeout``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import shutil
import signal
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from slidewise.cql.parser import load_join
from slidewise.errors import CheckpointError, OptionError, SlidewiseError
from slidewise.kafka.uri import is_kafka
from slidewise.model.time import parse_duration
from slidewise.options import RunOptions
from slidewise.plan.query import JoinQuery
from slidewise.plan.wjoin import WJoinQuery
from slidewise.runtime.join_engine import RunResult, run_counts
from slidewise.spark.join import ChangelogJoin, JoinPlan, build_stream, checked_lateness, plan_join
from slidewise.spark.session import check_master, default_partitions, get_session
from slidewise.spark.sinks import FILE_KINDS, BatchSink, FileOutputs, refuse_other_parts, sink_kind
from slidewise.spark.state_codec import run_key

#: ``--conf`` keys that are slidewise options, not Spark settings
#: the join pipeline's shape, stored in its checkpoints (one stateful stage; earlier ones had two)
JOIN_SETTINGS = {"stages": 1, "file_sources": "by directory parent"}
#: the value of a setting in checkpoints written before it was stored
_UNSTORED = {"stages": 2, "file_sources": "one per stream"}
OPTION_KEYS = {"slidewise.buckets": "buckets", "slidewise.maxFilesPerTrigger": "max_files_per_trigger"}


def run_spark(query: str | JoinQuery | WJoinQuery, sources: dict[str, object], **options) -> RunResult:
    """Run ``query`` on Spark to the end of its inputs (``once``) or until interrupted.

    Options as :func:`start_spark`; ``timeout`` (seconds) bounds a run without ``once``.
    """
    timeout = options.pop("timeout", None)
    return drive(start_spark(query, sources, **options), timeout)


def drive(run: SparkRun, timeout: float | None = None) -> RunResult:
    """Wait for a started run (``once``: to the end of input; else ``timeout`` or Ctrl-C), stop it, its result."""
    try:
        run.wait(timeout)
    except KeyboardInterrupt:
        run.interrupted = True
    finally:
        run.stop()
    return run.result()


def start_spark(
    query: str | JoinQuery | WJoinQuery,
    sources: dict[str, object],
    *,
    run_options: RunOptions | None = None,
    master: str | None = None,
    conf: dict[str, str] | None = None,
    trigger: str | None = None,
    once: bool | None = None,
    checkpoint: str | None = None,
    algorithm: str | None = None,
    order=None,
    spark=None,
    buckets: int | None = None,
    max_files_per_trigger: int | None = None,
    ui: bool = False,
    archive: dict | None = None,
    **operator_options,
) -> SparkRun:
    """Plan ``query``, start its Spark streaming query and return the running :class:`SparkRun`.

    ``out``: result directory (``.parquet`` / ``.csv`` / ``.jsonl``), ``"-"``,
    ``"console"``, a callable or ``None`` (collect in memory); it and the other
    :class:`~slidewise.options.RunOptions` come in ``run_options`` or as keywords. ``once``:
    available-now (default: when every source is a file or in-memory data).
    ``trigger``: micro-batch interval (``"2s"``). ``conf``: Spark settings;
    ``slidewise.buckets`` / ``slidewise.maxFilesPerTrigger`` there set
    ``buckets`` / ``max_files_per_trigger``. ``spark``: an existing session.
    ``archive``: the ``archive*`` options of :func:`slidewise.run`; the results also go to
    that archive, each micro-batch exactly once (:meth:`~slidewise.archive.sink.ArchiveWriter.write_batch`).
    """
    given, operator_options = RunOptions.split(run_options, operator_options)
    out, collect, rejects, progress = given.out, given.collect, given.rejects, given.progress
    lateness, ts_column, ts_unit, chunk_rows = given.lateness, given.ts_column, given.ts_unit, given.chunk_rows
    q = query if isinstance(query, (JoinQuery, WJoinQuery)) else load_join(query)
    text = identity(q)
    given.check_streams(sources)
    for extra in ("overload", "adaptive"):
        if operator_options.get(extra):
            raise OptionError(f"{extra} is not available on the Spark engine", hint="use --engine local")
        operator_options.pop(extra, None)
    spark_given = {"conf": conf, "buckets": buckets, "max_files_per_trigger": max_files_per_trigger, "trigger": trigger, "once": once, "master": master}
    streams = q.join.streams if isinstance(q, WJoinQuery) else q.streams
    opts = start_options([sources.get(s.source) for s in streams], out=out, lateness=lateness, **spark_given)
    writer = archive_writer(archive)
    root, temp = open_checkpoint(checkpoint)
    files = FileOutputs(root, out, rejects)  # --out x.csv / --rejects r.csv: parts in the checkpoint, one file at the end
    out, rejects = files.out_parts, files.rejects_parts
    try:
        with removed_on_error(root, temp):
            # inputs, schemas and the plan first: user errors need no JVM
            meta = _checkpoint_meta(root, text, sources, opts.buckets or _partitions(spark, opts.conf), write=False, settings=JOIN_SETTINGS)
            outputs = refuse_other_parts(root, {"--out": out if opts.kind in FILE_KINDS else None, "--rejects": rejects})
            jp = plan_join(
                q,
                sources,
                buckets=meta["buckets"],
                ts_column=ts_column,
                ts_unit=ts_unit,
                lateness=opts.lateness,
                algorithm=algorithm,
                order=order,
                options=operator_options,
                work_dir=root,
                streams=given,
            )
    except ChangelogJoin as general:  # a changelog: the general plan path, as the local engine runs it
        from slidewise.spark.plan_runner import start_plan_spark

        spark_given.pop("master")
        return start_plan_spark(
            general.plan, sources, run_options=given, master=master, spark=spark, ui=ui, archive=archive, checkpoint=checkpoint, rewrite=True, **spark_given
        )
    with removed_on_error(root, temp):
        for warning in jp.warnings:
            logging.getLogger(__name__).warning(warning)
        key = run_key(persistent=not temp)
        if opts.once:
            from slidewise.spark.kafka_source import bound

            bound(jp.recipes)
        session, session_seconds = timed_session(spark, master, opts.conf, ui)
        _checkpoint_meta(root, text, sources, meta["buckets"], write=True, settings=JOIN_SETTINGS, outputs=outputs)
        frame = build_stream(session, jp, control_dir=str(root / "control"), ts_column=ts_column, chunk_rows=chunk_rows, max_files=opts.max_files, key=key)
        sink = BatchSink(
            jp.layout,
            out=out,
            collect=bool(collect) if collect is not None else opts.kind == "memory",
            rejects_dir=rejects,
            progress=progress,
            run_id=f"{meta['query']}@{root.resolve()}" if not temp else uuid.uuid4().hex,
            archive=writer,
        )
        if opts.kind in FILE_KINDS:
            Path(out).mkdir(parents=True, exist_ok=True)
        run = SparkRun(session, jp, frame, sink, root=root, temp=temp, once=opts.once, interval=opts.interval, session_seconds=session_seconds, files=files)
        run.planned_end = plan_end(root, jp.recipes, opts.max_files, once=opts.once)
        run.start()
    return run


def identity(q: JoinQuery | WJoinQuery) -> str:
    """A query's identity in a checkpoint: its text (a W-join's with its constraints), or a description."""
    if isinstance(q, WJoinQuery):
        return f"{identity(q.join)} WINDOW {q.describe()}"
    return q.text or q.describe()


def archive_writer(options: dict | None):
    """The :class:`~slidewise.archive.sink.ArchiveWriter` of a run's ``archive*`` options (None without ``archive``)."""
    if not options or options.get("archive") is None:
        return None
    from slidewise.archive.sink import ArchiveWriter

    return ArchiveWriter.from_options(options)


@dataclass(frozen=True)
class StartOptions:
    """The start-up options of a Spark run (join or general plan), checked before any JVM starts."""

    conf: dict
    buckets: int | None
    max_files: int | None
    kind: str  # the sink kind (:func:`slidewise.spark.sinks.sink_kind`)
    interval: float | None  # micro-batch interval in seconds (live runs)
    once: bool
    lateness: int


def start_options(specs: list, *, out, conf, buckets, max_files_per_trigger, trigger, once, lateness, master) -> StartOptions:
    """Check and resolve the options :func:`start_spark` and ``start_plan_spark`` share (``specs``: the
    source specs of the streams read, for the ``once`` default)."""
    conf, buckets, max_files = spark_options(conf, buckets, max_files_per_trigger)
    lat = checked_lateness(lateness)
    if master is not None:
        check_master(master)
    return StartOptions(conf, buckets, max_files, sink_kind(out), _trigger_seconds(trigger), once_default(once, specs), lat)


def plan_end(root: Path, recipes: list[dict], max_files: int | None, *, once: bool) -> bool:
    """``once`` over file sources, first start: the last micro-batch of the files present now also
    ends the input (:func:`slidewise.spark.dataframe.end_after`), no micro-batch of its own. A
    continued run cancels such a planned end (files may have been added since) and ends its input itself."""
    from slidewise.spark.dataframe import cancel_planned_end, end_after
    from slidewise.spark.files import data_batches

    if (root / "query").exists():  # a continued run: its batches so far are not known here
        cancel_planned_end(root / "control")
        return False
    batches = data_batches(recipes, max_files) if once else None
    if not batches:
        return False
    end_after(root / "control", batches)
    return True


def timed_session(spark, master: str | None, conf: dict, ui: bool):
    """``spark`` or a new session from ``master`` and ``conf``, and the seconds it took to get."""
    started = time.perf_counter()
    session = spark if spark is not None else get_session(master, conf, ui=ui)
    return session, time.perf_counter() - started


def spark_options(conf: dict | None, buckets: int | None, max_files: int | None) -> tuple[dict, int | None, int | None]:
    """``conf`` without the slidewise keys of :data:`OPTION_KEYS`, and ``buckets`` / ``max_files`` they set."""
    conf = dict(conf or {})
    for key, name in OPTION_KEYS.items():
        if key in conf:
            value = conf.pop(key)
            if not str(value).isdigit() or int(value) < 1:
                raise OptionError(f"--conf {key}={value}: expected a positive integer")
            if name == "buckets":
                buckets = buckets or int(value)
            else:
                max_files = max_files or int(value)
    if buckets is not None and (not isinstance(buckets, int) or buckets < 1):
        raise OptionError(f"buckets must be a positive integer, got {buckets!r}")
    return conf, buckets, max_files


def once_default(once: bool | None, specs: list) -> bool:
    """``once`` as given, else available-now unless a source may grow (a directory or the rate source);
    refuses ``once`` with the rate source."""
    if once is None:
        once = all(not _is_live(spec) for spec in specs)
    if once and any(isinstance(spec, str) and spec.startswith("rate:") for spec in specs):
        raise OptionError("the rate source never ends, so it cannot run with --once", hint="drop --once and stop the query with Ctrl-C (or a timeout)")
    return bool(once)


def open_checkpoint(checkpoint: str | Path | None) -> tuple[Path, bool]:
    """The run's root directory (``checkpoint``, or a temporary one) with its control directory; ``temp``."""
    temp = checkpoint is None
    root = Path(tempfile.mkdtemp(prefix="slidewise-spark-")) if temp else Path(checkpoint)
    try:
        root.mkdir(parents=True, exist_ok=True)
        (root / "control").mkdir(exist_ok=True)
    except OSError as e:
        if temp:
            shutil.rmtree(root, ignore_errors=True)
        raise OptionError(f"cannot create the checkpoint directory: {e.strerror or e}", location=str(root), hint="choose a writable --checkpoint DIR") from None
    return root, temp


@contextlib.contextmanager
def removed_on_error(root: Path, temp: bool):
    """Remove a temporary run directory if starting the run fails."""
    try:
        yield
    except BaseException:
        if temp:
            shutil.rmtree(root, ignore_errors=True)
        raise


def _read_meta(path: Path) -> dict:
    """``slidewise.json`` of a checkpoint; a CheckpointError if it is damaged."""
    from slidewise.spark.failures import RESTORE

    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(meta, dict) or not isinstance(meta.get("buckets"), int) or meta["buckets"] < 1:
            raise ValueError("no query and key buckets in it")
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise CheckpointError(f"the checkpoint is damaged: its {path.name} cannot be read ({e})", location=f"checkpoint {path.parent}", hint=RESTORE) from None
    return meta


def _partitions(spark, conf: dict) -> int:
    """Key buckets by default: the shuffle partitions of ``conf``, of the session, or the cores."""
    if "spark.sql.shuffle.partitions" in conf:
        return int(conf["spark.sql.shuffle.partitions"])
    if spark is None:
        from pyspark.sql import SparkSession

        spark = SparkSession.getActiveSession()
    if spark is not None:
        return int(spark.conf.get("spark.sql.shuffle.partitions", str(default_partitions())))
    return default_partitions()


class SparkRun:
    """A running slidewise query on Spark (one or two streaming queries over one checkpoint)."""

    def __init__(
        self,
        spark,
        jp: JoinPlan,
        frame,
        sink: BatchSink,
        *,
        root: Path,
        temp: bool,
        once: bool,
        interval: float | None,
        session_seconds: float,
        files: FileOutputs | None = None,
    ):
        self.spark, self.jp, self.frame, self.sink, self.files = spark, jp, frame, sink, files
        self.layout = jp.layout if jp is not None else None
        self.root, self.temp, self.once, self.interval = root, temp, once, interval
        self.session_seconds = session_seconds
        self.query = None
        self.progress: list = []
        self.interrupted = False
        self._pressed = None
        self.ended = False
        self.planned_end = False  # the input ends in the last data micro-batch (:func:`plan_end`)
        self.started = time.perf_counter()
        self.seconds = None

    def start(self) -> None:
        """Start (or restart) the streaming query on the checkpoint."""
        writer = self.frame.writeStream.foreachBatch(self.sink).queryName(f"slidewise-{uuid.uuid4().hex[:8]}").option("checkpointLocation", str(self.root / "query"))
        if self.interval:
            writer = writer.trigger(processingTime=f"{self.interval} seconds")
        try:
            self.query = writer.start()
        except Exception as e:
            raise self.failure(e) from None

    def wait(self, timeout: float | None = None) -> None:
        """``once``: every file present now, then end of input; else until ``timeout`` or Ctrl-C.

        Ctrl-C stops the query between py4j calls (it never interrupts one:
        PySpark's own SIGINT handling would leave the gateway in a bad state)
        and sets :attr:`interrupted`.
        """
        with _ctrl_c() as pressed:
            self._pressed = pressed
            try:
                if self.once:
                    if self.process_all_available():
                        if self.planned_end:
                            self.ended = True
                        else:
                            self.end_input()
                    return
                deadline = None if timeout is None else time.monotonic() + timeout
                self._until(lambda: self.query.awaitTermination(0.25), deadline)
            finally:
                self._pressed = None

    def end_input(self) -> None:
        """End of input: write the marker; every bucket flushes its buffer and pending evaluations."""
        from slidewise.spark.dataframe import end_input

        end_input(self.root / "control")
        if self.process_all_available():
            self.ended = True

    def process_all_available(self) -> bool:
        """Block until every file present now has been processed; False if interrupted."""
        done = threading.Event()
        box: dict = {}

        def body() -> None:
            try:
                self.query.processAllAvailable()
            except Exception as e:  # noqa: BLE001 - reported below unless we stopped the query
                box["error"] = e
            finally:
                done.set()

        threading.Thread(target=body, name="slidewise-processAllAvailable", daemon=True).start()
        self._until(lambda: done.wait(0.25), None)
        if "error" in box and not self.interrupted:
            self._keep_progress()
            raise self.failure(box["error"]) from None
        return not self.interrupted

    def failure(self, e: BaseException):
        """The SlidewiseError of a failed query (:func:`slidewise.spark.failures.spark_error`)."""
        from slidewise.spark.failures import spark_error

        return spark_error(e, checkpoint=None if self.temp else self.root, streams=self.layout.streams if self.layout is not None else ())

    def _until(self, finished, deadline: float | None) -> None:
        """Poll ``finished()`` (each call blocks at most ~0.25 s) until true, the deadline or Ctrl-C."""
        pressed = getattr(self, "_pressed", None)
        while True:
            try:
                if finished():
                    break
            except Exception as e:
                self._keep_progress()
                raise self.failure(e) from None
            if pressed is not None and pressed.is_set():
                self.interrupted = True
                self.stop()
                break
            if deadline is not None and time.monotonic() >= deadline:
                break
        self._keep_progress()

    def stop(self, grace: float = 30.0) -> None:
        """Stop the streaming query (committed batches stay committed).

        Waits up to ``grace`` seconds for a running micro-batch to finish, so a
        stop does not cancel its sink half-way (a cancelled batch is replayed
        on restart; waiting just avoids the noise).
        """
        if self.query is not None:
            self._keep_progress()
            deadline = time.monotonic() + grace
            try:
                while self.query.isActive and self.query.status.get("isTriggerActive") and time.monotonic() < deadline:
                    time.sleep(0.1)
            except Exception:  # a failed query has no status to wait for
                pass
            try:
                self.query.stop()
            except Exception:  # stopping a failed query
                pass
        self.seconds = time.perf_counter() - self.started

    def _keep_progress(self) -> None:
        """Remember Spark's progress reports (they are dropped when a query restarts)."""
        if self.query is None:
            return
        try:
            known = {(x.get("runId"), x.get("batchId")) for x in self.progress}
            for p in self.query.recentProgress:
                d = json.loads(p.json)
                if (d.get("runId"), d.get("batchId")) not in known:
                    self.progress.append(d)
                    known.add((d.get("runId"), d.get("batchId")))
        except Exception:  # progress is informative only
            pass

    def result(self) -> RunResult:
        """Results (if collected), stats and rejects of the run so far."""
        self.stop()
        self.sink.close()
        if self.files is not None:
            self.files.assemble(list(getattr(self.sink, "names", None) or self.sink.columns))
        stats = self.stats()
        if self.sink.archive is not None:  # its last update, at the latest result time
            stats["archive"] = self.sink.archive.close()
        frame = self.sink.frame() if self.sink.collect else None
        if self.temp:
            shutil.rmtree(self.root, ignore_errors=True)
        return RunResult(frame, stats, self.sink.rejects)

    def stats(self) -> dict:
        """The run's stats: the local engine's keys where they overlap, plus Spark's."""
        jp, sink, q = self.jp, self.sink, self.jp.query
        seconds = self.seconds if self.seconds is not None else time.perf_counter() - self.started
        inputs = {ref.alias: int(sink.inputs.get(ref.alias, 0)) for ref in q.streams}
        state_rows = state_bytes = 0
        for p in reversed(self.progress):
            ops = p.get("stateOperators") or []
            if ops:
                state_rows = sum(int(o.get("numRowsTotal", 0)) for o in ops)
                state_bytes = sum(int(o.get("memoryUsedBytes", 0)) for o in ops)
                break
        return {
            "query": q.text or q.describe(),
            "engine": "spark",
            "mode": "stream",
            **jp.head(),
            **run_counts(inputs, sink.results, sink.retractions, sink.rejects, seconds),
            "comparisons": sink.comparisons,
            "state_tuples_peak": sink.state_tuples_peak,
            "chunks": len(sink.batches),
            "state_rows": state_rows,
            "state_bytes": state_bytes,
            "state_bytes_slidewise": sum(sink.bucket_bytes.values()),
            "keying": jp.keying.describe(),
            "buckets": jp.keying.buckets,
            "warnings": list(jp.warnings),
            **self.spark_stats(),
        }

    def spark_stats(self) -> dict:
        """The Spark side of the stats: master, session start-up, checkpoint, how the run ended."""
        return {
            "micro_batches": len(self.sink.batches),
            "spark_master": self.spark.sparkContext.master,
            "session_seconds": round(self.session_seconds, 3),
            "checkpoint": None if self.temp else str(self.root),
            "input_ended": self.ended,
            "interrupted": self.interrupted,
        }


# --------------------------------------------------------------------------- helpers


@contextlib.contextmanager
def _ctrl_c():
    """While active, SIGINT (Ctrl-C) sets the yielded event instead of raising KeyboardInterrupt."""
    pressed = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield pressed
        return
    previous = signal.signal(signal.SIGINT, lambda *_: pressed.set())
    try:
        yield pressed
    finally:
        signal.signal(signal.SIGINT, previous)


def _is_live(spec) -> bool:
    """A source that may grow: a directory, a Kafka topic or the rate source."""
    if is_kafka(spec) or (isinstance(spec, str) and spec.startswith("rate:")):
        return True
    return isinstance(spec, (str, Path)) and Path(spec).is_dir()


def _trigger_seconds(trigger) -> float | None:
    if trigger is None:
        return None
    try:
        ms = parse_duration(str(trigger), what="trigger interval")
    except SlidewiseError:
        raise OptionError(f"bad trigger interval {trigger!r}", hint="write e.g. --trigger 2s or 500ms") from None
    if not re.search(r"[a-zA-Z]", str(trigger)):
        ms *= 1000  # a bare number means seconds here
    return ms / 1000.0


def _checkpoint_meta(root: Path, text: str, sources: dict, buckets: int, *, write: bool, settings: dict | None = None, outputs: dict | None = None) -> dict:
    """The checkpoint's slidewise metadata (written on first use); refuses another query's checkpoint.

    ``text``: the query's identity (its CQL text, or a description of a query built in Python).
    ``settings``: options the checkpointed state depends on (a general plan's ``strategy``, ...),
    stored with it; a run with other values is refused. The key buckets are stored too: a
    continued run keeps them whatever its ``--conf`` says (the state is keyed by bucket).
    ``outputs``: the part directories the run writes (:func:`slidewise.spark.sinks.refuse_other_parts`).
    """
    path = root / "slidewise.json"
    settings = dict(settings or {})
    if path.exists():
        meta = _read_meta(path)
        if meta.get("query") != text:
            raise OptionError("this checkpoint belongs to another query", location=str(root), hint="use a new --checkpoint DIR for a new query")
        for key, value in settings.items():
            if key == "stages" and meta.get(key, _UNSTORED[key]) != value:
                raise OptionError(
                    f"this checkpoint was written by a slidewise with {meta.get(key, _UNSTORED[key])} stateful stages per micro-batch, not {value}",
                    location=str(root),
                    hint="use a new --checkpoint DIR (its state cannot be carried over)",
                )
            if key == "file_sources" and meta.get(key, _UNSTORED[key]) != value:
                raise OptionError(
                    f"this checkpoint was written by a slidewise that reads file sources {meta.get(key, _UNSTORED[key])}, not {value}",
                    location=str(root),
                    hint="use a new --checkpoint DIR (its source offsets cannot be carried over)",
                )
            if key in meta and meta[key] != value:
                raise OptionError(
                    f"this checkpoint was written with {key} {meta[key]}, not {value}",
                    location=str(root),
                    hint=f"rerun with the same {key}, or use a new --checkpoint DIR",
                )
        return meta
    if (root / "query").exists():
        raise OptionError("this directory holds a checkpoint slidewise did not write", location=str(root), hint="use a new --checkpoint DIR")
    meta = {
        "query": text,
        "sources": {k: str(v) for k, v in sources.items() if isinstance(v, (str, Path))},
        "buckets": int(buckets),
        **settings,
        "outputs": dict(outputs or {}),
        "version": 1,
    }
    if write:
        path.write_text(json.dumps(meta, indent=2) + "\n")
    return meta
