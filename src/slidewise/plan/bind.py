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

Given the sources' column kinds (a mapping column → kind instead of a list of
names), every expression is also typed (:mod:`slidewise.plan.types`): literals
are cast to the kind they meet, mismatches are one PlanError. :func:`bind_query`
does the same for a select–project–join :class:`~slidewise.plan.query.JoinQuery`;
both engines bind through these two functions.

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
from typing import TypeVar, cast

from slidewise.errors import PlanError, SourceError
from slidewise.plan.expr import Col, Expr, columns_of
from slidewise.plan.logical import CHANGELOG, Aggregate, Join, Negation, Node, Output, Plan, Project, Scan, Select, Union
from slidewise.plan.query import JoinQuery, SelectItem
from slidewise.plan.types import Typer

__all__ = ["bind", "bind_query", "bind_typed", "column_name", "with_children"]

#: a source's columns: names (kinds unknown) or name -> kind (int, float, bool, str)
Columns = Sequence[str] | Mapping[str, str]

#: columns of a relation's file that are not attributes (update time and operation)
RELATION_CONTROL = ("ts", "op")

N = TypeVar("N", bound=Node)


def with_children(node: N, children: Sequence[Node]) -> N:
    """A copy of ``node`` with new children (same order as :attr:`Node.children`)."""
    children = tuple(children)
    if not node.children:
        return node
    # the fields exist on the subclass hasattr found (Union; Join, Negation; Unary)
    if hasattr(node, "inputs"):
        return replace(node, inputs=children)  # type: ignore[call-arg]
    if hasattr(node, "left"):
        return replace(node, left=children[0], right=children[1])  # type: ignore[call-arg]
    return replace(node, child=children[0])  # type: ignore[call-arg]


def column_name(col: Col, aliases: Sequence[str]) -> str:
    """The schema column a :class:`Col` refers to (as :func:`~slidewise.plan.logical.column_getter`)."""
    if col.stream < 0:
        return col.attr
    if col.stream >= len(aliases):
        raise PlanError(
            f"column {col} refers to stream #{col.stream}, but the plan has {len(aliases)} aliases", hint="this is a bug in the query builder; please report it"
        )
    return f"{aliases[col.stream]}.{col.attr}"


def bind(plan: Plan, schemas: Mapping[str, Columns]) -> Plan:
    """A new plan whose scans have ``columns`` from ``schemas`` (source name → attribute names,
    or attribute → kind: then expressions are typed too)."""
    return bind_typed(plan, schemas)[0]


def bind_typed(plan: Plan, schemas: Mapping[str, Columns]) -> tuple[Plan, dict[str, str | None]]:
    """:func:`bind` and the kind of each output column of the bound plan (``None``: unknown)."""
    binder = _Binder(plan.aliases, schemas)
    root = binder.bind(plan.root)
    return replace(plan, root=cast(Output, root)), binder.kinds_of(root)  # bind() keeps each node's class


def bind_query(query: JoinQuery, schemas: Sequence[Columns]) -> JoinQuery:
    """``query`` typed over its streams' columns (one entry per FROM reference, ``ts`` excluded):
    a SourceError for an unknown column, a PlanError for a type mismatch."""
    exprs = [e for eq in query.equalities for e in (eq.left, eq.right)] + list(query.filters)
    if query.select:
        exprs += [i.expr for i in query.select]
    for stream, attr in sorted(set().union(*(columns_of(e) for e in exprs)) if exprs else set()):
        if attr in ("ts", "*") or attr in schemas[stream]:
            continue
        ref = query.streams[stream]
        raise SourceError(f"stream {ref.alias} (source {ref.source}) has no column {attr!r}", hint=f"its columns are: ts, {', '.join(schemas[stream])}")
    typer = Typer(lambda c: _kinds(schemas[c.stream]).get(c.attr) if 0 <= c.stream < len(schemas) else None)
    for eq in query.equalities:
        typer.pair(eq.left, eq.right)
    filters = tuple(typer.condition(f) for f in query.filters)
    select = None if query.select is None else tuple(_item(i, typer.typed(i.expr)[0]) for i in query.select)
    if filters == query.filters and select == query.select:
        return query
    return replace(query, filters=filters, select=select)


def _kinds(columns: Columns) -> Mapping[str, str]:
    return columns if isinstance(columns, Mapping) else {}


def _item(item: SelectItem, expr: Expr) -> SelectItem:
    """SelectItem ``item`` over the typed ``expr``, under its old name."""
    if expr == item.expr:
        return item
    return replace(item, expr=expr, alias=item.alias or item.name)


class _Binder:
    def __init__(self, aliases: Sequence[str], schemas: Mapping[str, Columns]):
        self.aliases = tuple(aliases)
        self.schemas = schemas
        self.scans: dict[str, Scan] = {}
        self.kinds: dict[int, tuple[Node, dict[str, str | None]]] = {}  # id(node) -> (node, column -> kind)

    def bind(self, node: Node) -> Node:
        new: Node
        if isinstance(node, Scan):
            new = self._scan(node)
        else:
            new = with_children(node, [self.bind(c) for c in node.children])
            self._check(new)
            new = self._typed(new)
        self.kinds[id(new)] = (new, self._out_kinds(new))
        return new

    def kinds_of(self, node: Node) -> dict[str, str | None]:
        entry = self.kinds.get(id(node))
        return entry[1] if entry is not None and entry[0] is node else dict.fromkeys(node.schema)

    def _typer(self, *inputs: Node) -> Typer:
        kinds: dict[str | None, str | None] = {k: v for n in inputs for k, v in self.kinds_of(n).items()}
        aliases = self.aliases

        def kind_of(col: Col) -> str | None:
            return kinds.get(col.attr if col.stream < 0 else f"{aliases[col.stream]}.{col.attr}" if col.stream < len(aliases) else None)

        return Typer(kind_of)

    def _typed(self, node: Node) -> Node:
        """``node`` with its expressions typed (literals cast); a PlanError for a mismatch."""
        if isinstance(node, Select):
            return replace(node, predicate=self._typer(node.child).condition(node.predicate))
        if isinstance(node, Project):
            typer = self._typer(node.child)
            return replace(node, items=tuple(_item(i, typer.typed(i.expr)[0]) for i in node.items))
        if isinstance(node, Aggregate):
            typer = self._typer(node.child)
            keys = tuple(_item(k, typer.typed(k.expr)[0]) for k in node.keys)
            aggs = tuple(typer.aggregate(a)[0] for a in node.aggs)
            return replace(node, keys=keys, aggs=aggs)
        if isinstance(node, Join):
            typer = self._typer(*node.inputs)
            for a, b in node.equalities:
                typer.pair(a, b)
            return replace(node, filters=tuple(typer.condition(f) for f in node.filters))
        if isinstance(node, Negation):
            left, right = self._typer(node.left), self._typer(node.right)
            for a, b in node.on:
                left.pair(a, b, "NOT EXISTS columns", other=right)
        return node

    def _out_kinds(self, node: Node) -> dict[str, str | None]:
        """The kind of each output column of ``node`` (``None``: unknown)."""
        if isinstance(node, Scan):
            kinds = _kinds(self.schemas.get(node.source, ()))
            return {c: ("int" if c.split(".", 1)[-1] == "ts" else kinds.get(c.split(".", 1)[-1])) for c in node.schema}
        if isinstance(node, Join):
            return {k: v for i in node.inputs for k, v in self.kinds_of(i).items()}
        if isinstance(node, (Project, Aggregate)):
            typer, child = self._typer(node.child), self.kinds_of(node.child)
            out: dict[str, str | None] = {}
            for item in node.items if isinstance(node, Project) else node.keys:
                if isinstance(item.expr, Col) and item.expr.attr == "*":
                    out.update({c: k for c, k in child.items() if c.startswith(f"{item.expr.name}.")})
                else:
                    out[item.name] = typer.typed(item.expr)[1]
            for a in node.aggs if isinstance(node, Aggregate) else ():
                out[a.name] = typer.aggregate(a)[1]
            return out
        below = list(self.kinds_of(node.children[0]).values()) if node.children else []
        if len(below) == len(node.schema):  # Select, Distinct, Union, Negation, Subquery, Output: by position
            return dict(zip(node.schema, below))
        return dict.fromkeys(node.schema)

    def _scan(self, scan: Scan) -> Scan:
        if scan.source not in self.schemas:
            known = ", ".join(sorted(self.schemas)) or "none"
            what = "stream" if scan.kind == "stream" else "table"
            raise SourceError(
                f"no source for {what} {scan.source}" + (f" (alias {scan.alias})" if scan.alias != scan.source else ""),
                hint=f"pass it with --{'source' if what == 'stream' else 'table'} {scan.source}=PATH; sources given: {known}",
            )
        changelog = scan.kind == "stream" and CHANGELOG in self.schemas[scan.source]
        drop = (("ts", CHANGELOG) if changelog else ("ts",)) if scan.kind == "stream" else RELATION_CONTROL
        columns = tuple(c for c in self.schemas[scan.source] if c not in drop)
        part = scan.window.partition_by if scan.window is not None else None
        if part is not None and part not in columns:
            raise PlanError(f"stream {scan.alias} (source {scan.source}) has no column {part!r} to partition by", hint=f"its columns are: {', '.join(('ts',) + columns)}")
        if changelog and scan.window is not None and (scan.window.is_count or scan.window.internal):
            raise PlanError(
                f"stream {scan.alias} (source {scan.source}) is a changelog (it has a {CHANGELOG} column), "
                f"and a {'count' if scan.window.is_count else 'INTERNAL'} window over it is not supported",
                hint=f"use a time window ([RANGE T], [NOW], [UNBOUNDED]), or rename the {CHANGELOG} column if it is an ordinary attribute",
            )
        bound = replace(scan, columns=columns, changelog=changelog)
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
                raise PlanError(
                    f"UNION inputs have different numbers of columns ({', '.join(map(str, widths))})", hint=f"select the same number of columns on each side: {shapes}"
                )

    def _exprs(self, node: Node, exprs: list[Expr], schema: tuple[str, ...]) -> None:
        have = set(schema)
        for expr in exprs:
            for stream, attr in sorted(columns_of(expr)):
                col = Col(stream, attr)
                if attr == "*":
                    prefix = f"{self.aliases[stream]}." if 0 <= stream < len(self.aliases) else "?"
                    if not any(c.startswith(prefix) for c in schema):
                        raise PlanError(f"{prefix}* names no columns in the input of {node.label()}", hint=f"available columns: {', '.join(schema)}")
                    continue
                if column_name(col, self.aliases) not in have:
                    raise self._unknown(node, stream, attr, schema)

    def _unknown(self, node: Node, stream: int, attr: str, schema: tuple[str, ...]) -> PlanError:
        alias = self.aliases[stream] if stream >= 0 else None
        scan = self.scans.get(alias) if alias else None
        if scan is not None and any(c.startswith(f"{alias}.") for c in schema):
            cols = (["ts"] if scan.kind == "stream" else []) + list(scan.columns or ())
            what = "stream" if scan.kind == "stream" else "table"
            return PlanError(f"{what} {alias} (source {scan.source}) has no column {attr!r}", hint=f"its columns are: {', '.join(cols)}")
        own = [c.split(".", 1)[1] for c in schema if alias and c.startswith(f"{alias}.")]
        if own:
            return PlanError(f"{alias} has no column {attr!r} in the input of {node.label()}", hint=f"its columns are: {', '.join(own)}")
        name = f"{alias}.{attr}" if alias else attr
        return PlanError(f"column {name} is not available to {node.label()}", hint=f"available columns: {', '.join(schema)}")
