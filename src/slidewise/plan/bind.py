"""Binding a logical plan to its sources: fill in scan columns, check every column reference.

Golab's thesis ch. 3 plans (:mod:`slidewise.plan.logical`) come out of the parser
*unbound*: a :class:`~slidewise.plan.logical.Scan` knows its source name but
not its attributes, so the update-pattern annotation and ``explain`` work
without data. :func:`bind` takes the attribute lists of the sources and
returns a new plan whose scans carry ``columns`` (the attributes without
``ts``; for relations also without the ``op`` update column), after checking
that every column an expression names exists in the input of the node that
evaluates it:

* ``Select`` predicates, ``Project`` items and ``Aggregate`` keys and
  arguments against the child's schema;
* ``Join`` equalities and filters against the concatenated inputs;
* ``Negation`` pairs: the left column against the left input, the right
  column against the right input;
* ``Union`` inputs must have the same number of columns.

A missing source is a :class:`~slidewise.errors.SourceError`, an unknown
column a :class:`~slidewise.errors.PlanError` naming the stream (alias and
source) and the column, with the available columns as the hint.

>>> from slidewise.plan.logical import Output, Plan, Scan, Select
>>> from slidewise.plan.expr import Cmp, Col, Lit
>>> from slidewise.plan.query import WindowSpec
>>> scan = Scan("S1", "S1", WindowSpec("range", 10))
>>> plan = Plan(Output(Select(scan, Cmp(">", Col(0, "a", "S1"), Lit(3)))), ("S1",))
>>> bind(plan, {"S1": ["ts", "a", "b"]}).scans()[0].schema
('S1.ts', 'S1.a', 'S1.b')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from slidewise.errors import PlanError, SourceError
from slidewise.plan.expr import Col, Expr, columns_of
from slidewise.plan.logical import Aggregate, Join, Negation, Node, Plan, Project, Scan, Select, Union

__all__ = ["bind", "column_name", "with_children"]

#: columns of a relation's file that are not attributes (update time and operation)
RELATION_CONTROL = ("ts", "op")


def with_children(node: Node, children: Sequence[Node]) -> Node:
    """A copy of ``node`` with new children (same order as :attr:`Node.children`)."""
    children = tuple(children)
    if not node.children:
        return node
    if hasattr(node, "inputs"):
        return replace(node, inputs=children)
    if hasattr(node, "left"):
        return replace(node, left=children[0], right=children[1])
    return replace(node, child=children[0])


def column_name(col: Col, aliases: Sequence[str]) -> str:
    """The schema column a :class:`Col` refers to (as :func:`~slidewise.plan.logical.column_getter`)."""
    if col.stream < 0:
        return col.attr
    if col.stream >= len(aliases):
        raise PlanError(f"column {col} refers to stream #{col.stream}, but the plan has "
                        f"{len(aliases)} aliases", hint="this is a bug in the query builder; please report it")
    return f"{aliases[col.stream]}.{col.attr}"


def bind(plan: Plan, schemas: Mapping[str, Sequence[str]]) -> Plan:
    """A new plan whose scans have ``columns`` from ``schemas`` (source name → attribute names)."""
    binder = _Binder(plan.aliases, schemas)
    root = binder.bind(plan.root)
    return replace(plan, root=root)


class _Binder:
    def __init__(self, aliases: Sequence[str], schemas: Mapping[str, Sequence[str]]):
        self.aliases = tuple(aliases)
        self.schemas = schemas
        self.scans: dict[str, Scan] = {}

    def bind(self, node: Node) -> Node:
        if isinstance(node, Scan):
            return self._scan(node)
        new = with_children(node, [self.bind(c) for c in node.children])
        self._check(new)
        return new

    def _scan(self, scan: Scan) -> Scan:
        if scan.source not in self.schemas:
            known = ", ".join(sorted(self.schemas)) or "none"
            what = "stream" if scan.kind == "stream" else "table"
            raise SourceError(f"no source for {what} {scan.source}" +
                              (f" (alias {scan.alias})" if scan.alias != scan.source else ""),
                              hint=f"pass it with --{'source' if what == 'stream' else 'table'} "
                                   f"{scan.source}=PATH; sources given: {known}")
        drop = ("ts",) if scan.kind == "stream" else RELATION_CONTROL
        columns = tuple(c for c in self.schemas[scan.source] if c not in drop)
        part = scan.window.partition_by if scan.window is not None else None
        if part is not None and part not in columns:
            raise PlanError(f"stream {scan.alias} (source {scan.source}) has no column {part!r} to partition by",
                            hint=f"its columns are: {', '.join(('ts',) + columns)}")
        bound = replace(scan, columns=columns)
        self.scans[scan.alias] = bound
        return bound

    def _check(self, node: Node) -> None:
        if isinstance(node, Select):
            self._exprs(node, [node.predicate], node.child.schema)
        elif isinstance(node, Project):
            self._exprs(node, [i.expr for i in node.items], node.child.schema)
        elif isinstance(node, Aggregate):
            args = [a.arg for a in node.aggs if a.arg is not None]
            self._exprs(node, [k.expr for k in node.keys] + args, node.child.schema)
        elif isinstance(node, Join):
            exprs = [c for pair in node.equalities for c in pair] + list(node.filters)
            self._exprs(node, exprs, node.schema)
        elif isinstance(node, Negation):
            self._exprs(node, [a for a, _ in node.on], node.left.schema)
            self._exprs(node, [b for _, b in node.on], node.right.schema)
        elif isinstance(node, Union):
            widths = [len(i.schema) for i in node.inputs]
            if len(set(widths)) > 1:
                shapes = "; ".join(", ".join(i.schema) for i in node.inputs)
                raise PlanError(f"UNION inputs have different numbers of columns ({', '.join(map(str, widths))})",
                                hint=f"select the same number of columns on each side: {shapes}")

    def _exprs(self, node: Node, exprs: list[Expr], schema: tuple[str, ...]) -> None:
        have = set(schema)
        for expr in exprs:
            for stream, attr in sorted(columns_of(expr)):
                col = Col(stream, attr)
                if attr == "*":
                    prefix = f"{self.aliases[stream]}." if 0 <= stream < len(self.aliases) else "?"
                    if not any(c.startswith(prefix) for c in schema):
                        raise PlanError(f"{prefix}* names no columns in the input of {node.label()}",
                                        hint=f"available columns: {', '.join(schema)}")
                    continue
                if column_name(col, self.aliases) not in have:
                    raise self._unknown(node, stream, attr, schema)

    def _unknown(self, node: Node, stream: int, attr: str, schema: tuple[str, ...]) -> PlanError:
        alias = self.aliases[stream] if stream >= 0 else None
        scan = self.scans.get(alias) if alias else None
        if scan is not None and any(c.startswith(f"{alias}.") for c in schema):
            cols = (["ts"] if scan.kind == "stream" else []) + list(scan.columns or ())
            what = "stream" if scan.kind == "stream" else "table"
            return PlanError(f"{what} {alias} (source {scan.source}) has no column {attr!r}",
                             hint=f"its columns are: {', '.join(cols)}")
        own = [c.split(".", 1)[1] for c in schema if alias and c.startswith(f"{alias}.")]
        if own:
            return PlanError(f"{alias} has no column {attr!r} in the input of {node.label()}",
                             hint=f"its columns are: {', '.join(own)}")
        name = f"{alias}.{attr}" if alias else attr
        return PlanError(f"column {name} is not available to {node.label()}",
                         hint=f"available columns: {', '.join(schema)}")
