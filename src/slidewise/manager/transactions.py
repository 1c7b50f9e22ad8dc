"""Concurrency control of window slides and query scans (Golab's thesis ch. 7).

A window slide is a write transaction (one sub-window replaced); a query (a
one-time query, or one re-execution of one or more periodic queries) is a
read-only transaction that reads each of its ``nk`` youngest sub-windows once
(:class:`Txn`). :class:`TransactionScheduler` runs both under one of the
isolation policies of :data:`POLICIES`:

* ``serial`` — slides and queries one at a time (a slide waits for the running
  query; no pre-emption);
* ``ws`` — window-serializable (Definition 7.1): a query reads the window as
  of its start (a snapshot of the slot array; sub-windows are immutable), never
  aborts, and may answer over a window that has moved on;
* ``lws`` — latest-window-serializable (Definition 7.2) by Algorithm 7: slides
  run at once; a query reads its sub-windows oldest first and is aborted (and
  restarted) when a slide expires a sub-window it has read;
* ``ttu`` — Algorithm 8: as ``lws``, but each read takes the unread sub-window
  with the highest time-to-update (the youngest), which makes the fewest aborts
  (Theorem 7.4).

With ``rescan=True`` (§7.4.2, last paragraph) a query keeps the partials it has
read: a slide that expires one of them makes it drop (re-scan) that partial and
read the new sub-window instead; nothing aborts.

Every committed LWS/TTU/serial transaction read exactly the ``nk`` youngest
sub-windows as of its commit (a contiguous, latest window); a WS one read a
contiguous window as of its start. :attr:`Txn.versions` and :attr:`Txn.latest`
say which. Higher :attr:`Txn.priority` pre-empts: a waiting :meth:`~TransactionScheduler.step`
(``block=True``) of a lower-priority transaction does not read while a
higher-priority one runs (Algorithm 7's line 16 choosing the highest priority).
The scheduler is driven by threads (``block=True``) or, in tests, by one
thread choosing the order of the steps (``block=False``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from slidewise.manager.window import SubWindow, Window

__all__ = ["POLICIES", "TransactionScheduler", "Txn"]

POLICIES = ("serial", "ws", "lws", "ttu")


@dataclass(eq=False)
class Txn:
    """A read-only transaction over the ``nk`` youngest sub-windows; ``read(sub)`` scans one of them."""

    tid: int
    nk: int
    read: Callable[[SubWindow], Any]
    priority: int = 0
    started: float = 0.0
    reads: dict[int, Any] = field(default_factory=dict)  # version -> what read() returned
    pending: int | None = None  # the version being read
    epoch: int = 0  # bumped by an abort: a read in flight from before is discarded
    snapshot: dict[int, SubWindow] | None = None  # ws: the window as of the start
    aborts: int = 0
    rescans: int = 0
    done: bool = False
    latest: int = -1  # at commit: the youngest version of the window the answer is over
    end: int = -1  # at commit: the last instant of that window (its youngest sub-window's last ts)
    committed: float = 0.0
    staleness: float = 0.0  # commit time - write time of the youngest version read (seconds)

    @property
    def versions(self) -> list[int]:
        """The versions read, oldest first (after commit: the window of the answer)."""
        return sorted(self.reads)

    def partials(self) -> list:
        """What was read, oldest sub-window first."""
        return [self.reads[v] for v in self.versions]


class TransactionScheduler:
    """Slides and scans of one :class:`Window` under an isolation ``policy`` (:data:`POLICIES`)."""

    def __init__(self, window: Window, policy: str = "ttu", rescan: bool = False):
        if policy not in POLICIES:
            raise ValueError(f"unknown policy {policy!r}")
        self.window, self.policy, self.rescan = window, policy, rescan
        self.cond = threading.Condition()
        self.active: list[Txn] = []
        self.writers_waiting = 0
        self._ids = 0
        self.counts = {"writes": 0, "commits": 0, "aborts": 0, "rescans": 0}

    # -- writes ---------------------------------------------------------------------------------

    def slide(self, cols: dict[str, np.ndarray], block: bool = True) -> SubWindow | None:
        """Write the next sub-window (its synopsis entries computed before taking the lock); None when
        ``block`` is False and a serial query holds the window."""
        sub = self.window.prepare(cols)
        with self.cond:
            if self.policy == "serial" and self.active:
                if not block:
                    return None
                self.writers_waiting += 1
                self.cond.wait_for(lambda: not self.active)
                self.writers_waiting -= 1
            self.window.install(sub)
            self.counts["writes"] += 1
            if self.policy in ("lws", "ttu"):
                self._conflicts(sub.version)
            self.cond.notify_all()
        return sub

    def _conflicts(self, j: int) -> None:
        """Algorithm 7/8 lines 4-8: version ``j - nk`` left each query's window; abort (or re-scan) a query
        that has read it (or is reading it)."""
        for txn in self.active:
            gone = j - txn.nk
            stale = [v for v in txn.reads if v <= gone]
            if not stale and (txn.pending is None or txn.pending > gone):
                continue
            if self.rescan:
                for v in stale:
                    del txn.reads[v]
                txn.rescans += len(stale)
                self.counts["rescans"] += len(stale)
            else:
                txn.reads.clear()
                txn.epoch += 1
                txn.aborts += 1
                self.counts["aborts"] += 1

    # -- reads ----------------------------------------------------------------------------------

    def begin(self, nk: int, read: Callable[[SubWindow], Any], priority: int = 0, block: bool = True) -> Txn | None:
        """A new read-only transaction (None when ``block`` is False and it would wait: serial only)."""
        with self.cond:
            if self.policy == "serial" and (self.active or self.writers_waiting):
                if not block:
                    return None
                self.cond.wait_for(lambda: not self.active and not self.writers_waiting)
            self._ids += 1
            txn = Txn(self._ids, max(1, min(nk, self.window.n)), read, priority, time.monotonic())
            if self.policy == "ws":
                txn.snapshot = {v: self.window.get(v) for v in self.window.versions(txn.nk)}
                txn.latest = self.window.latest
            self.active.append(txn)
            return txn

    def start(self, nk: int, read: Callable[[SubWindow], Any], priority: int = 0) -> Txn:
        """:meth:`begin`, waiting as long as it takes (threads)."""
        txn = self.begin(nk, read, priority)
        assert txn is not None  # begin(block=True) waits instead of returning None
        return txn

    def outranked(self, txn: Txn) -> bool:
        """Whether a running transaction of higher priority comes first (never under serial)."""
        return self.policy != "serial" and any(o.priority > txn.priority for o in self.active if o is not txn)

    def step(self, txn: Txn, block: bool = True) -> bool:
        """One sub-window read of ``txn`` (``block``: after higher-priority transactions); True once committed."""
        with self.cond:
            if block and self.outranked(txn):
                self.cond.wait_for(lambda: not self.outranked(txn))
            target = self._next(txn)
            if target is None:
                return self._commit(txn)
            txn.pending, epoch = target, txn.epoch
            sub = txn.snapshot[target] if txn.snapshot is not None else self.window.get(target)
        got = txn.read(sub)  # outside the lock: the sub-window never changes
        with self.cond:
            txn.pending = None
            if txn.epoch != epoch:
                return False  # aborted meanwhile: start over
            if target in self._needed(txn):
                txn.reads[target] = got
            else:  # re-scan: the sub-window expired while it was read
                txn.rescans += 1
                self.counts["rescans"] += 1
            if self._next(txn) is None:
                return self._commit(txn)
            return False

    def run(self, txn: Txn) -> Txn:
        """Step ``txn`` until it commits (threads)."""
        while not self.step(txn):
            pass
        return txn

    def _needed(self, txn: Txn) -> range:
        if txn.snapshot is not None:
            return range(min(txn.snapshot, default=0), max(txn.snapshot, default=-1) + 1)
        return self.window.versions(txn.nk)

    def _next(self, txn: Txn) -> int | None:
        """The version to read next: the youngest unread (ttu), else the oldest; None when all are read."""
        left = [v for v in self._needed(txn) if v not in txn.reads]
        if not left:
            return None
        return max(left) if self.policy == "ttu" else min(left)

    def _commit(self, txn: Txn) -> bool:
        needed = self._needed(txn)
        assert list(needed) == txn.versions, f"transaction {txn.tid} read {txn.versions}, not {list(needed)}"
        txn.latest = needed[-1] if len(needed) else txn.latest if txn.snapshot is not None else self.window.latest
        txn.committed = time.monotonic()
        if len(needed):
            written = txn.snapshot[txn.latest] if txn.snapshot is not None else self.window.get(txn.latest)
            txn.staleness = txn.committed - written.written
            txn.end = written.start + self.window.t - 1
        txn.done = True
        self.active.remove(txn)
        self.counts["commits"] += 1
        self.cond.notify_all()
        return True
