"""The join synopsis: a periodic GROUP BY over an equi-join of two time windows, from per-key pane partials.

:class:`JoinPaneRun` executes a :class:`~slidewise.optimizer.join_aggregate.JoinAggregate`
(Golab's thesis §8.3.2; the algebra is in that module's docstring) block by
block, as :class:`~slidewise.runtime.pane_engine.PaneRun` does for one stream:
in a block of evaluations the join keys of both inputs are dictionary-encoded
together, time is cut into panes by every window end and both inputs' window
starts, each input's tuples are pre-aggregated once per (pane, key) (COUNT(*),
and per aggregate of that input its accumulator of
:mod:`slidewise.operators.aggregates`), each window's per-key aggregates come
from a synopsis of :mod:`slidewise.synopses` over that input's own window
length, and the join's aggregates are their per-key products, summed over the
keys of each group. No join result is formed. Rows are emitted by
:class:`~slidewise.runtime.pane_engine.Answers` (same rows, order, ``ts`` and
``sign`` as the operator network).
"""

from __future__ import annotations

import numpy as np

from slidewise.operators.aggregates import accumulator
from slidewise.operators.aggregates.subtractable import Count
from slidewise.optimizer.join_aggregate import JoinAggregate
from slidewise.plan.expr import Col
from slidewise.runtime.pane_engine import BLOCK_CELLS, Answers, TupleBuffer, encode_groups, select
from slidewise.synopses import SYNOPSES

__all__ = ["JoinPaneRun"]


class JoinPaneRun(Answers):
    """Feed merged chunks with :meth:`add` (one batch per input, in timestamp order), then :meth:`finish`."""

    def __init__(self, spec: JoinAggregate, dtypes: tuple[dict[str, np.dtype], dict[str, np.dtype]], emit):
        super().__init__(spec, emit)
        self.jspec = spec
        self.count = Count()
        # per input: the attributes it reads (join columns, then arguments), and its aggregates' accumulators
        self.attrs: list[tuple[str, ...]] = []
        for side in (0, 1):
            args = [a.arg.attr for a in spec.aggs if isinstance(a.arg, Col) and a.arg.stream == side]
            self.attrs.append(tuple(dict.fromkeys([p[side] for p in spec.on] + args)))
        self.accs = [None if not isinstance(a.arg, Col) else accumulator(a.func, dtypes[a.arg.stream][a.arg.attr]) for a in spec.aggs]
        self.buffers = [TupleBuffer(), TupleBuffer()]
        self.next_k: int | None = None
        self.last_ts: int | None = None
        self.keys_seen = 1024
        self.blocks = self.buffered_peak = 0

    # ---------------------------------------------------------------- input

    def add(self, batches: list[tuple[np.ndarray, dict[str, np.ndarray]] | None]) -> None:
        """One merged chunk: per input ``(ts, columns)`` or None; all later tuples are at or after its last ts."""
        for side, batch in enumerate(batches):
            if batch is None or not len(batch[0]):
                continue
            ts, cols = batch
            if self.next_k is None:  # the first evaluation: the first slide multiple at or after the first arrival
                self.next_k = -(-min(int(b[0][0]) for b in batches if b is not None and len(b[0])) // self.jspec.slide)
            self.last_ts = int(ts[-1]) if self.last_ts is None else max(self.last_ts, int(ts[-1]))
            self.buffers[side].append(select(self.jspec.wheres[side], ts, cols, self.attrs[side]))
        if self.last_ts is not None:
            self._answer(-(-self.last_ts // self.jspec.slide) - 1)

    def finish(self) -> None:
        if self.last_ts is not None:
            self._answer(-(-self.last_ts // self.jspec.slide))

    # ---------------------------------------------------------------- blocks

    def _answer(self, k_last: int) -> None:
        spec, lead = self.jspec, self.lead
        D = spec.slide
        while self.next_k is not None and self.next_k <= k_last:
            bufs = [b.whole() for b in self.buffers]
            self.buffered_peak = max(self.buffered_peak, sum(len(b["ts"]) for b in bufs if b))
            if not all(bufs):  # a window without tuples of one input joins nothing
                self.next_k, self.last_nonempty = k_last + 1, False
                return
            k0 = self.next_k
            if not (lead and self.last_nonempty):
                k0 = max(k0, max(-(-int(b["ts"][0]) // D) for b in bufs))
            if k0 > k_last:
                self.next_k = k_last + 1
                return
            k1 = min(k_last + 1, k0 + max(1, BLOCK_CELLS // max(self.keys_seen, 1)))
            data = []
            for side, b in enumerate(bufs):
                lo = np.searchsorted(b["ts"], (k0 - lead) * D - spec.lengths[side], "left")
                hi = np.searchsorted(b["ts"], (k1 - 1) * D, "right")
                data.append({a: v[lo:hi] for a, v in b.items()})
            self._block(k0, k1, data)
            self.next_k = k1
            for side, buf in enumerate(self.buffers):
                buf.drop_before((k1 - lead) * D - spec.lengths[side])

    def _block(self, k0: int, k1: int, data: list[dict]) -> None:
        """Evaluations ``k0 .. k1-1`` (and ``k0-1`` before them for ISTREAM / DSTREAM) from each input's ``data``."""
        spec, lead = self.jspec, self.lead
        sizes = [len(d["ts"]) for d in data]
        self.blocks += 1
        ends = np.arange(k0 - lead, k1, dtype=np.int64) * spec.slide
        if not all(sizes):
            self.last_nonempty = False
            return
        # join keys of both inputs, encoded together (value order)
        uniq, codes = encode_groups([np.concatenate([data[0][a], data[1][b]]) for a, b in spec.on], sum(sizes))
        keys = len(uniq[0])
        self.keys_seen = keys
        cuts = np.union1d(ends, np.union1d(ends - spec.lengths[0] - 1, ends - spec.lengths[1] - 1))
        shape = (len(cuts), keys)
        per_side = []
        for side, d in enumerate(data):
            pane = np.searchsorted(cuts, d["ts"], "left")
            key = codes[: sizes[0]] if side == 0 else codes[sizes[0] :]
            lo = np.searchsorted(cuts, ends - spec.lengths[side] - 1) + 1
            hi = np.searchsorted(cuts, ends) + 1
            per_side.append((d, pane, key, lo, hi))

        def window(acc, side: int, attr: str | None, synopsis: str = "running") -> tuple:
            d, pane, key, lo, hi = per_side[side]
            part = acc.partial(None if attr is None else d[attr], pane, key, shape)
            return SYNOPSES[synopsis](acc, part, lo, hi)

        n = [window(self.count, side, None)[0].astype(np.int64) for side in (0, 1)]
        pairs = n[0] * n[1]  # join results per (window, key)
        # groups: the keys' values of the group-by columns (value order); cells summed over each group's keys
        gvals, gcode = encode_groups([uniq[j] for j in spec.key_pairs], keys)
        order = np.argsort(gcode, kind="stable")
        starts = np.flatnonzero(np.r_[True, gcode[order][1:] != gcode[order][:-1]]) if keys else np.zeros(0, np.int64)

        def reduce(ufunc, cells: np.ndarray) -> np.ndarray:
            return ufunc.reduceat(cells[:, order], starts, axis=1)

        total = reduce(np.add, pairs)
        cells: dict = {name: (np.broadcast_to(col, total.shape), None) for name, col in zip(spec.key_names, gvals)}
        for a, acc in zip(spec.aggs, self.accs):
            if acc is None:
                cells[a.name] = (total, None)
                continue
            side = a.arg.stream  # type: ignore[union-attr]  # an argument's column
            attr, other = a.arg.attr, n[1 - side]  # type: ignore[union-attr]
            if a.func == "count":
                cells[a.name] = (reduce(np.add, window(acc, side, attr)[0].astype(np.int64) * other), None)
            elif a.func in ("sum", "avg"):
                s, c = window(acc, side, attr)
                s_join, c_join = reduce(np.add, s * other), reduce(np.add, c.astype(np.int64) * other)
                empty = c_join == 0
                if a.func == "avg":
                    with np.errstate(invalid="ignore", divide="ignore"):
                        s_join = s_join.astype(np.float64) / np.where(empty, 1, c_join)
                cells[a.name] = (s_join, empty if empty.any() else None)
            else:
                ext, c = window(acc, side, attr, spec.synopsis(a, side))
                fill = acc.identity((1, 1))[0][0, 0]
                ext = np.where((c > 0) & (other > 0), ext, fill)
                c_join = reduce(np.add, c.astype(np.int64) * other)
                ext = reduce(np.minimum if a.func == "min" else np.maximum, ext)
                empty = c_join == 0
                vals, _ = acc.value((ext, np.where(empty, 0, 1).astype(np.int32)))
                cells[a.name] = (vals, empty if empty.any() else None)
        self.output(gvals, cells, total != 0, ends)
