"""The ``slidewise`` command line: the parser and :func:`main` (handlers in :mod:`slidewise.commands`)."""

from __future__ import annotations

import argparse
import logging
import sys

from slidewise.commands import cmd_algorithms, cmd_archive, cmd_calibrate, cmd_demo, cmd_explain, cmd_generate, cmd_run, cmd_run_many, cmd_serve
from slidewise.errors import SlidewiseError, require_extra
from slidewise.options import DEFAULTS, STRATEGIES, TS_UNITS


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _add_query_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("query", nargs="?", help="CQL text, or a file whose name ends in .cql")
    p.add_argument("--query-file", metavar="PATH", help="read the query from this file (any name)")


def _add_run_options(p: argparse.ArgumentParser) -> None:
    from slidewise.spark.cli import ENGINES, add_spark_options, default_engine

    p.add_argument(
        "--engine",
        default=None,
        choices=ENGINES,
        help=f"execution engine: spark (Spark Structured Streaming, local[*] unless --master) "
        f"or local (embedded, in-process); default {default_engine()} (SLIDEWISE_ENGINE "
        "sets it); without --engine, a Spark option such as --checkpoint or --mode batch "
        "selects spark, and runs with overload or adaptive options stay local",
    )
    add_spark_options(p)
    p.add_argument(
        "--mode",
        default="stream",
        choices=["stream", "batch"],
        help="with --engine spark: stream (Structured Streaming) or batch (one Spark SQL job over the recorded files, for backfills)",
    )
    p.add_argument("--algorithm", help="join algorithm (see `slidewise algorithms`); default: chosen by the planner")
    p.add_argument("--order", help="global join order, e.g. S2,S1,S3")
    p.add_argument("--out", help="result file (.csv, .jsonl, .parquet; on both engines) or - for stdout; on Spark DIR/ for per-micro-batch parts")
    p.add_argument("--stats-json", help="write the run's stats as JSON here")
    p.add_argument("--rejects", help="write rejected rows with reasons here (CSV)")
    _add_archive_options(p)
    _add_input_options(p)
    p.add_argument(
        "--schema",
        action="append",
        metavar="NAME=COL:TYPE,...",
        help="declared column types of a stream (repeatable; string, int, double, bool; or NAME=PATH of a JSON object); other columns inferred",
    )
    p.add_argument("--buckets", type=int, help="hash buckets per window (hash joins)")
    _add_stats_options(p)
    p.add_argument("--negative-tuples", action="store_true", help="emit retractions (sign -1) when count-window members expire")
    p.add_argument(
        "--table",
        action="append",
        metavar="NAME=PATH",
        help="a relation (repeatable): rows with ts (default 0), optional op +/- and attributes, key first; non-retroactive unless FROM says TABLE NAME",
    )
    p.add_argument(
        "--strategy",
        default=DEFAULTS.strategy,
        choices=STRATEGIES,
        help=f"general queries: negative tuples, direct expiration, or update-pattern aware (default {DEFAULTS.strategy})",
    )
    p.add_argument(
        "--partitions", type=int, default=DEFAULTS.partitions, help=f"general queries: calendar queue partitions for --strategy upa (default {DEFAULTS.partitions})"
    )


def _add_archive_options(p: argparse.ArgumentParser) -> None:
    """``run --archive DIR``: the results also go to an on-disk archive (:mod:`slidewise.archive`)."""
    from slidewise.archive.layout import VARIANTS

    p.add_argument("--archive", metavar="DIR", help="also keep the results in an archive directory (a doubly partitioned index of sorted Parquet files)")
    p.add_argument("--archive-key", metavar="COL", help="with --archive: the result column the archive is probed by")
    p.add_argument("--archive-lifetime", metavar="COL", help="with --archive: each row lives ts + COL (default: until the result's exp)")
    p.add_argument("--archive-every", type=int, metavar="T", help="with --archive: update interval Δ in time units (default: largest lifetime / 4√n)")
    p.add_argument("--archive-variant", default="rebuild", choices=list(VARIANTS), help="with --archive: index variant (default rebuild, the doubly partitioned index)")
    p.add_argument("--archive-n", type=int, default=16, metavar="N", help="with --archive: sub-indices, G = E = √N (default 16)")
    p.add_argument("--archive-memory", type=float, metavar="MB", help="with --archive: MB an update's working set is cut to (batches, row groups; default 64)")


def _add_input_options(p: argparse.ArgumentParser) -> None:
    """How the inputs are read and ordered (``run`` and ``run-many``), defaults from :data:`DEFAULTS`."""
    p.add_argument("--lateness", default=str(DEFAULTS.lateness), help=f"allowed out-of-orderness, e.g. 500, 10s (default {DEFAULTS.lateness})")
    p.add_argument("--ts-column", default=DEFAULTS.ts_column, help=f"timestamp column (default {DEFAULTS.ts_column})")
    p.add_argument(
        "--ts-unit",
        default=DEFAULTS.ts_unit,
        choices=TS_UNITS,
        help="timestamp unit; auto: integers as is, float epoch seconds and ISO text to ms, and an error when values imply different units",
    )
    p.add_argument("--chunk-rows", type=int, default=DEFAULTS.chunk_rows, help=f"rows per processing chunk (default {DEFAULTS.chunk_rows})")
    p.add_argument(
        "--source-option",
        action="append",
        metavar="NAME.KEY=VALUE",
        help="a setting of one stream over the run's (repeatable): lateness, ts-column or ts-unit, e.g. --source-option dns.lateness=5s",
    )


def _add_stats_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--stats",
        action="append",
        metavar="STREAM:rate=R,distinct=V",
        help="stream statistics for the cost-based planner (repeatable), e.g. --stats S1:rate=10,distinct=500; default: uniform",
    )
    p.add_argument("--search", default="auto", choices=["auto", "heuristic", "exact"], help="join-order search (auto: exact for up to 6 streams)")


def cmd_bench(argv: list[str]) -> int:
    """``slidewise bench ...``: the experiments live in :mod:`slidewise.bench.cli` (the ``bench`` extra)."""
    require_extra("bench", "slidewise bench")
    from slidewise.bench.cli import main as bench_main

    return bench_main(argv)


def build_parser() -> argparse.ArgumentParser:
    from slidewise.runtime.overload import add_cli_arguments

    p = argparse.ArgumentParser(prog="slidewise", description="Sliding-window query engine for data streams.")
    p.add_argument("--version", action="version", version=f"slidewise {__import__('slidewise').__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    r = sub.add_parser("run", help="run a query to the end of its inputs")
    _add_query_argument(r)
    r.add_argument("--source", action="append", metavar="NAME=PATH", help="input of a FROM stream (repeatable)")
    _add_run_options(r)
    add_cli_arguments(r)
    r.set_defaults(func=cmd_run)

    m = sub.add_parser("run-many", help="run a file of named queries, sharing state where queries can")
    m.add_argument("queries", metavar="FILE", help="statements 'name: SELECT ...;', one per query")
    m.add_argument("--source", action="append", metavar="NAME=PATH", help="input of a FROM stream (repeatable)")
    m.add_argument("--out-dir", required=True, help="one result file NAME.FORMAT per query")
    m.add_argument("--format", default="csv", choices=["csv", "jsonl", "parquet"], help="result files' format")
    m.add_argument("--stats-json", metavar="PATH", help="write the run's stats (which synopsis serves which query) as JSON")
    m.add_argument("--no-sharing", action="store_true", help="run every query alone (for comparison)")
    _add_input_options(m)
    m.add_argument("--rejects", help="write rejected (too late) rows here")
    from slidewise.spark.cli import add_spark_options

    m.add_argument(
        "--engine",
        default="local",
        choices=["local", "spark"],
        help="local (default), or spark: each group of queries that share state runs as one Spark streaming query with one pane state",
    )
    add_spark_options(m)
    m.set_defaults(func=cmd_run_many)

    d = sub.add_parser("demo", help="run the bundled demo (Zeek dns + ssl logs)")
    d.add_argument("--out", help="also write all results here")
    d.add_argument("--rejects", help="write rejected (too late) rows here")
    from slidewise.spark.cli import ENGINES, default_engine

    d.add_argument("--engine", default=default_engine(), choices=ENGINES, help=f"execution engine (default: {default_engine()}; SLIDEWISE_ENGINE sets the default)")
    d.add_argument("--master", help="Spark master URL (default local[*])")
    d.add_argument("--conf", action="append", metavar="K=V", help="Spark setting (repeatable)")
    d.set_defaults(func=cmd_demo)

    e = sub.add_parser("explain", help="show the plan chosen for a query")
    _add_query_argument(e)
    e.add_argument("--algorithm")
    e.add_argument("--order")
    e.add_argument("--buckets", type=int, help="hash buckets per window (default: allocated by the model)")
    _add_stats_options(e)
    e.add_argument(
        "--strategy",
        default=DEFAULTS.strategy,
        choices=STRATEGIES,
        help=f"general queries: processing strategy whose state structures to show (default {DEFAULTS.strategy})",
    )
    e.add_argument("--partitions", type=int, default=DEFAULTS.partitions, help="general queries: calendar queue partitions")
    e.add_argument("--json", action="store_true")
    e.set_defaults(func=cmd_explain)

    g = sub.add_parser("generate", help="write the papers' synthetic streams")
    g.add_argument("--rates", default="1,1", help="relative arrival rates λ_i, e.g. 10,1,1,3")
    g.add_argument("--distinct", default="1000,1000", help="distinct join values v_i per stream")
    g.add_argument("--tuples", type=int, default=100_000, help="total tuples over all streams")
    g.add_argument("--zipf", type=float, help="Zipf exponent for the join attribute (default uniform)")
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--format", default="csv", choices=["csv", "jsonl", "parquet"])
    g.add_argument("--out", default="streams", help="output directory (S1.csv, S2.csv, ...)")
    g.set_defaults(func=cmd_generate)

    b = sub.add_parser("bench", add_help=False, help="run an experiment (the bench extra); see `slidewise bench --help`")
    b.add_argument("argv", nargs=argparse.REMAINDER)  # parsed by slidewise.bench.cli (see main)

    c = sub.add_parser("calibrate", help="measure the binary join cost model's weight factors here")
    c.add_argument("--out", help="profile path (default ~/.config/slidewise/profile.json)")
    c.add_argument("--sizes", help="window sizes to measure, e.g. 500,2000,8000")
    c.add_argument("--quick", action="store_true", help="smaller sizes and shorter measurements")
    c.add_argument("--min-time", type=float, help="seconds measured per point (default 0.05)")
    c.add_argument("--bucket-size", type=float, default=10.0, help="hash tuples per bucket (default 10)")
    c.add_argument("--node-size", type=int, default=100, help="tree node size N (default 100)")
    c.add_argument("--clock", default="cpu", choices=["cpu", "wall"], help="process CPU time (default) or wall time (perf_counter)")
    c.add_argument("--rounds", type=int, help="measurements per point, median kept (default 3, 1 with --quick)")
    c.set_defaults(func=cmd_calibrate)

    ar = sub.add_parser("archive", help="read an archive written by run --archive")
    arsub = ar.add_subparsers(dest="action", required=True, metavar="ACTION")
    ap = arsub.add_parser("probe", help="CSV of the unexpired rows with a key")
    ap.add_argument("dir", metavar="DIR")
    ap.add_argument("key", metavar="KEY")
    asc = arsub.add_parser("scan", help="CSV of the unexpired rows, optionally of a key range")
    asc.add_argument("dir", metavar="DIR")
    asc.add_argument("--from", dest="lo", metavar="KEY", help="smallest key")
    asc.add_argument("--to", dest="hi", metavar="KEY", help="largest key")
    for reader in (ap, asc):
        reader.add_argument("--archive-memory", type=float, metavar="MB", help="MB the rows are read and written out in (batches; default 64)")
    ai = arsub.add_parser("info", help="the archive's layout, current time, rows per sub-index and live files, as JSON")
    ai.add_argument("dir", metavar="DIR")
    ar.set_defaults(func=cmd_archive)

    from slidewise.manager.scheduling import POLICIES as SCHEDULERS
    from slidewise.manager.transactions import POLICIES as ISOLATIONS

    sv = sub.add_parser("serve", help="run the live query manager as an HTTP JSON service (the serve extra)")
    sv.add_argument(
        "--source", action="append", metavar="NAME=PATH|DIR|URI", help="a growing file or directory, or a kafka://HOST:PORT/TOPIC, as stream NAME (repeatable)"
    )
    sv.add_argument("--port", type=int, required=True, help="TCP port to listen on")
    sv.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    sv.add_argument("--state", metavar="DIR", help="keep queries, answers and read offsets here; a restart with it resumes them")
    sv.add_argument("--archive", metavar="DIR", help="an archive (run --archive DIR) that GET /archive/probe?key=K reads")
    sv.add_argument("--archive-memory", type=float, metavar="MB", help="with --archive: MB a probe's working set is cut to (default 64)")
    sv.add_argument("--sub-window", type=_positive, default=1000, metavar="T", help="sub-window length in time units (default 1000)")
    sv.add_argument("--sub-windows", type=_positive, default=60, metavar="N", help="sub-windows per window (default 60): RANGE up to N*T-1")
    sv.add_argument("--ts-column", default=DEFAULTS.ts_column, help=f"timestamp column (default {DEFAULTS.ts_column})")
    sv.add_argument("--ts-unit", default=DEFAULTS.ts_unit, choices=TS_UNITS, help=f"timestamp unit (default {DEFAULTS.ts_unit})")
    sv.add_argument("--schema", action="append", metavar="NAME=col:type,...", help="declared column types of a stream (repeatable; as for run)")
    sv.add_argument("--isolation", default="ttu", choices=ISOLATIONS, help="concurrency control of slides and scans (default ttu)")
    sv.add_argument("--scheduling", default="hybrid-late-pending", choices=SCHEDULERS, help="periodic scheduler (default hybrid-late-pending)")
    sv.set_defaults(func=cmd_serve)

    a = sub.add_parser("algorithms", help="list the join algorithms")
    a.set_defaults(func=cmd_algorithms)
    for command in (r, m, d, e, g, c, a):
        _add_verbosity(command)
    return p


def _add_verbosity(p: argparse.ArgumentParser) -> None:
    """``-v`` / ``-vv`` / ``-q`` of every command (see :func:`configure_logging`)."""
    p.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="-v: progress messages and the libraries' log (Spark's log with Java stack traces, py4j, kafka); -vv: debug",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="errors only: no progress line, no summary, no warnings")


#: loggers of the libraries slidewise uses, silent unless -v (Python warnings go to py.warnings)
LIBRARY_LOGGERS = ("py4j", "pyspark", "kafka", "fastavro", "urllib3", "asyncio", "py.warnings")


def verbosity(args) -> int:
    """-1 with ``-q``, else the count of ``-v`` (0 by default)."""
    return -1 if getattr(args, "quiet", False) else int(getattr(args, "verbose", 0) or 0)


def configure_logging(level: int) -> None:
    """Set up Python logging for a command: ``level`` -1 (``-q``), 0, 1 (``-v``) or 2 (``-vv``).

    One handler on the root logger writes to stderr: ``slidewise: message`` lines of the
    ``slidewise`` logger (errors only with ``-q``, warnings by default, progress (INFO) with
    ``-v``, debug with ``-vv``), and ``name: level: message`` of the libraries, whose
    loggers and Python's warnings are off unless ``-v`` (then INFO, DEBUG with ``-vv``).
    """
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _Stderr)]:
        root.removeHandler(old)
    handler = _Stderr()
    handler.setFormatter(_Formatter())
    root.addHandler(handler)
    logging.getLogger("slidewise").setLevel({-1: logging.ERROR, 0: logging.WARNING, 1: logging.INFO}.get(level, logging.DEBUG))
    logging.captureWarnings(True)
    libraries = logging.CRITICAL + 1 if level < 1 else (logging.INFO if level == 1 else logging.DEBUG)
    for name in LIBRARY_LOGGERS:
        logging.getLogger(name).setLevel(libraries)
    root.setLevel(logging.ERROR if level < 1 else libraries)  # any other library: its errors, all with -v
    if level >= 1:
        from slidewise.spark.cli import apply_verbose

        apply_verbose(True)


class _Stderr(logging.StreamHandler):
    """A handler writing to the current ``sys.stderr`` (which tests and redirections may swap)."""

    def __init__(self) -> None:
        super().__init__()

    @property  # type: ignore[override]
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:
        pass


class _Formatter(logging.Formatter):
    """``slidewise: message`` for INFO, ``slidewise: warning: message`` for WARNING and above; ``name: level: message`` for the libraries."""

    def format(self, record: logging.LogRecord) -> str:
        text = record.getMessage()
        if record.name != "slidewise" and not record.name.startswith("slidewise."):
            return f"{record.name}: {record.levelname.lower()}: {text}"
        if record.levelno >= logging.WARNING:
            return f"slidewise: {record.levelname.lower()}: {text}"
        if record.levelno < logging.INFO:
            return f"slidewise: debug: {record.name}: {text}"
        return f"slidewise: {text}"


def _bound_archive_memory() -> None:
    """A command that keeps or reads an archive: Arrow's pool chosen before pyarrow is imported (:mod:`slidewise.archive.memory`)."""
    from slidewise.archive.memory import prepare

    prepare()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["archive"] or argv[:2] == ["bench", "archive"] or any(a == "--archive" or a.startswith("--archive=") for a in argv):
        _bound_archive_memory()  # before the parser, whose choices import pyarrow
    if argv[:1] == ["bench"]:  # the experiments' own parser, options and --help

        def run():
            return cmd_bench(argv[1:])
    else:
        args = build_parser().parse_args(argv)
        configure_logging(verbosity(args))

        def run():
            return args.func(args)

    from slidewise.runtime.outputs import kept_signal_handlers

    with kept_signal_handlers():
        try:
            return run()
        except SlidewiseError as err:
            print(f"slidewise: error: {err}", file=sys.stderr)
            return err.exit_code
        except KeyboardInterrupt as err:
            print("slidewise: interrupted", file=sys.stderr)
            return getattr(err, "exit_code", 130)
        except MemoryError:
            print("slidewise: error: out of memory (hint: lower --chunk-rows, or narrow the windows)", file=sys.stderr)
            return 2
        except BrokenPipeError:  # the reader of stdout has gone (`--out - | head`): stop quietly
            import os

            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no error at exit's flush
            return 0


def entry() -> None:
    """The ``slidewise`` command: :func:`main`, then leave without native teardown.

    Arrow's thread pools can abort a finishing interpreter ("terminate called
    without an active exception", exit -6) when their threads are torn down by
    static destructors. Every file is complete when :func:`main` returns, so the
    process flushes its streams, runs the ``atexit`` hooks (logging, Spark) and
    ends with ``os._exit``, skipping that teardown.
    """
    import atexit
    import os

    try:
        code = main()
    except SystemExit as stop:  # argparse's usage errors and --help
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 2)
        if stop.code is not None and not isinstance(stop.code, int):
            print(stop.code, file=sys.stderr)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass
    atexit._run_exitfuncs()
    os._exit(code)


if __name__ == "__main__":
    entry()
