"""COUNT, SUM and AVG: subtractable aggregates (their partials add and subtract)."""

from __future__ import annotations

import numpy as np

from slidewise.operators.aggregates.base import Accumulator, Counts, State, counts, flat_index, not_null, sums

#: integer sums are added as float64 weights when every partial sum stays exact
_EXACT = 2**53


class Count(Counts):
    """``COUNT(*)`` (``dtype`` None) or ``COUNT(x)`` (non-null values); int32 cells, int64 values."""

    cellwise = True
    tuplewise = True

    def partial(self, values, pane_codes, group_codes, shape) -> State:
        flat = flat_index(pane_codes, group_codes, shape)
        if values is not None:
            ok = not_null(values)
            if ok is not None:
                flat = flat[ok]
        return (counts(flat, shape),)

    def value(self, state):
        return state[0].astype(np.int64), None

    def runs(self, values, n):
        return n.astype(np.int64)

    def ranges(self, values, start, n, derived):  # type: ignore[override]
        return n.astype(np.int64), np.zeros(0, np.int64)  # (no row of values read)


class Sum(Accumulator):
    """``SUM(x)``: (sum, count of values); int64 for integer and boolean input, float64 else; null if no value."""

    subtractable = True
    cellwise = True
    share_key = "sum"  # AVG too

    @property
    def tuplewise(self) -> bool:  # type: ignore[override]
        return self.dtype.kind != "f"  # float sums: added in the synopsis's order

    def _type(self) -> np.dtype:
        return np.dtype(np.float64) if self.dtype.kind == "f" else np.dtype(np.int64)

    def partial(self, values, pane_codes, group_codes, shape) -> State:
        flat = flat_index(pane_codes, group_codes, shape)
        ok = not_null(values)
        if ok is not None:
            flat, values = flat[ok], values[ok]
        size = shape[0] * shape[1]
        n = counts(flat, shape)
        kind = self._type()
        if kind.kind == "f" or not len(values) or int(np.abs(values.astype(np.int64)).max()) * len(values) < _EXACT:
            s = sums(flat, values.astype(np.float64), size).reshape(shape)
            return (s.astype(kind), n)
        s = np.zeros(size, np.int64)
        np.add.at(s, flat, values.astype(np.int64))
        return (s.reshape(shape), n)

    def runs(self, values, n):
        if self.dtype.kind == "f":  # float sums: added in the synopsis's order
            return None
        v = values.astype(np.int64, copy=False)
        s = v[:, 0] if v.shape[1] == 1 else v.sum(axis=1) - (v.shape[1] - n) * v[:, -1]
        return self.value((s, n))[0]

    def ranges(self, values, start, n, derived):  # type: ignore[override]
        """Differences of the values' prefix sums (int64, exact: a wrapped prefix subtracts back)."""
        if self.dtype.kind == "f":  # float sums: added in the synopsis's order
            return None
        prefix = derived.get("prefix sums")
        if prefix is None:
            prefix = derived["prefix sums"] = np.concatenate([np.zeros(1, np.int64), np.cumsum(values.astype(np.int64, copy=False))])
        end = start + n
        return self.value((prefix.take(end) - prefix.take(start), n))[0], np.zeros(0, np.int64)

    def merge(self, a, b):
        return (a[0] + b[0], a[1] + b[1])

    def subtract(self, a, b):
        return (a[0] - b[0], a[1] - b[1])

    def identity(self, shape):
        return (np.zeros(shape, self._type()), np.zeros(shape, np.int32))

    def value(self, state):
        s, n = state
        empty = n == 0
        return s, (empty if empty.any() else None)


class Avg(Sum):
    """``AVG(x)``: SUM / COUNT of the values as float64; null if no value."""

    def value(self, state):
        s, n = state
        empty = n == 0
        with np.errstate(invalid="ignore", divide="ignore"):
            out = s.astype(np.float64) / np.where(empty, 1, n)
        return out, (empty if empty.any() else None)
