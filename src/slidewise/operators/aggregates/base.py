"""The accumulator interface of :mod:`slidewise.operators.aggregates`."""

from __future__ import annotations

import numpy as np

#: a pane partial: one (panes x groups) array per state component
State = tuple


class Accumulator:
    """One aggregate over pane partials; ``dtype`` is the argument's numpy dtype (None for ``COUNT(*)``)."""

    #: True if :meth:`subtract` exists (the running synopsis applies)
    subtractable = False
    #: accumulators with equal keys over one attribute have equal pane partials (computed once when shared)
    share_key = ""
    #: True if :meth:`value` is cell by cell (states of any shape, e.g. 1-D cells: :func:`slidewise.synopses.cells`)
    cellwise = False
    #: True if :meth:`runs` evaluates cells from their values (the pane partial is built only if a cell needs it)
    tuplewise = False

    def __init__(self, dtype: np.dtype | None = None):
        self.dtype = None if dtype is None else np.dtype(dtype)

    def partial(self, values: np.ndarray | None, pane_codes: np.ndarray, group_codes: np.ndarray, shape: tuple[int, int]) -> State:
        """The pane partials of tuples with ``values`` in pane ``pane_codes`` of group ``group_codes``."""
        raise NotImplementedError

    def merge(self, a: State, b: State) -> State:
        """The partial of the union of two disjoint sets of tuples."""
        raise NotImplementedError

    def subtract(self, a: State, b: State) -> State:
        """The partial of ``a``'s tuples minus ``b``'s (``b`` a subset of ``a``); subtractable only."""
        raise NotImplementedError(f"{type(self).__name__} is not subtractable")

    def prefix(self, state: State) -> State:
        """Running merges down the panes, one row longer: row i = merge of panes before i (subtractable only)."""
        return tuple(running_sum(x) for x in state)

    def identity(self, shape: tuple[int, ...]) -> State:
        """The partial of no tuples."""
        raise NotImplementedError

    def value(self, state: State) -> tuple[np.ndarray, np.ndarray | None]:
        """The aggregate per cell and a mask of cells without values (null), or None."""
        raise NotImplementedError

    def runs(self, values: np.ndarray, n: np.ndarray) -> np.ndarray | None:
        """The value of cells from their values (:mod:`slidewise.synopses.tuples`; none null): row r holds
        the ``n[r] >= 1`` values of a cell, then copies of its last one (rows of one value: each cell's first,
        whatever ``n``; those of more values are asked again). None: no such evaluation."""
        return None

    #: optional ``ranges(values, start, n, derived)``: the values of the cells (none null) from their runs
    #: ``values[start[c] : start[c] + n[c]]`` of the tuples in (group, clock) order and the cells left to the
    #: synopsis (indices; their values are overwritten), or None (then :meth:`runs`); ``derived``: a dict
    #: kept per block and value column for what it builds from ``values``
    ranges = None

    def answer_key(self) -> tuple:
        """Equal for accumulators whose :meth:`value` of equal states is equal (their type and parameters)."""
        return (type(self), self.dtype)

    def adopt(self, other: Accumulator) -> None:
        """Reuse the partial ``other`` (same :attr:`share_key`) computed: take what :meth:`value` needs of it."""


def running_sum(x: np.ndarray) -> np.ndarray:
    """``np.cumsum(x, axis=0)`` after a zero row; row by row when rows are wide (numpy's axis-0 scan
    is strided there, about 8x slower)."""
    if x.ndim < 2 or x.shape[1] < 64:
        out = np.zeros((len(x) + 1,) + x.shape[1:], x.dtype)
        np.cumsum(x, axis=0, out=out[1:])
        return out
    out = np.empty((len(x) + 1,) + x.shape[1:], x.dtype)
    out[0] = 0
    for i in range(len(x)):
        np.add(out[i], x[i], out=out[i + 1])
    return out


def not_null(values: np.ndarray) -> np.ndarray | None:
    """Mask of non-null values (NaN is null), or None when every value counts."""
    if values.dtype.kind == "f":
        ok = ~np.isnan(values)
        return None if ok.all() else ok
    return None


def flat_index(pane_codes: np.ndarray, group_codes: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    return pane_codes * shape[1] + group_codes


#: cells per tuple above which a partial is built from its occupied cells only (fine panes of sparse groups,
#: e.g. a shared grid of 1-unit panes over (src, dst) pairs): a dense count costs in proportion to the cells
SPARSE = 32


def _sparse(flat: np.ndarray, size: int) -> bool:
    return size > SPARSE * (len(flat) + 1)


def counts(flat: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """Tuples per cell, int32 (a block holds fewer than 2**31 tuples; half the memory traffic)."""
    size = shape[0] * shape[1]
    if _sparse(flat, size):
        cell, n = np.unique(flat, return_counts=True)
        out = np.zeros(size, np.int32)
        out[cell] = n
        return out.reshape(shape)
    return np.bincount(flat, minlength=size).astype(np.int32).reshape(shape)


def sums(flat: np.ndarray, weights: np.ndarray, size: int) -> np.ndarray:
    """float64 sum of ``weights`` per cell (``size`` cells), as ``np.bincount(flat, weights, size)``."""
    if _sparse(flat, size):
        cell, at = np.unique(flat, return_inverse=True)
        out = np.zeros(size)
        out[cell] = np.bincount(at.reshape(-1), weights=weights, minlength=len(cell))
        return out
    return np.bincount(flat, weights=weights, minlength=size)


def cumulative_counts(flat: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """:func:`counts` cumulated along each row, int32; sparse cells: each row's steps repeated between its
    occupied cells (a dense running sum costs several ns per cell)."""
    rows, width = shape
    if not _sparse(flat, rows * width) or not width:
        return np.cumsum(counts(flat, shape), axis=1, dtype=np.int32)
    cell, n = np.unique(flat, return_counts=True)
    run = np.concatenate([[0], np.cumsum(n)])
    starts = np.union1d(cell, np.arange(rows, dtype=np.int64) * width)  # where each row's value changes
    value = run[np.searchsorted(cell, starts, "right")] - run[np.searchsorted(cell, starts // width * width, "left")]
    return np.repeat(value.astype(np.int32), np.diff(starts, append=rows * width)).reshape(shape)


class Counts(Accumulator):
    """An accumulator whose state is one int32 count per cell: counts add and subtract."""

    subtractable = True
    share_key = "count"

    def merge(self, a: State, b: State) -> State:
        return (a[0] + b[0],)

    def subtract(self, a: State, b: State) -> State:
        return (a[0] - b[0],)

    def identity(self, shape) -> State:
        return (np.zeros(shape, np.int32),)
