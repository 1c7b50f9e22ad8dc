"""``slidewise bench sharing``: many periodic aggregation queries, shared synopses vs one by one.

The workload has the shape of the experiments of Golab's thesis (§8.5) on
sharing synopses: one stream of network flows (``src``, ``dst``, ``proto``,
``port``, ``bytes``; ``tuples`` of them, 10 per time unit) and N queries
(default 40, 80, 160, 240), each an aggregate of bandwidth (SUM, COUNT, MAX or
MEDIAN of ``bytes``) per source, destination, pair, protocol or port over a
window of 20–100 time units (``RANGE 19`` .. ``RANGE 99``, steps of 5) that
slides by 1 to half the window, drawn with a fixed seed.

Each N runs in this process ``slidewise.run_many(..., shared=False)``
(every query alone on the pane path) and ``slidewise.run_many(...)`` (queries
that share state share it): once each untimed (the answers, and the warm-up),
then alternately and repeatedly (both see the same machine load), no run
holding another's results. Throughput is input tuples × queries per second; ``speedup``
and ``speedup_cpu`` the ratios of the best wall and CPU times; the load
average is recorded. Every query's rows must be identical in both runs
(checked, untimed). Results go to ``sharing.json`` (``kernels``: numba or numpy, :mod:`slidewise.kernels`); its ``acceptance`` says
whether 160 queries run at least 5x faster shared (both ratios).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pandas as pd

from slidewise import kernels
from slidewise.bench.common import machine_info, write_json

__all__ = ["queries", "run_sharing_bench", "stream", "summary"]

#: group-by attributes of the queries (one set drawn per query)
KEYS = (("src",), ("dst",), ("src", "dst"), ("proto",), ("port",))
AGGS = ("SUM(L.bytes)", "COUNT(*)", "MAX(L.bytes)", "MEDIAN(L.bytes)")
COUNTS = (40, 80, 160, 240)


def stream(tuples: int, seed: int = 0) -> pd.DataFrame:
    """Flows, 10 per time unit: 200 sources and destinations (skewed), 3 protocols, 20 ports."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "ts": np.arange(tuples, dtype=np.int64) // 10,
            "src": np.minimum(rng.zipf(1.3, tuples), 200).astype(np.int64),
            "dst": rng.integers(0, 200, tuples),
            "proto": rng.integers(0, 3, tuples),
            "port": rng.integers(0, 20, tuples),
            "bytes": rng.integers(40, 1500, tuples),
        }
    )


def queries(n: int, seed: int = 1) -> dict[str, str]:
    """``n`` named queries of the workload."""
    rng = np.random.default_rng(seed)
    out = {}
    for i in range(n):
        keys = KEYS[rng.integers(len(KEYS))]
        agg = AGGS[rng.integers(len(AGGS))]
        size = int(rng.choice(np.arange(20, 101, 5)))
        slide = int(rng.integers(1, size // 2 + 1))
        cols = ", ".join(f"L.{k}" for k in keys)
        out[f"q{i:03d}"] = f"SELECT RSTREAM({cols}, {agg} AS v) FROM L [RANGE {size - 1} SLIDE {slide}] GROUP BY {cols}"
    return out


def _timed(qs: dict, frame: pd.DataFrame, shared: bool):
    import slidewise

    t, cpu = time.perf_counter(), time.process_time()
    res = slidewise.run_many(qs, {"L": frame}, shared=shared)
    return res, time.perf_counter() - t, time.process_time() - cpu


def _rows(frame: pd.DataFrame) -> tuple:
    """Columns and rows, nulls (None, NaN) as None, numbers as Python numbers."""
    return tuple(frame.columns), [tuple(None if v is None or v != v else v for v in r) for r in frame.astype(object).itertuples(index=False, name=None)]


def _load() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:  # pragma: no cover - no load average on this platform
        return None


def run_sharing_bench(tuples: int = 200_000, counts=COUNTS, out_dir: str | Path = "bench-results", repeats: int = 3) -> dict:
    """Shared vs one by one for each number of queries in ``counts``; writes ``sharing.json``.

    Each N first runs each mode once untimed (answers compared, then dropped; the warm-up of both), then
    ``repeats`` times per mode, alternating (alone, shared, shared, alone, ...) so that a change of the
    machine's load weighs on both, no result held between runs; each mode's best wall and CPU times give
    ``speedup`` and ``speedup_cpu``. ``acceptance``: the 160-query point against the target of 5x."""
    frame = stream(tuples)
    points = []
    for n in counts:
        qs = queries(n)
        walls: dict[bool, list[float]] = {False: [], True: []}
        cpus: dict[bool, list[float]] = {False: [], True: []}
        load_before = _load()
        # untimed: one run of each mode for the answers (compared, then dropped) and as both modes' warm-up, so
        # that no timed run holds the other mode's results or pays the process's first allocations
        alone, together = (_timed(qs, frame, shared)[0] for shared in (False, True))
        same = all(_rows(alone.results[q].results) == _rows(together.results[q].results) for q in qs)
        info = {
            "synopses": len(together.stats["shared"]),
            "results": sum(r.stats["results"] for r in together.results.values()),
            "memory_saved_bytes": sum(g["memory_saved_bytes"] for g in together.stats["shared"]),
        }
        del alone, together
        for i in range(repeats):
            for shared in (False, True) if i % 2 == 0 else (True, False):
                _, wall, cpu = _timed(qs, frame, shared)
                walls[shared].append(wall)
                cpus[shared].append(cpu)
        alone_s, shared_s, alone_cpu, shared_cpu = min(walls[False]), min(walls[True]), min(cpus[False]), min(cpus[True])
        points.append(
            {
                "queries": n,
                "repeats": repeats,
                "alone_s": round(alone_s, 3),
                "shared_s": round(shared_s, 3),
                "alone_cpu_s": round(alone_cpu, 3),
                "shared_cpu_s": round(shared_cpu, 3),
                "alone_s_all": [round(x, 3) for x in walls[False]],
                "shared_s_all": [round(x, 3) for x in walls[True]],
                "speedup": round(alone_s / shared_s, 2),
                "speedup_cpu": round(alone_cpu / shared_cpu, 2),
                "alone_throughput": round(tuples * n / alone_s),
                "shared_throughput": round(tuples * n / shared_s),
                "identical": same,
                **info,
                "load_average": {"before": load_before, "after": _load()},
            }
        )
    report = {"benchmark": "sharing", "tuples": tuples, "machine": machine_info(), "kernels": kernels.backend(), "points": points, "acceptance": _acceptance(points)}
    write_json(Path(out_dir) / "sharing.json", report)
    return report


#: the acceptance point: this many queries at least this many times faster shared, identical answers
TARGET = (160, 5.0)


def _acceptance(points: list[dict]) -> dict | None:
    """Whether the 160-query point meets 5x (wall and CPU ratios of the same run, answers identical)."""
    n, target = TARGET
    p = next((p for p in points if p["queries"] == n), None)
    if p is None:
        return None
    return {
        "queries": n,
        "target_speedup": target,
        "speedup": p["speedup"],
        "speedup_cpu": p["speedup_cpu"],
        "identical": p["identical"],
        "met": bool(p["identical"] and p["speedup"] >= target and p["speedup_cpu"] >= target),
    }


def summary(report: dict) -> dict:
    """The summary table's sections: one per number of queries (time in s, throughput in tuples x queries / s)."""
    out: dict = {"tuples": report["tuples"]}
    for p in report["points"]:
        out[f"{p['queries']} queries"] = {
            "synopses": p["synopses"],
            "alone s": f"{p['alone_s']:.2f}",
            "shared s": f"{p['shared_s']:.2f}",
            "speedup": f"{p['speedup']:.1f}x",
            "speedup (CPU)": f"{p['speedup_cpu']:.1f}x",
            "alone tuples x queries/s": p["alone_throughput"],
            "shared tuples x queries/s": p["shared_throughput"],
            "identical": p["identical"],
        }
    return out
