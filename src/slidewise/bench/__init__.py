"""Experiment drivers behind ``slidewise bench NAME`` (DESIGN §4): JSON + PNG, peers side by side.

* ``joins`` – :func:`run_joins_bench` (:mod:`slidewise.bench.joins`): join
  algorithms on workloads W2 and W4 against a DuckDB SQL peer, with a memory
  proportionality check.
"""

from __future__ import annotations

from slidewise.bench.joins import WORKLOADS, run_joins_bench

__all__ = ["WORKLOADS", "run_joins_bench"]
