"""The process's allocators held to an archive's memory budget.

An update's or a probe's working set is cut to the budget (:mod:`slidewise.archive.merge`),
but the process's resident memory also holds what the allocators keep after a free.
Measured with ``slidewise bench archive --memory-budget 8`` (an archive of 81 MB):
pyarrow's default mimalloc pool keeps freed segments (the peak RSS above the ready
process reached 28 MB), and glibc's dynamic mmap threshold moves large buffers
(numpy arrays, Parquet's buffers outside Arrow's pool) into heaps whose freed pages
stay resident. So a process that keeps an archive

* uses Arrow's jemalloc pool, which returns freed pages at once (decay 0), with one
  arena, no thread caches and ``retain:false`` (:data:`JEMALLOC_CONF`). The C++
  default pool, which Parquet's readers and writers use, is fixed when pyarrow is
  imported: :func:`prepare` sets ``ARROW_DEFAULT_MEMORY_POOL`` and ``JE_ARROW_MALLOC_CONF`` before that (the
  ``slidewise`` commands call it before they import pyarrow); once pyarrow is
  imported, :func:`bound` can only switch pyarrow's default pool. A pool chosen
  with ``ARROW_DEFAULT_MEMORY_POOL`` is kept;
* fixes glibc's mmap threshold (:func:`slidewise.heap.return_freed`), so that
  buffers of 128 KiB or more go back to the system when freed;
* calls :func:`release` after each update and probe: the free pages of Arrow's
  pool and of the C heap go back to the system.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from slidewise import heap

#: the environment variable that picks Arrow's C++ default pool when pyarrow is imported
POOL_VARIABLE = "ARROW_DEFAULT_MEMORY_POOL"
#: the options of Arrow's jemalloc, read when it starts: one arena and no per-thread caches (their pages
#: stayed resident: 0.8 MB of the peak at an 8 MB budget), freed extents unmapped rather than retained, so the
#: address space stays near the resident memory (a ``ulimit -v`` below the archive's size holds)
JEMALLOC_VARIABLE, JEMALLOC_CONF = "JE_ARROW_MALLOC_CONF", "narenas:1,tcache:false,retain:false"

_state: dict[str, Any] = {"bound": False}


def prepare() -> None:
    """Before pyarrow is imported: make jemalloc Arrow's C++ default pool, returning address space too (unless the user chose)."""
    if "pyarrow" not in sys.modules:
        os.environ.setdefault(POOL_VARIABLE, "jemalloc")
        os.environ.setdefault(JEMALLOC_VARIABLE, JEMALLOC_CONF)


def bound() -> None:
    """Once per process: Arrow's jemalloc pool returning freed pages at once, and glibc's fixed mmap threshold."""
    if _state["bound"]:
        return
    _state["bound"] = True
    import pyarrow as pa

    if "jemalloc" in pa.supported_memory_backends():
        if POOL_VARIABLE not in os.environ and pa.default_memory_pool().backend_name != "jemalloc":
            pa.set_memory_pool(pa.jemalloc_memory_pool())
        try:
            pa.jemalloc_set_decay_ms(0)
        except NotImplementedError:
            pass
    heap.return_freed()


def release() -> None:
    """The free pages of Arrow's pool and of the C heap back to the system."""
    import pyarrow as pa

    pa.default_memory_pool().release_unused()
    heap.trim()
