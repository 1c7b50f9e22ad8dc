"""slidewise: a sliding-window query engine for data streams.

Multi-way sliding-window joins (eager and lazy, NLJ / hash / hybrid / count
windows) over timestamped streams, a CQL dialect, and a Python API mirroring
the CLI. See README.md and docs/architecture.md.
"""

from slidewise.errors import ExecutionError, OptionError, PlanError, QueryError, SlidewiseError, SourceError

__version__ = "0.1.0"

__all__ = [
    "ExecutionError",
    "OptionError",
    "PlanError",
    "QueryError",
    "SlidewiseError",
    "SourceError",
    "__version__",
    "run",
    "run_many",
]


def run(*args, **kwargs):
    """Run a query; see :func:`slidewise.api.run`."""
    from slidewise.api import run as _run

    return _run(*args, **kwargs)


def run_many(*args, **kwargs):
    """Run many named queries, sharing state where they can; see :func:`slidewise.many.run_many`."""
    from slidewise.many import run_many as _run_many

    return _run_many(*args, **kwargs)
