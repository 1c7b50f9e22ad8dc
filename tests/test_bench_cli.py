"""``slidewise bench EXPERIMENT``: a subcommand per experiment with its own options and a summary table."""

from __future__ import annotations

import json

import pytest
from rich.console import Console

from slidewise.bench.cli import build_parser, print_table
from slidewise.cli import main

EXPERIMENTS = {
    "joins": "--time-budget",
    "aggregation": "--rounds",
    "asymmetric": "--profile",
    "allocation": "--scale",
    "ordering": "--rounds",
    "table8": "--rounds",
    "update-patterns": "--zeek-dir",
    "spark": "--workload",
    "frequent": "--tuples",
    "sharing": "--queries",
    "query-manager": "--trials",
}


@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
def test_every_experiment_has_its_own_help(name, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["bench", name, "--help"])
    assert stop.value.code == 0
    text = capsys.readouterr().out
    assert text.startswith(f"usage: slidewise bench {name}") and EXPERIMENTS[name] in text and "--out" in text


def test_bench_lists_the_experiments_and_refuses_others(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["bench", "--help"])
    assert stop.value.code == 0
    listing = capsys.readouterr().out
    assert all(name in listing for name in EXPERIMENTS)
    with pytest.raises(SystemExit) as stop:
        main(["bench", "nope"])
    assert stop.value.code == 2 and "invalid choice: 'nope'" in capsys.readouterr().err


def test_an_option_of_another_experiment_is_refused(capsys):
    """Flags belong to their experiment: --zeek-dir means nothing to joins."""
    with pytest.raises(SystemExit) as stop:
        build_parser().parse_args(["joins", "--zeek-dir", "x"])
    assert stop.value.code == 2 and "unrecognized arguments: --zeek-dir x" in capsys.readouterr().err


def test_bad_values_are_one_line_errors(capsys):
    assert main(["bench", "ordering", "--rounds", "0"]) == 2
    assert capsys.readouterr().err.strip() == "slidewise: error: --rounds must be positive, got 0 (hint: e.g. --rounds 7)"


def test_summary_table_shows_nested_sections():
    console = Console(record=True, width=100)
    print_table("slidewise bench x", {"rate": 1234567.0, "ok": True, "files": {"json": "out/x.json"}, "windows": [20, 80]}, console=console)
    text = console.export_text()
    assert "slidewise bench x" in text and "1,234,567" in text and "20, 80" in text
    assert "files" in text and "  json" in text and "out/x.json" in text


def test_update_patterns_prints_a_table_and_writes_json(tmp_path, capsys):
    """A short run on generated links (no Zeek directory needed): table on stderr, JSON in --out."""
    code = main(["bench", "update-patterns", "--scale", "0.02", "--source", "generated", "--time-budget", "0.5", "--out", str(tmp_path)])
    assert code == 0
    err = capsys.readouterr().err
    assert "slidewise bench update-patterns" in err and "acceptance" in err and "Traceback" not in err
    report = json.loads((tmp_path / "update_patterns.json").read_text())
    assert report["mismatches"] == [] and "generated" in report["summary"]
