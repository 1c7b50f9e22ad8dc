"""The SELECT list, GROUP BY and HAVING of a general query (Golab's thesis §3.2.2, aggregation).

Mixed into :class:`slidewise.cql.plan_builder.PlanBuilder`, which supplies the
scope, ``error``, ``value``, ``condition`` and the expression reader. A
SELECT with aggregates or GROUP BY becomes an
:class:`~slidewise.plan.logical.Aggregate` (keys, then aggregates), HAVING a
:class:`~slidewise.plan.logical.Select` over it whose columns are the
aggregate's output columns (``Col(-1, name)``), and a :class:`Project` on top
when the SELECT order differs or HAVING needed an aggregate the SELECT list
lacks.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from lark import Tree

from slidewise.cql.join_builder import _fresh, _pos
from slidewise.plan.expr import FUNCTIONS, And, BinOp, Cmp, Col, Expr, Func, Like, Lit, Not, Or
from slidewise.plan.logical import AGG_FUNCS, AggCall, Aggregate, Distinct, Node, Project, Select
from slidewise.plan.query import SelectItem

if TYPE_CHECKING:
    from slidewise.cql.plan_builder import Head


#: parse-tree forms that are always aggregate calls: f(*), f(DISTINCT x), f(DISTINCT *)
AGG_FORMS = ("agg_star", "agg_distinct", "agg_distinct_star")


class Grouping:
    """SELECT items, aggregates, GROUP BY and HAVING (a mixin of the plan builder)."""

    _having: tuple | None = None  # (aggregates, SELECT aliases) while HAVING is read

    def projection(self, node: Node, head: Head, group_by: Tree | None, having: Tree | None = None) -> Node:
        items = self.select_items(head.select_list)
        self.context = "GROUP BY"
        aliased = {it.alias: it.expr for _, it in items or () if isinstance(it, SelectItem) and it.alias}
        keys = [
            aliased[str(k.children[0])] if k.data == "bare" and str(k.children[0]) in aliased else self.value(k, "GROUP BY")
            for k in (group_by.children if group_by is not None else ())
        ]
        self.context = "SELECT"
        if items is None:
            if group_by is not None:
                raise self.error(
                    group_by,
                    "SELECT * with GROUP BY: each group gives one row, which has no single value of the other columns",
                    hint="list the group keys and aggregates instead of *",
                )
        elif group_by is not None or any(isinstance(it, AggCall) for _, it in items):
            node = self.aggregate(node, items, keys, having)
            having = None
        else:
            node = Project(node, tuple(it for _, it in items))
        if having is not None:
            raise self.error(having, "HAVING without GROUP BY or aggregates: it filters groups", hint="filter rows with WHERE, or add GROUP BY and aggregates")
        if head.distinct is not None:
            node = Distinct(node)
        return node

    def select_items(self, node: Tree) -> list[tuple[Tree, SelectItem | AggCall]] | None:
        if node.data == "select_star":
            return None
        items: list[tuple[Tree, SelectItem | AggCall]] = []
        seen: set[str] = set()
        for item in node.children:
            if item.data == "item_all":
                entry = SelectItem(self.column(item.children[0], None, "*"))
            else:
                expr, alias_tok = item.children
                alias = str(alias_tok) if alias_tok is not None else None
                entry = self.agg_call(expr, alias) if self.is_aggregate(expr) else SelectItem(self.expr(expr), alias)
            if entry.name in seen:
                shown, base = (entry.expr, entry.name) if isinstance(entry, SelectItem) else (entry.name, entry.func)
                raise self.error(item, f"output column {entry.name!r} appears twice in SELECT", hint=f"rename one with AS, e.g. {shown} AS {_fresh(base, seen)}")
            seen.add(entry.name)
            items.append((item, entry))
        return items

    @staticmethod
    def is_aggregate(tree: Tree) -> bool:
        return tree.data in AGG_FORMS or (tree.data == "func" and str(tree.children[0]).lower() in AGG_FUNCS)

    def agg_call(self, tree: Tree, alias: str | None) -> AggCall:
        name_tok = tree.children[0]
        func = str(name_tok).lower()
        if func not in AGG_FUNCS:
            if func not in FUNCTIONS:
                raise self.unknown_function(name_tok)
            raise self.error(
                name_tok, f"{func.upper()} is not an aggregate: it takes neither * nor DISTINCT", hint=f"aggregates: {', '.join(f.upper() for f in AGG_FUNCS)}"
            )
        if tree.data == "agg_distinct_star":
            raise self.error(
                name_tok,
                f"{func.upper()}(DISTINCT *) is not defined: DISTINCT needs a value to compare",
                hint=f"write COUNT(*) to count rows, or {func.upper()}(DISTINCT S.x) for distinct values of S.x",
            )
        if tree.data == "agg_star":
            if func != "count":
                raise self.error(name_tok, f"{func.upper()}(*) is not defined: only COUNT(*) counts rows", hint=f"write COUNT(*) or {func.upper()}(S.x)")
            return AggCall("count", None, False, alias, pos=_pos(name_tok))
        args = [tree.children[2]] if tree.data == "agg_distinct" else [a for a in tree.children[1:] if a is not None]
        if func == "topk":
            return self.topk_call(name_tok, args, tree.data == "agg_distinct", alias)
        arity = 2 if func in ("quantile", "approx_quantile") else 1
        if len(args) != arity:
            example = f"{func.upper()}(S.x, 0.9)" if arity == 2 else f"{func.upper()}(S.x)"
            raise self.error(name_tok, f"{func.upper()} takes {arity} argument{'s' if arity > 1 else ''}, got {len(args)}", hint=f"write e.g. {example}")
        if tree.data == "agg_distinct" and func.startswith("approx_"):
            raise self.error(
                name_tok,
                f"{func.upper()}(DISTINCT ...) is not defined: a sketch summarises the values, not their distinct set",
                hint=f"write {func.upper()}(S.x){'' if arity == 1 else ' with the fraction'}",
            )
        arg = self.aggregated(args[0], func.upper())
        param = self.fraction(args[1], func.upper()) if arity == 2 else 0.5 if func == "median" else None
        return AggCall(func, arg, tree.data == "agg_distinct", alias, pos=_pos(name_tok), param=param)

    def aggregated(self, node: Tree, what: str) -> Expr:
        """An aggregate's argument, read in the ``aggregate`` context (then back in SELECT's)."""
        self.context = "aggregate"
        arg = self.value(node, what)
        self.context = "SELECT"
        return arg

    def fraction(self, node: Tree, func: str = "QUANTILE") -> float:
        """The literal fraction p of ``QUANTILE(x, p)`` or ``APPROX_QUANTILE(x, p)``, 0 <= p <= 1."""
        e = self.expr(node)
        if not isinstance(e, Lit) or isinstance(e.value, bool) or not isinstance(e.value, (int, float)):
            raise self.error(
                node,
                f"{func}'s fraction must be a number literal, got {e}",
                hint=f"write a constant between 0 and 1, e.g. {func}(S.x, 0.9); one query per fraction if it varies",
            )
        if not 0 <= e.value <= 1:
            raise self.error(
                node, f"{func}'s fraction {e.value:g} is outside [0, 1]", hint=f"p = 0 is the minimum, 0.5 the median, 1 the maximum, e.g. {func}(S.x, 0.95)"
            )
        return float(e.value)

    def topk_call(self, name_tok, args: list[Tree], distinct: bool, alias: str | None) -> AggCall:
        """``TOPK(k, x)``: the k most frequent values of x (k a whole-number literal)."""
        if distinct or len(args) != 2:
            raise self.error(name_tok, "TOPK takes k and a column: TOPK(k, S.x)", hint="write e.g. TOPK(3, S.src) for the 3 most frequent values of S.src")
        k = args[0]
        if k.data != "number" or not str(k.children[0]).isdigit() or int(str(k.children[0])) < 1:
            raise self.error(k, "TOPK's k must be a whole number of at least 1", hint="write e.g. TOPK(3, S.src)")
        arg = self.aggregated(args[1], "TOPK")
        return AggCall("topk", arg, False, alias, pos=_pos(name_tok), param=int(str(k.children[0])))

    def aggregate(self, node: Node, items: list[tuple[Tree, SelectItem | AggCall]], keys: list[Expr], having: Tree | None = None) -> Node:
        keyed: list[SelectItem] = []
        for k in dict.fromkeys(keys):
            alias = next((it.alias for _, it in items if isinstance(it, SelectItem) and it.expr == k), None)
            keyed.append(SelectItem(k, alias))
        for tree, it in items:
            if isinstance(it, SelectItem) and it.expr not in keys:
                groups = "each group" if keys else "the one group of a query with aggregates and no GROUP BY"
                raise self.error(
                    tree,
                    f"{it.name} is neither aggregated nor in GROUP BY: {groups} gives one row, which has no single value of {it.expr}",
                    hint=f"add {it.expr} to GROUP BY or aggregate it, e.g. MAX({it.expr})",
                )
        aggs = [it for _, it in items if isinstance(it, AggCall)]
        predicate = None
        if having is not None:
            predicate = self.having(having, items, keyed, aggs)  # may add aggregates HAVING alone reads
        agg = Aggregate(node, tuple(keyed), tuple(aggs))
        top = agg if predicate is None else Select(agg, predicate)
        wanted = [it.name for _, it in items]
        if wanted == list(agg.schema):
            return top
        return Project(top, tuple(SelectItem(Col(-1, n, ""), n) for n in wanted))

    def having(self, tree: Tree, items, keyed: list[SelectItem], aggs: list[AggCall]) -> Expr:
        """HAVING's condition over the aggregate's output columns (``Col(-1, name)``).

        Aggregate calls become the column of an equal aggregate of the SELECT
        list, or of one appended to ``aggs`` (projected away later); other
        columns must be GROUP BY keys; SELECT aliases may be named.
        """
        names = {it.alias: it.name for _, it in items if it.alias}
        self._having = (aggs, names)
        self.context = "HAVING"
        try:
            cond = self.condition(tree.children[0], "HAVING")
        finally:
            self._having, self.context = None, "SELECT"
        keys = {k.expr: k.name for k in keyed}

        def rebase(e: Expr) -> Expr:
            if e in keys:
                return Col(-1, keys[e], "")
            if isinstance(e, Col):
                if e.stream < 0:
                    return e
                raise self.error(
                    tree,
                    f"HAVING reads {e}, which is neither a GROUP BY key nor aggregated: a group has no single value of it",
                    hint=f"add {e} to GROUP BY or aggregate it, e.g. MAX({e})",
                )
            if isinstance(e, (BinOp, Cmp)):
                return replace(e, left=rebase(e.left), right=rebase(e.right))
            if isinstance(e, (And, Or)):
                return replace(e, items=tuple(rebase(i) for i in e.items))
            if isinstance(e, Not):
                return replace(e, item=rebase(e.item))
            if isinstance(e, Like):
                return replace(e, item=rebase(e.item))
            if isinstance(e, Func):
                return replace(e, args=tuple(rebase(a) for a in e.args))
            return e

        return rebase(cond)

    def having_aggregate(self, node: Tree) -> Col:
        """An aggregate call inside HAVING: the output column of an equal aggregate (added if new)."""
        aggs, _ = self._having
        call = self.agg_call(node, None)
        self.context = "HAVING"
        same = next((a for a in aggs if (a.func, a.arg, a.distinct, a.param) == (call.func, call.arg, call.distinct, call.param)), None)
        if same is None:
            same = call
            aggs.append(call)
        return Col(-1, same.name, "")
