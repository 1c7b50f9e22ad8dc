"""Periodic window synopses over pane partials (Golab, "Sliding Window Query Processing over
Data Streams", PhD thesis, University of Waterloo 2006, §2.3.4).

A window that slides periodically is a run of consecutive *panes*
(sub-windows); each pane holds its partial aggregate per group (an
:mod:`slidewise.operators.aggregates` accumulator). A synopsis answers many
windows at once: every function takes the pane partials (``rows = panes``,
``columns = groups``) and the windows as half-open pane ranges
``[lo[k], hi[k])`` and returns the aggregate state of each window (``rows =
windows``), in whole-array numpy operations.

* :mod:`~slidewise.synopses.running` — subtractable aggregates: differences
  of prefix merges;
* :mod:`~slidewise.synopses.interval` — MIN/MAX: a tree of dyadic intervals,
  at most 2 log b probes per window;
* :mod:`~slidewise.synopses.basic_interval` — MIN/MAX: the panes alone, b
  probes per window.

:data:`SYNOPSES` maps a name to its ``windows(acc, partials, lo, hi, memo=None)`` (and
:func:`cells` evaluates given (window, column) cells only); a ``memo`` dict
shared by the queries of one synopsis (:mod:`slidewise.runtime.shared`) keeps what they all probe.
:func:`cost` gives each one's space and probes per answer for windows of b panes.
"""

import numpy as np

from slidewise.synopses import basic_interval, interval, running, tuples

SYNOPSES = {"running": running.windows, "interval": interval.windows, "basic interval": basic_interval.windows}


def values(synopsis, acc, partials: tuple, lo, hi, memo: dict | None = None) -> tuple:
    """``acc``'s value (and null mask) over each window ``[lo[k], hi[k])`` of pane rows through ``synopsis``
    (a function of :data:`SYNOPSES`); an accumulator with ``between(run, lo, hi)`` (holistic ones) reads
    the running synopsis's merges directly instead of forming each window's state."""
    between = getattr(acc, "between", None)
    if synopsis is running.windows and between is not None:
        return between(running.memoized(memo, "running", partials, acc.prefix), lo, hi)
    return acc.value(synopsis(acc, partials, lo, hi, memo))


def cells(synopsis, acc, partials: tuple, lo, hi, col, memo: dict | None = None, run: np.ndarray | None = None) -> tuple | None:
    """``acc``'s value (and null mask) at the cells ``(window [lo[c], hi[c]) of pane rows, column col[c])``, 1-D:
    work in proportion to the cells asked (the non-empty ones of sparse groups) instead of windows x
    columns; None when ``acc`` and ``synopsis`` have no such evaluation (then :func:`values` answers).
    ``run``: the ``COUNT(*)`` running merges of the partials' pane rows and columns, every cell non-empty:
    cells of few tuples are then evaluated from the tuples attached to ``partials`` (:mod:`~slidewise.synopses.tuples`)."""
    lo, hi, col = (np.asarray(x, dtype=np.int64) for x in (lo, hi, col))
    got = None if run is None or memo is None or not len(lo) else tuples.runs(acc, partials, memo, run, lo, hi, col)
    if got is None:
        return _cells(synopsis, acc, tuples.built(partials, acc), lo, hi, col, memo)
    out, rest = got
    if not len(rest):
        return out, None
    long = _cells(synopsis, acc, tuples.built(partials, acc), lo[rest], hi[rest], col[rest], memo)
    if long is None:
        return _cells(synopsis, acc, tuples.built(partials, acc), lo, hi, col, memo)
    if out is None:
        return long
    out[rest] = long[0]
    null = None
    if long[1] is not None:
        null = np.zeros(len(out), bool)
        null[rest] = long[1]
    return out, null


def _cells(synopsis, acc, partials: tuple, lo, hi, col, memo: dict | None) -> tuple | None:
    at = getattr(acc, "between_cells", None)
    if at is not None:
        return at(running.memoized(memo, "running", partials, acc.prefix), lo, hi, col) if synopsis is running.windows else None
    if not acc.cellwise:
        return None
    if synopsis is running.windows:
        return acc.value(running.cells(acc, partials, lo, hi, col, memo))
    if synopsis is interval.windows and getattr(acc, "idempotent", False):
        return acc.value(interval.cells(acc, partials, lo, hi, col, memo))
    return None


def cost(name: str, b: int, overlapping: bool = False) -> tuple[int, int]:
    """Partials a synopsis keeps per group for a window of ``b`` panes, and the most it probes per answer:
    running b + 1 running merges (the first empty), 2 probes; interval b + ⌈b/2⌉ + ... + 1 dyadic
    intervals (2b − 1 for b a power of two), at most 2⌈log2 b⌉ probes, or (``overlapping``: MIN/MAX)
    the b − 2^l + 1 intervals of 2^l panes for 2^l <= b, 2 probes; basic interval the b panes, b probes."""
    if name == "running":
        return b + 1, 2
    if name == "interval" and overlapping:
        return sum(b - (1 << lv) + 1 for lv in range(b.bit_length())), 2
    if name == "interval":
        kept, n = b, b
        while n > 1:
            n = (n + 1) // 2
            kept += n
        return kept, max(1, 2 * (b - 1).bit_length())
    return b, b


def costs(kinds: dict[str, bool], b: int) -> str:
    """``explain``'s space / probes per answer of each synopsis (name -> whether it probes overlapping intervals)."""
    return ", ".join(f"{k} {kept} / {'at most ' if k == 'interval' and not o else ''}{probes}" for k, o in kinds.items() for kept, probes in [cost(k, b, o)])


#: aggregates whose partials merge idempotently (the interval synopsis probes two overlapping intervals)
OVERLAPPING = ("min", "max")

__all__ = ["OVERLAPPING", "SYNOPSES", "basic_interval", "cells", "cost", "costs", "interval", "running", "tuples", "values"]
