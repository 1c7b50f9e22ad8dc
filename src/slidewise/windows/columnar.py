"""Window state of the columnar join: one stream's window as arrays sorted by (join key, pos).

Serves :mod:`slidewise.operators.joins.columnar`. Where the
per-tuple windows of :mod:`slidewise.windows.fifo` / ``count`` / ``hashed``
keep one object per tuple, :class:`SortedWindow` keeps one numpy array per
attribute, rows ordered by ``(join key, global pos)``. Within one key block
``pos`` is increasing, hence so are ``ts`` (global order is ``(ts, arrival)``)
and the per-stream arrival counter ``cnt``: every window bound of docs/semantics.md is a
*contiguous* range of a key block, found by binary search
(:func:`lex_searchsorted`) on a combined ``(key code, minor)`` sort key.

Per chunk, :meth:`SortedWindow.admit` numbers the new arrivals (count
windows), :meth:`SortedWindow.merge` merges them — sorted runs, a prefix count
(:func:`count_at_most`) plus scatters, never a re-sort of the state — into a
:class:`Merged` view that the join probes and gathers from, and
:meth:`SortedWindow.retain` keeps only the rows a future arrival can join:

* ``[RANGE T]`` / ``[NOW]``: ``ts >= max_ts - T`` (``max_ts``: greatest ts seen);
* ``[ROWS N]``: the last ``N`` arrivals of the stream (``cnt >= arrivals - N``);
* ``[PARTITION BY p ROWS N]``: the last ``N`` arrivals of each partition
  (per-partition counters ``pcnt``; the newest row of a partition is always
  kept, so the counters need no dictionary beyond the state);
* ``[UNBOUNDED]``: everything.

Join keys (ints, floats, strings) become dense int64 codes per chunk with
:func:`dense_codes`; codes preserve value order, so the state stays sorted when
the next chunk recodes it.

Memory: the window contents (plus, inside one chunk, the chunk's rows).

>>> lex_searchsorted(np.array([1, 1, 2, 2]), np.array([5, 9, 1, 4]),
...                  np.array([1, 2, 3]), np.array([6, 2, 0]))
array([1, 3, 4])
>>> [c.tolist() for c in dense_codes([np.array(["b", "a"]), np.array(["c", "b"])])]
[[1, 0], [2, 1]]
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from slidewise.errors import ExecutionError
from slidewise.model.batch import StreamBatch
from slidewise.plan.query import WindowSpec

INT64_MAX = np.iinfo(np.int64).max
#: combined sort keys ``major * span + minor`` are used while they stay below this
COMPOSITE_LIMIT = 1 << 62
#: integer keys are used as codes directly while their value span is below this
_RAW_SPAN = 1 << 31
_EMPTY = np.empty(0, np.int64)


def cat(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Concatenate two columns; an empty side (maybe a placeholder dtype) is ignored."""
    if len(a) == 0:
        return b
    if len(b) == 0:
        return a
    return np.concatenate([a, b])


def dense_codes(arrays: list[np.ndarray]) -> list[np.ndarray]:
    """Order-preserving int64 codes, consistent across ``arrays``.

    Equal values get equal codes and ``a < b`` implies ``code(a) < code(b)``.
    Integer keys with a small value span are used as they are (shifted); other
    keys are ranked with ``np.unique``. A NaN equals nothing, so every NaN gets
    a code of its own (after all others).
    """
    present = [a for a in arrays if len(a)]
    if not present:
        return [_EMPTY for _ in arrays]
    if all(a.dtype.kind in "iub" for a in present):
        lo = min(int(a.min()) for a in present)
        hi = max(int(a.max()) for a in present)
        if hi - lo < _RAW_SPAN:
            return [a.astype(np.int64) - lo if len(a) else _EMPTY for a in arrays]
    try:
        values = np.concatenate(present)
        nan = np.isnan(values) if values.dtype.kind == "f" else None
        if nan is not None and nan.any():
            uniq = np.unique(values[~nan])
            codes = np.searchsorted(uniq, values).astype(np.int64)
            codes[nan] = len(uniq) + np.arange(int(nan.sum()))
        else:
            uniq, codes = np.unique(values, return_inverse=True)
            codes = codes.astype(np.int64, copy=False).reshape(-1)
    except (TypeError, ValueError) as exc:
        kinds = sorted({str(a.dtype) for a in present})
        raise ExecutionError(f"join key values cannot be compared across streams ({', '.join(kinds)}): {exc}") from None
    out, start = [], 0
    for a in arrays:
        out.append(codes[start : start + len(a)] if len(a) else _EMPTY)
        start += len(a)
    return out


def count_at_most(sorted_codes: np.ndarray, n_codes: int, n_queries: int):
    """A function ``c -> number of sorted_codes <= c`` for int64 codes in ``[0, n_codes)``.

    A prefix-count table (one gather per query) when the code space is small
    against the work, else a binary search.
    """
    if len(sorted_codes) == 0:
        return lambda q: np.zeros(len(q), np.int64)
    if n_codes <= 2 * (len(sorted_codes) + n_queries) + 4096:
        table = np.cumsum(np.bincount(sorted_codes, minlength=n_codes))
        return lambda q: table[q]
    return lambda q: np.searchsorted(sorted_codes, q, "right")


def lex_searchsorted(a_major: np.ndarray, a_minor: np.ndarray, q_major: np.ndarray, q_minor: np.ndarray, side: str = "left", n_major: int | None = None) -> np.ndarray:
    """``searchsorted`` in the lexicographic order of ``(major, minor)`` int64 pairs.

    ``a`` must be sorted by ``(a_major, a_minor)``. Both sides are packed into
    one int64 ``major * span + minor`` (majors known to lie in ``[0, n_major)``
    are used as they are, others are clamped to just outside ``a``'s range,
    which does not change the answer); if that could overflow, both coordinates
    are first replaced by their ranks among ``a``'s values. Sorted queries
    search much faster (cache locality).
    """
    if len(a_major) == 0 or len(q_major) == 0:
        return np.zeros(len(q_major), np.int64)
    bmin = min(int(a_minor.min()), int(q_minor.min()))
    span = max(int(a_minor.max()), int(q_minor.max())) - bmin + 1
    if n_major is None:
        amin, amax = int(a_major[0]) - 1, int(a_major[-1]) + 1
        a_major = a_major - amin
        q_major = np.clip(q_major, amin, amax) - amin
        n_major = amax - amin + 1
    if n_major * span >= COMPOSITE_LIMIT:
        return _rank_searchsorted(a_major, a_minor, q_major, q_minor, side)
    packed = a_major * span
    packed += a_minor
    packed -= bmin
    query = q_major * span
    query += q_minor
    query -= bmin
    return np.searchsorted(packed, query, side)


def _rank_searchsorted(a_major, a_minor, q_major, q_minor, side):
    """:func:`lex_searchsorted` on dense ranks (the no-overflow path)."""
    majors = np.unique(a_major)
    minors = np.unique(a_minor)
    ra = np.searchsorted(majors, a_major)
    rb = np.searchsorted(minors, a_minor)
    qa = np.searchsorted(majors, q_major)
    # "first row with minor > x" is "first row with rank >= rank_right(x)"
    qb = np.searchsorted(minors, q_minor, side)
    present = (qa < len(majors)) & (majors[np.minimum(qa, len(majors) - 1)] == q_major)
    qb = np.where(present, qb, 0)  # an absent major lands at the start of the next block
    span = len(minors) + 1
    return np.searchsorted(ra * span + rb, qa * span + qb, "left")


@dataclass
class Merged:
    """One stream's window contents and new arrivals for one chunk, in ``(key, pos)`` order.

    Arrays ``code``, ``ts`` (and ``cnt`` for count windows, ``evict``
    for partitioned ones whose partition is not the join key) are in merged
    order. ``perm`` maps a merged index to an index of the concatenation
    ``state ++ new`` whose columns ``cat_*`` are kept for gathering results;
    ``new_at[k]`` is the merged index of the ``k``-th new row in ``(code, pos)`` order.
    """

    code: np.ndarray
    ts: np.ndarray
    perm: np.ndarray
    new_at: np.ndarray
    cat_pos: np.ndarray
    cat_ts: np.ndarray
    cat_cols: dict[str, np.ndarray]
    cnt: np.ndarray | None = None
    evict: np.ndarray | None = None
    cat_cnt: np.ndarray | None = None
    cat_pcnt: np.ndarray | None = None
    pcode: np.ndarray | None = None
    pcount: np.ndarray | None = None
    _pos: np.ndarray | None = field(default=None, repr=False)
    _cols: dict[str, np.ndarray] | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.code)

    def merged_pos(self) -> np.ndarray:
        """``pos`` in merged order (computed once)."""
        if self._pos is None:
            self._pos = self.cat_pos[self.perm]
        return self._pos

    def merged_cols(self) -> dict[str, np.ndarray]:
        """The attribute columns in merged order (computed once)."""
        if self._cols is None:
            self._cols = {c: v[self.perm] for c, v in self.cat_cols.items()}
        return self._cols

    def column(self, attr: str, idx: np.ndarray) -> np.ndarray:
        """Attribute ``attr`` (``ts`` included) of merged rows ``idx``."""
        cidx = self.perm[idx]
        return self.cat_ts[cidx] if attr == "ts" else self.cat_cols[attr][cidx]


@dataclass
class Fresh:
    """New arrivals of one stream in one chunk (after pushed-down filters), arrival order."""

    pos: np.ndarray
    ts: np.ndarray
    cols: dict[str, np.ndarray]
    cnt: np.ndarray | None = None
    all_pos: np.ndarray = field(default_factory=lambda: _EMPTY)
    arrivals_before: int = 0

    def __len__(self) -> int:
        return len(self.pos)


class SortedWindow:
    """The window over one stream reference, as columns sorted by ``(join key, pos)``.

    ``spec`` is the stream's window, ``key`` its join attribute. Attributes
    ``pos``, ``ts``, ``cols`` (and ``cnt`` / ``pcnt``, the arrival counters of
    count windows) hold the retained rows.
    """

    def __init__(self, spec: WindowSpec, key: str):
        self.spec = spec
        self.key = key
        self.partition = spec.partition_by
        #: count-based windows keep every arrival, since every arrival counts
        self.counting = spec.is_count
        self.timed = spec.kind in ("range", "now")
        self.arrivals = 0
        self.names: list[str] | None = None
        self.pos = _EMPTY
        self.ts = _EMPTY
        self.cnt = _EMPTY
        self.pcnt = _EMPTY
        self.cols: dict[str, np.ndarray] = {}

    def __len__(self) -> int:
        return len(self.pos)

    def key_values(self) -> np.ndarray:
        return self.ts if self.key == "ts" else self.cols.get(self.key, _EMPTY)

    def admit(self, batch: StreamBatch, keep: np.ndarray | None = None) -> Fresh:
        """The batch's rows that may join (``keep``: pushed-down filters), numbered."""
        if self.names is None and (len(batch) or batch.cols):
            self.names = list(batch.cols)
            self.cols = {c: np.empty(0, v.dtype) for c, v in batch.cols.items()}
        fresh = Fresh(batch.pos, batch.ts, batch.cols, all_pos=batch.pos, arrivals_before=self.arrivals)
        if self.counting:
            fresh.cnt = self.arrivals + np.arange(len(batch), dtype=np.int64)
        self.arrivals += len(batch)
        if keep is not None and not keep.all():
            fresh.pos, fresh.ts = batch.pos[keep], batch.ts[keep]
            fresh.cols = {c: v[keep] for c, v in batch.cols.items()}
            if fresh.cnt is not None:
                fresh.cnt = fresh.cnt[keep]
        return fresh

    @staticmethod
    def fresh_key(fresh: Fresh, key: str) -> np.ndarray:
        return fresh.ts if key == "ts" else fresh.cols[key]

    def merge(self, scode: np.ndarray, fresh: Fresh, ncode: np.ndarray, order: np.ndarray, state_le=None) -> Merged:
        """Merge the new rows (``order``: their ``(code, pos)`` order) into the state.

        All new rows come after all state rows in ``pos``, so within a key the
        state rows come first: the number of state rows with a code ``<=`` the
        new row's (``state_le``, see :func:`count_at_most`) gives every new
        row's merged index, O(R + m) scatters build the rest.
        """
        r, m = len(self), len(order)
        sorted_new = ncode[order]
        if r == 0:
            perm = order.astype(np.int64, copy=False)
            ins = np.arange(m, dtype=np.int64)
            code = sorted_new
        else:
            ins = state_le(sorted_new) if state_le is not None else np.searchsorted(scode, sorted_new, "right")
            ins += np.arange(m)
            state_at = np.searchsorted(sorted_new, scode, "left")
            state_at += np.arange(r)
            perm = np.empty(r + m, np.int64)
            perm[ins] = order + r
            perm[state_at] = np.arange(r)
            code = np.empty(r + m, np.int64)
            code[ins] = sorted_new
            code[state_at] = scode
        new_at = ins
        cat_pos, cat_ts = cat(self.pos, fresh.pos), cat(self.ts, fresh.ts)
        names = self.names or list(fresh.cols)
        cols = {c: cat(self.cols[c], fresh.cols[c]) if c in self.cols else fresh.cols[c] for c in names}
        out = Merged(code, cat_ts[perm], perm, new_at, cat_pos, cat_ts, cols)
        if self.counting:
            out.cat_cnt = cat(self.cnt, fresh.cnt)
            out.cnt = out.cat_cnt[perm]
        if self.partition is not None:
            self._partition_counters(out, fresh)
        return out

    def _partition_counters(self, out: Merged, fresh: Fresh) -> None:
        """Per-partition arrival counters ``pcnt`` and, if needed, eviction positions.

        A row is in its partition's window at position ``p`` iff the arrival
        that evicts it (the ``N``-th later one of the partition) has a greater
        position: ``evict`` holds that position (``INT64_MAX`` if not yet seen).
        """
        n_win = self.spec.size
        spart = self.cols[self.partition] if self.partition in self.cols and len(self) else _EMPTY
        npart = fresh.ts if self.partition == "ts" else fresh.cols[self.partition]
        spc, npc = dense_codes([spart, npart])
        parts = int(max(spc.max(initial=-1), npc.max(initial=-1))) + 1
        before = np.zeros(parts, np.int64)
        if len(spc):
            np.maximum.at(before, spc, self.pcnt + 1)
        by_part = np.argsort(npc, kind="stable")
        sorted_pc = npc[by_part]
        first = np.searchsorted(sorted_pc, np.arange(parts), "left")
        count = np.searchsorted(sorted_pc, np.arange(parts), "right") - first
        npcnt = np.empty(len(npc), np.int64)
        npcnt[by_part] = before[sorted_pc] + np.arange(len(npc)) - first[sorted_pc]
        out.cat_pcnt = cat(self.pcnt, npcnt)
        out.pcode = cat(spc, npc)
        out.pcount = before + count
        if self.partition != self.key:
            pc = out.pcode
            target = out.cat_pcnt + n_win
            seen = target < out.pcount[pc]
            j = first[pc] + np.where(seen, target - before[pc], 0)
            sorted_pos = fresh.pos[by_part]
            evict = np.full(len(pc), INT64_MAX, np.int64)
            evict[seen] = sorted_pos[j[seen]]
            out.evict = evict[out.perm]

    def retain(self, merged: Merged, max_ts: int) -> None:
        """Keep the merged rows a future arrival (``ts >= max_ts``) can still join."""
        spec = self.spec
        if self.partition is not None:
            keep_cat = merged.cat_pcnt >= merged.pcount[merged.pcode] - spec.size
            keep = keep_cat[merged.perm]
        elif self.counting:
            keep = merged.cnt >= self.arrivals - spec.size
        elif self.timed:
            keep = merged.ts >= max_ts - spec.length
        else:  # unbounded
            keep = None
        idx = merged.perm if keep is None else merged.perm[keep]
        self.pos, self.ts = merged.cat_pos[idx], merged.cat_ts[idx]
        self.cols = {c: v[idx] for c, v in merged.cat_cols.items()}
        if self.counting:
            self.cnt = merged.cat_cnt[idx]
        if self.partition is not None:
            self.pcnt = merged.cat_pcnt[idx]
