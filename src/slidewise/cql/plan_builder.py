"""Build a logical :class:`~slidewise.plan.logical.Plan` from a parse tree of the full dialect.

Golab's thesis §3.4 extends CQL with INTERNAL windows, WSTREAM and the restore
outputs; with DISTINCT, GROUP BY, UNION, EXCEPT, NOT EXISTS, tables and
subqueries in FROM this is the language of the general query path. One
SELECT becomes, bottom-up::

    Scan / Subquery leaves (FROM order)   a Select above a leaf for each
                                          conjunct of WHERE reading only it
    Join(inputs, equalities, filters)     if FROM has more than one input
    Select                                conjuncts that read no input
    Negation(mode="anti")                 one per NOT EXISTS, in WHERE order
    Aggregate (GROUP BY / aggregates)     or Project (unless SELECT *); a
                                          Project above the Aggregate only
                                          to reorder or drop its columns
    Distinct                              SELECT DISTINCT

``UNION [ALL]`` (both a bag union) and ``EXCEPT`` (bag difference) combine
the trees of their sides; :class:`~slidewise.plan.logical.Output` tops the
whole query. Every alias of the query (subqueries, NOT EXISTS and UNION
branches included) is unique and indexes ``Col.stream`` through
:attr:`Plan.aliases`; ``Col(-1, name)`` is the column ``name`` of the node
below (a Project reordering an Aggregate's columns).

Combinations that break the semantics of Golab's thesis ch. 3 are errors that say
why: a window over a non-monotonic subquery (§3.3.3), INTERNAL windows under
DISTINCT or negation (§3.3.2), WSTREAM with restore (§3.4) or over DISTINCT
or negation (§3.3.3), a window on a table.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

from lark import Token, Tree

from slidewise.cql.grouping import AGG_FORMS, Grouping
from slidewise.cql.join_builder import COUNT_SLIDE_HINT, COUNT_SLIDE_SHAPE, Builder, operands
from slidewise.cql.plan_checks import PlanChecks, arity
from slidewise.plan.expr import And, Cmp, Col, Expr, streams_of
from slidewise.plan.logical import AGG_FUNCS, Aggregate, Join, Negation, Node, Output, Plan, Project, Scan, Select, Subquery, Union
from slidewise.plan.query import WindowSpec

_SLIDE_HINT = "lazy re-evaluation has one interval per query; use the same SLIDE"


@dataclass(frozen=True)
class Input:
    """One FROM entry: its alias, the alias's index in ``Plan.aliases``, its leaf node."""

    alias: str
    index: int
    node: Node


@dataclass
class Scope:
    """The inputs a column may name; ``outer`` is the enclosing query of a NOT EXISTS subquery."""

    inputs: list[Input]
    outer: Scope | None = None

    def find(self, alias: str) -> Input | None:
        return next((i for i in self.inputs if i.alias == alias), None)


@dataclass
class Head:
    """Output operator, DISTINCT and select list of one SELECT."""

    kind: str = "istream"
    restore: bool = False
    tok: Token | None = None
    window: WindowSpec | None = None
    distinct: Token | None = None
    select_list: Tree | None = field(default=None, repr=False)


def output_name(tok: Token) -> tuple[str, bool]:
    name = re.match(r"\w+", str(tok)).group(0).lower()
    return name.removesuffix("_restore"), name.endswith("_restore")


def _conjunction(conds: list[Expr]) -> Expr:
    return conds[0] if len(conds) == 1 else And(tuple(conds))


class PlanBuilder(Grouping, PlanChecks, Builder):
    """Walks one full-dialect parse tree into a :class:`Plan`; ``tables`` are the names given as tables."""

    def __init__(self, text: str, tables: frozenset[str] = frozenset()):
        super().__init__(text)
        self.tables = tables
        self.names: list[str] = []  # Plan.aliases, in text order
        self.inside: dict[str, str] = {}  # alias -> the subquery alias it is nested in
        self.slides: list[tuple[int, Token]] = []
        self.window_at: dict[Node, Tree] = {}
        self.scope = Scope([])
        self.context = "SELECT"
        self._having: tuple | None = None  # (aggregates, SELECT aliases) while HAVING is read

    # -- query -------------------------------------------------------------
    def build(self, tree: Tree) -> Plan:
        stmt = tree.children[0]
        call = stmt.children[0] if stmt.data == "full_wrapped" else None
        node, heads = self.query(stmt.children[1] if call is not None else stmt.children[0])
        head = self.output(heads, call)
        if head.kind == "wstream":
            self.check_wstream(node, head.tok)
        self.check_internal(node)
        slide = self.common_slide()
        count_slide = self.count_slide(node, head)
        root = Output(node, head.kind, head.restore, slide, head.window, text=self.text, count_slide=count_slide)
        return Plan(root, tuple(self.names), self.text)

    def count_slide(self, node: Node, head: Head) -> int | None:
        """The SLIDE of a ``[ROWS n SLIDE m]`` window, if the query has one: it needs a periodic aggregate
        over one stream (``[Select] ← Aggregate ← [Select] ← Scan``, the pane path's shape)."""
        if not self.count_slides:
            return None
        slide, tok = self.count_slides[0]
        below = node.child if isinstance(node, Project) else node
        below = below.child if isinstance(below, Select) else below
        scan = below.child if isinstance(below, Aggregate) else None
        scan = scan.child if isinstance(scan, Select) else scan
        one_stream = isinstance(scan, Scan) and scan.kind == "stream" and len(self.count_slides) == 1 and len(self.names) == 1
        if not one_stream or self.slides or head.restore or head.kind not in ("rstream", "istream", "dstream"):
            raise self.error(tok, COUNT_SLIDE_SHAPE, hint=COUNT_SLIDE_HINT)
        return slide

    def query(self, tree: Tree) -> tuple[Node, list[Head]]:
        if tree.data == "query":
            node, heads, _ = self.core(tree.children[0])
            return node, heads
        left, heads = self.query(tree.children[0])
        right, more, _ = self.core(tree.children[-1])
        op_tok = tree.children[1]
        a, b = arity(left), arity(right)
        if a is not None and b is not None and a != b:
            raise self.error(
                op_tok,
                f"{str(op_tok).upper()} inputs have different numbers of columns: {a} and {b}",
                hint="its sides are matched column by column: select as many columns on both sides",
            )
        if tree.data == "union":
            node = Union((*(left.inputs if isinstance(left, Union) else (left,)), right))
        else:
            node = Negation(left, right, mode="except")
        return node, heads + more

    def core(self, tree: Tree, outer: Scope | None = None) -> tuple[Node, list[Head], tuple]:
        """One SELECT; ``outer`` given for a NOT EXISTS subquery, which also returns its correlation pairs."""
        head_tree, ref_list, where, group_by, having = tree.children
        scope = Scope(self.from_clause(ref_list), outer)
        saved, self.scope = self.scope, scope
        try:
            head = self.head(head_tree)
            node, pairs = self.where(where)
            if outer is not None:
                if group_by is not None or having is not None:
                    clause = "GROUP BY" if group_by is not None else "HAVING"
                    raise self.error(
                        group_by if group_by is not None else having,
                        f"{clause} in a NOT EXISTS subquery",
                        hint=f"NOT EXISTS only asks whether a matching row exists; drop {clause}",
                    )
                return node, [head], pairs
            node = self.projection(node, head, group_by, having)
        finally:
            self.scope = saved
        return node, [head], ()

    # -- output operators ----------------------------------------------------
    def head(self, tree: Tree) -> Head:
        if tree.data == "p_head_call":
            tok, distinct, select_list, window = tree.children
        else:
            out, distinct, select_list = tree.children
            tok, window = (out.children[0] if out is not None else None), None
        head = Head(distinct=distinct, select_list=select_list)
        if tok is None:
            return head
        head.tok = tok
        head.kind, head.restore = output_name(tok)
        if head.kind == "wstream" and head.restore:
            raise self.error(
                tok,
                "WSTREAM has no restore form: a window over the output is not compatible with periodic re-evaluation (Golab's thesis §3.4)",
                hint="use ISTREAM_RESTORE or RSTREAM_RESTORE, or WSTREAM(...)[ROWS n] without restore",
            )
        if head.kind == "wstream":
            if window is None:
                raise self.error(tok, "WSTREAM needs a window over the output stream", hint="write SELECT WSTREAM(*)[ROWS 10] or WSTREAM(*)[RANGE 60 s]")
            spec, _ = self.window(window, False, tok, "WSTREAM")
            if spec.kind not in ("rows", "range") or spec.slide or spec.partition_by or spec.internal:
                raise self.error(
                    window,
                    f"WSTREAM takes [ROWS n] or [RANGE t], got {spec}" + (" INTERNAL" if spec.internal else ""),
                    hint="the output window is a plain count or time window, e.g. [ROWS 10]",
                )
            head.window = spec
        elif window is not None:
            raise self.error(window, f"only WSTREAM takes a window after its select list, not {head.kind.upper()}", hint="write SELECT WSTREAM(*)[ROWS 10] FROM ...")
        return head

    def output(self, heads: list[Head], call: Token | None) -> Head:
        given = [h for h in heads if h.tok is not None]
        if call is not None:
            if given:
                raise self.error(given[0].tok, "output operator given twice", hint="write either ISTREAM(SELECT ...) or SELECT ISTREAM ...")
            head = Head(tok=call)
            head.kind, head.restore = output_name(call)
            if head.kind == "wstream":
                raise self.error(call, "WSTREAM needs a window after its select list", hint="write SELECT WSTREAM(*)[ROWS 10] FROM ...")
            return head
        for other in given[1:]:
            if (other.kind, other.restore, other.window) != (given[0].kind, given[0].restore, given[0].window):
                raise self.error(
                    other.tok,
                    "the SELECTs of this UNION/EXCEPT give different output operators",
                    hint="the output operator applies to the whole query: name it once, in the first SELECT",
                )
        return given[0] if given else Head()

    def subquery_heads(self, heads: list[Head]) -> None:
        for h in heads:
            if h.tok is not None and (h.kind in ("dstream", "wstream") or h.restore):
                raise self.error(
                    h.tok,
                    f"{str(h.tok).rstrip('( ').upper()} inside a subquery: an output operator turns the whole query's answer into a stream",
                    hint="write it in the outermost SELECT; a subquery's answer is a relation",
                )

    # -- FROM ----------------------------------------------------------------
    def register(self, alias: str, tok: Token) -> int:
        if alias in self.names:
            raise self.error(
                tok,
                f"alias {alias!r} names two inputs of the query",
                hint=f"every input of the whole query, subqueries and UNION branches included, needs its own alias: rename one with AS, e.g. {alias} AS {alias}_2",
            )
        self.names.append(alias)
        return len(self.names) - 1

    def from_clause(self, ref_list: Tree) -> list[Input]:
        inputs: list[Input] = []
        refs = self.join_refs(ref_list)
        on = self.on  # a subquery in FROM has its own
        for ref in refs:
            if ref.data == "subquery_ref":
                node, tok = self.subquery_ref(ref)
            else:
                node, tok = self.relation_ref(ref)
            inputs.append(Input(node.alias, self.register(node.alias, tok), node))
        self.on = on
        return inputs

    def relation_ref(self, ref: Tree) -> tuple[Scan, Token]:
        table = ref.data == "table_ref"
        table_tok, name_tok, window, internal, alias_tok = ref.children if table else (None, *ref.children)
        name = str(name_tok)
        alias = str(alias_tok) if alias_tok is not None else name
        if table or name in self.tables:
            if window is not None or internal is not None:
                what = f"TABLE {name} is a retroactive relation" if table else f"{name} is a table (a relation)"
                raise self.error(
                    window if window is not None else internal, f"{what} and takes no window", hint="a table's rows stay until deleted; put windows on streams only"
                )
            return Scan(alias, name, None, "table" if table else "nrr"), alias_tok or name_tok
        spec, slide_tok = self.window(window, internal is not None, name_tok, alias)
        scan = Scan(alias, name, spec)
        self.note_window(scan, window if window is not None else name_tok, internal, spec, slide_tok)
        return scan, alias_tok or name_tok

    def subquery_ref(self, ref: Tree) -> tuple[Subquery, Token]:
        query, window, internal, alias_tok = ref.children
        if alias_tok is None:
            raise self.error(ref, "a subquery in FROM needs a name", hint="write (SELECT ...) AS X and refer to X.a")
        first = len(self.names)
        child, heads = self.query(query)
        self.subquery_heads(heads)
        alias = str(alias_tok)
        for name in self.names[first:]:
            self.inside.setdefault(name, alias)
        if window is None:
            if internal is not None:
                raise self.error(internal, "INTERNAL needs a window", hint="write (SELECT ...) [ROWS 10 INTERNAL] AS X")
            return Subquery(alias, child), alias_tok
        spec, slide_tok = self.window(window, internal is not None, alias_tok, alias)
        self.check_windowable(child, window)
        node = Subquery(alias, child, spec)
        self.note_window(node, window, internal, spec, slide_tok)
        return node, alias_tok

    def note_window(self, node: Node, where: Tree | Token, internal_after: Tree | None, spec: WindowSpec, slide_tok: Token | None) -> None:
        """Remember where a window is (its INTERNAL keyword if any) for later errors, and its SLIDE."""
        internal = where.children[1] if isinstance(where, Tree) and where.children[1] is not None else internal_after
        self.window_at[node] = internal.children[0] if internal is not None else where
        if spec.slide:
            self.slides.append((spec.slide, slide_tok))

    def common_slide(self) -> int | None:
        first = self.slides[0][0] if self.slides else None
        for slide, tok in self.slides:
            if slide != first:
                found = sorted({s for s, _ in self.slides})
                raise self.error(tok, f"windows declare different SLIDE intervals {found}", hint=_SLIDE_HINT)
        return first

    # -- WHERE ---------------------------------------------------------------
    def where(self, where: Tree | None) -> tuple[Node, tuple[tuple[Col, Col], ...]]:
        conjuncts = [c for t in self.on for c in self.conjuncts(t)]
        conjuncts += self.conjuncts(where.children[0]) if where is not None else []
        exists: list[Tree] = []
        local: list[Expr] = []
        pairs: list[tuple[Col, Col]] = []
        own = {i.index for i in self.scope.inputs}
        self.context = "WHERE"
        for c in conjuncts:
            if c.data == "not_" and c.children[0].data == "exists":
                exists.append(c.children[0])
                continue
            e = self.condition(c, "WHERE")
            if streams_of(e) - own:
                pairs.append(self.correlation(c, e, own))
            else:
                local.append(e)
        self.context = "SELECT"
        node = self.join(local)
        for ex in exists:
            node = self.not_exists(node, ex)
        return node, tuple(pairs)

    def conjuncts(self, tree: Tree) -> list[Tree]:
        return operands(tree, "and_")

    def correlation(self, tree: Tree, e: Expr, own: set[int]) -> tuple[Col, Col]:
        """``inner.x = outer.y`` in a NOT EXISTS subquery -> ``(outer column, inner column)``."""
        if isinstance(e, Cmp) and e.op == "=" and isinstance(e.left, Col) and isinstance(e.right, Col):
            sides = {e.left.stream in own: e.left, e.right.stream in own: e.right}
            if len(sides) == 2:
                return sides[False], sides[True]
        raise self.error(
            tree,
            f"NOT EXISTS subquery condition {e} mixes the outer query in",
            hint="a NOT EXISTS subquery refers to the outer query only through equalities "
            "inner.x = outer.y; move other conditions on the outer inputs to the outer WHERE",
        )

    def join(self, conds: list[Expr]) -> Node:
        inputs = self.scope.inputs
        position = {inp.index: k for k, inp in enumerate(inputs)}
        per_leaf: dict[int, list[Expr]] = {k: [] for k in range(len(inputs))}
        equalities, filters, constant = [], [], []
        for e in conds:
            used = {position[s] for s in streams_of(e)}
            if not used:
                constant.append(e)
            elif len(used) == 1:
                per_leaf[used.pop()].append(e)
            elif isinstance(e, Cmp) and e.op == "=" and isinstance(e.left, Col) and isinstance(e.right, Col) and position[e.left.stream] != position[e.right.stream]:
                equalities.append((e.left, e.right))
            else:
                filters.append(e)
        leaves = [Select(inp.node, _conjunction(per_leaf[k])) if per_leaf[k] else inp.node for k, inp in enumerate(inputs)]
        node = leaves[0] if len(leaves) == 1 else Join(tuple(leaves), tuple(equalities), tuple(filters))
        return Select(node, _conjunction(constant)) if constant else node

    def not_exists(self, left: Node, tree: Tree) -> Negation:
        exists_tok, query = tree.children
        if query.data != "query":
            raise self.error(exists_tok, "a NOT EXISTS subquery must be a single SELECT", hint="write one NOT EXISTS per SELECT, joined with AND")
        right, heads, pairs = self.core(query.children[0], outer=self.scope)
        self.subquery_heads(heads)
        return Negation(left, right, pairs, "anti")

    # -- expressions -------------------------------------------------------------
    def expr(self, node: Tree) -> Expr:
        if self._having is not None:
            if self.is_aggregate(node) and self.context != "aggregate":  # nested: misplaced below
                return self.having_aggregate(node)
            if node.data == "bare" and str(node.children[0]) in self._having[1]:
                return Col(-1, self._having[1][str(node.children[0])], "")
        if node.data in AGG_FORMS:
            raise self.misplaced_aggregate(node.children[0])
        if node.data == "exists":
            raise self.error(
                node.children[0],
                "EXISTS can only be used as NOT EXISTS (...), a conjunct of WHERE",
                hint="write WHERE ... AND NOT EXISTS (SELECT ...); for EXISTS, join the streams instead",
            )
        return super().expr(node)

    def function(self, name_tok: Token, args: list[Tree]):
        named = next((a for a in args if a.data == "named_arg"), None)
        if named is not None:
            raise self.error(named, f"{str(name_tok).upper()} takes no named arguments", hint="only FREQUENT does: FREQUENT(S.x, 5, exact => true)")
        if str(name_tok).lower() in AGG_FUNCS:
            raise self.misplaced_aggregate(name_tok)
        return super().function(name_tok, args)

    def column(self, qual: Token | None, attr_tok: Token | None, attr: str) -> Col:
        scope = self.scope
        if qual is None:
            if len(scope.inputs) == 1:
                only = scope.inputs[0]
                return Col(only.index, attr, only.alias)
            candidates = " or ".join(f"{i.alias}.{attr}" for i in scope.inputs)
            raise self.error(attr_tok, f"unqualified column {attr!r} in a query over {len(scope.inputs)} inputs", hint=f"qualify it: {candidates}")
        alias = str(qual)
        for s in (scope, scope.outer):
            found = s.find(alias) if s is not None else None
            if found is not None:
                return Col(found.index, attr, alias)
        visible = [i.alias for i in scope.inputs] + ([i.alias for i in scope.outer.inputs] if scope.outer else [])
        listed = f"FROM lists {', '.join(i.alias for i in scope.inputs)}"
        if scope.outer:
            listed += f"; the outer query's FROM lists {', '.join(i.alias for i in scope.outer.inputs)}"
        if alias in self.inside:
            hint = f"{alias} is inside subquery {self.inside[alias]}; refer to its columns as {self.inside[alias]}.{attr}"
        else:
            renamed = [i.alias for s in (scope, scope.outer) if s for i in s.inputs if isinstance(i.node, Scan) and i.node.source == alias]
            close = difflib.get_close_matches(alias, visible, n=1, cutoff=0.6)
            if renamed:
                hint = f"{alias} is called {' or '.join(renamed)} here; write {renamed[0]}.{attr}"
            else:
                hint = f"did you mean {close[0]}? {listed}" if close else listed
        raise self.error(qual, f"unknown alias {alias!r}", hint=hint)
