"""Batch replay on Spark: the eager answer of docs/semantics.md over recorded inputs, as Spark SQL band joins.

For backfills: ``slidewise run QUERY --engine spark --mode batch`` gives the
same rows as the local engine, computed as one Spark job over whole files.

Inputs. As the streaming engine (:mod:`slidewise.spark.ingest`): Spark reads
each source (CSV, JSON lines, Parquet; a file or a directory, in slidewise's
file order; in-memory data is written to Parquet first) as text or native
columns, and slidewise's converters run inside ``mapInArrow``: the same
types, timestamp units and bad-row reasons as the local engine. Input order
is (file, split offset, row). A tuple below its stream's running maximum
minus ``lateness`` is rejected as late, as by the local merger. That check
and unpartitioned count windows need a stream's whole order: one Spark
partition per stream for those window functions.

Order and windows. The global order is ``(ts, stream index in FROM, input
order)``. For a result with origin ``o`` (stream ``j``), a member ``m`` of
stream ``i != j`` is before ``o`` iff ``m.ts < o.ts``, or ``m.ts = o.ts`` and
``i < j``; it is inside its window at ``o`` iff

* ``[RANGE T]``: ``m.ts >= o.ts - T``;
* ``[(PARTITION BY p) ROWS N]``: its *evictor* ``e`` (the arrival ``N`` places
  after ``m`` in its stream or partition: ``lead(ts, N)``) comes after ``o``:
  ``e`` missing, or ``e.ts > o.ts``, or ``e.ts = o.ts`` and ``i > j``.

Every window condition is thus a range condition on ``ts``. The join is one
branch per origin stream ``j`` (branches are disjoint: a result has one
origin), unioned: ``D_j`` joined with every other stream under the window
conditions relative to ``o``, the equalities and the filters. A time window
adds the equi-condition ``bucket(m) = bucket(o) - d``, ``d`` in {0, 1},
``bucket = floor(ts / max(T, 1))``, so Spark hash/sort-merge joins on
``(key, bucket)`` instead of every equal-key pair. Result ``ts`` is the
origin's, ``exp`` the least member expiration; lazy no-restore drops results
with ``exp < ceil(ts / D) * D``; ``negatives`` adds a retraction (``sign -1``)
at the first count-window evictor. Output columns as :mod:`slidewise.operators.project`,
rows sorted by origin position, then member positions.
"""

from __future__ import annotations

import functools
import logging
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from slidewise.errors import OptionError, PlanError, SourceError
from slidewise.model.batch import NO_EXP
from slidewise.operators.project import output_names
from slidewise.options import DEFAULT_CHUNK_ROWS, RunOptions
from slidewise.plan.bind import bind_query
from slidewise.plan.expr import And, BinOp, Cmp, Col, Expr, Func, Like, Lit, Not, Or, like_regex, streams_of
from slidewise.plan.logical import CHANGELOG
from slidewise.plan.query import JoinQuery
from slidewise.runtime.join_engine import RunResult, run_counts
from slidewise.runtime.rejects import Rejects
from slidewise.runtime.sinks import collected_frame, open_sink

#: Spark type of each slidewise column kind
_SPARK_TYPE = {"int": "bigint", "float": "double", "bool": "boolean", "str": "string"}
_ARROW_TYPE = {"int": pa.int64(), "float": pa.float64(), "bool": pa.bool_(), "str": pa.string()}
_ORDER = ("fi", "bs", "mo")  # input order: file index, split offset, row id within the split


def run_batch(
    query: str | JoinQuery,
    sources: dict[str, object],
    *,
    run_options: RunOptions | None = None,
    spark=None,
    negatives: bool = False,
    master: str | None = None,
    conf: dict[str, str] | None = None,
    **settings,
) -> RunResult:
    """Run ``query`` over ``sources`` to the end as one Spark batch job; same answer as the local engine.

    ``sources``: name -> file or directory (CSV, JSON lines, Parquet) or
    in-memory data (written to a temporary Parquet file first). ``spark``: a
    session (default: :func:`slidewise.spark.session.get_session` with
    ``master`` and ``conf``). ``run_options`` (or its fields as keywords) as
    :func:`slidewise.run`; other keywords are ignored.
    """
    given, _ = RunOptions.split(run_options, settings)
    out, collect, rejects, progress = given.out, given.collect, given.rejects, given.progress
    from slidewise.cql import load_query
    from slidewise.spark.session import get_session

    q = query if isinstance(query, JoinQuery) else load_query(query)
    if q.output != "istream":
        raise PlanError(f"batch replay computes ISTREAM answers, not {q.output.upper()}", hint="drop the output operator or use --mode stream")
    missing = [s.source for s in q.streams if s.source not in sources]
    if missing:
        raise SourceError(f"no input given for stream {missing[0]!r}", hint=f"pass --source {missing[0]}=PATH")
    given.check_streams(sources)
    work = Path(tempfile.mkdtemp(prefix="slidewise-batch-"))
    try:
        started = time.perf_counter()
        inputs_of = [_inspect(ref, sources[ref.source], given.for_stream(ref.source), work) for ref in q.streams]
        schemas = [list(info.kinds) for info, _, _ in inputs_of]
        q = bind_query(q, [dict(info.kinds) for info, _, _ in inputs_of])
        spark = spark or get_session(master, conf)
        rej = Rejects()
        cached: list = []
        _say(progress, f"reading {q.n} stream(s)")
        read = [_read(spark, info, recipe, files, recipe["ts_column"], cached) for info, recipe, files in inputs_of]
        frames = [_prepare(q, i, r[0], schemas[i]) for i, r in enumerate(read)]
        inputs = _counts(frames)
        _collect_rejects(inputs_of, [r[1] for r in read], [r[2] for r in read], rej)
        for df in cached:
            df.unpersist()
        _say(progress, f"joining {sum(inputs):,} tuples")
        names = output_names(q, schemas)
        orders: dict = {}
        result = build_join(q, frames, schemas, negatives=negatives, orders=orders)
        n_results, n_retractions, frame = _emit(result, names, out, (out is None) if collect is None else collect, work)
        for df in frames:
            df.unpersist()
        seconds = time.perf_counter() - started
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if rejects:
        rej.write(rejects)
    stats = {
        "query": q.text or q.describe(),
        "engine": "spark",
        "mode": "batch",
        "algorithm": "spark-batch (band joins per origin stream)",
        "join_order": q.aliases,
        "orders": orders,
        **run_counts({ref.alias: n for ref, n in zip(q.streams, inputs)}, n_results, n_retractions, rej, seconds),
        "comparisons": 0,
        "state_tuples_peak": 0,
        "spark_master": spark.sparkContext.master,
    }
    return RunResult(frame, stats, rej)


def _say(enabled: bool, text: str) -> None:
    if enabled:
        logging.getLogger(__name__).info(text)


# --------------------------------------------------------------------------- inputs


def _inspect(ref, spec, own: RunOptions, work: Path):
    """``(StreamInfo, read recipe, files in input order)`` of one FROM stream (the streaming engine's rules); ``own``: its settings."""
    from slidewise.spark.ingest import _format, inspect_stream

    if isinstance(spec, str) and spec.startswith("rate:"):
        raise SourceError(f"stream {ref.alias}: batch replay reads recorded inputs, not {spec!r}", hint="use --mode stream for the rate source")
    info, recipe = inspect_stream(ref.alias, ref.source, spec, ts_column=own.ts_column, ts_unit=own.ts_unit, lateness=int(own.lateness), work_dir=work / ref.alias)
    if CHANGELOG in info.kinds:
        raise OptionError(
            f"stream {ref.alias} is a changelog (its input has a {CHANGELOG} column: -1 rows retract an earlier row), "
            "which runs as a general plan, and --mode batch replays join queries only",
            hint=f"drop --mode batch (--once processes the recorded files and stops), or rename the {CHANGELOG} column if it is an ordinary attribute",
        )
    root = Path(recipe["dir"])
    if isinstance(spec, (str, Path)) and Path(spec).is_file():
        files = [Path(spec).resolve()]
    else:
        files = sorted(p.resolve() for p in root.iterdir() if p.is_file() and _format(p) == recipe["fmt"] and not p.name.startswith((".", "_")))
    return info, recipe, [str(f) for f in files]


def _read(spark, info, recipe: dict, files: list[str], ts_column: str, cached: list):
    """One stream: admitted tuples (``ts``, typed attributes, ``fi, bs, mo``), rejected rows, all rows' order."""
    from pyspark.sql import functions as F
    from pyspark.sql.window import Window

    from slidewise.spark.ingest import file_reader

    fmt = recipe["fmt"]
    reader = spark.read.option("pathGlobFilter", recipe["glob"])
    reader, names = file_reader(reader, recipe, _parquet_schema(spark, files[0]) if fmt == "parquet" else None)
    raw = reader.load(recipe["dir"])
    corrupt = F.col("_corrupt") if fmt != "parquet" else F.lit(None).cast("string")
    raw = raw.select(
        *[F.col(f"`{c}`").alias(f"v{j}") for j, c in enumerate(names)],
        corrupt.alias("_corrupt"),
        F.col("_metadata.file_path").alias("_f"),
        F.col("_metadata.file_block_start").alias("bs"),
        F.monotonically_increasing_id().alias("mo"),
    )
    ddl = ", ".join(["ts bigint"] + [f"`{a}` {_SPARK_TYPE[k]}" for a, k in info.kinds.items()] + ["fi int", "bs bigint", "mo bigint", "_bad string", "_raw string"])
    body = functools.partial(_convert_batches, info=info, names=tuple(names), ts_column=ts_column, files={f: k for k, f in enumerate(files)})
    typed = raw.mapInArrow(body, ddl).persist()
    bad = typed.filter(F.col("_bad").isNotNull())
    ok = typed.filter(F.col("_bad").isNull()).drop("_bad", "_raw")
    # late: below the running maximum of the stream's earlier tuples (input order) minus lateness
    prev = F.max("ts").over(Window.orderBy(*[F.col(c) for c in _ORDER]).rowsBetween(Window.unboundedPreceding, -1))
    unit = f" {info.label}" if info.label else ""
    ok = ok.withColumn("_prev", prev)
    late = F.col("_prev").isNotNull() & (F.col("ts") < F.col("_prev") - F.lit(int(info.lateness)))
    why = F.concat(F.lit("late by "), (F.col("_prev") - F.col("ts")).cast("string"), F.lit(f"{unit} (lateness {int(info.lateness)})"))
    ok = ok.withColumn("_bad", F.when(late, why)).persist()
    cached += [typed, ok]
    text = F.concat_ws(",", F.col("ts").cast("string"), *[F.coalesce(F.col(f"`{a}`").cast("string"), F.lit("")) for a in info.kinds])
    rejected = bad.select(*_ORDER, "_bad", "_raw").unionByName(ok.filter(F.col("_bad").isNotNull()).select(*_ORDER, "_bad", text.alias("_raw")))
    splits = bad.select(*_ORDER).unionByName(ok.select(*_ORDER))
    return ok.filter(F.col("_bad").isNull()).drop("_bad", "_prev"), rejected, splits


def _parquet_schema(spark, path: str):
    """Spark schema of a Parquet file from its footer (no Spark job); Spark's own reading if unmapped."""
    try:
        from pyspark.sql.pandas.types import from_arrow_schema

        return from_arrow_schema(pq.read_schema(path))
    except Exception:  # noqa: BLE001 - a type pyspark does not map: let Spark infer it
        return spark.read.parquet(path).schema


def _convert_batches(batches, *, info, names: tuple[str, ...], ts_column: str, files: dict[str, int]):
    """``mapInArrow`` body: the streaming engine's conversion (slidewise's converters), plus file index."""
    from slidewise.spark.ingest import convert_raw, file_path

    for b in batches:
        n = b.num_rows
        if n == 0:
            continue
        ts, cols, bad, reasons, raws = convert_raw(b, names, info, ts_column)
        uris = b.column("_f").to_numpy(zero_copy_only=False)
        index = {u: files.get(file_path(u), -1) for u in set(uris.tolist())}
        out = {"ts": pa.array(np.where(bad, 0, ts).astype(np.int64))}
        for a, kind in info.kinds.items():
            out[a] = pa.array(cols[a], _ARROW_TYPE[kind])
        out["fi"] = pa.array(np.array([index[u] for u in uris], np.int32))
        out["bs"] = b.column("bs")
        out["mo"] = b.column("mo")
        out["_bad"] = pa.array(np.where(bad, reasons, None), pa.string())
        out["_raw"] = pa.array(np.where(bad, raws, None), pa.string())
        yield pa.RecordBatch.from_pydict(out)


def _collect_rejects(inputs_of: list, rejected: list, splits: list, rej: Rejects) -> None:
    """Bad and late rows of all streams to ``rej`` (two small Spark jobs, the second only if
    there are rejects), with 1-based line numbers: records, plus a CSV header line."""
    from pyspark.sql import functions as F

    def tagged(frames):
        return functools.reduce(lambda x, y: x.unionByName(y), [df.withColumn("si", F.lit(i)) for i, df in enumerate(frames)])

    rows = tagged(rejected).toPandas()
    if rows.empty:
        return
    # record index within the file: records of the file's earlier splits + offset within the split
    sp = tagged(splits).groupBy("si", "fi", "bs").agg(F.count("*").alias("n"), F.min("mo").alias("m0")).toPandas().sort_values(["si", "fi", "bs"])
    sp["before"] = sp.groupby(["si", "fi"])["n"].cumsum() - sp["n"]
    rows = rows.merge(sp, on=["si", "fi", "bs"], how="left").sort_values(["si", "fi", "bs", "mo"])
    for (si, fi), part in rows.groupby(["si", "fi"], sort=True):
        info, _, files = inputs_of[int(si)]
        lines = part["before"] + (part["mo"] - part["m0"]) + 1 + info.header_lines
        rej.add_many(info.source, files[int(fi)], lines.to_numpy(np.int64), part["_bad"].tolist(), part["_raw"].tolist())


def _prepare(q: JoinQuery, i: int, df, attrs: list[str]):
    """Stream ``i`` as ``c{i}_ts``, ``c{i}_<attr>``, input order ``k{i}_fi/bs/mo`` and the time bucket
    ``k{i}_b`` or count-window evictor ts ``k{i}_ev``; cached."""
    from pyspark.sql import functions as F
    from pyspark.sql.window import Window

    w = q.streams[i].window
    df = df.select(*[F.col(f"`{c}`").alias(f"c{i}_{c}") for c in ["ts", *attrs]], *[F.col(c).alias(f"k{i}_{c}") for c in _ORDER])
    t = F.col(f"c{i}_ts")
    if w.is_count:
        spec = Window.orderBy(t, *[F.col(f"k{i}_{c}") for c in _ORDER])
        if w.partition_by:
            spec = spec.partitionBy(F.col(f"`c{i}_{w.partition_by}`"))
        df = df.withColumn(f"k{i}_ev", F.lead(t, w.size).over(spec))
    elif w.kind != "unbounded":
        df = df.withColumn(f"k{i}_b", _floor_div(t, max(w.length, 1)))
    return df.persist()


def _counts(frames: list) -> list[int]:
    """Rows per frame in one Spark job (which also fills their caches)."""
    from pyspark.sql import functions as F

    parts = [df.select(F.lit(i).alias("i")) for i, df in enumerate(frames)]
    got = dict(functools.reduce(lambda x, y: x.unionByName(y), parts).groupBy("i").count().collect())
    return [int(got.get(i, 0)) for i in range(len(frames))]


def _floor_div(col, d: int):
    from pyspark.sql import functions as F

    return ((col - F.pmod(col, F.lit(d))) / F.lit(d)).cast("bigint")


# --------------------------------------------------------------------------- the join


def build_join(q: JoinQuery, frames: list, schemas: list[list[str]], *, negatives: bool = False, orders: dict | None = None):
    """The result rows as a Spark DataFrame: ``o0 ... ok`` (output columns), ``ts``, ``exp``,
    ``sign``, sorted (in one partition); ``frames[i]`` from :func:`_prepare`. ``orders``
    receives the join order per origin stream."""
    from pyspark.sql import functions as F

    exps = [F.col(f"c{i}_ts") + F.lit(s.window.length) for i, s in enumerate(q.streams) if not s.window.is_count and s.window.kind != "unbounded"]
    exp = ((F.least(*exps) if len(exps) > 1 else exps[0]) if exps else F.lit(NO_EXP)).cast("bigint")
    outs = [e.alias(f"o{k}") for k, e in enumerate(_output_exprs(q, schemas))]
    members = [(F.col(f"c{i}_ts") if c == "ts" else F.col(f"k{i}_{c}")).alias(f"k_m{n}") for n, (i, c) in enumerate((i, c) for i in range(q.n) for c in ("ts", *_ORDER))]
    count_refs = [i for i, s in enumerate(q.streams) if s.window.is_count]
    evictor = []
    if negatives and count_refs:  # the first count-window evictor: (ts, stream) of the retraction
        evs = [F.when(F.col(f"k{i}_ev").isNotNull(), F.struct(F.col(f"k{i}_ev").alias("t"), F.lit(i).alias("s"))) for i in count_refs]
        evictor = [(F.least(*evs) if len(evs) > 1 else evs[0]).alias("_rt")]
    narrow = None
    for j in range(q.n):
        df, order = _branch(q, frames, j)
        if orders is not None:
            orders[q.aliases[j]] = [q.aliases[i] for i in order]
        if q.slide and not q.restore:  # no-restore: drop results expired before their evaluation
            df = df.filter(exp >= -_floor_div(-F.col(f"c{j}_ts"), q.slide) * F.lit(q.slide))
        df = df.select(
            *outs, F.col(f"c{j}_ts").alias("ts"), exp.alias("exp"), F.lit(j).alias("k_sid"), *[F.col(f"k{j}_{c}").alias(f"k_o{c}") for c in _ORDER], *members, *evictor
        )
        narrow = df if narrow is None else narrow.unionByName(df)
    keys = ["ts", "k_sid", *[f"k_o{c}" for c in _ORDER], *[m for m in narrow.columns if m.startswith("k_m")]]
    cols = [f"o{k}" for k in range(len(outs))]
    rows = narrow.select(*cols, "ts", "exp", F.lit(1).cast("tinyint").alias("sign"), *keys[1:])
    if evictor:
        rows = rows.unionByName(
            narrow.filter(F.col("_rt").isNotNull()).select(
                *cols,
                F.col("_rt.t").alias("ts"),
                "exp",
                F.lit(-1).cast("tinyint").alias("sign"),
                F.col("_rt.s").alias("k_sid"),
                *[F.lit(None).cast("bigint").alias(f"k_o{c}") for c in _ORDER],
                *keys[1 + 1 + len(_ORDER) :],
            )
        )
    return rows.repartition(1).sortWithinPartitions(*keys).select(*cols, "ts", "exp", "sign")


def _branch(q: JoinQuery, frames: list, j: int):
    """Results whose origin is in stream ``j`` and the join order: D_j joined with the others
    (linked by an equality first, time windows before count windows) under the window conditions."""
    from pyspark.sql import functions as F

    applied: set[int] = set()

    def ready(bound: set[int]) -> list:
        out = []
        for k, f in enumerate(q.filters):
            if k not in applied and streams_of(f) <= bound:
                applied.add(k)
                out.append(to_spark(f))
        return out

    bound, order = {j}, [j]
    left = frames[j]
    for c in ready(bound):
        left = left.filter(c)
    eqs = list(q.equalities)
    remaining = [i for i in range(q.n) if i != j]
    while remaining:
        linked = [i for i in remaining if any({e.left.stream, e.right.stream} <= bound | {i} and i in (e.left.stream, e.right.stream) for e in eqs)]
        timed = [i for i in (linked or remaining) if not q.streams[i].window.is_count]
        i = (timed or linked or remaining)[0]
        remaining.remove(i)
        order.append(i)
        conds = _window_conditions(q, i, j)
        conds += [to_spark(Cmp("=", e.left, e.right)) for e in eqs if {e.left.stream, e.right.stream} <= bound | {i} and i in (e.left.stream, e.right.stream)]
        w = q.streams[i].window
        bucketed = not w.is_count and w.kind != "unbounded"
        if bucketed:
            ob = _floor_div(F.col(f"c{j}_ts"), max(w.length, 1))
            left = left.withColumn(f"_nb{i}", F.explode(F.array(ob, ob - 1)))
            conds.append(F.col(f"k{i}_b") == F.col(f"_nb{i}"))
        bound.add(i)
        conds += ready(bound)
        cond = functools.reduce(lambda a, b: a & b, conds)
        left = left.join(frames[i], cond, "inner")
    return left, order


def _window_conditions(q: JoinQuery, i: int, j: int) -> list:
    """Member ``i`` is before origin ``j`` and inside its window when the origin arrives."""
    from pyspark.sql import functions as F

    m, o = F.col(f"c{i}_ts"), F.col(f"c{j}_ts")
    conds = [m <= o if i < j else m < o]
    w = q.streams[i].window
    if w.is_count:
        ev = F.col(f"k{i}_ev")
        conds.append(ev.isNull() | ((ev >= o) if i > j else (ev > o)))
    elif w.kind != "unbounded":
        conds.append(m >= o - F.lit(w.length))
    return conds


def to_spark(expr: Expr):
    """A slidewise expression as a Spark column over the ``c{i}_<attr>`` columns (numpy semantics)."""
    from pyspark.sql import functions as F

    if isinstance(expr, Col):
        return F.col(f"`c{expr.stream}_{expr.attr}`")
    if isinstance(expr, Lit):
        return F.lit(expr.value)
    if isinstance(expr, BinOp):
        a, b = to_spark(expr.left), to_spark(expr.right)
        if expr.op == "/":  # NULL where b is 0, as plan.expr.arithmetic
            return F.try_divide(a.cast("double"), b.cast("double"))
        if expr.op == "%":  # numpy: the sign of the divisor; NULL where b is 0
            return F.try_mod(F.try_mod(a, b) + b, b)
        return {"+": a + b, "-": a - b, "*": a * b}[expr.op]
    if isinstance(expr, Cmp):
        a, b = to_spark(expr.left), to_spark(expr.right)
        return {"=": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[expr.op]
    if isinstance(expr, And):
        return functools.reduce(lambda x, y: x & y, [to_spark(e) for e in expr.items])
    if isinstance(expr, Or):
        return functools.reduce(lambda x, y: x | y, [to_spark(e) for e in expr.items])
    if isinstance(expr, Not):
        return ~to_spark(expr.item)
    if isinstance(expr, Like):  # the same regular expression as plan.expr.like
        return to_spark(expr.item).rlike(like_regex(expr.pattern))
    if isinstance(expr, Func) and expr.name in ("lower", "upper"):
        return getattr(F, expr.name)(to_spark(expr.args[0]))
    if isinstance(expr, Func) and expr.name == "abs":
        return F.abs(to_spark(expr.args[0]))
    if isinstance(expr, Func) and expr.name == "cast":  # NULL where it fails, as plan.expr.cast
        inner, kind = to_spark(expr.args[0]), expr.args[1].value
        if kind == "str":
            return inner.try_cast("string")
        number = inner.try_cast("double")
        return number.try_cast("bigint") if kind == "int" else number
    raise PlanError(f"batch replay cannot evaluate {expr}", hint="use --mode stream or the local engine")


def _output_exprs(q: JoinQuery, schemas: list[list[str]]) -> list:
    """Spark columns of the output, in :func:`~slidewise.operators.project.output_names` order."""

    def star(i: int) -> list:
        return [to_spark(Col(i, a)) for a in ["ts", *schemas[i]]]

    if q.select is None:
        return [c for i in range(q.n) for c in star(i)]
    out = []
    for item in q.select:
        if isinstance(item.expr, Col) and item.expr.attr == "*":
            out += star(item.expr.stream)
        else:
            out.append(to_spark(item.expr))
    return out


# --------------------------------------------------------------------------- output


def _emit(result, names: list[str], out, collect: bool, work: Path):
    """Write the sorted rows to ``out`` (a slidewise sink) and/or collect them; returns counts and frame."""
    path = work / "rows"
    result.write.mode("overwrite").parquet(str(path))
    parts = sorted(path.glob("part-*.parquet"))
    sink = open_sink(out, names) if out is not None else None
    frames, n_pos, n_neg = [], 0, 0
    try:
        for p in parts:
            for batch in pq.ParquetFile(p).iter_batches(batch_size=DEFAULT_CHUNK_ROWS):
                cols = {name: batch.column(f"o{k}").to_numpy(zero_copy_only=False) for k, name in enumerate(names[:-3])}
                cols["ts"] = batch.column("ts").to_numpy(zero_copy_only=False).astype(np.int64)
                cols["exp"] = batch.column("exp").to_numpy(zero_copy_only=False).astype(np.int64)
                sign = batch.column("sign").to_numpy(zero_copy_only=False).astype(np.int8)
                cols["sign"] = sign
                n_neg += int((sign < 0).sum())
                n_pos += int((sign > 0).sum())
                if sink is not None:
                    sink.write(cols)
                if collect:
                    frames.append(pd.DataFrame(cols))
    except BaseException:
        if sink is not None:
            sink.abort()  # the target stays absent or as it was
        raise
    if sink is not None:
        sink.close()
    frame = None
    if collect:
        frame = collected_frame(frames, names)
    return n_pos, n_neg, frame


def batch_from_args(args, sources: dict[str, str], run_options: RunOptions, operator_options: dict) -> RunResult:
    """``slidewise run --engine spark --mode batch``: the CLI options to :func:`run_batch`."""
    from slidewise.spark.cli import parse_conf

    return run_batch(args.query, sources, run_options=run_options, negatives=bool(operator_options.get("negatives")), master=args.master, conf=parse_conf(args.conf))
