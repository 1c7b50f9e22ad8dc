"""``slidewise bench frequent``: Golab's thesis Fig. 6.3 (Algorithm 6's accuracy) and its speed against exact counts.

Accuracy (Fig. 6.3): a count window of ``N`` tuples sliding by one
sub-window, ``b`` = 20, 100, 500 sub-windows, ``k`` = 1..10, over the
bundled Zeek sample (source hosts, destination hosts, DNS query names; see
:mod:`slidewise.bench.update_patterns_inputs`) and a generated Zipf stream.
Per evaluation with a full window, Algorithm 6
(:mod:`slidewise.synopses.frequent`) and the exact baseline (same δ) run side
by side; averaged over evaluations:

* ``delta`` — the threshold δ = Σ δᵢ;
* ``over`` — items whose true window frequency exceeds δ;
* ``recall`` — the share of those Algorithm 6 reports as guaranteed, over
  all evaluations (None when no item exceeds δ; it never reports another
  item: no false positive);
* ``space`` — counters held at the peak (summary entries, global counters, δᵢ);
* ``rel_error`` — mean (true − reported) / true over the guaranteed items.

The Misra–Gries variant (:mod:`slidewise.synopses.misra_gries`) is measured
the same way. Throughput: ``[ROWS 100000 SLIDE 1000]``, k = 5, over
1,000,000 Zipf tuples, Algorithm 6 against the exact baseline, with the
peak state of each.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from slidewise.bench.common import machine_info, pyplot, save_png, write_json
from slidewise.cql import parse_any
from slidewise.plan.frequent import FrequentQuery
from slidewise.runtime.frequent import FrequentRun
from slidewise.synopses.frequent import ENTRY_BYTES

__all__ = ["accuracy", "datasets", "run_frequent_bench", "summary", "throughput", "true_counts"]

KS = tuple(range(1, 11))
BS = (20, 100, 500)
CHUNK = 65536


def _query(n: int, slide: int, k: int) -> FrequentQuery:
    q = parse_any(f"SELECT RSTREAM FREQUENT(S.a, {k}) FROM S [ROWS {n} SLIDE {slide}]")
    assert isinstance(q, FrequentQuery)
    return q


def _run(q: FrequentQuery, items: np.ndarray, kind: str) -> tuple[list, FrequentRun]:
    """Every evaluation's answer as (ts, items, frequency, threshold, guaranteed) columns, and the run."""
    out: list = []
    run = FrequentRun(q, out.append, kind=kind)
    ts = np.arange(len(items), dtype=np.int64)
    for i in range(0, len(items), CHUNK):
        run.add(ts[i : i + CHUNK], {"a": items[i : i + CHUNK]})
    run.finish()
    return out, run


def _per_evaluation(out: list) -> dict[int, tuple[np.ndarray, np.ndarray, int, np.ndarray]]:
    if not out:
        return {}
    cols = {c: np.concatenate([o[c] for o in out]) for c in ("ts", "a", "frequency", "threshold", "guaranteed")}
    cuts = np.flatnonzero(np.diff(cols["ts"])) + 1
    res = {}
    for a, z in zip(np.concatenate(([0], cuts)), np.concatenate((cuts, [len(cols["ts"])]))):
        res[int(cols["ts"][a])] = (cols["a"][a:z], cols["frequency"][a:z], int(cols["threshold"][a]), cols["guaranteed"][a:z])
    return res


def true_counts(items: np.ndarray, n: int, b: int) -> dict[int, dict]:
    """Every evaluation's true window frequencies (the exact baseline with k above any number of items)."""
    out, _ = _run(_query(n, n // b, 1 << 40), items, "exact")
    return {t: dict(zip(its.tolist(), freq.tolist())) for t, (its, freq, _, _) in _per_evaluation(out).items() if t >= n - 1}


def accuracy(items: np.ndarray, n: int, b: int, k: int, kind: str = "topk", true: dict | None = None) -> dict:
    """Fig. 6.3's measures for one (window ``n``, ``b``, ``k``), over the evaluations with a full window;
    ``true``: :func:`true_counts` of the same ``items``, ``n``, ``b`` (computed if not given)."""
    true = true_counts(items, n, b) if true is None else true
    approx_out, approx = _run(_query(n, n // b, k), items, kind)
    approx_ev = _per_evaluation(approx_out)
    deltas, overs, found, errors = [], [], 0, []
    for t, counts in true.items():
        a_items, a_freq, delta, guaranteed = approx_ev[t]
        over = {i for i, f in counts.items() if f > delta}
        got = dict(zip(a_items[guaranteed].tolist(), a_freq[guaranteed].tolist()))
        assert set(got) <= over, "a false positive"
        deltas.append(delta)
        overs.append(len(over))
        found += len(got)
        errors.extend((counts[i] - f) / counts[i] for i, f in got.items())
    return {
        "k": k,
        "b": b,
        "delta": float(np.mean(deltas)),
        "over": float(np.mean(overs)),
        "recall": found / sum(overs) if sum(overs) else None,
        "space": approx.counters.peak_bytes // ENTRY_BYTES,
        "rel_error": float(np.mean(errors)) if errors else 0.0,
        "evaluations": len(deltas),
    }


def datasets(zipf_tuples: int = 100_000, seed: int = 0) -> dict[str, tuple[np.ndarray, int]]:
    """Item streams and their window sizes: the Zeek sample's hosts and query names, a Zipf stream."""
    import pandas as pd

    from slidewise.bench.update_patterns_inputs import load_links, sample_dir

    trace = load_links(None, n_links=1)[0]["Link1"]
    dns = pd.read_csv(sample_dir() / "dns.csv", usecols=["query"], dtype={"query": str}).dropna()
    rng = np.random.default_rng(seed)
    return {
        "zeek source hosts": (trace["src"].to_numpy(object), 5000),
        "zeek destination hosts": (trace["dst"].to_numpy(object), 5000),
        "zeek DNS query names": (dns["query"].to_numpy(object), 2000),
        "zipf(1.1)": (rng.zipf(1.1, zipf_tuples).astype(np.int64), max(zipf_tuples // 10, 1000)),
    }


def throughput(tuples: int = 1_000_000, window: int = 100_000, slide: int = 1000, k: int = 5, seed: int = 0) -> dict:
    """Tuples/s and peak state of Algorithm 6 and the exact baseline over a Zipf stream."""
    items = np.random.default_rng(seed).zipf(1.1, tuples).astype(np.int64)
    q = _query(window, slide, k)
    res = {"tuples": tuples, "window": window, "slide": slide, "k": k}
    for kind in ("topk", "exact"):
        started = time.perf_counter()
        _, run = _run(q, items, kind)
        seconds = time.perf_counter() - started
        res[kind] = {"seconds": round(seconds, 4), "tuples_per_s": round(tuples / seconds), "state_bytes_peak": run.counters.peak_bytes, "evaluations": run.evaluations}
    res["memory_ratio"] = res["topk"]["state_bytes_peak"] / max(res["exact"]["state_bytes_peak"], 1)
    res["speedup"] = res["exact"]["seconds"] / max(res["topk"]["seconds"], 1e-9)
    return res


def run_frequent_bench(out_dir: str | Path = "bench-results", *, tuples: int | None = None, zipf_tuples: int = 100_000, ks=KS, bs=BS, progress=None) -> dict:
    """Both experiments; writes ``frequent.json`` and ``frequent.png`` into ``out_dir``."""
    report: dict = {"machine": machine_info(), "ks": list(ks), "bs": list(bs), "accuracy": {}, "misra_gries": {}}
    for name, (items, n) in datasets(zipf_tuples).items():
        if progress:
            progress(f"{name}: {len(items):,} tuples, window {n}")
        rows, mg = [], []
        for b in bs:
            true = true_counts(items, n, b)
            rows += [accuracy(items, n, b, k, true=true) for k in ks]
            if b == bs[len(bs) // 2]:
                mg = [accuracy(items, n, b, k, "misra-gries", true=true) for k in ks]
        report["accuracy"][name] = {"tuples": len(items), "window": n, "rows": rows}
        report["misra_gries"][name] = mg
    if progress:
        progress("throughput")
    report["throughput"] = throughput(tuples or 1_000_000)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "frequent.json", report)
    plot(report, out / "frequent.png")
    return report


MEASURES = ("delta", "over", "recall", "space", "rel_error")


def summary(report: dict) -> dict:
    """The summary table's sections: per data set and b, each measure at k = 1, 5, 10; then the throughput."""

    def num(v) -> str:
        return "-" if v is None else f"{v:,.3g}" if abs(v) < 1000 else f"{v:,.0f}"

    out: dict = {}
    for name, d in report["accuracy"].items():
        out[name] = {"tuples": d["tuples"], "window": d["window"]} | {
            f"b {r['b']}, k {r['k']}": ", ".join(f"{m} {num(r[m])}" for m in MEASURES) for r in d["rows"] if r["k"] in (1, 5, 10)
        }
    t = report["throughput"]
    out["throughput"] = (
        {"Zipf tuples": t["tuples"], "window": f"[ROWS {t['window']} SLIDE {t['slide']}]", "k": t["k"]}
        | {kind: f"{t[kind]['tuples_per_s']:,} tuples/s, {t[kind]['seconds']:.3f} s, state {t[kind]['state_bytes_peak']:,} B" for kind in ("topk", "exact")}
        | {"memory ratio": f"{t['memory_ratio']:.4f}", "speedup": f"{t['speedup']:.2f}x"}
    )
    return out


def plot(report: dict, path: Path) -> Path:
    plt = pyplot()
    names = list(report["accuracy"])
    fig, axes = plt.subplots(len(names), len(MEASURES), figsize=(3.2 * len(MEASURES), 2.6 * len(names)), squeeze=False)
    for i, name in enumerate(names):
        rows = report["accuracy"][name]["rows"]
        for j, m in enumerate(MEASURES):
            ax = axes[i][j]
            for b in report["bs"]:
                pts = [(r["k"], r[m]) for r in rows if r["b"] == b and r[m] is not None]
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3, label=f"b={b}")
            ax.set_title(f"{name}: {m}", fontsize=8)
            ax.set_xlabel("k", fontsize=8)
            ax.tick_params(labelsize=7)
            if m == "space":
                ax.set_yscale("log")
    axes[0][0].legend(fontsize=7)
    t = report["throughput"]
    fig.suptitle(
        f"Algorithm 6 (Golab's thesis Fig. 6.3); {t['tuples']:,} Zipf tuples: top-k {t['topk']['tuples_per_s']:,}/s, "
        f"exact {t['exact']['tuples_per_s']:,}/s, memory ratio {t['memory_ratio']:.3f}",
        fontsize=9,
    )
    fig.tight_layout()
    return save_png(fig, path)
