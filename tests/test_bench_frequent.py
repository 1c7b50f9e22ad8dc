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
    out = tmp_path_factory.mktemp("bench")
    run_frequent_bench(out, tuples=300_000, zipf_tuples=20_000, ks=(1, 2, 4, 7, 10))
    assert (out / "frequent.png").stat().st_size > 0
    return json.loads((out / "frequent.json").read_text())


def test_delta_falls_and_space_grows(report):
    for name, d in report["accuracy"].items():
        for b in report["bs"]:
            rows = [r for r in d["rows"] if r["b"] == b]
            assert [r["delta"] for r in rows] == sorted((r["delta"] for r in rows), reverse=True), name
            assert [r["over"] for r in rows] == sorted(r["over"] for r in rows), name
            assert [r["space"] for r in rows] == sorted(r["space"] for r in rows), name
        for k in report["ks"]:
            space = [r["space"] for b in report["bs"] for r in d["rows"] if r["b"] == b and r["k"] == k]
            assert space == sorted(space), (name, k)


def test_recall_rises_with_k_on_the_zeek_hosts(report):
    """Where few items exceed δ at small k (source hosts over b = 20 sub-windows, Zipf) recall is near 1
    throughout and need not rise: δ falls with k, so more (and rarer) items count as over the threshold."""
    for name, bs in (("zeek destination hosts", report["bs"]), ("zeek source hosts", report["bs"][1:])):
        for b in bs:
            recall = {r["k"]: r["recall"] for r in report["accuracy"][name]["rows"] if r["b"] == b}
            assert recall[2] <= recall[10] + 1e-9, (name, b)
            assert recall[10] >= 0.9


def test_misra_gries_is_less_accurate(report):
    for name, rows in report["misra_gries"].items():
        a6 = {r["k"]: r for r in report["accuracy"][name]["rows"] if r["b"] == rows[0]["b"]}
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
