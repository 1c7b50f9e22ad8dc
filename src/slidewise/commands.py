"""The ``slidewise`` commands' handlers: run, run-many, demo, explain, generate, calibrate, archive, serve, algorithms.

:mod:`slidewise.cli` builds the parser and dispatches to these; each takes
the parsed arguments and returns the exit status.
"""

from __future__ import annotations

import functools
import json
import sys
from importlib import resources
from pathlib import Path

from slidewise.errors import OptionError, require_extra
from slidewise.options import RunOptions, parse_schema_option, parse_stream_options

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

    parts = args.engine == "spark" and (general or args.mode == "stream")  # batch parts; a file form is assembled from them
    outputs = {"--out": args.out, "--rejects": args.rejects, "--stats-json": args.stats_json, "--archive": args.archive}
    if parts:
        from slidewise.spark.sinks import file_target

        directories = tuple(o for o in ("--out", "--rejects") if not file_target(outputs[o])) + ("--archive",)
    else:
        directories = ("--archive",)
    check_run(_sources(args.source), tables, outputs, directories=directories, formats={} if "--out" in directories else {"--out": sink_format})


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

    wrote = [
        f"{stats['results']:,} results to {args.out}" if args.out else f"{stats['results']:,} results",
        f"{stats['rejects']:,} rejects to {args.rejects}" if args.rejects else "",
        f"stats to {args.stats_json}" if args.stats_json else "",
    ]
    print(f"slidewise: interrupted by {stopped} after {sum(stats['inputs'].values()):,} tuples; wrote " + ", ".join(w for w in wrote if w), file=sys.stderr)
    return 128 + signal.Signals[stopped].value


def _query(args):
    """The query of ``run`` / ``explain``: text, a ``*.cql`` name, or a Path from --query-file."""
    if args.query_file is not None:
        if args.query is not None:
            raise OptionError("the query is given twice (QUERY and --query-file)", hint="give one of them")
        return Path(args.query_file)
    if args.query is None:
        raise OptionError("no query given", hint="pass the query text, a *.cql file, or --query-file PATH")
    return args.query


def run_options(args, *, collect: bool | None) -> RunOptions:
    """The ``run`` command's :class:`~slidewise.options.RunOptions` (``--lateness`` errors name the flag)."""
    from slidewise.model.time import parse_duration

    return RunOptions(
        lateness=parse_duration(args.lateness, what="--lateness"),
        ts_column=args.ts_column,
        ts_unit=args.ts_unit,
        chunk_rows=args.chunk_rows,
        out=args.out,
        collect=collect,
        rejects=args.rejects,
        progress=not args.quiet,
        strategy=args.strategy,
        partitions=args.partitions,
        schemas=parse_schema_option(getattr(args, "schema", None)),
        streams=parse_stream_options(args.source_option),
    )


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
        for c in head.columns:  # names and values from files: plain text, control characters escaped
            table.add_column(Text(printable(str(c))), overflow="fold")
        rows = [[Text(printable(_cell(c, v))) for v in head[c].tolist()] for c in head.columns]
        for row in zip(*rows):
            table.add_row(*row)
        Console().print(table)
    rate = stats.get("tuples_per_second") or 0
    if "strategy" in stats:  # a general plan
        console.print(
            f"[bold]{stats['results']:,}[/] results, {stats['retractions']:,} retractions from "
            f"{sum(stats['inputs'].values()):,} tuples ({', '.join(f'{k} {v:,}' for k, v in stats['inputs'].items())})"
            f" in {stats['seconds']:.3f} s = {rate:,.0f} tuples/s; strategy {stats['strategy']}; state peak "
            f"{stats['state_tuples_peak']:,} tuples; {stats['negative_tuples']:,} negative tuples; peak "
            f"{stats['peak_rss_mb']:.0f} MB; rejects {stats['rejects']:,}"
            + (f" ({'; '.join(f'{escape(printable(k))}: {v}' for k, v in stats['rejects_by_reason'].items())})" if stats['rejects'] else "")
        )
        return
    console.print(
        f"[bold]{stats['results']:,}[/] results from {sum(stats['inputs'].values()):,} tuples "
        f"({', '.join(f'{k} {v:,}' for k, v in stats['inputs'].items())}) in {stats['seconds']:.3f} s "
        f"= {rate:,.0f} tuples/s; algorithm {stats['algorithm']}, order {','.join(stats['join_order'])}; "
        f"{stats['comparisons']:,} comparisons; peak {stats['peak_rss_mb']:.0f} MB; "
        f"rejects {stats['rejects']:,}" + (f" ({'; '.join(f'{escape(printable(k))}: {v}' for k, v in stats['rejects_by_reason'].items())})" if stats['rejects'] else "")
    )


def cmd_run(args) -> int:
    from slidewise.api import run
    from slidewise.cql.parser import load_any
    from slidewise.plan.logical import Plan
    from slidewise.plan.wjoin import WJoinQuery, local_only
    from slidewise.runtime.overload import kwargs_from_args, summary_line
    from slidewise.spark.cli import resolve_engine

    args.query = _query(args)
    show = args.out is None
    tables = _tables(args.table)
    # a Spark option without --engine selects Spark; a general query stays local without one
    spark_asked = [f"--{name}" for name in ("master", "conf", "trigger", "once", "checkpoint") if getattr(args, name)]
    spark_asked += ["--mode batch"] if args.mode == "batch" else []
    parsed = functools.cache(lambda: load_any(args.query, tables))  # parsed once, when first needed
    general = not spark_asked and isinstance(parsed(), Plan)
    args.engine = resolve_engine(args.engine, local_only=bool(kwargs_from_args(args)) or general, spark_asked=bool(spark_asked))
    follow = args.engine == "local" and _uses_kafka(args) and bool(args.checkpoint)
    if follow:  # topics followed, offsets and state in the checkpoint (slidewise.spark.follow)
        spark_asked = [o for o in spark_asked if o not in ("--once", "--checkpoint")]
    elif args.engine == "local" and _uses_kafka(args) and "--once" in spark_asked:
        spark_asked.remove("--once")  # the local engine reads topics to the end offsets seen at start
    elif args.engine == "local" and _uses_kafka(args):
        raise OptionError(
            "the local engine follows a Kafka topic only with --checkpoint DIR (where it keeps its offsets and state)",
            hint="add --checkpoint DIR; or --once to read up to the end offsets seen at start; or follow the topic with --engine spark",
        )
    if args.engine == "local" and spark_asked:
        raise OptionError(f"{spark_asked[0]} applies to the Spark engine, but this run uses the local engine", hint="add --engine spark, or drop the option")
    if args.engine == "spark":
        if getattr(args, "schema", None):
            raise OptionError("--schema works with the local engine only", hint="drop --schema, or run with --engine local")
        require_extra("spark", "--engine spark")
        if isinstance(parsed(), WJoinQuery) and args.mode == "batch":  # W-joins run as streaming queries: say so before the session starts
            raise local_only()
    _check_outputs(args, tables, isinstance(parsed(), Plan))
    opts = run_options(args, collect=show and not args.quiet)
    if args.engine == "local":
        from slidewise.runtime.outputs import install_signal_handlers

        install_signal_handlers()  # SIGINT / SIGTERM: stop reading, finish the files, exit 130 / 143
    archived = _archive_options(args)
    if archived and (follow or (args.engine == "spark" and args.mode == "batch" and not isinstance(parsed(), Plan))):
        raise OptionError(
            "--archive works with micro-batch streams and local runs, not with " + ("following a Kafka topic" if follow else "--mode batch"),
            hint="drop --archive, or run " + ("without --checkpoint" if follow else "with --mode stream"),
        )
    spark_archive = {"archive": archived} if archived else {}
    if args.engine == "spark" and isinstance(parsed(), Plan):
        from slidewise.spark.cli import plan_from_args

        result = plan_from_args(args, _sources(args.source), tables, opts, {**_operator_options(args), **kwargs_from_args(args), **spark_archive})
    elif args.engine == "spark" and args.mode == "batch":
        from slidewise.spark.batch import batch_from_args

        result = batch_from_args(args, _sources(args.source), opts, _operator_options(args))
    elif args.engine == "spark":
        from slidewise.spark.cli import run_from_args

        result = run_from_args(args, _sources(args.source), opts, {**_operator_options(args), **kwargs_from_args(args), **spark_archive})
    elif follow:
        require_extra("spark", "following a Kafka topic with --checkpoint")
        from slidewise.spark.follow import follow as follow_topics

        result = follow_topics(
            args.query,
            _sources(args.source),
            out=args.out,
            checkpoint=args.checkpoint,
            once=args.once,
            tables=tables,
            run_options=opts,
            algorithm=args.algorithm,
            order=args.order,
            **_operator_options(args),
            **kwargs_from_args(args),
        )
    else:
        result = run(
            args.query,
            _sources(args.source),
            algorithm=args.algorithm,
            order=args.order,
            tables=tables,
            run_options=opts,
            **_operator_options(args),
            **kwargs_from_args(args),
            **archived,
        )
    code = _finish_run(args, result.stats)
    if code:
        return code
    if not args.quiet:
        _print_summary(result.stats, result.results)
        if summary_line(result.stats):
            print(summary_line(result.stats), file=sys.stderr)
        if "archive" in result.stats:
            a = result.stats["archive"]
            print(
                f"archive {a['dir']}: {a['rows']:,} unexpired rows at {a['now']} after {a['updates']:,} updates "
                f"({a['inserted']:,} inserted, {a['deleted']:,} expired, {a['expired_on_arrival']:,} already expired when due)",
                file=sys.stderr,
            )
    return 0


def _archive_options(args) -> dict:
    """``--archive*`` as the keywords of :func:`slidewise.run`; none without --archive."""
    if not args.archive:
        given = [f"--archive-{n}" for n in ("key", "lifetime", "every", "memory") if getattr(args, f"archive_{n}") is not None]
        if given:
            raise OptionError(f"{given[0]} needs --archive DIR", hint="add --archive DIR, or drop it")
        return {}
    names = ("archive", "archive_key", "archive_lifetime", "archive_every", "archive_variant", "archive_n", "archive_memory")
    return {n: getattr(args, n) for n in names}


def cmd_archive(args) -> int:
    """``slidewise archive probe|scan|info DIR``: rows as CSV on stdout (exp >= the archive's current time), or its facts."""
    from slidewise.archive import Archive
    from slidewise.archive.index import MEMORY_MB
    from slidewise.runtime.sinks import open_sink

    memory_mb = getattr(args, "archive_memory", None)
    archive = Archive.open(args.dir, memory_mb=MEMORY_MB if memory_mb is None else memory_mb)
    if args.action == "info":
        m = archive.manifest
        facts = {"key": m["key"], "now": m["now"], "updates": m["updates"], "layout": m["layout"], "rows": archive.rows(), "cell_rows": archive.cell_rows()}
        print(json.dumps({**facts, "files": archive.live_files()}, indent=2))
        return 0
    tables = archive.scan(args.key, args.key) if args.action == "probe" else archive.scan(args.lo, args.hi)
    schema = archive.schema
    with open_sink("-", [] if schema is None else schema.names) as sink:  # the same CSV as run --out -, batch by batch
        for table in tables:
            sink.write({c: table.column(c).to_numpy(zero_copy_only=False) for c in table.column_names})
    return 0


def _uses_kafka(args) -> bool:
    """A ``kafka://`` --source or --out."""
    from slidewise.kafka.uri import is_kafka

    return is_kafka(args.out) or any(is_kafka(p.partition("=")[2]) for p in args.source or [])


def cmd_run_many(args) -> int:
    from slidewise.many import print_many, run_many
    from slidewise.model.time import parse_duration
    from slidewise.runtime.outputs import install_signal_handlers

    install_signal_handlers()
    spark: dict = {}
    asked = [f for f, v in (("--master", args.master), ("--conf", args.conf), ("--trigger", args.trigger), ("--once", args.once), ("--checkpoint", args.checkpoint)) if v]
    if args.engine == "local" and asked:
        raise OptionError(f"{asked[0]} applies to the Spark engine, but this run uses the local engine", hint="add --engine spark, or drop the option")
    if args.engine == "spark":
        from slidewise.spark.cli import parse_conf

        require_extra("spark", "--engine spark")
        spark = {"engine": "spark", "master": args.master, "conf": parse_conf(args.conf), "trigger": args.trigger, "once": True if args.once else None}
        spark["checkpoint"] = args.checkpoint
    result = run_many(
        args.queries,
        _sources(args.source),
        **spark,
        out_dir=args.out_dir,
        out_format=args.format,
        shared=not args.no_sharing,
        run_options=RunOptions(
            lateness=parse_duration(args.lateness, what="--lateness"),
            ts_column=args.ts_column,
            ts_unit=args.ts_unit,
            chunk_rows=args.chunk_rows,
            collect=False,
            rejects=args.rejects,
            streams=parse_stream_options(args.source_option),
        ),
    )
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
    if not args.quiet:
        print(DEMO_QUERY.rstrip(), file=sys.stderr)
        print("-- data: 3 minutes of Zeek dns/ssl logs, WRCCDC 2018 (CC BY-SA 4.0; see NOTICE.md)\n", file=sys.stderr)
    demo_sources = {"dns": str(data / "dns.csv"), "ssl": str(data / "ssl.csv")}
    if args.engine == "spark":
        from slidewise.spark.cli import demo_from_args

        result = demo_from_args(args, DEMO_QUERY, demo_sources, lateness=60_000)
    else:
        result = run(DEMO_QUERY, demo_sources, lateness=60_000, out=args.out, collect=args.out is None, rejects=args.rejects, progress=not args.quiet)
    if not args.quiet:
        _print_summary(result.stats, result.results)
    return 0


def cmd_explain(args) -> int:
    from slidewise.cql.parser import load_any
    from slidewise.optimizer.explain import explain_info, render
    from slidewise.optimizer.planner import choose
    from slidewise.plan.logical import Plan
    from slidewise.plan.wjoin import WJoinQuery

    q = load_any(_query(args))
    if isinstance(q, WJoinQuery):  # a W-join: its constraints, closed, and its operator with the planner's reason
        from slidewise.optimizer.wjoin import choose_wjoin
        from slidewise.runtime.join_engine import as_join, wjoin_operator

        form1 = as_join(q, args.algorithm, args.order)
        if form1 is not None:
            plan = choose(form1, stats=args.stats)
            print(f"W-join on {plan.algorithm.name}: {q.describe()}; every pair within {q.uniform_window()}")
            print(f"  the join path's sliding-window join with [RANGE {q.uniform_window()}] per stream (same results, faster than the W-join operators)")
            return 0
        wjoin_operator(q, args.algorithm, args.order, {})  # refuses what does not apply to a W-join
        choice = choose_wjoin(q, args.algorithm, args.stats)
        print(f"W-join on {choice.cls.name}: {q.describe()}; reach {dict(zip(q.join.aliases, q.reach()))}")
        print(f"  {choice.describe()}")
        return 0
    if isinstance(q, Plan):  # a general query: the update-pattern annotated logical plan
        from slidewise.optimizer.explain import plan_info, render_plan

        info = plan_info(q, args.stats, args.strategy, args.partitions)
        print(json.dumps(info, indent=2, ensure_ascii=False) if args.json else render_plan(info), end="\n" if args.json else "")
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
        if not args.quiet:
            print(f"{p}  {len(s['ts']):,} tuples", file=sys.stderr)
    return 0


def cmd_calibrate(args) -> int:
    from slidewise.optimizer.calibrate import run_cli

    return run_cli(args)


def cmd_algorithms(args) -> int:
    from slidewise.operators.joins import algorithms

    for name, cls in algorithms().items():
        print(f"{name:<22} {cls.summary}")
    return 0


def cmd_serve(args) -> int:
    """``slidewise serve``: the live query manager behind an HTTP JSON API until SIGINT / SIGTERM."""
    require_extra("serve", "slidewise serve")
    from slidewise.serve.service import Service, serve

    if not 0 <= args.port < 65536:
        raise OptionError(f"--port {args.port} is not a TCP port", hint="use 1 to 65535 (0: any free port)")
    service = Service(
        _sources(args.source or []),
        args.sub_window,
        args.sub_windows,
        state=args.state,
        ts_column=args.ts_column,
        ts_unit=args.ts_unit,
        schemas=parse_schema_option(args.schema),
        isolation=args.isolation,
        scheduling=args.scheduling,
        archive=args.archive,
        archive_memory=args.archive_memory,
    )
    serve(service, args.host, args.port)
    return 0
