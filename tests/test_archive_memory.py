"""The archive within its memory budget: the streaming merge is exact, and a small budget holds on an archive 10x larger."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from slidewise.archive import Archive, memory, merge
from slidewise.errors import OptionError

rows = st.lists(st.tuples(st.one_of(st.none(), st.integers(-5, 5)), st.integers(0, 20)), max_size=40)


@settings(max_examples=60, deadline=None)
@given(st.lists(rows, min_size=1, max_size=4), st.integers(1, 7))
def test_merge_of_sorted_runs_in_small_batches_is_the_sort_of_all(runs, size):
    tables = [pa.table({"k": pa.array([k for k, _ in r], pa.int64()), "exp": pa.array([e for _, e in r], pa.int64())}) for r in runs]
    tables = [t.sort_by([("k", "ascending"), ("exp", "ascending")]) for t in tables]
    got = list(merge.merge([merge.slices(t, size) for t in tables], "k", "exp"))
    want = pa.concat_tables(tables).sort_by([("k", "ascending"), ("exp", "ascending")])
    assert (pa.concat_tables(got) if got else want.slice(0, 0)).to_pydict() == want.to_pydict()


def test_the_budget_cuts_row_groups_and_must_be_positive(tmp_path):
    assert merge.batch_rows(8 << 20, 100, 65536) == (8 << 20) // (merge.SHARES * 100)
    assert merge.batch_rows(1, 100, 65536) == merge.MIN_ROWS and merge.batch_rows(1 << 30, 100, 4096) == 4096
    try:
        Archive.create(tmp_path / "a", key="k", memory_mb=0)
    except OptionError as exc:
        assert "the archive's memory budget must be positive, not 0 MB" in str(exc)
    else:
        raise AssertionError("no error")
    assert not (tmp_path / "a").exists()


def test_a_small_budget_holds_on_an_archive_ten_times_larger(tmp_path):
    """In a fresh process that may map only 10 MB more than when ready (RLIMIT_AS): an archive of 20 MB is updated and probed,
    the Arrow pool's peak stays within the budget of 2 MB (what the archive and the rows being added hold)."""
    from slidewise.bench.archive import run_memory_check

    report = run_memory_check(tmp_path, budget_mb=2, times=10, n=16, after=2, address_space_mb=10)
    assert "error" not in report, report.get("traceback")
    assert report["archive_mb"] >= 20 > report["address_space_mb"] and report["address_space_limit_mb"] and report["probes"] > 0
    assert report["arrow_peak_mb"] <= 2
    # the process, with the allocator's slack and Python's objects (2-3 MB whatever the budget): far below the archive
    assert report["peak_rss_mb"] <= 8


def test_probes_and_scans_come_in_batches_cut_to_the_readers_budget(tmp_path):
    a = Archive.create(tmp_path / "a", key="k", n=1, every=10)
    a.update(10, {"k": np.zeros(3000, dtype=np.int64), "v": np.arange(3000, dtype=np.int64), "exp": np.full(3000, 50, dtype=np.int64)})
    small = Archive.open(tmp_path / "a", memory_mb=0.001)
    parts = list(small.scan(0, 0))
    assert max(p.num_rows for p in parts) == merge.MIN_ROWS and pa.concat_tables(parts).column("v").to_pylist() == list(range(3000))
    assert small.probe(0).equals(a.probe(0))


def test_an_archive_command_picks_arrows_pool_before_pyarrow_is_imported(tmp_path):
    """`slidewise archive ...` (and run --archive) start Arrow's jemalloc pool, unmapping freed extents; glibc's mmap threshold is fixed."""
    Archive.create(tmp_path / "a", key="k")
    code = (
        "import sys; from slidewise.cli import main; assert 'pyarrow' not in sys.modules; main(['archive', 'info', sys.argv[1]]);"
        "import os, pyarrow as pa; from slidewise.archive import memory;"
        "print(pa.default_memory_pool().backend_name, os.environ['JE_ARROW_MALLOC_CONF'], memory._state['bound'], file=sys.stderr)"
    )
    env = {k: v for k, v in os.environ.items() if k not in (memory.POOL_VARIABLE, memory.JEMALLOC_VARIABLE)}
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "a")], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    want = "jemalloc" if "jemalloc" in pa.supported_memory_backends() else pa.default_memory_pool().backend_name
    assert done.stderr.split() == [want, memory.JEMALLOC_CONF, "True"]


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.lists(st.tuples(st.integers(0, 9), st.integers(0, 60)), max_size=30), min_size=1, max_size=6),
    st.sampled_from(["rebuild", "norebuild"]),
    st.sampled_from([1e-4, 64.0]),
)
def test_rows_given_in_parts_are_the_rows_given_whole(tmp_path_factory, updates, variant, memory_mb):
    """An update given an iterable of parts (spilled by cell as sorted runs when they exceed a quarter of the budget)
    leaves the archive a plain list of the unexpired rows says, as one given the same rows whole."""
    root = tmp_path_factory.mktemp("parts")
    whole = Archive.create(root / "whole", key="k", variant=variant, n=4, every=10, max_lifetime=60)
    parts = Archive.create(root / "parts", key="k", variant=variant, n=4, every=10, max_lifetime=60, memory_mb=memory_mb)
    live: list[tuple[int, int]] = []
    for i, rows in enumerate(updates):
        now = 10 * (i + 1)
        table = pa.table({"k": pa.array([k for k, _ in rows], pa.int64()), "exp": pa.array([now + e - 5 for _, e in rows], pa.int64())})
        whole.update(now, table)
        got = parts.update(now, (table.slice(j, 3).to_batches()[0] if j % 2 else table.slice(j, 3) for j in range(0, table.num_rows, 3)))
        live = [r for r in live + list(zip(table.column("k").to_pylist(), table.column("exp").to_pylist())) if r[1] >= now]
        assert got["inserted"] == sum(1 for e in table.column("exp").to_pylist() if e >= now)
        for archive in (whole, parts):
            if archive.schema is None:  # no part was ever given
                assert not live
                continue
            read = archive.read()
            assert sorted(zip(read.column("k").to_pylist(), read.column("exp").to_pylist())) == sorted(live)
            assert all(archive.probe(k).num_rows == sum(1 for r in live if r[0] == k) for k in range(10))
    assert not list(parts.root.glob("spill-*"))  # removed with the update's garbage
