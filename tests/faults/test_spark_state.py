"""Spark faults without a JVM: Spark's exception texts as messages, and checkpointed state that cannot run code.

The texts are excerpts of what Spark 4 raised for the damage done in
``test_spark_faults.py`` (a missing state file, malformed log entries,
unreadable metadata, a moved checkpoint, a new CSV header).
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import numpy as np
import pytest

from slidewise.cli import build_parser
from slidewise.cql import load_query
from slidewise.errors import CheckpointError, ExecutionError, OptionError, SourceError
from slidewise.spark.bucket import BucketJoin
from slidewise.spark.failures import error_from_text
from slidewise.spark.layout import Layout, StreamInfo
from slidewise.spark.state_codec import MAGIC, pack_state, run_key, seal, state_key, unpack_state, unseal

CK = Path("/data/ck")
RESTORE = "restore the checkpoint directory from a backup, or start over with a new --checkpoint and a new --out"
KEY = b"0123456789abcdef-test"

STATE_MISSING = """\
org.apache.spark.sql.execution.streaming.sources.ForeachBatchUserFuncException: [FOREACH_BATCH_USER_FUNCTION_ERROR]
py4j.protocol.Py4JJavaError: An error occurred while calling o257.getResult.
: org.apache.spark.SparkException: Exception thrown in awaitResult:
Caused by: org.apache.spark.SparkException: [CANNOT_LOAD_STATE_STORE.CANNOT_READ_STREAMING_STATE_FILE] An error \
occurred during loading state. Error reading streaming state file of file:/data/ck/query/state/1/0/2.changelog does \
not exist. If the stream job is restarted with a new or updated state operation, please create a new checkpoint \
location or clear the existing checkpoint location. SQLSTATE: 58030
Caused by: java.io.FileNotFoundException: File file:/data/ck/query/state/1/0/2.changelog does not exist
\tat org.apache.hadoop.fs.RawLocalFileSystem.deprecatedGetFileStatus(RawLocalFileSystem.java:980)
"""
MALFORMED = """\
[STREAM_FAILED] Query [id = 88741120, runId = c66735d3] terminated with exception: Failed to read log file \
file:/data/ck/query/{log}/1. [MALFORMED_LOG_FILE] Log file was malformed: failed to read correct log version from \
garbage. SQLSTATE: KD002 SQLSTATE: XXKST
"""
CHECKSUM = """\
[STREAM_FAILED] Query [id = 1, runId = 2] terminated with exception: Checksum error: file:/data/ck/query/offsets/1 \
at 0 exp: -1148296291 got: 1360396394
"""
METADATA = """\
An error occurred while calling o237.start.
: com.fasterxml.jackson.core.JsonParseException: Unrecognized token 'garbage': was expecting (JSON String, Number, \
Array, Object or token 'null', 'true' or 'false')
\tat org.apache.spark.sql.execution.streaming.checkpointing.StreamMetadata$.read(StreamMetadata.scala:61)
"""
MOVED = """\
[STREAM_FAILED] Query [id = 8, runId = 6] terminated with exception: Wrong basePath /data/ck/control for the root \
path: file:/old/ck/control/eof-b64e.json SQLSTATE: XXKST
"""
HEADER = """\
Caused by: org.apache.spark.SparkException: [FAILED_READ_FILE.NO_HINT] Encountered error while reading file \
file:///data/in/A/2.csv.  SQLSTATE: KD001
Caused by: org.apache.spark.SparkIllegalArgumentException: CSV header does not conform to the schema.
 Header: ts, j
 Schema: ts, k
Expected: k but found: j
CSV file: file:///data/in/A/2.csv
"""
WORKER = """\
org.apache.spark.api.python.PythonException: Traceback (most recent call last):
  File "/src/slidewise/spark/state_codec.py", line 90, in unseal
    raise CheckpointError("operator state in the checkpoint does not verify (changed outside slidewise, "
slidewise.errors.CheckpointError: operator state in the checkpoint does not verify (changed outside slidewise, or \
written with another state key): refused
"""
INPUT_GONE = """\
Caused by: java.io.FileNotFoundException: File file:/data/in/A/1.csv does not exist
"""
STREAM_A = StreamInfo("A", "A", {"k": "int"}, dirs=("/data/in/A", "in/A"))


def _checkpoint_error(text: str, *fragments: str) -> str:
    err = error_from_text(text, checkpoint=CK, streams=[STREAM_A])
    assert type(err) is CheckpointError, err
    message = str(err)
    assert message.startswith(f"checkpoint {CK}: ") and message.endswith(f"(hint: {RESTORE})"), message
    assert "--source" not in message and "rerun" not in message
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    return message


def test_missing_state_file_is_state_loss():
    _checkpoint_error(STATE_MISSING, "the checkpoint is damaged: its state file query/state/1/0/2.changelog is missing: the checkpoint lost operator state")


def test_lost_state_directory_is_state_loss():
    text = (
        "[STREAM_FAILED] Query [id = 7663bd15, runId = 0378a927] terminated with exception: "
        "[STREAMING_STATEFUL_OPERATOR_MISSING_STATE_DIRECTORY] Cannot restart streaming query with stateful "
        "operators because the state directory is empty or missing."
    )
    _checkpoint_error(text, "its state directory query/state is empty or missing: the checkpoint lost its operator state")


@pytest.mark.parametrize("log, kind", [("offsets", "offsets log entry"), ("commits", "commits log entry"), ("sources/0", "source file log entry")])
def test_malformed_logs(log, kind):
    _checkpoint_error(MALFORMED.format(log=log), f"its {kind} query/{log}/1 cannot be read (malformed)")


def test_checksum_and_metadata_and_moved_checkpoint():
    _checkpoint_error(CHECKSUM, "its offsets log entry query/offsets/1 fails its checksum")
    _checkpoint_error(METADATA, "its query metadata query/metadata cannot be read")
    moved = str(error_from_text(MOVED, checkpoint=CK))
    assert "cannot be moved or copied" in moved and "/old/ck/control" in moved and "where it was written" in moved


def test_torn_log_entry_is_found_by_reading_the_logs(tmp_path):
    """Spark's JSON errors do not name the file: the damaged entry is found in the checkpoint's logs."""
    query = tmp_path / "query"
    for log, body in (("offsets", 'v1\n{"batchWatermarkMs":0}\n{"logOffset":0}\n-\n'), ("commits", "v1\n{}\n"), ("sources/0", 'v1\n{"path":"file:///in/1.csv"}\n')):
        (query / log).mkdir(parents=True)
        for batch in ("0", "1", "10"):
            (query / log / batch).write_text(body)
    (query / "metadata").write_text('{"id":"x"}')
    torn = query / "offsets" / "10"
    torn.write_text('v1\n{"batchWatermarkMs":0,"conf":{"spark.sql.shuf')
    text = (
        "[STREAM_FAILED] Query terminated with exception: Unexpected end-of-input in field name\n"
        "com.fasterxml.jackson.core.io.JsonEOFException: Unexpected end-of-input in field name"
    )
    message = str(error_from_text(text, checkpoint=tmp_path))
    assert "its offsets log entry query/offsets/10 cannot be read (not valid JSON)" in message, message
    torn.write_text("v1\n{}\n")
    (query / "metadata").write_text("garbage")
    assert "its query metadata query/metadata" in str(error_from_text(text, checkpoint=tmp_path))


@pytest.mark.parametrize("text", ["{\"query\": \"SELECT", "[]", "{\"query\": \"q\"}", "\udcff"])
def test_damaged_slidewise_json_is_a_checkpoint_error(tmp_path, text):
    """slidewise's own record in the checkpoint: damaged -> one message before any JVM starts."""
    from slidewise.spark.join_runner import _checkpoint_meta

    (tmp_path / "slidewise.json").write_bytes(text.encode("utf-8", "surrogateescape"))
    with pytest.raises(CheckpointError) as e:
        _checkpoint_meta(tmp_path, "q", {}, 2, write=False)
    assert str(e.value).startswith(f"checkpoint {tmp_path}: the checkpoint is damaged: its slidewise.json cannot be read") and str(e.value).endswith(f"(hint: {RESTORE})")


def test_worker_state_refusal_keeps_its_class_and_gains_the_checkpoint():
    message = _checkpoint_error(WORKER, "does not verify", "refused")
    assert "Traceback" not in message


def test_new_csv_header_names_the_file_and_both_headers():
    err = error_from_text(HEADER, checkpoint=CK, streams=[STREAM_A])
    assert type(err) is SourceError
    assert str(err).startswith("in/A/2.csv: this new file's CSV header differs from its source's: it has (ts, j), the source's files have (ts, k)"), err


def test_input_gone_and_unknown_failures():
    err = error_from_text(INPUT_GONE, checkpoint=CK, streams=[STREAM_A])
    assert type(err) is SourceError and err.location == "in/A/1.csv" and "disappeared" in str(err)
    err = error_from_text("java.lang.OutOfMemoryError: Java heap space\n\tat x.y(z.java:1)", checkpoint=CK)
    assert type(err) is ExecutionError and "Java heap space" in str(err) and "-v" in str(err)


# ---------------------------------------------------------------- state: data, sealed


def _arrays():
    return {"t": np.array([3, 1, 2], np.int64), "x": np.array([0.5, np.nan, 2.0]), "ok": np.array([True, False, True]), "s": np.array(["a", "", "ü"], dtype=object)}


def test_state_round_trip_keeps_values_and_dtypes():
    empty = {"t": np.empty(0, np.int64), "s": np.empty(0, dtype=object)}
    meta = {"frontier": [5, -(2**61)], "ended": True, "last": [1, 0, 2]}
    blob = pack_state(KEY, meta, [_arrays(), empty], b"\x00operator bytes")
    got_meta, tables, extra = unpack_state(KEY, blob)
    assert got_meta == meta and extra == b"\x00operator bytes"
    for want, got in zip([_arrays(), empty], tables):
        assert list(got) == list(want)
        for k in want:
            assert got[k].dtype == want[k].dtype or len(want[k]) == 0, k
            np.testing.assert_array_equal(got[k], want[k])
            assert got[k].flags.writeable


def _bucket_join() -> BucketJoin:
    q = load_query("SELECT * FROM A [RANGE 5], B [RANGE 5] WHERE A.k = B.k")
    infos = [StreamInfo(a, a, {"k": "int", "s": "str"}) for a in ("A", "B")]
    return BucketJoin(q, Layout.build(q, infos), key=KEY)


def test_bucket_state_round_trip():
    join = _bucket_join()
    st = join.load(None)
    st.buffer[1] = {"t": np.array([4, 4], np.int64), "q": np.array([7, 8], np.int64), "k": np.array([1, 2], np.int64), "s": np.array(["x", "y"], dtype=object)}
    st.frontier[:] = [3, 4]
    st.operator, st.next_pos, st.last, st.ended = join.plan.build().snapshot(), 9, (3, 1, 8), True
    back = join.load(join.dump(st))
    assert (back.operator, back.next_pos, back.last, back.ended, back.flushed) == (st.operator, 9, (3, 1, 8), True, False)
    np.testing.assert_array_equal(back.frontier, [3, 4])
    for want, got in zip(st.buffer, back.buffer):
        assert {k: v.dtype for k, v in got.items()} == {k: v.dtype for k, v in want.items()}
        for k in want:
            np.testing.assert_array_equal(got[k], want[k])


class _Evil:
    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


@pytest.mark.parametrize("forge", ["plain pickle", "forged mac", "other key", "flipped byte"])
def test_tampered_state_is_refused_before_unpickling(tmp_path, forge):
    marker = tmp_path / "pwned"
    join = _bucket_join()
    evil = pickle.dumps(_Evil(marker))
    good = join.dump(join.load(None))
    blob = {
        "plain pickle": evil,
        "forged mac": MAGIC + b"\0" * 32 + evil,
        "other key": seal(b"another key of 16+ chars", evil),
        "flipped byte": good[:-1] + bytes([good[-1] ^ 1]),
    }[forge]
    with pytest.raises(CheckpointError, match="refused"):
        join.process(0, blob, None)
    assert not marker.exists()
    with pytest.raises(CheckpointError, match="refused"):
        unseal(KEY, blob)


def test_state_key_file_is_private_and_outside(tmp_path, monkeypatch):
    monkeypatch.delenv("SLIDEWISE_STATE_KEY", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    key = state_key()
    path = tmp_path / "slidewise" / "state.key"
    assert path.stat().st_mode & 0o777 == 0o600 and len(key) >= 32 and state_key() == key
    path.chmod(0o644)
    with pytest.raises(OptionError, match="is not private") as e:
        state_key()
    assert f"chmod 600 {path}" in str(e.value)
    monkeypatch.setenv("SLIDEWISE_STATE_KEY", "short")
    with pytest.raises(OptionError, match="too short"):
        state_key()


def test_a_run_without_checkpoint_needs_no_key_file(tmp_path, monkeypatch):
    monkeypatch.delenv("SLIDEWISE_STATE_KEY", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert len(run_key(persistent=False)) == 32 and run_key(persistent=False) != run_key(persistent=False)
    assert not (tmp_path / "slidewise").exists()
    assert run_key(persistent=True) == (tmp_path / "slidewise" / "state.key").read_text().strip().encode()


def test_log4j_config_is_private_and_quiet_unless_verbose(monkeypatch):
    from slidewise.spark import session

    monkeypatch.setattr(session, "_TEMPORARY", {})
    monkeypatch.delenv(session.VERBOSE_ENV, raising=False)
    quiet = Path(session.log4j_file())
    monkeypatch.setenv(session.VERBOSE_ENV, "1")
    loud = Path(session.log4j_file())
    try:
        assert quiet != loud and quiet.name != "slidewise-log4j2.properties"
        assert quiet.stat().st_mode & 0o777 == 0o600
        assert "rootLogger.level = off" in quiet.read_text()
        assert "rootLogger.level = error" in loud.read_text()
        assert f"file:{loud}" in session.session_conf()["spark.driver.extraJavaOptions"]
    finally:
        session._remove_temporary()
    assert not quiet.exists() and not loud.exists()


def test_run_has_a_verbose_flag(monkeypatch):
    from slidewise.spark.cli import apply_verbose
    from slidewise.spark.session import VERBOSE_ENV, verbose

    monkeypatch.delenv(VERBOSE_ENV, raising=False)
    assert not verbose()
    args = build_parser().parse_args(["run", "SELECT * FROM A [RANGE 1]", "-v"])
    apply_verbose(args.verbose >= 1)
    assert args.verbose == 1 and os.environ[VERBOSE_ENV] == "1" and verbose()


def test_two_stage_checkpoint_is_refused(tmp_path):
    """A join checkpoint of the earlier two-stage pipeline (no ``stages`` stored) is refused with one message."""
    import json

    from slidewise.spark.join_runner import JOIN_SETTINGS, _checkpoint_meta

    (tmp_path / "slidewise.json").write_text(json.dumps({"query": "q", "buckets": 2}))
    with pytest.raises(OptionError) as e:
        _checkpoint_meta(tmp_path, "q", {}, 2, write=False, settings=JOIN_SETTINGS)
    assert str(e.value) == (
        f"{tmp_path}: this checkpoint was written by a slidewise with 2 stateful stages per micro-batch, not 1"
        " (hint: use a new --checkpoint DIR (its state cannot be carried over))"
    )
    (tmp_path / "slidewise.json").write_text(json.dumps({"query": "q", "buckets": 2, "stages": 1}))  # one file source per stream
    with pytest.raises(OptionError) as e:
        _checkpoint_meta(tmp_path, "q", {}, 2, write=False, settings=JOIN_SETTINGS)
    assert str(e.value) == (
        f"{tmp_path}: this checkpoint was written by a slidewise that reads file sources one per stream, not by directory parent"
        " (hint: use a new --checkpoint DIR (its source offsets cannot be carried over))"
    )
    (tmp_path / "slidewise.json").write_text(json.dumps({"query": "q", "buckets": 2, **JOIN_SETTINGS}))
    assert _checkpoint_meta(tmp_path, "q", {}, 2, write=False, settings=JOIN_SETTINGS)["stages"] == 1


def test_two_stage_pane_checkpoint_is_refused(tmp_path, capsys):
    """A sliding GROUP BY's checkpoint of the earlier two-stage pipeline (sequencer, then panes; no
    ``stages`` stored) is refused with one message before Spark starts."""
    import json

    from slidewise.cli import main

    query = "SELECT RSTREAM(S.a, COUNT(*) AS n) FROM S [RANGE 10 SLIDE 2] GROUP BY S.a"
    (tmp_path / "S.csv").write_text("ts,a\n1,1\n2,2\n3,1\n")
    ck = tmp_path / "ck"
    ck.mkdir()
    (ck / "slidewise.json").write_text(json.dumps({"query": query, "buckets": 2, "strategy": "upa", "partitions": 10}))
    args = ["run", query, "--source", f"S={tmp_path / 'S.csv'}", "--engine", "spark", "--checkpoint", str(ck), "--out", str(tmp_path / "o.csv")]
    assert main(args) == 2
    assert capsys.readouterr().err.strip() == (
        f"slidewise: error: {ck}: this checkpoint was written by a slidewise with 2 stateful stages per micro-batch, not 1"
        " (hint: use a new --checkpoint DIR (its state cannot be carried over))"
    )
    assert not (tmp_path / "o.csv").exists()
