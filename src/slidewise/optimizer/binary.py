"""Unit-time cost model of a binary window join split into its two join directions.

Paper: Kang, Naughton & Viglas, *Evaluating Window Joins over Unbounded
Streams* (ICDE 2003) §4 and §5.1.

Model (Eq. 1–2): the cost per unit time of joining windows A and B is the sum
of two independent *directions*. Direction A→B is the work caused by window B:
``λ_a`` probes of B per unit time plus ``λ_b`` insertions and ``λ_b``
invalidations of B (physical windows: one tuple leaves per arrival). Its cost
depends only on the data structure ``d`` kept on window B::

    C_{A→B}(d) = λ_a · search_d(B) · P_d + λ_b · update_d(B) · I_d

with ``P_d`` / ``I_d`` the weight factors (time per touched tuple) of a search /
an update of ``d``, and the touched-tuple counts (Table 1 notation: ``N`` node
size, ``B/|B|`` hash bucket size, ``B`` the window's tuples; for a time window
``B = T_b · λ_b``):

=====  ==============================================  =============================================
``d``  search_d(B) per probe                            update_d(B) per arrival (insert + invalidate)
=====  ==============================================  =============================================
N      ``B``                                   (Eq. 3)  ``2``
H      ``B/|B|``                               (Eq. 4)  ``2``
B      ``h · ⌈log2 N⌉``, ``h = ⌈log_{N+1}⌈B/N⌉⌉ + 1``   ``2 · h · ⌈log2 N⌉``                 (Eq. 5)
T      ``1.5 · (⌈log2⌈B/N⌉⌉ − 1) + ⌈log2 N⌉``  (Eq. 6)  ``2 · (1.5 · (⌈log2⌈B/N⌉⌉ − 1) + ⌈log2 N⌉)``
=====  ==============================================  =============================================

Naming (the paper's, §5.1 and Table 3): a combination is two letters ``XY``;
``X`` is the structure on window **A** (serving B's arrivals, direction B→A)
and ``Y`` the structure on window **B** (serving A's arrivals, A→B). So ``TN``
keeps a T-tree on A and scans B with nested loops; its cost is
``C_{B→A}(T) + C_{A→B}(N)`` (Eq. 8 checks this: TN and TH differ only in the
A→B term, ``λ_a · B · P_n`` vs ``λ_a · B/|B| · P_h``).

Because the directions are independent, the best combination is the best
structure per window (:func:`choose`); crossover points are the rate ratios
where two structures of one window cost the same (:func:`crossover_ratio`,
Eq. 8–11) or, for a fixed set of combinations, where the cheapest one changes
along ``λ_a / λ_b`` (:func:`rate_crossovers`, Fig. 2); :func:`window_crossover`
gives the window size at which a flip happens for fixed rates.

Weights: :data:`PAPER_WEIGHTS` are the Eq. 7 factors (the documented defaults);
:func:`load_weights` reads a profile written by ``slidewise calibrate``
(:mod:`slidewise.optimizer.calibrate`), in seconds per touched tuple, from
``$SLIDEWISE_PROFILE`` or ``~/.config/slidewise/profile.json``.

Terms added to Eq. 3–6 for calibrated profiles (zero in :data:`PAPER_WEIGHTS`,
so every number of the paper is unchanged). The cost of one operation on a
window of ``W`` tuples with ``t`` touched tuples is::

    search_d(W) = α_d + t · (P_d + κ_d · log2 W)        (per probe)
    update_d(W) = β_d + t · (I_d + ν_d · log2 W)        (per arrival)

* ``α_d`` / ``β_d`` — a constant per probe / per arrival and structure: the
  interpreter's call and set-up cost, which a Python operator pays even when
  nothing is touched. Measured on this project's operators (2-core machine,
  CPU time, medians): a B+tree probe of a 10-tuple window (7 touches) costs
  3.9 µs and one of 4000 tuples (14 touches) 5.1 µs; a T-tree probe 3.8 µs
  at 10 tuples (7 touches) and 5.6 µs at 4000 (14.5); a hash probe of a
  10-tuple bucket 8-10 µs. Fitting these through the origin (as Eq. 7 does)
  made the B+tree look 2x dearer at 14 touches than at 7 and mis-ranked the
  structures whose touch counts differ (B/T against H/N).
* ``κ_d`` / ``ν_d`` — a per-touched-tuple surcharge growing with ``log2 W``:
  the memory hierarchy. A hash probe touches ``B/|B|`` = 10 tuples at every
  window size, yet it cost 10.4–11.5 µs up to 2000 tuples and 14.2 / 17.5 /
  19.2 µs at 4000 / 8000 / 16000 (the touched tuples are scattered objects
  that stop fitting in the caches); hash updates rose from 4.8 µs (250) to
  6.3 µs (16000). Eq. 4 has no window size in it, so without this term the
  model cannot tell a hash probe into 3000 tuples from one into 7000 (seed
  002 Table 3, workload Fig. 4b).

``calibrate`` fits ``(α, P, κ)`` and ``(β, I, ν)`` per structure by
non-negative least squares on relative errors; a column that does not vary
over the measured points (the touches of N/H updates are always 2) is folded
into the slope, as in the paper's form (for hash probes, whose touches are
``B/|B|`` at every window size, ``α_H`` is part of ``P_H`` at the profile's
bucket size).

Errata found by recomputing the paper's numbers (tests pin the consistent form):

* Eq. 6 as printed doubles only the ``1.5 · (…)`` part of the T-tree update;
  every T-tree entry of Table 3 is reproduced (to 0.01) only when the whole
  search path is doubled, as for the B+tree in Eq. 5. We double the whole path.
* Eq. 9–10 as printed use ``⌈log2 2N⌉``; equating the Eq. 7 costs gives
  ``(58.9 − 3.9 L − 2.6 ⌈log2 N⌉) / (8.1 L + 5.4 ⌈log2 N⌉ − 23.7)`` with
  ``L = ⌈log2⌈A/N⌉⌉`` — ≈ 0.276 for A = 5000, the "20 %/80 %" crossover the
  text reports for Fig. 2 (Eq. 10 is its reciprocal with ``B``).
* For ``B <= N`` the T-tree term ``⌈log2⌈B/N⌉⌉ − 1`` would be negative; it is
  clamped at 0 (a single node: just the binary search). Windows below one
  tuple count as one.

>>> round(combination_cost("TN", 2, 998, 9500, 500), 2)   # Table 3, first row
4.67
>>> choose(2, 998, 9500, 500, methods=("N", "H", "T")).combination
'TN'
>>> round(crossover_ratio("N", "H", 500), 4)              # Eq. 8: 13.6 / (3 · 500 − 55)
0.0094
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

from slidewise.errors import OptionError

#: the four one-way join methods / window structures (Kang et al. §4.2)
METHODS = ("N", "H", "B", "T")
METHOD_NAMES = {"N": "nested loops", "H": "hash", "B": "B+tree", "T": "T-tree"}
#: the eight combinations of Fig. 2–3 and Table 3 (B+tree combinations left out there)
PAPER_COMBINATIONS = ("HH", "TT", "HT", "TH", "HN", "NH", "TN", "NT")
#: all 16 combinations, first letter = structure on window A
ALL_COMBINATIONS = tuple(x + y for x in METHODS for y in METHODS)
#: where ``slidewise calibrate`` writes and the model looks for a profile
PROFILE_ENV = "SLIDEWISE_PROFILE"


@dataclass(frozen=True)
class Structure:
    """Shape parameters of the structures: hash bucket size ``B/|B|`` and tree node size ``N``."""

    bucket_size: float = 10.0
    node_size: int = 100


@dataclass(frozen=True)
class Weights:
    """Weight factors per method: ``search[d]`` = P_d, ``update[d]`` = I_d (time per touched tuple)."""

    search: dict[str, float]
    update: dict[str, float]
    structure: Structure = field(default_factory=Structure)
    source: str = ""
    unit: str = ""
    #: α_d: seconds per probe independent of the touched tuples (0: the paper's form)
    search_const: dict[str, float] = field(default_factory=dict)
    #: β_d: seconds per update (insert + invalidate) independent of the touched tuples
    update_const: dict[str, float] = field(default_factory=dict)
    #: κ_d: extra seconds per touched tuple of a probe, per doubling of the window
    search_log: dict[str, float] = field(default_factory=dict)
    #: ν_d: extra seconds per touched tuple of an update, per doubling of the window
    update_log: dict[str, float] = field(default_factory=dict)

    def P(self, method: str) -> float:
        return self.search[_method(method)]

    def I(self, method: str) -> float:  # noqa: E743 - the paper's name
        return self.update[_method(method)]

    def search_time(self, method: str, window: float) -> float:
        """Cost of one probe of ``method`` on ``window`` tuples: ``α + t·(P + κ·log2 W)``."""
        m = _method(method)
        t = search_touches(m, window, self.structure)
        return self.search_const.get(m, 0.0) + t * (self.search[m] + self.search_log.get(m, 0.0) * _log2(window))

    def update_time(self, method: str, window: float) -> float:
        """Cost of one arrival into ``window`` (insert + invalidate): ``β + t·(I + ν·log2 W)``."""
        m = _method(method)
        t = update_touches(m, window, self.structure)
        return self.update_const.get(m, 0.0) + t * (self.update[m] + self.update_log.get(m, 0.0) * _log2(window))

    def as_dict(self) -> dict:
        return {
            "source": self.source,
            "unit": self.unit,
            "structure": {"bucket_size": self.structure.bucket_size, "node_size": self.structure.node_size},
            "weights": {
                d: {
                    "P": self.search[d],
                    "I": self.update[d],
                    "P_const": self.search_const.get(d, 0.0),
                    "I_const": self.update_const.get(d, 0.0),
                    "P_log": self.search_log.get(d, 0.0),
                    "I_log": self.update_log.get(d, 0.0),
                }
                for d in METHODS
            },
        }


#: Eq. 7 (Java on a 1.5 GHz Athlon; only their ratios carry over to another machine)
PAPER_WEIGHTS = Weights(
    search={"N": 3e-4, "H": 5.5e-4, "B": 2.6e-4, "T": 2.6e-4},
    update={"N": 1e-4, "H": 7.8e-4, "B": 2.6e-4, "T": 2.7e-4},
    source="Kang et al. Eq. 7 (paper defaults)",
    unit="paper Eq. 7 units per touched tuple",
)


def _method(m: str) -> str:
    if m not in METHODS:
        raise OptionError(f"unknown join method {m!r}", hint="use N (nested loops), H (hash), B (B+tree) or T (T-tree)")
    return m


def _log2(window: float) -> float:
    """``log2 W`` of the window-size terms (windows below one tuple count as one)."""
    return math.log2(max(window, 1.0))


def _ceil_log2(x: float) -> int:
    return math.ceil(math.log2(x)) if x > 1 else 0


def _tree_levels(window: float, node_size: int) -> int:
    """B+tree height ``⌈log_{N+1}⌈W/N⌉⌉ + 1`` (Eq. 5)."""
    leaves = math.ceil(max(window, 1) / node_size)
    inner, span = 0, 1
    while span < leaves:  # integer ceil(log_{N+1} leaves), exact for large inputs
        span *= node_size + 1
        inner += 1
    return inner + 1


def _ttree_path(window: float, node_size: int) -> float:
    """T-tree search path ``1.5 · (⌈log2⌈W/N⌉⌉ − 1) + ⌈log2 N⌉`` (Eq. 6, clamped at one node)."""
    nodes = math.ceil(max(window, 1) / node_size)
    return 1.5 * max(_ceil_log2(nodes) - 1, 0) + _ceil_log2(node_size)


def search_touches(method: str, window: float, structure: Structure = Structure()) -> float:
    """Tuples touched by one probe of a window of ``window`` tuples (Eq. 3–6)."""
    m = _method(method)
    window = max(window, 1)
    if m == "N":
        return float(window)
    if m == "H":
        return float(min(structure.bucket_size, window))
    if m == "B":
        return float(_tree_levels(window, structure.node_size) * _ceil_log2(structure.node_size))
    return _ttree_path(window, structure.node_size)


def update_touches(method: str, window: float, structure: Structure = Structure()) -> float:
    """Tuples touched by one arrival into the window: an insertion plus an invalidation (Eq. 3–6)."""
    m = _method(method)
    if m in ("N", "H"):
        return 2.0
    return 2.0 * search_touches(m, window, structure)


def direction_cost(method: str, probe_rate: float, update_rate: float, window: float, weights: Weights = PAPER_WEIGHTS) -> float:
    """Cost per unit time of one direction whose target window uses ``method`` (Eq. 2–6).

    ``probe_rate``: arrivals of the other stream (each probes this window);
    ``update_rate``: arrivals of this window's own stream. With calibrated
    constants and window-size terms (module docstring) the per-operation
    costs are :meth:`Weights.search_time` / :meth:`Weights.update_time`.
    """
    return probe_rate * weights.search_time(method, window) + update_rate * weights.update_time(method, window)


def combination_cost(combination: str, rate_a: float, rate_b: float, window_a: float, window_b: float, weights: Weights = PAPER_WEIGHTS) -> float:
    """Cost of the combination ``XY`` (X on window A, Y on window B): C_{B→A}(X) + C_{A→B}(Y)."""
    x, y = _combination(combination)
    return direction_cost(x, rate_b, rate_a, window_a, weights) + direction_cost(y, rate_a, rate_b, window_b, weights)


def _combination(combination: str) -> tuple[str, str]:
    if len(combination) != 2:
        raise OptionError(f"a join combination has two letters, got {combination!r}", hint="e.g. TH: T-tree on the first window, hash on the second")
    return _method(combination[0]), _method(combination[1])


def combination_costs(
    rate_a: float, rate_b: float, window_a: float, window_b: float, weights: Weights = PAPER_WEIGHTS, combinations: tuple[str, ...] = PAPER_COMBINATIONS
) -> dict[str, float]:
    """Estimated cost of each combination (one row of Table 3)."""
    return {c: combination_cost(c, rate_a, rate_b, window_a, window_b, weights) for c in combinations}


def best_method(probe_rate: float, update_rate: float, window: float, weights: Weights = PAPER_WEIGHTS, methods: tuple[str, ...] = METHODS) -> str:
    """The cheapest structure for one window (ties: the earlier in ``methods``)."""
    return min(methods, key=lambda m: direction_cost(m, probe_rate, update_rate, window, weights))


@dataclass(frozen=True)
class Choice:
    """The chosen combination, its cost and every candidate's cost."""

    combination: str
    cost: float
    costs: dict[str, float]


def choose(
    rate_a: float,
    rate_b: float,
    window_a: float,
    window_b: float,
    weights: Weights = PAPER_WEIGHTS,
    methods: tuple[str, ...] = METHODS,
    methods_a: tuple[str, ...] | None = None,
    methods_b: tuple[str, ...] | None = None,
) -> Choice:
    """Best combination: the best structure for each window independently (§4.2, §5.1).

    ``methods_a`` / ``methods_b`` restrict a window's structures (e.g. no hash
    without an equality predicate); both default to ``methods``.
    """
    ma, mb = methods_a or methods, methods_b or methods
    x = best_method(rate_b, rate_a, window_a, weights, ma)
    y = best_method(rate_a, rate_b, window_b, weights, mb)
    costs = combination_costs(rate_a, rate_b, window_a, window_b, weights, tuple(p + q for p in ma for q in mb))
    return Choice(x + y, costs[x + y], costs)


def crossover_ratio(m1: str, m2: str, window: float, weights: Weights = PAPER_WEIGHTS) -> float | None:
    """Probe-to-update rate ratio at which ``m1`` and ``m2`` on one window cost the same.

    For window B this is ``λ_a / λ_b`` (Eq. 8, 11), for window A ``λ_b / λ_a``
    (Eq. 9, 10 invert it). ``None`` when the two never cross for positive rates.
    """
    dp = weights.search_time(m1, window) - weights.search_time(m2, window)
    du = weights.update_time(m1, window) - weights.update_time(m2, window)
    if dp == 0 or -du / dp <= 0:
        return None
    return -du / dp


@dataclass(frozen=True)
class Crossover:
    """Where the cheapest combination changes: at ``λ_a/λ_b = ratio`` (``share`` = λ_a/(λ_a+λ_b))."""

    ratio: float
    share: float
    before: str
    after: str
    cost: float


def rate_crossovers(window_a: float, window_b: float, weights: Weights = PAPER_WEIGHTS, combinations: tuple[str, ...] = PAPER_COMBINATIONS) -> list[Crossover]:
    """Flips of the cheapest of ``combinations`` as ``λ_a`` goes from 0 % to 100 % of the arrivals.

    With ``λ_a = f``, ``λ_b = 1 − f`` every combination's cost is linear in
    ``f``; the crossovers are the breakpoints of their lower envelope (Fig. 2).
    """
    return envelope_crossovers(
        {c: (combination_cost(c, 0.0, 1.0, window_a, window_b, weights), combination_cost(c, 1.0, 0.0, window_a, window_b, weights)) for c in combinations}
    )


def envelope_crossovers(lines: dict[str, tuple[float, float]]) -> list[Crossover]:
    """Breakpoints of the lower envelope of ``cost_c(f) = (1 − f) · b_c + f · a_c`` on ``0 < f < 1``.

    ``lines[c] = (b_c, a_c)``: the cost of combination ``c`` per arrival when
    all arrivals are B's (``f = 0``) and when all are A's (``f = 1``) — from
    the model or measured. Ties go to the earlier name in ``lines``.
    """
    names = list(lines)

    def cost(c: str, f: float) -> float:
        b0, a1 = lines[c]
        return (1 - f) * b0 + f * a1

    def best(f: float) -> str:
        return min(names, key=lambda c: (cost(c, f), names.index(c)))

    def meet(c: str, d: str) -> float | None:
        (b0, a1), (d0, d1) = lines[c], lines[d]
        denom = (a1 - b0) - (d1 - d0)
        return None if denom == 0 else (d0 - b0) / denom

    points = {0.0, 1.0}
    for i, c in enumerate(names):
        for d in names[i + 1 :]:
            f = meet(c, d)
            if f is not None and 0 < f < 1:
                points.add(f)
    grid = sorted(points)
    out: list[Crossover] = []
    current = best((grid[0] + grid[1]) / 2)
    for lo, hi in zip(grid[1:-1], grid[2:]):
        nxt = best((lo + hi) / 2)
        if nxt != current:
            f = meet(current, nxt)
            assert f is not None  # the cheapest plan changed, so the two cost lines cross
            out.append(Crossover(f / (1 - f), f, current, nxt, cost(current, f)))
            current = nxt
    return out


def window_crossover(m1: str, m2: str, probe_rate: float, update_rate: float, weights: Weights = PAPER_WEIGHTS, lo: int = 1, hi: int = 10**8) -> int | None:
    """Smallest window size in ``(lo, hi]`` where the cheaper of ``m1``/``m2`` differs from at ``lo``.

    Bisection; assumes a single flip in the range (true for N against the
    others, whose cost difference grows with the window). ``None`` if no flip.
    """

    def sign(w: int) -> bool:
        return direction_cost(m1, probe_rate, update_rate, w, weights) < direction_cost(m2, probe_rate, update_rate, w, weights)

    first = sign(lo)
    if sign(hi) == first:
        return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if sign(mid) == first:
            lo = mid
        else:
            hi = mid
    return hi


# -- profiles -----------------------------------------------------------------------


def default_profile_path() -> Path:
    """``$SLIDEWISE_PROFILE`` if set, else ``~/.config/slidewise/profile.json``."""
    env = os.environ.get(PROFILE_ENV)
    if env:
        return Path(env).expanduser()
    return Path.home() / ".config" / "slidewise" / "profile.json"


def weights_from_profile(data: dict, source: str = "profile") -> Weights:
    """Weights from the JSON written by :mod:`slidewise.optimizer.calibrate`."""
    try:
        w = data["weights"]
        s = data.get("structure", {})
        structure = Structure(float(s.get("bucket_size", 10.0)), int(s.get("node_size", 100)))
        search = {d: float(w[d]["P"]) for d in METHODS}
        update = {d: float(w[d]["I"]) for d in METHODS}
        # version-2 terms (constants, window-size surcharges); absent in version-1 profiles
        extra = {k: {d: float(w[d].get(k, 0.0)) for d in METHODS} for k in ("P_const", "I_const", "P_log", "I_log")}
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise OptionError(f"{source}: not a slidewise calibration profile ({exc!r} missing or bad)", hint="re-run `slidewise calibrate` to rewrite it") from None
    if not all(v >= 0 and math.isfinite(v) for v in [*search.values(), *update.values()]) or not all(
        v >= 0 and math.isfinite(v) for e in extra.values() for v in e.values()
    ):
        raise OptionError(f"{source}: weight factors must be non-negative numbers", hint="re-run `slidewise calibrate` to rewrite it")
    if not all(search[d] + extra["P_const"][d] + extra["P_log"][d] > 0 and update[d] + extra["I_const"][d] + extra["I_log"][d] > 0 for d in METHODS):
        raise OptionError(f"{source}: every structure needs a positive search and update cost", hint="re-run `slidewise calibrate` to rewrite it")
    return Weights(
        search,
        update,
        structure,
        source=source,
        unit=data.get("unit", "seconds per touched tuple"),
        search_const=extra["P_const"],
        update_const=extra["I_const"],
        search_log=extra["P_log"],
        update_log=extra["I_log"],
    )


def load_weights(path: str | Path | None = None) -> Weights:
    """The calibrated weights at ``path`` (or the default profile, if present), else :data:`PAPER_WEIGHTS`.

    An explicitly given ``path`` must exist.
    """
    explicit = path is not None
    p = Path(path).expanduser() if path is not None else default_profile_path()
    if not p.exists():
        if explicit:
            raise OptionError(f"profile {p} does not exist", hint="run `slidewise calibrate --out PATH` first")
        return PAPER_WEIGHTS
    try:
        data = json.loads(p.read_text())
    except (OSError, ValueError) as exc:
        raise OptionError(f"cannot read profile {p}: {exc}", hint="re-run `slidewise calibrate` or delete the file") from None
    return weights_from_profile(data, source=str(p))
