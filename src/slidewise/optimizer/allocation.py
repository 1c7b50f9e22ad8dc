"""CPU and memory allocation among the inputs of a window join under overload.

Implements Kang, Naughton & Viglas, *Evaluating Window Joins over Unbounded
Streams*, ICDE 2003 §5.2. The model (Eq. 12) puts the output rate
of a two-way join at ``r_o = σ (λ_a B + λ_b A)``: every arrival of one stream
probes the other stream's window, and ``σ`` is the join selectivity.

* CPU-limited (§5.2.1, Eq. 13–14): the operator serves ``μ`` tuples/s, so it
  runs on *effective* rates ``λ'_a + λ'_b = μ`` (``λ'_i ≤ λ_i``); ``r_o`` is
  linear in ``λ'_a`` with slope ``σ (B − A)``, so the whole budget goes to the
  stream whose arrivals probe the larger window, less an optional minimum
  share per stream. :func:`cpu_two`.
* Memory-limited (§5.2.2, Eq. 15–16): window sizes ``A + B = M``; slope
  ``σ (λ_b − λ_a)`` in ``A``, so memory goes to the window of the slower
  stream (the one probed by the faster stream). :func:`memory_two`.
* Both (§5.2.3, Eq. 17–19): ``r_o`` is bilinear in (rates, windows), so the
  optimum is at a vertex — probe with one stream, keep the other stream's
  window, ``r_o → σ μ M``. :func:`both_two`.

Generalisation to ``n`` streams (:func:`allocate`): a result has one member
per stream and its origin probes the ``n − 1`` other windows, so
``r_o = σ Σ_i λ'_i Π_{j≠i} W_j`` (:func:`output_rate`; ``σ`` = probability
that a combination joins). This is affine in each variable separately, hence
exactly quadratic along any exchange ``x_i + x_j = const``:
:func:`maximize_sum` does exact pairwise exchanges until none improves
(optimal when the objective is linear, i.e. CPU-only with fixed windows, and
for every two-stream case; a local optimum from several starts otherwise).

Shedding modes (how the rates are realised, :mod:`slidewise.runtime.overload`):
``"probe"`` is the paper's §5.2.1 assumption — every arrival still enters its
window, a shed arrival only skips its probe — so windows keep their full size.
``"drop"`` drops shed arrivals entirely (real CPU and memory savings): a time
window then holds ``λ'_i·τ_i`` tuples, which changes the optimum (two time
windows: the objective is ``σ λ'_a λ'_b (τ_a + τ_b)``, maximal at an equal
split), and a count window holds the last ``N`` kept tuples, so every stream
with a count window keeps at least :data:`DROP_FLOOR` of ``μ``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from slidewise.errors import OptionError

#: allocation strategies for the CPU budget (rates) and the memory budget (windows)
CPU_STRATEGIES = ("optimal", "equal", "rates", "windows", "max:<stream>")
MEMORY_STRATEGIES = ("optimal", "equal", "rates", "inverse", "max:<stream>")
#: drop mode: minimum share of μ for a stream with a count window (else its window empties)
DROP_FLOOR = 0.05
_EPS = 1e-12


@dataclass(frozen=True)
class StreamLoad:
    """One input of the join: arrival rate λ (tuples/s) and its window.

    Exactly one of ``rows`` (a count window of ``rows`` tuples) and ``seconds``
    (a time window; it holds ``rate × seconds`` tuples) is set.
    """

    rate: float
    rows: float | None = None
    seconds: float | None = None

    def __post_init__(self) -> None:
        if (self.rows is None) == (self.seconds is None):
            raise ValueError("give exactly one of rows (count window) and seconds (time window)")

    @property
    def counting(self) -> bool:
        return self.rows is not None

    def window(self, rate: float | None = None) -> float:
        """Tuples in the window when the stream is fed at ``rate`` (default: its arrival rate)."""
        if self.rows is not None:
            return float(self.rows)
        assert self.seconds is not None  # exactly one of rows and seconds is set
        return (self.rate if rate is None else rate) * self.seconds


@dataclass(frozen=True)
class Allocation:
    """Effective rates λ' and window sizes W chosen for each stream, with the model's output rates."""

    arrival: tuple[float, ...]
    rates: tuple[float, ...]
    windows: tuple[float, ...]
    full_windows: tuple[float, ...]
    sigma: float
    output_rate: float
    exact_rate: float
    cpu_limited: bool = False
    memory_limited: bool = False
    strategy: str = "optimal/optimal"
    mode: str = "probe"
    notes: tuple[str, ...] = field(default=())

    @property
    def keep(self) -> tuple[float, ...]:
        """Per stream: probability that an arrival is processed (λ'/λ)."""
        return tuple(min(1.0, x / lam) if lam > 0 else 1.0 for x, lam in zip(self.rates, self.arrival))

    @property
    def sample(self) -> tuple[float, ...]:
        """Per stream: probability that a processed tuple is kept in its window (W / full window)."""
        return tuple(min(1.0, w / f) if f > 0 else 1.0 for w, f in zip(self.windows, self.full_windows))

    def as_dict(self, names: Sequence[str] | None = None) -> dict:
        names = list(names) if names else [f"S{i + 1}" for i in range(len(self.rates))]

        def per(values):
            return {n: round(float(v), 6) for n, v in zip(names, values)}

        return {
            "strategy": self.strategy,
            "mode": self.mode,
            "cpu_limited": self.cpu_limited,
            "memory_limited": self.memory_limited,
            "arrival_rate": per(self.arrival),
            "effective_rate": per(self.rates),
            "window": per(self.windows),
            "full_window": per(self.full_windows),
            "keep_probability": per(self.keep),
            "window_probability": per(self.sample),
            "sigma": self.sigma,
            "predicted_output_rate": round(self.output_rate, 6),
            "predicted_exact_rate": round(self.exact_rate, 6),
            "notes": list(self.notes),
        }


# ------------------------------------------------------------- the model ----


def output_rate(rates: Sequence[float], windows: Sequence[float], sigma: float = 1.0) -> float:
    """``σ Σ_i λ_i Π_{j≠i} W_j`` (Kang et al. Eq. 12 for two streams: ``σ(λ_a B + λ_b A)``)."""
    total = 0.0
    for i, x in enumerate(rates):
        prod = x
        for j, w in enumerate(windows):
            if j != i:
                prod *= w
        total += prod
    return sigma * total


# ---------------------------------------------------- two-stream closed forms ----


def cpu_two(la: float, lb: float, a: float, b: float, mu: float, min_share: float = 0.0) -> tuple[float, float]:
    """Effective rates ``(λ'_a, λ'_b)`` maximising Eq. 14 for window sizes ``a``, ``b``.

    ``λ'_a + λ'_b = μ`` when ``λ_a + λ_b > μ``; each stream keeps at least
    ``min_share · μ`` (capped by its rate). Equal windows: output is flat
    (``σ μ A``); the split is then proportional to the rates.
    """
    if la + lb <= mu:
        return la, lb
    lo_a, lo_b = min(la, min_share * mu), min(lb, min_share * mu)
    if b > a:  # probing the bigger window B pays: maximise λ'_a
        xa = min(la, mu - lo_b)
        return xa, mu - xa
    if a > b:
        xb = min(lb, mu - lo_a)
        return mu - xb, xb
    xa = min(la, max(lo_a, mu - lb, mu * la / (la + lb)))
    return xa, mu - xa


def memory_two(la: float, lb: float, memory: float, cap_a: float, cap_b: float, min_share: float = 0.0) -> tuple[float, float]:
    """Window sizes ``(A, B)`` maximising Eq. 16 with ``A + B = M``, ``A ≤ cap_a``, ``B ≤ cap_b``.

    The slower stream's window gets the memory (the faster stream probes it);
    each window keeps at least ``min_share · M`` (capped by its full size).
    """
    if cap_a + cap_b <= memory:
        return cap_a, cap_b
    lo_a, lo_b = min(cap_a, min_share * memory), min(cap_b, min_share * memory)
    if lb > la:  # B's arrivals probe A: maximise A
        wa = min(cap_a, memory - lo_b)
        return wa, memory - wa
    if la > lb:
        wb = min(cap_b, memory - lo_a)
        return memory - wb, wb
    wa = min(cap_a, max(lo_a, memory - cap_b, memory / 2))
    return wa, memory - wa


def both_two(la: float, lb: float, a_full: float, b_full: float, mu: float, memory: float, min_share: float = 0.0) -> tuple[float, float, float, float]:
    """``(λ'_a, λ'_b, A, B)`` maximising Eq. 17–19 (both budgets binding).

    ``r_o`` is bilinear, so the best pair of vertices of the rate segment and
    the window segment wins; without caps it reaches ``σ μ M``.
    """

    def vertices(total, hi_a, hi_b, share):
        if hi_a + hi_b <= total:
            return [(hi_a, hi_b)]
        lo_a, lo_b = min(hi_a, share * total), min(hi_b, share * total)
        return [(min(hi_a, total - lo_b), total - min(hi_a, total - lo_b)), (total - min(hi_b, total - lo_a), min(hi_b, total - lo_a))]

    best = None
    for xa, xb in vertices(mu, la, lb, min_share):
        for wa, wb in vertices(memory, a_full, b_full, min_share):
            r = xa * wb + xb * wa
            if best is None or r > best[0] + _EPS:
                best = (r, xa, xb, wa, wb)
    assert best is not None  # vertices() never returns an empty list
    return best[1:]


# ------------------------------------------------------------ n streams ----


def split(total: float, weights: Sequence[float], lo: Sequence[float], hi: Sequence[float]) -> list[float]:
    """Water-filling: ``lo`` first, the rest of ``total`` proportional to ``weights`` up to ``hi``."""
    n = len(weights)
    x = [min(lo[i], hi[i]) for i in range(n)]
    rest = total - sum(x)
    free = [i for i in range(n) if x[i] < hi[i] - _EPS and weights[i] > 0]
    while rest > _EPS and free:
        wsum = sum(weights[i] for i in free)
        grant = {i: rest * weights[i] / wsum for i in free}
        capped = [i for i in free if x[i] + grant[i] >= hi[i] - _EPS]
        if not capped:
            for i in free:
                x[i] += grant[i]
            break
        for i in capped:
            rest -= hi[i] - x[i]
            x[i] = hi[i]
        free = [i for i in free if i not in capped]
    return x


def maximize_sum(
    f: Callable[[list[float]], float], total: float, lo: Sequence[float], hi: Sequence[float], starts: Sequence[Sequence[float]] | None = None, sweeps: int = 60
) -> list[float]:
    """Maximise ``f`` over ``{Σ x = total, lo ≤ x ≤ hi}`` by exact pairwise exchanges.

    ``f`` must be affine in each coordinate (as :func:`output_rate` is), so it
    is a quadratic along ``x_i + x_j = const``, maximised exactly from three
    evaluations. If ``Σ hi ≤ total`` the answer is ``hi``.
    """
    n = len(lo)
    if sum(hi) <= total + _EPS:
        return list(hi)
    candidates = [list(s) for s in starts] if starts else []
    candidates.append(split(total, [1.0] * n, lo, hi))
    best, best_val = None, -math.inf
    for x in candidates:
        x = _ascend(f, list(x), lo, hi, sweeps)
        val = f(x)
        if best is None or val > best_val + _EPS * max(1.0, abs(best_val)):
            best, best_val = x, val
    assert best is not None  # candidates holds at least the water-filling split
    return best


def _ascend(f: Callable[[list[float]], float], x: list[float], lo: Sequence[float], hi: Sequence[float], sweeps: int) -> list[float]:
    n = len(x)
    current = f(x)
    for _ in range(sweeps):
        improved = False
        for i, j in itertools.combinations(range(n), 2):
            s = x[i] + x[j]
            t0, t1 = max(lo[i], s - hi[j]), min(hi[i], s - lo[j])
            if t1 - t0 <= _EPS:
                continue

            def g(t):
                y = list(x)
                y[i], y[j] = t, s - t
                return f(y)

            tm = (t0 + t1) / 2
            g0, g1, gm = g(t0), g(t1), g(tm)
            cands = [(g0, t0), (g1, t1), (gm, tm)]
            curv = 4 * (g0 + g1 - 2 * gm) / (t1 - t0) ** 2  # second derivative of the quadratic
            if curv < -_EPS:
                slope_m = (g1 - g0) / (t1 - t0)
                t_star = min(t1, max(t0, tm - slope_m / curv))
                cands.append((g(t_star), t_star))
            val, t = max(cands)
            if val > current + 1e-12 * max(1.0, abs(current)):
                x[i], x[j], current, improved = t, s - t, val, True
        if not improved:
            break
    return x


def _stream_index(spec: str, names: Sequence[str]) -> int:
    target = spec.split(":", 1)[1].strip()
    if target in names:
        return list(names).index(target)
    if target.isdigit() and int(target) < len(names):
        return int(target)
    raise OptionError(f"unknown stream {target!r} in allocation strategy {spec!r}", hint=f"name one of {', '.join(names)}, e.g. max:{names[0]}")


def _fixed(strategy: str, total: float, lo: Sequence[float], hi: Sequence[float], weights: dict[str, Sequence[float]], names: Sequence[str], kind: str) -> list[float]:
    """A named non-optimal strategy: a water-filling split with its weights."""
    n = len(lo)
    if strategy.startswith("max:"):
        k = _stream_index(strategy, names)
        first = split(total, [1.0 if i == k else 0.0 for i in range(n)], lo, hi)
        return split(total, [1.0] * n, first, hi)
    if strategy == "equal":
        return split(total, [1.0] * n, lo, hi)
    if strategy in weights:
        return split(total, weights[strategy], lo, hi)
    allowed = CPU_STRATEGIES if kind == "cpu" else MEMORY_STRATEGIES
    raise OptionError(f"unknown {kind} allocation strategy {strategy!r}", hint=f"use one of {', '.join(allowed)}")


def allocate(
    loads: Sequence[StreamLoad],
    *,
    cpu_budget: float | None = None,
    memory_budget: float | None = None,
    min_share: float = 0.0,
    sigma: float = 1.0,
    mode: str = "probe",
    cpu: str = "optimal",
    memory: str = "optimal",
    names: Sequence[str] | None = None,
) -> Allocation:
    """Effective rates and window sizes for ``loads`` under a CPU budget ``μ`` and/or memory ``M``.

    ``min_share`` (0 ≤ s ≤ 1/n): each stream keeps at least ``s·μ`` of the
    CPU budget and ``s·M`` of the memory (capped by what it has). ``cpu`` /
    ``memory`` name the strategy (:data:`CPU_STRATEGIES`,
    :data:`MEMORY_STRATEGIES`); the non-optimal ones are the paper's
    comparison points (Figs. 5–7).
    """
    n = len(loads)
    names = list(names) if names else [f"S{i + 1}" for i in range(n)]
    if mode not in ("probe", "drop"):
        raise OptionError(f"unknown shedding mode {mode!r}", hint="use probe or drop")
    if not 0 <= min_share <= 1.0 / n + _EPS:
        raise OptionError(f"--min-share must be between 0 and 1/{n}, got {min_share:g}", hint="a fraction of the budget every stream keeps, e.g. 0.1")
    lam = [max(0.0, float(s.rate)) for s in loads]
    notes: list[str] = []
    cpu_limited = cpu_budget is not None and sum(lam) > cpu_budget + _EPS

    def mem_cap(x: Sequence[float]) -> list[float]:
        """Full window sizes at effective rates ``x`` (drop mode) or at the arrival rates (probe)."""
        return [s.window(xi if mode == "drop" else None) for s, xi in zip(loads, x)]

    memory_limited = memory_budget is not None and sum(mem_cap(lam)) > memory_budget + _EPS
    mu = float(cpu_budget) if cpu_limited and cpu_budget is not None else sum(lam)

    x_lo = [min(lam[i], min_share * mu) for i in range(n)]
    if mode == "drop" and cpu_limited:
        for i, s in enumerate(loads):
            if s.counting and x_lo[i] < min(lam[i], DROP_FLOOR * mu):
                x_lo[i] = min(lam[i], DROP_FLOOR * mu)
                notes.append(f"{names[i]} keeps at least {DROP_FLOOR:.0%} of μ so that its count window stays fed (drop mode)")

    def windows_for(x: list[float]) -> list[float]:
        caps = mem_cap(x)
        if memory_budget is None or sum(caps) <= memory_budget + _EPS:
            return caps
        w_lo = [min(c, min_share * memory_budget) for c in caps]
        if memory != "optimal":
            inv = [1.0 / v if v > 0 else 0.0 for v in lam]
            return _fixed(memory, memory_budget, w_lo, caps, {"rates": lam, "inverse": inv}, names, "memory")
        if n == 2:  # linear in the windows: Eq. 16 with the effective rates
            return list(memory_two(x[0], x[1], memory_budget, caps[0], caps[1], min_share))
        return maximize_sum(lambda w: output_rate(x, w), memory_budget, w_lo, caps, starts=_vertex_starts(memory_budget, w_lo, caps))

    def value(x: list[float]) -> float:
        return output_rate(x, windows_for(x))

    if not cpu_limited:
        rates = lam
    elif cpu != "optimal":
        rates = _fixed(cpu, mu, x_lo, lam, {"rates": lam, "windows": [s.window() for s in loads]}, names, "cpu")
    elif not memory_limited or memory != "optimal":
        rates = maximize_sum(value if memory_limited else (lambda x: output_rate(x, mem_cap(x))), mu, x_lo, lam, starts=_vertex_starts(mu, x_lo, lam))
    else:
        rates = _joint(value, mu, x_lo, lam)
    windows = windows_for(list(rates))
    full = mem_cap(list(rates))
    memory_limited = memory_budget is not None and sum(full) > memory_budget + _EPS
    exact = output_rate(lam, [s.window() for s in loads], sigma)
    return Allocation(
        tuple(lam),
        tuple(rates),
        tuple(windows),
        tuple(full),
        sigma,
        output_rate(rates, windows, sigma),
        exact,
        cpu_limited,
        memory_limited,
        f"{cpu}/{memory}",
        mode,
        tuple(notes),
    )


def _vertex_starts(total: float, lo: Sequence[float], hi: Sequence[float]) -> list[list[float]]:
    """Start points: each stream filled first, then the rest equally (for non-concave cases)."""
    n = len(lo)
    starts = []
    for k in range(n):
        first = split(total, [1.0 if i == k else 0.0 for i in range(n)], lo, hi)
        starts.append(split(total, [1.0] * n, first, hi))
    return starts


def _joint(value: Callable[[list[float]], float], mu: float, lo: Sequence[float], hi: Sequence[float], grid: int = 200) -> list[float]:
    """Both budgets binding: rates chosen with the best windows for each candidate.

    Two streams: a grid over the rate segment plus its end points (the
    bilinear optimum is at a vertex, Eq. 19), refined locally. More streams:
    pairwise exchanges on ``value`` from the vertex starts (a local optimum).
    """
    n = len(lo)
    if n != 2:
        return maximize_sum(value, mu, lo, hi, starts=_vertex_starts(mu, lo, hi))
    t0, t1 = max(lo[0], mu - hi[1]), min(hi[0], mu - lo[1])
    if t1 - t0 <= _EPS:
        return [t0, mu - t0]
    ts = [t0 + (t1 - t0) * k / grid for k in range(grid + 1)]
    best = max(ts, key=lambda t: value([t, mu - t]))
    step = (t1 - t0) / grid
    a, b = max(t0, best - step), min(t1, best + step)
    for _ in range(60):  # golden-section refinement around the best grid point
        m1, m2 = a + (b - a) * 0.382, a + (b - a) * 0.618
        if value([m1, mu - m1]) < value([m2, mu - m2]):
            a = m1
        else:
            b = m2
    t = max((best, (a + b) / 2), key=lambda t: value([t, mu - t]))
    return [t, mu - t]
