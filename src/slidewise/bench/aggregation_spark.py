"""WA on Spark for ``slidewise bench aggregation --spark``: slidewise's pane path on the Spark engine
against Spark Structured Streaming's own ``window()`` aggregation.

Both read the same WA tuples as Parquet files (``maxFilesPerTrigger = 1``: one
micro-batch per file; slidewise ``files`` of them, window() :data:`WINDOW_BATCH`
tuples each) on ``local[2]`` with 2 shuffle partitions, the RocksDB state store
and a 4 GiB driver (:data:`CONF`), each in a fresh process (one JVM each), and
write their rows to Parquet:

* **slidewise on Spark** — ``start_plan_spark`` (available-now): the sequencer
  stage, then the pane buckets (:mod:`slidewise.spark.panes`) keyed by a hash of
  ``a``; the last windows are emitted at the end of input.
* **Spark window()** — ``groupBy(window(et, "1000 seconds", "10 seconds",
  "1 second"), a).count()`` in append mode with a zero-delay watermark, event
  time ``et = ts + 10^6`` seconds (the window ``[10m + 1, 10m + 1001)`` is
  slidewise's ``(τ − 1000, τ]`` at ``τ = end − 1``; the offset keeps ``ts = 0``
  above the first watermark). Append mode emits a window only once the
  watermark passes its end, so its input ends with two *sentinel* files (one
  tuple each, ``a = −1``, far beyond the last ``ts``): the second micro-batch
  runs with the watermark the first set, and every window of the real tuples
  is emitted. It also emits the windows after slidewise's last evaluation
  (``ceil(last ts / D)·D``: the tail where the last tuples expire), which
  slidewise does not evaluate.

Answers are compared over the windows both emit (``τ <= ceil(last ts / D)·D``,
sentinel rows excluded): as multisets (count, sums of 64-bit row hashes, of
``n`` and of ``ts·n``), each against the local engine's file. Reported:
seconds (query start to stop, JVM start excluded), tuples/s, micro-batches,
the JVM's peak RSS, the load average at the end,
and the state store's ``numRowsTotal`` / ``memoryUsedBytes`` summed over the
stateful operators, peak over micro-batches (slidewise keeps one state row per
key bucket and per stream; its (group, pane) partial cells are reported too).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from slidewise.bench.aggregation import LENGTH, QUERY, SLIDE

__all__ = ["SPARK_SYSTEMS", "print_spark", "run_spark_systems", "summarize_spark"]

#: event-time offset of the window() peer (seconds; a multiple of the slide)
OFFSET = 1_000_000
#: conf of both Spark runs (the RocksDB state store with changelog checkpointing is slidewise's session
#: default too; stated here because the window() peer depends on it: its state is off the JVM heap)
CONF = {
    "spark.sql.shuffle.partitions": "2",
    "spark.driver.memory": "4g",
    "spark.sql.streaming.stateStore.providerClass": "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
}
#: tuples per micro-batch of the window() peer: the state holds every (window, a) the batch touches until
#: the next batch's watermark drops it, so its size is bounded by the batch (measured on 50k tuples: 5k per
#: batch 540 tuples/s at load 5, 1k per batch 102 tuples/s at load 10; 50k per batch held 3.2M state rows)
WINDOW_BATCH = 10_000
SPARK_SYSTEMS = {"slidewise-spark": "slidewise on Spark (pane path)", "spark-window": "Spark window() aggregation"}


def write_files(frame, directory: Path, files: int, sentinels: bool = False) -> None:
    """``frame`` (ts, a) as ``files`` Parquet files of consecutive tuples, older files first; with
    ``sentinels`` two more files of one tuple ``a = -1`` each, far beyond the last ``ts``."""
    import numpy as np
    import pandas as pd

    directory.mkdir(parents=True)
    frame = frame[["ts", "a"]].astype("int64")
    parts = [frame.iloc[idx] for idx in np.array_split(np.arange(len(frame)), files)]
    if sentinels:
        far = int(frame["ts"].max()) + 4 * (LENGTH + 1)
        parts += [pd.DataFrame({"ts": [far + j * SLIDE], "a": [-1]}, dtype="int64") for j in (0, 1)]
    for j, part in enumerate(parts):
        path = directory / f"part-{j:05d}.parquet"
        part.to_parquet(path, index=False)
        os.utime(path, (1_000_000 + j, 1_000_000 + j))


def state_peaks(progress: list[dict]) -> dict:
    """Peak over micro-batches of ``numRowsTotal`` and ``memoryUsedBytes`` summed over the stateful operators."""
    rows = [sum(int(o.get("numRowsTotal", 0)) for o in p.get("stateOperators") or []) for p in progress]
    mem = [sum(int(o.get("memoryUsedBytes", 0)) for o in p.get("stateOperators") or []) for p in progress]
    return {"state_rows_peak": max(rows, default=0), "state_bytes_peak": max(mem, default=0)}


# ---------------------------------------------------------------- children (fresh processes)


def slidewise_spark_child(spec: dict, send) -> dict:
    from slidewise.spark.plan_runner import start_plan_spark
    from slidewise.spark.session import get_session

    t = time.perf_counter()
    session = get_session("local[2]", CONF)
    session_s = time.perf_counter() - t
    t = time.perf_counter()
    run = start_plan_spark(QUERY, {"S": spec["input"]}, spark=session, out=spec["out"], collect=False, once=True, max_files_per_trigger=1, checkpoint=spec["checkpoint"])
    run.wait()
    res = run.result()
    seconds = time.perf_counter() - t
    return {
        "seconds": seconds,
        "session_s": session_s,
        "results": res.stats["results"],
        "path": res.stats.get("path"),
        "micro_batches": res.stats["micro_batches"],
        "pane_cells_peak": res.stats["state_tuples_peak"],
        "jvm_peak_rss_mb": jvm_peak_rss_mb(session),
        "load_average": os.getloadavg(),
        **state_peaks(run.progress),
    }


def jvm_peak_rss_mb(session) -> float | None:
    """Peak resident set size of the session's JVM (``VmHWM``), in MiB; None where unknown."""
    try:
        pid = session.sparkContext._gateway.proc.pid
        with open(f"/proc/{pid}/status") as f:
            return next(int(line.split()[1]) / 1024 for line in f if line.startswith("VmHWM:"))
    except Exception:  # no /proc, or a gateway without a process of its own
        return None


def window_child(spec: dict, send) -> dict:
    import json

    from pyspark.sql import functions as F

    from slidewise.spark.session import get_session

    t = time.perf_counter()
    session = get_session("local[2]", CONF)
    session_s = time.perf_counter() - t
    t = time.perf_counter()
    src = session.readStream.schema("ts BIGINT, a BIGINT").option("maxFilesPerTrigger", 1).parquet(spec["input"])
    counts = (
        src.withColumn("et", F.timestamp_seconds(F.col("ts") + OFFSET))
        .withWatermark("et", "0 seconds")
        .groupBy(F.window("et", f"{LENGTH + 1} seconds", f"{SLIDE} seconds", "1 second"), "a")
        .count()
    )
    rows = counts.select("a", F.col("count").alias("n"), (F.unix_seconds(F.col("window.end")) - 1 - OFFSET).alias("ts"))
    query = rows.writeStream.format("parquet").outputMode("append").option("path", spec["out"]).option("checkpointLocation", spec["checkpoint"]).start()
    query.processAllAvailable()
    progress = [json.loads(p.json) for p in query.recentProgress]
    query.stop()
    seconds = time.perf_counter() - t
    return {
        "seconds": seconds,
        "session_s": session_s,
        "micro_batches": len(progress),
        "jvm_peak_rss_mb": jvm_peak_rss_mb(session),
        "load_average": os.getloadavg(),
        **state_peaks(progress),
    }


# ---------------------------------------------------------------- checks


def multiset(relation: str, upper: int | None = None) -> tuple:
    """:func:`slidewise.bench.aggregation.multiset` of ``relation`` (SQL with columns a, n, ts): rows of
    real groups (``a >= 0``) of the windows ``ts <= upper``."""
    from slidewise.bench.aggregation import multiset as rows_multiset

    return rows_multiset(relation, ("a", "n", "ts"), "a >= 0" + (f" AND ts <= {upper}" if upper is not None else ""))


def run_spark_systems(
    frame, local_out: str, tmp: Path, *, files: int = 20, window_tuples: int | None = None, window_batch: int = WINDOW_BATCH, isolate: bool = True
) -> dict:
    """Both Spark systems on ``frame`` (WA's tuples); their results and the answer checks against the
    local engine's result file ``local_out``. ``window_tuples``: the window() peer reads only the first
    that many tuples (as many per file), compared over the windows those determine (``τ`` before the
    next tuple's ``ts``), ``window_batch`` per micro-batch. ``isolate=False``: in this process (the active session)."""
    from slidewise.bench.aggregation import _isolated

    def call(target, spec):
        return _isolated(target, spec) if isolate else target(spec, None)

    n = len(frame)
    m = min(n, window_tuples or n)
    data, peer = tmp / "spark-in", tmp / "spark-window-in"
    write_files(frame, data, files)
    write_files(frame.iloc[:m], peer, max(1, -(-m // window_batch)), sentinels=True)
    out: dict = {"files": files, "settings": spark_settings(files, n, m, window_batch)}
    out["slidewise-spark"] = call(slidewise_spark_child, {"input": str(data), "out": str(tmp / "spark-out.parquet"), "checkpoint": str(tmp / "ck-slidewise")})
    out["spark-window"] = call(window_child, {"input": str(peer), "out": str(tmp / "window-out"), "checkpoint": str(tmp / "ck-window")})
    out["slidewise-spark"]["tuples"], out["spark-window"]["tuples"] = n, m
    last = -(-int(frame["ts"].max()) // SLIDE) * SLIDE if m == n else int(frame["ts"].iloc[m]) - 1
    local = f"""SELECT "S.a" AS a, n, ts FROM read_parquet('{local_out}')"""
    spark = multiset(f"""SELECT "S.a" AS a, n, ts FROM read_parquet('{tmp / "spark-out.parquet"}')""")
    window_rows = f"SELECT a, n, ts FROM read_parquet('{tmp / 'window-out'}/*.parquet')"
    window, window_all, mine = multiset(window_rows, last), multiset(window_rows), multiset(local, last)
    scope = "all windows" if m == n else f"the first {m:,} tuples"
    out["checks"] = {
        "local rows": int(multiset(local)[0]),
        "slidewise on Spark equals local": spark == multiset(local),
        "Spark window() equals local": window == mine,
        "Spark window() compared over": f"{scope}: windows ts <= {last} ({int(mine[0]):,} rows; both "
        "emit these; window() input ends with two watermark-advancing "
        "sentinel tuples)",
        "Spark window() rows not compared": int(window_all[0] - window[0]),
    }
    out["slidewise-spark"]["rows"] = int(spark[0])
    out["spark-window"]["rows"] = int(window_all[0])
    return out


def spark_settings(files: int, n: int, m: int, window_batch: int) -> dict:
    """The Spark settings of both runs, as the JSON states them."""
    return {
        "master": "local[2]",
        "conf": CONF,
        "slidewise on Spark": f"{files} Parquet files, maxFilesPerTrigger=1: {-(-n // files):,} tuples per micro-batch; the end of input emits the last windows",
        "Spark window()": (
            f"{-(-m // window_batch)} Parquet files, maxFilesPerTrigger=1: {window_batch:,} tuples per micro-batch; "
            "withWatermark(et, '0 seconds') so a window's state is dropped once emitted; append mode; "
            "two sentinel files (a = -1, far beyond the last ts) advance the watermark past every real window"
        ),
    }


def summarize_spark(spark: dict, n: int) -> dict:
    """Throughputs, the slidewise / window() ratio, state rows and the checks of :func:`run_spark_systems`."""
    table = {}
    for key, label in SPARK_SYSTEMS.items():
        r = spark[key]
        table[label] = {
            "tuples": r["tuples"],
            "seconds": round(r["seconds"], 3),
            "tuples_per_second": round(r["tuples"] / r["seconds"]),
            "micro_batches": r["micro_batches"],
            "state_rows_peak": r["state_rows_peak"],
            "state_bytes_peak": r["state_bytes_peak"],
            "jvm_peak_rss_mb": r.get("jvm_peak_rss_mb"),
            "load_average_at_end": r.get("load_average"),
        }
    mine, peer = (table[label] for label in SPARK_SYSTEMS.values())
    out = {
        "table": table,
        "ratio of tuples/s, slidewise on Spark / Spark window()": round(mine["tuples_per_second"] / peer["tuples_per_second"], 2),
        "slidewise pane cells peak (sum over buckets)": spark["slidewise-spark"]["pane_cells_peak"],
        "checks": spark["checks"],
        "settings": spark.get("settings"),
    }
    if peer["tuples"] < n:
        out[f"Spark window() seconds for {n:,} tuples at its rate (extrapolated)"] = round(n / peer["tuples_per_second"])
    return out


def print_spark(summary: dict) -> None:
    print(f"  Spark (local[2]): {'system':<34} {'tuples':>10} {'seconds':>9} {'tuples/s':>10} {'batches':>8} {'state rows':>11} {'state MB':>9}")
    for name, row in summary["table"].items():
        print(
            f"  {'':<18}{name:<34} {row['tuples']:>10,} {row['seconds']:>9.2f} {row['tuples_per_second']:>10,} "
            f"{row['micro_batches']:>8} {row['state_rows_peak']:>11,} {row['state_bytes_peak'] / 1e6:>9.1f}"
        )
    for key, value in summary.items():
        if key not in ("table", "checks", "settings"):
            print(f"  {key}: {value}")
    for key, value in summary["checks"].items():
        print(f"  {key}: {value}")
