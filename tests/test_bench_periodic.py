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


def test_aggressive_scheduling_has_throughput_but_no_less_latency_than_hybrid(report):
    """§8.5.2: aggressive scheduling refreshes every query of a group at its shortest period: more re-executions
    than conservative scheduling, at a latency no lower than hybrid scheduling's."""
    for rate in ("low", "high"):
        assert run(report, rate, "aggressive")["runs"] >= run(report, rate, "hybrid")["runs"] > run(report, rate, "conservative")["runs"]
        assert run(report, rate, "aggressive")["latency"] >= run(report, rate, "hybrid")["latency"]
    assert report["conclusions"]["aggressive has more throughput than conservative"]["holds"]
    more = report["conclusions"]["aggressive has more latency than hybrid"]
    assert more["holds"] or "not overloaded at" in more["why"]


def test_each_conclusion_records_what_was_measured_and_why_one_does_not_hold(report):
    for name, entry in report["conclusions"].items():
        assert set(entry["measured"]) >= {f"{rate} rate, 40 queries" for rate in ("low", "high") if name.startswith(f"{rate} rate") or " rate:" not in name}, name
        assert entry["holds"] or ("% at the" in entry["why"] and set(entry["fails_at"]) <= set(entry["measured"]) and entry["fails_at"]), name
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


def test_scans_dominate_dense_sub_windows_and_ranking_by_selection_leaves_scans_most_of_the_work(report):
    """Where scans dominate (1,500 tuples over 20 addresses per sub-window: dense sub-windows, few counters to
    rank) one scan of a group's longest window answers all its queries, and aggressive scheduling re-executes far
    more queries than conservative scheduling for the same work; at the bench's rates too, with the top-k lists
    ranked by selection (linear in the counters, a sort of k only), the scans are most of the work."""
    dense = {p: simulate(p, 40, 1500, 20, capacity=60_000, updates=20) for p in ("aggressive", "conservative")}
    assert dense["aggressive"]["work"]["scan"] > dense["aggressive"]["work"]["post"]
    assert dense["aggressive"]["throughput"] > 1.5 * dense["conservative"]["throughput"]
    for rate in ("low", "high"):
        for policy in ("conservative", "hybrid"):
            assert run(report, rate, policy)["work"]["scan"] > 2 * run(report, rate, policy)["work"]["post"], (rate, policy)
