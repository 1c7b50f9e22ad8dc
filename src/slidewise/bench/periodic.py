"""``slidewise bench query-manager --chapter 8``: scheduling periodic queries with sharing (Golab's thesis
§8.5, Fig. 8.7-8.10).

The workload is §8.5.1's: one stream of packet headers (``src``, ``dst``,
``proto``, ``port``, ``bytes``, and the pairs ``pair`` and ``proto_port`` as
attributes) and eight groups of periodic queries computing top-k lists
(``TOPK(k, S.a)``) and quantiles (``QUANTILE(S.a, p)``), alternately, of the
traffic per source, destination, the pair, protocol, port and protocol-port, and of
the packet lengths overall and per protocol (the thesis's introductory
``MEDIAN(length)``, §8.1), with 5, 10, 20 or 30 queries per group (40, 80,
160, 240 in all). Each query has a window of 20 to 100 sub-windows and a period
(SLIDE) of one sub-window to half its window, drawn with a fixed seed. The
queries of a group keep the same frequency counters (one signature: one
synopsis for every k and p, rule CS2) and may run together in one scan.

The real :class:`~slidewise.manager.core.QueryManager` runs them (real
sub-windows, synopsis entries, transactions, scheduler and answers) on one
thread, driven by a *virtual clock* of the work the manager counts, so the JSON
is the same on any machine and under any load: an update (window slide)
pre-aggregates each new tuple into every synopsis (tuples × synopses units); a
joint execution scans a group's reads once from the youngest, merging each
read's counters into the state of the windows asked, one unit per counter
(CS2 of §8.3.1: each shorter window's state is taken on the way,
:class:`~slidewise.manager.queries.Shared`), then ranks each window's counters
once for its top-k lists, as far as the largest k its queries ask (§8.4.4's
post-processing): a linear selection of those k (``n`` units for ``n``
counters) and a sort of them only (``k·log2(k+1)``); a quantile sums its
window's ``n`` counters in value order (``n`` units, once per window) and
makes two binary searches per group. The hybrid cost model is told each
query's post-processing in merges of a sub-window's counters. ``capacity``
work units pass per sub-window (the thesis's one-second synopsis updates); an
update arriving during an execution waits for it (queries and updates run in
isolation, as in Algorithms 9-11).

The scheduler never idles (:data:`IDLE`): whenever capacity is left, the task
with the lowest ``d`` runs (in overload, Algorithm 11's late and pending tasks
of its group with it), whether or not its synopsis was updated since it last
ran, and its ``d`` is reset to its period. That is Algorithms 9-11 as written,
closer to the thesis's text than the service's scheduler (``slidewise serve``,
and ``--idle`` here: a task runs at most once per update of its group): line 6
runs a task whenever "Q(T) is not empty", and Q(T) holds the whole workload;
§8.4.1 lets queries "be refreshed more often than specified", since a rigid
interval would leave "periods of idle time during underload"; §8.5.1 keeps Q(T)
as a heap of deadlines whose head is executed, counts throughput in "queries
re-executed per second", and "if a query is re-executed too early, then its
latency remains at zero". A re-execution without an update answers the same
window with the same rows. The two modes differ in which task runs (one that
just ran may run again before the next update), not in idle time: at this
bench's capacity the ``--idle`` scheduler never idles either (``idle`` is 0 in
every cell of ``regime``), as running every task once per update costs more
than the capacity in every run; throughputs differ by 6.3% at most between the
modes, and every conclusion has the same verdict in both.

A sub-window carries ``rate`` tuples over ``distinct`` source and destination
addresses (a tenth of that many protocols and ports); the high rate doubles
both, as §8.5.1 does, so that queries do more work per execution. Both are the
thesis's (1,500 and 3,000 tuples per second, 1,000 addresses, 100 protocols and
ports) scaled down 10x, which keeps its tuples per distinct value: one address
sub-window holds most addresses, while address pairs and packet lengths are
sparse and a window of them has thousands of counters.

The capacity puts the bench in the thesis's regime by a rule
(:data:`CAPACITY_RULE`), not by the findings: it is hybrid scheduling's
*on-time demand* (the work per update when every task runs when due and never
early) with 40 queries at the low rate, where §8.5.2 and §8.5.4 have hybrid
scheduling under- or lightly overloaded and no-sharing and conservative
scheduling overloaded already; one capacity serves both rates. Each run
records its policy's demand and ``load`` (demand over capacity), the share
of its re-executions that were late and the share of the capacity it idled
(``regime`` in the JSON). The rule holds in both modes unchanged (so stated
before either mode's verdicts were measured): the on-time demand runs each
task when due (``d = 0``), never early, which no mode changes. With 40 queries
at the low rate conservative scheduling is then at 1.04x its capacity and late
in a third of its re-executions, no-sharing at 1.22x and late in two thirds;
every other run is overloaded (1.3-2.6x for hybrid scheduling at the low rate,
2.1-5.3x at the high rate), as the thesis's high rate is.

``conclusions`` in the JSON gives each finding of §8.5, whether it holds at
every size, the numbers measured and, when it does not hold, why (from the
measured demands, costs per re-execution and shares of the work). Most do not:
hybrid's on-time demand is within a few percent of conservative's, because a
joint execution shares the scan but not each query's ranking or sums (about
45% of the work), so hybrid gains 1.1-1.24x throughput, not 2x; and
aggressive scheduling, whose joint executions serve a whole group from one
scan, has the most re-executions and, but for 40 queries at the low rate and
240 at the high rate, the least latency. Late-pending sharing cuts hybrid's
latency and raises its throughput 1.2-2.0x at the high rate (more than 2x
with 240 queries only).

Throughput is query re-executions per second (per sub-window), early ones
(and those without an update) included; latency is the thesis's "average latency per query" (§8.5.1): each
query's synopsis updates between re-executions beyond its period, averaged
over its re-executions, then over the queries (``latency_per_run`` averages
over all re-executions instead; a query that never ran, ``starved``, e.g.
14 of 240 under no-sharing at the high rate, has no latency to average). Writes ``query-manager-ch8.json`` and
``query-manager-ch8.png``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from slidewise.bench.common import machine_info, pyplot, save_png, write_json
from slidewise.manager.core import QueryManager
from slidewise.operators.aggregates import TopK

__all__ = ["COUNTS", "POLICIES", "RATES", "conclusions", "run_periodic_bench", "simulate", "summary", "workload"]

#: the attributes counted by the eight query groups and their GROUP BY keys: the six key sets of §8.5.1 (a pair
#: as one attribute), and the packet lengths overall and per protocol (the thesis's introductory example, §8.1)
GROUPS = (("src", ()), ("dst", ()), ("pair", ()), ("proto", ()), ("port", ()), ("proto_port", ()), ("bytes", ()), ("bytes", ("proto",)))
SCHEMA = {"S": {a: "int" for a in ("src", "dst", "pair", "proto", "port", "proto_port", "bytes")}}
#: the policies of Table 8.1 measured (late sharing alone is omitted, as in the thesis's figures)
POLICIES = ("no-sharing", "aggressive", "conservative", "hybrid", "hybrid-late-pending")
COUNTS = (40, 80, 160, 240)
#: rate name -> (tuples per sub-window, distinct source and destination addresses)
RATES = {"low": (150, 100), "high": (300, 200)}
#: sub-window length (time units) and sub-windows per window (the longest query window)
T, N = 1000, 100
#: the regime's anchor (see the module docstring): the capacity is this policy's on-time demand with this many
#: queries at this rate, where Golab's thesis has hybrid scheduling under- or lightly overloaded (§8.5.2, §8.5.4)
ANCHOR = ("hybrid", 40, "low")
CAPACITY_RULE = (
    "capacity = hybrid scheduling's on-time demand (counted work per update when every task runs when due, never "
    "early) with 40 queries at the low rate: there the thesis has hybrid scheduling underloaded or lightly "
    "overloaded while no-sharing and conservative scheduling overload 'even for a small number of queries' "
    "(§8.5.2, §8.5.4); the same capacity at the high rate (one machine, twice the tuples and distinct values)"
)
#: False: the scheduler runs the lowest ``d`` whenever there is capacity, as Algorithms 9-11 are written; True: it
#: idles when every task ran since its group's last update, as the service's does (see the module docstring)
IDLE = False
#: sub-windows measured after the window is full
UPDATES = 100
#: the quantiles asked
FRACTIONS = (0.5, 0.9, 0.95, 0.99)


def workload(queries: int, seed: int = 0) -> dict[str, tuple[tuple[str, ...], str]]:
    """``queries`` named queries (the attribute and keys of their group, and their text), as many per group (a
    multiple of eight): top-k lists and quantiles, alternately."""
    rng = np.random.default_rng(seed)
    out = {}
    per = max(1, queries // len(GROUPS))
    for g, (attr, keys) in enumerate(GROUPS):
        cols = "".join(f"S.{k}, " for k in keys)
        group_by = f" GROUP BY {', '.join(f'S.{k}' for k in keys)}" if keys else ""
        for i in range(per):
            window = int(rng.integers(20, N + 1))
            period = int(rng.integers(1, window // 2 + 1))
            agg = f"TOPK({int(rng.integers(1, 11))}, S.{attr})" if i % 2 == 0 else f"QUANTILE(S.{attr}, {FRACTIONS[int(rng.integers(len(FRACTIONS)))]})"
            out[f"g{g}_q{i}"] = (attr, *keys), f"SELECT RSTREAM({cols}{agg} AS v) FROM S [RANGE {window * T - 1} SLIDE {period * T}]{group_by}"
    return out


def packets(rng: np.random.Generator, j: int, rate: int, distinct: int) -> tuple[np.ndarray, dict]:
    """Sub-window ``j``: ``rate`` packet headers with uniform values (and the pairs as attributes)."""
    ts = j * T + np.sort(rng.integers(0, T, rate))
    small = max(1, distinct // 10)
    cols = {
        "src": rng.integers(0, distinct, rate),
        "dst": rng.integers(0, distinct, rate),
        "proto": rng.integers(0, small, rate),
        "port": rng.integers(0, small, rate),
        "bytes": rng.integers(40, 1500, rate),
    }
    cols["pair"] = cols["src"] * distinct + cols["dst"]
    cols["proto_port"] = cols["proto"] * small + cols["port"]
    return ts, cols


def _counters(cols: dict[str, np.ndarray], attrs: tuple[str, ...]) -> np.ndarray:
    """One integer per tuple for its value of ``attrs`` (all below 2**20)."""
    key = np.zeros(len(cols["ts"]), np.int64)
    for a in attrs:
        key = key * (1 << 20) + cols[a]
    return key


def _post(text: str, window: dict[str, np.ndarray], youngest: dict[str, np.ndarray], attrs: tuple[str, ...], nk: int, k: int) -> float:
    """The hybrid cost model's post-processing of one answer (§8.4.4), in merges of a sub-window's counters,
    as :meth:`~slidewise.operators.aggregates.TopK.rank` does it: each group's ``n`` counters of the window
    select its top ``k`` (``n`` when ``n > k``), then the ``m`` selected are sorted (``m·log2(m+1)``); a
    quantile: the window's ``n`` counters summed in value order, then two binary searches per group."""
    recent = window["ts"] >= window["ts"].max() - nk * T + 1
    counters = np.unique(_counters(window, attrs)[recent])
    n = len(counters)
    per = max(1, len(np.unique(_counters(youngest, attrs))))
    if "TOPK" in text:
        cells = np.unique(counters % (1 << 20 * (len(attrs) - 1)), return_counts=True)[1]  # the keys: low bits
        m = float(np.minimum(cells, k).sum())
        return (float(cells[cells > k].sum()) + m * float(np.log2(m + 1))) / per
    groups = len(np.unique(_counters(window, attrs[1:])[recent])) if len(attrs) > 1 else 1
    return (n + 2 * groups * float(np.log2(n + 1))) / per


def simulate(policy: str, queries: int, rate: int, distinct: int, *, capacity: float | None = None, updates: int = UPDATES, seed: int = 0, idle: bool = IDLE) -> dict:
    """One run of the real query manager under ``policy`` on the virtual clock (see the module docstring);
    ``idle``: :data:`IDLE`; ``capacity`` None: no limit, and a task runs only when due (``d = 0``), never early: the work per update
    (``busy`` in work units) is what the policy's schedule needs on time (its *demand*)."""
    rng = np.random.default_rng(seed)
    qm = QueryManager(SCHEMA, T, N, scheduling=policy, retain=1)
    qm.scheduler.idle = idle
    for j in range(N):  # a full window first
        qm.append("S", *packets(rng, j, rate, distinct))
    qm.advance("S", N * T)
    contents = qm.windows["S"].contents()
    window = {a: np.concatenate([s.cols[a] for s in contents]) for a in ["ts", *SCHEMA["S"]]}
    youngest = contents[-1].cols
    for name, (attrs, text) in workload(queries, seed).items():
        reg = qm.register(name, text)
        k = next((st[0].k for st in reg.query.answers.states if st is not None and isinstance(st[0], TopK)), 0)
        qm.scheduler.queries[name].post = _post(text, window, youngest, attrs, reg.query.nk, k)
    qm.scheduler.dirty = True
    synopses = len({r.query.signature for r in qm.queries.values()})
    work = {"maintenance": 0.0, "scan": 0.0, "post": 0.0}
    clock, scans, idled = 0.0, 0, 0.0
    for k in range(1, updates + 1):
        while capacity is None or clock < k * capacity:
            with qm.lock:
                due = min((t.d for t in qm.scheduler.tasks.values() if t.fresh or not idle), default=None)
                batch = None if capacity is None and (due is None or due > 0) else qm.scheduler.next()
            if batch is None:
                if capacity is not None:  # idle until the next update
                    idled, clock = idled + k * capacity - clock, k * capacity
                break
            before = dict(qm.work)
            qm.execute([qm.queries[n] for n in batch])
            scan, post = qm.work["merged"] - before["merged"], qm.work["ranked"] - before["ranked"]
            work["scan"] += scan
            work["post"] += post
            clock += scan + post
            scans += 1
        qm.append("S", *packets(rng, N + k - 1, rate, distinct))
        qm.advance("S", (N + k) * T)
        clock += rate * synopses
        work["maintenance"] += rate * synopses
    runs = sum(r.runs for r in qm.queries.values())
    tasks = len(qm.scheduler.tasks)
    ran = [q.name for q in qm.scheduler.queries.values() if q.runs]
    return {
        "throughput": runs / updates,
        "latency": sum(qm.scheduler.latency(q) for q in ran) / len(ran) if ran else 0.0,  # §8.5.1: per query
        "latency_per_run": qm.scheduler.latency(),
        "starved": len(qm.queries) - len(ran),
        "runs": runs,
        "scans": scans,
        "tasks": tasks,
        "subgroups": len({(q.group, q.period) for q in qm.scheduler.queries.values()}),
        "late_share": sum(q.overdue for q in qm.scheduler.queries.values()) / runs if runs else 0.0,
        "busy": sum(work.values()) / (updates * (capacity or 1.0)),
        "idle_share": idled / (updates * capacity) if capacity else 0.0,  # of the capacity, no task to run
        "work": work,
    }


def anchored_capacity(updates: int = UPDATES) -> float:
    """The capacity of :data:`CAPACITY_RULE`: the on-time demand of :data:`ANCHOR`."""
    policy, queries, rate = ANCHOR
    return float(simulate(policy, queries, *RATES[rate], capacity=None, updates=updates)["busy"])


def run_periodic_bench(
    out_dir: str | Path = "bench-results", *, counts=COUNTS, rates=None, capacity: float | None = None, updates: int = UPDATES, idle: bool = IDLE, progress=None
) -> dict:
    """Every policy for every number of queries at each rate; writes the JSON and the PNG. ``capacity`` None:
    :func:`anchored_capacity`. Each run also gives its policy's on-time ``demand`` and ``load`` (demand over
    capacity: above 1, the schedule cannot run on time)."""
    rates = dict(RATES if rates is None else rates)
    if capacity is None:
        if progress:
            progress("capacity: hybrid's on-time demand, low rate, 40 queries")
        capacity = anchored_capacity(updates)
    report: dict = {
        "machine": machine_info(),
        "unit": "one counter merged or ranked, or one tuple pre-aggregated into one synopsis",
        "capacity": capacity,
        "capacity_rule": CAPACITY_RULE,
        "updates": updates,
        "idle": idle,
        "sub_window": T,
        "sub_windows": N,
        "rates": {k: {"tuples_per_sub_window": r, "distinct_addresses": d} for k, (r, d) in rates.items()},
        "counts": list(counts),
        "policies": list(POLICIES),
        "runs": [],
    }
    for name, (rate, distinct) in rates.items():
        for n in counts:
            if progress:
                progress(f"{name} rate, {n} queries")
            for policy in POLICIES:
                row = simulate(policy, n, rate, distinct, capacity=capacity, updates=updates, idle=idle)
                demand = simulate(policy, n, rate, distinct, capacity=None, updates=updates, idle=idle)["busy"]
                report["runs"].append({"rate": name, "queries": n, "policy": policy, **row, "demand": demand, "load": demand / capacity})
    report["regime"] = regime(report)
    report["conclusions"] = conclusions(report)
    out = Path(out_dir)
    write_json(out / "query-manager-ch8.json", report)
    plot(report, out / "query-manager-ch8.png")
    return report


def regime(report: dict) -> dict:
    """Per rate and number of queries: each policy's load (on-time demand over capacity), the share of its
    re-executions that were late (the thesis's overload: latency above 0) and the share of the capacity it idled."""
    return {
        f"{rate} rate, {n} queries": {
            p: {k: round(_get(report, rate, n, p)[m], 3) for k, m in (("load", "load"), ("late", "late_share"), ("idle", "idle_share"))} for p in POLICIES
        }
        for rate in report["rates"]
        for n in report["counts"]
    }


def _get(report: dict, rate: str, n: int, policy: str) -> dict:
    return next(r for r in report["runs"] if (r["rate"], r["queries"], r["policy"]) == (rate, n, policy))


def conclusions(report: dict) -> dict:
    """The thesis's findings (§8.5.2-8.5.4), each with whether it holds at every number of queries of the
    report and what was measured there (the ratio or the values it compares); one that does not hold says
    where and why, from the measured share of the work that no schedule shares (ranking, see the module)."""
    counts = report["counts"]

    def g(rate: str, n: int, p: str, k: str) -> float:
        return _get(report, rate, n, p)[k]

    def ratio(a: float, b: float) -> float | None:
        return round(a / b, 3) if b else None

    def best(rate: str, n: int, k: str) -> str:
        """The policy with the best ``k`` (``tie: a, b`` when several share it: none is the best)."""
        values = {p: g(rate, n, p, k) for p in POLICIES}
        top = (max if k == "throughput" else min)(values.values())
        winners = [p for p, v in values.items() if v == top]
        return winners[0] if len(winners) == 1 else "tie: " + ", ".join(winners)

    ranking, cheap, late = "sharing", "aggressive", "late-pending"
    findings = {  # name -> rates, measure(rate, n), test(measured), the reason when it does not hold
        "low rate: hybrid at least doubles conservative's throughput": (
            ("low",),
            lambda r, n: ratio(g(r, n, "hybrid", "throughput"), g(r, n, "conservative", "throughput")),
            lambda m: m is not None and m >= 2,
            ranking,
        ),
        "low rate: hybrid cuts conservative's latency at least 5x": (
            ("low",),
            lambda r, n: [g(r, n, "conservative", "latency"), g(r, n, "hybrid", "latency")],
            lambda m: m[0] > 0 and m[0] >= 5 * m[1],
            ranking,
        ),
        "hybrid has more throughput than conservative": (
            ("low", "high"),
            lambda r, n: ratio(g(r, n, "hybrid", "throughput"), g(r, n, "conservative", "throughput")),
            lambda m: m is not None and m > 1,
            ranking,
        ),
        "hybrid has less latency than conservative": (
            ("low", "high"),
            lambda r, n: [g(r, n, "conservative", "latency"), g(r, n, "hybrid", "latency")],
            lambda m: m[1] < m[0],
            ranking,
        ),
        "aggressive has more throughput than conservative": (
            ("low", "high"),
            lambda r, n: ratio(g(r, n, "aggressive", "throughput"), g(r, n, "conservative", "throughput")),
            lambda m: m is not None and m > 1,
            ranking,
        ),
        "aggressive has more latency than hybrid": (
            ("low", "high"),
            lambda r, n: [g(r, n, "aggressive", "latency"), g(r, n, "hybrid", "latency")],
            lambda m: m[0] > m[1],
            cheap,
        ),
        "high rate: late-pending sharing more than doubles hybrid's throughput": (
            ("high",),
            lambda r, n: ratio(g(r, n, "hybrid-late-pending", "throughput"), g(r, n, "hybrid", "throughput")),
            lambda m: m is not None and m > 2,
            late,
        ),
        "high rate: late-pending sharing cuts hybrid's latency": (
            ("high",),
            lambda r, n: [g(r, n, "hybrid", "latency"), g(r, n, "hybrid-late-pending", "latency")],
            lambda m: m[1] < m[0],
            late,
        ),
        "high rate: hybrid with late-pending sharing has the best throughput": (
            ("high",),
            lambda r, n: best(r, n, "throughput"),
            lambda m: m == "hybrid-late-pending",
            cheap,
        ),
        "high rate: hybrid with late-pending sharing has the lowest latency": (
            ("high",),
            lambda r, n: best(r, n, "latency"),
            lambda m: m == "hybrid-late-pending",
            cheap,
        ),
    }
    out = {}
    for name, (rates, measure, test, reason) in findings.items():
        measured = {f"{r} rate, {n} queries": measure(r, n) for r in rates if r in report["rates"] for n in counts}
        entry: dict = {"holds": bool(measured) and all(test(m) for m in measured.values()), "measured": measured}
        if not entry["holds"]:
            entry["fails_at"] = [cell for cell, m in measured.items() if not test(m)]
            entry["why"] = _why(report, rates, reason, [(r, n) for r in rates if r in report["rates"] for n in counts if not test(measure(r, n))])
        out[name] = entry
    return out


def _why(report: dict, rates: tuple[str, ...], reason: str, cells: list[tuple[str, int]]) -> str:
    """Why a finding does not hold at ``cells`` (rate, queries), from what was measured there: where
    conservative and hybrid scheduling are both on time, that nothing is overloaded; else the on-time demands
    (``reason`` "sharing": hybrid's over conservative's), the work per re-execution ("aggressive") or the
    overload left ("late-pending"), and the share of the work that is each query's own post-processing."""
    runs = [r for r in report["runs"] if (r["rate"], r["queries"]) in set(cells)]
    total = max(sum(sum(r["work"].values()) for r in runs), 1e-9)
    post = 100 * sum(r["work"]["post"] for r in runs) / total
    where = ", ".join(f"{r} rate, {n} queries" for r, n in cells)
    calm = [(r, n) for r, n in cells if _get(report, r, n, "conservative")["latency"] == 0 == _get(report, r, n, "hybrid")["latency"]]
    if calm and len(calm) == len(cells):
        return f"not overloaded at {where}: conservative and hybrid scheduling run every query on time (latency 0), so there is no latency to cut"

    def span(values: list[float], fmt: str = ".2f") -> str:
        return f"{min(values):{fmt}}-{max(values):{fmt}}" if values else "-"

    def per_run(r: str, n: int, p: str) -> float:
        row = _get(report, r, n, p)
        return sum(row["work"].values()) / max(row["runs"], 1)

    if reason == "sharing":
        demand = [_get(report, r, n, "hybrid")["demand"] / _get(report, r, n, "conservative")["demand"] for r, n in cells]
        kept = [_get(report, r, n, "hybrid")["tasks"] / _get(report, r, n, "hybrid")["subgroups"] for r, n in cells]
        load = [_get(report, r, n, "hybrid")["load"] for r, n in cells]
        return (
            f"at {where} hybrid's schedule needs {span(demand)}x conservative's work on time (its tasks are {span(kept)} of the "
            "sub-groups): a joint execution shares the scan of its longest window (CS2) but every query still ranks or sums its "
            f"own window's counters ({post:.0f}% of the work there), so shortening a period buys re-executions at almost their "
            f"full cost; hybrid scheduling is itself at {span(load)}x its capacity there"
        )
    if reason == "aggressive":
        cheap = [per_run(r, n, "aggressive") / per_run(r, n, "hybrid") for r, n in cells]
        return (
            f"at {where} an aggressive re-execution costs {span(cheap)}x a hybrid one: one scan of a group's longest window "
            "serves every query of the group each time, so its early refreshes are cheap re-executions (latency 0), "
            f"the post-processing ({post:.0f}% of the work there) being each query's own under every policy"
        )
    gain = [_get(report, r, n, "hybrid")["late_share"] - _get(report, r, n, "hybrid-late-pending")["late_share"] for r, n in cells]
    load = [_get(report, r, n, "hybrid")["load"] for r, n in cells]
    return (
        f"at {where} hybrid scheduling is at {span(load)}x its capacity; late-pending sharing shares scans among late and due "
        f"sub-groups, {span(gain, '.0%')} fewer re-executions late, but not the post-processing ({post:.0f}% of the work there)"
    )


def summary(report: dict) -> dict:
    out: dict = {}
    for rate in report["rates"]:
        for n in report["counts"]:
            out[f"{rate} rate, {n} queries"] = {
                p: f"throughput {_get(report, rate, n, p)['throughput']:.3g}/s, latency {_get(report, rate, n, p)['latency']:.3g}" for p in POLICIES
            }
    out["conclusions"] = {k: "holds" if v["holds"] else f"does NOT hold: {v['why']}" for k, v in report["conclusions"].items()}
    return out


def plot(report: dict, path: Path) -> Path:
    plt = pyplot()
    rates = list(report["rates"])
    fig, axes = plt.subplots(len(rates), 2, figsize=(8, 3 * len(rates)), squeeze=False)
    for i, rate in enumerate(rates):
        for j, measure in enumerate(("throughput", "latency")):
            ax = axes[i][j]
            for p in POLICIES:
                ax.plot(report["counts"], [_get(report, rate, n, p)[measure] for n in report["counts"]], marker="o", ms=3, label=p)
            ax.set_title(f"{rate} rate: {measure}", fontsize=9)
            ax.set_xlabel("queries", fontsize=8)
            ax.tick_params(labelsize=7)
    axes[0][0].legend(fontsize=7)
    fig.suptitle("Periodic scheduling with sharing (Golab's thesis Fig. 8.7-8.10), virtual clock", fontsize=9)
    fig.tight_layout()
    return save_png(fig, path)
