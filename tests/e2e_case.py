"""The end-to-end case shared by the Kafka and Spark-native API tests: a two-stream join query, random
inputs, the local engine's results as the oracle; and a child process SIGKILLed after its first commit."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pandas as pd

import slidewise

Q = "SELECT A.ts AS at, B.ts AS bt, A.k AS k, B.v AS v FROM A [RANGE 20], B [ROWS 5] WHERE A.k = B.k"
COLS = ["at", "bt", "k", "v", "ts", "exp"]


def inputs(n: int = 150, seed: int = 5, span: int = 500) -> dict[str, pd.DataFrame]:
    """``n`` rows per stream, timestamps sorted in ``[0, span)``, keys in ``[0, 5)``."""
    rng = np.random.default_rng(seed)
    return {
        "A": pd.DataFrame({"ts": np.sort(rng.integers(0, span, n)), "k": rng.integers(0, 5, n)}),
        "B": pd.DataFrame({"ts": np.sort(rng.integers(0, span, n)), "k": rng.integers(0, 5, n), "v": [f"v{i}" for i in range(n)]}),
    }


def rows(frame: pd.DataFrame) -> list[tuple]:
    return sorted(map(tuple, frame[COLS].astype(str).values.tolist()))


def oracle(data: dict[str, pd.DataFrame], **options) -> list[tuple]:
    return rows(slidewise.run(Q, data, **options).results)


def kill_after_first_commit(cmd: list[str], commits: Path, log: Path) -> None:
    """Run ``cmd`` (its stderr to ``log``) until the micro-batch commit ``commits/0`` exists, then SIGKILL its process group."""
    with open(log, "wb") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        try:
            deadline = time.monotonic() + 300
            while not (commits / "0").exists():
                assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
                time.sleep(0.2)
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
