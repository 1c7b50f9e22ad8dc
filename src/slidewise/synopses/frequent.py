"""Frequent items of a sliding window from per-sub-window top-k lists (Golab's thesis ch. 6, Algorithm 6).

Golab's thesis (ch. 6; also Golab, DeHaan, Demaine, López-Ortiz and Munro,
*Identifying frequent items in sliding windows over on-line packet streams*,
IMC 2003) divides a window into ``b`` sub-windows that expire in FIFO order
and keeps, per sub-window ``i``, only its ``k`` most frequent items with
their counts and ``δᵢ``, the ``k``-th largest count of the sub-window (0 if
it holds fewer than ``k`` distinct items). A global counter per item sums its
counts over the top-k lists of the sub-windows in the window, and
``δ = Σ δᵢ``. An item missing from list ``i`` occurs at most ``δᵢ`` times in
sub-window ``i``, so:

* a reported frequency never exceeds the true one (it sums counts of some
  sub-windows), and an item reported above ``δ`` is *guaranteed* to occur
  more than ``δ`` times in the window: no false positive;
* an item occurring more than ``δ`` times appears in at least one list.

:func:`summarize` computes the sub-window summaries of a batch of tuples
(numpy: one ``np.unique`` of (sub-window, item) pairs and a lexsort for the
ranks); :class:`WindowCounters` holds the summaries of the window, the
global counters and ``δ``, and answers. ``kind="exact"`` keeps every count of
every sub-window instead (the exact baseline: true window frequencies, the
same ``δ``); ``kind="misra-gries"`` keeps a Misra–Gries summary of ``k``
counters per sub-window (:mod:`slidewise.synopses.misra_gries`).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

__all__ = ["KINDS", "Answer", "Summaries", "WindowCounters", "summarize"]

#: the sub-window summaries: Algorithm 6's top-k lists, every count (exact), Misra–Gries counters
KINDS = ("topk", "exact", "misra-gries")

#: bytes charged per stored (item, count) pair and per global counter (8-byte item code, 8-byte count)
ENTRY_BYTES = 16


@dataclass
class Summaries:
    """Summaries of consecutive sub-windows: ``ids`` and ``delta`` per sub-window; their entries,
    grouped by sub-window (``starts`` indexes ``items`` / ``counts``, one longer than ``ids``)."""

    ids: np.ndarray
    delta: np.ndarray
    starts: np.ndarray
    items: np.ndarray
    counts: np.ndarray

    @classmethod
    def of_sizes(cls, ids, delta, sizes, items, counts) -> Summaries:
        """Summaries with ``sizes[j]`` entries for sub-window ``ids[j]``."""
        return cls(np.asarray(ids, np.int64), np.asarray(delta, np.int64), np.concatenate(([0], np.cumsum(sizes, dtype=np.int64))), items, counts)

    @classmethod
    def concat(cls, parts: list[Summaries]) -> Summaries:
        """Consecutive summaries as one (items as an object array)."""
        return cls.of_sizes(
            np.concatenate([p.ids for p in parts]),
            np.concatenate([p.delta for p in parts]),
            np.concatenate([p.sizes for p in parts]),
            np.concatenate([np.asarray(p.items, object) for p in parts]),
            np.concatenate([p.counts for p in parts]).astype(np.int64),
        )

    @property
    def sizes(self) -> np.ndarray:
        """Entries per sub-window."""
        return np.diff(self.starts)

    def after(self, n: int) -> Summaries:
        """The sub-windows from the ``n``-th on."""
        a = self.starts[n]
        return Summaries(self.ids[n:], self.delta[n:], self.starts[n:] - a, self.items[a:], self.counts[a:])

    def top(self, k: int) -> Summaries:
        """The top-``k`` lists of ranked summaries (each sub-window's entries by count descending, then item:
        :func:`summarize`'s "exact", or "topk" with a ``k`` at least this one), ``δᵢ`` their ``k``-th counts."""
        size = self.sizes
        keep = np.arange(len(self.counts)) - np.repeat(self.starts[:-1], size) < k
        return Summaries.of_sizes(self.ids, _kth(self.counts, self.starts, size, k), np.minimum(size, k), self.items[keep], self.counts[keep])

    def before(self, n: int) -> Summaries:
        """The first ``n`` sub-windows."""
        z = self.starts[n]
        return Summaries(self.ids[:n], self.delta[:n], self.starts[: n + 1], self.items[:z], self.counts[:z])


@dataclass
class Answer:
    """One evaluation: the reported items, their summed counts, ``δ`` and the guarantee per item."""

    items: np.ndarray
    frequency: np.ndarray
    threshold: int
    guaranteed: np.ndarray


def summarize(sub: np.ndarray, values: np.ndarray, k: int, kind: str = "topk") -> Summaries:
    """The summaries of the sub-windows of tuples in sub-window ``sub`` (non-decreasing) with item ``values``.

    Ranks within a sub-window are by count, ties by item value, so the
    top-k lists do not depend on how the input is cut into batches.
    """
    if not len(sub):
        empty = np.zeros(0, np.int64)
        return Summaries(empty, empty, np.zeros(1, np.int64), values[:0], empty)
    change = np.flatnonzero(np.diff(sub)) + 1
    dense = np.zeros(len(sub), np.int64)
    dense[change] = 1
    np.cumsum(dense, out=dense)
    ids = sub[np.concatenate(([0], change))].astype(np.int64)
    uniq, code = np.unique(values, return_inverse=True)
    width = max(len(uniq), 1)
    pairs, counts = np.unique(dense * width + code.reshape(-1), return_counts=True)
    pane, item = pairs // width, pairs % width
    counts = counts.astype(np.int64)
    # rank within the sub-window: by count descending, then item value
    order = np.lexsort((item, -counts, pane))
    pane, item, counts = pane[order], item[order], counts[order]
    first = np.searchsorted(pane, np.arange(len(ids) + 1))
    size = np.diff(first)
    if kind in ("exact", "topk"):
        ranked = Summaries(ids, _kth(counts, first, size, k), first, uniq[item], counts)
        return ranked if kind == "exact" else ranked.top(k)
    if kind == "misra-gries":
        from slidewise.synopses.misra_gries import reduce_counts

        rank = np.arange(len(pane)) - first[pane]
        counts, keep, delta = reduce_counts(counts, first, size, rank, pane, k)
    else:
        raise ValueError(f"unknown summary kind {kind!r}")
    pane, item, counts = pane[keep], item[keep], counts[keep]
    starts = np.searchsorted(pane, np.arange(len(ids) + 1))
    return Summaries(ids, delta, starts, uniq[item], counts)


def _kth(counts: np.ndarray, first: np.ndarray, size: np.ndarray, k: int) -> np.ndarray:
    """Per sub-window, the k-th largest count (entries sorted by count descending), 0 if fewer than k items."""
    has = size >= k
    out = np.zeros(len(size), np.int64)
    out[has] = counts[first[:-1][has] + k - 1]
    return out


class WindowCounters:
    """The sub-window summaries of one window (FIFO), the global counter per item and ``δ = Σ δᵢ``."""

    def __init__(self, k: int):
        self.k = k
        self.subs: deque[tuple[int, int, np.ndarray, np.ndarray]] = deque()  # (id, δᵢ, item codes, counts)
        self.code: dict = {}  # item value -> code
        self.values: list = []  # code -> item value
        self.total = np.zeros(1024, np.int64)  # code -> global counter
        self.delta = 0
        self.entries = 0  # (item, count) pairs held by the sub-window summaries
        self.peak_bytes = 0

    def extend(self, s: Summaries) -> None:
        """The sub-windows of ``s`` (each later than every one held) with their summaries."""
        get, n = self.code.setdefault, len(self.code)
        codes = np.fromiter((get(v, len(self.code)) for v in s.items.tolist()), np.int64, len(s.items))
        if len(self.code) > n:
            new = codes >= n
            _, first = np.unique(codes[new], return_index=True)  # new codes are n, n + 1, ... in first-seen order
            self.values.extend(s.items[new][first].tolist())
            if len(self.code) > len(self.total):
                self.total = np.concatenate([self.total, np.zeros(len(self.code) + len(self.total), np.int64)])
        counts = s.counts.astype(np.int64, copy=False)
        self.total[: len(self.code)] += np.bincount(codes, counts, len(self.code)).astype(np.int64)
        bounds = s.starts.tolist()
        for j, (sid, delta) in enumerate(zip(s.ids.tolist(), s.delta.tolist())):
            self.subs.append((sid, delta, codes[bounds[j] : bounds[j + 1]], counts[bounds[j] : bounds[j + 1]]))
        self.delta += int(s.delta.sum())
        self.entries += len(codes)

    def expire(self, first: int) -> None:
        """Drop the sub-windows before ``first``."""
        while self.subs and self.subs[0][0] < first:
            _, delta, codes, counts = self.subs.popleft()
            self.total[codes] -= counts
            self.delta -= delta
            self.entries -= len(codes)
        if len(self.code) > 4096 and len(self.code) > 4 * max(self.entries, 1):
            self._compact()

    def _compact(self) -> None:
        """Forget the codes of items no longer counted (their number would grow with the stream)."""
        live = np.flatnonzero(self.total[: len(self.code)])
        remap = np.full(len(self.code), -1, np.int64)
        remap[live] = np.arange(len(live))
        self.values = [self.values[i] for i in live.tolist()]
        self.code = {v: i for i, v in enumerate(self.values)}
        total = np.zeros(max(1024, 2 * len(live)), np.int64)
        total[: len(live)] = self.total[live]
        self.total = total
        self.subs = deque((s, d, remap[c], n) for s, d, c, n in self.subs)

    def summaries(self) -> Summaries:
        """The summaries held, oldest first, items as values."""
        values = np.empty(len(self.values), object)
        values[:] = self.values
        subs = list(self.subs)
        codes = np.concatenate([x[2] for x in subs]) if subs else np.zeros(0, np.int64)
        counts = np.concatenate([x[3] for x in subs]) if subs else np.zeros(0, np.int64)
        return Summaries.of_sizes([x[0] for x in subs], [x[1] for x in subs], [len(x[2]) for x in subs], values[codes], counts)

    def space(self) -> tuple[int, int]:
        """Counters held (summary entries plus live global counters) and their bytes (:data:`ENTRY_BYTES` each)."""
        live = int(np.count_nonzero(self.total[: len(self.code)]))
        counters = self.entries + live + len(self.subs)  # + one δᵢ per sub-window
        return counters, counters * ENTRY_BYTES

    def answer(self, k: int | None = None) -> Answer:
        """The items with the ``k`` largest global counters (all tied at the k-th) and every item above ``δ``;
        by frequency descending, then item value."""
        k = self.k if k is None else k
        live = np.flatnonzero(self.total[: len(self.code)])
        freq = self.total[live]
        if len(freq) > k:
            kth = np.partition(freq, len(freq) - k)[len(freq) - k]
            pick = (freq >= kth) | (freq > self.delta)
            live, freq = live[pick], freq[pick]
        values = [self.values[i] for i in live.tolist()]
        order = sorted(range(len(values)), key=lambda i: (-freq[i], values[i]))
        items = np.empty(len(values), object)
        items[:] = [values[i] for i in order]
        freq = freq[np.asarray(order, np.int64)]
        counters, nbytes = self.space()
        self.peak_bytes = max(self.peak_bytes, nbytes)
        return Answer(items, freq, self.delta, freq > self.delta)
