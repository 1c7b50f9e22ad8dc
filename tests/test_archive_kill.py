"""A process killed at any point of an archive update reopens to the last completed update, nothing lost or duplicated."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from slidewise.archive import Archive

ROOT = Path(__file__).resolve().parents[1]
EVERY = 10


def batch(j: int) -> tuple[int, pa.Table]:
    """The rows of update ``j`` (1, 2, ...) and its instant: random keys and lifetimes, seeded by ``j``."""
    rng = np.random.default_rng(j)
    now = j * EVERY
    size = int(rng.integers(0, 60))
    ts = now - rng.integers(0, EVERY, size)
    return now, pa.table({"k": rng.integers(0, 20, size), "v": j * 1000 + np.arange(size), "exp": ts + rng.integers(0, 12 * EVERY, size)})


def oracle(m: int) -> Counter:
    """The unexpired rows after updates 1..m."""
    rows: list[tuple] = []
    now = 0
    for j in range(1, m + 1):
        now, table = batch(j)
        d = table.to_pydict()
        rows = [r for r in rows + list(zip(d["k"], d["v"], d["exp"], strict=True)) if r[2] >= now]
    return Counter(rows)


def run_updates(root: str, variant: str, first: int, last: int, kill_at: int) -> None:
    """In a child process: updates first..last, printing each completed one; SIGKILLed at the ``kill_at``-th fsync."""
    from slidewise.archive import store

    calls = [0]
    real = os.fsync

    def fsync(fd):
        calls[0] += 1
        if calls[0] == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        real(fd)

    store.os.fsync = fsync  # type: ignore[attr-defined]
    archive = (
        Archive.open(root)
        if Path(root, "manifest.json").exists()
        else Archive.create(root, key="k", variant=variant, n=9, every=EVERY, max_lifetime=12 * EVERY, row_group_rows=7)
    )
    for j in range(first, last + 1):
        archive.update(*batch(j))
        print(f"done {j}", flush=True)


def _child(root: Path, variant: str, first: int, last: int, kill_at: int) -> tuple[int, list[int]]:
    code = f"from tests.test_archive_kill import run_updates; run_updates({str(root)!r}, {variant!r}, {first}, {last}, {kill_at})"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    done = [int(line.split()[1]) for line in proc.stdout.splitlines() if line.startswith("done ")]
    assert proc.returncode in (0, -signal.SIGKILL), proc.stderr
    return proc.returncode, done


def _rows(archive: Archive) -> Counter:
    d = archive.read().to_pydict()
    return Counter(zip(d.get("k", []), d.get("v", []), d.get("exp", []), strict=True))


@pytest.mark.parametrize("variant", ["rebuild", "norebuild", "d-ins"])
def test_killed_updates_reopen_to_the_last_completed_update(tmp_path, variant):
    rng = random.Random(variant)
    root = tmp_path / "arch"
    target, completed, kills = 14, 0, 0
    while completed < target:
        code, done = _child(root, variant, completed + 1, target, rng.randint(1, 40))
        kills += code != 0
        archive = Archive.open(root)
        last = done[-1] if done else completed
        # killed after the manifest's rename but before "done" was printed: one more update is complete
        assert archive.updates in (last, last + 1)
        completed = archive.updates
        assert _rows(archive) == oracle(completed)
        assert archive.rows() == sum(oracle(completed).values())
    assert kills >= 3
    # the files of killed updates are gone after the next update
    archive = Archive.open(root)
    archive.update(*batch(target + 1))
    keep = set(Path(f).name for f in archive.live_files()) | set(archive.manifest["previous"])
    assert {p.name for p in root.glob("*.parquet")} <= keep
    assert _rows(archive) == oracle(target + 1)
