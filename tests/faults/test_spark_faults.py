"""Spark engine faults: a damaged checkpoint, a new file with another header, tampered operator state.

Every case runs the CLI with ``--engine spark`` in a child process (a JVM
each: ~30-60 s), so the cases share one checkpoint made by one run and
damage a fresh copy of it, restored in place (Spark checkpoints hold
absolute paths and cannot be moved). The state key lives in a private
``XDG_CONFIG_HOME`` of the module, never in the user's home.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from slidewise.spark.session import find_java
from tests.faults.conftest import SRC, Outcome, cli_env, run_cli

Q = "SELECT * FROM A [RANGE 5], B [RANGE 5] WHERE A.k = B.k"
SPARK = ("--engine", "spark", "--master", "local[2]", "--conf", "spark.sql.shuffle.partitions=2", "--quiet")

pytestmark = pytest.mark.skipif(
    find_java() is None and not os.environ.get("SLIDEWISE_REQUIRE_SPARK"), reason="the Spark tests need Java (apt-get install openjdk-17-jre-headless)"
)


def assert_spark_error(outcome: Outcome, *fragments: str) -> str:
    """Exit 2 and one ``slidewise: error:`` message, last, naming ``fragments``; no Python or Java stack."""
    lines = [line for line in outcome.err.splitlines() if line.strip()]
    assert outcome.code == 2, (outcome.code, outcome.err[-3000:])
    assert lines and lines[-1].startswith("slidewise: error: "), outcome.err[-3000:]
    assert sum(line.startswith("slidewise: error:") for line in lines) == 1, outcome.err[-3000:]
    for bad in ("Traceback", "\tat ", "Caused by:", "Exception"):
        assert bad not in outcome.err, (bad, outcome.err[-3000:])
    for fragment in fragments:
        assert fragment in lines[-1], (fragment, lines[-1])
    return lines[-1]


def tree_digest(root: Path) -> dict[str, str]:
    """Relative path -> sha256 of every file under ``root``."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}


class Case:
    """One query over a directory source A and a file B, with its checkpoint, output and state key."""

    def __init__(self, root: Path):
        self.root = root
        self.a, self.b = root / "A", root / "b.csv"
        self.ck, self.out, self.config = root / "ck", root / "out", root / "config"
        self.a.mkdir(parents=True)
        (self.a / "1.csv").write_text("ts,k\n1,7\n2,8\n3,7\n")
        self.b.write_text("ts,k\n2,7\n3,8\n4,7\n")

    def args(self, *extra: str) -> list[str]:
        return ["run", Q, "--source", f"A={self.a}", "--source", f"B={self.b}", *SPARK, "--checkpoint", str(self.ck), "--out", str(self.out), *extra]

    def env(self, **extra: str) -> dict[str, str]:
        return {"XDG_CONFIG_HOME": str(self.config), "SLIDEWISE_STATE_KEY": "", **extra}

    def run(self, *extra: str, **env: str) -> Outcome:
        return run_cli(*self.args(*extra), timeout=600, **self.env(**env))


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A finished run with a checkpoint (and a pristine copy of checkpoint and output); two
    micro-batches, so that the state's latest version is a changelog alone (the first has a snapshot too)."""
    case = Case(tmp_path_factory.mktemp("spark-faults"))
    (case.a / "2.csv").write_text("ts,k\n5,7\n")
    now = int(time.time())
    os.utime(case.a / "1.csv", (now - 10, now - 10))
    done = case.run("--once", "--conf", "slidewise.maxFilesPerTrigger=1")
    assert done.code == 0, done.err[-3000:]
    key = case.config / "slidewise" / "state.key"
    assert key.exists() and key.stat().st_mode & 0o777 == 0o600  # the state key: outside the checkpoint, private
    shutil.copytree(case.ck, case.root / "ck.pristine", symlinks=True)
    shutil.copytree(case.out, case.root / "out.pristine", symlinks=True)
    return case


@pytest.fixture
def case(made):
    """The made case with its checkpoint and output restored in place."""
    for live, pristine in ((made.ck, made.root / "ck.pristine"), (made.out, made.root / "out.pristine")):
        shutil.rmtree(live, ignore_errors=True)
        shutil.copytree(pristine, live, symlinks=True)
    return made


def _latest(directory: Path, suffix: str = "") -> Path:
    files = [p for p in directory.iterdir() if p.is_file() and not p.name.startswith(".") and p.name.endswith(suffix)]
    return max(files, key=lambda p: int(p.name.split(".")[0]))


@pytest.mark.spark
def test_missing_state_file_is_a_checkpoint_error(case):
    gone = _latest(case.ck / "query" / "state" / "0" / "0", ".changelog")
    gone.unlink()
    before = tree_digest(case.out)
    err = assert_spark_error(case.run("--once"), f"checkpoint {case.ck}", "lost operator state", str(gone.relative_to(case.ck)), "new --checkpoint and a new --out")
    assert "--source" not in err and "rerun" not in err
    assert tree_digest(case.out) == before  # no result lost or rewritten


@pytest.mark.spark
def test_corrupt_offsets_log_is_a_checkpoint_error(case):
    entry = _latest(case.ck / "query" / "offsets")
    data = bytearray(entry.read_bytes())
    data[len(data) // 2 :] = b"#" * (len(data) - len(data) // 2)  # a torn write; its checksum file stays
    entry.write_bytes(bytes(data))
    before = tree_digest(case.out)
    err = assert_spark_error(case.run("--once"), f"checkpoint {case.ck}", "damaged", str(entry.relative_to(case.ck)), "restore the checkpoint directory from a backup")
    assert "rerun" not in err
    assert tree_digest(case.out) == before


@pytest.mark.spark
def test_tampered_state_is_refused_and_never_unpickled(case, tmp_path):
    """An attacker's pickle in place of a bucket's state: the next run refuses it; the pickle never runs."""
    marker = tmp_path / "pwned"
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    # the attacker's write, through the state store: the end-of-input batch leaves a plain pickle behind
    (hooks / "sitecustomize.py").write_text("""
import os
if os.environ.get("EVIL_MARKER"):
    import pickle

    from slidewise.spark import bucket

    class Evil:
        def __reduce__(self):
            return (open, (os.environ["EVIL_MARKER"], "w"))

    real = bucket.BucketJoin.process

    def process(self, b, blob, frame):
        new, out = real(self, b, blob, frame)
        return (pickle.dumps(Evil()) if (frame["k"] == 3).any() else new), out

    bucket.BucketJoin.process = process
""")
    (case.a / "2.csv").write_text("ts,k\n5,7\n")
    try:
        tampered = case.run("--once", PYTHONPATH=f"{SRC}{os.pathsep}{hooks}", EVIL_MARKER=str(marker))
        assert tampered.code == 0, tampered.err[-3000:]
        assert not marker.exists()
        (case.a / "3.csv").write_text("ts,k\n6,7\n")
        err = assert_spark_error(case.run("--once"), f"checkpoint {case.ck}", "refused", "not authenticated slidewise state")
        assert not marker.exists(), "the checkpoint's pickle ran"
        assert "rerun" not in err
    finally:
        for name in ("2.csv", "3.csv"):
            (case.a / name).unlink(missing_ok=True)


@pytest.mark.spark
def test_new_file_with_another_header_names_file_and_headers(tmp_path):
    """A live directory gets a file with another header while the query runs."""
    case = Case(tmp_path)
    args = [sys.executable, "-m", "slidewise", *case.args("--trigger", "1s")]
    log = tmp_path / "stderr.log"
    with open(log, "w") as err:
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err, env=cli_env(**case.env()), start_new_session=True)
        try:
            deadline = time.monotonic() + 300
            while not (case.ck / "query" / "commits" / "0").exists():
                assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
                time.sleep(0.5)
            staged = case.a / ".2.csv"
            staged.write_text("ts,j\n5,7\n")
            staged.rename(case.a / "2.csv")
            code = proc.wait(300)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, 9)
                proc.wait()
    err = assert_spark_error(Outcome(code, "", log.read_text()), str(case.a / "2.csv"), "CSV header", "(ts, j)", "(ts, k)")
    assert "disappeared" not in err and "give the file the others' header and rerun the same command" in err
    assert (case.a / "2.csv").read_text() == "ts,j\n5,7\n"  # the input is left as it was
    (case.a / "2.csv").write_text("ts,k\n5,7\n")  # as the hint says: then the run continues
    assert case.run("--once").code == 0
    from slidewise.spark import read_results

    rows = read_results(str(case.out))
    assert sorted(rows["A.ts"]) == [1, 1, 2, 3, 3, 5, 5]  # nothing of the fixed file lost, nothing twice
