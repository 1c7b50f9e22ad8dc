"""Update-pattern simplification (Golab's thesis §3.5.3): negation pulled up vs pushed down, and its costs.

Query 4 of §3.6.5: Link1 − Link2 on the source address, joined with the ftp
tuples of Link3 on the source address::

    pulled up (Fig. 3.5 left)          pushed down (Fig. 3.5 right)
         −                                   ⋈
       /   \\                               /   \\
      ⋈    L2                             −    σ(L3)
     / \\                                 / \\
    L1  σ(L3)                           L1  L2
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slidewise.errors import OptionError
from slidewise.optimizer.rewrite import CHEAP_EXPIRATION, algebra, alternatives, choose_plan, edge_cost, flows, plan_cost, plan_stats
from slidewise.plan.bind import bind
from slidewise.plan.expr import Cmp, Col, Lit
from slidewise.plan.logical import Join, Negation, Output, Pattern, Plan, Scan, Select, walk
from slidewise.plan.patterns import annotate
from slidewise.plan.query import WindowSpec

ALIASES = ("L1", "L2", "L3")
PULLED, PUSHED = "RSTREAM((L1 ⋈ σ(L3)) − L2)", "RSTREAM((L1 − L2) ⋈ σ(L3))"


def col(alias: str, attr: str) -> Col:
    return Col(ALIASES.index(alias), attr, alias)


def query4(size: int = 100, pushed: bool = False, third: Scan | None = None) -> Plan:
    l1, l2 = (Scan(a, a, WindowSpec("range", size)) for a in ("L1", "L2"))
    l3 = third or Select(Scan("L3", "L3", WindowSpec("range", size)), Cmp("=", col("L3", "proto"), Lit("ftp")))
    on = ((col("L1", "src"), col("L2", "src")),)
    join_on = ((col("L1", "src"), col("L3", "src")),)
    if pushed:
        root = Join((Negation(l1, l2, on), l3), join_on)
    else:
        root = Negation(Join((l1, l3), join_on), l2, on)
    return Plan(Output(root, "rstream"), ALIASES)


def texts(plans):
    return [algebra(p.root) for p in plans]


# --- alternatives --------------------------------------------------------------------------------


def test_query4_both_rewritings_from_either_form():
    assert texts(alternatives(query4())) == [PULLED, PUSHED]
    assert texts(alternatives(query4(pushed=True))) == [PUSHED, PULLED]


def test_query4_rewritings_are_the_same_query():
    """Structural check: same scans, predicates, negation pairs and output columns."""
    up, down = alternatives(query4())
    schemas = {"L1": ["ts", "src", "dst"], "L2": ["ts", "src", "dst"], "L3": ["ts", "src", "proto"]}

    def parts(plan):
        nodes = list(walk(plan.root))
        return (
            sorted(s.alias for s in plan.scans()),
            sorted(str(n.predicate) for n in nodes if isinstance(n, Select)),
            sorted(f"{a}={b}" for n in nodes if isinstance(n, Negation) for a, b in n.on),
            sorted(f"{a}={b}" for n in nodes if isinstance(n, Join) for a, b in n.equalities),
        )

    assert parts(up) == parts(down)
    assert bind(up, schemas).root.schema == bind(down, schemas).root.schema == ("L1.ts", "L1.src", "L1.dst", "L3.ts", "L3.src", "L3.proto")
    assert [annotate(p.root)[p.root.child] for p in (up, down)] == [Pattern.STR, Pattern.STR]


def test_rewritings_give_the_same_answers():
    """Execution check: both rewritings against the reference semantics on random small streams."""
    from tests import oracle_plans as oracle
    from tests import plan_cases as cases

    def build(pushed):
        s1, s2, s3 = (cases.stream(a, cases.rng(4)) for a in ("S1", "S2", "S3"))
        on, join_on = (cases.eq(("S1", "a"), ("S2", "a")),), (cases.eq(("S1", "a"), ("S3", "a")),)
        root = Join((Negation(s1, s2, on), s3), join_on) if pushed else Negation(Join((s1, s3), join_on), s2, on)
        return cases.plan(root, "rstream")

    up = build(False)
    assert texts(alternatives(up))[1] == algebra(build(True).root)

    @given(cases.stream_frames())
    def check(frames):
        results = [oracle.expected_output(p, frames) for p in alternatives(up)]
        assert results[0] == results[1]

    check()


def test_negation_correlated_with_both_join_inputs_stays_above():
    plan = query4()
    neg = plan.root.child
    both = replace(neg, on=neg.on + ((col("L3", "src"), col("L2", "dst")),))
    assert texts(alternatives(replace(plan, root=Output(both, "rstream")))) == [algebra(plan.root)]


def test_negation_is_not_pushed_below_a_relation_join():
    """§3.5.3: the input of an NRR (or table) join must not be strict non-monotonic."""
    plan = query4(third=Scan("L3", "L3", kind="nrr"))
    assert len(alternatives(plan)) == 1
    pushed = query4(third=Scan("L3", "L3", kind="nrr"), pushed=True)
    assert len(alternatives(pushed)) == 2  # pulling it up above the NRR join is fine


def test_except_is_not_moved():
    plan = query4()
    neg = plan.root.child
    ex = Negation(neg.left, neg.right, (), "except")
    assert len(alternatives(replace(plan, root=Output(ex, "rstream")))) == 1


def test_three_way_join_negation_moves_to_the_correlated_input():
    s = {a: Scan(a, a, WindowSpec("range", 10)) for a in ("A", "B", "C", "D")}
    names = ("A", "B", "C", "D")
    c = lambda a: Col(names.index(a), "k", a)  # noqa: E731
    join = Join((s["A"], s["B"], s["C"]), ((c("A"), c("B")), (c("B"), c("C"))))
    plan = Plan(Output(Negation(join, s["D"], ((c("B"), c("D")),))), names)
    assert texts(alternatives(plan)) == ["ISTREAM((A ⋈ B ⋈ C) − D)", "ISTREAM(A ⋈ (B − D) ⋈ C)"]


# --- costs ---------------------------------------------------------------------------------------


def ftp_stats(ftp_values: float) -> dict:
    """Join selectivity set by how rare ftp is: σ(L3) keeps 1/ftp_values of Link3."""
    return {"L3": {"distinct.proto": ftp_values}}


def test_edge_costs_per_strategy():
    plan = query4()
    f = flows(plan)[plan.scans()[0]]
    r = f.rate
    assert edge_cost(f, Pattern.WKS, "nt") == 2 * r
    assert edge_cost(f, Pattern.WKS, "upa") == pytest.approx(r * (1 + CHEAP_EXPIRATION))
    assert edge_cost(f, Pattern.STR, "upa") <= 2 * r
    assert edge_cost(f, Pattern.MONO, "nt") == r


def test_upa_pulls_negation_up_when_the_join_is_selective():
    best, report = choose_plan(query4(), ftp_stats(50), "upa")
    assert report["chosen"] == algebra(best.root) == PULLED
    assert report["costs"][PULLED] < report["costs"][PUSHED]
    assert [a["plan"] for a in report["alternatives"]] == [PULLED, PUSHED]
    assert "UPA" in report["why"]


def test_upa_pushes_negation_down_when_the_join_output_is_large():
    _, report = choose_plan(query4(), ftp_stats(1), "upa")
    assert report["chosen"] == PUSHED


@pytest.mark.parametrize("ftp_values", [1, 2, 4, 5, 8, 50])
def test_nt_prefers_the_cheaper_relational_order(ftp_values):
    """Under NT every edge carries each tuple twice: only the tuple rates decide."""
    stats = ftp_stats(ftp_values)
    relational = {algebra(p.root): sum(f.rate for n, f in flows(p, stats).items() if n is not p.root) for p in alternatives(query4())}
    _, report = choose_plan(query4(), stats, "nt")
    assert report["chosen"] == min(relational, key=relational.get)


def test_upa_pulls_up_where_nt_would_push_down():
    """§3.6.5: pull-up can win under UPA although the relational order favours push-down."""
    stats = ftp_stats(5)
    assert choose_plan(query4(), stats, "nt")[1]["chosen"] == PUSHED
    assert choose_plan(query4(), stats, "upa")[1]["chosen"] == PULLED


def test_premature_fraction_matters_for_direct():
    low = plan_cost(query4(), ftp_stats(5), "direct", premature=0.0)[0]
    high = plan_cost(query4(), ftp_stats(5), "direct", premature=0.9)[0]
    assert high > low


def test_plan_stats_forms_and_errors():
    assert plan_stats(["L1:rate=10,distinct=500"], query4()) == {"L1": {"rate": 10.0, "distinct": 500.0}}
    assert plan_stats({"L1": {"rate": 2}}) == {"L1": {"rate": 2.0}}
    with pytest.raises(OptionError, match="unknown stream 'Z'"):
        plan_stats(["Z:rate=1"], query4())
    with pytest.raises(OptionError, match="bad value"):
        plan_stats(["L1:rate=fast"], query4())
    with pytest.raises(OptionError, match="unknown strategy"):
        plan_cost(query4(), None, "eager")


@given(st.floats(0.5, 200), st.floats(0.1, 10), st.sampled_from(["nt", "direct", "upa"]))
def test_choice_is_the_cheapest_alternative(ftp_values, rate, strategy):
    stats = {"L1": {"rate": rate}, **ftp_stats(ftp_values)}
    best, report = choose_plan(query4(), stats, strategy)
    assert report["costs"][report["chosen"]] == min(report["costs"].values())
    assert plan_cost(best, stats, strategy)[0] == pytest.approx(min(report["costs"].values()))
