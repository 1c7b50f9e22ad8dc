"""``slidewise bench asymmetric``: predicted vs measured cost of asymmetric binary joins.

Paper: Kang, Naughton & Viglas, ICDE 2003 §5.1 — Fig. 2 (model
costs of eight combinations as the rate mix varies, windows A = B = 5000),
Fig. 3 (the same, measured), Table 3 / Fig. 4 (three workloads; does the model
pick the fastest combination?). Combination names follow the paper: ``XY`` =
X on window A (S1), Y on window B (S2), see :mod:`slidewise.optimizer.binary`.

Procedure:

1. Weights: a fresh quick calibration on this machine
   (:mod:`slidewise.optimizer.calibrate`; saved next to the results), or the
   profile given with ``profile=``.
2. Per-arrival costs: for each combination the operator
   (:class:`~slidewise.operators.joins.binary.BinaryJoin`, count windows
   ``[ROWS A]``, ``[ROWS B]`` on ``S1.a = S2.a``, keys from a large domain) is
   preloaded to full windows, then arrivals of A and of B are timed
   (probe + insert + invalidate, process CPU time, median of ``repeats``
   rounds; all combinations of a workload are built first and every round
   times them in a shuffled order, so that load changes on a shared machine
   hit every combination alike — :func:`measure_combinations`; used by the
   sweep and by Table 3's screen). With physical windows a stream's
   per-arrival cost does not depend on the rates (Eq. 1), so the measured
   cost at rates ``(λa, λb)`` is ``λa · t_A + λb · t_B`` (CPU seconds per
   second).
3. Validation of that linearity: interleaved mixed runs at a few rate shares.
4. Fig. 2 vs Fig. 3: model and measured costs over ``λa/λb`` from 1e-4 to 1e4
   (``λa + λb = 1000`` tuples/s), with the crossover points of both
   (:func:`~slidewise.optimizer.binary.envelope_crossovers`).
5. Table 3: the three workloads, all 16 combinations; the model's choice
   (among the paper's eight and among all 16) against the measured fastest,
   timed as ``slidewise bench ordering``'s Table 8 is
   (:mod:`slidewise.bench.table8`; :func:`run_table3`):

   a. *screen*: one quick round of per-arrival costs of all 16
      (:func:`measure_combinations`); the *contenders* — every combination
      within :data:`SCREEN_FACTOR` of the screen's fastest of either pool,
      plus both pools' choices — go on; the rest are reported from the
      screen (``measured_by``), being far slower (nested loops over a big,
      often probed window cost 10-100x more).
   b. *pieces*: :data:`TABLE3_PIECES` pieces of :data:`PIECE_ARRIVALS`
      arrivals of the workload's mix (A and B evenly interleaved at
      λa/(λa+λb), continued across pieces), each from its own full windows
      (the same tuples for every combination).
   c. *timing*: :data:`TABLE3_ROUNDS` rounds; in each, piece by piece, every
      contender runs the same piece (on a fresh operator preloaded with the
      piece's windows) in a new random sequence, in CPU seconds with the
      garbage collector paused (:func:`time_combinations`). ``rate`` = arrivals / Σ over
      pieces of the piece's minimum CPU time (table8's ``_rates``); the
      measured cost is ``(λa + λb) / rate`` CPU seconds per second.
   d. *decision*, as Table 8's: a near tie with the chosen combination
      gets more rounds (up to table8's ``MAX_ROUNDS_FACTOR`` times); the measured
      fastest is the contender faster than each other in the median paired
      round (``measured_fastest_by``; else the highest ``rate``,
      ``fastest_by_max_rate``); the chosen combination against every other
      contender (table8's ``_paired``): CPU-time ratio and
      *distinguishable* (sign test and separate [min, median] ranges);
      ``distinguishably_beaten_by`` lists the faster ones beyond noise.

Not timed: the conversion of columnar chunks into tuples, which is the same for
every combination. Outputs: ``asymmetric.json``, ``asymmetric.png`` and
``asymmetric-profile.json`` in ``out_dir``. Timings are reported, never asserted.
"""

from __future__ import annotations

import gc
import random
import statistics
import time
from pathlib import Path

import numpy as np

from slidewise.bench.common import machine_info, pyplot, save_png, write_json
from slidewise.bench.table8 import Piece, _paired, near_ties, paired_winner, settle_near_ties
from slidewise.bench.table8 import _rates as piece_rates
from slidewise.optimizer.binary import ALL_COMBINATIONS, PAPER_COMBINATIONS, Structure, Weights, choose, combination_cost, envelope_crossovers, load_weights
from slidewise.optimizer.calibrate import DEFAULT_SIZES, Feed, calibrate, profile_weights, save_profile, time_batches

#: λa + λb of every point, tuples per second (Table 3's rows sum to 1000)
TOTAL_RATE = 1000.0
#: the sweep's windows (Fig. 2-3)
SWEEP_WINDOW = 5000
#: rate shares λa/(λa+λb) of the interleaved validation runs
MIXED_SHARES = (0.1, 0.5, 0.9)
#: Kang et al. Table 3 / Fig. 4 workloads and the paper's winner
TABLE_3 = (
    {"workload": "Fig. 4a", "window_a": 9500, "window_b": 500, "rate_a": 2, "rate_b": 998, "paper": "TN"},
    {"workload": "Fig. 4b", "window_a": 7000, "window_b": 3000, "rate_a": 800, "rate_b": 200, "paper": "HT"},
    {"workload": "Fig. 4c", "window_a": 4000, "window_b": 6000, "rate_a": 550, "rate_b": 450, "paper": "HH"},
)
#: Table 3 timing (module docstring, step 5): rounds, pieces, arrivals per piece (500: one A of 4a per piece)
TABLE3_ROUNDS, TABLE3_PIECES, PIECE_ARRIVALS = 7, 8, 500
#: combinations within this factor of the screen's fastest are timed in pieces
SCREEN_FACTOR = 1.6


def sweep_ratios(points: int = 33) -> list[float]:
    """``λa/λb`` from 1e-4 to 1e4, evenly spaced in log scale."""
    return [10 ** (-4 + 8 * i / (points - 1)) for i in range(points)]


def _operator(combination: str, window_a: int, window_b: int, structure: Structure):
    from slidewise.operators.joins.binary import BinaryJoin
    from slidewise.plan.expr import Col
    from slidewise.plan.query import Equality, JoinQuery, StreamRef, WindowSpec

    q = JoinQuery(
        (StreamRef("S1", "S1", WindowSpec("rows", window_a)), StreamRef("S2", "S2", WindowSpec("rows", window_b))), (Equality(Col(0, "a", "S1"), Col(1, "a", "S2")),)
    )
    return BinaryJoin(q, directions=combination, bucket_size=structure.bucket_size, node_size=structure.node_size)


def _arrive(op):
    def run(batch):
        for k in batch:
            op.probe(k)
            op.update(k)

    return run


class ComboRun:
    """One combination's operator, preloaded to full windows, and its feed of fresh tuples."""

    def __init__(self, combination: str, window_a: int, window_b: int, structure: Structure, seed: int) -> None:
        self.combination = combination
        self.op = _operator(combination, window_a, window_b, structure)
        self.feed = Feed(seed)
        self.op.preload(self.feed.take(0, window_a) + self.feed.take(1, window_b))
        self.run = _arrive(self.op)
        self.rounds: dict[int, list[float]] = {0: [], 1: []}

    def time(self, stream: int, min_time: float) -> float:
        """CPU seconds per arrival of ``stream`` (0: A, 1: B); appended to ``rounds``."""
        t = time_batches(self.run, lambda n: self.feed.take(stream, n), min_time)
        self.rounds[stream].append(t["seconds_per_op"])
        return t["seconds_per_op"]

    def mixed(self, share: float, min_time: float) -> dict:
        """CPU seconds per arrival of an evenly interleaved mix with a share ``share`` of A's."""
        state = {"i": 0}

        def next_batch(n):
            batch = []
            for _ in range(n):
                i = state["i"]
                s = 0 if int((i + 1) * share) > int(i * share) else 1
                batch.append(self.feed.take(s, 1)[0])
                state["i"] = i + 1
            return batch

        t = time_batches(self.run, next_batch, min_time)
        return {"share": share, "seconds_per_arrival": t["seconds_per_op"], "arrivals": t["operations"]}

    def result(self) -> dict:
        return {
            "combination": self.combination,
            "seconds_per_a": statistics.median(self.rounds[0]),
            "seconds_per_b": statistics.median(self.rounds[1]),
            "rounds": self.rounds,
        }


def measure_combinations(
    combinations, window_a: int, window_b: int, *, structure: Structure = Structure(), min_time: float = 0.05, repeats: int = 3, seed: int = 0
) -> dict[str, ComboRun]:
    """Per-arrival CPU seconds of A's and B's arrivals for every combination, interleaved.

    Every round builds and preloads all operators afresh, then times every
    (combination, stream) pair once in a shuffled order; the median per pair
    is kept. Measuring one combination after the other let a
    change in the machine's load between two combinations decide which is
    "fastest" (differences of 10-15 % between otherwise equal runs).
    """
    import random

    rng = random.Random(seed)
    pairs = [(c, s) for c in combinations for s in (0, 1)]
    runs: dict[str, ComboRun] = {}
    for r in range(repeats):
        # fresh operators every round: a preloaded window's memory layout is part of the noise
        # (the same combination kept its 15-20 % lead or lag over a whole run otherwise)
        fresh = {c: ComboRun(c, window_a, window_b, structure, seed + 7919 * r + i) for i, c in enumerate(combinations)}
        for c in combinations:
            if c in runs:
                fresh[c].rounds = runs[c].rounds
        runs = fresh
        rng.shuffle(pairs)
        for c, s in pairs:
            runs[c].time(s, min_time)
    return runs


def measure_combination(
    combination: str,
    window_a: int,
    window_b: int,
    *,
    structure: Structure = Structure(),
    min_time: float = 0.05,
    repeats: int = 3,
    shares: tuple[float, ...] = (),
    seed: int = 0,
) -> dict:
    """Per-arrival CPU seconds of A's and B's arrivals, and of mixed runs at ``shares``."""
    run = measure_combinations((combination,), window_a, window_b, structure=structure, min_time=min_time, repeats=repeats, seed=seed)[combination]
    return {**run.result(), "mixed": [run.mixed(f, min_time) for f in shares]}


def _rates(ratio: float) -> tuple[float, float]:
    """``(λa, λb)`` with ``λa/λb = ratio`` and ``λa + λb = TOTAL_RATE``."""
    f = ratio / (1 + ratio)
    return TOTAL_RATE * f, TOTAL_RATE * (1 - f)


def _crossovers(flips) -> list[dict]:
    return [{"ratio": c.ratio, "share": c.share, "before": c.before, "after": c.after} for c in flips]


def run_sweep(
    weights: Weights,
    *,
    window: int = SWEEP_WINDOW,
    combinations: tuple[str, ...] = PAPER_COMBINATIONS,
    min_time: float = 0.05,
    repeats: int = 3,
    points: int = 33,
    progress=None,
) -> dict:
    """Fig. 2 (model) vs Fig. 3 (measured) for windows ``A = B = window``."""
    s = weights.structure
    ratios = sweep_ratios(points)
    measured_lines, model_lines, per_arrival, mixed = {}, {}, {}, {}
    runs = measure_combinations(combinations, window, window, structure=s, min_time=min_time, repeats=repeats, seed=100)
    for c in combinations:
        m = {**runs[c].result(), "mixed": [runs[c].mixed(f, min_time) for f in MIXED_SHARES]}
        ta, tb = m["seconds_per_a"], m["seconds_per_b"]
        per_arrival[c] = {"a": ta, "b": tb, "rounds": m["rounds"]}
        measured_lines[c] = (TOTAL_RATE * tb, TOTAL_RATE * ta)
        model_lines[c] = (combination_cost(c, 0, TOTAL_RATE, window, window, weights), combination_cost(c, TOTAL_RATE, 0, window, window, weights))
        mixed[c] = [
            {
                "share": x["share"],
                "measured": TOTAL_RATE * x["seconds_per_arrival"],
                "linear": TOTAL_RATE * ((1 - x["share"]) * tb + x["share"] * ta),
                "predicted": (1 - x["share"]) * model_lines[c][0] + x["share"] * model_lines[c][1],
                "arrivals": x["arrivals"],
            }
            for x in m["mixed"]
        ]
        if progress:
            progress(f"sweep {c}: A arrival {ta * 1e6:.1f} µs, B arrival {tb * 1e6:.1f} µs")

    def curve(lines, c):
        b0, a1 = lines[c]
        return [(1 - r / (1 + r)) * b0 + r / (1 + r) * a1 for r in ratios]

    return {
        "window_a": window,
        "window_b": window,
        "total_rate": TOTAL_RATE,
        "combinations": list(combinations),
        "ratios": ratios,
        "predicted": {c: curve(model_lines, c) for c in combinations},
        "measured": {c: curve(measured_lines, c) for c in combinations},
        "per_arrival_seconds": per_arrival,
        "mixed_runs": mixed,
        "crossovers": {"predicted": _crossovers(envelope_crossovers(model_lines)), "measured": _crossovers(envelope_crossovers(measured_lines))},
    }


def _mix(share: float, n: int, offset: int = 0) -> list[int]:
    """Streams (0: A, 1: B) of arrivals ``offset .. offset + n`` of an even mix with a share ``share`` of A's."""
    return [0 if int((i + 1) * share) > int(i * share) else 1 for i in range(offset, offset + n)]


def make_pieces(window_a: int, window_b: int, share: float, *, pieces: int = TABLE3_PIECES, arrivals: int = PIECE_ARRIVALS, seed: int = 0) -> list[Piece]:
    """``pieces`` pieces of the workload's mix: ``Piece.warm`` the tuples that fill both windows,
    ``Piece.chunks`` the arrivals (the same tuples for every combination), ``Piece.tuples`` their number."""
    out = []
    for p in range(pieces):
        feed = Feed(seed + 7919 * p)
        preload = feed.take(0, window_a) + feed.take(1, window_b)
        tuples = [feed.take(s, 1)[0] for s in _mix(share, arrivals, p * arrivals)]
        out.append(Piece(p, preload, tuples, len(tuples)))
    return out


def time_combinations(
    pieces: list[Piece], combinations, window_a: int, window_b: int, rounds: int, seed: int, *, structure: Structure = Structure(), progress=None
) -> dict:
    """CPU seconds of every combination on every piece, ``rounds`` times (as table8's ``time_orders``).

    Within a round, piece by piece, every combination runs the piece's
    arrivals (probe + insert + invalidate) on a fresh operator preloaded
    with the piece's windows, in a new random sequence, timed by
    ``time.process_time`` with the garbage collector paused. (``time_orders``
    copies one warmed operator and re-orders it; here every combination is
    its own operator, and the B+tree's linked leaves defeat ``deepcopy``, so
    operators are rebuilt — outside the timed region — which also gives
    every round a fresh memory layout.) Returns per combination ``cpu`` and
    ``wall`` (rounds × pieces).
    """
    k = len(pieces)
    cpu = {c: np.full((rounds, k), np.nan) for c in combinations}
    wall = {c: np.full((rounds, k), np.nan) for c in combinations}
    rng = random.Random(seed)
    gc.collect()
    gc.freeze()  # the pieces' tuples: keep them out of every collection while timing
    try:
        for r in range(rounds):
            for s, piece in enumerate(pieces):
                todo = list(combinations)
                rng.shuffle(todo)
                ops = []
                for c in todo:
                    op = _operator(c, window_a, window_b, structure)
                    op.preload(piece.warm)
                    ops.append(op)
                gc.collect()
                gc.disable()
                try:
                    for c, op in zip(todo, ops):
                        run = _arrive(op)
                        w0, t0 = time.perf_counter(), time.process_time()
                        run(piece.chunks)
                        cpu[c][r, s] = time.process_time() - t0
                        wall[c][r, s] = time.perf_counter() - w0
                finally:
                    gc.enable()
                del ops
            if progress:
                progress(f"round {r + 1}/{rounds}")
    finally:
        gc.unfreeze()
    return {c: {"cpu": cpu[c], "wall": wall[c]} for c in combinations}


def _contenders(screened: dict, pools: dict, chosen) -> list[str]:
    keep = list(chosen)
    for pool in pools.values():
        best = min(screened[c] for c in pool)
        keep += [c for c in sorted(pool, key=screened.get) if screened[c] <= SCREEN_FACTOR * best]
    return list(dict.fromkeys(keep))


def run_table3(
    weights: Weights,
    *,
    min_time: float = 0.05,
    rounds: int = TABLE3_ROUNDS,
    pieces: int = TABLE3_PIECES,
    piece_arrivals: int = PIECE_ARRIVALS,
    combinations: tuple[str, ...] = ALL_COMBINATIONS,
    progress=None,
) -> list[dict]:
    """The three workloads of Table 3: model choice vs measured fastest (module docstring, step 5)."""
    s = weights.structure
    out = []
    for n, wl in enumerate(TABLE_3):
        a, b, la, lb = wl["window_a"], wl["window_b"], wl["rate_a"], wl["rate_b"]
        predicted = {c: combination_cost(c, la, lb, a, b, weights) for c in combinations}
        pools = {label: [c for c in pool if c in combinations] for label, pool in (("paper_eight", PAPER_COMBINATIONS), ("all_sixteen", ALL_COMBINATIONS))}
        # all 16: the per-window choice (§4.2); the eight: the cheapest of Table 3's columns
        chosen = {"paper_eight": min(pools["paper_eight"], key=predicted.get), "all_sixteen": choose(la, lb, a, b, weights).combination}
        # (a) the screen
        screen = measure_combinations(combinations, a, b, structure=s, min_time=min_time, repeats=1, seed=1000 * (n + 1))
        per_arrival, screened = {}, {}
        for c in combinations:
            m = screen[c].result()
            per_arrival[c] = {"a": m["seconds_per_a"], "b": m["seconds_per_b"]}
            screened[c] = la * m["seconds_per_a"] + lb * m["seconds_per_b"]
        timed = [c for c in _contenders(screened, pools, chosen.values()) if c in combinations]
        if progress:
            progress(f"{wl['workload']}: timing {', '.join(timed)} on {pieces} pieces x {piece_arrivals} arrivals, {rounds} rounds")
        # (b)-(c) pieces and interleaved timing
        share = la / (la + lb)
        built = make_pieces(a, b, share, pieces=pieces, arrivals=piece_arrivals, seed=1000 * (n + 1) + 17)
        runs = time_combinations(built, timed, a, b, rounds, seed=n, structure=s, progress=(lambda m, w=wl["workload"]: progress(f"{w}: {m}")) if progress else None)
        cols = np.arange(len(built))
        say = progress or (lambda m: None)
        runs, done, tied = settle_near_ties(
            runs,
            rounds,
            lambda r: _near_ties(r, pools, chosen, cols),
            lambda done: time_combinations(built, timed, a, b, rounds, seed=n + 101 * done, structure=s, progress=lambda m, w=wl["workload"]: say(f"{w} (more): {m}")),
            lambda tied, w=wl["workload"]: say(f"{w}: near tie with {', '.join(sorted(tied))}: {rounds} more rounds"),
        )
        rate = {c: piece_rates(runs[c], built) for c in timed}
        measured = {c: (la + lb) / rate[c]["rate"] if c in rate else screened[c] for c in combinations}
        row = {
            **wl,
            "predicted": predicted,
            "measured": measured,
            "measured_by": {c: "pieces" if c in rate else "screen" for c in combinations},
            "screened": screened,
            "screen_per_arrival_seconds": per_arrival,
            "timing": {
                "rounds": done,
                "near_ties": sorted(tied),
                "pieces": len(built),
                "arrivals_per_piece": piece_arrivals,
                "a_share": share,
                "a_arrivals": sum(t.stream == 0 for p in built for t in p.chunks),
                "arrivals": sum(p.tuples for p in built),
                "screen_factor": SCREEN_FACTOR,
                "timed": timed,
            },
            "rates": {c: {k: v for k, v in rate[c].items() if k != "cpu_seconds"} for c in timed},
            "cpu_seconds": {c: rate[c]["cpu_seconds"] for c in timed},
        }
        for label, pool in pools.items():
            ch = chosen[label]
            ranked = sorted(pool, key=measured.get)
            in_pieces = [c for c in ranked if c in rate]
            winner = paired_winner(runs, in_pieces, cols)
            fastest = winner if winner is not None else ranked[0]
            vs = {c: _chosen_vs(runs[ch], runs[c], cols) for c in in_pieces if c != ch}
            beaten_by = [c for c, v in vs.items() if v["time_ratio"] < 1 and v["distinguishable"]]
            row[label] = {
                "chosen": ch,
                "measured_fastest": fastest,
                "agree": ch == fastest,
                "measured_fastest_by": "paired rounds" if winner is not None else "max rate",
                "fastest_by_max_rate": ranked[0],
                "chosen_rank_measured": ranked.index(ch) + 1,
                "chosen_over_fastest": round(measured[ch] / measured[ranked[0]], 4),
                "faster_distinguishable": bool(beaten_by),
                "distinguishably_beaten_by": beaten_by,
                "faster_not_distinguishable": [c for c in ranked[: ranked.index(ch)] if c not in beaten_by],
                "chosen_vs": vs,
                "second_over_fastest": round(measured[ranked[1]] / measured[ranked[0]], 4),
                "round_spread": {c: rate[c]["rate_spread"] for c in dict.fromkeys([ch, *in_pieces[:2]])},
                "predicted_order": sorted(pool, key=predicted.get),
                "measured_order": ranked,
            }
        out.append(row)
        if progress:
            e, x = row["paper_eight"], row["all_sixteen"]
            progress(
                f"{wl['workload']}: eight: chosen {e['chosen']} (rank {e['chosen_rank_measured']}, "
                f"x{e['chosen_over_fastest']:.3f}), fastest {e['measured_fastest']}, beaten beyond noise by "
                f"{e['distinguishably_beaten_by'] or 'none'}; sixteen: chosen {x['chosen']} (rank "
                f"{x['chosen_rank_measured']}), fastest {x['measured_fastest']}, beaten beyond noise by "
                f"{x['distinguishably_beaten_by'] or 'none'}"
            )
    return out


def _near_ties(runs: dict, pools: dict, chosen: dict, cols) -> set:
    """Combinations of a pool in a near tie with that pool's choice (table8's :func:`near_ties`)."""
    out: set = set()
    for label, pool in pools.items():
        ch = chosen[label]
        out.update(near_ties(runs, ch, [c for c in pool if c in runs and c != ch], cols))
    return out


def _chosen_vs(chosen: dict, other: dict, cols) -> dict:
    """table8's ``_paired`` with the chosen combination in the heuristic's place (ratio > 1: chosen faster)."""
    v = _paired(chosen, other, cols)
    v["chosen_faster_rounds"] = v.pop("heuristic_faster_rounds")
    return v


def _plot(report: dict, path: Path) -> Path:
    plt = pyplot()
    sweep, table = report["sweep"], report["table3"]
    fig, axes = plt.subplots(2, 3, figsize=(17, 10))
    colors = dict(zip(sweep["combinations"], plt.cm.tab10.colors))
    for ax, kind, title in ((axes[0][0], "predicted", "model (Fig. 2)"), (axes[0][1], "measured", "measured (Fig. 3)")):
        for c in sweep["combinations"]:
            ax.plot(sweep["ratios"], sweep[kind][c], label=c, color=colors[c])
        for x in sweep["crossovers"][kind]:
            ax.axvline(x["ratio"], color="grey", lw=0.6, ls=":")
        ax.set(xscale="log", yscale="log", xlabel="λa / λb  (λa + λb = 1000 /s)", ylabel="CPU seconds per second", title=f"{title}, A = B = {sweep['window_a']}")
        ax.legend(ncol=2, fontsize=8)
    ax = axes[0][1]
    for c, runs in sweep["mixed_runs"].items():
        for r in runs:
            ax.scatter([r["share"] / (1 - r["share"])], [r["measured"]], color=colors[c], marker="x", s=25)
    ax = axes[0][2]
    runs_all = [r for runs in sweep["mixed_runs"].values() for r in runs]
    for c, runs in sweep["mixed_runs"].items():
        ax.scatter([r["linear"] for r in runs], [r["measured"] for r in runs], color=colors[c], label=c)
        ax.scatter([r["predicted"] for r in runs], [r["measured"] for r in runs], color=colors[c], marker="o", facecolors="none", s=18)
    lo = min(min(r["predicted"], r["linear"], r["measured"]) for r in runs_all)
    hi = max(max(r["predicted"], r["linear"], r["measured"]) for r in runs_all)
    ax.plot([lo, hi], [lo, hi], color="grey", lw=0.8)
    ax.set(
        xscale="log",
        yscale="log",
        ylabel="measured, interleaved runs (CPU s / s)",
        xlabel="λa·t_A + λb·t_B from per-arrival costs (filled) / model (hollow)",
        title="interleaved runs at λa share 0.1 / 0.5 / 0.9",
    )
    ax.legend(ncol=2, fontsize=8)
    for ax, row in zip(axes[1], table):
        names = sorted(row["measured"], key=row["measured"].get)
        xs = range(len(names))
        ax.bar([x - 0.2 for x in xs], [row["predicted"][c] for c in names], 0.4, label="model")
        ax.bar([x + 0.2 for x in xs], [row["measured"][c] for c in names], 0.4, label="measured")
        ax.set_xticks(list(xs), names, rotation=90, fontsize=8)
        ax.set(
            yscale="log",
            ylabel="CPU seconds per second",
            title=f"{row['workload']}: A={row['window_a']} B={row['window_b']} "
            f"λa={row['rate_a']} λb={row['rate_b']}\nchosen {row['all_sixteen']['chosen']} "
            f"(eight: {row['paper_eight']['chosen']}), fastest "
            f"{row['all_sixteen']['measured_fastest']} "
            f"(eight: {row['paper_eight']['measured_fastest']})",
        )
        ax.legend(fontsize=8)
    fig.suptitle(f"slidewise bench asymmetric — Kang et al. §5.1 (weights: {report['weights']['source']})", fontsize=11)
    fig.subplots_adjust(hspace=0.45, wspace=0.25)
    return save_png(fig, path)


def _verdict(row: dict, pool: str) -> str:
    v, m = row[pool], row["measured"]
    head = f"chosen {v['chosen']} ({1e3 * m[v['chosen']]:.2f} ms/s), measured fastest {v['measured_fastest']} ({1e3 * m[v['measured_fastest']]:.2f} ms/s): "
    if v["agree"]:
        return head + "agree"
    faster = [c for c in v["measured_order"][: v["chosen_rank_measured"] - 1] if c in v["chosen_vs"]]
    rounds = "; ".join(f"chosen faster than {c} in {v['chosen_vs'][c]['chosen_faster_rounds']}/{v['chosen_vs'][c]['rounds']} rounds" for c in faster)
    return head + (
        f"differ, chosen costs {v['chosen_over_fastest']:.3f}x the highest max rate's "
        f"(rank by max rate {v['chosen_rank_measured']}); "
        + (
            f"distinguishably faster: {', '.join(v['distinguishably_beaten_by'])}"
            if v["faster_distinguishable"]
            else "no faster combination is distinguishable from noise"
        )
        + (f" ({rounds})" if rounds else "")
    )


def summarize(report: dict) -> dict:
    """The compact digest the CLI prints."""
    sweep = report["sweep"]

    def flips(kind):
        return [f"{x['before']}->{x['after']} at λa/λb={x['ratio']:.3g}" for x in sweep["crossovers"][kind]]

    return {
        "weights_us_per_touch": {d: {k: round(v * 1e6, 4) for k, v in w.items()} for d, w in report["weights"]["weights"].items()},
        "crossovers_predicted": flips("predicted"),
        "crossovers_measured": flips("measured"),
        "table3": [
            {
                "workload": r["workload"],
                "paper_winner": r["paper"],
                "eight": _verdict(r, "paper_eight"),
                "sixteen": _verdict(r, "all_sixteen"),
                "measured_ms_per_s": {c: round(1e3 * r["measured"][c], 2) for c in r["paper_eight"]["measured_order"]},
                "predicted_ms_per_s": {c: round(1e3 * r["predicted"][c], 2) for c in r["paper_eight"]["predicted_order"]},
            }
            for r in report["table3"]
        ],
        "seconds": report["seconds"],
        "files": report["files"],
    }


def run_asymmetric_bench(
    out_dir: str | Path = "bench-results",
    *,
    profile: str | Path | None = None,
    sweep_window: int = SWEEP_WINDOW,
    min_time: float = 0.05,
    repeats: int = 5,
    points: int = 33,
    calibration_sizes=DEFAULT_SIZES,
    table3: bool = True,
    table3_rounds: int = TABLE3_ROUNDS,
    table3_pieces: int = TABLE3_PIECES,
    piece_arrivals: int = PIECE_ARRIVALS,
    progress: bool = True,
) -> dict:
    """Run the experiment; write ``asymmetric.json`` / ``.png`` (and the profile) to ``out_dir``."""
    import sys

    started = time.perf_counter()
    out = Path(out_dir)

    def say(msg):
        if progress:
            print(f"[asymmetric] {msg}", file=sys.stderr, flush=True)

    files = {}
    if profile is not None:
        weights = load_weights(profile)
        prof = None
    else:
        say(f"calibrating weight factors (window sizes {', '.join(map(str, calibration_sizes))})")
        prof = calibrate(calibration_sizes, min_time=min(min_time, 0.02), rounds=3)
        files["profile"] = str(save_profile(prof, out / "asymmetric-profile.json"))
        weights = profile_weights(prof)
    say(f"sweep over λa/λb, A = B = {sweep_window}")
    sweep = run_sweep(weights, window=sweep_window, min_time=min_time, repeats=repeats, points=points, progress=say)
    rows = run_table3(weights, min_time=min_time, rounds=table3_rounds, pieces=table3_pieces, piece_arrivals=piece_arrivals, progress=say) if table3 else []
    report = {
        "experiment": "asymmetric",
        "paper": "Kang, Naughton & Viglas, ICDE 2003, §5.1",
        "naming": "XY = structure X on window A (S1), Y on window B (S2)",
        "clock": "process CPU time",
        "machine": machine_info(),
        "weights": weights.as_dict(),
        "calibration": prof,
        "sweep": sweep,
        "table3": rows,
    }
    files["json"] = str(out / "asymmetric.json")
    files["png"] = str(out / "asymmetric.png")
    report["files"] = files
    report["seconds"] = round(time.perf_counter() - started, 1)
    if rows:
        _plot(report, Path(files["png"]))
    else:
        files.pop("png")
    write_json(files["json"], report)
    report["summary"] = summarize(report)
    return report
