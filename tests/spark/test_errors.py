"""The Spark engine's user errors: one line, a hint, exit 2 — all found before a JVM starts."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from slidewise.cli import main
from slidewise.spark.session import check_master, session_conf

Q = "SELECT * FROM A [RANGE 5], B [RANGE 5] WHERE A.k = B.k"


@pytest.fixture
def inputs(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text("ts,k\n1,7\n")
    b.write_text("ts,k\n2,7\n")
    return a, b


def _error(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("slidewise: error: ")
    return err[0]


def test_java_missing(capsys, monkeypatch, inputs, tmp_path):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-java"))
    err = _error(capsys, ["run", Q, "--source", f"A={inputs[0]}", "--source", f"B={inputs[1]}", "--engine", "spark", "--master", "local[1]"])
    assert "needs Java" in err and "apt-get install openjdk-17-jre-headless" in err


def test_bad_master_url(capsys, inputs):
    err = _error(capsys, ["run", Q, "--source", f"A={inputs[0]}", "--source", f"B={inputs[1]}", "--engine", "spark", "--master", "bogus://x"])
    assert "bad Spark master URL 'bogus://x'" in err and "local[*]" in err
    assert check_master("local-cluster[2,1,1024]") == "local-cluster[2,1,1024]"


def test_missing_and_empty_input_directory(capsys, inputs, tmp_path):
    err = _error(capsys, ["run", Q, "--source", f"A={tmp_path / 'nope'}", "--source", f"B={inputs[1]}", "--engine", "spark"])
    assert "no such file or directory" in err
    (tmp_path / "empty").mkdir()
    err = _error(capsys, ["run", Q, "--source", f"A={tmp_path / 'empty'}", "--source", f"B={inputs[1]}", "--engine", "spark"])
    assert "holds no data files" in err


def test_unreadable_input_directory(capsys, monkeypatch, inputs, tmp_path):
    d = tmp_path / "A"
    d.mkdir()
    (d / "1.csv").write_text("ts,k\n1,7\n")
    d.chmod(0)
    try:
        if os.access(d, os.R_OK):  # root reads anything: fail the listing as it fails for a user
            real = Path.iterdir

            def iterdir(self):
                if self == d:
                    raise PermissionError(13, "Permission denied", str(self))
                return real(self)

            monkeypatch.setattr(Path, "iterdir", iterdir)
        err = _error(capsys, ["run", Q, "--source", f"A={d}", "--source", f"B={inputs[1]}", "--engine", "spark"])
    finally:
        d.chmod(0o755)
    assert "cannot list directory: Permission denied" in err and "permissions" in err


def test_schema_mismatch_between_files(capsys, inputs, tmp_path):
    d = tmp_path / "A"
    d.mkdir()
    (d / "1.csv").write_text("ts,k\n1,7\n")
    (d / "2.csv").write_text("ts,j\n2,7\n")
    err = _error(capsys, ["run", Q, "--source", f"A={d}", "--source", f"B={inputs[1]}", "--engine", "spark"])
    assert "do not share a schema" in err


def test_checkpoint_of_another_query(capsys, inputs, tmp_path):
    ck = tmp_path / "ck"
    ck.mkdir()
    (ck / "slidewise.json").write_text('{"query": "SELECT 1", "buckets": 2}')
    err = _error(capsys, ["run", Q, "--source", f"A={inputs[0]}", "--source", f"B={inputs[1]}", "--engine", "spark", "--checkpoint", str(ck)])
    assert "belongs to another query" in err


def test_bad_options(capsys, inputs):
    base = ["run", Q, "--source", f"A={inputs[0]}", "--source", f"B={inputs[1]}", "--engine", "spark"]
    assert "bad --conf" in _error(capsys, base + ["--conf", "novalue"])
    assert "bad trigger interval" in _error(capsys, base + ["--trigger", "soon"])


def test_session_defaults():
    conf = session_conf("local[2]", {"spark.sql.shuffle.partitions": "3"})
    assert conf["spark.sql.streaming.stateStore.providerClass"].endswith("RocksDBStateStoreProvider")
    assert conf["spark.pyspark.python"] == __import__("sys").executable
    assert conf["spark.sql.shuffle.partitions"] == "3" and conf["spark.ui.enabled"] == "false"
    assert conf["spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"] == "true"
    for side in ("driver", "executor"):  # the JVM compiles with C1 only
        assert conf[f"spark.{side}.extraJavaOptions"].endswith(" -XX:TieredStopAtLevel=1")


def test_default_partitions_are_the_cores(monkeypatch):
    """One stateful task per shuffle partition and micro-batch: as many as the cores (at least 2)."""
    from slidewise.spark import session

    for cores, expected in ((1, 2), (2, 2), (8, 8)):
        monkeypatch.setattr(session.os, "cpu_count", lambda c=cores: c)
        assert session.default_partitions() == expected
        assert session_conf("local[*]")["spark.sql.shuffle.partitions"] == str(expected)


def test_default_engine_is_local_unless_spark_asked(monkeypatch, capsys, inputs):
    from slidewise.spark.cli import default_engine, resolve_engine

    monkeypatch.delenv("SLIDEWISE_ENGINE", raising=False)
    assert default_engine() == "local" and resolve_engine(None) == "local"
    assert resolve_engine(None, spark_asked=True) == "spark"
    assert resolve_engine(None, local_only=True, spark_asked=True) == "local"
    assert resolve_engine("spark", local_only=True) == "spark"
    monkeypatch.setenv("SLIDEWISE_ENGINE", "spark")
    assert default_engine() == "spark" and resolve_engine(None) == "spark"
    assert resolve_engine(None, local_only=True) == "local"
    # overload budgets exist only in the embedded engine: without --engine the run stays in-process (no JVM)
    assert main(["run", Q, "--source", f"A={inputs[0]}", "--source", f"B={inputs[1]}", "--cpu-budget", "1000", "--quiet"]) == 0
