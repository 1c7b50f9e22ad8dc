"""A periodically sliding time window as a circular array of columnar sub-windows (Golab's thesis §7.2).

The window of one stream is ``n`` sub-windows of ``t`` time units each. The
``j``-th write (version ``j``) holds the tuples with ``j·t ≤ ts < (j+1)·t`` and
goes to slot ``j mod n``, replacing the oldest sub-window: a window slide is one
write transaction (:meth:`Window.write`, done under the caller's lock). A
:class:`SubWindow` never changes once written, so a query reads it without a
lock while the window moves on (numpy releases the GIL in the scans).

Each sub-window also keeps its *synopsis entries*: the pre-aggregated partial of
every registered synopsis signature (:meth:`SubWindow.partial`), computed once,
at the write for signatures known then and on first read for later ones. A
query's synopsis scan reads those; its window scan pre-aggregates the raw tuples
itself.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

__all__ = ["SubWindow", "Window"]


@dataclass(eq=False)
class SubWindow:
    """The tuples of version ``version`` (``start ≤ ts < start + t``), as columns (``ts`` included)."""

    version: int
    start: int
    cols: dict[str, np.ndarray]
    written: float = 0.0  # time.monotonic() of the write's commit
    synopses: dict = field(default_factory=dict)  # signature -> partial (see :meth:`partial`)

    def __len__(self) -> int:
        return len(self.cols["ts"])

    def partial(self, signature, build):
        """The partial of ``signature`` over this sub-window: ``build(self)`` once, then kept."""
        found = self.synopses.get(signature)
        if found is None:
            found = self.synopses[signature] = build(self)
        return found


class Window:
    """``n`` slots of sub-windows of length ``t``; versions are written in order (not thread-safe alone:
    the transaction scheduler serialises writes and reads of the slot array)."""

    def __init__(self, stream: str, t: int, n: int):
        if t < 1 or n < 1:
            raise ValueError("a window needs t >= 1 and n >= 1")
        self.stream, self.t, self.n = stream, t, n
        self.slots: list[SubWindow | None] = [None] * n
        self.next_version = 0
        self.ttu = np.zeros(n, np.int64)  # writes until each slot is overwritten (Algorithm 8, lines 4-7)
        self.builders: dict = {}  # synopsis signature -> build(sub) (computed at every write)
        self.origin = 0  # the start of version 0 (a multiple of t)

    @property
    def latest(self) -> int:
        """The version of the youngest sub-window (-1 before the first write)."""
        return self.next_version - 1

    def prepare(self, cols: dict[str, np.ndarray]) -> SubWindow:
        """The next sub-window with its synopsis entries computed (outside the scheduler's lock)."""
        sub = SubWindow(-1, -1, cols)
        for sig, build in list(self.builders.items()):
            sub.partial(sig, build)
        return sub

    def install(self, sub: SubWindow) -> SubWindow:
        """The write: ``sub`` becomes version ``next_version`` in the oldest slot (Algorithm 8, lines 3-7)."""
        j = self.next_version
        sub.version, sub.start = j, self.origin + j * self.t
        sub.written = time.monotonic()
        self.slots[j % self.n] = sub
        self.ttu -= 1
        self.ttu[j % self.n] = self.n
        self.next_version = j + 1
        return sub

    def write(self, cols: dict[str, np.ndarray]) -> SubWindow:
        return self.install(self.prepare(cols))

    def versions(self, nk: int, latest: int | None = None) -> range:
        """The versions of the ``nk`` youngest sub-windows as of ``latest`` (default: now)."""
        last = self.latest if latest is None else latest
        return range(max(0, last - min(nk, self.n) + 1), last + 1)

    def get(self, version: int) -> SubWindow:
        """The sub-window of ``version`` (it must still be in the window)."""
        sub = self.slots[version % self.n]
        assert sub is not None and sub.version == version, f"version {version} is no longer in the window"
        return sub

    def contents(self) -> list[SubWindow]:
        """The sub-windows of the window now, oldest first."""
        return [self.get(v) for v in self.versions(self.n)]

    def rows(self) -> int:
        return sum(len(s) for s in self.contents())
