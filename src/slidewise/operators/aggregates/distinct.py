"""COUNT / SUM / AVG (DISTINCT x): frequency counts per group and value, which subtract.

Golab's thesis (§2.3.4) stores frequency counts per interval for holistic
aggregates such as COUNT DISTINCT; counts are subtractable, so here they go
through the running synopsis like COUNT. The partial of a block has one
column per (group, value) pair present in the block; :meth:`Distinct.value`
folds the pairs with a positive count back into their groups.
MIN / MAX (DISTINCT x) equal MIN / MAX and use those accumulators.
"""

from __future__ import annotations

import numpy as np

from slidewise.operators.aggregates.base import Counts, State, counts, flat_index, not_null


class Distinct(Counts):
    """``func(DISTINCT x)`` for ``func`` in count, sum, avg; the partial's columns are (group, value) pairs."""

    share_key = "frequencies"  # MEDIAN / QUANTILE too

    def __init__(self, dtype: np.dtype | None = None, func: str = "count"):
        super().__init__(dtype)
        self.func = func
        self.pair_group: np.ndarray = np.zeros(0, np.int64)  # each pair's group (set by partial / pairs)
        self.pair_value: np.ndarray = np.zeros(0)
        self.groups = self.width = 0

    def partial(self, values, pane_codes, group_codes, shape) -> State:
        return (counts(*self.pair_cells(values, pane_codes, group_codes, shape)),)

    def pair_cells(self, values, pane_codes, group_codes, shape) -> tuple[np.ndarray, tuple[int, int]]:
        """Each value's cell (pane, pair) as a flat index into the (panes x pairs) shape of the partial;
        sets the pairs (:meth:`pairs`)."""
        ok = not_null(values)
        if ok is not None:
            values, pane_codes, group_codes = values[ok], pane_codes[ok], group_codes[ok]
        uniq, vcode = np.unique(values, return_inverse=True)
        pairs, pcode = np.unique(group_codes * max(len(uniq), 1) + vcode.reshape(-1), return_inverse=True)
        self.pair_group = pairs // max(len(uniq), 1)
        self.pair_value = uniq[pairs % max(len(uniq), 1)] if len(uniq) else uniq
        self.groups, self.width = shape[1], len(pairs)
        cells = (shape[0], len(pairs))
        return flat_index(pane_codes, pcode.reshape(-1), cells), cells

    def answer_key(self) -> tuple:
        return (*super().answer_key(), self.func)

    def from_counts(self, counts: np.ndarray) -> tuple:
        """The state of the (panes x pairs) frequency ``counts`` (what :meth:`partial` makes of them)."""
        return (counts,)

    def adopt(self, other) -> None:
        self.pairs(other.pair_group, other.pair_value, other.groups)

    def pairs(self, group: np.ndarray, value: np.ndarray, groups: int) -> None:
        """The columns of the states to come: pairs (``group``, ``value``), group-major, values ascending."""
        self.pair_group, self.pair_value, self.groups, self.width = group, value, groups, len(group)

    def _per_group(self, weights: np.ndarray) -> np.ndarray:
        """Row sums of ``weights`` (windows x pairs) over each group's pairs: windows x groups."""
        bounds = np.searchsorted(self.pair_group, np.arange(self.groups + 1))
        run = np.zeros((weights.shape[0], weights.shape[1] + 1), weights.dtype)
        np.cumsum(weights, axis=1, out=run[:, 1:])
        return run[:, bounds[1:]] - run[:, bounds[:-1]]

    def value(self, state):
        present = state[0] > 0
        n = self._per_group(present.astype(np.int64))
        if self.func == "count":
            return n, None
        kind = np.float64 if self.dtype.kind == "f" or self.func == "avg" else np.int64
        s = self._per_group(np.where(present, self.pair_value.astype(kind), 0).astype(kind))
        empty = n == 0
        if self.func == "avg":
            with np.errstate(invalid="ignore", divide="ignore"):
                s = s / np.where(empty, 1, n)
        return s, (empty if empty.any() else None)
