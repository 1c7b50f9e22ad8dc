"""Column pruning: a bound plan's stream scans keep only the attributes the plan reads.

Every row of a general plan is a Python tuple of its node's schema
(:mod:`slidewise.operators.incremental`), so each input attribute costs time
per row at the source and in every operator that copies rows. This rewrite
walks a bound plan (:func:`slidewise.plan.bind.bind`) from the root and
collects, per node, the columns of its output that something above reads:

* the output operator reads every column of its input (they are the result);
* ``Project`` reads what its items name (``alias.*`` all of ``alias``),
  ``Select`` what is needed above plus its predicate, ``Aggregate`` its keys
  and arguments, ``Join`` what is needed above plus its predicates;
* ``Distinct``, ``Union``, ``Negation`` and windowed subqueries compare or
  keep whole rows: they read every column of their inputs;
* a subquery without a window passes columns through by position.

A stream scan keeps ``ts``, the columns read from it and its ``PARTITION BY``
column; scans of one source share one column set (they share its rows).
Relations are not pruned (their first attribute is the key). Answers do not
change: pruned columns are never read.

>>> from slidewise.plan.logical import Distinct, Output, Plan, Project, Scan
>>> from slidewise.plan.expr import Col
>>> from slidewise.plan.query import SelectItem, WindowSpec
>>> from slidewise.plan.bind import bind
>>> scan = Scan("L", "L", WindowSpec("range", 10))
>>> root = Output(Distinct(Project(scan, (SelectItem(Col(0, "src", "L")),))), kind="rstream")
>>> plan = bind(Plan(root, ("L",)), {"L": ["ts", "src", "dst", "bytes"]})
>>> prune_columns(plan).scans()[0].columns
('src',)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import cast

from slidewise.plan.bind import column_name, with_children
from slidewise.plan.expr import Col, Expr, columns_of
from slidewise.plan.logical import Aggregate, Join, Node, Output, Plan, Project, Scan, Select, Subquery

__all__ = ["prune_columns"]


def prune_columns(plan: Plan) -> Plan:
    """``plan`` (bound) with stream scans reading only the columns the plan uses (all of a changelog's)."""
    wanted: dict[str, set[str]] = {}  # source -> attributes read from it
    scans: list[Scan] = []
    _need(plan.root, set(plan.root.schema), plan.aliases, wanted, scans)
    streams = [s for s in scans if not s.is_relation]
    keep = {s.source: tuple(c for c in s.columns or () if c in wanted[s.source]) for s in streams}
    if all(keep[s.source] == s.columns for s in streams):
        return plan
    return replace(plan, root=cast(Output, _rebuild(plan.root, keep)))  # _rebuild keeps each node's class


def _rebuild(node: Node, keep: dict[str, tuple[str, ...]]) -> Node:
    if isinstance(node, Scan):
        return node if node.is_relation else replace(node, columns=keep[node.source])
    return with_children(node, [_rebuild(c, keep) for c in node.children])


def _read(exprs: Iterable[Expr], schema: tuple[str, ...], aliases: Sequence[str]) -> set[str]:
    """Columns of ``schema`` that ``exprs`` read (``alias.*`` reads all of ``alias``)."""
    out: set[str] = set()
    for expr in exprs:
        for stream, attr in columns_of(expr):
            if attr == "*":
                prefix = f"{aliases[stream]}." if 0 <= stream < len(aliases) else None
                out.update(c for c in schema if prefix and c.startswith(prefix))
            else:
                out.add(column_name(Col(stream, attr), aliases))
    return out & set(schema)


def _need(node: Node, need: set[str], aliases: Sequence[str], wanted: dict[str, set[str]], scans: list[Scan]) -> None:
    """Record what ``node``'s inputs must provide so that its columns ``need`` are right."""
    if isinstance(node, Scan):
        scans.append(node)
        prefix = f"{node.alias}."
        attrs = wanted.setdefault(node.source, set())
        attrs.update(c[len(prefix) :] for c in need if c.startswith(prefix))
        if node.window is not None and node.window.partition_by is not None:
            attrs.add(node.window.partition_by)
        if node.changelog:  # a retraction names its row by every attribute
            attrs.update(node.columns or ())
        return
    if isinstance(node, Output):
        _need(node.child, set(node.child.schema), aliases, wanted, scans)
    elif isinstance(node, Project):
        _need(node.child, _read([i.expr for i in node.items], node.child.schema, aliases), aliases, wanted, scans)
    elif isinstance(node, Select):
        _need(node.child, need | _read([node.predicate], node.child.schema, aliases), aliases, wanted, scans)
    elif isinstance(node, Aggregate):
        exprs = [k.expr for k in node.keys] + [a.arg for a in node.aggs if a.arg is not None]
        _need(node.child, _read(exprs, node.child.schema, aliases), aliases, wanted, scans)
    elif isinstance(node, Join):
        exprs = [c for pair in node.equalities for c in pair] + list(node.filters)
        used = need | _read(exprs, node.schema, aliases)
        for child in node.inputs:
            _need(child, used & set(child.schema), aliases, wanted, scans)
    elif isinstance(node, Subquery) and node.window is None:
        inner = node.child.schema
        _need(node.child, {inner[i] for i, c in enumerate(node.schema) if c in need}, aliases, wanted, scans)
    else:  # Distinct, Union, Negation, windowed Subquery and anything new: whole rows
        for child in node.children:
            _need(child, set(child.schema), aliases, wanted, scans)
