"""Group-by with aggregation over signed tuples (Golab's thesis §3.2.2 Fig. 3.1(d), §3.5.2).

Strict non-monotonic: a group's value changes whenever a row of the group
arrives or leaves, at times no one can predict. The operator keeps one result
row per non-empty group (the thesis's "array indexed by group label",
§3.5.2) and, when a group changes at ``now``, emits ``−1`` for its previous
row and ``+1`` for its new row (``exp = NO_EXP``: results leave only by
replacement); a group whose last row leaves emits only the ``−1``. Changes
are batched per call, so a group changes at most once per ``push``/``expire``
and unchanged values emit nothing.

Aggregates: COUNT(*), COUNT, SUM, AVG, MIN, MAX, MEDIAN, QUANTILE, each optionally DISTINCT, and
TOPK(k, x): the k most frequent values (count descending, then value) joined by ``,``;
APPROX_COUNT_DISTINCT and APPROX_QUANTILE are answered exactly here (their sketches
cannot delete a row; :mod:`slidewise.operators.aggregates.sketches`).
Nulls (``None``, NaN) are ignored by all but COUNT(*); SUM/AVG/MIN/MAX of no
values are ``None``. COUNT/SUM/AVG are running sums (O(1) per row); MIN/MAX
and MEDIAN/QUANTILE keep the group's values in a sorted list (O(log n) search); DISTINCT keeps
value counts.

Under NT the input's expirations arrive as negative tuples and no input is
stored. Under DIRECT/UPA the input window is kept (in the strategy's store)
to learn which rows expire at ``now``; negative input rows (STR input)
delete their stored row.
"""

from __future__ import annotations

from bisect import bisect_left, insort

from slidewise.model.batch import NO_EXP
from slidewise.operators.aggregates.quantile import of_sorted
from slidewise.operators.aggregates.sketches import EXACT, exact
from slidewise.operators.aggregates.topk import top_of
from slidewise.operators.incremental import Incremental
from slidewise.operators.select import row_function
from slidewise.plan.logical import Pattern

__all__ = ["AggregateRows"]

_STAR, _COUNT, _SUM, _AVG, _MINMAX, _DISTINCT, _TOPK, _QUANTILE = range(8)


def _is_null(x) -> bool:
    return x is None or x != x


class AggregateRows(Incremental):
    """GROUP BY keys with COUNT/SUM/AVG/MIN/MAX; a group's new row replaces its old one (§3.5.2)."""

    name = "aggregate"

    def __init__(self, node, ctx):
        super().__init__(node, ctx)
        schema = node.child.schema
        self.keyfns = tuple(row_function(k.expr, schema, ctx.aliases) for k in node.keys)
        self.specs = []
        for a in node.aggs:
            if a.func in EXACT:  # a sketch cannot delete: the exact aggregate (within any error bound)
                a = exact(a)
            arg = None if a.arg is None else row_function(a.arg, schema, ctx.aliases)
            if arg is None:
                kind = _STAR
            elif a.func == "topk":
                kind = _TOPK
            elif a.func in ("median", "quantile"):
                kind = _DISTINCT if a.distinct else _QUANTILE
            elif a.distinct:
                kind = _DISTINCT
            else:
                kind = {"count": _COUNT, "sum": _SUM, "avg": _AVG}.get(a.func, _MINMAX)
            self.specs.append((kind, a.func, arg, a.param))
        self.groups: dict = {}  # group key -> [rows, state per aggregate]
        self.results: dict = {}  # group key -> current output values
        inp = ctx.inputs[0] if ctx.inputs else Pattern.WKS
        self.input = None if ctx.strategy == "nt" else ctx.store(inp)

    def _group_key(self, vals):
        return tuple([f(vals) for f in self.keyfns])

    def _fresh(self):
        return [0] + [0 if kind in (_STAR, _COUNT) else [0, 0] if kind in (_SUM, _AVG) else [] if kind in (_MINMAX, _QUANTILE) else {} for kind, *_ in self.specs]

    def _apply(self, vals, sign, touched) -> None:
        gk = self._group_key(vals)
        g = self.groups.get(gk)
        if g is None:
            if sign < 0:
                return
            g = self.groups[gk] = self._fresh()
        if gk not in touched:
            touched[gk] = self.results.get(gk)
        g[0] += sign
        for i, (kind, _, arg, _) in enumerate(self.specs, 1):
            if kind == _STAR:
                continue
            x = arg(vals)
            if _is_null(x):
                continue
            if kind == _COUNT:
                g[i] += sign
            elif kind == _SUM or kind == _AVG:
                s = g[i]
                s[1] += sign
                s[0] = s[0] + x if sign > 0 else (s[0] - x if s[1] else 0)
            elif kind == _MINMAX or kind == _QUANTILE:
                if sign > 0:
                    insort(g[i], x)
                else:
                    values = g[i]
                    j = bisect_left(values, x)
                    if j < len(values) and values[j] == x:
                        del values[j]
            else:
                c = g[i].get(x, 0) + sign
                if c > 0:
                    g[i][x] = c
                else:
                    g[i].pop(x, None)

    def _value(self, g):
        out = []
        for i, (kind, func, _, p) in enumerate(self.specs, 1):
            s = g[i]
            if kind == _STAR:
                out.append(g[0])
            elif kind == _COUNT:
                out.append(s)
            elif kind == _SUM:
                out.append(s[0] if s[1] else None)
            elif kind == _AVG:
                out.append(s[0] / s[1] if s[1] else None)
            elif kind == _MINMAX:
                out.append((s[0] if func == "min" else s[-1]) if s else None)
            elif kind == _TOPK:
                out.append(top_of(s, int(p or 1)))
            elif kind == _QUANTILE:
                out.append(of_sorted(s, p))
            else:
                keys = list(s)
                if func == "count":
                    out.append(len(keys))
                elif not keys:
                    out.append(None)
                elif p is not None:
                    out.append(of_sorted(sorted(keys), p))
                elif func == "sum":
                    out.append(sum(keys))
                elif func == "avg":
                    out.append(sum(keys) / len(keys))
                else:
                    out.append(min(keys) if func == "min" else max(keys))
        return tuple(out)

    def _emit(self, touched, now) -> list:
        out: list = []
        for gk, old in touched.items():
            g = self.groups[gk]
            new = None
            if g[0] > 0:
                new = gk + self._value(g)
                self.results[gk] = new
            else:
                del self.groups[gk]
                self.results.pop(gk, None)
            if new == old:
                continue
            if old is not None:
                out.append((old, now, NO_EXP, -1))
            if new is not None:
                out.append((new, now, NO_EXP, 1))
        return out

    def push(self, side, rows, now):
        touched: dict = {}
        store = self.input
        for row in rows:
            v, _, exp, sign = row
            if sign > 0:
                if store is not None:
                    store.insert(row)
                self._apply(v, 1, touched)
            elif store is None or store.delete(v, exp):
                self._apply(v, -1, touched)
        return self._emit(touched, now) if touched else []

    def expire(self, now):
        if self.input is None:
            return []
        touched: dict = {}
        for r in self.input.expire(now):
            self._apply(r[0], -1, touched)
        return self._emit(touched, now) if touched else []

    def next_event(self):
        t = None if self.input is None else self.input.next_expiry()
        return None if t is None else t + 1

    def state_size(self):
        return len(self.results) + (len(self.input) if self.input is not None else 0)
