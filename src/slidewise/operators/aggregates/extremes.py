"""MIN and MAX: distributive, not subtractable (their partials only merge)."""

from __future__ import annotations

import numpy as np

from slidewise import kernels
from slidewise.operators.aggregates.base import Accumulator, State, counts, flat_index, not_null

#: the sparse table of :meth:`Min.ranges` has levels 0 .. LEVELS ((LEVELS + 1) values per tuple of the block)
LEVELS = 5


class Min(Accumulator):
    """``MIN(x)`` of numeric ``x``: (extreme, count of values); keeps the input type; null if no value."""

    _ufunc = np.minimum
    share_key = "min"
    cellwise = True
    tuplewise = True
    #: merging overlapping partials keeps the extreme (the interval synopsis probes two intervals per window)
    idempotent = True

    def _work(self) -> np.dtype:
        return np.dtype(np.float64) if self.dtype.kind == "f" else np.dtype(np.int64)

    def _fill(self):
        work = self._work()
        big = np.inf if work.kind == "f" else np.iinfo(work).max
        return big if self._ufunc is np.minimum else -big

    def partial(self, values, pane_codes, group_codes, shape) -> State:
        flat = flat_index(pane_codes, group_codes, shape)
        ok = not_null(values)
        if ok is not None:
            flat, values = flat[ok], values[ok]
        ext = np.full(shape[0] * shape[1], self._fill(), self._work())
        self._ufunc.at(ext, flat, values.astype(self._work()))
        return (ext.reshape(shape), counts(flat, shape))

    def merge(self, a, b):
        return (self._ufunc(a[0], b[0]), a[1] + b[1])

    def runs(self, values, n):
        ext = values[:, 0] if values.shape[1] == 1 else self._ufunc.reduce(values, axis=1)
        return self.value((ext.astype(self._work(), copy=False), n))[0]

    def ranges(self, values, start, n, derived):  # type: ignore[override]
        """Two probes of a sparse table per cell (``table[k, i]``: the extreme of ``values[i : i + 2**k]``, k up
        to :data:`LEVELS`); a longer cell adds the whole blocks of ``2**LEVELS`` values it spans, two probes of
        a sparse table of the blocks' extremes; with the compiled :func:`slidewise.kernels.extreme_runs`, each
        run's values compared in turn instead."""
        work = values.astype(self._work(), copy=False)
        scan = kernels.kernel("extreme_runs", len(start))
        if scan is not None:
            return self.value((scan(work, start, n, self._ufunc is np.maximum), n))[0], np.zeros(0, np.int64)
        level = (np.frexp(n)[1] - 1).astype(np.int64)  # 2**level <= n < 2**(level + 1)
        long = np.flatnonzero(level > LEVELS)
        np.minimum(level, LEVELS, out=level)
        ext = _probe(self._ufunc, _table(self._ufunc, work, int(level.max()) if len(level) else 0, derived, "values"), start, n, level)
        if len(long):  # its first and last 2**LEVELS values, then the blocks between
            size = 1 << LEVELS
            first, stop = -(-start[long] // size), (start[long] + n[long]) // size
            count = stop - first  # >= 1: the cell holds at least 2 * size values
            level = (np.frexp(count)[1] - 1).astype(np.int64)
            key = ("blocks", self._ufunc.__name__, work.dtype.str)
            blocks = derived.get(key)
            if blocks is None:
                blocks = derived[key] = self._ufunc.reduceat(work, np.arange(0, len(work), size))
            table = _table(self._ufunc, blocks, int(level.max()), derived, "blocks")
            ext[long] = self._ufunc(ext[long], _probe(self._ufunc, table, first, count, level))
        return self.value((ext, n))[0], np.zeros(0, np.int64)

    def identity(self, shape):
        return (np.full(shape, self._fill(), self._work()), np.zeros(shape, np.int32))

    def value(self, state):
        ext, n = state
        empty = n == 0
        out = ext.astype(bool) if self.dtype.kind == "b" else ext
        return out, (empty if empty.any() else None)


class Max(Min):
    """``MAX(x)`` of numeric ``x``, as :class:`Min`."""

    _ufunc = np.maximum
    share_key = "max"


def _probe(ufunc, table: np.ndarray, start: np.ndarray, n: np.ndarray, level: np.ndarray) -> np.ndarray:
    """The extreme of ``[start, start + n)`` from the sparse ``table`` rows ``level`` (``2**level <= n``): its
    first ``2**level`` entries, then its last."""
    flat = table.reshape(-1)
    at = level * table.shape[1]
    at += start
    ext = flat.take(at)
    at += n
    at -= np.left_shift(1, level)
    return ufunc(ext, flat.take(at), out=ext)


def _table(ufunc, values: np.ndarray, levels: int, derived: dict, name: str) -> np.ndarray:
    """The sparse table of ``values`` up to level ``levels`` (kept in ``derived`` under ``name``): row k holds
    the extreme of the ``2**k`` values from each position (past the end: its row k − 1, never probed)."""
    key = ("sparse", name, ufunc.__name__, values.dtype.str)
    table = derived.get(key)
    if table is None or len(table) <= levels:
        table = np.empty((levels + 1, len(values)), values.dtype)
        table[0] = values
        for lv in range(1, levels + 1):
            half = 1 << (lv - 1)
            table[lv, -half:] = table[lv - 1, -half:]
            ufunc(table[lv - 1, :-half], table[lv - 1, half:], out=table[lv, :-half])
        derived[key] = table
    return table
