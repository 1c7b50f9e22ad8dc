"""``slidewise bench wjoin``'s baseline experiments (:mod:`slidewise.bench.wjoin` runs them):

* ``baselines`` (Hammad, Aref & Elmagarmid, "Stream Window Join", SSDBM 2003, §4.3 Fig. 7 and 8):
  2 to 4 streams at 1000 tuples/s, ``WINDOW = w`` and the chain of equalities; NLW-join and
  MW-join against the adapted ripple join, HW-join against the adapted XJoin, whose buffers are
  purged every ``purge`` arrivals only (the paper: every 10,000 tuples, a few windows' worth; here
  the operators' default). The paper: NLW-join and HW-join beat the ripple join and XJoin in
  every case, MW-join is best.
* ``iceis`` (a fragment of an ICEIS 2005 paper on windowed join operators): two streams at equal
  rates ``λ`` from 250 to 4000 tuples/s, ``WINDOW = w``, ``A.k = B.k`` over ``iceis_keys`` values;
  the windowed nested-loops joins invalidating the opposite window (``wnl-join``) or their own
  (``wnl-own``) and the circular-buffer hash join (``whj``). Per rate: the work per second (tuples
  touched: probes, inserts, invalidations; ``comparisons`` of the operators), the results per
  second, and the tuples the windows hold (mean and peak over arrivals). Fits of the work per
  second against ``λ``: the log-log slope (1: linear, 2: quadratic) and ``a·λ + b·λ²``. The paper:
  the hash join's cost grows linearly with the input rate, the nested-loops join's quadratically.
  One more point with a slow stream (B at 10 tuples/s) gives the memory of the invalidation
  strategies: invalidating the opposite window holds the fast stream's tuples until the slow
  stream delivers.

Plotted to ``wjoin_baselines.png``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from slidewise.bench.common import pyplot, save_png
from slidewise.bench.wjoin import _batches, _point, generate, measure, query_text
from slidewise.cql.wjoin import parse_wjoin
from slidewise.operators.wjoin import WJOINS

__all__ = ["BASELINES", "ICEIS", "ICEIS_RATES", "baselines", "fit", "iceis", "plot", "summarize_baselines"]

BASELINES = ("mw-join", "nlw-join", "ripple-join", "hw-join", "xjoin")
ICEIS = ("wnl-join", "wnl-own", "whj")
ICEIS_RATES = (250.0, 500.0, 1000.0, 2000.0, 4000.0)


def baselines(*, tuples: int, max_streams: int, window: int, keys: int, seed: int, say) -> list[dict]:
    """Fig. 7 and 8: the W-joins against the adapted ripple join and XJoin (module docstring)."""
    points = []
    for n in range(2, min(max_streams, 4) + 1):
        say(f"baselines: n={n}")
        point = _point({"n": n, "purge": WJOINS["ripple-join"].purge}, query_text(n, f"WINDOW = {window}"), [1000.0] * n, BASELINES, tuples, keys, seed)
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
    for a in ICEIS:
        run = measure(a, text, data)
        run["work_per_s"] = round(run["comparisons_per_tuple"] * tuples / seconds, 1)
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
    fits = {a: fit([p["rate_per_s"] for p in sweep], [p["runs"][a]["work_per_s"] for p in sweep]) for a in ICEIS}
    return {"keys": keys, "window_ms": window, "sweep": sweep, "slow_stream": slow, "fits": fits}


def _beats(points: list[dict], fast: str, slow: str, key: str) -> bool:
    return all(p["runs"][fast][key] < p["runs"][slow][key] for p in points)


def summarize_baselines(report: dict) -> dict:
    """The papers' conclusions on the baselines and the ICEIS operators, as measured."""
    pts, ice = report["baselines"], report["iceis"]
    fields = ("us_per_tuple", "comparisons_per_tuple")
    slow = ice["slow_stream"]["runs"]
    return {
        "baselines (Fig. 7/8): ripple / NLW, XJoin / HW, n = 2..": {
            "service time": [
                [round(p["runs"]["ripple-join"]["us_per_tuple"] / p["runs"]["nlw-join"]["us_per_tuple"], 2) for p in pts],
                [round(p["runs"]["xjoin"]["us_per_tuple"] / p["runs"]["hw-join"]["us_per_tuple"], 2) for p in pts],
            ],
            "comparisons": [
                [round(p["runs"]["ripple-join"]["comparisons_per_tuple"] / max(p["runs"]["nlw-join"]["comparisons_per_tuple"], 1e-9), 2) for p in pts],
                [round(p["runs"]["xjoin"]["comparisons_per_tuple"] / max(p["runs"]["hw-join"]["comparisons_per_tuple"], 1e-9), 2) for p in pts],
            ],
        },
        "ICEIS work per second against rate (log-log slope)": {a: f["loglog_slope"] for a, f in ice["fits"].items()},
        "ICEIS memory, slow stream (mean tuples held)": {a: r["mean_held"] for a, r in slow.items()},
        "baseline conclusions (service time, comparisons)": {
            "NLW beats ripple join (Fig. 7)": [_beats(pts, "nlw-join", "ripple-join", f) for f in fields],
            "HW beats XJoin (Fig. 8)": [_beats(pts, "hw-join", "xjoin", f) for f in fields],
            "MW beats ripple join (Fig. 7)": [_beats(pts, "mw-join", "ripple-join", f) for f in fields],
        },
        "conclusions (counted work)": {
            "circular-buffer hash join linear in rate": ice["fits"]["whj"]["loglog_slope"] < 1.3,
            "nested-loops join quadratic in rate": ice["fits"]["wnl-join"]["loglog_slope"] > 1.6,
            "hash join beats nested loops at every rate": all(p["runs"]["whj"]["work_per_s"] < p["runs"]["wnl-join"]["work_per_s"] for p in ice["sweep"]),
            "own invalidation holds less with a slow stream": slow["wnl-own"]["mean_held"] < slow["wnl-join"]["mean_held"],
        },
        "answers agree": all(p["answers_agree"] for p in pts + ice["sweep"] + [ice["slow_stream"]]),
    }


def plot(report: dict, path: Path) -> Path:
    """Fig. 7/8's comparisons per tuple against the streams; the ICEIS work per second against rate."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    ax = axes[0]
    pts = report["baselines"]
    for a in BASELINES:
        ax.plot([p["n"] for p in pts], [p["runs"][a]["comparisons_per_tuple"] for p in pts], marker="o", label=a)
    ax.set_yscale("log")
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
    ax.set_xlabel("input rate per stream (tuples/s)")
    ax.set_ylabel("tuples touched per second")
    ax.set_title("windowed NL join vs circular-buffer hash join (ICEIS 2005)", fontsize=9)
    ax.legend(fontsize=8)
    for ax in axes:
        ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    return save_png(fig, path)
