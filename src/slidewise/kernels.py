"""Compiled loops for the hot spots numpy does not vectorise well (optional: the ``fast`` extra, numba).

Each kernel here is the inner loop of one existing code path, as plain Python over
arrays that numba compiles (``cache=True``: compiled once per machine, loaded from the
cache by later processes). :func:`kernel` is the one place that decides whether a
kernel runs: it returns the compiled function, or None, and the caller then takes its
numpy path (the same answers). None when numba is not importable, when the environment
variable ``SLIDEWISE_NO_NUMBA`` is set (to anything but ``""`` or ``0``; read at each call), or
while the work is below :data:`MIN_WORK` elements and the kernel is not loaded yet (importing
numba and loading the kernels take 0.5–0.8 s once per process: a small run does not pay it).

* :func:`nonzero_cells` — the non-zero cells of a (windows × groups) matrix of counts,
  row by row (the cells a shared synopsis answers, :mod:`slidewise.synopses.batch`); used once another
  kernel has imported numba: its numpy path takes 0.22-0.27 s per 100M cells against the kernel's
  0.08-0.09 s, so a run of counts alone (``bench aggregation``: 100M cells) would lose the import's time;
* :func:`run_bounds` — each cell's run of tuples from the ``COUNT(*)`` running merges
  (:mod:`slidewise.synopses.tuples`);
* :func:`extreme_runs` — the extreme of each cell from its run of tuples
  (:meth:`slidewise.operators.aggregates.extremes.Min.ranges`);
* :func:`quantile_runs` — the quantile of each cell from its run of tuples (sorted if short, else by selection)
  (:meth:`slidewise.operators.aggregates.quantile.Quantile.ranges`).
"""

from __future__ import annotations

import os

import numpy as np

__all__ = ["MIN_WORK", "backend", "kernel"]

#: elements of work (cells, matrix entries) from which a kernel is used
MIN_WORK = 1 << 15

_compiled: dict[str, object] = {}
#: functions of this module the kernels call (compiled with the first kernel)
_HELPERS = ("_select",)
_numba: list = []  # [the numba module or None], once imported


def backend() -> str:
    """What runs the kernels' loops in this process: ``numba VERSION``, or why numpy does."""
    if _off():
        return "numpy (SLIDEWISE_NO_NUMBA)"
    numba = _imported()
    return "numpy (no numba)" if numba is None else f"numba {numba.__version__}"


def _off() -> bool:
    return os.environ.get("SLIDEWISE_NO_NUMBA", "") not in ("", "0")


def _imported():
    """The numba module, or None when it is not installed (the core install: numpy paths)."""
    if not _numba:
        try:
            import numba
        except ImportError:
            numba = None
        _numba.append(numba)
    return _numba[0]


def kernel(name: str, work: int = MIN_WORK, *, imports: bool = True):
    """The compiled kernel ``name`` (a function of this module), or None: numba off or missing, or
    ``work`` below :data:`MIN_WORK` while the kernel is not yet loaded (numba then not even imported; the
    caller's numpy path answers). Once loaded, it serves work of any size. ``imports=False``: only once
    another kernel has imported numba (a kernel whose numpy path is close is not worth the import alone)."""
    if _off():
        return None
    got = _compiled.get(name)
    if got is None:
        numba = None if work < MIN_WORK or (not imports and not _numba) else _imported()
        if numba is None:
            return None
        jit = numba.njit(cache=True, nogil=True)
        for helper in _HELPERS:  # the kernels call them compiled (numba resolves them among this module's globals)
            if not isinstance(globals()[helper], numba.core.registry.CPUDispatcher):
                globals()[helper] = jit(globals()[helper])
        got = _compiled[name] = jit(globals()[name])
    return got


def nonzero_cells(vals: np.ndarray):
    """Of a 2-D array: the non-zero entries of each row (how many) and their columns, row by row."""
    rows, width = vals.shape
    per = np.zeros(rows, np.int64)
    for r in range(rows):
        c = 0
        for k in range(width):
            c += vals[r, k] != 0
        per[r] = c
    columns = np.empty(per.sum() + 1, np.int64)  # (written at every entry, kept past the last non-zero)
    at = 0
    for r in range(rows):
        for k in range(width):
            columns[at] = k
            at += vals[r, k] != 0
    return per, columns[:-1]


def extreme_runs(values: np.ndarray, start: np.ndarray, n: np.ndarray, largest: bool):
    """The largest (or smallest) of each run ``values[start[c] : start[c] + n[c]]`` (``n >= 1``)."""
    out = np.empty(len(start), values.dtype)
    for c in range(len(start)):
        s = start[c]
        e = values[s]
        for k in range(s + 1, s + n[c]):
            v = values[k]
            if (v > e) if largest else (v < e):
                e = v
        out[c] = e
    return out


def run_bounds(flat: np.ndarray, width: int, first: np.ndarray, lo: np.ndarray, hi: np.ndarray, col: np.ndarray):
    """Each cell's run ``[start, start + n)`` of tuples in (group, clock) order: ``flat`` the running counts
    (pane rows × ``width`` groups, flattened), ``first`` each group's first tuple, the cell the window of
    pane rows ``[lo, hi)`` of group ``col``."""
    cells = len(lo)
    start = np.empty(cells, np.int64)
    n = np.empty(cells, flat.dtype)  # (the counts' type, as their differences)
    for c in range(cells):
        g = col[c]
        before = flat[lo[c] * width + g]
        n[c] = flat[hi[c] * width + g] - before
        start[c] = first[g] + before
    return start, n


def quantile_runs(values: np.ndarray, start: np.ndarray, n: np.ndarray, p: float, longest: int):
    """The quantile ``p`` of each run ``values[start[c] : start[c] + n[c]]`` (``n >= 1``), interpolated as
    :func:`slidewise.operators.aggregates.quantile.interpolate` does between its order statistics; runs
    longer than ``longest`` are left (0.0) and listed, ascending."""
    cells = len(start)
    out = np.empty(cells, np.float64)
    buf = np.empty(max(longest, 1), values.dtype)
    skipped = 0
    for c in range(cells):
        m = n[c]
        if m > longest:
            out[c] = 0.0
            skipped += 1
            continue
        s = start[c]
        if m == 1:
            v = np.float64(values[s])
            out[c] = v + (v - v) * 0.0
            continue
        h = (np.float64(m) - 1) * p
        fi = np.floor(h)
        i = np.int64(fi)
        jj = min(i + 1, m - 1)
        frac = h - fi
        if m <= 16:  # insertion sort of a short run
            for k in range(m):
                x = values[s + k]
                j = k
                while j > 0 and buf[j - 1] > x:
                    buf[j] = buf[j - 1]
                    j -= 1
                buf[j] = x
            low, high = np.float64(buf[i]), np.float64(buf[jj])
        else:  # the i-th smallest by selection, then the next one: the least of those after it
            buf[:m] = values[s : s + m]
            _select(buf, m, i)
            low = np.float64(buf[i])
            high = low
            if jj > i:
                nxt = buf[i + 1]
                for k in range(i + 2, m):
                    if buf[k] < nxt:
                        nxt = buf[k]
                high = np.float64(nxt)
        out[c] = low + (high - low) * frac
    left = np.empty(skipped, np.int64)
    at = 0
    for c in range(cells):
        if n[c] > longest:
            left[at] = c
            at += 1
    return out, left


def _select(buf: np.ndarray, m: int, k: int) -> None:
    """Reorder ``buf[:m]`` so that ``buf[k]`` is its k-th smallest, none greater before it, none less after
    (Hoare's selection, the middle element as pivot)."""
    left, right = 0, m - 1
    while left < right:
        pivot = buf[(left + right) // 2]
        i, j = left, right
        while i <= j:
            while buf[i] < pivot:
                i += 1
            while buf[j] > pivot:
                j -= 1
            if i <= j:
                buf[i], buf[j] = buf[j], buf[i]
                i += 1
                j -= 1
        if k <= j:
            right = j
        elif k >= i:
            left = i
        else:
            return
