"""``slidewise bench wjoin`` on a small scale: Hammad et al.'s conclusions from the JSON, in the
operators' comparison counts (service times are reported, never asserted)."""

from __future__ import annotations

import json

from slidewise.cli import main


def test_bench_wjoin_conclusions(tmp_path, capsys):
    assert main(["bench", "wjoin", "--tuples", "600", "--max-streams", "4", "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "wjoin.json").read_text())
    assert (tmp_path / "wjoin.png").exists()
    points = report["streams"] + report["gca_lca"]
    assert [(p["n"], p["rates"]) for p in report["streams"]] == [(n, r) for n in (2, 3, 4) for r in ("comparable", "variable")]
    assert all(p["answers_agree"] for p in points) and any(p["runs"]["mw-join"]["results"] for p in points)
    for p in points:  # the planner's model predicts the operators' own counts within a factor 2.5
        for a, run in p["runs"].items():
            model = p["model_comparisons_per_tuple"][a]
            assert run["comparisons_per_tuple"] / 2.5 <= model <= 2.5 * run["comparisons_per_tuple"] + 1, (p["query"], a)
    cmp = {p["n"] if "n" in p else p["w_small"]: {a: r["comparisons_per_tuple"] for a, r in p["runs"].items()} for p in report["gca_lca"]}
    assert all(c["mw-join"] <= c["lca"] < c["gca"] for c in cmp.values())  # LCA beats GCA (Fig. 13), MW-join below both
    for p in report["streams"]:  # HW-join needs the fewest comparisons of the equi-join variants
        assert min(p["runs"], key=lambda a, p=p: p["runs"][a]["comparisons_per_tuple"]) == "hw-join"
    two = [p for p in report["streams"] if p["n"] == 2]  # two streams: NLW-join visits MW-join's rows, and those its scans delete
    assert all(p["runs"]["mw-join"]["comparisons_per_tuple"] == p["runs"]["nlw-join"]["inside_per_tuple"] for p in two)
    assert all(p["runs"]["nlw-join"]["purged_per_tuple"] > 0 for p in two)
    mw_nlw = report["summary"]["MW vs NLW on variable rates (Fig. 9a; Fig. 9c, D switching)"]
    assert len(mw_nlw["holds (service time, CPU time, comparisons)"]) == 3 and mw_nlw["why"] and mw_nlw["paper"]
    assert all(f > 1 for f in mw_nlw["NLW / MW (Fig. 9a n = 2.., then Fig. 9c switching)"]["comparisons"][:3])  # Fig. 9a points, counted
    assert [p["n"] for p in report["form1"]] == [2, 3, 4] and all(p["answers_agree"] and p["results"] for p in report["form1"])
    verdicts = report["summary"]["conclusions (service time, CPU time, comparisons)"]  # wall and CPU time: reported, not asserted
    assert set(verdicts) == {
        "MW beats NLW on variable rates",
        "LCA beats GCA (Fig. 13)",
        "HW fastest equi-join variant",
        "Form 1 W-join at least as fast as [RANGE w] (same path: within 15 % noise)",
    }
    assert verdicts["LCA beats GCA (Fig. 13)"][2] is True and verdicts["HW fastest equi-join variant"][2] is True
    assert all(r["us_per_tuple"] > 0 and r["cpu_us_per_tuple"] >= 0 for p in points for r in p["runs"].values())
    assert len(report["summary"]["load average (1 min): at start, at end"]) == 2
    fit = report["summary"]["per-arrival cost in comparisons (measured; the planner's facts)"]
    assert fit["us per comparison"] > 0 and all(fit[a][0] >= 0 for a in ("mw-join", "nlw-join", "hw-join"))  # a non-negative fit
    assert report["zeek"]["answers_agree"] and "Zeek W-join on the host (Form 3)" in report["summary"]
    assert "slidewise bench wjoin" in capsys.readouterr().err
    _baselines(report, tmp_path)


def _baselines(report: dict, out) -> None:
    """Fig. 7/8 and the ICEIS 2005 operators, in counted work (tuples compared or touched)."""
    assert (out / "wjoin_baselines.png").exists()
    points = report["baselines"]
    assert [p["n"] for p in points] == [2, 3, 4] and all(p["answers_agree"] and p["runs"]["mw-join"]["results"] for p in points)
    for p in points:  # the adapted ripple join and XJoin scan what their periodic purges leave: more than NLW-join and HW-join
        c = {a: r["comparisons_per_tuple"] for a, r in p["runs"].items()}
        assert c["nlw-join"] < c["ripple-join"] and c["mw-join"] < c["ripple-join"] and c["hw-join"] < c["xjoin"] < c["ripple-join"], p["n"]
    verdicts = report["summary"]["baseline conclusions (service time, CPU time, comparisons)"]
    assert [verdicts[k][2] for k in ("NLW beats ripple join (Fig. 7)", "HW beats XJoin (Fig. 8)", "MW beats ripple join (Fig. 7)")] == [True, True, True]
    ice = report["iceis"]
    assert [p["rate_per_s"] for p in ice["sweep"]] == [250, 500, 1000, 2000, 4000] and report["summary"]["answers agree"]
    assert all(p["runs"]["whj"]["results"] for p in ice["sweep"])
    # the circular-buffer hash join's work grows linearly with the input rate, the nested-loops joins' quadratically
    assert 0.8 <= ice["fits"]["whj"]["loglog_slope"] <= 1.3 and abs(ice["fits"]["whj"]["quadratic_share_at_max"]) < 0.2
    assert (
        set(ice["time_fits"]) == {"service time", "CPU time"} and report["summary"]["circular-buffer hash join linear in rate (service time, CPU time, counted work)"][2]
    )
    assert all(ice["fits"][a]["loglog_slope"] >= 1.6 and ice["fits"][a]["quadratic_share_at_max"] > 0.5 for a in ("wnl-join", "wnl-own"))
    for p in ice["sweep"]:  # per arrival: one insert, the expired tuples (about one) and a bucket of matches
        assert p["runs"]["whj"]["comparisons_per_tuple"] < 2.5 < p["runs"]["wnl-join"]["comparisons_per_tuple"]
        assert p["runs"]["wnl-own"]["comparisons_per_tuple"] >= p["runs"]["wnl-join"]["comparisons_per_tuple"]  # it scans tuples beyond the window too
    slow = ice["slow_stream"]["runs"]  # invalidating the opposite window holds the fast stream until the slow one delivers
    assert slow["wnl-own"]["mean_held"] < slow["wnl-join"]["mean_held"] == slow["whj"]["mean_held"]
    assert all(report["summary"]["conclusions (counted work)"].values())
    assert (out / "wjoin_baselines.png").stat().st_size > 0
    switch = report["summary"]["rate switch (Fig. 9c): switching / comparable"]["comparisons_per_tuple"]
    assert set(switch) == {"mw-join", "nlw-join", "hw-join"} and all(v < 1 for v in switch.values())  # the slow phases: fewer D tuples to meet
    nlw_lca = report["summary"]["path W-join (Fig. 14): NLW / LCA, small and large rate variation"]["comparisons_per_tuple"]
    assert [p["variation"] for p in report["path"]] == ["small", "large"] and nlw_lca[0] < nlw_lca[1]  # LCA gains on NLW-join as the rates vary more


def test_bench_wjoin_bad_streams(capsys):
    assert main(["bench", "wjoin", "--max-streams", "1"]) == 2
    assert "--max-streams must be at least 2, got 1" in capsys.readouterr().err


def test_bench_wjoin_zeek_host_join():
    """The Zeek workload (bundled sample): every operator runs the Form 3 W-join and gives the oracle's answer."""
    from slidewise.bench.wjoin import measure
    from slidewise.bench.wjoin_zeek import zeek_point, zeek_streams
    from slidewise.cql.wjoin import parse_wjoin
    from slidewise.model.batch import Tup
    from tests.oracle_wjoin import oracle_wjoin

    p = zeek_point(400)
    assert p["query"] == (
        "SELECT * FROM dns_a, dns_aaaa, ssl WINDOW(dns_a, dns_aaaa) = 20 AND WINDOW(dns_aaaa, ssl) = 200 WHERE dns_a.host = dns_aaaa.host AND dns_aaaa.host = ssl.host"
    )
    assert set(p["runs"]) == {"mw-join", "nlw-join", "hw-join", "gca", "lca", "ripple-join", "xjoin"} and p["skipped"] == {}
    assert p["answers_agree"] and p["tuples"] == sum(p["streams"].values()) == 400 and p["span_s"] > 0
    results = p["runs"]["mw-join"]["results"]
    assert results > 0 and p["planned"] in p["runs"]
    assert all(r["comparisons_per_tuple"] >= 0 and r["us_per_tuple"] >= 0 for r in p["runs"].values())
    aliases, data = zeek_streams(150)  # a prefix small enough for the oracle
    query = parse_wjoin(p["query"])
    tuples = [Tup(int(s), i, int(t), 1, {"host": int(h)}) for i, (s, t, h) in enumerate(zip(data["stream"], data["ts"], data["host"]))]
    expected = sum(oracle_wjoin(query, tuples).values())
    assert aliases == ["dns_a", "dns_aaaa", "ssl"] and expected > 0
    assert {measure(a, p["query"], data)["results"] for a in p["runs"]} == {expected}


def test_bench_wjoin_zeek_needs_three_streams(tmp_path):
    import pytest

    from slidewise.bench.wjoin_zeek import zeek_streams
    from slidewise.errors import SourceError

    (tmp_path / "ssl.csv").write_text("ts,orig_h,resp_h\n1.0,10.0.0.1,10.0.0.2\n")
    with pytest.raises(SourceError, match="the Zeek W-join needs three streams; found ssl"):
        zeek_streams(10, tmp_path)
