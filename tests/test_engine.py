"""The embedded engine end to end: files in, results out, equal to the oracle."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

import slidewise
from tests.oracle import oracle
from tests.streams import join_cases


def _frames(query, tuples):
    """Per-source DataFrames in input order (the engine re-derives global order)."""
    frames = {}
    for i, ref in enumerate(query.streams):
        rows = [t for t in tuples if t.stream == i]
        frames[ref.source] = pd.DataFrame({"ts": [t.ts for t in rows], **{c: [t.vals[c] for t in rows] for c in ("a", "b", "x")}}, dtype="int64")
    return frames


@settings(max_examples=30)
@given(join_cases(predicates=("common", "theta")), st.integers(1, 9))
def test_engine_matches_oracle(case, chunk_rows):
    query, tuples = case
    got = slidewise.run(query, _frames(query, tuples), chunk_rows=chunk_rows)
    want = oracle(query, tuples)
    assert got.stats["results"] == sum(want.values())
    by_pos = {t.pos: t for t in tuples}
    cols = [f"{ref.alias}.{c}" for ref in query.streams for c in ("ts", "a", "b", "x")]
    want_rows = sorted(
        tuple(v for p in members for v in (by_pos[p].ts, *by_pos[p].vals.values())) + (ts, exp) for (members, ts, exp, _), count in want.items() for _ in range(count)
    )
    got_rows = sorted(map(tuple, got.results[cols + ["ts", "exp"]].values.tolist())) if len(got.results) else []
    assert got_rows == want_rows


def test_self_join_and_select_list(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text("ts,k,v\n1,1,10\n2,1,20\n3,2,30\n")
    r = slidewise.run("SELECT a.v, b.v AS w FROM s [RANGE 5] AS a, s [RANGE 5] AS b WHERE a.k = b.k", {"s": str(path)})
    assert list(r.results.columns) == ["a.v", "w", "ts", "exp", "sign"]
    # each copy of a tuple joins the other stream's copies: 1-1, 1-2, 2-1, 2-2, 3-3
    assert sorted(map(tuple, r.results[["a.v", "w"]].values.tolist())) == [(10, 10), (10, 20), (20, 10), (20, 20), (30, 30)]


def test_results_written_to_every_format(tmp_path):
    a = tmp_path / "a.csv"
    a.write_text("ts,k\n1,1\n2,1\n")
    for ext in ("csv", "jsonl", "parquet"):
        out = tmp_path / f"r.{ext}"
        r = slidewise.run("SELECT * FROM A [RANGE 5] AS x, A [RANGE 5] AS y WHERE x.k = y.k", {"A": str(a)}, out=str(out))
        assert r.stats["results"] == 4
        frame = {"csv": pd.read_csv, "jsonl": lambda p: pd.read_json(p, lines=True), "parquet": pd.read_parquet}[ext](out)
        assert len(frame) == 4 and list(frame.columns)[-3:] == ["ts", "exp", "sign"]


def test_late_rows_are_counted_not_dropped(tmp_path):
    a = tmp_path / "a.csv"
    a.write_text("ts,k\n10,1\n20,1\n5,1\n30,1\n")
    b = tmp_path / "b.csv"
    b.write_text("ts,k\n11,1\n")
    rej = tmp_path / "rejects.csv"
    r = slidewise.run("SELECT * FROM A [RANGE 100], B [RANGE 100] WHERE A.k = B.k", {"A": str(a), "B": str(b)}, lateness=0, rejects=str(rej))
    assert r.stats["rejects"] == 1
    assert r.stats["inputs"] == {"A": 3, "B": 1}
    text = rej.read_text()
    assert "late" in text and "a.csv" in text


def test_memory_state_bounded_on_long_input():
    rng = np.random.default_rng(1)
    n = 200_000
    stream = rng.integers(0, 2, n)
    frames = {name: pd.DataFrame({"ts": np.flatnonzero(stream == i), "a": rng.integers(0, 100, int((stream == i).sum()))}) for i, name in enumerate(("S1", "S2"))}
    r = slidewise.run("SELECT * FROM S1 [RANGE 100], S2 [RANGE 100] WHERE S1.a = S2.a", frames, collect=False, chunk_rows=10_000)
    assert r.stats["state_tuples_peak"] < 10_000 + 2 * 200  # one chunk plus the windows
