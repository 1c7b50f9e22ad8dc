"""Spark's reused Python workers: the modules a task imported kept out of the garbage collector.

PySpark's daemon runs a full ``gc.collect()`` after every task of a reused
worker (``spark.python.worker.reuse``). A worker that has imported pandas,
pyarrow and slidewise holds hundreds of thousands of long-lived objects, and
that collection walked them all after every task: on ``bench spark`` W4
(200,000 tuples) about a fifth of the run's CPU time. :func:`settle`, called
when a worker's first slidewise task ends, collects once and then freezes
(:func:`gc.freeze`) what is left — the imported modules and their caches — so
later collections only walk what later tasks allocate. It also has the C heap keep
freed blocks for the next task's buffers (:func:`slidewise.heap.keep_freed`), as a local run does.
"""

from __future__ import annotations

import gc

from slidewise import heap

_settled = False


def settle() -> None:
    """Once per process: collect, then move every object still alive to the collector's permanent generation;
    the C heap keeps freed blocks from then on."""
    global _settled
    if not _settled:
        _settled = True
        gc.collect()
        gc.freeze()
        heap.keep_freed()


def settled(batches):
    """``batches`` passed through, then :func:`settle` (the end of a ``mapInArrow`` step)."""
    yield from batches
    settle()
