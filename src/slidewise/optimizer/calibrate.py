"""``slidewise calibrate``: measure the cost model's weight factors on this machine.

Paper: Kang, Naughton & Viglas, ICDE 2003 (seed 002) §4.2, "Estimating the
weight factors": each structure is run on a search-only workload (giving
``P_d``) and an insert/invalidate-only workload (giving ``I_d``) at several
loads, and the weights are fitted to the cost formulas (Eq. 3–6; the paper's
fitted values are Eq. 7).

Here each point times the operator's own code paths
(:class:`~slidewise.operators.joins.binary.BinaryJoin`) on two count windows
``[ROWS W]`` joined on ``a``, keys drawn from a large domain (probes find ~0
matches, so only search cost is measured; hash buckets hold
``bucket_size`` tuples on average):

* search-only: ``W`` tuples are preloaded into S2's window with structure
  ``d``; S1 tuples then probe it (:meth:`BinaryJoin.probe`), nothing is inserted;
* update-only: S2's window is full; further S2 tuples are inserted
  (:meth:`BinaryJoin.update`: one insertion plus one invalidation each).

Operations run in growing batches (:func:`time_batches`, garbage collector
off) until ``min_time`` seconds and ``MIN_OPS`` operations are measured; a
point is seconds per operation. The clock is the process CPU time
(``time.process_time``) by default, so that a busy machine's run-queue waits
are not counted, or wall time (``time.perf_counter``, ``--clock wall``); both
are recorded. For every structure, ``P_d`` and ``I_d`` are the least-squares slopes
(numpy, through the origin, as the paper's formulas have no constant term) of
seconds per operation against the touched tuples of :func:`search_touches` /
:func:`update_touches` over the window sizes ``sizes``.

The profile (JSON, default ``~/.config/slidewise/profile.json`` or
``$SLIDEWISE_PROFILE``) holds the weights (seconds per touched tuple), the
structure parameters, the measured points with their fit, and the machine;
:func:`slidewise.optimizer.binary.load_weights` reads it.
"""

from __future__ import annotations

import datetime as dt
import gc
import random
import time
from pathlib import Path

from slidewise.optimizer.binary import (METHOD_NAMES, METHODS, Structure, Weights,
                                        default_profile_path, search_touches, update_touches,
                                        weights_from_profile)

#: window sizes measured by default and with ``--quick``
DEFAULT_SIZES = (500, 2000, 8000)
QUICK_SIZES = (250, 1000, 4000)
#: join keys are drawn from [0, KEY_DOMAIN): probes rarely match
KEY_DOMAIN = 1 << 30
PROFILE_VERSION = 1
#: at least this many operations per point
MIN_OPS = 20
#: batches grow until one takes this long (seconds)
BATCH_TIME = 0.002


class Feed:
    """Fresh tuples in global order (increasing ``pos`` and ``ts``) with random keys."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.pos = 0

    def take(self, stream: int, n: int) -> list:
        from slidewise.model.batch import Tup

        out = []
        for _ in range(n):
            out.append(Tup(stream, self.pos, self.pos, 1, {"a": self.rng.randrange(KEY_DOMAIN)}))
            self.pos += 1
        return out


def _operator(method: str, window: int, structure: Structure):
    from slidewise.operators.joins.binary import BinaryJoin
    from slidewise.plan.expr import Col
    from slidewise.plan.query import Equality, JoinQuery, StreamRef, WindowSpec

    spec = WindowSpec("rows", window)
    q = JoinQuery((StreamRef("S1", "S1", spec), StreamRef("S2", "S2", spec)),
                  (Equality(Col(0, "a", "S1"), Col(1, "a", "S2")),))
    return BinaryJoin(q, directions="N" + method, bucket_size=structure.bucket_size,
                      node_size=structure.node_size)


CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}


def time_batches(run, next_batch, min_time: float, *, clock: str = "cpu",
                 min_ops: int = MIN_OPS, max_ops: int = 1_000_000) -> dict:
    """Time ``run(batch)`` over batches from ``next_batch(n)`` until ``min_time`` seconds are measured.

    Batches start at one operation and double while a batch takes less than
    ``BATCH_TIME``, so the clock's own cost stays negligible and slow
    operations are not over-sampled. ``clock="cpu"`` (default) is the process
    CPU time (:func:`time.process_time`): unlike wall time it does not count
    the waits of a busy machine's run queue; ``"wall"`` is
    :func:`time.perf_counter`. Both totals are returned; the batch is built
    outside the timed region and the garbage collector is off.
    """
    if clock not in CLOCKS:
        raise ValueError(f"clock must be one of {sorted(CLOCKS)}, got {clock!r}")
    timer, wall = CLOCKS[clock], time.perf_counter
    ops, total, total_wall, n = 0, 0.0, 0.0, 1
    enabled = gc.isenabled()
    gc.disable()
    try:
        while ops < max_ops and (total < min_time or ops < min_ops):
            batch = next_batch(n)
            t0, w0 = timer(), wall()
            run(batch)
            spent, spent_wall = timer() - t0, wall() - w0
            total, total_wall, ops = total + spent, total_wall + spent_wall, ops + len(batch)
            if spent < BATCH_TIME:
                n = min(2 * n, 4096)
    finally:
        if enabled:
            gc.enable()
    return {"seconds_per_op": total / ops, "wall_seconds_per_op": total_wall / ops,
            "operations": ops, "clock": clock}


def measure(method: str, window: int, workload: str, *, structure: Structure = Structure(),
            min_time: float = 0.05, seed: int = 0, clock: str = "cpu") -> dict:
    """One calibration point: seconds per search (``workload="search"``) or per update."""
    if workload not in ("search", "update"):
        raise ValueError(f"workload must be 'search' or 'update', got {workload!r}")
    op = _operator(method, window, structure)
    feed = Feed(seed)
    op.preload(feed.take(1, window))
    side = op.sides[1]
    before = side.index_comparisons()
    if workload == "search":
        def run(batch):
            for k in batch:
                op.probe(k)
        stream = 0
    else:
        def run(batch):
            for t in batch:
                op.update(t)
        stream = 1
    timing = time_batches(run, lambda n: feed.take(stream, n), min_time, clock=clock)
    touches = (search_touches if workload == "search" else update_touches)(method, window, structure)
    return {"method": method, "workload": workload, "window": window, "touches": touches,
            **timing,
            "comparisons_per_op": ((side.index_comparisons() - before) / timing["operations"]
                                   if side.tree else None)}


def fit(points: list[dict]) -> tuple[float, float]:
    """Least-squares slope through the origin of seconds per op on touches, and its relative RMS error."""
    import numpy as np

    x = np.array([p["touches"] for p in points], float)
    y = np.array([p["seconds_per_op"] for p in points], float)
    (slope,), *_ = np.linalg.lstsq(x[:, None], y, rcond=None)
    rel = np.sqrt(np.mean(((slope * x - y) / y) ** 2))
    return float(slope), float(rel)


def calibrate(sizes=DEFAULT_SIZES, *, structure: Structure = Structure(), min_time: float = 0.05,
              methods=METHODS, clock: str = "cpu", progress=None) -> dict:
    """Measure every method at every size on both workloads; return the profile dict."""
    points: list[dict] = []
    for m in methods:
        for w in sizes:
            for workload in ("search", "update"):
                p = measure(m, int(w), workload, structure=structure, min_time=min_time,
                            seed=len(points), clock=clock)
                points.append(p)
                if progress is not None:
                    progress(p)
    weights, quality = {}, {}
    for m in methods:
        P, p_err = fit([p for p in points if p["method"] == m and p["workload"] == "search"])
        I, i_err = fit([p for p in points if p["method"] == m and p["workload"] == "update"])
        weights[m] = {"P": P, "I": I}
        quality[m] = {"P_rel_rms_error": p_err, "I_rel_rms_error": i_err}
    from slidewise.bench.common import machine_info

    return {"version": PROFILE_VERSION, "unit": "seconds per touched tuple",
            "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "paper": "Kang, Naughton & Viglas, ICDE 2003, §4.2 (Eq. 3-7)",
            "structure": {"bucket_size": structure.bucket_size, "node_size": structure.node_size},
            "sizes": [int(w) for w in sizes], "min_time": min_time, "clock": clock,
            "weights": weights, "fit": quality, "points": points, "machine": machine_info()}


def save_profile(profile: dict, path: str | Path | None = None) -> Path:
    from slidewise.bench.common import write_json

    return write_json(Path(path).expanduser() if path else default_profile_path(), profile)


def profile_weights(profile: dict) -> Weights:
    return weights_from_profile(profile, source=f"calibrated {profile.get('created', '')}".strip())


def format_table(profile: dict) -> str:
    """The weights as a text table (µs per touched tuple, and relative to NLJ search)."""
    w, fitq = profile["weights"], profile["fit"]
    base = w.get("N", {}).get("P") or 1.0
    lines = [f"{'method':<14}{'P_d (µs)':>10}{'I_d (µs)':>10}{'P_d/P_n':>9}{'I_d/P_n':>9}"
             f"{'fit err P':>11}{'fit err I':>11}"]
    for m in w:
        lines.append(f"{m} {METHOD_NAMES[m]:<12}{w[m]['P'] * 1e6:>10.4f}{w[m]['I'] * 1e6:>10.4f}"
                     f"{w[m]['P'] / base:>9.2f}{w[m]['I'] / base:>9.2f}"
                     f"{fitq[m]['P_rel_rms_error']:>10.0%} {fitq[m]['I_rel_rms_error']:>10.0%}")
    s = profile["structure"]
    lines.append(f"(hash bucket size {s['bucket_size']:g}, tree node size {s['node_size']}; "
                 f"window sizes {', '.join(map(str, profile['sizes']))}; paper Eq. 7 for comparison: "
                 f"P = N 3e-4, H 5.5e-4, B 2.6e-4, T 2.6e-4; I = N 1e-4, H 7.8e-4, B 2.6e-4, T 2.7e-4)")
    return "\n".join(lines)


def run_cli(args) -> int:
    """The ``slidewise calibrate`` command (arguments defined in :mod:`slidewise.cli`)."""
    import sys

    from slidewise.errors import OptionError

    sizes = QUICK_SIZES if args.quick else DEFAULT_SIZES
    if args.sizes:
        try:
            sizes = tuple(int(s) for s in args.sizes.split(","))
        except ValueError:
            sizes = ()
        if not sizes or min(sizes) < 1:
            raise OptionError(f"bad --sizes {args.sizes!r}", hint="give window sizes, e.g. --sizes 500,2000,8000")
    if args.node_size < 3 or args.bucket_size <= 0:
        raise OptionError("--node-size must be >= 3 and --bucket-size > 0",
                          hint="the paper uses --node-size 100 --bucket-size 10")
    structure = Structure(args.bucket_size, args.node_size)
    min_time = getattr(args, "min_time", None)
    min_time = (0.01 if args.quick else 0.05) if min_time is None else min_time
    if min_time <= 0:
        raise OptionError(f"--min-time must be positive, got {min_time:g}", hint="e.g. --min-time 0.05")
    clock = getattr(args, "clock", "cpu")

    def progress(p):
        print(f"  {p['method']} {p['workload']:<6} W={p['window']:<6} "
              f"{p['seconds_per_op'] * 1e6:10.2f} µs/op", file=sys.stderr)

    profile = calibrate(sizes, structure=structure, min_time=min_time, clock=clock, progress=progress)
    path = save_profile(profile, args.out)
    print(format_table(profile))
    print(f"profile written to {path}", file=sys.stderr)
    return 0
