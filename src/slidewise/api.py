"""The Python API, mirroring the CLI.

>>> import slidewise
>>> r = slidewise.run(
...     "SELECT * FROM A [RANGE 10], B [RANGE 10] WHERE A.k = B.k",
...     sources={"A": {"ts": [1, 5], "k": [7, 8]}, "B": {"ts": [3, 6], "k": [7, 7]}})
>>> r.results[["A.ts", "B.ts", "ts", "exp"]].values.tolist()
[[1, 3, 3, 11], [1, 6, 6, 11]]
>>> r.stats["results"], r.stats["algorithm"]
(2, 'columnar')
"""

from __future__ import annotations

from collections.abc import Callable

from slidewise.cql import load_query
from slidewise.plan.query import JoinQuery
from slidewise.runtime.engine import RunResult, execute


def run(query: str | JoinQuery, sources: dict[str, object], *, algorithm: str | None = None,
        order: str | list[str] | None = None, out: str | Callable | None = None,
        collect: bool | None = None, lateness: int = 0, ts_column: str = "ts",
        ts_unit: str = "auto", chunk_rows: int = 65536, rejects: str | None = None,
        progress: bool = False, engine: str = "local", **operator_options) -> RunResult:
    """Run a query to the end of its inputs on the embedded engine (or ``engine="spark"``).

    ``query``: CQL text, a path to a ``.cql`` file, or a parsed JoinQuery.
    ``sources``: source name (as in FROM) -> file/directory path, pandas
    DataFrame, dict of columns or iterable of dicts. ``out``: a result file
    (``.csv``, ``.jsonl``, ``.parquet``), ``"-"`` for stdout, or a callback
    receiving a DataFrame per batch. Results are collected into
    ``RunResult.results`` unless ``out`` is given (or ``collect`` says so).
    ``operator_options`` go to the join operator (e.g. ``buckets=8``,
    ``negatives=True``). ``engine="spark"`` runs on Spark instead
    (:func:`slidewise.spark.run_spark`; its options — ``master``, ``conf``,
    ``trigger``, ``once``, ``checkpoint``, ... — pass through); the API's
    default stays the in-process engine.
    """
    q = query if isinstance(query, JoinQuery) else load_query(query)
    if engine == "spark":
        from slidewise.spark.runner import run_spark

        return run_spark(q, sources, algorithm=algorithm, order=order, out=out, collect=collect,
                         lateness=lateness, ts_column=ts_column, ts_unit=ts_unit, chunk_rows=chunk_rows,
                         rejects=rejects, progress=progress, **operator_options)
    if engine != "local":
        from slidewise.errors import OptionError

        raise OptionError(f"unknown engine {engine!r}", hint="use engine='local' or engine='spark'")
    return execute(q, sources, algorithm=algorithm, order=order, out=out,
                   collect=(out is None) if collect is None else collect, lateness=lateness,
                   ts_column=ts_column, ts_unit=ts_unit, chunk_rows=chunk_rows,
                   rejects_path=rejects, progress=progress, operator_options=operator_options)
