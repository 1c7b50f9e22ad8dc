"""Update-pattern simplification (Golab's thesis §3.5.3): negation pulled up vs pushed down, costed per time unit.

A relational optimizer pushes a negation down when its condition is simple
or it shrinks intermediate results. Under update-pattern-aware processing it
may be cheaper to *pull it up*: every operator below a negation then sees
only WKS/WK edges and expires by time, and only the final answer deals with
negative tuples (Fig. 3.5 left vs right; Query 4 in §3.6.5). But if the
join produces many results and the negation is selective, pushing it down
still wins. Both are generated and costed:

* :func:`alternatives` — the plan and every plan reachable by moving an anti
  join (``NOT EXISTS``) across a join: ``(A ⋈ B) − C`` → ``(A − C) ⋈ B``
  when the negation correlates only A's columns, and back. Selections stay
  where the parser pushed them (push down weakest); a negation is never
  pushed below a join with a relation, whose input must not be strict
  (§3.5.3). Projections are not moved (they change no tuple count here).
* :func:`plan_cost` — tuples processed per time unit, operator by operator:
  each edge carries its positive rate r; under ``nt`` every non-monotonic
  edge carries as many negative tuples (2r); under ``upa`` a WKS/WK edge
  costs one insertion and one cheap expiration (r·(1 + CHEAP_EXPIRATION)),
  a STR edge 2r — or, when its premature expirations are rare, a calendar
  queue (§3.5.2): r·(1 + (1−f)·cheap + f·(1 + scan of a partition)), the
  cheaper; under ``direct`` an edge costs r, its premature deletions, and a
  scan of the stored state per time unit. Rates follow Golab & Özsu's model:
  a join outputs Σᵢ rᵢ·Πⱼ≠ᵢ Nⱼ·sel with Nⱼ = λⱼ·Tⱼ and sel = 1/v per equality;
  an anti join keeps a fraction (1 − 1/v)^N_C of its left input; ``f`` is
  the fraction of a negation's results that expire prematurely (default
  0.4, measured by the thesis on its trace, §3.6.4).
* :func:`choose_plan` — the cheapest alternative and a report.

>>> from slidewise.plan.logical import Join, Negation, Output, Plan, Scan
>>> from slidewise.plan.expr import Col
>>> from slidewise.plan.query import WindowSpec
>>> S = {a: Scan(a, a, WindowSpec("range", 100)) for a in ("S1", "S2", "S3")}
>>> c = lambda i: Col(i, "a", f"S{i + 1}")
>>> q = Plan(Output(Negation(Join((S["S1"], S["S2"]), ((c(0), c(1)),)), S["S3"], ((c(0), c(2)),)), "rstream"),
...          ("S1", "S2", "S3"))
>>> [algebra(p.root) for p in alternatives(q)]
['RSTREAM((S1 ⋈ S2) − S3)', 'RSTREAM((S1 − S3) ⋈ S2)']
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

from slidewise.errors import OptionError
from slidewise.optimizer.stats import DEFAULT_DISTINCT, DEFAULT_RATE, UNBOUNDED_HORIZON
from slidewise.options import STRATEGIES
from slidewise.plan.bind import with_children
from slidewise.plan.expr import And, Cmp, Col, Expr, Lit, Not, Or
from slidewise.plan.logical import Aggregate, Distinct, Join, Negation, Node, Output, Pattern, Plan, Project, Scan, Select, Subquery, Union, walk
from slidewise.plan.patterns import annotate
from slidewise.plan.query import WindowSpec

__all__ = ["CHEAP_EXPIRATION", "PREMATURE", "Flow", "algebra", "alternatives", "choose_plan", "edge_cost", "flows", "plan_cost", "plan_stats"]

#: fraction of a negation's results that expire prematurely (thesis §3.6.4: about 40%)
PREMATURE = 0.4
#: cost of expiring a tuple from the head of a FIFO / calendar partition, relative to processing one
CHEAP_EXPIRATION = 0.25
#: cost of examining one stored tuple in a scan, relative to processing one tuple
SCAN_COST = 0.1
#: selectivity of a comparison other than equality with a constant (System R's 1/3)
RANGE_SELECTIVITY = 1 / 3
#: rows assumed in a relation without declared statistics
DEFAULT_ROWS = 100.0
#: alternatives generated at most
MAX_ALTERNATIVES = 16
#: ``--stats`` specs (``["S1:rate=10,distinct=500"]``) or ``{alias: {field: value}}``; None: defaults
StatSpecs = Sequence[str] | Mapping[str, Mapping[str, float]] | None


# --- plan text ------------------------------------------------------------------------------------


def algebra(node: Node) -> str:
    """A one-line relational-algebra form of a plan (thesis notation)."""
    if isinstance(node, Scan):
        return node.alias
    if isinstance(node, (Join, Union, Negation)):
        op = {Join: " ⋈ ", Union: " ∪ ", Negation: " − "}[type(node)]
        return "(" + op.join(algebra(c) for c in node.children) + ")"
    inner = algebra(node.children[0])
    if isinstance(node.children[0], (Join, Union, Negation)):
        inner = inner[1:-1]
    if isinstance(node, Subquery):
        return f"{node.alias}({inner})"
    if isinstance(node, Output):
        return f"{node.kind.upper()}{'_RESTORE' if node.restore else ''}({inner})"
    symbol = {Select: "σ", Project: "π", Distinct: "δ", Aggregate: "γ"}[type(node)]
    return f"{symbol}({inner})"


def _key(node: Node) -> str:
    """Structural identity of a tree (labels and shape)."""
    return node.label() + "[" + ",".join(_key(c) for c in node.children) + "]"


# --- rewrites -------------------------------------------------------------------------------------


def _aliases(node: Node, aliases: Sequence[str]) -> set[str]:
    """Aliases whose columns a subtree outputs (without needing bound schemas)."""
    if isinstance(node, (Scan, Subquery)):
        return {node.alias}
    if isinstance(node, (Union, Negation)):
        return _aliases(node.children[0], aliases)
    return set().union(*(_aliases(c, aliases) for c in node.children)) if node.children else set()


def _peel(node: Node) -> tuple[list[Select], Node]:
    sels = []
    while isinstance(node, Select):
        sels.append(node)
        node = node.child
    return sels, node


def _wrap(sels: list[Select], node: Node) -> Node:
    for sel in reversed(sels):
        node = replace(sel, child=node)
    return node


def _push_down(node: Node, aliases: Sequence[str]) -> list[Node]:
    """``σ*(A ⋈ B) − C`` → ``σ*((A − C) ⋈ B)`` for each join input A holding every correlated column."""
    if not (isinstance(node, Negation) and node.mode == "anti" and node.on):
        return []
    sels, join = _peel(node.left)
    if not isinstance(join, Join) or any(isinstance(i, Scan) and i.is_relation for i in join.inputs):
        return []
    wanted = {aliases[a.stream] for a, _ in node.on if a.stream >= 0}
    out = []
    for i, inp in enumerate(join.inputs):
        if wanted and wanted <= _aliases(inp, aliases):
            pushed = replace(node, left=inp)
            inputs = join.inputs[:i] + (pushed,) + join.inputs[i + 1 :]
            out.append(_wrap(sels, replace(join, inputs=inputs)))
    return out


def _pull_up(node: Node) -> list[Node]:
    """``σ*(A − C) ⋈ B`` → ``(σ*(A) ⋈ B) − C``."""
    if not isinstance(node, Join):
        return []
    out: list[Node] = []
    for i, inp in enumerate(node.inputs):
        sels, neg = _peel(inp)
        if isinstance(neg, Negation) and neg.mode == "anti":
            inputs = node.inputs[:i] + (_wrap(sels, neg.left),) + node.inputs[i + 1 :]
            out.append(replace(neg, left=replace(node, inputs=inputs)))
    return out


def _one_step(node: Node, aliases: Sequence[str]) -> list[Node]:
    out = _push_down(node, aliases) + _pull_up(node)
    for i, child in enumerate(node.children):
        for new in _one_step(child, aliases):
            kids = list(node.children)
            kids[i] = new
            out.append(with_children(node, kids))
    return out


def alternatives(plan: Plan) -> list[Plan]:
    """``plan`` first, then every distinct plan reachable by moving negations across joins."""
    seen = {_key(plan.root): plan}
    frontier = [plan]
    while frontier and len(seen) < MAX_ALTERNATIVES:
        nxt = []
        for p in frontier:
            for root in _one_step(p.root, p.aliases):
                k = _key(root)
                if k not in seen and len(seen) < MAX_ALTERNATIVES:
                    seen[k] = replace(p, root=cast(Output, root))  # a rewrite keeps the Output root
                    nxt.append(seen[k])
        frontier = nxt
    return list(seen.values())


# --- statistics -----------------------------------------------------------------------------------


def plan_stats(specs: StatSpecs, plan: Plan | None = None) -> dict[str, dict[str, float]]:
    """Per-alias statistics from ``["S1:rate=10,distinct=500", ...]`` or ``{"S1": {"rate": 10}}``.

    Fields: ``rate``, ``distinct``, ``distinct.<attr>``, ``window`` (time span of
    an unbounded window), ``rows`` (of a relation). Missing fields take the
    uniform defaults.
    """
    if not specs:
        return {}
    if isinstance(specs, Mapping):
        out = {a: {k: float(v) for k, v in d.items()} for a, d in specs.items()}
    else:
        out = {}
        for spec in specs:
            alias, sep, body = spec.partition(":")
            if not sep or not body.strip():
                raise OptionError(f"bad --stats {spec!r}", hint="write STREAM:field=value,..., e.g. --stats S1:rate=10,distinct=500")
            fields = out.setdefault(alias.strip(), {})
            for item in body.split(","):
                name, _, value = item.partition("=")
                try:
                    fields[name.strip()] = float(value)
                except ValueError:
                    raise OptionError(
                        f"bad value {value.strip()!r} for {name.strip()} of {alias}", location=f"--stats {spec}", hint="values are positive numbers"
                    ) from None
    if plan is not None:
        known = {s.alias for s in plan.scans()} | {n.alias for n in walk(plan.root) if isinstance(n, Subquery)}
        for alias in out:
            if alias not in known:
                raise OptionError(f"unknown stream {alias!r} in --stats", hint=f"FROM lists {', '.join(sorted(known))}")
    return out


# --- cost model -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Flow:
    """An edge: positive tuples per time unit, tuples live in the answer, premature-expiration fraction."""

    rate: float
    size: float
    premature: float = 0.0


class _Estimator:
    def __init__(self, plan: Plan, stats: Mapping[str, Mapping[str, float]], premature: float):
        self.aliases = plan.aliases
        self.stats = stats
        self.premature = premature
        self.flows: dict[Node, Flow] = {}

    def field(self, alias: str, name: str, default: float) -> float:
        return float(self.stats.get(alias, {}).get(name, default))

    def distinct(self, col: Col) -> float:
        alias = self.aliases[col.stream] if 0 <= col.stream < len(self.aliases) else ""
        s = self.stats.get(alias, {})
        return float(s.get(f"distinct.{col.attr}", s.get("distinct", DEFAULT_DISTINCT)))

    def selectivity(self, e: Expr) -> float:
        if isinstance(e, And):
            return math.prod(self.selectivity(i) for i in e.items)
        if isinstance(e, Or):
            return 1 - math.prod(1 - self.selectivity(i) for i in e.items)
        if isinstance(e, Not):
            return 1 - self.selectivity(e.item)
        if isinstance(e, Cmp) and e.op == "=":
            cols = [x for x in (e.left, e.right) if isinstance(x, Col)]
            if cols and any(isinstance(x, Lit) for x in (e.left, e.right)):
                return 1 / self.distinct(cols[0])
            if len(cols) == 2:
                return 1 / max(self.distinct(cols[0]), self.distinct(cols[1]))
        return RANGE_SELECTIVITY

    def _window(self, alias: str, window: WindowSpec, rate: float) -> float:
        if window.is_count:
            per = self.field(alias, "distinct", DEFAULT_DISTINCT) if window.partition_by else 1.0
            return window.size * per
        span = self.field(alias, "window", UNBOUNDED_HORIZON) if window.kind == "unbounded" else window.length
        return rate * max(span, 1)

    def flow(self, node: Node) -> Flow:
        if node not in self.flows:
            self.flows[node] = self._flow(node, [self.flow(c) for c in node.children])
        return self.flows[node]

    def _flow(self, node: Node, kids: list[Flow]) -> Flow:
        if isinstance(node, Scan):
            if node.is_relation:
                return Flow(self.field(node.alias, "rate", 0.0), self.field(node.alias, "rows", DEFAULT_ROWS), 1.0 if node.kind == "table" else 0.0)
            rate = self.field(node.alias, "rate", DEFAULT_RATE)
            assert node.window is not None  # a stream scan has a window
            return Flow(rate, self._window(node.alias, node.window, rate), 1.0 if node.window.is_count else 0.0)
        if isinstance(node, Subquery) and node.window is not None:
            return Flow(kids[0].rate, self._window(node.alias, node.window, kids[0].rate), 1.0 if node.window.is_count else 0.0)
        if isinstance(node, Select):
            s = self.selectivity(node.predicate)
            return Flow(kids[0].rate * s, kids[0].size * s, kids[0].premature)
        if isinstance(node, Union):
            return Flow(sum(k.rate for k in kids), sum(k.size for k in kids), max(k.premature for k in kids))
        if isinstance(node, Join):
            sel = math.prod(1 / max(self.distinct(a), self.distinct(b)) for a, b in node.equalities)
            sel *= math.prod(self.selectivity(f) for f in node.filters)
            rate = sum(k.rate * math.prod(o.size for j, o in enumerate(kids) if j != i) for i, k in enumerate(kids))
            return Flow(rate * sel, math.prod(k.size for k in kids) * sel, max(k.premature for k in kids))
        if isinstance(node, Negation):
            v = max((self.distinct(b) for _, b in node.on), default=DEFAULT_DISTINCT)
            keep = (1 - 1 / v) ** kids[1].size if v > 1 else 0.0
            return Flow(kids[0].rate * keep, kids[0].size * keep, max(self.premature, kids[0].premature))
        if isinstance(node, Distinct):
            live = min(kids[0].size, DEFAULT_DISTINCT)
            share = live / kids[0].size if kids[0].size else 1.0
            return Flow(kids[0].rate * share, live, max(self.premature, kids[0].premature))
        if isinstance(node, Aggregate):
            groups = math.prod(self.distinct(k.expr) if isinstance(k.expr, Col) else DEFAULT_DISTINCT for k in node.keys) if node.keys else 1.0
            return Flow(kids[0].rate, min(groups, max(kids[0].size, 1.0)), 0.0)
        return kids[0]  # Project, Subquery without window, Output


def flows(plan: Plan, stats: StatSpecs = None, premature: float = PREMATURE) -> dict[Node, Flow]:
    """The estimated :class:`Flow` (rate, live size) of every edge of a plan, independent of strategy."""
    est = _Estimator(plan, plan_stats(stats, plan), premature)
    return {n: est.flow(n) for n in walk(plan.root)}


def edge_cost(flow: Flow, pattern: Pattern, strategy: str, partitions: int = 10) -> float:
    """Tuples processed per time unit on one edge under ``strategy`` (see the module docstring)."""
    r = flow.rate
    if pattern == Pattern.MONO:
        return r
    if strategy == "nt":
        return 2 * r
    if strategy == "direct":
        premature = r * flow.premature if pattern == Pattern.STR else 0.0
        return r + premature + flow.size * SCAN_COST
    if pattern != Pattern.STR:
        return r * (1 + CHEAP_EXPIRATION)
    f = flow.premature
    calendar = r * (1 + (1 - f) * CHEAP_EXPIRATION + f * (1 + flow.size / partitions * SCAN_COST))
    return min(2 * r, calendar)


def plan_cost(plan: Plan, stats: StatSpecs = None, strategy: str = "upa", premature: float = PREMATURE, partitions: int = 10) -> tuple[float, dict[Node, float]]:
    """Total tuples processed per time unit, and each operator's share (the edges it consumes)."""
    if strategy not in STRATEGIES:
        raise OptionError(f"unknown strategy {strategy!r}", hint=f"use one of {', '.join(STRATEGIES)}")
    est = _Estimator(plan, plan_stats(stats, plan), premature)
    patterns = annotate(plan.root)
    per_node = {}
    for node in walk(plan.root):
        per_node[node] = sum(edge_cost(est.flow(c), patterns[c], strategy, partitions) for c in node.children)
    return sum(per_node.values()), per_node


def choose_plan(plan: Plan, stats: StatSpecs = None, strategy: str = "upa", premature: float = PREMATURE, partitions: int = 10) -> tuple[Plan, dict[str, Any]]:
    """The cheapest of :func:`alternatives` under ``strategy``, and a report of the costs and why."""
    stats = plan_stats(stats, plan)
    priced = []
    for alt in alternatives(plan):
        total, _ = plan_cost(alt, stats, strategy, premature, partitions)
        priced.append((total, alt))
    best_cost, best = min(priced, key=lambda x: x[0])
    texts = [algebra(p.root) for _, p in priced]
    report: dict[str, Any] = {
        "strategy": strategy,
        "premature": premature,
        "alternatives": [{"plan": t, "cost": c} for t, (c, _) in zip(texts, priced)],
        "costs": {t: c for t, (c, _) in zip(texts, priced)},
        "chosen": algebra(best.root),
    }
    if len(priced) == 1:
        report["why"] = "no rewriting applies"
    else:
        worst = max(c for c, _ in priced)
        pattern_note = {
            "upa": "strict edges carry negative tuples, weak and weakest ones expire by time",
            "nt": "every edge carries a negative tuple per expiration, so the relational order decides",
            "direct": "edges expire by scanning state; only premature deletions are negative tuples",
        }
        report["why"] = f"cheapest of {len(priced)} plans under {strategy.upper()} ({best_cost:.3g} vs up to {worst:.3g} tuples per time unit): {pattern_note[strategy]}"
        if strategy != "nt":
            relational = min(priced, key=lambda x: plan_cost(x[1], stats, "nt", premature, partitions)[0])[1]
            if relational is not best:
                report["why"] += f"; the relational order (NT) would be {algebra(relational.root)}"
    return best, report
