"""``slidewise bench spark``: slidewise on Spark against Spark's own stream-stream join.

Workloads W2 and W4 of :mod:`slidewise.bench.workloads` (600,000 tuples each:
100,000 per micro-batch, so that the steady-state cost per tuple, not the
query start and the fixed cost of a micro-batch, decides) are written by
:func:`~slidewise.runtime.generate.write_streams` as one CSV directory per
stream, cut into ``slices`` files of consecutive time. Both engines read the
same files with one file per stream per micro-batch (``maxFilesPerTrigger
= 1``) until the input is used up (available-now; slidewise's end of input,
which flushes its last windows, comes with the last files). Each engine runs in a
fresh process (:func:`~slidewise.bench.common.run_isolated`, one JVM per
engine): first a warm-up run per workload over its own input (up to
:data:`WARMUP_TUPLES` tuples in as many files, so the JVM has compiled the hot
paths of every micro-batch step — a 2,000-tuple warm-up left the JIT compiler
busy for most of the measured run), then the measured runs. Both engines run
with the same Spark settings (:func:`slidewise.spark.session.session_conf`:
shuffle partitions = cores, RocksDB state store with changelog checkpointing,
the JVM's C1 compiler only);
the report lists them per engine (``spark_settings``).

* **slidewise on Spark** – :func:`slidewise.spark.join_runner.start_spark`: the
  multi-way join in one stateful operator.
* **Spark stream-stream join** – event time ``timestamp_millis(ts + 1)``
  with a zero-delay watermark per stream. A combination is a result iff
  ``ts_i >= ts_k - T_i`` for all members ``i, k`` (the origin has the greatest
  ``ts``), i.e. pairwise time-range conditions ``ts_k - T_i <= ts_i <= ts_k +
  T_k``. W2 is one join with that condition; W4 chains binary joins
  ``((S1 ⋈ S2) ⋈ S3) ⋈ S4``, each with the conditions between the new stream
  and every earlier one. Spark allows one event-time column per join input,
  so an intermediate result keeps S1's as its event time (the watermarked
  condition that bounds its state) and the other conditions compare the raw
  ``ts`` numbers; intermediate results are held in state — the cost a
  multi-way operator avoids. The ``+ 1`` ms: Spark drops a row whose event
  time is not above the watermark, and the first micro-batch's watermark is
  0, so without it a tuple at ``ts = 0`` would be lost (``shift_ms=0``
  reproduces that).

Reported per engine: result count (checked against the local engine, which
equals the oracle), input tuples per second over the query's wall time,
over Spark's busy time and over the CPU time of the engine's processes (on a
shared machine the wall times of the two engines, measured one after the
other, see different load; CPU time does not), micro-batches, and the peak over micro-batches of the
state store's ``numRowsTotal`` / ``memoryUsedBytes`` summed over the stateful
operators (slidewise keeps each hash bucket's window as one state row, so its
tuples held in state are reported too). Results: ``<out>/spark.json`` and
``<out>/spark.png``.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np

from slidewise.bench.common import machine_info, pyplot, run_isolated, save_png, write_json
from slidewise.bench.workloads import WORKLOADS, Workload
from slidewise.errors import PlanError

#: input tuples per workload for this bench (Spark micro-batches on a 2-core machine)
DEFAULT_TUPLES = {"W2": 600_000, "W4": 600_000}
#: input tuples of the warm-up run per workload (at most the measured run's)
WARMUP_TUPLES = 100_000
#: the Spark settings reported per engine
REPORTED_CONF = (
    "spark.master",
    "spark.sql.shuffle.partitions",
    "spark.sql.streaming.stateStore.providerClass",
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled",
    "spark.sql.execution.arrow.maxRecordsPerBatch",
    "spark.sql.streaming.noDataMicroBatches.enabled",
    "spark.python.worker.reuse",
    "spark.driver.extraJavaOptions",
)
ENGINES = {"slidewise": "slidewise on Spark", "spark-join": "Spark stream-stream join"}


# ------------------------------------------------------------------ inputs


def write_workload(wl: Workload, tuples: int, slices: int, out_dir: Path, seed: int = 0) -> dict[str, str]:
    """Generate ``wl`` and write each stream as ``out_dir/S<i>/part-<k>.csv`` (``slices`` time slices).

    Spark's file source takes new files in modification-time order (ties in
    listing order), so slice ``k`` gets modification time ``now - slices + k``
    seconds: read in name order, as the local engine reads a directory.
    """
    from slidewise.runtime.generate import generate, write_streams

    streams = generate(list(wl.rates), list(wl.distinct), tuples, seed=seed)
    bounds = np.linspace(0, tuples, slices + 1).astype(np.int64)
    sources = {}
    now = int(time.time())
    for alias, s in zip(wl.aliases, streams):
        cuts = np.searchsorted(s["ts"], bounds)
        parts = [{k: v[a:b] for k, v in s.items()} for a, b in zip(cuts[:-1], cuts[1:])]
        path = out_dir / alias
        files = write_streams(parts, path, names=[f"part-{k:05d}" for k in range(slices)])
        for k, f in enumerate(files):
            os.utime(f, (now - slices + k, now - slices + k))
        sources[alias] = str(path)
    return sources


def expected_results(wl: Workload, sources: dict[str, str]) -> dict:
    """Result count of the local engine (equal to the oracle's), and of results with a member at ts 0."""
    from slidewise.api import run

    t0 = time.perf_counter()
    res = run(wl.query(), sources, collect=True)
    frame = res.results
    at_zero = int((frame[[f"{a}.ts" for a in wl.aliases]] == 0).any(axis=1).sum())
    return {"results": int(res.stats["results"]), "results_with_ts0_member": at_zero, "local_seconds": round(time.perf_counter() - t0, 3)}


# ------------------------------------------------------------ the engines


def spark_join_frame(spark, wl: Workload, sources: dict[str, str], *, shift_ms: int = 1, max_files: int | None = 1):
    """Spark's own stream-stream join of ``wl`` over the CSV directories (chained for n > 2)."""
    from pyspark.sql import functions as F

    def stream(i: int):
        reader = spark.readStream.schema("ts long, a long, x long").option("header", True)
        if max_files:
            reader = reader.option("maxFilesPerTrigger", int(max_files))
        df = reader.csv(sources[wl.aliases[i]])
        return df.select(
            F.timestamp_millis(F.col("ts") + F.lit(shift_ms)).alias(f"t{i}"), F.col("ts").alias(f"ts{i}"), F.col("a").alias(f"a{i}"), F.col("x").alias(f"x{i}")
        ).withWatermark(f"t{i}", "0 seconds")

    T = wl.windows
    joined = stream(0)
    for k in range(1, len(T)):
        conds = [F.col("a0") == F.col(f"a{k}")]
        for i in range(k):
            if i == 0:  # the watermarked pair: bounds the state of both inputs
                conds.append(F.col("t0") >= F.col(f"t{k}") - F.expr(f"INTERVAL {T[0]} MILLISECONDS"))
                conds.append(F.col("t0") <= F.col(f"t{k}") + F.expr(f"INTERVAL {T[k]} MILLISECONDS"))
            else:
                conds.append(F.col(f"ts{i}") >= F.col(f"ts{k}") - F.lit(T[i]))
                conds.append(F.col(f"ts{i}") <= F.col(f"ts{k}") + F.lit(T[k]))
        cond = conds[0]
        for c in conds[1:]:
            cond = cond & c
        joined = joined.join(stream(k), cond).drop(f"t{k}")  # one event-time column per input
    return joined


def run_spark_join(spark, wl: Workload, sources: dict[str, str], *, shift_ms: int = 1, max_files: int | None = 1) -> dict:
    """Run Spark's stream-stream join available-now; count results per micro-batch; progress."""
    counts: list[int] = []

    def count(df, _batch_id) -> None:
        counts.append(df.count())

    work = Path(tempfile.mkdtemp(prefix="slidewise-bench-sparkjoin-"))
    try:
        t0 = time.perf_counter()
        q = (
            spark_join_frame(spark, wl, sources, shift_ms=shift_ms, max_files=max_files)
            .writeStream.foreachBatch(count)
            .option("checkpointLocation", str(work / "chk"))
            .trigger(availableNow=True)
            .start()
        )
        q.awaitTermination()
        wall = time.perf_counter() - t0
        progress = [json.loads(p.json) for p in q.recentProgress]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {"results": int(sum(counts)), "wall_s": wall, **progress_summary(progress)}


def run_slidewise(spark, wl: Workload, sources: dict[str, str], *, max_files: int | None = 1) -> dict:
    """Run slidewise on Spark (the streaming engine) available-now over the same files."""
    from slidewise.spark.join_runner import start_spark

    t0 = time.perf_counter()
    run = start_spark(wl.query(), sources, spark=spark, once=True, collect=False, max_files_per_trigger=max_files)
    try:
        run.wait()
    finally:
        run.stop()
    wall = time.perf_counter() - t0
    stats = run.result().stats
    out = {"results": int(stats["results"]), "wall_s": wall, **progress_summary(run.progress)}
    out.update(
        {"state_tuples_peak": stats.get("state_tuples_peak"), "buckets": stats.get("buckets"), "algorithm": stats.get("algorithm"), "rejects": stats.get("rejects")}
    )
    return out


def progress_summary(progress: list[dict]) -> dict:
    """Busy time, micro-batches and peak state (rows, bytes; summed over operators) from Spark's progress."""
    batches = []
    for p in progress:
        ops = p.get("stateOperators") or []
        batches.append(
            {
                "batch": p.get("batchId"),
                "input_rows": int(p.get("numInputRows") or 0),
                "ms": int((p.get("durationMs") or {}).get("triggerExecution") or 0),
                "state_rows": sum(int(o.get("numRowsTotal") or 0) for o in ops),
                "state_bytes": sum(int(o.get("memoryUsedBytes") or 0) for o in ops),
                "state_rows_per_operator": [int(o.get("numRowsTotal") or 0) for o in ops],
            }
        )
    return {
        "busy_s": sum(b["ms"] for b in batches) / 1000,
        "micro_batches": len(batches),
        "input_rows": sum(b["input_rows"] for b in batches),
        "stateful_operators": max((len(b["state_rows_per_operator"]) for b in batches), default=0),
        "peak_state_rows": max((b["state_rows"] for b in batches), default=0),
        "peak_state_bytes": max((b["state_bytes"] for b in batches), default=0),
        "batches": batches,
    }


def engine_child(spec: dict, send) -> dict:
    """One engine on every workload in this (fresh) process: its own JVM, warm-ups, measured runs."""
    from slidewise.spark.session import get_session

    spark = get_session(spec.get("master") or "local[2]", spec.get("conf") or None)
    return measure_engine(spark, spec["engine"], spec["runs"], send)


def spark_settings(spark) -> dict:
    """The session's values of :data:`REPORTED_CONF` (Spark's default where unset; JVM options
    without the private log4j file)."""
    out = {}
    for key in REPORTED_CONF:
        value = spark.conf.get(key, None) or spark.sparkContext.getConf().get(key, None) or "(Spark default)"
        if key.endswith("extraJavaOptions"):
            value = " ".join(v for v in value.split() if not v.startswith("-Dlog4j2.")) or "(none)"
        out[key] = value
    return out


def measure_engine(spark, engine: str, runs: list[dict], send=None) -> dict:
    """Warm up on every run's ``warmup`` sources (if any), then measure every run; by workload name.

    ``runs``: ``{"workload": asdict(Workload), "sources": ..., "warmup": sources or None}``.
    """

    def once(wl: Workload, srcs: dict) -> dict:
        cpu = tree_cpu_seconds()
        res = run_slidewise(spark, wl, srcs) if engine == "slidewise" else run_spark_join(spark, wl, srcs)
        res["cpu_s"] = round(tree_cpu_seconds() - cpu, 2)
        return res

    t0 = time.perf_counter()
    for r in runs:
        if r.get("warmup"):
            once(Workload.from_dict(r["workload"]), r["warmup"])
    warm_s = round(time.perf_counter() - t0, 2)
    settings = spark_settings(spark)
    out = {}
    for r in runs:
        wl = Workload.from_dict(r["workload"])
        try:
            res = once(wl, r["sources"])
        except Exception as e:  # noqa: BLE001 - one failed run is reported, the others go on
            out[wl.name] = {"error": str(e).strip().splitlines()[0][:300]}
            continue
        res["tuples_per_s"] = wl.tuples / res["wall_s"] if res["wall_s"] else None
        res["tuples_per_busy_s"] = wl.tuples / res["busy_s"] if res["busy_s"] else None
        res["tuples_per_cpu_s"] = wl.tuples / res["cpu_s"] if res["cpu_s"] else None
        res["warmup_s_all_workloads"] = warm_s
        res["spark_settings"] = settings
        out[wl.name] = res
        if send is not None:
            send("progress", wl.name)
    return out


def tree_cpu_seconds() -> float:
    """CPU seconds (user + system) of this process and its descendants (the JVM, Spark's Python
    workers), including exited children: unlike wall time, not inflated by other load on the machine."""
    import psutil

    me = psutil.Process()
    total = 0.0
    for p in [me, *me.children(recursive=True)]:
        try:
            t = p.cpu_times()
        except psutil.Error:  # exited meanwhile: counted in its parent's children times
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


# ------------------------------------------------------------------ driver


def run_spark_bench(
    workload: str = "all",
    tuples: int | None = None,
    out_dir: str = "bench-results",
    *,
    slices: int = 6,
    seed: int = 0,
    engines: list[str] | None = None,
    isolate: bool = True,
    spark=None,
    warmup: bool = True,
    master: str = "local[2]",
    timeout: float | None = 1800,
    progress: bool = True,
) -> dict:
    """Run the bench; write ``spark.json`` and ``spark.png`` to ``out_dir``; return the report.

    Each engine runs every workload in one fresh process (one JVM per engine);
    ``isolate=False`` runs them in this process on ``spark`` (tests).
    """
    names = list(WORKLOADS) if workload.lower() == "all" else [w.strip().upper() for w in workload.split(",")]
    unknown = [w for w in names if w not in WORKLOADS]
    if unknown or not names:
        raise PlanError(f"unknown workload {', '.join(unknown) or workload!r}", hint=f"choose all or some of {', '.join(WORKLOADS)}")
    engines = engines or list(ENGINES)
    out = Path(out_dir)
    work = Path(tempfile.mkdtemp(prefix="slidewise-bench-spark-"))
    report: dict[str, Any] = {
        "bench": "spark",
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": machine_info(),
        "settings": {
            "slices": slices,
            "max_files_per_trigger": 1,
            "trigger": "available-now",
            "master": master if isolate else spark.sparkContext.master,
            "seed": seed,
            "isolated": isolate,
            "warmup": f"a run over {WARMUP_TUPLES:,} other tuples (at most the measured run's) in {slices} files per workload first" if warmup else None,
            "spark_join_event_time": "timestamp_millis(ts + 1)",
            "watermark_delay": "0 seconds",
            "end_of_input": "slidewise: flushes its last windows in the micro-batch of the last files (planned at the start of an available-now run); "
            "Spark join: emits on match, its last micro-batch holds no data (watermark advance, spark.sql.streaming.noDataMicroBatches.enabled)",
            "tuples_per_s": "input tuples / wall seconds from query start to its end; tuples_per_busy_s: over the sum of Spark's triggerExecution times; "
            "tuples_per_cpu_s: over the CPU seconds of the engine's processes (driver, JVM, Python workers)",
        },
        "workloads": {},
    }
    try:
        runs = []
        for name in names:
            wl = replace(WORKLOADS[name], tuples=tuples or DEFAULT_TUPLES[name])
            sources = write_workload(wl, wl.tuples, slices, work / name, seed)
            warm = write_workload(wl, min(WARMUP_TUPLES, wl.tuples), slices, work / f"{name}-warmup", seed + 1) if warmup else None
            report["workloads"][name] = {
                "description": wl.description,
                "tuples": wl.tuples,
                "query": wl.query().text,
                "expected": expected_results(wl, sources),
                "engines": {},
            }
            runs.append({"workload": asdict(wl), "sources": sources, "warmup": warm})
        for engine in engines:
            _note(progress, f"{ENGINES[engine]}: {', '.join(names)} ...")
            if isolate:
                got = run_isolated(engine_child, {"engine": engine, "runs": runs, "master": master}, timeout=timeout)
            else:
                got = measure_engine(spark, engine, runs)
            for name in names:
                res = dict(got.get(name) or {"error": got.get("error", "no result")})
                expected = report["workloads"][name]["expected"]
                res["label"] = ENGINES[engine]
                if "results" in res:
                    res["counts_match"] = res["results"] == expected["results"]
                    if not res["counts_match"]:
                        res["note"] = _explain(res, expected)
                report["workloads"][name]["engines"][engine] = res
                _note(progress, f"  {name}: " + _line(res))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report["machine"]["load_average_1min_end"] = round(os.getloadavg()[0], 2)
    for e in report["workloads"].values():
        e["ratios"] = _ratios(e["engines"])
    report["summary"] = {
        w: {"expected_results": e["expected"]["results"], **e["ratios"], **{f"{k}_results": v.get("results") for k, v in e["engines"].items()}}
        for w, e in report["workloads"].items()
    }
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "spark.json", report)
    plot_spark(report, out / "spark.png")
    return report


def _ratios(engines: dict) -> dict:
    """slidewise / Spark join: throughput (wall, busy), peak state store rows and bytes, and tuples
    held in state (slidewise keeps a bucket's window in one state row; Spark's join one row per tuple)."""
    a, b = engines.get("slidewise", {}), engines.get("spark-join", {})
    out = {}
    for key in ("tuples_per_s", "tuples_per_busy_s", "tuples_per_cpu_s", "peak_state_rows", "peak_state_bytes"):
        if a.get(key) and b.get(key):
            out[f"{key}_ratio"] = _sig(a[key] / b[key])
    if a.get("state_tuples_peak") and b.get("peak_state_rows"):
        out["state_tuples_ratio"] = _sig(a["state_tuples_peak"] / b["peak_state_rows"])
    return out


def _sig(x: float) -> float:
    """Three significant digits (state ratios are far below 0.001)."""
    return float(f"{x:.3g}")


def _explain(res: dict, expected: dict) -> str:
    """Why a count differs from the local engine's (= the oracle's)."""
    lost = expected["results"] - res["results"]
    if lost > 0 and lost == expected["results_with_ts0_member"] and "rejects" not in res:
        return f"{lost} results with a member at ts = 0 missing: Spark drops rows whose event time is not above the first micro-batch's watermark (0)"
    text = f"{-lost:+d} results against the local engine / oracle"
    if res.get("rejects"):
        text += f"; the engine rejected {res['rejects']:,} input rows"
    return text


def _line(res: dict) -> str:
    if "error" in res:
        return f"failed: {res['error']}"
    rate = res.get("tuples_per_s") or 0
    return (
        f"{res['results']:,} results ({'ok' if res.get('counts_match') else 'MISMATCH'}), "
        f"{rate:,.0f} tuples/s, {res.get('cpu_s', 0):,.1f} CPU s, {res['micro_batches']} batches, peak state {res['peak_state_rows']:,} rows / "
        f"{res['peak_state_bytes'] / 1e6:.1f} MB"
    )


def _note(enabled: bool, text: str) -> None:
    if enabled:
        import sys

        print(text, file=sys.stderr, flush=True)


# ------------------------------------------------------------------ plot


def plot_spark(report: dict, path: str | Path) -> Path:
    """Three panels: tuples/s, peak state (log), state store rows per micro-batch."""
    plt = pyplot()
    wls = list(report["workloads"])
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.6))
    colours = {"slidewise": "#c44e52", "spark-join": "#8c8c8c", "tuples": "#e8a0a2"}
    labels = [f"{w}\n{report['workloads'][w]['tuples']:,} tuples" for w in wls]

    def bars(ax, series, width):
        for k, (label, colour, values) in enumerate(series):
            xs = [w + (k - (len(series) - 1) / 2) * width for w in range(len(wls))]
            keep = [(x, v) for x, v in zip(xs, values) if v]
            ax.bar([x for x, _ in keep], [v for _, v in keep], width, color=colour, label=label)
            for x, v in keep:
                ax.annotate(f"{v:,.0f}", (x, v), ha="center", va="bottom", fontsize=7)
        ax.set_xticks(range(len(wls)), labels)
        ax.legend(fontsize=7)

    def get(engine, key):
        return [report["workloads"][w]["engines"].get(engine, {}).get(key) for w in wls]

    bars(axes[0], [(ENGINES[e], colours[e], get(e, "tuples_per_s")) for e in ENGINES], 0.38)
    axes[0].set_title("input tuples / s (query wall time)")
    for k, e in enumerate(ENGINES):
        for w, ok in enumerate(get(e, "counts_match")):
            if ok is False:
                axes[0].annotate("result count\n≠ oracle", (w + (k - 0.5) * 0.38, 0), ha="center", va="bottom", fontsize=7, color="white", fontweight="bold")
    bars(
        axes[1],
        [
            ("slidewise: state store rows (one per bucket)", colours["slidewise"], get("slidewise", "peak_state_rows")),
            ("slidewise: tuples held in state", colours["tuples"], get("slidewise", "state_tuples_peak")),
            ("Spark join: state store rows (tuples, intermediate results)", colours["spark-join"], get("spark-join", "peak_state_rows")),
        ],
        0.27,
    )
    axes[1].set_yscale("log")
    tallest = max([v for e in ENGINES for v in get(e, "peak_state_rows") if v] or [1])
    axes[1].set_ylim(top=tallest * 30)
    axes[1].set_title("peak state over micro-batches")
    ax = axes[2]
    for name in wls:
        for engine, e in report["workloads"][name]["engines"].items():
            rows = [b["state_rows"] for b in e.get("batches", [])]
            if rows:
                ax.plot(range(len(rows)), rows, marker="o", color=colours[engine], linestyle="-" if name == wls[0] else "--", label=f"{name} {ENGINES[engine]}")
    ax.set_yscale("symlog")
    ax.set_xlabel("micro-batch")
    ax.set_title("state store rows after each micro-batch")
    ax.legend(fontsize=7)
    m = report["machine"]
    fig.suptitle(
        f"slidewise on Spark vs Spark stream-stream join — {m.get('cpu_count')} CPUs "
        f"(load {m.get('load_average_1min')} .. {m.get('load_average_1min_end')}), "
        f"{report['settings']['slices']} files per stream, "
        "one per micro-batch",
        fontsize=10,
    )
    fig.tight_layout()
    return save_png(fig, path)
