"""Per-stream settings (``--source-option NAME.KEY=VALUE``, ``RunOptions(streams=...)``): lateness, timestamp column and unit."""

from __future__ import annotations

import pandas as pd
import pytest

import slidewise
from slidewise.cli import main
from slidewise.errors import OptionError
from slidewise.options import RunOptions, parse_stream_options

Q = "SELECT * FROM A [RANGE 10], B [RANGE 10] WHERE A.k = B.k"
#: A is out of order by up to 3, B by up to 2
A = pd.DataFrame({"ts": [1, 5, 2, 9, 6, 12], "k": [1, 1, 2, 1, 2, 1]})
B = pd.DataFrame({"ts": [3, 2, 8, 6, 11], "k": [1, 2, 1, 2, 1]})


def _rows(result) -> list[tuple]:
    return sorted(map(tuple, result.results.to_numpy().tolist()))


def test_each_stream_keeps_its_own_lateness():
    own = slidewise.run(Q, {"A": A, "B": B}, streams={"A": {"lateness": 3}, "B": {"lateness": 2}})
    assert own.stats["rejects"] == 0
    both = slidewise.run(Q, {"A": A, "B": B}, lateness=3)
    assert _rows(own) == _rows(both)
    strict_b = slidewise.run(Q, {"A": A, "B": B}, lateness=3, streams={"B": {"lateness": 0}})
    assert strict_b.stats["rejects_by_reason"] == {"late": 2}
    assert strict_b.rejects.by_stream() == {"B": 2}  # A keeps the run's lateness 3


def test_each_stream_has_its_own_timestamp_column_and_unit():
    seconds = pd.DataFrame({"when": A["ts"] / 1000 + 1_700_000_000, "k": A["k"]})  # float epoch seconds
    millis = B.assign(ts=B["ts"] + 1_700_000_000_000)
    own = slidewise.run(Q, {"A": seconds, "B": millis}, lateness=3, streams={"A": {"ts_column": "when", "ts_unit": "s"}})
    same = slidewise.run(Q, {"A": A.assign(ts=A["ts"] + 1_700_000_000_000), "B": millis}, lateness=3)
    assert len(own.results) == len(same.results) > 0
    assert own.results["A.ts"].tolist() == same.results["A.ts"].tolist()


def test_general_queries_and_the_pane_path_read_per_stream_settings():
    q = "SELECT RSTREAM(A.k, COUNT(*) AS n) FROM A [RANGE 4 SLIDE 2] GROUP BY A.k"
    own = slidewise.run(q, {"A": A.rename(columns={"ts": "t"})}, streams={"A": {"ts-column": "t", "lateness": "3"}})
    same = slidewise.run(q, {"A": A}, lateness=3)
    assert own.stats["rejects"] == 0 and own.results.equals(same.results)
    distinct = "SELECT RSTREAM DISTINCT A.k FROM A [RANGE 4]"
    assert slidewise.run(distinct, {"A": A}, streams={"A": {"lateness": 3}}).results.equals(slidewise.run(distinct, {"A": A}, lateness=3).results)


def test_cli_source_option(tmp_path, capsys):
    A.to_csv(tmp_path / "a.csv", index=False)
    B.rename(columns={"ts": "time"}).to_csv(tmp_path / "b.csv", index=False)
    out = tmp_path / "out.csv"
    argv = ["run", Q, "--source", f"A={tmp_path / 'a.csv'}", "--source", f"B={tmp_path / 'b.csv'}", "--out", str(out), "-q"]
    code = main([*argv, "--source-option", "A.lateness=3", "--source-option", "B.ts-column=time", "--source-option", "B.lateness=2"])
    assert code == 0 and capsys.readouterr().err == ""
    expected = slidewise.run(Q, {"A": A, "B": B}, lateness=3).results
    assert len(pd.read_csv(out)) == len(expected)


@pytest.mark.parametrize(
    ("pairs", "message"),
    [
        (["A.lateness"], "bad --source-option 'A.lateness' (hint: write --source-option NAME.KEY=VALUE with KEY lateness (e.g. 5s), ts-column"),
        (["lateness=5"], "bad --source-option 'lateness=5'"),
        (["A.idleness=5s"], "unknown setting 'idleness' in --source-option 'A.idleness=5s'"),
    ],
)
def test_bad_source_options_are_one_clear_error(pairs, message):
    with pytest.raises(OptionError) as err:
        parse_stream_options(pairs)
    assert str(err.value).startswith(message)


def test_bad_settings_name_the_stream():
    with pytest.raises(OptionError, match=r"unknown timestamp unit 'hours' for stream 'A' \(hint: use one of auto, raw"):
        RunOptions(streams={"A": {"ts_unit": "hours"}})
    with pytest.raises(OptionError, match="the lateness of A"):
        RunOptions(streams={"A": {"lateness": "soon"}})
    with pytest.raises(OptionError, match=r"--source-option names an unknown stream 'C' \(hint: streams: A, B\)"):
        slidewise.run(Q, {"A": A, "B": B}, streams={"C": {"lateness": 1}})


def test_cli_unknown_stream_exits_2(tmp_path, capsys):
    A.to_csv(tmp_path / "a.csv", index=False)
    B.to_csv(tmp_path / "b.csv", index=False)
    code = main(["run", Q, "--source", f"A={tmp_path / 'a.csv'}", "--source", f"B={tmp_path / 'b.csv'}", "--source-option", "dns.lateness=5s"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("slidewise: error: --source-option names an unknown stream 'dns'") and "Traceback" not in err


def test_for_stream_overrides_only_what_it_names():
    opts = RunOptions(lateness="2s", ts_unit="ms", streams={"dns": {"lateness": "5s"}})
    assert opts.for_stream("dns").lateness == 5000 and opts.for_stream("dns").ts_unit == "ms"
    assert opts.for_stream("ssl") is opts


def test_an_idle_timeout_is_seconds_of_processing_time():
    opts = RunOptions(streams=parse_stream_options(["C.idle-timeout=5", "B.idle-timeout=500ms", "B.lateness=2"]))
    assert opts.idle_timeout("C") == 5.0 and opts.idle_timeout("B") == 0.5 and opts.idle_timeout("A") is None
    assert opts.for_stream("B").lateness == 2  # the timeout is not a field of the stream's options
    with pytest.raises(OptionError, match=r"the idle timeout of stream 'C' must be a positive number of seconds, got '0' \(hint: e.g. --source-option C.idle-timeout=30"):
        RunOptions(streams={"C": {"idle-timeout": "0"}})


def test_an_idle_timeout_is_refused_by_the_local_engine_where_no_stream_is_idle():
    with pytest.raises(OptionError, match=r"an idle timeout for stream 'B' has no effect on the local engine: it reads every input to its end"):
        slidewise.run(Q, {"A": A, "B": B}, streams={"B": {"idle-timeout": 5}})


def test_an_input_without_rows_holds_no_output_back_on_the_local_engine():
    """The local engine reads every input to its end: an input that never has a row (an idle stream)
    delays nothing; the answer is the one over the other streams."""
    q = "SELECT RSTREAM(*) FROM A [RANGE 3] WHERE NOT EXISTS (SELECT * FROM C [RANGE 3] WHERE C.k = A.k)"
    empty = pd.DataFrame({"ts": pd.Series([], dtype="int64"), "k": pd.Series([], dtype="int64")})
    ordered = A.sort_values("ts", kind="stable")
    got = slidewise.run(q, {"A": ordered, "C": empty}).results
    assert got[got["sign"] > 0]["A.k"].tolist() == ordered["k"].tolist()
