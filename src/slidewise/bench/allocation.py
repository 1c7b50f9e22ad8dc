"""``slidewise bench allocation``: output rate of allocation strategies under CPU and memory limits.

Reproduces the settings of Kang, Naughton & Viglas, ICDE 2003
§5.2, Figs. 5–7, on the embedded engine with its load shedding and window
sampling (:mod:`slidewise.runtime.overload`):

* ``fig5`` — CPU limit: λ_a = 800, λ_b = 200 tuples/s, windows A = 100,
  B = 200 tuples, σ = 0.01 (100 join values), μ = 100 tuples/s;
  strategies MaxA, MaxB, proportional to the rates, proportional to the
  window sizes, equal, and the optimiser's choice.
* ``fig6`` — memory limit: λ_a = 10, λ_b = 50, M = 1000 window tuples,
  σ = 0.005 (200 values; the paper's min(σ_a, σ_b)), full windows of 1000
  tuples each; MaxA, MaxB, proportional, inversely proportional, equal.
* ``fig7`` — both: μ = 10, M = 100, σ = 0.01, full windows of 100 tuples;
  the paper gives no rates, here λ_a = λ_b = 25 (both above μ); the five
  combinations of the paper (Max A / Max λ_b, ...) and the optimiser's choice.

Streams come from the paper generator (:func:`slidewise.runtime.generate.generate`,
one tuple per timestamp unit, so ``speed`` = Σλ units per second). The
windows are count windows, as in the paper's model. Each strategy runs twice
where a CPU limit applies: ``probe`` shedding (the paper's assumption: shed
arrivals still enter their window) and ``drop`` shedding (shed arrivals are
removed; the optimiser then keeps :data:`~slidewise.optimizer.allocation.DROP_FLOOR`
of μ for every count window). The measured output rate counts results with
``ts`` in the second half of the run (windows filled); the model's rate uses
the engine's σ estimate. Output: ``allocation.json`` and ``allocation.png``.
"""

from __future__ import annotations

import time
from pathlib import Path

from slidewise.bench.common import machine_info, pyplot, save_png, write_json

SCENARIOS: dict[str, dict] = {
    "fig5": {
        "title": "Fig. 5: CPU limit (λa=800, λb=200, A=100, B=200, σ=0.01, μ=100)",
        "rates": (800, 200),
        "distinct": 100,
        "rows": (100, 200),
        "cpu_budget": 100,
        "memory_budget": None,
        "seconds": 120,
        "strategies": [
            ("MaxA", "max:A", "optimal"),
            ("MaxB", "max:B", "optimal"),
            ("prop. rates", "rates", "optimal"),
            ("prop. windows", "windows", "optimal"),
            ("equal", "equal", "optimal"),
            ("chosen", "optimal", "optimal"),
        ],
    },
    "fig6": {
        "title": "Fig. 6: memory limit (λa=10, λb=50, M=1000, σ=0.005)",
        "rates": (10, 50),
        "distinct": 200,
        "rows": (1000, 1000),
        "cpu_budget": None,
        "memory_budget": 1000,
        "seconds": 1200,
        "strategies": [
            ("MaxA", "optimal", "max:A"),
            ("MaxB", "optimal", "max:B"),
            ("prop. rates", "optimal", "rates"),
            ("inv. prop.", "optimal", "inverse"),
            ("equal", "optimal", "equal"),
            ("chosen", "optimal", "optimal"),
        ],
    },
    "fig7": {
        "title": "Fig. 7: CPU and memory limits (μ=10, M=100, σ=0.01; λa=λb=25)",
        "rates": (25, 25),
        "distinct": 100,
        "rows": (100, 100),
        "cpu_budget": 10,
        "memory_budget": 100,
        "seconds": 1200,
        "strategies": [
            ("MaxA/Maxλb", "max:B", "max:A"),
            ("MaxB/Maxλa", "max:A", "max:B"),
            ("MaxA/Maxλa", "max:A", "max:A"),
            ("MaxB/Maxλb", "max:B", "max:B"),
            ("equal", "equal", "equal"),
            ("chosen", "optimal", "optimal"),
        ],
    },
}


def _run(sc: dict, streams, cpu: str, memory: str, mode: str, seed: int) -> dict:
    import slidewise
    from slidewise.runtime.overload import OverloadOptions

    speed = float(sum(sc["rates"]))
    query = f"SELECT * FROM A [ROWS {sc['rows'][0]}], B [ROWS {sc['rows'][1]}] WHERE A.a = B.a"
    horizon = sc["seconds"] * speed
    half = horizon / 2
    late = [0]

    def count(df) -> None:
        late[0] += int((df["ts"] >= half).sum())

    started = time.perf_counter()
    r = slidewise.run(
        query,
        {"A": streams[0], "B": streams[1]},
        out=count,
        overload=OverloadOptions(cpu_budget=sc["cpu_budget"], memory_budget=sc["memory_budget"], speed=speed, shed=mode, cpu=cpu, memory=memory, seed=seed),
    )
    sh = r.stats["shedding"]
    alloc = sh["allocation"]
    return {
        "cpu": cpu,
        "memory": memory,
        "mode": mode,
        "measured_output_rate": round(late[0] / (sc["seconds"] / 2), 3),
        "whole_run_output_rate": sh["measured_output_rate"],
        "predicted_output_rate": alloc["predicted_output_rate"],
        "predicted_exact_rate": alloc["predicted_exact_rate"],
        "sigma_estimate": sh["sigma"],
        "results": r.stats["results"],
        "effective_rate": alloc["effective_rate"],
        "window": alloc["window"],
        "kept": sh["kept"],
        "shed": sh["shed"],
        "window_sampled_out": sh["window_sampled_out"],
        "notes": alloc["notes"],
        "seconds": round(time.perf_counter() - started, 3),
    }


def run_allocation_bench(out_dir: str | Path = "bench-results", *, scale: float = 1.0, seed: int = 0, scenarios: list[str] | None = None) -> dict:
    """Run the scenarios (``scale`` shortens the runs, e.g. 0.05 for a smoke test); write JSON + PNG."""
    from slidewise.runtime.generate import generate

    out_dir = Path(out_dir)
    report = {"experiment": "allocation", "paper": "Kang, Naughton & Viglas, ICDE 2003, §5.2, Figs. 5-7", "machine": machine_info(), "scale": scale, "scenarios": {}}
    summary = {}
    for name in scenarios or list(SCENARIOS):
        sc = dict(SCENARIOS[name])
        sc["seconds"] = max(10, int(sc["seconds"] * scale))
        n = int(sc["seconds"] * sum(sc["rates"]))
        streams = generate(list(sc["rates"]), [sc["distinct"]] * 2, n, seed=seed)
        modes = ["probe", "drop"] if sc["cpu_budget"] else ["probe"]
        runs = {}
        for label, cpu, memory in sc["strategies"]:
            runs[label] = {mode: _run(sc, streams, cpu, memory, mode, seed) for mode in modes}
        report["scenarios"][name] = {"title": sc["title"], "settings": {k: v for k, v in sc.items() if k not in ("strategies", "title")}, "tuples": n, "runs": runs}
        chosen, equal = runs["chosen"], runs["equal"]
        summary[name] = {
            mode: {
                "chosen": chosen[mode]["measured_output_rate"],
                "equal": equal[mode]["measured_output_rate"],
                "predicted_chosen": chosen[mode]["predicted_output_rate"],
                "predicted_equal": equal[mode]["predicted_output_rate"],
                "ratio": round(chosen[mode]["measured_output_rate"] / max(equal[mode]["measured_output_rate"], 1e-9), 3),
                "chosen_beats_equal": chosen[mode]["measured_output_rate"] > equal[mode]["measured_output_rate"],
            }
            for mode in modes
        }
    report["summary"] = summary
    out_dir.mkdir(parents=True, exist_ok=True)
    report["files"] = {"json": str(out_dir / "allocation.json"), "png": str(out_dir / "allocation.png")}
    write_json(out_dir / "allocation.json", report)
    plot(report, out_dir / "allocation.png")
    return report


def plot(report: dict, path: str | Path) -> Path:
    """One panel per scenario: measured (probe, drop) and predicted output rate per strategy."""
    plt = pyplot()
    names = list(report["scenarios"])
    fig, axes = plt.subplots(1, len(names), figsize=(6 * len(names), 5.4), squeeze=False)
    for ax, name in zip(axes[0], names):
        sc = report["scenarios"][name]
        labels = list(sc["runs"])
        series = [
            ("measured, probe shedding", "probe", "measured_output_rate", "#4c72b0"),
            ("measured, drop shedding", "drop", "measured_output_rate", "#55a868"),
            ("model (probe)", "probe", "predicted_output_rate", "#c0c0c0"),
        ]
        series = [s for s in series if all(s[1] in sc["runs"][lb] for lb in labels)]
        width = 0.8 / len(series)
        for k, (legend, mode, key, colour) in enumerate(series):
            xs = [i + (k - (len(series) - 1) / 2) * width for i in range(len(labels))]
            ys = [sc["runs"][lb][mode][key] or 0 for lb in labels]
            ax.bar(xs, ys, width, label=legend, color=colour)
        ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right", fontsize=8)
        ax.set_ylabel("join results per second (steady state)")
        ax.set_title(sc["title"], fontsize=9)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=3, frameon=False)
    m = report["machine"]
    fig.suptitle(f"slidewise bench allocation — Kang et al. §5.2 (scale {report['scale']}); {m.get('cpu_model', m.get('machine', ''))}", fontsize=10)
    fig.tight_layout()
    return save_png(fig, path)
