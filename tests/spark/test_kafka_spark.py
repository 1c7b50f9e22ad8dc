"""Kafka on the Spark engine (the Python streaming data source over kafka-python), against the broker the
tests start: topics in, results to a topic; stopped mid-stream and restarted on its checkpoint, the output
topic holds the oracle once."""

from __future__ import annotations

import pandas as pd
import pytest

from slidewise.spark.join_runner import run_spark, start_spark
from tests.e2e_case import Q, inputs, kill_after_first_commit, oracle, rows
from tests.kafka_broker import consume, produce
from tests.test_kafka import fill

pytestmark = pytest.mark.spark


def test_topics_in_results_to_a_topic_once(spark, kafka_broker, tmp_path):
    data = inputs(120, seed=11)
    sources = fill(kafka_broker, "sp-once", data)
    r = run_spark(Q, sources, out=f"kafka://{kafka_broker}/sp-once-out", once=True, spark=spark, checkpoint=str(tmp_path / "ckpt"), rejects=str(tmp_path / "rejects"))
    assert r.stats["input_ended"] and r.stats["rejects"] == 0
    assert rows(pd.DataFrame(consume(kafka_broker, "sp-once-out"))) == oracle(data)


def test_stopped_mid_stream_and_restarted_writes_each_result_once(spark, kafka_broker, tmp_path, runs):
    data = inputs(120, seed=12)
    sources = fill(kafka_broker, "sp-live", data, stop=60)
    out, ckpt = f"kafka://{kafka_broker}/sp-live-out", str(tmp_path / "ckpt")
    run = start_spark(Q, sources, out=out, once=False, spark=spark, checkpoint=ckpt)
    runs.append(run)
    run.process_all_available()
    run.stop()  # stopped mid-stream: no end of input
    first = consume(kafka_broker, "sp-live-out")
    fill(kafka_broker, "sp-live", data, start=60)
    r = run_spark(Q, sources, out=out, once=True, spark=spark, checkpoint=ckpt)
    assert r.stats["input_ended"]
    assert 0 < len(first) and rows(pd.DataFrame(consume(kafka_broker, "sp-live-out"))) == oracle(data)


def test_a_batch_killed_half_way_through_its_output_is_replayed_once(spark, kafka_broker, tmp_path, monkeypatch):
    from slidewise.errors import SlidewiseError
    from slidewise.kafka import io

    data = inputs(80, seed=13)
    sources = fill(kafka_broker, "sp-kill", data)
    out, ckpt = f"kafka://{kafka_broker}/sp-kill-out", str(tmp_path / "ckpt")
    real = io.TopicWriter.write

    def dies_half_way(self, frame, tags):
        real(self, frame.iloc[: len(frame) // 2], tags[: len(frame) // 2])
        raise RuntimeError("killed")

    monkeypatch.setattr(io.TopicWriter, "write", dies_half_way)
    with pytest.raises(SlidewiseError):
        run_spark(Q, sources, out=out, once=True, spark=spark, checkpoint=ckpt)
    monkeypatch.setattr(io.TopicWriter, "write", real)
    assert 0 < len(consume(kafka_broker, "sp-kill-out")) < len(oracle(data))
    run_spark(Q, sources, out=out, once=True, spark=spark, checkpoint=ckpt)
    assert rows(pd.DataFrame(consume(kafka_broker, "sp-kill-out"))) == oracle(data)


def test_a_general_query_topic_to_topic(spark, kafka_broker, tmp_path):
    import slidewise
    from slidewise.spark.plan_runner import run_plan_spark
    from tests.test_kafka import G

    data = inputs(60, seed=14)
    sources = fill(kafka_broker, "sp-plan", {"A": data["A"]})
    run_plan_spark(G, sources, {}, out=f"kafka://{kafka_broker}/sp-plan-out", once=True, spark=spark, checkpoint=str(tmp_path / "ckpt"))
    want = slidewise.run(G, {"A": data["A"]}).results
    got = pd.DataFrame(consume(kafka_broker, "sp-plan-out"))
    assert sorted(map(tuple, got[list(want.columns)].astype(str).values.tolist())) == sorted(map(tuple, want.astype(str).values.tolist()))


@pytest.mark.slow
def test_cli_killed_mid_stream_and_rerun_writes_each_result_once(spark, kafka_broker, tmp_path):
    """SIGKILL the CLI following the topics after its first committed micro-batch; the topics grow; rerun
    the same command with --once: the output topic equals the oracle, once."""
    import sys

    from slidewise.cli import main

    data = inputs(120, seed=15)
    sources = fill(kafka_broker, "sp-cli", data, stop=60)
    ckpt = tmp_path / "ckpt"
    args = [
        "run",
        Q,
        *[a for name in sources for a in ("--source", f"{name}={sources[name]}")],
        "--engine",
        "spark",
        "--master",
        "local[2]",
        "--checkpoint",
        str(ckpt),
        "--out",
        f"kafka://{kafka_broker}/sp-cli-out",
        "--conf",
        "spark.sql.shuffle.partitions=2",
        "--quiet",
        "--trigger",
        "3s",
    ]
    kill_after_first_commit([sys.executable, "-m", "slidewise.cli", *args], ckpt / "query" / "commits", tmp_path / "first-run.log")
    fill(kafka_broker, "sp-cli", data, start=60)
    assert main([*args, "--once"]) == 0
    assert rows(pd.DataFrame(consume(kafka_broker, "sp-cli-out"))) == oracle(data)


def test_csv_values_and_their_rejects_as_on_the_local_engine(spark, kafka_broker, tmp_path):
    import slidewise

    produce(kafka_broker, "sp-csv-A", ["1,3", "2,x", "5,3", "6,3,9", ""])  # an empty message: skipped on both engines
    produce(kafka_broker, "sp-csv-B", ['4,3,"b"'])
    sources = {"A": f"kafka://{kafka_broker}/sp-csv-A?format=csv&columns=ts,k", "B": f"kafka://{kafka_broker}/sp-csv-B?format=csv&columns=ts,k,v"}
    local = slidewise.run(Q, sources)
    r = run_spark(Q, sources, once=True, spark=spark, collect=True)
    assert rows(r.results) == rows(local.results) and len(local.results) == 2
    reasons = lambda res: sorted(res.rejects.table().column("reason").to_pylist())  # noqa: E731
    assert reasons(r) == reasons(local) and len(reasons(local)) == 2


def test_avro_values_and_their_rejects_as_on_the_local_engine(spark, kafka_broker, tmp_path):
    import json

    import slidewise
    from tests.test_kafka_avro import SCHEMAS, schemaless

    path = tmp_path / "A.avsc"
    path.write_text(json.dumps(SCHEMAS["A"]))
    good = schemaless("A", pd.DataFrame({"ts": [1, 5], "k": [3, 3]}))
    produce(kafka_broker, "sp-avro-A", [good[0], b"\xff\xff\xff", good[1]])
    produce(kafka_broker, "sp-avro-B", [{"ts": 4, "k": 3, "v": "b"}])
    sources = {"A": f"kafka://{kafka_broker}/sp-avro-A?format=avro&schema={path}", "B": f"kafka://{kafka_broker}/sp-avro-B"}
    local = slidewise.run(Q, sources)
    r = run_spark(Q, sources, once=True, spark=spark, collect=True)
    assert rows(r.results) == rows(local.results) and len(local.results) == 2
    reasons = lambda res: sorted(res.rejects.table().column("reason").to_pylist())  # noqa: E731
    assert reasons(r) == reasons(local) and reasons(local)[0].startswith("malformed Avro record: ")
