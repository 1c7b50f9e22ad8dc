"""The local engine following Kafka topics with ``--checkpoint`` (slidewise.spark.follow), against the
broker the tests start: SIGKILLed mid-stream, restarted, stopped by SIGTERM, finished with ``--once``:
the output topic holds the oracle exactly once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from slidewise.cli import main
from tests.e2e_case import Q, inputs, oracle, rows
from tests.kafka_broker import consume, produce

AGG = "SELECT RSTREAM(A.k, COUNT(*) AS n) FROM A [RANGE 40 SLIDE 20] GROUP BY A.k"


def _committed(ckpt: Path) -> dict:
    try:
        return json.loads((ckpt / "follow.json").read_text())
    except (OSError, ValueError):
        return {}


def _until(cond, proc: subprocess.Popen, log: Path, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not cond():
        assert proc.poll() is None, log.read_text()[-3000:]
        assert time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.1)


def _read(ckpt: Path) -> int:
    """Messages of all topics the checkpoint has committed."""
    return sum(sum(part.values()) for part in _committed(ckpt).get("offsets", {}).values())


def _send(address: str, prefix: str, data: dict, part: slice) -> None:
    for name, df in data.items():
        produce(address, f"{prefix}-{name}", df.iloc[part].to_dict("records"))


def test_follow_killed_restarted_stopped_and_ended_writes_each_result_once(kafka_broker, tmp_path):
    data = inputs(seed=13)
    n = len(data["A"])
    _send(kafka_broker, "follow", data, slice(0, n // 3))
    ckpt, log = tmp_path / "ckpt", tmp_path / "run.log"
    args = ["run", Q, "--engine", "local", "--checkpoint", str(ckpt), "--out", f"kafka://{kafka_broker}/follow-out", "--quiet"]
    args += [f"--source={s}=kafka://{kafka_broker}/follow-{s}" for s in data]
    cmd = [sys.executable, "-m", "slidewise", *args]
    with open(log, "wb") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        try:
            _until(lambda: _committed(ckpt).get("batch", 0) >= 1, proc, log)
            _send(kafka_broker, "follow", data, slice(n // 3, 2 * n // 3))
            _until(lambda: _read(ckpt) > 2 * (n // 3), proc, log)
        finally:
            os.killpg(proc.pid, signal.SIGKILL)  # mid-stream: perhaps inside a micro-batch
            proc.wait()
        _send(kafka_broker, "follow", data, slice(2 * n // 3, None))
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        try:
            _until(lambda: _read(ckpt) == 2 * n, proc, log)
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(60) == 128 + signal.SIGTERM
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    assert "stopped after micro-batch" in log.read_text()
    assert not rows(pd.DataFrame(consume(kafka_broker, "follow-out"))) == oracle(data)  # the last windows wait for the end
    assert main([*args, "--once"]) == 0  # to the end offsets now, then end of input
    assert rows(pd.DataFrame(consume(kafka_broker, "follow-out"))) == oracle(data)


def test_a_crash_between_output_and_commit_replays_the_micro_batch_once(kafka_broker, tmp_path, monkeypatch):
    """Micro-batch 2's results are in the output topic, its commit is not: the rerun replays it from the
    recorded offsets and state, and the topic holds each result once."""
    from slidewise.spark import follow as f

    data = inputs(seed=15)
    _send(kafka_broker, "crash2", data, slice(None))
    sources = {s: f"kafka://{kafka_broker}/crash2-{s}" for s in data}
    out = f"kafka://{kafka_broker}/crash2-out"
    monkeypatch.setattr(f, "MAX_MESSAGES", 40)  # several micro-batches
    real = f._Follower._write

    def crash(self, name, obj):
        if name == "follow.json" and obj["batch"] == 3:
            raise RuntimeError("killed")
        return real(self, name, obj)

    monkeypatch.setattr(f._Follower, "_write", crash)
    with pytest.raises(RuntimeError, match="killed"):
        f.follow(Q, sources, out=out, checkpoint=str(tmp_path / "ckpt"), once=True)
    partial = consume(kafka_broker, "crash2-out")
    assert 0 < len(partial) < len(oracle(data))
    monkeypatch.setattr(f._Follower, "_write", real)
    result = f.follow(Q, sources, out=out, checkpoint=str(tmp_path / "ckpt"), once=True)
    assert result.stats["micro_batches"] >= 2
    assert rows(pd.DataFrame(consume(kafka_broker, "crash2-out"))) == oracle(data)


def test_follow_a_general_query_in_two_runs(kafka_broker, tmp_path):
    """A sliding GROUP BY (the pane path): the first run ends the input it has read; the next one continues
    the checkpoint (pane partials kept): together, one run over all tuples."""
    import slidewise

    a = inputs(seed=14)["A"]
    later = a.iloc[70:].assign(ts=a["ts"].iloc[70:] + 1000)  # after the windows the first run closed
    produce(kafka_broker, "agg-A", a.iloc[:70].to_dict("records"))
    args = ["run", AGG, "--engine", "local", "--checkpoint", str(tmp_path / "ckpt"), "--out", f"kafka://{kafka_broker}/agg-out", "--quiet"]
    args += [f"--source=A=kafka://{kafka_broker}/agg-A", "--once"]
    assert main(args) == 0
    assert rows_of(consume(kafka_broker, "agg-out")) == rows_of(slidewise.run(AGG, {"A": a.iloc[:70]}).results.to_dict("records"))
    produce(kafka_broker, "agg-A", later.to_dict("records"))
    assert main(args) == 0
    assert rows_of(consume(kafka_broker, "agg-out")) == rows_of(slidewise.run(AGG, {"A": pd.concat([a.iloc[:70], later])}).results.to_dict("records"))


def rows_of(records: list[dict]) -> list[tuple]:
    return sorted(tuple(str(r[c]) for c in ("A.k", "n", "ts", "sign")) for r in records)


@pytest.mark.parametrize("extra, message", [(["--out", "r.csv"], "following topics writes the results to a topic")])
def test_follow_refuses_other_outputs(kafka_broker, tmp_path, capsys, extra, message):
    produce(kafka_broker, "ref-A", [{"ts": 1, "k": 1}])
    produce(kafka_broker, "ref-B", [{"ts": 1, "k": 1, "v": "x"}])
    args = ["run", Q, "--engine", "local", "--checkpoint", str(tmp_path / "c"), *extra]
    args += [f"--source={s}=kafka://{kafka_broker}/ref-{s}" for s in ("A", "B")]
    assert main(args) == 2
    assert message in capsys.readouterr().err
