"""Binary window join with a separately chosen structure for each join direction.

Paper: Kang, Naughton & Viglas, *Evaluating Window Joins over Unbounded
Streams* (ICDE 2003) §4.1–4.2 (join directions; one-way nested
loops, hash, B+tree and T-tree index nested loops) and §5.1 (asymmetric
combinations). The cost model lives in :mod:`slidewise.optimizer.binary`.

Directions and naming: a new tuple of S1 probes S2's window (direction
S1→S2), a new tuple of S2 probes S1's window (S2→S1). Each window keeps one
structure, used by the probes into it and paying that window's insertions
and invalidations. ``directions="XY"`` follows the paper's combination names
(Table 3): **X is the structure on S1's window** (serving S2's arrivals,
S2→S1) and **Y the structure on S2's window** (serving S1's arrivals, S1→S2);
letters ``N`` nested-loops scan, ``H`` hash buckets, ``B`` B+tree, ``T`` T-tree.
So ``"TN"`` indexes S1 with a T-tree and scans S2. Mind the order: the first
letter is *not* how S1's arrivals probe; it is the structure of S1's window,
which S2's arrivals probe (the paper's Eq. 8 and Table 3 fix this reading).

Algorithm (eager, docs/semantics.md): for each arrival ``k`` of stream ``i`` in global
order, the other window ``j`` is purged of tuples expired at ``k.ts`` and probed
(:meth:`BinaryJoin.probe`), then ``k`` goes into its own window, which
invalidates its expired / evicted tuples (:meth:`BinaryJoin.update`). Windows:
``[RANGE T]``, ``[NOW]``, ``[UNBOUNDED]``, ``[ROWS N]``, ``[PARTITION BY p ROWS N]``.

Probe keys: ``H`` needs an equality ``S1.p = S2.q`` (window j hashed on q,
probed with ``k.p``); ``B``/``T`` use such an equality, or else a range on one
column q of window j derived from conjuncts ``q op E``, ``E op q`` (also with
``q ± E'`` solved for q) or ``ABS(q - E) <= c`` where E reads only the probing
stream (theta / band joins); ``N`` scans. Whatever the structure returns is only a candidate set:
every predicate is then checked as in ``nlj``.

Counters: ``comparisons`` = predicate evaluations on candidates (as in
``nlj`` / ``hash``) plus the key comparisons of tree searches. Per direction
(:meth:`BinaryJoin.direction_stats`): probes, inserts, invalidations and
comparisons — the quantities of Eq. 2.

Options: ``directions`` (two letters; the planner,
:func:`slidewise.optimizer.structures.choose_structures`, fills it from the cost
model for ``rates`` and the window sizes; ``None`` here builds
:data:`DEFAULT_DIRECTIONS`); ``rates`` (λ1, λ2, default 1, 1; a time window holds about ``T · λ`` tuples);
``bucket_size`` (hash tuples per bucket, default 10 as in §5.1) or
``buckets`` (int or one per stream); ``node_size`` (tree node size ``N``,
default 100, at least 3).

Complexity per arrival: the probe cost of the target structure (Eq. 3–6) plus
insertion and invalidation in the own window. State: both windows, plus a
FIFO slot per tuple for the tree windows.

>>> from slidewise.plan.query import JoinQuery, StreamRef, WindowSpec, Equality
>>> from slidewise.plan.expr import Col
>>> import numpy as np
>>> from slidewise.model.batch import StreamBatch
>>> q = JoinQuery((StreamRef("A", "A", WindowSpec("rows", 3)),
...                StreamRef("B", "B", WindowSpec("rows", 3))),
...               (Equality(Col(0, "a", "A"), Col(1, "a", "B")),))
>>> op = BinaryJoin(q, directions="TH")
>>> res = op.process([StreamBatch(0, [0, 2], [1, 2], {"a": np.array([7, 7])}),
...                   StreamBatch(1, [1], [1], {"a": np.array([7])})])
>>> res.keys()
[((0, 1), 1, 9223372036854775807, 1), ((2, 1), 2, 9223372036854775807, 1)]
>>> [(d["direction"], d["method"], d["probes"], d["inserts"]) for d in op.direction_stats()]
[('B->A', 'T', 1, 2), ('A->B', 'H', 2, 1)]
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

from slidewise.errors import OptionError, PlanError
from slidewise.model.batch import ResultBatch, StreamBatch, Tup, merge_in_order
from slidewise.operators.joins.base import ResultBuilder
from slidewise.operators.joins.hash import MAX_BUCKETS
from slidewise.operators.joins.nlj import NestedLoopJoin
from slidewise.plan.expr import BinOp, Cmp, Col, Expr, Func, evaluate, streams_of
from slidewise.plan.query import JoinQuery, WindowSpec
from slidewise.windows.btree import BTreeWindow
from slidewise.windows.count import count_window
from slidewise.windows.fifo import TimeWindow
from slidewise.windows.hashed import HashWindow
from slidewise.windows.ttree import TTreeWindow

METHODS = "NHBT"
_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "="}
#: window size assumed for an unbounded window by the cost-based choice
UNBOUNDED_TUPLES = 10**6
#: structures built without a ``directions`` option: nested-loops scans, which every predicate allows
DEFAULT_DIRECTIONS = "NN"


@dataclass
class ProbeKey:
    """How window ``target`` is probed by arrivals of ``source``.

    ``kind`` ``"eq"``: key column ``attr`` equals ``source_attr`` of the arrival;
    ``"range"``: ``attr`` within bounds, ``lows`` / ``highs`` are
    ``(expr over source, inclusive, widen)`` triples; ``None``-kind: no key.
    """

    kind: str | None
    attr: str | None = None
    source_attr: str | None = None
    lows: list = field(default_factory=list)
    highs: list = field(default_factory=list)


def _bound_of(conj: Expr, target: int, source: int):
    """``(attr, op, expr, widen)`` if ``conj`` bounds a column of ``target`` by an expression over ``source``."""

    def over_source(e: Expr) -> bool:
        return streams_of(e) <= {source}

    def isolate(side: Expr, other: Expr, op: str, widen: bool = False):
        """Solve ``side op other`` for a target column (``side`` may be ``col ± e``)."""
        if not over_source(other):
            return None
        if isinstance(side, Col):
            return (side.attr, op, other, widen) if side.stream == target else None
        if isinstance(side, BinOp) and side.op in ("+", "-"):
            a, b = side.left, side.right
            if over_source(b):  # a ± b op other  ->  a op other ∓ b
                return isolate(a, BinOp("-" if side.op == "+" else "+", other, b), op, True)
            if side.op == "+" and over_source(a):  # a + b op other  ->  b op other - a
                return isolate(b, BinOp("-", other, a), op, True)
            if side.op == "-" and over_source(a):  # a - b op other  ->  b flip(op) a - other
                return isolate(b, BinOp("-", a, other), _FLIP[op], True)
        return None

    if not isinstance(conj, Cmp):
        return None
    if conj.op in ("<", "<=", ">", ">=", "="):
        found = isolate(conj.left, conj.right, conj.op)
        if found is None:
            found = isolate(conj.right, conj.left, _FLIP[conj.op])
        if found is not None:
            return found
    if (
        conj.op in ("<", "<=")
        and isinstance(conj.left, Func)
        and conj.left.name == "abs"
        and len(conj.left.args) == 1
        and isinstance(conj.left.args[0], BinOp)
        and conj.left.args[0].op == "-"
        and over_source(conj.right)
    ):
        x, y = conj.left.args[0].left, conj.left.args[0].right
        for col, other in ((x, y), (y, x)):
            if isinstance(col, Col) and col.stream == target and over_source(other):
                return col.attr, "band" + conj.op, (other, conj.right), True
    return None


def probe_key(query: JoinQuery, target: int, source: int) -> ProbeKey:
    """The index key of window ``target`` for probes by ``source`` (see module docstring)."""
    for eq in query.equalities:
        sides = {eq.left.stream: eq.left.attr, eq.right.stream: eq.right.attr}
        if set(sides) == {target, source}:
            return ProbeKey("eq", sides[target], sides[source])
    bounds = [b for f in query.filters if (b := _bound_of(f, target, source)) is not None]
    if not bounds:
        return ProbeKey(None)
    attr = bounds[0][0]
    key = ProbeKey("range", attr)
    for a, op, expr, widen in bounds:
        if a != attr:
            continue
        if op.startswith("band"):
            centre, radius = expr
            strict = op == "band<"
            key.lows.append((BinOp("-", centre, radius), not strict, True))
            key.highs.append((BinOp("+", centre, radius), not strict, True))
            continue
        if op in (">", ">=", "="):
            key.lows.append((expr, op != ">", widen))
        if op in ("<", "<=", "="):
            key.highs.append((expr, op != "<", widen))
    return key


def _widened(value, down: bool):
    """Float band bounds are widened slightly: the final predicate check is exact."""
    if isinstance(value, float):
        slack = 1e-9 * (1.0 + abs(value))
        return value - slack if down else value + slack
    return value


def window_tuples(spec: WindowSpec, rate: float) -> float:
    """Expected tuples in a window: ``N`` for counts, ``T · λ`` for time windows (Table 1)."""
    if spec.is_count:
        return float(spec.size)
    if spec.kind == "unbounded":
        return float(UNBOUNDED_TUPLES)
    return max(1.0, (spec.length + 1) * rate)


@dataclass(frozen=True)
class StructureInputs:
    """What the cost model prices: rates λ1, λ2, expected window tuples and each window's allowed structures."""

    rates: tuple[float, float]
    windows: tuple[float, float]
    allowed: tuple[str, str]
    keys: tuple[ProbeKey, ProbeKey]


def structure_inputs(query: JoinQuery, options: dict) -> StructureInputs:
    """The rates (validated), window sizes and allowed structures of ``query`` under ``options``."""
    try:
        rates = tuple(float(r) for r in options.get("rates", (1.0, 1.0)))
    except (TypeError, ValueError):
        rates = ()
    if len(rates) != 2 or not all(r > 0 for r in rates):
        raise OptionError(f"rates must be two positive numbers, got {options.get('rates')!r}", hint="e.g. rates=(800, 200) for λ1, λ2")
    specs = [s.window for s in query.streams]
    keys = (probe_key(query, 0, 1), probe_key(query, 1, 0))
    allowed = tuple({"eq": "NHBT", "range": "NBT"}.get(k.kind, "N") for k in keys)
    windows = (window_tuples(specs[0], rates[0]), window_tuples(specs[1], rates[1]))
    return StructureInputs((rates[0], rates[1]), windows, (allowed[0], allowed[1]), keys)


@dataclass
class DirectionStats:
    """Eq. 2 quantities of the direction whose target is one window."""

    probes: int = 0
    inserts: int = 0
    invalidations: int = 0
    comparisons: int = 0


class Side:
    """One window, the structure ``method`` kept on it, and how it is probed."""

    def __init__(self, method: str, spec: WindowSpec, key: ProbeKey, *, buckets: int, node_size: int) -> None:
        self.method = method
        self.spec = spec
        self.key = key
        self.stats = DirectionStats()
        self.expires = spec.kind in ("range", "now")
        if method == "N":
            self.window = count_window(spec) if spec.is_count else TimeWindow.from_spec(spec)
        elif method == "H":
            self.window = HashWindow(spec, buckets, key.attr)
        elif method == "B":
            self.window = BTreeWindow(spec, key.attr, node_size)
        else:
            self.window = TTreeWindow(spec, key.attr, node_size)
        self.tree = method in ("B", "T")

    def insert(self, t: Tup) -> None:
        evicted = self.window.insert(t)
        self.stats.inserts += 1
        if evicted is not None and not isinstance(evicted, list):
            self.stats.invalidations += 1
        elif evicted:
            self.stats.invalidations += len(evicted)

    def expire(self, now: int) -> None:
        if self.expires:
            self.stats.invalidations += len(self.window.expire(now))

    def candidates(self, k: Tup):
        """Tuples of this window that may join ``k`` (a superset of the matches)."""
        key, w = self.key, self.window
        if self.method == "N":
            return w
        if self.method == "H":
            return w.probe(k.get(key.source_attr))
        if key.kind == "eq":
            return w.equal(k.get(key.source_attr))
        return w.range(*self._bounds(k))

    def _bounds(self, k: Tup):
        def get(_s: int, a: str):
            return k.get(a)

        lo = hi = None
        lo_inc = hi_inc = True
        for expr, inclusive, widen in self.key.lows:
            v = evaluate(expr, get)
            v = _widened(v, True) if widen else v
            if lo is None or v > lo or (v == lo and not inclusive):
                lo, lo_inc = v, inclusive
        for expr, inclusive, widen in self.key.highs:
            v = evaluate(expr, get)
            v = _widened(v, False) if widen else v
            if hi is None or v < hi or (v == hi and not inclusive):
                hi, hi_inc = v, inclusive
        return lo, hi, lo_inc, hi_inc

    def index_comparisons(self) -> int:
        return self.window.comparisons if self.tree else 0

    def __len__(self) -> int:
        return len(self.window)


class BinaryJoin(NestedLoopJoin):
    """Two-stream window join, one structure per window: ``directions="XY"`` (X on S1, Y on S2)."""

    name = "binary"
    summary = "binary join, per-direction nested loops / hash / B+tree / T-tree probes (Kang, Naughton & Viglas §4)"
    options_allowed: ClassVar[frozenset[str]] = frozenset({"directions", "rates", "bucket_size", "buckets", "node_size"})

    def __init__(self, query: JoinQuery, **kwargs) -> None:
        super().__init__(query, **kwargs)
        opts = self.options
        inputs = structure_inputs(query, opts)
        self.rates = inputs.rates
        node_size = opts.get("node_size", 100)
        if not isinstance(node_size, int) or node_size < 3:
            raise OptionError(f"node_size must be an integer >= 3, got {node_size!r}", hint="the paper uses 100 entries per tree node")
        self.node_size = node_size
        self.keys = list(inputs.keys)
        self.allowed = list(inputs.allowed)
        self.windows_est = list(inputs.windows)
        directions = opts.get("directions")
        self.directions = self._validate(DEFAULT_DIRECTIONS if directions is None else directions)
        buckets = self._buckets(opts.get("buckets"), opts.get("bucket_size", 10))
        self.sides = [Side(self.directions[i], self.specs[i], self.keys[i], buckets=buckets[i], node_size=node_size) for i in range(2)]
        self.windows = [s.window for s in self.sides]

    @classmethod
    def check(cls, query: JoinQuery) -> None:
        if query.n != 2:
            raise PlanError(f"binary joins two streams, the query has {query.n}", hint="use --algorithm hash, hybrid or nlj for multi-way joins")
        cls._require_eager("binary", query)

    # -- planning ---------------------------------------------------------------
    def _validate(self, directions) -> str:
        if not isinstance(directions, str) or len(directions) != 2 or any(c not in METHODS for c in directions.upper()):
            raise OptionError(
                f"directions must be two letters of N, H, B, T, got {directions!r}", hint="e.g. directions=TH: T-tree on the first window, hash on the second"
            )
        directions = directions.upper()
        names = self.query.aliases
        for i, m in enumerate(directions):
            if m not in self.allowed[i]:
                need = "an equality" if m == "H" else "an equality or a range predicate"
                raise PlanError(
                    f"binary: {m} on window {names[i]} needs {need} between {names[i]} and {names[1 - i]}",
                    hint=f"use one of {', '.join(self.allowed[i])} for window {names[i]}",
                )
        return directions

    def _buckets(self, buckets, bucket_size) -> list[int]:
        if buckets is None:
            if not isinstance(bucket_size, (int, float)) or bucket_size <= 0:
                raise OptionError(f"bucket_size must be positive, got {bucket_size!r}", hint="the paper uses 10 tuples per hash bucket")
            return [max(1, math.ceil(w / bucket_size)) for w in self.windows_est]
        counts = [buckets] * 2 if isinstance(buckets, int) else list(buckets)
        if len(counts) != 2 or not all(isinstance(b, int) and 1 <= b <= MAX_BUCKETS for b in counts):
            raise OptionError(f"buckets must be an int from 1 to {MAX_BUCKETS} or two of them, got {buckets!r}", hint="e.g. buckets=64 or buckets=[500, 50]")
        return counts

    # -- processing ---------------------------------------------------------------
    def process(self, chunk: list[StreamBatch]) -> ResultBatch:
        out = ResultBuilder(self.query)
        for k in merge_in_order(chunk):
            self.probe(k, out)
            self.update(k)
        return out.build()

    def probe(self, k: Tup, out: ResultBuilder | None = None) -> int:
        """Direction ``k.stream`` → other: probe the other window with ``k``; return the matches."""
        j = 1 - k.stream
        side = self.sides[j]
        side.expire(k.ts)
        levels = self.levels[k.stream]
        members: list = [None, None]
        members[k.stream] = k
        before, index_before = self.comparisons, side.index_comparisons()
        found = 0
        if self.passes(levels[0], members):
            side.stats.probes += 1
            level = levels[1]
            for u in side.candidates(k):
                members[j] = u
                if self.passes(level, members):
                    found += 1
                    if out is not None:
                        out.add([members[0], members[1]], ts=k.ts)
        self.comparisons += side.index_comparisons() - index_before
        side.stats.comparisons += self.comparisons - before
        return found

    def update(self, t: Tup) -> None:
        """Insert ``t`` into its own window after invalidating what expired (count windows evict)."""
        side = self.sides[t.stream]
        side.expire(t.ts)
        side.insert(t)

    def preload(self, tuples: list[Tup]) -> None:
        """Insert tuples into their windows without probing (a warm start; produces no results)."""
        for t in tuples:
            self.update(t)

    def direction_stats(self) -> list[dict]:
        """Per direction: target window, structure, probes, inserts, invalidations, comparisons."""
        names = self.query.aliases
        out = []
        for j in (0, 1):
            s = self.sides[j].stats
            out.append(
                {
                    "direction": f"{names[1 - j]}->{names[j]}",
                    "window": names[j],
                    "method": self.directions[j],
                    "probes": s.probes,
                    "inserts": s.inserts,
                    "invalidations": s.invalidations,
                    "updates": s.inserts + s.invalidations,
                    "comparisons": s.comparisons,
                }
            )
        return out

    def state_tuples(self) -> int:
        return sum(len(s) for s in self.sides)
