"""The join synopsis (optimizer.join_aggregate, runtime.join_panes): periodic GROUP BY over a two-window equi-join.

Every random case runs three ways: the join synopsis, the per-tuple plan
(``execute_plan(..., panes=False)``: the join materialised, then the
aggregate) and the brute-force recomputation of ``tests/oracle_plans.py`` over
the window contents at every evaluation instant; rows, their order, ``ts``
and ``sign`` must agree exactly (float inputs are multiples of 1/4, so sums
are exact in every order).
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pandas as pd
from hypothesis import given, note, settings
from hypothesis import strategies as st

from slidewise.cql import parse_plan
from slidewise.optimizer.join_aggregate import match
from slidewise.plan.bind import bind
from slidewise.runtime.plan_engine import execute_plan
from tests.oracle_plans import expected_output
from tests.streams import value_streams
from tests.test_sliding_aggregate import rows

AGGS = ["COUNT(*)", "COUNT(A.f)", "SUM(A.x)", "SUM(B.f)", "AVG(A.x)", "AVG(B.f)", "MIN(A.x)", "MAX(B.x)", "MIN(B.f)", "MAX(A.f)", "COUNT(B.x)"]
ON = {"k": "A.k = B.k", "j": "A.j = B.j", "kj": "A.k = B.k AND A.j = B.j"}
KEYS = {"k": [[], ["A.k"], ["B.k"]], "j": [[], ["B.j"]], "kj": [[], ["A.k"], ["B.j"], ["A.k", "B.j"], ["B.j", "A.k"]]}
WHERE = [None, "A.x > 0", "B.x != 2 AND A.f >= 0", "NOT (B.f < 0)"]


def stream() -> st.SearchStrategy[pd.DataFrame]:
    """One sorted stream: ties, bursts, gaps (empty windows); int and text join keys; int and float (NaN) values."""
    return value_streams(("k", "j", "x", "f"), max_len=18, max_start=8, texts="xy")


@st.composite
def queries(draw) -> str:
    on = draw(st.sampled_from(sorted(ON)))
    keys = draw(st.sampled_from(KEYS[on]))
    aggs = draw(st.lists(st.sampled_from(AGGS), min_size=1, max_size=3, unique=True))
    items = keys + [f"{a} AS c{i}" for i, a in enumerate(aggs)]
    if draw(st.booleans()):
        items = draw(st.permutations(items))
    t1, t2, slide = draw(st.integers(0, 12)), draw(st.integers(0, 12)), draw(st.integers(1, 5))
    where = draw(st.sampled_from(WHERE))
    having = draw(st.sampled_from([None, "COUNT(*) > 2"]))
    kind = draw(st.sampled_from(["RSTREAM", "RSTREAM", "ISTREAM", "DSTREAM"] if keys else ["RSTREAM"]))
    return (
        f"SELECT {kind}({', '.join(items)}) FROM A [RANGE {t1} SLIDE {slide}], B [RANGE {t2} SLIDE {slide}] WHERE {ON[on]}"
        + (f" AND {where}" if where else "")
        + (f" GROUP BY {', '.join(keys)}" if keys else "")
        + (f" HAVING {having}" if having else "")
    )


def oracle(plan, streams) -> Counter:
    bound = bind(plan, {"A": ["k", "j", "x", "f"], "B": ["k", "j", "x", "f"]})
    return Counter({(t, tuple(None if isinstance(v, float) and math.isnan(v) else v for v in vals), s): m for (t, vals, s), m in expected_output(bound, streams).items()})


@settings(max_examples=150, deadline=None)
@given(a=stream(), b=stream(), query=queries())
def test_join_synopsis_equals_the_plan_and_the_oracle(a, b, query):
    note(query)
    plan = parse_plan(query)
    streams = {"A": a, "B": b}
    synopsis = execute_plan(plan, streams, collect=True)
    assert synopsis.stats["path"].startswith("join synopsis:")
    tuples = execute_plan(plan, streams, collect=True, panes=False)
    got = rows(synopsis.results)
    assert got == rows(tuples.results)
    assert list(synopsis.results.columns) == list(tuples.results.columns)
    cols = len(plan.root.schema)
    assert Counter((r[cols], r[:cols], r[cols + 1]) for r in got) == oracle(plan, streams)


def test_a_two_stream_count_on_a_longer_stream():
    rng = np.random.default_rng(4)

    def frame(n):
        return pd.DataFrame({"ts": np.sort(rng.integers(0, 3000, n)), "k": rng.integers(0, 30, n), "x": rng.integers(0, 9, n)})

    streams = {"A": frame(3000), "B": frame(2000)}
    q = "SELECT RSTREAM(A.k, COUNT(*) AS n, SUM(B.x) AS s) FROM A [RANGE 100 SLIDE 10], B [RANGE 60 SLIDE 10] WHERE A.k = B.k GROUP BY A.k"
    res = execute_plan(parse_plan(q), streams, collect=True)
    assert res.stats["path"] == (
        "join synopsis: per-key partials of each input (running synopsis) on A.k = B.k, no join results formed, pane s=1, b=101,61; "
        "partials kept per key and input / probed per answer: running 102 / 2"
    )
    assert rows(res.results) == rows(execute_plan(parse_plan(q), streams, collect=True, panes=False).results)
    # one row by hand: key 3 at 1500
    a, b = streams["A"], streams["B"]
    wa = a[(a.ts >= 1400) & (a.ts <= 1500) & (a.k == 3)]
    wb = b[(b.ts >= 1440) & (b.ts <= 1500) & (b.k == 3)]
    row = next(r for r in rows(res.results) if r[0] == 3 and r[3] == 1500)
    assert row[1:3] == (len(wa) * len(wb), len(wa) * int(wb.x.sum()))


def test_other_shapes_keep_the_operator_network():
    for q in [
        "SELECT RSTREAM(A.k, COUNT(*) AS n) FROM A [RANGE 9 SLIDE 3], B [RANGE 9 SLIDE 3] WHERE A.k = B.k AND A.x < B.x GROUP BY A.k",  # a join filter
        "SELECT RSTREAM(A.x, COUNT(*) AS n) FROM A [RANGE 9 SLIDE 3], B [RANGE 9 SLIDE 3] WHERE A.k = B.k GROUP BY A.x",  # key not joined
        "SELECT RSTREAM(A.k, COUNT(DISTINCT A.x) AS n) FROM A [RANGE 9 SLIDE 3], B [RANGE 9 SLIDE 3] WHERE A.k = B.k GROUP BY A.k",
        "SELECT RSTREAM(A.k, MEDIAN(A.x) AS n) FROM A [RANGE 9 SLIDE 3], B [RANGE 9 SLIDE 3] WHERE A.k = B.k GROUP BY A.k",
        "SELECT RSTREAM(A.k, COUNT(*) AS n) FROM A [ROWS 9], B [RANGE 9 SLIDE 3] WHERE A.k = B.k GROUP BY A.k",
        "SELECT RSTREAM(A.k, COUNT(*) AS n) FROM A [RANGE 9], B [RANGE 9] WHERE A.k = B.k GROUP BY A.k",
        "SELECT RSTREAM(COUNT(*) AS n) FROM A [RANGE 9 SLIDE 3], B [RANGE 9 SLIDE 3]",  # no equality
        "SELECT RSTREAM(A.k, COUNT(*) AS n) FROM A [RANGE 9 SLIDE 3], B [RANGE 9 SLIDE 3], C [RANGE 9 SLIDE 3] WHERE A.k = B.k AND B.k = C.k GROUP BY A.k",
        "SELECT RSTREAM(A.k, SUM(A.x + B.x) AS n) FROM A [RANGE 9 SLIDE 3], B [RANGE 9 SLIDE 3] WHERE A.k = B.k GROUP BY A.k",
    ]:
        assert match(parse_plan(q)) is None, q
    frame = pd.DataFrame({"ts": [1, 2], "k": [1.5, 1.5], "x": [1, 2]})  # float join keys
    res = execute_plan(parse_plan("SELECT RSTREAM(COUNT(*) AS n) FROM A [RANGE 9 SLIDE 3], B [RANGE 9 SLIDE 3] WHERE A.k = B.k"), {"A": frame, "B": frame}, collect=True)
    assert "path" not in res.stats and rows(res.results) == [(4, 3, 1)]


def test_explain_shows_the_join_synopsis(capsys):
    from slidewise.cli import main

    q = "SELECT RSTREAM(A.k, COUNT(*) AS n, MAX(B.x) AS m) FROM A [RANGE 99 SLIDE 10], B [RANGE 99 SLIDE 10] WHERE A.k = B.k GROUP BY A.k"
    assert main(["explain", q]) == 0
    assert (
        "path         join synopsis: per-key partials of each input (running synopsis and interval synopsis) on A.k = B.k, no join results formed, "
        "pane s=10, b=10,10; partials kept per key and input / probed per answer: running 11 / 2, interval 29 / 2"
    ) in capsys.readouterr().out


def test_timestamps_as_join_column_and_argument():
    rng = np.random.default_rng(2)
    a, b = ({"ts": np.sort(rng.integers(0, 100, 200)), "k": rng.integers(0, 5, 200)} for _ in range(2))
    streams = {"A": pd.DataFrame(a), "B": pd.DataFrame(b)}
    for q in [
        "SELECT RSTREAM(A.k, MAX(A.ts) AS m, MIN(B.ts) AS mb, COUNT(*) AS n) FROM A [RANGE 20 SLIDE 5], B [RANGE 10 SLIDE 5] WHERE A.k = B.k GROUP BY A.k",
        "SELECT RSTREAM(A.ts, COUNT(*) AS n) FROM A [RANGE 20 SLIDE 5], B [RANGE 10 SLIDE 5] WHERE A.ts = B.ts GROUP BY A.ts",
    ]:
        res = execute_plan(parse_plan(q), streams, collect=True)
        assert res.stats["path"].startswith("join synopsis:")
        assert rows(res.results) == rows(execute_plan(parse_plan(q), streams, collect=True, panes=False).results) != []
