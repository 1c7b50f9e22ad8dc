"""Plan-time choice of the join synopsis: a periodic GROUP BY over an equi-join of two time windows.

Golab's thesis (§8.3.2, "Aggregates over Joins") keeps aggregates over a
sliding window join in *join synopses* (running, interval and basic interval:
RJ, IJ, BIJ) whose intervals summarise join results by expiration time, and
generalises them to windows of unequal length. For an equi-join whose
aggregates factor over the join key, no join result needs to be formed: the
join results of key ``v`` in the windows at ``τ`` are the pairs of the two
inputs' tuples with key ``v`` in their windows, so per key

* ``COUNT(*) = n_A(v) · n_B(v)``,
* ``COUNT(A.x) = c_A(v) · n_B(v)``, ``SUM(A.x) = s_A(v) · n_B(v)`` (and
  symmetrically for B), ``AVG = SUM / COUNT``,
* ``MIN(A.x)`` / ``MAX(A.x)`` = the extreme of A's values of ``v`` where ``n_B(v) > 0``,

where ``n``, ``c`` and ``s`` are each input's per-key aggregates over its own
window. Each input is pre-aggregated once per (pane, key) — the sub-windows
of the thesis's synopses — and each window's per-key aggregates come from
the running synopsis (counts, sums) or the interval synopsis (MIN / MAX) over
that input's own window length, so unequal windows need no flags (the
thesis's generalised synopses, SS3). :mod:`slidewise.runtime.join_panes`
executes it.

:func:`match` recognises ``SELECT RSTREAM(keys, aggregates) FROM A [RANGE T1
SLIDE D], B [RANGE T2 SLIDE D] WHERE A.k = B.k [AND ...] [AND filters of one
input] GROUP BY keys [HAVING ...]`` (or ISTREAM / DSTREAM selecting every key):
group keys among the join columns (or none), COUNT(*) and COUNT / SUM / AVG /
MIN / MAX (not DISTINCT) of a plain column of either input; any other plan
gets None.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import gcd

import numpy as np

from slidewise.optimizer import pane_plan
from slidewise.optimizer.pane_plan import BASIC_MAX_PANES, SlidingAggregate, simple
from slidewise.plan.expr import Col, Expr
from slidewise.plan.logical import AggCall, Join, Node, Plan, Scan, Select
from slidewise.synopses import OVERLAPPING
from slidewise.synopses import costs as synopsis_costs

__all__ = ["FACTORED", "JoinAggregate", "match", "periodic"]

#: aggregates of the join computed from the inputs' per-key aggregates
FACTORED = ("count", "sum", "avg", "min", "max")


@dataclass(frozen=True)
class JoinAggregate:
    """A periodic GROUP BY over an equi-join of two time windows, as the join synopsis runs it."""

    sources: tuple[str, str]
    aliases: tuple[str, str]
    lengths: tuple[int, int]  # T of each input's window
    slide: int  # D
    on: tuple[tuple[str, str], ...]  # the join's equalities: (attribute of the first input, of the second)
    key_pairs: tuple[int, ...]  # each group key: the index of its equality in ``on``
    key_names: tuple[str, ...]
    aggs: tuple[AggCall, ...]  # arguments: Col with stream 0 or 1
    wheres: tuple[Expr | None, Expr | None]  # each input's own filter
    having: Expr | None
    columns: tuple[str, ...]
    kind: str = "rstream"

    @property
    def pane(self) -> int:
        return gcd(gcd(self.lengths[0] + 1, self.lengths[1] + 1), self.slide)

    def panes(self, side: int) -> int:
        return (self.lengths[side] + 1) // self.pane

    def synopsis(self, agg: AggCall, side: int) -> str:
        if agg.func in ("count", "sum", "avg"):
            return "running"
        return "basic interval" if self.panes(side) <= BASIC_MAX_PANES else "interval"

    def side_of(self, agg: AggCall) -> int:
        return agg.arg.stream if isinstance(agg.arg, Col) else 0

    def describe(self) -> str:
        """The line ``explain`` and the run stats show."""
        kinds = list(dict.fromkeys(["running"] + [self.synopsis(a, self.side_of(a)) for a in self.aggs if a.arg is not None]))
        b = max(self.panes(0), self.panes(1))
        overlapping = {k: all(a.func in OVERLAPPING for a in self.aggs if a.arg is not None and self.synopsis(a, self.side_of(a)) == k) for k in kinds}
        costs = synopsis_costs(overlapping, b)
        on = " AND ".join(f"{self.aliases[0]}.{a} = {self.aliases[1]}.{b}" for a, b in self.on)
        return (
            f"join synopsis: per-key partials of each input ({' and '.join(k + ' synopsis' for k in kinds)}) on {on}, no join results formed, "
            f"pane s={self.pane}, b={self.panes(0)},{self.panes(1)}; partials kept per key and input / probed per answer: {costs}"
        )

    def refuse(self, dtypes: tuple[dict[str, np.dtype], dict[str, np.dtype]]) -> str | None:
        """Why the join synopsis cannot run over columns of these types (None: it can)."""
        for a, b in self.on:
            kinds = {dtypes[0][a].kind, dtypes[1][b].kind}
            if "f" in kinds or len({k in "biu" for k in kinds}) > 1:
                return f"join columns {self.aliases[0]}.{a} and {self.aliases[1]}.{b} are float or of different types"
        for agg in self.aggs:
            if isinstance(agg.arg, Col) and agg.func != "count" and dtypes[agg.arg.stream][agg.arg.attr].kind not in "biuf":
                return f"{agg.name} over a non-numeric column"
        return None


def match(plan: Plan) -> JoinAggregate | None:
    """The join-synopsis form of ``plan``, or None when it is not a periodic GROUP BY over a two-window equi-join."""
    peeled = pane_plan.peel(plan)
    if peeled is None:
        return None
    root, agg, having = peeled
    join = agg.child
    if not isinstance(join, Join):
        return None
    if root.slide is None:  # a count window's SLIDE: one stream only
        return None
    if len(join.inputs) != 2 or join.filters or not join.equalities:
        return None
    scans, wheres = [], []
    for i, inp in enumerate(join.inputs):
        where = None
        if isinstance(inp, Select):
            where, inp = inp.predicate, inp.child
            if not _own(where, i):
                return None
        if not isinstance(inp, Scan) or inp.kind != "stream" or inp.window is None or inp.changelog:
            return None
        w = inp.window
        if w.kind != "range" or w.internal or w.slide != root.slide or w.partition_by:
            return None
        scans.append(inp)
        wheres.append(where)
    on = []
    for left, right in join.equalities:
        if {left.stream, right.stream} != {0, 1}:
            return None
        a, b = (left, right) if left.stream == 0 else (right, left)
        on.append((a.attr, b.attr))
    key_pairs = []
    for k in agg.keys:
        pair = next((j for j, (a, b) in enumerate(on) if isinstance(k.expr, Col) and (k.expr.stream, k.expr.attr) in ((0, a), (1, b))), None)
        if pair is None or pair in key_pairs:
            return None
        key_pairs.append(pair)
    for call in agg.aggs:
        if call.func not in FACTORED or call.distinct or not (call.arg is None or isinstance(call.arg, Col) and call.arg.stream in (0, 1)):
            return None
    if root.kind != "rstream" and not {k.name for k in agg.keys} <= set(root.schema):
        return None
    lengths = (_size(scans[0]), _size(scans[1]))
    return JoinAggregate(
        (scans[0].source, scans[1].source),
        (scans[0].alias, scans[1].alias),
        lengths,
        root.slide,
        tuple(on),
        tuple(key_pairs),
        tuple(k.name for k in agg.keys),
        agg.aggs,
        (wheres[0], wheres[1]),
        having,
        tuple(root.schema),
        root.kind,
    )


def periodic(plan: Plan) -> SlidingAggregate | JoinAggregate | None:
    """The columnar form of a periodic GROUP BY: the pane path over one stream, the join synopsis, or None."""
    return pane_plan.match(plan) or match(plan)


def _size(scan: Scan) -> int:
    assert scan.window is not None
    return scan.window.size


def _own(where: Node | Expr, side: int) -> bool:
    """A filter of one input alone, of the pane path's simple form."""
    return isinstance(where, Expr) and simple(where, outputs=False, stream=side)
