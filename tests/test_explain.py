"""``slidewise explain``: golden text output, the JSON fields, and ``--stats`` errors.

The golden file is Golab & Özsu's Table 5 query (App. B worked example, 16000)
under ``--algorithm nlj``. After an intended change of the text, regenerate
it with ``SLIDEWISE_UPDATE_GOLDEN=1 pytest tests/test_explain.py`` and review
the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from slidewise.cli import main

FIXTURES = Path(__file__).parent / "fixtures" / "explain"
Q4 = "SELECT * FROM S1 [RANGE 100], S2 [RANGE 100], S3 [RANGE 200], S4 [RANGE 100] WHERE S1.a = S2.a AND S2.a = S3.a AND S3.a = S4.a"
TABLE5 = ["--stats", "S1:rate=10,distinct=500", "--stats", "S2:rate=1,distinct=50", "--stats", "S3:rate=1,distinct=40", "--stats", "S4:rate=3,distinct=5"]
SKEWED = ["--stats", "S1:rate=1,distinct=50", "--stats", "S2:rate=1,distinct=50", "--stats", "S3:rate=1,distinct=50", "--stats", "S4:rate=10,distinct=50"]


def explain(capsys, *args) -> str:
    assert main(["explain", *args]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize(
    "name,args",
    [
        ("table5_nlj", [Q4, *TABLE5, "--algorithm", "nlj"]),
        (
            "lazy_general",
            [
                Q4.replace("]", " SLIDE 20]"),
                *SKEWED,
                "--algorithm",
                "general-lazy",
            ],
        ),
    ],
)
def test_explain_text_golden(capsys, name, args):
    out = explain(capsys, *args)
    golden = FIXTURES / f"{name}.txt"
    if os.environ.get("SLIDEWISE_UPDATE_GOLDEN"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(out)
    assert out == golden.read_text()


def test_explain_golden_carries_the_papers_numbers():
    text = (FIXTURES / "table5_nlj.txt").read_text()
    assert "predicted 16,000 comparisons per time unit" in text
    for origin, cost in (("S1", "3,800"), ("S2", "3,800"), ("S3", "2,400"), ("S4", "6,000")):
        assert f"new {origin:<8} {cost:>9}" in text
    assert "S2,S1,S3,S4                    19,600" in text and "86,850  most expensive" in text


def test_explain_json_fields(capsys):
    info = json.loads(explain(capsys, Q4, *TABLE5, "--json", "--algorithm", "hash", "--buckets", "5"))
    assert info["algorithm"] == "hash"
    assert info["orders"]["S2"] == ["S2", "S1", "S3", "S4"] and len(info["orders"]) == 4
    assert info["predicted_cost"] == pytest.approx(info["alternatives"]["S1,S2,S3,S4"])
    assert len(info["alternatives"]) == 24 and info["alternatives_priced"] == 24
    assert info["stats"]["source"] == "declared"
    assert info["stats"]["streams"]["S1"] == {"rate": 10, "window": 100, "window_kind": "range", "tuples": 1000, "distinct": {"a": 500}, "source": "declared"}
    assert info["buckets"] == {"S1": 5, "S2": 5, "S3": 5, "S4": 5}
    loops = info["probes"]["S1"]["loops"]
    assert [lp["access"] for lp in loops] == ["new tuple", "hash b=5", "hash b=5", "hash b=5"]
    assert info["algorithms"]["nlj"]["predicted_cost"] == 16000
    assert info["search"]["method"] == "exact"


def test_explain_defaults_and_forced_order(capsys):
    info = json.loads(explain(capsys, Q4, "--json", "--order", "S4,S3,S2,S1"))
    assert info["algorithm"] == "columnar" and info["join_order"] == ["S4", "S3", "S2", "S1"]
    assert info["stats"]["source"] == "default" and info["model"]["algorithm"] == "hash"
    assert any("uniform defaults" in r for r in info["reasons"])
    assert info["search"]["method"] == "forced with --order"
    text = explain(capsys, Q4, "--search", "heuristic", "--algorithm", "nlj", *TABLE5)
    assert "search       heuristic" in text and "S1, S2, S3, S4   predicted 16,000" in text


def test_explain_general_lazy_shows_per_origin_orders(capsys):
    q = Q4.replace("[RANGE 100]", "[RANGE 100 SLIDE 40]").replace("[RANGE 200]", "[RANGE 200 SLIDE 40]")
    info = json.loads(
        explain(
            capsys,
            q,
            "--json",
            "--algorithm",
            "general-lazy",
            *SKEWED,
        )
    )
    assert info["model"]["kind"] == "general" and info["orders"]["S4"][-1] == "S4"
    assert set(info["per_origin_alternatives"]) == {"S1", "S2", "S3", "S4"}


def test_explain_single_stream(capsys):
    out = explain(capsys, "SELECT * FROM S [RANGE 5] WHERE S.a > 3")
    assert "algorithm    select" in out


# ------------------------------------------------------------- --stats ----


def _error(capsys, *args) -> str:
    code = main(["explain", Q4, *args])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith("slidewise: error:") and "\n" not in err
    return err


@pytest.mark.parametrize(
    "args,needles",
    [
        (["--stats", "S9:rate=1,distinct=5"], ["unknown stream 'S9'", "S1, S2, S3, S4"]),
        (["--stats", "S1:speed=3"], ["unknown field 'speed'", "S1", "rate, distinct"]),
        (["--stats", "S1:rate=fast,distinct=5"], ["rate of stream S1", "positive number", "'fast'"]),
        (["--stats", "S1:rate=-2,distinct=5"], ["rate of stream S1", "positive number"]),
        (["--stats", "S1rate=1"], ["bad --stats", "STREAM:field=value"]),
        (["--stats", "S1:rate"], ["bad field 'rate'", "S1"]),
        (["--stats", "S1:rate=1,rate=2,distinct=5"], ["rate of stream S1 is given twice"]),
        (["--stats", "S1:rate=1,distinct.q=5"], ["S1 is not joined on 'q'", "join attributes: a"]),
        (
            ["--stats", "S1:distinct=5", "--stats", "S2:rate=1,distinct=5", "--stats", "S3:rate=1,distinct=5", "--stats", "S4:rate=1,distinct=5"],
            ["no rate for stream S1", "--stats S1:rate=1"],
        ),
        (
            ["--stats", "S1:rate=1,distinct=5", "--stats", "S2:rate=1", "--stats", "S3:rate=1,distinct=5", "--stats", "S4:rate=1,distinct=5"],
            ["no distinct count for S2.a", "distinct=V"],
        ),
        (["--stats", "S1:rate=1,distinct=5"], ["no rate for stream S2"]),
    ],
)
def test_stats_errors_name_stream_and_field(capsys, args, needles):
    err = _error(capsys, *args)
    for needle in needles:
        assert needle in err, (needle, err)


def test_run_accepts_stats(tmp_path, capsys):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text("ts,k\n1,1\n2,2\n")
    b.write_text("ts,k\n2,1\n")
    q = "SELECT * FROM A [RANGE 10], B [RANGE 10] WHERE A.k = B.k"
    code = main(
        [
            "run",
            q,
            "--source",
            f"A={a}",
            "--source",
            f"B={b}",
            "--quiet",
            "--stats",
            "A:rate=1,distinct=2",
            "--stats",
            "B:rate=1,distinct=2",
            "--stats-json",
            str(tmp_path / "s.json"),
        ]
    )
    assert code == 0 and json.loads((tmp_path / "s.json").read_text())["results"] == 1
    code = main(["run", q, "--source", f"A={a}", "--source", f"B={b}", "--quiet", "--stats", "C:rate=1"])
    assert code == 2 and "unknown stream 'C'" in capsys.readouterr().err
