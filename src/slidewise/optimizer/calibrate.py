"""``slidewise calibrate``: measure the cost model's weight factors on this machine.

Paper: Kang, Naughton & Viglas, ICDE 2003 §4.2, "Estimating the
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
are recorded. Every point is measured ``rounds`` times (default 3), the points
of a round in a shuffled order over operators built once, and the median is
kept: load on a shared machine changes from second to second, and measuring
one structure after the other let that drift into the ratios of the weights
(the same hash probe measured 8 µs and 15 µs a minute apart on this 2-core
machine).

Fit (see :mod:`slidewise.optimizer.binary` for the terms and why): per
structure ``d``, search points give ``α_d, P_d, κ_d`` in
``seconds = α + t · (P + κ · log2 W)`` and update points ``β_d, I_d, ν_d`` in
the same form, ``t`` the touched tuples of :func:`search_touches` /
:func:`update_touches`. The fit is a non-negative least-squares fit of the
*relative* error (rows divided by the measured time, so that a 7 ms NLJ probe
of 8000 tuples does not drown the 9 µs one of 10 tuples); a column that does
not vary over the points is folded into the slope (N and H updates always
touch 2 tuples: only ``I`` and ``ν`` are fitted, as the paper's form has no
constant); likewise a hash probe touches ``B/|B|`` tuples at every window
size, so ``α_H`` is folded into ``P_H`` (valid for the profile's bucket size,
which the profile records and the operators use by default). Measuring hash
probes at a second bucket size to separate them was tried and dropped: the
extra points were the noisiest of all (18 ± 4 µs for the same point across
rounds) and pulled the window-size term off. ``fit_mode="origin"`` gives the
paper's fit (slope through the origin, no extra terms).

The profile (JSON, default ``~/.config/slidewise/profile.json`` or
``$SLIDEWISE_PROFILE``) holds the weights (seconds per touched tuple), the
structure parameters, the measured points with their fit, and the machine;
:func:`slidewise.optimizer.binary.load_weights` reads it.
"""

from __future__ import annotations

import datetime as dt
import gc
import math
import random
import time
from argparse import Namespace
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from slidewise.optimizer.binary import METHOD_NAMES, METHODS, Structure, Weights, default_profile_path, search_touches, update_touches, weights_from_profile

if TYPE_CHECKING:
    from slidewise.operators.joins.binary import BinaryJoin

#: window sizes measured by default and with ``--quick``
DEFAULT_SIZES = (250, 1000, 3000, 8000, 16000)
QUICK_SIZES = (250, 1000, 4000)
#: measurement rounds (median kept) by default and with ``--quick``
DEFAULT_ROUNDS = 3
QUICK_ROUNDS = 1
#: join keys are drawn from [0, KEY_DOMAIN): probes rarely match
KEY_DOMAIN = 1 << 30
PROFILE_VERSION = 2
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


def _operator(method: str, window: int, structure: Structure) -> BinaryJoin:
    from slidewise.operators.joins.binary import BinaryJoin
    from slidewise.plan.expr import Col
    from slidewise.plan.query import Equality, JoinQuery, StreamRef, WindowSpec

    spec = WindowSpec("rows", window)
    q = JoinQuery((StreamRef("S1", "S1", spec), StreamRef("S2", "S2", spec)), (Equality(Col(0, "a", "S1"), Col(1, "a", "S2")),))
    return BinaryJoin(q, directions="N" + method, bucket_size=structure.bucket_size, node_size=structure.node_size)


CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}


def time_batches(
    run: Callable[[Any], object], next_batch: Callable[[int], Any], min_time: float, *, clock: str = "cpu", min_ops: int = MIN_OPS, max_ops: int = 1_000_000
) -> dict:
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
    return {"seconds_per_op": total / ops, "wall_seconds_per_op": total_wall / ops, "operations": ops, "clock": clock}


class Point:
    """One calibration point: an operator preloaded once, timed in several rounds."""

    def __init__(self, method: str, window: int, workload: str, structure: Structure, seed: int, clock: str) -> None:
        if workload not in ("search", "update"):
            raise ValueError(f"workload must be 'search' or 'update', got {workload!r}")
        self.method, self.window, self.workload, self.structure = method, window, workload, structure
        self.clock = clock
        self.op = _operator(method, window, structure)
        self.feed = Feed(seed)
        self.op.preload(self.feed.take(1, window))
        self.side = self.op.sides[1]
        self.timings: list[dict] = []
        self.comparisons = 0

    def run_once(self, min_time: float) -> dict:
        op = self.op
        before = self.side.index_comparisons()
        if self.workload == "search":

            def run(batch):
                for k in batch:
                    op.probe(k)

            stream = 0
        else:

            def run(batch):
                for t in batch:
                    op.update(t)

            stream = 1
        timing = time_batches(run, lambda n: self.feed.take(stream, n), min_time, clock=self.clock)
        self.comparisons += self.side.index_comparisons() - before
        self.timings.append(timing)
        return timing

    def result(self) -> dict:
        import statistics

        touches = (search_touches if self.workload == "search" else update_touches)(self.method, self.window, self.structure)
        ops = sum(t["operations"] for t in self.timings)
        rounds = [t["seconds_per_op"] for t in self.timings]
        return {
            "method": self.method,
            "workload": self.workload,
            "window": self.window,
            "bucket_size": self.structure.bucket_size,
            "touches": touches,
            "seconds_per_op": statistics.median(rounds),
            "wall_seconds_per_op": statistics.median(t["wall_seconds_per_op"] for t in self.timings),
            "rounds": rounds,
            "operations": ops,
            "clock": self.clock,
            "comparisons_per_op": self.comparisons / ops if self.side.tree else None,
        }


def measure(
    method: str, window: int, workload: str, *, structure: Structure = Structure(), min_time: float = 0.05, seed: int = 0, clock: str = "cpu", rounds: int = 1
) -> dict:
    """One calibration point: seconds per search (``workload="search"``) or per update."""
    point = Point(method, window, workload, structure, seed, clock)
    for _ in range(rounds):
        point.run_once(min_time)
    return point.result()


def _nnls(X, y):
    """Non-negative least squares for a handful of columns (every active set is tried)."""
    import itertools

    import numpy as np

    k = X.shape[1]
    best, best_err = np.zeros(k), float(np.sum(y**2))
    for r in range(1, k + 1):
        for cols in itertools.combinations(range(k), r):
            sub = X[:, cols]
            if np.linalg.matrix_rank(sub) < r:
                continue
            coef, *_ = np.linalg.lstsq(sub, y, rcond=None)
            if np.any(coef < 0):
                continue
            err = float(np.sum((sub @ coef - y) ** 2))
            if err < best_err - 1e-15:
                full = np.zeros(k)
                full[list(cols)] = coef
                best, best_err = full, err
    return best


def fit(points: list[dict]) -> tuple[float, float]:
    """Least-squares slope through the origin of seconds per op on touches, and its relative RMS error.

    The paper's fit (Eq. 7); :func:`fit_terms` is the one ``calibrate`` uses.
    """
    import numpy as np

    x = np.array([p["touches"] for p in points], float)
    y = np.array([p["seconds_per_op"] for p in points], float)
    (slope,), *_ = np.linalg.lstsq(x[:, None], y, rcond=None)
    rel = np.sqrt(np.mean(((slope * x - y) / y) ** 2))
    return float(slope), float(rel)


def fit_terms(points: list[dict]) -> tuple[dict[str, float], float]:
    """``const``, ``slope``, ``log`` of ``seconds = const + t · (slope + log · log2 W)``, and the relative RMS error.

    Non-negative least squares on relative errors; a constant column is
    dropped when the touches do not vary over ``points`` (it would be
    indistinguishable from the slope).
    """
    import numpy as np

    t = np.array([p["touches"] for p in points], float)
    w = np.array([math.log2(max(p["window"], 1)) for p in points], float)
    y = np.array([p["seconds_per_op"] for p in points], float)
    names = ["const", "slope", "log"]
    cols = [np.ones_like(t), t, t * w]
    if np.ptp(t) <= 1e-12 * max(1.0, float(np.max(t))):
        names, cols = names[1:], cols[1:]
    X = np.stack(cols, axis=1)
    coef = _nnls(X / y[:, None], np.ones_like(y))
    pred = X @ coef
    if not np.any(pred > 0):  # degenerate (e.g. a single point): the paper's slope
        slope, _ = fit(points)
        coef = np.array([slope if n == "slope" else 0.0 for n in names])
        pred = X @ coef
    out = {"const": 0.0, "slope": 0.0, "log": 0.0}
    out.update({n: float(c) for n, c in zip(names, coef)})
    rel = float(np.sqrt(np.mean(((pred - y) / y) ** 2)))
    return out, rel


def calibrate(
    sizes: Sequence[int] = DEFAULT_SIZES,
    *,
    structure: Structure = Structure(),
    min_time: float = 0.05,
    methods: Sequence[str] = METHODS,
    clock: str = "cpu",
    rounds: int = DEFAULT_ROUNDS,
    fit_mode: str = "terms",
    seed: int = 0,
    progress: Callable[[Any], object] | None = None,
) -> dict:
    """Measure every method at every size on both workloads; return the profile dict.

    ``rounds`` interleaved rounds (shuffled order, median kept). ``fit_mode``: ``"terms"`` (constants and
    window-size terms, :func:`fit_terms`) or ``"origin"`` (the paper's slope).
    """
    if fit_mode not in ("terms", "origin"):
        raise ValueError(f"fit_mode must be 'terms' or 'origin', got {fit_mode!r}")
    specs = []
    for m in methods:
        for w in sizes:
            for workload in ("search", "update"):
                specs.append((m, int(w), workload, structure))
    pts = [Point(m, w, wl, st, seed + i, clock) for i, (m, w, wl, st) in enumerate(specs)]
    rng = random.Random(seed)
    for r in range(max(1, rounds)):
        order = list(range(len(pts)))
        rng.shuffle(order)
        for i in order:
            pts[i].run_once(min_time)
        if progress is not None and r == max(1, rounds) - 1:
            for p in pts:
                progress(p.result())
    points = [p.result() for p in pts]
    weights, quality = {}, {}
    for m in methods:
        search = [p for p in points if p["method"] == m and p["workload"] == "search"]
        update = [p for p in points if p["method"] == m and p["workload"] == "update"]
        if fit_mode == "origin":
            P, p_err = fit(search)
            I, i_err = fit(update)  # noqa: E741 - the model's weight is named I
            weights[m] = {"P": P, "I": I}
        else:
            s_fit, p_err = fit_terms(search)
            u_fit, i_err = fit_terms(update)
            weights[m] = {"P": s_fit["slope"], "I": u_fit["slope"], "P_const": s_fit["const"], "I_const": u_fit["const"], "P_log": s_fit["log"], "I_log": u_fit["log"]}
        quality[m] = {"P_rel_rms_error": p_err, "I_rel_rms_error": i_err}
    from slidewise.machine import machine_info

    return {
        "version": PROFILE_VERSION,
        "unit": "seconds per touched tuple",
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "paper": "Kang, Naughton & Viglas, ICDE 2003, §4.2 (Eq. 3-7)",
        "model": ("seconds per op = const + touches * (slope + log * log2 W)" if fit_mode == "terms" else "seconds per op = touches * slope (Eq. 7 form)"),
        "structure": {"bucket_size": structure.bucket_size, "node_size": structure.node_size},
        "sizes": [int(w) for w in sizes],
        "min_time": min_time,
        "clock": clock,
        "rounds": rounds,
        "fit_mode": fit_mode,
        "weights": weights,
        "fit": quality,
        "points": points,
        "machine": machine_info(),
    }


def save_profile(profile: dict, path: str | Path | None = None) -> Path:
    from slidewise.machine import write_json

    return write_json(Path(path).expanduser() if path else default_profile_path(), profile)


def profile_weights(profile: dict) -> Weights:
    return weights_from_profile(profile, source=f"calibrated {profile.get('created', '')}".strip())


def format_table(profile: dict) -> str:
    """The weights as a text table (µs per touched tuple, and relative to NLJ search)."""
    w, fitq = profile["weights"], profile["fit"]
    base = w.get("N", {}).get("P") or 1.0
    lines = [
        f"{'method':<14}{'P_d (µs)':>10}{'I_d (µs)':>10}{'P_d/P_n':>9}{'I_d/P_n':>9}"
        f"{'fit err P':>11}{'fit err I':>11}{'α (µs)':>9}{'β (µs)':>9}{'κ (µs)':>9}{'ν (µs)':>9}"
    ]
    for m in w:
        lines.append(
            f"{m} {METHOD_NAMES[m]:<12}{w[m]['P'] * 1e6:>10.4f}{w[m]['I'] * 1e6:>10.4f}"
            f"{w[m]['P'] / base:>9.2f}{w[m]['I'] / base:>9.2f}"
            f"{fitq[m]['P_rel_rms_error']:>10.0%} {fitq[m]['I_rel_rms_error']:>10.0%}"
            f"{w[m].get('P_const', 0) * 1e6:>9.3f}{w[m].get('I_const', 0) * 1e6:>9.3f}"
            f"{w[m].get('P_log', 0) * 1e6:>9.4f}{w[m].get('I_log', 0) * 1e6:>9.4f}"
        )
    s = profile["structure"]
    lines.append("(per op: α + touches·(P + κ·log2 W) per probe, β + touches·(I + ν·log2 W) per arrival)")
    lines.append(
        f"(hash bucket size {s['bucket_size']:g}, tree node size {s['node_size']}; "
        f"window sizes {', '.join(map(str, profile['sizes']))}; paper Eq. 7 for comparison: "
        f"P = N 3e-4, H 5.5e-4, B 2.6e-4, T 2.6e-4; I = N 1e-4, H 7.8e-4, B 2.6e-4, T 2.7e-4)"
    )
    return "\n".join(lines)


def run_cli(args: Namespace) -> int:
    """The ``slidewise calibrate`` command (arguments defined in :mod:`slidewise.cli`)."""
    import sys

    from slidewise.errors import OptionError

    sizes: tuple[int, ...] = QUICK_SIZES if args.quick else DEFAULT_SIZES
    if args.sizes:
        try:
            sizes = tuple(int(s) for s in args.sizes.split(","))
        except ValueError:
            sizes = ()
        if not sizes or min(sizes) < 1:
            raise OptionError(f"bad --sizes {args.sizes!r}", hint="give window sizes, e.g. --sizes 500,2000,8000")
    if args.node_size < 3 or args.bucket_size <= 0:
        raise OptionError("--node-size must be >= 3 and --bucket-size > 0", hint="the paper uses --node-size 100 --bucket-size 10")
    structure = Structure(args.bucket_size, args.node_size)
    min_time = getattr(args, "min_time", None)
    min_time = (0.01 if args.quick else 0.05) if min_time is None else min_time
    if min_time <= 0:
        raise OptionError(f"--min-time must be positive, got {min_time:g}", hint="e.g. --min-time 0.05")
    clock = getattr(args, "clock", "cpu")
    rounds = getattr(args, "rounds", None)
    rounds = (QUICK_ROUNDS if args.quick else DEFAULT_ROUNDS) if rounds is None else rounds
    if rounds < 1:
        raise OptionError(f"--rounds must be at least 1, got {rounds}", hint="e.g. --rounds 3")

    def progress(p):
        print(
            f"  {p['method']} {p['workload']:<6} W={p['window']:<6} b={p['bucket_size']:<4g} {p['seconds_per_op'] * 1e6:10.2f} µs/op (median of {len(p['rounds'])})",
            file=sys.stderr,
        )

    profile = calibrate(sizes, structure=structure, min_time=min_time, clock=clock, rounds=rounds, progress=progress)
    path = save_profile(profile, args.out)
    print(format_table(profile))
    print(f"profile written to {path}", file=sys.stderr)
    return 0
