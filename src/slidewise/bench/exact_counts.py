"""Exact comparison counts of the Table 8 join operators over a long run (Golab & Özsu §6.2, Table 8).

:func:`count_eager` (eager ``nlj`` / ``hash``) and :func:`count_lazy` (``lazy``
/ ``hash-lazy``) re-count, per arrival and join order, the comparisons the
operators of :mod:`slidewise.operators.joins` make, fast enough for runs of
tens of thousands of time units; tests check them against the operators' own
counters. :mod:`slidewise.bench.table8` uses them to pick a balanced timing
sample; the cost model (:mod:`slidewise.optimizer.cost`) is checked against
them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from slidewise.model.batch import StreamBatch
from slidewise.runtime.generate import generate

__all__ = ["Arrivals", "count_comparisons", "count_eager", "count_lazy", "make_arrivals"]


#: tuples per chunk fed to the operators (the ordering bench times them in these chunks)
CHUNK = 64


@dataclass
class Arrivals:
    """The merged input in global order (ts, stream, value), cut into chunks on demand."""

    ts: np.ndarray
    sid: np.ndarray
    attr: np.ndarray
    n: int
    per_unit: float

    def chunks(self, lo: int, hi: int, chunk: int = CHUNK) -> list[list[StreamBatch]]:
        out = []
        for a in range(lo, hi, chunk):
            b = min(a + chunk, hi)
            sid = self.sid[a:b]
            pos = np.arange(a, b, dtype=np.int64)
            out.append([StreamBatch(i, pos[sid == i], self.ts[a:b][sid == i], {"a": self.attr[a:b][sid == i]}) for i in range(self.n)])
        return out

    def at(self, ts: int) -> int:
        """Index of the first arrival with a timestamp above ``ts``."""
        return int(np.searchsorted(self.ts, ts, side="right"))


def make_arrivals(rates, distinct, n_tuples: int, *, seed: int = 0, absolute: bool = True) -> Arrivals:
    """The paper's streams merged in global order; ``absolute``: ts = loop index // Σλ."""
    streams = generate(rates, distinct, n_tuples, seed=seed)
    scale = float(sum(rates)) if absolute else 1.0
    ts = np.concatenate([np.floor(s["ts"] / scale).astype(np.int64) for s in streams])
    sid = np.concatenate([np.full(len(s["ts"]), i) for i, s in enumerate(streams)])
    local = np.concatenate([np.arange(len(s["ts"])) for s in streams])
    attr = np.concatenate([s["a"] for s in streams])
    order = np.lexsort((local, sid, ts))
    return Arrivals(ts[order], sid[order], attr[order], len(streams), scale)


def count_eager(arr: Arrivals, windows, orders, buckets: int | None = None) -> dict:
    """Comparisons that eager ``nlj`` (``buckets=None``) or eager ``hash`` counts, per arrival and order.

    A re-count of the operators' loops for one equality attribute, fast
    enough for long runs: new tuple k (value x) on stream i probes the other
    windows in ``[i] + order``; loop j scans the window (``nlj``) or x's
    bucket ``x mod b`` (``hash``), one comparison per tuple scanned, and the
    ``c_j(x)`` matches go on to the next loop. Windows are those the
    operators hold: every earlier arrival with ``ts >= k.ts - T_j``. Tests
    check it against the operators' ``comparisons``.
    """
    n, ts, sid, val = arr.n, arr.ts.tolist(), arr.sid.tolist(), arr.attr.tolist()
    idx = [np.flatnonzero(arr.sid == i).tolist() for i in range(n)]
    count: list[dict] = [{} for _ in range(n)]
    inbucket: list[dict] = [{} for _ in range(n)]
    size, head, added = [0] * n, [0] * n, [0] * n
    seqs = [[[i] + [s for s in o if s != i] for i in range(n)] for o in orders]
    out = np.zeros((len(orders), len(ts)))
    b = buckets or 0
    for p in range(len(ts)):
        i, t, x = sid[p], ts[p], val[p]
        added[i] += 1
        size[i] += 1
        count[i][x] = count[i].get(x, 0) + 1
        if b:
            inbucket[i][x % b] = inbucket[i].get(x % b, 0) + 1
        for j in range(n):
            h, lst, bound = head[j], idx[j], t - windows[j]
            while h < added[j] and ts[lst[h]] < bound:
                v = val[lst[h]]
                count[j][v] -= 1
                size[j] -= 1
                if b:
                    inbucket[j][v % b] -= 1
                h += 1
            head[j] = h
        scanned = [inbucket[j].get(x % b, 0) for j in range(n)] if b else size
        for o, seq in enumerate(seqs):
            out[o, p] = _probe(seq[i], scanned, count, x)
    return {tuple(o): out[k] for k, o in enumerate(orders)}


def _probe(seq: list[int], scanned: list[int], count: list[dict], x) -> int:
    """Comparisons of one probe with value ``x`` through the loops ``seq[1:]``: each loop scans
    ``scanned[j]`` tuples once per partial result reaching it (``count[j][x]`` matches go on)."""
    c, mult = 0, 1
    for j in seq[1:]:
        c += mult * scanned[j]
        mult *= count[j].get(x, 0)
        if not mult:
            break
    return c


def count_lazy(arr: Arrivals, windows, orders, tau: int, buckets: int | None = None, *, grouped: bool = True) -> dict:
    """Comparisons that lazy ``lazy`` (``grouped``) or ``hash-lazy`` counts, per arrival and order.

    The lazy counterpart of :func:`count_eager` (no-restore semantics, time
    windows, one equality attribute), exact for the operators of
    :mod:`slidewise.operators.joins.lazy` and ``.hash``: the evaluation at NOW
    (a multiple of τ) runs when the first arrival with ``ts > NOW`` comes, and
    its comparisons are booked on that arrival (so a piece of whole periods
    holds the evaluations its timed run performs). At NOW the windows hold
    the tuples with ``ts >= NOW - T_j`` (purged before, or after the previous
    evaluation), split into *old* ones (earlier periods) and the period's
    *new* ones:

    * ``lazy`` (thesis Alg. 4, §5.2.2): for each stream i in the
      global order, its new tuples are inserted, then one probe per distinct
      value x among them scans, in ``[i] + order``, the windows of the other
      streams — with their new tuples iff they precede i in the order;
    * ``hash-lazy`` (Golab & Özsu §3.3–3.4): every new tuple, in arrival order,
      probes the buckets ``x mod b`` counting only tuples that arrived before
      it (window membership and ``exp >= NOW`` are uncounted checks).

    Tests check it against the operators' ``comparisons``.
    """
    n, ts, sid, val = arr.n, arr.ts.tolist(), arr.sid.tolist(), arr.attr.tolist()
    out = np.zeros((len(orders), len(ts)))
    b = buckets or 0
    seqs = [[[i] + [s for s in o if s != i] for i in range(n)] for o in orders]
    before = [[[o.index(j) < o.index(i) for j in range(n)] for i in range(n)] for o in orders]
    fifo: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    head, size = [0] * n, [0] * n
    count: list[dict] = [{} for _ in range(n)]
    inbucket: list[dict] = [{} for _ in range(n)]

    def add(j: int, x: int, t: int) -> None:
        fifo[j].append((t, x))
        size[j] += 1
        count[j][x] = count[j].get(x, 0) + 1
        if b:
            inbucket[j][x % b] = inbucket[j].get(x % b, 0) + 1

    def purge(now: int) -> None:
        for j in range(n):
            h, lst, bound = head[j], fifo[j], now - windows[j]
            while h < len(lst) and lst[h][0] < bound:
                x = lst[h][1]
                size[j] -= 1
                count[j][x] -= 1
                if b:
                    inbucket[j][x % b] -= 1
                h += 1
            head[j] = h

    p, total = 0, len(ts)
    while p < total:
        now = -(-ts[p] // tau) * tau
        lo = p
        while p < total and ts[p] <= now:
            p += 1
        booked = min(p, total - 1)  # the arrival that triggers this evaluation
        purge(now)
        if grouped:
            new = [[] for _ in range(n)]
            for q in range(lo, p):
                new[sid[q]].append(val[q])
            newcount = [{} for _ in range(n)]
            for i in range(n):
                for x in new[i]:
                    newcount[i][x] = newcount[i].get(x, 0) + 1
            for o in range(len(orders)):
                c = 0
                for i in range(n):
                    ahead = before[o][i]
                    for x in newcount[i]:
                        mult = 1
                        for j in seqs[o][i][1:]:
                            if ahead[j]:
                                c += mult * (size[j] + len(new[j]))
                                mult *= count[j].get(x, 0) + newcount[j].get(x, 0)
                            else:
                                c += mult * size[j]
                                mult *= count[j].get(x, 0)
                            if not mult:
                                break
                out[o, booked] += c
            for q in range(lo, p):
                add(sid[q], val[q], ts[q])
        else:
            for q in range(lo, p):
                i, x = sid[q], val[q]
                scanned = [inbucket[j].get(x % b, 0) for j in range(n)] if b else size
                for o, seq in enumerate(seqs):
                    out[o, booked] += _probe(seq[i], scanned, count, x)
                add(i, x, ts[q])
        purge(now + tau)
    return {tuple(o): out[k] for k, o in enumerate(orders)}


def count_comparisons(arr: Arrivals, windows, orders, algorithm: str, tau: int | None, buckets: int | None) -> dict:
    """Per arrival and order, the comparisons of one Table 8 configuration (exact re-count)."""
    if algorithm in ("nlj", "hash"):
        return count_eager(arr, windows, orders, buckets)
    if algorithm in ("lazy", "hash-lazy"):
        return count_lazy(arr, windows, orders, tau, buckets, grouped=algorithm == "lazy")
    raise ValueError(f"no exact comparison count for {algorithm!r}")
