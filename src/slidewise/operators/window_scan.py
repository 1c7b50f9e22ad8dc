"""Base windows and relation feeders: the leaves of a general plan (Golab's thesis §2.2, §3.2).

A :class:`WindowScan` turns the arrivals of one stream (or of a subquery's
monotonic output) into the signed rows of its sliding window, per strategy
(:mod:`slidewise.operators.incremental`):

* ``[RANGE T]`` / ``[NOW]`` (``T = 0``): a tuple is in the window at every
  τ with ``ts <= τ <= ts + T``. Under ``direct`` and ``upa`` it is one +1 row
  with ``exp = ts + T`` and nothing else (operators expire it themselves,
  Golab's thesis §2.2.2); under ``nt`` it is a +1 row with ``exp = NO_EXP`` and an
  explicit −1 row at instant ``ts + T + 1`` (the negative tuple approach,
  §2.2.1), which makes the window keep a FIFO of its contents.
* ``[ROWS N]`` and ``[PARTITION BY k ROWS N]``: +1 on arrival and, under every
  strategy, a −1 for the tuple it evicts at the same instant (count windows
  are strict non-monotonic, §3.2.1); ``exp = NO_EXP``.
* ``[UNBOUNDED]``: +1 rows that never expire.

A changelog stream's window (``Scan.changelog``; time windows only) keeps its
contents under every strategy and sends explicit −1 rows, as NT does: at
``ts + T + 1`` for an expiration, and at once for a retraction — an input row
with sign −1 removes the oldest equal tuple (same attributes) still in the
window, and does nothing when there is none.

``INTERNAL`` windows behave exactly like external ones here: their expirations
govern operator state (Golab's thesis §3.3.2); the output operator makes the result
append-only. Input rows are ``(vals, ts, exp, sign)`` with ``sign = +1``.

:class:`TableFeeder` turns a relation's updates (rows with ``op`` ``+`` or
``-``; the key is the first attribute) into signed rows that never expire;
the NRR semantics themselves live in the relation join.

>>> from slidewise.operators.incremental import Context
>>> from slidewise.plan.logical import Scan
>>> from slidewise.plan.query import WindowSpec
>>> w = WindowScan(Scan("S", "S", WindowSpec("range", 5), columns=("a",)), Context("nt"))
>>> w.push(0, [((1, 7), 1, NO_EXP, 1)], 1) == [((1, 7), 1, NO_EXP, 1)]
True
>>> w.next_event(), w.expire(7)
(7, [((1, 7), 7, 9223372036854775807, -1)])
"""

from __future__ import annotations

from collections import deque

from slidewise.errors import PlanError, SourceError
from slidewise.operators.incremental import NO_EXP, Context, Incremental, Row
from slidewise.plan.logical import Node
from slidewise.plan.query import WindowSpec


class WindowScan(Incremental):
    """The window ``spec`` (default: the node's own window) over the rows pushed to it."""

    name = "window"

    def __init__(self, node: Node, ctx: Context, spec: WindowSpec | None = None, schema: tuple[str, ...] | None = None):
        super().__init__(node, ctx)
        self.spec = spec if spec is not None else node.window
        if self.spec is None:
            raise PlanError(f"{node.label()}: no window to scan")
        if self.spec.slide is not None and self.spec.kind != "range":
            raise PlanError("SLIDE needs a time window")
        schema = tuple(schema if schema is not None else node.schema)
        self.count = self.spec.kind == "rows"
        self.changelog = bool(getattr(node, "changelog", False)) and not self.count
        self.negatives = (ctx.strategy == "nt" or self.changelog) and self.spec.kind in ("range", "now")
        self.key_index = None
        if self.count and self.spec.partition_by:
            wanted = self.spec.partition_by
            matches = [i for i, c in enumerate(schema) if c == wanted or c.rsplit(".", 1)[-1] == wanted]
            if not matches:
                raise PlanError(f"PARTITION BY {wanted}: no such column in {node.label()}", hint=f"the columns are: {', '.join(schema)}")
            self.key_index = matches[0]
        self._fifo: deque = deque()  # nt: (expiry instant, vals); count: vals
        self._parts: dict = {}  # partitioned count windows: key -> deque of vals
        self._held = 0  # tuples in _fifo and _parts
        self.length = self.spec.length if self.spec.kind in ("range", "now") else None
        self.stateless = not self.count and not self.negatives and not self.changelog  # direct/upa time windows keep nothing

    def push(self, side: int, rows: list[Row], now: int) -> list[Row]:
        out: list[Row] = []
        spec = self.spec
        if self.count:
            n = spec.size
            for vals, _ts, _exp, _sign in rows:
                out.append((vals, now, NO_EXP, 1))
                if self.key_index is None:
                    buf = self._fifo
                else:
                    buf = self._parts.setdefault(vals[self.key_index], deque())
                buf.append(vals)
                self._held += 1
                if len(buf) > n:
                    out.append((buf.popleft(), now, NO_EXP, -1))
                    self._held -= 1
            return out
        if self.changelog:
            return self._changelog(rows, now)
        if spec.kind == "unbounded":
            return [(vals, now, NO_EXP, 1) for vals, *_ in rows]
        length = self.length
        if self.negatives:
            fifo = self._fifo
            for vals, ts, _exp, _sign in rows:
                fifo.append((ts + length + 1, vals))
                out.append((vals, now, NO_EXP, 1))
            return out
        return [(vals, now, ts + length, 1) for vals, ts, _exp, _sign in rows]

    def _changelog(self, rows: list[Row], now: int) -> list[Row]:
        """Insertions kept in the FIFO (by expiry, ``NO_EXP`` for UNBOUNDED); a retraction removes the oldest equal tuple."""
        fifo, out = self._fifo, []
        due = NO_EXP if self.spec.kind == "unbounded" else None
        for vals, ts, _exp, sign in rows:
            if sign > 0:
                fifo.append((due if due is not None else ts + self.length + 1, vals))
                out.append((vals, now, NO_EXP, 1))
                continue
            attrs = vals[1:]
            for i, (_due, held) in enumerate(fifo):
                if held[1:] == attrs:
                    del fifo[i]
                    out.append((held, now, NO_EXP, -1))
                    break
        return out

    def advance(self, inputs, lo: int, hi: int):
        """Many instants in one pass (:meth:`Incremental.advance`): time windows map rows directly;
        under NT the negative tuples are interleaved at their own instants."""
        if self.count or self.changelog or self.spec.kind == "unbounded" or len(inputs) > 1:
            return super().advance(inputs, lo, hi)
        groups = inputs[0][1] if inputs else ()
        length = self.length
        if not self.negatives:
            return [(t, [(vals, t, ts + length, 1) for vals, ts, _exp, _sign in rows]) for t, rows in groups]
        fifo, out = self._fifo, []
        prev = lo - 1
        for t, rows in groups:
            prev = self._negatives_before(t, prev, out)
            grp = []
            while fifo and fifo[0][0] <= t:
                grp.append((fifo.popleft()[1], t, NO_EXP, -1))
            for vals, ts, _exp, _sign in rows:
                fifo.append((ts + length + 1, vals))
                grp.append((vals, t, NO_EXP, 1))
            out.append((t, grp))
            prev = t
        self._negatives_before(hi + 1, prev, out)
        return out

    def _negatives_before(self, limit: int, prev: int, out: list) -> int:
        """Append the NT expirations due before ``limit`` as groups at their instants (after ``prev``)."""
        fifo = self._fifo
        while fifo:
            e = fifo[0][0]
            if e <= prev:
                e = prev + 1
            if e >= limit:
                break
            grp = []
            while fifo and fifo[0][0] <= e:
                grp.append((fifo.popleft()[1], e, NO_EXP, -1))
            out.append((e, grp))
            prev = e
        return prev

    def expire(self, now: int) -> list[Row]:
        if not self.negatives:
            return []
        fifo = self._fifo
        out = []
        while fifo and fifo[0][0] <= now:
            out.append((fifo.popleft()[1], now, NO_EXP, -1))
        return out

    def next_event(self) -> int | None:
        return self._fifo[0][0] if self.negatives and self._fifo else None  # changelog UNBOUNDED: never due

    def state_size(self) -> int:
        return self._held if self.count else len(self._fifo)


class TableFeeder(Incremental):
    """Updates of relation ``node`` (a Scan of kind ``nrr`` or ``table``) as signed rows.

    Push rows ``(vals, ts, NO_EXP, sign)``: ``sign = +1`` inserts ``vals``,
    ``-1`` deletes the row whose key (first attribute) is ``vals[0]``. A
    duplicate insert, a delete of a missing key, or (NRR) re-inserting a
    deleted key is a :class:`~slidewise.errors.SourceError`.
    """

    name = "table"

    def __init__(self, node: Node, ctx: Context):
        super().__init__(node, ctx)
        self.live: dict = {}
        self.deleted: set = set()

    def push(self, side: int, rows: list[Row], now: int) -> list[Row]:
        out: list[Row] = []
        where = f"table {self.node.alias}"
        for vals, _ts, _exp, sign in rows:
            key = vals[0]
            if sign > 0:
                if key in self.live:
                    raise SourceError(f"key {key!r} inserted twice at ts {now}", location=where, hint="delete the row (op '-') before inserting a new one with its key")
                if key in self.deleted and self.node.kind == "nrr":
                    raise SourceError(
                        f"key {key!r} reused at ts {now} after it was deleted",
                        location=where,
                        hint="a non-retroactive relation cannot reuse a deleted key: results joined with the old row remain valid; use a new key",
                    )
                self.live[key] = vals
                out.append((vals, now, NO_EXP, 1))
            else:
                old = self.live.pop(key, None)
                if old is None:
                    raise SourceError(
                        f"delete of key {key!r} at ts {now}, which is not in the table", location=where, hint="a delete (op '-') names the key of a live row"
                    )
                self.deleted.add(key)
                out.append((old, now, NO_EXP, -1))
        return out

    def state_size(self) -> int:
        return len(self.live)


class SubqueryWindow(Incremental):
    """``(subquery) AS X [window]``: the window over the rows inserted into the subquery's answer.

    The subquery's answer is tracked like the output's (Golab's thesis §3.3.3): at
    each instant its net insertions, ordered by value, arrive in the window
    with ``ts`` = the instant; the subquery is monotonic when its windows are
    INTERNAL (§3.4), otherwise this windows its ISTREAM.
    """

    name = "subquery-window"

    def __init__(self, node: Node, ctx: Context):
        from slidewise.operators.output import AnswerTracker

        super().__init__(node, ctx)
        self.tracker = AnswerTracker(ctx, ctx.inputs[0] if ctx.inputs else ctx.output)
        self.window = WindowScan(node, ctx, spec=node.window, schema=node.schema)

    def expire(self, now: int) -> list[Row]:
        self.tracker.begin(now)
        return self.window.expire(now)

    def push(self, side: int, rows: list[Row], now: int) -> list[Row]:
        from slidewise.operators.output import _sorted_rows

        self.tracker.add(rows, now)
        arrivals = [(v, now, NO_EXP, 1) for v in _sorted_rows(+self.tracker.take())]
        return self.window.push(0, arrivals, now)

    def next_event(self) -> int | None:
        events = [e for e in (self.tracker.next_event(), self.window.next_event()) if e is not None]
        return min(events) if events else None

    def state_size(self) -> int:
        return len(self.tracker) + self.window.state_size()
