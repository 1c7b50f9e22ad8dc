"""The PNG of ``slidewise bench update-patterns`` (Golab's thesis Figs. 3.8–3.15 in one sheet).

Per input source two rows of panels: time per 1000 tuples after the windows
fill against the window size for Query 1 (selective, unselective), Query 3 and
Query 4; then Query 2 (DISTINCT src; src, dst) time and average state size (§3.6.3 plots average space).
Failed or skipped points are left out; the footer lists mismatches.
"""

from __future__ import annotations

from pathlib import Path

from slidewise.bench.common import pyplot

COLOURS = {"NT": "#c44e52", "NT(join up)": "#dd8452", "DIRECT": "#8172b3", "UPA": "#4c72b0", "UPA(10)": "#4c72b0", "UPA(50)": "#55a868", "UPA naive distinct": "#937860"}
MARKERS = {"NT": "o", "NT(join up)": "v", "DIRECT": "s", "UPA": "^", "UPA(10)": "^", "UPA(50)": "D", "UPA naive distinct": "x"}

#: (experiment, metric, y label) per panel, two rows per source
PANELS = (
    (
        ("q1_selective", "ms_per_1000", "ms per 1000 tuples"),
        ("q1_unselective", "ms_per_1000", "ms per 1000 tuples"),
        ("q3", "ms_per_1000", "ms per 1000 tuples"),
        ("q4", "ms_per_1000", "ms per 1000 tuples"),
    ),
    (
        ("q2_src", "ms_per_1000", "ms per 1000 tuples"),
        ("q2_pair", "ms_per_1000", "ms per 1000 tuples"),
        ("q2_src", "state_tuples_avg_after_fill", "average state after fill (tuples)"),
        ("q2_pair", "state_tuples_avg_after_fill", "average state after fill (tuples)"),
    ),
)


def _panel(ax, exp: dict | None, metric: str, ylabel: str, source: str, unit: str) -> None:
    if not exp:
        ax.set_axis_off()
        return
    labels = list(dict.fromkeys(k for pt in exp["points"] for k in pt["series"]))
    for label in labels:
        xs, ys = [], []
        for pt in exp["points"]:
            v = pt["series"].get(label, {}).get(metric)
            if v is None and metric.startswith("state"):
                v = pt["series"].get(label, {}).get("state_tuples_peak")
            if v is not None:
                xs.append(pt["window"])
                ys.append(max(v, 1e-6))
        if xs:
            ax.plot(xs, ys, marker=MARKERS.get(label, "o"), color=COLOURS.get(label), label=label)
    title = f"{source}: {exp['title']}"
    if exp.get("protocol"):
        title += f"\nprotocol = '{exp['protocol']}'"
    if metric.startswith("state"):
        title += " — state"
    pre = [pt.get("premature", {}).get("fraction") for pt in exp["points"]]
    if any(p is not None for p in pre):
        title += "\npremature deletions: " + ", ".join("-" if p is None else f"{p:.0%}" for p in pre)
    ax.set_title(title, fontsize=9)
    ax.set_xlabel(f"window ({unit})", fontsize=8)
    ax.set_ylabel(ylabel, fontsize=8)
    ax.set_yscale("log")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7)


def plot_update_patterns(report: dict, path: str | Path) -> Path:
    """One panel per query and metric, two rows per source."""
    plt = pyplot()
    sources = report["sources"]
    nrows = 2 * max(1, len(sources))
    fig, axes = plt.subplots(nrows, 4, figsize=(22, 4.6 * nrows), squeeze=False)
    for i, (name, src) in enumerate(sources.items()):
        for r, row in enumerate(PANELS):
            for c, (exp, metric, ylabel) in enumerate(row):
                _panel(axes[2 * i + r][c], src["experiments"].get(exp), metric, ylabel, name, src["unit"])
    m = report["machine"]
    foot = f"{m.get('cpu_model', m.get('machine', ''))}, {m.get('cpu_count')} CPUs, Python {m['python']}; {report['settings']['timing']}"
    if report.get("mismatches"):
        foot += f"\n{len(report['mismatches'])} RESULT MISMATCHES between strategies (see the JSON)"
    fig.suptitle("slidewise bench update-patterns (Golab's thesis §3.6): NT vs DIRECT vs UPA", fontsize=13, fontweight="bold", y=1 - 0.15 / (4.6 * nrows))
    fig.text(0.5, 0.005, foot, ha="center", fontsize=8, color="#555555")
    # fixed margins: tight_layout / bbox_inches="tight" cost seconds with 16 log-scale panels
    height = 4.6 * nrows  # inches: keep ~1 in for the title above and ~0.8 in for the footer below
    fig.subplots_adjust(left=0.04, right=0.99, bottom=0.8 / height, top=1 - 1.05 / height, wspace=0.22, hspace=0.55)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
