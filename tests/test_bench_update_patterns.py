"""``slidewise bench update-patterns`` (seed 003 §3.6): plumbing with a fake engine, then the real path.

No timing assertions (DESIGN §5): only keys, counts and agreement between strategies.
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
    stats = {"results": n + (1 if strategy == wrong else 0), "retractions": n // 2,
             "negative_tuples": 0 if strategy == "upa" else n,
             "state_tuples_peak": n if strategy == "nt" else max(1, n // 8), "seconds": 0.0}
    results = None
    if collect:
        link1 = streams["Link1"]
        # a deletion one instant after each tuple: premature unless the window is 0
        results = pd.DataFrame({"Link1.ts": link1["ts"], "Link1.src": link1["src"],
                                "ts": link1["ts"] + 1, "sign": -1})
    return stats, results


def test_generate_links_shape_and_mix():
    links = generate_links(3, 20_000, sources=500, destinations=50, seed=3)
    assert [sorted(x) for x in links] == [["dst", "protocol", "src", "ts"]] * 3
    for link in links:
        assert link["ts"].tolist() == list(range(20_000))   # one tuple per time unit (§3.6.1)
        share = Counter(link["protocol"].tolist())
        assert abs(share["ftp"] / 20_000 - IP_PROTOCOLS["ftp"]) < 0.01
        assert share["telnet"] > 3 * share["ftp"]             # telnet common, ftp rare
    # same source addresses, Zipf-ranked, on every link; destinations disjoint per link
    top = [Counter(x["src"].tolist()).most_common(1)[0][0] for x in links]
    assert len(set(top)) == 1
    assert not set(links[0]["dst"].tolist()) & set(links[1]["dst"].tolist())
    again = generate_links(3, 20_000, sources=500, destinations=50, seed=3)
    assert all(np.array_equal(a["src"], b["src"]) for a, b in zip(links, again))


def test_premature_fraction():
    res = pd.DataFrame({"Link1.ts": [0, 0, 5, 7], "Link1.src": [1, 1, 2, 3],
                        "ts": [0, 11, 9, 8], "sign": [1, -1, -1, -1]})
    # window 10: a Link1 tuple at 0 is in its window up to 10 -> deleted at 11 by time
    assert up.premature_fraction(res, 10) == {"deletions": 3, "premature": 2, "fraction": 0.6667}


def test_driver_plumbing_with_fake_engine(tmp_path):
    report = up.run_update_patterns_bench(tmp_path, scale=0.05, source="generated", runner=fake_runner,
                                          verify_rows=True)
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
    assert {"upa_speedup_vs_nt", "upa_over_nt_state_tuples_peak", "meets_3x_faster",
            "meets_quarter_state", "window"} <= set(r["q2_src"])
    assert r["q2_src"]["window"] == max(src["windows"])
    assert r["q2_src"]["upa_over_nt_state_tuples_peak"] == pytest.approx(1 / 8, rel=0.05)
    assert {"upa50_speedup_vs_nt", "upa50_beats_nt"} <= set(r["q1_selective"])
    assert r["q3_premature_fraction_per_window"] == [1.0] * len(src["windows"])
    assert {"generated", "mismatches", "bench_wall_s", "files"} <= set(data["summary"])


def test_driver_reports_disagreeing_strategies(tmp_path):
    def runner(*a, **kw):
        return fake_runner(*a, **kw, wrong="direct")

    exps = tuple(e for e in up.EXPERIMENTS if e.name == "q2_src")
    report = up.run_update_patterns_bench(tmp_path, scale=0.05, source="generated", runner=runner,
                                          experiments=exps, plot=False)
    bad = report["mismatches"]
    assert bad and {m["experiment"] for m in bad} == {"q2_src"}
    assert bad[0]["counts"]["DIRECT"] == bad[0]["counts"]["NT"] + 1


def test_engine_errors_are_recorded_not_fatal(tmp_path):
    def runner(text, streams, strategy, *a, **kw):
        if strategy == "direct":
            raise RuntimeError("not built yet")
        return fake_runner(text, streams, strategy, *a, **kw)

    exps = tuple(e for e in up.EXPERIMENTS if e.name == "q2_pair")
    report = up.run_update_patterns_bench(tmp_path, scale=0.05, source="generated", runner=runner,
                                          experiments=exps, plot=False)
    pt = report["sources"]["generated"]["experiments"]["q2_pair"]["points"][0]
    assert "not built yet" in pt["series"]["DIRECT"]["error"] and "ms_per_1000" in pt["series"]["NT"]


def test_zeek_links_are_out_of_order_and_complete():
    from slidewise.bench.update_patterns_inputs import default_dir, load_links
    try:
        default_dir()
    except Exception:  # noqa: BLE001
        pytest.skip("Zeek data set not present")
    links, arrival, info = load_links()
    assert sum(len(df) for df in links.values()) == info["rows"]
    for name, df in links.items():
        assert list(df.columns) == ["ts", "src", "dst", "protocol"]
        assert np.all(np.diff(arrival[name]) >= 0)
        assert np.all(arrival[name] >= df["ts"].to_numpy())
    assert max(v["max_lateness_ms"] for v in info["per_link"].values()) > 100_000   # real lateness


@pytest.mark.slow
def test_real_engine_tiny_strategies_agree(tmp_path):
    pytest.importorskip("slidewise.runtime.plans")
    if not hasattr(pytest.importorskip("slidewise.cql"), "parse_plan"):
        pytest.skip("slidewise.cql.parse_plan not written yet")
    report = up.run_update_patterns_bench(tmp_path, scale=0.05, source="both", verify_rows=True,
                                          budget_s=5.0)
    errors = [(src, e, pt["window"], k, s["error"]) for src, r in report["sources"].items()
              for e, x in r["experiments"].items() for pt in x["points"]
              for k, s in pt["series"].items() if "error" in s]
    assert errors == []
    assert report["mismatches"] == []
