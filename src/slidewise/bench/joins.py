"""``slidewise bench joins``: throughput, cost and memory of the join algorithms.

Workloads (equi-join on the common attribute ``a``, ``ts`` = loop index of
the paper's generator, seed 000 §6.1):

* **W2** – 2 streams, rates 1:1, ``[RANGE 1000]`` each, 1000 distinct values,
  1,000,000 tuples.
* **W4** – seed 000 Table 5: 4 streams, λ = 10, 1, 1, 3; T = 100, 100, 200,
  100; v = 500, 50, 40, 5; 200,000 tuples.

Every registered algorithm whose ``check()`` accepts the workload runs in a
fresh subprocess (:func:`~slidewise.bench.common.run_isolated`) that loads the
shared input, builds the chunks, and only then starts the clock and the
peak-memory baseline. Lazy algorithms get a ``SLIDE D`` variant and are
labelled with it. Only ``columnar`` (the reference) always consumes the whole
input; every other algorithm gets a time budget: after a pilot prefix its
rate fixes how many tuples (a prefix in processing order, rounded) it
processes, and the JSON records that number.

The DuckDB peer (:mod:`slidewise.bench.peers`) evaluates the same eager
answer as SQL on the same data; its counts and member-position checksums,
computed per prefix, verify every algorithm's output. A memory check runs
``columnar`` on W2-shaped inputs of N and 10·N tuples.

Results: ``<out_dir>/joins.json`` and ``<out_dir>/joins.png``.
"""

from __future__ import annotations

import gc
import os
import tempfile
import textwrap
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from slidewise.bench.common import (PeakMemory, load_streams, machine_info, nice_round,
                                    run_isolated, save_streams, write_json)
from slidewise.errors import PlanError
from slidewise.plan.expr import Col
from slidewise.plan.query import Equality, JoinQuery, StreamRef, WindowSpec

#: the algorithm every other one (and DuckDB) is compared with
REFERENCE = "columnar"
#: attribute columns every stream carries
COLUMNS = ("a", "x")


@dataclass(frozen=True)
class Workload:
    """Streams with relative rates, time windows and distinct join values."""

    name: str
    description: str
    rates: tuple[int, ...]
    windows: tuple[int, ...]
    distinct: tuple[int, ...]
    tuples: int

    @property
    def aliases(self) -> list[str]:
        return [f"S{i + 1}" for i in range(len(self.rates))]

    @property
    def warmup(self) -> int:
        """Tuples until every window is full (one tuple per time unit)."""
        return max(self.windows)

    def query(self, slide: int | None = None, restore: bool = False) -> JoinQuery:
        """The equi-join on ``a`` over ``[RANGE T_i (SLIDE slide)]`` windows."""
        refs = tuple(StreamRef(a, a, WindowSpec("range", t, slide=slide))
                     for a, t in zip(self.aliases, self.windows))
        eqs = tuple(Equality(Col(0, "a", self.aliases[0]), Col(i, "a", a))
                    for i, a in enumerate(self.aliases) if i)
        q = JoinQuery(refs, eqs, restore=restore)
        return replace(q, text=("ISTREAM_RESTORE" if slide and restore else "ISTREAM")
                       + " (SELECT * FROM " + ", ".join(f"{r.alias} {r.window}" for r in refs)
                       + " WHERE " + " AND ".join(str(e) for e in eqs) + ")")


WORKLOADS: dict[str, Workload] = {
    "W2": Workload("W2", "2 streams, rates 1:1, RANGE 1000 each, 1000 distinct values",
                   (1, 1), (1000, 1000), (1000, 1000), 1_000_000),
    "W4": Workload("W4", "seed 000 Table 5: 4 streams, rates 10,1,1,3, RANGE 100,100,200,100, "
                   "distinct values 500,50,40,5", (10, 1, 1, 3), (100, 100, 200, 100),
                   (500, 50, 40, 5), 200_000),
}


def _generate(rates, distinct, n_tuples, *, seed=0):
    """The paper's generator (kept behind a name so tests can substitute it)."""
    from slidewise.runtime.generate import generate
    return generate(list(rates), list(distinct), n_tuples, seed=seed)


# ------------------------------------------------------------ the child ----

def _resolve_algorithm(name: str):
    """A registry name, or ``package.module:Class`` for an out-of-tree operator."""
    if ":" in name:
        import importlib
        module, cls = name.split(":", 1)
        return getattr(importlib.import_module(module), cls)
    from slidewise.operators.joins import get_algorithm
    return get_algorithm(name)


#: unbudgeted runs shorter than this are repeated (fresh operator) and the median kept
MIN_MEASURE_S = 1.0
MAX_REPEATS = 5


def algorithm_child(spec: dict, send) -> dict:
    """Run one algorithm over one input in this (fresh) process and measure it.

    The input is loaded and positioned before the memory baseline; chunks of
    ``chunk_rows`` consecutive positions are sliced (views) outside the clock,
    which only runs inside ``process``/``finish``. With a time budget the run
    starts with a pilot of growing chunks (256, 512, ... rows) until
    ``pilot_rows`` tuples or half the budget; its rate fixes the prefix
    processed (rounded to two significant digits). A run without budget that
    takes less than ``MIN_MEASURE_S`` is repeated with a fresh operator (at
    most ``MAX_REPEATS`` passes) and the median time reported.
    """
    wl = Workload(**{k: tuple(v) if isinstance(v, list) else v for k, v in spec["workload"].items()})
    streams = load_streams(spec["path"], spec["n_tuples"])
    cls = _resolve_algorithm(spec["algorithm"])
    query = wl.query(spec["slide"], spec["restore"])
    gc.collect()

    mem = PeakMemory().start()
    passes = [_one_pass(cls(query), wl, streams, spec["chunk_rows"], spec["budget_s"],
                        spec["pilot_rows"], send)]
    if not spec["budget_s"]:
        while (sum(p["seconds"] for p in passes) < MIN_MEASURE_S and len(passes) < MAX_REPEATS):
            passes.append(_one_pass(cls(query), wl, streams, spec["chunk_rows"], None, 0,
                                    lambda *_: None))
    mem.stop()
    times = sorted(p["seconds"] for p in passes)
    busy = times[(len(times) - 1) // 2]
    out = passes[0]
    n = out["tuples"]
    out.update({"seconds": round(busy, 4), "passes": len(passes),
                "seconds_all": [round(p["seconds"], 4) for p in passes],
                "tuples_per_s": n / busy if busy else None,
                "results_per_s": out["results"] / busy if busy else None, **mem.as_dict()})
    return out


def _one_pass(op, wl: Workload, streams: list[dict], chunk_rows: int, budget: float | None,
              pilot_rows: int, send) -> dict:
    import numpy as np

    from slidewise.model.batch import StreamBatch

    n_total = sum(len(s["pos"]) for s in streams)
    pilot = min(pilot_rows, n_total) if budget else 0
    busy = 0.0
    results = 0
    sums = [0] * len(streams)
    cursor = [0] * len(streams)
    start, target, reason = 0, n_total, None
    warm: tuple[int, int] | None = None

    def tally(res) -> None:
        nonlocal results
        if len(res):
            results += len(res)
            for i in range(len(streams)):
                sums[i] += int(res.members[:, i].sum(dtype=np.int64))

    step = min(chunk_rows, 256) if budget else chunk_rows
    decided = not budget
    while start < target:
        end = min(start + step, target)
        if not decided:  # pilot: geometrically growing chunks until the rate is known
            step = min(chunk_rows, step * 2)
        chunk = []
        for i, s in enumerate(streams):
            lo = cursor[i]
            hi = int(np.searchsorted(s["pos"], end))
            chunk.append(StreamBatch(i, s["pos"][lo:hi], s["ts"][lo:hi],
                                     {c: s[c][lo:hi] for c in COLUMNS}))
            cursor[i] = hi
        t0 = time.perf_counter()
        res = op.process(chunk)
        busy += time.perf_counter() - t0
        tally(res)
        del res, chunk
        start = end
        send("progress", start)
        if warm is None and start >= wl.warmup:
            warm = (start, op.comparisons)
        if not decided and (start >= pilot or busy >= budget / 2):
            decided, step = True, chunk_rows
            target = min(n_total, max(start, nice_round(start / max(busy, 1e-9) * budget)))
            if target < n_total:
                reason = f"time budget {budget:g} s"
            send("target", target)
        elif budget and busy > 2 * budget and start < target:
            target, reason = start, f"stopped at twice the time budget ({budget:g} s)"
    state_end = op.state_tuples()
    t0 = time.perf_counter()
    res = op.finish()
    busy += time.perf_counter() - t0
    tally(res)
    del res

    steady = None
    if warm is not None and start > warm[0]:
        steady = (op.comparisons - warm[1]) / (start - warm[0])
    return {
        "tuples": start, "input_tuples": n_total, "truncated": start < n_total,
        "truncated_reason": reason, "seconds": busy, "results": results,
        "comparisons": int(op.comparisons),
        "comparisons_per_tuple": op.comparisons / start if start else None,
        "comparisons_per_tuple_steady": steady,
        "state_tuples_end": int(state_end), "member_pos_sums": sums,
    }


# ------------------------------------------------------------ the parent ----

def _variant(cls, wl: Workload, slide: int) -> tuple[dict | None, str | None]:
    """How to run ``cls`` on ``wl``: eager, or with ``SLIDE slide`` (restore or not)."""
    lazy = "lazy" in cls.name or getattr(cls, "evaluation", None) == "lazy"
    first_restore = "restore" in cls.name
    tries = [] if lazy else [(None, False)]
    tries += [(slide, first_restore), (slide, not first_restore)]
    if lazy:
        tries.append((None, False))
    errors = []
    for d, restore in tries:
        try:
            cls.check(wl.query(d, restore))
        except PlanError as e:
            errors.append(str(e))
            continue
        summary = getattr(cls, "summary", "")
        if d is None:
            return {"label": cls.name, "summary": summary, "semantics": "eager", "slide": None,
                    "restore": False}, None
        sem = "lazy, restore" if restore else "lazy, no restore"
        return {"label": f"{cls.name} (SLIDE {d}{', restore' if restore else ''})",
                "summary": summary, "semantics": sem, "slide": d, "restore": restore}, None
    return None, errors[0] if errors else "not applicable"


class _Runner:
    """Runs isolated children and shows their progress with rich (or silently)."""

    def __init__(self, enabled: bool) -> None:
        self.progress = None
        if enabled:
            from rich.console import Console
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                       TimeElapsedColumn)
            self.progress = Progress(TextColumn("[bold]{task.description:<34}"), BarColumn(),
                                     MofNCompleteColumn(), TimeElapsedColumn(),
                                     console=Console(stderr=True), transient=False)

    def __enter__(self) -> _Runner:
        if self.progress:
            self.progress.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.progress:
            self.progress.stop()

    def note(self, text: str) -> None:
        if self.progress:
            self.progress.console.print(text)

    def run(self, description: str, target, spec: dict, total: int, timeout: float | None) -> dict:
        task = self.progress.add_task(description, total=total) if self.progress else None

        def on_message(kind: str, payload: Any) -> None:
            if task is None:
                return
            if kind == "progress":
                self.progress.update(task, completed=payload)
            elif kind == "target":
                self.progress.update(task, total=payload)

        t0 = time.perf_counter()
        out = run_isolated(target, spec, on_message=on_message, timeout=timeout)
        if task is not None:
            t = self.progress.tasks[task]
            self.progress.update(task, completed=t.total if "error" not in out else t.completed,
                                 description=description + (" [red]failed" if "error" in out else ""))
        out.setdefault("wall_s", round(time.perf_counter() - t0, 2))
        return out


def _select_workloads(workload: str) -> list[str]:
    if workload.lower() == "all":
        return list(WORKLOADS)
    names = [w.strip().upper() for w in workload.split(",") if w.strip()]
    unknown = [w for w in names if w not in WORKLOADS]
    if unknown or not names:
        raise PlanError(f"unknown join workload {', '.join(unknown) or repr(workload)}",
                        hint=f"choose one of: all, {', '.join(WORKLOADS)}")
    return names


def _select_algorithms(requested: list[str] | None) -> list[str]:
    from slidewise.operators.joins import algorithms as registry
    known = list(registry())
    if requested is None:
        names = known
    else:
        names = [a for a in dict.fromkeys(requested) if a.lower() != "duckdb"]
        unknown = [a for a in names if a not in known and ":" not in a]
        if unknown:
            raise PlanError(f"unknown join algorithm {', '.join(unknown)}",
                            hint=f"choose from: {', '.join(known)}, duckdb")
    return sorted(names, key=lambda a: (a != REFERENCE, known.index(a) if a in known else len(known)))


def _compare(entry: dict, expected: dict | None) -> None:
    if expected is None or "results" not in entry:
        return
    entry["expected_results"] = expected["results"]
    entry["counts_match"] = entry["results"] == expected["results"]
    entry["checksums_match"] = entry["member_pos_sums"] == expected["member_pos_sums"]


def run_joins_bench(workload: str = "all", tuples: int | None = None,
                    algorithms: list[str] | None = None, out_dir: str = "bench-results",
                    chunk_rows: int = 65536, progress: bool = True, *,
                    time_budget_s: float = 6.0, slide: int = 10, seed: int = 0,
                    peers: bool = True, memory_check: bool = True) -> dict:
    """Run the join benchmark; write ``joins.json`` and ``joins.png`` to ``out_dir``.

    ``tuples`` overrides every workload's input size; ``algorithms`` restricts
    the algorithms (default: all registered; ``duckdb`` in the list is
    accepted: the peer runs whenever ``peers``). ``time_budget_s`` bounds the
    run of every algorithm but ``columnar``; ``slide`` is the SLIDE of the
    lazy variants. Returns the report written to the JSON.
    """
    from slidewise.bench import peers as peer_mod
    from slidewise.operators.joins import DEFAULT

    wl_names = _select_workloads(workload)
    algo_names = _select_algorithms(algorithms)
    out = Path(out_dir)
    report: dict[str, Any] = {
        "bench": "joins",
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": machine_info(),
        "settings": {"chunk_rows": chunk_rows, "time_budget_s": time_budget_s, "lazy_slide": slide,
                     "seed": seed, "reference": REFERENCE, "default_algorithm": DEFAULT,
                     "timing": "seconds = time inside process()/finish() only; the input is "
                               "loaded and chunk views are sliced outside the clock",
                     "memory": "peak RSS above the RSS right after the input is loaded, in a "
                               "fresh spawned process per run",
                     "comparisons": "attribute comparisons as each operator counts them (columnar: "
                                    "key comparisons of its binary searches); steady = after "
                                    "the windows first fill",
                     "truncation": "every algorithm but the reference runs on a prefix of the "
                                   "input sized by time_budget_s ('tuples' says how many)"},
        "workloads": {},
    }
    with tempfile.TemporaryDirectory(prefix="slidewise-bench-") as tmp, _Runner(progress) as runner:
        for wname in wl_names:
            wl = WORKLOADS[wname] if tuples is None else replace(WORKLOADS[wname], tuples=tuples)
            report["workloads"][wname] = _bench_workload(wl, algo_names, Path(tmp), runner,
                                                         chunk_rows, time_budget_s, slide, seed,
                                                         peers, peer_mod)
        if memory_check:
            base = WORKLOADS["W2"]
            large = tuples if tuples is not None else base.tuples
            report["memory_scaling"] = _memory_scaling(replace(base, tuples=large), Path(tmp),
                                                       runner, chunk_rows, seed)
    if hasattr(os, "getloadavg"):
        report["machine"]["load_average_1min_at_end"] = round(os.getloadavg()[0], 2)
    write_json(out / "joins.json", report)
    plot_joins(report, out / "joins.png")
    report["files"] = {"json": str(out / "joins.json"), "png": str(out / "joins.png")}
    return report


def _spec(wl: Workload, path: Path, **kw) -> dict:
    return {"workload": asdict(wl), "path": str(path), "n_tuples": wl.tuples, **kw}


def _bench_workload(wl: Workload, algo_names: list[str], tmp: Path, runner: _Runner,
                    chunk_rows: int, budget: float, slide: int, seed: int, peers: bool,
                    peer_mod) -> dict:
    data = _generate(wl.rates, wl.distinct, wl.tuples, seed=seed)
    path = save_streams(tmp / f"{wl.name}-{wl.tuples}.npz", data)
    del data
    entries: dict[str, dict] = {}
    for name in algo_names:
        cls = _resolve_algorithm(name)
        variant, why = _variant(cls, wl, slide)
        if variant is None:
            entries[name] = {"label": name, "skipped": why}
            runner.note(f"{wl.name}: {name} skipped: {why}")
            continue
        ref = name == REFERENCE
        spec = _spec(wl, path, algorithm=name, slide=variant["slide"], restore=variant["restore"],
                     chunk_rows=chunk_rows, budget_s=None if ref else budget,
                     pilot_rows=max(2000, 3 * wl.warmup))
        res = runner.run(f"{wl.name} {variant['label']}", algorithm_child, spec, wl.tuples,
                         timeout=None if ref else max(120.0, 10 * budget))
        entries[name] = {**variant, **res}

    result: dict[str, Any] = {
        "description": wl.description,
        "streams": [{"name": a, "rate": r, "range": t, "distinct": v}
                    for a, r, t, v in zip(wl.aliases, wl.rates, wl.windows, wl.distinct)],
        "tuples": wl.tuples, "query": wl.query().text, "algorithms": entries,
    }
    if not peers:
        return result
    checks = sorted({(e["tuples"], e["slide"] if e["semantics"] == "lazy, no restore" else None)
                     for e in entries.values() if "results" in e}, key=lambda c: (c[0], c[1] or 0))
    spec = _spec(wl, path, aliases=wl.aliases, windows=list(wl.windows), checks=checks)
    duck = runner.run(f"{wl.name} duckdb (SQL band join)", peer_mod.duckdb_child, spec, 1,
                      timeout=1800)
    result["duckdb"] = duck
    verified = {tuple(c["check"]): c for c in duck.get("checks", [])}
    for e in entries.values():
        if "results" in e:
            key = (e["tuples"], e["slide"] if e["semantics"] == "lazy, no restore" else None)
            _compare(e, verified.get(key))
    checked = [e["counts_match"] and e["checksums_match"] for e in entries.values()
               if "counts_match" in e]
    result["all_results_verified"] = bool(checked) and all(checked)
    ref = entries.get(REFERENCE, {})
    if "results" in duck:
        duck["counts_match"] = ref.get("results") == duck["results"] if "results" in ref else None
        duck["checksums_match"] = (ref.get("member_pos_sums") == duck["member_pos_sums"]
                                   if "results" in ref else None)
    if ref.get("tuples_per_s") and "runs" in duck:
        for key, run in duck["runs"].items():
            run["speedup_vs_duckdb"] = ref["tuples_per_s"] / run["tuples_per_s"]
            run["speedup_vs_duckdb_count_only"] = ref["tuples_per_s"] / run["count_tuples_per_s"]
        one = duck["runs"].get("threads_1")
        if one:
            result["speedup_vs_duckdb"] = one["speedup_vs_duckdb"]
            result["speedup_vs_duckdb_count_only"] = one["speedup_vs_duckdb_count_only"]
            result["speedup_definition"] = (
                f"{REFERENCE} tuples/s / DuckDB tuples/s, DuckDB with 1 thread materialising "
                "the result rows (count_only: SELECT count(*) and checksums); DuckDB load time "
                "excluded (duckdb.load_s)")
    return result


def _memory_scaling(wl: Workload, tmp: Path, runner: _Runner, chunk_rows: int, seed: int) -> dict:
    """``columnar`` peak RSS on W2-shaped inputs of N and 10·N tuples."""
    from slidewise.operators.joins import algorithms as registry
    if REFERENCE not in registry():
        return {"algorithm": REFERENCE, "skipped": f"{REFERENCE} is not registered", "ok": None}
    sizes = [max(1, wl.tuples // 10), wl.tuples]
    data = _generate(wl.rates, wl.distinct, sizes[1], seed=seed)
    path = save_streams(tmp / f"mem-{sizes[1]}.npz", data)
    del data
    runs = []
    for n in sizes:
        w = replace(wl, tuples=n)
        spec = _spec(w, path, algorithm=REFERENCE, slide=None, restore=False,
                     chunk_rows=chunk_rows, budget_s=None, pilot_rows=0)
        res = runner.run(f"memory: {REFERENCE} on {n:,} tuples", algorithm_child, spec, n,
                         timeout=1800)
        runs.append({"tuples": n, **{k: res.get(k) for k in
                                     ("peak_rss_mb", "baseline_rss_mb", "state_tuples_end",
                                      "tuples_per_s", "results", "error")
                                     if k in res}})
    small, large = runs
    ratio = None
    if small.get("peak_rss_mb") and large.get("peak_rss_mb") is not None:
        ratio = large["peak_rss_mb"] / small["peak_rss_mb"]
    out = {"algorithm": REFERENCE, "workload": "W2-shaped (same windows)", "chunk_rows": chunk_rows,
           "small": small, "large": large, "ratio": ratio,
           "acceptance": "10x input uses < 1.5x the peak memory",
           "ok": ratio is not None and ratio < 1.5}
    if sizes[0] < 2 * chunk_rows:
        out["note"] = (f"N = {sizes[0]:,} is below two chunks of {chunk_rows:,} rows: the peak is "
                       "dominated by per-chunk buffers, so the ratio says little")
    return out


# ------------------------------------------------------------------ plot ----

def _fmt(v: float) -> str:
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= div:
            return f"{v / div:.3g}{suffix}"
    return f"{v:.3g}"


def plot_joins(report: dict, path: str | Path) -> Path:
    """Bars of input tuples/s (log) and comparisons per tuple per algorithm and workload."""
    from slidewise.bench.common import pyplot, save_png
    plt = pyplot()
    wls = report["workloads"]
    fig, axes = plt.subplots(2, max(1, len(wls)), figsize=(6.5 * max(1, len(wls)), 9),
                             squeeze=False, gridspec_kw={"height_ratios": [3, 2]})
    colours = {"eager": "#4c72b0", "lazy": "#55a868", "reference": "#c44e52", "peer": "#8c8c8c"}
    for col, (wname, w) in enumerate(wls.items()):
        bars = []  # (label, tuples/s, colour, truncated, note)
        for e in w["algorithms"].values():
            if not e.get("tuples_per_s"):
                continue
            kind = ("reference" if e["label"] == REFERENCE
                    else "lazy" if e.get("semantics", "").startswith("lazy") else "eager")
            note = f"{e['tuples']:,} t" if e.get("truncated") else ""
            bars.append((e["label"], e["tuples_per_s"], colours[kind], e.get("truncated"), note))
        for key, run in (w.get("duckdb") or {}).get("runs", {}).items():
            bars.append((f"DuckDB SQL ({run['threads']} thr)", run["tuples_per_s"],
                         colours["peer"], False, ""))
        ax = axes[0][col]
        ys = range(len(bars))
        ax.barh(list(ys), [b[1] for b in bars], color=[b[2] for b in bars],
                hatch=None, edgecolor="white")
        for y, b in zip(ys, bars):
            if b[3]:
                ax.barh([y], [b[1]], color="none", edgecolor="black", hatch="//", linewidth=0)
            ax.text(b[1] * 1.08, y, _fmt(b[1]) + (f"  ({b[4]})" if b[4] else ""),
                    va="center", fontsize=8)
        ax.set_xscale("log")
        ax.set_yticks(list(ys), [b[0] for b in bars], fontsize=9)
        ax.invert_yaxis()
        if bars:
            ax.set_xlim(min(b[1] for b in bars) / 3, max(b[1] for b in bars) * 30)
        ax.set_xlabel("input tuples per second (log)")
        speed = w.get("speedup_vs_duckdb")
        ax.set_title(textwrap.fill(f"{wname}: {w['description']}", 70) + f"\n{w['tuples']:,} tuples"
                     + (f"; columnar / DuckDB(1 thr) = {speed:.2f}x" if speed else ""), fontsize=10)
        ax.grid(axis="x", which="major", alpha=0.3)

        comp = [(e["label"], e.get("comparisons_per_tuple_steady") or e.get("comparisons_per_tuple"))
                for e in w["algorithms"].values() if e.get("comparisons_per_tuple") is not None]
        ax2 = axes[1][col]
        ys2 = range(len(comp))
        vals = [max(v, 1e-3) for _, v in comp]
        ax2.barh(list(ys2), vals, color="#dd8452")
        for y, (_, v) in zip(ys2, comp):
            ax2.text(max(v, 1e-3) * 1.08, y, _fmt(v), va="center", fontsize=8)
        ax2.set_xscale("log")
        ax2.set_yticks(list(ys2), [c[0] for c in comp], fontsize=9)
        ax2.invert_yaxis()
        if vals:
            ax2.set_xlim(min(vals) / 3, max(vals) * 30)
        ax2.set_xlabel("attribute comparisons per input tuple (steady state, log)")
        ax2.grid(axis="x", which="major", alpha=0.3)
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in colours.values()]
    handles.append(plt.Rectangle((0, 0), 1, 1, facecolor="white", edgecolor="black", hatch="//"))
    fig.legend(handles, ["eager", "lazy (SLIDE)", "columnar (reference)", "peer",
                         "prefix of the input (time budget)"],
               loc="lower center", ncol=5, fontsize=9, frameon=False)
    m = report["machine"]
    foot = f"{m.get('cpu_model', m.get('machine', ''))}, {m.get('cpu_count')} CPUs, Python {m['python']}"
    if m.get("load_average_1min") is not None:
        foot += f", load avg {m['load_average_1min']:.1f} at start"
    ms = report.get("memory_scaling")
    if ms and ms.get("ratio") is not None:
        foot += (f"  |  memory: columnar peak RSS {ms['small']['peak_rss_mb']:.1f} MB at "
                 f"{ms['small']['tuples']:,} vs {ms['large']['peak_rss_mb']:.1f} MB at "
                 f"{ms['large']['tuples']:,} tuples (ratio {ms['ratio']:.2f})")
    fig.suptitle("slidewise bench joins", fontsize=13, fontweight="bold")
    fig.text(0.5, 0.035, foot, ha="center", fontsize=8, color="#555555")
    fig.tight_layout(rect=(0, 0.05, 1, 0.97))
    return save_png(fig, path)
