"""``slidewise bench update-patterns``: Golab's thesis §3.6, Queries 1–4, NT vs DIRECT vs UPA.

Golab's thesis §3.6 compares three ways of running a plan over
sliding windows: negative tuples (NT), direct expiration (DIRECT) and
update-pattern-aware processing (UPA: FIFO state for weakest, calendar queues
for weak non-monotonic state, δ* for duplicate elimination, negative tuples
only where strict). The queries, over "links" (one trace split by
destination address):

* **Query 1** — ``Link1 ⋈_src Link2`` with ``protocol = <selective>`` on both
  sides (few results; the thesis' ftp) and ``<unselective>`` (≈ 10× the
  results or more; the thesis' telnet); NT, DIRECT, UPA(10), UPA(50)
  (calendar partitions).
* **Query 2** — ``DISTINCT src`` and ``DISTINCT src, dst`` over Link1; NT
  (counting distinct on negative tuples, the planner's choice; for DISTINCT
  src also "NT naive distinct"), "NT thesis set-up" (the thesis's NT
  configuration: naive distinct over hash tables of 10 scanned partitions,
  §3.6.1), DIRECT, UPA (δ* + calendar queue); time and state. ``acceptance`` in the JSON holds
  the targets (:func:`acceptance`).
* **Query 3** — ``Link1 NOT EXISTS Link2 on src``; NT vs UPA, and the fraction
  of result deletions that are premature (before the Link1 tuple expires).
* **Query 4** — Query 3 joined with Link3 (``protocol = <selective>``): NT with
  negation pulled up, NT(join up) with negation pushed down, UPA pulled up.

Every query runs the real path: query text → :func:`slidewise.cql.parse_plan`
→ :func:`slidewise.runtime.plan_engine.execute_plan` with ``strategy`` and
``partitions``. **Time per 1000 tuples after the windows fill** (§3.6.1) is
measured by difference: each point runs the input up to the moment the
windows are full (fill) and up to a fixed span later (full); the CPU seconds
of this process (``time.process_time``, garbage collector paused) of the two
runs are subtracted and divided by the tuples of the span. State sizes
(``state_tuples_peak`` etc.) are the full run's. Every strategy of a point
must report the same number of result rows; a disagreement is recorded under
``mismatches`` and makes the CLI fail.

Inputs: ``generated`` — :func:`slidewise.runtime.generate.generate_links`
(one tuple per time unit per link, Zipf sources, ftp rare / telnet common);
``zeek`` — real Zeek logs: the bundled WRCCDC 2018 sample, or a directory
given by ``zeek_dir`` (``--zeek-dir``), checked before anything runs; see
:mod:`slidewise.bench.update_patterns_inputs`.
Results: ``<out>/update_patterns.json`` and ``<out>/update_patterns.png``.
"""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from slidewise.bench.common import machine_info, write_json
from slidewise.bench.update_patterns_inputs import Inputs, generated_inputs, zeek_inputs
from slidewise.bench.update_patterns_inputs import zeek_dir as check_zeek_dir
from slidewise.errors import OptionError

__all__ = ["EXPERIMENTS", "SOURCES", "Series", "real_runner", "run_update_patterns_bench"]

SOURCES = ("generated", "zeek")

Q1 = "SELECT RSTREAM(*) FROM Link1 [RANGE {w}], Link2 [RANGE {w}] WHERE Link1.src = Link2.src AND Link1.protocol = '{p}' AND Link2.protocol = '{p}'"
Q2_SRC = "SELECT RSTREAM(DISTINCT Link1.src) FROM Link1 [RANGE {w}]"
Q2_PAIR = "SELECT RSTREAM(DISTINCT Link1.src, Link1.dst) FROM Link1 [RANGE {w}]"
_NOT_EXISTS = "NOT EXISTS (SELECT * FROM Link2 [RANGE {w}] WHERE Link2.src = Link1.src)"
Q3 = "SELECT RSTREAM(*) FROM Link1 [RANGE {w}] WHERE " + _NOT_EXISTS
Q4_PULLED_UP = "SELECT RSTREAM(*) FROM Link1 [RANGE {w}], Link3 [RANGE {w}] WHERE Link1.src = Link3.src AND Link3.protocol = '{p}' AND " + _NOT_EXISTS
Q4_PUSHED_DOWN = (
    "SELECT RSTREAM(*) FROM (SELECT * FROM Link1 [RANGE {w}] WHERE " + _NOT_EXISTS + ") AS N, Link3 [RANGE {w}] WHERE N.src = Link3.src AND Link3.protocol = '{p}'"
)


@dataclass(frozen=True)
class Series:
    """One line of a panel: a query text (``{w}``, ``{p}`` placeholders) run under a strategy."""

    label: str
    text: str
    strategy: str
    partitions: int = 10
    options: tuple[tuple[str, object], ...] = ()  # execute_plan(options=...), e.g. (("distinct", "naive"),)


@dataclass(frozen=True)
class Experiment:
    name: str
    title: str
    links: tuple[str, ...]
    series: tuple[Series, ...]
    protocol: str | None = None  # "selective" / "unselective": which of the source's protocols fills {p}


#: the thesis's NT set-up for Query 2 (§3.6.1, §3.6.3): the weak non-monotonic (naive) distinct over hash
#: tables of 10 partitions, each lookup scanning its partition (slidewise's NT indexes state by value)
NT_THESIS = "NT thesis set-up"
NT_THESIS_OPTIONS = (("distinct", "naive"), ("hash_partitions", 10))


def _strategies(text: str, upa_partitions=(10,)) -> tuple[Series, ...]:
    upa = tuple(Series(f"UPA({k})" if len(upa_partitions) > 1 else "UPA", text, "upa", k) for k in upa_partitions)
    return (Series("NT", text, "nt"), Series("DIRECT", text, "direct")) + upa


EXPERIMENTS = (
    Experiment("q1_selective", "Query 1, selective protocol", ("Link1", "Link2"), _strategies(Q1, (10, 50)), "selective"),
    Experiment("q1_unselective", "Query 1, unselective protocol (≥10x results)", ("Link1", "Link2"), _strategies(Q1, (10, 50)), "unselective"),
    Experiment(
        "q2_src",
        "Query 2, DISTINCT src",
        ("Link1",),
        _strategies(Q2_SRC)
        + (
            Series("UPA naive distinct", Q2_SRC, "upa", 10, (("distinct", "naive"),)),
            Series("NT naive distinct", Q2_SRC, "nt", 10, (("distinct", "naive"),)),
            Series(NT_THESIS, Q2_SRC, "nt", 10, NT_THESIS_OPTIONS),
        ),
    ),
    Experiment(
        "q2_pair",
        "Query 2, DISTINCT src, dst",
        ("Link1",),
        _strategies(Q2_PAIR) + (Series("UPA naive distinct", Q2_PAIR, "upa", 10, (("distinct", "naive"),)), Series(NT_THESIS, Q2_PAIR, "nt", 10, NT_THESIS_OPTIONS)),
    ),
    Experiment("q3", "Query 3, Link1 NOT EXISTS Link2 on src", ("Link1", "Link2"), (Series("NT", Q3, "nt"), Series("UPA", Q3, "upa"))),
    Experiment(
        "q4",
        "Query 4, Query 3 joined with Link3 (selective protocol)",
        ("Link1", "Link2", "Link3"),
        (Series("NT", Q4_PULLED_UP, "nt"), Series("NT(join up)", Q4_PUSHED_DOWN, "nt"), Series("UPA", Q4_PULLED_UP, "upa")),
        "selective",
    ),
)


# ------------------------------------------------------------- running ----

#: runner(text, streams, strategy, partitions, lateness, collect=, options=) -> (stats, results DataFrame | None)
Runner = Callable[..., tuple[dict, "pd.DataFrame | None"]]


def real_runner(text: str, streams: dict, strategy: str, partitions: int, lateness: int, collect: bool = False, options: dict | None = None):
    """Query text → ``cql.parse_plan`` → ``runtime.plans.execute_plan`` (the documented API).

    ``options["hash_partitions"]`` (the bench's, not the engine's): NT state in the thesis's
    partitioned hash tables (:func:`slidewise.bench.nt_thesis.thesis_hash_tables`)."""
    from contextlib import nullcontext

    from slidewise.bench.nt_thesis import thesis_hash_tables
    from slidewise.cql import parse_plan
    from slidewise.runtime.plan_engine import execute_plan

    options = dict(options or {})
    buckets = options.pop("hash_partitions", None)
    with nullcontext() if buckets is None else thesis_hash_tables(buckets):
        res = execute_plan(parse_plan(text), streams, strategy=strategy, partitions=partitions, lateness=lateness, collect=collect, options=options)
    return dict(res.stats), res.results


def _timed(runner: Runner, *args, **kw):
    gc.collect()
    gc.disable()
    try:
        c0, w0 = time.process_time(), time.perf_counter()
        stats, results = runner(*args, **kw)
        return stats, results, time.process_time() - c0, time.perf_counter() - w0
    finally:
        gc.enable()


def _rows(stats: dict):
    return stats.get("results")


def premature_fraction(results: pd.DataFrame, window: int) -> dict:
    """Q3: share of result deletions (sign −1) made before the Link1 tuple left its window (§3.6.4).

    A Link1 tuple with timestamp t is in its window until ``t + window``; a
    deletion at an instant ``τ <= t + window`` was caused by a Link2 arrival.
    """
    ts_col = next((c for c in results.columns if c.endswith(".ts")), None)
    neg = results[results["sign"] < 0]
    if ts_col is None:
        return {"error": f"no member timestamp column in {list(results.columns)}"}
    premature = int((neg["ts"].to_numpy() <= neg[ts_col].to_numpy() + window).sum())
    return {"deletions": int(len(neg)), "premature": premature, "fraction": round(premature / len(neg), 4) if len(neg) else None}


def _canonical(df: pd.DataFrame) -> list:
    """A result multiset that ignores column names (Q4's plans name Link1's columns differently)."""
    return sorted(map(tuple, df.astype(str).to_numpy().tolist()))


def predicted_cpu(cpu_fill: float, cpu_full: float, w: int, nxt: int, per_tuple: float, previous: tuple | None) -> float:
    """CPU seconds of a series' next point (fill run + full run): the fill input grows like the
    window, the span does not; the cost per tuple grows like it did from the previous window
    (``(window, ms_per_1000)``), at worst like the window."""
    grow = nxt / w
    per = grow
    if previous is not None and previous[1] > 0 and per_tuple > 0 and previous[0] < w:
        slope = np.log(per_tuple / previous[1]) / np.log(w / previous[0])
        per = grow ** float(np.clip(slope, 0.0, 1.0))
    return (2 * cpu_fill * grow + max(cpu_full - cpu_fill, 0.0)) * per


def measure_point(
    exp: Experiment, inputs: Inputs, w: int, runner: Runner, *, skip: set, budget_s: float, verify_rows: bool, say, history: dict | None = None, repeats: int = 1
) -> dict:
    """All series of ``exp`` at window ``w``: fill run, full run, ms per 1000 tuples, stats, checks."""
    history = {} if history is None else history  # label -> (window, ms_per_1000) of its last point
    fill_end = inputs.start + w + 1
    fill = inputs.prefix(exp.links, fill_end)
    full = inputs.prefix(exp.links, fill_end + inputs.span)
    measured = sum(len(full[n]) - len(fill[n]) for n in exp.links)
    p = inputs.protocols.get(exp.protocol, "") if exp.protocol else ""
    point: dict = {"window": w, "fill_tuples": sum(map(len, fill.values())), "measured_tuples": measured, "series": {}}
    for s in exp.series:
        if s.label in skip:
            point["series"][s.label] = {"skipped": f"predicted over the {budget_s:g} s budget per run"}
            continue
        text = s.text.format(w=w, p=p)
        try:
            kw = {"options": dict(s.options)} if s.options else {}
            cpu_fill = wall_fill = cpu = wall = float("inf")
            for _ in range(repeats):  # the least disturbed of the repeats (shared machine)
                st_fill, _, c, t = _timed(runner, text, fill, s.strategy, s.partitions, inputs.lateness, **kw)
                cpu_fill, wall_fill = min(cpu_fill, c), min(wall_fill, t)
                st, _, c, t = _timed(runner, text, full, s.strategy, s.partitions, inputs.lateness, **kw)
                cpu, wall = min(cpu, c), min(wall, t)
        except Exception as e:  # noqa: BLE001 - recorded and reported; the other series go on
            point["series"][s.label] = {"error": f"{type(e).__name__}: {e}", "query": text}
            say(f"  {exp.name} w={w} {s.label}: ERROR {type(e).__name__}: {e}")
            continue
        entry = {
            "strategy": s.strategy,
            "partitions": s.partitions,
            "ms_per_1000": round(max(cpu - cpu_fill, 0.0) / max(measured, 1) * 1e6, 4),
            "ms_per_1000_wall": round(max(wall - wall_fill, 0.0) / max(measured, 1) * 1e6, 4),
            "cpu_s_full": round(cpu, 4),
            "cpu_s_fill": round(cpu_fill, 4),
            "options": dict(s.options),
            "results": _rows(st),
            "results_fill": _rows(st_fill),
            "retractions": st.get("retractions"),
            "retractions_fill": st_fill.get("retractions"),
        }
        entry.update({k: v for k, v in st.items() if k.startswith("state_") or k in ("negative_tuples", "rejects", "seconds", "inputs", "instants", "patterns")})
        entry.update(after_fill(st, st_fill))
        point["series"][s.label] = entry
        say(f"  {exp.name} w={w} {s.label}: {entry['ms_per_1000']:.2f} ms/1000, results {entry['results']}, state peak {st.get('state_tuples_peak')}")
        nxt = [x for x in inputs.windows if x > w]
        # the budget is per run: more --rounds repeat the same windows, they do not shrink them
        if nxt and predicted_cpu(cpu_fill, cpu, w, nxt[0], entry["ms_per_1000"], history.get(s.label)) > budget_s:
            skip.add(s.label)
        history[s.label] = (w, entry["ms_per_1000"])
    if exp.name == "q3" or verify_rows:
        _verify_rows(exp, point, full, w, p, inputs, runner, verify_rows)
    return point


def after_fill(full: dict, fill: dict) -> dict:
    """Time-averaged state over the measured span only: (∫ state of the full run − of the fill run) / Δt.

    Both runs are identical up to the end of the fill run, so the difference
    of their state integrals (``state_area``) is the integral over the span;
    per operator likewise (what each strategy's state consists of).
    """
    if "state_area" not in full or "state_area" not in fill:
        return {}
    dt = full["state_span"] - fill["state_span"]
    if dt <= 0:
        return {}
    ops_fill = fill.get("state_by_operator", {})
    return {
        "state_tuples_avg_after_fill": round((full["state_area"] - fill["state_area"]) / dt, 2),
        "state_by_operator_after_fill": {k: round((v["area"] - ops_fill.get(k, {}).get("area", 0)) / dt, 2) for k, v in full.get("state_by_operator", {}).items()},
    }


def _verify_rows(exp, point, full, w, p, inputs, runner, all_series: bool) -> None:
    """Untimed collected runs: Q3's premature deletions; with ``all_series``, compare result multisets."""
    canon = {}
    for s in exp.series:
        if "error" in point["series"][s.label] or "skipped" in point["series"][s.label]:
            continue
        if not all_series and not (exp.name == "q3" and s.strategy == "nt"):
            continue
        try:
            kw = {"options": dict(s.options)} if s.options else {}
            _, results = runner(s.text.format(w=w, p=p), full, s.strategy, s.partitions, inputs.lateness, collect=True, **kw)
        except Exception as e:  # noqa: BLE001
            point["series"][s.label]["verify_error"] = f"{type(e).__name__}: {e}"
            continue
        if exp.name == "q3" and s.strategy == "nt":
            point["premature"] = premature_fraction(results, w)
        if all_series:
            canon[s.label] = _canonical(results)
    if canon:
        first = next(iter(canon))
        point["rows_equal"] = {k: v == canon[first] for k, v in canon.items()}


def check_point(exp: Experiment, point: dict) -> list[dict]:
    """Mismatches of result counts (and rows, when verified) between the series of one point."""
    out = []
    for key in ("results", "results_fill", "retractions", "retractions_fill"):
        counts = {k: v[key] for k, v in point["series"].items() if v.get(key) is not None}
        if len(set(counts.values())) > 1:
            out.append({"experiment": exp.name, "window": point["window"], "what": key, "counts": counts})
    bad = [k for k, ok in point.get("rows_equal", {}).items() if not ok]
    if bad:
        out.append({"experiment": exp.name, "window": point["window"], "what": "result rows", "differs_from_first": bad})
    return out


# ------------------------------------------------------------- summary ----


def _largest_common(points: list[dict], a: str, b: str, key: str):
    for pt in reversed(points):
        sa, sb = pt["series"].get(a, {}), pt["series"].get(b, {})
        if sa.get(key) is not None and sb.get(key) is not None:
            return pt["window"], sa[key], sb[key]
    return None


def ratios(report_source: dict) -> dict:
    """The acceptance ratios and every series' time over NT's, per experiment and window."""
    exps = report_source["experiments"]
    out: dict = {}
    for name in ("q2_src", "q2_pair"):
        pts = exps.get(name, {}).get("points", [])
        r: dict = {}
        t = _largest_common(pts, "NT", "UPA", "ms_per_1000")
        if t:
            r.update(window=t[0], nt_ms_per_1000=t[1], upa_ms_per_1000=t[2], upa_speedup_vs_nt=round(t[1] / t[2], 3) if t[2] else None)
        for key in ("state_tuples_peak", "state_tuples_avg", "state_tuples_avg_after_fill"):
            s = _largest_common(pts, "NT", "UPA", key)
            if s:
                r[f"upa_over_nt_{key}"] = round(s[2] / s[1], 4) if s[1] else None
        if r:
            r["meets_3x_faster"] = bool(r.get("upa_speedup_vs_nt") and r["upa_speedup_vs_nt"] >= 3)
            state = r.get("upa_over_nt_state_tuples_avg_after_fill", r.get("upa_over_nt_state_tuples_avg", r.get("upa_over_nt_state_tuples_peak")))
            r["meets_quarter_state"] = state is not None and state <= 0.25
        out[name] = r
    for name in ("q1_selective", "q1_unselective"):
        t = _largest_common(exps.get(name, {}).get("points", []), "NT", "UPA(50)", "ms_per_1000")
        if t:
            out[name] = {
                "window": t[0],
                "nt_ms_per_1000": t[1],
                "upa50_ms_per_1000": t[2],
                "upa50_speedup_vs_nt": round(t[1] / t[2], 3) if t[2] else None,
                "upa50_beats_nt": t[2] < t[1],
            }
    vs_nt = {}
    for name, e in exps.items():
        vs_nt[name] = {
            str(pt["window"]): {k: round(pt["series"]["NT"]["ms_per_1000"] / v["ms_per_1000"], 3) for k, v in pt["series"].items() if k != "NT" and v.get("ms_per_1000")}
            for pt in e["points"]
            if pt["series"].get("NT", {}).get("ms_per_1000")
        }
    out["speedup_vs_nt_per_window"] = vs_nt
    q3 = [pt.get("premature", {}).get("fraction") for pt in exps.get("q3", {}).get("points", [])]
    out["q3_premature_fraction_per_window"] = q3
    return out


# ----------------------------------------------------------------- run ----


def acceptance(report_source: dict) -> dict:
    """The measured targets at the largest window both series reached, with what the state holds.

    Query 2 (DISTINCT src): UPA ≥ 3× faster than NT (``time_ratio_nt_over_upa``;
    NT runs the planner's counting distinct — beside it the ratios to NT with
    the naive distinct and to the thesis's NT set-up, ``time_ratio_nt_thesis_over_upa``:
    naive distinct over hash tables of 10 scanned partitions, §3.6.1, §3.6.3)
    and ≤ ¼ of NT's state (``state_ratio_upa_over_nt``: time-averaged over the
    measured span, as the thesis plots average space; the peak ratio beside
    it). Query 1, selective protocol: UPA(50) faster than NT.
    """
    exps = report_source["experiments"]
    out: dict = {}
    pts = exps.get("q2_src", {}).get("points", [])
    t = _largest_common(pts, "NT", "UPA", "ms_per_1000")
    if t:
        pt = next(p for p in pts if p["window"] == t[0])
        nt, upa = pt["series"]["NT"], pt["series"]["UPA"]
        avg_nt, avg_upa = nt.get("state_tuples_avg_after_fill"), upa.get("state_tuples_avg_after_fill")
        time_ratio = round(t[1] / t[2], 3) if t[2] else None
        state_ratio = round(avg_upa / avg_nt, 4) if avg_nt and avg_upa is not None else None
        out["q2_src"] = {
            "window": t[0],
            "nt_ms_per_1000": t[1],
            "upa_ms_per_1000": t[2],
            "time_ratio_nt_over_upa": time_ratio,
            "time_target": ">= 3",
            "time_met": bool(time_ratio and time_ratio >= 3),
            "nt_state_avg": avg_nt,
            "upa_state_avg": avg_upa,
            "state_ratio_upa_over_nt": state_ratio,
            "state_ratio_upa_over_nt_peak": round(upa["state_tuples_peak"] / nt["state_tuples_peak"], 4) if nt.get("state_tuples_peak") else None,
            "state_target": "<= 0.25",
            "state_met": state_ratio is not None and state_ratio <= 0.25,
            "nt_state_by_operator": nt.get("state_by_operator_after_fill"),
            "upa_state_by_operator": upa.get("state_by_operator_after_fill"),
            "instants": {"NT": nt.get("instants"), "UPA": upa.get("instants")},
        }
        naive = pt["series"].get("NT naive distinct", {}).get("ms_per_1000")
        if naive and t[2]:  # NT with the weak non-monotonic (naive) distinct, state indexed by value
            ratio = round(naive / t[2], 3)
            out["q2_src"].update(nt_naive_distinct_ms_per_1000=naive, time_ratio_nt_naive_distinct_over_upa=ratio, time_met_vs_nt_naive_distinct=ratio >= 3)
        thesis = pt["series"].get(NT_THESIS, {})
        if thesis.get("ms_per_1000") and t[2]:  # the thesis's NT set-up (§3.6.1, §3.6.3)
            ratio = round(thesis["ms_per_1000"] / t[2], 3)
            avg = thesis.get("state_tuples_avg_after_fill")
            out["q2_src"].update(
                nt_thesis_ms_per_1000=thesis["ms_per_1000"],
                time_ratio_nt_thesis_over_upa=ratio,
                time_met_vs_nt_thesis=ratio >= 3,
                state_ratio_upa_over_nt_thesis=round(avg_upa / avg, 4) if avg and avg_upa is not None else None,
            )
    t = _largest_common(exps.get("q1_selective", {}).get("points", []), "NT", "UPA(50)", "ms_per_1000")
    if t:
        out["q1_selective"] = {
            "window": t[0],
            "nt_ms_per_1000": t[1],
            "upa50_ms_per_1000": t[2],
            "time_ratio_nt_over_upa50": round(t[1] / t[2], 3) if t[2] else None,
            "target": "UPA(50) faster than NT",
            "met": t[2] < t[1],
        }
    return out


def run_source(
    inputs: Inputs, runner: Runner, *, experiments=EXPERIMENTS, budget_s: float = 10.0, verify_rows: bool = False, say=lambda m: None, repeats: int = 1
) -> dict:
    """Every experiment at every window of one source."""
    rep: dict = {
        "unit": inputs.unit,
        "windows": list(inputs.windows),
        "span": inputs.span,
        "lateness": inputs.lateness,
        "protocols": inputs.protocols,
        "info": inputs.info,
        "experiments": {},
        "mismatches": [],
    }
    gc.collect()
    gc.freeze()  # inputs and imports: not rescanned by the collection before every run
    try:
        for exp in experiments:
            _run_experiment(exp, inputs, runner, rep, budget_s, verify_rows, say, repeats)
    finally:
        gc.unfreeze()
    rep["ratios"] = ratios(rep)
    rep["acceptance"] = acceptance(rep)
    return rep


def _warm_up(exp: Experiment, inputs: Inputs, runner: Runner, w: int) -> None:
    """One untimed run of every series on a tiny prefix: parser construction, imports, first calls."""
    tiny = inputs.prefix(exp.links, inputs.start + max(1, w // 20))
    p = inputs.protocols.get(exp.protocol, "") if exp.protocol else ""
    for s in exp.series:
        try:
            runner(s.text.format(w=w, p=p), tiny, s.strategy, s.partitions, inputs.lateness, **({"options": dict(s.options)} if s.options else {}))
        except Exception:  # noqa: BLE001 - the measured run reports it
            pass


def _run_experiment(exp, inputs, runner, rep, budget_s, verify_rows, say, repeats=1) -> None:
    skip: set = set()  # series over the budget: not run at larger windows
    history: dict = {}
    pts = []
    _warm_up(exp, inputs, runner, inputs.windows[0])
    for w in inputs.windows:
        pt = measure_point(exp, inputs, w, runner, skip=skip, budget_s=budget_s, verify_rows=verify_rows, say=say, history=history, repeats=repeats)
        bad = check_point(exp, pt)
        for m in bad:
            say(f"  MISMATCH between strategies: {m}")
        rep["mismatches"] += [dict(m, source=inputs.name) for m in bad]
        pts.append(pt)
    rep["experiments"][exp.name] = {
        "title": exp.title,
        "links": list(exp.links),
        "points": pts,
        "queries": {s.label: s.text for s in exp.series},
        "protocol": inputs.protocols.get(exp.protocol) if exp.protocol else None,
    }


def run_update_patterns_bench(
    out_dir: str | Path = "bench-results",
    *,
    scale: float = 1.0,
    source: str = "both",
    runner: Runner | None = None,
    budget_s: float = 10.0,
    verify_rows: bool = False,
    experiments=EXPERIMENTS,
    zeek_dir=None,
    plot: bool = True,
    progress=None,
    repeats: int = 1,
) -> dict:
    """Run the experiments; write ``update_patterns.json`` and ``update_patterns.png`` to ``out_dir``.

    ``repeats``: runs per fill/full measurement, the least CPU time kept
    (2 gives steadier numbers on a shared machine at twice the time).
    """
    if source not in (*SOURCES, "both"):
        raise OptionError(f"unknown source {source!r}", hint="use --source zeek, generated or both")
    if not scale > 0:
        raise OptionError(f"--scale must be positive, got {scale}", hint="e.g. --scale 0.5 or --scale 4")
    if zeek_dir is not None and source == "generated":
        raise OptionError("--zeek-dir is only read with --source zeek or both", hint="drop --zeek-dir, or add --source zeek")
    names = SOURCES if source == "both" else (source,)
    if "zeek" in names:
        zeek_dir = check_zeek_dir(zeek_dir)  # before any run: a bad path fails in seconds, not minutes
    say = progress or (lambda m: None)
    runner = runner or real_runner
    started = time.perf_counter()
    report: dict = {
        "machine": machine_info(),
        "settings": {
            "scale": scale,
            "budget_s": budget_s,
            "verify_rows": verify_rows,
            "repeats": repeats,
            "timing": f"CPU seconds (process_time), full run minus fill run, per 1000 tuples of the span; gc paused; each run the least of {repeats} repeats",
            "state": "tuples held by all operators (windows, operator state, the "
            "output's materialised answer): state_tuples_peak (worst instant "
            "of the full run), state_tuples_avg_after_fill (time-weighted "
            "average over the measured span, by difference of the runs' "
            "state integrals) and its split per operator",
        },
        "sources": {},
    }
    for name in names:
        say(f"{name}: loading inputs")
        inputs = generated_inputs(scale) if name == "generated" else zeek_inputs(scale, zeek_dir)
        report["sources"][name] = run_source(inputs, runner, experiments=experiments, budget_s=budget_s, verify_rows=verify_rows, say=say, repeats=repeats)
    report["mismatches"] = [m for s in report["sources"].values() for m in s["mismatches"]]
    report["acceptance"] = {name: s["acceptance"] for name, s in report["sources"].items()}
    report["summary"] = {name: s["ratios"] | {"windows": s["windows"], "unit": s["unit"], "acceptance": s["acceptance"]} for name, s in report["sources"].items()}
    report["summary"]["mismatches"] = len(report["mismatches"])
    report["summary"]["bench_wall_s"] = round(time.perf_counter() - started, 1)
    out = Path(out_dir)
    files = {"json": str(out / "update_patterns.json")}
    if plot:
        from slidewise.bench.update_patterns_plot import plot_update_patterns

        files["png"] = str(plot_update_patterns(report, out / "update_patterns.png"))
    report["summary"]["files"] = files
    write_json(out / "update_patterns.json", report)
    if report["mismatches"]:
        print(f"slidewise bench update-patterns: {len(report['mismatches'])} result mismatches between strategies (see 'mismatches' in the JSON)", file=sys.stderr)
    return report
