"""Peer systems for ``slidewise bench``: the same answer computed elsewhere.

DuckDB evaluates the eager answer of a multi-way time-window equi-join
(DESIGN §1) as one SQL band join over the whole input. A combination is a
result iff every member is inside its window at the origin's time, i.e.
``ts_j >= origin.ts - T_j`` for every member ``j``. As the origin has the
greatest ``ts``, that is the same as the pairwise band conditions
``ts_j + T_j >= ts_i`` for all ordered pairs — for two streams::

    S1 JOIN S2 ON S1.a = S2.a AND S2.ts + T2 >= S1.ts AND S1.ts + T1 >= S2.ts

which equals the ``pos``-based form ``(S2.pos < S1.pos AND S2.ts >= S1.ts - T2)
OR (S1.pos < S2.pos AND S1.ts >= S2.ts - T1)`` because ``ts`` never decreases
with ``pos``. Result ``ts`` = ``greatest(ts_i)``, ``exp`` = ``least(ts_i + T_i)``.

Timings exclude loading the arrays into DuckDB (reported as ``load_s``). Two
queries are timed per thread setting: ``count_s`` (count and member-position
sums) and ``seconds`` (materialising every result row — member positions,
``ts``, ``exp`` and member attributes — as an Arrow table, what slidewise's
operators produce); queries that take less than a second are repeated (at
most 5 times) and the median kept. A final untimed query gives counts and checksums per input
prefix and per lazy no-restore interval, to verify slidewise's algorithms.
"""

from __future__ import annotations

import gc
import re
import time

from slidewise.bench.common import PeakMemory, load_streams


#: queries faster than this (count + materialise) are repeated and the median kept
MIN_MEASURE_S = 1.0
MAX_REPEATS = 5


def _median(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[(len(xs) - 1) // 2]


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def band_join_from(aliases: list[str], windows: list[int], attr: str = "a") -> str:
    """``FROM`` clause of the eager multi-way time-window equi-join on ``attr``."""
    sql = _q(aliases[0])
    for k in range(1, len(aliases)):
        ak, tk = _q(aliases[k]), windows[k]
        conds = [f"{ak}.{attr} = {_q(aliases[0])}.{attr}"]
        for i in range(k):
            ai, ti = _q(aliases[i]), windows[i]
            conds.append(f"{ak}.ts + {tk} >= {ai}.ts")
            conds.append(f"{ai}.ts + {ti} >= {ak}.ts")
        sql += f" JOIN {ak} ON " + " AND ".join(conds)
    return sql


def _origin_exprs(aliases: list[str], windows: list[int]) -> tuple[str, str, str]:
    q = [_q(a) for a in aliases]
    if len(q) == 1:
        return f"{q[0]}.pos", f"{q[0]}.ts", f"{q[0]}.ts + {windows[0]}"
    return (f"greatest({', '.join(f'{a}.pos' for a in q)})",
            f"greatest({', '.join(f'{a}.ts' for a in q)})",
            f"least({', '.join(f'{a}.ts + {t}' for a, t in zip(q, windows))})")


def count_sql(aliases: list[str], windows: list[int]) -> str:
    sums = ", ".join(f"sum({_q(a)}.pos)" for a in aliases)
    return f"SELECT count(*), {sums} FROM {band_join_from(aliases, windows)}"


def materialize_sql(aliases: list[str], windows: list[int], columns=("ts", "a", "x")) -> str:
    _, ots, exp = _origin_exprs(aliases, windows)
    cols = [f"{_q(a)}.pos AS {_q(a + '.pos')}" for a in aliases]
    cols += [f"{ots} AS ts", f"{exp} AS exp"]
    cols += [f"{_q(a)}.{c} AS {_q(f'{a}.{c}')}" for a in aliases for c in columns]
    return f"SELECT {', '.join(cols)} FROM {band_join_from(aliases, windows)}"


def verify_sql(aliases: list[str], windows: list[int],
               checks: list[tuple[int, int | None]]) -> str:
    """Counts and position sums of the results with origin ``pos < n`` (and, for a
    lazy no-restore interval ``D``, without the short-lived ones: ``exp >= ceil(ts/D)*D``)."""
    opos, ots, exp = _origin_exprs(aliases, windows)
    inner = (f"SELECT {opos} AS opos, {ots} AS ots, {exp} AS oexp, "
             + ", ".join(f"{_q(a)}.pos AS p{i}" for i, a in enumerate(aliases))
             + f" FROM {band_join_from(aliases, windows)}")
    aggs = []
    for n, d in checks:
        cond = f"opos < {int(n)}"
        if d:
            d = int(d)
            cond += (f" AND oexp >= (CASE WHEN ots >= 0 THEN (ots + {d - 1}) // {d} "
                     f"ELSE -((-ots) // {d}) END) * {d}")
        aggs.append(f"count(*) FILTER (WHERE {cond})")
        aggs += [f"coalesce(sum(p{i}) FILTER (WHERE {cond}), 0)" for i in range(len(aliases))]
    return f"SELECT {', '.join(aggs)} FROM ({inner})"


def duckdb_child(spec: dict, send) -> dict:
    """Run the DuckDB peer in this (fresh) process; see the module docstring."""
    import duckdb
    import pyarrow as pa

    aliases, windows = spec["aliases"], spec["windows"]
    streams = load_streams(spec["path"], spec["n_tuples"])
    n_total = sum(len(s["pos"]) for s in streams)
    con = duckdb.connect()
    default_threads = int(con.execute("SELECT current_setting('threads')").fetchall()[0][0])
    t0 = time.perf_counter()
    for alias, s in zip(aliases, streams):
        table = pa.table({c: s[c] for c in ("pos", "ts", "a", "x")})
        con.register("_arrow_input", table)
        con.execute(f"CREATE TABLE {_q(alias)} AS SELECT * FROM _arrow_input")
        con.unregister("_arrow_input")
        del table
    load_s = time.perf_counter() - t0
    del streams
    gc.collect()

    out: dict = {"label": "duckdb", "engine": f"duckdb {duckdb.__version__}",
                 "tuples": n_total, "load_s": round(load_s, 4),
                 "load": "numpy -> Arrow -> CREATE TABLE, excluded from the timings",
                 "default_threads": default_threads, "runs": {}}
    plan = con.execute("EXPLAIN " + count_sql(aliases, windows)).fetchall()[0][1]
    out["plan_joins"] = re.findall(r"─ ([A-Za-z_ ]*JOIN[A-Za-z_ ]*?) ─", plan, re.IGNORECASE)
    counted = None
    for threads in dict.fromkeys([1, default_threads]):
        con.execute(f"SET threads = {threads}")
        mem = PeakMemory().start()
        count_times, mat_times = [], []
        while not count_times or (sum(count_times) + sum(mat_times) < MIN_MEASURE_S
                                  and len(count_times) < MAX_REPEATS):
            t0 = time.perf_counter()
            counted = con.execute(count_sql(aliases, windows)).fetchall()[0]
            count_times.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            rows = con.sql(materialize_sql(aliases, windows)).to_arrow_table().num_rows
            mat_times.append(time.perf_counter() - t0)
        mem.stop()
        mat_s, count_s = _median(mat_times), _median(count_times)
        out["runs"][f"threads_{threads}"] = {
            "threads": threads, "seconds": round(mat_s, 4), "tuples_per_s": n_total / mat_s,
            "results": rows, "results_per_s": rows / mat_s,
            "count_s": round(count_s, 4), "count_tuples_per_s": n_total / count_s,
            "passes": len(mat_times), **mem.as_dict()}
        send("progress", 0)
    out["results"] = int(counted[0])
    out["member_pos_sums"] = [int(v or 0) for v in counted[1:]]
    one = out["runs"].get("threads_1", {})
    out.update({k: one.get(k) for k in ("seconds", "tuples_per_s", "results_per_s", "peak_rss_mb")})
    checks = [tuple(c) for c in spec.get("checks", [])]
    if checks:
        con.execute(f"SET threads = {default_threads}")
        row = con.execute(verify_sql(aliases, windows, checks)).fetchall()[0]
        k = len(aliases) + 1
        out["checks"] = [{"check": list(c), "results": int(row[j * k]),
                          "member_pos_sums": [int(v) for v in row[j * k + 1:(j + 1) * k]]}
                         for j, c in enumerate(checks)]
    send("progress", 1)
    return out
