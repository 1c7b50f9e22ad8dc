"""``slidewise bench query-manager --chapter 8`` at a small scale: Golab's thesis §8.5 from the JSON."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("matplotlib")

from slidewise.bench.periodic import POLICIES, SCHEMA, run_periodic_bench, simulate, workload  # noqa: E402
from slidewise.cli import main  # noqa: E402
from slidewise.manager.core import QueryManager  # noqa: E402


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    run_periodic_bench(out, counts=(40,), updates=30)
    assert (out / "query-manager-ch8.png").stat().st_size > 0
    return json.loads((out / "query-manager-ch8.json").read_text())


def run(report, rate, policy):
    return next(r for r in report["runs"] if (r["rate"], r["policy"]) == (rate, policy))


def test_hybrid_runs_fewer_tasks_for_more_throughput_and_no_more_latency_than_conservative(report):
    """§8.5.2-8.5.3: hybrid scheduling shortens periods to run sub-groups together (fewer tasks than conservative
    scheduling) for more throughput, and no more latency, at both rates (not 2x and 5x: see the conclusions)."""
    for rate in ("low", "high"):
        hybrid, conservative = run(report, rate, "hybrid"), run(report, rate, "conservative")
        assert hybrid["tasks"] < conservative["tasks"] == conservative["subgroups"]
        assert hybrid["throughput"] > conservative["throughput"] and hybrid["latency"] <= conservative["latency"]
        assert run(report, rate, "aggressive")["tasks"] == 8  # one per group
    assert report["conclusions"]["hybrid has more throughput than conservative"]["holds"]
    less = report["conclusions"]["hybrid has less latency than conservative"]
    assert less["holds"] or less["why"].startswith("not overloaded at low rate, 40 queries")  # nothing late: no latency to cut


def test_aggressive_scheduling_has_the_most_re_executions(report):
    """§8.5.2: aggressive scheduling refreshes every query of a group at its shortest period: more re-executions
    than hybrid and conservative scheduling; its latency against hybrid's is a finding with its reason."""
    for rate in ("low", "high"):
        assert run(report, rate, "aggressive")["runs"] >= run(report, rate, "hybrid")["runs"] > run(report, rate, "conservative")["runs"]
    assert report["conclusions"]["aggressive has more throughput than conservative"]["holds"]
    more = report["conclusions"]["aggressive has more latency than hybrid"]
    assert more["holds"] or "an aggressive re-execution costs" in more["why"]


def test_the_capacity_is_hybrids_on_time_demand_with_40_queries_at_the_low_rate(report):
    """The regime's rule (Golab's thesis §8.5.2, §8.5.4), stated in the JSON: hybrid scheduling is at its capacity
    there, conservative and no-sharing scheduling above it, and nothing runs late when tasks run on time."""
    assert report["capacity_rule"].startswith("capacity = hybrid scheduling's on-time demand")
    assert run(report, "low", "hybrid")["load"] == pytest.approx(1.0)
    assert 1 < run(report, "low", "conservative")["load"] < run(report, "low", "no-sharing")["load"]
    assert run(report, "high", "hybrid")["load"] > 1.5  # the high rate: heavier overload, one capacity
    assert report["regime"]["low rate, 40 queries"]["conservative"]["late"] > 0
    on_time = simulate("conservative", 16, 150, 100, capacity=None, updates=10)
    assert on_time["latency"] == 0 == on_time["late_share"] and on_time["busy"] > 0


def test_each_conclusion_records_what_was_measured_and_why_one_does_not_hold(report):
    for name, entry in report["conclusions"].items():
        assert set(entry["measured"]) >= {f"{rate} rate, 40 queries" for rate in ("low", "high") if name.startswith(f"{rate} rate") or " rate:" not in name}, name
        assert (
            entry["holds"]
            or ("% of the work" in entry["why"] or "not overloaded" in entry["why"])
            and set(entry["fails_at"]) <= set(entry["measured"])
            and entry["fails_at"]
        ), name
    doubling = report["conclusions"]["low rate: hybrid at least doubles conservative's throughput"]
    ratio = run(report, "low", "hybrid")["throughput"] / run(report, "low", "conservative")["throughput"]
    assert doubling["measured"] == {"low rate, 40 queries": round(ratio, 3)} and doubling["holds"] == (ratio >= 2)


def test_every_policy_is_measured_at_both_rates(report):
    assert {(r["rate"], r["policy"]) for r in report["runs"]} == {(rate, p) for rate in ("low", "high") for p in POLICIES}
    assert all(r["busy"] > 0 and r["runs"] > 0 for r in report["runs"])


def test_a_run_is_deterministic():
    assert simulate("hybrid", 16, 150, 100, updates=5) == simulate("hybrid", 16, 150, 100, updates=5)


def test_the_workload_has_eight_groups_of_top_k_lists_and_quantiles_one_synopsis_each():
    queries = workload(40)
    assert len(queries) == 40 and len({attrs for attrs, _ in queries.values()}) == 8
    assert (sum("TOPK(" in text for _, text in queries.values()), sum("QUANTILE(" in text for _, text in queries.values())) == (24, 16)  # alternately
    qm = QueryManager(SCHEMA, 1000, 100)
    for name, (_, text) in queries.items():
        qm.register(name, text)
    assert len({r.query.signature for r in qm.queries.values()}) == 8  # every k and p of a group: one synopsis


def test_bad_options_are_one_line_errors(capsys):
    assert main(["bench", "query-manager", "--chapter", "8", "--queries", "41"]) == 2
    assert capsys.readouterr().err.strip() == "slidewise: error: --queries must be a multiple of 8 with --chapter 8, got 41 (hint: as many queries per group)"
    assert main(["bench", "query-manager", "--chapter", "8", "--updates", "0"]) == 2
    assert capsys.readouterr().err.strip() == "slidewise: error: --updates must be positive, got 0"
    assert main(["bench", "query-manager", "--idle"]) == 2
    assert capsys.readouterr().err.strip() == "slidewise: error: --idle applies to --chapter 8 only (the periodic scheduler) (hint: add --chapter 8)"


def test_scans_dominate_dense_sub_windows(report):
    """Where scans dominate (1,500 tuples over 20 addresses per sub-window: dense sub-windows, few counters to
    rank) one scan of a group's longest window answers all its queries, and aggressive scheduling re-executes far
    more queries than conservative scheduling for the same work; at the bench's rates each query's own ranking
    and sums are a large share of the work (the reason hybrid scheduling saves little, see the conclusions)."""
    dense = {p: simulate(p, 40, 1500, 20, capacity=60_000, updates=20) for p in ("aggressive", "conservative")}
    assert dense["aggressive"]["work"]["scan"] > dense["aggressive"]["work"]["post"]
    assert dense["aggressive"]["throughput"] > 1.5 * dense["conservative"]["throughput"]
    for rate in ("low", "high"):
        work = run(report, rate, "hybrid")["work"]
        assert work["post"] > 0.25 * sum(work.values()), rate


def test_the_scheduler_never_idles_by_default_and_idles_with_the_option(report):
    """Algorithms 9-11 as written: in underload the lowest-d task runs whenever there is capacity (re-executions
    between updates, early: latency 0), where the service's scheduler (``idle=True``) runs each task once per
    update and then idles. The on-time demand, and so the capacity, is the same in both modes."""
    assert report["idle"] is False and all(r["idle_share"] == 0 for r in report["runs"])
    assert all(set(cells["hybrid"]) == {"load", "late", "idle"} for cells in report["regime"].values())
    runs = {idle: simulate("hybrid", 16, 150, 100, capacity=400_000, updates=10, idle=idle) for idle in (True, False)}
    assert runs[True]["throughput"] == 16 and runs[True]["idle_share"] > 0.5  # every query once per update
    assert runs[False]["throughput"] > 5 * runs[True]["throughput"] and runs[False]["idle_share"] == 0
    assert runs[True]["latency"] == 0 == runs[False]["latency"]
    assert (
        simulate("hybrid", 16, 150, 100, capacity=None, updates=10, idle=True)["busy"] == simulate("hybrid", 16, 150, 100, capacity=None, updates=10, idle=False)["busy"]
    )
