"""The accuracy trends of Golab's thesis Fig. 6.3 and the memory claim, asserted from ``bench frequent``'s JSON."""

from __future__ import annotations

import json

import pytest
from rich.console import Console

pytest.importorskip("matplotlib")

from slidewise.bench.cli import print_table  # noqa: E402
from slidewise.bench.frequent import run_frequent_bench, summary  # noqa: E402


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """The thesis's geometry (window 100,000 on the Zipf stream, b = 20, 100, 500 tuples per sub-window), fewer trials and k."""
    out = tmp_path_factory.mktemp("bench")
    run_frequent_bench(out, tuples=300_000, trials=12, ks=(1, 2, 3, 5, 7, 10))
    assert (out / "frequent.png").stat().st_size > 0
    return json.loads((out / "frequent.json").read_text())


def _rows(report, name, b):
    return [r for r in report["accuracy"][name]["rows"] if r["b"] == b]


def test_the_geometry_is_the_thesis(report):
    assert report["accuracy"]["zipf(1.1)"]["window"] == 100_000
    assert [r["sub_windows"] for r in report["accuracy"]["zipf(1.1)"]["rows"] if r["k"] == 1] == [5000, 1000, 200]
    assert {d["window"] for name, d in report["accuracy"].items() if name.startswith("zeek")} == {10_000, 5000}


def test_delta_falls_over_rises_and_space_grows_with_k(report):
    """Per window δᵢ is the k-th largest count and the top-k lists nest, so these hold on every data set and b."""
    for name in report["accuracy"]:
        for b in report["bs"]:
            rows = _rows(report, name, b)
            assert [r["delta"] for r in rows] == sorted((r["delta"] for r in rows), reverse=True), (name, b)
            assert [r["over"] for r in rows] == sorted(r["over"] for r in rows), (name, b)
            assert [r["space"] for r in rows] == sorted(r["space"] for r in rows), (name, b)
            assert rows[0]["k"] == 1 and rows[0]["over"] == 0 and rows[0]["recall"] is None  # at k = 1 δ is at least every count


def test_space_grows_and_delta_rises_with_the_number_of_sub_windows(report):
    """Smaller sub-windows (more of them): more top-k lists, and at k = 1 a larger δ (burstiness on a finer scale).
    At larger k δ need not rise: a sub-window of 20 tuples may hold fewer than k distinct items (δᵢ = 0)."""
    for name in report["accuracy"]:
        for k in report["ks"]:
            at_k = [r for b in report["bs"] for r in _rows(report, name, b) if r["k"] == k]
            assert [r["space"] for r in at_k] == sorted((r["space"] for r in at_k), reverse=True), (name, k)
            if k == 1:
                assert [r["delta"] for r in at_k] == sorted((r["delta"] for r in at_k), reverse=True), name


def test_recall_and_relative_error(report):
    """What holds of Fig. 6.3 (d) and (f) on every data set: recall at k = 10 is at least 0.8, and the most
    sub-windows (b = 20) give the best mean recall and the least mean relative error; at b = 20 the relative
    error falls with k (negative least-squares slope). Recall need not rise with k: δ falls with k, so the
    items over δ at large k include ones barely over it, which Algorithm 6 may miss; at small k the one or
    two items over δ are far above it and always found."""
    for name, d in report["accuracy"].items():

        def mean(b, m):
            vals = [r[m] for r in _rows(report, name, b) if r["recall"] is not None]
            return sum(vals) / len(vals)

        assert all(r["recall"] >= 0.8 for r in d["rows"] if r["k"] == 10), name
        assert mean(20, "recall") >= mean(500, "recall") - 1e-9, name
        assert mean(20, "rel_error") <= mean(500, "rel_error") + 1e-9, name
        assert d["slopes"]["20"]["rel_error"] < 0, name


def test_misra_gries_is_less_accurate(report):
    for name, rows in report["misra_gries"].items():
        a6 = {r["k"]: r for r in _rows(report, name, rows[0]["b"])}
        for r in rows:
            assert r["rel_error"] >= a6[r["k"]]["rel_error"] - 1e-12 or r["recall"] is None


def test_algorithm_6_uses_a_tenth_of_the_exact_memory(report):
    t = report["throughput"]
    assert t["window"] == 100_000
    assert t["topk"]["state_bytes_peak"] * 10 <= t["exact"]["state_bytes_peak"]


def test_summary_is_a_table_of_sections(report):
    """``slidewise bench frequent`` prints its summary through the bench table printer."""
    console = Console(record=True, width=120)
    print_table("slidewise bench frequent", summary(report), console=console)
    text = console.export_text()
    assert "slidewise bench frequent" in text and "zipf(1.1)" in text and "b 20, k 1" in text and "recall" in text
    assert "throughput" in text and "speedup" in text and "memory ratio" in text
