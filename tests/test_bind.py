"""Binding logical plans to source schemas: scan columns, every column reference checked, clear errors."""

from __future__ import annotations

import pytest

from slidewise.errors import PlanError, SourceError
from slidewise.plan.bind import bind
from slidewise.plan.expr import Cmp, Col, Lit
from slidewise.plan.logical import AggCall, Aggregate, Join, Negation, Output, Plan, Project, Scan, Select, Subquery, Union
from slidewise.plan.query import SelectItem, WindowSpec

ALIASES = ("S1", "S2", "R", "X")
SCHEMAS = {"S1": ["ts", "a", "b"], "S2": ["ts", "a", "c"], "R": ["ts", "op", "a", "name"]}


def c(alias, attr):
    return Col(ALIASES.index(alias), attr, alias)


def s(alias="S1", source=None):
    return Scan(alias, source or alias, WindowSpec("range", 10))


def plan(node):
    return Plan(Output(node), ALIASES)


def test_scans_get_their_columns_and_the_tree_is_rebuilt():
    original = plan(Select(Join((s("S1"), s("S2")), ((c("S1", "a"), c("S2", "a")),)), Cmp(">", c("S1", "b"), Lit(1))))
    bound = bind(original, SCHEMAS)
    assert [sc.columns for sc in bound.scans()] == [("a", "b"), ("a", "c")]
    assert bound.root.schema == ("S1.ts", "S1.a", "S1.b", "S2.ts", "S2.a", "S2.c")
    assert all(sc.columns is None for sc in original.scans())  # the input plan is unchanged
    assert bound.root is not original.root and bound.aliases == original.aliases


def test_relations_drop_update_columns():
    bound = bind(plan(Join((s("S1"), Scan("R", "R", kind="nrr")), ((c("S1", "a"), c("R", "a")),))), SCHEMAS)
    assert bound.scans()[1].schema == ("R.a", "R.name")


def test_missing_source():
    with pytest.raises(SourceError, match="no source for stream S9") as e:
        bind(plan(s("S1", "S9")), SCHEMAS)
    assert "--source S9=PATH" in e.value.hint


@pytest.mark.parametrize(
    "node,message,hint",
    [
        (Select(s(), Cmp("=", c("S1", "z"), Lit(1))), "stream S1 (source S1) has no column 'z'", "ts, a, b"),
        (Join((s("S1"), s("S2")), ((c("S1", "a"), c("S2", "b")),)), "stream S2 (source S2) has no column 'b'", "ts, a, c"),
        (Join((s("S1"), s("S2")), (), (Cmp("<", c("S1", "x"), c("S2", "a")),)), "has no column 'x'", "ts, a, b"),
        (Project(s(), (SelectItem(c("S1", "q")),)), "has no column 'q'", "ts, a, b"),
        (Aggregate(s(), (SelectItem(c("S1", "k")),), (AggCall("sum", c("S1", "a")),)), "has no column 'k'", "a, b"),
        (Aggregate(s(), (), (AggCall("max", c("S1", "w")),)), "has no column 'w'", "a, b"),
        (Negation(s("S1"), s("S2"), ((c("S1", "a"), c("S2", "zz")),)), "stream S2 (source S2) has no column 'zz'", "a, c"),
        (Negation(s("S1"), s("S2"), ((c("S1", "zz"), c("S2", "a")),)), "stream S1 (source S1) has no column 'zz'", "a, b"),
        (Join((s("S1"), Scan("R", "R", kind="table")), ((c("S1", "a"), c("R", "ts")),)), "table R (source R) has no column 'ts'", "a, name"),
    ],
)
def test_unknown_columns(node, message, hint):
    with pytest.raises(PlanError, match=message.replace("(", r"\(").replace(")", r"\)")) as e:
        bind(plan(node), SCHEMAS)
    assert hint in e.value.hint


def test_column_of_a_stream_not_in_the_input():
    # the negation's right side cannot see S1's columns
    node = Negation(s("S1"), s("S2"), ((c("S1", "a"), c("S1", "a")),))
    with pytest.raises(PlanError, match="column S1.a is not available") as e:
        bind(plan(node), SCHEMAS)
    assert "S2.ts, S2.a, S2.c" in e.value.hint


def test_subquery_columns_are_renamed():
    inner = Project(s("S1"), (SelectItem(c("S1", "a")),))
    outer = Select(Subquery("X", inner), Cmp(">", c("X", "a"), Lit(0)))
    assert bind(plan(outer), SCHEMAS).root.schema == ("X.a",)
    wrong = Select(Subquery("X", inner), Cmp(">", c("X", "b"), Lit(0)))
    with pytest.raises(PlanError, match="X has no column 'b'") as e:
        bind(plan(wrong), SCHEMAS)
    assert e.value.hint == "its columns are: a"


def test_star_items_and_named_columns():
    star = Project(Join((s("S1"), s("S2"))), (SelectItem(Col(1, "*", "S2")),))
    assert bind(plan(star), SCHEMAS).root.schema == ("S2.ts", "S2.a", "S2.c")
    agg = Aggregate(s(), (), (AggCall("count", alias="n"),))
    having = Select(agg, Cmp(">", Col(-1, "n", ""), Lit(1)))
    assert bind(plan(having), SCHEMAS).root.schema == ("n",)
    with pytest.raises(PlanError, match="column m is not available"):
        bind(plan(Select(agg, Cmp(">", Col(-1, "m", ""), Lit(1)))), SCHEMAS)


def test_union_arity():
    good = Union((Project(s("S1"), (SelectItem(c("S1", "a")),)), Project(s("S2"), (SelectItem(c("S2", "a")),))))
    assert bind(plan(good), SCHEMAS).root.schema == ("S1.a",)
    with pytest.raises(PlanError, match="different numbers of columns"):
        bind(plan(Union((s("S1"), Project(s("S2"), (SelectItem(c("S2", "a")),))))), SCHEMAS)


def test_partition_attribute_must_exist():
    scan = Scan("S1", "S1", WindowSpec("rows", 3, partition_by="k"))
    with pytest.raises(PlanError, match="has no column 'k' to partition by"):
        bind(plan(scan), SCHEMAS)
    ok = Scan("S1", "S1", WindowSpec("rows", 3, partition_by="b"))
    assert bind(plan(ok), SCHEMAS).scans()[0].columns == ("a", "b")
