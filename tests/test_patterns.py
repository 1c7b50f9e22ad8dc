"""Update-pattern labels (Golab's thesis §3.5.1): every leaf kind, each rule, Fig. 3.5, random plans.

Labels: MONO < WKS < WK < STR. A node's label is the pattern of its output
edge; the pattern of a plan is the label of the edge into its output operator.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slidewise.plan.expr import Cmp, Col, Lit
from slidewise.plan.logical import AggCall, Aggregate, Distinct, Join, Negation, Node, Output, Pattern, Plan, Project, Scan, Select, Subquery, Union, walk
from slidewise.plan.patterns import annotate, lifetime, plan_pattern, rule_of, state_structure, state_structures
from slidewise.plan.query import SelectItem, WindowSpec

MONO, WKS, WK, STR = Pattern.MONO, Pattern.WKS, Pattern.WK, Pattern.STR
TRUE = Cmp("=", Lit(1), Lit(1))


def win(alias="S", kind="range", size=10, internal=False, partition_by=None) -> Scan:
    return Scan(alias, alias, WindowSpec(kind, size, internal=internal, partition_by=partition_by))


def rel(alias="R", kind="nrr") -> Scan:
    return Scan(alias, alias, kind=kind)


def pat(node: Node) -> Pattern:
    return annotate(node)[node]


def eq(i, j, a="a", names=("S1", "S2", "S3")):
    return (Col(i, a, names[i]), Col(j, a, names[j]))


# --- leaves ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "leaf,expected",
    [
        (win(kind="range"), WKS),  # time window
        (win(kind="now", size=0), WKS),  # [NOW] = RANGE 0
        (win(kind="rows", size=5), STR),  # count window
        (win(kind="rows", size=5, partition_by="k"), STR),
        (win(kind="unbounded", size=0), MONO),
        (win(kind="range", internal=True), MONO),  # §3.3.2
        (win(kind="rows", size=5, internal=True), MONO),
        (rel(kind="nrr"), MONO),  # §3.3.1
        (rel(kind="table"), STR),  # retroactive
        (Subquery("X", Output(win()), WindowSpec("rows", 3)), STR),  # a window over a subquery's output
        (Subquery("X", Output(win()), WindowSpec("range", 3)), WKS),
    ],
)
def test_leaf_labels(leaf, expected):
    assert pat(leaf) == expected
    assert rule_of(leaf).startswith("leaf")


# --- rule 1: unary weakest operators and the NRR join keep their input's pattern -------------------


@pytest.mark.parametrize("leaf", [win(), win(kind="rows", size=3), win(kind="unbounded"), rel("R", "table")])
@pytest.mark.parametrize("wrap", [lambda c: Select(c, TRUE), lambda c: Project(c, (SelectItem(Lit(1), "one"),)), lambda c: Subquery("X", c)])
def test_rule1_unary_weakest_keeps_input(leaf, wrap):
    node = wrap(leaf)
    assert pat(node) == pat(leaf)
    assert rule_of(node).startswith("rule 1")


@pytest.mark.parametrize("stream,expected", [(win(), WKS), (win(kind="rows", size=3), STR), (win(internal=True), MONO)])
def test_rule1_nrr_join_keeps_stream_pattern(stream, expected):
    join = Join((stream, rel("R", "nrr")))
    assert pat(join) == expected


# --- rule 2: merge-union takes the most complex input ----------------------------------------------


@pytest.mark.parametrize(
    "a,b,expected",
    [
        (WKS, WKS, WKS),
        (WKS, WK, WK),
        (WK, WK, WK),
        (WKS, STR, STR),
        (WK, STR, STR),
        (MONO, WKS, WKS),
        (MONO, MONO, MONO),
    ],
)
def test_rule2_union(a, b, expected):
    make = {MONO: lambda: win(internal=True), WKS: win, WK: lambda: Join((win("A"), win("B"))), STR: lambda: win(kind="rows", size=2)}
    node = Union((make[a](), make[b]()))
    assert pat(node) == expected
    assert rule_of(node).startswith("rule 2")


# --- rule 3: weak non-monotonic operators -----------------------------------------------------------


def test_rule3_join_of_time_windows_is_weak():
    assert pat(Join((win("S1"), win("S2")), (eq(0, 1),))) == WK
    assert pat(Join((win("S1"), win("S2"), win("S3")))) == WK
    assert pat(Join((Join((win("S1"), win("S2"))), win("S3")))) == WK


@pytest.mark.parametrize("leaf", [win(), Join((win("A"), win("B"))), win(kind="unbounded")])
def test_rule3_distinct_over_non_strict_input_is_weak(leaf):
    assert pat(Distinct(leaf)) == WK
    assert rule_of(Distinct(leaf)).startswith("rule 3")


def test_rule3_strict_input_makes_weak_operators_strict():
    assert pat(Join((win("A"), win("B", "rows", 3)))) == STR
    assert pat(Distinct(win(kind="rows", size=3))) == STR


# --- rule 4: strict non-monotonic operators ---------------------------------------------------------


@pytest.mark.parametrize(
    "node",
    [
        Negation(win("A"), win("B")),
        Negation(win("A", "unbounded"), win("B", "unbounded")),
        Negation(win("A", internal=True), win("B", internal=True), mode="except"),
        Aggregate(win(), aggs=(AggCall("count"),)),
        Aggregate(win(kind="unbounded"), aggs=(AggCall("count"),)),  # external unbounded: values replaced
        Join((win(), rel("R", "table"))),
    ],
)
def test_rule4_strict_operators(node):
    assert pat(node) == STR
    assert rule_of(node).startswith("rule 4")


# --- rule 5: internal windows (§3.3.2) ---------------------------------------------------------------


def test_rule5_join_with_at_most_one_external_window():
    assert pat(Join((win("A", internal=True), win("B", internal=True)))) == MONO
    assert pat(Join((win("A", kind="unbounded"), win("B", internal=True)))) == MONO
    assert pat(Join((win("A"), win("B", internal=True), win("C", internal=True)))) == WKS
    assert pat(Join((win("A"), win("B"), win("C", internal=True)))) == WK
    assert rule_of(Join((win("A"), win("B", internal=True)))).startswith("rule 5")


def test_rule5_aggregation_over_internal_windows_is_append_only():
    inner = Aggregate(Join((win("A", internal=True), win("B", internal=True))), aggs=(AggCall("sum", Lit(1)),))
    assert pat(inner) == MONO and rule_of(inner).startswith("rule 5")
    # the thesis's §3.4 example: SUM over a count window on the output of an internal aggregate
    outer = Aggregate(Subquery("X", Aggregate(win(internal=True), aggs=(AggCall("count"),)), WindowSpec("rows", 10)), aggs=(AggCall("sum", Lit(1)),))
    assert pat(outer) == STR


# --- output operators ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kind,window,expected",
    [
        ("rstream", None, WK),
        ("istream", None, MONO),
        ("dstream", None, MONO),
        ("wstream", WindowSpec("rows", 3), STR),
        ("wstream", WindowSpec("range", 3), WKS),
    ],
)
def test_output_operators(kind, window, expected):
    out = Output(Join((win("A"), win("B"))), kind, window=window)
    assert pat(out) == expected
    assert plan_pattern(out) == WK  # the plan's pattern is the edge into the output operator


# --- Fig. 3.5: the same query, negation above vs below the join -----------------------------------


def fig35():
    s1, s2, s3 = win("S1"), win("S2"), win("S3")
    join = Join((s1, s2), (eq(0, 1),))
    left = Output(Negation(join, s3, (eq(0, 2),)), "rstream")
    neg = Negation(s1, s3, (eq(0, 2),))
    right = Output(Join((neg, s2), (eq(0, 1),)), "rstream")
    return left, right


def test_fig35_left_negation_above_the_join():
    left, _ = fig35()
    labels = annotate(left)
    negation = left.child
    join = negation.left
    assert [labels[s] for s in join.inputs] == [WKS, WKS] and labels[negation.right] == WKS
    assert labels[join] == WK and labels[negation] == STR and plan_pattern(left) == STR


def test_fig35_right_negation_pushed_down():
    _, right = fig35()
    labels = annotate(right)
    join = right.child
    negation = join.inputs[0]
    assert labels[negation.left] == labels[negation.right] == labels[join.inputs[1]] == WKS
    assert labels[negation] == STR and labels[join] == STR and plan_pattern(right) == STR


def test_fig35_state_structures():
    left, right = fig35()
    upa = state_structures(left, "upa", partitions=50)
    negation = left.child
    # the calendar queue stores the left (WK) input of the negation (§3.5.2, Fig. 3.6)
    assert upa[negation].inputs == ("calendar", "fifo") and upa[negation].negative_tuples
    assert upa[negation.left].inputs == ("fifo", "fifo") and not upa[negation.left].negative_tuples
    assert "calendar queue (50 partitions)" in str(upa[negation])
    assert state_structures(left, "nt")[negation].inputs == ("hash", "hash")
    assert state_structures(left, "direct")[negation].inputs == ("list", "list")
    # pushed down: the join below the negation gets a strict input, kept in a hash table
    join = right.child
    assert state_structures(right, "upa")[join].inputs == ("hash", "fifo")


@pytest.mark.parametrize(
    "strategy,child,form",
    [
        ("upa", win(), "delta_star"),
        ("upa", win(kind="rows", size=3), "strict"),
        ("nt", win(), "strict"),
        ("direct", win(), "naive"),
    ],
)
def test_distinct_forms(strategy, child, form):
    node = Distinct(child)
    assert state_structure(node, (pat(child),), strategy).form == form


def test_fifo_only_where_lifetimes_are_equal():
    same = Union((win("A", size=10), win("B", size=10)))
    mixed = Union((win("A", size=10), win("B", size=20)))
    assert lifetime(same) == 10 and lifetime(mixed) is None
    assert pat(mixed) == WKS  # the rule's label ...
    assert state_structure(Select(mixed, TRUE), (WKS,), "upa").inputs == ("none",)
    # ... but an operator storing it needs a calendar queue, not a FIFO
    assert state_structure(Distinct(mixed), (WKS,), "upa").output == "calendar"
    assert state_structure(Negation(mixed, win("C")), (WKS, WKS), "upa").inputs == ("calendar", "fifo")
    assert state_structure(Negation(same, win("C")), (WKS, WKS), "upa").inputs == ("fifo", "fifo")
    assert lifetime(Join((win("A"), rel("R")))) == 10
    assert lifetime(Join((win("A"), win("B", internal=True)))) is None


def test_annotation_needs_no_columns():
    plan = Plan(fig35()[0], ("S1", "S2", "S3"))
    assert all(s.columns is None for s in plan.scans())
    assert len(annotate(plan.root)) == 6


# --- random plans ----------------------------------------------------------------------------------


def _leaves():
    windows = st.sampled_from(
        [
            WindowSpec("range", 10),
            WindowSpec("range", 20),
            WindowSpec("now", 0),
            WindowSpec("rows", 3),
            WindowSpec("unbounded", 0),
            WindowSpec("range", 10, internal=True),
            WindowSpec("rows", 2, partition_by="k"),
        ]
    )
    streams = st.builds(lambda w: Scan("S", "S", w), windows)
    relations = st.sampled_from(["nrr", "table"]).map(lambda k: Scan("R", "R", kind=k))
    return st.one_of(streams, streams, relations)


def _extend(children):
    pair = st.tuples(children, children)
    return st.one_of(
        children.map(lambda c: Select(c, TRUE)),
        children.map(lambda c: Project(c, (SelectItem(Lit(1), "one"),))),
        children.map(Distinct),
        children.map(lambda c: Aggregate(c, aggs=(AggCall("count"),))),
        children.map(lambda c: Subquery("X", c)),
        pair.map(lambda p: Join(p)),
        pair.map(lambda p: Union(p)),
        pair.map(lambda p: Negation(*p)),
    )


def reference(node: Node, inputs: list[Pattern]) -> Pattern:
    """An independent restatement of the rules, to check the annotation edge by edge."""
    if isinstance(node, Scan):
        if node.kind == "nrr":
            return MONO
        if node.kind == "table":
            return STR
        w = node.window
        return MONO if w.internal or w.kind == "unbounded" else (STR if w.kind == "rows" else WKS)
    if isinstance(node, (Select, Project, Subquery)):
        return inputs[0]
    if isinstance(node, Union):
        return max(inputs)
    if isinstance(node, Distinct):
        return STR if STR in inputs else WK
    if isinstance(node, Negation):
        return STR
    if isinstance(node, Aggregate):
        windows = [n.window for n in walk(node.child) if isinstance(n, Scan) and n.window]
        return MONO if inputs == [MONO] and all(w.internal for w in windows) else STR
    if isinstance(node, Join):
        if STR in inputs or any(isinstance(i, Scan) and i.kind == "table" for i in node.inputs):
            return STR
        moving = [p for p in inputs if p != MONO]
        return MONO if not moving else moving[0] if len(moving) == 1 else WK
    raise AssertionError(node)


@given(st.recursive(_leaves(), _extend, max_leaves=8))
def test_random_plans_follow_the_rules_edge_by_edge(root):
    labels = annotate(root)
    for node in walk(root):
        inputs = [labels[c] for c in node.children]
        assert labels[node] == reference(node, inputs), node.label()
        if inputs:
            # no operator simplifies its input's pattern, except aggregation over internal windows
            assert labels[node] >= max(inputs) or isinstance(node, Aggregate)
            # STR propagates upward through every operator
            if STR in inputs:
                assert labels[node] == STR
        if isinstance(node, (Negation,)):
            assert labels[node] == STR
        if isinstance(node, Distinct) or (isinstance(node, Join) and sum(p != MONO for p in inputs) > 1):
            assert labels[node] >= WK
        if labels[node] == MONO:
            assert not any(isinstance(n, (Negation, Distinct)) for n in walk(node))
        for strategy in ("nt", "direct", "upa"):
            state = state_structure(node, tuple(inputs), strategy)
            assert len(state.inputs) in (0, len(inputs))
            if isinstance(node, Aggregate) and strategy != "nt":
                assert not state.negative_tuples  # a group's new value replaces the old one (§3.5.2)
            else:
                assert state.negative_tuples == (labels[node] != MONO if strategy == "nt" else labels[node] == STR)


@given(st.recursive(_leaves(), _extend, max_leaves=8))
def test_random_plans_without_strict_sources_have_no_strict_edges(root):
    strict_source = any(
        isinstance(n, (Negation, Aggregate))
        or (isinstance(n, Scan) and (n.kind == "table" or (n.window is not None and n.window.kind == "rows" and not n.window.internal)))
        for n in walk(root)
    )
    if not strict_source:
        assert all(p != STR for p in annotate(root).values())
