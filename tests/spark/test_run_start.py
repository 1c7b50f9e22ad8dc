"""Starting a Spark run without a JVM: the planned end of input, the Python workers' import path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyspark

from slidewise.spark import session
from slidewise.spark.dataframe import PLANNED, cancel_planned_end, end_after
from slidewise.spark.files import data_batches
from slidewise.spark.ingest import DIRECTORY_GLOBS


def _csv_dir(path: Path, files: int) -> dict:
    path.mkdir(parents=True)
    for k in range(files):
        (path / f"part-{k}.csv").write_text("ts,a\n1,2\n")
    (path / "README.txt").write_text("not data")
    (path / ".hidden.csv").write_text("ts,a\n")
    return {"fmt": "csv", "dir": str(path), "glob": DIRECTORY_GLOBS["csv"], "columns": ["ts", "a"]}


def test_data_batches_count_the_micro_batches_of_the_files_present(tmp_path):
    s1, s2 = _csv_dir(tmp_path / "in" / "S1", 6), _csv_dir(tmp_path / "in" / "S2", 5)
    alone = _csv_dir(tmp_path / "other" / "S3", 3)
    assert data_batches([s1, s2], 1) == 6  # one file source over both siblings: 2 files per micro-batch
    assert data_batches([s1, s2], 2) == 3
    assert data_batches([s1, s2, alone], 1) == 6 and data_batches([alone], 2) == 2
    assert data_batches([s1, s2], None) == 1  # no limit: one micro-batch
    assert data_batches([{**s1, "glob": "part-0.csv"}], 1) == 1  # a single-file source
    assert data_batches([_csv_dir(tmp_path / "empty", 0)], 1) == 0
    assert data_batches([s1, {"fmt": "rate"}], 1) is None  # not a file source: no planned end


def _markers(control: Path) -> list[tuple[int, int]]:
    return [(int(p.stat().st_mtime), json.loads(p.read_text())["eof"]) for p in sorted(control.iterdir(), key=lambda p: p.stat().st_mtime)]


def test_end_after_plans_the_end_in_the_last_micro_batch_and_a_continued_run_cancels_it(tmp_path):
    end_after(tmp_path, 4)
    planned = _markers(tmp_path)
    assert [eof for _, eof in planned] == [0, 0, 0, 1]  # one marker per micro-batch, the end last
    assert len({t for t, _ in planned}) == 4 and all(p.name.startswith(PLANNED) for p in tmp_path.iterdir())
    cancel_planned_end(tmp_path)
    assert _markers(tmp_path) == [(t, 0) for t, _ in planned]  # same files, same order: no end
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def _sys_path(pythonpath: list[str]) -> tuple[list[str], str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(pythonpath)}
    code = "import sys, json, pyspark, os; print(json.dumps([sys.path, pyspark.__file__, os.environ.get('CHAINED', '')]))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, timeout=120).stdout
    path, where, chained = json.loads(out)
    return path, where + chained


def test_spark_python_processes_import_the_installed_pyspark_not_its_zip(tmp_path, monkeypatch):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(session.SITECUSTOMIZE)
    home = Path(pyspark.__file__).parent
    zips = [str(home / "python" / "lib" / "pyspark.zip"), str(home / "python" / "lib" / "py4j-0.10.9.9-src.zip")]
    path, where = _sys_path([str(site), *zips])
    assert not set(zips) & set(path) and where == pyspark.__file__  # the package, with its cached bytecode
    other = [str(tmp_path / "spark" / "python" / "lib" / "pyspark.zip")]  # another Spark's copy stays first
    assert other[0] in _sys_path([str(site), *other])[0]
    user = tmp_path / "user"
    user.mkdir()
    (user / "sitecustomize.py").write_text("import os\nos.environ['CHAINED'] = '+user'\n")
    assert _sys_path([str(site), *zips, str(user)])[1] == pyspark.__file__ + "+user"  # a user's sitecustomize still runs


def test_the_worker_site_is_on_the_path_only_while_the_jvm_starts(monkeypatch):
    monkeypatch.setattr(session, "_TEMPORARY", {})
    monkeypatch.setenv("PYTHONPATH", "/somewhere")
    with session._worker_site():
        first, rest = os.environ["PYTHONPATH"].split(os.pathsep)
        assert (Path(first) / "sitecustomize.py").read_text() == session.SITECUSTOMIZE and rest == "/somewhere"
    assert os.environ["PYTHONPATH"] == "/somewhere"
    session._remove_temporary()
    assert not Path(first).exists()
