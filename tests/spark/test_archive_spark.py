"""Archives and Spark: `spark.read.parquet` of the live files gives exactly the unexpired rows
(slidewise.spark.read_archive); the Spark engine writes the archive the local engine writes, exactly once."""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import slidewise
from slidewise.archive import Archive
from slidewise.cli import main
from slidewise.spark import read_archive
from tests.e2e_case import inputs, kill_after_first_commit

pytestmark = pytest.mark.spark


def test_spark_reads_exactly_the_unexpired_rows(spark, tmp_path):
    rng = np.random.default_rng(3)
    archive = Archive.create(tmp_path / "ar", key="host", variant="norebuild", n=4, every=10, row_group_rows=16)
    assert read_archive(spark, tmp_path / "ar").count() == 0
    oracle: list[tuple] = []
    for now in range(10, 210, 10):
        size = 40
        hosts = [f"10.0.0.{i}" for i in rng.integers(0, 9, size)]
        exp = now - 5 + rng.integers(0, 80, size)
        v = rng.integers(0, 1000, size)
        archive.update(now, {"host": hosts, "v": v, "exp": exp})
        oracle = [r for r in oracle + list(zip(hosts, v.tolist(), exp.tolist(), strict=True)) if r[2] >= now]
    got = read_archive(spark, tmp_path / "ar").collect()
    assert Counter((r["host"], r["v"], r["exp"]) for r in got) == Counter(oracle)
    assert read_archive(spark, tmp_path / "ar").where("host = '10.0.0.3'").count() == sum(r[0] == "10.0.0.3" for r in oracle)


Q = "SELECT A.ts AS at, B.ts AS bt, A.k AS k, B.v AS v FROM A [RANGE 300], B [RANGE 1000] WHERE A.k = B.k"


def _write_parts(root: Path, parts: int = 4) -> dict[str, Path]:
    """The e2e case's streams as ``parts`` CSV files each, in time order (file j gets mtime now - 100 + j s:
    Spark's file source lists files by modification time)."""
    base = int(time.time()) - 100
    out = {}
    for name, df in inputs(150, seed=9, span=500).items():
        d = root / name
        d.mkdir(parents=True)
        for j, part in enumerate(np.array_split(np.arange(len(df)), parts)):
            df.iloc[part].to_csv(d / f"part-{j}.csv", index=False)
            os.utime(d / f"part-{j}.csv", (base + j, base + j))
        out[name] = d
    return out


def _rows(root: Path) -> list[tuple]:
    return sorted(map(tuple, Archive.open(root).read().to_pandas().astype(str).to_numpy().tolist()))


def _same_archives(got: Path, want: Path) -> None:
    a, b = Archive.open(got), Archive.open(want)
    assert a.now == b.now and a.rows() > 100
    assert _rows(got) == _rows(want)
    assert a.cell_rows() == b.cell_rows()  # the same updates put the rows in the same sub-indices


def test_spark_writes_the_archive_the_local_engine_writes(spark, tmp_path):
    sources = {k: str(v) for k, v in _write_parts(tmp_path / "in").items()}
    options = dict(archive_key="k", archive_every=40, archive_variant="norebuild", archive_n=4)
    local = slidewise.run(Q, sources, archive=tmp_path / "local", **options)
    res = slidewise.run(Q, sources, engine="spark", spark=spark, once=True, max_files_per_trigger=1, archive=str(tmp_path / "spark"), **options)
    assert res.stats["micro_batches"] >= 4 and res.stats["archive"]["now"] == local.stats["archive"]["now"]
    _same_archives(tmp_path / "spark", tmp_path / "local")
    assert Archive.open(tmp_path / "spark").manifest["writer"]["pending"] == []  # the last update took every row


@pytest.mark.slow
def test_archive_of_a_killed_and_restarted_run_is_exactly_once(tmp_path):
    """SIGKILL `run --engine spark --archive` after its first committed micro-batch, add files, rerun:
    the archive equals the local engine's (no row lost, none twice)."""
    everything = _write_parts(tmp_path / "all")
    sources = {}
    for name, d in everything.items():
        sources[name] = tmp_path / "in" / name
        sources[name].mkdir(parents=True)
        for j in (0, 1):
            os.replace(d / f"part-{j}.csv", sources[name] / f"part-{j}.csv")  # keeps the mtime
    archive = ["--archive", str(tmp_path / "spark"), "--archive-key", "k", "--archive-every", "40"]
    args = ["run", Q, *[a for name, d in sources.items() for a in ("--source", f"{name}={d}")], "--engine", "spark", "--master", "local[2]", "--once"]
    args += ["--checkpoint", str(tmp_path / "ckpt"), "--conf", "slidewise.maxFilesPerTrigger=1", "--conf", "spark.sql.shuffle.partitions=2"]
    args += ["--quiet", "--trigger", "3s", *archive]  # batches 3 s apart: the kill lands between the first and the second
    kill_after_first_commit([sys.executable, "-m", "slidewise.cli", *args], tmp_path / "ckpt" / "query" / "commits", tmp_path / "first.log")
    assert not (tmp_path / "ckpt" / "query" / "commits" / "1").exists()  # killed mid-stream
    assert Archive.open(tmp_path / "spark").manifest["writer"]["batch"] >= 0  # the first batch is in (or pending)
    for name, d in everything.items():
        for f in sorted(d.iterdir()):
            os.replace(f, sources[name] / f.name)
    assert main(args) == 0
    all_sources = {k: str(v) for k, v in sources.items()}
    slidewise.run(Q, all_sources, archive=tmp_path / "local", archive_key="k", archive_every=40)
    _same_archives(tmp_path / "spark", tmp_path / "local")
