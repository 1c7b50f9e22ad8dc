"""The Python API, mirroring the CLI.

>>> import slidewise
>>> r = slidewise.run(
...     "SELECT * FROM A [RANGE 10], B [RANGE 10] WHERE A.k = B.k",
...     sources={"A": {"ts": [1, 5], "k": [7, 8]}, "B": {"ts": [3, 6], "k": [7, 7]}})
>>> r.results[["A.ts", "B.ts", "ts", "exp"]].values.tolist()
[[1, 3, 3, 11], [1, 6, 6, 11]]
>>> r.stats["results"], r.stats["algorithm"]
(2, 'columnar')

General queries (DISTINCT, GROUP BY, NOT EXISTS, tables, DSTREAM, ...) run as
update-pattern-aware plans (:func:`slidewise.runtime.plan_engine.execute_plan`):

>>> r = slidewise.run("SELECT RSTREAM DISTINCT A.k FROM A [RANGE 2]",
...                   sources={"A": {"ts": [1, 2, 4], "k": [7, 7, 7]}}, strategy="nt")
>>> r.results.values.tolist()
[[7, 1, 1]]
"""

from __future__ import annotations

from slidewise.cql.parser import load_any
from slidewise.errors import OptionError, require_extra
from slidewise.options import RunOptions
from slidewise.plan.logical import Plan
from slidewise.plan.query import JoinQuery
from slidewise.plan.wjoin import WJoinQuery
from slidewise.runtime.join_engine import RunResult, execute
from slidewise.runtime.outputs import check_run
from slidewise.runtime.sinks import sink_format

#: options of the join engine that mean nothing to a general plan
JOIN_ONLY_OPTIONS = ("algorithm", "order", "buckets", "stats", "search", "negatives", "overload", "adaptive")


def run(
    query: str | JoinQuery | WJoinQuery | Plan,
    sources: dict[str, object],
    *,
    algorithm: str | None = None,
    order: str | list[str] | None = None,
    engine: str = "local",
    tables: dict[str, object] | None = None,
    run_options: RunOptions | None = None,
    **options,
) -> RunResult:
    """Run a query to the end of its inputs on the embedded engine (or ``engine="spark"``).

    ``query``: CQL text, the name of a ``*.cql`` file, a ``pathlib.Path`` (read whatever its
    name), or a parsed JoinQuery.
    ``sources``: source name (as in FROM) -> file/directory path, pandas
    DataFrame, dict of columns or iterable of dicts.

    How the run reads and writes comes in ``run_options``
    (:class:`slidewise.options.RunOptions`) or as keywords of the same names, which
    override it: ``out`` (a result file ``.csv``, ``.jsonl``, ``.parquet``, ``"-"``
    for stdout, or a callback receiving a DataFrame per batch), ``collect``
    (results into ``RunResult.results``; default: unless ``out`` is given),
    ``lateness``, ``ts_column``, ``ts_unit``, ``chunk_rows``, ``rejects`` (CSV of
    rejected rows), ``progress``, ``strategy``, ``partitions``, ``schemas``
    (declared column types, e.g. ``{"dns": {"orig_h": "string"}}``; local engine),
    ``streams`` (per-stream ``lateness``, ``ts_column``, ``ts_unit``, e.g. ``{"dns": {"lateness": "5s"}}``).
    Other keywords go to the join operator (e.g. ``buckets=8``,
    ``negatives=True``). ``engine="spark"`` runs on Spark instead
    (:func:`slidewise.spark.run_spark`; its options — ``master``, ``conf``,
    ``trigger``, ``once``, ``checkpoint``, ... — pass through); the API's
    default stays the in-process engine.

    Outputs are checked first (:func:`slidewise.runtime.outputs.check_run`):
    an output that is an input, lies inside an input directory or is another
    output is an OptionError. Files appear complete or not at all. A
    KeyboardInterrupt during a local run ends it early: the result so far is
    returned, written out, with ``stats["interrupted"]`` set.

    General queries (anything but select–project–join with ISTREAM) become a
    :class:`~slidewise.plan.logical.Plan` run by
    :func:`~slidewise.runtime.plan_engine.execute_plan`: ``tables`` (name -> path /
    DataFrame; rows with ``ts``, optional ``op`` ``+``/``-``, key first) are
    non-retroactive unless FROM says ``TABLE name``; ``strategy`` is ``nt``,
    ``direct`` or ``upa`` and ``partitions`` the UPA calendar queue size.
    """
    archive = {k: options.pop(k) for k in list(options) if k.startswith("archive")}
    opts, operator_options = RunOptions.split(run_options, options)
    if archive.get("archive") is not None and engine == "spark":
        operator_options["archive"] = archive  # written per micro-batch by the Spark sinks
    elif archive.get("archive") is not None:
        return _run_archived(query, sources, opts, archive, algorithm=algorithm, order=order, engine=engine, tables=tables, **operator_options)
    tables = dict(tables or {})
    opts.check_streams(sources)
    if opts.schemas:
        if engine == "spark":
            raise OptionError("--schema works with the local engine only", hint="drop --schema, or run with --engine local")
    if engine == "spark":
        require_extra("spark", "engine='spark'")
    elif _uses_kafka(sources, opts.out):
        from slidewise.kafka.local import run_local

        return run_local(run, query, sources, out=opts.out, run_options=opts, algorithm=algorithm, order=order, engine=engine, tables=tables, **operator_options)
    directories: tuple[str, ...] = ()
    if engine == "spark":  # batch parts, or one file assembled from them (slidewise.spark.sinks.FileOutputs)
        from slidewise.spark.sinks import file_target

        directories = tuple(o for o, v in (("--out", opts.out), ("--rejects", opts.rejects)) if not file_target(v)) + ("--archive",)
    outputs = {"--out": opts.out, "--rejects": opts.rejects, "--archive": archive.get("archive")}
    check_run(sources, tables, outputs, directories=directories, formats={} if "--out" in directories else {"--out": sink_format})
    q = query if isinstance(query, (JoinQuery, WJoinQuery, Plan)) else load_any(query, tables)
    if isinstance(q, Plan):
        return _run_plan(q, sources, tables, opts, engine=engine, options={"algorithm": algorithm, "order": order, **operator_options})
    if engine == "spark":
        from slidewise.spark.join_runner import run_spark

        return run_spark(q, sources, run_options=opts, algorithm=algorithm, order=order, **operator_options)
    if engine != "local":
        raise OptionError(f"unknown engine {engine!r}", hint="use engine='local' or engine='spark'")
    return execute(q, sources, run_options=opts, algorithm=algorithm, order=order, operator_options=operator_options)


def _run_archived(query, sources, opts: RunOptions, archive: dict, *, engine: str, **rest) -> RunResult:
    """A local run whose results also go to an archive (:class:`slidewise.archive.sink.ArchiveWriter`), and to ``out`` if given."""
    import dataclasses

    from slidewise.archive.sink import ArchiveWriter
    from slidewise.runtime.sinks import open_sink

    check_run(
        sources,
        rest.get("tables"),
        {"--out": opts.out, "--rejects": opts.rejects, "--archive": archive["archive"]},
        directories=("--archive",),
        formats={"--out": sink_format},
    )
    writer = ArchiveWriter.from_options(archive)
    sink = open_sink(opts.out) if opts.out is not None else None

    def deliver(frame):
        writer(frame)
        if sink is not None:
            sink.write({c: frame[c].to_numpy() for c in frame.columns})

    tee = dataclasses.replace(opts, out=deliver, collect=opts.collecting())
    try:
        result = run(query, sources, engine=engine, run_options=tee, **rest)
    except BaseException:
        if sink is not None:
            sink.abort()
        raise
    if sink is not None:
        sink.close()
    result.stats["archive"] = writer.close()
    return result


def _uses_kafka(sources: dict, out) -> bool:
    """A ``kafka://`` source or ``out`` (then the ``kafka`` extra is needed)."""
    from slidewise.kafka.uri import uses_kafka

    if not uses_kafka(sources, out):
        return False
    require_extra("kafka", "kafka:// sources and outputs")
    return True


def _run_plan(plan: Plan, sources, tables, opts: RunOptions, *, engine: str, options: dict) -> RunResult:
    """A general query on the local plan executor, or on Spark (:func:`slidewise.spark.plan_runner.run_plan_spark`)."""
    from slidewise.runtime.plan_engine import execute_plan

    if engine == "spark":
        from slidewise.spark.plan_runner import SPARK_OPTIONS, refuse_options, run_plan_spark

        given = dict(options)
        spark = {k: given.pop(k) for k in SPARK_OPTIONS if k in given}
        refuse_options({**given, "chunk_rows": opts.chunk_rows})
        extra = {k: v for k, v in given.items() if k not in JOIN_ONLY_OPTIONS}
        return run_plan_spark(plan, sources, tables, run_options=opts, rewrite=True, options=extra, **spark)
    if engine != "local":
        raise OptionError(f"unknown engine {engine!r}", hint="use engine='local' or engine='spark'")
    given = [k for k in JOIN_ONLY_OPTIONS if options.get(k) not in (None, False)]
    if given:
        raise OptionError(
            f"option {given[0]!r} applies to join queries only, not to this general query", hint="drop it; choose the processing strategy with --strategy nt|direct|upa"
        )
    extra = {k: v for k, v in options.items() if k not in JOIN_ONLY_OPTIONS}
    # run what explain shows: the cheapest update-pattern rewriting
    return execute_plan(plan, sources, tables, run_options=opts, options=extra, rewrite=True)
