"""``SELECT RSTREAM FREQUENT(S.x, k [, exact => true]) FROM S [window SLIDE d] [WHERE ...]``.

The frequent items of a sliding window (Golab's thesis ch. 6, Algorithm 6):
the call is the whole select list of one SELECT over one stream with a
FIFO window — ``[RANGE T SLIDE D]`` or ``[ROWS N SLIDE D]`` (D arrivals; the
one other query a count window's SLIDE takes is a periodic GROUP BY). The input is built by
:class:`~slidewise.cql.plan_builder.PlanBuilder` as ``SELECT *`` of the same FROM
and WHERE; an input whose tuples do not expire in arrival order (a join of
time windows, negation, an aggregate, ...) is refused, because Algorithm 6
drops whole sub-windows in FIFO order. :func:`build_frequent` returns a
:class:`~slidewise.plan.frequent.FrequentQuery`.
"""

from __future__ import annotations

from lark import Tree

from slidewise.cql.plan_builder import PlanBuilder
from slidewise.plan.frequent import OUTPUT_COLUMNS, FrequentQuery
from slidewise.plan.logical import Pattern, Scan, Select

__all__ = ["build_frequent", "frequent_call"]

_USAGE = "write SELECT RSTREAM FREQUENT(S.x, 5) FROM S [RANGE 600 s SLIDE 10 s] (or [ROWS 10000 SLIDE 100])"


def frequent_call(tree: Tree) -> Tree | None:
    """The first ``FREQUENT(...)`` call of a full-dialect parse tree, or None."""
    for t in tree.iter_subtrees_topdown():
        if t.data == "func" and str(t.children[0]).lower() == "frequent":
            return t
    return None


def build_frequent(text: str, tree: Tree, call: Tree, tables: frozenset[str] = frozenset()) -> FrequentQuery:
    """The :class:`FrequentQuery` of a parse tree holding ``call``; a located error when it does not fit."""
    pb = PlanBuilder(text, tables)
    name_tok = call.children[0]
    stmt = tree.children[0]
    query = stmt.children[-1] if stmt.data == "full_wrapped" else stmt.children[0]
    if query.data != "query":
        raise pb.error(name_tok, "FREQUENT over a UNION or EXCEPT", hint=_USAGE)
    core = query.children[0]
    head, refs, _where, group_by, having = core.children
    select_list = head.children[2]
    items = select_list.children if select_list.data == "select_items" else []
    if len(items) != 1 or items[0].data != "item_expr" or items[0].children[0] is not call:
        raise pb.error(
            name_tok, "FREQUENT(...) must be the whole select list", hint="it returns its own columns: the item, frequency, threshold and guaranteed; " + _USAGE
        )
    if head.children[1] is not None or group_by is not None or having is not None:
        raise pb.error(name_tok, "FREQUENT(...) takes no DISTINCT, GROUP BY or HAVING", hint=_USAGE)
    slide = _rows_slide(pb, refs)
    head.children[2] = Tree("select_star", [])
    plan = pb.build(tree)
    item, k, exact = _arguments(pb, call, plan.aliases)
    out = plan.root
    if out.kind != "rstream" or out.restore:
        raise pb.error(
            name_tok,
            f"FREQUENT answers with RSTREAM, not {out.kind.upper()}",
            hint="its answer is the window's frequent items at each evaluation: write SELECT RSTREAM FREQUENT(...)",
        )
    node = out.child
    scan = node.child if isinstance(node, Select) else node
    if not isinstance(scan, Scan) or scan.kind != "stream":
        raise pb.error(refs, _not_fifo(plan), hint="run FREQUENT over one stream with a [RANGE ...] or [ROWS ...] window")
    w = scan.window
    assert w is not None
    if w.kind not in ("range", "rows") or w.partition_by or w.internal or w.size < 1:
        raise pb.error(refs, f"FREQUENT needs a sliding time or count window, got {w}", hint=_USAGE)
    slide = out.slide if w.kind == "range" else slide
    if not slide:
        raise pb.error(refs, "FREQUENT needs a SLIDE: its answer is refreshed every SLIDE", hint=_USAGE)
    return FrequentQuery(out, plan.aliases, text, item=item, k=k, exact=exact, slide=slide)


def _rows_slide(pb: PlanBuilder, refs: Tree) -> int | None:
    """The SLIDE of a count window (taken out of the tree: elsewhere only time windows slide)."""
    for ref in refs.children:
        window = ref.children[1] if ref.data == "ref" else None
        if isinstance(window, Tree) and window.children[0].data == "rows_window":
            body = window.children[0]
            slide_node = body.children[1]
            if slide_node is not None:
                body.children[1] = None
                return pb.size(slide_node.children[1], counting=True)
    return None


def _arguments(pb: PlanBuilder, call: Tree, aliases: tuple[str, ...]) -> tuple[str, int, bool]:
    name_tok, *args = call.children
    args = [a for a in args if a is not None]
    named = [a for a in args if a.data == "named_arg"]
    plain = [a for a in args if a.data != "named_arg"]
    if len(plain) != 2:
        raise pb.error(name_tok, f"FREQUENT takes a column and k, got {len(plain)} argument(s)", hint=_USAGE)
    col, k_node = plain
    if col.data not in ("qualified", "bare"):
        raise pb.error(col, "FREQUENT counts the values of a column", hint=_USAGE)
    if col.data == "qualified" and str(col.children[0]) not in aliases:
        raise pb.error(col.children[0], f"unknown alias {str(col.children[0])!r}", hint=f"FROM lists {', '.join(aliases)}")
    item = str(col.children[-1])
    if item in (*OUTPUT_COLUMNS, "ts", "sign"):
        raise pb.error(
            col, f"FREQUENT of column {item!r}: the answer has a column of that name", hint="count an attribute other than ts, sign, frequency, threshold or guaranteed"
        )
    if k_node.data != "number" or not str(k_node.children[0]).isdigit() or int(str(k_node.children[0])) < 1:
        raise pb.error(k_node, "FREQUENT's k must be a whole number of at least 1", hint="the number of items kept per sub-window, e.g. FREQUENT(S.src, 5)")
    exact = False
    for a in named:
        key, _arrow, value = a.children
        word = str(value.children[0]).lower() if value.data in ("bare", "number") else ""
        if str(key).lower() != "exact" or word not in ("true", "false", "1", "0"):
            raise pb.error(key, f"unknown FREQUENT option {key} => ...", hint="the one option is exact => true (exact counts over the whole window) or false")
        exact = word in ("true", "1")
    return item, int(str(k_node.children[0])), exact


def _not_fifo(plan) -> str:
    """Why Algorithm 6 cannot run over the plan's input (its update pattern, Golab's thesis §3.5.1)."""
    from slidewise.plan.patterns import annotate

    pattern = annotate(plan.root)[plan.root.child]
    what = {
        Pattern.MONO: "monotonic (tuples never expire)",
        Pattern.WKS: "a FIFO input that is not one stream",
        Pattern.WK: "weak non-monotonic (tuples expire out of arrival order)",
        Pattern.STR: "strict non-monotonic (tuples are deleted by negative tuples)",
    }.get(pattern, str(pattern))
    return (
        f"FREQUENT needs one stream whose window expires tuples in arrival order; this input is {what}: "
        "Algorithm 6 (Golab's thesis ch. 6) drops whole sub-windows in FIFO order"
    )
