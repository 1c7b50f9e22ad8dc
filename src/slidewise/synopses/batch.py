"""Many queries' windows over the same pane partials answered in one pass (Golab's thesis, §8.3:
queries sharing a synopsis share its probes).

The queries of a shared synopsis (:mod:`slidewise.runtime.shared`) each ask,
per block, the value of an aggregate over their windows ``[lo[k], hi[k])`` of
the same pane partials. :class:`WindowBatch` collects those requests, and for
each (partial, synopsis, accumulator with its parameters) answers the distinct
windows of all of them at once — one synopsis probe and one
:meth:`~slidewise.operators.aggregates.base.Accumulator.value` per distinct
window, in row chunks of bounded size — then hands each request its rows.
When a request's rows are the non-zero cells of a count request over the same
windows (RSTREAM without HAVING), its values are computed at those cells only
(:func:`slidewise.synopses.cells`: in proportion to the non-empty (window, group)
cells, not windows × groups), in the requests' order.
Windows are independent rows, so each query's values equal its own pass.
"""

from __future__ import annotations

import numpy as np

from slidewise import kernels
from slidewise.synopses import cells as cells_of
from slidewise.synopses import values
from slidewise.synopses.running import memoized
from slidewise.synopses.tuples import built

__all__ = ["CHUNK_CELLS", "WindowBatch"]

#: most (windows x columns) cells of one synopsis pass (bounds the memory of a batch; a few MB stay in cache)
CHUNK_CELLS = 1 << 18


class WindowBatch:
    """:meth:`request` windows, then :meth:`result` of each request (a windows x columns
    matrix), or its cells at the non-zero cells of a count request (:meth:`present`, :meth:`take`: several
    requests of one batch key at once)."""

    def __init__(self, memo: dict | None = None):
        self.memo = {} if memo is None else memo
        self.asks: dict[tuple, list] = {}  # batch key -> [(accumulator, synopsis, partial), [(lo, hi), ...]]
        self.windows: dict[tuple, tuple] = {}  # batch key -> its distinct windows (lo, hi), in the order first asked
        self.unique: dict[tuple, tuple] = {}  # batch key -> (values, null) of its distinct windows (on demand)
        self.rows: dict[tuple, np.ndarray] = {}  # handle -> its windows' rows in those
        self.nonzero: dict[tuple, tuple] = {}  # batch key -> the non-zero cells of its distinct windows

    def request(self, acc, synopsis, partial: tuple, lo: np.ndarray, hi: np.ndarray) -> tuple:
        """Ask ``acc``'s value over the windows ``[lo, hi)`` of pane rows of ``partial`` via ``synopsis``
        (a function of :data:`slidewise.synopses.SYNOPSES`); returns the handle for :meth:`result`."""
        key = (id(partial), synopsis, acc.answer_key())
        entry = self.asks.setdefault(key, [(acc, synopsis, partial), []])
        entry[1].append((lo, hi))
        return key, len(entry[1]) - 1

    def _distinct(self, key: tuple) -> tuple:
        """A batch key's distinct windows (lo, hi) in the order the requests first ask them (a request's new
        windows are consecutive rows), and each request's rows in them (found when first read: values
        read at cells need none)."""
        if key not in self.windows:
            windows = self.asks[key][1]
            lo = np.concatenate([w[0] for w in windows]).astype(np.int64)
            hi = np.concatenate([w[1] for w in windows]).astype(np.int64)
            _, pair, inv = np.unique((lo << 32) | hi, return_index=True, return_inverse=True)  # pane rows < 2**31
            order = np.argsort(pair, kind="stable")
            rank = np.empty_like(order)
            rank[order] = np.arange(len(order))
            pair = pair[order]
            self.windows[key] = (lo[pair], hi[pair])
            bounds = np.cumsum([0] + [len(w[0]) for w in windows])
            inv = rank[inv.reshape(-1)]
            for j in range(len(windows)):
                self.rows[key, j] = inv[bounds[j] : bounds[j + 1]]
        return self.windows[key]

    def _dense(self, key: tuple) -> tuple:
        """The (values, null) of a batch key's distinct windows (windows x columns), in row chunks."""
        if key not in self.unique:
            acc, synopsis, partial = self.asks[key][0]
            partial = built(partial, acc)
            ulo, uhi = self._distinct(key)
            width = max(1, int(getattr(acc, "width", 0)), partial[0].shape[1])
            step = max(1, CHUNK_CELLS // width)
            parts = [values(synopsis, acc, partial, ulo[i : i + step], uhi[i : i + step], self.memo) for i in range(0, len(ulo), step)]
            vals = parts[0][0] if len(parts) == 1 else np.concatenate([p[0] for p in parts])
            nulls = [p[1] for p in parts]
            null = None
            if any(m is not None for m in nulls):
                null = nulls[0] if len(nulls) == 1 else np.concatenate([np.zeros(p[0].shape, bool) if m is None else m for p, m in zip(parts, nulls)])
            self.unique[key] = (vals, null)
        return self.unique[key]

    def result(self, handle: tuple) -> tuple:
        """The (values, null mask or None) of a request: rows = its windows, columns = the partial's."""
        vals, null = self._dense(handle[0])
        rows = self.rows[handle]  # (found by _dense)
        return _rows(vals, rows), None if null is None else _rows(null, rows)

    def _nonzero(self, key: tuple) -> tuple:
        """For a batch key of counts: the non-zero cells of each distinct window (how many, the first's
        index, their columns in order)."""
        if key not in self.nonzero:
            vals = self._dense(key)[0]
            find = kernels.kernel("nonzero_cells", vals.size, imports=False)
            if find is not None:
                per, column = find(vals)
            else:
                nz = vals != 0
                per = np.count_nonzero(nz, axis=1)
                row_start = np.repeat(np.arange(len(per), dtype=np.int64) * vals.shape[1], per)  # (not a division: slower)
                column = np.flatnonzero(nz) - row_start
            self.nonzero[key] = (per, np.concatenate([[0], np.cumsum(per)]), column)
        return self.nonzero[key]

    def present(self, handles: list[tuple]) -> tuple[list[np.ndarray], np.ndarray]:
        """For requests of counts (one batch key): how many non-zero cells each window of each request has,
        and their columns in order, all requests' concatenated (found once per distinct window)."""
        per, start, column = self._nonzero(handles[0][0])
        rows = [self.rows[h] for h in handles]
        per_windows = [per[r] for r in rows]
        parts = [column[start[r[0]] : start[r[-1] + 1]] if _consecutive(r) else column[_ranges(start[r], per[r])] for r in rows]
        return per_windows, parts[0] if len(parts) == 1 else np.concatenate(parts)

    def take(self, handles: list[tuple], per_windows: list[np.ndarray], columns: np.ndarray, count: tuple | None = None) -> tuple:
        """The (values, null mask or None) of requests of one batch key at the cells ``columns`` of their
        windows, ``per_windows[i]`` of them in each window of request i in order (as :meth:`present` gives
        for the requests of the count key ``count``), concatenated. With ``count`` (requests over the same
        windows and columns, every cell non-empty), values not yet computed for whole windows are computed
        at those cells only (:func:`slidewise.synopses.cells`: in request order, a window asked twice
        computed twice; cells of few tuples from the tuples, with the count's running merges)."""
        key = handles[0][0]
        if count is not None and key not in self.unique:
            acc, synopsis, partial = self.asks[key][0]
            windows = [self.asks[key][1][h[1]] for h in handles]
            per = per_windows[0] if len(per_windows) == 1 else np.concatenate(per_windows)
            lo = np.repeat(np.concatenate([w[0] for w in windows]), per)
            hi = np.repeat(np.concatenate([w[1] for w in windows]), per)
            cacc, _, cpart = self.asks[count][0]
            run = memoized(self.memo, "running", cpart, cacc.prefix)[0]  # (built for the counts' values)
            got = cells_of(synopsis, acc, partial, lo, hi, columns, self.memo, run)
            if got is not None:
                return got
        vals, null = self._dense(key)
        rows = self.rows[handles[0]] if len(handles) == 1 else np.concatenate([self.rows[h] for h in handles])
        per = per_windows[0] if len(per_windows) == 1 else np.concatenate(per_windows)
        flat = np.repeat(rows.astype(np.int64) * vals.shape[1], per)
        flat += columns
        return vals.reshape(-1).take(flat), None if null is None else null.reshape(-1).take(flat)


def _ranges(first: np.ndarray, length: np.ndarray) -> np.ndarray:
    """The indices ``first[k] .. first[k] + length[k] − 1`` of every k, concatenated."""
    total = int(length.sum())
    return np.repeat(first - (np.cumsum(length) - length), length) + np.arange(total)


def _consecutive(rows: np.ndarray) -> bool:
    """Whether ``rows`` is a (non-empty) run of consecutive rows."""
    n = len(rows)
    return bool(n and int(rows[-1]) - int(rows[0]) == n - 1 and (n < 3 or np.all(np.diff(rows) == 1)))


def _rows(x: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``x[rows]``; a view when ``rows`` is a run of consecutive rows."""
    if _consecutive(rows):
        return x[int(rows[0]) : int(rows[-1]) + 1]
    return x[rows]
