"""MIN and MAX: distributive, not subtractable (their partials only merge)."""

from __future__ import annotations

import numpy as np

from slidewise.operators.aggregates.base import Accumulator, State, counts, flat_index, not_null


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
