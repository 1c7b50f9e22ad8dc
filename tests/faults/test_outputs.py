"""Safe outputs: no output destroys an input or another output, files are complete or absent.

Each case runs the CLI the way a user does and checks the exit status, the
message, that every input is byte-identical and that results, rejects and
stats are readable and exact (or absent after a refusal or a failure).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import resource
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import slidewise
from slidewise.errors import OptionError
from tests.faults.conftest import Outcome, assert_clear_error, cli_env, run_cli

Q = "SELECT * FROM S1 [RANGE 10], S2 [RANGE 10] WHERE S1.a = S2.a"
S1 = "ts,a\n1,1\n2,2\nbad,3\n3,1\n5,2\n"
S2 = "ts,a\n2,1\n4,2\n6,1\n"


def tree(root: Path) -> dict[str, str]:
    """Every file under ``root`` (hidden temporaries included) -> hash of its bytes."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}


def small_inputs(root: Path) -> tuple[Path, Path]:
    a, b = root / "s1.csv", root / "s2.csv"
    a.write_text(S1)
    b.write_text(S2)
    return a, b


def reference(a: Path, b: Path) -> pd.DataFrame:
    return slidewise.run(Q, {"S1": str(a), "S2": str(b)}).results


def rows(frame: pd.DataFrame) -> list[tuple]:
    return sorted(map(tuple, frame.astype(str).values.tolist()))


# --------------------------------------------------------------------------- refusals


def test_out_naming_an_input_is_refused(tmp_path):
    a, b = small_inputs(tmp_path)
    before = tree(tmp_path)
    got = run_cli("run", Q, "--source", f"S1={a}", "--source", f"S2={b}", "--out", str(a), "--quiet")
    assert_clear_error(got, "--out names an input of this run (--source S1)", str(a), "write --out somewhere else")
    assert tree(tmp_path) == before


def test_out_through_another_name_of_an_input_is_refused(tmp_path):
    a, b = small_inputs(tmp_path)
    (tmp_path / "link.csv").hardlink_to(b)
    before = tree(tmp_path)
    got = run_cli("run", Q, "--source", f"S1={a}", "--source", f"S2={b}", "--out", str(tmp_path / "link.csv"))
    assert_clear_error(got, "--out names an input of this run (--source S2)")
    assert tree(tmp_path) == before


def test_output_inside_an_input_directory_is_refused(tmp_path):
    a, b = small_inputs(tmp_path)
    d = tmp_path / "s2"
    d.mkdir()
    b.rename(d / "part1.csv")
    before = tree(tmp_path)
    got = run_cli("run", Q, "--source", f"S1={a}", "--source", f"S2={d}", "--out", str(tmp_path / "r.csv"), "--rejects", str(d / "rejects.csv"))
    assert_clear_error(got, "--rejects is inside the input directory of --source S2", f"write --rejects outside {d}")
    assert tree(tmp_path) == before


def test_out_and_rejects_naming_the_same_file_are_refused(tmp_path):
    a, b = small_inputs(tmp_path)
    before = tree(tmp_path)
    out = tmp_path / "r.csv"
    got = run_cli("run", Q, "--source", f"S1={a}", "--source", f"S2={b}", "--out", str(out), "--rejects", str(tmp_path / "." / "r.csv"))
    assert_clear_error(got, "--out and --rejects name the same path", "give each output its own path")
    assert tree(tmp_path) == before


def test_stats_json_naming_the_out_file_is_refused(tmp_path):
    a, b = small_inputs(tmp_path)
    (tmp_path / "r.csv").write_text("earlier results\n")
    before = tree(tmp_path)
    got = run_cli("run", Q, "--source", f"S1={a}", "--source", f"S2={b}", "--out", str(tmp_path / "r.csv"), "--stats-json", str(tmp_path / "r.csv"))
    assert_clear_error(got, "--out and --stats-json name the same path")
    assert tree(tmp_path) == before


def test_a_repeated_source_name_is_refused(tmp_path):
    a, b = small_inputs(tmp_path)
    before = tree(tmp_path)
    got = run_cli("run", Q, "--source", f"S1={a}", "--source", f"S1={b}", "--source", f"S2={b}", "--out", str(tmp_path / "r.csv"))
    assert_clear_error(got, f"--source S1 is given twice ({a} and {b})", "give each --source name once")
    assert tree(tmp_path) == before


def test_a_table_named_as_a_source_is_refused(tmp_path):
    a, b = small_inputs(tmp_path)
    before = tree(tmp_path)
    got = run_cli(
        "run", "SELECT * FROM S1 [RANGE 10], R WHERE S1.a = R.a", "--source", f"S1={a}", "--source", f"R={b}", "--table", f"R={b}", "--out", str(tmp_path / "r.csv")
    )
    assert_clear_error(got, "'R' is given both as --source and as --table")
    assert tree(tmp_path) == before


@pytest.mark.parametrize("where", ["under-a-file", "proc"])
def test_unwritable_stats_json_is_refused_before_any_result(tmp_path, where):
    a, b = small_inputs(tmp_path)
    stats = a / "stats.json" if where == "under-a-file" else Path("/proc/slidewise-stats.json")
    before = tree(tmp_path)
    got = run_cli("run", Q, "--source", f"S1={a}", "--source", f"S2={b}", "--out", str(tmp_path / "r.parquet"), "--stats-json", str(stats))
    assert_clear_error(got, "cannot write --stats-json", "choose another --stats-json")
    assert tree(tmp_path) == before  # no results file either: refused before reading


def test_out_naming_a_directory_is_refused(tmp_path):
    a, b = small_inputs(tmp_path)
    (tmp_path / "results.csv").mkdir()
    before = tree(tmp_path)
    got = run_cli("run", Q, "--source", f"S1={a}", "--source", f"S2={b}", "--out", str(tmp_path / "results.csv"))
    assert_clear_error(got, "--out is a directory", "give a file name")
    assert tree(tmp_path) == before


def test_the_python_api_makes_the_same_check(tmp_path):
    a, b = small_inputs(tmp_path)
    before = tree(tmp_path)
    with pytest.raises(OptionError, match=r"--out names an input of this run \(--source S2\)"):
        slidewise.run(Q, {"S1": str(a), "S2": str(b)}, out=str(b))
    with pytest.raises(OptionError, match="--out and --rejects name the same path"):
        slidewise.run(Q, {"S1": str(a), "S2": str(b)}, out=str(tmp_path / "r.csv"), rejects=str(tmp_path / "r.csv"))
    assert tree(tmp_path) == before


def test_a_fifo_output_is_written_in_place(tmp_path):
    a, b = small_inputs(tmp_path)
    fifo = tmp_path / "stats.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    done = run_cli("run", Q, "--source", f"S1={a}", "--source", f"S2={b}", "--stats-json", str(fifo), "--quiet")
    reader.join(60)
    assert done.code == 0, done.err
    assert json.loads(got[0])["results"] == len(reference(a, b))
    assert stat.S_ISFIFO(fifo.stat().st_mode)  # still the FIFO, not replaced by a file


# --------------------------------------------------------------------------- failures and signals


def _limited_memory() -> None:
    limit = 2 << 30
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


@pytest.mark.parametrize("earlier", [False, True])
def test_out_of_memory_names_chunk_rows_and_writes_no_answer(tmp_path, earlier):
    n = 40_000  # one key: 800 million results in the first chunk, far above the address space limit
    for name in ("h1.csv", "h2.csv"):
        pd.DataFrame({"ts": range(n), "a": [0] * n}).to_csv(tmp_path / name, index=False)
    out = tmp_path / "r.parquet"
    if earlier:
        out.write_bytes(b"an earlier answer")
    before = tree(tmp_path)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "slidewise",
            "run",
            "SELECT * FROM S1 [RANGE 1000000], S2 [RANGE 1000000] WHERE S1.a = S2.a",
            "--source",
            f"S1={tmp_path / 'h1.csv'}",
            "--source",
            f"S2={tmp_path / 'h2.csv'}",
            "--out",
            str(out),
            "--rejects",
            str(tmp_path / "rej.csv"),
            "--stats-json",
            str(tmp_path / "s.json"),
        ],
        capture_output=True,
        text=True,
        env=cli_env(),
        preexec_fn=_limited_memory,
        timeout=300,
        check=False,
    )

    assert_clear_error(
        Outcome(proc.returncode, proc.stdout, proc.stderr),
        "out of memory with --chunk-rows 65536",
        "the join's result of one chunk is too large",
        "lower --chunk-rows",
        "no result file was written",
    )
    assert tree(tmp_path) == before  # the target absent or as it was; no temporary left


@pytest.fixture(scope="module")
def big_inputs(tmp_path_factory):
    """Generated streams large enough that a run with small chunks lasts many seconds, a bad row in S1;
    ``S1-head.csv``: its first 50,000 rows (for the slower general plans)."""
    root = tmp_path_factory.mktemp("big")
    got = run_cli("generate", "--tuples", "200000", "--out", str(root / "g"))
    assert got.code == 0, got.err
    s1 = root / "g" / "S1.csv"
    head, rest = s1.read_text().split("\n", 1)
    s1.write_text(f"{head}\nnot-a-time,7\n{rest}")
    (root / "g" / "S1-head.csv").write_text("\n".join(s1.read_text().split("\n")[:50_001]) + "\n")
    return root / "g"


BIG_Q = "SELECT * FROM S1 [RANGE 1000], S2 [RANGE 1000] WHERE S1.a = S2.a"
BIG_PLAN = "SELECT RSTREAM S1.a, COUNT(*) AS n FROM S1 [RANGE 1000] GROUP BY S1.a"


@pytest.mark.parametrize(
    "query, files, chunk, sig, code",
    [
        (BIG_Q, {"S1": "S1.csv", "S2": "S2.csv"}, "20", signal.SIGTERM, 143),
        (BIG_Q, {"S1": "S1.csv", "S2": "S2.csv"}, "20", signal.SIGINT, 130),
        (BIG_PLAN, {"S1": "S1-head.csv"}, "1", signal.SIGTERM, 143),
    ],
)
def test_signal_finishes_results_rejects_and_stats(tmp_path, big_inputs, query, files, chunk, sig, code):
    sources = {k: big_inputs / f for k, f in files.items()}
    full = slidewise.run(query, {k: str(v) for k, v in sources.items()}).results
    inputs = {p: p.read_bytes() for p in sources.values()}
    out, rej, stats = tmp_path / "r.parquet", tmp_path / "rej.csv", tmp_path / "s.json"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "slidewise",
            "run",
            query,
            *[a for k, v in sources.items() for a in ("--source", f"{k}={v}")],
            "--chunk-rows",
            chunk,
            "--out",
            str(out),
            "--rejects",
            str(rej),
            "--stats-json",
            str(stats),
            "--quiet",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(),
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            temps = list(tmp_path.glob(".r.parquet.*.tmp"))
            if temps and temps[0].stat().st_size > 1000:  # rows are being written
                break
            time.sleep(0.05)
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(sig)
        _out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    name = signal.Signals(sig).name
    assert proc.returncode == code, err
    assert "Traceback" not in err
    assert f"slidewise: interrupted by {name}" in err and f"to {out}" in err and f"to {rej}" in err, err
    got = pq.read_table(out).to_pandas()
    assert 0 < len(got) < len(full)
    assert not Counter(rows(got)) - Counter(rows(full))  # a part of the full answer, nothing invented
    rejects = pd.read_csv(rej)
    assert rejects["row"].tolist() == ["not-a-time,7"] and rejects["line"].tolist() == [2]
    s = json.loads(stats.read_text())
    assert s["interrupted"] is True and s["signal"] == name and s["rejects"] == 1
    assert s["results"] + s["retractions"] == len(got)
    assert {p: p.read_bytes() for p in inputs} == inputs
    assert not list(tmp_path.glob(".*.tmp"))


# --------------------------------------------------------------------------- Spark


@pytest.mark.spark
@pytest.mark.parametrize(
    "query, option, part",
    [(Q, "--out", "batch-000000/part-00000.parquet"), ("SELECT RSTREAM S1.a, COUNT(*) AS n FROM S1 [RANGE 10] GROUP BY S1.a", "--rejects", "batch-000003.csv")],
)
def test_spark_refuses_an_output_directory_with_another_runs_parts(tmp_path, query, option, part):
    a, b = small_inputs(tmp_path)
    target = tmp_path / "earlier"
    (target / part).parent.mkdir(parents=True, exist_ok=True)
    (target / part).write_bytes(b"an earlier run's part")
    before = tree(tmp_path)
    got = run_cli("run", query, "--engine", "spark", "--source", f"S1={a}", "--source", f"S2={b}", option, str(target))
    assert_clear_error(
        got, f"the {option} directory holds batch-* parts of another run", str(target), "remove it, choose another directory, or pass the same --checkpoint"
    )
    assert tree(tmp_path) == before


@pytest.mark.spark
@pytest.mark.slow
def test_spark_out_file_is_whole_after_a_continued_and_a_fresh_run(tmp_path):
    """``--out r.parquet`` is one file on Spark too: rewritten whole by a run continuing its checkpoint, replaced by a fresh run."""
    from slidewise.spark.sinks import read_results

    a, b = small_inputs(tmp_path)
    out, ck = tmp_path / "r.parquet", tmp_path / "ck"
    args = (
        "run",
        Q,
        "--engine",
        "spark",
        "--source",
        f"S1={a}",
        "--source",
        f"S2={b}",
        "--out",
        str(out),
        "--master",
        "local[1]",
        "--conf",
        "slidewise.buckets=1",
        "--quiet",
    )
    first = run_cli(*args, "--checkpoint", str(ck))
    assert first.code == 0, first.err
    assert rows(read_results(out)) == rows(reference(a, b))
    again = run_cli(*args, "--checkpoint", str(ck))  # the same run continued: nothing new, nothing doubled
    assert again.code == 0, again.err
    assert rows(read_results(out)) == rows(reference(a, b))
    assert out.is_file()
    fresh = run_cli(*args)  # a new run writes its own file, as the local engine does
    assert fresh.code == 0, fresh.err
    assert rows(read_results(out)) == rows(reference(a, b))


# --------------------------------------------------------------------------- random combinations

# Output names drawn for the three options, with the canonical file each one reaches: inputs (also through a
# symlink, a hard link or "..") and paths inside the input directory (also through a symlinked directory),
# existing files, two spellings of one new file, a file in a directory that does not exist yet.
POOL = {
    "s1.csv": "s1.csv",
    "s1-link.csv": "s1.csv",
    "s1-hard.csv": "s1.csv",
    "s2/../s1.csv": "s1.csv",
    "s2": "s2",
    "s2/part.csv": "s2/part.csv",
    "s2/new.csv": "s2/new.csv",
    "s2link/new.csv": "s2/new.csv",
    "s2link": "s2",
    "r.csv": "r.csv",
    "./r.csv": "r.csv",
    "r.parquet": "r.parquet",
    "r.jsonl": "r.jsonl",
    "rej.csv": "rej.csv",
    "sub/../rej.csv": "rej.csv",
    "stats.json": "stats.json",
    "old.csv": "old.csv",
    "old-link.csv": "old.csv",
    "sub/new.csv": "sub/new.csv",
}
INPUTS = {"s1.csv", "s2", "s2/part.csv"}
NAMES = sorted(POOL)
SAFE = [n for n in NAMES if POOL[n] not in INPUTS and not POOL[n].startswith("s2/")]
OUTPUT = st.sampled_from([*NAMES, *[*SAFE, None] * 3])  # mostly names that may be written


def _colliding_tree(root: Path) -> Path:
    """Inputs s1.csv and s2/part.csv, their aliases, an earlier file; returns S1's input."""
    a, b = small_inputs(root)
    (root / "s2").mkdir()
    b.rename(root / "s2" / "part.csv")
    (root / "s1-link.csv").symlink_to(a)
    (root / "s1-hard.csv").hardlink_to(a)
    (root / "s2link").symlink_to(root / "s2", target_is_directory=True)
    (root / "old.csv").write_text("an earlier file\n")
    (root / "old-link.csv").symlink_to(root / "old.csv")
    return a


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(out=OUTPUT, rejects=OUTPUT, stats=OUTPUT, repeat=st.sampled_from([False, False, True]), s2=st.sampled_from(["s2", "s2link", "s2/"]), relative=st.booleans())
def test_random_output_options_never_destroy_anything(out, rejects, stats, repeat, s2, relative):
    from slidewise.cli import main

    with tempfile.TemporaryDirectory() as tmp, contextlib.chdir(tmp):
        root = Path(tmp).resolve()
        a = _colliding_tree(root)
        before = tree(root)
        spell = (lambda name: name) if relative else (lambda name: str(root / name))
        argv = ["run", Q, "--source", f"S1={spell('s1.csv')}", "--source", f"S2={spell(s2)}", "--quiet"]
        if repeat:
            argv += ["--source", f"S1={spell('s2/part.csv')}"]
        given_outputs = {"--out": out, "--rejects": rejects, "--stats-json": stats}
        for option, name in given_outputs.items():
            if name is not None:
                argv += [option, spell(name)]
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main(argv)
        after = tree(root)
        targets = [POOL[n] for n in given_outputs.values() if n is not None]
        if repeat or any(t in INPUTS or t.startswith("s2/") for t in targets) or len(set(targets)) < len(targets):
            assert code == 2, (argv, err.getvalue())
        event("refused" if code else "written")
        if code != 0:
            assert code == 2 and err.getvalue().startswith("slidewise: error:"), err.getvalue()
            assert after == before  # nothing changed, created or truncated
            return
        assert not repeat and len(set(targets)) == len(targets)
        touched = set(targets) | {n for n in POOL if POOL[n] in targets}  # a target and its aliases
        untouched = {k: v for k, v in before.items() if k not in touched}
        assert {k: v for k, v in after.items() if k not in touched} == untouched  # inputs and the rest as they were
        expected = reference(a, root / "s2")
        if out is not None:
            path = root / out
            got = pd.read_parquet(path) if out.endswith(".parquet") else pd.read_json(path, lines=True) if out.endswith((".jsonl", ".json")) else pd.read_csv(path)
            assert rows(got) == rows(expected)
        if rejects is not None:
            assert pd.read_csv(root / rejects)["row"].tolist() == ["bad,3"]
        if stats is not None:
            s = json.loads((root / stats).read_text())
            assert s["results"] == len(expected) and s["rejects"] == 1 and s["interrupted"] is False


def test_out_naming_a_symlink_replaces_the_file_it_names_and_keeps_the_link(tmp_path):
    src = tmp_path / "s.csv"
    src.write_text("ts,k\n1,1\n2,1\n")
    target = tmp_path / "real.csv"
    target.write_text("old\n")
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    res = run_cli("run", "SELECT S.ts FROM S [RANGE 10]", "--source", f"S={src}", "--out", str(link), "--quiet")
    assert res.code == 0, res.err
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert pd.read_csv(target)["S.ts"].tolist() == [1, 2]
