"""WA on Spark for ``slidewise bench aggregation --spark``: slidewise's pane path on the Spark engine
against Spark Structured Streaming's own ``window()`` aggregation.

Both read the same WA tuples as Parquet files (``maxFilesPerTrigger = 1``: one
micro-batch per file; slidewise :data:`BATCH` tuples each, window()
:data:`WINDOW_BATCH`) on ``local[2]`` with 2 shuffle partitions and a 4 GiB
driver (:data:`CONF`), each in a fresh process (one JVM each, ended after
``timeout`` seconds if given: recorded as not finished), and write their rows
to a directory of Parquet parts. Each runs with its own best settings: slidewise its session
defaults (RocksDB state store, C1-only JVM), window() the in-memory
(HDFS-backed) state store and the JVM's default compilers (:data:`WINDOW_CONF`):

* **slidewise on Spark** — ``start_plan_spark`` (available-now): one stateful
  stage, the pane buckets (:mod:`slidewise.spark.panes`) keyed by a hash of ``a``
  (the router before them in the scan's ``mapInArrow``), each writing its rows of
  a micro-batch as a Parquet part itself; the last windows are emitted at the end
  of input.
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
seconds (query start to stop, JVM start excluded), tuples/s, CPU seconds
(this process, the JVM and its Python workers), micro-batches, the JVM's peak
RSS, the load average at the end, and the state store's ``numRowsTotal`` /
``memoryUsedBytes`` summed over the stateful operators, peak over micro-batches
(slidewise keeps one state row per key bucket; its (group, pane)
partial cells are reported too). :func:`conclusion` states whether slidewise's
claim (:data:`CLAIM`) holds in this run, the ratio measured, and why.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from slidewise.bench.aggregation import LENGTH, QUERY, SLIDE
from slidewise.spark.session import JVM_OPTIONS

__all__ = ["SPARK_SYSTEMS", "print_spark", "run_spark_systems", "summarize_spark"]

#: event-time offset of the window() peer (seconds; a multiple of the slide)
OFFSET = 1_000_000
#: conf of both Spark runs: 2 cores, as many shuffle partitions (one stateful task per core), a 4 GiB driver
CONF = {"spark.sql.shuffle.partitions": "2", "spark.driver.memory": "4g"}
#: slidewise's own session defaults (its state is a few rows, one per key bucket and stream)
SLIDEWISE_CONF = {
    "spark.sql.streaming.stateStore.providerClass": "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
}
#: window()'s fastest setting measured (50k tuples, 25k per micro-batch, load 6): the HDFS-backed
#: (in-memory) state store and the JVM's default compilers — its state is ~64 (window, a) rows per
#: tuple, bounded by the watermark, and RocksDB with C1-only code updated it at 57 µs per row,
#: the in-memory map with C2 at 12 µs
WINDOW_CONF = {"spark.sql.streaming.stateStore.providerClass": "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"}
#: tuples per micro-batch of slidewise on Spark (its answers do not depend on the batches; measured on 200k
#: tuples at load 7: 50k per batch 2,700 tuples/s, 100k 3,800, and 400k at 200k per batch 5,900, its warm
#: batches 2x slower per tuple than at 100k)
BATCH = 100_000
#: tuples per micro-batch of the window() peer: its state holds every (window, a) the batch touches
#: until the next batch's watermark drops it (~64 rows per tuple), so memory grows with the batch while
#: the cost per tuple barely falls (measured on 50k tuples: 1k per batch 102 tuples/s, 5k 540, 25k ~1,000
#: in the second batch, 1.6M state rows, 0.74 GB)
WINDOW_BATCH = 25_000
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


def child_session(conf: dict, jvm: dict | None = None) -> tuple:
    """The session of a system's run and the seconds it took: in a fresh process a new one with ``conf``
    (and driver JVM options ``jvm``); in a process with a running session (``isolate=False``), that
    session, its JVM options left as they are (a running JVM keeps them)."""
    from pyspark.sql import SparkSession

    from slidewise.spark.session import get_session

    t = time.perf_counter()
    active = SparkSession.getActiveSession()
    session = active if active is not None else get_session("local[2]", {**CONF, **conf, **(jvm or {})})
    return session, time.perf_counter() - t


def runtime(conf: dict) -> dict:
    """The settings of a run that :func:`settings` sets on a running session (and restores after)."""
    return {"spark.sql.shuffle.partitions": CONF["spark.sql.shuffle.partitions"], **conf}


def slidewise_spark_child(spec: dict, send) -> dict:
    session, session_s = child_session(SLIDEWISE_CONF)
    with settings(session, runtime(SLIDEWISE_CONF)):
        return _slidewise(session, spec, session_s)


def _slidewise(session, spec: dict, session_s: float) -> dict:
    from slidewise.spark.plan_runner import start_plan_spark

    t, cpu = time.perf_counter(), cpu_seconds(session)
    run = start_plan_spark(QUERY, {"S": spec["input"]}, spark=session, out=spec["out"], collect=False, once=True, max_files_per_trigger=1, checkpoint=spec["checkpoint"])
    run.wait()
    res = run.result()
    seconds = time.perf_counter() - t
    return {
        "seconds": seconds,
        "cpu_s": spent(cpu, cpu_seconds(session)),
        "session_s": session_s,
        "results": res.stats["results"],
        "path": res.stats.get("path"),
        "micro_batches": res.stats["micro_batches"],
        "pane_cells_peak": res.stats["state_tuples_peak"],
        "jvm_peak_rss_mb": jvm_peak_rss_mb(session),
        "load_average": os.getloadavg(),
        **state_peaks(run.progress),
    }


@contextlib.contextmanager
def settings(session, conf: dict):
    """``conf`` set on ``session`` while the block runs, the previous values restored after."""
    old = {k: session.conf.get(k, None) for k in conf}
    for k, v in conf.items():
        session.conf.set(k, v)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                session.conf.unset(k)
            else:
                session.conf.set(k, v)


def default_jvm() -> dict:
    """Driver JVM options without slidewise's C1-only default (:data:`~slidewise.spark.session.JVM_OPTIONS`):
    Spark's own generated code runs faster with the C2 compiler."""
    from slidewise.spark.session import log4j_file

    return {"spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{log4j_file()}"}


def cpu_seconds(session) -> float | None:
    """CPU seconds so far of this process, the session's JVM and the JVM's Python workers (live and
    ended); None where unknown."""
    import psutil

    own = sum(os.times()[:2])
    try:
        jvm = psutil.Process(session.sparkContext._gateway.proc.pid)
        parts = [jvm.cpu_times()] + [c.cpu_times() for c in jvm.children(recursive=True)]
    except Exception:  # no gateway process of its own, or it ended
        return None
    return own + sum(t.user + t.system + t.children_user + t.children_system for t in parts)


def spent(before: float | None, after: float | None) -> float | None:
    return None if before is None or after is None else after - before


def jvm_peak_rss_mb(session) -> float | None:
    """Peak resident set size of the session's JVM (``VmHWM``), in MiB; None where unknown."""
    try:
        pid = session.sparkContext._gateway.proc.pid
        with open(f"/proc/{pid}/status") as f:
            return next(int(line.split()[1]) / 1024 for line in f if line.startswith("VmHWM:"))
    except Exception:  # no /proc, or a gateway without a process of its own
        return None


def window_child(spec: dict, send) -> dict:
    session, session_s = child_session(WINDOW_CONF, default_jvm())
    with settings(session, runtime(WINDOW_CONF)):
        return _window(session, spec, session_s)


def _window(session, spec: dict, session_s: float) -> dict:
    import json

    from pyspark.sql import functions as F

    t, cpu = time.perf_counter(), cpu_seconds(session)
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
        "cpu_s": spent(cpu, cpu_seconds(session)),
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


def isolated(target, spec: dict, timeout: float | None) -> dict:
    """``target`` in a fresh process (:func:`~slidewise.bench.common.run_isolated`), ``finished``; after
    ``timeout`` seconds the process is ended and the run recorded as not finished."""
    from slidewise.bench.common import run_isolated

    t = time.perf_counter()
    got = run_isolated(target, spec, timeout=timeout)
    if "error" in got and got["error"].startswith("timed out"):
        return {"finished": False, "timeout_s": timeout, "note": f"did not finish in {timeout:g} s (process start to end, JVM start included)"}
    if "error" in got:
        raise RuntimeError(f"{target.__name__}: {got['error']}")
    return {**got, "finished": True, "process_s": time.perf_counter() - t}


def run_spark_systems(
    frame,
    local_out: str,
    tmp: Path,
    *,
    batch: int = BATCH,
    window_tuples: int | None = None,
    window_batch: int = WINDOW_BATCH,
    timeout: float | None = None,
    isolate: bool = True,
) -> dict:
    """Both Spark systems on ``frame`` (WA's tuples); their results and the answer checks against the
    local engine's result file ``local_out``. slidewise reads ``batch`` tuples per micro-batch, window()
    ``window_batch``; ``window_tuples``: window() reads only the first that many tuples, compared over
    the windows those determine (``τ`` before the next tuple's ``ts``). ``timeout``: seconds per system
    (a fresh process each), after which it is recorded as not finished. ``isolate=False``: in this
    process (the active session)."""

    def call(target, spec):
        return isolated(target, spec, timeout) if isolate else {**target(spec, None), "finished": True}

    n = len(frame)
    m = min(n, window_tuples or n)
    files = max(1, -(-n // batch))
    data, peer = tmp / "spark-in", tmp / "spark-window-in"
    write_files(frame, data, files)
    write_files(frame.iloc[:m], peer, max(1, -(-m // window_batch)), sentinels=True)
    out: dict = {"files": files, "settings": spark_settings(files, n, m, window_batch, timeout)}
    # a directory of per-micro-batch parts, as window()'s sink (a file would add assembling it at the end)
    out["slidewise-spark"] = call(slidewise_spark_child, {"input": str(data), "out": f"{tmp / 'spark-out.parquet'}/", "checkpoint": str(tmp / "ck-slidewise")})
    out["spark-window"] = call(window_child, {"input": str(peer), "out": str(tmp / "window-out"), "checkpoint": str(tmp / "ck-window")})
    out["slidewise-spark"]["tuples"], out["spark-window"]["tuples"] = n, m
    last = -(-int(frame["ts"].max()) // SLIDE) * SLIDE if m == n else int(frame["ts"].iloc[m]) - 1
    local = f"""SELECT "S.a" AS a, n, ts FROM read_parquet('{local_out}')"""
    mine = multiset(local, last)
    out["checks"] = checks = {"local rows": int(multiset(local)[0])}
    if out["slidewise-spark"]["finished"]:
        spark = multiset(f"""SELECT "S.a" AS a, n, ts FROM read_parquet('{tmp / "spark-out.parquet"}/batch-*/part-*.parquet')""")
        checks["slidewise on Spark equals local"] = spark == multiset(local)
        out["slidewise-spark"]["rows"] = int(spark[0])
    else:
        checks["slidewise on Spark equals local"] = f"not checked: {out['slidewise-spark']['note']}"
    if out["spark-window"]["finished"]:
        window_rows = f"SELECT a, n, ts FROM read_parquet('{tmp / 'window-out'}/*.parquet')"
        window, window_all = multiset(window_rows, last), multiset(window_rows)
        scope = "all windows" if m == n else f"the first {m:,} tuples"
        checks["Spark window() equals local"] = window == mine
        checks["Spark window() compared over"] = (
            f"{scope}: windows ts <= {last} ({int(mine[0]):,} rows; both emit these; window() input ends with two watermark-advancing sentinel tuples)"
        )
        checks["Spark window() rows not compared"] = int(window_all[0] - window[0])
        out["spark-window"]["rows"] = int(window_all[0])
    else:
        checks["Spark window() equals local"] = f"not checked: {out['spark-window']['note']}"
    return out


def spark_settings(files: int, n: int, m: int, window_batch: int, timeout: float | None = None) -> dict:
    """The Spark settings of both runs, as the JSON states them."""
    return {
        "master": "local[2]",
        "conf": CONF,
        "slidewise on Spark conf": {**SLIDEWISE_CONF, "JVM": f"slidewise's session default {JVM_OPTIONS} (C1 compiler only)"},
        "Spark window() conf": {**WINDOW_CONF, "JVM": "the JVM's default (tiered C1 and C2 compilers)"},
        "slidewise on Spark": (
            f"{files} Parquet files, maxFilesPerTrigger=1: {-(-n // files):,} tuples per micro-batch; the end of input emits the last windows; "
            "rows written by each key bucket as a Parquet part per micro-batch (a directory, as window()); one stateful stage"
        ),
        "Spark window()": (
            f"{-(-m // window_batch)} Parquet files, maxFilesPerTrigger=1: {window_batch:,} tuples per micro-batch; "
            "groupBy(window(et, '1000 seconds', '10 seconds', '1 second'), a).count(); "
            "withWatermark(et, '0 seconds') so a window's state is dropped once emitted; append mode; "
            "two sentinel files (a = -1, far beyond the last ts) advance the watermark past every real window"
        ),
        "timeout per system (s)": timeout,
    }


def summarize_spark(spark: dict, n: int) -> dict:
    """Throughputs, CPU, the slidewise / window() ratio, state rows, the checks of :func:`run_spark_systems`
    and :func:`conclusion`."""
    table = {}
    for key, label in SPARK_SYSTEMS.items():
        r = spark[key]
        if not r["finished"]:
            table[label] = {"tuples": r["tuples"], "finished": False, "note": r["note"], "tuples_per_second": f"< {r['tuples'] / r['timeout_s']:,.0f}"}
            continue
        table[label] = {
            "tuples": r["tuples"],
            "finished": True,
            "seconds": round(r["seconds"], 3),
            "tuples_per_second": round(r["tuples"] / r["seconds"]),
            "cpu_s": None if r.get("cpu_s") is None else round(r["cpu_s"], 1),
            "micro_batches": r["micro_batches"],
            "state_rows_peak": r["state_rows_peak"],
            "state_bytes_peak": r["state_bytes_peak"],
            "jvm_peak_rss_mb": r.get("jvm_peak_rss_mb"),
            "load_average_at_end": r.get("load_average"),
        }
    mine, peer = (table[label] for label in SPARK_SYSTEMS.values())
    out: dict = {"table": table}
    if mine["finished"] and peer["finished"]:
        out["ratio of tuples/s, slidewise on Spark / Spark window()"] = ratio(spark)
        out["ratio of CPU seconds per tuple, Spark window() / slidewise on Spark"] = cpu_ratio(mine, peer)
    if spark["slidewise-spark"]["finished"]:
        out["slidewise pane cells peak (sum over buckets)"] = spark["slidewise-spark"]["pane_cells_peak"]
    if peer["finished"] and peer["tuples"] < n:
        out[f"Spark window() seconds for {n:,} tuples at its rate (extrapolated)"] = round(n / peer["tuples_per_second"])
    out["conclusion"] = conclusion(spark, mine, peer, n)
    out["checks"], out["settings"] = spark["checks"], spark.get("settings")
    return out


def rate(r: dict) -> float:
    """Tuples per second of one finished system."""
    return r["tuples"] / r["seconds"]


def ratio(spark: dict) -> float:
    """slidewise on Spark's tuples/s over window()'s, both finished."""
    return round(rate(spark["slidewise-spark"]) / rate(spark["spark-window"]), 2)


def cpu_ratio(mine: dict, peer: dict) -> float | None:
    """window()'s CPU seconds over slidewise's per tuple (both finished, CPU known), else None."""
    if not mine.get("cpu_s") or not peer.get("cpu_s"):
        return None
    return round((peer["cpu_s"] / peer["tuples"]) / (mine["cpu_s"] / mine["tuples"]), 2)


#: the claim the Spark comparison tests
CLAIM = "slidewise on Spark runs WA at >= 10x the tuples/s of Spark's own window() aggregation in the same run, with identical answers and fewer state rows"


def conclusion(spark: dict, mine: dict, peer: dict, n: int) -> dict:
    """Whether :data:`CLAIM` holds (True / False; None where this run cannot tell), what was measured and why."""
    checks = spark["checks"]
    if not mine["finished"]:
        return {"claim": CLAIM, "holds": None, "measured": None, "why": f"slidewise on Spark {mine['note']}"}
    if not peer["finished"]:
        w = spark["spark-window"]
        bound = rate(spark["slidewise-spark"]) * w["timeout_s"] / w["tuples"]
        return {
            "claim": CLAIM,
            "holds": None,
            "measured": f">= {bound:.2f}",
            "why": f"Spark window() {peer['note']} on {peer['tuples']:,} tuples, so its rate is below {w['tuples'] / w['timeout_s']:,.0f} tuples/s "
            f"and the ratio is at least {bound:.2f}; its answers and state were not measured",
        }
    measured = ratio(spark)
    equal = checks["slidewise on Spark equals local"] is True and checks["Spark window() equals local"] is True
    fewer = mine["state_rows_peak"] < peer["state_rows_peak"]
    cpu = cpu_ratio(mine, peer)
    facts = (
        f"{measured}x ({mine['tuples_per_second']:,} vs {peer['tuples_per_second']:,} tuples/s); answers equal: {equal}; "
        f"state rows peak {mine['state_rows_peak']:,} vs {peer['state_rows_peak']:,}"
        + (f"; CPU seconds {mine['cpu_s']} vs {peer['cpu_s']} ({cpu}x; on a shared machine the steadier measure within one run)" if cpu else "")
    )
    if peer["tuples"] < n:
        return {"claim": CLAIM, "holds": None, "measured": measured, "why": f"window() ran on the first {peer['tuples']:,} of {n:,} tuples, not the same input: {facts}"}
    return {"claim": CLAIM, "holds": measured >= 10 and equal and fewer, "measured": measured, "why": f"same run, {n:,} tuples each: {facts}"}


def print_spark(summary: dict) -> None:
    print(f"  Spark (local[2]): {'system':<34} {'tuples':>10} {'seconds':>9} {'tuples/s':>10} {'CPU s':>7} {'batches':>8} {'state rows':>11} {'state MB':>9}")
    for name, row in summary["table"].items():
        if not row["finished"]:
            print(f"  {'':<18}{name:<34} {row['tuples']:>10,} {row['note']}")
            continue
        cpu = "" if row["cpu_s"] is None else f"{row['cpu_s']:.1f}"
        print(
            f"  {'':<18}{name:<34} {row['tuples']:>10,} {row['seconds']:>9.2f} {row['tuples_per_second']:>10,} {cpu:>7} "
            f"{row['micro_batches']:>8} {row['state_rows_peak']:>11,} {row['state_bytes_peak'] / 1e6:>9.1f}"
        )
    for key, value in summary.items():
        if key not in ("table", "checks", "settings", "conclusion"):
            print(f"  {key}: {value}")
    for key, value in summary["checks"].items():
        print(f"  {key}: {value}")
    c = summary["conclusion"]
    print(f"  claim: {c['claim']}")
    print(f"  holds: {c['holds']} (measured {c['measured']}): {c['why']}")
