"""Where the Spark join's micro-batches go: result sinks, the rejects sink and run counters.

:class:`BatchSink` is the ``foreachBatch`` target. Each micro-batch's output
(results, rejects, per-bucket stats) is cached once, its small part (rejects
and stats) collected to the driver, and the results written to:

* a file ``PATH`` ending ``.parquet``, ``.csv`` or ``.jsonl`` / ``.json`` (not an
  existing directory, not written with a trailing ``/``) — as on the local engine:
  the micro-batches are written as parts under the checkpoint
  (:class:`FileOutputs`) and assembled into the file, whole, when the run ends;
  a rerun on the same checkpoint rewrites it with every run's results;
* a directory ``PATH/`` (or an existing directory; no extension: Parquet) — Spark's writer, one sub-directory
  ``batch-NNNNNN`` per micro-batch, overwritten when Spark replays that batch
  after a crash (and removed when the replay has no results): with the
  checkpoint this is exactly-once (a batch's output is a deterministic
  function of its input files and the restored state);
* ``"memory"`` / ``None`` — collected as pandas frames in the driver when
  ``collect`` (for the Python API and tests; cannot resume: a restart begins a
  new collection), else only counted;
* ``"console"`` — each batch's first rows printed; ``"-"`` — CSV on stdout;
* a Python callable — called with a pandas DataFrame per batch;
* ``kafka://HOST:PORT/topic`` — JSON messages keyed by run, batch id and content, written once
  when a batch is replayed (:mod:`slidewise.spark.kafka_source`);
* and also an archive (``archive``: :meth:`slidewise.archive.sink.ArchiveWriter.write_batch`, which
  records the run and batch id in the archive's manifest with the batch's update and skips a replay).

Rejects go to ``rejects_dir/batch-NNNNNN.csv`` (columns
``stream,file,line,reason,row``, written atomically, replaced on replay) and
are counted by reason kind like the local engine's; ``--rejects r.csv`` is one
file assembled from those parts at the end, as ``--out``.
"""

from __future__ import annotations

import json
import logging
import shutil
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from slidewise.errors import OptionError
from slidewise.kafka.uri import KafkaURI, is_kafka
from slidewise.runtime.rejects import Rejects
from slidewise.spark.dataframe import result_columns
from slidewise.spark.layout import ADMITTED, REJECT, RESULT, STATS, Layout

FILE_FORMATS = {".parquet": "parquet", ".csv": "csv", ".jsonl": "json", ".json": "json", ".ndjson": "json"}
#: sink kinds that write a directory of ``batch-*`` parts
FILE_KINDS = tuple(dict.fromkeys(FILE_FORMATS.values()))


def file_target(path) -> bool:
    """Whether ``--out`` / ``--rejects`` asks for one file: a path with a result extension that is no
    existing directory and is not written with a trailing ``/``."""
    if not isinstance(path, (str, Path)) or str(path) in ("-", "console", "memory") or is_kafka(str(path)):
        return False
    text = str(path)
    return Path(text).suffix.lower() in FILE_FORMATS and not text.endswith(("/", "\\")) and not Path(text).is_dir()


class FileOutputs:
    """The file forms of ``--out`` and ``--rejects`` on Spark: parts under the run's checkpoint ``root``,
    assembled into the files by :meth:`assemble` when the run ends (see the module doc)."""

    def __init__(self, root: Path, out, rejects):
        self.out = str(out) if file_target(out) else None
        self.rejects = str(rejects) if file_target(rejects) else None
        #: where the micro-batches go: the parts directories for the file forms, else the targets as given
        self.out_parts = str(root / f"out-parts{Path(str(out)).suffix.lower()}") if self.out else out
        self.rejects_parts = str(root / "rejects-parts") if self.rejects else rejects

    def assemble(self, columns: list[str]) -> None:
        """Write the files from every part so far (batch order), each whole or not at all."""
        from slidewise.runtime.outputs import write_atomic

        if self.out:
            parts = sorted(p for p in Path(self.out_parts).glob("batch-*/part-*") if not p.name.endswith(".crc"))
            write_atomic(self.out, _joined(parts, FILE_FORMATS[Path(self.out).suffix.lower()], columns), "--out")
        if self.rejects:
            where = Path(self.rejects_parts)
            parts = [p for p in [where / "relations.csv"] if p.is_file()] + sorted(where.glob("batch-*.csv"))
            write_atomic(self.rejects, _joined(parts, "csv", None) if parts else _empty_rejects(), "--rejects")


def _joined(parts: list[Path], fmt: str, columns: list[str] | None) -> bytes:
    """The bytes of one file holding ``parts`` in order (one CSV header; Parquet tables concatenated)."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    if not parts:
        import tempfile

        from slidewise.runtime.sinks import open_sink

        with tempfile.TemporaryDirectory() as tmp:  # the local engine's empty file: a CSV header, an empty table
            target = Path(tmp) / f"empty.{ {'json': 'jsonl'}.get(fmt, fmt) }"
            open_sink(target, columns).close()
            return target.read_bytes()
    if fmt == "parquet":
        buffer = io.BytesIO()
        pq.write_table(pa.concat_tables([pq.read_table(p) for p in parts], promote_options="default"), buffer)
        return buffer.getvalue()
    chunks = [p.read_bytes() for p in parts]
    if fmt == "csv":
        header = chunks[0].split(b"\n", 1)[0] + b"\n"
        chunks = chunks[:1] + [c[len(header) :] if c.startswith(header) else c for c in chunks[1:]]
    return b"".join(c if c.endswith(b"\n") or not c else c + b"\n" for c in chunks)


def _empty_rejects() -> bytes:
    from slidewise.runtime.sinks import csv_bytes

    return csv_bytes(Rejects().table())


def sink_kind(out) -> str:
    """``memory``, ``console``, ``stdout``, ``callable`` or a file format."""
    if out is None or out == "memory":
        return "memory"
    if callable(out):
        return "callable"
    if out == "-":
        return "stdout"
    if out == "console":
        return "console"
    if is_kafka(out):
        KafkaURI.parse(out)
        return "kafka"
    if not isinstance(out, (str, Path)):
        raise OptionError(f"cannot write results to {type(out).__name__}", hint="give a directory path (.parquet, .csv, .jsonl), '-', 'console' or a callable")
    path = Path(out)
    if path.exists() and not path.is_dir() and not file_target(out):
        raise OptionError("the Spark engine writes a directory of part files, and this is a file", location=str(path), hint="choose a new path, e.g. results.parquet")
    return FILE_FORMATS.get(path.suffix.lower(), "parquet")


class BatchSink:
    """``foreachBatch`` target: writes results and rejects, accumulates the run's counters."""

    def __init__(self, layout: Layout, *, out=None, collect: bool = False, rejects_dir: str | None = None, progress: bool = False, run_id: str = "", archive=None):
        self.layout = layout
        self.names = list(layout.out_names)
        self.out = out
        self.kind = sink_kind(out)
        self.collect = collect  # memory sink without collect: results are only counted
        self.rejects_dir = rejects_dir
        self.progress = progress
        self.frames: list[pd.DataFrame] = []
        self.rejects = Rejects()
        self.inputs: Counter = Counter()
        self.results = self.retractions = self.comparisons = 0
        self.batches: list[int] = []
        self.bucket_tuples: dict[int, int] = {}
        self.bucket_bytes: dict[int, int] = {}
        self.state_tuples_peak = 0
        #: ``(batch id, wall time the batch's output was written, results)`` per micro-batch
        self.timeline: list[tuple[int, float, int]] = []
        self._header = True
        self.run_id = run_id  # the identity of a Kafka sink's message keys (same across restarts)
        self._topic = None
        #: an :class:`~slidewise.archive.sink.ArchiveWriter` the results also go to (exactly once per batch)
        self.archive = archive

    def __call__(self, df, batch_id: int) -> None:
        from pyspark.sql import functions as F

        written = self.collect or self.kind != "memory" or self.archive is not None
        if written:  # read twice (counters, then results): computed once
            df = df.persist()
        try:
            small = df.filter(F.col("k") != RESULT).toPandas()
            n_results = self._count(small, batch_id)
            if n_results and written:
                self._write(result_columns(df, self.layout), batch_id)
            elif self.kind in FILE_KINDS:
                # idempotent per batch id: a replayed batch leaves exactly its own output
                shutil.rmtree(Path(self.out) / f"batch-{batch_id:06d}", ignore_errors=True)
        finally:
            if written:
                df.unpersist()
        self.timeline.append((batch_id, time.time(), n_results))

    def _count(self, small: pd.DataFrame, batch_id: int) -> int:
        kind = small["k"].to_numpy()
        stats = small[kind == STATS]
        for b, t, nb in zip(stats["rl"].astype(np.int64), stats["n0"].astype(np.int64), stats["n1"].astype(np.int64)):
            self.bucket_tuples[int(b)] = int(t)
            self.bucket_bytes[int(b)] = int(nb)
        self.state_tuples_peak = max(self.state_tuples_peak, sum(self.bucket_tuples.values()))
        n_results = int(stats["n4"].sum()) if len(stats) else 0
        retractions = int(stats["n3"].sum()) if len(stats) else 0
        self.results += n_results - retractions
        self.retractions += retractions
        self.comparisons += int(stats["n2"].sum()) if len(stats) else 0
        admitted = small[kind == ADMITTED]
        for alias, n in zip(admitted["rs"], admitted["n0"].astype(np.int64)):
            self.inputs[alias] += int(n)
        rej = small[kind == REJECT]
        if len(rej):
            batch = Rejects()
            for (stream, file, rk), part in rej.groupby(["rs", "rf", "rk"], sort=False, dropna=False):
                args = (stream, file, part["rl"].to_numpy(np.int64), part["rr"].tolist(), part["rw"].fillna("").tolist())
                batch.add_many(*args, kind=rk)
                self.rejects.add_many(*args, kind=rk)
            write_batch_rejects(self.rejects_dir, batch_id, batch)
        else:
            write_batch_rejects(self.rejects_dir, batch_id, None)
        if batch_id not in self.batches:
            self.batches.append(batch_id)
        if self.progress:
            logging.getLogger(__name__).info(
                "batch %d: %s tuples in, %s results, %s rejects, state %s tuples",
                batch_id,
                f"{sum(int(x) for x in admitted['n0']):,}",
                f"{n_results:,}",
                f"{len(rej):,}",
                f"{sum(self.bucket_tuples.values()):,}",
            )
        return n_results

    def _write(self, named, batch_id: int) -> None:
        frame = named.toPandas() if self.collect or self.archive is not None or self.kind not in FILE_KINDS else None
        if self.archive is not None:
            self.archive.write_batch(frame, batch_id, self.run_id)
        if self.collect:
            self.frames.append(frame)
        if self.kind in FILE_KINDS:
            target = f"{Path(self.out)}/batch-{batch_id:06d}"
            writer = named.coalesce(1).write.mode("overwrite").format(self.kind)
            if self.kind == "csv":
                writer = writer.option("header", True)
            writer.save(target)
        elif self.kind == "callable":
            self.out(frame)
        elif self.kind == "stdout":
            frame.to_csv(sys.stdout, index=False, header=self._header)
            self._header = False
        elif self.kind == "kafka":
            if self._topic is None:
                from slidewise.kafka.local import BatchWriter

                self._topic = BatchWriter(self.out, self.run_id)
            self._topic.write(frame, batch_id)
        elif self.kind == "console":
            print_console(frame, batch_id, "results")

    def close(self) -> None:
        """Every micro-batch's output is complete when written; a Kafka producer is closed."""
        if self._topic is not None:
            self._topic.close()
            self._topic = None

    def frame(self) -> pd.DataFrame:
        """All collected results, in output column order."""
        return collected(self.frames, self.names)


def print_console(frame: pd.DataFrame, batch_id: int, what: str) -> None:
    """A console sink's micro-batch: its row count on stderr, its first 20 rows on stdout."""
    print(f"-- batch {batch_id}: {len(frame):,} {what}", file=sys.stderr)
    print(frame.head(20).to_string(index=False))


def collected(frames: list[pd.DataFrame], columns: list[str]) -> pd.DataFrame:
    """The collected frames as one (empty, with ``columns``, when there are none)."""
    if frames:
        return pd.concat(frames, ignore_index=True)
    return pd.DataFrame({c: pd.Series(dtype="object") for c in columns})


def write_batch_rejects(rejects_dir: str | None, batch_id: int, rejects: Rejects | None) -> None:
    """``rejects_dir/batch-NNNNNN.csv`` holds exactly this micro-batch's rejects (none: no file),
    written atomically, so a replayed batch leaves its own rejects once."""
    if not rejects_dir:
        return
    target = Path(rejects_dir) / f"batch-{batch_id:06d}.csv"
    if rejects is None or not len(rejects):
        target.unlink(missing_ok=True)
        return
    rejects.write(target)


def refuse_other_parts(root: Path, dirs: dict[str, object]) -> dict[str, str]:
    """Refuse an output directory (``dirs``: option -> path or None) holding ``batch-*`` parts, unless this
    run continues the checkpoint that wrote them (``root/slidewise.json`` records the directories); a new
    run would add its parts to theirs. Returns the resolved directories, for the checkpoint metadata."""
    path = root / "slidewise.json"
    recorded = json.loads(path.read_text()).get("outputs", {}) if path.exists() else None
    resolved = {}
    for option, target in dirs.items():
        if not isinstance(target, (str, Path)):
            continue
        where = str(Path(target).resolve())
        resolved[option] = where
        if not Path(target).is_dir() or not any(Path(target).glob("batch-*")):
            continue
        if recorded is not None and recorded.get(option, where) == where:
            continue  # the same checkpoint's run, continued (older checkpoints record no directories)
        raise OptionError(
            f"the {option} directory holds batch-* parts of another run",
            location=str(target),
            hint="remove it, choose another directory, or pass the same --checkpoint as the run that wrote them (a new run would add its results to theirs)",
        )
    return resolved


#: the extension of a part file of each sink kind of :data:`FILE_KINDS`
PART_EXT = {"parquet": ".parquet", "csv": ".csv", "json": ".jsonl"}
#: where the bucket stage writes its result parts before the driver moves them into ``batch-NNNNNN``
STAGED = ".staged"


def stage_part(where: str, columns: list[str], cols: dict) -> str:
    """Write the result columns ``cols`` as one file under ``where`` (a directory's :data:`STAGED`
    directory, the extension its kind's) and return its path.

    The bucket stage writes its rows itself (no trip through Spark rows and the driver); the driver
    moves the files a micro-batch names into its ``batch-NNNNNN`` directory, so files of an attempt
    that did not commit are never read (``_PlanSink._write`` in :mod:`slidewise.spark.plan_runner`)."""
    import uuid

    from slidewise.runtime.sinks import open_sink

    path = Path(where) / f"{uuid.uuid4().hex}{Path(where).suffix}"
    sink = open_sink(path, columns)
    sink.write(cols)
    sink.close()
    return str(path)


def staging(out: str, kind: str) -> Path:
    """The staging directory of a result directory ``out`` of ``kind``, emptied (leftovers of an attempt
    that did not commit) and created."""
    where = Path(out).resolve() / f"{STAGED}{PART_EXT[kind]}"
    shutil.rmtree(where, ignore_errors=True)
    where.mkdir(parents=True)
    return where


def read_results(path: str | Path) -> pd.DataFrame:
    """All results written by a file sink (one file, or every ``batch-*`` part of a directory), as one DataFrame."""
    import pyarrow.dataset as ds

    path = Path(path)
    fmt = FILE_FORMATS.get(path.suffix.lower(), "parquet")
    parts = [path] if path.is_file() else sorted(p for p in path.glob("batch-*/part-*") if not p.name.endswith(".crc"))
    if not parts:
        return pd.DataFrame()
    if fmt == "parquet":
        return ds.dataset([str(p) for p in parts], format="parquet").to_table().to_pandas()
    if fmt == "csv":
        return pd.concat([pd.read_csv(p) for p in parts], ignore_index=True)
    return pd.concat([pd.read_json(p, lines=True) for p in parts], ignore_index=True)


def clear_dir(path: str | Path) -> None:
    """Remove a directory tree if it exists."""
    shutil.rmtree(path, ignore_errors=True)


__all__ = [
    "FILE_KINDS",
    "PART_EXT",
    "STAGED",
    "BatchSink",
    "FileOutputs",
    "clear_dir",
    "file_target",
    "read_results",
    "refuse_other_parts",
    "sink_kind",
    "stage_part",
    "staging",
]
