"""Negation ``W1 − W2`` over signed tuples: NOT EXISTS (anti-join) and EXCEPT (Golab's thesis §2.2.2, §3.2.2).

Strict non-monotonic: a left row in the answer is deleted *prematurely* when a
right row with a matching value arrives (a −1 row carrying the left row's
``exp``), and a left row comes back (+1, ``ts = now``, its original ``exp``)
when the last right row matching it leaves — by a negative tuple, or under
DIRECT/UPA when the right state expires in :meth:`expire`. Left rows that
simply fall out of their window expire by their own ``exp`` (no −1 except
under NT, where the window sends it).

* ``mode="anti"`` (NOT EXISTS ... WHERE right.b = left.a): the left rows with
  no right row equal on every ``on`` pair. State: the left window keyed by
  the negation attributes, a count of right rows per value, and (DIRECT/UPA)
  the right window to know when its rows expire.
* ``mode="except"`` (bag difference): value ``v`` appears
  ``max(0, m_left(v) − m_right(v))`` times. The copies shown are the left rows
  that expire first, so a time expiration of a shown copy needs no
  correction; any other change re-derives the value's shown copies and emits
  the difference.

Per row: O(1) hash work, plus the left rows of the value when the right
count crosses 0 (anti) or the copies of the value (except).
"""

from __future__ import annotations

from operator import itemgetter

from slidewise.errors import PlanError
from slidewise.operators.incremental import Incremental
from slidewise.operators.select import column_index
from slidewise.plan.logical import Pattern

__all__ = ["NegationRows"]


def _key_function(indices):
    if not indices:
        return lambda vals: ()
    return itemgetter(*indices)


class NegationRows(Incremental):
    """``left − right`` by anti-join on ``on`` pairs or by bag difference (§2.2.2)."""

    name = "negation"

    def __init__(self, node, ctx):
        super().__init__(node, ctx)
        self.mode = node.mode
        lschema, rschema = node.left.schema, node.right.schema
        if self.mode == "except":
            lkey = rkey = None
        else:
            li, ri = [], []
            for a, b in node.on:
                try:
                    li.append(column_index(a, lschema, ctx.aliases))
                    ri.append(column_index(b, rschema, ctx.aliases))
                except PlanError:  # written right = left
                    li.append(column_index(b, lschema, ctx.aliases))
                    ri.append(column_index(a, rschema, ctx.aliases))
            lkey, rkey = _key_function(li), _key_function(ri)
        self.lkey = (lambda v: v) if lkey is None else lkey
        self.rkey = (lambda v: v) if rkey is None else rkey
        pats = tuple(ctx.inputs) + (Pattern.WKS,) * (2 - len(ctx.inputs))
        self.left = ctx.store(pats[0], lkey)
        self.right = None if ctx.strategy == "nt" else ctx.store(pats[1], rkey)
        self.rcount: dict = {}
        self.shown: dict = {}  # except: value -> sorted exps of the copies in the answer

    # -- right side ------------------------------------------------------------------------

    def _right_gone(self, k, now, out) -> None:
        c = self.rcount.get(k)
        if c is None:
            return
        if c > 1:
            self.rcount[k] = c - 1
        else:
            del self.rcount[k]
        if self.mode == "except":
            self._refresh(k, now, out)
        elif c == 1:
            for v, _, exp, _ in self.left.lookup(k):
                out.append((v, now, exp, 1))

    def _right_new(self, k, now, out) -> None:
        c = self.rcount.get(k, 0)
        self.rcount[k] = c + 1
        if self.mode == "except":
            self._refresh(k, now, out)
        elif c == 0:
            for v, _, exp, _ in self.left.lookup(k):
                out.append((v, now, exp, -1))

    # -- except: shown copies = the earliest-expiring max(0, L - R) left rows ---------------

    def _refresh(self, k, now, out) -> None:
        rows = self.left.lookup(k)
        n = len(rows) - self.rcount.get(k, 0)
        desired = sorted(r[2] for r in rows)[:n] if n > 0 else []
        shown = self.shown.get(k, [])
        if desired == shown:
            return
        i = j = 0
        while i < len(shown) or j < len(desired):
            if j == len(desired) or (i < len(shown) and shown[i] < desired[j]):
                out.append((k, now, shown[i], -1))
                i += 1
            elif i == len(shown) or desired[j] < shown[i]:
                out.append((k, now, desired[j], 1))
                j += 1
            else:
                i += 1
                j += 1
        if desired:
            self.shown[k] = desired
        else:
            self.shown.pop(k, None)

    def _unshow(self, k, exp) -> None:
        shown = self.shown.get(k)
        if shown and exp in shown:
            shown.remove(exp)
            if not shown:
                del self.shown[k]

    # -- protocol ---------------------------------------------------------------------------

    def push(self, side, rows, now):
        out: list = []
        if side == 1:
            right, rkey = self.right, self.rkey
            for row in rows:
                v, _, exp, sign = row
                if sign > 0:
                    if right is not None:
                        right.insert(row)
                    self._right_new(rkey(v), now, out)
                elif right is None or right.delete(v, exp):
                    self._right_gone(rkey(v), now, out)
            return out
        left, lkey, rcount = self.left, self.lkey, self.rcount
        for row in rows:
            v, _, exp, sign = row
            k = lkey(v)
            if sign > 0:
                left.insert(row)
                if self.mode == "except":
                    self._refresh(k, now, out)
                elif k not in rcount:
                    out.append((v, now, exp, 1))
            elif left.remove(v, exp) is not None:
                if self.mode == "except":
                    self._refresh(k, now, out)
                elif k not in rcount:
                    out.append((v, now, exp, -1))
        return out

    def expire(self, now):
        out: list = []
        expired = self.left.expire(now)
        if self.mode == "except":
            for v, _, exp, _ in expired:
                self._unshow(v, exp)
            for v in {r[0] for r in expired}:
                self._refresh(v, now, out)
        if self.right is not None:
            rkey = self.rkey
            for r in self.right.expire(now):
                self._right_gone(rkey(r[0]), now, out)
        return out

    def next_event(self):
        times = [t for t in (self.left.next_expiry(), None if self.right is None else self.right.next_expiry()) if t is not None]
        return min(times) + 1 if times else None

    def state_size(self):
        right = len(self.right) if self.right is not None else sum(self.rcount.values())
        return len(self.left) + right + sum(len(s) for s in self.shown.values())
