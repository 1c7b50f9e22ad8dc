"""Spark test fixtures: ONE SparkSession on local[2] for the whole test session, runs stopped in teardown."""

from __future__ import annotations

import os

import pytest

from slidewise.spark.session import find_java


@pytest.fixture(scope="session")
def spark():
    """The shared session (local[2], 2 shuffle partitions, UI off).

    Without Java the Spark tests are skipped, or fail when ``SLIDEWISE_REQUIRE_SPARK``
    is set (CI sets it, so a missing JVM cannot pass unnoticed).
    """
    if find_java() is None:
        if os.environ.get("SLIDEWISE_REQUIRE_SPARK"):
            pytest.fail("SLIDEWISE_REQUIRE_SPARK is set but Java is missing (apt-get install openjdk-17-jre-headless)", pytrace=False)
        pytest.skip("the Spark tests need Java (apt-get install openjdk-17-jre-headless)")
    from slidewise.spark.session import get_session

    session = get_session("local[2]", {"spark.sql.shuffle.partitions": "2"}, ui=False)
    yield session
    for q in session.streams.active:
        q.stop()
    session.stop()


@pytest.fixture
def runs():
    """Collects started :class:`~slidewise.spark.join_runner.SparkRun` s and stops them after the test."""
    started: list = []
    yield started
    for run in started:
        run.stop()
