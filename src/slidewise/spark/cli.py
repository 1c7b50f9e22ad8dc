"""Command-line glue of the Spark engine: its ``run`` / ``demo`` options and their translation.

The local engine is the default of ``run`` and ``demo`` (as of ``slidewise.run``);
``--engine spark`` or ``SLIDEWISE_ENGINE=spark`` selects Spark (the ``spark``
extra), and so does a Spark option (``--master``, ``--conf``, ``--trigger``,
``--once``, ``--checkpoint``, ``--mode batch``) given without ``--engine``. A run
asking for local-only features (overload budgets, adaptive re-ordering; general
queries without a Spark option) stays local unless ``--engine spark`` says otherwise.
Options: ``--master URL`` (default ``local[*]``), ``--conf k=v`` (repeatable;
Spark settings, plus ``slidewise.buckets`` and ``slidewise.maxFilesPerTrigger``),
``--trigger 2s`` (micro-batch interval),
``--once`` (available-now: what exists, then end of input and stop; the
default when every source is a file), ``--checkpoint DIR`` (restartable runs),
``-v`` (Spark's own log with Java stack traces, and the JVM's and Python
workers' output; quiet otherwise).
"""

from __future__ import annotations

import argparse
import os

from slidewise.errors import OptionError
from slidewise.options import RunOptions
from slidewise.spark.session import VERBOSE_ENV

ENGINES = ("spark", "local")


def default_engine() -> str:
    """``SLIDEWISE_ENGINE`` if set (spark or local), else local."""
    engine = os.environ.get("SLIDEWISE_ENGINE", "local").strip().lower() or "local"
    return engine if engine in ENGINES else "local"


def resolve_engine(given: str | None, *, local_only: bool = False, spark_asked: bool = False) -> str:
    """The engine of a ``run``: ``--engine`` if given, else local when the run asks for features
    only the embedded engine has (``local_only``), spark when it gives Spark options
    (``spark_asked``), else the default."""
    if given:
        return given
    if local_only:
        return "local"
    return "spark" if spark_asked else default_engine()


def add_spark_options(p: argparse.ArgumentParser) -> None:
    """The Spark engine's options on a ``run`` / ``demo`` parser."""
    g = p.add_argument_group("Spark engine")
    g.add_argument("--master", help="Spark master URL (default local[*]), e.g. local[4], spark://host:7077")
    g.add_argument("--conf", action="append", metavar="K=V", help="Spark setting (repeatable); slidewise.buckets=N sets the key buckets")
    g.add_argument("--trigger", help="micro-batch interval, e.g. 2s (default: as fast as possible)")
    g.add_argument(
        "--once", action="store_true", help="process the files that exist, flush the last windows and stop (default for file inputs; directories run until Ctrl-C)"
    )
    g.add_argument("--checkpoint", metavar="DIR", help="checkpoint directory: rerunning the same command continues without loss or duplicates")


def apply_verbose(verbose: bool) -> None:
    """``-v`` sets :data:`~slidewise.spark.session.VERBOSE_ENV` for the session and its workers (Spark's log, Java stack traces)."""
    if verbose:
        os.environ[VERBOSE_ENV] = "1"


def parse_conf(pairs: list[str] | None) -> dict[str, str]:
    """``["k=v", ...]`` -> dict; an OptionError for a pair without ``=``."""
    out = {}
    for pair in pairs or []:
        k, sep, v = pair.partition("=")
        if not sep or not k.strip():
            raise OptionError(f"bad --conf {pair!r}", hint="write --conf KEY=VALUE, e.g. --conf spark.executor.memory=2g")
        out[k.strip()] = v.strip()
    return out


def run_from_args(args, sources: dict[str, str], run_options: RunOptions, operator_options: dict):
    """Run the ``run`` command's query on Spark; returns the RunResult."""
    from slidewise.spark.join_runner import run_spark

    result = _own_session(
        lambda: run_spark(
            args.query,
            sources,
            run_options=run_options,
            algorithm=args.algorithm,
            order=args.order,
            master=args.master,
            conf=parse_conf(args.conf),
            trigger=args.trigger,
            once=True if args.once else None,
            checkpoint=args.checkpoint,
            **operator_options,
        )
    )
    _say_interrupted(args, result)
    return result


def plan_from_args(args, sources: dict[str, str], tables: dict[str, str], run_options: RunOptions, operator_options: dict):
    """Run the ``run`` command's general query on Spark (:func:`slidewise.spark.plan_runner.run_plan_spark`).

    The Spark options take effect as for join queries (``--buckets`` sets the key buckets, as
    there); the join engine's other options, the overload options, ``--chunk-rows`` and
    ``--mode batch`` are refused with an OptionError naming them.
    """
    from slidewise.spark.plan_runner import refuse_options, run_plan_spark

    given = dict(operator_options)
    buckets = given.pop("buckets", None)
    archive = given.pop("archive", None)
    refuse_options({"algorithm": args.algorithm, "order": args.order, "mode": args.mode, "chunk_rows": run_options.chunk_rows, **given})
    result = _own_session(
        lambda: run_plan_spark(
            args.query,
            sources,
            tables,
            run_options=run_options,
            master=args.master,
            conf=parse_conf(args.conf),
            trigger=args.trigger,
            once=True if args.once else None,
            checkpoint=args.checkpoint,
            buckets=buckets,
            rewrite=True,
            archive=archive,
        )
    )
    _say_interrupted(args, result)
    return result


def _say_interrupted(args, result) -> None:
    import sys

    if result.stats.get("interrupted"):
        again = "rerun the same command to continue" if args.checkpoint else "use --checkpoint DIR to make runs resumable"
        print(f"slidewise: stopped (Ctrl-C) after {result.stats['micro_batches']} micro-batches; {again}", file=sys.stderr)


def demo_from_args(args, query: str, sources: dict[str, str], *, lateness: int):
    """Run the demo on Spark (available-now over the bundled files)."""
    from slidewise.spark.join_runner import run_spark

    return _own_session(
        lambda: run_spark(
            query,
            sources,
            lateness=lateness,
            out=args.out,
            collect=args.out is None,
            rejects=args.rejects,
            progress=not getattr(args, "quiet", False),
            once=True,
            master=getattr(args, "master", None),
            conf=parse_conf(getattr(args, "conf", None)),
        )
    )


def _own_session(body):
    """Run ``body``; stop the SparkSession afterwards if it started one (clean executor shutdown)."""
    from pyspark.sql import SparkSession

    had = SparkSession.getActiveSession() is not None
    try:
        return body()
    finally:
        active = None if had else SparkSession.getActiveSession()
        if active is not None:
            active.stop()
