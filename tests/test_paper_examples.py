"""Golab & Özsu §3.1, Tables 2 and 3: why lazy NLJs need timestamp checks.

Three windows of 100 time units, an equality on ``attr`` (column ``a`` here),
global order S1, S2, S3, lazy re-evaluation at time 210 (D = 30, so the S3
tuples 195 and 205 are both new at 210 and nothing older joins earlier).
"""

from __future__ import annotations

import dataclasses

from slidewise.operators.joins import get_algorithm
from slidewise.plan.query import WindowSpec
from tests.oracle import oracle
from tests.streams import build_tuples, chunks, common_key, query_of, run_operator

T, D = 100, 30
TABLE_2 = [(0, 90), (0, 100), (1, 150), (1, 180), (2, 195), (2, 205)]  # (stream, ts), attr = 1

INCORRECT = {(s1, s2, s3) for s1 in (90, 100) for s2 in (150, 180) for s3 in (195, 205)}
CORRECT = {(100, 150, 195), (100, 180, 195)}


def table2(slide):
    query = query_of([WindowSpec("range", T, slide=slide)] * 3, common_key(3))
    tuples = build_tuples([(s, ts, 1, 0, 0) for s, ts in TABLE_2])
    return query, tuples


def as_ts(tuples, results):
    """Result keys -> (S1.ts, S2.ts, S3.ts), checking each result is produced once."""
    ts_of = {t.pos: t.ts for t in tuples}
    assert all(c == 1 for c in results.values())
    return {tuple(ts_of[p] for p in members) for (members, *_rest) in results}


# Windows at the evaluation instant NOW = 210 (T = 100):
#
#   time     90 100        150      180     195 205 210
#   S1        o   o
#   S2                      o        o
#   S3                                       *   *        (* = new since 180)
#
#   new 195 sees ts >= 95 :   [ 95 ........................ 195]   S1@100, S2@150, S2@180
#   new 205 sees ts >= 105:        [105 ........................ 205]   no S1 tuple left
#
# The naive lazy NLJ joins each new S3 tuple with everything still buffered
# (expiration runs only after an evaluation), so S1@90 and, for 205, S1@100 join
# although they had expired when the S3 tuple arrived: 2 x 2 x 2 = 8 results.


def test_naive_lazy_returns_the_incorrect_results_of_table_3():
    query, tuples = table2(D)
    op = get_algorithm("naive")(query)
    got = run_operator(op, tuples, chunk_size=1)
    assert as_ts(tuples, got) == INCORRECT
    assert len(got) == 8
    # every result comes from one evaluation: its origin is a new S3 tuple (ts 195 or 205)
    assert {ts for (_m, ts, _e, _s) in got} == {195, 205}


def test_correct_algorithms_return_the_two_correct_results():
    query, tuples = table2(D)
    assert as_ts(tuples, oracle(query, tuples)) == CORRECT
    for name in ("lazy-restore", "general-lazy"):
        restore_query = dataclasses.replace(query, restore=(name == "general-lazy"))
        got = run_operator(get_algorithm(name)(restore_query), tuples, chunk_size=2)
        assert as_ts(tuples, got) == CORRECT, name
    eager_query, _ = table2(None)
    for name in ("naive", "nlj", "nlj-lazy-expiration"):
        got = run_operator(get_algorithm(name)(eager_query), tuples, chunk_size=1)
        assert as_ts(tuples, got) == CORRECT, name


def test_both_correct_results_are_short_lived_at_210():
    """Both correct results expire at 200 (S1@100 + 100) < 210: no-restore omits them."""
    query, tuples = table2(D)
    assert {exp for (_m, _t, exp, _s) in oracle(query, tuples)} == {200}
    assert oracle(query, tuples, restore=False) == {}
    assert run_operator(get_algorithm("lazy")(query), tuples, chunk_size=3) == {}
    assert run_operator(get_algorithm("general-lazy")(query), tuples, chunk_size=3) == {}


def test_evaluation_happens_once_time_passes_210():
    """The 8 results are emitted by the chunk whose tuple first passes 210, not before."""
    query, _ = table2(D)
    tuples = build_tuples([(s, ts, 1, 0, 0) for s, ts in TABLE_2] + [(0, 240, 9, 0, 0)])
    op = get_algorithm("naive")(query)
    parts = chunks(3, tuples, 6)  # the six Table 2 tuples, then the sentinel at 240
    assert len(op.process(parts[0])) == 0
    assert len(op.process(parts[1])) == 8
    assert len(op.finish()) == 0


def test_eager_comparison_counts_on_table_2():
    """§3.2 vs §3.1 on Table 2 (eager, common attribute, one comparison per scanned tuple).

    nlj: S2@150 and S2@180 each scan S1 (2 + 2); S3@195 scans S1 = {100} (1) and,
    for its match, S2 (2); S3@205 finds S1 empty -> 7.
    naive: only S3@195 joins: for u in S1 = {100}, S2 ⋈ {195} costs 2 and probing
    its 2 results with u costs 2 -> 4 (S1 arrivals recompute S2 ⋈ S3 = empty).
    """
    query, tuples = table2(None)
    nlj = get_algorithm("nlj")(query)
    run_operator(nlj, tuples, 1)
    naive = get_algorithm("naive")(query)
    run_operator(naive, tuples, 1)
    assert (nlj.comparisons, naive.comparisons) == (7, 4)
