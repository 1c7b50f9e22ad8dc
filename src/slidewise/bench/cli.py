"""``slidewise bench EXPERIMENT``: one subcommand per experiment, each with its own options.

The core command line (:mod:`slidewise.cli`) hands everything after ``bench``
to :func:`main` (only when the ``bench`` extra is installed). Every
experiment writes its JSON (and PNG, where it plots) to ``--out`` and prints
a summary table on stderr.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from slidewise.errors import OptionError, require_extra

OUT_DEFAULT = "bench-results"


def _positive(value: int | float | None, flag: str, hint: str = "") -> None:
    if value is not None and value <= 0:
        raise OptionError(f"{flag} must be positive, got {value:g}", hint=hint or None)


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- summary ----


def _cell(value) -> str:
    if isinstance(value, float):
        return f"{value:,.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    if isinstance(value, (list, tuple)):
        return ", ".join(_cell(v) for v in value)
    return "-" if value is None else str(value)


def _rows(summary: dict, depth: int = 0):
    """``(label, value)`` rows: a nested dict is a heading row, its entries indented below it."""
    for key, value in summary.items():
        label = "  " * depth + str(key)
        if isinstance(value, dict) and value:
            yield label, None
            yield from _rows(value, depth + 1)
        else:
            yield label, _cell(value)


def print_table(title: str, summary: dict, console=None) -> None:
    """``summary`` as a two-column table on stderr (nested dicts as indented sections)."""
    from rich import box
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = console or Console(stderr=True)
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, show_header=False)
    table.add_column("", no_wrap=True)
    table.add_column("", overflow="fold")
    for label, value in _rows(summary):
        if value is None:
            table.add_row(f"[bold]{escape(label)}[/]", "")
        else:
            table.add_row(escape(label), escape(value))
    console.print(table)


# ---------------------------------------------------------------- experiments ----


def _joins(args) -> int:
    from slidewise.bench.joins import print_summary, run_joins_bench

    _positive(args.time_budget, "--time-budget", "seconds per algorithm run, e.g. --time-budget 6")
    _positive(args.tuples, "--tuples")
    algos = args.algorithms.split(",") if args.algorithms else None
    kw = {} if args.time_budget is None else {"time_budget_s": args.time_budget}
    report = run_joins_bench(workload=args.workload, tuples=args.tuples, algorithms=algos, out_dir=args.out, peers=not args.no_peers, **kw)
    print_summary(report.get("summary", {}))
    return 0


def _aggregation(args) -> int:
    from slidewise.bench.aggregation import print_summary, run_aggregation_bench

    _positive(args.tuples, "--tuples")
    _positive(args.rounds, "--rounds")
    _positive(args.spark_window_tuples, "--spark-window-tuples")
    _positive(args.spark_batch, "--spark-batch")
    _positive(args.spark_timeout, "--spark-timeout")
    spark = args.spark or any(x is not None for x in (args.spark_window_tuples, args.spark_batch, args.spark_timeout))
    if spark:
        require_extra("spark", "slidewise bench aggregation --spark")
    report = run_aggregation_bench(
        tuples=args.tuples,
        out_dir=args.out,
        peers=not args.no_peers,
        rounds=args.rounds or 1,
        spark=spark,
        spark_batch=args.spark_batch,
        window_tuples=args.spark_window_tuples,
        spark_timeout=args.spark_timeout,
    )
    print_summary(report["summary"])
    return 0


def _frequent(args) -> int:
    from slidewise.bench.frequent import run_frequent_bench, summary

    _positive(args.tuples, "--tuples")
    print_table("slidewise bench frequent", summary(run_frequent_bench(args.out, tuples=args.tuples, progress=_say)))
    return 0


def _sharing(args) -> int:
    from slidewise.bench.sharing import COUNTS, run_sharing_bench, summary

    counts = COUNTS if args.queries is None else tuple(_positive_ints(args.queries, "--queries"))
    _positive(args.tuples, "--tuples")
    _positive(args.rounds, "--rounds", "timed runs per mode, e.g. --rounds 3")
    report = run_sharing_bench(tuples=args.tuples or 200_000, counts=counts, out_dir=args.out, repeats=args.rounds or 3)
    print_table("slidewise bench sharing", summary(report))
    return 0


def _query_manager(args) -> int:
    _positive(args.trials, "--trials")
    _positive(args.queries, "--queries")
    _positive(args.updates, "--updates")
    if args.idle and args.chapter != 8:
        raise OptionError("--idle applies to --chapter 8 only (the periodic scheduler)", hint="add --chapter 8")
    if args.chapter == 8:
        from slidewise.bench import periodic

        if args.queries is not None and args.queries % len(periodic.GROUPS):
            raise OptionError(f"--queries must be a multiple of {len(periodic.GROUPS)} with --chapter 8, got {args.queries}", hint="as many queries per group")
        counts = periodic.COUNTS if args.queries is None else (args.queries,)
        report = periodic.run_periodic_bench(args.out, counts=counts, updates=args.updates or periodic.UPDATES, idle=args.idle, progress=_say)
        print_table("slidewise bench query-manager --chapter 8", periodic.summary(report))
        return 0
    from slidewise.bench.query_manager import run_query_manager_bench, summary

    print_table("slidewise bench query-manager", summary(run_query_manager_bench(args.out, queries=args.queries or 40, trials=args.trials, progress=_say)))
    return 0


def _synopses(args) -> int:
    from slidewise.bench.synopses import print_summary, run_synopses_bench

    _positive(args.windows, "--windows")
    _positive(args.groups, "--groups")
    _positive(args.rounds, "--rounds")
    if args.max_b < 2:
        raise OptionError(f"--max-b must be at least 2, got {args.max_b}", hint="e.g. --max-b 64")
    print_summary(run_synopses_bench(args.out, max_b=args.max_b, windows=args.windows, groups=args.groups, rounds=args.rounds))
    return 0


def _archive(args) -> int:
    from slidewise.bench.archive import NS, VARIANTS, run_archive_bench, run_memory_check

    if args.address_space is not None and args.memory_budget is None:
        raise OptionError("--address-space needs --memory-budget MB", hint="e.g. --memory-budget 8 --address-space 40")
    if args.memory_budget is not None:
        _positive(args.memory_budget, "--memory-budget", "MB of peak RSS, e.g. --memory-budget 8")
        if args.address_space is not None:
            _positive(args.address_space, "--address-space", "MB of address space, e.g. --address-space 40")
        got = run_memory_check(args.out, budget_mb=args.memory_budget, address_space_mb=args.address_space)
        print_table("slidewise bench archive --memory-budget", {k: v for k, v in got.items() if k not in ("machine", "traceback")})
        return 0 if got.get("within_budget") else 1
    _positive(args.rate, "--rate", "rows per update, e.g. --rate 2000")
    _positive(args.updates, "--updates", "measured updates, e.g. --updates 16")
    _positive(args.slots, "--slots", "updates per largest lifetime, e.g. --slots 32")
    ns = NS if args.n is None else tuple(_positive_ints(args.n, "--n"))
    variants = VARIANTS if args.variants is None else tuple(args.variants.split(","))
    report = run_archive_bench(args.out, rate=args.rate, slots=args.slots, updates=args.updates, ns=ns, variants=variants, fluctuate=args.fluctuate, progress=_say)
    print_table("slidewise bench archive", report["summary"])
    return 0 if report["summary"]["correct"] else 1


def _wjoin(args) -> int:
    from slidewise.bench.wjoin import TUPLES, run_wjoin_bench

    _positive(args.tuples, "--tuples", "e.g. --tuples 1000 for a short run")
    if args.max_streams < 2:
        raise OptionError(f"--max-streams must be at least 2, got {args.max_streams}", hint="e.g. --max-streams 4")
    report = run_wjoin_bench(args.out, tuples=args.tuples or TUPLES, max_streams=args.max_streams, progress=_say)
    print_table("slidewise bench wjoin", report["summary"])
    return 0 if report["summary"]["answers agree"] else 1


def _positive_ints(text: str, option: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        values = []
    if not values or min(values) < 1:
        raise OptionError(f"{option} must be positive integers separated by commas, got {text!r}", hint=f"e.g. {option} 40,160")
    return values


def _asymmetric(args) -> int:
    from slidewise.bench.asymmetric import run_asymmetric_bench

    report = run_asymmetric_bench(out_dir=args.out, profile=args.profile, table3=not args.no_table3)
    print_table("slidewise bench asymmetric", report["summary"])
    return 0


def _allocation(args) -> int:
    from slidewise.bench.allocation import run_allocation_bench

    _positive(args.scale, "--scale", "e.g. --scale 0.1 for a short run")
    report = run_allocation_bench(out_dir=args.out, scale=args.scale)
    print_table("slidewise bench allocation", report["summary"])
    return 0


def _ordering(args, parts: tuple[str, ...] | None = None) -> int:
    from slidewise.bench.ordering import run_ordering_bench

    _positive(args.tuples, "--tuples", "tuples per measured run (default 1000), e.g. --tuples 3000")
    _positive(args.rounds, "--rounds", "e.g. --rounds 7")
    kw: dict = {} if parts is None else {"parts": parts}
    if args.rounds is not None:
        kw["table8_rounds"] = args.rounds
    report = run_ordering_bench(out_dir=args.out, scale=1.0 if args.tuples is None else args.tuples / 1000, progress=_say, **kw)
    print_table("slidewise bench " + ("ordering" if parts is None else "table8"), report["summary"])
    return 0


def _update_patterns(args) -> int:
    from slidewise.bench.update_patterns import run_update_patterns_bench

    _positive(args.time_budget, "--time-budget", "e.g. --time-budget 10")
    _positive(args.rounds, "--rounds", "runs per measurement, e.g. --rounds 3")
    _positive(args.scale, "--scale", "e.g. --scale 0.1 for a short run")
    report = run_update_patterns_bench(
        args.out,
        scale=args.scale,
        source=args.source,
        zeek_dir=args.zeek_dir,
        budget_s=args.time_budget if args.time_budget is not None else 10.0,
        progress=_say,
        repeats=args.rounds or 1,
    )
    summary = {k: ({kk: vv for kk, vv in v.items() if kk != "speedup_vs_nt_per_window"} if isinstance(v, dict) else v) for k, v in report["summary"].items()}
    print_table("slidewise bench update-patterns", summary)
    return 1 if report["mismatches"] else 0


def _spark(args) -> int:
    require_extra("spark", "slidewise bench spark")
    from slidewise.bench.spark import run_spark_bench

    if args.tuples is not None and args.tuples < 100:
        raise OptionError(f"--tuples must be at least 100, got {args.tuples}")
    report = run_spark_bench(args.workload, tuples=args.tuples, out_dir=args.out)
    print_table("slidewise bench spark", report["summary"])
    return 0


# ---------------------------------------------------------------- parser ----


def _experiment(sub, name: str, run: Callable, help: str, description: str) -> argparse.ArgumentParser:
    p = sub.add_parser(name, help=help, description=description)
    p.add_argument("--out", default=OUT_DEFAULT, metavar="DIR", help=f"output directory (default {OUT_DEFAULT})")
    p.set_defaults(run=run)
    return p


def build_parser() -> argparse.ArgumentParser:
    """The ``slidewise bench`` parser: a subcommand per experiment."""
    p = argparse.ArgumentParser(prog="slidewise bench", description="Run an experiment; writes JSON (and a PNG plot) to --out and prints a summary table.")
    sub = p.add_subparsers(dest="experiment", required=True, metavar="EXPERIMENT")

    j = _experiment(
        sub,
        "joins",
        _joins,
        "join algorithms vs DuckDB on workloads W2 and W4",
        "Join algorithms on W2 and W4 against DuckDB, with memory scaling checks; joins.json/.png.",
    )
    j.add_argument("--workload", default="all", choices=["W2", "W4", "all"], help="workload (default all)")
    j.add_argument("--tuples", type=int, help="override the number of input tuples")
    j.add_argument("--algorithms", help="comma-separated subset of algorithms")
    j.add_argument("--time-budget", type=float, metavar="SECONDS", help="seconds of processing per algorithm run; the reference always runs the whole input (default 6)")
    j.add_argument("--no-peers", action="store_true", help="skip the DuckDB peer (and with it the result checks)")

    a = _experiment(sub, "aggregation", _aggregation, "periodic sliding GROUP BY vs DuckDB (WA)", "The pane path on workload WA against DuckDB; aggregation.json/.png.")
    a.add_argument("--tuples", type=int, help="input tuples (default 1,000,000)")
    a.add_argument("--rounds", type=int, metavar="N", help="back-to-back rounds of slidewise and DuckDB (default 1)")
    a.add_argument("--no-peers", action="store_true", help="skip the DuckDB peer (and with it the result checks)")
    a.add_argument("--spark", action="store_true", help="also slidewise on the Spark engine and Spark's own window() aggregation")
    a.add_argument(
        "--spark-window-tuples",
        type=int,
        metavar="N",
        help="Spark's window() reads only the first N tuples (it runs at about a thousand tuples/s); implies --spark",
    )
    a.add_argument("--spark-batch", type=int, metavar="N", help="tuples per micro-batch of slidewise on Spark (default 100,000); implies --spark")
    a.add_argument(
        "--spark-timeout",
        type=float,
        metavar="SECONDS",
        help="end each Spark system after SECONDS and record it as not finished (default: no limit); implies --spark",
    )

    f = _experiment(
        sub,
        "frequent",
        _frequent,
        "Golab's thesis Fig. 6.3: frequent items, Algorithm 6",
        "Algorithm 6 against the exact baseline and Misra-Gries on the Zeek sample and a Zipf stream; frequent.json/.png.",
    )
    f.add_argument("--tuples", type=int, help="tuples of the throughput run (default 1,000,000)")

    sh = _experiment(
        sub,
        "sharing",
        _sharing,
        "many periodic queries: shared synopses vs one by one",
        "N queries of Golab's thesis §8.5 shape (aggregates of bandwidth per source, destination, "
        "pair, protocol, port) run shared and one by one, answers compared; sharing.json.",
    )
    sh.add_argument("--queries", metavar="N,N,...", help="numbers of queries (default 40,80,160,240)")
    sh.add_argument("--tuples", type=int, help="input tuples (default 200,000)")
    sh.add_argument("--rounds", type=int, metavar="N", help="timed runs per mode, alternating, after an untimed one of each (default 3; the best counts)")

    qm = _experiment(
        sub,
        "query-manager",
        _query_manager,
        "Golab's thesis Fig. 7.8-7.14 (concurrency control) or 8.7-8.10 (periodic scheduling with sharing)",
        "Chapter 7 (default): aborts, staleness, inter-execution time, throughput and one-time response of the four "
        "schedulers of the query manager, in sub-window reads, for t = 100, 500 and n = 10..80 sub-windows; "
        "query-manager.json/.png. Chapter 8: throughput and latency of no-sharing, aggressive, conservative, hybrid "
        "and hybrid with late-pending sharing for 40-240 queries at a low and a high data rate, the real query "
        "manager on a virtual clock of counted work; query-manager-ch8.json/.png.",
    )
    qm.add_argument("--chapter", type=int, choices=(7, 8), default=7, help="7: isolation policies (default); 8: periodic scheduling")
    qm.add_argument("--queries", type=int, help="periodic queries (default 40; chapter 8: 40, 80, 160 and 240)")
    qm.add_argument("--trials", type=int, default=3, help="seeds averaged per point (chapter 7; default 3)")
    qm.add_argument("--updates", type=int, help="window slides measured (chapter 8; default 100)")
    qm.add_argument(
        "--idle",
        action="store_true",
        help="chapter 8: a task runs at most once per synopsis update, as in slidewise serve (default: never idle, Algorithms 9-11 as written)",
    )

    sy = _experiment(
        sub,
        "synopses",
        _synopses,
        "Golab's thesis §2.3.4: synopsis space and probes against b",
        "Running, interval and basic interval synopses for b = 2, 4, ... panes per window: partials kept, partials probed and time per answer; synopses.json/.png.",
    )
    sy.add_argument("--max-b", type=int, default=1024, metavar="B", help="b runs over the powers of two up to B (default 1024)")
    sy.add_argument("--windows", type=int, default=256, help="windows answered per b (default 256)")
    sy.add_argument("--groups", type=int, default=16, help="groups per pane (default 16)")
    sy.add_argument("--rounds", type=int, default=3, metavar="N", help="timing rounds, best kept (default 3)")

    ar = _experiment(
        sub,
        "archive",
        _archive,
        "Golab's thesis §4.4: doubly partitioned vs wave index",
        "Update, probe and scan times and update I/O against n for the doubly partitioned index (Rebuild, NoRebuild, chronological) "
        "and the wave index (R-ins, D-ins) on variable lifetimes; archive.json/.png. Exit status 1 if a probe or scan is wrong.",
    )
    ar.add_argument("--rate", type=int, default=2000, help="rows per update (default 2000)")
    ar.add_argument("--slots", type=int, default=32, help="updates per largest lifetime S / Δ (default 32)")
    ar.add_argument("--updates", type=int, default=16, help="measured updates after the index is full (default 16)")
    ar.add_argument("--n", metavar="N,N,...", help="numbers of sub-indices (default 4,9,16,25)")
    ar.add_argument("--variants", metavar="V,V,...", help="variants (default rebuild,norebuild,rebuild-chr,r-ins,d-ins)")
    ar.add_argument("--fluctuate", action="store_true", help="the rate varies at random by up to 4x between updates (§4.4.4)")
    ar.add_argument(
        "--memory-budget",
        type=int,
        metavar="MB",
        help="instead: an archive of 10x MB of rows updated and probed in a process whose peak RSS must stay within MB; archive-memory.json",
    )
    ar.add_argument(
        "--address-space",
        type=float,
        metavar="MB",
        help="with --memory-budget: the process may also map at most MB more than when it was ready (RLIMIT_AS, as ulimit -v)",
    )

    s = _experiment(
        sub,
        "asymmetric",
        _asymmetric,
        "Kang et al.: NLJ/hash/B+tree/T-tree per direction",
        "Asymmetric join combinations (Kang, Naughton & Viglas, ICDE 2003); asymmetric.json/.png.",
    )
    s.add_argument("--profile", metavar="PATH", help="cost profile to use (default: calibrate first)")
    s.add_argument("--no-table3", action="store_true", help="skip the Table 3 measurements")

    al = _experiment(
        sub,
        "allocation",
        _allocation,
        "Kang et al.: memory allocation under overload",
        "Bucket allocation strategies under overload (ICDE 2003 §5.2); allocation.json/.png.",
    )
    al.add_argument("--scale", type=float, default=1.0, help="multiplies the run lengths (default 1)")

    for name, parts, help, desc in (
        (
            "ordering",
            None,
            "join-order cost model vs measurements (~13 min)",
            "Golab & Özsu's join ordering: Table 8, Fig. 4, predicted vs measured, heuristics; ordering.json/.png.",
        ),
        ("table8", ("table8",), "only Golab & Özsu Table 8 (5-15 minutes)", "Golab & Özsu Table 8 alone (near ties get up to 28 rounds); ordering-table8.json."),
    ):
        o = _experiment(sub, name, lambda args, parts=parts: _ordering(args, parts), help, desc)
        o.add_argument("--tuples", type=int, help="tuples per measured run (default 1000)")
        o.add_argument("--rounds", type=int, metavar="N", help="timing rounds of Table 8 (default 7)")

    u = _experiment(
        sub,
        "update-patterns",
        _update_patterns,
        "Golab's thesis §3.6: NT vs DIRECT vs UPA",
        "Queries 1-4 of Golab's thesis §3.6 under each strategy; update_patterns.json/.png. Exit status 1 if two strategies disagree on a result count.",
    )
    u.add_argument("--scale", type=float, default=1.0, help="multiplies window sizes and the measured span (default 1)")
    u.add_argument("--source", default="both", choices=["zeek", "generated", "both"], help="real Zeek logs, generated IP-like links, or both (default)")
    u.add_argument("--zeek-dir", metavar="DIR", help="directory of Zeek logs as CSV for --source zeek/both (default: the bundled 3-minute WRCCDC 2018 sample)")
    u.add_argument("--rounds", type=int, metavar="N", help="runs per measurement, least CPU time kept (default 1)")
    u.add_argument("--time-budget", type=float, metavar="SECONDS", help="predicted CPU seconds per series and window above which larger windows are skipped (default 10)")

    w = _experiment(
        sub,
        "wjoin",
        _wjoin,
        "Hammad et al. Fig. 9a/b, 13: W-join operators (MW, NLW, HW; GCA vs LCA)",
        "Service time per tuple of MW-, NLW- and HW-join for 2..N streams at comparable and variable rates, and GCA vs LCA; "
        "wjoin.json/.png. Exit status 1 if two operators disagree.",
    )
    w.add_argument("--tuples", type=int, help="tuples per run (default 10000)")
    w.add_argument("--max-streams", type=int, default=6, metavar="N", help="streams from 2 up to N (default 6)")

    k = _experiment(sub, "spark", _spark, "slidewise on Spark vs Spark's own joins", "slidewise's Spark engine against Spark's stream-stream joins; spark.json/.png.")
    k.add_argument("--workload", default="all", help="W2, W4, a comma-separated list, or all (default)")
    k.add_argument("--tuples", type=int, help="override the number of input tuples (at least 100)")
    return p


def main(argv: list[str]) -> int:
    """Parse ``argv`` (what follows ``slidewise bench``) and run the experiment; its exit status."""
    args = build_parser().parse_args(argv)
    return args.run(args)
