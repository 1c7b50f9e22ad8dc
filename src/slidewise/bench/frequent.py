"""``slidewise bench frequent``: Golab's thesis Fig. 6.3 (Algorithm 6's accuracy) and its speed against exact counts.

Accuracy (Fig. 6.3, in the thesis's geometry, §6.3.1): ``b`` is the
sub-window *size* — 20, 100, 500 tuples — and ``k`` = 1..10. A trial is one
count window of ``N`` tuples from a random starting point of the stream
(:data:`TRIALS` of them, the same for every ``b`` and ``k``); Algorithm 6
(:func:`slidewise.synopses.frequent.summarize` per sub-window,
:class:`~slidewise.synopses.frequent.WindowCounters` over the ``N / b`` of
them) answers it and the true window frequencies are counted beside it. The
streams: a generated Zipf(1.1) stream of 1,000,000 items with N = 100,000
(the thesis's window: 5000, 1000 and 200 sub-windows), and the bundled Zeek
sample (:mod:`slidewise.bench.update_patterns_inputs`; 18,497 connections,
7,243 DNS queries) with N = 10,000 for source and destination hosts and
N = 5,000 for DNS query names — about half of each stream, so that starting
points differ. Averaged over the trials:

* ``delta`` — the threshold δ = Σ δᵢ (Fig. 6.3 (a));
* ``over`` — items whose true window frequency exceeds δ (b);
* ``reported`` — items Algorithm 6 reports above δ (c), never a false positive;
* ``recall`` — reported / over, pooled over the trials (d; None when no
  item exceeds δ, as at k = 1, where δ is at least every item's count);
* ``space`` — counters held (summary entries, global counters, δᵢ) (e);
* ``rel_error`` — mean (true − reported) / true over the reported items (f).

Per data set and ``b`` the JSON holds the least-squares slope of recall and
of the relative error against ``k``. The Misra–Gries variant
(:mod:`slidewise.synopses.misra_gries`) is measured the same way at the
middle ``b``. Throughput: ``[ROWS 100000 SLIDE 1000]``, k = 5, over
1,000,000 Zipf tuples through the query engine, Algorithm 6 against the exact
baseline, with the peak state of each.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from slidewise.bench.common import machine_info, pyplot, save_png, write_json
from slidewise.cql import parse_any
from slidewise.plan.frequent import FrequentQuery
from slidewise.runtime.frequent import FrequentRun
from slidewise.synopses.frequent import WindowCounters, summarize

__all__ = ["accuracy", "datasets", "run_frequent_bench", "starting_points", "summary", "throughput"]

KS = tuple(range(1, 11))
#: sub-window sizes in tuples (the thesis's b)
BS = (20, 100, 500)
#: random starting points (windows) per data set
TRIALS = 50
CHUNK = 65536


def _query(n: int, slide: int, k: int) -> FrequentQuery:
    q = parse_any(f"SELECT RSTREAM FREQUENT(S.a, {k}) FROM S [ROWS {n} SLIDE {slide}]")
    assert isinstance(q, FrequentQuery)
    return q


def _run(q: FrequentQuery, items: np.ndarray, kind: str) -> FrequentRun:
    run = FrequentRun(q, lambda _cols: None, kind=kind)
    ts = np.arange(len(items), dtype=np.int64)
    for i in range(0, len(items), CHUNK):
        run.add(ts[i : i + CHUNK], {"a": items[i : i + CHUNK]})
    run.finish()
    return run


def starting_points(length: int, n: int, trials: int, seed: int = 0) -> np.ndarray:
    """``trials`` random starting points of a window of ``n`` tuples in a stream of ``length``."""
    return np.random.default_rng(seed).integers(0, length - n + 1, trials)


def _slope(ks: list[int], ys: list) -> float | None:
    pts = [(k, y) for k, y in zip(ks, ys) if y is not None]
    return float(np.polyfit([p[0] for p in pts], [p[1] for p in pts], 1)[0]) if len(pts) > 1 else None


def accuracy(items: np.ndarray, n: int, b: int, ks, starts: np.ndarray, kind: str = "topk") -> list[dict]:
    """Fig. 6.3's measures for window ``n``, sub-window size ``b`` and each of ``ks``, averaged over the
    windows from ``starts``; ``items``: integer codes. One ranked summary per window serves every ``k``
    (:meth:`~slidewise.synopses.frequent.Summaries.top`; Misra–Gries summarises per ``k``)."""
    sub = np.arange(n, dtype=np.int64) // b
    acc: dict[int, dict] = {k: {"delta": [], "over": [], "found": 0, "space": [], "errors": []} for k in ks}
    for s in starts.tolist():
        window = items[s : s + n]
        true = np.bincount(window)
        ranked = summarize(sub, window, max(ks), "exact") if kind == "topk" else None
        for k in ks:
            counters = WindowCounters(k)
            counters.extend(ranked.top(k) if ranked is not None else summarize(sub, window, k, kind))
            ans = counters.answer()
            got, freq = ans.items[ans.guaranteed].astype(np.int64), ans.frequency[ans.guaranteed]
            assert (true[got] > ans.threshold).all(), "a false positive"
            a = acc[k]
            a["delta"].append(ans.threshold)
            a["over"].append(int(np.count_nonzero(true > ans.threshold)))
            a["found"] += len(got)
            a["space"].append(counters.space()[0])
            a["errors"].extend(((true[got] - freq) / true[got]).tolist())
    return [
        {
            "k": k,
            "b": b,
            "sub_windows": n // b,
            "delta": float(np.mean(a["delta"])),
            "over": float(np.mean(a["over"])),
            "reported": a["found"] / len(starts),
            "recall": a["found"] / sum(a["over"]) if sum(a["over"]) else None,
            "space": float(np.mean(a["space"])),
            "rel_error": float(np.mean(a["errors"])) if a["errors"] else 0.0,
            "trials": len(starts),
        }
        for k, a in acc.items()
    ]


def datasets(zipf_tuples: int = 1_000_000, seed: int = 0) -> dict[str, tuple[np.ndarray, int]]:
    """Item streams as integer codes and their window sizes: the Zeek sample's hosts and query names, a Zipf stream."""
    import pandas as pd

    from slidewise.bench.update_patterns_inputs import load_links, sample_dir

    trace = load_links(None, n_links=1)[0]["Link1"]
    dns = pd.read_csv(sample_dir() / "dns.csv", usecols=["query"], dtype={"query": str}).dropna()
    zipf = np.random.default_rng(seed).zipf(1.1, zipf_tuples)
    streams = {
        "zeek source hosts": (trace["src"].to_numpy(object), 10_000),
        "zeek destination hosts": (trace["dst"].to_numpy(object), 10_000),
        "zeek DNS query names": (dns["query"].to_numpy(object), 5000),
        "zipf(1.1)": (zipf, min(100_000, zipf_tuples // 2)),
    }
    return {name: (np.unique(v, return_inverse=True)[1].reshape(-1).astype(np.int64), n) for name, (v, n) in streams.items()}


def throughput(tuples: int = 1_000_000, window: int = 100_000, slide: int = 1000, k: int = 5, seed: int = 0) -> dict:
    """Tuples/s and peak state of Algorithm 6 and the exact baseline over a Zipf stream."""
    items = np.random.default_rng(seed).zipf(1.1, tuples).astype(np.int64)
    q = _query(window, slide, k)
    res = {"tuples": tuples, "window": window, "slide": slide, "k": k}
    for kind in ("topk", "exact"):
        started = time.perf_counter()
        run = _run(q, items, kind)
        seconds = time.perf_counter() - started
        res[kind] = {"seconds": round(seconds, 4), "tuples_per_s": round(tuples / seconds), "state_bytes_peak": run.counters.peak_bytes, "evaluations": run.evaluations}
    res["memory_ratio"] = res["topk"]["state_bytes_peak"] / max(res["exact"]["state_bytes_peak"], 1)
    res["speedup"] = res["exact"]["seconds"] / max(res["topk"]["seconds"], 1e-9)
    return res


def run_frequent_bench(
    out_dir: str | Path = "bench-results", *, tuples: int | None = None, zipf_tuples: int = 1_000_000, trials: int = TRIALS, ks=KS, bs=BS, progress=None
) -> dict:
    """Both experiments; writes ``frequent.json`` and ``frequent.png`` into ``out_dir``."""
    report: dict = {"machine": machine_info(), "ks": list(ks), "bs": list(bs), "trials": trials, "accuracy": {}, "misra_gries": {}}
    for i, (name, (items, n)) in enumerate(datasets(zipf_tuples).items()):
        if progress:
            progress(f"{name}: {len(items):,} tuples, window {n:,}, {trials} trials")
        starts = starting_points(len(items), n, trials, seed=i)
        rows = [r for b in bs for r in accuracy(items, n, b, ks, starts)]
        slopes = {str(b): {m: _slope(list(ks), [r[m] for r in rows if r["b"] == b]) for m in ("recall", "rel_error")} for b in bs}
        report["accuracy"][name] = {"tuples": len(items), "window": n, "rows": rows, "slopes": slopes}
        report["misra_gries"][name] = accuracy(items, n, bs[len(bs) // 2], ks, starts, "misra-gries")
    if progress:
        progress("throughput")
    report["throughput"] = throughput(tuples or 1_000_000)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "frequent.json", report)
    plot(report, out / "frequent.png")
    return report


MEASURES = ("delta", "over", "reported", "recall", "space", "rel_error")


def summary(report: dict) -> dict:
    """The summary table's sections: per data set and b, each measure at k = 1, 5, 10; then the throughput."""

    def num(v) -> str:
        return "-" if v is None else f"{v:,.3g}" if abs(v) < 1000 else f"{v:,.0f}"

    out: dict = {}
    for name, d in report["accuracy"].items():
        out[name] = {"tuples": d["tuples"], "window": d["window"], "trials": report["trials"]} | {
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
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3, label=f"b={b} ({report['accuracy'][name]['window'] // b} sub-windows)")
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
