"""Duplicate elimination over signed tuples in three forms (Golab's thesis §3.2.2, §3.5.2).

The answer at τ holds each value ``v`` once iff some input row with values
``v`` is in the input's answer at τ.

* :class:`DistinctNaive` — weak non-monotonic (§3.2.2, Fig. 3.1(c)): stores
  the input and the output; when an output row expires and other rows with
  the same value remain, re-emits one of them (the youngest: for WK input,
  the one that expires last) with its own ``exp``. Handles negative input:
  if the cancelled row backed the output row, emits −1 and a replacement.
* :class:`DeltaStar` — δ* (§3.5.2): stores the output plus, per output
  value, one *auxiliary* duplicate — the one that expires last. At most twice
  the output size, and the input is never scanned. Only for input that is not
  strict non-monotonic (an auxiliary row could be deleted early) and not NT.
* :class:`DistinctStrict` — strict non-monotonic (§3.2.2, STREAM's form):
  counts per value; emits +1 when a count leaves 0 and −1 when it returns to
  0; output rows never expire by time (``exp = NO_EXP``). Needs negative
  input tuples (NT) or its own copy of the input window (DIRECT/UPA).

Output rows have ``ts = now``. All three give the same answer at every
instant; they differ in the rows emitted and the state kept (δ* vs naive is
one of the thesis's experiments, §3.6).
"""

from __future__ import annotations

from slidewise.errors import ExecutionError, PlanError
from slidewise.model.batch import NO_EXP
from slidewise.operators.incremental import Incremental
from slidewise.plan.logical import Pattern

__all__ = ["DeltaStar", "DistinctNaive", "DistinctStrict"]


def _next(*stores) -> int | None:
    times = [t for t in (s.next_expiry() for s in stores) if t is not None]
    return min(times) + 1 if times else None


def _longest(rows):
    """The row that expires last; among equals, the youngest."""
    best = None
    for r in rows:
        if best is None or r[2] > best[2] or (r[2] == best[2] and r[1] >= best[1]):
            best = r
    return best


class DistinctNaive(Incremental):
    """Weak non-monotonic duplicate elimination storing its input and output (§3.2.2)."""

    name = "distinct-naive"

    def __init__(self, node, ctx):
        super().__init__(node, ctx)
        inp = ctx.inputs[0] if ctx.inputs else Pattern.WKS
        self.input = ctx.store(inp)
        self.output = ctx.store(max(Pattern.WK, inp))

    def push(self, side, rows, now):
        out: list = []
        inp, output = self.input, self.output
        for row in rows:
            v, _, exp, sign = row
            if sign > 0:
                inp.insert(row)
                if not output.lookup(v):
                    o = (v, now, exp, 1)
                    output.insert(o)
                    out.append(o)
                continue
            if inp.remove(v, exp) is None:
                continue
            current = output.lookup(v)
            if not current or current[0][2] != exp or any(r[2] == exp for r in inp.lookup(v)):
                continue
            output.remove(v, exp)
            out.append((v, now, exp, -1))
            best = _longest(inp.lookup(v))
            if best is not None:
                o = (v, now, best[2], 1)
                output.insert(o)
                out.append(o)
        return out

    def expire(self, now):
        self.input.expire(now)
        out: list = []
        for o in self.output.expire(now):
            best = _longest(self.input.lookup(o[0]))
            if best is not None:
                new = (o[0], now, best[2], 1)
                self.output.insert(new)
                out.append(new)
        return out

    def next_event(self):
        return _next(self.input, self.output)

    def state_size(self):
        return len(self.input) + len(self.output)


class DeltaStar(Incremental):
    """δ*: output state plus the auxiliary longest-living duplicate per value (§3.5.2)."""

    name = "distinct-delta-star"

    def __init__(self, node, ctx):
        super().__init__(node, ctx)
        if ctx.strategy == "nt" or (ctx.inputs and ctx.inputs[0] == Pattern.STR):
            raise PlanError(
                "δ* distinct needs input without premature deletions (Golab's thesis §3.5.2)",
                hint="use the strict (counting) or naive distinct for strict non-monotonic input or the NT strategy",
            )
        inp = ctx.inputs[0] if ctx.inputs else Pattern.WKS
        self.output = ctx.store(max(Pattern.WK, inp))
        self.aux: dict = {}

    def push(self, side, rows, now):
        """O(1) per row: one hash probe of the output, at most one auxiliary update."""
        out: list = []
        output, aux = self.output, self.aux
        lookup = output.index_get  # the hash index: value -> its output row(s)
        for row in rows:
            v, _, exp, sign = row
            if sign < 0:
                raise ExecutionError("δ* distinct received a negative tuple", hint="its input must not be strict non-monotonic; plan the strict distinct instead")
            current = lookup(v)
            if not current:
                o = (v, now, exp, 1)
                output.insert(o)
                out.append(o)
            elif exp > current[0][2]:
                a = aux.get(v)
                if a is None or exp >= a[2]:
                    aux[v] = row
        return out

    def expire(self, now):
        """Expired output rows (in ``exp`` order from the store) are replaced by their auxiliary duplicate."""
        expired = self.output.expire(now)
        if not expired:
            return []
        out: list = []
        aux, insert = self.aux, self.output.insert
        for o in expired:
            a = aux.pop(o[0], None)
            if a is not None and a[2] >= now:
                new = (o[0], now, a[2], 1)
                insert(new)
                out.append(new)
        return out

    def advance(self, inputs, lo, hi):
        """Many instants in one pass: output expirations interleaved at their instants; a push can
        only add output rows, so the next event after it is known from the rows it emitted."""
        if len(inputs) > 1:
            return super().advance(inputs, lo, hi)
        out: list = []
        push, expire, event = self.push, self.expire, self._event

        def expirations_before(limit: int, e: int, prev: int) -> tuple[int, int]:
            while True:
                if e <= prev:
                    e = prev + 1
                if e >= limit:
                    return e, prev
                got = expire(e)
                if got:
                    out.append((e, got))
                prev, e = e, event()

        e, prev = event(), lo - 1
        for t, rows in inputs[0][1] if inputs else ():
            e, prev = expirations_before(t, e, prev)
            grp = []
            if e <= t:
                grp, e = expire(t), event()
            got = push(0, rows, t)
            if got:
                grp = grp + got if grp else got
                first = min([o[2] for o in got]) + 1
                if first < e:
                    e = first
            if grp:
                out.append((t, grp))
            prev = t
        expirations_before(hi + 1, e, prev)
        return out

    def _event(self) -> int:
        t = self.output.next_expiry()
        return NO_EXP if t is None else t + 1

    def next_event(self):
        t = self.output.next_expiry()
        return None if t is None else t + 1

    def state_size(self):
        return len(self.output) + len(self.aux)


class DistinctStrict(Incremental):
    """Strict non-monotonic duplicate elimination by counting (§3.2.2)."""

    name = "distinct-strict"

    def __init__(self, node, ctx):
        super().__init__(node, ctx)
        self.counts: dict = {}
        inp = ctx.inputs[0] if ctx.inputs else Pattern.WKS
        self.input = None if ctx.strategy == "nt" else ctx.store(inp)

    def _drop(self, v, now, out) -> None:
        c = self.counts.get(v)
        if c is None:
            return
        if c == 1:
            del self.counts[v]
            out.append((v, now, NO_EXP, -1))
        else:
            self.counts[v] = c - 1

    def push(self, side, rows, now):
        out: list = []
        counts, store = self.counts, self.input
        for row in rows:
            v, _, exp, sign = row
            if sign > 0:
                if store is not None:
                    store.insert(row)
                c = counts.get(v, 0)
                counts[v] = c + 1
                if c == 0:
                    out.append((v, now, NO_EXP, 1))
            elif store is None or store.delete(v, exp):
                self._drop(v, now, out)
        return out

    def expire(self, now):
        out: list = []
        if self.input is not None:
            for r in self.input.expire(now):
                self._drop(r[0], now, out)
        return out

    def next_event(self):
        return None if self.input is None else _next(self.input)

    def state_size(self):
        return len(self.counts) + (len(self.input) if self.input is not None else 0)
