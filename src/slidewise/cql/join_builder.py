"""Build a :class:`~slidewise.plan.query.JoinQuery` from a CQL parse tree.

The parser (``grammar.lark``) only checks the shape of a query; this module
checks its meaning and resolves names: stream aliases become indices into
FROM, time units become milliseconds, the WHERE clause is split into
equi-join predicates and filters. Every problem is a
:class:`~slidewise.errors.QueryError` located at the offending token.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import replace

from lark import Token, Tree

from slidewise.cql.diagnostics import query_error
from slidewise.errors import PlanError, QueryError
from slidewise.model.time import MAX_DURATION, UNIT_MS
from slidewise.plan.expr import CAST_TYPES, FUNCTIONS, And, BinOp, Cmp, Col, Expr, Func, Like, Lit, Not, Or
from slidewise.plan.logical import AGG_FUNCS
from slidewise.plan.query import Equality, JoinQuery, SelectItem, StreamRef, WindowSpec

# time units a window size may carry, in milliseconds (lower-case keys); Golab's thesis writes "6 sec"
UNITS = {**UNIT_MS, "sec": 1000, "secs": 1000}

INT64_MAX = 2**63 - 1
MAX_WINDOW = MAX_DURATION  # the length of [UNBOUNDED]; larger sizes would overflow ts + T

_AGGREGATES = frozenset(AGG_FUNCS)
_ARITH = {"add": "+", "sub": "-", "mul": "*", "div": "/", "mod": "%"}
_OUTPUTS = {  # output keyword -> (JoinQuery.output, JoinQuery.restore)
    "istream": ("istream", False),
    "rstream": ("rstream", False),
    "dstream": ("dstream", False),
    "istream_restore": ("istream", True),
    "rstream_restore": ("rstream", True),
}
_CONDITIONS = (Cmp, And, Or, Not, Like)
#: windowing functions of other systems -> the CQL way
#: the one shape a count window with SLIDE takes (the pane path), and how to write it
COUNT_SLIDE_SHAPE = "SLIDE on a count window needs a periodic GROUP BY (or aggregate) over one stream: RSTREAM, ISTREAM or DSTREAM"
COUNT_SLIDE_HINT = (
    "write e.g. SELECT RSTREAM(S.k, COUNT(*) AS n) FROM S [ROWS 100 SLIDE 10] GROUP BY S.k, "
    "or SELECT RSTREAM FREQUENT(S.x, 5) FROM S [ROWS 10000 SLIDE 100]; without SLIDE a count window follows every arrival"
)
_FOREIGN_WINDOWS = {
    "tumble": "[RANGE 5 SECONDS SLIDE 5 SECONDS] after the stream name",
    "hop": "[RANGE 10 SECONDS SLIDE 5 SECONDS] after the stream name",
    "session": "a RANGE or ROWS window after the stream name (sessions are not supported)",
    "window": "[RANGE 5 SECONDS SLIDE 5 SECONDS] after the stream name",
}


def _pos(node: Tree | Token) -> tuple[int, int]:
    if isinstance(node, Token):
        return node.line, node.column
    if node.meta.empty:  # a rule that matched only filtered keywords; never expected here
        return 1, 1
    return node.meta.line, node.meta.column


def operands(node: Tree, kind: str) -> list[Tree]:
    """Operands of a chain of ``kind`` nodes (``a AND b AND c``, left-deep in the parse tree), in text
    order, found without recursion so chains of any length build."""
    out: list[Tree] = []
    todo = [node]
    while todo:
        t = todo.pop()
        if isinstance(t, Tree) and t.data == kind:
            todo.extend(reversed(t.children))
        else:
            out.append(t)
    return out


def _number(tok: Token) -> int | float:
    text = str(tok)
    return int(text) if text.isdigit() else float(text)


class Builder:
    """Walks one parse tree; holds the FROM clause while names are resolved."""

    def __init__(self, text: str):
        self.text = text
        self.refs: list[StreamRef] = []
        self.on: list[Tree] = []  # the conditions of JOIN ... ON, WHERE conjuncts
        self.count_slides: list[tuple[int, Token]] = []  # SLIDE m of [ROWS n SLIDE m] windows, with its token

    # -- helpers -----------------------------------------------------------
    def error(self, node: Tree | Token, message: str, hint: str | None = None) -> QueryError:
        line, column = _pos(node)
        return query_error(self.text, message, line, column, hint)

    @property
    def aliases(self) -> list[str]:
        return [r.alias for r in self.refs]

    # -- query -------------------------------------------------------------
    def build(self, tree: Tree) -> JoinQuery:
        stmt = tree.children[0]
        outer = stmt.children[0] if stmt.data == "wrapped_statement" else None
        select_stmt = stmt.children[1] if outer is not None else stmt.children[0]
        head, ref_list, where = select_stmt.children
        self.from_clause(ref_list)
        output, restore, select_list = self.head(head, outer)
        select = self.select(select_list)
        equalities, filters = self.where(where)
        try:
            return JoinQuery(
                streams=tuple(self.refs), equalities=tuple(equalities), filters=tuple(filters), select=select, output=output, restore=restore, text=self.text
            )
        except PlanError as e:  # a check of JoinQuery this module does not anticipate
            raise QueryError(e.message, hint=e.hint) from None

    def head(self, head: Tree, outer: Token | None) -> tuple[str, bool, Tree]:
        if head.data == "head_call":
            inner, select_list = head.children
        else:
            output_tree, select_list = head.children
            inner = output_tree.children[0] if output_tree is not None else None
        if outer is not None and inner is not None:
            raise self.error(inner, "output operator given twice", hint="write either ISTREAM(SELECT ...) or SELECT ISTREAM ...")
        tok = inner if inner is not None else outer
        if tok is None:
            return "istream", False, select_list
        name = re.match(r"\w+", str(tok)).group(0).lower()
        return (*_OUTPUTS[name], select_list)

    # -- FROM --------------------------------------------------------------
    def from_clause(self, ref_list: Tree) -> None:
        for ref in self.join_refs(ref_list):
            name_tok, window, internal_after, alias_tok = ref.children
            alias = str(alias_tok) if alias_tok is not None else str(name_tok)
            spec, slide_tok = self.window(window, internal_after is not None, name_tok, alias)
            if self.count_slides:
                raise self.error(self.count_slides[0][1], COUNT_SLIDE_SHAPE, hint=COUNT_SLIDE_HINT)
            stream = StreamRef(alias=alias, source=str(name_tok), window=spec)
            try:
                JoinQuery(streams=(*self.refs, stream))
            except PlanError as e:
                if alias in self.aliases:
                    where = alias_tok if alias_tok is not None else name_tok
                else:
                    where = slide_tok if slide_tok is not None else name_tok
                raise self.error(where, e.message, e.hint) from None
            self.refs.append(stream)

    def join_refs(self, ref_list: Tree) -> list[Tree]:
        """The FROM items of ``ref_list``; each ``JOIN ref ON cond`` adds its condition to :attr:`on`
        (an inner join is a FROM item and a WHERE conjunct). Outer and cross joins are an error."""
        self.on = []
        refs: list[Tree] = []
        for item in ref_list.children:
            if item.data != "join_ref":
                refs.append(item)
                continue
            kind, _outer, join_tok, ref, cond = item.children
            if kind is not None and str(kind).lower() != "inner":
                word = str(kind).upper()
                raise self.error(
                    kind,
                    f"{word} JOIN is not supported: slidewise joins are inner joins",
                    hint="write FROM A [RANGE t] a JOIN B [RANGE t] b ON a.k = b.k (or FROM A a, B b WHERE a.k = b.k); rows without a partner are not produced",
                )
            refs.append(ref)
            self.on.append(cond)
        return refs

    def window(self, node: Tree | None, internal: bool, name_tok: Token, alias: str) -> tuple[WindowSpec, Token | None]:
        if node is None:
            return WindowSpec("unbounded", internal=internal), None
        body, internal_in = node.children
        internal = internal or internal_in is not None
        kind = body.data.removesuffix("_window")
        size_node = slide_node = partition = None
        if kind in ("range", "rows"):
            size_node, slide_node = body.children
        elif kind == "partition":
            key, size_node, slide_node = body.children
            partition = self.partition_key(key, name_tok, alias)
            kind = "rows"
        else:
            (slide_node,) = body.children
        size = self.size(size_node, counting=kind == "rows") if size_node is not None else 0
        slide_tok = slide_node.children[0] if slide_node is not None else None
        counted = kind == "rows" and partition is None and slide_node is not None  # [ROWS n SLIDE m]
        slide = self.size(slide_node.children[1], counting=counted) if slide_node is not None else None
        try:
            spec = WindowSpec(kind=kind, size=size, slide=None if counted else slide, partition_by=partition, internal=internal)
        except PlanError as e:
            if e.message.startswith("window size") and size_node is not None:
                where = size_node
            elif e.message.startswith("SLIDE") and slide_tok is not None:
                where = slide_tok
            else:
                where = node
            raise self.error(where, e.message, e.hint) from None
        if counted:
            assert slide_node is not None and slide is not None
            if slide < 1:
                raise self.error(
                    slide_node.children[1],
                    f"SLIDE of a count window must be a positive number of arrivals, got {slide}",
                    hint=f"write e.g. [ROWS {size} SLIDE {max(1, size // 2)}]: the window is evaluated after every m-th arrival",
                )
            self.count_slides.append((slide, slide_tok))
        return spec, slide_tok

    def partition_key(self, key: Tree, name_tok: Token, alias: str) -> str:
        first, second = key.children
        if second is None:
            return str(first)
        if str(first) not in (alias, str(name_tok)):
            raise self.error(
                first,
                f"PARTITION BY names stream {str(first)!r} inside the window of {alias!r}",
                hint=f"partition by an attribute of this stream, e.g. PARTITION BY {second}",
            )
        return str(second)

    def size(self, node: Tree, counting: bool) -> int:
        if node.data == "interval_size":  # INTERVAL '5' SECOND, INTERVAL 5 MINUTES
            interval_tok, num_tok, unit_tok = node.children
            if counting:
                raise self.error(interval_tok, "ROWS counts tuples and takes no INTERVAL", hint="write [ROWS 50], or [RANGE INTERVAL '5' SECOND] for a time window")
            text = str(num_tok).strip("'").strip()
            if not re.fullmatch(r"\d+(\.\d+)?", text):
                raise self.error(num_tok, f"INTERVAL needs a number, got {num_tok}", hint="write e.g. INTERVAL '5' SECOND or INTERVAL 5 MINUTES")
            num_tok = Token("NUMBER", text, line=num_tok.line, column=num_tok.column)
        else:
            num_tok, unit_tok = node.children
        value = _number(num_tok)
        if node.data == "negative_size":
            value = -value
        if unit_tok is not None:
            unit = str(unit_tok)
            if counting:
                raise self.error(unit_tok, "ROWS counts tuples and takes no time unit", hint=f"write [ROWS {num_tok}], or [RANGE {num_tok} {unit}] for a time window")
            if unit.lower() not in UNITS:
                raise self.error(unit_tok, f"unknown time unit {unit!r}", hint="use ms, s, min, h or d, or no unit for the source's own timestamp units")
            value = value * UNITS[unit.lower()]
            if value != int(value):
                raise self.error(num_tok, f"{num_tok} {unit} is not a whole number of milliseconds", hint="timestamps are integer milliseconds")
        elif value != int(value):
            if counting:
                raise self.error(num_tok, f"ROWS needs a whole number of tuples, got {num_tok}", hint="write e.g. [ROWS 50]")
            raise self.error(num_tok, f"window size must be a whole number, got {num_tok}", hint="timestamps are integers; use a smaller unit, e.g. [RANGE 1500 ms]")
        if abs(value) >= MAX_WINDOW:
            raise self.error(num_tok, f"window size {num_tok} is too large", hint="use [UNBOUNDED] for a window that never expires")
        return int(value)

    # -- SELECT ------------------------------------------------------------
    def select(self, node: Tree) -> tuple[SelectItem, ...] | None:
        if node.data == "select_star":
            return None
        items: list[SelectItem] = []
        seen: set[str] = set()
        for item in node.children:
            if item.data == "item_all":
                (qual,) = item.children
                entry = SelectItem(self.column(qual, None, "*"))
            else:
                expr_node, alias_tok = item.children
                entry = SelectItem(self.expr(expr_node), str(alias_tok) if alias_tok is not None else None)
            if entry.name in seen:
                raise self.error(
                    item, f"output column {entry.name!r} appears twice in SELECT", hint=f"rename one with AS, e.g. {entry.expr} AS {_fresh(entry.name, seen)}"
                )
            seen.add(entry.name)
            items.append(entry)
        return tuple(items)

    # -- WHERE -------------------------------------------------------------
    def where(self, node: Tree | None) -> tuple[list[Equality], list[Expr]]:
        conds = [self.condition(t, "ON") for t in self.on]
        if node is not None:
            conds.append(self.condition(node.children[0], "WHERE"))
        equalities: list[Equality] = []
        filters: list[Expr] = []
        for c in (i for cond in conds for i in (cond.items if isinstance(cond, And) else (cond,))):
            if isinstance(c, Cmp) and c.op == "=" and isinstance(c.left, Col) and isinstance(c.right, Col) and c.left.stream != c.right.stream:
                equalities.append(Equality(c.left, c.right))
            else:
                filters.append(c)
        return equalities, filters

    # -- expressions -------------------------------------------------------
    def condition(self, node: Tree, context: str) -> Expr:
        e = self.expr(node)
        if not isinstance(e, _CONDITIONS):
            raise self.error(node, f"{context} expects a condition, got the value {e}", hint=f"compare it, e.g. {e} = 1")
        return e

    def value(self, node: Tree, context: str) -> Expr:
        e = self.expr(node)
        if isinstance(e, _CONDITIONS):
            raise self.error(node, f"{context} expects a value, got the condition {e}", hint="combine conditions with AND, OR and NOT")
        return e

    def expr(self, node: Tree) -> Expr:
        """The expression of ``node``, carrying its query line and column (for binding errors)."""
        e = self.expr_of(node)
        if getattr(e, "pos", False) is None:
            e = replace(e, pos=_pos(node))
        return e

    def expr_of(self, node: Tree) -> Expr:
        kind = node.data
        ch = node.children
        if kind == "number":
            value = _number(ch[0])
            if isinstance(value, int) and value > INT64_MAX:
                raise self.error(ch[0], f"integer {ch[0]} is out of range", hint=f"integers are 64-bit (up to {INT64_MAX}); write a float, e.g. {float(value):g}")
            return Lit(value)
        if kind == "string":
            return Lit(str(ch[0])[1:-1].replace("''", "'"))
        if kind == "qualified":
            return self.column(ch[0], ch[1], str(ch[1]))
        if kind == "bare":
            return self.column(None, ch[0], str(ch[0]))
        if kind in _ARITH:
            op = _ARITH[kind]
            return BinOp(op, self.value(ch[0], f"'{op}'"), self.value(ch[1], f"'{op}'"))
        if kind == "neg":
            inner = self.value(ch[0], "'-'")
            if isinstance(inner, Lit) and isinstance(inner.value, (int, float)):
                return Lit(-inner.value)
            return BinOp("-", Lit(0), inner)
        if kind == "cmp":
            op = "!=" if str(ch[1]) == "<>" else str(ch[1])
            return Cmp(op, self.value(ch[0], f"'{ch[1]}'"), self.value(ch[2], f"'{ch[1]}'"))
        if kind in ("between", "not_between"):  # a BETWEEN lo AND hi: lo <= a AND a <= hi
            word = "BETWEEN" if kind == "between" else "NOT BETWEEN"
            a, lo, hi = (self.value(c, word) for c in (ch[0], ch[2], ch[3]))
            inside = And((Cmp(">=", a, lo, pos=_pos(ch[1])), Cmp("<=", a, hi, pos=_pos(ch[1]))))
            return inside if kind == "between" else Not(inside)
        if kind in ("in_", "not_in"):  # a IN (x, y): a = x OR a = y
            word = "IN" if kind == "in_" else "NOT IN"
            a = self.value(ch[0], word)
            equal = [Cmp("=", a, self.value(c, word), pos=_pos(ch[1])) for c in ch[2:]]
            any_equal = equal[0] if len(equal) == 1 else Or(tuple(equal))
            return any_equal if kind == "in_" else Not(any_equal)
        if kind in ("like", "not_like"):
            word = "LIKE" if kind == "like" else "NOT LIKE"
            pattern = Like(self.value(ch[0], word), str(ch[-1])[1:-1].replace("''", "'"), pos=_pos(ch[1]))
            return pattern if kind == "like" else Not(pattern)
        if kind == "case":  # CASE WHEN c THEN v ... [ELSE d] END: Func('case', (c, v, ..., [d]))
            args: list[Expr] = []
            parts = ch[1:]
            while parts and isinstance(parts[0], Token) and parts[0].type == "WHEN":
                args += [self.condition(parts[1], "WHEN"), self.value(parts[3], "THEN")]
                parts = parts[4:]
            if parts and parts[0] is not None:
                args.append(self.value(parts[1], "ELSE"))
            return Func("case", tuple(args))
        if kind in ("and_", "or_"):
            word, cls = ("AND", And) if kind == "and_" else ("OR", Or)
            items: list[Expr] = []
            for child in operands(node, kind):
                c = self.condition(child, word)
                items.extend(c.items if isinstance(c, cls) else (c,))
            return cls(tuple(items))
        if kind == "not_":
            return Not(self.condition(ch[0], "NOT"))
        if kind == "func":
            return self.function(ch[0], [a for a in ch[1:] if a is not None])
        if kind == "cast":
            return self.cast(*ch)
        raise self.error(node, f"unsupported expression {kind!r}")  # grammar and builder disagree

    def function(self, name_tok: Token, args: list[Tree]) -> Func:
        name = str(name_tok).lower()
        if name not in FUNCTIONS:
            available = ", ".join(sorted(f.upper() for f in FUNCTIONS))
            if name in _AGGREGATES:
                raise self.error(name_tok, f"aggregate {name.upper()} is not supported in a select–project–join query", hint=f"available functions: {available}")
            raise self.unknown_function(name_tok)
        fewest, most = FUNCTIONS[name]
        if not fewest <= len(args) <= most:
            arity = str(fewest) if fewest == most else f"{fewest} to {most}"
            plural = "" if most == 1 else "s"
            example = {"substr": "SUBSTR(S1.name, 1, 3)", "round": "ROUND(S1.x, 2)", "coalesce": "COALESCE(S1.x, 0)"}.get(name, f"{name.upper()}(S1.x - S2.x)")
            raise self.error(name_tok, f"{name.upper()} takes {arity} argument{plural}, got {len(args)}", hint=f"write e.g. {example}")
        return Func(name, tuple(self.value(a, name.upper()) for a in args))

    def unknown_function(self, name_tok: Token) -> QueryError:
        """The error for a call of a function slidewise does not know, listing the ones it does."""
        name = str(name_tok).lower()
        if name in _FOREIGN_WINDOWS:
            return self.error(
                name_tok,
                f"{name.upper()}(...) is not supported: in CQL a window belongs to its stream",
                hint=f"write {_FOREIGN_WINDOWS[name]}, e.g. FROM S [RANGE 5 SECONDS SLIDE 5 SECONDS] s ... GROUP BY s.k",
            )
        return self.error(
            name_tok,
            f"unknown function {str(name_tok)!r}",
            hint=f"functions: {', '.join(sorted(f.upper() for f in FUNCTIONS))}, CAST(x AS type); aggregates: {', '.join(f.upper() for f in AGG_FUNCS)}",
        )

    def cast(self, name_tok: Token, arg: Tree, type_tok: Token) -> Func:
        """``CAST(expr AS type)``: ``Func('cast', (expr, Lit(kind)))``."""
        if str(name_tok).lower() != "cast":
            raise self.error(name_tok, f"{str(name_tok).upper()} takes no AS; only CAST does", hint="write CAST(expr AS INT), CAST(expr AS DOUBLE) or CAST(expr AS TEXT)")
        kind = CAST_TYPES.get(str(type_tok).lower())
        if kind is None:
            raise self.error(type_tok, f"unknown type {str(type_tok)!r} in CAST", hint=f"use one of {', '.join(t.upper() for t in CAST_TYPES)}")
        return Func("cast", (self.value(arg, "CAST"), Lit(kind)))

    def column(self, qual: Token | None, attr_tok: Token | None, attr: str) -> Col:
        if qual is None:
            if len(self.refs) != 1:
                raise self.error(attr_tok, f"unqualified column {attr!r} in a query over {len(self.refs)} streams", hint=f"qualify it, e.g. {self.refs[0].alias}.{attr}")
            return Col(0, attr, self.refs[0].alias)
        alias = str(qual)
        if alias in self.aliases:
            return Col(self.aliases.index(alias), attr, alias)
        listed = f"FROM lists {', '.join(self.aliases)}"
        renamed = [r.alias for r in self.refs if r.source == alias]
        if renamed:
            hint = f"{alias} is called {' or '.join(renamed)} in FROM; write {renamed[0]}.{attr}"
        else:
            close = difflib.get_close_matches(alias, self.aliases, n=1, cutoff=0.6)
            close = close or [a for a in self.aliases if a.lower() == alias.lower()]
            hint = f"did you mean {close[0]}? {listed}" if close else listed
        raise self.error(qual, f"unknown stream alias {alias!r}", hint=hint)


def _fresh(name: str, taken: set[str]) -> str:
    base = name.rsplit(".", 1)[-1].strip("*") or "col"
    n = 2
    while f"{base}{n}" in taken:
        n += 1
    return f"{base}{n}"
