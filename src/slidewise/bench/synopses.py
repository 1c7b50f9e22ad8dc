"""``slidewise bench synopses``: space and probe cost of the three window synopses against b.

Golab's thesis (§2.3.4) claims, for a window of b sub-windows (panes): the
running synopsis answers a subtractable aggregate from two running intervals;
the interval synopsis stores 2b intervals and reads about log b of them per
answer; the basic interval synopsis stores the b panes alone (half the space)
and reads all b.

For each b = 2, 4, ... up to ``max_b`` this bench builds the pane partials of
``windows + b − 1`` panes × ``groups`` groups (random values, 4 tuples per
cell) and answers the ``windows`` windows ``[k, k + b)`` with each synopsis of
:mod:`slidewise.synopses` (SUM through the running synopsis, MAX through the
interval and basic interval synopses). Measured per synopsis and b:

* ``cells`` / ``bytes`` — the partials the synopsis keeps for one window of b
  panes (rows × groups; bytes of every state component);
* ``probes`` — stored partials merged (or subtracted) per window answer,
  counted by an accumulator that counts the rows it is handed (mean and max
  over the windows; the interval synopsis's count depends on the offset);
* ``us_per_answer`` — best of ``rounds`` of one call answering every window,
  the synopsis already built (memoized), per window and group; ``build_us``
  the same with the build (prefix sums, dyadic levels) included.

Every answer is checked against a direct reduction of the panes. Results go to
``synopses.json`` and ``synopses.png``.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np

from slidewise.bench.common import machine_info, pyplot, save_png, write_json
from slidewise.operators.aggregates import Max, Sum
from slidewise.synopses import SYNOPSES, interval

__all__ = ["Counting", "print_summary", "run_synopses_bench"]

#: synopsis -> the aggregate it answers here
AGGREGATE = {"running": "SUM", "interval": "MAX", "basic interval": "MAX"}


class Counting:
    """An accumulator that counts the stored partial rows a synopsis probes: the second argument of
    :meth:`merge` (the first is the answer being built) and both arguments of :meth:`subtract`."""

    def __init__(self, inner):
        self.inner = inner
        self.subtractable = inner.subtractable
        self.probes = 0

    def merge(self, a, b):
        self.probes += len(b[0])
        return self.inner.merge(a, b)

    def subtract(self, a, b):
        self.probes += len(a[0]) + len(b[0])
        return self.inner.subtract(a, b)

    def prefix(self, state):
        return self.inner.prefix(state)

    def identity(self, shape):
        return self.inner.identity(shape)


def _partials(acc, panes: int, groups: int, rng) -> tuple:
    n = panes * groups * 4
    values = rng.integers(0, 1_000_000, n)
    return acc.partial(values, rng.integers(0, panes, n), rng.integers(0, groups, n), (panes, groups))


def _stored(name: str, acc, partials: tuple, b: int) -> tuple:
    """What ``name`` keeps for one window of ``b`` panes."""
    window = tuple(x[:b] for x in partials)
    if name == "running":
        return acc.prefix(window)  # b + 1 running intervals (the first empty)
    if name == "interval":
        levels = interval.levels(acc, window)  # b + b/2 + ... + 1 = 2b − 1 intervals
        return tuple(np.concatenate([lv[i] for lv in levels]) for i in range(len(window)))
    return window  # the b panes


def _expected(name: str, partials: tuple, b: int) -> np.ndarray:
    view = np.lib.stride_tricks.sliding_window_view(partials[0], b, axis=0)
    return view.sum(axis=-1) if name == "running" else view.max(axis=-1)


class DyadicMax(Max):
    """MAX through the thesis's dyadic intervals (the engine's MAX probes two overlapping intervals instead)."""

    idempotent = False


def measure(name: str, b: int, windows: int, groups: int, rounds: int, rng) -> dict:
    """One point: space, probes and time of synopsis ``name`` for windows of ``b`` panes."""
    acc = (Sum if name == "running" else DyadicMax)(np.dtype(np.int64))
    partials = _partials(acc, windows + b - 1, groups, rng)
    lo = np.arange(windows, dtype=np.int64)
    hi = lo + b
    stored = _stored(name, acc, partials, b)
    fn = SYNOPSES[name]
    memo: dict = {}
    t = time.perf_counter()
    state = fn(acc, partials, lo, hi, memo)  # builds (and memoizes) the synopsis
    build = time.perf_counter() - t
    best = math.inf
    for _ in range(max(1, rounds)):
        t = time.perf_counter()
        fn(acc, partials, lo, hi, memo)
        best = min(best, time.perf_counter() - t)
    per_window = []
    for k in range(windows):  # probes of each window alone
        counting = Counting(acc)
        fn(counting, partials, lo[k : k + 1], hi[k : k + 1], memo)
        per_window.append(counting.probes)
    probes = np.asarray(per_window)
    return {
        "b": b,
        "cells": int(stored[0].size),
        "bytes": int(sum(x.nbytes for x in stored)),
        "probes_mean": round(float(probes.mean()), 3),
        "probes_max": int(probes.max()),
        "us_per_answer": round(best / (windows * groups) * 1e6, 4),
        "build_us_per_answer": round((build + best) / (windows * groups) * 1e6, 4),
        "correct": bool(np.array_equal(state[0], _expected(name, partials, b))),
    }


def run_synopses_bench(out_dir: str | Path = "bench-results", *, max_b: int = 1024, windows: int = 256, groups: int = 16, rounds: int = 3, seed: int = 0) -> dict:
    """Every synopsis for b = 2, 4, ... ``max_b``; writes ``synopses.json`` and ``synopses.png``."""
    rng = np.random.default_rng(seed)
    bs = [2**i for i in range(1, int(math.log2(max_b)) + 1)]
    points = {name: [measure(name, b, windows, groups, rounds, rng) for b in bs] for name in SYNOPSES}
    report = {
        "benchmark": "synopses",
        "windows": windows,
        "groups": groups,
        "rounds": rounds,
        "aggregate": AGGREGATE,
        "machine": machine_info(),
        "points": points,
        "summary": summarize(points),
    }
    out = Path(out_dir)
    write_json(out / "synopses.json", report)
    plot(report, out / "synopses.png")
    return report


def summarize(points: dict) -> dict:
    """The thesis's claims as measured: probes against log2 b and b, space of basic interval / interval."""
    inter, basic, run = points["interval"], points["basic interval"], points["running"]
    return {
        "interval probes / log2 b (mean, max)": [
            round(max(p["probes_mean"] / math.log2(p["b"]) for p in inter), 2),
            round(max(p["probes_max"] / math.log2(p["b"]) for p in inter), 2),
        ],
        "basic interval probes / b": round(max(p["probes_mean"] / p["b"] for p in basic), 2),
        "running probes (every b)": sorted({p["probes_max"] for p in run}),
        "basic interval / interval space": [round(p["cells"] / q["cells"], 3) for p, q in zip(basic, inter)],
        "answers correct": all(p["correct"] for pts in points.values() for p in pts),
    }


def print_summary(report: dict) -> None:
    """One row per b: probes, cells and microseconds per answer of each synopsis."""
    names = list(report["points"])
    print(
        f"{report['windows']} windows x {report['groups']} groups per b; probes = partials merged per answer "
        f"(mean); cells = partials kept per window; us = microseconds per answer and group"
    )
    print(f"{'b':>6} " + " ".join(f"{n + ' (' + AGGREGATE[n] + ')':>32}" for n in names))
    print(f"{'':>6} " + " ".join(f"{'probes':>10}{'cells':>10}{'us':>12}" for _ in names))
    for i, b in enumerate(p["b"] for p in report["points"][names[0]]):
        row = [report["points"][n][i] for n in names]
        print(f"{b:>6} " + " ".join(f"{p['probes_mean']:>10.2f}{p['cells']:>10,}{p['us_per_answer']:>12.4f}" for p in row))
    for key, value in report["summary"].items():
        print(f"  {key}: {value}")


def plot(report: dict, path: Path) -> Path:
    plt = pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    for name, pts in report["points"].items():
        b = [p["b"] for p in pts]
        for ax, key in zip(axes, ("probes_mean", "cells", "us_per_answer")):
            ax.plot(b, [p[key] for p in pts], marker="o", label=f"{name} ({AGGREGATE[name]})")
    for ax, label in zip(axes, ("probes (partials merged) per answer", "cells kept per window", "microseconds per answer and group")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("b (panes per window)")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.tight_layout(rect=(0, 0, 1, 0.94))
    fig.suptitle(f"Golab's thesis §2.3.4 synopses: {report['windows']} windows x {report['groups']} groups per b", fontsize=10)
    return save_png(fig, path)
