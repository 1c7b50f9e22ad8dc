"""Plan-time choice of the pane path for periodic sliding GROUP BY queries.

:func:`match` recognises ``SELECT RSTREAM(keys, aggregates) FROM S [RANGE T
SLIDE D] [WHERE filter] GROUP BY keys [HAVING condition]`` on one stream (or
ISTREAM / DSTREAM when every key is an output column) — the plan
``Output(RSTREAM every D) ← [Project] ← [Select] ← Aggregate ←
[Select] ← Scan`` with plain-column keys and COUNT / SUM / AVG / MIN / MAX /
MEDIAN / QUANTILE ([DISTINCT]), TOPK, APPROX_COUNT_DISTINCT / APPROX_QUANTILE of a plain column — and returns a :class:`SlidingAggregate`; any
other plan gets ``None`` and runs as the per-tuple operator network.
:mod:`slidewise.runtime.pane_engine` executes it over panes (Golab's thesis,
§2.3.4): subtractable aggregates (DISTINCT ones as frequency counts) through the
running synopsis, MIN/MAX and the sketches of APPROX_*
through the interval synopsis (the basic interval synopsis for windows of
at most :data:`BASIC_MAX_PANES` panes).

Panes: the window at ``τ = kD`` holds ``τ − T ≤ ts ≤ τ``, so every window
boundary lies on the grid of width ``s = gcd(T + 1, D)`` and a window is
``b = (T + 1) / s`` panes of it; ``explain`` shows ``s``, ``b`` and each synopsis's
partials kept and probed (:func:`slidewise.synopses.cost`).

A count window ``[ROWS n SLIDE m]`` (``counted``) is the same with the arrival
number ``p`` (1, 2, ... in processing order, before WHERE) as the clock: the window
of evaluation ``k`` holds ``km − (n − 1) ≤ p ≤ km``, so ``T = n − 1``, ``D = m``,
panes of ``gcd(n, m)`` arrivals and ``b = n / gcd(n, m)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import gcd

import numpy as np

from slidewise.errors import PlanError
from slidewise.operators.aggregates import REGISTRY
from slidewise.plan.expr import And, BinOp, Cmp, Col, Expr, Func, Lit, Not, Or
from slidewise.plan.logical import AggCall, Aggregate, Output, Plan, Project, Scan, Select
from slidewise.synopses import OVERLAPPING
from slidewise.synopses import costs as synopsis_costs

__all__ = ["BASIC_MAX_PANES", "SlidingAggregate", "count_window_error", "match", "unfit"]

#: periodic outputs the pane path serves: the whole answer, or its changes between evaluations
KINDS = ("rstream", "istream", "dstream")

#: MIN/MAX over windows of at most this many panes probe every pane (basic interval synopsis)
BASIC_MAX_PANES = 4


@dataclass(frozen=True)
class SlidingAggregate:
    """A periodic GROUP BY over one time window (or count window: ``counted``), as the pane path runs it."""

    source: str
    alias: str
    length: int  # T (a count window: n − 1, in arrivals)
    slide: int  # D (a count window: m arrivals)
    keys: tuple[str, ...]  # key attributes of the stream (``ts`` allowed)
    key_names: tuple[str, ...]  # their output column names
    aggs: tuple[AggCall, ...]
    where: Expr | None
    having: Expr | None
    columns: tuple[str, ...]  # the output columns in order (before ts, sign)
    kind: str = "rstream"  # the output operator (KINDS)
    counted: bool = False  # [ROWS n SLIDE m]: the clock is the arrival number, evaluations after every m-th arrival

    @property
    def pane(self) -> int:
        return gcd(self.length + 1, self.slide)

    @property
    def panes(self) -> int:
        return (self.length + 1) // self.pane

    def synopsis(self, agg: AggCall) -> str:
        if agg.func in ("count", "sum", "avg", "median", "quantile", "topk"):  # DISTINCT, TOPK, quantiles: frequency counts subtract
            return "running"
        return "basic interval" if self.panes <= BASIC_MAX_PANES else "interval"

    def describe(self) -> str:
        """The line ``explain`` and the run stats show."""
        kinds = list(dict.fromkeys(self.synopsis(a) for a in self.aggs)) or ["running"]
        if "running" not in kinds:
            kinds.insert(0, "running")  # COUNT(*) of every group decides which groups have a row
        overlapping = {k: all(a.func in OVERLAPPING for a in self.aggs if self.synopsis(a) == k) for k in kinds}
        costs = synopsis_costs(overlapping, self.panes)
        unit = " arrivals" if self.counted else ""
        return (
            f"sliding aggregate: {' and '.join(k + ' synopsis' for k in kinds)}, pane s={self.pane}{unit}, b={self.panes}; "
            f"partials kept per group / probed per answer: {costs}"
        )

    def arguments(self) -> tuple[str, ...]:
        """The stream attributes the aggregates read."""
        return tuple(dict.fromkeys(a.arg.attr for a in self.aggs if a.arg is not None))  # type: ignore[attr-defined]  # match() admits only Col arguments

    def refuse(self, dtypes: dict[str, np.dtype]) -> str | None:
        """Why the pane path cannot run over columns of these types (None: it can)."""
        for k in self.keys:
            if k != "ts" and dtypes[k].kind == "f":
                return f"group key {self.alias}.{k} is a float column (NaN keys)"
        for a in self.aggs:
            if a.arg is not None and a.func not in ("count", "approx_count_distinct") and dtypes[a.arg.attr].kind not in "biuf":  # type: ignore[attr-defined]  # only Col arguments
                return f"{a.name} over a non-numeric column"
        return None


def peel(plan: Plan) -> tuple[Output, Aggregate, Expr | None] | None:
    """(output, aggregate, HAVING) of a periodic GROUP BY: an Output with a slide over an optional
    column-only Project, an optional Select on the outputs and an Aggregate; None for another shape."""
    root = plan.root
    if not isinstance(root, Output) or root.kind not in KINDS or root.restore or not (root.slide or root.count_slide):
        return None
    node = root.child
    if isinstance(node, Project):
        if not all(isinstance(i.expr, Col) and i.expr.stream < 0 for i in node.items):
            return None
        node = node.child
    having = None
    if isinstance(node, Select):
        having, node = node.predicate, node.child
        if not simple(having, outputs=True):
            return None
    return (root, node, having) if isinstance(node, Aggregate) else None


def match(plan: Plan) -> SlidingAggregate | None:
    """The pane form of ``plan``, or None when it is not a periodic one-stream GROUP BY (or reads a changelog)."""
    peeled = peel(plan)
    if peeled is None or not peeled[1].aggs and not peeled[1].keys:
        return None
    root, agg, having = peeled
    node = agg.child
    where = None
    if isinstance(node, Select):
        where, node = node.predicate, node.child
        if not simple(where, outputs=False):
            return None
    if not isinstance(node, Scan) or node.kind != "stream" or node.changelog:  # retractions: the operator network
        return None
    w = node.window
    assert w is not None  # a stream scan has a window
    if root.count_slide:  # [ROWS n SLIDE m]: T = n − 1 arrivals, D = m
        if w.kind != "rows" or w.partition_by is not None or w.internal:
            return None
        length, slide = w.size - 1, root.count_slide
    elif w.kind != "range" or w.internal or w.slide != root.slide or root.slide is None:
        return None
    else:
        length, slide = w.size, root.slide
    keys = []
    for k in agg.keys:
        if not isinstance(k.expr, Col) or k.expr.stream != 0:
            return None
        keys.append(k.expr.attr)
    for a in agg.aggs:
        if a.func not in REGISTRY or not (a.arg is None or isinstance(a.arg, Col) and a.arg.stream == 0):
            return None
    if len(set(keys)) != len(keys):
        return None
    if root.kind != "rstream" and not {k.name for k in agg.keys} <= set(root.schema):
        return None  # changes of a bag of projected rows are not changes per group
    return SlidingAggregate(
        node.source,
        node.alias,
        length,
        slide,
        tuple(keys),
        tuple(k.name for k in agg.keys),
        agg.aggs,
        where,
        having,
        tuple(root.schema),
        root.kind,
        counted=bool(root.count_slide),
    )


def count_window_error(plan: Plan, why: str) -> PlanError:
    """The error for a ``[ROWS n SLIDE m]`` query the pane path, its only path, cannot run, and ``why``."""
    text = " ".join((plan.text or plan.root.label()).split())
    return PlanError(
        f"{text}: a count window with SLIDE runs on the pane path only, and {why}",
        hint="group by plain integer or text columns of the stream, aggregate plain columns, keep WHERE / HAVING to "
        "comparisons, AND / OR / NOT, + - * and ABS; or use a time window, e.g. [RANGE 100 SLIDE 10]",
    )


def unfit(plan: Plan, dtypes: dict[str, np.dtype]) -> str | None:
    """Why the pane path cannot run the bound count-window ``plan`` over columns of these types (None: it can)."""
    spec = match(plan)
    if spec is None:
        scan = plan.scans()[0]
        return f"stream {scan.source} is a changelog" if scan.changelog else "this query is not of its form"
    return spec.refuse(dtypes)


def simple(e: Expr, outputs: bool, stream: int = 0) -> bool:
    """Comparisons, AND / OR / NOT, + - * and ABS over columns and literals (no / or %: their
    per-row errors would differ); ``outputs``: columns of the aggregate's output only, else of
    input ``stream`` only."""
    if isinstance(e, Col):
        return (e.stream < 0) == outputs and (outputs or e.stream == stream)
    if isinstance(e, Lit):
        return isinstance(e.value, (int, float, str)) and not isinstance(e.value, bool)
    if isinstance(e, BinOp):
        return e.op in "+-*" and simple(e.left, outputs, stream) and simple(e.right, outputs, stream)
    if isinstance(e, Cmp):
        return simple(e.left, outputs, stream) and simple(e.right, outputs, stream)
    if isinstance(e, (And, Or)):
        return all(simple(i, outputs, stream) for i in e.items)
    if isinstance(e, Not):
        return simple(e.item, outputs, stream)
    if isinstance(e, Func):
        return e.name == "abs" and all(simple(a, outputs, stream) for a in e.args)
    return False
