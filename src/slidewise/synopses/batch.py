"""Many queries' windows over the same pane partials answered in one pass (Golab's thesis, §8.3:
queries sharing a synopsis share its probes).

The queries of a shared synopsis (:mod:`slidewise.runtime.shared`) each ask,
per block, the value of an aggregate over their windows ``[lo[k], hi[k])`` of
the same pane partials. :class:`WindowBatch` collects those requests, and for
each (partial, synopsis, accumulator with its parameters) answers the distinct
windows of all of them at once — one synopsis probe and one
:meth:`~slidewise.operators.aggregates.base.Accumulator.value` per distinct
window, in row chunks of bounded size — then hands each request its rows.
Windows are independent rows, so each query's values equal its own pass.
"""

from __future__ import annotations

import numpy as np

from slidewise.synopses import values

__all__ = ["CHUNK_CELLS", "WindowBatch"]

#: most (windows x columns) cells of one synopsis pass (bounds the memory of a batch; a few MB stay in cache)
CHUNK_CELLS = 1 << 18


class WindowBatch:
    """:meth:`request` windows, :meth:`run` once, then :meth:`result` of each request (a windows x columns
    matrix), or its cells at given columns (:meth:`present`, :meth:`take`)."""

    def __init__(self, memo: dict | None = None):
        self.memo = {} if memo is None else memo
        self.asks: dict[tuple, list] = {}  # batch key -> [(accumulator, synopsis, partial), [(lo, hi), ...]]
        self.unique: dict[tuple, tuple] = {}  # batch key -> (values, null) of its distinct windows
        self.rows: dict[tuple, np.ndarray] = {}  # handle -> its windows' rows in those
        self.nonzero: dict[tuple, tuple] = {}  # batch key -> the non-zero cells of its distinct windows

    def request(self, acc, synopsis, partial: tuple, lo: np.ndarray, hi: np.ndarray) -> tuple:
        """Ask ``acc``'s value over the windows ``[lo, hi)`` of pane rows of ``partial`` via ``synopsis``
        (a function of :data:`slidewise.synopses.SYNOPSES`); returns the handle for :meth:`result`."""
        key = (id(partial), synopsis, acc.answer_key())
        entry = self.asks.setdefault(key, [(acc, synopsis, partial), []])
        entry[1].append((lo, hi))
        return key, len(entry[1]) - 1

    def run(self) -> None:
        for key, ((acc, synopsis, partial), windows) in self.asks.items():
            lo = np.concatenate([w[0] for w in windows]).astype(np.int64)
            hi = np.concatenate([w[1] for w in windows]).astype(np.int64)
            pair, inv = np.unique(lo * (int(hi.max(initial=0)) + 1) + hi, return_index=True, return_inverse=True)[1:]
            ulo, uhi = lo[pair], hi[pair]
            width = max(1, int(getattr(acc, "width", 0)), partial[0].shape[1])
            step = max(1, CHUNK_CELLS // width)
            parts = [values(synopsis, acc, partial, ulo[i : i + step], uhi[i : i + step], self.memo) for i in range(0, len(ulo), step)]
            vals = parts[0][0] if len(parts) == 1 else np.concatenate([p[0] for p in parts])
            nulls = [p[1] for p in parts]
            null = None
            if any(m is not None for m in nulls):
                null = nulls[0] if len(nulls) == 1 else np.concatenate([np.zeros(p[0].shape, bool) if m is None else m for p, m in zip(parts, nulls)])
            self.unique[key] = (vals, null)
            bounds = np.cumsum([0] + [len(w[0]) for w in windows])
            inv = inv.reshape(-1)
            for j in range(len(windows)):
                self.rows[key, j] = inv[bounds[j] : bounds[j + 1]]

    def result(self, handle: tuple) -> tuple:
        """The (values, null mask or None) of a request: rows = its windows, columns = the partial's."""
        vals, null = self.unique[handle[0]]
        rows = self.rows[handle]
        return _rows(vals, rows), None if null is None else _rows(null, rows)

    def present(self, handle: tuple) -> tuple[np.ndarray, np.ndarray]:
        """For a request of counts: how many non-zero cells each of its windows has, and their columns
        in order (found once per distinct window)."""
        key = handle[0]
        if key not in self.nonzero:
            vals = self.unique[key][0]
            nz = vals != 0
            per = np.count_nonzero(nz, axis=1)
            self.nonzero[key] = (per, np.concatenate([[0], np.cumsum(per)]), np.flatnonzero(nz) % max(vals.shape[1], 1))
        per, start, column = self.nonzero[key]
        rows = self.rows[handle]
        per_window = per[rows]
        firsts = start[rows] - (np.cumsum(per_window) - per_window)  # each window's first cell, less its first row
        return per_window, column[np.repeat(firsts, per_window) + np.arange(int(per_window.sum()))]

    def take(self, handle: tuple, per_window: np.ndarray, columns: np.ndarray) -> tuple:
        """The (values, null mask or None) of a request at the cells ``columns`` of its windows, ``per_window``
        of them in each window in order (as :meth:`present` gives)."""
        vals, null = self.unique[handle[0]]
        flat = np.repeat(self.rows[handle].astype(np.int64) * vals.shape[1], per_window) + columns
        return vals.reshape(-1).take(flat), None if null is None else null.reshape(-1).take(flat)


def _rows(x: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``x[rows]``; a view when ``rows`` is a run of consecutive rows."""
    n = len(rows)
    if n and int(rows[-1]) - int(rows[0]) == n - 1 and (n < 3 or bool(np.all(np.diff(rows) == 1))):
        return x[int(rows[0]) : int(rows[-1]) + 1]
    return x[rows]
