"""The join-algorithm registry: every registered algorithm against the oracle, and a toy one end to end.

The oracle property is parametrised over the registry, so registering an
algorithm makes it tested: each is held to ``oracle(query, tuples)`` in the
evaluation modes its ``exact`` fact names, under the semantics of its
``restores`` fact, on every query its ``check()`` accepts. The toy algorithm
(a naive NLJ variant registered by a fixture) is planned, forced with
``--algorithm``, costed, explained and oracle-checked like the built-in ones.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from slidewise.cli import main
from slidewise.cql import load_query
from slidewise.errors import PlanError
from slidewise.operators.joins import MODES, JoinOperator, algorithms, by_rank, get_algorithm, mode_of, register, unregister
from slidewise.operators.joins.naive import NaiveNLJ
from slidewise.optimizer.cost import model_for
from slidewise.optimizer.explain import explain_info, render
from slidewise.optimizer.planner import choose, preference
from slidewise.optimizer.stats import parse_stats
from tests.oracle import oracle
from tests.streams import dense_cases, join_cases, run_operator

Q3 = "SELECT * FROM S1 [RANGE 100], S2 [RANGE 50], S3 [RANGE 200] WHERE S1.a = S2.a AND S2.a = S3.a"
STATS = ["S1:rate=10,distinct=50", "S2:rate=1,distinct=50", "S3:rate=2,distinct=5"]


@st.composite
def lazy_cases(draw):
    """Lazy (SLIDE) queries, restore or not."""
    query, tuples = draw(st.one_of(join_cases(2, 4, lazy=True), dense_cases(n_min=2, n_max=4, lazy=True)))
    return dataclasses.replace(query, restore=draw(st.booleans())), tuples


#: per evaluation mode, the cases an algorithm exact in it is drawn from (check() filters them)
CASES = {"eager": [join_cases(1, 1, predicates=("common",)), join_cases(2, 5), join_cases(2, 4, kinds=("rows",)), dense_cases(n_min=2, n_max=4)], "lazy": [lazy_cases()]}


def _accepts(cls: type[JoinOperator], query) -> bool:
    try:
        cls.check(query)
    except PlanError:
        return False
    return True


def check_against_oracle(cls: type[JoinOperator]) -> None:
    """The oracle property of one algorithm (run by hypothesis)."""

    cases = st.one_of(*[c for mode in MODES if mode in cls.exact for c in CASES[mode]])

    @settings(suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
    @given(case=cases, chunk=st.integers(1, 10), data=st.data())
    def prop(case, chunk, data):
        query, tuples = case
        assume(mode_of(query.slide) in cls.exact and _accepts(cls, query))
        order = list(data.draw(st.permutations(range(query.n))))
        restore = query.restore if cls.restores is None else cls.restores
        got = run_operator(cls(query, order=order), tuples, chunk)
        assert got == oracle(query, tuples, restore=restore)

    prop()


@pytest.mark.parametrize("name", sorted(algorithms()))
def test_registered_algorithm_equals_oracle(name):
    check_against_oracle(get_algorithm(name))


# -- the facts reproduce the planner's and explain's lists ---------------------------


def test_preference_and_comparison_ranks():
    assert [c.name for c in by_rank("preference", "eager")] == ["columnar", "hash", "hybrid", "nlj"]
    assert [c.name for c in by_rank("preference", "lazy")] == ["columnar", "hash-lazy", "lazy-restore", "lazy", "general-lazy"]
    assert [c.name for c in by_rank("compared", "eager")] == ["nlj", "hash", "hybrid", "naive"]
    assert [c.name for c in by_rank("compared", "lazy")] == ["lazy", "lazy-restore", "general-lazy", "hash-lazy", "naive"]


def test_ranks_are_not_inherited_but_cost_facts_are():
    algos = algorithms()
    assert algos["nlj-lazy-expiration"].preference == {} and algos["nlj-lazy-expiration"].compared == {}
    assert {n for n, c in algos.items() if c.hashed} == {"hash", "hash-lazy", "hybrid", "count"}
    assert {n for n, c in algos.items() if c.grouped} == {"lazy", "lazy-restore"}
    assert algos["columnar"].priced_as == ("hash", "hash-lazy") and algos["select"].priced_as == (None, None)


def test_register_rejects_a_taken_name_and_unnamed_classes():
    class Clash(NaiveNLJ):
        name = "nlj"

    with pytest.raises(PlanError, match="already registered"):
        register(Clash)
    with pytest.raises(PlanError, match="needs a name"):
        register(JoinOperator)  # type: ignore[type-abstract]
    assert algorithms()["nlj"] is not Clash


# -- a toy algorithm, registered for one test at a time ------------------------------


class ToyNaiveNLJ(NaiveNLJ):
    """Eager-only naive NLJ that the planner prefers to everything (test only)."""

    name = "toy-naive"
    summary = "test-only naive NLJ, eager, preferred first"
    preference = {"eager": 0}
    compared = {"eager": 0}

    @classmethod
    def check(cls, query) -> None:
        cls._require_eager(cls.name, query)


@pytest.fixture
def toy():
    register(ToyNaiveNLJ)
    try:
        yield ToyNaiveNLJ
    finally:
        unregister(ToyNaiveNLJ.name)
    assert ToyNaiveNLJ.name not in algorithms()


def test_toy_is_planned_when_preferred(toy):
    q = load_query(Q3)
    assert preference(q)[0] is toy
    plan = choose(q, stats=STATS)
    assert plan.algorithm is toy
    assert plan.reason == "first applicable of toy-naive, columnar, hash, hybrid, nlj"
    assert sorted(plan.build().order) == [0, 1, 2]
    lazy = load_query(Q3.replace("]", " SLIDE 10]"))
    assert choose(lazy).algorithm.name == "columnar"  # no lazy preference: never chosen for SLIDE
    with pytest.raises(PlanError, match="toy-naive evaluates eagerly"):
        choose(lazy, "toy-naive")


def test_toy_is_costed(toy):
    q = load_query(Q3)
    st_ = parse_stats(STATS, q)
    model = model_for(q, st_, "toy-naive")
    assert model.kind == "naive" and not model.hashed
    plan = choose(q, "toy-naive", stats=STATS)
    assert plan.model_algorithm == "toy-naive" and plan.reason == "chosen with --algorithm"
    assert plan.predicted_cost == pytest.approx(model.cost(plan.order).total)
    assert plan.predicted_cost == pytest.approx(model_for(q, st_, "naive").cost(plan.order).total)


def test_toy_is_explained(toy, capsys):
    q = load_query(Q3)
    text = render(explain_info(choose(q, stats=STATS)), q)
    assert "algorithm    toy-naive  (first applicable of toy-naive" in text
    compared = text.split("per-tuple algorithms, best order of each\n")[1].split("why\n")[0]
    assert [line.split()[0] for line in compared.splitlines()] == ["toy-naive", "nlj", "hash", "hybrid", "naive"]
    assert main(["explain", Q3, "--algorithm", "toy-naive", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["algorithm"] == "toy-naive" and info["model"]["kind"] == "naive"
    assert list(info["algorithms"])[0] == "toy-naive"
    assert main(["algorithms"]) == 0
    assert "toy-naive" in capsys.readouterr().out


def test_toy_is_oracle_checked(toy):
    check_against_oracle(toy)


def test_toy_is_gone_after_the_fixture():
    assert "toy-naive" not in algorithms()
    with pytest.raises(PlanError, match="unknown join algorithm 'toy-naive'"):
        choose(load_query(Q3), "toy-naive")


def test_plan_data_imports_no_optimizer_or_operators():
    """Imports go one way: the physical plan (data) loads neither the optimizer nor the operators."""
    code = "import sys, slidewise.plan.physical; print(sorted(m for m in sys.modules if m.startswith(('slidewise.optimizer', 'slidewise.operators'))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
