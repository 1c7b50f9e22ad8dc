"""The fault suite: hostile inputs, options, signals and restarts.

Every test here runs slidewise the way a user does (the CLI in a child
process), then asserts the exit status, the one-line message, and that no
input, result or reject was lost, overwritten or invented.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[2] / "src")


@dataclass(frozen=True)
class Outcome:
    """What a CLI run left: exit status and both output streams."""

    code: int
    out: str
    err: str


def cli_env(**extra: str) -> dict[str, str]:
    """The environment of a child run: this checkout's package, the local engine by default."""
    env = dict(os.environ)
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("SLIDEWISE_ENGINE", "local")
    env.update(extra)
    return env


def run_cli(*args: str, cwd: Path | None = None, timeout: float = 300, **env: str) -> Outcome:
    """Run ``slidewise ARGS`` in a child process and return what it left."""
    proc = subprocess.run([sys.executable, "-m", "slidewise", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=cli_env(**env))
    return Outcome(proc.returncode, proc.stdout, proc.stderr)


def assert_clear_error(outcome: Outcome, *fragments: str) -> str:
    """A user error: exit 2, one ``slidewise: error:`` message, no traceback, naming the fragments."""
    err = outcome.err.strip()
    assert outcome.code == 2, (outcome.code, err)
    assert "Traceback" not in err, err
    assert err.startswith("slidewise: error:"), err
    for fragment in fragments:
        assert fragment in err, (fragment, err)
    return err


@pytest.fixture
def cli():
    """The ``run_cli`` function, as a fixture."""
    return run_cli
