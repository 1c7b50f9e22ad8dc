"""The output operator: the plan's answer as a stream (Golab's thesis §3.3.3, §3.3.4, §3.4).

:class:`OutputOperator` maintains the materialised answer of the plan (the
thesis's Rstream view) in a state store chosen by strategy and input pattern
(:func:`slidewise.operators.state.stores.make_store`: a hash multiset under NT, a
scanned list under DIRECT, FIFO / calendar queue under UPA) — the cost of
keeping it is what the thesis measures. Every instant it nets the changes of
the answer by value (a row inserted and deleted within one instant never
shows), then emits, per :class:`~slidewise.plan.logical.Output` (see the
docstring of :mod:`slidewise.plan.logical` and ``tests/oracle_plans.py``):

* eager — ``istream`` rows entering (+1), ``dstream`` rows leaving (−1),
  ``rstream`` both, ``wstream`` the changes of a ``ROWS n`` / ``RANGE t``
  window over the stream of inserted rows;
* periodic (``slide``) — at each multiple of the slide: the net change since
  the previous evaluation (``istream`` / ``dstream``), the whole answer
  (``rstream``); ``restore`` adds the short-lived rows: ISTREAM_RESTORE emits
  every row continuous evaluation inserted since the previous evaluation,
  RSTREAM_RESTORE adds those of them that are not new in the answer.

``internal=True`` (every stream leaf of the plan is INTERNAL, §3.3.2): the
answer keeps every row the external version ever inserted — only insertions
count. Rows inserted at one instant are ordered by :func:`order_key` (for
``ROWS n`` output windows; the thesis leaves the tie order open, footnote 3).

Emitted rows are ``(vals, ts, sign)`` with ``ts`` the instant of the change.
"""

from __future__ import annotations

from collections import Counter, deque
from operator import itemgetter

from slidewise.errors import PlanError
from slidewise.operators.incremental import NO_EXP, Context, Incremental, Row
from slidewise.plan.logical import Node, Output


def order_key(vals: tuple) -> tuple:
    """Deterministic order of rows inserted at one instant (numbers before text)."""
    return tuple((0, v) if isinstance(v, (int, float)) else (1, str(v)) for v in vals)


_NUMBERS = frozenset((int, float, bool))
_TEXT = frozenset((str,))
_FIRST = itemgetter(0)


def _raw_order_is_key_order(rows) -> bool:
    """True if comparing the values themselves orders ``rows`` as :func:`order_key` does:
    every column holds only numbers or only text (then ``(0, v)`` / ``(1, str(v))`` add nothing)."""
    if len(set(map(len, rows))) != 1:
        return False
    for col in zip(*rows):
        kinds = set(map(type, col))
        if not (kinds <= _NUMBERS or kinds == _TEXT):
            return False
    return True


def _sorted_rows(counts: Counter) -> list[tuple]:
    rows = [v for v, m in counts.items() for _ in range(m) if m > 0]
    if len(rows) > 1:
        rows.sort(key=None if _raw_order_is_key_order(rows) else order_key)
    return rows


def answer_store(ctx: Context, pattern):
    """The store for a materialised answer of ``pattern`` under ``ctx.strategy`` (§3.5.2).

    Rows of an answer are only inserted, expired and deleted by negative
    tuples, never looked up by value: a WK answer under UPA is a calendar
    queue without a hash index.
    """
    return ctx.store(pattern, lookups=False)


class AnswerTracker:
    """The current answer of a plan node in a store, and its net change within an instant.

    :meth:`begin` expires rows with ``exp < now``; :meth:`add` applies signed
    rows; :meth:`take` returns the instant's net change by value (a Counter
    without zeros, empty when nothing changed) and resets it. A change not
    taken at its instant (expirations at an instant without later rows) is
    dropped when rows of a later instant arrive: it never nets with them.
    """

    def __init__(self, ctx: Context, pattern):
        self.store = answer_store(ctx, pattern)
        self.delta: dict = {}
        self.at: int | None = None  # the instant ``delta`` belongs to

    def begin(self, now: int) -> None:
        self.at = now
        if self.delta:
            self.delta = {}
        expired = self.store.expire(now)
        if expired:
            delta = self.delta
            for row in expired:
                v = row[0]
                delta[v] = delta.get(v, 0) - 1

    def add(self, rows: list[Row], now: int) -> None:
        if self.at != now:
            self.at = now
            if self.delta:
                self.delta = {}
        store, delta = self.store, self.delta
        for row in rows:
            v = row[0]
            if row[3] > 0:
                store.insert(row)
                delta[v] = delta.get(v, 0) + 1
            elif store.delete(v, row[2]) or row[2] >= now:
                delta[v] = delta.get(v, 0) - 1

    def take_raw(self) -> dict:
        """The instant's change as a plain dict (zeros possible), reset; no copy."""
        delta = self.delta
        if delta:
            self.delta = {}
        return delta

    def take(self) -> Counter:
        delta = self.delta
        if not delta:
            return _EMPTY
        self.delta = {}
        return Counter({v: m for v, m in delta.items() if m})

    def next_event(self) -> int | None:
        exp = self.store.next_expiry()
        return None if exp is None or exp == NO_EXP else exp + 1

    def __len__(self) -> int:
        return len(self.store)


_EMPTY: Counter = Counter()  # never modified: callers only read a taken change


class OutputWindow:
    """``WSTREAM(...)[ROWS n | RANGE t]``: a window over the stream of inserted rows (§3.3.3)."""

    def __init__(self, spec, schema: tuple[str, ...]):
        self.spec = spec
        self.key_index = None
        if spec.kind == "rows" and spec.partition_by:
            names = [c.rsplit(".", 1)[-1] for c in schema]
            if spec.partition_by not in names and spec.partition_by not in schema:
                raise PlanError(f"WSTREAM window: no column {spec.partition_by!r} to partition by", hint=f"the output columns are: {', '.join(schema)}")
            self.key_index = list(schema).index(spec.partition_by) if spec.partition_by in schema else names.index(spec.partition_by)
        self.rows: deque = deque()  # (ts, vals) in insertion order
        self.parts: dict = {}

    def advance(self, now: int, inserted: list[tuple]) -> tuple[Counter, Counter]:
        """Insert rows at ``now``, evict; returns (entered, left) netted by value."""
        added, removed = Counter(inserted), Counter()
        spec = self.spec
        if spec.kind == "rows":
            for vals in inserted:
                buf = self.rows if self.key_index is None else self.parts.setdefault(vals[self.key_index], deque())
                buf.append((now, vals))
                if len(buf) > spec.size:
                    removed[buf.popleft()[1]] += 1
        else:
            self.rows.extend((now, v) for v in inserted)
            if spec.kind != "unbounded":
                low = now - spec.length
                while self.rows and self.rows[0][0] < low:
                    removed[self.rows.popleft()[1]] += 1
        return added - removed, removed - added

    def next_event(self) -> int | None:
        if self.spec.kind in ("range", "now") and self.rows:
            return self.rows[0][0] + self.spec.length + 1
        return None

    def __len__(self) -> int:
        return len(self.rows) + sum(len(b) for b in self.parts.values())


class OutputOperator(Incremental):
    """Root of a plan: keeps the answer and emits user rows ``(vals, ts, sign)``."""

    name = "output"

    def __init__(self, node: Output, ctx: Context, *, internal: bool = False):
        super().__init__(node, ctx)
        if node.kind == "dstream" and node.restore:
            raise PlanError("DSTREAM has no restore form", hint="use ISTREAM_RESTORE or RSTREAM_RESTORE")
        self.kind, self.slide, self.restore = node.kind, node.slide, node.restore and node.slide is not None
        self.internal = internal
        self.tracker = AnswerTracker(ctx, ctx.inputs[0] if ctx.inputs else ctx.output)
        self.window = OutputWindow(node.window, node.schema) if node.kind == "wstream" else None
        self.answer: Counter | None = Counter() if (self.kind == "rstream" and self.slide) else None
        self.next_eval: int | None = None
        self.period_change: Counter = Counter()
        self.period_ins: Counter = Counter()
        # eager ISTREAM / DSTREAM / RSTREAM of an external plan: rows straight from the net change
        self.plain = not self.slide and not internal and self.window is None and self.answer is None

    def expire(self, now: int) -> list[Row]:
        if self.slide and self.next_eval is None:
            self.next_eval = -(-now // self.slide) * self.slide
        self.tracker.begin(now)
        return []

    def push(self, side: int, rows: list[Row], now: int) -> list[Row]:
        self.tracker.add(rows, now)
        return []

    def end_instant(self, now: int) -> list[tuple]:
        """The instant's output rows, after :meth:`expire` and every :meth:`push` at ``now``."""
        if self.plain:
            return _plain_rows(self.kind, self.tracker.take_raw(), now)
        change = self.tracker.take()
        if self.internal:
            change = +change
        pos, neg = +change, -change
        if self.answer is not None:
            self.answer.update(change)
        if not self.slide:
            return self._eager(now, pos, neg)
        self.period_change.update(change)
        self.period_ins.update(pos)
        if now != self.next_eval:
            return []
        self.next_eval += self.slide
        ins, dels = +self.period_change, -self.period_change
        restored = self.period_ins
        self.period_change, self.period_ins = Counter(), Counter()
        if self.kind == "istream":
            return _rows(restored if self.restore else ins, now, 1)
        if self.kind == "dstream":
            return _rows(dels, now, -1)
        if self.kind == "rstream":
            whole = +self.answer
            return _rows(whole + (restored - ins) if self.restore else whole, now, 1)
        entered, left = self.window.advance(now, _sorted_rows(ins))
        return _rows(left, now, -1) + _rows(entered, now, 1)

    def _eager(self, now: int, pos: Counter, neg: Counter) -> list[tuple]:
        if self.kind == "istream":
            return _rows(pos, now, 1)
        if self.kind == "dstream":
            return _rows(neg, now, -1)
        if self.kind == "rstream":
            return _rows(neg, now, -1) + _rows(pos, now, 1)
        entered, left = self.window.advance(now, _sorted_rows(pos))
        return _rows(left, now, -1) + _rows(entered, now, 1)

    def next_event(self) -> int | None:
        events = [self.tracker.next_event(), self.next_eval]
        if self.window is not None and not self.slide:
            events.append(self.window.next_event())
        events = [e for e in events if e is not None]
        return min(events) if events else None

    def state_size(self) -> int:
        return len(self.tracker) + (len(self.window) if self.window is not None else 0)


class Accumulate(Incremental):
    """Below an all-INTERNAL subtree: its external answer's insertions, never deleted (§3.3.2)."""

    name = "internal"

    def __init__(self, node: Node, ctx: Context):
        super().__init__(node, ctx)
        self.tracker = AnswerTracker(ctx, ctx.inputs[0] if ctx.inputs else ctx.output)

    def expire(self, now: int) -> list[Row]:
        self.tracker.begin(now)
        return []

    def push(self, side: int, rows: list[Row], now: int) -> list[Row]:
        self.tracker.add(rows, now)
        return [(v, now, NO_EXP, 1) for v in _sorted_rows(+self.tracker.take())]

    def next_event(self) -> int | None:
        return self.tracker.next_event()

    def state_size(self) -> int:
        return len(self.tracker)


def _plain_rows(kind: str, delta: dict, now: int) -> list[tuple]:
    """Eager output rows of one instant's net change: deletions first, each sign in value order."""
    if not delta:
        return []
    if len(delta) == 1:
        ((v, m),) = delta.items()
        if m > 0 and kind != "dstream":
            return [(v, now, 1)] * m
        if m < 0 and kind != "istream":
            return [(v, now, -1)] * -m
        return []
    pos = [(v, m) for v, m in delta.items() if m > 0] if kind != "dstream" else []
    neg = [(v, -m) for v, m in delta.items() if m < 0] if kind != "istream" else []
    out: list[tuple] = []
    for pairs, sign in ((neg, -1), (pos, 1)):
        if len(pairs) > 1:
            plain = _raw_order_is_key_order([p[0] for p in pairs])
            pairs.sort(key=_FIRST if plain else (lambda p: order_key(p[0])))
        for v, m in pairs:
            out += [(v, now, sign)] * m
    return out


def _rows(counts: Counter, now: int, sign: int) -> list[tuple]:
    if len(counts) == 1:
        ((v, m),) = counts.items()
        return [(v, now, sign)] * m if m > 0 else []
    return [(v, now, sign) for v in _sorted_rows(counts)]


class MixedJoin(Incremental):
    """A join of all-INTERNAL inputs with other inputs (§3.3.2), wrapping the external join ``inner``.

    A combination the external join inserts stays in the answer (it does not
    expire with its INTERNAL members) while each part from a ``kept`` input
    (external window, retroactive table) is still in that input's answer.
    Output rows never expire by time (``NO_EXP``); removals are −1 rows.
    """

    name = "mixed-internal-join"
    expire_every_instant = True

    def __init__(self, node: Node, ctx: Context, inner: Incremental, kept: dict[int, tuple[int, int]], kept_patterns: dict[int, object], result_pattern):
        super().__init__(node, ctx)
        self.inner, self.kept = inner, kept  # side -> (start, end) of its columns
        self.inputs = {j: AnswerTracker(ctx, p) for j, p in kept_patterns.items()}
        self.present = {j: Counter() for j in kept}
        self.results = AnswerTracker(ctx, result_pattern)
        self.acc: Counter = Counter()  # accumulated insertions (before this instant)
        self.now_pos: Counter = Counter()  # this instant's net insertions so far
        self.running: Counter = Counter()  # this instant's net change so far
        self.by_part = {j: {} for j in kept}  # part -> set of accumulated rows
        self.visible: Counter = Counter()

    def expire(self, now: int) -> list[Row]:
        self.acc.update(self.now_pos)
        self.now_pos, self.running = Counter(), Counter()
        self.results.begin(now)
        touched: set = set()
        for j, tracker in self.inputs.items():
            tracker.begin(now)
            touched |= self._presence(j, tracker.take())
        return self._settle(self.inner.expire(now), touched, now)

    def push(self, side: int, rows: list[Row], now: int) -> list[Row]:
        touched: set = set()
        if side in self.inputs:
            self.inputs[side].add(rows, now)
            touched = self._presence(side, self.inputs[side].take())
        return self._settle(self.inner.push(side, rows, now), touched, now)

    def _presence(self, j: int, change: Counter) -> set:
        present, touched = self.present[j], set()
        for part, m in change.items():
            before = present[part] > 0
            present[part] += m
            if (present[part] > 0) != before:
                touched |= self.by_part[j].get(part, set())
            if present[part] <= 0:
                del present[part]
        return touched

    def _settle(self, join_rows: list[Row], touched: set, now: int) -> list[Row]:
        self.results.add(join_rows, now)
        self.running.update(self.results.take())
        pos = +self.running
        for r in set(pos) | set(self.now_pos):
            if pos[r] != self.now_pos[r]:
                touched.add(r)
                for j, (a, b) in self.kept.items():
                    self.by_part[j].setdefault(r[a:b], set()).add(r)
        self.now_pos = pos
        out: list[Row] = []
        for r in touched:
            ok = all(r[a:b] in self.present[j] for j, (a, b) in self.kept.items())
            want = (self.acc[r] + self.now_pos[r]) if ok else 0
            diff = want - self.visible[r]
            if diff:
                out += [(r, now, NO_EXP, 1 if diff > 0 else -1)] * abs(diff)
                self.visible[r] = want
        return out

    def next_event(self) -> int | None:
        events = [self.inner.next_event(), self.results.next_event(), *(t.next_event() for t in self.inputs.values())]
        events = [e for e in events if e is not None]
        return min(events) if events else None

    def state_size(self) -> int:
        return self.inner.state_size() + len(self.results) + sum(len(t) for t in self.inputs.values()) + len(self.acc)
