"""The digest of a ``slidewise bench joins`` report: :func:`summarize` builds it (it is
stored in the JSON as ``summary``), :func:`print_summary` shows it as a small table
(what ``slidewise bench joins`` prints on stderr).
"""

from __future__ import annotations

from typing import Any

from slidewise.bench.workloads import REFERENCE


def _round(v: float | None, digits: int = 3) -> float | None:
    return None if v is None else float(f"{v:.{digits}g}")


def _algo_digest(r: tuple | None) -> dict | None:
    if r is None:
        return None
    return {"algorithm": r[0], "label": r[1], "tuples_per_s": _round(r[2]), "tuples": r[3]}


def summarize(report: dict) -> dict:
    """The compact digest ``slidewise bench joins`` prints (also stored in the JSON).

    Per workload: the reference's tuples/s, both DuckDB forms' tuples/s (one
    thread, materialising) and the reference's ratio to each (wall clock, and
    ``*_cpu`` in CPU seconds, steadier on a loaded machine), the fastest and
    slowest per-tuple (non-reference) algorithm, hash vs nlj throughput, and
    whether every result count and checksum matched (``None`` when nothing
    was checked). Top level: both memory scaling ratios and the load.
    """
    out: dict[str, Any] = {"reference": REFERENCE, "workloads": {}}
    for wname, w in report.get("workloads", {}).items():
        algos = w.get("algorithms", {})
        ref = algos.get(REFERENCE, {})
        forms = (w.get("duckdb") or {}).get("forms", {})
        rated = [(n, e["label"], e["tuples_per_s"], e["tuples"]) for n, e in algos.items() if n != REFERENCE and e.get("tuples_per_s")]
        fastest = max(rated, key=lambda r: r[2], default=None)
        slowest = min(rated, key=lambda r: r[2], default=None)
        hash_, nlj = algos.get("hash", {}).get("tuples_per_s"), algos.get("nlj", {}).get("tuples_per_s")
        verified = w.get("all_results_verified") if "duckdb" in w else None
        if "duckdb" in w and "error" in w["duckdb"]:
            verified = False
        out["workloads"][wname] = {
            "tuples": w.get("tuples"),
            "columnar_tuples_per_s": _round(ref.get("tuples_per_s")),
            "duckdb_band_tuples_per_s": _round(forms.get("band", {}).get("tuples_per_s")),
            "duckdb_bucketed_tuples_per_s": _round(forms.get("bucketed", {}).get("tuples_per_s")),
            "speedup_vs_duckdb": _round(w.get("speedup_vs_duckdb")),
            "speedup_vs_duckdb_bucketed": _round(w.get("speedup_vs_duckdb_bucketed")),
            "speedup_vs_duckdb_cpu": _round(w.get("speedup_vs_duckdb_cpu")),
            "speedup_vs_duckdb_bucketed_cpu": _round(w.get("speedup_vs_duckdb_bucketed_cpu")),
            "fastest_per_tuple": _algo_digest(fastest),
            "slowest_per_tuple": _algo_digest(slowest),
            "hash_vs_nlj": _round(hash_ / nlj) if hash_ and nlj else None,
            "all_counts_match": verified,
        }
    for key, name in (("memory_scaling", "memory_ratio_operator"), ("memory_scaling_engine", "memory_ratio_engine")):
        ms = report.get(key)
        if ms is None:
            continue
        out[name] = _round(ms.get("ratio"))
        small, large = ms.get("small") or {}, ms.get("large") or {}
        out[name.replace("ratio", "peaks_mb")] = {
            "tuples": [small.get("tuples"), large.get("tuples")],
            "peak_rss_mb": [small.get("peak_rss_mb"), large.get("peak_rss_mb")],
            "ok": ms.get("ok"),
        }
    m = report.get("machine", {})
    out["load_average_1min"] = [m.get("load_average_1min"), m.get("load_average_1min_at_end")]
    out["bench_wall_s"] = report.get("bench_wall_s")
    return out


def _rate(v) -> str:
    if v is None:
        return "-"
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= div:
            return f"{v / div:.3g}{suffix}"
    return f"{v:.3g}"


def _times(v) -> str:
    if v is None:
        return "-"
    return f"{v:.2f}x" if v < 10 else f"{v:.1f}x"


def print_summary(summary: dict, console=None) -> None:
    """The ``summary`` of a join bench report as a small table on stderr."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    console = console or Console(stderr=True)
    ref = summary.get("reference", "columnar")
    wls = summary.get("workloads", {})
    table = Table(
        title="slidewise bench joins",
        caption=f"input tuples/s; (x) = {ref} / DuckDB, 1 thread",
        title_justify="left",
        caption_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    table.add_column("")
    for name, w in wls.items():
        table.add_column(f"{name} ({w.get('tuples') or 0:,} t)")

    def algo(a) -> str:
        return "-" if not a else f"{a['algorithm']} {_rate(a['tuples_per_s'])}"

    def duck(w, form: str, suffix: str) -> str:
        return f"{_rate(w.get(f'duckdb_{form}_tuples_per_s'))} ({_times(w.get(f'speedup_vs_duckdb{suffix}'))})"

    def cpu(w) -> str:
        vals = [w.get("speedup_vs_duckdb_cpu"), w.get("speedup_vs_duckdb_bucketed_cpu")]
        return "-" if vals == [None, None] else ", ".join(_times(v) for v in vals)

    def match(v) -> str:
        return "-" if v is None else "[green]yes" if v else "[red]NO"

    rows = [
        (ref, lambda w: _rate(w.get("columnar_tuples_per_s"))),
        ("DuckDB band join", lambda w: duck(w, "band", "")),
        ("DuckDB bucketed band join", lambda w: duck(w, "bucketed", "_bucketed")),
        ("(x) by CPU time: band, bucketed", cpu),
        ("fastest per-tuple", lambda w: algo(w.get("fastest_per_tuple"))),
        ("slowest per-tuple", lambda w: algo(w.get("slowest_per_tuple"))),
        ("hash / nlj", lambda w: _times(w.get("hash_vs_nlj"))),
        ("all results match", lambda w: match(w.get("all_counts_match"))),
    ]
    for label, cell in rows:
        table.add_row(label, *(cell(w) for w in wls.values()))
    console.print(table)
    for key, what in (("memory_ratio_operator", "operator"), ("memory_ratio_engine", "engine")):
        if key not in summary:
            continue
        peaks = summary.get(key.replace("ratio", "peaks_mb"), {})
        n = peaks.get("tuples") or [None, None]
        mb = [_rate(v) for v in peaks.get("peak_rss_mb") or [None, None]]
        ok = peaks.get("ok")
        console.print(
            f"memory, {what}: peak {mb[0]} MB at {_rate(n[0])} tuples, {mb[1]} MB at "
            f"{_rate(n[1])}: {_times(summary[key])}" + ("" if ok is None else " [green]ok" if ok else " [red](>= 1.5x)")
        )
    load = [v for v in summary.get("load_average_1min") or [] if v is not None]
    if load:
        wall = summary.get("bench_wall_s")
        console.print(f"load average {' -> '.join(map(str, load))}" + (f", {wall:.0f} s in all" if wall else ""))
    for kind, path in (summary.get("files") or {}).items():
        console.print(f"{kind.upper():<4} {path}", soft_wrap=True)
