"""Projection of join results onto the SELECT list.

``SELECT *`` keeps every member column (``<stream>.ts``, ``<stream>.<attr>``);
a select item is evaluated on the member columns and named by its alias or its
text (``S1.a``). ``ts``, ``exp`` and ``sign`` are always appended.
"""

from __future__ import annotations

import numpy as np

from slidewise.model.batch import ResultBatch
from slidewise.plan.expr import Col, evaluate
from slidewise.plan.query import JoinQuery


def output_columns(query: JoinQuery, results: ResultBatch) -> dict[str, np.ndarray]:
    """The output columns of ``results`` for ``query``, in output order."""
    aliases = query.aliases

    def get(stream: int, attr: str):
        return results.cols[f"{aliases[stream]}.{attr}"]

    if query.select is None:
        out = dict(results.cols)
    else:
        out = {}
        for item in query.select:
            if isinstance(item.expr, Col) and item.expr.attr == "*":
                prefix = f"{aliases[item.expr.stream]}."
                out.update({k: v for k, v in results.cols.items() if k.startswith(prefix)})
                continue
            value = evaluate(item.expr, get)
            out[item.name] = np.broadcast_to(np.asarray(value), (len(results),)).copy() if np.ndim(value) == 0 else value
    out["ts"] = results.ts
    out["exp"] = results.exp
    out["sign"] = results.sign
    return out


def output_names(query: JoinQuery, schemas: list[list[str]]) -> list[str]:
    """Output column names, known before any result exists (for file headers)."""
    aliases = query.aliases
    names: list[str] = []
    star = [Col(i, "*", a) for i, a in enumerate(aliases)] if query.select is None else None
    for item in star or [i.expr if isinstance(i.expr, Col) and i.expr.attr == "*" else i for i in query.select]:
        if isinstance(item, Col):
            names += [f"{aliases[item.stream]}.ts"] + [f"{aliases[item.stream]}.{c}" for c in schemas[item.stream]]
        else:
            names.append(item.name)
    return names + ["ts", "exp", "sign"]


# --- general plans (Golab's thesis §3.2.2): projection over signed tuples -------------------------

from slidewise.operators.incremental import Incremental  # noqa: E402
from slidewise.operators.select import column_index, row_function  # noqa: E402


class ProjectRows(Incremental):
    """π over signed tuples: evaluates the items per row, keeping ``ts``, ``exp`` and ``sign``.

    Weakest non-monotonic (§3.2.2): a negative row projects to the negative of
    its positive row's projection. No duplicate elimination. Stateless.
    """

    name = "project"

    def __init__(self, node, ctx):
        super().__init__(node, ctx)
        schema = node.child.schema
        index = {c: i for i, c in enumerate(schema)}
        fns = []
        for item in node.items:
            if isinstance(item.expr, Col) and item.expr.attr == "*":
                prefix = f"{item.expr.name}."
                fns += [_getter(index[c]) for c in schema if c.startswith(prefix)]
            elif isinstance(item.expr, Col):
                fns.append(_getter(column_index(item.expr, schema, ctx.aliases)))
            else:
                fns.append(row_function(item.expr, schema, ctx.aliases))
        self.fns = tuple(fns)
        positions = [getattr(f, "position", None) for f in fns]
        self.positions = None if None in positions else tuple(positions)

    def push(self, side, rows, now):
        if self.positions is not None:
            pos = self.positions
            return [(tuple([v[i] for i in pos]), ts, exp, sign) for v, ts, exp, sign in rows]
        fns = self.fns
        return [(tuple([f(v) for f in fns]), ts, exp, sign) for v, ts, exp, sign in rows]

    def advance(self, inputs, lo, hi):
        """Stateless: every group mapped in one pass."""
        groups = inputs[0][1] if inputs else ()
        if self.positions is not None:
            pos = self.positions
            if len(pos) == 1:
                i = pos[0]
                return [(t, [((v[i],), ts, exp, sign) for v, ts, exp, sign in rows]) for t, rows in groups]
            return [(t, [(tuple([v[i] for i in pos]), ts, exp, sign) for v, ts, exp, sign in rows]) for t, rows in groups]
        fns = self.fns
        return [(t, [(tuple([f(v) for f in fns]), ts, exp, sign) for v, ts, exp, sign in rows]) for t, rows in groups]


def _getter(i):
    def get(vals):
        return vals[i]

    get.position = i
    return get
