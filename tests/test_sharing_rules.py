"""The sharing rules of Golab's thesis (§8.3–8.4) as applied by run_many, and predicate covers (§8.3.3).

The covers take the thesis's own queries over a stream of packet headers: SUM(length) for
protocol=TCP, protocol=UDP and their OR (a disjoint cover), MAX(length) for protocol=TCP,
user=U and their OR (a cover of a duplicate-insensitive aggregate), and SUM over all but
ICMP (a disjoint supercover: the whole minus a region). Every query's rows equal its run alone.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, note, settings
from hypothesis import strategies as st

import slidewise
from slidewise.optimizer.sharing import THESIS_RULES, decisions, share
from tests.test_run_many import _spec
from tests.test_sliding_aggregate import rows

W = "FROM P [RANGE 9 SLIDE 5]"
THESIS = {
    "q1": f"SELECT RSTREAM(SUM(P.len) AS s) {W} WHERE P.proto = 'TCP'",
    "q2": f"SELECT RSTREAM(SUM(P.len) AS s) {W} WHERE P.proto = 'UDP'",
    "q3": f"SELECT RSTREAM(SUM(P.len) AS s) {W} WHERE P.proto = 'TCP' OR P.proto = 'UDP'",
    "q4": "SELECT RSTREAM(MAX(P.len) AS m) FROM P [RANGE 14 SLIDE 5] WHERE P.proto = 'TCP'",
    "q5": "SELECT RSTREAM(MAX(P.len) AS m) FROM P [RANGE 4 SLIDE 5] WHERE P.user = 'U'",
    "q6": f"SELECT RSTREAM(MAX(P.len) AS m) {W} WHERE P.proto = 'TCP' OR P.user = 'U'",
    "q7": f"SELECT RSTREAM(SUM(P.len) AS s, AVG(P.len) AS a) {W} WHERE P.proto != 'ICMP'",
    "q8": f"SELECT RSTREAM(COUNT(*) AS n) {W} WHERE P.proto != 'ICMP' AND P.len > 3",
}


def packets(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {"ts": np.sort(rng.integers(0, 60, n)), "proto": rng.choice(["TCP", "UDP", "ICMP"], n), "user": rng.choice(["U", "V"], n), "len": rng.integers(0, 10, n)}
    )


def test_thesis_covers_share_one_synopsis_and_equal_each_query_alone():
    frame = packets(200)
    many = slidewise.run_many(THESIS, {"P": frame}, chunk_rows=37)
    [group] = many.stats["shared"]
    assert group["queries"] == list(THESIS) and group["synopsis"] == "P, pane s=5, regions of 7 predicates"
    assert group["rules"] == ["SS1", "SS4", "CS1", "CS2", "CS6", "CS7"]
    for name, q in THESIS.items():
        assert rows(many.results[name].results) == rows(slidewise.run(q, {"P": frame}).results), name
    covers = {n: r.stats["cover"] for n, r in many.results.items()}
    assert covers["q7"] == covers["q3"] == "supercover" and covers["q1"] == "disjoint"


def test_rules_not_applied_are_reported_with_their_reason():
    many = slidewise.run_many({"a": THESIS["q1"], "b": THESIS["q1"].replace("SUM(P.len) AS s", "AVG(P.len) AS s")}, {"P": packets(50)})
    rules = many.stats["rules"]
    assert list(rules) == ["SS1", "SS2", "SS3", "SS4", "CS1", "CS2", "CS3", "CS4", "CS5", "CS6", "CS7", "CS8"]
    assert [n for n, r in rules.items() if r["applied"]] == ["SS1", "SS2", "CS1", "CS3"]
    for name in ("SS3", "CS4", "CS5", "CS8"):
        assert not rules[name]["applied"] and rules[name]["not_applied"] == THESIS_RULES[name].not_applied
    assert rules["SS3"]["not_applied"].startswith("aggregates over joins do not take the pane path")


def _group(queries: dict[str, str]):
    [g] = share({n: _spec(q) for n, q in queries.items()})
    return g


def test_each_rule_on_its_case():
    q = "SELECT RSTREAM(S.a, {}) FROM S [RANGE {} SLIDE 5] GROUP BY S.a"
    assert decisions(_group({"x": q.format("COUNT(*) AS n", 9)})) == []  # one query: nothing shared
    # SS1 + CS1: windows of 2 and 4 panes over one running synopsis
    assert decisions(_group({"x": q.format("SUM(S.b) AS n", 9), "y": q.format("COUNT(*) AS n", 19)})) == ["SS1", "CS1"]
    # SS2 but not CS3: AVG from SUM's partials over a different window; CS3: the same window
    assert decisions(_group({"x": q.format("SUM(S.b) AS n", 9), "y": q.format("AVG(S.b) AS n", 19)})) == ["SS1", "SS2", "CS1"]
    assert "CS3" in decisions(_group({"x": q.format("SUM(S.b) AS n", 9), "y": q.format("AVG(S.b) AS n", 9)}))
    # CS2: MIN over short windows probes the basic interval synopsis (panes alone)
    assert "CS2" in decisions(_group({"x": q.format("MIN(S.b) AS n", 9), "y": q.format("MAX(S.b) AS n", 4)}))
    # SS4: different WHERE on a non-key attribute, a cover
    same = q.format("MIN(S.b) AS n", 9).replace("GROUP BY", "WHERE S.b > 2 GROUP BY")
    g = _group({"x": same, "y": same.replace("SLIDE 5", "SLIDE 10")})
    assert not g.covered and "SS4" not in decisions(g) and str(g.predicate()) == "S.b > 2"
    g = _group({"x": q.format("MIN(S.b) AS n", 9), "y": q.format("MIN(S.b) AS n", 9).replace("GROUP BY", "WHERE S.b > 2 GROUP BY")})
    assert g.covered and "SS4" in decisions(g) and [str(m.residual) for m in g.members] == ["None", "S.b > 2"]


PREDS = ["P.proto = 'TCP'", "P.proto = 'UDP'", "P.proto != 'ICMP'", "P.user = 'U'", "P.len > 4", "P.proto = 'TCP' OR P.user = 'U'", "P.proto = 'TCP' AND P.len < 7", None]
AGGS = ["SUM(P.len)", "COUNT(*)", "AVG(P.len)", "MIN(P.len)", "MAX(P.len)", "COUNT(P.len)"]


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 99),
    qs=st.lists(st.tuples(st.sampled_from(PREDS), st.sampled_from(AGGS), st.integers(0, 12), st.integers(1, 4), st.booleans()), min_size=2, max_size=5),
)
def test_covers_equal_each_query_alone(seed, qs):
    frame = packets(60, seed)
    queries = {}
    for i, (pred, agg, length, slide, grouped) in enumerate(qs):
        keys = "P.user, " if grouped else ""
        queries[f"q{i}"] = (
            f"SELECT RSTREAM({keys}{agg} AS v) FROM P [RANGE {length} SLIDE {slide}]" + (f" WHERE {pred}" if pred else "") + (" GROUP BY P.user" if grouped else "")
        )
    note(queries)
    many = slidewise.run_many(queries, {"P": frame}, chunk_rows=23)
    for name, q in queries.items():
        assert rows(many.results[name].results) == rows(slidewise.run(q, {"P": frame}, chunk_rows=23).results), name
