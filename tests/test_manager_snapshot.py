"""The query manager's windows on disk (:mod:`slidewise.manager.snapshot`): a manager restored from a snapshot
answers every later window as the uninterrupted manager does."""

from __future__ import annotations

import numpy as np
import pytest

from slidewise.errors import ExecutionError
from slidewise.manager import snapshot
from slidewise.manager.core import QueryManager

SCHEMAS = {"S": {"src": "int", "bytes": "float", "tag": "str"}}
T, N = 10, 4
QUERIES = {
    "sums": "SELECT RSTREAM(S.src, SUM(S.bytes) AS b, COUNT(*) AS n) FROM S [RANGE 39 SLIDE 10] GROUP BY S.src",
    "tops": "SELECT RSTREAM(S.tag, TOPK(2, S.src) AS t, MAX(S.bytes) AS m) FROM S [RANGE 29 SLIDE 20] GROUP BY S.tag",
}


def batch(rng, lo: int, hi: int, rows: int) -> tuple[np.ndarray, dict]:
    ts = np.sort(rng.integers(lo, hi, rows))
    tags = np.array(["a", "b", "c"], object)[rng.integers(0, 3, rows)]
    return ts, {"src": rng.integers(0, 3, rows), "bytes": rng.random(rows).round(2), "tag": tags}


def answers(qm: QueryManager) -> dict[str, dict[int, list]]:
    """Per query, its rows by the instant answered."""
    out: dict[str, dict[int, list]] = {}
    for name in qm.queries:
        for _, ts, _, row in qm.results(name):
            out.setdefault(name, {}).setdefault(ts, []).append(row)
    return out


def manager() -> QueryManager:
    qm = QueryManager(SCHEMAS, T, N, scheduling="edf")
    for name, text in QUERIES.items():
        qm.register(name, text)
    return qm


@pytest.mark.parametrize("cut", [3, 9, 14])
def test_a_manager_restored_from_a_snapshot_answers_as_the_uninterrupted_one(tmp_path, cut):
    rng = np.random.default_rng(cut)
    batches = [batch(rng, 5 * j, 5 * j + 5, 7) for j in range(40)]  # half a sub-window each: snapshots mid sub-window
    whole = manager()
    for ts, cols in batches:
        whole.append("S", ts, cols)
        whole.run_due()
    first = manager()
    for ts, cols in batches[:cut]:
        first.append("S", ts, cols)
        first.run_due()
    snapshot.save(first, tmp_path / "w", {"offsets": cut})
    assert snapshot.extra(tmp_path / "w") == {"offsets": cut}
    again = manager()
    assert snapshot.load(again, tmp_path / "w") == {"offsets": cut}
    for ts, cols in batches[cut:]:
        again.append("S", ts, cols)
        again.run_due()
    want, got = answers(whole), answers(again)
    for name in QUERIES:
        later = {ts: rows for ts, rows in want[name].items() if ts >= cut * 5}
        assert later and {ts: got[name][ts] for ts in later} == later, name
    kept = sorted(p.name for p in (tmp_path / "w").iterdir())  # bounded by the window: n sub-windows and the open one
    assert len(kept) <= N + 1 and "S-open.arrow" in kept


def test_a_damaged_snapshot_is_one_error(tmp_path):
    qm = manager()
    qm.append("S", *batch(np.random.default_rng(0), 0, 25, 9))
    snapshot.save(qm, tmp_path, {})
    (tmp_path / "S-0.arrow").write_bytes(b"x")
    with pytest.raises(ExecutionError, match="cannot read the windows' snapshot") as e:
        snapshot.load(manager(), tmp_path)
    assert "delete the state directory's windows/" in e.value.hint


def test_restored_queries_do_not_answer_a_window_again(tmp_path):
    """A restored query runs again at once (its task is fresh), over the windows put back: the window it answered
    last before the restart is skipped, and its sequence numbers go on."""
    rng = np.random.default_rng(5)
    first = manager()
    for j in range(6):
        first.append("S", *batch(rng, 10 * j, 10 * j + 10, 9))
        first.run_due()
    first.save(tmp_path / "queries.json")
    snapshot.save(first, tmp_path / "w", {})
    again = QueryManager(SCHEMAS, T, N, scheduling="edf")
    assert again.restore(tmp_path / "queries.json") == list(QUERIES)
    snapshot.load(again, tmp_path / "w")
    assert again.run_due() > 0 and all(again.results(name) == [] for name in QUERIES)
    ts, cols = batch(rng, 60, 75, 9)
    again.append("S", ts, cols)
    first.append("S", ts, cols)
    again.run_due()
    first.run_due()
    for name in QUERIES:  # the same rows under the same sequence numbers as the uninterrupted manager's
        new = again.results(name)
        assert new and new == first.results(name, new[0][0] - 1) and new[-1][0] == first.queries[name].seq
