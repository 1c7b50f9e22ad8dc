"""Join of a stream (window) with a relation: NRR or retroactive TABLE (Golab's thesis §3.3.1, §3.5.1).

The relation's updates arrive as rows on the relation's side: ``sign`` +1
inserts a row, −1 deletes the row with the same key (the first attribute).
A live key inserted again replaces its row.

* ``kind="nrr"`` — non-retroactive relation (§3.3.1): an update affects only
  stream tuples arriving after it (updates of an instant come before that
  instant's stream tuples, whatever order they are pushed in). A stream row
  probes the relation's current state; its results keep the stream row's
  ``exp`` and are never revised by later updates, so the stream need not be
  stored (the join's pattern is its stream input's). Re-inserting a deleted
  key is an error (the thesis bans key reuse). When the stream input carries
  negative tuples (NT, or STR input), the results of each stream row are
  remembered so its negative tuple retracts exactly them.
* ``kind="table"`` — retroactive relation: the answer is the current window
  joined with the current table, so an insertion joins the stored window
  (+1 results) and a deletion retracts its results (−1): strict
  non-monotonic (rule 4). The stream window is kept in a row store.

Results: ``vals`` in the Join node's input order, ``ts = now``, ``exp`` of the
stream row (relation rows never expire by time).
"""

from __future__ import annotations

from slidewise.errors import ExecutionError, PlanError
from slidewise.operators.delta_join import equality_positions, key_function
from slidewise.operators.incremental import Incremental
from slidewise.operators.select import row_function
from slidewise.plan.expr import And
from slidewise.plan.logical import Pattern, Project, Scan, Select

__all__ = ["RelationJoin", "relation_kind"]


def relation_kind(node) -> str | None:
    """``"nrr"`` / ``"table"`` if ``node`` is a relation scan (under selections/projections), else None."""
    while isinstance(node, (Select, Project)):
        node = node.child
    if isinstance(node, Scan) and node.is_relation:
        return node.kind
    return None


class RelationJoin(Incremental):
    """Stream ⋈ relation, non-retroactive (NRR) or retroactive (TABLE)."""

    name = "relation-join"

    def __init__(self, node, ctx):
        super().__init__(node, ctx)
        if len(node.inputs) != 2:
            raise PlanError("a relation join has two inputs", hint="build n-ary joins as a chain")
        kinds = [relation_kind(i) for i in node.inputs]
        side = ctx.options.get("table_side")
        if side is None:
            if kinds[0] is None and kinds[1] is None:
                raise PlanError("relation join without a relation input", hint="join windows with DeltaJoin")
            side = 1 if kinds[1] is not None else 0
        self.table_side = side
        self.kind = ctx.options.get("relation") or kinds[side] or "nrr"
        base = node.inputs[side]
        while isinstance(base, (Select, Project)):
            base = base.child
        self.alias = getattr(base, "alias", "relation")
        li, ri, extra = equality_positions(node, ctx.aliases)
        filters = tuple(node.filters) + tuple(extra)
        self.filter = None
        if filters:
            self.filter = row_function(filters[0] if len(filters) == 1 else And(filters), node.schema, ctx.aliases)
        tidx, sidx = (ri, li) if side == 1 else (li, ri)
        self.keyed = bool(tidx)
        self.tkey, self.skey = key_function(tidx), key_function(sidx)
        pats = tuple(ctx.inputs) + (Pattern.WKS,) * (2 - len(ctx.inputs))
        stream_pattern = pats[1 - side]
        self.table: dict = {}  # primary key -> vals
        self.index: dict = {}  # join key -> {primary key: vals}
        self.deleted: set = set()
        self.window = ctx.store(stream_pattern, self.skey) if self.kind == "table" else None
        self.memo = {} if self.kind == "nrr" and (ctx.strategy == "nt" or stream_pattern == Pattern.STR) else None
        self._now, self._now_rows = None, []  # NRR: stream rows of the current instant

    # -- helpers -----------------------------------------------------------------------------

    def _combine(self, sv, tv):
        return sv + tv if self.table_side == 1 else tv + sv

    def _null(self, k) -> bool:
        return self.keyed and (k is None or (type(k) is tuple and None in k))

    def _matches(self, sv, tv, exp, sign, now, out, memo_entry=None) -> None:
        vals = self._combine(sv, tv)
        if self.filter is None or self.filter(vals):
            out.append((vals, now, exp, sign))
            if memo_entry is not None:
                if sign > 0:
                    memo_entry.append(vals)
                elif vals in memo_entry:
                    memo_entry.remove(vals)

    def _stream_rows_for(self, tv):
        """``(vals, exp, memo entry)`` of the stream rows a table row meets.

        TABLE: the stored window; NRR: the stream rows of the current instant
        (an update of an instant precedes that instant's stream tuples).
        """
        k = self.tkey(tv)
        if self._null(k):
            return []
        if self.window is not None:
            return [(r[0], r[2], None) for r in self.window.lookup(k)]
        return [(r[0], r[2], entry) for r, entry in self._now_rows if self.skey(r[0]) == k]

    # -- relation updates ------------------------------------------------------------------

    def _delete(self, pk, now, out) -> None:
        tv = self.table.pop(pk, None)
        if tv is None:
            return
        k = self.tkey(tv)
        bucket = self.index.get(k)
        if bucket is not None:
            bucket.pop(pk, None)
            if not bucket:
                del self.index[k]
        for sv, exp, entry in self._stream_rows_for(tv):
            self._matches(sv, tv, exp, -1, now, out, entry)

    def _insert(self, tv, now, out) -> None:
        pk = tv[0]
        if pk in self.table:
            self._delete(pk, now, out)
        self.table[pk] = tv
        self.index.setdefault(self.tkey(tv), {})[pk] = tv
        for sv, exp, entry in self._stream_rows_for(tv):
            self._matches(sv, tv, exp, 1, now, out, entry)

    def _update(self, rows, now, out) -> None:
        nrr = self.kind == "nrr"
        for v, _, _, sign in rows:
            pk = v[0]
            if sign > 0:
                if nrr and pk in self.deleted:
                    raise ExecutionError(
                        f"NRR key reused: {self.alias} key {pk!r} was deleted and is inserted again at {now}",
                        hint="non-retroactive relations ban key reuse (Golab's thesis §3.3.1): give the row a new key, or declare the relation retroactive with TABLE",
                    )
                self._insert(v, now, out)
            else:
                if nrr and pk in self.table:
                    self.deleted.add(pk)
                self._delete(pk, now, out)

    # -- protocol ----------------------------------------------------------------------------

    def push(self, side, rows, now):
        out: list = []
        if now != self._now:
            self._now, self._now_rows = now, []
        if side == self.table_side:
            self._update(rows, now, out)
            return out
        window, memo = self.window, self.memo
        for row in rows:
            sv, _, exp, sign = row
            if window is not None:
                if sign > 0:
                    window.insert(row)
                elif not window.delete(sv, exp):
                    continue
            elif sign < 0 and memo is not None:
                copies = memo.get((sv, exp))
                if not copies:
                    continue
                entry = copies.pop(0)
                if not copies:
                    del memo[(sv, exp)]
                for vals in entry:
                    out.append((vals, now, exp, -1))
                for i, (_r, e) in enumerate(self._now_rows):
                    if e is entry:
                        del self._now_rows[i]
                        break
                continue
            entry = None
            if memo is not None and sign > 0:
                entry = []
                memo.setdefault((sv, exp), []).append(entry)
            if window is None and sign > 0:
                self._now_rows.append((row, entry))
            k = self.skey(sv)
            if self._null(k):
                continue
            for tv in self.index.get(k, {}).values():
                self._matches(sv, tv, exp, sign, now, out, entry)
        return out

    def expire(self, now):
        if self.window is not None:
            self.window.expire(now)
        return []

    def next_event(self):
        t = None if self.window is None else self.window.next_expiry()
        return None if t is None else t + 1

    def state_size(self):
        memo = 0 if self.memo is None else sum(len(c) for c in self.memo.values())
        return len(self.table) + (len(self.window) if self.window is not None else 0) + memo
