"""Idle streams in the release bound of the bucket stages (``--source-option NAME.idle-timeout=SECONDS``).

A bucket releases its buffered tuples below ``min over streams (frontier - lateness)``,
so a live stream that sends nothing holds every other stream's output back. With an
idle timeout (processing time, as Flink's source idleness) a stream that has sent
nothing to the bucket for longer than its timeout is left out of the minimum; it
rejoins with its next tuples or frontier markers. Its tuples behind what the bucket
has released meanwhile are late and become rejects (nothing silently dropped). When
every stream is idle the bound does not move.
"""

from __future__ import annotations

import numpy as np

NEG = np.iinfo(np.int64).min // 2

__all__ = ["release_bound", "seen_now"]


def seen_now(seen: np.ndarray | None, n: int, streams: np.ndarray, now: float) -> np.ndarray:
    """``seen`` (processing time each stream last reached the bucket; the bucket's first call for
    streams not seen yet) with ``streams`` seen at ``now``."""
    seen = np.full(n, now, np.float64) if seen is None else np.asarray(seen, np.float64).copy()
    seen[np.asarray(streams, np.int64)] = now
    return seen


def release_bound(frontier: np.ndarray, lateness: np.ndarray, idle: list[float | None] | None, seen: np.ndarray | None, now: float) -> int:
    """``min (frontier - lateness)`` over the streams not idle at ``now`` (all of them without
    timeouts); ``NEG`` while one of those has sent nothing, or when every stream is idle."""
    active = np.ones(len(frontier), bool)
    if idle is not None and seen is not None and any(t is not None for t in idle):
        active = np.array([t is None or now - s <= t for t, s in zip(idle, seen)], bool)
        if not active.any():
            return NEG
    f = frontier[active]
    return int((f - lateness[active]).min()) if (f > NEG).all() else NEG
