"""The Spark-native API: a slidewise query over Spark DataFrames, as a DataFrame.

::

    out = slidewise.spark.query(spark, QUERY, {"dns": dns_df, "ssl": ssl_df}, lateness="2s")
    out.writeStream.queryName("joins").option("checkpointLocation", ckpt).format("parquet").start(path)

Streaming in, streaming out; batch in, batch out. The inputs are the user's
DataFrames (any source: Kafka, files, a table, a memory stream); each row's
timestamp (``ts_column``) and columns are converted by slidewise's own rules
(:func:`slidewise.spark.ingest.convert_table`: the local engine's kinds,
units and bad-row reasons), then run through the same stages as
``slidewise run --engine spark``: a join's (:func:`slidewise.spark.join.build_stream`),
a general query's (GROUP BY, DISTINCT, negation, sliding aggregates on the pane
path, FREQUENT: :func:`slidewise.spark.plan_stream.build_plan_stream`). The
result has the CLI's output columns, typed (a general query's packed result
chunks are unpacked by a ``mapInArrow`` step, :func:`slidewise.spark.plan_stream.plan_results`).

Input order within a micro-batch is (file, split, row within it) where Spark
reads files (as the CLI's file sources), else (Spark partition, row within it):
a micro-batch may hold several files (e.g. the files a killed run had already
listed, read with the next ones after a restart), and Spark's partitions do not
follow file order. Rows a
run rejects (late, bad timestamps) are not part of the result DataFrame:
:func:`query_frame` returns the whole output layout (results, rejects, counters;
:mod:`slidewise.spark.layout`, :data:`slidewise.spark.plan_state.OUT_DDL`), which the
CLI's runners write with ``foreachBatch``.

End of input. A batch input ends by itself: every window is flushed. A
streaming input ends never, except with ``control=DIR``: :func:`end_input`
writes a marker there, and the micro-batch that reads it flushes every window
(what ``--once`` does). Restarts: the state of a streaming run is in the user's
checkpoint, sealed with the state key of :func:`slidewise.spark.state_codec.state_key`
(a batch run's with a key of its own).
"""

from __future__ import annotations

import functools
import json
import os
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa

from slidewise.errors import OptionError, SourceError
from slidewise.spark.layout import RESULT, WIRE_DDL, Layout, StreamInfo, wire_batch


def is_frame(spec) -> bool:
    """A PySpark DataFrame (classic or Connect), without importing PySpark for other inputs."""
    return type(spec).__module__.startswith("pyspark.") and hasattr(spec, "isStreaming") and hasattr(spec, "schema")


def query(spark, query, inputs: dict, *, name: str | None = None, **options):
    """The results of ``query`` over the DataFrames ``inputs`` (source name as in FROM -> DataFrame).

    ``query``: a join, or a general query (GROUP BY, DISTINCT, NOT EXISTS, a sliding
    aggregate, FREQUENT: the CLI's Spark plan path). Columns as the CLI's output, typed. Options
    as :func:`query_frame`: ``lateness``: time units or a duration (``"2s"``); ``buckets``: key
    buckets (default: the session's shuffle partitions); ``control``: a directory for
    :func:`end_input` (streaming inputs); ``ts_column``, ``ts_unit``; joins: ``algorithm``,
    ``order``; general queries: ``strategy``, ``partitions``. ``name``: an alias of the plan
    (shown in Spark's query plans).
    """
    frame, layout = query_frame(spark, query, inputs, **options)
    out = result_columns(frame, layout)
    return out.alias(name) if name else out


def query_frame(
    spark,
    query,
    inputs: dict,
    *,
    lateness: int | str = 0,
    ts_column: str = "ts",
    ts_unit: str = "auto",
    buckets: int | None = None,
    control: str | None = None,
    **options,
):
    """``(frame, layout)``: the whole output over ``inputs`` (results, rejects, counters): a join's
    (layout: its :class:`~slidewise.spark.layout.Layout`) or a general query's (layout: its
    :class:`~slidewise.spark.plan_stream.GeneralPlan`, rows of
    :data:`~slidewise.spark.plan_state.OUT_DDL`)."""
    from slidewise.cql.parser import load_any
    from slidewise.plan.query import JoinQuery
    from slidewise.plan.wjoin import WJoinQuery

    q = load_any(query) if isinstance(query, (str, os.PathLike)) else query
    for alias, df in inputs.items():
        if not is_frame(df):
            raise OptionError(
                f"input {alias!r} is a {type(df).__name__}, not a Spark DataFrame",
                hint="pass spark.read... / spark.readStream... DataFrames (or use slidewise.run for files)",
            )
    streaming = {bool(df.isStreaming) for df in inputs.values()}
    if len(streaming) > 1:
        raise OptionError("the inputs mix streaming and batch DataFrames", hint="give all inputs as spark.readStream... or all as spark.read...")
    if buckets is None:
        buckets = int(spark.conf.get("spark.sql.shuffle.partitions", "2"))
    if control is not None and streaming == {True}:
        Path(control).mkdir(parents=True, exist_ok=True)
    given = {"lateness": lateness, "ts_column": ts_column, "ts_unit": ts_unit, "buckets": buckets, "streaming": streaming == {True}}
    control = None if control is None else str(control)
    if isinstance(q, (JoinQuery, WJoinQuery)):  # a W-join as on the CLI's Spark join path
        return _join_frame(spark, q, inputs, control, **given, **options)
    return _plan_frame(spark, q, inputs, control, **given, **options)


def _join_frame(spark, q, inputs: dict, control, *, lateness, ts_column, ts_unit, buckets, streaming, algorithm=None, order=None, **options):
    from slidewise.spark.join import ChangelogJoin, build_stream, plan_join
    from slidewise.spark.state_codec import run_key

    try:
        jp = plan_join(
            q,
            inputs,
            buckets=buckets,
            ts_column=ts_column,
            ts_unit=ts_unit,
            lateness=lateness,
            algorithm=algorithm,
            order=order,
            options=options,
            work_dir=Path(tempfile.gettempdir()),
        )
    except ChangelogJoin as general:  # retractions: the general plan path
        return _plan_frame(spark, general.plan, inputs, control, lateness=lateness, ts_column=ts_column, ts_unit=ts_unit, buckets=buckets, streaming=streaming)
    frame = build_stream(spark, jp, control_dir=control, ts_column=ts_column, key=run_key(persistent=streaming), ended=not streaming)
    return frame, jp.layout


def _plan_frame(spark, plan, inputs: dict, control, *, lateness, ts_column, ts_unit, buckets, streaming, strategy="nt", partitions=1, **options):
    from slidewise.runtime.plan_engine import plan_inputs
    from slidewise.runtime.rejects import Rejects
    from slidewise.spark.join import checked_lateness
    from slidewise.spark.plan_runner import refuse_options
    from slidewise.spark.plan_stream import build_plan_stream, load_plan, plan_general
    from slidewise.spark.state_codec import run_key

    refuse_options(options)
    plan = load_plan(plan, ())
    names, _ = plan_inputs(plan, inputs, {})
    gp = plan_general(
        plan,
        inputs,
        names,
        {},
        ts_column=ts_column,
        ts_unit=ts_unit,
        lateness=checked_lateness(lateness),
        buckets=buckets,
        key=run_key(persistent=streaming),
        rejected=Rejects(),
        work_dir=Path(tempfile.gettempdir()),
        strategy=strategy,
        partitions=partitions,
    )
    return build_plan_stream(spark, gp, control_dir=control, ts_column=ts_column, ended=not streaming), gp


def end_input(control: str | Path) -> None:
    """End the input of a streaming :func:`query` run with ``control=DIR``: its next micro-batch flushes."""
    _marker(Path(control) / f"eof-{uuid.uuid4().hex}.json", 1)


def end_after(control: str | Path, batches: int) -> None:
    """Plan the end of input of a streaming run with ``control=DIR`` not yet started: its
    ``batches``-th micro-batch flushes (the control source reads one marker file per micro-batch,
    in modification-time order: ``batches - 1`` placeholders, then the end-of-input marker)."""
    now = int(time.time())
    for j in range(1, max(1, batches) + 1):
        _marker(Path(control) / f"{PLANNED}{j:06d}-{uuid.uuid4().hex}.json", int(j >= batches), now - batches + j)


def cancel_planned_end(control: str | Path) -> None:
    """Turn the markers of :func:`end_after` into placeholders (same modification times, so the
    micro-batches read the same files, a replayed one too): a continued run ends its input itself,
    after the files present when it starts."""
    for marker in Path(control).glob(f"{PLANNED}*.json"):
        _marker(marker, 0, int(marker.stat().st_mtime))


PLANNED = "eof-planned-"


def _marker(path: Path, eof: int, mtime: int | None = None) -> None:
    """Write a control marker atomically (with modification time ``mtime`` if given)."""
    tmp = path.with_name("." + path.name)
    tmp.write_text(json.dumps({"eof": eof}) + "\n")
    if mtime is not None:
        os.utime(tmp, (mtime, mtime))
    tmp.rename(path)


def result_columns(frame, layout):
    """The result rows of an output frame of :func:`query_frame`, with their output names."""
    from pyspark.sql import functions as F

    if not isinstance(layout, Layout):
        from slidewise.spark.plan_stream import plan_results

        return plan_results(frame, layout)
    return frame.filter(F.col("k") == RESULT).select(*[F.col(f"r{j}").alias(n) for j, n in enumerate(layout.out_names)])


# --------------------------------------------------------------------------- driver side


def inspect_frame(alias: str, name: str, df, *, ts_column: str, ts_unit: str, lateness: int):
    """``(StreamInfo, recipe)`` of a DataFrame input: kinds and unit by the local reader's rules."""
    from pyspark.sql.pandas.types import to_arrow_schema

    from slidewise.runtime.sources import open_source

    if ts_column not in df.columns:
        raise SourceError(
            f"stream {alias}: the DataFrame has no timestamp column {ts_column!r}", location=f"input {name}", hint=f"columns: {', '.join(df.columns)}; or pass ts_column="
        )
    try:
        schema = to_arrow_schema(df.schema)
    except Exception as e:  # noqa: BLE001 - a type Arrow cannot carry
        raise SourceError(
            f"stream {alias}: unsupported column type ({e})", location=f"input {name}", hint="select atomic columns (numbers, booleans, strings, timestamps)"
        ) from None
    src = open_source(name, _sample(schema, ts_column), ts_column=ts_column, ts_unit=ts_unit)
    info = StreamInfo(alias, name, dict(src.kinds), src.ts_unit, lateness, "frame", 0, ("", name))
    return info, {"fmt": "frame"}


def _sample(schema: pa.Schema, ts_column: str) -> pa.Table:
    """One made-up row of ``schema`` without nulls (a null makes an integer column float), whose
    timestamp is valid in the unit its type implies."""
    cols = {}
    for f in schema:
        t = f.type
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            value = pa.array(["1970-01-01T00:00:00" if f.name == ts_column else ""], t)
        elif pa.types.is_floating(t):
            value = pa.array([1.0], t)
        elif pa.types.is_integer(t):
            value = pa.array([1], t)
        elif pa.types.is_boolean(t):
            value = pa.array([False], t)
        elif pa.types.is_timestamp(t) or pa.types.is_date(t):
            value = pa.array([0], pa.int64()).cast(pa.timestamp("ms")).cast(t)
        else:
            value = pa.nulls(1, t)
        cols[f.name] = value
    return pa.table(cols, schema=schema)


def frame_wire(df, index: int, layout: Layout, ts_column: str, then=None):
    """Stream ``index`` (a DataFrame) in the wire layout: converted, packed chunks (``mapInArrow``)."""
    from pyspark.sql import functions as F

    info = layout.streams[index]
    names = (ts_column, *info.kinds)
    body = functools.partial(frame_batches, stream=index, layout=layout, names=names, ts_column=ts_column)
    where = (F.input_file_name().alias("_f"), F.input_file_block_start().alias("_o"))
    from slidewise.spark.ingest import chained

    return df.select(*[f"`{c}`" for c in names], *where).mapInArrow(chained(body, then), WIRE_DDL)


# --------------------------------------------------------------------------- executor side


def frame_batches(batches, *, stream: int, layout: Layout, names: tuple[str, ...], ts_column: str):
    """``mapInArrow`` body for DataFrame inputs: input order (file, split, row) where Spark reads
    files, else (partition, row); conversion, packing."""
    from pyspark import TaskContext

    from slidewise.spark.ingest import convert_table, split_ordinals, wire_chunks

    info = layout.streams[stream]
    ctx = TaskContext.get()
    part = ctx.partitionId() if ctx is not None else 0
    counters: dict[tuple[str, int], int] = {}
    for b in batches:
        n = b.num_rows
        if n == 0:
            continue
        files = np.asarray([f or "" for f in b.column("_f").to_pylist()], dtype=object)
        offsets = b.column("_o").to_numpy(zero_copy_only=False).astype(np.int64)
        offsets = np.where(files == "", part, offsets)
        ordinal = split_ordinals(files, offsets, counters)
        ts, cols, bad, reasons, raws = convert_table(pa.Table.from_batches([b]).select(list(names)), info, ts_column)
        shown = np.full(n, info.source, dtype=object)
        yield wire_batch(wire_chunks(stream, bad, ts, cols, ordinal, files, offsets, ordinal + 1, reasons, raws, shown=shown))
