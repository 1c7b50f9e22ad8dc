"""Many periodic GROUP BY queries over one stream from one synopsis (a :class:`~slidewise.optimizer.sharing.Group`).

:class:`SharedRun` keeps one buffer of the stream's tuples that pass the
group's common predicate and, block by block, pre-aggregates them once into
panes of the group's grid (width ``s``, :func:`~slidewise.optimizer.sharing.pane_width`):
one pane partial per distinct (:attr:`~slidewise.operators.aggregates.base.Accumulator.share_key`,
attribute) that any member needs. Each member is a
:class:`~slidewise.runtime.pane_engine.PaneRun` that answers its own evaluations
of the block from those partials (:meth:`~slidewise.runtime.pane_engine.PaneRun.conclude`,
with its HAVING, group filter and output kind); the members' windows of one partial are answered
together, each distinct window once (:class:`~slidewise.synopses.batch.WindowBatch`), so every
member's rows equal its run alone.

A group of count windows (``[ROWS n SLIDE m]``, every member ``counted``) runs the
same on the arrival numbers (:data:`~slidewise.runtime.pane_engine.CLOCK`) instead of ``ts``.

A group over a cover (:attr:`~slidewise.optimizer.sharing.Group.covered`) keeps
the tuples of the members' common conjuncts, tags each with its *region* (which
of the members' residual predicates it satisfies) and builds each pane partial
once per (group, region); a member's partial merges the regions its predicate
holds in (a disjoint cover), or for COUNT/SUM/AVG subtracts the others from the
whole when they are fewer (a disjoint supercover), as in Golab's thesis §8.3.3.
"""

from __future__ import annotations

from functools import reduce

import numpy as np

from slidewise.optimizer.sharing import Group
from slidewise.plan.expr import columns_of, evaluate
from slidewise.runtime.pane_engine import CLOCK, PaneRun, TupleBuffer, block_length, deliver, encode_groups, select
from slidewise.synopses.batch import WindowBatch
from slidewise.synopses.tuples import Deferred, Tuples
from slidewise.synopses.tuples import partial as deferred

__all__ = ["SharedRun"]


class SharedRun:
    """Feed the stream's chunks with :meth:`add`, then :meth:`finish`; ``emits[name](cols)`` gets each member's rows."""

    def __init__(self, group: Group, dtypes: dict[str, np.dtype], emits: dict):
        self.group, self.pane = group, group.pane
        self.where = group.predicate()
        self.runs = [PaneRun(m.spec, dtypes, emits[m.name], key_filter=m.group_filter) for m in group.members]
        self.regions = group.regions()
        self.bit = [None if m.residual is None else self.regions.index(m.residual) for m in group.members]
        self._present = np.zeros(0, np.int64)  # the region codes of the current block
        self.covers = [{"disjoint": 0, "supercover": 0} for _ in group.members]  # per member: partials read so
        extra = tuple(a for e in self.regions for _, a in columns_of(e) if a != "ts")
        self.attrs = tuple(dict.fromkeys(group.keys + tuple(a for r in self.runs for a in r.attrs) + extra))
        self.counted = group.members[0].spec.counted  # sharing.share never mixes count and time windows
        self.clock = CLOCK if self.counted else "ts"
        self.buffer = TupleBuffer(self.clock)
        self.last_ts: int | None = None
        self.groups_seen = 1024
        self.blocks = self.buffered_peak = 0
        self.partial_bytes_peak = self.unshared_bytes_peak = 0  # one block's pane partials, shared vs one per request
        self.states: set[tuple] = set()

    def add(self, ts: np.ndarray, cols: dict[str, np.ndarray]) -> None:
        """Arrivals in timestamp order (all of the stream's attributes by name)."""
        if not len(ts):
            return
        for r in self.runs:
            r.start(int(ts[0]))
        self.last_ts = int(ts[-1])
        if self.counted:  # every evaluation the arrivals complete
            arrival = [r.number(ts) for r in self.runs][0]
            self.buffer.append(select(self.where, ts, {**cols, CLOCK: arrival}, (*self.attrs, CLOCK)))
            seen = self.runs[0].seen
            self._answer(lambda m: seen // m)
            for r in self.runs:
                r.trim()
            return
        self.buffer.append(select(self.where, ts, cols, self.attrs))
        last = self.last_ts
        self._answer(lambda d: -(-last // d) - 1)

    def finish(self) -> None:
        if self.last_ts is not None and not self.counted:
            last = self.last_ts
            self._answer(lambda d: -(-last // d))

    @property
    def results(self) -> int:
        return sum(r.results for r in self.runs)

    def _answer(self, k_last) -> None:
        """Answer every member's evaluations up to ``k_last(D)`` (its slide ``D``)."""
        while True:
            buf = self.buffer.whole()
            work = []
            for r in self.runs:
                last = k_last(r.spec.slide)
                k0 = r.due(last, buf)
                if k0 is not None:
                    work.append((r, k0, last))
            if not work:
                return
            ts = buf[self.clock]
            self.buffered_peak = max(self.buffered_peak, len(ts))
            longest = max(r.spec.length + 1 + r.lead * r.spec.slide for r, _, _ in work)
            e = block_length(self.groups_seen, longest, self.pane)
            start = min((k0 - r.lead) * r.spec.slide - r.spec.length - 1 for r, k0, _ in work)
            # a block ends at the latest member's e-th due evaluation and spans at most ~e panes of the grid:
            # members whose last due evaluations differ (every one at the end of the stream) share one block
            end = max(min(last, k0 + e - 1) * r.spec.slide for r, k0, last in work)
            end = max(min(end, start + e * self.pane), min(k0 * r.spec.slide for r, k0, _ in work))
            jobs = [(r, k0, min(last, end // r.spec.slide)) for r, k0, last in work if k0 * r.spec.slide <= end]
            start = min((k0 - r.lead) * r.spec.slide - r.spec.length - 1 for r, k0, _ in jobs)
            end = max(k1 * r.spec.slide for r, _, k1 in jobs)
            lo, hi = np.searchsorted(ts, start, "right"), np.searchsorted(ts, end, "right")
            self._block(jobs, start, end, {a: v[lo:hi] for a, v in buf.items()})
            for r, _, k1 in jobs:
                r.next_k = k1 + 1
            self.buffer.drop_before(min((r.next_k - r.lead) * r.spec.slide - r.spec.length for r in self.runs))

    def _block(self, jobs: list, start: int, end: int, data: dict) -> None:
        """Each job's evaluations ``k0 .. k1`` from the panes of ``(start, end]``."""
        if not len(data[self.clock]):
            for r, _, _ in jobs:
                r.last_nonempty = False
            return
        self.blocks += 1
        n = len(data[self.clock])
        uniq, groups = encode_groups([data[k] for k in self.group.keys], n)
        g = len(uniq[0]) if uniq else 1
        codes, R = self._regions(data, n)
        if codes is not None:
            groups = groups * R + codes
        cuts = np.arange(start, end + 1, self.pane, dtype=np.int64)  # pane i: (cuts[i-1], cuts[i]]
        pane = np.searchsorted(cuts, data[self.clock], "left")
        shape = (len(cuts), g * R)
        cache: dict = {}
        memo: dict = {}  # the synopses' running merges / intervals of the shared partials
        requested: list = []  # every member's partials (the bytes of each built one count once per member)

        layout = Tuples(groups, g * R)  # the block's tuples by group (sorted when first read)

        def base(acc, attr):
            key = (acc.share_key, attr) if acc.share_key else (id(acc), attr)
            hit = cache.get(key)
            if hit is None:
                if attr is None or codes is not None:  # (a cover's partials merge regions: no tuples of their own)
                    hit = (acc, acc.partial(None if attr is None else data[attr], pane, groups, shape))
                else:
                    hit = (acc, deferred(memo, layout, acc, data[attr], lambda: acc.partial(data[attr], pane, groups, shape)))
                cache[key] = hit
            else:
                acc.adopt(hit[0])
            return key, hit[1]

        def partial_of(i):
            mask = None if codes is None else self._mask(i, self._present)

            def partial(acc, attr):
                key, st = base(acc, attr)
                if codes is not None:
                    st, kind = self._cover(acc, key, st, mask, R, cache)
                    self.covers[i][kind] += 1
                requested.append(st)
                return st

            return partial

        index = {id(r): i for i, r in enumerate(self.runs)}
        batch = WindowBatch(memo)  # every member's windows of one partial answered in one pass
        asked = []
        for r, k0, k1 in jobs:
            r.blocks += 1
            ends = np.arange(k0 - r.lead, k1 + 1, dtype=np.int64) * r.spec.slide
            lo, hi = r.bounds(ends, cuts)
            handles = [None if q is None else batch.request(*q, lo, hi) for q in r.requests(r.gather(partial_of(index[id(r)])))]
            asked.append((r, ends, handles))
        deliver(uniq, batch, asked)
        self.states |= {k for k in cache if len(k) == 2}
        self.groups_seen = max(r.groups_seen for r, _, _ in jobs) * R  # a block's cells: groups x regions
        self.partial_bytes_peak = max(self.partial_bytes_peak, sum(_nbytes(v[1]) for k, v in cache.items() if len(k) == 2))
        self.unshared_bytes_peak = max(self.unshared_bytes_peak, sum(_nbytes(st) for st in requested))

    def _regions(self, data: dict, n: int) -> tuple[np.ndarray | None, int]:
        """Each tuple's region (index into :attr:`_present`, the region codes of the block) and their number."""
        if not self.regions:
            return None, 1
        code = np.zeros(n, np.int64)
        for j, e in enumerate(self.regions):
            hit = np.broadcast_to(np.asarray(evaluate(e, lambda _s, a: data[a]), dtype=bool), (n,))
            code |= hit.astype(np.int64) << j
        self._present, idx = np.unique(code, return_inverse=True)
        return idx.reshape(-1), len(self._present)

    def _mask(self, i: int, present: np.ndarray) -> np.ndarray | None:
        """Which present regions member ``i`` covers (None: all of them)."""
        bit = self.bit[i]
        return None if bit is None else (present >> bit) & 1 == 1

    def _cover(self, acc, key, st: tuple, mask: np.ndarray | None, R: int, cache: dict) -> tuple[tuple, str]:
        """A member's partial and how it was read: the merge of the regions of ``mask`` (``disjoint``: a
        disjoint cover), or the whole minus the others when fewer and ``acc`` subtracts (``supercover``);
        cached per region set."""
        if mask is None:
            mask = np.ones(R, bool)
        ck = (*key, "regions", mask.tobytes())
        hit = cache.get(ck)
        if hit is not None:
            acc.adopt(hit[0])
            return hit[1], hit[2]
        regions = [tuple(x[:, r::R] for x in st) for r in range(R)]
        inside, outside = np.flatnonzero(mask), np.flatnonzero(~mask)
        kind = "supercover" if acc.share_key in ("count", "sum") and 0 < len(outside) < len(inside) - 1 else "disjoint"
        if kind == "supercover":
            whole = self._cover(acc, key, st, None, R, cache)[0]
            out = acc.subtract(whole, reduce(acc.merge, [regions[r] for r in outside]))
        elif len(inside):
            out = reduce(acc.merge, [regions[r] for r in inside])
        else:
            out = acc.identity((st[0].shape[0], st[0].shape[1] // R))
        cache[ck] = (acc, out, kind)
        return out, kind


def _nbytes(partial) -> int:
    """The bytes of a partial's state (a :class:`~slidewise.synopses.tuples.Deferred` one: 0 until built)."""
    return partial.nbytes if isinstance(partial, Deferred) else sum(x.nbytes for x in partial)
