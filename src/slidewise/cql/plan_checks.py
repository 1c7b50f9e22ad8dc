"""Checks of Golab's thesis ch. 3 that make a combination of operators invalid, with the reason.

Mixed into :class:`slidewise.cql.plan_builder.PlanBuilder` (which supplies
``error`` and ``window_at``, the source position of each window). INTERNAL
windows do not apply to duplicate elimination and negation (§3.3.2); only a
monotonic output may be windowed, by a window on a subquery or by WSTREAM
(§3.3.3); aggregates belong to whole select items.
"""

from __future__ import annotations

from lark import Token, Tree

from slidewise.plan.expr import Col
from slidewise.plan.logical import Aggregate, Distinct, Negation, Node, Project, Scan, Select, Subquery, Union


def _op_name(node: Node) -> str:
    if isinstance(node, Distinct):
        return "DISTINCT"
    return "EXCEPT" if node.mode == "except" else "NOT EXISTS"


def _below(node: Node):
    """Descendants of ``node``, not entering windowed subqueries (their window is a new leaf)."""
    for child in node.children:
        yield child
        if not (isinstance(child, Subquery) and child.window is not None):
            yield from _below(child)


def arity(node: Node) -> int | None:
    """Number of output columns when known before binding."""
    if isinstance(node, Project):
        return None if any(isinstance(i.expr, Col) and i.expr.attr == "*" for i in node.items) else len(node.items)
    if isinstance(node, Aggregate):
        return len(node.keys) + len(node.aggs)
    if isinstance(node, (Distinct, Select, Subquery)):
        return arity(node.child)
    if isinstance(node, Union):
        return arity(node.inputs[0])
    if isinstance(node, Negation):
        return arity(node.left)
    return None


class PlanChecks:
    """Errors that explain why; positions come from the builder's parse tree."""

    def misplaced_aggregate(self, name_tok: Token):
        name = str(name_tok).upper()
        if self.context == "WHERE":
            return self.error(
                name_tok,
                f"aggregate {name} in WHERE: WHERE keeps or drops single rows before any group exists",
                hint="aggregate in a subquery and filter outside it: SELECT * FROM (SELECT COUNT(*) AS n FROM S [RANGE 10]) AS X WHERE X.n > 5",
            )
        if self.context == "GROUP BY":
            return self.error(name_tok, f"aggregate {name} in GROUP BY: groups are formed before aggregates exist", hint="group by columns or expressions of columns")
        if self.context == "aggregate":
            return self.error(name_tok, f"aggregate {name} inside another aggregate", hint="aggregate in a subquery, then aggregate its output in the outer query")
        return self.error(
            name_tok,
            f"aggregate {name} inside an expression: only a whole select item may be an aggregate",
            hint=f"select {name}(...) AS a name and compute with it in an outer query",
        )

    def check_windowable(self, child: Node, window: Tree) -> None:
        """A window over a subquery's output needs an append-only (monotonic) output (§3.3.3)."""
        nodes = [child, *_below(child)]
        for n in nodes:
            if isinstance(n, Distinct):
                raise self.error(
                    window,
                    "a window over DISTINCT's output would hold duplicates or expired rows (Golab's thesis §3.3.3)",
                    hint="drop the window on the subquery, or DISTINCT inside it",
                )
            if isinstance(n, Negation):
                raise self.error(
                    window,
                    f"a window over the output of {_op_name(n)} would hold rows that no longer satisfy it (Golab's thesis §3.3.3)",
                    hint="drop the window on the subquery",
                )
        for n in nodes:
            if isinstance(n, Scan) and n.kind == "table":
                raise self.error(
                    window,
                    f"a window over a subquery's output needs an append-only output, but "
                    f"TABLE {n.source} in it is retroactive: its updates change earlier results "
                    "(Golab's thesis §3.3.3)",
                    hint=f"use {n.source} as a non-retroactive table (without TABLE), or drop the window",
                )
            w = n.window if isinstance(n, (Scan, Subquery)) else None
            if w is not None and not w.internal and w.kind != "unbounded":
                raise self.error(
                    window,
                    f"a window over a subquery's output needs an append-only output, but "
                    f"{n.alias}{w} in it is an external window whose results expire (Golab's thesis §3.3.3)",
                    hint=f"make the subquery's windows INTERNAL, e.g. {n.alias} {str(w)[:-1]} INTERNAL], or drop the window",
                )

    def check_internal(self, root: Node) -> None:
        """INTERNAL windows under DISTINCT or negation violate their semantics (§3.3.2)."""
        for n in [root, *_below(root)]:
            if isinstance(n, (Distinct, Negation)):
                for leaf in _below(n):
                    w = leaf.window if isinstance(leaf, (Scan, Subquery)) else None
                    if w is not None and w.internal:
                        raise self.error(
                            self.window_at[leaf],
                            f"INTERNAL window on {leaf.alias} under "
                            f"{_op_name(n)}: forcing duplicate elimination or negation into "
                            "monotonic form violates their semantics (Golab's thesis §3.3.2)",
                            hint=f"drop INTERNAL; the results of {_op_name(n)} must expire as its windows slide",
                        )
            if isinstance(n, Subquery) and n.window is not None:
                self.check_internal(n.child)

    def check_wstream(self, root: Node, tok: Token) -> None:
        """WSTREAM windows an append-only output; DISTINCT and negation do not give one (§3.3.3)."""
        for n in [root, *_below(root)]:
            if isinstance(n, (Distinct, Negation)):
                raise self.error(
                    tok,
                    f"WSTREAM over the output of {_op_name(n)} would hold duplicates or rows that no longer satisfy it (Golab's thesis §3.3.3)",
                    hint="use RSTREAM or ISTREAM for this query",
                )
