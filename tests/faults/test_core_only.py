"""A core-only install (``pip install slidewise``, no extras) and a closed stdout.

The CLI runs in a child process whose imports of the extras' modules fail, as when
they are not installed: the local engine, ``explain`` and ``generate`` work, and
asking for an extra is one message naming it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.faults.conftest import Outcome, assert_clear_error, cli_env

# An import hook refusing the extras' modules, then the CLI with the remaining arguments.
WITHOUT_EXTRAS = """\
import runpy, sys
class Missing:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in ("pyspark", "py4j", "matplotlib", "psutil", "duckdb", "datasketches"):
            raise ModuleNotFoundError(f"No module named {name!r}")
sys.meta_path.insert(0, Missing())
sys.argv[0] = "slidewise"
runpy.run_module("slidewise", run_name="__main__")
"""

QUERY = "SELECT * FROM S1 [RANGE 100], S2 [RANGE 100] WHERE S1.a = S2.a"


def core_cli(*args: str, cwd: Path) -> Outcome:
    proc = subprocess.run(
        [sys.executable, "-c", WITHOUT_EXTRAS, *args], cwd=cwd, capture_output=True, check=False, text=True, timeout=300, env=cli_env(SLIDEWISE_ENGINE="")
    )
    return Outcome(proc.returncode, proc.stdout, proc.stderr)


def test_core_only_runs_locally_explains_and_generates(tmp_path):
    made = core_cli("generate", "--tuples", "300", "--out", "s", cwd=tmp_path)
    assert made.code == 0 and (tmp_path / "s" / "S1.csv").exists(), made.err
    sources = ["--source", "S1=s/S1.csv", "--source", "S2=s/S2.csv"]
    default = core_cli("run", QUERY, *sources, "--out", "-", "--quiet", cwd=tmp_path)  # default engine
    local = core_cli("run", QUERY, *sources, "--out", "-", "--quiet", "--engine", "local", cwd=tmp_path)
    assert default.code == local.code == 0, (default.err, local.err)
    assert default.out == local.out and local.out.startswith("S1.ts,S1.a,S1.x,S2.ts,S2.a,S2.x,ts,exp,sign\n")
    shown = core_cli("explain", QUERY, cwd=tmp_path)
    assert shown.code == 0 and "algorithm" in shown.out, shown.err


def test_core_only_names_the_missing_extra(tmp_path):
    spark = core_cli("run", QUERY, "--source", "S1=a.csv", "--source", "S2=b.csv", "--engine", "spark", cwd=tmp_path)
    assert_clear_error(spark, "--engine spark needs pyspark, which is not installed", "pip install 'slidewise[spark]'")
    assert_clear_error(core_cli("demo", "--engine", "spark", cwd=tmp_path), "pip install 'slidewise[spark]'")
    assert_clear_error(core_cli("bench", "joins", cwd=tmp_path), "slidewise bench needs duckdb, which is not installed", "pip install 'slidewise[bench]'")
    approx = "SELECT RSTREAM(S1.a, APPROX_COUNT_DISTINCT(S1.x) AS d) FROM S1 [RANGE 9 SLIDE 3] GROUP BY S1.a"
    (tmp_path / "a.csv").write_text("ts,a,x\n1,2,3\n")
    assert_clear_error(
        core_cli("run", approx, "--source", "S1=a.csv", cwd=tmp_path),
        "APPROX_COUNT_DISTINCT needs datasketches, which is not installed",
        "pip install 'slidewise[sketches]'",
    )


def test_a_closed_stdout_ends_the_run_quietly(tmp_path, cli):
    assert cli("generate", "--tuples", "20000", "--out", "s", cwd=tmp_path).code == 0
    proc = subprocess.Popen(
        [sys.executable, "-m", "slidewise", "run", QUERY.replace("100", "1000"), "--source", "S1=s/S1.csv", "--source", "S2=s/S2.csv", "--out", "-"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(),
    )
    assert proc.stdout.readline().startswith(b"S1.ts,")  # the reader takes one line and goes (`| head -1`)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 0, err
    assert "error" not in err.lower() and "Traceback" not in err, err
