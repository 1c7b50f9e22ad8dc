"""Sinks: CSV / JSON lines / Parquet files, stdout and callables; clear errors for bad targets."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slidewise.errors import OptionError
from slidewise.runtime.sinks import csv_bytes, open_sink

B1 = {
    "S1.ts": np.array([1, 2]),
    "S1.a": np.array([7, 8]),
    "name": np.array(["x", "a,b"], dtype=object),
    "v": np.array([0.5, np.nan]),
    "sign": np.array([1, -1], dtype=np.int8),
}
B2 = {"S1.ts": np.array([3]), "S1.a": np.array([9]), "name": np.array(['say "hi"'], dtype=object), "v": np.array([1.25]), "sign": np.array([1], dtype=np.int8)}


def write_two(target, columns=None):
    sink = open_sink(target, columns)
    sink.write(B1)
    sink.write({k: v[:0] for k, v in B2.items()})  # empty batches are fine
    sink.write(B2)
    sink.close()
    return sink


@pytest.mark.parametrize(
    "ext, read",
    [
        ("csv", pd.read_csv),
        ("csv.gz", pd.read_csv),
        ("jsonl", lambda p: pd.read_json(p, lines=True)),
        ("json", lambda p: pd.read_json(p, lines=True)),
        ("parquet", pd.read_parquet),
    ],
)
def test_file_sinks_round_trip(tmp_path, ext, read):
    path = tmp_path / "deep" / "dir" / f"out.{ext}"  # parent directories are created
    sink = write_two(path)
    assert sink.rows_written == 3
    frame = read(path)
    assert list(frame.columns) == ["S1.ts", "S1.a", "name", "v", "sign"]
    assert frame["S1.ts"].tolist() == [1, 2, 3] and frame["name"].tolist() == ["x", "a,b", 'say "hi"']
    assert frame["sign"].tolist() == [1, -1, 1] and np.isnan(frame["v"][1])


def test_csv_text_is_plain_and_quoted_only_where_needed(tmp_path):
    path = tmp_path / "o.csv"
    write_two(path)
    assert path.read_text().splitlines() == ["S1.ts,S1.a,name,v,sign", "1,7,x,0.5,1", '2,8,"a,b",,-1', '3,9,"say ""hi""",1.25,1']


def test_columns_fix_order_and_header_of_empty_output(tmp_path):
    path = tmp_path / "e.csv"
    sink = open_sink(path, ["b", "a"])
    sink.close()
    assert path.read_text() == "b,a\n"
    path = tmp_path / "o.csv"
    with open_sink(path, ["S1.a", "S1.ts"]) as sink:
        sink.write(B1)
    assert path.read_text().splitlines()[:2] == ["S1.a,S1.ts", "7,1"]
    pq_path = tmp_path / "e.parquet"
    open_sink(pq_path, ["x", "y"]).close()
    assert pq.read_table(pq_path).column_names == ["x", "y"]


def test_parquet_is_written_incrementally(tmp_path):
    path = tmp_path / "o.parquet"
    sink = open_sink(path)
    for i in range(3):
        sink.write({"ts": np.arange(i * 10, i * 10 + 10), "s": np.array(["q"] * 10, dtype=object)})
    sink.close()
    f = pq.ParquetFile(path)
    assert f.metadata.num_row_groups == 3 and f.metadata.num_rows == 30


def test_parquet_integers_are_delta_encoded_and_read_back(tmp_path):
    path = tmp_path / "o.parquet"
    cols = {
        "ts": np.repeat(np.arange(5) * 10, 4),
        "a": np.tile(np.arange(4, dtype=np.int32), 5),
        "n": np.full(20, 2**62),
        "sign": np.ones(20, np.int8),
        "s": np.array(["q"] * 20, dtype=object),
    }
    with open_sink(path) as sink:
        sink.write(cols)
    col = pq.ParquetFile(path).metadata.row_group(0).column
    assert all("DELTA_BINARY_PACKED" in col(i).encodings and "RLE_DICTIONARY" not in col(i).encodings for i in range(4))
    assert "RLE_DICTIONARY" in col(4).encodings
    got = pq.read_table(path)
    assert got.schema.types[:4] == [pa.int64(), pa.int32(), pa.int64(), pa.int8()]
    assert all(np.array_equal(got.column(c).to_numpy(zero_copy_only=False), v) for c, v in cols.items())


def test_stdout_and_callable(capsys):
    sink = write_two("-")
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "S1.ts,S1.a,name,v,sign" and len(out) == 4 and sink.rows_written == 3
    got = []
    sink = write_two(got.append)
    assert [len(f) for f in got] == [2, 1] and list(got[0].columns) == list(B1) and sink.rows_written == 3


def test_bad_targets(tmp_path):
    with pytest.raises(OptionError, match="unknown output file type") as err:
        open_sink(tmp_path / "out.xlsx")
    assert ".csv" in err.value.hint
    with pytest.raises(OptionError, match="directory"):
        open_sink(tmp_path)
    with pytest.raises(OptionError):
        open_sink(42)
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(OptionError, match="cannot write --out: Not a directory") as err:
        open_sink(blocker / "sub" / "out.csv")
    assert "\n" not in str(err.value)
    if os.geteuid() != 0:  # root can write anywhere
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        with pytest.raises(OptionError, match="cannot write --out"):
            open_sink(ro / "out.parquet")


def test_csv_bytes_without_specials_matches_plain_text():
    import pyarrow as pa

    t = pa.table({"a": [1, None], "b": ["x", "y"], "c": [True, False]})
    assert csv_bytes(t) == b"a,b,c\n1,x,true\n,y,false\n"
    assert csv_bytes(t, header=False).startswith(b"1,x")


@pytest.mark.parametrize("ext", [".csv", ".jsonl", ".parquet", ".csv.gz"])
def test_a_file_appears_whole_on_close_and_an_abort_leaves_the_target(tmp_path, ext):
    target = tmp_path / f"out{ext}"
    target.write_bytes(b"earlier")
    target.chmod(0o640)
    sink = open_sink(target, ["ts", "a"])
    sink.write({"ts": np.array([1, 2]), "a": np.array([5, 6])})
    assert target.read_bytes() == b"earlier"  # still the old file while writing
    sink.abort()
    assert target.read_bytes() == b"earlier" and sorted(p.name for p in tmp_path.iterdir()) == [target.name]
    with pytest.raises(RuntimeError), open_sink(target, ["ts", "a"]) as failing:
        failing.write({"ts": np.array([1]), "a": np.array([5])})
        raise RuntimeError("the run failed")
    assert target.read_bytes() == b"earlier" and len(list(tmp_path.iterdir())) == 1
    with open_sink(target, ["ts", "a"]) as sink:
        sink.write({"ts": np.array([1, 2]), "a": np.array([5, 6])})
    read = {".parquet": pd.read_parquet, ".jsonl": lambda p: pd.read_json(p, lines=True)}.get(ext, pd.read_csv)
    assert read(target)["a"].tolist() == [5, 6] and len(list(tmp_path.iterdir())) == 1
    assert target.stat().st_mode & 0o777 == 0o640  # the replaced file's permissions are kept


def test_background_sink_writes_in_order_and_raises_the_writers_error(tmp_path):
    from slidewise.runtime.sinks import BackgroundSink

    sink = BackgroundSink(open_sink(str(tmp_path / "r.parquet"), ["a"]))
    for i in range(5):
        sink.write({"a": np.arange(i * 3, i * 3 + 3)})
    sink.close()
    assert pq.read_table(tmp_path / "r.parquet").column("a").to_pylist() == list(range(15))
    assert sink.rows_written == 15
    bad = BackgroundSink(open_sink(str(tmp_path / "s.parquet"), ["a"]))
    bad.write({"b": np.arange(2)})
    with pytest.raises(Exception, match="lacks columns"):
        bad.close()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.booleans()), min_size=1, max_size=6))
def test_collected_batches_keep_the_type_of_the_batches_with_values(batches):
    """A batch whose aggregate is all null (None, an object column) joins the float batches as NaN, quietly;
    batches without rows add nothing."""
    import warnings

    from slidewise.runtime.sinks import collected_frame

    frames = [pd.DataFrame({"v": [1.5] * n if valued else [None] * n, "ts": list(range(n))}) for n, valued in batches]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = collected_frame(frames, ["v", "ts"])
    want = [x for n, valued in batches for x in ([1.5] * n if valued else [None] * n)]
    assert list(got.columns) == ["v", "ts"] and len(got) == len(want)
    assert got["ts"].tolist() == [t for n, _ in batches for t in range(n)]
    assert [None if pd.isna(x) else x for x in got["v"]] == want
    if any(n and valued for n, valued in batches):
        assert got["v"].dtype == np.float64
