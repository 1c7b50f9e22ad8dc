"""A block's tuples by group: the cells of sparse groups evaluated from their own tuples.

When groups are many and windows short (one ``(src, dst)`` pair per flow), most
non-empty (window, group) cells hold one or a few tuples. Sorted by (group,
clock), the tuples of a cell — a window of pane rows ``[lo, hi)`` and a group —
are one run: it starts at the group's first tuple plus the group's tuples in
the panes before ``lo``, and is as long as the cell's count; both are read from
the ``COUNT(*)`` running merges (:mod:`slidewise.synopses.running`) that find
the non-empty cells anyway. A run of at most :data:`LONGEST` tuples (or the accumulator's ``longest_run``) is
evaluated from its values (:meth:`~slidewise.operators.aggregates.base.Accumulator.runs`:
the extreme, the sum, the order statistics), without probing pane partials;
longer ones through their synopsis (:func:`slidewise.synopses.cells`). An accumulator with
``ranges(values, start, n, derived)`` evaluates the cells at once from their runs ``values[start : start + n]``
(prefix sums, a sparse table of extremes built once per block and column in ``derived``).
"""

from __future__ import annotations

import numpy as np

from slidewise import kernels

__all__ = ["LONGEST", "Deferred", "Tuples", "attach", "built", "partial", "runs"]

#: cells of at most this many tuples are evaluated from their tuples (rows of up to this many values), unless
#: the accumulator says otherwise (``acc.longest_run``)
LONGEST = 32


class Tuples:
    """The tuples of a block in (group, clock) order: ``groups`` are their group codes (``width`` groups), in
    clock order."""

    def __init__(self, groups: np.ndarray, width: int):
        self.groups, self.width = groups, width
        self.order: np.ndarray | None = None  # sorted when first read
        self.first = np.zeros(0, np.int64)  # each group's first tuple in that order
        # id of a column -> (the column, its values in that order); the column is held so that its id is not reused
        self.sorted: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.derived: dict[int, tuple[np.ndarray, dict]] = {}  # id of a column -> (it, what accumulators derive from it)

    def values(self, column: np.ndarray) -> np.ndarray:
        """``column`` of the tuples in (group, clock) order."""
        if self.order is None:
            self.order = np.argsort(self.groups, kind="stable")
            self.first = np.concatenate([[0], np.cumsum(np.bincount(self.groups, minlength=self.width))]).astype(np.int64)
        return _held(self.sorted, column, lambda: column[self.order])

    def derived_of(self, column: np.ndarray) -> dict:
        """What accumulators derive from ``column``'s values in this order (``ranges``' memo)."""
        return _held(self.derived, column, dict)


def _held(cache: dict, column: np.ndarray, make):
    """``cache``'s entry for ``column`` (made by ``make()`` if missing): keyed by its id, holding the column
    so that the id is not reused meanwhile, and checked to be it."""
    got = cache.get(id(column))
    if got is None or got[0] is not column:
        got = cache[id(column)] = (column, make())
    return got[1]


def attach(memo: dict, partial, tuples: Tuples, column: np.ndarray) -> bool:
    """Let :func:`runs` read the cells of ``partial`` (built from ``column`` of the tuples ``tuples``) from the
    tuples; not when a value is null (NaN): a cell's count is then not its number of values."""
    if column.dtype.kind == "f" and bool(np.isnan(column).any()):
        return False
    memo["tuples", id(partial)] = (partial, tuples, column)  # the partial held: its id is not reused meanwhile
    return True


class Deferred:
    """A pane partial built when first read (:func:`built`): while every cell asked is read from the
    tuples, none is built."""

    def __init__(self, acc, build):
        self.acc, self._build = acc, build
        self.state: tuple | None = None

    def build(self, acc=None) -> tuple:
        """The partial (built once); ``acc`` (sharing it) takes what its values need of it."""
        if self.state is None:
            self.state = self._build()
        if acc is not None and acc is not self.acc:
            acc.adopt(self.acc)
        return self.state

    @property
    def nbytes(self) -> int:
        return 0 if self.state is None else sum(x.nbytes for x in self.state)


def built(partial, acc=None) -> tuple:
    """The state of a partial, :class:`Deferred` or not (``acc``: the accumulator reading it)."""
    return partial.build(acc) if isinstance(partial, Deferred) else partial


def partial(memo: dict, tuples: Tuples, acc, column: np.ndarray, build):
    """``build()`` (``acc``'s partial of ``column`` of the tuples ``tuples``), with the tuples attached; deferred
    (:class:`Deferred`) when ``acc`` evaluates cells from their tuples (``acc.tuplewise``)."""
    if not getattr(acc, "tuplewise", False):
        st = build()
        attach(memo, st, tuples, column)
        return st
    st = Deferred(acc, build)
    return st if attach(memo, st, tuples, column) else st.build()


def runs(acc, partial: tuple, memo: dict, run: np.ndarray, lo: np.ndarray, hi: np.ndarray, col: np.ndarray) -> tuple | None:
    """``acc``'s values at the cells ``(window [lo[c], hi[c]) of pane rows, group col[c])`` of ``partial`` from
    their tuples (``run``: the ``COUNT(*)`` running merges of the same pane rows and groups; no cell empty):
    the values (None if every cell is long; not null) and the cells longer than :data:`LONGEST`, left for
    the synopsis (indices). None when no tuples are attached to ``partial`` (:func:`attach`) or ``acc``
    has no evaluation from them."""
    got = memo.get(("tuples", id(partial)))
    if got is None or got[0] is not partial:
        return None
    _, tuples, column = got
    width = run.shape[1]
    flat = run.reshape(-1)
    values = tuples.values(column)
    bounds = kernels.kernel("run_bounds", len(lo))
    if bounds is not None:
        start, n = bounds(flat, width, tuples.first, lo, hi, col)
    else:
        at = lo * width  # (in place: one array of cells less to allocate per step)
        at += col
        before = flat.take(at)
        np.multiply(hi, width, out=at)
        at += col
        n = flat.take(at)
        n -= before
        start = tuples.first.take(col)
        start += before
    ranges = getattr(acc, "ranges", None)
    got = None if ranges is None else ranges(values, start, n, tuples.derived_of(column))
    if got is not None:
        return got
    # every cell as if it held one value (most do), then the others again from rows of 2, 4, ... values
    out = acc.runs(values.take(start)[:, None], n)
    if out is None:
        return None
    more = np.flatnonzero(n != 1)
    if not len(more):
        return out, more
    size = np.frexp(n[more] - 1)[1].astype(np.int8)  # rows of 2**size values: 2, 4, ...
    size[n[more] > getattr(acc, "longest_run", LONGEST)] = 0
    order = more[np.argsort(size, kind="stable")]  # (a radix sort of bytes) cells by their rows' size
    bounds = np.cumsum(np.bincount(size, minlength=2))  # bounds[s]: the end of size s
    for s in range(1, len(bounds)):
        at = order[bounds[s - 1] : bounds[s]]
        if len(at):
            first = start[at]
            index = first[:, None] + np.arange(1 << s)
            np.minimum(index, (first + n[at] - 1)[:, None], out=index)  # each row's values, its last repeated
            out[at] = acc.runs(values.take(index), n[at])
    return out, order[: bounds[0]]
