"""Experiment drivers behind ``slidewise bench EXPERIMENT`` (:mod:`slidewise.bench.cli`): JSON + PNG, peers side by side.

* ``joins`` – :func:`run_joins_bench` (:mod:`slidewise.bench.joins`): join
  algorithms on workloads W2 and W4 against two DuckDB SQL formulations
  (band join, bucketed band join), with memory scaling checks of the
  operator and of the whole engine; :func:`summarize` is the digest the CLI
  prints.
"""

from __future__ import annotations

from slidewise.bench.joins import WORKLOADS, run_joins_bench, summarize

__all__ = ["WORKLOADS", "run_joins_bench", "summarize"]
