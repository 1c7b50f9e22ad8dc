"""``slidewise serve --source S=kafka://HOST:PORT/TOPIC``: the query manager ingests a topic (the Kafka
source URI of ``slidewise run``), against the Kafka-protocol broker the tests start (Tansu)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from slidewise.errors import SourceError  # noqa: E402
from slidewise.serve.client import Client  # noqa: E402
from slidewise.serve.service import Service  # noqa: E402
from tests.kafka_broker import produce  # noqa: E402
from tests.test_serve_e2e import SRC, SUM, free_port, stop, wait_for  # noqa: E402


def records(start: int, stop: int) -> list[dict]:
    return [{"ts": i * 100, "src": i % 3, "bytes": i} for i in range(start, stop)]


def sums(end: int) -> dict[int, int]:
    """SUM's oracle at ``end``: the rows of the two sub-windows up to it."""
    return {s: sum(i for i in range(max(0, (end + 1) // 100 - 20), (end + 1) // 100) if i % 3 == s) for s in range(3)}


def test_serve_reads_a_topic_registers_over_http_and_streams_results(kafka_broker, tmp_path):
    topic = f"kafka://{kafka_broker}/serve-in"
    produce(kafka_broker, "serve-in", records(0, 10))
    port = free_port()
    cmd = [sys.executable, "-m", "slidewise", "serve", "--source", f"S={topic}", "--port", str(port), "--state", str(tmp_path / "state")]
    cmd += ["--sub-window", "1000", "--sub-windows", "4", "--ts-unit", "raw"]
    proc = subprocess.Popen(cmd, env={**os.environ, "PYTHONPATH": SRC}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        client = Client(f"http://127.0.0.1:{port}", timeout=10)
        wait_for(client.stats)
        client.register("sums", SUM)
        produce(kafka_broker, "serve-in", records(10, 60))
        got = wait_for(lambda: [r for r in client.results("sums") if r["ts"] == 4999])
        assert {r["row"]["S.src"]: r["row"]["b"] for r in got} == sums(4999)
        assert client.stats()["sources"]["S"]["rows"] == 60
    finally:
        stop(proc)


def test_an_empty_topic_needs_a_declared_schema(kafka_broker):
    produce(kafka_broker, "serve-empty", [])
    with pytest.raises(SourceError, match="topic 'serve-empty' is empty: its schema cannot be read from it") as e:
        Service({"S": f"kafka://{kafka_broker}/serve-empty"}, 1000, 4)
    assert e.value.hint == "declare it: --schema S=ts:int,a:int,... (or produce a message first)"
    service = Service({"S": f"kafka://{kafka_broker}/serve-empty"}, 1000, 4, ts_unit="raw", schemas={"S": {"src": "int", "bytes": "int"}})
    assert service.tails["S"].kinds == {"src": "int", "bytes": "int"}
    produce(kafka_broker, "serve-empty", [*records(0, 3), {"ts": "x", "src": 1, "bytes": 2}])
    got: list = []
    assert service.tails["S"].poll(lambda s, ts, cols: got.extend(ts.tolist())) == 3 and got == [0, 100, 200]
    assert service.tails["S"].rejects.total == 1 and service.tails["S"].offsets() == {"0": [4, 4]}
    service.stop()


def test_a_restarted_service_reads_a_topic_on_from_its_offsets_with_its_windows(kafka_broker, tmp_path):
    topic = f"kafka://{kafka_broker}/serve-again"
    produce(kafka_broker, "serve-again", records(0, 25))
    first = Service({"S": topic}, 1000, 4, state=tmp_path, ts_unit="raw")
    first.register("sums", SUM)
    first.tails["S"].poll(first.qm.append)
    first._persist()
    first.stop()
    produce(kafka_broker, "serve-again", records(25, 41))
    again = Service({"S": topic}, 1000, 4, state=tmp_path, ts_unit="raw")
    assert again.tails["S"].offsets() == {"0": [25, 25]} and again.qm.windows["S"].next_version == 2
    assert again.tails["S"].poll(again.qm.append) == 16
    again.qm.run_due()
    got = {r[3]["S.src"]: r[3]["b"] for r in again.results("sums") if r[1] == 3999}
    assert got == sums(3999)  # rows 20-39: ten read before the restart
    again.stop()
