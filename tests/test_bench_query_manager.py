"""``slidewise bench query-manager`` at a small scale: the conclusions of Golab's thesis §7.5, from the JSON."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("matplotlib")

from slidewise.bench.query_manager import run_query_manager_bench, simulate  # noqa: E402
from slidewise.cli import main  # noqa: E402


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    run_query_manager_bench(out, ts=(100,), ns=(10, 40), queries=20, duration=4000, trials=1)
    assert (out / "query-manager.png").stat().st_size > 0
    return json.loads((out / "query-manager.json").read_text())


def test_the_thesis_conclusions_hold(report):
    assert report["conclusions"] == dict.fromkeys(report["conclusions"], True)


def test_ttu_does_not_abort_and_lws_aborts_more_with_longer_windows(report):
    """Fig. 7.8: Algorithm 8 aborted nothing; Algorithm 7 aborts more as n grows."""
    runs = {(r["policy"], r["n"]): r for r in report["runs"]}
    assert runs["ttu", 10]["aborts"] == runs["ttu", 40]["aborts"] == 0
    assert 0 < runs["lws", 10]["aborted_pct"] < runs["lws", 40]["aborted_pct"]
    assert runs["serial", 40]["one_time_response"] > 2 * runs["ttu", 40]["one_time_response"]


def test_a_run_is_deterministic():
    assert simulate("ttu", 50, 8, duration=1000, seed=3) == simulate("ttu", 50, 8, duration=1000, seed=3)


def test_bad_options_are_one_line_errors(capsys):
    assert main(["bench", "query-manager", "--trials", "0"]) == 2
    assert capsys.readouterr().err.strip() == "slidewise: error: --trials must be positive, got 0"
