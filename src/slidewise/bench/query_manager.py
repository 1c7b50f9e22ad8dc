"""``slidewise bench query-manager``: serial, WS, LWS and TTU concurrency control (Golab's thesis §7.5,
Fig. 7.8-7.14).

Periodic queries over windows of 1..n sub-windows are re-executed round-robin
(the thesis's workload) while the window slides every ``t`` time units and
one-time queries of higher priority arrive at random (exponential gaps). The
schedulers are the real :class:`~slidewise.manager.transactions.TransactionScheduler`
driven step by step; time is counted in sub-window reads (one read = one unit),
so the measures are the algorithms' and not this shared machine's noise:
``t`` of 100 and 500 reads play the thesis's 1 s and 5 s sub-windows (a query
of n sub-windows takes at most n reads, well under ``t`` as in the thesis, where
a slide rarely meets a query more than once). A run lasts one window length
(``n·t``, at most ``duration`` units). Measured per
policy, ``t`` and ``n``: the share of read-only transactions aborted at least
once (Fig. 7.8), staleness (time from the last slide an answer reflects to its
commit, Fig. 7.9 and 7.14), inter-execution time of a periodic query (Fig.
7.10), throughput (commits per 1000 units, Fig. 7.11) and the one-time queries'
response time and staleness (Fig. 7.12, 7.13). Writes ``query-manager.json``
and ``query-manager.png``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from slidewise.bench.common import machine_info, pyplot, save_png, write_json
from slidewise.manager.transactions import POLICIES, TransactionScheduler
from slidewise.manager.window import Window

TS = (100, 500)
NS = (10, 20, 40, 80)
MEASURES = ("aborted_pct", "staleness", "inter_execution", "throughput", "one_time_response", "one_time_staleness")
EMPTY: dict = {"ts": np.zeros(0, np.int64)}


def simulate(policy: str, t: int, n: int, *, queries: int = 40, duration: int = 20_000, one_time_gap: float | None = None, seed: int = 0) -> dict:
    """One run: ``queries`` periodic queries (windows of 1..n sub-windows) round-robin, one-time queries
    (1..n/4 sub-windows) every ``one_time_gap`` units on average (default t/5: five per sub-window, as in
    §7.5.4), for ``min(n·t, duration)`` units of time."""
    duration = min(n * t, duration)
    rng = np.random.default_rng(seed)
    sched = TransactionScheduler(Window("S", t, n), policy)
    written: dict[int, int] = {}  # version -> time of its write
    for _ in range(n):  # a full window first
        written[sched.slide(EMPTY).version] = 0
    sizes = rng.integers(1, n + 1, queries)
    gap = one_time_gap or t / 5
    arrivals = list(np.cumsum(rng.exponential(gap, int(duration / gap * 2) + 10)))
    now, next_slide, turn = 0, t, 0
    periodic = None  # (query, txn, begin time)
    once_queue: list[tuple[int, int]] = []  # (arrival, nk)
    once = None  # (txn, arrival)
    last_commit: dict[int, int] = {}
    stats: dict[str, list] = {"staleness": [], "inter": [], "response": [], "once_staleness": []}
    commits = aborted = 0
    slide_waiting = False
    while now < duration:
        if now >= next_slide or slide_waiting:
            sub = sched.slide(EMPTY, block=False)
            slide_waiting = sub is None  # serial: it waits for the running query
            if sub is not None:
                written[sub.version] = now
                next_slide += t
        while arrivals and arrivals[0] <= now:
            arrivals.pop(0)
            once_queue.append((now, int(rng.integers(1, max(1, n // 4) + 1))))
        holds = policy == "serial" and slide_waiting
        if once is None and once_queue and not holds:
            txn = sched.begin(once_queue[0][1], _noop, priority=1, block=False)
            if txn is not None:
                once = (txn, once_queue.pop(0)[0])
        if periodic is None and not holds:
            q = turn % queries
            txn = sched.begin(int(sizes[q]), _noop, block=False)
            if txn is not None:
                periodic, turn = (q, txn, now), turn + 1
        runnable = [x for x in (once[0] if once else None, periodic[1] if periodic else None) if x is not None]
        if not runnable:
            now += 1
            continue
        txn = max(runnable, key=lambda x: x.priority) if policy != "serial" else runnable[0]
        finished = sched.step(txn, block=False)
        now += 1  # one sub-window read (the commit follows the last read at once)
        if not finished:
            continue
        commits += 1
        aborted += txn.aborts > 0
        age = now - written[txn.latest]
        if once is not None and txn is once[0]:
            stats["response"].append(now - once[1])
            stats["once_staleness"].append(age)
            once = None
        else:
            q = periodic[0]
            stats["staleness"].append(age)
            if q in last_commit:
                stats["inter"].append(now - last_commit[q])
            last_commit[q] = now
            periodic = None
    return {
        "aborted_pct": 100.0 * aborted / max(commits, 1),
        "staleness": _mean(stats["staleness"]),
        "inter_execution": _mean(stats["inter"]),
        "throughput": 1000.0 * (commits - len(stats["response"])) / duration,
        "one_time_response": _mean(stats["response"]),
        "one_time_staleness": _mean(stats["once_staleness"]),
        "commits": commits,
        "aborts": sched.counts["aborts"],
        "one_time": len(stats["response"]),
    }


def _noop(_sub) -> None:
    return None


def _mean(xs: list) -> float | None:
    return float(np.mean(xs)) if xs else None


def run_query_manager_bench(out_dir: str | Path = "bench-results", *, ts=TS, ns=NS, queries: int = 40, duration: int = 20_000, trials: int = 3, progress=None) -> dict:
    """Every policy for every ``t`` and ``n`` (``trials`` seeds averaged); writes the JSON and the PNG."""
    report: dict = {
        "machine": machine_info(),
        "unit": "one sub-window read",
        "ts": list(ts),
        "ns": list(ns),
        "queries": queries,
        "duration": duration,
        "trials": trials,
        "runs": [],
    }
    for t in ts:
        for n in ns:
            if progress:
                progress(f"t={t} n={n}")
            for policy in POLICIES:
                runs = [simulate(policy, t, n, queries=queries, duration=duration, seed=s) for s in range(trials)]
                row = {"policy": policy, "t": t, "n": n}
                for key in runs[0]:
                    vals = [r[key] for r in runs if r[key] is not None]
                    row[key] = float(np.mean(vals)) if vals else None
                report["runs"].append(row)
    report["conclusions"] = conclusions(report)
    out = Path(out_dir)
    write_json(out / "query-manager.json", report)
    plot(report, out / "query-manager.png")
    return report


def _get(report: dict, policy: str, t: int, n: int) -> dict:
    return next(r for r in report["runs"] if (r["policy"], r["t"], r["n"]) == (policy, t, n))


def conclusions(report: dict) -> dict:
    """The thesis's findings (§7.5.2-7.5.5), each true or false over every (t, n) of the report. Not among
    them: serial's one-time staleness, which here is no worse than the others' (a waiting slide holds new
    queries back, so the one-time queries serial runs start just after a slide)."""
    cells = [(t, n) for t in report["ts"] for n in report["ns"]]

    def every(test) -> bool:
        return all(test(*c) for c in cells)

    def g(p, t, n, k):
        return _get(report, p, t, n)[k]

    return {
        "ttu aborts fewer than lws": every(lambda t, n: g("ttu", t, n, "aborted_pct") <= g("lws", t, n, "aborted_pct")),
        "ttu answers fresher than ws": every(lambda t, n: g("ttu", t, n, "staleness") < g("ws", t, n, "staleness")),
        "ttu one-time answers at least as fresh as ws": every(lambda t, n: g("ttu", t, n, "one_time_staleness") <= g("ws", t, n, "one_time_staleness")),
        "lws has the lowest throughput": every(lambda t, n: g("lws", t, n, "throughput") <= min(g(p, t, n, "throughput") for p in POLICIES)),
        "serial has the slowest one-time responses": every(
            lambda t, n: g("serial", t, n, "one_time_response") >= max(g(p, t, n, "one_time_response") for p in ("ws", "ttu"))
        ),
    }


def summary(report: dict) -> dict:
    out: dict = {}
    for t in report["ts"]:
        for n in report["ns"]:
            out[f"t={t}, n={n}"] = {
                p: ", ".join(f"{m} {_fmt(_get(report, p, t, n)[m])}" for m in ("aborted_pct", "staleness", "throughput", "one_time_response")) for p in POLICIES
            }
    out["conclusions"] = {k: "holds" if v else "does NOT hold" for k, v in report["conclusions"].items()}
    return out


def _fmt(v) -> str:
    return "-" if v is None else f"{v:.3g}"


def plot(report: dict, path: Path) -> Path:
    plt = pyplot()
    fig, axes = plt.subplots(len(report["ts"]), len(MEASURES), figsize=(3.0 * len(MEASURES), 2.7 * len(report["ts"])), squeeze=False)
    for i, t in enumerate(report["ts"]):
        for j, m in enumerate(MEASURES):
            ax = axes[i][j]
            for p in POLICIES:
                pts = [(n, _get(report, p, t, n)[m]) for n in report["ns"]]
                pts = [x for x in pts if x[1] is not None]
                ax.plot([x[0] for x in pts], [x[1] for x in pts], marker="o", ms=3, label=p)
            ax.set_title(f"t={t}: {m}", fontsize=8)
            ax.set_xlabel("sub-windows n", fontsize=8)
            ax.tick_params(labelsize=7)
    axes[0][0].legend(fontsize=7)
    fig.suptitle(f"Concurrency control (Golab's thesis Fig. 7.8-7.14); time in sub-window reads, {report['queries']} periodic queries", fontsize=9)
    fig.tight_layout()
    return save_png(fig, path)
