"""The archive within its memory budget: the streaming merge is exact, and a small budget holds on an archive 10x larger."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from slidewise.archive import Archive, merge
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
    """In a fresh process: the Arrow pool's peak stays within 2 MB while an archive of 20 MB is updated and probed."""
    from slidewise.bench.archive import run_memory_check

    report = run_memory_check(tmp_path, budget_mb=2, times=10, n=16, after=2)
    assert "error" not in report, report.get("traceback")
    assert report["archive_mb"] >= 20 and report["probes"] > 0
    assert report["arrow_peak_mb"] <= 2  # what the archive and the rows being added hold, whatever the archive's size
    # the process, with the allocator's slack and Python's objects (a few MB whatever the budget): far below the archive
    assert report["peak_rss_mb"] <= 10
