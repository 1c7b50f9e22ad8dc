"""The C heap's policy (slidewise.heap): local runs keep freed blocks, archives return them, the user's choice wins.

Each case runs in a fresh interpreter: the policy is process-wide."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from slidewise import heap

pytestmark = pytest.mark.skipif(heap._libc() is None, reason="glibc only")

ENV_KEYS = (heap.VARIABLE, "GLIBC_TUNABLES", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")


def _policy(code: str, **env: str) -> str:
    """The policy after ``code`` (``h`` is slidewise.heap) in a fresh interpreter with ``env`` added."""
    base = {k: v for k, v in os.environ.items() if k not in ENV_KEYS}
    done = subprocess.run(
        [sys.executable, "-c", f"from slidewise import heap as h\n{code}\nprint(h._state['policy'])"], env={**base, **env}, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()[-1]


def test_a_local_run_keeps_freed_blocks(tmp_path):
    data = tmp_path / "s.csv"
    data.write_text("ts,a\n1,1\n2,2\n")
    code = f"import slidewise\nslidewise.run('SELECT RSTREAM(S.a, COUNT(*) AS n) FROM S [RANGE 5 SLIDE 2] GROUP BY S.a', sources={{'S': {str(data)!r}}})"
    assert _policy(code) == "keep"


@pytest.mark.parametrize("env", [{heap.VARIABLE: "system"}, {"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=1048576"}, {"MALLOC_MMAP_THRESHOLD_": "65536"}], ids=str)
def test_the_users_choice_of_thresholds_is_left_alone(env):
    assert _policy("h.keep_freed()", **env) == "system"


def test_an_archive_returning_freed_blocks_wins_for_the_process():
    assert _policy("h.keep_freed(); h.return_freed(); h.keep_freed()") == "return"
    assert _policy("h.return_freed(); h.keep_freed()") == "return"


def test_before_any_run_the_heap_is_glibcs():
    assert _policy("") == "None"
