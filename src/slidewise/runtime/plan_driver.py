"""Driving a general plan's operator network instant by instant (Golab's thesis §3.5, docs/semantics.md).

:class:`PlanRunner` groups arrivals by timestamp and runs the operators of a
:class:`slidewise.runtime.plan_engine.PlanNetwork` (children first) at every instant
that has an arrival or an operator event. Per instant only the operators
with work run: those fed by a child (or an arrival) and those whose cached
:meth:`~slidewise.operators.incremental.Incremental.next_event` is due; each
gets :meth:`expire` when due, then one :meth:`push` per child with rows. The
rest keep their state untouched, so skipping them is exact
(``next_event`` is the operator contract: nothing changes before it); every
operator runs at the first instant, and an operator whose ``expire`` also
closes per-instant bookkeeping (:class:`~slidewise.operators.output.MixedJoin`)
gets it whenever it runs. The same executor path serves NT, DIRECT and UPA.

State is accounted incrementally: sizes are re-read only from the operators
that ran, which keeps the peak and the time-weighted average exact
(``state_tuples_avg``, the thesis's "average space", §3.6) and splits it per
operator (what each strategy's state consists of).

**Spans.** With ``span > 1`` (the default, :data:`DEFAULT_SPAN`) the
executor runs up to ``span`` consecutive instants per pass: every operator
gets the timed groups of its children for the whole span in one
:meth:`~slidewise.operators.incremental.Incremental.advance` call (which
equals the per-instant calls; stateless and hot operators do it in one
loop), and the output operator still closes each instant. Answers are
identical to ``span=1``; the first instant always runs alone. State sizes
are then read once per span: the peak and the time-weighted average are
sampled at span ends (each span counted at the state it started with), an
error of at most ``span`` instants per change. ``span=1`` keeps the exact
per-instant accounting.
"""

from __future__ import annotations

from operator import itemgetter

import numpy as np
import pandas as pd

from slidewise.errors import SourceError
from slidewise.model.batch import NO_EXP
from slidewise.operators.incremental import Incremental, instants
from slidewise.operators.output import OutputOperator
from slidewise.plan.logical import CHANGELOG, Pattern
from slidewise.plan.query import eval_time
from slidewise.runtime.outputs import shielded

__all__ = ["DEFAULT_SPAN", "PlanRunner"]

#: Instants per executor pass (see the module doc).
DEFAULT_SPAN = 64


class PlanRunner:
    """Arrivals grouped by timestamp, run instant by instant through ``net`` (see the module doc)."""

    def __init__(self, net, sink, collect: bool, columns: list[str], span: int = DEFAULT_SPAN):
        self.net, self.sink, self.collect, self.columns = net, sink, collect, columns
        self.span = max(1, int(span))
        self.ops, self.children = net.ops, net.children
        self.output: OutputOperator = net.ops[-1]
        self.queue: dict[int, list] = {}  # ts -> [(leaf operators, rows)] not yet run
        self.last_now: int | None = None
        self.last_input: int | None = None
        self.buffer: list[tuple] = []
        self.frames: list[pd.DataFrame] = []
        self.results = self.retractions = self.negatives = self.state_peak = 0
        self.instants = 0  # instants with arrivals
        self.passes = 0  # executor passes: instants (span 1) or spans
        n = len(self.ops)
        self.next: list = [NO_EXP] * n  # cached next_event() of each operator (NO_EXP: none)
        self.sizes = [0] * n  # cached state_size() of each operator
        self.state = 0  # sum of sizes
        self.first_now: int | None = None
        self.area = 0  # ∫ state dt over [first_now, last_now)
        self.op_area = [0] * n  # the same per operator
        self.op_since = [0] * n  # instant of each operator's last size change
        self.op_peak = [0] * n
        # expire() only when due (Incremental.next_event's contract), except for operators whose
        # expire() also closes the previous instant's bookkeeping
        self.every_instant = [op.expire_every_instant for op in self.ops]
        self.static = [_stateless(op) for op in self.ops]  # no state, no events: nothing to re-read
        # outputs that may hold negative tuples: every one under NT, else those of strict operators
        self.count_negatives = [net.strategy == "nt" or getattr(op.ctx, "output", None) == Pattern.STR or not static for op, static in zip(self.ops, self.static)]
        self.steps = [
            (i, op, tuple(kids), tuple(kids[0]) if len(kids) == 1 else None, self.static[i], self.every_instant[i])
            for i, (op, kids) in enumerate(zip(self.ops, self.children))
        ]
        self.outputs: list = [()] * n  # each operator's rows of the current instant

    def add(self, source: str, batch, is_table: bool) -> None:
        """Arrivals of one source in one chunk (timestamps non-decreasing)."""
        leaves = self.net.feeds.get(source, [])
        if not leaves:
            return
        ts = batch.ts.tolist()
        cols = self.net.columns[source]  # the attributes the plan reads (plan.prune)
        if is_table:
            vals = list(zip(*(batch.cols[c].tolist() for c in cols))) if cols else [()] * len(ts)
            ops = batch.cols["op"].tolist() if "op" in batch.cols else ["+"] * len(ts)
            bad = [o for o in ops if o not in ("+", "-")]
            if bad:
                raise SourceError(f"table {source}: unknown op {bad[0]!r}", hint="use '+' (insert) or '-' (delete)")
            rows = [(v, t, NO_EXP, 1 if o == "+" else -1) for v, t, o in zip(vals, ts, ops)]
        elif source in self.net.changelogs:
            signs = batch.cols[CHANGELOG]
            bad = signs[(signs != 1) & (signs != -1)]
            if len(bad):
                raise SourceError(f"stream {source}: {CHANGELOG} must be 1 or -1, got {bad.tolist()[0]!r}", hint="+1 inserts a row, -1 retracts an earlier equal row")
            vals = zip(ts, *(batch.cols[c].tolist() for c in cols))
            rows = [(v, v[0], NO_EXP, s) for v, s in zip(vals, signs.tolist())]
        else:
            vals = zip(ts, *(batch.cols[c].tolist() for c in cols))
            rows = [(v, v[0], NO_EXP, 1) for v in vals]
        queue = self.queue
        if len(ts) == 1 or bool(np.all(batch.ts[1:] != batch.ts[:-1])):
            get = queue.get
            for t, row in zip(ts, rows):  # one row per instant
                entry = get(t)
                if entry is None:
                    queue[t] = [(leaves, [row])]
                else:
                    entry.append((leaves, [row]))
            return
        bounds = (np.flatnonzero(np.diff(batch.ts)) + 1).tolist()
        for lo, hi in zip([0, *bounds], [*bounds, len(ts)]):
            t = ts[lo]
            entry = queue.get(t)
            if entry is None:
                queue[t] = [(leaves, rows[lo:hi])]
            else:
                entry.append((leaves, rows[lo:hi]))

    def flush_output(self, final: bool = False) -> None:
        """Run every complete instant queued so far (all but the latest unless ``final``)."""
        q = self.queue
        if q:
            times = sorted(q)
            ready = times if final else times[:-1]
            if ready and self.first_now is None:
                t = ready.pop(0)
                self._instant(t, q.pop(t))  # the first instant alone: every operator's first expire()
            if self.span == 1:
                for t in ready:
                    self._advance_before(t)
                    self._instant(t, q.pop(t))
            elif ready:
                self._spans(ready, ready[-1] + 1)
        self._write()

    def finish(self, slide: int | None) -> None:
        self.flush_output(final=True)
        if self.last_input is None:
            return
        end = end_instant(self.last_input, slide)
        self._advance_before(end + 1)
        self._write()

    def _advance_before(self, t: int) -> None:
        """Visit every event instant before ``t``."""
        if self.span > 1:
            self._spans([], t)
            return
        nxt = self.next
        while True:
            e = min(nxt)
            if e == NO_EXP:
                return
            if self.last_now is not None and e <= self.last_now:
                e = self.last_now + 1
            if e >= t:
                return
            self._instant(e, [])

    def _spans(self, ready: list[int], limit: int) -> None:
        """Arrival instants ``ready`` (queued) and every event before ``limit``, ``span`` instants a pass."""
        q, nxt, width = self.queue, self.next, self.span
        i, n = 0, len(ready)
        while True:
            e = min(nxt)
            if e != NO_EXP and self.last_now is not None and e <= self.last_now:
                e = self.last_now + 1
            lo = ready[i] if i < n and ready[i] < e else e
            if lo >= limit:
                return
            hi = min(lo + width - 1, limit - 1)
            j = i
            while j < n and ready[j] <= hi:
                j += 1
            self._span(lo, hi, [(t, q.pop(t)) for t in ready[i:j]])
            i = j

    def _span(self, lo: int, hi: int, arrivals: list) -> None:
        """One pass over instants ``lo..hi``: ``arrivals`` = ``[(instant, [(leaves, rows)])]``."""
        if arrivals:
            self.last_input = arrivals[-1][0]
            self.instants += len(arrivals)
        self.passes += 1
        self.area += self.state * (hi - self.last_now)
        self.last_now = hi
        fed: dict[int, list] = {}
        for t, entries in arrivals:
            if len(entries) == 1:
                leaves, rows = entries[0]
                if len(leaves) == 1:
                    got = fed.get(leaves[0])
                    if got is None:
                        fed[leaves[0]] = [(t, rows)]
                    else:
                        got.append((t, rows))
                    continue
            per_leaf: dict[int, list] = {}
            for leaves, rows in entries:
                for i in leaves:
                    per_leaf[i] = per_leaf.get(i, []) + rows
            for i, rows in per_leaf.items():
                fed.setdefault(i, []).append((t, rows))
        nxt, outputs = self.next, self.outputs
        for i, op, kids, single, static, _every in self.steps:
            inputs = _inputs(outputs, fed, i, kids, single)
            if not inputs and nxt[i] > hi:
                outputs[i] = ()
                continue  # nothing fed, nothing due: state unchanged
            if op is self.output:
                self._root_span(inputs, lo, hi)
                continue
            groups = op.advance(inputs, lo, hi)
            outputs[i] = groups
            if groups and self.count_negatives[i]:
                rows = sum([len(r) for _t, r in groups])
                self.negatives += (rows - sum([x[3] for _t, r in groups for x in r])) >> 1
            if not static:
                self._reread(i, op, hi)
        if self.state > self.state_peak:
            self.state_peak = self.state

    def _root_span(self, inputs, lo: int, hi: int) -> None:
        """The output operator over ``lo..hi``: per instant expire (when due), push, end_instant."""
        out = self.output
        for t, due, given in instants(out, inputs, lo, hi):
            if due:
                out.expire(t)
            for side, rows in given:
                out.push(side, rows, t)
            self._emit(out.end_instant(t))
        self._reread(len(self.next) - 1, out, hi)

    def _instant(self, now: int, arrivals: list) -> None:
        self.passes += 1
        if arrivals:
            self.last_input = now
            self.instants += 1
        if self.first_now is None:
            self.first_now = self.last_now = now
            first = True
        else:
            self.area += self.state * (now - self.last_now)
            first = False
        self.last_now = now
        fed: dict[int, list] = {}
        if len(arrivals) == 1 and len(arrivals[0][0]) == 1:
            fed[arrivals[0][0][0]] = arrivals[0][1]
        else:
            for leaves, rows in arrivals:
                for i in leaves:
                    got = fed.get(i)
                    fed[i] = rows if got is None else got + rows
        nxt = self.next
        outputs: list = self.outputs
        ran_root = False
        for i, op, kids, single, static, every in self.steps:
            due = nxt[i] <= now
            inputs = _inputs(outputs, fed, i, kids, single)
            if not (inputs or due or first):
                outputs[i] = ()
                continue  # nothing fed, nothing due: state unchanged
            rows = op.expire(now) if (due or first or every) else []
            for side, given in inputs:
                out = op.push(side, given, now)
                if out:
                    rows = rows + out if rows else out
            outputs[i] = rows
            if op is self.output:
                ran_root = True
                continue
            if rows:
                self.negatives += (len(rows) - sum(map(_sign, rows))) >> 1
            if not static:
                self._reread(i, op, now)
        if ran_root:
            self._emit(self.output.end_instant(now))
            self._reread(len(nxt) - 1, self.output, now)  # after end_instant: it may fill an output window
        if self.state > self.state_peak:
            self.state_peak = self.state

    def _emit(self, rows: list[tuple]) -> None:
        """The output operator's rows ``(vals, ts, sign)`` of one instant, to the buffer."""
        if rows:
            self.buffer.extend(rows)
            pos = sum([r[2] > 0 for r in rows])
            self.results += pos
            self.retractions += len(rows) - pos

    def _reread(self, i: int, op, now: int) -> None:
        """Operator ``i`` ran up to ``now``: cache its next event and account its state size."""
        e = op.next_event()
        self.next[i] = NO_EXP if e is None else e
        self._resize(i, op.state_size(), now)

    def _resize(self, i: int, size: int, now: int) -> None:
        old = self.sizes[i]
        if size != old:
            self.op_area[i] += old * (now - self.op_since[i])
            self.op_since[i] = now
            self.sizes[i] = size
            self.state += size - old
            if size > self.op_peak[i]:
                self.op_peak[i] = size

    def state_stats(self) -> dict:
        """Peak, time-weighted average and per-operator composition of the state (tuples).

        The state after an instant is held until the next one; the last
        instant's state counts for one time unit. ``state_area`` and
        ``state_span`` (its integral and length) let a caller average over a
        part of the run by difference.
        """
        if self.first_now is None:
            return {"state_tuples_peak": 0, "state_tuples_avg": 0.0, "state_area": 0, "state_span": 0, "state_by_operator": {}}
        end = self.last_now + 1
        span = end - self.first_now
        area = self.area + self.state * (end - self.last_now)
        by_op: dict = {}
        for i, op in enumerate(self.ops):
            a = self.op_area[i] + self.sizes[i] * (end - self.op_since[i])
            label, k = f"{op.name}", 2
            while label in by_op:
                label, k = f"{op.name} #{k}", k + 1
            by_op[label] = {"avg": round(a / span, 2), "peak": self.op_peak[i], "final": self.sizes[i], "area": a}
        return {"state_tuples_peak": self.state_peak, "state_tuples_avg": round(area / span, 2), "state_area": area, "state_span": span, "state_by_operator": by_op}

    def write_pending(self) -> None:
        """Write the rows of the instants completed so far (after an interrupt)."""
        self._write()

    def _write(self) -> None:
        if not self.buffer:
            return
        with shielded():  # a signal waits until the rows are written
            self._write_rows()

    def _write_rows(self) -> None:
        rows, self.buffer = self.buffer, []
        width = len(self.columns) - 2
        vals, ts, signs = zip(*rows)
        columns = list(zip(*vals)) if width else []
        cols = {name: _array(list(col)) for name, col in zip(self.columns[:width], columns)}
        cols["ts"] = np.array(ts, dtype=np.int64)
        cols["sign"] = np.array(signs, dtype=np.int8)
        if self.sink is not None:
            self.sink.write(cols)
        if self.collect:
            self.frames.append(pd.DataFrame(cols))


_sign = itemgetter(3)


def end_instant(last_input: int, slide: int | None) -> int:
    """The last instant a run evaluates: its last input, or for periodic plans the next slide multiple."""
    return last_input if slide is None else eval_time(last_input, slide)


def _inputs(outputs: list, fed: dict, i: int, kids: tuple, single) -> tuple | list:
    """``[(side, rows or groups)]`` for operator ``i``: its children's outputs, or a leaf's arrivals."""
    if single is not None:
        given = outputs[single[1]]
        return ((single[0], given),) if given else ()
    if kids:
        return [(side, outputs[c]) for side, c in kids if outputs[c]]
    got = fed.get(i)
    return ((0, got),) if got else ()


def _stateless(op: Incremental) -> bool:
    """True if ``op`` never holds state nor schedules events (select, project, union, UPA windows)."""
    cls = type(op)
    return getattr(op, "stateless", False) or (cls.next_event is Incremental.next_event and cls.state_size is Incremental.state_size)


def _array(values: list) -> np.ndarray:
    arr = np.asarray(values)
    return arr if arr.dtype.kind in "biuf" else np.array(values, dtype=object)
