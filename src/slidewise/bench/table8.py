"""Golab & Özsu Table 8 for ``slidewise bench ordering``: best vs worst join orders, measured.

Golab & Özsu §6.2, Table 8: Golab & Özsu Table 5 streams (λ = 10, 1, 1, 3;
T = 100, 100, 200, 100; v = 500, 50, 40, 5), eager NLJ (``nlj``), lazy NLJ
(``lazy``, τ = 5, 10), eager hash (``hash``) and lazy hash (``hash-lazy``,
τ = 5, 10), five buckets per window as in the paper. Timed per
configuration: the model's :data:`CONTENDERS` cheapest orders, the
heuristic's plan (refined and the papers' alone) and the model's worst plan.
The model's two best orders differ by only 2.5 % of the comparisons while
the comparisons of a short random input fluctuate far more (the costly
arrivals are rare: an S1 tuple with a value ≤ 5 that also matches S2), so:

1. *input*: a long run of :data:`LONG_RUN_UNITS` time units is counted
   exactly with the configuration's own operator loops
   (:mod:`slidewise.bench.exact_counts`: ``count_eager`` for ``nlj``/``hash``,
   ``count_lazy`` for ``lazy``/``hash-lazy``;
   ``convergence`` in the JSON shows the counts per time unit of each order
   over growing spans against the model); the timed input is, per
   configuration, a *balanced sample* of :data:`PIECES` pieces of
   :data:`PIECE_UNITS` time units from it (:func:`balanced_sample`), whose
   counts per time unit *of that configuration* equal the long run's for
   every contender within ``max_relative_deviation_from_long_run`` (a sample
   balanced on eager counts left the lazy counts of two orders 5 % apart the
   wrong way). Each piece starts from the windows the operator holds at that
   instant (filled by replaying the preceding tuples without joining).
2. *timing*: :data:`TABLE8_ROUNDS` rounds; in each, piece by piece, every
   order processes the same piece in a new random sequence
   (:func:`time_orders`), timed in CPU seconds. ``rate`` = tuples / Σ over
   pieces of the piece's minimum CPU time (other load only adds time);
   every round's rate and the spread are reported too. The worst plan,
   4–5× slower, is timed on :data:`WORST_PIECES` pieces in
   :data:`WORST_ROUNDS` rounds; ``best_over_worst`` compares the best plan
   on those same pieces.
3. *decision*: the rounds are paired (every order runs every piece in
   every round, interleaved), so orders are compared pairwise on them:
   ``measured_fastest_plan`` is the order faster than each other contender
   in the median round (:func:`paired_winner`; if no order is, the highest
   ``rate``, and ``measured_fastest_by`` says which rule decided);
   ``fastest_by_max_rate`` and ``heuristic_rank_measured`` rank by ``rate``;
   ``heuristic_vs`` gives, per other order, the CPU-time ratio and whether
   the difference is *distinguishable* (a sign test over the rounds at
   p < :data:`SIGN_TEST_P` — at 7 rounds, all agree — and the [min, median]
   ranges of round times do not overlap);
   ``heuristic_distinguishably_beaten_by`` lists the orders faster beyond
   noise. A *near tie* (an order not distinguishable from the heuristic's
   plan and within :data:`NEAR_TIE` of it) gets :data:`TABLE8_ROUNDS` more
   rounds of every contender, up to :data:`MAX_ROUNDS_FACTOR` times as many
   in all (``rounds`` in the JSON); ``near_ties`` lists the orders still
   tied at the end.

The model is the planner's (:func:`~slidewise.optimizer.cost.model_for`:
for the lazy operators, the windows they actually scan, order-dependent for
``lazy``); ``predicted_cost_paper`` is Golab & Özsu App. A's T+τ formula.
Also reported: ranks by counted comparisons (sample and long run), the correlation of time per
tuple with comparisons per tuple, and the intermediate results per time
unit of each order (:meth:`~slidewise.optimizer.cost.CostModel.partial_results`,
not in the papers' cost; under 1 % of the comparisons here).
"""

from __future__ import annotations

import copy
import gc
import math
import random
import time
from dataclasses import dataclass

import numpy as np

from slidewise.bench.exact_counts import Arrivals, count_comparisons, make_arrivals
from slidewise.bench.ordering import TABLE5, TABLE8_CONFIGS, _names, _query, _stats, reorder
from slidewise.model.batch import Tup
from slidewise.operators.joins import get_algorithm
from slidewise.optimizer.cost import model_for
from slidewise.optimizer.ordering import exact_search, heuristic_search

__all__ = ["TABLE8_ROUNDS", "balanced_sample", "table8", "time_orders"]
#
# Table 8 measures small differences (the model's two best orders differ by
# 2.5 % of the comparisons) with a slow, noisy clock, so it is built in
# three layers: a representative input sample (balanced on the comparison
# counts of a long run), CPU timing in many short interleaved pieces, and a
# stated decision rule.

#: rounds of Table 8 timings (every piece, every order, once per round)
TABLE8_ROUNDS = 7
#: near ties (an order within NEAR_TIE of the heuristic's plan, not distinguishable) get more rounds,
#: as many as asked for at a time, up to MAX_ROUNDS_FACTOR times that in all (28 at 7 rounds)
NEAR_TIE, MAX_ROUNDS_FACTOR = 0.03, 4
#: significance of the sign test in :func:`_paired`
SIGN_TEST_P = 0.02
#: time units of input per timed piece (a multiple of every τ of Table 8)
PIECE_UNITS = 10
#: timed pieces per Table 8 configuration (the balanced sample)
PIECES = 16
#: candidate pieces the balanced sample is chosen from, and their spacing in time units
POOL_SPACING = 50
#: time units of the long run whose counts the sample is balanced on (and convergence is read from)
LONG_RUN_UNITS = 30_000
#: the model's cheapest orders timed per configuration (plus the heuristic's and the worst plan)
CONTENDERS = 3
#: rounds of the worst plan (only its order of magnitude matters) and the pieces it is timed on
WORST_ROUNDS, WORST_PIECES = 3, 10
#: spans (time units) at which the convergence of counted comparisons is reported
CONVERGENCE_SPANS = (66, 200, 500, 1000, 2000, 5000, 10_000, 30_000)


def _pieces(first: int, last: int, spacing: int) -> list[int]:
    """Start times t0 of candidate pieces (ts in (t0, t0 + PIECE_UNITS]), ``spacing`` apart.

    t0 is a multiple of :data:`PIECE_UNITS`, so a piece is whole lazy periods.
    """
    first = -(-first // PIECE_UNITS) * PIECE_UNITS
    return list(range(first, last - PIECE_UNITS, spacing))


def _per_piece(arr: Arrivals, counts: np.ndarray, starts: list[int]) -> np.ndarray:
    """Sum of ``counts`` (per arrival) over each piece."""
    cum = np.concatenate([[0.0], np.cumsum(counts)])
    return np.asarray([cum[arr.at(t + PIECE_UNITS)] - cum[arr.at(t)] for t in starts])


def balanced_sample(aux: np.ndarray, target: np.ndarray, k: int, seed: int, iters: int = 20_000):
    """``k`` rows of ``aux`` (pieces × variables) whose mean is closest to ``target``.

    Balanced sampling (the cube method's aim, by local search): start from a
    random sample and swap a sampled piece for a pool piece while that lowers
    the largest relative deviation of the sample's mean from ``target``.
    Returns the chosen rows and that deviation.
    """
    rng = np.random.default_rng(seed)
    pool = aux.shape[0]
    chosen = rng.choice(pool, size=k, replace=False)
    inside = np.zeros(pool, bool)
    inside[chosen] = True
    total = aux[chosen].sum(0)

    def dev(tot):
        return float(np.max(np.abs(tot / k / target - 1)))

    best = dev(total)
    for _ in range(iters):
        a = int(rng.integers(k))
        cand = int(rng.integers(pool))
        if inside[cand]:
            continue
        tot = total - aux[chosen[a]] + aux[cand]
        d = dev(tot)
        if d < best:
            inside[chosen[a]], inside[cand] = False, True
            chosen[a], total, best = cand, tot, d
    return sorted(int(c) for c in chosen), best


class _NoProbe:
    """Fill an operator's windows without joining: its probe step is a no-op while inside."""

    def __init__(self, op):
        self.op = op

    def __enter__(self):
        for name in ("probe", "_join"):
            if hasattr(self.op, name):
                setattr(self.op, name, lambda *a, **k: None)
        return self.op

    def __exit__(self, *exc):
        for name in ("probe", "_join"):
            self.op.__dict__.pop(name, None)


def _copy(op):
    """``deepcopy`` of a warmed operator that shares the (never mutated) tuples."""
    Tup.__deepcopy__ = lambda self, memo: self
    try:
        return copy.deepcopy(op)
    finally:
        del Tup.__deepcopy__


@dataclass
class Piece:
    t0: int
    warm: object  # operator with the windows as of t0 (any order)
    chunks: list
    tuples: int


def _make_pieces(name, query, options, arr: Arrivals, starts, warm_units: int, order) -> list[Piece]:
    out = []
    for t0 in starts:
        op = get_algorithm(name)(query, order=list(order), **options)
        lo, hi = arr.at(t0), arr.at(t0 + PIECE_UNITS)
        with _NoProbe(op):
            for chunk in arr.chunks(arr.at(t0 - warm_units), lo):
                op.process(chunk)
        out.append(Piece(t0, op, arr.chunks(lo, hi), hi - lo))
    return out


def time_orders(pieces: list[Piece], orders, rounds: int, seed: int, progress, light: dict | None = None) -> dict:
    """CPU seconds and counted comparisons of every order on every piece, ``rounds`` times.

    Round-robin at the finest grain: within a round, piece by piece, every
    order runs the same piece (a fresh copy of the warmed operator) in a new
    random sequence, timed by ``time.process_time`` with the garbage
    collector paused, so load from other processes falls on all orders
    alike. ``light``: order → (rounds, pieces) for orders timed less (the
    worst plan). Returns per order the arrays ``cpu`` (rounds × pieces, NaN
    where not run), ``wall`` and ``comparisons`` (per piece; the operators
    are deterministic, and this is checked).
    """
    light = light or {}
    k = len(pieces)
    cpu = {o: np.full((rounds, k), np.nan) for o in orders}
    wall = {o: np.full((rounds, k), np.nan) for o in orders}
    comps = {o: np.full(k, np.nan) for o in orders}
    rng = random.Random(seed)
    gc.collect()
    gc.freeze()  # the warmed pieces: keep them out of every collection while timing
    try:
        _time_rounds(pieces, orders, rounds, rng, light, cpu, wall, comps, progress)
    finally:
        gc.unfreeze()
    return {o: {"cpu": cpu[o], "wall": wall[o], "comparisons": comps[o]} for o in orders}


def _time_rounds(pieces, orders, rounds, rng, light, cpu, wall, comps, progress) -> None:
    k = len(pieces)
    for r in range(rounds):
        for s, piece in enumerate(pieces):
            todo = [o for o in orders if r < light.get(o, (rounds, k))[0] and s < light.get(o, (rounds, k))[1]]
            rng.shuffle(todo)
            ops = []
            for o in todo:
                op = _copy(piece.warm)
                if list(op.order) != list(o):
                    reorder(op, o)
                ops.append(op)
            gc.collect()
            gc.disable()
            try:
                for o, op in zip(todo, ops):
                    c0 = op.comparisons
                    w0, t0 = time.perf_counter(), time.process_time()
                    for chunk in piece.chunks:
                        op.process(chunk)
                    cpu[o][r, s] = time.process_time() - t0
                    wall[o][r, s] = time.perf_counter() - w0
                    c = op.comparisons - c0
                    if not np.isnan(comps[o][s]) and comps[o][s] != c:
                        raise AssertionError(f"order {o}: comparisons differ between rounds")
                    comps[o][s] = c
            finally:
                gc.enable()
            del ops
        progress(f"round {r + 1}/{rounds}")


def _rates(m: dict, pieces: list[Piece]) -> dict:
    """Max input rate of one order: tuples / CPU seconds, the primary estimate and its spread.

    ``rate``: tuples over the sum, over pieces, of each piece's minimum CPU
    time across rounds (the minimum of repeated timings is the noise-robust
    estimate: other load only ever adds time — but on a loaded 2-core machine
    CPU seconds themselves stretch with contention, so one quiet round can
    favour whichever order it caught; see ``rate_piece_medians``, the same
    with per-piece medians, and :func:`_paired`'s ``median_round_ratio``).
    ``round_rates``: every round's tuples / CPU seconds (pieces run in that
    round); ``rate_median`` their median; ``cpu_seconds`` the raw timings
    (rounds × pieces, ``None`` where not run).
    """
    cpu = m["cpu"]
    done = ~np.isnan(cpu)
    cols = done.any(0)
    tuples = sum(p.tuples for p, c in zip(pieces, cols) if c)
    t_min = float(np.nansum(np.nanmin(cpu[:, cols], axis=0)))
    rows = done[:, cols].all(1)
    per_round = [tuples / float(cpu[r, cols].sum()) for r in np.flatnonzero(rows)]
    t_med = float(np.nansum(np.nanmedian(cpu[:, cols], axis=0)))
    return {
        "tuples": int(tuples),
        "pieces": int(cols.sum()),
        "rounds": len(per_round),
        "rate": round(tuples / t_min, 1),
        "rate_median": round(float(np.median(per_round)), 1),
        "rate_piece_medians": round(tuples / t_med, 1),
        "cpu_seconds": [[None if np.isnan(x) else round(float(x), 5) for x in row] for row in cpu],
        "round_rates": [round(x, 1) for x in per_round],
        "rate_spread": round((max(per_round) - min(per_round)) / (2 * float(np.median(per_round))), 4),
        "cpu_seconds_min_sum": round(t_min, 4),
        "wall_seconds_median": round(float(np.median(np.nansum(m["wall"][:, cols], 1)[rows])), 4),
    }


def _paired(h: dict, o: dict, pieces_used: np.ndarray) -> dict:
    """The heuristic's plan against another order, round by round on the same pieces.

    ``ratio``: the other's CPU time over the heuristic's (> 1: the heuristic
    is faster), per round and with per-piece minima; ``distinguishable``:
    the rounds agree on the sign beyond chance (two-sided sign test,
    p < :data:`SIGN_TEST_P`; at 7 rounds every round must agree) and the two
    orders' [min, median] ranges of round CPU times do not overlap.
    """
    th, to = _round_times(h, o, pieces_used)
    ratios = to / th
    ratio_min = float(np.nanmin(o["cpu"][:, pieces_used], 0).sum() / np.nanmin(h["cpu"][:, pieces_used], 0).sum())
    faster = int(np.sum(ratios > 1))
    p_value = sign_test(faster, int(np.sum(ratios != 1)))
    lo_h, hi_h, lo_o, hi_o = th.min(), np.median(th), to.min(), np.median(to)
    separate = bool(hi_h < lo_o or hi_o < lo_h)
    return {
        "time_ratio": round(ratio_min, 4),
        "median_round_ratio": round(float(np.median(ratios)), 4),
        "round_ratios": [round(float(x), 4) for x in ratios],
        "heuristic_faster_rounds": faster,
        "rounds": int(len(ratios)),
        "sign_test_p": round(p_value, 5),
        "distinguishable": p_value < SIGN_TEST_P and separate,
    }


def _round_times(a: dict, b: dict, pieces_used: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """CPU seconds of ``a`` and of ``b`` per round over ``pieces_used``, in the rounds both ran."""
    rows = ~np.isnan(a["cpu"][:, pieces_used]).any(1) & ~np.isnan(b["cpu"][:, pieces_used]).any(1)
    return a["cpu"][rows][:, pieces_used].sum(1), b["cpu"][rows][:, pieces_used].sum(1)


def paired_faster(a: dict, b: dict, pieces_used: np.ndarray) -> bool:
    """``a`` is faster than ``b`` in the median paired round (median log time ratio > 0: of two
    orders at most one is faster, also for an even number of rounds)."""
    ta, tb = _round_times(a, b, pieces_used)
    return float(np.median(np.log(tb / ta))) > 0


def paired_winner(runs: dict, orders, pieces_used: np.ndarray):
    """The order faster than every other of ``orders`` in the median paired round, or None."""
    for a in orders:
        if all(paired_faster(runs[a], runs[b], pieces_used) for b in orders if b != a):
            return a
    return None


def settle_near_ties(runs: dict, rounds: int, tied_of, time_more, say) -> tuple[dict, int, list]:
    """More rounds while ``tied_of(runs)`` names near ties: ``time_more(done)`` times ``rounds`` more
    of every contender, up to :data:`MAX_ROUNDS_FACTOR` times ``rounds`` in all; ``say(tied)`` first.
    Returns the runs, the rounds done and the orders still tied."""
    done, tied = rounds, tied_of(runs)
    while tied and done + rounds <= MAX_ROUNDS_FACTOR * rounds:
        say(tied)
        runs, done = more_rounds(runs, time_more(done)), done + rounds
        tied = tied_of(runs)
    return runs, done, tied


def sign_test(k: int, n: int) -> float:
    """Two-sided sign test: the chance of a split at least as uneven as ``k`` of ``n`` under 50/50."""
    if n == 0:
        return 1.0
    m = max(k, n - k)
    tail = sum(math.comb(n, i) for i in range(m, n + 1)) / 2.0**n
    return min(1.0, 2 * tail)


def near_ties(runs: dict, h, others, pieces_used: np.ndarray) -> list:
    """Orders not distinguishable from ``h`` and within :data:`NEAR_TIE` of it in the median paired
    round or by per-piece minima."""
    out = []
    for o in others:
        v = _paired(runs[h], runs[o], pieces_used)
        close = min(abs(v["median_round_ratio"] - 1), abs(v["time_ratio"] - 1)) < NEAR_TIE
        if close and not v["distinguishable"]:
            out.append(o)
    return out


def more_rounds(runs: dict, extra: dict) -> dict:
    """``runs`` with the rounds of ``extra`` (same pieces, orders a subset) appended; NaN elsewhere."""
    out = {}
    for o, m in runs.items():
        add = extra.get(o)
        if add is None:
            k = m["cpu"].shape[1]
            r = next(iter(extra.values()))["cpu"].shape[0]
            add = {"cpu": np.full((r, k), np.nan), "wall": np.full((r, k), np.nan)}
        out[o] = {**m, "cpu": np.vstack([m["cpu"], add["cpu"]]), "wall": np.vstack([m["wall"], add["wall"]])}
    return out


def convergence(arr: Arrivals, windows, warm_units: int, configs: dict, spans=CONVERGENCE_SPANS) -> dict:
    """Counted comparisons per time unit of orders over growing spans, against the model.

    ``configs``: label → (counts per arrival by order, model cost by order).
    For each span from the end of the warm-up: comparisons per time unit of
    every order, their ratio to the model, and the gap between the model's
    two best orders (the model's: 2.5 %).
    """
    out = {}
    start = arr.at(warm_units)
    for label, (counts, predicted) in configs.items():
        ranked = sorted(predicted, key=predicted.get)
        a, b = ranked[0], ranked[1]
        rows = []
        for span in spans:
            hi = arr.at(warm_units + span)
            if hi >= len(arr.ts):
                break
            per = {o: float(counts[o][start:hi].sum()) / span for o in counts}
            rows.append(
                {
                    "span": span,
                    "per_time_unit": {_names(o): round(per[o], 1) for o in ranked},
                    "measured_over_model": {_names(o): round(per[o] / predicted[o], 4) for o in ranked},
                    "gap_best_two": round(per[b] / per[a] - 1, 4),
                    "model_order_of_all": sorted(ranked, key=per.get) == ranked,
                }
            )
        out[label] = {"model_gap_best_two": round(predicted[b] / predicted[a] - 1, 4), "best_two": [_names(a), _names(b)], "spans": rows}
    return out


def table8(scale: float, rounds: int, seed: int, progress) -> dict:
    """Golab & Özsu Table 8: max input rate of the orders of Table 5's query (module docstring)."""
    rates, windows, distinct = TABLE5["rates"], TABLE5["windows"], TABLE5["distinct"]
    stats = _stats(rates, windows, distinct)
    taus = [t for _, t, _ in TABLE8_CONFIGS if t]
    warm_units = max(windows) + max(taus, default=0) + 2
    per_unit = sum(rates)
    units = int(LONG_RUN_UNITS * max(scale, 0.1))
    arr = make_arrivals(rates, distinct, int((warm_units + units + PIECE_UNITS + 1) * per_unit), seed=seed)
    starts = _pieces(warm_units, warm_units + units, POOL_SPACING)
    first, last = arr.at(warm_units), arr.at(warm_units + units)
    k = min(max(4, int(round(PIECES * max(scale, 0.1)))), len(starts))
    out: dict = {"long_run_units": units, "piece_units": PIECE_UNITS, "pool": len(starts), "convergence": {}, "configurations": {}}
    for cfg in TABLE8_CONFIGS:
        name, tau, buckets = cfg
        label = name + (f", tau={tau}" if tau else "") + (f", b={buckets}" if buckets else "")
        query = _query(windows, slide=tau)
        model = model_for(query, stats, name, buckets)  # the planner's model
        paper_model = model_for(query, stats, name, buckets, lazy_windows="paper")
        exact, heur, paper = exact_search(model), heuristic_search(model), heuristic_search(model, refine=False)
        predicted = dict(exact.alternatives)
        ranked = [o for o, _ in exact.alternatives]
        best_o, worst_o = exact.order, ranked[-1]
        contenders = list(dict.fromkeys(ranked[:CONTENDERS] + [heur.order, paper.order]))
        orders = contenders + [worst_o]
        # (1) the long run: this configuration's exact counts per arrival, for every order timed
        progress(f"table8 {label}: counting comparisons over {units} time units")
        counts = count_comparisons(arr, windows, orders, name, tau, buckets)
        long_run = {o: float(counts[o][first:last].sum()) / units for o in orders}
        out["convergence"][label] = convergence(arr, windows, warm_units, {label: ({o: counts[o] for o in contenders}, {o: predicted[o] for o in contenders})})[label]
        # (2) the balanced sample: pieces whose counts of the contenders match the long run's
        aux = np.column_stack([_per_piece(arr, counts[o], starts) / PIECE_UNITS for o in contenders])
        chosen, deviation = balanced_sample(aux, np.asarray([long_run[o] for o in contenders]), k, seed)
        sample = [starts[c] for c in chosen]
        # (3) timing
        options = {"buckets": buckets} if buckets else {}
        pieces = _make_pieces(name, query, options, arr, sample, warm_units, best_o)
        light = {worst_o: (min(WORST_ROUNDS, rounds), min(WORST_PIECES, len(pieces)))}
        runs = time_orders(pieces, orders, rounds, seed, lambda m, label=label: progress(f"table8 {label}: {m}"), light)
        h = heur.order
        all_pieces = np.arange(len(pieces))
        runs, done, tied = settle_near_ties(
            runs,
            rounds,
            lambda r: near_ties(r, h, [o for o in contenders if o != h], all_pieces),
            lambda done: time_orders(pieces, contenders, rounds, seed + done, lambda m, label=label: progress(f"table8 {label} (more): {m}")),
            lambda tied, label=label: progress(f"table8 {label}: near tie with {', '.join(_names(o) for o in tied)}: {rounds} more rounds"),
        )
        rate = {o: _rates(runs[o], pieces) for o in orders}
        span = PIECE_UNITS * len(pieces)
        comps = {o: float(np.nansum(runs[o]["comparisons"])) / span for o in contenders}
        full = contenders  # timed on every piece, every round
        by_rate = sorted(full, key=lambda o: rate[o]["rate"], reverse=True)
        by_comps = sorted(full, key=comps.get)
        by_long = sorted(full, key=long_run.get)
        vs = {_names(o): _paired(runs[h], runs[o], all_pieces) for o in full if o != h}
        winner = paired_winner(runs, full, all_pieces)
        fastest = winner if winner is not None else by_rate[0]
        worst_cols = np.arange(light[worst_o][1])
        best_worst = _paired(runs[worst_o], runs[best_o], worst_cols)["time_ratio"]
        beaten_by = [n for n, v in vs.items() if v["time_ratio"] < 1 and v["distinguishable"]]
        out["configurations"][label] = {
            "algorithm": name,
            "tau": tau,
            "buckets": buckets,
            "rounds": done,
            "near_ties": [_names(o) for o in tied],
            "model": {"lazy_windows": model.lazy_windows, "order_dependent_windows": model.ordered},
            "sample": {
                "pieces": len(sample),
                "piece_starts": sample,
                "balanced_on": [_names(o) for o in contenders],
                "max_relative_deviation_from_long_run": round(deviation, 5),
            },
            "best_plan": _names(best_o),
            "worst_plan": _names(worst_o),
            "heuristic_plan": _names(h),
            "paper_heuristic_plan": _names(paper.order),
            "max_rate_best_plan": rate[best_o]["rate"],
            "max_rate_worst_plan": rate[worst_o]["rate"],
            "best_over_worst": round(1 / best_worst, 2) if best_worst else None,
            "predicted_worst_over_best": round(predicted[worst_o] / predicted[best_o], 2),
            "measured_fastest_plan": _names(fastest),
            "measured_fastest_by": "paired rounds" if winner is not None else "max rate",
            "fastest_by_max_rate": _names(by_rate[0]),
            "heuristic_rank_measured": by_rate.index(h) + 1,
            "heuristic_rate_over_fastest": round(rate[h]["rate"] / rate[by_rate[0]]["rate"], 4),
            "heuristic_is_measured_best": fastest == h,
            "heuristic_distinguishably_beaten_by": beaten_by,
            "heuristic_vs": vs,
            "heuristic_rank_by_measured_comparisons": by_comps.index(h) + 1,
            "heuristic_rank_by_long_run_comparisons": by_long.index(h) + 1,
            "measured_over_predicted_comparisons_heuristic": round(comps[h] / predicted[h], 4),
            "long_run_over_predicted_comparisons_heuristic": round(long_run[h] / predicted[h], 4),
            "fewest_comparisons_plan": _names(by_comps[0]),
            "fewest_long_run_comparisons_plan": _names(by_long[0]),
            "rank_correlation_rate": round(_spearman([-predicted[o] for o in full], [rate[o]["rate"] for o in full]), 3),
            "correlation_time_per_tuple_comparisons": round(
                float(
                    np.corrcoef(
                        [1 / rate[o]["rate"] for o in orders], [float(np.nansum(runs[o]["comparisons"][: rate[o]["pieces"]])) / rate[o]["tuples"] for o in orders]
                    )[0, 1]
                ),
                4,
            ),
            "orders": {
                _names(o): {
                    "predicted_cost": round(predicted[o], 2),
                    "predicted_cost_paper": round(paper_model.cost(o).total, 2),
                    "predicted_partial_results": round(model.partial_results(o), 2),
                    "long_run_comparisons_per_time_unit": round(long_run[o], 1),
                    "comparisons_per_time_unit": round(float(np.nansum(runs[o]["comparisons"])) / (PIECE_UNITS * rate[o]["pieces"]), 1),
                    **rate[o],
                }
                for o in orders
            },
        }
    return out


def _spearman(x, y) -> float:
    rx, ry = np.argsort(np.argsort(x)), np.argsort(np.argsort(y))
    return float(np.corrcoef(rx, ry)[0, 1]) if len(x) > 2 else 1.0
