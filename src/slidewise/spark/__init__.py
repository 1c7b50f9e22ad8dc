"""The Spark runner: slidewise's join operators hosted in Spark Structured Streaming.

``run_spark(query, sources, **options) -> RunResult`` runs a query to the end
of its inputs (or until interrupted); ``start_spark`` returns a running
:class:`~slidewise.spark.join_runner.SparkRun`. Modules: ``session`` (the one
SparkSession builder), ``ingest`` (sources), ``keying`` (buckets), ``layout``
(row layouts), ``route`` (the join's stateless bucket routing), ``bucket`` (the join's one
stateful stage) and ``sequencer`` (the plan path's first stage), pure Python, ``processor``
(their Spark glue), ``join`` (the pipeline), ``sinks``
(``foreachBatch``), ``join_runner`` (checkpoints, triggers, end of input, stats;
the join path), ``plan_state``, ``plan_stream`` and ``plan_runner`` (the plan path),
``batch`` (batch replay), ``dataframe`` (the Spark-native API: :func:`query` over DataFrames, a
DataFrame out, for joins and general queries; :func:`end_input`), ``follow`` (the local engine
following Kafka topics: the stages in-process, without Spark), ``archive`` (:func:`read_archive`: an archive's unexpired rows).
Importing this package does not start a JVM.
"""

from __future__ import annotations

__all__ = ["SparkRun", "end_input", "get_session", "query", "read_archive", "read_results", "run_spark", "start_spark"]


def __getattr__(name: str):
    if name in ("run_spark", "start_spark", "SparkRun"):
        from slidewise.spark import join_runner

        return getattr(join_runner, name)
    if name in ("query", "end_input"):
        from slidewise.spark import dataframe

        return getattr(dataframe, name)
    if name == "get_session":
        from slidewise.spark.session import get_session

        return get_session
    if name == "read_archive":
        from slidewise.spark.archive import read_archive

        return read_archive
    if name == "read_results":
        from slidewise.spark.sinks import read_results

        return read_results
    raise AttributeError(f"module 'slidewise.spark' has no attribute {name!r}")
