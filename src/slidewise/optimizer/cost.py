"""Per-unit-time cost model of the multi-way window joins (comparisons per time unit).

Papers: Golab & Özsu, VLDB 2003 long version §4.2, §5.2–5.3 and
Appendix A (derivations for eager, lazy, naive and general lazy NLJ) and
Appendix B (worked example, 16000); Golab, PhD thesis 2006 §5.3.1
(the same formulae, X1..X4) and §5.3.2 (costs of the ordering examples). The
per-unit-time view goes back to Kang, Naughton & Viglas.

Model. Window i holds ``W_i = λ_i·T_i`` tuples (``N_i`` for a count window;
under lazy evaluation every τ time units, ``λ_i·(T_i+τ)`` resp. ``N_i+λ_i·τ``).
Join sizes follow containment of value sets and uniformity: joining a set S
of windows on one attribute gives ``φ_S = Π_{i∈S} W_i · min_S v / Π_{i∈S} v_i``
tuples — the papers' φ_ij = W_i·W_j / max(v_i, v_j) applied step by step,
which is independent of the order. Several equality classes (joins on
different attributes) multiply one such factor per class; a theta predicate
keeps :data:`THETA_SELECTIVITY` of its input.

A nested-loops probe of new tuples from stream i in the probe sequence
``s_1, ..., s_n`` scans, at loop k, the window ``s_k`` once for every partial
result of the loops above it, so the cost of one probe is
``Σ_k φ(s_1..s_{k-1}) · scan(s_k)`` with the probing stream contributing one
tuple (the new one). ``scan(j) = W_j`` for a nested loop and ``W_j`` times the
share of it in the probed hash bucket for a hash join — the papers' ``W_j/b_j``
when values spread evenly; here computed for the modular hash of Golab & Özsu §6.1
(value mod b) and values ``1..v``, which gives exactly ``1/b_j`` when ``b_j``
divides ``v_j`` and stops improving once ``b_j`` exceeds ``v_j``. Counting one
comparison per scanned tuple is the papers' unit (one equality per loop on a
common attribute); the operators in :mod:`slidewise.operators.joins` count
exactly that.

Per unit time (``kind``):

* ``eager`` (``nlj``, ``hash``, ...): ``Σ_i λ_i · probe(i, [i] + global order)``
  — Golab & Özsu App. A ``C_i`` / thesis ``X_i``;
* ``lazy``: the same with the τ-grown windows (App. A ``L_i``); the thesis'
  Alg. 4/5 probe once per distinct value among the ``λ_i·τ`` new tuples, so
  with ``grouped=True`` the rate is replaced by the expected number of groups
  per unit time, ``v_i·(1-(1-1/v_i)^{λ_i τ})/τ``. The papers' windows grow
  by τ because they expire lazily; slidewise's lazy operators purge before
  every evaluation, and ``lazy_windows="operators"`` models that instead
  (:data:`LAZY_WINDOWS`). Alg. 4/5 (``grouped``) also insert stream i's new
  tuples just before probing with them (thesis §5.2.2), so under
  ``"operators"`` the window of j seen by new i tuples depends on the global
  order: it holds j's λ_j·τ new tuples iff j precedes i (its *front*,
  :meth:`CostModel.fronts`) — an order-dependent term the papers' uniform
  T+τ does not have. :func:`model_for` (the planner's model) uses
  ``"operators"`` for the lazy operators it describes (their ``operator_windows`` fact);
  ``bench ordering`` checks it against exact counts of those operators
  (:func:`slidewise.bench.exact_counts.count_lazy`);
* ``naive``: one fixed order for every origin, the new tuple at its own
  position (App. A ``G_i``; lazy: ``H_i``);
* ``general``: one order per origin (General Lazy NLJ, Golab & Özsu §3.3): the
  λ_i·τ new tuples sit at their position, the loops above scan whole windows,
  all divided by τ (App. A ``H_i``; §5.2 replaces T_i of the origin by τ).

>>> from slidewise.cql import load_query
>>> from slidewise.optimizer.stats import parse_stats
>>> q = load_query("SELECT * FROM S1 [RANGE 100], S2 [RANGE 100], S3 [RANGE 200], S4 [RANGE 100] "
...                "WHERE S1.a = S2.a AND S2.a = S3.a AND S3.a = S4.a")
>>> st = parse_stats(["S1:rate=10,distinct=500", "S2:rate=1,distinct=50",
...                   "S3:rate=1,distinct=40", "S4:rate=3,distinct=5"], q)
>>> m = CostModel(q, st)
>>> c = m.cost([0, 1, 2, 3])
>>> c.total, c.per_origin
(16000.0, (3800.0, 3800.0, 2400.0, 6000.0))
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from slidewise.errors import PlanError
from slidewise.operators.joins import JoinOperator, get_algorithm, mode_of
from slidewise.operators.joins.nlj import equality_classes
from slidewise.optimizer.stats import Statistics
from slidewise.plan.expr import streams_of
from slidewise.plan.query import JoinQuery

__all__ = ["FAMILIES", "KINDS", "LAZY_WINDOWS", "THETA_SELECTIVITY", "CostModel", "PlanCost", "ProbeStep", "bucket_share", "model_for", "model_kind"]

KINDS = ("eager", "lazy", "naive", "general")
#: window sizes under lazy evaluation: ``paper`` — T+τ (Golab & Özsu App. A: expiration
#: only every τ, stale tuples scanned); ``operators`` — what slidewise's lazy
#: operators compare: they purge before each evaluation and skip (uncounted)
#: members not valid for the origin, so a window offers λ·T valid tuples
#: (restore) or λ·(T-τ/2) (no-restore: members must also outlive NOW) —
#: ``hash-lazy``; for the grouped Alg. 4/5 operators the window depends on
#: the order (:meth:`CostModel.window`)
LAZY_WINDOWS = ("paper", "operators")
#: an operator's ``cost_family`` fact: ``probe`` is priced ``eager`` or ``lazy`` by the query
FAMILIES = ("probe", "naive", "general")
#: fraction of its input a theta predicate (non-equality filter) keeps
THETA_SELECTIVITY = 1 / 3


def model_kind(algorithm: str | type[JoinOperator], lazy: bool) -> str:
    """The cost formula kind of a registered algorithm (``lazy``: the query has a SLIDE)."""
    cls = get_algorithm(algorithm) if isinstance(algorithm, str) else algorithm
    if cls.cost_family not in FAMILIES:
        raise PlanError(f"{cls.name}: unknown cost family {cls.cost_family!r}", hint=f"use one of {FAMILIES}")
    if cls.cost_family != "probe":
        return cls.cost_family
    return mode_of(lazy)


@lru_cache(maxsize=65536)
def bucket_share(m: float, v: float, b: int) -> float:
    """Expected fraction of window j in the bucket probed with a value uniform on ``1..m``.

    Window j holds values uniform on ``1..v``; the bucket of value x holds
    the values ``y ≡ x (mod b)`` (the modular hash of Golab & Özsu §6.1). Equals
    ``1/b`` when b divides v and m; non-integral or huge v fall back to
    ``1/min(b, v)``.

    >>> bucket_share(50, 50, 5), bucket_share(5, 5, 10), round(bucket_share(40, 50, 30), 4)
    (0.2, 0.2, 0.035)
    """
    if b <= 1:
        return 1.0
    mi, vi = round(m), round(v)
    if abs(m - mi) > 1e-9 or abs(v - vi) > 1e-9 or vi > 10**9 or mi > 10**9 or mi < 1 or vi < 1:
        return 1.0 / min(b, max(v, 1.0))
    # residues 1..r (mod b) occur q+1 times among 1..n, the others q times:
    # sum over residues of count_x * count_y, in closed form
    qx, rx = divmod(mi, b)
    qy, ry = divmod(vi, b)
    same = b * qx * qy + qx * ry + qy * rx + min(rx, ry)
    return same / (mi * vi)


@dataclass(frozen=True)
class ProbeStep:
    """One loop of a probe sequence, for explain: what is scanned and what it costs."""

    stream: int
    access: str  # "new tuple", "new tuples", "scan", "hash b=5"
    partials: float  # partial results reaching this loop, per probe
    scanned: float  # tuples scanned per partial result
    cost: float  # comparisons per unit time spent in this loop


@dataclass(frozen=True)
class PlanCost:
    """Predicted comparisons per unit time of one plan, total and per origin stream."""

    total: float
    per_origin: tuple[float, ...]
    orders: dict[int, tuple[int, ...]]
    #: per origin, the streams whose new tuples are in their windows when it probes
    #: (bit mask; only order-dependent models use it, see :meth:`CostModel.fronts`)
    fronts: dict[int, int] = field(default_factory=dict)


class CostModel:
    """The cost formulae for one query, its statistics and one algorithm family.

    ``kind``: one of :data:`KINDS`; ``tau``: the lazy re-evaluation interval
    (required for ``lazy`` and ``general``; for ``naive`` it selects the lazy
    variant); ``buckets``: ``b_i`` per stream (``None``: nested loops, no hash
    tables; 1 for a window means it is scanned); ``grouped``: lazy probes once
    per distinct new value, inserting each stream's new tuples just before its
    probes (thesis Alg. 4/5); ``lazy_windows``: see :data:`LAZY_WINDOWS`;
    ``restore``: restore semantics (default: the query's).

    ``ordered``: window sizes depend on the global order (grouped lazy under
    ``"operators"``); then every cost takes the origin's *front* (streams
    before it in the global order) and :meth:`cost` derives it from the order.
    """

    def __init__(
        self,
        query: JoinQuery,
        stats: Statistics,
        *,
        kind: str = "eager",
        tau: float | None = None,
        buckets: Sequence[int] | None = None,
        grouped: bool = False,
        lazy_windows: str = "paper",
        restore: bool | None = None,
    ) -> None:
        if kind not in KINDS:
            raise PlanError(f"unknown cost model kind {kind!r}", hint=f"use one of {', '.join(KINDS)}")
        if kind in ("lazy", "general") and not tau:
            raise PlanError(f"the {kind} cost model needs the re-evaluation interval τ", hint="declare [RANGE T SLIDE D] or pass tau=")
        if len(stats) != query.n:
            raise PlanError(f"statistics for {len(stats)} streams, the query has {query.n}")
        self.query, self.stats, self.kind = query, stats, kind
        self.n = query.n
        self.tau = float(tau) if tau else 0.0
        self.lazy = self.tau > 0 and kind != "eager"
        if lazy_windows not in LAZY_WINDOWS:
            raise PlanError(f"unknown lazy window model {lazy_windows!r}", hint=f"use one of {LAZY_WINDOWS}")
        self.lazy_windows = lazy_windows
        self.restore = query.restore if restore is None else restore
        self.rate = [stats[i].rate for i in range(self.n)]
        self.size = [stats[i].tuples(self._grow(i)) for i in range(self.n)]
        self.hashed = buckets is not None
        self.buckets = list(buckets) if buckets is not None else [1] * self.n
        if len(self.buckets) != self.n:
            raise PlanError(f"{len(self.buckets)} bucket counts for {self.n} streams")
        self.grouped = grouped and self.lazy and kind == "lazy"
        self.ordered = self.grouped and lazy_windows == "operators"
        #: ordered models: window j's tuples seen by new ``origin`` tuples when j is not
        #: in the origin's front (``base[origin][j]``), and what j's new tuples add (``ahead[j]``)
        self.ahead = [self.rate[j] * self.tau if self.ordered else 0.0 for j in range(self.n)]
        self.base = [[self._operator_window(i, j) for j in range(self.n)] for i in range(self.n)] if self.ordered else []
        # equality classes: per stream, (class, v) for each class it belongs to
        self.classes = equality_classes(query)
        self.member: list[dict[int, float]] = [{} for _ in range(self.n)]
        for c, cols in enumerate(self.classes):
            for s, attr in cols:
                v = stats[s].v(attr)
                self.member[s][c] = min(v, self.member[s].get(c, v))
        # the class a window is hashed on: its first join attribute's class
        self.hash_class: list[int | None] = []
        for s in range(self.n):
            cs = sorted(self.member[s])
            self.hash_class.append(cs[0] if cs and self.hashed else None)
        self.filters = [(sum(1 << s for s in streams_of(f)), THETA_SELECTIVITY) for f in query.filters]
        self._phi: dict[tuple[int, int, float, int], tuple[float, dict[int, float]]] = {}
        self._step: dict[tuple[int, int, int, int], float] = {}

    # -- building blocks --------------------------------------------------
    def _grow(self, i: int) -> float:
        """Time units a window holds beyond T under lazy evaluation (see :data:`LAZY_WINDOWS`)."""
        if not self.lazy:
            return 0.0
        if self.lazy_windows == "paper":
            return self.tau
        if self.stats[i].count or self.restore:
            return 0.0
        return -self.tau / 2

    def _operator_window(self, origin: int, j: int) -> float:
        """Grouped lazy operators (thesis Alg. 4/5 as slidewise runs them): window j without its new tuples.

        ``lazy`` (no-restore) purges ``exp < NOW`` first, so a time window
        holds λ_j·(T_j − τ) old tuples. ``lazy-restore`` keeps ``exp >= NOW − τ``
        but scans only ``exp >= mints`` (the group's earliest ts, uncounted
        skip), i.e. λ_j·(T_j − δ) with δ = τ/(m+1), the expected offset of the
        earliest of m tuples (m: origin's mean group size). Count windows hold
        their last N arrivals as of the previous evaluation.
        """
        st = self.stats[j]
        if st.count:
            return st.tuples(0.0)
        if not self.restore:
            return st.tuples(-self.tau)
        v = self.stats[origin].v()
        new = self.rate[origin] * self.tau
        groups = v * (1.0 - (1.0 - 1.0 / v) ** new) if v > 1 else min(1.0, new)
        m = new / groups if groups > 0 else 1.0
        return st.tuples(-self.tau / (m + 1.0))

    def window(self, j: int, origin: int | None = None, front: int = 0) -> float:
        """Tuples of window j scanned for new ``origin`` tuples whose front is ``front``."""
        if not self.ordered or origin is None:
            return self.size[j]
        return self.base[origin][j] + (self.ahead[j] if front >> j & 1 else 0.0)

    def fronts(self, order: Sequence[int]) -> dict[int, int]:
        """Per origin, the mask of the streams before it in the global ``order`` (0 if unordered).

        Grouped lazy operators insert the new tuples stream by stream in the
        global order, each just before probing with them, so the new tuples of
        the streams in an origin's front are in their windows when it probes.
        """
        out, mask = {}, 0
        for i in order:
            out[i] = mask if self.ordered else 0
            mask |= 1 << i
        return out

    def origin_size(self, origin: int) -> float:
        """Tuples of the origin stream joined per probe: 1 (eager), λ_i·τ (naive lazy / general)."""
        if self.kind in ("general", "naive") and self.lazy:
            return self.rate[origin] * self.tau
        return 1.0

    def multiplier(self, origin: int) -> float:
        """Probes per unit time of new ``origin`` tuples."""
        if self.kind in ("general", "naive") and self.lazy:
            return 1.0 / self.tau
        if self.grouped:
            v = self.stats[origin].v()
            new = self.rate[origin] * self.tau
            groups = v * (1.0 - (1.0 - 1.0 / v) ** new) if v > 1 else min(1.0, new)
            return groups / self.tau
        return self.rate[origin]

    def phi(self, mask: int, origin: int | None = None, front: int = 0) -> float:
        """Expected size of the join of the windows in ``mask`` (origin counted as its new tuples)."""
        return self._prefix(mask, origin, front)[0]

    def _prefix(self, mask: int, origin: int | None, front: int = 0) -> tuple[float, dict[int, float]]:
        osize = self.origin_size(origin) if origin is not None else 0.0
        front = front & mask if self.ordered else 0
        key = (mask, -1 if origin is None else origin, osize, front)
        hit = self._phi.get(key)
        if hit is not None:
            return hit
        size = 1.0
        mins: dict[int, float] = {}
        prods: dict[int, float] = {}
        for s in range(self.n):
            if not mask >> s & 1:
                continue
            size *= osize if s == origin else self.window(s, origin, front)
            for c, v in self.member[s].items():
                mins[c] = min(v, mins.get(c, v))
                prods[c] = prods.get(c, 1.0) * v
        for c in mins:
            size *= mins[c] / prods[c]
        for fmask, sel in self.filters:
            if fmask and fmask & mask == fmask:
                size *= sel
        out = (size, mins)
        self._phi[key] = out
        return out

    def scan(self, j: int, mask: int, origin: int | None = None, front: int = 0) -> float:
        """Tuples of window ``j`` scanned per partial result of the streams in ``mask``."""
        if j == origin:
            return self.origin_size(origin)
        size = self.window(j, origin, front)
        c = self.hash_class[j]
        if c is None:
            return size
        mins = self._prefix(mask, origin)[1]
        if c not in mins:
            return size  # no bound value to hash: every bucket is scanned
        return size * bucket_share(mins[c], self.member[j][c], self.buckets[j])

    def step(self, origin: int, mask: int, j: int, front: int = 0) -> float:
        """Comparisons per probe of loop ``j`` below the streams ``mask`` (origin in or above)."""
        front = front & (mask | 1 << j) if self.ordered else 0
        key = (origin, mask, j, front)
        hit = self._step.get(key)
        if hit is None:
            hit = self._step[key] = self.phi(mask, origin, front) * self.scan(j, mask, origin, front) if mask else 0.0
        return hit

    # -- per origin and per plan -------------------------------------------
    def probe_sequence(self, origin: int, order: Sequence[int]) -> list[int]:
        """The loops for new ``origin`` tuples under global ``order`` (naive: the order itself)."""
        if self.kind == "naive":
            return list(order)
        return [origin] + [s for s in order if s != origin]

    def origin_cost(self, origin: int, seq: Sequence[int], front: int = 0) -> float:
        """Comparisons per unit time of processing new ``origin`` tuples with loops ``seq``."""
        total, mask = 0.0, 0
        for j in seq:
            total += self.step(origin, mask, j, front)
            mask |= 1 << j
        return self.multiplier(origin) * total

    def cost(self, order: Sequence[int]) -> PlanCost:
        """Cost of a global join order (each origin probes as :meth:`probe_sequence` says)."""
        if sorted(order) != list(range(self.n)):
            raise PlanError(f"join order {list(order)} is not a permutation of the {self.n} streams")
        seqs = {i: tuple(self.probe_sequence(i, order)) for i in range(self.n)}
        return self.cost_orders(seqs, self.fronts(order))

    def cost_orders(self, orders: Mapping[int, Sequence[int]], fronts: dict[int, int] | None = None) -> PlanCost:
        """Cost with an explicit probe sequence per origin (General Lazy NLJ); ``fronts``: see :meth:`fronts`."""
        if self.ordered and fronts is None:
            raise PlanError("this lazy cost model depends on the global order: price it with cost(order)")
        fronts = {i: (fronts or {}).get(i, 0) for i in range(self.n)}
        per = tuple(self.origin_cost(i, orders[i], fronts[i]) for i in range(self.n))
        return PlanCost(sum(per), per, {i: tuple(orders[i]) for i in range(self.n)}, fronts)

    def partial_results(self, order: Sequence[int]) -> float:
        """Intermediate results per unit time of a global order — *not* part of the papers' cost.

        A partial result that passes loop ``k < n`` of a probe sequence starts
        one scan of loop ``k+1`` (a nested call in the per-tuple operators):
        ``Σ_i multiplier(i) · Σ_{2 ≤ k < n} φ(s_1..s_k)``. The papers' cost counts
        only comparisons; this separate figure is what the ordering bench
        reports beside it to check whether producing intermediate tuples
        explains measured rates (on Golab & Özsu Table 5 it is 44–112 per time
        unit against 3200–16000 comparisons, i.e. under 1 %: it does not).
        Final results (``k = n``) are the same for every order and left out.
        """
        if sorted(order) != list(range(self.n)):
            raise PlanError(f"join order {list(order)} is not a permutation of the {self.n} streams")
        total = 0.0
        fronts = self.fronts(order)
        for origin in range(self.n):
            mask, inner = 0, 0.0
            for k, j in enumerate(self.probe_sequence(origin, order)):
                mask |= 1 << j
                if 1 <= k < self.n - 1:
                    inner += self.phi(mask, origin, fronts[origin])
            total += self.multiplier(origin) * inner
        return total

    def with_buckets(self, buckets: Sequence[int]) -> CostModel:
        """The same model with other bucket counts (join sizes are reused)."""
        other = copy.copy(self)
        other.buckets = list(buckets)
        other._step = {}
        return other

    def bucket_terms(self, orders: Mapping[int, Sequence[int]], fronts: dict[int, int] | None = None) -> tuple[float, list[dict[float, float]]]:
        """The plan's cost as ``fixed + Σ_j Σ_m coef[j][m] · bucket_share(m, v_j, b_j)``.

        Every loop scans one window, so the cost separates per window: this
        is what bucket allocation optimises (:mod:`slidewise.optimizer.buckets`).
        """
        fixed, coef = 0.0, [dict[float, float]() for _ in range(self.n)]
        fronts = fronts or {}
        for origin in range(self.n):
            mult, mask, front = self.multiplier(origin), 0, fronts.get(origin, 0)
            for j in orders[origin]:
                if mask:
                    mins = self._prefix(mask, origin)[1]
                    c = self.hash_class[j]
                    base = mult * self.phi(mask, origin, front)
                    if j != origin and c is not None and c in mins:
                        m = mins[c]
                        coef[j][m] = coef[j].get(m, 0.0) + base * self.window(j, origin, front)
                    else:
                        fixed += base * self.scan(j, mask, origin, front)
                mask |= 1 << j
        return fixed, coef

    def steps(self, origin: int, seq: Sequence[int], front: int = 0) -> list[ProbeStep]:
        """Loop-by-loop breakdown of :meth:`origin_cost`, for explain."""
        out, mask = [], 0
        mult = self.multiplier(origin)
        for j in seq:
            if mask == 0:
                access = "new tuple" if j == origin and self.origin_size(origin) == 1 else ("new tuples" if j == origin else "scan")
                out.append(ProbeStep(j, access, 0.0, self.scan(j, 0, origin, front) if j != origin else self.origin_size(origin), 0.0))
            else:
                if j == origin:
                    access = "new tuples" if self.origin_size(origin) != 1 else "new tuple"
                elif self.hash_class[j] is not None and self.buckets[j] > 1 and self.hash_class[j] in self._prefix(mask, origin)[1]:
                    access = f"hash b={self.buckets[j]}"
                else:
                    access = "scan"
                out.append(ProbeStep(j, access, self.phi(mask, origin, front), self.scan(j, mask, origin, front), mult * self.step(origin, mask, j, front)))
            mask |= 1 << j
        return out


def model_for(
    query: JoinQuery, stats: Statistics, algorithm: str | type[JoinOperator], buckets: int | Sequence[int] | None = None, lazy_windows: str | None = None
) -> CostModel:
    """The cost model of the registered algorithm ``algorithm`` for ``query`` (the planner's model).

    Read from the operator's facts: ``cost_family`` gives the formulas;
    ``hashed`` operators get ``buckets`` (an int for every window or one per
    stream; default the operators' ``min(window size, 64)``), the others scan
    whole windows; ``grouped`` ones (``lazy``, ``lazy-restore``) probe once per
    distinct new value; ``restores`` fixes the semantics. ``lazy_windows``
    (default): the operators' windows where ``operator_windows``, the papers'
    T+τ otherwise; pass ``"paper"`` for Golab & Özsu App. A's formula.
    """
    cls = get_algorithm(algorithm) if isinstance(algorithm, str) else algorithm
    if lazy_windows is None:
        lazy_windows = "operators" if cls.operator_windows else "paper"
    from slidewise.operators.joins.hash import default_buckets

    counts = None
    if cls.hashed:
        if buckets is None:
            counts = [default_buckets(s.window) for s in query.streams]
        elif isinstance(buckets, int):
            counts = [buckets] * query.n
        else:
            counts = list(buckets)
    return CostModel(
        query, stats, kind=model_kind(cls, bool(query.slide)), tau=query.slide, buckets=counts, grouped=cls.grouped, lazy_windows=lazy_windows, restore=cls.restores
    )
