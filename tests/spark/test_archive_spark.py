"""`spark.read.parquet` of an archive's live files gives exactly its unexpired rows (slidewise.spark.read_archive)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from slidewise.archive import Archive
from slidewise.spark import read_archive

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
