"""The ``slidewise`` command line: run, demo, explain, generate, bench, calibrate, algorithms."""

from __future__ import annotations

import argparse
import json
import sys
from importlib import resources
from pathlib import Path

from slidewise.errors import OptionError, SlidewiseError, require_extra
from slidewise.options import DEFAULTS, STRATEGIES, TS_UNITS, RunOptions

DEMO_QUERY = """\
-- Which hosts looked a name up and then opened a TLS session within 5 seconds?
SELECT ISTREAM dns.orig_h, dns.query, ssl.resp_h
FROM dns [RANGE 5 SECONDS], ssl [NOW]
WHERE dns.orig_h = ssl.orig_h
"""


def _sources(pairs: list[str]) -> dict[str, str]:
    from slidewise.runtime.outputs import named_paths

    return named_paths(pairs, "--source", "S1=data/s1.csv")


def _tables(pairs: list[str]) -> dict[str, str]:
    from slidewise.runtime.outputs import named_paths

    return named_paths(pairs, "--table", "R=data/r.csv")


def _check_outputs(args, tables: dict, general: bool) -> None:
    """Refuse unsafe --out / --rejects / --stats-json before anything is read (see runtime.outputs)."""
    from slidewise.runtime.outputs import check_run
    from slidewise.runtime.sinks import sink_format

    parts = args.engine == "spark" and (general or args.mode == "stream")  # directories of batch parts
    check_run(_sources(args.source), tables,
              {"--out": args.out, "--rejects": args.rejects, "--stats-json": args.stats_json},
              directories=("--out", "--rejects") if parts else (),
              formats={} if parts else {"--out": sink_format})


def _finish_run(args, stats: dict) -> int:
    """Write --stats-json (whole or not at all); after an interrupt, one line on what was written; exit status."""
    from slidewise.runtime.outputs import shielded, write_atomic

    stopped = stats.get("signal") if stats.get("interrupted") else None
    with shielded(deliver=stopped is None):
        if args.stats_json:
            write_atomic(args.stats_json, (json.dumps(stats, indent=2) + "\n").encode(), "--stats-json")
    if stopped is None:
        return 0
    import signal

    wrote = [f"{stats['results']:,} results to {args.out}" if args.out else f"{stats['results']:,} results",
             f"{stats['rejects']:,} rejects to {args.rejects}" if args.rejects else "",
             f"stats to {args.stats_json}" if args.stats_json else ""]
    print(f"slidewise: interrupted by {stopped} after {sum(stats['inputs'].values()):,} tuples; wrote "
          + ", ".join(w for w in wrote if w), file=sys.stderr)
    return 128 + signal.Signals[stopped].value


def _add_query_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("query", nargs="?", help="CQL text, or a file whose name ends in .cql")
    p.add_argument("--query-file", metavar="PATH", help="read the query from this file (any name)")


def _query(args):
    """The query of ``run`` / ``explain``: text, a ``*.cql`` name, or a Path from --query-file."""
    if args.query_file is not None:
        if args.query is not None:
            raise OptionError("the query is given twice (QUERY and --query-file)", hint="give one of them")
        return Path(args.query_file)
    if args.query is None:
        raise OptionError("no query given", hint="pass the query text, a *.cql file, or --query-file PATH")
    return args.query


def _add_run_options(p: argparse.ArgumentParser) -> None:
    from slidewise.spark.cli import ENGINES, add_spark_options, default_engine

    p.add_argument("--engine", default=None, choices=ENGINES,
                   help=f"execution engine: spark (Spark Structured Streaming, local[*] unless --master) "
                        f"or local (embedded, in-process); default {default_engine()} (SLIDEWISE_ENGINE "
                        "sets it); without --engine, a Spark option such as --checkpoint or --mode batch "
                        "selects spark, and runs with overload or adaptive options stay local")
    add_spark_options(p)
    p.add_argument("--mode", default="stream", choices=["stream", "batch"],
                   help="with --engine spark: stream (Structured Streaming) or batch (one Spark SQL job "
                        "over the recorded files, for backfills; --out is then a file)")
    p.add_argument("--algorithm", help="join algorithm (see `slidewise algorithms`); default: chosen by the planner")
    p.add_argument("--order", help="global join order, e.g. S2,S1,S3")
    p.add_argument("--out", help="result file (.csv, .jsonl, .parquet) or - for stdout")
    p.add_argument("--stats-json", help="write the run's stats as JSON here")
    p.add_argument("--rejects", help="write rejected rows with reasons here (CSV)")
    p.add_argument("--lateness", default=str(DEFAULTS.lateness),
                   help=f"allowed out-of-orderness, e.g. 500, 10s (default {DEFAULTS.lateness})")
    p.add_argument("--ts-column", default=DEFAULTS.ts_column, help=f"timestamp column (default {DEFAULTS.ts_column})")
    p.add_argument("--ts-unit", default=DEFAULTS.ts_unit, choices=TS_UNITS,
                   help="timestamp unit; auto: integers as is, float epoch seconds and ISO text to ms, "
                        "and an error when values imply different units")
    p.add_argument("--chunk-rows", type=int, default=DEFAULTS.chunk_rows,
                   help=f"rows per processing chunk (default {DEFAULTS.chunk_rows})")
    p.add_argument("--buckets", type=int, help="hash buckets per window (hash joins)")
    _add_stats_options(p)
    p.add_argument("--negative-tuples", action="store_true",
                   help="emit retractions (sign -1) when count-window members expire")
    p.add_argument("--quiet", action="store_true", help="no progress line and no summary")
    p.add_argument("--table", action="append", metavar="NAME=PATH",
                   help="a relation (repeatable): rows with ts (default 0), optional op +/- and attributes, "
                        "key first; non-retroactive unless FROM says TABLE NAME")
    p.add_argument("--strategy", default=DEFAULTS.strategy, choices=STRATEGIES,
                   help="general queries: negative tuples, direct expiration, or update-pattern aware "
                        f"(default {DEFAULTS.strategy})")
    p.add_argument("--partitions", type=int, default=DEFAULTS.partitions,
                   help=f"general queries: calendar queue partitions for --strategy upa (default {DEFAULTS.partitions})")


def _add_stats_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--stats", action="append", metavar="STREAM:rate=R,distinct=V",
                   help="stream statistics for the cost-based planner (repeatable), "
                        "e.g. --stats S1:rate=10,distinct=500; default: uniform")
    p.add_argument("--search", default="auto", choices=["auto", "heuristic", "exact"],
                   help="join-order search (auto: exact for up to 6 streams)")


def run_options(args, *, collect: bool | None) -> RunOptions:
    """The ``run`` command's :class:`~slidewise.options.RunOptions` (``--lateness`` errors name the flag)."""
    from slidewise.model.time import parse_duration

    return RunOptions(lateness=parse_duration(args.lateness, what="--lateness"), ts_column=args.ts_column,
                      ts_unit=args.ts_unit, chunk_rows=args.chunk_rows, out=args.out, collect=collect,
                      rejects=args.rejects, progress=not args.quiet, strategy=args.strategy,
                      partitions=args.partitions)


def _operator_options(args) -> dict:
    opts = {}
    if args.buckets:
        opts["buckets"] = args.buckets
    if getattr(args, "stats", None):
        opts["stats"] = args.stats
    if getattr(args, "search", "auto") != "auto":
        opts["search"] = args.search
    if args.negative_tuples:
        opts["negatives"] = True
    return opts


def _cell(column: str, value) -> str:
    """Display form of a result value: epoch-millisecond times as UTC clock times."""
    from slidewise.model.batch import NO_EXP

    is_time = column in ("ts", "exp") or column.endswith(".ts")
    if is_time and isinstance(value, int):
        if value == NO_EXP:
            return "never"
        if value > 10**11:  # epoch milliseconds
            import datetime as dt

            return dt.datetime.fromtimestamp(value / 1000, dt.UTC).strftime("%H:%M:%S.%f")[:-3]
    return str(value)


def _print_summary(stats: dict, results, shown: int = 10) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    from slidewise.errors import printable

    console = Console(stderr=True)
    if results is not None and len(results):
        table = Table(title=f"first {min(shown, len(results)):,} of {len(results):,} results")
        head = results.head(shown)
        for c in head.columns:   # names and values from files: plain text, control characters escaped
            table.add_column(Text(printable(str(c))), overflow="fold")
        rows = [[Text(printable(_cell(c, v))) for v in head[c].tolist()] for c in head.columns]
        for row in zip(*rows):
            table.add_row(*row)
        Console().print(table)
    rate = stats.get("tuples_per_second") or 0
    if "strategy" in stats:   # a general plan
        console.print(
            f"[bold]{stats['results']:,}[/] results, {stats['retractions']:,} retractions from "
            f"{sum(stats['inputs'].values()):,} tuples ({', '.join(f'{k} {v:,}' for k, v in stats['inputs'].items())})"
            f" in {stats['seconds']:.3f} s = {rate:,.0f} tuples/s; strategy {stats['strategy']}; state peak "
            f"{stats['state_tuples_peak']:,} tuples; {stats['negative_tuples']:,} negative tuples; peak "
            f"{stats['peak_rss_mb']:.0f} MB; rejects {stats['rejects']:,}"
            + (f" ({'; '.join(f'{escape(printable(k))}: {v}' for k, v in stats['rejects_by_reason'].items())})"
               if stats['rejects'] else ""))
        return
    console.print(
        f"[bold]{stats['results']:,}[/] results from {sum(stats['inputs'].values()):,} tuples "
        f"({', '.join(f'{k} {v:,}' for k, v in stats['inputs'].items())}) in {stats['seconds']:.3f} s "
        f"= {rate:,.0f} tuples/s; algorithm {stats['algorithm']}, order {','.join(stats['join_order'])}; "
        f"{stats['comparisons']:,} comparisons; peak {stats['peak_rss_mb']:.0f} MB; "
        f"rejects {stats['rejects']:,}"
        + (f" ({'; '.join(f'{escape(printable(k))}: {v}' for k, v in stats['rejects_by_reason'].items())})"
           if stats['rejects'] else ""))


def cmd_run(args) -> int:
    from slidewise.api import run
    from slidewise.runtime.overload import kwargs_from_args, summary_line
    from slidewise.spark.cli import resolve_engine

    args.query = _query(args)
    show = args.out is None
    tables = _tables(args.table)
    # a Spark option without --engine selects Spark; a general query stays local without one
    spark_asked = [f"--{name}" for name in ("master", "conf", "trigger", "once", "checkpoint") if getattr(args, name)]
    spark_asked += ["--mode batch"] if args.mode == "batch" else []
    general = not spark_asked and _is_general(args.query, tables)
    args.engine = resolve_engine(args.engine, local_only=bool(kwargs_from_args(args)) or general,
                                 spark_asked=bool(spark_asked))
    if args.engine == "local" and _uses_kafka(args) and "--once" in spark_asked:
        spark_asked.remove("--once")  # the local engine reads topics to the end offsets seen at start
    elif args.engine == "local" and _uses_kafka(args):
        raise OptionError("the local engine reads a Kafka topic up to the end offsets seen at its start, "
                          "so it needs --once", hint="add --once, or follow the topic with --engine spark")
    if args.engine == "local" and spark_asked:
        raise OptionError(f"{spark_asked[0]} applies to the Spark engine, but this run uses the local engine",
                          hint="add --engine spark, or drop the option")
    if args.engine == "spark":
        require_extra("spark", "--engine spark")
        _refuse_wjoin(args.query, tables)
    _check_outputs(args, tables, _is_general(args.query, tables))
    opts = run_options(args, collect=show and not args.quiet)
    if args.engine == "local":
        from slidewise.runtime.outputs import install_signal_handlers

        install_signal_handlers()  # SIGINT / SIGTERM: stop reading, finish the files, exit 130 / 143
    if args.engine == "spark" and _is_general(args.query, tables):
        from slidewise.spark.cli import plan_from_args

        result = plan_from_args(args, _sources(args.source), tables, opts,
                                {**_operator_options(args), **kwargs_from_args(args)})
    elif args.engine == "spark" and args.mode == "batch":
        from slidewise.spark.batch import batch_from_args

        result = batch_from_args(args, _sources(args.source), opts, _operator_options(args))
    elif args.engine == "spark":
        from slidewise.spark.cli import run_from_args

        result = run_from_args(args, _sources(args.source), opts,
                               {**_operator_options(args), **kwargs_from_args(args)})
    else:
        result = run(args.query, _sources(args.source), algorithm=args.algorithm, order=args.order,
                     tables=tables, run_options=opts, **_operator_options(args), **kwargs_from_args(args))
    code = _finish_run(args, result.stats)
    if code:
        return code
    if not args.quiet:
        _print_summary(result.stats, result.results)
        if summary_line(result.stats):
            print(summary_line(result.stats), file=sys.stderr)
    return 0


def _uses_kafka(args) -> bool:
    """A ``kafka://`` --source or --out."""
    from slidewise.kafka.uri import is_kafka

    return is_kafka(args.out) or any(is_kafka(p.partition("=")[2]) for p in args.source or [])


def _refuse_wjoin(query: str, tables: dict) -> None:
    """A W-join cannot run on Spark yet: say so before the session starts."""
    from slidewise.cql.parser import load_any
    from slidewise.plan.wjoin import WJoinQuery, local_only

    if isinstance(load_any(query, tables), WJoinQuery):
        raise local_only()


def _is_general(query: str, tables: dict) -> bool:
    """Whether the query needs the general plan executor (not a plain join query)."""
    from slidewise.cql.parser import load_any
    from slidewise.plan.logical import Plan

    return isinstance(load_any(query, tables), Plan)


def cmd_run_many(args) -> int:
    from slidewise.many import print_many, run_many
    from slidewise.model.time import parse_duration
    from slidewise.runtime.outputs import install_signal_handlers

    install_signal_handlers()
    result = run_many(args.queries, _sources(args.source), out_dir=args.out_dir, out_format=args.format,
                      collect=False, lateness=parse_duration(args.lateness, what="--lateness"),
                      ts_column=args.ts_column, ts_unit=args.ts_unit, chunk_rows=args.chunk_rows,
                      shared=not args.no_sharing, rejects=args.rejects)
    if args.stats_json:
        Path(args.stats_json).write_text(json.dumps(result.stats, indent=2, default=str) + "\n")
    if not args.quiet:
        print_many(result)
    return 0


def cmd_demo(args) -> int:
    from slidewise.api import run

    if args.engine == "spark":
        require_extra("spark", "--engine spark")
    data = resources.files("slidewise") / "data" / "demo"
    print(DEMO_QUERY.rstrip(), file=sys.stderr)
    print("-- data: 3 minutes of Zeek dns/ssl logs, WRCCDC 2018 (CC BY-SA 4.0; see NOTICE.md)\n",
          file=sys.stderr)
    demo_sources = {"dns": str(data / "dns.csv"), "ssl": str(data / "ssl.csv")}
    if args.engine == "spark":
        from slidewise.spark.cli import demo_from_args

        result = demo_from_args(args, DEMO_QUERY, demo_sources, lateness=60_000)
    else:
        result = run(DEMO_QUERY, demo_sources, lateness=60_000, out=args.out, collect=args.out is None,
                     rejects=args.rejects, progress=True)
    _print_summary(result.stats, result.results)
    return 0


def cmd_explain(args) -> int:
    from slidewise.cql.parser import load_any
    from slidewise.optimizer.explain import explain_info, render
    from slidewise.optimizer.planner import choose
    from slidewise.plan.logical import Plan
    from slidewise.plan.wjoin import WJoinQuery

    q = load_any(_query(args))
    if isinstance(q, WJoinQuery):  # a W-join: its constraints, closed, and its operator
        print(f"W-join on mw-join: {q.describe()}; reach {dict(zip(q.join.aliases, q.reach()))}")
        return 0
    if isinstance(q, Plan):  # a general query: the update-pattern annotated logical plan
        from slidewise.optimizer.explain import plan_info, render_plan

        info = plan_info(q, args.stats, args.strategy, args.partitions)
        print(json.dumps(info, indent=2, ensure_ascii=False) if args.json else render_plan(info),
              end="\n" if args.json else "")
        return 0
    opts = {"buckets": args.buckets} if args.buckets else {}
    plan = choose(q, args.algorithm, args.order, stats=args.stats, search=args.search, **opts)
    info = explain_info(plan)
    print(json.dumps(info, indent=2) if args.json else render(info, q), end="\n" if args.json else "")
    return 0


def cmd_generate(args) -> int:
    from slidewise.runtime.generate import generate, write_streams

    rates = [float(x) for x in args.rates.split(",")]
    distinct = [int(x) for x in args.distinct.split(",")]
    streams = generate(rates, distinct, args.tuples, seed=args.seed, zipf=args.zipf)
    paths = write_streams(streams, args.out, fmt=args.format)
    for p, s in zip(paths, streams):
        print(f"{p}  {len(s['ts']):,} tuples", file=sys.stderr)
    return 0


def cmd_bench(argv: list[str]) -> int:
    """``slidewise bench ...``: the experiments live in :mod:`slidewise.bench.cli` (the ``bench`` extra)."""
    require_extra("bench", "slidewise bench")
    from slidewise.bench.cli import main as bench_main

    return bench_main(argv)


def cmd_calibrate(args) -> int:
    from slidewise.optimizer.calibrate import run_cli

    return run_cli(args)


def cmd_algorithms(args) -> int:
    from slidewise.operators.joins import algorithms

    for name, cls in algorithms().items():
        print(f"{name:<22} {cls.summary}")
    return 0


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
    m.add_argument("--lateness", default="0", help="allowed out-of-orderness, e.g. 500, 10s (default 0)")
    m.add_argument("--ts-column", default="ts", help="timestamp column (default ts)")
    m.add_argument("--ts-unit", default="auto", choices=["auto", "raw", "s", "ms", "us", "ns", "iso"], help="as for run")
    m.add_argument("--chunk-rows", type=int, default=65536, help="rows per processing chunk")
    m.add_argument("--rejects", help="write rejected (too late) rows here")
    m.add_argument("--quiet", action="store_true", help="no summary on stderr")
    m.set_defaults(func=cmd_run_many)

    d = sub.add_parser("demo", help="run the bundled demo (Zeek dns + ssl logs)")
    d.add_argument("--out", help="also write all results here")
    d.add_argument("--rejects", help="write rejected (too late) rows here")
    from slidewise.spark.cli import ENGINES, default_engine

    d.add_argument("--engine", default=default_engine(), choices=ENGINES,
                   help=f"execution engine (default: {default_engine()}; SLIDEWISE_ENGINE sets the default)")
    d.add_argument("--master", help="Spark master URL (default local[*])")
    d.add_argument("--conf", action="append", metavar="K=V", help="Spark setting (repeatable)")
    from slidewise.spark.cli import add_verbose_option

    add_verbose_option(d)
    d.set_defaults(func=cmd_demo)

    e = sub.add_parser("explain", help="show the plan chosen for a query")
    _add_query_argument(e)
    e.add_argument("--algorithm")
    e.add_argument("--order")
    e.add_argument("--buckets", type=int, help="hash buckets per window (default: allocated by the model)")
    _add_stats_options(e)
    e.add_argument("--strategy", default=DEFAULTS.strategy, choices=STRATEGIES,
                   help=f"general queries: processing strategy whose state structures to show "
                        f"(default {DEFAULTS.strategy})")
    e.add_argument("--partitions", type=int, default=DEFAULTS.partitions,
                   help="general queries: calendar queue partitions")
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

    b = sub.add_parser("bench", add_help=False,
                       help="run an experiment (the bench extra); see `slidewise bench --help`")
    b.add_argument("argv", nargs=argparse.REMAINDER)  # parsed by slidewise.bench.cli (see main)

    c = sub.add_parser("calibrate", help="measure the binary join cost model's weight factors here")
    c.add_argument("--out", help="profile path (default ~/.config/slidewise/profile.json)")
    c.add_argument("--sizes", help="window sizes to measure, e.g. 500,2000,8000")
    c.add_argument("--quick", action="store_true", help="smaller sizes and shorter measurements")
    c.add_argument("--min-time", type=float, help="seconds measured per point (default 0.05)")
    c.add_argument("--bucket-size", type=float, default=10.0, help="hash tuples per bucket (default 10)")
    c.add_argument("--node-size", type=int, default=100, help="tree node size N (default 100)")
    c.add_argument("--clock", default="cpu", choices=["cpu", "wall"],
                   help="process CPU time (default) or wall time (perf_counter)")
    c.add_argument("--rounds", type=int, help="measurements per point, median kept (default 3, 1 with --quick)")
    c.set_defaults(func=cmd_calibrate)

    a = sub.add_parser("algorithms", help="list the join algorithms")
    a.set_defaults(func=cmd_algorithms)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["bench"]:  # the experiments' own parser, options and --help
        def run():
            return cmd_bench(argv[1:])
    else:
        args = build_parser().parse_args(argv)
        from slidewise.spark.cli import apply_verbose

        apply_verbose(args)

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
            print("slidewise: error: out of memory (hint: lower --chunk-rows, or narrow the windows)",
                  file=sys.stderr)
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
