"""Smoke tests of ``slidewise bench joins`` on tiny inputs (no timing assertions)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from slidewise.bench import joins as bench_joins
from slidewise.bench.common import PeakMemory, load_streams, nice_round, save_streams
from slidewise.bench.peers import FORMS, count_sql, join_from, materialize_sql, verify_sql
from slidewise.errors import PlanError

#: summary keys ``slidewise bench`` prints, per workload and at the top
SUMMARY_WORKLOAD_KEYS = {
    "tuples",
    "columnar_tuples_per_s",
    "duckdb_band_tuples_per_s",
    "duckdb_bucketed_tuples_per_s",
    "speedup_vs_duckdb",
    "speedup_vs_duckdb_bucketed",
    "speedup_vs_duckdb_cpu",
    "speedup_vs_duckdb_bucketed_cpu",
    "fastest_per_tuple",
    "slowest_per_tuple",
    "hash_vs_nlj",
    "all_counts_match",
}
SUMMARY_KEYS = {
    "reference",
    "workloads",
    "memory_ratio_operator",
    "memory_peaks_mb_operator",
    "memory_ratio_engine",
    "memory_peaks_mb_engine",
    "load_average_1min",
    "bench_wall_s",
    "files",
}


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """One tiny end-to-end run (W2, 3000 tuples; memory checks on 3000 and 30000)."""
    other = "hash"
    out = tmp_path_factory.mktemp("bench")
    report = bench_joins.run_joins_bench("W2", tuples=3000, algorithms=["columnar", other, "duckdb"], out_dir=str(out), chunk_rows=512, progress=False)
    return report, out, other


def test_joins_bench_smoke(smoke):
    report, out, other = smoke
    data = json.loads((out / "joins.json").read_text())
    assert (out / "joins.png").stat().st_size > 0
    assert data["machine"]["cpu_count"] >= 1 and "numpy" in data["machine"]
    assert "load_average_1min" in data["machine"]
    w = data["workloads"]["W2"]
    assert w["tuples"] == 3000
    duck = w["duckdb"]
    assert "error" not in duck, duck.get("traceback")
    assert set(duck["forms"]) == set(FORMS) and duck["forms_agree"] is True
    col = w["algorithms"]["columnar"]
    for key, form in duck["forms"].items():
        assert form["label"] == FORMS[key]
        assert form["runs"]["threads_1"]["threads"] == 1
        assert form["counts_match"] is True and form["checksums_match"] is True
        assert form["results"] == col["results"] > 0
    assert "speedup_vs_duckdb" in w and "speedup_vs_duckdb_bucketed" in w
    for name in ("columnar", other):
        e = w["algorithms"][name]
        assert "error" not in e, e.get("traceback")
        for key in ("tuples", "tuples_per_s", "results", "results_per_s", "comparisons_per_tuple", "peak_rss_mb", "semantics"):
            assert key in e
        assert e["counts_match"] is True and e["checksums_match"] is True
        assert e["expected_results"] == e["results"]
    assert col["tuples"] == 3000 and not col["truncated"]
    assert w["all_results_verified"] is True
    for key in ("memory_scaling", "memory_scaling_engine"):
        ms = data[key]
        assert "error" not in ms["small"] and "error" not in ms["large"], ms
        assert ms["small"]["tuples"] == 3000 and ms["large"]["tuples"] == 30000
        assert ms["small"]["peak_rss_mb"] >= 0 and ms["ratio"] is not None
    # the same generator and windows: the engine finds the results the operator does, 10x input
    eng = data["memory_scaling_engine"]
    assert eng["small"]["results"] > 0 and eng["small"]["algorithm"] == "columnar"
    assert report["workloads"]["W2"]["algorithms"]["columnar"]["results"] == col["results"]


def test_summary_has_what_the_cli_prints(smoke, capsys):
    from slidewise.bench.summary import print_summary

    report, out, _ = smoke
    s = report["summary"]
    assert SUMMARY_KEYS <= set(s)
    w = s["workloads"]["W2"]
    assert SUMMARY_WORKLOAD_KEYS <= set(w)
    assert w["all_counts_match"] is True
    assert w["fastest_per_tuple"]["algorithm"] != "columnar"
    assert s["files"] == {"json": str(out / "joins.json"), "png": str(out / "joins.png")}
    assert json.loads((out / "joins.json").read_text())["summary"]["workloads"]["W2"] == w
    print_summary(s)
    err = capsys.readouterr().err
    for text in ("DuckDB band join", "DuckDB bucketed band join", "by CPU time", "hash / nlj", "memory, operator", "memory, engine", str(out / "joins.png")):
        assert text in err


def test_cli_bench_options(monkeypatch, capsys):
    from slidewise import cli

    seen = {}

    def fake(**kw):
        seen.update(kw)
        return {"summary": bench_joins.summarize({"workloads": {}, "machine": {}})}

    monkeypatch.setattr(bench_joins, "run_joins_bench", fake)
    assert cli.main(["bench", "joins", "--time-budget", "2.5", "--no-peers", "--workload", "W4"]) == 0
    assert seen["time_budget_s"] == 2.5 and seen["peers"] is False and seen["workload"] == "W4"
    assert cli.main(["bench", "joins", "--time-budget", "0"]) != 0
    assert "--time-budget" in capsys.readouterr().err


def test_prefix_positions_follow_global_order(tmp_path):
    # S1 and S2 tie at ts=2: the stream listed first arrives first (docs/semantics.md)
    path = save_streams(
        tmp_path / "s.npz",
        [{"ts": np.array([0, 2, 5]), "a": np.array([1, 2, 3]), "x": np.zeros(3, int)}, {"ts": np.array([1, 2]), "a": np.array([4, 5]), "x": np.zeros(2, int)}],
    )
    s1, s2 = load_streams(path)
    assert s1["pos"].tolist() == [0, 2, 4] and s2["pos"].tolist() == [1, 3]
    p1, p2 = load_streams(path, 3)
    assert p1["a"].tolist() == [1, 2] and p2["a"].tolist() == [4]


@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("seed", [7, 11])
def test_duckdb_forms_match_oracle_semantics(form, seed):
    duckdb = pytest.importorskip("duckdb")
    from slidewise.model.batch import Tup
    from tests.oracle import oracle

    wl = bench_joins.Workload("t", "", (1, 1, 1), (3, 2, 4), (2, 2, 2), 40)
    rng = np.random.default_rng(seed)
    sid, a = rng.integers(0, 3, 40), rng.integers(0, 2, 40)
    ts = np.sort(rng.integers(-14, 14, 40))  # negative ts: DuckDB's // truncates towards zero
    tuples = [Tup(int(s), i, int(t), 1, {"a": int(v)}) for i, (s, t, v) in enumerate(zip(sid, ts, a))]
    con = duckdb.connect()
    for i, alias in enumerate(wl.aliases):
        rows = [(t.pos, t.ts, t.vals["a"], 0) for t in tuples if t.stream == i]
        con.execute(f'CREATE TABLE "{alias}" (pos BIGINT, ts BIGINT, a BIGINT, x BIGINT)')
        if rows:
            con.executemany(f'INSERT INTO "{alias}" VALUES (?, ?, ?, ?)', rows)
    windows = list(wl.windows)
    eager = oracle(wl.query(None, True), tuples, restore=True)
    row = con.execute(count_sql(wl.aliases, windows, form)).fetchone()
    assert row[0] == sum(eager.values()) > 0
    assert list(row[1:]) == [sum(k[0][i] * c for k, c in eager.items()) for i in range(3)]
    mat = con.execute(materialize_sql(wl.aliases, windows, form=form)).fetchall()
    assert sorted((r[:3], r[3], r[4]) for r in mat) == sorted((k[0], k[1], k[2]) for k in eager)
    for d, restore in ((None, True), (3, False)):
        want = oracle(wl.query(d, restore), tuples, restore=restore)
        row = con.execute(verify_sql(wl.aliases, windows, [(40, d), (20, d)], form)).fetchone()
        assert row[0] == sum(want.values())
        assert list(row[1:4]) == [sum(k[0][i] * c for k, c in want.items()) for i in range(3)]
        assert row[4] == sum(c for k, c in want.items() if max(k[0]) < 20)
    sql = join_from(wl.aliases, windows, form=form)
    assert ("_nb" in sql) == (form == "bucketed")
    with pytest.raises(ValueError):
        join_from(wl.aliases, windows, form="cross")


def test_helpers():
    assert nice_round(23456) == 23000 and nice_round(57) == 57 and nice_round(0) == 1
    mem = PeakMemory().start()
    block = np.ones(4_000_000)  # 32 MB
    block[::512] = 2.0
    mem.stop()
    assert mem.peak_mb >= mem.baseline_mb
    with pytest.raises(PlanError):
        bench_joins._select_workloads("W9")
    assert bench_joins._select_workloads("all") == ["W2", "W4"]


def test_variants_label_lazy_algorithms():
    from slidewise.operators.joins import algorithms

    algos = algorithms()
    wl = bench_joins.WORKLOADS["W2"]
    expect = {
        "columnar": ("eager", None),
        "hash": ("eager", None),
        "nlj-lazy-expiration": ("eager", None),
        "hash-lazy": ("lazy, no restore", 10),
        "lazy": ("lazy, no restore", 10),
        "lazy-restore": ("lazy, restore", 10),
    }
    for name, (semantics, slide) in expect.items():
        if name not in algos:
            continue
        variant, why = bench_joins._variant(algos[name], wl, 10)
        assert why is None and variant["semantics"] == semantics and variant["slide"] == slide
        if slide:
            assert variant["label"].startswith(f"{name} (SLIDE 10")
    if "count" in algos:  # count windows only: W2 has time windows
        variant, why = bench_joins._variant(algos["count"], wl, 10)
        assert variant is None and "count" in why
