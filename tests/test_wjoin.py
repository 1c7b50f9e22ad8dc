"""W-joins (Hammad, Aref & Elmagarmid, SSDBM 2003): the WINDOW clause, the query model and MW-join
against the oracle of tests/oracle_wjoin.py."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slidewise.cql import parse_any
from slidewise.cql.wjoin import parse_wjoin
from slidewise.errors import OptionError, QueryError
from slidewise.model.batch import StreamBatch, Tup
from slidewise.operators.wjoin import WJOINS, GCAJoin, HWJoin, LCAJoin
from slidewise.plan.wjoin import WindowConstraint, WJoinQuery
from tests.oracle_wjoin import oracle_wjoin, order_key

NAMES = "ABCD"


def test_clause_forms():
    q = parse_wjoin("SELECT * FROM A, B, C WINDOW(A, B) = 10 AND WINDOW(B, C) = 5 WHERE A.id = B.id AND B.id = C.id")
    assert q.constraints == (WindowConstraint(0, 1, 10), WindowConstraint(1, 2, 5))
    assert len(q.join.equalities) == 2
    assert q.bounds()[0][2] == 15 and q.reach() == [15, 10, 15]  # Form 3: completed by shortest paths
    every = parse_wjoin("select * from A, B, C window = 3;")
    assert every.describe() == "WINDOW(A, B) = 3 AND WINDOW(A, C) = 3 AND WINDOW(B, C) = 3"
    directed = parse_wjoin("SELECT * FROM A, B DWINDOW(a, b) = 2 s")
    assert directed.constraints == (WindowConstraint(0, 1, 2000, True),)
    assert directed.bounds() == [[0, 2000], [0, 0]]
    assert isinstance(parse_any("SELECT * FROM A, B WINDOW(A, B) = 1 WHERE A.x = B.x"), WJoinQuery)


def test_window_as_a_name_is_no_clause():
    assert not isinstance(parse_any("SELECT * FROM S [RANGE 5] WHERE S.window = 3"), WJoinQuery)


@pytest.mark.parametrize(
    "text, message",
    [
        ("SELECT * FROM A, B WINDOW(A, X) = 1", "query line 1, column 30: unknown stream 'X' in a window constraint (hint: name a stream of FROM: A, B)"),
        ("SELECT * FROM A, B WINDOW(A, B) = -1", "query line 1, column 35: negative window -1 (hint: a window is a distance >= 0)"),
        (
            "SELECT * FROM A, B, C WINDOW(A, B) = 1 WHERE A.x = C.x",
            "query line 1, column 23: the window constraints do not connect the streams: A, B | C "
            "(hint: add a WINDOW(X, Y) = w between two of these groups (or WINDOW = w for every pair))",
        ),
        (
            "SELECT * FROM A, B DWINDOW = 1",
            "query line 1, column 20: DWINDOW needs its two streams (hint: write DWINDOW(A, B) = w: A's tuple first, B's at most w later)",
        ),
        (
            "SELECT * FROM A [RANGE 5], B WINDOW(A, B) = 1",
            "stream A has its own window [RANGE 5] in a W-join (hint: a W-join's windows are its WINDOW constraints; drop the [ ... ] after the stream)",
        ),
    ],
)
def test_errors_are_pinned(text, message):
    with pytest.raises(QueryError) as info:
        parse_wjoin(text)
    assert str(info.value).split("\n")[0] == message


def test_model_refuses_a_negative_window():
    join = parse_wjoin("SELECT * FROM A, B WINDOW = 1").join
    with pytest.raises(QueryError, match="negative window in WINDOW"):
        WJoinQuery(join, (WindowConstraint(0, 1, -1),))


HASHED = ("hw-join", "xjoin", "whj")  # need equalities linking the streams
BINARY = ("wnl-join", "wnl-own", "whj")  # two streams only


@st.composite
def cases(draw, equi: bool = False, binary: bool = False):
    """A W-join text, rows (stream, ts, k) and a chunk size; ``equi``: ``k`` equalities linking every
    stream; ``binary``: two streams."""
    n = 2 if binary else draw(st.integers(2, 4))
    names = NAMES[:n]
    items = []
    if draw(st.booleans()) and n <= 3:
        items.append(f"WINDOW = {draw(st.integers(0, 4))}")  # Form 1
    else:
        path = draw(st.booleans())  # a path join, or a random tree
        for j in range(1, n):
            i = j - 1 if path else draw(st.integers(0, j - 1))
            a, b = (i, j) if draw(st.booleans()) else (j, i)
            kw = "DWINDOW" if draw(st.booleans()) else "WINDOW"
            items.append(f"{kw}({names[a]}, {names[b]}) = {draw(st.integers(0, 5))}")
        for _ in range(draw(st.integers(0, 2))):  # extra constraints (cycles)
            a, b = draw(st.lists(st.integers(0, n - 1), min_size=2, max_size=2, unique=True))
            items.append(f"WINDOW({names[a]}, {names[b]}) = {draw(st.integers(0, 6))}")
    where = [f"{names[i]}.k = {names[i + 1]}.k" for i in range(n - 1) if equi or draw(st.booleans())]
    if draw(st.booleans()):
        where.append(f"{names[0]}.k < 2")
    text = f"SELECT * FROM {', '.join(names)} {' AND '.join(items)}" + (f" WHERE {' AND '.join(where)}" if where else "")
    rows = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, 12), st.integers(0, 2)), max_size=5 * n))
    if draw(st.booleans()) and rows:  # a burst: one timestamp for many
        burst = draw(st.integers(0, 12))
        rows += [(s, burst, k) for s, _, k in rows[: len(rows) // 2]]
    chunk = draw(st.integers(1, 8))
    return text, rows, chunk


def _tuples(rows) -> list[Tup]:
    """Tuples with positions in the global order (ts, stream, input order)."""
    arrived = [Tup(s, i, ts, 1, {"k": k}) for i, (s, ts, k) in enumerate(rows)]
    for p, t in enumerate(sorted(arrived, key=order_key)):
        t.pos = p
    return sorted(arrived, key=lambda t: t.pos)


def _run(query: WJoinQuery, tuples: list[Tup], chunk: int, algorithm: str = "mw-join"):
    return _run_op(query, tuples, chunk, algorithm)[0]


def _run_op(query: WJoinQuery, tuples: list[Tup], chunk: int, algorithm: str):
    """The result keys and the operator, fed ``chunk`` arrivals at a time."""
    op = WJOINS[algorithm](query)
    keys = []
    for start in range(0, len(tuples), chunk):
        part = tuples[start : start + chunk]
        batches = [
            StreamBatch(
                s, [t.pos for t in part if t.stream == s], [t.ts for t in part if t.stream == s], {"k": np.array([t.vals["k"] for t in part if t.stream == s], np.int64)}
            )
            for s in range(query.n)
        ]
        keys += op.process(batches).keys()
    keys += op.finish().keys()
    return keys, op


@pytest.mark.parametrize("algorithm", list(WJOINS))
@settings(max_examples=150, deadline=None)
@given(st.data())
def test_w_joins_equal_the_oracle(algorithm, data):
    """Every W-join operator equals the oracle; NLW-join and HW-join also give MW-join's order."""
    text, rows, chunk = data.draw(cases(equi=algorithm in HASHED and data.draw(st.integers(0, 3)) > 0, binary=algorithm in BINARY))
    query = parse_wjoin(text)
    try:
        WJOINS[algorithm].check(query)
    except OptionError:
        assert algorithm in HASHED
        return
    tuples = _tuples(rows)
    got = _run(query, tuples, chunk, algorithm)
    expected = oracle_wjoin(query, tuples)
    assert sorted(got) == sorted(expected.elements()), text
    assert len(set(got)) == len(got)  # each result once
    if algorithm != "mw-join":
        assert got == _run(query, tuples, chunk), text  # MW-join's order, ts and exp


@pytest.mark.parametrize("algorithm", ["ripple-join", "xjoin"])
@settings(max_examples=150, deadline=None)
@given(st.data())
def test_baselines_equal_the_oracle_across_their_periodic_purges(algorithm, data):
    """The baselines purge every ``purge`` arrivals (1,000 in the bench): with a purge every few arrivals,
    any chunking, they still equal the oracle in MW-join's order (XJoin's hash tables rebuilt after every
    purge, also when an append replaces as many rows as the purge removed)."""
    text, rows, chunk = data.draw(cases(equi=algorithm == "xjoin"))
    query = parse_wjoin(text)
    later = data.draw(st.lists(st.tuples(st.integers(0, 3), st.integers(12, 30), st.integers(0, 2)), max_size=30))
    tuples = _tuples(rows + [r for r in later if r[0] < query.n])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(WJOINS[algorithm], "purge", data.draw(st.integers(1, 6)))
        got = _run(query, tuples, chunk, algorithm)
    assert sorted(got) == sorted(oracle_wjoin(query, tuples).elements()), text
    assert got == _run(query, tuples, chunk), text


FIG13 = (
    "SELECT * FROM A, B, C, D WINDOW(A, B) = 5 AND WINDOW(A, C) = 3 AND WINDOW(A, D) = 3 AND WINDOW(B, C) = 3 AND WINDOW(B, D) = 3 AND WINDOW(C, D) = 3"
    " WHERE A.k = B.k AND B.k = C.k AND C.k = D.k"
)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 6), st.integers(0, 1)), max_size=24), st.integers(1, 8))
def test_conservative_refinement_keeps_mw_joins_order_with_or_without_a_sort(rows, chunk):
    """GCA and LCA sort the refined candidates of an arrival only where their Mode 2 order differs
    from MW-join's (one larger window: LCA's orders are MW-join's, GCA's differ for B); both equal
    the oracle in MW-join's order."""
    # two A and two C tuples, then D, then B: B's arrival completes combinations whose order differs
    query, tuples = parse_wjoin(FIG13), _tuples([(0, 1, 0), (0, 2, 0), (2, 1, 0), (2, 2, 0), (3, 2, 0), (1, 3, 0)] + rows)
    gca, lca = GCAJoin(query), LCAJoin(query)
    assert lca.orders == lca.mw_orders and gca.orders != gca.mw_orders  # both branches run
    expected = _run(query, tuples, chunk)
    assert sorted(expected) == sorted(oracle_wjoin(query, tuples).elements())
    assert _run(query, tuples, chunk, "gca") == expected == _run(query, tuples, chunk, "lca")


def _accepted_case(algorithm: str, data):
    """A drawn case (text, query, tuples, chunk) that ``algorithm`` accepts, else None."""
    text, rows, chunk = data.draw(cases(equi=algorithm == "hw-join"))
    query = parse_wjoin(text)
    try:
        WJOINS[algorithm].check(query)
    except OptionError:
        return None
    return text, query, _tuples(rows), chunk


@pytest.mark.parametrize("algorithm", ["mw-join", "nlw-join", "hw-join", "gca", "lca"])
@settings(max_examples=100, deadline=None)
@given(st.data())
def test_chunk_boundaries_change_neither_answers_nor_counted_work(algorithm, data):
    """The columnar operators take a chunk of arrivals at once: one arrival at a time, the drawn
    chunks (cutting bursts of one timestamp anywhere) and the whole input give the same results in
    the same order and count the same comparisons."""
    drawn = _accepted_case(algorithm, data)
    if drawn is None:
        return
    text, query, tuples, chunk = drawn
    runs = [_run_op(query, tuples, size, algorithm) for size in (1, chunk, max(len(tuples), 1))]
    assert len({tuple(keys) for keys, _ in runs}) == 1, text
    assert len({op.comparisons for _, op in runs}) == 1, text


@pytest.mark.parametrize(
    "text, rates, counts",
    [
        ("SELECT * FROM A, B, C WINDOW = 20 WHERE A.k = B.k AND B.k = C.k", [1000.0, 300.0, 100.0], {"nlw-join": 17083, "hw-join": 4998, "results": 770}),
        (
            "SELECT * FROM A, B, C WINDOW(A, B) = 30 AND DWINDOW(B, C) = 10 WHERE A.k = B.k AND B.k = C.k AND A.k < 7",
            [2000.0, 500.0, 1000.0],
            {"nlw-join": 148944, "hw-join": 28185, "results": 6525},
        ),
    ],
)
def test_pipelines_count_what_the_per_arrival_algorithm_compares(text, rates, counts):
    """NLW-join and HW-join run columnar but count the paper's per-arrival comparisons: pinned
    from the one-arrival-at-a-time pipeline of tests/test_wjoin_pipeline.py (a scan visits every
    row of the other side's buffer, or bucket, deleting those out of the window of that side's
    time-stamps vector)."""
    from slidewise.bench.wjoin import _batches, generate

    query = parse_wjoin(text)
    data = generate(rates, 1200, 6, seed=1 if "DWINDOW" not in text else 4)
    for algorithm in ("nlw-join", "hw-join"):
        op = WJOINS[algorithm](query)
        results = sum(len(op.process(chunk)) for chunk in _batches(data, query.n, 1024))
        assert (op.comparisons, results) == (counts[algorithm], counts["results"]), algorithm


@pytest.mark.parametrize("algorithm", list(WJOINS))
def test_removal_rule_bounds_the_state(algorithm):
    """The removal rule (or invalidation) keeps the state bounded; the baselines that purge
    periodically hold at most ``purge`` arrivals more."""
    n = 2 if algorithm in BINARY else 3
    query = parse_wjoin(f"SELECT * FROM {', '.join(NAMES[:n])} WINDOW = 2 WHERE {' AND '.join(f'{a}.k = {b}.k' for a, b in zip(NAMES, NAMES[1:n]))}")
    op = WJOINS[algorithm](query)
    if "purge" in dir(op):
        op.purge = 30
    k = np.zeros(1, np.int64)
    for i in range(200):
        op.process([StreamBatch(s, [n * i + s], [i], {"k": k + i % 5}) for s in range(n)])
    assert op.state_tuples() <= 20 * n + getattr(op, "purge", 0) + n


def test_gca_and_lca_filter_bounds():
    """Fig. 13's setting: 0.8 between every pair but one pair at 1; GCA filters with 1 everywhere,
    LCA with the local windows (1 between the pair, 0.8 elsewhere), and enumerates fewer candidates."""
    pairs = " AND ".join(f"WINDOW({a}, {b}) = {10 if a + b == 'AB' else 8}" for a, b in ("AB", "AC", "AD", "BC", "BD", "CD"))
    query = parse_wjoin(f"SELECT * FROM A, B, C, D {pairs}")
    assert GCAJoin.filter_bounds(query)[2] == [10, 10, 0, 10]
    assert LCAJoin.filter_bounds(query)[0] == [0, 10, 8, 8] and LCAJoin.filter_bounds(query)[2] == [8, 8, 0, 8]
    rng = np.random.default_rng(1)
    ts = np.sort(rng.integers(0, 400, 400))
    streams = rng.integers(0, 4, 400)
    ops = {a: WJOINS[a](query) for a in ("mw-join", "gca", "lca")}
    keys = {}
    for a, op in ops.items():
        keys[a] = op.process([StreamBatch(s, np.flatnonzero(streams == s), ts[streams == s], {}) for s in range(4)]).keys()
    assert keys["gca"] == keys["lca"] == keys["mw-join"]
    assert ops["mw-join"].comparisons < ops["lca"].comparisons < ops["gca"].comparisons


def test_hw_join_needs_equalities_connecting_the_streams():
    query = parse_wjoin("SELECT * FROM A, B, C WINDOW = 2 WHERE A.k = B.k AND A.x < C.x")
    with pytest.raises(OptionError) as info:
        HWJoin(query)
    assert str(info.value).split("\n")[0] == (
        "hw-join needs equi-join predicates connecting every stream; none reaches C "
        "(hint: add WHERE X.a = Y.b between the streams, or use --algorithm nlw-join or mw-join)"
    )


@pytest.mark.parametrize("algorithm", [None, *WJOINS])
def test_run_through_the_cli(tmp_path, capsys, algorithm):
    from slidewise.cli import main

    (tmp_path / "a.csv").write_text("ts,id\n1,1\n3,2\n5,1\n")
    (tmp_path / "b.csv").write_text("ts,id\n2,1\n4,2\n9,1\n")
    out = tmp_path / "r.csv"
    code = main(
        [
            "run",
            "SELECT * FROM A, B DWINDOW(A, B) = 1 WHERE A.id = B.id",
            "--source",
            f"A={tmp_path / 'a.csv'}",
            "--source",
            f"B={tmp_path / 'b.csv'}",
            "--out",
            str(out),
            "--quiet",
            *(["--algorithm", algorithm] if algorithm else []),
        ]
    )
    assert code == 0
    assert out.read_text().splitlines() == ["A.ts,A.id,B.ts,B.id,ts,exp,sign", "1,1,2,1,2,2,1", "3,2,4,2,4,4,1"]


def test_spark_batch_mode_is_refused_and_explain_shows_the_bounds(tmp_path, capsys):
    from slidewise.cli import main

    (tmp_path / "a.csv").write_text("ts\n1\n")
    source = f"A={tmp_path / 'a.csv'}"
    assert main(["run", "SELECT * FROM A, B WINDOW = 1", "--source", source, "--source", source.replace("A=", "B="), "--engine", "spark", "--mode", "batch"]) == 2
    assert capsys.readouterr().err.strip() == (
        "slidewise: error: W-joins run on the Spark engine as streaming queries only, not with --mode batch (hint: drop --mode batch (or run with --engine local))"
    )
    assert main(["explain", "SELECT * FROM A, B, C WINDOW(A, B) = 2 AND DWINDOW(B, C) = 3"]) == 0
    assert capsys.readouterr().out == (
        "W-join on mw-join: WINDOW(A, B) = 2 AND DWINDOW(B, C) = 3; reach {'A': 5, 'B': 3, 'C': 2}\n"
        "  cheapest estimate of mw-join, nlw-join, gca, lca (cost in comparisons per time unit, per-arrival work included, "
        "default statistics: mw-join 51, nlw-join 132, lca 156, gca 270; "
        "not applicable: hw-join needs equi-join predicates connecting every stream; none reaches B, C)\n"
    )
    assert main(["explain", "SELECT * FROM A, B WINDOW = 1", "--algorithm", "nlw-join"]) == 0
    assert capsys.readouterr().out.startswith("W-join on nlw-join: WINDOW(A, B) = 1")


def test_other_algorithms_are_refused():
    import slidewise

    with pytest.raises(OptionError) as info:
        slidewise.run("SELECT * FROM A, B WINDOW = 1", {"A": [{"ts": 1}], "B": [{"ts": 1}]}, algorithm="hash")
    assert str(info.value).split("\n")[0] == (
        "algorithm 'hash' does not run W-joins (hint: W-joins (a WINDOW clause) run on mw-join, nlw-join, hw-join, gca, lca, "
        "ripple-join, xjoin, wnl-join, wnl-own, whj; drop --algorithm or name one of them)"
    )


@pytest.mark.parametrize("algorithm", [None, *WJOINS])
@settings(max_examples=25, deadline=None)
@given(st.data())
def test_the_local_engine_equals_the_oracle(algorithm, data):
    """Through ``slidewise.run``: the engine's merge gives the oracle's order (ts, stream, input order);
    without an algorithm, Form 1 (every pair within one w) runs on the join path with [RANGE w]."""
    import slidewise

    text, rows, chunk = data.draw(cases(equi=algorithm in HASHED, binary=algorithm in BINARY))
    query = parse_wjoin(text)
    tuples = _tuples(rows)
    sources = {name: [{"ts": t.ts, "k": t.vals["k"]} for t in sorted(tuples, key=lambda t: t.pos) if t.stream == i] for i, name in enumerate(query.join.aliases)}
    for name in sources:
        sources[name] = sources[name] or [{"ts": 10**6, "k": 9}]  # no empty source: a far-away tuple
        if sources[name][-1]["ts"] == 10**6:
            tuples.append(Tup(query.join.aliases.index(name), len(tuples), 10**6, 1, {"k": 9}))
    by_pos = {t.pos: t for t in tuples}
    res = slidewise.run(query, sources, chunk_rows=chunk, algorithm=algorithm).results
    got = sorted(tuple(int(v) for v in row) for row in res.itertuples(index=False))
    expected = sorted(
        tuple(x for p in key for x in (by_pos[p].ts, by_pos[p].vals["k"])) + (ts, exp, sign) for key, ts, exp, sign in oracle_wjoin(query, tuples).elements()
    )
    assert got == expected, text


def _stats(names: str, rate: float, distinct: float) -> dict:
    return {a: {"rate": rate, "distinct": distinct} for a in names}


@pytest.mark.parametrize(
    "window, distinct, chosen",
    [
        (10, 1, "mw-join"),  # one join value: the equalities prune nothing, MW-join enumerates least
        (10, 10, "hw-join"),  # small windows, 10 join values: HW-join's probes and per-arrival work just under MW-join's enumeration (as measured)
        (10_000, 10**6, "hw-join"),  # large windows, selective equalities: one bucket per probe
    ],
)
def test_the_planner_chooses_by_cost(window, distinct, chosen):
    from slidewise.optimizer.wjoin import choose_wjoin

    query = parse_wjoin(f"SELECT * FROM A, B, C WINDOW = {window} WHERE A.k = B.k AND B.k = C.k")
    choice = choose_wjoin(query, None, _stats("ABC", 1, distinct))
    assert choice.cls.name == chosen and next(iter(choice.costs)) == chosen
    assert set(choice.costs) == {a for a, c in WJOINS.items() if not c.baseline} and not choice.refused  # baselines run when named only
    assert choice.reason == "cheapest estimate of mw-join, nlw-join, hw-join, gca, lca"
    forced = choose_wjoin(query, "lca", _stats("ABC", 1, distinct))
    assert forced.cls is LCAJoin and forced.reason == "chosen with --algorithm"


def test_the_engine_runs_the_planners_choice():
    import slidewise

    rows = [{"ts": t, "k": t % 3} for t in range(0, 40, 2)]
    text = "SELECT * FROM A, B, C WINDOW(A, B) = 10000 AND WINDOW(B, C) = 10000 WHERE A.k = B.k AND B.k = C.k"
    res = slidewise.run(text, {"A": rows, "B": rows, "C": rows}, stats=[f"{a}:rate=1,distinct=1000000" for a in "ABC"])
    assert res.stats["algorithm"] == "hw-join"
    assert len(res.results) == 7**3 + 7**3 + 6**3  # every combination with one k (t % 3 over 0, 2, ..., 38)
    small = slidewise.run(text.replace("10000", "5"), {"A": rows, "B": rows, "C": rows})  # default statistics
    assert small.stats["algorithm"] == "mw-join"


def test_register_refuses_a_taken_name():
    from slidewise.errors import PlanError
    from slidewise.operators.wjoin import by_rank, register

    class Other(LCAJoin):
        name = "lca"

    with pytest.raises(PlanError, match="W-join algorithm 'lca' is already registered"):
        register(Other)
    assert [c.name for c in by_rank()] == ["mw-join", "nlw-join", "hw-join", "gca", "lca", "ripple-join", "xjoin", "wnl-join", "wnl-own", "whj"]


def test_form_1_runs_on_the_join_path(capsys):
    """Every pair within one w: the join path's [RANGE w] windows, the same rows as MW-join."""
    import slidewise
    from slidewise.cli import main

    text = "SELECT * FROM A, B, C WINDOW = 4 WHERE A.k = B.k AND B.k = C.k"
    assert parse_wjoin(text).uniform_window() == 4
    assert parse_wjoin("SELECT * FROM A, B, C WINDOW = 4 AND WINDOW(A, B) = 6").uniform_window() == 4  # a looser pair changes nothing
    assert parse_wjoin("SELECT * FROM A, B WINDOW = 4 AND DWINDOW(A, B) = 4").as_sliding_window() is None
    rng = np.random.default_rng(3)
    sources = {a: [{"ts": int(t), "k": int(k)} for t, k in zip(np.sort(rng.integers(0, 60, 40)), rng.integers(0, 3, 40))] for a in "ABC"}
    auto, mw = slidewise.run(text, sources), slidewise.run(text, sources, algorithm="mw-join")
    assert (auto.stats["algorithm"], mw.stats["algorithm"]) == ("columnar", "mw-join")
    a, m = (r.results.sort_values(list(r.results.columns), kind="stable").reset_index(drop=True) for r in (auto, mw))
    assert len(a) > 0 and a.equals(m)  # the same rows (within one arrival, in the join path's order)
    assert auto.results["ts"].is_monotonic_increasing
    assert main(["explain", text]) == 0
    assert capsys.readouterr().out == (
        "W-join on columnar: WINDOW(A, B) = 4 AND WINDOW(A, C) = 4 AND WINDOW(B, C) = 4; every pair within 4\n"
        "  the join path's sliding-window join with [RANGE 4] per stream (same results, faster than the W-join operators)\n"
    )


def test_baselines_refuse_what_they_cannot_join():
    three = parse_wjoin("SELECT * FROM A, B, C WINDOW = 2 WHERE A.k = B.k AND B.k = C.k")
    with pytest.raises(OptionError) as info:
        WJOINS["wnl-join"](three)
    assert str(info.value).split("\n")[0] == "wnl-join joins two streams, the query joins 3 (hint: use --algorithm mw-join, nlw-join or hw-join for more streams)"
    with pytest.raises(OptionError) as info:
        WJOINS["whj"](parse_wjoin("SELECT * FROM A, B WINDOW = 2 WHERE A.k < B.k"))
    assert str(info.value).split("\n")[0] == "whj needs an equi-join predicate between the two streams (hint: add WHERE A.x = B.y, or use --algorithm wnl-join)"
    with pytest.raises(OptionError) as info:
        WJOINS["xjoin"](parse_wjoin("SELECT * FROM A, B, C WINDOW = 2 WHERE A.k = B.k"))
    assert str(info.value).split("\n")[0] == (
        "xjoin needs equi-join predicates connecting every stream; none reaches C (hint: add WHERE X.a = Y.b between the streams, or use --algorithm nlw-join or mw-join)"
    )


def test_invalidation_strategies_memory_and_work():
    """A fast A (every ms) and a slow B (every 50 ms), window 5: invalidating the opposite window
    holds A's tuples until B delivers; invalidating its own holds A's window only, but scans B's
    tuples beyond the window (one more touch each). The hash join touches its bucket only."""
    query = parse_wjoin("SELECT * FROM A, B WINDOW = 5 WHERE A.k = B.k")
    rows = sorted([(0, t, t % 7) for t in range(200)] + [(1, t, t % 7) for t in range(0, 200, 50)], key=lambda r: (r[1], r[0]))
    tuples = _tuples(rows)
    ops = {a: WJOINS[a](query) for a in ("wnl-join", "wnl-own", "whj")}
    for op in ops.values():
        op.process(
            [
                StreamBatch(
                    s, [t.pos for t in tuples if t.stream == s], [t.ts for t in tuples if t.stream == s], {"k": np.array([t.vals["k"] for t in tuples if t.stream == s])}
                )
                for s in range(2)
            ]
        )
    assert ops["wnl-own"].peak <= 8 and ops["wnl-join"].peak >= 50 and ops["whj"].peak == ops["wnl-join"].peak
    assert ops["whj"].comparisons < ops["wnl-join"].comparisons < ops["wnl-own"].comparisons
    assert sorted(_run(query, tuples, 7, "wnl-own")) == sorted(_run(query, tuples, 7, "whj")) == sorted(oracle_wjoin(query, tuples).elements())


def test_bucket_keys_beyond_one_integer():
    """HW-join's binary searches over (bucket code, value) pairs: one composite integer per pair, or a
    complex number where codes times the values' span could overflow; both agree with a search of the pairs."""
    import bisect

    from slidewise.operators.wjoin.nlw_join import _Keys

    rng = np.random.default_rng(5)
    pairs = sorted(zip(rng.integers(0, 9, 300).tolist(), rng.integers(100, 151, 300).tolist()))
    code, value = (np.array(v, np.int64) for v in zip(*pairs))
    q_code, q_value = rng.integers(0, 9, 200), np.concatenate([value[:100], rng.integers(100, 151, 100)])
    for wide in (2**62, 9 * 51):
        keys, queries = _Keys.pair(code[::-1], value[::-1], q_code, q_value, 100, 150, wide)  # sorted by the keys
        assert keys.wide == queries.wide == (wide < 2**62) and keys.code[:-1].tolist() == code.tolist()
        for side in ("left", "right"):
            search = bisect.bisect_left if side == "left" else bisect.bisect_right
            expected = [search(pairs, (int(c), int(v))) for c, v in zip(queries.code[:-1], q_value[queries.order])]
            assert keys.key.searchsorted(keys.of(queries.c, q_value[queries.order]), side).tolist() == expected, (wide, side)


def test_bucket_keys_of_a_buffer_with_appended_arrivals():
    """A buffer sorted by (bucket code, arrival) with a chunk's arrivals appended in arrival order: one
    stable sort by code (a radix sort below 2^15 codes) orders it as the sort by (code, arrival) does."""
    from slidewise.operators.wjoin.nlw_join import _Keys

    rng = np.random.default_rng(7)
    for codes in (9, 40_000):
        kept = sorted(zip(rng.integers(0, codes, 50).tolist(), rng.choice(100, 50, replace=False).tolist()))
        code = np.array([c for c, _ in kept] + rng.integers(0, codes, 200).tolist(), np.int64)
        made = np.array([m for _, m in kept] + list(range(100, 300)), np.int64)
        radix, full = _Keys.pair(code, made, code, made, 0, 600, 2**62, (True, False))
        assert radix.order.tolist() == np.lexsort([made, code]).tolist() == full.order.tolist()
        assert radix.key.tolist() == full.key.tolist() and radix.code.tolist() == full.code.tolist()


@pytest.mark.parametrize(
    "keys",
    [np.array([True, False, True, True]), np.array([2**64 - 1, 7, 2**64 - 1, 7], np.uint64), np.array(["x", "y", "x", "x"], object), np.array([10**15, 3, 10**15, 3])],
)
def test_hw_join_buckets_any_key_type(keys):
    """Booleans, large unsigned, text and spread-out integers as hash keys: MW-join's results."""
    query = parse_wjoin("SELECT * FROM A, B WINDOW = 5 WHERE A.k = B.k")
    batches = [StreamBatch(0, [0, 2, 4, 6], [1, 2, 3, 4], {"k": keys}), StreamBatch(1, [1, 3, 5, 7], [1, 2, 3, 4], {"k": keys})]
    hw, mw = (WJOINS[a](query).process(batches).keys() for a in ("hw-join", "mw-join"))
    assert hw == mw and len(hw) == sum(c * c for c in Counter(keys.tolist()).values())  # every pair within the window


def test_hw_join_tests_the_bucket_equality_unless_codes_are_the_keys():
    """Float keys share a bucket when NaN (one code) yet NaN = NaN is false: HW-join still tests the
    equality there (integer keys skip it: equal codes are equal keys)."""
    query = parse_wjoin("SELECT * FROM A, B WINDOW = 5 WHERE A.k = B.k")
    keys = np.array([np.nan, 1.5, np.nan, 1.5])
    batches = [StreamBatch(0, [0, 2, 4, 6], [1, 2, 3, 4], {"k": keys}), StreamBatch(1, [1, 3, 5, 7], [1, 2, 3, 4], {"k": keys})]
    hw, mw = (WJOINS[a](query).process(batches).keys() for a in ("hw-join", "mw-join"))
    assert hw == mw and len(hw) == 4  # the pairs of 1.5 only


@pytest.mark.parametrize("algorithm", ["mw-join", "nlw-join", "hw-join", "lca"])
@settings(max_examples=60, deadline=None)
@given(st.data())
def test_float_keys_with_nulls_equal_the_oracle(algorithm, data):
    """Equalities on a float column whose NaN (NULL) joins nothing, as the oracle says; the
    operators compare integer columns at once and others through the expression evaluator."""
    drawn = _accepted_case(algorithm, data)
    if drawn is None:
        return
    text, query, tuples, chunk = drawn
    for t in tuples:
        t.vals["k"] = float("nan") if t.vals["k"] == 2 else t.vals["k"] + 0.5
    op, got = WJOINS[algorithm](query), []
    for start in range(0, len(tuples), chunk):
        part = tuples[start : start + chunk]
        cols = [{"k": np.array([t.vals["k"] for t in part if t.stream == s], np.float64)} for s in range(query.n)]
        got += op.process([StreamBatch(s, [t.pos for t in part if t.stream == s], [t.ts for t in part if t.stream == s], cols[s]) for s in range(query.n)]).keys()
    assert sorted(got) == sorted(oracle_wjoin(query, tuples).elements()), text
