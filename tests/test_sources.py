"""Sources: CSV / JSON lines / Parquet files and directories, in-memory data,
timestamp units, schema inference, and bad rows as counted rejects."""

from __future__ import annotations

import csv
import io
import json
from importlib import resources

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slidewise.errors import OptionError, SourceError
from slidewise.runtime import sources as S
from slidewise.runtime.rejects import Rejects
from slidewise.runtime.sources import open_source

#: the bundled Zeek sample: real epoch-seconds timestamps, out of order
ZEEK_DNS = resources.files("slidewise") / "data" / "demo" / "dns.csv"


def read_all(src, rejects=None):
    """All chunks of a source concatenated: (ts, cols, lines, files)."""
    chunks = list(src.chunks(rejects))
    if not chunks:
        return np.empty(0, np.int64), {c: np.empty(0, d) for c, d in src.schema.items()}, np.empty(0, np.int64), []
    ts = np.concatenate([c.ts for c in chunks])
    cols = {k: np.concatenate([c.cols[k] for c in chunks]) for k in src.schema}
    lines = np.concatenate([c.lines for c in chunks])
    files = [f for c in chunks for f in [c.file] * len(c)]
    return ts, cols, lines, files


def rejects_of(src):
    return src.rejects.to_frame().to_dict("records")


# --------------------------------------------------------------------------- CSV


def test_csv_schema_values_and_lines(tmp_path):
    p = tmp_path / "s.csv"
    p.write_text("ts,a,price,name,flag\n3,1,1.5,x,true\n1,2,2,\"b,c\",false\n\n7,3,-0.25,\"say \"\"hi\"\"\",true\n")
    src = open_source("S", p)
    assert src.schema == {"a": np.int64, "price": np.float64, "name": object, "flag": np.bool_}
    assert src.ts_unit == "raw" and src.ts_label == ""
    ts, cols, lines, files = read_all(src)
    assert ts.dtype == np.int64 and ts.tolist() == [3, 1, 7]
    assert cols["a"].tolist() == [1, 2, 3]
    assert cols["price"].tolist() == [1.5, 2.0, -0.25]
    assert cols["name"].tolist() == ["x", "b,c", 'say "hi"']
    assert cols["flag"].tolist() == [True, False, True]
    assert lines.tolist() == [2, 3, 5]  # physical lines, header is line 1, blank line 4
    assert set(files) == {str(p)}
    assert src.rejects.total == 0 and src.rows_read == 3


def test_csv_bad_rows_are_counted_rejects_with_file_and_line(tmp_path):
    p = tmp_path / "bad.csv"
    p.write_text("ts,k,v\n1,1,0.5\n2,1\nabc,1,1\n4,2,x\n5,3,1.5,9\n6,4,2.5\n")
    src = open_source("A", p)
    assert src.schema == {"k": np.int64, "v": np.float64}
    ts, cols, lines, _ = read_all(src)
    assert ts.tolist() == [1, 6] and lines.tolist() == [2, 7]
    rej = sorted(rejects_of(src), key=lambda r: r["line"])
    assert [(r["stream"], r["line"], r["reason"]) for r in rej] == [
        ("A", 3, "malformed row: expected 3 fields, found 2"),
        ("A", 4, "non-numeric timestamp 'abc'"),
        ("A", 5, "unparseable value 'x' in float column 'v'"),
        ("A", 6, "malformed row: expected 3 fields, found 4"),
    ]
    assert {r["file"] for r in rej} == {str(p)}
    assert [r["row"] for r in rej] == ["2,1", "abc,1,1", "4,2,x", "5,3,1.5,9"]
    assert src.rejects.summary() == {"malformed row": 2, "non-numeric timestamp": 1, "unparseable value": 1}
    assert src.rows_rejected == 4 and src.rows_read == 2


def test_csv_invalid_utf8_rejects_only_that_row(tmp_path):
    p = tmp_path / "u.csv"
    p.write_bytes(b"ts,a,b\n1,caf\xe9,1\n2,ok,2\n")
    src = open_source("U", p)
    ts, cols, lines, _ = read_all(src)
    assert ts.tolist() == [2] and cols["a"].tolist() == ["ok"] and lines.tolist() == [3]
    assert [(r["line"], r["reason"]) for r in rejects_of(src)] == [(2, "invalid UTF-8 in column 'a'")]


def test_csv_quoted_newlines_crlf_and_bom(tmp_path):
    p = tmp_path / "q.csv"
    p.write_bytes(b'\xef\xbb\xbfts,text\r\n1,"two\r\nlines"\r\n\r\n2,plain\r\n3,"x"\r\n')
    src = open_source("Q", p)
    ts, cols, lines, _ = read_all(src)
    assert ts.tolist() == [1, 2, 3]
    assert cols["text"].tolist() == ["two\r\nlines", "plain", "x"]
    assert lines.tolist() == [2, 5, 6]


def test_compressed_text_files(tmp_path):
    import gzip

    with gzip.open(tmp_path / "s.csv.gz", "wt") as f:
        f.write("ts,a\n1,2\n3,4\n")
    with gzip.open(tmp_path / "s.jsonl.gz", "wt") as f:
        f.write('{"ts": 5, "a": 6}\n')
    assert read_all(open_source("G", tmp_path / "s.csv.gz"))[1]["a"].tolist() == [2, 4]
    assert read_all(open_source("G", tmp_path / "s.jsonl.gz"))[0].tolist() == [5]


def test_csv_header_only_and_empty_file(tmp_path):
    p = tmp_path / "h.csv"
    p.write_text("ts,a\n")
    src = open_source("H", p)
    assert list(src.schema) == ["a"] and list(src.chunks()) == []
    e = tmp_path / "e.csv"
    e.write_text("")
    with pytest.raises(SourceError, match="empty file") as err:
        open_source("E", e)
    assert str(e) in str(err.value)


def test_missing_ts_column_names_file_columns_and_option(tmp_path):
    p = tmp_path / "n.csv"
    p.write_text("time,a\n1,2\n")
    with pytest.raises(SourceError) as err:
        open_source("N", p)
    msg = str(err.value)
    assert str(p) in msg and "'ts'" in msg and "time, a" in msg and "--ts-column" in msg
    assert "\n" not in msg
    assert open_source("N", p, ts_column="time").schema == {"a": np.int64}


def test_missing_and_unreadable_inputs(tmp_path):
    with pytest.raises(SourceError, match="no such file") as err:
        open_source("X", tmp_path / "nope.csv")
    assert "nope.csv" in str(err.value) and err.value.hint
    (tmp_path / "data.txt").write_text("ts\n1\n")
    with pytest.raises(SourceError, match="unknown file type"):
        open_source("X", tmp_path / "data.txt")
    empty = tmp_path / "empty_dir"
    empty.mkdir()
    with pytest.raises(SourceError, match="no data files"):
        open_source("X", empty)
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"PAR1 not really")
    with pytest.raises(SourceError, match="cannot read Parquet") as err:
        open_source("X", broken)
    assert "Traceback" not in str(err.value) and "\n" not in str(err.value)


def test_bad_options():
    with pytest.raises(OptionError, match="timestamp unit"):
        open_source("X", {"ts": [1]}, ts_unit="hours")
    with pytest.raises(OptionError, match="chunk_rows"):
        open_source("X", {"ts": [1]}, chunk_rows=0)


def test_int_column_with_missing_values_beyond_the_sample_becomes_float(tmp_path, monkeypatch):
    monkeypatch.setattr(S, "_SAMPLE_BYTES", 64)
    monkeypatch.setattr(S, "_MIN_BLOCK", 64)
    p = tmp_path / "m.csv"
    p.write_text("ts,port\n" + "".join(f"{i},{i + 100}\n" for i in range(50)) + "50,\n51,7\n")
    src = open_source("M", p)
    assert src.schema["port"] == np.float64
    ts, cols, _, _ = read_all(src)
    assert len(ts) == 52 and np.isnan(cols["port"][50]) and cols["port"][51] == 7
    assert src.rejects.total == 0


@st.composite
def csv_files(draw):
    """CSV text with quoted fields (commas, quotes, newlines), blank and malformed lines."""
    rows, expected = [], []
    line = 2
    for i in range(draw(st.integers(0, 25))):
        kind = draw(st.sampled_from(["ok", "ok", "ok", "blank", "short", "quoted"]))
        if kind == "blank":
            rows.append("")
            line += 1
        elif kind == "short":
            rows.append(f"{i}")
            line += 1
        else:
            text = draw(st.text(alphabet='ab,"\n ', max_size=6)) if kind == "quoted" else f"v{i}"
            quoted = '"' + text.replace('"', '""') + '"' if kind == "quoted" else text
            rows.append(f"{i},{quoted},{i * 10}")
            expected.append((i, text, i * 10, line))
            line += 1 + text.count("\n")
    return "ts,s,n\n" + "\n".join(rows) + ("\n" if draw(st.booleans()) else ""), expected


@settings(max_examples=40, deadline=None)
@given(csv_files(), st.integers(1, 4))
def test_csv_lines_exact_across_tiny_blocks(tmp_path_factory, case, chunk_rows):
    text, expected = case
    p = tmp_path_factory.mktemp("c") / "t.csv"
    p.write_text(text)
    S_min, S_sample = S._MIN_BLOCK, S._SAMPLE_BYTES
    S._MIN_BLOCK, S._SAMPLE_BYTES = 16, 32
    try:
        src = open_source("T", p, ts_unit="raw", chunk_rows=chunk_rows)
        chunks = list(src.chunks())
    finally:
        S._MIN_BLOCK, S._SAMPLE_BYTES = S_min, S_sample
    assert all(0 < len(c) <= chunk_rows for c in chunks)
    got = [(int(t), str(s), int(float(n)), int(ln)) for c in chunks for t, s, n, ln in zip(c.ts, c.cols["s"], c.cols["n"], c.lines)]
    assert got == expected
    # what the standard library reads as rows of the wrong width is exactly what was rejected
    short = [r for r in csv.reader(io.StringIO(text)) if len(r) == 1 and r != []]
    assert src.rejects.total == len(short)


# --------------------------------------------------------------------------- timestamps


def test_zeek_dns_float_epoch_seconds_to_ms(tmp_path):
    p = tmp_path / "dns.csv"
    with open(ZEEK_DNS) as f:
        p.write_text("".join(next(f) for _ in range(201)))
    src = open_source("dns", p)
    assert src.ts_unit == "s" and src.ts_label == "ms"
    ts, cols, lines, _ = read_all(src)
    assert len(ts) == 200 and lines[0] == 2 and lines[-1] == 201
    assert ts[0] == 1521911720865  # 1521911720.865716 s
    assert cols["query"][0] == "ise.wrccdc.org"
    assert src.schema["orig_p"] == np.int64 and src.schema["query"] == np.dtype(object)
    assert (np.diff(ts) < 0).any(), "the Zeek sample has real out-of-order rows"
    assert src.rejects.total == 0


@pytest.mark.parametrize(
    "unit, values, want",
    [
        ("s", ["1.5", "2", "1521911720.866"], [1500, 2000, 1521911720866]),
        ("ms", ["1500", "2.9"], [1500, 2]),
        ("us", ["1500000", "1999"], [1500, 1]),
        ("ns", ["1521911720865716000"], [1521911720865]),
        ("raw", ["-5", "7"], [-5, 7]),
        (
            "iso",
            ["2018-03-24T17:15:20.865Z", "2018-03-24 17:15:20", "2018-03-24T19:15:20+02:00", "2018-03-24"],
            [1521911720865, 1521911720000, 1521911720000, 1521849600000],
        ),
        ("auto", ["2018-03-24T17:15:20.865716", "2018-03-24T17:15:21"], [1521911720865, 1521911721000]),
    ],
)
def test_ts_units(tmp_path, unit, values, want):
    p = tmp_path / "t.csv"
    p.write_text("ts,a\n" + "".join(f"{v},1\n" for v in values))
    ts, _, _, _ = read_all(open_source("T", p, ts_unit=unit))
    assert ts.tolist() == want


def test_bad_timestamps_are_rejected_with_reasons(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("ts,a\n1,1\n2.5,1\n,1\nnope,1\n3,1\n")
    src = open_source("T", p, ts_unit="raw")
    ts, _, lines, _ = read_all(src)
    assert ts.tolist() == [1, 3] and lines.tolist() == [2, 6]
    reasons = {r["line"]: r["reason"] for r in rejects_of(src)}
    assert reasons == {3: "non-integer timestamp '2.5'", 4: "missing timestamp", 5: "non-numeric timestamp 'nope'"}
    q = tmp_path / "iso.csv"
    q.write_text("ts,a\n2018-03-24T17:15:20Z,1\nyesterday,2\n")
    src = open_source("T", q)
    assert read_all(src)[0].tolist() == [1521911720000]
    assert rejects_of(src)[0]["reason"] == "unparseable timestamp 'yesterday' (expected ISO-8601)"


def test_wrong_unit_for_every_sampled_timestamp_is_an_error(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("ts,a\n2018-03-24,1\n2018-03-25,1\n")
    with pytest.raises(SourceError, match="no timestamp in the first 2 rows parses") as err:
        open_source("T", p, ts_unit="ms")
    assert "--ts-unit" in str(err.value)


# --------------------------------------------------------------------------- JSON lines and Parquet


def test_jsonl_types_lines_and_bad_lines(tmp_path):
    p = tmp_path / "s.jsonl"
    lines = [
        {"ts": 1, "a": 5, "name": "x", "tags": [1, 2]},
        None,
        {"ts": 2, "a": 6, "name": "y", "tags": []},
        "{not json",
        {"ts": 3, "a": "seven", "name": "z", "tags": [3]},
        [1, 2],
        {"ts": 4, "name": "w", "tags": None, "extra": 1},
        {"ts": 5, "a": 8, "name": 9, "tags": [4]},
    ]
    p.write_text("".join(("" if x is None else x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    src = open_source("J", p)
    # "a" is absent on line 7 and "extra" on most lines: integers with gaps are read as floats
    assert src.schema == {"a": np.float64, "name": object, "tags": object, "extra": np.float64}
    ts, cols, got_lines, _ = read_all(src)
    assert ts.tolist() == [1, 2, 4, 5] and got_lines.tolist() == [1, 3, 7, 8]
    assert cols["a"].tolist()[:2] == [5, 6] and np.isnan(cols["a"][2]) and cols["a"][3] == 8
    assert cols["name"].tolist() == ["x", "y", "w", "9"]
    assert cols["tags"].tolist() == ["[1, 2]", "[]", "", "[4]"]
    reasons = {r["line"]: r["reason"] for r in rejects_of(src)}
    assert reasons[4].startswith("malformed JSON line")
    assert reasons[5] == "unparseable value 'seven' in float column 'a'"
    assert reasons[6] == "malformed JSON line: not an object"
    assert len(reasons) == 3


def test_jsonl_blocks_and_missing_integer_beyond_the_sample(tmp_path, monkeypatch):
    monkeypatch.setattr(S, "_SAMPLE_BYTES", 128)
    monkeypatch.setattr(S, "_MIN_BLOCK", 64)
    p = tmp_path / "s.ndjson"
    p.write_text("".join(json.dumps({"ts": i, "a": i % 3, "f": i / 2}) + "\n" for i in range(100)) + '{"ts": 100, "f": 1.5}\n')
    src = open_source("J", p, chunk_rows=40)
    assert src.schema == {"a": np.float64, "f": np.float64}
    ts, cols, lines, _ = read_all(src)
    assert ts.tolist() == list(range(101)) and lines.tolist() == list(range(1, 102))
    assert np.isnan(cols["a"][-1]) and src.rejects.total == 0


def test_json_array_file_is_refused(tmp_path):
    p = tmp_path / "a.json"
    p.write_text('[{"ts": 1}]')
    with pytest.raises(SourceError, match="JSON lines"):
        open_source("J", p)


def test_parquet_row_numbers_units_and_nullable_ints(tmp_path):
    p = tmp_path / "s.parquet"
    table = pa.table({"ts": pa.array([1.25, 0.5, 3.0]), "k": pa.array([1, None, 3], pa.int64()), "s": pa.array(["a", None, "c"]), "b": pa.array([True, False, True])})
    pq.write_table(table, p, row_group_size=2)
    src = open_source("P", p, chunk_rows=2)
    assert src.schema == {"k": np.float64, "s": object, "b": np.bool_}
    chunks = list(src.chunks())
    assert [len(c) for c in chunks] == [2, 1]
    ts, cols, lines, _ = read_all(src)
    assert ts.tolist() == [1250, 500, 3000] and lines.tolist() == [1, 2, 3]
    assert cols["s"].tolist() == ["a", "", "c"] and np.isnan(cols["k"][1])
    ts_table = pa.table({"ts": pa.array([1521911720865716], pa.timestamp("us", "UTC")), "a": [1]})
    pq.write_table(ts_table, tmp_path / "t.parquet")
    assert read_all(open_source("P", tmp_path / "t.parquet"))[0].tolist() == [1521911720865]


# --------------------------------------------------------------------------- directories


def test_directory_read_in_name_order_mixed_formats(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    (d / "b.csv").write_text("ts,a\n5,50\n6,60\n")
    (d / "a.jsonl").write_text('{"ts": 1, "a": 10}\n{"ts": 2, "a": 20}\n')
    pq.write_table(pa.table({"ts": [9], "a": [90]}), d / "c.parquet")
    (d / "_SUCCESS").write_text("")
    (d / ".hidden.csv").write_text("junk")
    src = open_source("D", d)
    ts, cols, lines, files = read_all(src)
    assert ts.tolist() == [1, 2, 5, 6, 9] and cols["a"].tolist() == [10, 20, 50, 60, 90]
    assert lines.tolist() == [1, 2, 2, 3, 1]
    assert [f.rsplit("/", 1)[1] for f in files] == ["a.jsonl"] * 2 + ["b.csv"] * 2 + ["c.parquet"]


def test_directory_schema_mismatch_names_both_files_and_columns(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    (d / "1.csv").write_text("ts,a,b\n1,2,3\n")
    (d / "2.csv").write_text("ts,a,c\n1,2,3\n")
    with pytest.raises(SourceError) as err:
        open_source("D", d)
    msg = str(err.value)
    assert "1.csv" in msg and "2.csv" in msg and "b, c" in msg and "\n" not in msg
    (d / "2.csv").write_text("ts,a,b\n1,x,3\n")
    with pytest.raises(SourceError, match=r"a \(int vs str\)"):
        open_source("D", d)
    (d / "2.csv").write_text("ts,a,b\n1,2.5,3\n")  # int and float unify to float
    src = open_source("D", d)
    assert src.schema == {"a": np.float64, "b": np.int64}
    assert read_all(src)[1]["a"].tolist() == [2.0, 2.5]


# --------------------------------------------------------------------------- in-memory inputs


def test_dataframe_dict_and_records():
    df = pd.DataFrame({"ts": pd.to_datetime(["2018-03-24T17:15:20.865Z", "2018-03-24T17:15:21Z"], format="ISO8601"), "k": [1, 2], "s": ["a", "b"]})
    src = open_source("F", df)
    ts, cols, lines, files = read_all(src)
    assert ts.tolist() == [1521911720865, 1521911721000] and lines.tolist() == [1, 2] and files[0] == "<DataFrame>"
    src = open_source("D", {"ts": [3, 1, 2], "k": np.array([7, 8, 9])}, chunk_rows=2)
    assert [len(c) for c in src.chunks()] == [2, 1]
    recs = ({"ts": i, "k": i * 2, **({"opt": "x"} if i == 1 else {})} for i in range(5))
    src = open_source("R", recs, chunk_rows=3)
    ts, cols, lines, _ = read_all(src)
    assert ts.tolist() == [0, 1, 2, 3, 4] and cols["opt"].tolist() == ["", "x", "", "", ""]
    with pytest.raises(SourceError, match="dicts"):
        open_source("R", [1, 2, 3])
    with pytest.raises(SourceError):
        open_source("D", {"ts": [1, 2], "k": [1]})


def test_in_memory_bad_timestamps_are_rejected():
    src = open_source("F", pd.DataFrame({"ts": [1.0, np.nan, 2.0], "k": [1, 2, 3]}))
    ts, cols, lines, _ = read_all(src)
    assert ts.tolist() == [1000, 2000] and cols["k"].tolist() == [1, 3]
    assert [(r["line"], r["reason"]) for r in rejects_of(src)] == [(2, "missing timestamp")]


def test_chunks_route_rejects_to_a_given_collector(tmp_path):
    p = tmp_path / "b.csv"
    p.write_text("ts,a\nx,1\n2,2\n")
    src = open_source("B", p)
    shared = Rejects()
    assert read_all(src, shared)[0].tolist() == [2]
    assert shared.total == 1 and src.rejects.total == 0


def test_empty_records_are_rejected_whatever_the_chunking():
    from slidewise.runtime.rejects import Rejects
    from slidewise.runtime.sources import open_source

    for chunk_rows in (1, 10):
        rejects = Rejects()
        src = open_source("x", [{"ts": 1}, {}, {}, {"ts": 2}], chunk_rows=chunk_rows)
        assert sum(len(c.ts) for c in src.chunks(rejects=rejects)) == 2
        assert rejects.total == 2


def test_csv_rows_longer_than_the_bound_are_rejects_with_their_line(tmp_path, monkeypatch):
    monkeypatch.setattr(S, "_MAX_ROW_BYTES", 1000)
    p = tmp_path / "long.csv"
    p.write_text("ts,a,s\n1,1,x\n2,1," + "y" * 3000 + '\n3,1,"q\n' + "z" * 3000 + '"\n4,1,w\n')
    src = open_source("S", p)
    ts, cols, lines, _ = read_all(src)
    assert ts.tolist() == [1, 4] and lines.tolist() == [2, 6]
    got = rejects_of(src)
    assert [r["line"] for r in got] == [3, 4]
    assert all(r["reason"].startswith("row too long: 3,00") for r in got)


def test_csv_rows_longer_than_a_pyarrow_block_are_read(tmp_path):
    p = tmp_path / "long.csv"
    p.write_text("ts,a,s\n1,1,x\n2,1," + "y" * 3_000_000 + "\n3,1,z\n")
    ts, cols, lines, _ = read_all(open_source("S", p))
    assert ts.tolist() == [1, 2, 3] and len(cols["s"][1]) == 3_000_000


@pytest.mark.parametrize(
    "values, unit",
    [
        (["1", "2", "30"], "raw"),
        (["1700000000000000000", "1700000000000000001"], "raw"),
        (["1521484800.5", "1521484801"], "s"),
        (["2024-01-01T00:00:00", "x"], "iso"),
        ([str(99_999_000 + 500 * i) for i in range(5)], "raw"),  # a clock growing through 10**8
    ],
)
def test_auto_unit_reads_consistent_samples(tmp_path, values, unit):
    p = tmp_path / "t.csv"
    p.write_text("ts,a\n" + "".join(f"{v},1\n" for v in values))
    assert open_source("S", p).ts_unit == unit


@pytest.mark.parametrize("values", [["1", "1700000000000"], ["0.5", "1521484800123"], ["2024-01-01", "17"], ["1700000000", "1700000000000"]])
def test_auto_unit_refuses_to_guess(tmp_path, values):
    p = tmp_path / "t.csv"
    p.write_text("ts,a\n" + "".join(f"{v},1\n" for v in values))
    with pytest.raises(SourceError, match="would be different units") as info:
        open_source("S", p)
    assert "--ts-unit" in info.value.hint


def test_auto_unit_refuses_to_guess_on_typed_columns(tmp_path):
    p = tmp_path / "t.parquet"
    pd.DataFrame({"ts": [1, 1_700_000_000_000_000_000], "a": [1, 2]}).to_parquet(p)
    with pytest.raises(SourceError, match="'1' \\(a small number\\) and '1700000000000000000' \\(epoch nano"):
        open_source("S", p)
    assert open_source("S", p, ts_unit="ns").ts_unit == "ns"


def test_an_integer_column_rejects_out_of_range_text_quietly(tmp_path):
    """'1e400' and 'inf' in a column declared int are rejected with a reason, without numpy's cast warning."""
    import warnings

    import slidewise

    p = tmp_path / "s.csv"
    p.write_text("ts,a\n1,1\n2,1e400\n3,-inf\n4,2.0\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = slidewise.run("SELECT ISTREAM S.a FROM S [RANGE 3]", sources={"S": str(p)}, schemas={"S": {"a": "int"}}, rejects=str(tmp_path / "r.csv"))
    assert res.results["S.a"].tolist() == [1, 2]
    assert res.stats["rejects"] == 2
