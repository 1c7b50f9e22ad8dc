"""``slidewise bench update-patterns`` (Golab's thesis §3.6): plumbing with a fake engine, then the real path.

No timing assertions: only keys, counts and agreement between strategies.
"""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pandas as pd
import pytest

from slidewise.bench import update_patterns as up
from slidewise.runtime.generate import IP_PROTOCOLS, generate_links

SOURCE_KEYS = {"unit", "windows", "span", "lateness", "protocols", "info", "experiments", "mismatches", "ratios"}
SERIES_KEYS = {"strategy", "partitions", "ms_per_1000", "ms_per_1000_wall", "results", "results_fill"}


def fake_runner(text, streams, strategy, partitions, lateness, collect=False, *, options=None, wrong=None):
    """Counts rows instead of running; ``wrong`` = a strategy that miscounts."""
    n = sum(len(df) for df in streams.values())
    stats = {
        "results": n + (1 if strategy == wrong else 0),
        "retractions": n // 2,
        "negative_tuples": 0 if strategy == "upa" else n,
        "state_tuples_peak": n if strategy == "nt" else max(1, n // 8),
        "seconds": 0.0,
    }
    results = None
    if collect:
        link1 = streams["Link1"]
        # a deletion one instant after each tuple: premature unless the window is 0
        results = pd.DataFrame({"Link1.ts": link1["ts"], "Link1.src": link1["src"], "ts": link1["ts"] + 1, "sign": -1})
    return stats, results


def test_generate_links_shape_and_mix():
    links = generate_links(3, 20_000, sources=500, destinations=50, seed=3)
    assert [sorted(x) for x in links] == [["dst", "protocol", "src", "ts"]] * 3
    for link in links:
        assert link["ts"].tolist() == list(range(20_000))  # one tuple per time unit (§3.6.1)
        share = Counter(link["protocol"].tolist())
        assert abs(share["ftp"] / 20_000 - IP_PROTOCOLS["ftp"]) < 0.01
        assert share["telnet"] > 3 * share["ftp"]  # telnet common, ftp rare
    # same source addresses, Zipf-ranked, on every link; destinations disjoint per link
    top = [Counter(x["src"].tolist()).most_common(1)[0][0] for x in links]
    assert len(set(top)) == 1
    assert not set(links[0]["dst"].tolist()) & set(links[1]["dst"].tolist())
    again = generate_links(3, 20_000, sources=500, destinations=50, seed=3)
    assert all(np.array_equal(a["src"], b["src"]) for a, b in zip(links, again))


def test_premature_fraction():
    res = pd.DataFrame({"Link1.ts": [0, 0, 5, 7], "Link1.src": [1, 1, 2, 3], "ts": [0, 11, 9, 8], "sign": [1, -1, -1, -1]})
    # window 10: a Link1 tuple at 0 is in its window up to 10 -> deleted at 11 by time
    assert up.premature_fraction(res, 10) == {"deletions": 3, "premature": 2, "fraction": 0.6667}


def test_driver_plumbing_with_fake_engine(tmp_path):
    report = up.run_update_patterns_bench(tmp_path, scale=0.05, source="generated", runner=fake_runner, verify_rows=True)
    data = json.loads((tmp_path / "update_patterns.json").read_text())
    assert (tmp_path / "update_patterns.png").stat().st_size > 10_000
    assert data["mismatches"] == [] and report["summary"]["mismatches"] == 0
    src = data["sources"]["generated"]
    assert SOURCE_KEYS <= set(src)
    assert set(src["experiments"]) == {e.name for e in up.EXPERIMENTS}
    for name, exp in src["experiments"].items():
        assert [pt["window"] for pt in exp["points"]] == src["windows"]
        for pt in exp["points"]:
            assert pt["measured_tuples"] > 0
            assert set(pt["rows_equal"].values()) == {True}
            for s in pt["series"].values():
                assert SERIES_KEYS <= set(s), (name, s)
    assert {"NT", "DIRECT", "UPA(10)", "UPA(50)"} == set(src["experiments"]["q1_selective"]["points"][0]["series"])
    r = src["ratios"]
    assert {"upa_speedup_vs_nt", "upa_over_nt_state_tuples_peak", "meets_3x_faster", "meets_quarter_state", "window"} <= set(r["q2_src"])
    assert r["q2_src"]["window"] == max(src["windows"])
    assert r["q2_src"]["upa_over_nt_state_tuples_peak"] == pytest.approx(1 / 8, rel=0.05)
    assert {"upa50_speedup_vs_nt", "upa50_beats_nt"} <= set(r["q1_selective"])
    assert r["q3_premature_fraction_per_window"] == [1.0] * len(src["windows"])
    assert {"generated", "mismatches", "bench_wall_s", "files"} <= set(data["summary"])


def test_driver_reports_disagreeing_strategies(tmp_path):
    def runner(*a, **kw):
        return fake_runner(*a, **kw, wrong="direct")

    exps = tuple(e for e in up.EXPERIMENTS if e.name == "q2_src")
    report = up.run_update_patterns_bench(tmp_path, scale=0.05, source="generated", runner=runner, experiments=exps, plot=False)
    bad = report["mismatches"]
    assert bad and {m["experiment"] for m in bad} == {"q2_src"}
    assert bad[0]["counts"]["DIRECT"] == bad[0]["counts"]["NT"] + 1


def test_engine_errors_are_recorded_not_fatal(tmp_path):
    def runner(text, streams, strategy, *a, **kw):
        if strategy == "direct":
            raise RuntimeError("not built yet")
        return fake_runner(text, streams, strategy, *a, **kw)

    exps = tuple(e for e in up.EXPERIMENTS if e.name == "q2_pair")
    report = up.run_update_patterns_bench(tmp_path, scale=0.05, source="generated", runner=runner, experiments=exps, plot=False)
    pt = report["sources"]["generated"]["experiments"]["q2_pair"]["points"][0]
    assert "not built yet" in pt["series"]["DIRECT"]["error"] and "ms_per_1000" in pt["series"]["NT"]


def test_zeek_links_are_out_of_order_and_complete():
    """The bundled sample, the default of --zeek-dir: real out-of-order dns and ssl."""
    from slidewise.bench.update_patterns_inputs import load_links, sample_dir, zeek_inputs

    links, arrival, info = load_links()
    assert info["sample"] and info["logs"] == ["dns", "ssl"] and info["data_dir"] == str(sample_dir().resolve())
    assert sum(len(df) for df in links.values()) == info["rows"]
    for name, df in links.items():
        assert list(df.columns) == ["ts", "src", "dst", "protocol"]
        assert np.all(np.diff(arrival[name]) >= 0)
        assert np.all(arrival[name] >= df["ts"].to_numpy())
    assert max(v["max_lateness_ms"] for v in info["per_link"].values()) > 100_000  # real lateness
    assert zeek_inputs(0.05).protocols == {"selective": "dns", "unselective": "ssl"}


def test_zeek_dir_is_checked_before_anything_runs(tmp_path):
    from slidewise.errors import OptionError, SourceError

    calls = []

    def runner(*a, **kw):
        calls.append(a)
        return fake_runner(*a, **kw)

    missing = tmp_path / "nowhere"
    with pytest.raises(SourceError) as e:
        up.run_update_patterns_bench(tmp_path, scale=0.05, source="both", runner=runner, zeek_dir=missing)
    assert e.value.location == str(missing) and "does not exist" in str(e.value) and calls == []
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "conn.csv").write_text("ts,uid\n1,x\n")
    with pytest.raises(SourceError, match="no Zeek log with ts, orig_h and resp_h columns"):
        up.run_update_patterns_bench(tmp_path, source="zeek", runner=runner, zeek_dir=tmp_path / "logs")
    with pytest.raises(OptionError, match="--zeek-dir is only read with --source zeek or both"):
        up.run_update_patterns_bench(tmp_path, source="generated", runner=runner, zeek_dir=tmp_path)
    assert calls == []


def test_zeek_dir_option_reads_other_logs(tmp_path):
    """--zeek-dir takes any directory of Zeek CSV logs (here: the sample's dns log, head only)."""
    from slidewise.bench.update_patterns_inputs import load_links, sample_dir

    with open(sample_dir() / "dns.csv") as f:
        (tmp_path / "dns.csv").write_text("".join(next(f) for _ in range(301)))
    links, _, info = load_links(tmp_path)
    assert info["rows"] == 300 and info["logs"] == ["dns"] and not info["sample"]


@pytest.mark.slow
def test_real_engine_tiny_strategies_agree(tmp_path):
    report = up.run_update_patterns_bench(tmp_path, scale=0.05, source="both", verify_rows=True, budget_s=5.0, repeats=1)
    errors = [
        (src, e, pt["window"], k, s["error"])
        for src, r in report["sources"].items()
        for e, x in r["experiments"].items()
        for pt in x["points"]
        for k, s in pt["series"].items()
        if "error" in s
    ]
    assert errors == []
    assert report["mismatches"] == []


def test_acceptance_and_state_after_fill_with_fake_engine(tmp_path):
    def runner(text, streams, strategy, partitions, lateness, collect=False, *, options=None):
        stats, results = fake_runner(text, streams, strategy, partitions, lateness, collect, options=options)
        n = sum(len(df) for df in streams.values())
        held = n if strategy == "nt" else max(1, n // 8)  # the fake state grows with the input
        stats.update(state_area=held * n, state_span=n, state_tuples_avg=held, state_by_operator={"window": {"area": held * n if strategy == "nt" else 0}})
        return stats, results

    exps = tuple(e for e in up.EXPERIMENTS if e.name in ("q1_selective", "q2_src"))
    report = up.run_update_patterns_bench(tmp_path, scale=0.05, source="generated", runner=runner, experiments=exps, plot=False)
    src = report["sources"]["generated"]
    nt = src["experiments"]["q2_src"]["points"][-1]["series"]["NT"]
    assert nt["state_tuples_avg_after_fill"] > 0 and "window" in nt["state_by_operator_after_fill"]
    acc = report["acceptance"]["generated"]
    assert acc == src["acceptance"]
    q2 = acc["q2_src"]
    assert q2["window"] == max(src["windows"])
    assert {"time_ratio_nt_over_upa", "time_met", "state_ratio_upa_over_nt", "state_met", "nt_state_by_operator", "upa_state_by_operator"} <= set(q2)
    assert q2["state_ratio_upa_over_nt"] < 0.25 and q2["state_met"]
    assert {"time_ratio_nt_over_upa50", "met"} <= set(acc["q1_selective"])
    assert json.loads((tmp_path / "update_patterns.json").read_text())["acceptance"] == report["acceptance"]


def test_q2_state_composition_upa_keeps_no_window():
    """δ* over a WKS window needs no copy of the window (Golab's thesis §3.5.2); NT keeps it plus counts."""
    from slidewise.cql import parse_plan
    from slidewise.runtime.plan_engine import execute_plan

    link = pd.DataFrame(generate_links(1, 3000, sources=50, destinations=10, seed=1)[0])
    plan = parse_plan(up.Q2_SRC.format(w=1000))
    nt = execute_plan(plan, {"Link1": link}, strategy="nt").stats
    upa = execute_plan(plan, {"Link1": link}, strategy="upa").stats
    assert nt["results"] == upa["results"]
    assert upa["state_by_operator"]["window"]["peak"] == 0
    assert nt["state_by_operator"]["window"]["peak"] == 1001  # [RANGE 1000]: ts-1000 .. ts
    delta_star = upa["state_by_operator"]["distinct-delta-star"]
    assert delta_star["peak"] <= 2 * 50  # output + one auxiliary per value
    assert upa["state_tuples_avg"] * 4 < nt["state_tuples_avg"]
    assert upa["state_tuples_peak"] >= upa["state_tuples_avg"] > 0


def test_time_weighted_state_average():
    """Held state integrates over time: one tuple per 10 time units in a [RANGE 4] window under NT."""
    from slidewise.cql import parse_plan
    from slidewise.runtime.plan_engine import execute_plan

    s = pd.DataFrame({"ts": [0, 10, 20], "a": [1, 2, 3]})
    st = execute_plan(parse_plan("SELECT RSTREAM(*) FROM S [RANGE 4]"), {"S": s}, strategy="nt", span=1).stats
    # exact per-instant accounting (span=1): window holds 1 tuple over [0,5), [10,15), [20,21) (time ends at the last input); span 21
    assert st["state_by_operator"]["window"]["area"] == 5 + 5 + 1
    assert st["state_span"] == 21 and st["state_tuples_peak"] == 2  # window copy + the output's answer
    # spans of several instants sample the state at span ends: the same peak here, the same answers
    sampled = execute_plan(parse_plan("SELECT RSTREAM(*) FROM S [RANGE 4]"), {"S": s}, strategy="nt").stats
    assert sampled["state_tuples_peak"] == 2 and sampled["results"] == st["results"]


def test_cli_missing_zeek_dir_is_one_line_error(tmp_path, capsys):
    from slidewise.cli import main

    missing = tmp_path / "nowhere"
    code = main(["bench", "update-patterns", "--zeek-dir", str(missing), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "Traceback" not in err and "\n" not in err
    assert err == (
        f"slidewise: error: {missing}: the Zeek log directory does not exist (hint: point --zeek-dir "
        "at a directory of Zeek logs as CSV (dns.csv, ssl.csv, ...), or leave it out to use the "
        "bundled sample)"
    )
    assert not (tmp_path / "out").exists()
