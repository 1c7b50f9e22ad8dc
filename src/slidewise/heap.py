"""The process's C heap (glibc): freed blocks kept for reuse by the engines, or returned by archives.

The local engine works a block at a time, and each block allocates and frees the same
large numpy buffers again (pane partials, windows x groups matrices, output columns of
10^5-10^6 rows). glibc maps a block of its mmap threshold or more with its own pages and
unmaps it when freed, and gives the free top of its heap back to the system beyond its trim
threshold; either way the next block's buffers are faulted in again, page by page. Measured
on the sliding GROUP BY of ``slidewise bench aggregation`` (1,000,000 tuples, 63,221,747
result rows, no output file): with glibc's defaults 532,755 page faults and 3.4-4.1 s; with
the thresholds below 23,831 faults and 1.3 s, the same peak memory (182 MB).

* :func:`keep_freed` (each local run calls it): blocks below :data:`KEEP_MMAP_THRESHOLD`
  come from the heap, whose free top is kept up to :data:`KEEP_TRIM_THRESHOLD`. It leaves
  the heap alone when ``GLIBC_TUNABLES`` or ``MALLOC_MMAP_THRESHOLD_`` /
  ``MALLOC_TRIM_THRESHOLD_`` choose for the process, when ``SLIDEWISE_HEAP=system``, on
  another C library, and once :func:`return_freed` ran.
* :func:`return_freed` (an archive held to a memory budget,
  :mod:`slidewise.archive.memory`): blocks of :data:`RETURN_THRESHOLD` or more are mapped,
  so that freeing them returns them; it wins over :func:`keep_freed` for the process.
* :func:`trim`: the heap's free pages back to the system.
"""

from __future__ import annotations

import ctypes
import os
from typing import Any

__all__ = ["KEEP_MMAP_THRESHOLD", "KEEP_TRIM_THRESHOLD", "RETURN_THRESHOLD", "keep_freed", "return_freed", "trim"]

#: glibc's mallopt parameters M_TRIM_THRESHOLD and M_MMAP_THRESHOLD
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
#: engines: blocks below this size come from the heap (glibc's largest dynamic threshold on 64-bit systems)
KEEP_MMAP_THRESHOLD = 32 << 20
#: engines: free memory at the top of the heap kept for reuse up to this size (twice the above, as glibc's own rule)
KEEP_TRIM_THRESHOLD = 64 << 20
#: archives: blocks of this size or more are mapped, so that freeing them returns them to the system
RETURN_THRESHOLD = 128 << 10
#: the variable that leaves glibc's defaults alone (``system``)
VARIABLE = "SLIDEWISE_HEAP"

_state: dict[str, Any] = {"policy": None, "libc": None}


def _libc() -> Any:
    """glibc, or None (another C library or platform)."""
    if _state["libc"] is None:
        _state["libc"] = False
        try:
            libc = ctypes.CDLL("libc.so.6")
            if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim"):  # glibc only
                _state["libc"] = libc
        except OSError:
            pass
    return _state["libc"] or None


def _user_chose() -> bool:
    """Whether the environment sets glibc's malloc thresholds, or asks slidewise to leave them."""
    env = os.environ
    return (
        env.get(VARIABLE, "").lower() == "system"
        or "glibc.malloc." in env.get("GLIBC_TUNABLES", "")
        or any(k in env for k in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"))
    )


def keep_freed() -> str | None:
    """Once per process: glibc keeps freed blocks for reuse (see the module docstring); the policy in force."""
    if _state["policy"] is None:
        libc = _libc()
        if libc is None or _user_chose():
            _state["policy"] = "system"
        else:
            libc.mallopt(M_MMAP_THRESHOLD, KEEP_MMAP_THRESHOLD)
            libc.mallopt(M_TRIM_THRESHOLD, KEEP_TRIM_THRESHOLD)
            _state["policy"] = "keep"
    return _state["policy"]


def return_freed() -> None:
    """glibc returns freed blocks of :data:`RETURN_THRESHOLD` or more to the system, for the rest of the process."""
    libc = _libc()
    _state["policy"] = "return"
    if libc is not None:
        libc.mallopt(M_MMAP_THRESHOLD, RETURN_THRESHOLD)
        libc.mallopt(M_TRIM_THRESHOLD, RETURN_THRESHOLD)


def trim() -> None:
    """The free pages of the C heap back to the system."""
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)
