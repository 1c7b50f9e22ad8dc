"""``slidewise bench joins``: throughput, cost and memory of the join algorithms.

Workloads W2 and W4 (:mod:`slidewise.bench.workloads`). Every registered
algorithm whose ``check()`` accepts the workload runs in a fresh subprocess
(:func:`~slidewise.bench.common.run_isolated`) that loads the shared input,
builds the chunks, and only then starts the clock and the peak-memory
baseline. Lazy algorithms get a ``SLIDE D`` variant and are labelled with
it. Only ``columnar`` (the reference) always consumes the whole input; every
other algorithm gets a time budget: after a pilot prefix its rate fixes how
many tuples (a prefix in processing order, rounded) it processes, and the
JSON records that number.

The DuckDB peer (:mod:`slidewise.bench.peers`) evaluates the same eager
answer in SQL on the same data, as a plain band join and as a bucketed band
join; both forms' counts and member-position checksums must equal the
reference's, and per-prefix checks verify every other algorithm's output.
:mod:`slidewise.bench.memory` checks that 10x the input does not cost 10x
the memory, for the operator alone and for the whole engine.

Results: ``<out_dir>/joins.json`` and ``<out_dir>/joins.png``
(:mod:`slidewise.bench.plot`); the returned report also carries a compact
``summary`` (:func:`~slidewise.bench.summary.summarize`) that ``slidewise
bench`` prints (:func:`~slidewise.bench.summary.print_summary`).
"""

from __future__ import annotations

import gc
import os
import tempfile
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from slidewise.bench.common import PeakMemory, load_streams, machine_info, nice_round, run_isolated, save_streams, write_json
from slidewise.bench.summary import print_summary, summarize
from slidewise.bench.workloads import COLUMNS, REFERENCE, WORKLOADS, Workload, resolve_algorithm
from slidewise.errors import PlanError
from slidewise.options import DEFAULT_CHUNK_ROWS

__all__ = ["REFERENCE", "WORKLOADS", "Workload", "print_summary", "run_joins_bench", "summarize"]

#: default input sizes of the memory scaling checks (N, 10 N)
MEMORY_TUPLES = (1_000_000, 10_000_000)


def _generate(rates, distinct, n_tuples, *, seed=0):
    """The paper's generator (kept behind a name so tests can substitute it)."""
    from slidewise.runtime.generate import generate

    return generate(list(rates), list(distinct), n_tuples, seed=seed)


# ------------------------------------------------------------ the child ----

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
    wl = Workload.from_dict(spec["workload"])
    streams = load_streams(spec["path"], spec["n_tuples"])
    cls = resolve_algorithm(spec["algorithm"])
    query = wl.query(spec["slide"], spec["restore"])
    gc.collect()

    mem = PeakMemory().start()
    passes = [_one_pass(cls(query), wl, streams, spec["chunk_rows"], spec["budget_s"], spec["pilot_rows"], send)]
    if not spec["budget_s"]:
        while sum(p["seconds"] for p in passes) < MIN_MEASURE_S and len(passes) < MAX_REPEATS:
            passes.append(_one_pass(cls(query), wl, streams, spec["chunk_rows"], None, 0, lambda *_: None))
    mem.stop()
    median = sorted(passes, key=lambda p: p["seconds"])[(len(passes) - 1) // 2]
    busy = median["seconds"]
    out = passes[0]
    n = out["tuples"]
    out.update(
        {
            "seconds": round(busy, 4),
            "cpu_seconds": median["cpu_seconds"],
            "passes": len(passes),
            "seconds_all": [round(p["seconds"], 4) for p in passes],
            "tuples_per_s": n / busy if busy else None,
            "results_per_s": out["results"] / busy if busy else None,
            **mem.as_dict(),
        }
    )
    return out


def _one_pass(op, wl: Workload, streams: list[dict], chunk_rows: int, budget: float | None, pilot_rows: int, send) -> dict:
    import numpy as np

    from slidewise.model.batch import StreamBatch

    n_total = sum(len(s["pos"]) for s in streams)
    pilot = min(pilot_rows, n_total) if budget else 0
    busy = cpu = 0.0
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
            chunk.append(StreamBatch(i, s["pos"][lo:hi], s["ts"][lo:hi], {c: s[c][lo:hi] for c in COLUMNS}))
            cursor[i] = hi
        t0, c0 = time.perf_counter(), time.process_time()
        res = op.process(chunk)
        busy += time.perf_counter() - t0
        cpu += time.process_time() - c0
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
    t0, c0 = time.perf_counter(), time.process_time()
    res = op.finish()
    busy += time.perf_counter() - t0
    cpu += time.process_time() - c0
    tally(res)
    del res

    steady = None
    if warm is not None and start > warm[0]:
        steady = (op.comparisons - warm[1]) / (start - warm[0])
    return {
        "tuples": start,
        "input_tuples": n_total,
        "truncated": start < n_total,
        "truncated_reason": reason,
        "seconds": busy,
        "cpu_seconds": round(cpu, 4),
        "results": results,
        "comparisons": int(op.comparisons),
        "comparisons_per_tuple": op.comparisons / start if start else None,
        "comparisons_per_tuple_steady": steady,
        "state_tuples_end": int(state_end),
        "member_pos_sums": sums,
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
            return {"label": cls.name, "summary": summary, "semantics": "eager", "slide": None, "restore": False}, None
        sem = "lazy, restore" if restore else "lazy, no restore"
        return {"label": f"{cls.name} (SLIDE {d}{', restore' if restore else ''})", "summary": summary, "semantics": sem, "slide": d, "restore": restore}, None
    return None, errors[0] if errors else "not applicable"


class _Runner:
    """Runs isolated children and shows their progress with rich (or silently)."""

    def __init__(self, enabled: bool) -> None:
        self.progress = None
        if enabled:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.progress = Progress(
                TextColumn("[bold]{task.description:<34}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=Console(stderr=True), transient=False
            )

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
            self.progress.update(task, completed=t.total if "error" not in out else t.completed, description=description + (" [red]failed" if "error" in out else ""))
        out.setdefault("wall_s", round(time.perf_counter() - t0, 2))
        return out


def _select_workloads(workload: str) -> list[str]:
    if workload.lower() == "all":
        return list(WORKLOADS)
    names = [w.strip().upper() for w in workload.split(",") if w.strip()]
    unknown = [w for w in names if w not in WORKLOADS]
    if unknown or not names:
        raise PlanError(f"unknown join workload {', '.join(unknown) or repr(workload)}", hint=f"choose one of: all, {', '.join(WORKLOADS)}")
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
            raise PlanError(f"unknown join algorithm {', '.join(unknown)}", hint=f"choose from: {', '.join(known)}, duckdb")
    return sorted(names, key=lambda a: (a != REFERENCE, known.index(a) if a in known else len(known)))


def _compare(entry: dict, expected: dict | None) -> None:
    if expected is None or "results" not in entry:
        return
    entry["expected_results"] = expected["results"]
    entry["counts_match"] = entry["results"] == expected["results"]
    entry["checksums_match"] = entry["member_pos_sums"] == expected["member_pos_sums"]


def run_joins_bench(
    workload: str = "all",
    tuples: int | None = None,
    algorithms: list[str] | None = None,
    out_dir: str = "bench-results",
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    progress: bool = True,
    *,
    time_budget_s: float = 6.0,
    slide: int = 10,
    seed: int = 0,
    peers: bool = True,
    memory_check: bool = True,
    memory_tuples: tuple[int, int] | None = None,
    engine_memory_check: bool = True,
) -> dict:
    """Run the join benchmark; write ``joins.json`` and ``joins.png`` to ``out_dir``.

    ``tuples`` overrides every workload's input size; ``algorithms`` restricts
    the algorithms (default: all registered; ``duckdb`` in the list is
    accepted: the peer runs whenever ``peers``). ``time_budget_s`` bounds the
    run of every algorithm but ``columnar``; ``slide`` is the SLIDE of the
    lazy variants. ``memory_tuples`` are the two input sizes of the memory
    checks (default 1M and 10M, or ``tuples`` and 10x that when ``tuples`` is
    given). Returns the report written to the JSON plus ``summary`` and
    ``files``.
    """
    from slidewise.bench import memory as memory_mod
    from slidewise.bench import peers as peer_mod
    from slidewise.bench.plot import plot_joins
    from slidewise.operators.joins import DEFAULT

    wl_names = _select_workloads(workload)
    algo_names = _select_algorithms(algorithms)
    if time_budget_s <= 0:
        raise PlanError(f"the time budget must be positive, got {time_budget_s:g} s", hint="e.g. --time-budget 6")
    if memory_tuples is None:
        memory_tuples = MEMORY_TUPLES if tuples is None else (tuples, 10 * tuples)
    out = Path(out_dir)
    t_start = time.perf_counter()
    report: dict[str, Any] = {
        "bench": "joins",
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": machine_info(),
        "settings": {
            "chunk_rows": chunk_rows,
            "time_budget_s": time_budget_s,
            "lazy_slide": slide,
            "seed": seed,
            "reference": REFERENCE,
            "default_algorithm": DEFAULT,
            "peers": peers,
            "memory_tuples": list(memory_tuples) if memory_check else None,
            "timing": "seconds = time inside process()/finish() only; the input is "
            "loaded and chunk views are sliced outside the clock; "
            "cpu_seconds = CPU time of the same region and pass: well below "
            "seconds means the run waited for a shared CPU",
            "memory": "peak RSS above the RSS right after the input is loaded, in a fresh spawned process per run",
            "comparisons": "attribute comparisons as each operator counts them (columnar: key comparisons of its binary searches); steady = after the windows first fill",
            "truncation": "every algorithm but the reference runs on a prefix of the input sized by time_budget_s ('tuples' says how many)",
        },
        "workloads": {},
    }
    with tempfile.TemporaryDirectory(prefix="slidewise-bench-") as tmp, _Runner(progress) as runner:
        for wname in wl_names:
            wl = WORKLOADS[wname] if tuples is None else replace(WORKLOADS[wname], tuples=tuples)
            report["workloads"][wname] = _bench_workload(wl, algo_names, Path(tmp), runner, chunk_rows, time_budget_s, slide, seed, peers, peer_mod)
        if memory_check:
            report.update(memory_mod.memory_scaling(WORKLOADS["W2"], tuple(memory_tuples), Path(tmp), runner, chunk_rows, seed, engine=engine_memory_check))
    if hasattr(os, "getloadavg"):
        report["machine"]["load_average_1min_at_end"] = round(os.getloadavg()[0], 2)
    report["bench_wall_s"] = round(time.perf_counter() - t_start, 1)
    report["summary"] = summarize(report)
    files = {"json": str(out / "joins.json"), "png": str(out / "joins.png")}
    report["summary"]["files"] = files
    write_json(out / "joins.json", report)
    plot_joins(report, out / "joins.png")
    report["files"] = files
    return report


def _spec(wl: Workload, path: Path, **kw) -> dict:
    return {"workload": asdict(wl), "path": str(path), "n_tuples": wl.tuples, **kw}


def _check_key(e: dict) -> tuple[int, int | None]:
    """Which DuckDB check verifies entry ``e``: its prefix, and D for lazy no-restore."""
    return e["tuples"], e["slide"] if e["semantics"] == "lazy, no restore" else None


def _bench_workload(
    wl: Workload, algo_names: list[str], tmp: Path, runner: _Runner, chunk_rows: int, budget: float, slide: int, seed: int, peers: bool, peer_mod
) -> dict:
    data = _generate(wl.rates, wl.distinct, wl.tuples, seed=seed)
    path = save_streams(tmp / f"{wl.name}-{wl.tuples}.npz", data)
    del data
    entries: dict[str, dict] = {}
    for name in algo_names:
        cls = resolve_algorithm(name)
        variant, why = _variant(cls, wl, slide)
        if variant is None:
            entries[name] = {"label": name, "skipped": why}
            runner.note(f"{wl.name}: {name} skipped: {why}")
            continue
        ref = name == REFERENCE
        spec = _spec(
            wl,
            path,
            algorithm=name,
            slide=variant["slide"],
            restore=variant["restore"],
            chunk_rows=chunk_rows,
            budget_s=None if ref else budget,
            pilot_rows=max(2000, 3 * wl.warmup),
        )
        res = runner.run(f"{wl.name} {variant['label']}", algorithm_child, spec, wl.tuples, timeout=None if ref else max(120.0, 10 * budget))
        entries[name] = {**variant, **res}

    result: dict[str, Any] = {
        "description": wl.description,
        "streams": [{"name": a, "rate": r, "range": t, "distinct": v} for a, r, t, v in zip(wl.aliases, wl.rates, wl.windows, wl.distinct)],
        "tuples": wl.tuples,
        "query": wl.query().text,
        "algorithms": entries,
    }
    if not peers:
        return result
    checks = sorted({_check_key(e) for e in entries.values() if "results" in e}, key=lambda c: (c[0], c[1] or 0))
    spec = _spec(wl, path, aliases=wl.aliases, windows=list(wl.windows), checks=checks)
    duck = runner.run(f"{wl.name} DuckDB (band, bucketed)", peer_mod.duckdb_child, spec, 2 * len(peer_mod.FORMS) + 1, timeout=1800)
    result["duckdb"] = duck
    _verify(result, duck, peer_mod)
    return result


def _verify(result: dict, duck: dict, peer_mod) -> None:
    """Compare every algorithm with DuckDB's checks and both DuckDB forms with the reference."""
    entries = result["algorithms"]
    verified = {tuple(c["check"]): c for c in duck.get("checks", [])}
    for e in entries.values():
        if "results" in e:
            _compare(e, verified.get(_check_key(e)))
    ref = entries.get(REFERENCE, {})
    forms = duck.get("forms", {})
    for form in forms.values():
        if "results" in ref:
            form["counts_match"] = form["results"] == ref["results"]
            form["checksums_match"] = form["member_pos_sums"] == ref["member_pos_sums"]
        else:
            form["counts_match"] = form["checksums_match"] = None
    sums = {tuple([f["results"], *f["member_pos_sums"]]) for f in forms.values()}
    if forms:
        duck["forms_agree"] = len(sums) == 1
    checked = [e["counts_match"] and e["checksums_match"] for e in entries.values() if "counts_match" in e]
    checked += [f["counts_match"] and f["checksums_match"] for f in forms.values() if f.get("counts_match") is not None]
    result["all_results_verified"] = bool(checked) and all(checked) and duck.get("forms_agree", False)
    if not ref.get("tuples_per_s"):
        return
    for key, form in forms.items():
        suffix = "" if key == "band" else f"_{key}"
        for run in form["runs"].values():
            run["speedup"] = ref["tuples_per_s"] / run["tuples_per_s"]
            run["speedup_count_only"] = ref["tuples_per_s"] / run["count_tuples_per_s"]
            if ref.get("cpu_seconds") and run.get("cpu_seconds") and ref["tuples"] == duck["tuples"]:
                run["speedup_cpu"] = run["cpu_seconds"] / ref["cpu_seconds"]
        one = form["runs"].get("threads_1")
        if one:
            result[f"speedup_vs_duckdb{suffix}"] = one["speedup"]
            result[f"speedup_vs_duckdb{suffix}_count_only"] = one["speedup_count_only"]
            if "speedup_cpu" in one:
                result[f"speedup_vs_duckdb{suffix}_cpu"] = one["speedup_cpu"]
    result["speedup_definition"] = (
        f"{REFERENCE} tuples/s / DuckDB tuples/s, DuckDB with 1 thread materialising the result "
        "rows (count_only: SELECT count(*) and checksums); DuckDB load time excluded "
        "(duckdb.load_s). speedup_vs_duckdb: " + peer_mod.FORMS["band"] + "; speedup_vs_duckdb_bucketed: " + peer_mod.FORMS["bucketed"] + "; *_cpu: the same "
        "ratio in CPU seconds (DuckDB's / the reference's), less sensitive to a shared, loaded "
        "machine"
    )
