"""The ``slidewise`` command line: run, demo, explain, generate, bench, algorithms."""

from __future__ import annotations

import argparse
import json
import sys
from importlib import resources
from pathlib import Path

from slidewise.errors import OptionError, SlidewiseError

DEMO_QUERY = """\
-- Which hosts looked a name up and then opened a TLS session within 5 seconds?
SELECT ISTREAM dns.orig_h, dns.query, ssl.resp_h
FROM dns [RANGE 5 SECONDS], ssl [NOW]
WHERE dns.orig_h = ssl.orig_h
"""


def _sources(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs or []:
        name, sep, path = pair.partition("=")
        if not sep or not name or not path:
            raise OptionError(f"bad --source {pair!r}", hint="write --source NAME=PATH, e.g. --source S1=data/s1.csv")
        out[name.strip()] = path.strip()
    return out


def _add_run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--engine", default="local", choices=["local", "spark"],
                   help="execution engine (default: local, the embedded engine)")
    p.add_argument("--algorithm", help="join algorithm (see `slidewise algorithms`); default: chosen by the planner")
    p.add_argument("--order", help="global join order, e.g. S2,S1,S3")
    p.add_argument("--out", help="result file (.csv, .jsonl, .parquet) or - for stdout")
    p.add_argument("--stats-json", help="write the run's stats as JSON here")
    p.add_argument("--rejects", help="write rejected rows with reasons here (CSV)")
    p.add_argument("--lateness", default="0", help="allowed out-of-orderness, e.g. 500, 10s (default 0)")
    p.add_argument("--ts-column", default="ts", help="timestamp column (default ts)")
    p.add_argument("--ts-unit", default="auto", choices=["auto", "raw", "s", "ms", "us", "ns", "iso"],
                   help="timestamp unit; auto: integers as is, float epoch seconds and ISO text to ms")
    p.add_argument("--chunk-rows", type=int, default=65536, help="rows per processing chunk")
    p.add_argument("--buckets", type=int, help="hash buckets per window (hash joins)")
    p.add_argument("--negative-tuples", action="store_true",
                   help="emit retractions (sign -1) when count-window members expire")
    p.add_argument("--quiet", action="store_true", help="no progress line and no summary")


def _operator_options(args) -> dict:
    opts = {}
    if args.buckets:
        opts["buckets"] = args.buckets
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
    from rich.table import Table

    console = Console(stderr=True)
    if results is not None and len(results):
        table = Table(title=f"first {min(shown, len(results)):,} of {len(results):,} results")
        head = results.head(shown)
        for c in head.columns:
            table.add_column(str(c), overflow="fold")
        rows = [[_cell(c, v) for v in head[c].tolist()] for c in head.columns]
        for row in zip(*rows):
            table.add_row(*row)
        Console().print(table)
    rate = stats.get("tuples_per_second") or 0
    console.print(
        f"[bold]{stats['results']:,}[/] results from {sum(stats['inputs'].values()):,} tuples "
        f"({', '.join(f'{k} {v:,}' for k, v in stats['inputs'].items())}) in {stats['seconds']:.3f} s "
        f"= {rate:,.0f} tuples/s; algorithm {stats['algorithm']}, order {','.join(stats['join_order'])}; "
        f"{stats['comparisons']:,} comparisons; peak {stats['peak_rss_mb']:.0f} MB; "
        f"rejects {stats['rejects']:,}"
        + (f" ({'; '.join(f'{k}: {v}' for k, v in stats['rejects_by_reason'].items())})"
           if stats['rejects'] else ""))


def cmd_run(args) -> int:
    from slidewise.api import run
    from slidewise.model.time import parse_duration

    if args.engine == "spark":
        raise OptionError("the Spark engine is not available in this version",
                          hint="use --engine local (the default)")
    show = args.out is None
    result = run(args.query, _sources(args.source), algorithm=args.algorithm, order=args.order,
                 out=args.out, collect=show and not args.quiet,
                 lateness=parse_duration(args.lateness, what="lateness"),
                 ts_column=args.ts_column, ts_unit=args.ts_unit, chunk_rows=args.chunk_rows,
                 rejects=args.rejects, progress=not args.quiet, **_operator_options(args))
    if args.stats_json:
        Path(args.stats_json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.stats_json).write_text(json.dumps(result.stats, indent=2) + "\n")
    if not args.quiet:
        _print_summary(result.stats, result.results)
    return 0


def cmd_demo(args) -> int:
    from slidewise.api import run

    data = resources.files("slidewise") / "data" / "demo"
    print(DEMO_QUERY.rstrip(), file=sys.stderr)
    print("-- data: 3 minutes of Zeek dns/ssl logs, WRCCDC 2018 (CC BY-SA 4.0; see NOTICE.md)\n",
          file=sys.stderr)
    result = run(DEMO_QUERY, {"dns": str(data / "dns.csv"), "ssl": str(data / "ssl.csv")},
                 lateness=60_000, out=args.out, collect=args.out is None,
                 rejects=args.rejects, progress=True)
    _print_summary(result.stats, result.results)
    return 0


def cmd_explain(args) -> int:
    from slidewise.cql import load_query
    from slidewise.plan.physical import choose

    q = load_query(args.query)
    plan = choose(q, args.algorithm, args.order)
    info = {
        "query": q.describe(),
        "algorithm": plan.algorithm.name,
        "why": plan.reason,
        "join_order": [q.aliases[i] for i in plan.order],
        "orders": plan.orders(),
        "key_columns": q.key_columns(),
        "evaluation": f"lazy every {q.slide} ({'restore' if q.restore else 'no-restore'})"
        if q.slide else "eager",
    }
    if args.json:
        print(json.dumps(info, indent=2))
    else:
        print(f"query      {info['query']}")
        print(f"algorithm  {info['algorithm']}  ({info['why']})")
        print(f"evaluation {info['evaluation']}")
        print(f"join key   {', '.join(f'{a}.{k}' for a, k in zip(q.aliases, q.key_columns() or []))}"
              if q.key_columns() else "join key   none (predicates evaluated per combination)")
        for origin, order in info["orders"].items():
            print(f"  new {origin:<8} probes {' -> '.join(order)}")
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


def cmd_bench(args) -> int:
    if args.name != "joins":
        raise OptionError(f"unknown benchmark {args.name!r}", hint="available: joins")
    from slidewise.bench.joins import run_joins_bench

    algos = args.algorithms.split(",") if args.algorithms else None
    report = run_joins_bench(workload=args.workload, tuples=args.tuples, algorithms=algos,
                             out_dir=args.out)
    print(json.dumps(report.get("summary", {}), indent=2))
    return 0


def cmd_algorithms(args) -> int:
    from slidewise.operators.joins import algorithms

    for name, cls in algorithms().items():
        print(f"{name:<22} {cls.summary}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="slidewise", description="Sliding-window query engine for data streams.")
    p.add_argument("--version", action="version", version=f"slidewise {__import__('slidewise').__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    r = sub.add_parser("run", help="run a query to the end of its inputs")
    r.add_argument("query", help="CQL text or a file containing it")
    r.add_argument("--source", action="append", metavar="NAME=PATH", help="input of a FROM stream (repeatable)")
    _add_run_options(r)
    r.set_defaults(func=cmd_run)

    d = sub.add_parser("demo", help="run the bundled demo (Zeek dns + ssl logs)")
    d.add_argument("--out", help="also write all results here")
    d.add_argument("--rejects", help="write rejected (too late) rows here")
    d.set_defaults(func=cmd_demo)

    e = sub.add_parser("explain", help="show the plan chosen for a query")
    e.add_argument("query")
    e.add_argument("--algorithm")
    e.add_argument("--order")
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

    b = sub.add_parser("bench", help="run an experiment; writes JSON and a PNG plot")
    b.add_argument("name", help="experiment: joins")
    b.add_argument("--workload", default="all", help="W2, W4 or all")
    b.add_argument("--tuples", type=int, help="override the number of input tuples")
    b.add_argument("--algorithms", help="comma-separated subset of algorithms")
    b.add_argument("--out", default="bench-results", help="output directory")
    b.set_defaults(func=cmd_bench)

    a = sub.add_parser("algorithms", help="list the join algorithms")
    a.set_defaults(func=cmd_algorithms)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except SlidewiseError as err:
        print(f"slidewise: error: {err}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        print("slidewise: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
