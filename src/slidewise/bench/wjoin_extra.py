"""``slidewise bench wjoin``'s baseline and further experiments (:mod:`slidewise.bench.wjoin` runs them):

* ``baselines`` (Hammad, Aref & Elmagarmid, "Stream Window Join", SSDBM 2003, §4.3 Fig. 7 and 8):
  2 to 4 streams at 1000 tuples/s, ``WINDOW = w`` and the chain of equalities; NLW-join and
  MW-join against the adapted ripple join, HW-join against the adapted XJoin, whose buffers are
  purged every ``purge`` arrivals only (the paper: every 10,000 tuples, a few windows' worth; here
  the operators' default). The paper: NLW-join and HW-join beat the ripple join and XJoin in
  every case, MW-join is best. All run columnar over a chunk of arrivals, so service time
  follows the comparisons plus a cost per chunk; a purge runs at the end of a chunk, so here the
  chunks are of the purge period.
* ``iceis`` (a fragment of an ICEIS 2005 paper on windowed join operators): two streams at equal
  rates ``λ`` from 250 to 4000 tuples/s, ``WINDOW = w``, ``A.k = B.k`` over ``iceis_keys`` values;
  the windowed nested-loops joins invalidating the opposite window (``wnl-join``) or their own
  (``wnl-own``) and the circular-buffer hash join (``whj``). Per rate: the work per second (tuples
  touched: probes, inserts, invalidations; ``comparisons`` of the operators), the results per
  second, and the tuples the windows hold (mean and peak over arrivals). Fits of the work per
  second, and of the service time per second of input, against ``λ``: the log-log slope (1:
  linear, 2: quadratic) and ``a·λ + b·λ²``. The paper:
  the hash join's cost grows linearly with the input rate, the nested-loops join's quadratically.
  One more point with a slow stream (B at 10 tuples/s) gives the memory of the invalidation
  strategies: invalidating the opposite window holds the fast stream's tuples until the slow
  stream delivers.
* ``rate_switch`` (Hammad et al., §4.3 Fig. 9c): four streams at 1000 tuples/s, then the same with
  stream D switching between 10 and 1000 tuples/s every 100 of its tuples; MW-join, NLW-join and
  HW-join. The paper: MW-join gains much from the slow phases (it spends them in Mode 1), NLW-join
  and HW-join little.
* ``path`` (Hammad et al., §5.3 Fig. 14): the path W-join ``DWINDOW(A, B) AND DWINDOW(B, C) AND
  DWINDOW(C, D)`` (one direction, A to D) with rates varying little (1000 to 500 tuples/s) or much
  (1000 to 10); NLW-join against LCA (on the completed constraints), MW-join for reference. The
  paper: NLW-join wins with small variations, LCA with large ones.

Plotted to ``wjoin_baselines.png``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from slidewise.bench.common import pyplot, save_png
from slidewise.bench.wjoin import MEASURES, _batches, _point, generate, measure_all, query_text
from slidewise.cql.wjoin import parse_wjoin
from slidewise.operators.wjoin import WJOINS

__all__ = ["BASELINES", "ICEIS", "ICEIS_RATES", "baselines", "fit", "generate_switching", "iceis", "path", "plot", "rate_switch", "summarize_baselines"]

BASELINES = ("mw-join", "nlw-join", "ripple-join", "hw-join", "xjoin")
ICEIS = ("wnl-join", "wnl-own", "whj")
ICEIS_RATES = (250.0, 500.0, 1000.0, 2000.0, 4000.0)


def baselines(*, tuples: int, max_streams: int, window: int, keys: int, seed: int, say) -> list[dict]:
    """Fig. 7 and 8: the W-joins against the adapted ripple join and XJoin (module docstring)."""
    points = []
    for n in range(2, min(max_streams, 4) + 1):
        say(f"baselines: n={n}")
        purge = WJOINS["ripple-join"].purge  # a purge runs at the end of a chunk: chunks of the purge period
        point = _point({"n": n, "purge": purge}, query_text(n, f"WINDOW = {window}"), [1000.0] * n, BASELINES, tuples, keys, seed, chunk=purge)
        points.append(point)
    return points


def _memory(algorithm: str, text: str, data: dict[str, np.ndarray]) -> dict:
    """One pass of a binary operator: the tuples its windows hold after each arrival."""
    op = WJOINS[algorithm](parse_wjoin(text))
    for chunk in _batches(data, 2):
        op.process(chunk)
    return {"mean_held": round(op.held / max(op.arrivals, 1), 2), "peak_held": op.peak}


def _iceis_point(rates: list[float], text: str, tuples: int, keys: int, seed: int) -> dict:
    data = generate(rates, tuples, keys, seed)
    seconds = (int(data["ts"][-1]) - int(data["ts"][0])) / 1000.0 or 1.0
    runs = {}
    for a, run in measure_all(ICEIS, text, data).items():
        run["work_per_s"] = round(run["comparisons_per_tuple"] * tuples / seconds, 1)
        run["us_per_s"] = round(run["us_per_tuple"] * tuples / seconds, 1)  # service time per second of input
        run["cpu_us_per_s"] = round(run["cpu_us_per_tuple"] * tuples / seconds, 1)
        run["results_per_s"] = round(run["results"] / seconds, 1)
        runs[a] = {**run, **_memory(a, text, data)}
    agree = len({(r["results"], r["checksum"]) for r in runs.values()}) == 1
    return {"rates_per_s": rates, "query": text, "runs": runs, "answers_agree": agree}


def fit(rates: list[float], costs: list[float]) -> dict:
    """``costs`` against ``rates``: the log-log slope, and ``a·λ + b·λ²`` (least squares) with the
    share of the quadratic term at the largest rate."""
    x, y = np.array(rates), np.array(costs)
    slope = float(np.polyfit(np.log(x), np.log(np.maximum(y, 1e-9)), 1)[0])
    (a, b), *_ = np.linalg.lstsq(np.stack([x, x * x], axis=1), y, rcond=None)
    top = a * x[-1] + b * x[-1] ** 2
    return {
        "loglog_slope": round(slope, 3),
        "a": float(f"{a:.4g}"),
        "b": float(f"{b:.4g}"),
        "quadratic_share_at_max": round(float(b * x[-1] ** 2 / top), 3) if top else 0.0,
    }


def iceis(*, tuples: int, window: int, keys: int, seed: int, say) -> dict:
    """The ICEIS 2005 operators: work against input rate, with fits, and memory (module docstring)."""
    text = query_text(2, f"WINDOW = {window}")
    sweep = []
    for rate in ICEIS_RATES:
        say(f"iceis: {rate:g} tuples/s per stream")
        sweep.append({"rate_per_s": rate, **_iceis_point([rate, rate], text, tuples, keys, seed)})
    say("iceis: slow stream (B at 10 tuples/s)")
    slow = _iceis_point([1000.0, 10.0], text, tuples, keys, seed)
    rates = [p["rate_per_s"] for p in sweep]
    fits = {a: fit(rates, [p["runs"][a]["work_per_s"] for p in sweep]) for a in ICEIS}
    time_fits = {key: {a: fit(rates, [p["runs"][a][f] for p in sweep]) for a in ICEIS} for key, f in (("service time", "us_per_s"), ("CPU time", "cpu_us_per_s"))}
    return {"keys": keys, "window_ms": window, "sweep": sweep, "slow_stream": slow, "fits": fits, "time_fits": time_fits}


def generate_switching(tuples: int, keys: int, seed: int, block: int = 100, rates: tuple[float, float] = (10.0, 1000.0)) -> dict[str, np.ndarray]:
    """Streams A, B, C at 1000 tuples/s and D alternating between ``rates`` every ``block`` of its tuples."""
    rng = np.random.default_rng(seed)
    ts = [np.cumsum(rng.exponential(1.0, tuples)) for _ in range(3)]
    gaps = np.concatenate([rng.exponential(1000.0 / rates[(b // block) % 2], block) for b in range(0, tuples, block)])
    ts.append(np.cumsum(gaps))
    t = np.concatenate(ts).astype(np.int64)
    s = np.repeat(np.arange(4), [len(x) for x in ts])
    order = np.lexsort([s, t])[:tuples]
    return {"ts": t[order], "stream": s[order], "k": rng.integers(0, keys, tuples)}


def _runs(text: str, data: dict[str, np.ndarray], algorithms: tuple[str, ...]) -> dict:
    runs = measure_all(algorithms, text, data)
    return {"runs": runs, "answers_agree": len({(r["results"], r["checksum"]) for r in runs.values()}) == 1}


def rate_switch(*, tuples: int, window: int, keys: int, seed: int, say) -> dict:
    """Fig. 9c: comparable rates against a rate-switching stream D (module docstring)."""
    text = query_text(4, f"WINDOW = {window}")
    algorithms = ("mw-join", "nlw-join", "hw-join")
    say("rate_switch: comparable rates")
    steady = {"query": text, **_runs(text, generate([1000.0] * 4, tuples, keys, seed), algorithms)}
    say("rate_switch: D switching between 10 and 1000 tuples/s")
    switching = {"query": text, **_runs(text, generate_switching(tuples, keys, seed), algorithms)}
    return {"comparable": steady, "switching": switching}


def path(*, tuples: int, window: int, keys: int, seed: int, say) -> list[dict]:
    """Fig. 14: the path W-join on NLW-join and LCA, small and large rate variations (module docstring)."""
    text = query_text(4, " AND ".join(f"DWINDOW({a}, {b}) = {window}" for a, b in ("AB", "BC", "CD")))
    points = []
    for kind, low in (("small", 500.0), ("large", 10.0)):
        say(f"path: {kind} rate variation")
        rates = [round(float(r), 1) for r in np.geomspace(1000.0, low, 4)]
        points.append({"variation": kind, "rates_per_s": rates, "query": text, **_runs(text, generate(rates, tuples, keys, seed), ("mw-join", "nlw-join", "lca"))})
    return points


def _beats(points: list[dict], fast: str, slow: str, key: str) -> bool:
    return all(p["runs"][fast][key] < p["runs"][slow][key] for p in points)


def summarize_baselines(report: dict) -> dict:
    """The papers' conclusions on the baselines and the ICEIS operators, as measured."""
    pts, ice = report["baselines"], report["iceis"]
    fields = tuple(f for _, f in MEASURES)
    slow = ice["slow_stream"]["runs"]
    st, sw = report["rate_switch"]["comparable"], report["rate_switch"]["switching"]
    return {
        "baselines (Fig. 7/8): ripple / NLW, XJoin / HW, n = 2..": {
            key: [[round(p["runs"][slow][f] / max(p["runs"][fast][f], 1e-9), 2) for p in pts] for slow, fast in (("ripple-join", "nlw-join"), ("xjoin", "hw-join"))]
            for key, f in MEASURES
        },
        "ICEIS work per second against rate (log-log slope)": {a: f["loglog_slope"] for a, f in ice["fits"].items()},
        **{f"ICEIS {key} per second of input against rate (log-log slope)": {a: f["loglog_slope"] for a, f in fits.items()} for key, fits in ice["time_fits"].items()},
        "ICEIS memory, slow stream (mean tuples held)": {a: r["mean_held"] for a, r in slow.items()},
        "baseline conclusions (service time, CPU time, comparisons)": {
            "NLW beats ripple join (Fig. 7)": [_beats(pts, "nlw-join", "ripple-join", f) for f in fields],
            "HW beats XJoin (Fig. 8)": [_beats(pts, "hw-join", "xjoin", f) for f in fields],
            "MW beats ripple join (Fig. 7)": [_beats(pts, "mw-join", "ripple-join", f) for f in fields],
        },
        "circular-buffer hash join linear in rate (service time, CPU time, counted work)": [
            *(fits["whj"]["loglog_slope"] < 1.3 for fits in ice["time_fits"].values()),
            ice["fits"]["whj"]["loglog_slope"] < 1.3,
        ],
        "conclusions (counted work)": {
            "circular-buffer hash join linear in rate": ice["fits"]["whj"]["loglog_slope"] < 1.3,
            "nested-loops join quadratic in rate": ice["fits"]["wnl-join"]["loglog_slope"] > 1.6,
            "hash join beats nested loops at every rate": all(p["runs"]["whj"]["work_per_s"] < p["runs"]["wnl-join"]["work_per_s"] for p in ice["sweep"]),
            "own invalidation holds less with a slow stream": slow["wnl-own"]["mean_held"] < slow["wnl-join"]["mean_held"],
        },
        "rate switch (Fig. 9c): switching / comparable": {key: {a: round(sw["runs"][a][key] / max(st["runs"][a][key], 1e-9), 2) for a in st["runs"]} for key in fields},
        "path W-join (Fig. 14): NLW / LCA, small and large rate variation": {
            key: [round(p["runs"]["nlw-join"][key] / max(p["runs"]["lca"][key], 1e-9), 2) for p in report["path"]] for key in fields
        },
        "answers agree": all(p["answers_agree"] for p in pts + ice["sweep"] + [ice["slow_stream"], st, sw] + report["path"]),
    }


def plot(report: dict, path: Path) -> Path:
    """Fig. 7/8's comparisons per tuple against the streams; the ICEIS work per second against
    rate; the service times of Fig. 9c and Fig. 14."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 4, figsize=(20, 4))
    ax = axes[0]
    pts = report["baselines"]
    for a in BASELINES:
        ax.plot([p["n"] for p in pts], [p["runs"][a]["comparisons_per_tuple"] for p in pts], marker="o", label=a)
    ax.set_yscale("log")
    ax.set_xticks([p["n"] for p in pts])
    ax.set_xlabel("streams")
    ax.set_ylabel("comparisons per tuple")
    ax.set_title(f"W-joins vs ripple join / XJoin, purge every {pts[0]['purge'] if pts else '?'} (Fig. 7/8)", fontsize=9)
    ax.legend(fontsize=8)
    ax = axes[1]
    ice = report["iceis"]
    for a in ICEIS:
        ax.plot(
            [p["rate_per_s"] for p in ice["sweep"]], [p["runs"][a]["work_per_s"] for p in ice["sweep"]], marker="o", label=f"{a} (slope {ice['fits'][a]['loglog_slope']})"
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(list(ICEIS_RATES), [f"{r:g}" for r in ICEIS_RATES])
    ax.minorticks_off()
    ax.set_xlabel("input rate per stream (tuples/s)")
    ax.set_ylabel("tuples touched per second")
    ax.set_title("windowed NL join vs circular-buffer hash join (ICEIS 2005)", fontsize=9)
    ax.legend(fontsize=8)
    bars = [
        (axes[2], "rate switch, 4 streams (Fig. 9c)", ["comparable", "switching"], [report["rate_switch"][k]["runs"] for k in ("comparable", "switching")]),
        (axes[3], "path W-join A to D (Fig. 14)", [f"{p['variation']} rate variation" for p in report["path"]], [p["runs"] for p in report["path"]]),
    ]
    for ax, title, labels, runs in bars:
        names = list(runs[0])
        for i, a in enumerate(names):
            ax.bar(np.arange(len(labels)) + i / (len(names) + 1), [r[a]["us_per_tuple"] for r in runs], width=1 / (len(names) + 1), label=a)
        ax.set_xticks(np.arange(len(labels)) + 0.5 - 1 / (len(names) + 1), labels)
        ax.set_yscale("log")
        ax.set_ylabel("service time per tuple (us)")
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=8)
    for ax in axes:
        ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    return save_png(fig, path)
