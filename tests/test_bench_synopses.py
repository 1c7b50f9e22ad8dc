"""``slidewise bench synopses`` on a small b range: the claims of Golab's thesis §2.3.4, from the JSON."""

from __future__ import annotations

import json
import math

from slidewise.cli import main


def test_bench_synopses_claims(tmp_path, capsys):
    assert main(["bench", "synopses", "--max-b", "64", "--windows", "40", "--groups", "3", "--rounds", "1", "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "synopses.json").read_text())
    assert (tmp_path / "synopses.png").exists()
    pts = report["points"]
    assert [p["b"] for p in pts["interval"]] == [2, 4, 8, 16, 32, 64]
    assert all(p["correct"] for ps in pts.values() for p in ps)
    for p in pts["interval"]:  # about log2 b probes, never more than 2 log2 b
        assert abs(p["probes_mean"] - math.log2(p["b"])) <= 1
        assert p["probes_max"] <= 2 * math.log2(p["b"])
    assert all(p["probes_mean"] == p["probes_max"] == p["b"] for p in pts["basic interval"])
    assert all(p["probes_max"] == 2 for p in pts["running"])  # two running intervals, whatever b
    for basic, inter in zip(pts["basic interval"], pts["interval"]):  # b cells against 2b − 1
        assert basic["cells"] * (2 * basic["b"] - 1) == inter["cells"] * basic["b"]
        assert basic["bytes"] / inter["bytes"] <= 2 / 3
    assert 0.5 <= pts["basic interval"][-1]["bytes"] / pts["interval"][-1]["bytes"] < 0.51
    out = capsys.readouterr().out
    assert "basic interval (MAX)" in out and "answers correct: True" in out


def test_bench_synopses_bad_b(capsys):
    assert main(["bench", "synopses", "--max-b", "1"]) == 2
    assert "--max-b must be at least 2, got 1" in capsys.readouterr().err


def test_measured_space_and_probes_match_cost(tmp_path):
    from slidewise.bench.synopses import run_synopses_bench
    from slidewise.synopses import cost

    report = run_synopses_bench(tmp_path, max_b=16, windows=20, groups=2, rounds=1)
    for name, pts in report["points"].items():
        for p in pts:
            kept, probes = cost(name, p["b"])
            assert p["cells"] == kept * report["groups"] and p["probes_max"] <= probes, (name, p)
    assert cost("interval", 10) == (21, 8) and cost("interval", 1) == (1, 1)
