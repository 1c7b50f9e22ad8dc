"""``slidewise explain`` of general queries: the update-pattern annotated plan (Golab's thesis §3.5).

Golden text of the thesis's Fig. 3.5 query (negation above the join, as
written) under UPA. Regenerate after an intended change with
``SLIDEWISE_UPDATE_GOLDEN=1 pytest tests/test_explain_plans.py`` and review the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from slidewise.cli import main

FIXTURES = Path(__file__).parent / "fixtures" / "explain"
FIG35 = "SELECT RSTREAM(*) FROM S1 [RANGE 10], S2 [RANGE 10] WHERE S1.a = S2.a AND NOT EXISTS (SELECT * FROM S3 [RANGE 10] WHERE S3.a = S1.a)"
QUERY4 = (
    "SELECT RSTREAM(*) FROM L1 [RANGE 100], L3 [RANGE 100] WHERE L1.src = L3.src AND L3.proto = 'ftp' AND NOT EXISTS (SELECT * FROM L2 [RANGE 100] WHERE L2.src = L1.src)"
)


def explain(capsys, *args) -> str:
    assert main(["explain", *args]) == 0
    return capsys.readouterr().out


def test_explain_not_exists_golden(capsys):
    out = explain(capsys, FIG35)
    golden = FIXTURES / "not_exists_upa.txt"
    if os.environ.get("SLIDEWISE_UPDATE_GOLDEN"):
        golden.write_text(out)
    assert out == golden.read_text()
    assert "Join ON S1.a = S2.a  [WK]" in out and "Negation NOT EXISTS ON S1.a = S3.a  [STR]" in out
    assert "calendar queue (10 partitions)" in out


def test_explain_plan_json(capsys):
    info = json.loads(explain(capsys, QUERY4, "--json", "--stats", "L3:distinct.proto=5"))
    assert info["pattern"] == "STR"
    node = info["plan"]
    assert set(node) == {"label", "pattern", "rule", "state", "children"}
    assert node["children"][0]["label"].startswith("Negation")
    assert [a["plan"] for a in info["alternatives"]] == ["RSTREAM((L1 ⋈ σ(L3)) − L2)", "RSTREAM((L1 − L2) ⋈ σ(L3))"]
    assert info["chosen"] == "RSTREAM((L1 ⋈ σ(L3)) − L2)"


@pytest.mark.parametrize("strategy,text", [("nt", "hash table | hash table"), ("direct", "list scanned by exp"), ("upa", "calendar queue (50 partitions)")])
def test_explain_state_depends_on_strategy(capsys, strategy, text):
    out = explain(capsys, FIG35, "--strategy", strategy, "--partitions", "50")
    assert text in out


def test_explain_distinct_form(capsys):
    out = explain(capsys, "SELECT RSTREAM(DISTINCT S1.a) FROM S1 [RANGE 10]")
    assert "Distinct  [WK]" in out and "δ*" in out
    out = explain(capsys, "SELECT RSTREAM(DISTINCT S1.a) FROM S1 [ROWS 10]")
    assert "Distinct  [STR]" in out and "strict (counts)" in out
