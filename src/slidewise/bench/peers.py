"""Peer systems for ``slidewise bench``: the same answer computed elsewhere.

DuckDB evaluates the eager answer of a multi-way time-window equi-join
(docs/semantics.md) as one SQL query over the whole input. A combination is a
result iff every member is inside its window at the origin's time, i.e.
``ts_j >= origin.ts - T_j`` for every member ``j``. As the origin has the
greatest ``ts``, that is the same as the pairwise band conditions
``ts_j + T_j >= ts_i`` for all ordered pairs, which equal the ``pos``-based
form ``(S2.pos < S1.pos AND S2.ts >= S1.ts - T2) OR (S1.pos < S2.pos AND
S1.ts >= S2.ts - T1)`` because ``ts`` never decreases with ``pos``. Result
``ts`` = ``greatest(ts_i)``, ``exp`` = ``least(ts_i + T_i)``.

Two formulations (:data:`FORMS`), both timed:

* **DuckDB band join** (``band``) – the key equality as the hash-join
  condition, the time conditions as residual predicates::

      S1 JOIN S2 ON S1.a = S2.a AND S2.ts + T2 >= S1.ts AND S1.ts + T1 >= S2.ts

  DuckDB materialises every equal-key pair before the time filter (on W2
  about 250M pairs for 500k results).
* **DuckDB bucketed band join** (``bucketed``) – what a savvy SQL user writes:
  with ``B = max T_i``, every member's ``ts // B`` is within one of S1's, so
  every other stream is expanded with a generated neighbour column
  ``nb = ts // B + d`` for ``d`` in -1, 0, 1 (a cross join with a 3-row
  ``VALUES``) and equi-joined on ``(a, nb) = (S1.a, S1.ts // B)``; the exact
  band conditions stay as residual predicates. Each result matches exactly
  one expanded row per stream, so there are no duplicates, and the hash join
  emits equal-key pairs within three buckets — about ``3B / (T_1 + T_2)``
  candidates per result on two streams (1.5 on W2) — instead of all of them.
  (``//`` truncates towards zero in DuckDB; buckets are then intervals of at
  least ``B`` timestamps, which is all the argument needs.)

Timings exclude loading the arrays into DuckDB (reported as ``load_s``). Per
form and thread setting, two queries are timed: ``count_s`` (count and
member-position sums) and ``seconds`` (materialising every result row —
member positions, ``ts``, ``exp`` and member attributes — as an Arrow table,
what slidewise's operators produce); queries that take less than a second
are repeated (at most 5 times) and the median kept. A final untimed query
(bucketed form, all threads) gives counts and checksums per input prefix and
per lazy no-restore interval, to verify slidewise's algorithms.
"""

from __future__ import annotations

import gc
import re
import time

from slidewise.bench.common import PeakMemory, load_streams

#: queries faster than this (count + materialise) are repeated and the median kept
MIN_MEASURE_S = 1.0
MAX_REPEATS = 5

#: formulation key -> label (`speedup_vs_duckdb` is against the band join)
FORMS = {"band": "DuckDB band join", "bucketed": "DuckDB bucketed band join"}
#: the form that computes the per-prefix checks (cheap; verified against the band join)
CHECK_FORM = "bucketed"


def _median(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[(len(xs) - 1) // 2]


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def bucket_width(windows: list[int]) -> int:
    """``B`` of the bucketed form: no two members of a result are more than ``B`` apart."""
    return max(1, *(int(t) for t in windows))


def join_from(aliases: list[str], windows: list[int], attr: str = "a", form: str = "band") -> str:
    """``FROM`` clause of the eager multi-way time-window equi-join on ``attr``.

    Every stream ``k > 0`` joins the first one on ``attr`` (and, bucketed, on
    the neighbour bucket) with the band conditions against every earlier one.
    The (sub)queries keep the table names as aliases, so ``"S2".ts`` etc.
    mean the same in both forms.
    """
    if form not in FORMS:
        raise ValueError(f"unknown DuckDB join form {form!r}; choose from {', '.join(FORMS)}")
    q0 = _q(aliases[0])
    b = bucket_width(windows)
    sql = q0 if form == "band" else f"(SELECT *, ts // {b} AS _b FROM {q0}) AS {q0}"
    for k in range(1, len(aliases)):
        ak, tk = _q(aliases[k]), windows[k]
        conds = [f"{ak}.{attr} = {q0}.{attr}"]
        if form == "bucketed":
            conds.append(f"{ak}._nb = {q0}._b")
        for i in range(k):
            ai, ti = _q(aliases[i]), windows[i]
            conds.append(f"{ak}.ts + {tk} >= {ai}.ts")
            conds.append(f"{ai}.ts + {ti} >= {ak}.ts")
        src = ak if form == "band" else (f"(SELECT {ak}.*, {ak}.ts // {b} + _o.d AS _nb FROM {ak}, (VALUES (-1), (0), (1)) AS _o(d)) AS {ak}")
        sql += f" JOIN {src} ON " + " AND ".join(conds)
    return sql


def band_join_from(aliases: list[str], windows: list[int], attr: str = "a") -> str:
    """``FROM`` clause of the plain band join (kept for callers of the first version)."""
    return join_from(aliases, windows, attr, "band")


def _origin_exprs(aliases: list[str], windows: list[int]) -> tuple[str, str, str]:
    q = [_q(a) for a in aliases]
    if len(q) == 1:
        return f"{q[0]}.pos", f"{q[0]}.ts", f"{q[0]}.ts + {windows[0]}"
    return (
        f"greatest({', '.join(f'{a}.pos' for a in q)})",
        f"greatest({', '.join(f'{a}.ts' for a in q)})",
        f"least({', '.join(f'{a}.ts + {t}' for a, t in zip(q, windows))})",
    )


def count_sql(aliases: list[str], windows: list[int], form: str = "band") -> str:
    sums = ", ".join(f"sum({_q(a)}.pos)" for a in aliases)
    return f"SELECT count(*), {sums} FROM {join_from(aliases, windows, form=form)}"


def materialize_sql(aliases: list[str], windows: list[int], columns=("ts", "a", "x"), form: str = "band") -> str:
    _, ots, exp = _origin_exprs(aliases, windows)
    cols = [f"{_q(a)}.pos AS {_q(a + '.pos')}" for a in aliases]
    cols += [f"{ots} AS ts", f"{exp} AS exp"]
    cols += [f"{_q(a)}.{c} AS {_q(f'{a}.{c}')}" for a in aliases for c in columns]
    return f"SELECT {', '.join(cols)} FROM {join_from(aliases, windows, form=form)}"


def verify_sql(aliases: list[str], windows: list[int], checks: list[tuple[int, int | None]], form: str = "band") -> str:
    """Counts and position sums of the results with origin ``pos < n`` (and, for a
    lazy no-restore interval ``D``, without the short-lived ones: ``exp >= ceil(ts/D)*D``)."""
    opos, ots, exp = _origin_exprs(aliases, windows)
    inner = (
        f"SELECT {opos} AS opos, {ots} AS ots, {exp} AS oexp, "
        + ", ".join(f"{_q(a)}.pos AS p{i}" for i, a in enumerate(aliases))
        + f" FROM {join_from(aliases, windows, form=form)}"
    )
    aggs = []
    for n, d in checks:
        cond = f"opos < {int(n)}"
        if d:
            d = int(d)
            cond += f" AND oexp >= (CASE WHEN ots >= 0 THEN (ots + {d - 1}) // {d} ELSE -((-ots) // {d}) END) * {d}"
        aggs.append(f"count(*) FILTER (WHERE {cond})")
        aggs += [f"coalesce(sum(p{i}) FILTER (WHERE {cond}), 0)" for i in range(len(aliases))]
    return f"SELECT {', '.join(aggs)} FROM ({inner})"


def _plan_joins(con, sql: str) -> list[str]:
    plan = con.execute("EXPLAIN " + sql).fetchall()[0][1]
    return re.findall(r"─ ([A-Za-z_ ]*(?:JOIN|PRODUCT)[A-Za-z_ ]*?) ─", plan, re.IGNORECASE)


def _time_form(con, aliases: list[str], windows: list[int], form: str, threads: int, n_total: int) -> tuple[dict, tuple]:
    con.execute(f"SET threads = {threads}")
    mem = PeakMemory().start()
    count_times, mat_times, cpu_times = [], [], []
    counted, rows = None, 0
    while not count_times or (sum(count_times) + sum(mat_times) < MIN_MEASURE_S and len(count_times) < MAX_REPEATS):
        t0 = time.perf_counter()
        counted = con.execute(count_sql(aliases, windows, form)).fetchall()[0]
        count_times.append(time.perf_counter() - t0)
        t0, c0 = time.perf_counter(), time.process_time()
        rows = con.sql(materialize_sql(aliases, windows, form=form)).to_arrow_table().num_rows
        mat_times.append(time.perf_counter() - t0)
        cpu_times.append(time.process_time() - c0)
    mem.stop()
    mat_s, count_s = _median(mat_times), _median(count_times)
    run = {
        "threads": threads,
        "seconds": round(mat_s, 4),
        "cpu_seconds": round(_median(cpu_times), 4),
        "tuples_per_s": n_total / mat_s,
        "results": rows,
        "results_per_s": rows / mat_s,
        "count_s": round(count_s, 4),
        "count_tuples_per_s": n_total / count_s,
        "passes": len(mat_times),
        **mem.as_dict(),
    }
    return run, counted


def duckdb_child(spec: dict, send) -> dict:
    """Run the DuckDB peer (both forms) in this (fresh) process; see the module docstring.

    ``spec``: ``path``, ``n_tuples``, ``aliases``, ``windows``, optional
    ``checks`` (``[n, slide or None]``), ``forms`` (default all) and
    ``threads`` (default ``[1, DuckDB's default]``).
    """
    import duckdb
    import pyarrow as pa

    aliases, windows = spec["aliases"], spec["windows"]
    forms = list(spec.get("forms") or FORMS)
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

    out: dict = {
        "engine": f"duckdb {duckdb.__version__}",
        "tuples": n_total,
        "load_s": round(load_s, 4),
        "load": "numpy -> Arrow -> CREATE TABLE, excluded from the timings",
        "default_threads": default_threads,
        "bucket_width": bucket_width(windows),
        "forms": {},
    }
    threads_list = list(dict.fromkeys(spec.get("threads") or [1, default_threads]))
    done = 0
    for form in forms:
        entry: dict = {"label": FORMS[form], "sql": count_sql(aliases, windows, form), "runs": {}}
        entry["plan_joins"] = _plan_joins(con, entry["sql"])
        counted = None
        for threads in threads_list:
            run, counted = _time_form(con, aliases, windows, form, threads, n_total)
            entry["runs"][f"threads_{threads}"] = run
            done += 1
            send("progress", done)
        entry["results"] = int(counted[0])
        entry["member_pos_sums"] = [int(v or 0) for v in counted[1:]]
        first = entry["runs"][f"threads_{threads_list[0]}"]
        entry.update({k: first.get(k) for k in ("threads", "seconds", "tuples_per_s", "results_per_s", "count_tuples_per_s", "peak_rss_mb")})
        out["forms"][form] = entry
    checks = [tuple(c) for c in spec.get("checks", [])]
    if checks:
        form = CHECK_FORM if CHECK_FORM in forms else forms[0]
        con.execute(f"SET threads = {default_threads}")
        row = con.execute(verify_sql(aliases, windows, checks, form)).fetchall()[0]
        k = len(aliases) + 1
        out["checks_form"] = FORMS[form]
        out["checks"] = [{"check": list(c), "results": int(row[j * k]), "member_pos_sums": [int(v) for v in row[j * k + 1 : (j + 1) * k]]} for j, c in enumerate(checks)]
    send("progress", done + 1)
    return out
