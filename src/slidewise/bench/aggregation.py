"""``slidewise bench aggregation``: a periodic sliding GROUP BY against DuckDB's SQL (workload WA).

WA: one stream of N tuples (default 1,000,000), one per time unit, 1,000
distinct values of ``a`` (``slidewise generate --rates 1 --distinct 1000``), and::

    SELECT RSTREAM(S.a, COUNT(*) AS n) FROM S [RANGE 999 SLIDE 10] GROUP BY S.a

— the whole answer every 10 time units (about 630 rows per evaluation, 63
million rows for 1M tuples). Every system writes its rows to a Parquet file.

Measured, each in a fresh process (``run_isolated``), slidewise and DuckDB
back to back in every round (``--rounds``, default 1):

* **slidewise** — ``slidewise.run(..., engine="local", out=results.parquet)``,
  the pane path (:mod:`slidewise.runtime.pane_engine`): ``seconds`` is the
  engine's own time (read, compute, write), ``process_s`` the whole child from
  spawn to exit (interpreter, imports, everything); also without output
  (``slidewise_compute``); ``cpu_s`` is the process's CPU time (all threads) of the timed part,
  ``process_cpu_s`` that of the whole child (both also for DuckDB).
* **DuckDB** — the best of two SQL formulations, loaded from the same
  Parquet file (``load_s``, in ``process_s``) and written with ``COPY ... TO``:

  - ``panes`` (pane pre-aggregation + window sum): per group the tuples
    entering (``k_in = ceil(ts / D)``) and leaving (after ``floor((ts + T) / D)``)
    the evaluations, netted per evaluation, a running ``SUM`` window over them,
    and every run of evaluations with the same count unnested;
  - ``range join``: the evaluation instants joined with the stream on
    ``τ − T ≤ ts ≤ τ``, grouped by instant and ``a``.

  ``count_s`` computes every row but returns only checksums (no output).
* **per-tuple plan** — slidewise's operator network
  (``execute_plan(..., panes=False)``) on the first ``plan_tuples`` tuples.

Checks (untimed): DuckDB's rows equal slidewise's as multisets (row count, the
sum of 64-bit row hashes, of ``n`` and of ``ts·n``), and slidewise's rows are in the output order
(instant, then ``a``). Results go to ``aggregation.json`` and ``aggregation.png``.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from slidewise.bench.common import machine_info, pyplot, run_isolated, save_png, write_json

__all__ = ["FORMS", "QUERY", "print_summary", "run_aggregation_bench"]

LENGTH, SLIDE, DISTINCT = 999, 10, 1000
QUERY = f"SELECT RSTREAM(S.a, COUNT(*) AS n) FROM S [RANGE {LENGTH} SLIDE {SLIDE}] GROUP BY S.a"
FORMS = {"panes": "DuckDB panes + window sum", "range join": "DuckDB range join"}


def duckdb_sql(form: str, kmin: int, kmax: int, T: int = LENGTH, D: int = SLIDE) -> str:
    """The answer rows ``(a, n, ts, sign)`` of every evaluation ``k·D``, ``kmin <= k <= kmax``."""
    if form == "panes":
        return f"""
WITH cells AS (SELECT a, CAST(ceil(ts / {D}) AS BIGINT) AS k_in,
                      CAST(floor((ts + {T}) / {D}) AS BIGINT) + 1 AS k_out, count(*) AS c FROM S GROUP BY ALL),
ev AS (SELECT a, k_in AS k, c AS d FROM cells UNION ALL SELECT a, k_out AS k, -c AS d FROM cells),
net AS (SELECT a, k, sum(d) AS d FROM ev GROUP BY ALL),
runs AS (SELECT a, k, sum(d) OVER w AS n, lead(k) OVER w AS k2 FROM net
         WINDOW w AS (PARTITION BY a ORDER BY k))
SELECT a AS "S.a", n, unnest(range(k, least(k2, {kmax} + 1))) * {D} AS ts, CAST(1 AS TINYINT) AS sign
FROM runs WHERE n > 0 AND k <= {kmax}"""
    return f"""
SELECT S.a AS "S.a", count(*) AS n, e.k * {D} AS ts, CAST(1 AS TINYINT) AS sign
FROM range({kmin}, {kmax} + 1) e(k) JOIN S ON S.ts >= e.k * {D} - {T} AND S.ts <= e.k * {D}
GROUP BY e.k, S.a"""


# ---------------------------------------------------------------- children (fresh processes)


def slidewise_child(spec: dict, send) -> dict:
    import slidewise

    cpu = time.process_time()
    res = slidewise.run(QUERY, sources={"S": spec["input"]}, engine="local", out=spec.get("out"), collect=False)
    stats = res.stats
    return {
        "seconds": stats["seconds"],
        "cpu_s": time.process_time() - cpu,
        "results": stats["results"],
        "path": stats.get("path"),
        "peak_rss_mb": stats["peak_rss_mb"],
        "process_cpu_s": _process_cpu(),
    }


def _process_cpu() -> float:
    """CPU seconds of this process so far, every thread, from its start (interpreter and imports too)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def plan_child(spec: dict, send) -> dict:
    import pyarrow.parquet as pq

    from slidewise.cql import parse_plan
    from slidewise.runtime.plan_engine import execute_plan

    frame = pq.read_table(spec["input"]).slice(0, spec["tuples"]).to_pandas()
    res = execute_plan(parse_plan(QUERY), {"S": frame}, panes=False)
    return {"seconds": res.stats["seconds"], "results": res.stats["results"]}


def duckdb_child(spec: dict, send) -> dict:
    import duckdb

    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    t = time.perf_counter()
    con.execute(f"CREATE TABLE S AS SELECT * FROM read_parquet('{spec['input']}')")
    load = time.perf_counter() - t
    kmin, kmax = con.sql(f"SELECT CAST(ceil(min(ts) / {SLIDE}) AS BIGINT), CAST(ceil(max(ts) / {SLIDE}) AS BIGINT) FROM S").fetchall()[0]
    sql = duckdb_sql(spec["form"], kmin, kmax)
    out = {"load_s": load}
    if spec.get("count"):
        t = time.perf_counter()
        out["rows"] = con.sql(f"SELECT count(*) FROM ({sql})").fetchall()[0][0]
        out["count_s"] = time.perf_counter() - t
    t, cpu = time.perf_counter(), time.process_time()
    con.execute(f"COPY ({sql}) TO '{spec['out']}' (FORMAT parquet)")
    out["seconds"] = time.perf_counter() - t
    out["cpu_s"] = time.process_time() - cpu  # every DuckDB thread
    out["process_cpu_s"] = _process_cpu()
    return out


def _isolated(target, spec: dict) -> dict:
    t = time.perf_counter()
    got = run_isolated(target, spec)
    got["process_s"] = time.perf_counter() - t
    if "error" in got:
        raise RuntimeError(f"{target.__name__}: {got['error']}")
    return got


# ---------------------------------------------------------------- checks


def multiset(relation: str, columns: tuple[str, ...], where: str | None = None) -> tuple:
    """``(rows, sum of 64-bit hashes of columns, sum of n, sum of ts·n)`` of the SQL ``relation`` (rows
    ``where`` holds; one DuckDB scan): equal for equal multisets of rows, almost surely not otherwise."""
    import duckdb

    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    cols = ", ".join(f"CAST({c} AS BIGINT)" for c in columns)  # hashes depend on types
    cond = f" WHERE {where}" if where else ""
    return tuple(con.sql(f"SELECT count(*), sum(hash({cols})), sum(n), sum(ts * n) FROM ({relation}){cond}").fetchall()[0])


def check_answers(slidewise_out: str, duck_out: str) -> dict:
    """Two result files hold the same multiset of rows (:func:`multiset`) and slidewise's rows are in
    output order (instant, then ``a``)."""
    import numpy as np
    import pyarrow.parquet as pq

    cols = ('"S.a"', "n", "ts", "sign")
    mine = multiset(f"SELECT * FROM read_parquet('{slidewise_out}')", cols)
    peer = multiset(f"SELECT * FROM read_parquet('{duck_out}')", cols)
    table = pq.read_table(slidewise_out, columns=["ts", "S.a"])
    ts, key = table.column("ts").to_numpy(), table.column("S.a").to_numpy()
    ordered = bool(np.all((ts[1:] > ts[:-1]) | ((ts[1:] == ts[:-1]) & (key[1:] > key[:-1]))))
    return {
        "rows": int(mine[0]),
        "peer_rows": int(peer[0]),
        "row_hash_sum": str(mine[1]),
        "peer_row_hash_sum": str(peer[1]),
        "ordered": ordered,
        "equal": tuple(mine) == tuple(peer),
    }


# ---------------------------------------------------------------- the bench


def run_aggregation_bench(
    tuples: int | None = None,
    out_dir: str | Path = "bench-results",
    *,
    peers: bool = True,
    rounds: int = 1,
    plan_tuples: int = 20_000,
    spark: bool = False,
    spark_batch: int | None = None,
    window_tuples: int | None = None,
    spark_timeout: float | None = None,
) -> dict:
    """WA as the module doc says; ``spark``: also slidewise on the Spark engine and Spark's ``window()``
    (:mod:`slidewise.bench.aggregation_spark`: slidewise ``spark_batch`` tuples per micro-batch,
    ``window()`` on the first ``window_tuples`` tuples only if given, each ended after ``spark_timeout``
    seconds and recorded as not finished)."""
    from slidewise.runtime.generate import generate, write_streams

    n = int(tuples or 1_000_000)
    report: dict = {"workload": {"name": "WA", "tuples": n, "distinct": DISTINCT, "rate": 1, "query": QUERY}, "machine": machine_info(), "rounds": []}
    with tempfile.TemporaryDirectory(prefix="slidewise-agg-") as tmp:
        path = write_streams(generate([1], DISTINCT, n, seed=0), tmp, "parquet", names=["S"])[0]
        mine, plain = str(Path(tmp) / "results.parquet"), str(path)
        for r in range(max(1, rounds)):
            entry: dict = {}
            entry["slidewise"] = _isolated(slidewise_child, {"input": plain, "out": mine})
            if peers:
                for form in FORMS:
                    entry[form] = _isolated(
                        duckdb_child, {"input": plain, "form": form, "count": r == 0, "out": str(Path(tmp) / f"duck-{form.replace(' ', '-')}.parquet")}
                    )
            entry["slidewise_compute"] = _isolated(slidewise_child, {"input": plain})
            report["rounds"].append(entry)
        if peers:
            report["checks"] = {form: check_answers(mine, str(Path(tmp) / f"duck-{form.replace(' ', '-')}.parquet")) for form in FORMS}
        if spark:
            import pandas as pd

            from slidewise.bench.aggregation_spark import run_spark_systems

            kw = {} if spark_batch is None else {"batch": spark_batch}
            report["spark"] = run_spark_systems(pd.read_parquet(plain), mine, Path(tmp), window_tuples=window_tuples, timeout=spark_timeout, **kw)
        if plan_tuples:
            m = min(n, plan_tuples)
            got = _isolated(plan_child, {"input": plain, "tuples": m})
            report["plan"] = {**got, "tuples": m, "tuples_per_second": m / got["seconds"]}
    report["summary"] = summarize(report)
    if spark:
        from slidewise.bench.aggregation_spark import summarize_spark

        report["summary"]["spark"] = summarize_spark(report["spark"], n)
    out = Path(out_dir)
    write_json(out / "aggregation.json", report)
    plot(report, out / "aggregation.png")
    return report


def summarize(report: dict) -> dict:
    """Best times over the rounds, throughputs, and the slidewise / DuckDB ratios (best, per round)."""
    n = report["workload"]["tuples"]
    rounds = report["rounds"]

    def best(system: str, key: str) -> float | None:
        xs = [r[system][key] for r in rounds if system in r and key in r[system]]
        return min(xs) if xs else None

    rows = {
        "slidewise engine (--out parquet)": best("slidewise", "seconds"),
        "slidewise whole process": best("slidewise", "process_s"),
        "slidewise engine, no output": best("slidewise_compute", "seconds"),
    }
    duck = {}
    for form, label in FORMS.items():
        if best(form, "seconds") is not None:
            duck[form] = best(form, "seconds")
            rows[f"{label}: COPY to parquet"] = duck[form]
            rows[f"{label}: whole process"] = best(form, "process_s")
            if best(form, "count_s") is not None:
                rows[f"{label}: count only"] = best(form, "count_s")
    table = {k: {"seconds": round(v, 3), "tuples_per_second": round(n / v)} for k, v in rows.items() if v}
    cpu = {
        "slidewise engine (--out parquet)": best("slidewise", "cpu_s"),
        "slidewise whole process": best("slidewise", "process_cpu_s"),
        **{f"{label}: COPY to parquet": best(form, "cpu_s") for form, label in FORMS.items()},
        **{f"{label}: whole process": best(form, "process_cpu_s") for form, label in FORMS.items()},
    }
    for k, v in cpu.items():
        if v and k in table:
            table[k]["cpu_s"] = round(v, 3)
    out: dict = {"tuples": n, "results": rounds[0]["slidewise"]["results"], "table": table}
    if "plan" in report:
        p = report["plan"]
        out["per-tuple plan"] = {"tuples": p["tuples"], "tuples_per_second": round(p["tuples_per_second"])}
    if duck:
        form = min(duck, key=duck.get)
        out["best DuckDB form"] = FORMS[form]
        mine = rows["slidewise engine (--out parquet)"]
        out["ratio engine (best of rounds)"] = round(duck[form] / mine, 2)
        out["ratio whole process (best of rounds)"] = round(best(form, "process_s") / rows["slidewise whole process"], 2)
        out["ratio engine per round (back to back)"] = [round(r[form]["seconds"] / r["slidewise"]["seconds"], 2) for r in rounds]
        out["ratio whole process per round"] = [round(r[form]["process_s"] / r["slidewise"]["process_s"], 2) for r in rounds]
        out["ratio CPU time per round"] = [round(r[form]["cpu_s"] / r["slidewise"]["cpu_s"], 2) for r in rounds]
        out["ratio whole-process CPU time per round"] = [round(r[form]["process_cpu_s"] / r["slidewise"]["process_cpu_s"], 2) for r in rounds]
        out["answers equal"] = all(c["equal"] for c in report.get("checks", {}).values())
        out["slidewise rows in output order"] = all(c["ordered"] for c in report.get("checks", {}).values())
    return out


def print_summary(summary: dict) -> None:
    print(f"WA: {summary['tuples']:,} tuples, {summary['results']:,} result rows; {QUERY}")
    print(f"  {'system':<48} {'seconds':>9} {'tuples/s':>12} {'CPU s':>7}")
    for name, row in summary["table"].items():
        cpu = f"{row['cpu_s']:>7.2f}" if "cpu_s" in row else ""
        print(f"  {name:<48} {row['seconds']:>9.2f} {row['tuples_per_second']:>12,} {cpu}")
    if "per-tuple plan" in summary:
        p = summary["per-tuple plan"]
        print(f"  {'slidewise per-tuple plan (' + format(p['tuples'], ',') + ' tuples)':<48} {'':>9} {p['tuples_per_second']:>12,}")
    for key in (
        "best DuckDB form",
        "ratio engine (best of rounds)",
        "ratio whole process (best of rounds)",
        "ratio engine per round (back to back)",
        "ratio whole process per round",
        "ratio CPU time per round",
        "ratio whole-process CPU time per round",
        "answers equal",
        "slidewise rows in output order",
    ):
        if key in summary:
            print(f"  {key}: {summary[key]}")
    if "spark" in summary:
        from slidewise.bench.aggregation_spark import print_spark

        print_spark(summary["spark"])


def plot(report: dict, path: Path) -> Path:
    plt = pyplot()
    table = report["summary"]["table"]
    names = list(table)
    values = [table[k]["tuples_per_second"] for k in names]
    colors = ["tab:blue" if k.startswith("slidewise") else "tab:orange" for k in names]
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(names) + 1.5))
    ax.barh(names[::-1], values[::-1], color=colors[::-1])
    ax.set_xlabel("input tuples per second (higher is better)")
    s = report["summary"]
    ax.set_title(f"WA: {s['tuples']:,} tuples, RANGE {LENGTH} SLIDE {SLIDE}, {DISTINCT} groups; answers equal: {s.get('answers equal', 'not checked')}", fontsize=9)
    return save_png(fig, path)
