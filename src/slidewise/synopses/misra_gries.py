"""Misra–Gries summaries of ``k`` counters per sub-window: the comparison variant of Algorithm 6.

Misra and Gries, *Finding repeated elements*, Science of Computer
Programming 2(2), 1982: ``k`` counters; an item without a counter
decrements all of them. Its summary of a multiset with counts ``c`` is, in
the merged form of Agarwal, Cormode, Huang, Phillips, Wei and Yi,
*Mergeable summaries*, PODS 2012 (§2), the ``k`` largest counts minus the
``(k+1)``-th largest count ``c₍ₖ₊₁₎`` (counters that reach 0 are dropped):
every stored count is at most the true one and at least the true one minus
``c₍ₖ₊₁₎``, and an item without a counter occurs at most ``c₍ₖ₊₁₎`` times.
So ``c₍ₖ₊₁₎`` plays the part of Algorithm 6's ``δᵢ`` and the window answer of
:class:`slidewise.synopses.frequent.WindowCounters` keeps its guarantee (a
reported frequency is a lower bound; above ``δ`` it is guaranteed).

It is computed here from the sub-window's counts (one ``np.unique``, as for
the top-k lists), so it measures the accuracy of ``k`` Misra–Gries counters,
not the memory of a one-pass run inside a sub-window.
"""

from __future__ import annotations

import numpy as np

__all__ = ["reduce_counts"]


def reduce_counts(counts: np.ndarray, first: np.ndarray, size: np.ndarray, rank: np.ndarray, pane: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Misra–Gries counters from per-sub-window counts sorted descending (``rank`` within sub-window ``pane``,
    sub-window ``j`` at ``first[j]`` with ``size[j]`` entries): (reduced counts, entries kept, c₍ₖ₊₁₎ per sub-window)."""
    has = size > k
    cut = np.zeros(len(size), np.int64)
    cut[has] = counts[first[:-1][has] + k]
    reduced = counts - cut[pane]
    return reduced, (rank < k) & (reduced > 0), cut
