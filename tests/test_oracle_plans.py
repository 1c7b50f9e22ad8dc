"""Hand-computed examples pinning tests/oracle_plans.py (Golab's thesis Fig. 3.1–3.4 style).

Rows are written ``(ts, vals, sign)``; a stream row is ``(ts, a, b)`` and a
scan's values are ``(ts, a, b)`` too.
"""

from collections import Counter

import pytest

from slidewise.errors import PlanError, SourceError
from slidewise.plan.expr import BinOp, Cmp, Lit
from slidewise.plan.logical import AggCall, Aggregate, Distinct, Join, Negation, Project, Scan, Select, Union
from slidewise.plan.query import WindowSpec
from tests.oracle_plans import answer_at, answers, expected_output
from tests.plan_cases import c, eq, frame, item, plan, rng, rows, star, stream, table, table_frame, windowed_subquery_plan


def out(*rows_):
    return Counter(rows_)


def test_selection_is_weakest_non_monotonic():
    # S1 [RANGE 3], a = 1:   t0 |====|      leaves at 4+1
    #                        t4         |====...
    q = Select(stream("S1", rng(3)), Cmp("=", c("S1", "a"), Lit(1)))
    s = {"S1": frame([(1, 1, 0), (2, 2, 0), (4, 1, 5), (6, 2, 0)])}
    assert expected_output(plan(q, "rstream"), s) == out((1, (1, 1, 0), 1), (4, (4, 1, 5), 1), (5, (1, 1, 0), -1))
    assert expected_output(plan(q, "istream"), s) == out((1, (1, 1, 0), 1), (4, (4, 1, 5), 1))
    assert expected_output(plan(q, "dstream"), s) == out((5, (1, 1, 0), -1))


def test_join_results_expire_at_the_earliest_member_expiration():
    # S1 [RANGE 4] ⋈ S2 [RANGE 2] on a: r1 = (S1@0, S2@1) lives 1..3, r2 = (S1@3, S2@4) lives 4..6
    q = Join((stream("S1", rng(4)), stream("S2", rng(2))), (eq(("S1", "a"), ("S2", "a")),))
    s = {"S1": frame([(0, 1, 0), (3, 2, 0)]), "S2": frame([(1, 1, 0), (4, 2, 0), (8, 9, 9)])}
    r1, r2 = (0, 1, 0, 1, 1, 0), (3, 2, 0, 4, 2, 0)
    assert expected_output(plan(q, "rstream"), s) == out((1, r1, 1), (4, r1, -1), (4, r2, 1), (7, r2, -1))
    assert answer_at(plan(q), 5, s) == Counter({r2: 1})


def test_distinct_replaces_an_expiring_value_by_a_younger_duplicate():
    # Fig. 3.1(c): a=1 at 0 expires (4) but a=1 at 2 keeps value 1 until 6
    q = Distinct(Project(stream("S1", rng(3)), (item(c("S1", "a")),)))
    s = {"S1": frame([(0, 1, 0), (2, 1, 0), (3, 2, 0), (7, 1, 0)])}
    assert expected_output(plan(q, "rstream"), s) == out((0, (1,), 1), (3, (2,), 1), (6, (1,), -1), (7, (2,), -1), (7, (1,), 1))
    assert expected_output(plan(q, "istream"), s) == out((0, (1,), 1), (3, (2,), 1), (7, (1,), 1))


def _negation():
    q = Negation(stream("S1", rng(5)), stream("S2", rng(2)), (eq(("S1", "a"), ("S2", "a")),))
    s = {"S1": frame([(0, 1, 0)]), "S2": frame([(2, 1, 0), (9, 7, 0)])}
    return q, s


def test_negation_deletes_prematurely_and_reinserts_when_the_right_tuple_expires():
    # S1@0 [0..5] minus S2@2 [2..4]: in at 0, deleted at 2 (premature), back at 5, expires at 6
    q, s = _negation()
    r = (0, 1, 0)
    assert expected_output(plan(q, "rstream"), s) == out((0, r, 1), (2, r, -1), (5, r, 1), (6, r, -1))


def test_periodic_negation_restore_reports_the_short_lived_reinsertion():
    # evaluations at 0, 3, 6, 9: the reinsertion at 5 is gone by 6
    q, s = _negation()
    r = (0, 1, 0)
    assert answers(plan(q, slide=3), s) == {0: Counter({r: 1}), 3: Counter(), 6: Counter(), 9: Counter()}
    assert expected_output(plan(q, "istream", slide=3), s) == out((0, r, 1))
    assert expected_output(plan(q, "istream", restore=True, slide=3), s) == out((0, r, 1), (6, r, 1))
    assert expected_output(plan(q, "dstream", slide=3), s) == out((3, r, -1))


def test_except_is_bag_difference():
    left = Project(stream("S1", rng(10)), (item(c("S1", "a")),))
    right = Project(stream("S2", rng(10)), (item(c("S2", "a")),))
    s = {"S1": frame([(0, 1, 0), (0, 1, 1), (0, 2, 0)]), "S2": frame([(1, 1, 5), (1, 3, 5)])}
    assert answers(plan(Negation(left, right, mode="except")), s) == {0: Counter({(1,): 2, (2,): 1}), 1: Counter({(1,): 1, (2,): 1})}


def test_anti_join_without_correlation_needs_an_empty_right_side():
    q = Negation(stream("S1", rng(10)), stream("S2", rng(1)), ())
    s = {"S1": frame([(0, 1, 0)]), "S2": frame([(1, 5, 5), (4, 5, 5)])}
    assert expected_output(plan(q, "rstream"), s) == out(((0, (0, 1, 0), 1)), (1, (0, 1, 0), -1), (3, (0, 1, 0), 1), (4, (0, 1, 0), -1))


def test_group_by_sum_replaces_the_value_of_its_group():
    # Fig. 3.1(d): SUM(b) GROUP BY a over S1 [RANGE 3]
    q = Aggregate(stream("S1", rng(3)), (item(c("S1", "a")),), (AggCall("sum", c("S1", "b"), alias="s"),))
    s = {"S1": frame([(0, 1, 5), (1, 1, 2), (2, 2, 1), (4, 1, 1)])}
    assert expected_output(plan(q, "rstream"), s) == out((0, (1, 5), 1), (1, (1, 5), -1), (1, (1, 7), 1), (2, (2, 1), 1), (4, (1, 7), -1), (4, (1, 3), 1))
    assert expected_output(plan(q, "istream"), s) == out((0, (1, 5), 1), (1, (1, 7), 1), (2, (2, 1), 1), (4, (1, 3), 1))


def test_aggregate_functions_and_the_empty_group():
    aggs = (
        AggCall("count", None, alias="n"),
        AggCall("avg", c("S1", "b"), alias="mean"),
        AggCall("min", c("S1", "b"), alias="lo"),
        AggCall("max", c("S1", "b"), alias="hi"),
        AggCall("count", c("S1", "a"), distinct=True, alias="nd"),
    )
    q = Aggregate(stream("S1", rng(1)), (), aggs)
    s = {"S1": frame([(0, 1, 1), (0, 1, 2), (1, 2, 6), (5, 0, 0)])}
    got = answers(plan(q), s)
    assert got[0] == Counter({(2, 1.5, 1, 2, 1): 1})
    assert got[1] == Counter({(3, 3.0, 1, 6, 2): 1})
    assert got[2] == Counter({(1, 6.0, 6, 6, 1): 1})
    assert got[3] == Counter()  # no row for an empty input without GROUP BY
    assert isinstance(next(iter(got[0]))[1], float)


def test_count_window_expires_by_later_arrivals_only():
    # S1 [ROWS 2]: the arrival at 2 pushes t0 out; two arrivals at 3 push t1 and t2 out at once
    q = stream("S1", rows(2))
    s = {"S1": frame([(0, 0, 0), (1, 0, 1), (2, 0, 2), (3, 0, 3), (3, 0, 4)])}
    assert expected_output(plan(q, "dstream"), s) == out((2, (0, 0, 0), -1), (3, (1, 0, 1), -1), (3, (2, 0, 2), -1))
    counted = Aggregate(q, (), (AggCall("count", None, alias="n"),))
    assert expected_output(plan(counted, "rstream"), s) == out((0, (1,), 1), (1, (1,), -1), (1, (2,), 1))


def test_count_window_tuple_evicted_within_its_own_instant_is_never_output():
    q = stream("S1", rows(1))
    s = {"S1": frame([(3, 1, 0), (3, 2, 0)])}
    assert expected_output(plan(q, "rstream"), s) == out((3, (3, 2, 0), 1))


def test_partitioned_count_window():
    q = stream("S1", rows(1, partition_by="b"))
    s = {"S1": frame([(0, 0, 0), (1, 1, 1), (2, 2, 0)])}
    assert answer_at(plan(q), 2, s) == Counter({(1, 1, 1): 1, (2, 2, 0): 1})


def _nrr_case(kind):
    q = Join((stream("S1", rng(10)), table(kind)), (eq(("S1", "a"), ("R", "a")),))
    s = {"S1": frame([(1, 1, 0), (2, 2, 0), (3, 2, 0), (4, 1, 0), (5, 2, 0)])}
    t = {"R": table_frame([(0, "+", 1, 100), (3, "-", 1, 0), (3, "+", 2, 200)])}
    return q, s, t


def test_nrr_update_affects_only_later_stream_tuples():
    q, s, t = _nrr_case("nrr")
    assert expected_output(plan(q, "rstream"), s, t) == out((1, (1, 1, 0, 1, 100), 1), (3, (3, 2, 0, 2, 200), 1), (5, (5, 2, 0, 2, 200), 1))


def test_retroactive_table_update_changes_earlier_results():
    q, s, t = _nrr_case("table")
    assert expected_output(plan(q, "rstream"), s, t) == out(
        (1, (1, 1, 0, 1, 100), 1), (3, (1, 1, 0, 1, 100), -1), (3, (2, 2, 0, 2, 200), 1), (3, (3, 2, 0, 2, 200), 1), (5, (5, 2, 0, 2, 200), 1)
    )


def test_nrr_rejects_a_reused_key_but_a_retroactive_table_allows_it():
    ups = {"R": table_frame([(0, "+", 1, 1), (2, "-", 1, 0), (3, "+", 1, 2)])}
    s = {"S1": frame([(4, 1, 0)])}
    with pytest.raises(SourceError, match="reused"):
        expected_output(plan(Join((stream("S1", rng(9)), table("nrr")), (eq(("S1", "a"), ("R", "a")),))), s, ups)
    got = expected_output(plan(Join((stream("S1", rng(9)), table("table")), (eq(("S1", "a"), ("R", "a")),))), s, ups)
    assert got == out((4, (4, 1, 0, 1, 2), 1))


def _short_lived():
    # r1 = (S1@1, S2@3) lives only at 3 (S1@1 leaves at 4); r2 = (S1@6, S2@7) lives 7..8
    q = Join((stream("S1", rng(2, slide=4)), stream("S2", rng(2, slide=4))), (eq(("S1", "a"), ("S2", "a")),))
    s = {"S1": frame([(1, 1, 0), (6, 2, 0)]), "S2": frame([(3, 1, 0), (7, 2, 0)])}
    return q, s, (1, 1, 0, 3, 1, 0), (6, 2, 0, 7, 2, 0)


def test_restore_reports_short_lived_results_no_restore_omits_them():
    q, s, r1, r2 = _short_lived()
    assert expected_output(plan(q, "istream", slide=4), s) == out((8, r2, 1))
    assert expected_output(plan(q, "istream", restore=True, slide=4), s) == out((4, r1, 1), (8, r2, 1))
    assert expected_output(plan(q, "rstream", slide=4), s) == out((8, r2, 1))
    assert expected_output(plan(q, "rstream", restore=True, slide=4), s) == out((4, r1, 1), (8, r2, 1))
    assert expected_output(plan(q, "istream"), s) == out((3, r1, 1), (7, r2, 1))  # eager: both, on time


def test_dstream_has_no_restore_form():
    q, s, _, _ = _short_lived()
    with pytest.raises(PlanError):
        expected_output(plan(q, "dstream", restore=True, slide=4), s)


def test_wstream_windows_the_inserted_rows():
    q = Select(stream("S1", rng(10)), Cmp("=", c("S1", "a"), Lit(1)))
    s = {"S1": frame([(0, 1, 0), (1, 1, 0), (2, 0, 0), (3, 1, 0)])}
    t0, t1, t3 = (0, 1, 0), (1, 1, 0), (3, 1, 0)
    assert expected_output(plan(q, "wstream", window=rows(2)), s) == out((0, t0, 1), (1, t1, 1), (3, t3, 1), (3, t0, -1))
    assert expected_output(plan(q, "wstream", window=rng(1)), s) == out((0, t0, 1), (1, t1, 1), (2, t0, -1), (3, t1, -1), (3, t3, 1))


def test_union_is_a_bag_union_and_project_expands_star():
    left = Project(stream("S1", rng(1)), (star("S1"), item(BinOp("+", c("S1", "b"), Lit(1)), "b1")))
    right = Project(stream("S2", rng(1)), (star("S2"), item(c("S2", "b"), "b1")))
    s = {"S1": frame([(0, 1, 1)]), "S2": frame([(0, 1, 1), (0, 1, 1)])}
    assert answers(plan(Union((left, right))), s)[0] == Counter({(0, 1, 1, 2): 1, (0, 1, 1, 1): 2})


def test_internal_windows_make_a_join_monotonic():
    q = Join((stream("S1", rng(1, internal=True)), stream("S2", rng(1, internal=True))), (eq(("S1", "a"), ("S2", "a")),))
    s = {"S1": frame([(0, 1, 0), (5, 1, 0)]), "S2": frame([(1, 1, 0), (3, 1, 0)])}
    r = (0, 1, 0, 1, 1, 0)
    assert expected_output(plan(q, "rstream"), s) == out((1, r, 1))
    assert answer_at(plan(q), 5, s) == Counter({r: 1})


def test_join_of_internal_and_external_windows_expires_with_the_external_member():
    # S1@0 [RANGE 2 INTERNAL] leaves its window at 3, S2@1 [RANGE 3] at 5: the result lives 1..4
    q = Join((stream("S1", rng(2, internal=True)), stream("S2", rng(3))), (eq(("S1", "a"), ("S2", "a")),))
    s = {"S1": frame([(0, 1, 0), (9, 0, 0)]), "S2": frame([(1, 1, 0)])}
    r = (0, 1, 0, 1, 1, 0)
    assert expected_output(plan(q, "rstream"), s) == out((1, r, 1), (5, r, -1))
    external = Join((stream("S1", rng(2)), stream("S2", rng(3))), (eq(("S1", "a"), ("S2", "a")),))
    assert expected_output(plan(external, "rstream"), s) == out((1, r, 1), (3, r, -1))


def test_aggregate_over_internal_windows_keeps_every_value():
    # Fig. 3.2: SUM over an internal count window: every value stays in the answer
    q = Aggregate(stream("S1", rows(2, internal=True)), (), (AggCall("sum", c("S1", "b"), alias="s"),))
    s = {"S1": frame([(0, 0, 1), (1, 0, 2), (2, 0, 4)])}
    assert answer_at(plan(q), 2, s) == Counter({(1,): 1, (3,): 1, (6,): 1})


def test_window_over_a_monotonic_subquery():
    # SELECT SUM(X.s) FROM (SELECT SUM(b) AS s FROM S1 [NOW INTERNAL]) [ROWS 2] AS X (Golab's thesis §3.4)
    inner = WindowSpec("now", 0, internal=True)
    s = {"S1": frame([(0, 0, 1), (0, 0, 2), (1, 0, 4), (2, 0, 8)])}
    assert expected_output(windowed_subquery_plan(inner, rows(2), "istream"), s) == out((0, (3,), 1), (1, (7,), 1), (2, (12,), 1))
    assert expected_output(windowed_subquery_plan(inner, rows(2), "rstream"), s) == out((0, (3,), 1), (1, (3,), -1), (1, (7,), 1), (2, (7,), -1), (2, (12,), 1))


def test_no_input_no_output_and_unbound_plans_are_rejected():
    q = stream("S1", rng(3))
    assert expected_output(plan(q, "rstream"), {"S1": frame([])}) == Counter()
    unbound = plan(Scan("S1", "S1", rng(3)))
    with pytest.raises(PlanError):
        expected_output(unbound, {"S1": frame([])})
