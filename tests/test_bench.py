"""Smoke tests of ``slidewise bench joins`` on tiny inputs (no timing assertions)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from slidewise.bench import joins as bench_joins
from slidewise.bench.common import PeakMemory, load_streams, nice_round, save_streams
from slidewise.bench.peers import band_join_from, verify_sql
from slidewise.errors import PlanError


def _fallback_generate(rates, distinct, n_tuples, *, seed=0):
    """The paper's generator (seed 000 §6.1), for when runtime.generate is not there."""
    rng = np.random.default_rng(seed)
    p = np.asarray(rates, float) / sum(rates)
    sid = rng.choice(len(rates), size=n_tuples, p=p)
    ts = np.arange(n_tuples, dtype=np.int64)
    out = []
    for i, v in enumerate(distinct):
        m = sid == i
        out.append({"ts": ts[m], "a": rng.integers(1, v + 1, int(m.sum())),
                    "x": rng.integers(0, 100, int(m.sum()))})
    return out


@pytest.fixture
def generator(monkeypatch):
    try:
        from slidewise.runtime.generate import generate  # noqa: F401
    except ImportError:
        monkeypatch.setattr(bench_joins, "_generate", _fallback_generate)


def _second_algorithm() -> str:
    from slidewise.operators.joins import algorithms
    algos = algorithms()
    for name in ("hash", "nlj", "naive"):
        if name in algos:
            return name
    pytest.skip("no per-tuple join algorithm registered yet")


def test_joins_bench_smoke(tmp_path, generator):
    from slidewise.operators.joins import algorithms
    if "columnar" not in algorithms():
        pytest.skip("columnar operator not registered yet")
    other = _second_algorithm()
    report = bench_joins.run_joins_bench("W2", tuples=3000, algorithms=["columnar", other, "duckdb"],
                                         out_dir=str(tmp_path), chunk_rows=512, progress=False)
    data = json.loads((tmp_path / "joins.json").read_text())
    assert (tmp_path / "joins.png").stat().st_size > 0
    assert data["machine"]["cpu_count"] >= 1 and "numpy" in data["machine"]
    w = data["workloads"]["W2"]
    assert w["tuples"] == 3000
    duck = w["duckdb"]
    assert "error" not in duck, duck.get("traceback")
    assert duck["runs"]["threads_1"]["threads"] == 1
    assert duck["counts_match"] is True and duck["checksums_match"] is True
    assert "speedup_vs_duckdb" in w
    for name in ("columnar", other):
        e = w["algorithms"][name]
        assert "error" not in e, e.get("traceback")
        for key in ("tuples", "tuples_per_s", "results", "results_per_s",
                    "comparisons_per_tuple", "peak_rss_mb", "semantics"):
            assert key in e
        assert e["counts_match"] is True and e["checksums_match"] is True
        assert e["expected_results"] == e["results"]
    col = w["algorithms"]["columnar"]
    assert col["tuples"] == 3000 and not col["truncated"]
    assert col["results"] == duck["results"] > 0
    ms = data["memory_scaling"]
    assert ms["small"]["tuples"] == 300 and ms["large"]["tuples"] == 3000
    assert report["workloads"]["W2"]["algorithms"]["columnar"]["results"] == col["results"]


def test_prefix_positions_follow_global_order(tmp_path):
    # S1 and S2 tie at ts=2: the stream listed first arrives first (DESIGN §1)
    path = save_streams(tmp_path / "s.npz", [
        {"ts": np.array([0, 2, 5]), "a": np.array([1, 2, 3]), "x": np.zeros(3, int)},
        {"ts": np.array([1, 2]), "a": np.array([4, 5]), "x": np.zeros(2, int)}])
    s1, s2 = load_streams(path)
    assert s1["pos"].tolist() == [0, 2, 4] and s2["pos"].tolist() == [1, 3]
    p1, p2 = load_streams(path, 3)
    assert p1["a"].tolist() == [1, 2] and p2["a"].tolist() == [4]


def test_duckdb_band_join_matches_oracle_semantics():
    duckdb = pytest.importorskip("duckdb")
    from slidewise.model.batch import Tup
    from oracle import oracle

    wl = bench_joins.Workload("t", "", (1, 1, 1), (3, 2, 4), (2, 2, 2), 40)
    rng = np.random.default_rng(7)
    sid, a = rng.integers(0, 3, 40), rng.integers(0, 2, 40)
    ts = np.sort(rng.integers(0, 25, 40))
    tuples = [Tup(int(s), i, int(t), 1, {"a": int(v)}) for i, (s, t, v) in enumerate(zip(sid, ts, a))]
    con = duckdb.connect()
    for i, alias in enumerate(wl.aliases):
        rows = [(t.pos, t.ts, t.vals["a"]) for t in tuples if t.stream == i]
        con.execute(f'CREATE TABLE "{alias}" (pos BIGINT, ts BIGINT, a BIGINT)')
        if rows:
            con.executemany(f'INSERT INTO "{alias}" VALUES (?, ?, ?)', rows)
    for d, restore in ((None, True), (3, False)):
        want = oracle(wl.query(d, restore), tuples, restore=restore)
        row = con.execute(verify_sql(wl.aliases, list(wl.windows), [(40, d), (20, d)])).fetchone()
        assert row[0] == sum(want.values())
        assert list(row[1:4]) == [sum(k[0][i] * c for k, c in want.items()) for i in range(3)]
        assert row[4] == sum(c for k, c in want.items() if max(k[0]) < 20)
    assert "JOIN" in band_join_from(wl.aliases, list(wl.windows))


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
    expect = {"columnar": ("eager", None), "hash": ("eager", None), "nlj-lazy-expiration": ("eager", None),
              "hash-lazy": ("lazy, no restore", 10), "lazy": ("lazy, no restore", 10),
              "lazy-restore": ("lazy, restore", 10)}
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
