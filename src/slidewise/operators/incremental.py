"""The interface of incremental relational operators over signed tuples.

Golab's thesis §2.3.3 and §3.5: operators of a general plan consume and produce
*signed tuples*. A row is a plain tuple ``(vals, ts, exp, sign)``:

* ``vals`` — the attribute values, a tuple in the operator's output schema
  order (:attr:`slidewise.plan.logical.Node.schema`);
* ``ts`` — the instant the change happens;
* ``exp`` — the instant after which a positive row leaves the answer by
  itself (it is in the answer at every τ with ``ts <= τ <= exp``), or
  ``NO_EXP`` when it never expires by time (monotonic, count windows, or any
  row under the NT strategy);
* ``sign`` — +1 inserts, −1 deletes one earlier positive row with the same
  ``vals`` and ``exp`` (a *negative tuple*; it carries the ``exp`` of the
  row it cancels).

Three processing strategies (:data:`STRATEGIES`) choose how expirations
travel and how state is kept:

* ``nt`` — negative tuples: every expiration is an explicit −1 row, produced by
  the base windows when tuples leave them; every ``exp`` is ``NO_EXP``; state
  is hash tables keyed by value (deletion by lookup).
* ``direct`` — expiration by ``exp``: windows emit no negative tuples; each
  operator purges its state of rows with ``exp < now`` by scanning it; only
  strict non-monotonic operators (negation, aggregation, strict distinct,
  count windows, retroactive tables) emit −1 rows, for premature deletions.
* ``upa`` — update-pattern aware (Golab's thesis §3.5.2): like ``direct``, but the
  state structure follows the input's update pattern: FIFO for WKS (expire
  from the head), a calendar queue partitioned by ``exp`` for WK, and
  negative tuples only where the pattern is STR; δ* for DISTINCT over
  non-strict input.

The executor drives a plan instant by instant, bottom-up. At each instant
``now`` it calls, for every operator (children first): :meth:`expire` once,
then :meth:`push` with each child's rows of this instant (the rows a child
returned from its own ``expire`` and ``push`` calls at ``now``, in that
order). The answer after the instant's last call must equal Definition 3.1's
``Q(now)``; within an instant operators may emit a row and its deletion.
:meth:`next_event` lets the executor skip instants where nothing happens —
and operators with nothing due: an operator gets no call at an instant
where no child has rows for it and its last ``next_event()`` is later, and
gets :meth:`expire` only when that event is due (or at the first instant),
so ``expire`` must not do per-instant bookkeeping
(:mod:`slidewise.runtime.plan_driver`).

:meth:`advance` runs many instants in one call (the executor's spans): its
inputs and output are *timed groups*, lists of ``(instant, rows)`` in
increasing instant order, and it must leave the operator exactly as the
per-instant calls would. The default does those calls; stateless and hot
operators override it with one pass over the groups.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from slidewise.model.batch import NO_EXP
from slidewise.options import STRATEGIES
from slidewise.plan.logical import Node, Pattern

Row = tuple  # (vals: tuple, ts: int, exp: int, sign: int)

__all__ = ["NO_EXP", "STRATEGIES", "Context", "Incremental", "Row", "instants", "merge_groups"]

#: Timed groups: ``[(instant, rows), ...]``, instants increasing, each at most once.
Groups = list


def merge_groups(inputs) -> list:
    """``[(side, groups), ...]`` → ``[(instant, ((side, rows), ...)), ...]`` by instant, sides in input order."""
    if len(inputs) == 1:
        side, groups = inputs[0]
        return [(t, ((side, rows),)) for t, rows in groups]
    by_t: dict = {}
    for side, groups in inputs:
        for t, rows in groups:
            got = by_t.get(t)
            if got is None:
                by_t[t] = [(side, rows)]
            else:
                got.append((side, rows))
    return sorted(by_t.items())


def instants(op, inputs, lo: int, hi: int):
    """The instants ``op`` runs at in ``lo..hi``, in order: ``(t, due, [(side, rows)])``.

    ``t`` has input rows or ``op``'s :meth:`~Incremental.next_event`, re-read
    after each instant (an event not after the previous instant, or before
    ``lo``, is due at the next one); ``due``: the event is due at ``t``.
    """
    merged = merge_groups(inputs) if inputs else []
    e = op.next_event()
    e = NO_EXP if e is None else e
    prev, k, n = lo - 1, 0, len(merged)
    while True:
        if e <= prev:
            e = prev + 1
        t = merged[k][0] if k < n else NO_EXP
        if e < t:
            t = e
        if t > hi:
            return
        if k < n and merged[k][0] == t:
            given = merged[k][1]
            k += 1
        else:
            given = ()
        yield t, e <= t, given
        e = op.next_event()
        e = NO_EXP if e is None else e
        prev = t


@dataclass
class Context:
    """What an operator knows about its place in the plan.

    ``inputs``: the update pattern of each child's output (Golab's thesis §3.5.1);
    ``output``: this operator's output pattern; ``partitions``: calendar
    queue partitions for UPA (the thesis tests 10 and 50); ``aliases``: for
    :func:`slidewise.plan.logical.column_getter`; ``options``: operator
    specific choices (e.g. ``{"distinct": "delta_star" | "naive" | "strict"}``).
    """

    strategy: str
    inputs: tuple[Pattern, ...] = ()
    output: Pattern = Pattern.WKS
    partitions: int = 10
    aliases: tuple[str, ...] = ()
    options: dict = field(default_factory=dict)

    def store(self, pattern: Pattern, key=None, *, lookups: bool = True):
        """The state store for an input of ``pattern`` (:func:`slidewise.operators.state.stores.make_store`)."""
        from slidewise.operators.state.stores import make_store

        return make_store(self.strategy, pattern, key, self.partitions, lookups=lookups)


class Incremental:
    """Base class: one logical node, executed under one strategy."""

    name = "incremental"
    #: expire() also closes the previous instant's bookkeeping: call it at every instant the operator runs
    expire_every_instant = False

    def __init__(self, node: Node, ctx: Context):
        self.node = node
        self.ctx = ctx

    def expire(self, now: int) -> list[Row]:
        """Time has reached ``now``: drop state that expired (``exp < now``); emit what that causes."""
        return []

    def push(self, side: int, rows: list[Row], now: int) -> list[Row]:
        """Rows from child ``side`` at instant ``now``; returns this operator's output rows."""
        raise NotImplementedError

    def advance(self, inputs, lo: int, hi: int) -> Groups:
        """Instants ``lo..hi`` in one call; ``inputs``: ``[(side, groups)]`` (see the module doc).

        Equal to the executor's per-instant calls: at each instant with input
        rows or a due :meth:`next_event` (an event before ``lo`` or before
        the previous instant is due at the next one), :meth:`expire` when due
        (every time if :attr:`expire_every_instant`), then :meth:`push` per
        side. Returns this operator's output groups; every event ``<= hi``
        has been processed.
        """
        every = self.expire_every_instant
        out: list = []
        for t, due, given in instants(self, inputs, lo, hi):
            rows = self.expire(t) if (due or every) else []
            for side, batch in given:
                got = self.push(side, batch, t)
                if got:
                    rows = rows + got if rows else got
            if rows:
                out.append((t, rows))
        return out

    def next_event(self) -> int | None:
        """The earliest future instant at which :meth:`expire` may emit or change state, if any."""
        return None

    def state_size(self) -> int:
        """Tuples held in state (input copies, output copies, auxiliary entries)."""
        return 0
