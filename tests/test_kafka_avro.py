"""Avro values on Kafka sources (local engine, real broker): schemaless records with ``&schema=PATH``
and object containers with their own schema give the results of the same data as JSON."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest

import slidewise
from slidewise.cli import main
from tests.e2e_case import Q, inputs, oracle, rows
from tests.kafka_broker import produce
from tests.test_kafka import G, fill

fastavro = pytest.importorskip("fastavro")

SCHEMAS = {
    "A": {"type": "record", "name": "A", "fields": [{"name": "ts", "type": "long"}, {"name": "k", "type": "long"}]},
    "B": {"type": "record", "name": "B", "fields": [{"name": "ts", "type": "long"}, {"name": "k", "type": "long"}, {"name": "v", "type": "string"}]},
}


def schemaless(name: str, df: pd.DataFrame) -> list[bytes]:
    out = []
    for rec in df.to_dict("records"):
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, fastavro.parse_schema(SCHEMAS[name]), {k: (int(v) if k != "v" else v) for k, v in rec.items()})
        out.append(buf.getvalue())
    return out


def avro_sources(address: str, prefix: str, data: dict[str, pd.DataFrame], tmp_path) -> dict[str, str]:
    sources = {}
    for name, df in data.items():
        path = tmp_path / f"{name}.avsc"
        path.write_text(json.dumps(SCHEMAS[name]))
        produce(address, f"{prefix}-{name}", schemaless(name, df))
        sources[name] = f"kafka://{address}/{prefix}-{name}?format=avro&schema={path}"
    return sources


def test_schemaless_avro_join_equals_json(kafka_broker, tmp_path):
    data = inputs(seed=11)
    got = slidewise.run(Q, avro_sources(kafka_broker, "avro", data, tmp_path)).results
    assert rows(got) == oracle(data)
    as_json = slidewise.run(Q, fill(kafka_broker, "avrojson", data)).results
    assert rows(got) == rows(as_json)


def test_avro_containers_group_by_equals_json(kafka_broker):
    data = inputs(60, seed=3)["A"]
    msgs = []
    for lo in range(0, len(data), 7):  # several records per container message
        buf = io.BytesIO()
        fastavro.writer(buf, fastavro.parse_schema(SCHEMAS["A"]), [{"ts": int(r.ts), "k": int(r.k)} for r in data.iloc[lo : lo + 7].itertuples()])
        msgs.append(buf.getvalue())
    produce(kafka_broker, "avroobj-A", msgs)
    got = slidewise.run(G, {"A": f"kafka://{kafka_broker}/avroobj-A?format=avro"}).results
    want = slidewise.run(G, {"A": data}).results
    assert got.astype(str).values.tolist() == want.astype(str).values.tolist()


def test_a_bad_avro_record_is_a_reject(kafka_broker, tmp_path):
    path = tmp_path / "A.avsc"
    path.write_text(json.dumps(SCHEMAS["A"]))
    good = schemaless("A", pd.DataFrame({"ts": [1, 5], "k": [3, 3]}))
    produce(kafka_broker, "avrobad-A", [good[0], b"\xff\xff\xff", good[1]])
    produce(kafka_broker, "avrobad-B", [{"ts": 4, "k": 3, "v": "b"}])
    rej = tmp_path / "rej.csv"
    r = slidewise.run(Q, {"A": f"kafka://{kafka_broker}/avrobad-A?format=avro&schema={path}", "B": f"kafka://{kafka_broker}/avrobad-B"}, rejects=str(rej))
    assert r.results[["at", "bt", "v"]].values.tolist() == [[1, 4, "b"], [5, 4, "b"]]
    assert r.stats["rejects"] == 1
    rejected = pd.read_csv(rej)
    assert rejected[["stream", "line"]].values.tolist() == [["A", 2]]  # the message's place in the read
    assert rejected["reason"][0].startswith("malformed Avro record: does not decode with the writer schema (")


def test_avro_schema_errors_name_the_topic(kafka_broker, tmp_path, capsys):
    produce(kafka_broker, "avroerr-A", schemaless("A", pd.DataFrame({"ts": [1], "k": [3]})))
    produce(kafka_broker, "avroerr-B", [{"ts": 4, "k": 3, "v": "b"}])
    b = f"B=kafka://{kafka_broker}/avroerr-B"
    a = f"kafka://{kafka_broker}/avroerr-A?format=avro"
    assert main(["run", Q, "--engine", "local", "--once", "--source", f"A={a}&schema={tmp_path}/none.avsc", "--source", b]) == 2
    err = capsys.readouterr().err
    assert "cannot read the Avro schema" in err and "avroerr-A" in err and "&schema=PATH" in err
    (tmp_path / "bad.avsc").write_text('{"type": "record"')
    assert main(["run", Q, "--engine", "local", "--once", "--source", f"A={a}&schema={tmp_path}/bad.avsc", "--source", b]) == 2
    assert "cannot read the Avro schema" in capsys.readouterr().err
    assert main(["run", Q, "--engine", "local", "--once", "--source", f"A={a}", "--source", b]) == 2
    err = capsys.readouterr().err
    assert "is not an Avro object container and no schema was given" in err and "add &schema=PATH" in err
