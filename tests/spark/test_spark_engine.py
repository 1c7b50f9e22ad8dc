"""The Spark engine end to end on local[2]: oracle equality, restart, live directories, the CLI.

Inputs are the fixed random cases of ``harness.case`` written as CSV files;
results are compared as multisets of ``SELECT *`` rows with the oracle's and
the local engine's (``test_logic.py`` covers many more cases without a JVM).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

import slidewise
from slidewise.cli import main
from slidewise.spark import read_results, start_spark
from slidewise.spark.session import find_java
from tests.spark.harness import case, frames_of, oracle_rows, result_rows

pytestmark = pytest.mark.spark

CASES = [("time", 2, 0), ("time", 4, 2), ("count", 3, 3), ("lazy", 3, 4), ("lazy-restore", 2, 5), ("band", 3, 6), ("different", 3, 7)]
STATS_KEYS = {"inputs", "results", "rejects", "rejects_by_reason", "micro_batches", "state_rows", "state_bytes", "seconds", "tuples_per_second", "algorithm", "warnings"}


def write_case(query, tuples, root: Path, parts: int = 1) -> dict[str, str]:
    """Each source as a directory of ``parts`` CSV files (in time order); source name -> directory.

    Spark's file source takes files in modification-time order (milliseconds;
    ties in listing order), so file ``j`` gets the time ``now - 100 + j`` s:
    files written within one millisecond would otherwise be read in any order
    and the earlier one's tuples rejected as late (``os.replace`` keeps it).
    """
    out = {}
    base = int(time.time()) - 100
    for name, df in frames_of(query, tuples).items():
        d = root / name
        d.mkdir(parents=True)
        for j, idx in enumerate(pd.RangeIndex(len(df)).to_series().groupby(lambda i, n=len(df): min(parts - 1, i * parts // max(n, 1)))):
            df.iloc[idx[1].to_numpy()].to_csv(d / f"part-{j}.csv", index=False)
            os.utime(d / f"part-{j}.csv", (base + j, base + j))
        out[name] = str(d)
    return out


@pytest.mark.parametrize("kind,n,seed", CASES, ids=[f"{k}-{n}way" for k, n, _ in CASES])
def test_joins_equal_oracle_and_local_engine(spark, runs, tmp_path, kind, n, seed):
    """2-, 3-, 4-way time windows, count windows, lazy (no-restore, restore), band and per-edge keying."""
    query, tuples = case(kind, n, seed)
    sources = write_case(query, tuples, tmp_path / "in")
    run = start_spark(query, sources, spark=spark, once=True, buckets=2)
    runs.append(run)
    run.wait()
    res = run.result()
    want = oracle_rows(query, tuples)
    assert result_rows(query, res.results) == want
    local = slidewise.run(query, sources)
    assert result_rows(query, local.results) == want
    assert STATS_KEYS <= set(res.stats)
    assert res.stats["inputs"] == local.stats["inputs"]
    assert res.stats["results"] == len(want) and res.stats["rejects"] == 0
    assert res.stats["micro_batches"] == 1 and res.stats["state_rows"] > 0  # the files and the end of input: one micro-batch
    assert (res.stats["buckets"], bool(res.stats["warnings"])) == ((1, True) if kind == "count" else (2, False))


def _staged_restart_case(tmp_path):
    """A 3-way case as 4 files per stream; the first two in the input directories, the rest staged."""
    query, tuples = case("time", 3, 11, length=60)
    staged = write_case(query, tuples, tmp_path / "all", parts=4)
    inputs = {}
    for name, d in staged.items():
        inputs[name] = tmp_path / "in" / name
        inputs[name].mkdir(parents=True)
        for j in (0, 1):
            os.replace(Path(d) / f"part-{j}.csv", inputs[name] / f"part-{j}.csv")  # keeps write_case's mtime
    return query, tuples, staged, inputs


def _add_staged(staged, inputs) -> None:
    for name, d in staged.items():
        for f in sorted(Path(d).iterdir()):
            os.replace(f, inputs[name] / f.name)


def _wait_for(path: Path, seconds: float, alive=lambda: True) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert alive(), "the run ended before committing a batch"
        assert time.monotonic() < deadline, f"no {path.name} in time"
        time.sleep(0.1)


def test_restart_after_stop_is_exactly_once(spark, runs, tmp_path):
    """Stop a run right after its first committed micro-batch, add files, rerun: the oracle, no duplicates."""
    query, tuples, staged, inputs = _staged_restart_case(tmp_path)
    ckpt, out = tmp_path / "ckpt", tmp_path / "out.parquet"
    sources = {k: str(v) for k, v in inputs.items()}
    opts = dict(spark=spark, checkpoint=str(ckpt), out=str(out), max_files_per_trigger=1)
    run = start_spark(query, sources, once=False, **opts)
    runs.append(run)
    _wait_for(ckpt / "query" / "commits" / "0", 240)
    run.stop()  # mid-stream: the second file pair is being (or not yet) processed
    assert not run.ended and not (ckpt / "query" / "commits" / "2").exists()
    _add_staged(staged, inputs)
    from slidewise.spark import run_spark

    res = run_spark(query, sources, once=True, **opts)
    assert res.stats["input_ended"] and res.stats["micro_batches"] >= 2
    assert result_rows(query, read_results(out)) == oracle_rows(query, tuples)


def test_restart_with_other_default_partitions_keeps_the_checkpoints(spark, runs, tmp_path):
    """A checkpoint written with 4 shuffle partitions (the default before it became the cores)
    continues with 2: Spark restores its partitions, slidewise its buckets; nothing lost or duplicated."""
    query, tuples, staged, inputs = _staged_restart_case(tmp_path)
    ckpt, out = tmp_path / "ckpt", tmp_path / "out.parquet"
    sources = {k: str(v) for k, v in inputs.items()}
    opts = dict(spark=spark, checkpoint=str(ckpt), out=str(out), max_files_per_trigger=1)
    before = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "4")
    try:
        run = start_spark(query, sources, once=False, **opts)
        runs.append(run)
        _wait_for(ckpt / "query" / "commits" / "0", 240)
        run.stop()
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", before)
    assert before == "2" and json.loads((ckpt / "slidewise.json").read_text())["buckets"] == 4
    _add_staged(staged, inputs)
    from slidewise.spark import run_spark

    res = run_spark(query, sources, once=True, **opts)
    assert res.stats["buckets"] == 4 and res.stats["input_ended"]
    assert result_rows(query, read_results(out)) == oracle_rows(query, tuples)


@pytest.mark.slow
def test_restart_after_kill_is_exactly_once(spark, tmp_path):
    """SIGKILL the CLI after its first committed micro-batch, add files, rerun the same command."""
    query, tuples, staged, inputs = _staged_restart_case(tmp_path)
    ckpt, out = tmp_path / "ckpt", tmp_path / "out.parquet"
    text = (
        "SELECT * FROM "
        + ", ".join(f"{r.alias} [RANGE {r.window.size}]" for r in query.streams)
        + " WHERE "
        + " AND ".join(f"{e.left} = {e.right}" for e in query.equalities)
    )
    args = [
        "run",
        text,
        *[a for name in inputs for a in ("--source", f"{name}={inputs[name]}")],
        "--engine",
        "spark",
        "--master",
        "local[2]",
        "--once",
        "--checkpoint",
        str(ckpt),
        "--out",
        str(out),
        "--conf",
        "slidewise.maxFilesPerTrigger=1",
        "--conf",
        "spark.sql.shuffle.partitions=2",
        "--quiet",
        "--trigger",
        "3s",
    ]  # batches 3 s apart: the kill lands between the first and the second
    log = tmp_path / "first-run.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "slidewise.cli", *args], stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        try:
            _wait_for(ckpt / "query" / "commits" / "0", 300, alive=lambda: proc.poll() is None)
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert not (ckpt / "query" / "commits" / "1").exists(), log.read_text()[-3000:]  # killed mid-stream
    _add_staged(staged, inputs)
    assert main(args) == 0
    assert result_rows(query, read_results(out)) == oracle_rows(query, tuples)


@pytest.mark.slow
def test_local_cluster_gives_the_same_results(tmp_path):
    """The same query on local-cluster[2,1,1024] (separate executor JVMs and Python workers)."""
    if find_java() is None:
        pytest.skip("needs Java")
    query, tuples = case("time", 3, 21)
    sources = write_case(query, tuples, tmp_path / "in")
    out = tmp_path / "out.parquet"
    text = (
        "SELECT * FROM "
        + ", ".join(f"{r.alias} [RANGE {r.window.size}]" for r in query.streams)
        + " WHERE "
        + " AND ".join(f"{e.left} = {e.right}" for e in query.equalities)
    )
    import pyspark

    work = Path(pyspark.__file__).parent / "work"  # where Spark's local-cluster workers keep app dirs
    before = set(work.iterdir()) if work.exists() else set()
    try:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "slidewise.cli",
                "run",
                text,
                *[a for name, d in sources.items() for a in ("--source", f"{name}={d}")],
                "--engine",
                "spark",
                "--master",
                "local-cluster[2,1,1024]",
                "--once",
                "--out",
                str(out),
                "--quiet",
            ],
            capture_output=True,
            text=True,
            timeout=900,
        )
    finally:
        for d in (set(work.iterdir()) if work.exists() else set()) - before:
            shutil.rmtree(d, ignore_errors=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert result_rows(query, read_results(out)) == oracle_rows(query, tuples)


def test_files_dropped_into_a_live_directory(spark, runs, tmp_path):
    """Files dropped while the query runs: their results come out in the first micro-batch after the drop.

    Measured in micro-batches, not seconds: with a processing-time trigger,
    the batch following the drop (or the one after it, if the two streams'
    files straddle a trigger) reads the new files and emits their results, so
    they are out within two trigger intervals on any machine.
    """
    query, tuples = case("time", 2, 12, length=40)
    sources = write_case(query, tuples, tmp_path / "in", parts=2)
    later = tmp_path / "later"
    later.mkdir()
    for name, d in sources.items():
        os.replace(Path(d) / "part-1.csv", later / f"{name}.csv")
    run = start_spark(query, sources, spark=spark, once=False, trigger="1s", buckets=2)
    runs.append(run)
    run.process_all_available()
    last = max(run.sink.batches)
    for name in sources:
        os.replace(later / f"{name}.csv", Path(sources[name]) / "part-1.csv")
    run.process_all_available()
    after = [(b, n) for b, _, n in run.sink.timeline if b > last]
    assert after, "the dropped files were never read"
    first = next(b for b, n in after if n > 0)
    assert first - last <= 2, f"results only in micro-batch {first - last} after the drop"
    run.end_input()
    assert result_rows(query, run.result().results) == oracle_rows(query, tuples)


def test_rate_source_runs_until_stopped(spark):
    """Spark's rate source as two streams: results within the window, stopped by the timeout."""
    from slidewise.spark import run_spark

    res = run_spark(
        "SELECT * FROM S1 [RANGE 2 SECONDS], S2 [RANGE 2 SECONDS] WHERE S1.a = S2.a",
        {"S1": "rate:rowsPerSecond=100,distinct=20", "S2": "rate:rowsPerSecond=100,distinct=20"},
        spark=spark,
        trigger="1s",
        timeout=12,
    )
    assert min(res.stats["inputs"].values()) > 0 and res.stats["results"] == len(res.results) > 0
    assert not res.stats["input_ended"] and res.stats["micro_batches"] >= 2
    r = res.results
    assert (r["S1.a"] == r["S2.a"]).all() and ((r["S1.ts"] - r["S2.ts"]).abs() <= 2000).all()


def test_demo_prints_results_on_spark(spark, capsys):
    assert main(["demo", "--engine", "spark"]) == 0
    out, err = capsys.readouterr()
    assert "results" in out and "dns.orig_h" in out
    assert "23,548 results" in err and "late: 162" in err


def test_a_spark_run_prints_only_its_own_lines_unless_verbose(tmp_path):
    """No JVM start-up notes, no Python worker chatter on stderr; ``-v`` shows them."""
    (tmp_path / "a.csv").write_text("ts,k\n1,7\n3,8\n")
    (tmp_path / "b.csv").write_text("ts,k\n2,7\n4,8\n")
    argv = [
        sys.executable,
        "-m",
        "slidewise",
        "run",
        "SELECT * FROM A [RANGE 5], B [RANGE 5] WHERE A.k = B.k",
        "--source",
        "A=a.csv",
        "--source",
        "B=b.csv",
        "--engine",
        "spark",
        "--master",
        "local[1]",
        "--out",
        "-",
    ]
    env = {k: v for k, v in os.environ.items() if k != "SLIDEWISE_VERBOSE"}
    quiet = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env, check=False)
    assert quiet.returncode == 0, quiet.stderr[-2000:]
    assert len(quiet.stdout.splitlines()) == 3  # header and two results
    lines = quiet.stderr.strip().splitlines()
    assert not any(line.startswith("slidewise: batch ") for line in lines), quiet.stderr  # micro-batch progress only with -v
    summary = " ".join(lines)  # the summary line, wrapped by the terminal width
    assert summary.startswith("2 results from 4 tuples") and summary.endswith("rejects 0"), quiet.stderr
    assert "Python worker" not in quiet.stderr and "WARNING" not in quiet.stderr.upper()
    loud = subprocess.run([*argv, "-v"], cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env, check=False)
    assert loud.returncode == 0 and loud.stdout == quiet.stdout
    assert "Python worker" in loud.stderr and "slidewise: batch 0: " in loud.stderr


def test_rejects_and_schema_change_on_spark(spark, runs, tmp_path):
    """Bad and late rows become rejects like the local engine's; a file with another header fails clearly."""
    a, b = tmp_path / "A", tmp_path / "B"
    a.mkdir()
    b.mkdir()
    (a / "1.csv").write_text("ts,k\n1,7\n5,7\nx,7\n2,7\n9,8\n")
    (b / "1.csv").write_text("ts,k\n3,7\n4,nine\n9,8\n")
    q = "SELECT * FROM A [RANGE 5], B [RANGE 5] WHERE A.k = B.k"
    run = start_spark(q, {"A": str(a), "B": str(b)}, spark=spark, once=True, lateness=2, rejects=str(tmp_path / "rej"))
    runs.append(run)
    run.wait()
    res = run.result()
    local = slidewise.run(q, {"A": str(a), "B": str(b)}, lateness=2)
    assert sorted(map(tuple, res.results.values.tolist())) == sorted(map(tuple, local.results.values.tolist()))
    assert res.stats["rejects_by_reason"] == local.stats["rejects_by_reason"]
    cols = ["stream", "line", "reason", "row"]
    assert res.rejects.to_frame()[cols].sort_values(cols).values.tolist() == local.rejects.to_frame()[cols].sort_values(cols).values.tolist()
    written = pd.concat([pd.read_csv(p) for p in sorted((tmp_path / "rej").glob("batch-*.csv"))])
    assert len(written) == res.stats["rejects"]
    # a file with a different header dropped later: one clear error
    run = start_spark(q, {"A": str(a), "B": str(b)}, spark=spark, once=False, checkpoint=str(tmp_path / "ck"))
    runs.append(run)
    run.process_all_available()
    (a / "2.csv").write_text("ts,other\n20,7\n")
    with pytest.raises(slidewise.SourceError, match="header"):
        run.process_all_available()


def test_native_csv_numbers_are_judged_as_the_local_reader_judges_them(spark, runs, tmp_path, monkeypatch):
    """Integer columns and timestamps Spark parses itself: every text it cannot parse gets the local
    reader's verdict (value, reason, raw row), line for line (empty fields: test_logic)."""
    from slidewise.runtime import sources

    for name in ("_SAMPLE_BYTES", "_MIN_BLOCK", "_PRESCAN_BYTES"):  # the kinds come from the first rows only
        monkeypatch.setattr(sources, name, 64)
    a, b = tmp_path / "A", tmp_path / "B"
    a.mkdir()
    b.mkdir()
    rows = [f"{t},7,p" for t in range(1, 112)] + ["112,+7,q", "13, 7,s", "14,7 ,t", "15,7.0,u", "16,7e0,v", "17,0x7,w", "18,7L,x", "19,٧,y"]
    rows += ["20,9223372036854775808,z", '21,"7",q2', "22,7", "23,7,a,b", ",7,e", " 24,7,f", "25.0,7,g", "4611686018427387904,7,h", "26,x7,i", "27,7,", "28,-7,j"]
    (a / "1.csv").write_text("ts,k,s\n" + "\n".join(rows) + "\n")
    (b / "1.csv").write_text("ts,k\n" + "\n".join(f"{t},7" for t in range(1, 32)) + "\n")
    q = "SELECT * FROM A [RANGE 5], B [RANGE 5] WHERE A.k = B.k"
    run = start_spark(q, {"A": str(a), "B": str(b)}, spark=spark, once=True, lateness=100, ts_unit="ms")
    runs.append(run)
    assert run.jp.recipes[0]["longs"] == ["ts", "k"]
    run.wait()
    res = run.result()
    local = slidewise.run(q, {"A": str(a), "B": str(b)}, lateness=100, ts_unit="ms")
    cols = ["stream", "line", "reason", "row"]
    want = local.rejects.to_frame()[cols].sort_values(cols).values.tolist()
    # the one difference, pinned: Spark reads other scripts' decimal digits (Java's Long.parseLong), the local reader ASCII ones only
    assert ["A", 120, "unparseable value '\u0667' in integer column 'k'", "19,\u0667,y"] in want
    want.remove(["A", 120, "unparseable value '\u0667' in integer column 'k'", "19,\u0667,y"])
    spark_only = [r for r in map(tuple, res.results.values.tolist()) if r[2] == "y"]
    assert spark_only and all(r[1] == 7 for r in spark_only)
    assert sorted(r for r in map(tuple, res.results.values.tolist()) if r[2] != "y") == sorted(map(tuple, local.results.values.tolist()))
    got = res.rejects.to_frame()[cols].sort_values(cols).values.tolist()
    assert got == want
    assert len(got) >= 8
