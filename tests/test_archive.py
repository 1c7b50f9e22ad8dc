"""The archive (Golab's thesis ch. 4): every variant holds exactly the unexpired rows, probes and scans find them."""

from __future__ import annotations

import json
import os
from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slidewise.archive import VARIANTS, Archive, Layout
from slidewise.errors import ExecutionError, OptionError, SourceError


def _rows(table: pa.Table) -> Counter:
    d = table.to_pydict()
    return Counter(zip(d["k"], d["v"], d["exp"], strict=True))


def _expected(oracle: list[tuple], now: int, lo=None, hi=None) -> Counter:
    return Counter(r for r in oracle if r[2] >= now and (lo is None or r[0] >= lo) and (hi is None or r[0] <= hi))


batches = st.lists(
    st.tuples(
        st.integers(0, 25),  # time advance
        st.lists(st.tuples(st.integers(0, 6), st.integers(-5, 60)), max_size=12),  # (key, lifetime)
    ),
    min_size=1,
    max_size=12,
)


@pytest.mark.parametrize("variant", list(VARIANTS))
@settings(max_examples=15 if os.environ.get("HYPOTHESIS_PROFILE") != "stress" else 1000)  # per variant: 8 variants
@given(steps=batches, every=st.integers(1, 12), n=st.sampled_from([1, 2, 4, 9]), rg=st.integers(1, 5))
def test_every_variant_holds_exactly_the_unexpired_rows(tmp_path_factory, variant, steps, every, n, rg):
    """Oracle: a plain list of every row inserted; after each update probes and scans return its unexpired rows."""
    root = tmp_path_factory.mktemp("a") / "arch"
    archive = Archive.create(root, key="k", variant=variant, n=n, every=every, max_lifetime=40, row_group_rows=rg)
    oracle: list[tuple] = []
    now, serial = 0, 0
    for advance, rows in steps:
        now += advance
        ks = [k for k, _ in rows]
        vs = list(range(serial, serial + len(rows)))
        serial += len(rows)
        exps = [now + life for _, life in rows]
        archive.update(now, {"k": np.array(ks, dtype=np.int64), "v": np.array(vs, dtype=np.int64), "exp": np.array(exps, dtype=np.int64)})
        oracle += [r for r in zip(ks, vs, exps, strict=True) if r[2] >= now]
        oracle = [r for r in oracle if r[2] >= now]
        assert archive.now == now and archive.rows() == len(oracle)
        reopened = Archive.open(root)
        for key in range(7):
            assert _rows(reopened.probe(key)) == _expected(oracle, now, key, key)
        assert _rows(archive.read()) == _expected(oracle, now)
        assert _rows(archive.read(2, 4)) == _expected(oracle, now, 2, 4)
        # the live files alone hold exactly the unexpired rows (what other readers see)
        assert _rows(pa.concat_tables([pa.parquet.read_table(f) for f in archive.live_files()]) if archive.live_files() else archive.read()) == _expected(oracle, now)


def test_round_robin_spreads_updates_over_rows_and_columns():
    """Algorithm 1: consecutive updates insert into different rows and expire from different columns."""
    lay = Layout.make("rebuild", n=16, every=10)
    assert (lay.g, lay.e) == (4, 4)
    rows = [int(lay.cells(t, [t + 100])[0]) // 4 for t in range(0, 80, 10)]
    assert rows == [0, 1, 2, 3, 0, 1, 2, 3]
    cols = [int(c) % 4 for c in lay.cells(0, np.arange(0, 80, 10))]
    assert cols == [0, 1, 2, 3, 0, 1, 2, 3]
    chr_ = Layout.make("rebuild-chr", n=4, every=2, max_lifetime=16)  # Fig. 4.1: runs of 4 updates per partition
    assert [int(chr_.cells(t, [t + 20])[0]) // 2 for t in range(0, 32, 2)] == [0] * 4 + [1] * 4 + [0] * 4 + [1] * 4


def test_an_update_touches_g_plus_e_minus_one_cells_of_the_doubly_partitioned_index(tmp_path):
    """§4.3.2: in steady state an update touches G + E - 1 sub-indices; the wave index partitioned by insertion touches all."""
    rng = np.random.default_rng(1)
    touched = {}
    for variant in ("rebuild", "r-ins"):
        a = Archive.create(tmp_path / variant, key="k", variant=variant, n=16, every=10, max_lifetime=160)
        for t in range(10, 800, 10):
            life = rng.integers(1, 160, 200)
            stats = a.update(t, {"k": rng.integers(0, 50, 200), "v": np.zeros(200, dtype=np.int64), "exp": t + life})
        touched[variant] = stats["cells_touched"]
    assert touched == {"rebuild": 7, "r-ins": 16}


def test_probe_reads_only_row_groups_whose_statistics_hold_the_key(tmp_path, monkeypatch):
    """Files are sorted by key in row groups; a probe skips the row groups whose key range excludes the key."""
    a = Archive.create(tmp_path / "a", key="k", n=1, every=10, row_group_rows=10)
    a.update(10, {"k": np.arange(100, dtype=np.int64), "v": np.zeros(100, dtype=np.int64), "exp": np.full(100, 50, dtype=np.int64)})
    read = []
    original = pa.parquet.ParquetFile.iter_batches
    monkeypatch.setattr(
        pa.parquet.ParquetFile, "iter_batches", lambda self, *a, row_groups, **k: read.extend(row_groups) or original(self, *a, row_groups=row_groups, **k)
    )
    assert a.probe(42).to_pydict() == {"k": [42], "v": [0], "exp": [50]}
    assert read == [4]


def test_text_keys_and_keys_given_as_text(tmp_path):
    a = Archive.create(tmp_path / "a", key="host", every=5)
    a.update(5, {"host": ["10.0.0.7", "10.0.0.8", "10.0.0.7"], "v": [1, 2, 3], "exp": [9, 5, 4]})
    assert a.probe("10.0.0.7").to_pydict() == {"host": ["10.0.0.7"], "v": [1], "exp": [9]}
    b = Archive.create(tmp_path / "b", key="k", every=5)
    b.update(5, {"k": [3], "exp": [7]})
    assert b.probe("3").num_rows == 1


def test_errors(tmp_path):
    a = Archive.create(tmp_path / "a", key="k", every=5)
    a.update(10, {"k": [1], "exp": [20]})
    with pytest.raises(ExecutionError, match="archive update at 9 is before its current time 10"):
        a.update(9)
    with pytest.raises(ExecutionError, match="the rows lack the archive's key column 'k'"):
        a.update(11, {"x": [1], "exp": [20]})
    with pytest.raises(ExecutionError, match="the rows' columns differ from the archive's"):
        a.update(11, {"k": [1], "exp": [20], "z": [0]})
    with pytest.raises(ExecutionError, match="expiration column 'exp' must be integer"):
        a.update(11, {"k": [1], "exp": [2.5]})
    with pytest.raises(OptionError, match="key 'x' is no value of the archive's key column 'k'"):
        a.probe("x")
    with pytest.raises(OptionError, match="the archive directory exists and is not empty"):
        Archive.create(tmp_path / "a", key="k")
    with pytest.raises(OptionError, match="unknown archive variant 'btree'"):
        Archive.create(tmp_path / "b", key="k", variant="btree")
    with pytest.raises(SourceError, match="no archive here"):
        Archive.open(tmp_path / "none")
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "manifest.json").write_text(json.dumps({"format": 99}))
    with pytest.raises(SourceError, match="not a slidewise archive manifest"):
        Archive.open(tmp_path / "c")


def test_an_update_and_a_probe_hold_one_batch_per_file_never_a_sub_index(tmp_path, monkeypatch):
    """Memory: an update streams the files it rewrites in batches of at most a row group, a probe reads one row group."""
    rng = np.random.default_rng(5)
    a = Archive.create(tmp_path / "a", key="k", n=16, every=10, max_lifetime=320, row_group_rows=256)
    for t in range(10, 330, 10):
        a.update(t, {"k": rng.integers(0, 100, 500), "v": np.zeros(500, dtype=np.int64), "exp": t + rng.integers(1, 320, 500)})
    loaded: list[int] = []
    read_table, read_group, batches = pa.parquet.read_table, pa.parquet.ParquetFile.read_row_group, pa.parquet.ParquetFile.iter_batches

    def iter_batches(self, *args, **kwargs):
        for batch in batches(self, *args, **kwargs):
            loaded.append(batch.num_rows)
            yield batch

    monkeypatch.setattr(pa.parquet, "read_table", lambda *a, **k: (t := read_table(*a, **k), loaded.append(t.num_rows))[0])
    monkeypatch.setattr(pa.parquet.ParquetFile, "read_row_group", lambda self, *a, **k: (t := read_group(self, *a, **k), loaded.append(t.num_rows))[0])
    monkeypatch.setattr(pa.parquet.ParquetFile, "iter_batches", iter_batches)
    biggest = max(a.cell_rows())
    stats = a.update(330, {"k": rng.integers(0, 100, 500), "v": np.zeros(500, dtype=np.int64), "exp": 330 + rng.integers(1, 320, 500)})
    assert stats["rows_read"] > biggest and loaded and max(loaded) <= 256 < biggest
    assert all(pq.ParquetFile(f).metadata.row_group(i).num_rows <= 256 for f in a.live_files() for i in range(pq.ParquetFile(f).metadata.num_row_groups))
    loaded.clear()
    a.probe(7)
    assert sum(t.num_rows for t in a.scan()) == a.rows()
    assert loaded and max(loaded) <= 256
