"""The PNG of ``slidewise bench joins``: throughput and comparisons per algorithm and workload.

Top row: input tuples per second (log) per algorithm, the reference in red,
truncated runs hatched, and both DuckDB formulations (band join, bucketed
band join) per thread setting in grey. Bottom row: attribute comparisons per
input tuple (steady state). The footer says what the numbers were measured
on and the memory scaling ratios.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from slidewise.bench.common import pyplot, save_png
from slidewise.bench.workloads import REFERENCE

COLOURS = {"eager": "#4c72b0", "lazy": "#55a868", "reference": "#c44e52", "peer": "#8c8c8c", "peer2": "#5a5a5a"}


def fmt(v: float) -> str:
    """Short human form of a rate: 4.06M, 117k, 989."""
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= div:
            return f"{v / div:.3g}{suffix}"
    return f"{v:.3g}"


def _throughput_bars(w: dict) -> list[tuple[str, float, str, bool, str]]:
    """(label, tuples/s, colour, truncated, note) per bar."""
    bars = []
    for e in w["algorithms"].values():
        if not e.get("tuples_per_s"):
            continue
        kind = "reference" if e["label"] == REFERENCE else "lazy" if e.get("semantics", "").startswith("lazy") else "eager"
        note = f"{e['tuples']:,} t" if e.get("truncated") else ""
        bars.append((e["label"], e["tuples_per_s"], COLOURS[kind], bool(e.get("truncated")), note))
    for key, form in ((w.get("duckdb") or {}).get("forms") or {}).items():
        colour = COLOURS["peer2" if key == "bucketed" else "peer"]
        for run in form.get("runs", {}).values():
            bars.append((f"{form['label']} ({run['threads']} thr)", run["tuples_per_s"], colour, False, ""))
    return bars


def _title(wname: str, w: dict) -> str:
    title = textwrap.fill(f"{wname}: {w['description']}", 70) + f"\n{w['tuples']:,} tuples"
    ratios = [f"{name} {w[key]:.2f}x" for key, name in (("speedup_vs_duckdb", "band"), ("speedup_vs_duckdb_bucketed", "bucketed")) if w.get(key)]
    if ratios:
        title += f"; {REFERENCE} / DuckDB (1 thr): " + ", ".join(ratios)
    cpu = [f"{name} {w[key]:.2f}x" for key, name in (("speedup_vs_duckdb_cpu", "band"), ("speedup_vs_duckdb_bucketed_cpu", "bucketed")) if w.get(key)]
    if cpu:
        title += "\nthe same by CPU time: " + ", ".join(cpu)
    return title


def _footer(report: dict) -> str:
    m = report["machine"]
    foot = f"{m.get('cpu_model', m.get('machine', ''))}, {m.get('cpu_count')} CPUs, Python {m['python']}"
    if m.get("load_average_1min") is not None:
        foot += f", load avg {m['load_average_1min']:.1f} at start"
        if m.get("load_average_1min_at_end") is not None:
            foot += f", {m['load_average_1min_at_end']:.1f} at end"
    parts = []
    for key, what in (("memory_scaling", "operator"), ("memory_scaling_engine", "engine")):
        ms = report.get(key) or {}
        if ms.get("ratio") is not None:
            parts.append(
                f"{what} {ms['small']['peak_rss_mb']:.0f} MB at {ms['small']['tuples']:,} vs "
                f"{ms['large']['peak_rss_mb']:.0f} MB at {ms['large']['tuples']:,} tuples "
                f"(x{ms['ratio']:.2f})"
            )
    if parts:
        foot += "\npeak RSS above baseline: " + "; ".join(parts)
    return foot


def plot_joins(report: dict, path: str | Path) -> Path:
    """Bars of input tuples/s (log) and comparisons per tuple per algorithm and workload."""
    plt = pyplot()
    wls = report["workloads"]
    ncol = max(1, len(wls))
    fig, axes = plt.subplots(2, ncol, figsize=(6.5 * ncol, 9.5), squeeze=False, gridspec_kw={"height_ratios": [3, 2]})
    for col, (wname, w) in enumerate(wls.items()):
        bars = _throughput_bars(w)
        ax = axes[0][col]
        ys = list(range(len(bars)))
        ax.barh(ys, [b[1] for b in bars], color=[b[2] for b in bars], edgecolor="white")
        for y, b in zip(ys, bars):
            if b[3]:
                ax.barh([y], [b[1]], color="none", edgecolor="black", hatch="//", linewidth=0)
            ax.text(b[1] * 1.08, y, fmt(b[1]) + (f"  ({b[4]})" if b[4] else ""), va="center", fontsize=8)
        ax.set_xscale("log")
        ax.set_yticks(ys, [b[0] for b in bars], fontsize=9)
        ax.invert_yaxis()
        if bars:
            ax.set_xlim(min(b[1] for b in bars) / 3, max(b[1] for b in bars) * 30)
        ax.set_xlabel("input tuples per second (log)")
        ax.set_title(_title(wname, w), fontsize=10)
        ax.grid(axis="x", which="major", alpha=0.3)

        comp = [
            (e["label"], e.get("comparisons_per_tuple_steady") or e.get("comparisons_per_tuple"))
            for e in w["algorithms"].values()
            if e.get("comparisons_per_tuple") is not None
        ]
        ax2 = axes[1][col]
        ys2 = list(range(len(comp)))
        vals = [max(v, 1e-3) for _, v in comp]
        ax2.barh(ys2, vals, color="#dd8452")
        for y, (_, v) in zip(ys2, comp):
            ax2.text(max(v, 1e-3) * 1.08, y, fmt(v), va="center", fontsize=8)
        ax2.set_xscale("log")
        ax2.set_yticks(ys2, [c[0] for c in comp], fontsize=9)
        ax2.invert_yaxis()
        if vals:
            ax2.set_xlim(min(vals) / 3, max(vals) * 30)
        ax2.set_xlabel("attribute comparisons per input tuple (steady state, log)")
        ax2.grid(axis="x", which="major", alpha=0.3)
    labels = {"eager": "eager", "lazy": "lazy (SLIDE)", "reference": f"{REFERENCE} (reference)", "peer": "DuckDB band join", "peer2": "DuckDB bucketed band join"}
    handles = [plt.Rectangle((0, 0), 1, 1, color=COLOURS[k]) for k in labels]
    handles.append(plt.Rectangle((0, 0), 1, 1, facecolor="white", edgecolor="black", hatch="//"))
    fig.legend(handles, [*labels.values(), "prefix of the input (time budget)"], loc="lower center", ncol=6, fontsize=9, frameon=False)
    fig.suptitle("slidewise bench joins", fontsize=13, fontweight="bold")
    fig.text(0.5, 0.04, _footer(report), ha="center", fontsize=8, color="#555555")
    fig.tight_layout(rect=(0, 0.07, 1, 0.97))
    return save_png(fig, path)
