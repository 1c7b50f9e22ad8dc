"""The pane path: a periodic sliding GROUP BY on one stream, evaluated block by block in numpy.

:func:`run_sliding` takes the merged, lateness-checked chunks of the one
stream (the same reader, merger and rejects as the per-tuple executor of
:mod:`slidewise.runtime.plan_engine`) and produces exactly its answer (see
:mod:`slidewise.plan.logical` and :mod:`slidewise.operators.output`): at every
evaluation instant ``τ = kD`` from ``ceil(first ts / D)·D`` to
``ceil(last ts / D)·D``, one row per group with a tuple in ``τ − T ≤ ts ≤
τ`` (after WHERE, filtered by HAVING), ordered by value, with ``ts = τ`` and
``sign = +1`` (RSTREAM); ISTREAM / DSTREAM compare each evaluation with the
one before it (computed as the first row of the block) and emit the rows
that entered (+1) / left (−1) the answer.

Evaluations are computed in blocks of ``E`` consecutive instants (as many as
keep ``E × groups`` near :data:`BLOCK_CELLS`, over at most
:data:`SPAN_WINDOWS` windows). In a block the groups are
dictionary-encoded in value order, and the window boundaries (the ends ``τ``
and the starts ``τ − T − 1``) cut time into panes; every tuple is
pre-aggregated once into its pane (one accumulator of
:mod:`slidewise.operators.aggregates` per aggregate), then all windows of the
block are answered by a synopsis of :mod:`slidewise.synopses` — ``COUNT(*)``
(which decides which groups have a row) and the subtractable aggregates by
the running synopsis, MIN/MAX by the (basic) interval synopsis — and the
rows are emitted as columns, instant-major.

A count window ``[ROWS n SLIDE m]`` (``spec.counted``) runs the same blocks on
another clock: each arrival's number ``p`` (1, 2, ..., before WHERE) instead
of its ``ts``, with ``T = n − 1`` and ``D = m``; evaluation ``k`` follows the
``km``-th arrival and its rows carry that arrival's ``ts``. Only the pane
assignment (which pane a tuple falls in, which panes a window covers, when an
evaluation is due) differs; partials, synopses and emission are shared.
"""

from __future__ import annotations

import numpy as np

from slidewise.operators.aggregates import accumulator
from slidewise.operators.aggregates.subtractable import Count
from slidewise.optimizer.pane_plan import SlidingAggregate
from slidewise.plan.expr import evaluate
from slidewise.synopses import SYNOPSES, running
from slidewise.synopses.batch import WindowBatch
from slidewise.synopses.tuples import Tuples
from slidewise.synopses.tuples import partial as deferred

__all__ = ["BLOCK_CELLS", "CLOCK", "SPAN_WINDOWS", "PaneRun", "TupleBuffer", "WindowAnswers", "block_length", "deliver", "select"]

#: the pane clock of a count window: each buffered tuple's arrival number (not an attribute name)
CLOCK = "#arrival"

#: target size of a block's (evaluations x groups) answer matrices (a few MB: they stay in cache)
BLOCK_CELLS = 1 << 19
#: a block spans at most this many of its longest windows: groups that come and go (many keys, few in a
#: window) fill a block's matrices with empty cells in proportion to its span
SPAN_WINDOWS = 4


def block_length(groups: int, window: int, unit: int) -> int:
    """How many ``unit``s of time a block spans: about :data:`BLOCK_CELLS` answer cells for ``groups`` groups,
    and at most :data:`SPAN_WINDOWS` windows of ``window`` time units."""
    return max(1, min(BLOCK_CELLS // max(groups, 1), SPAN_WINDOWS * window // unit))


class Answers:
    """Windows' rows emitted as columns (``emit(cols)``, column dicts): HAVING, the changes of ISTREAM /
    DSTREAM, rows in value order; shared by :class:`WindowAnswers` and the join synopsis
    (:mod:`slidewise.runtime.join_panes`). ``spec``: ``key_names``, ``aggs``, ``having``, ``columns``, ``kind`` (and ``keys`` with a ``key_filter``)."""

    def __init__(self, spec, emit, key_filter=None):
        self.spec, self.emit = spec, emit
        self.key_filter = key_filter  # a condition on the keys alone, applied to groups (shared runs)
        self.results = 0
        self.lead = int(spec.kind != "rstream")  # ISTREAM / DSTREAM compare with the evaluation before
        self.last_nonempty = False  # the last evaluation answered had rows
        cols = list(spec.columns)
        key_order = list(spec.key_names)
        self.presorted = cols[: len(key_order)] == key_order  # groups in value order = rows in value order

    def output(self, uniq: list[np.ndarray], cells: dict, answer: np.ndarray, ends: np.ndarray) -> None:
        """Emit the (window, group) cells marked in ``answer`` at the instants ``ends`` (ISTREAM / DSTREAM: the
        first window is the evaluation before, compared only); ``cells``: each output column's (values, null mask)
        per cell (keys broadcast), ``uniq``: each group's key values."""
        spec, lead = self.spec, self.lead
        if self.key_filter is not None:
            keys = dict(zip(spec.keys, uniq))
            answer &= np.broadcast_to(np.asarray(evaluate(self.key_filter, lambda _s, a: keys[a]), dtype=bool), answer.shape)
        if spec.having is not None:
            answer &= np.broadcast_to(np.asarray(evaluate(spec.having, lambda s, a: _numeric(*cells[a])), dtype=bool), answer.shape)
        self.last_nonempty = bool(answer[-1].any())
        if not lead:
            self._emit(cells, answer, ends, 1)
            return
        prev, cur = answer[:-1], answer[1:]
        changed = np.zeros(cur.shape, bool)
        for a in spec.aggs:  # rows are per group (the keys are output columns): a row changes with its values
            if a.name not in spec.columns:
                continue
            vals, null = cells[a.name]
            diff = vals[1:] != vals[:-1]
            if null is not None:
                diff = np.where(null[1:] | null[:-1], null[1:] != null[:-1], diff)
            changed |= diff
        if spec.kind == "istream":
            self._emit({c: (v[1:], None if m is None else m[1:]) for c, (v, m) in cells.items()}, cur & (~prev | changed), ends[1:], 1)
        else:
            self._emit({c: (v[:-1], None if m is None else m[:-1]) for c, (v, m) in cells.items()}, prev & (~cur | changed), ends[1:], -1)

    def _emit(self, cells: dict, rows: np.ndarray, instants: np.ndarray, sign: int) -> None:
        """The rows marked in ``rows`` (windows x groups) as output columns, instant-major, in value order."""
        per_window = np.count_nonzero(rows, axis=1)
        total = int(per_window.sum())
        if not total:
            return
        spec = self.spec
        # one gather index for all columns (boolean indexing of each column is several times slower)
        flat = np.flatnonzero(rows)
        group = None  # each row's group (column of ``rows``), for the keys (one value per group, broadcast)
        cols = {}
        for c in spec.columns:
            vals, null = cells[c]
            if vals.strides[0] == 0:
                if group is None:
                    group = flat - np.repeat(np.arange(len(rows), dtype=np.int64) * rows.shape[1], per_window)
                col = _widen(vals[0])[group]
            else:
                col = _widen(_take(vals, flat))
            cols[c] = _with_nulls(col, None if null is None else _take(null, flat))
        self._out(cols, np.repeat(instants, per_window), sign)

    def emit_rows(self, keys: list[np.ndarray], per_window: np.ndarray, values: list, ends: np.ndarray) -> None:
        """RSTREAM without HAVING or group filter, from the rows already found: ``per_window`` rows at each
        instant of ``ends``, each key column at them (``keys``), and the values of :meth:`requests` at them
        (1-D; None for a ``COUNT(*)``, whose value is the first; the first may be None when no column is a
        ``COUNT(*)``)."""
        self.last_nonempty = bool(len(per_window) and per_window[-1])
        total = int(per_window.sum())
        if not total:
            return
        cells = {name: (col, None) for name, col in zip(self.spec.key_names, keys)}
        for a, v in zip(self.spec.aggs, values[1:]):
            cells[a.name] = values[0] if v is None else v
        self._out({c: _with_nulls(_widen(cells[c][0]), cells[c][1]) for c in self.spec.columns}, np.repeat(ends, per_window), 1)

    def _out(self, cols: dict, rows_ts: np.ndarray, sign: int) -> None:
        """Emit output columns (in group order within each instant of ``rows_ts``) in value order."""
        spec, total = self.spec, len(rows_ts)
        if not self.presorted and total > 1:
            order = np.lexsort(tuple(k for c in reversed(spec.columns) for k in _sort_key(cols[c])) + (rows_ts,))
            cols = {c: v[order] for c, v in cols.items()}
            rows_ts = rows_ts[order]
        cols["ts"] = self.stamp(rows_ts)
        cols["sign"] = np.full(total, sign, np.int8)
        self.results += total
        self.emit(cols)

    def stamp(self, instants: np.ndarray) -> np.ndarray:
        """The output ``ts`` of the evaluations at ``instants`` (of the pane clock)."""
        return instants


class WindowAnswers(Answers):
    """Windows answered from pane partials and emitted as columns (``emit(cols)``, column dicts):
    shared by :class:`PaneRun` and the Spark pane path (:mod:`slidewise.spark.panes`)."""

    def __init__(self, spec: SlidingAggregate, dtypes: dict[str, np.dtype], emit, key_filter=None):
        super().__init__(spec, emit, key_filter)
        self.attrs = tuple(dict.fromkeys(spec.keys + spec.arguments()))
        self.accs = [accumulator(a.func, None if a.arg is None else dtypes[a.arg.attr], a.distinct, a.param) for a in spec.aggs]
        self.synopses = [SYNOPSES[spec.synopsis(a)] for a in spec.aggs]
        self.count = Tally()
        #: (accumulator, attribute or None) of each pane partial: ``COUNT(*)`` first, then one per aggregate
        #: (None for a ``COUNT(*)``: it reads the first)
        self.states = [(self.count, None)] + [
            None if a.func == "count" and a.arg is None else (acc, a.arg.attr)  # type: ignore[attr-defined]  # match() admits only Col arguments
            for a, acc in zip(spec.aggs, self.accs)
        ]

    def filtered(self, ts: np.ndarray, cols: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """``ts`` and the attributes the query reads, of the tuples WHERE admits."""
        return select(self.spec.where, ts, cols, self.attrs)

    def partials(self, data: dict, pane: np.ndarray, groups: np.ndarray, shape: tuple[int, int]) -> list:
        """Pane partials of ``data`` (tuples in pane ``pane`` of group ``groups``): ``COUNT(*)`` first,
        then one per aggregate (None for ``COUNT(*)``, which is the first)."""
        return [None if st is None else st[0].partial(None if st[1] is None else data[st[1]], pane, groups, shape) for st in self.states]

    def respond(self, ends: np.ndarray, uniq: list[np.ndarray], cuts: np.ndarray, partial, memo: dict | None = None) -> None:
        """The windows ending at ``ends`` from pane partials built on demand: pane i is ``(cuts[i-1], cuts[i]]``,
        ``partial(acc, attr)`` the partials of an accumulator over an attribute (None: ``COUNT(*)``), columns =
        the groups of ``uniq``; ``memo``: the synopses' memo of the block."""
        lo, hi = self.bounds(ends, cuts)
        self.answer(uniq, self.gather(partial), lo, hi, ends, memo)

    def bounds(self, ends: np.ndarray, cuts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The pane rows ``[lo[k], hi[k])`` of the windows ending at ``ends`` (pane i: ``(cuts[i-1], cuts[i]]``)."""
        return np.searchsorted(cuts, ends - self.spec.length - 1) + 1, np.searchsorted(cuts, ends) + 1

    def gather(self, partial) -> list:
        """The pane partials (as :meth:`partials`) from ``partial(acc, attr)``."""
        partials = [None if st is None else partial(*st) for st in self.states]
        self.groups_seen = max([partials[0][0].shape[1]] + [getattr(acc, "width", 0) for acc in self.accs])  # DISTINCT: pair columns
        return partials

    def requests(self, partials: list) -> list:
        """What :meth:`conclude` needs, as (accumulator, synopsis, partial) per value: ``COUNT(*)`` first,
        then one per aggregate (None for a ``COUNT(*)``: the first)."""
        return [(self.count, running.windows, partials[0])] + [
            None if part is None else (acc, synopsis, part) for acc, synopsis, part in zip(self.accs, self.synopses, partials[1:])
        ]

    def answer(self, uniq: list[np.ndarray], partials: list, lo: np.ndarray, hi: np.ndarray, ends: np.ndarray, memo: dict | None = None) -> None:
        """Emit the windows ``[lo[k], hi[k])`` of pane rows of :meth:`partials` at the instants ``ends``
        (ISTREAM / DSTREAM: the first window is the evaluation before, compared only); ``uniq``: each
        group's key values (the partials' columns); ``memo`` as in :meth:`respond`."""
        batch = WindowBatch(memo)
        handles = [None if r is None else batch.request(*r, lo, hi) for r in self.requests(partials)]
        self.deliver(uniq, batch, handles, ends)

    def deliver(self, uniq: list[np.ndarray], batch: WindowBatch, handles: list, ends: np.ndarray) -> None:
        """Emit the windows at the instants ``ends`` from the answers of ``batch`` to the :meth:`requests`
        ``handles`` (:func:`deliver`)."""
        deliver(uniq, batch, [(self, ends, handles)])

    def conclude(self, uniq: list[np.ndarray], values: list, ends: np.ndarray) -> None:
        """Emit the windows at the instants ``ends`` from the values of :meth:`requests` ((windows x groups)
        values and null mask or None each; None for a ``COUNT(*)``)."""
        spec = self.spec
        n = values[0][0]
        answer = n != 0  # (window, group) cells with a row
        cells = {name: (np.broadcast_to(col, n.shape), None) for name, col in zip(spec.key_names, uniq)}
        for a, v in zip(spec.aggs, values[1:]):
            cells[a.name] = (n, None) if v is None else v
        self.output(uniq, cells, answer, ends)


def deliver(uniq: list[np.ndarray], batch: WindowBatch, asked: list) -> None:
    """Emit each run's windows at its instants from the answers of ``batch`` to its :meth:`~WindowAnswers.requests`
    (``asked``: (run, ends, handles) each; ``uniq``: the groups' key values). RSTREAM without HAVING or group
    filter reads each value at the rows only (the non-zero counts: work in proportion to the non-empty
    (window, group) cells), all such runs of one count request together (one pass per request, each run
    emitting its slice: a shared synopsis answers its members at once); else whole windows."""
    plain: dict = {}
    for r, ends, handles in asked:
        if r.lead or r.spec.having is not None or r.key_filter is not None:
            r.conclude(uniq, [None if h is None else batch.result(h) for h in handles], ends)
        else:
            plain.setdefault(handles[0][0], []).append((r, ends, handles))
    for count, runs in plain.items():
        # runs that read the same value next to each other: its cells are then one slice of ``group``
        first: dict = {}
        runs.sort(key=lambda run: first.setdefault(next((h[0] for h in run[2][1:] if h is not None), None), len(first)))
        per_windows, group = batch.present([h[0] for _, _, h in runs])
        at = np.cumsum([0] + [int(p.sum()) for p in per_windows])
        keys = [_widen(u)[group] for u in uniq]
        asks: dict = {}  # batch key -> [(run, handle)] of the values read (a COUNT(*) only for a COUNT(*) column)
        for i, (_, _, handles) in enumerate(runs):
            counted = None in handles[1:]
            for j, h in enumerate(handles):
                if h is not None and (j or counted):
                    asks.setdefault(h[0], []).append((i, j))
        values: dict = {}
        for pairs in asks.values():
            rows = [i for i, _ in pairs]
            if rows == list(range(rows[0], rows[-1] + 1)):  # consecutive runs, each asking it once
                cols = group[at[rows[0]] : at[rows[-1] + 1]]
            else:
                cols = np.concatenate([group[at[i] : at[i + 1]] for i in rows])
            vals, null = batch.take([runs[i][2][j] for i, j in pairs], [per_windows[i] for i, _ in pairs], cols, count)
            start = 0
            for i, j in pairs:
                stop = start + at[i + 1] - at[i]
                values[i, j] = (vals[start:stop], None if null is None else null[start:stop])
                start = stop
        for i, (r, ends, handles) in enumerate(runs):
            r.emit_rows([k[at[i] : at[i + 1]] for k in keys], per_windows[i], [values.get((i, j)) for j in range(len(handles))], ends)


class Tally(Count):
    """``COUNT(*)`` whose value is its int32 cells (widened to int64 only where emitted)."""

    def value(self, state):
        return state[0], None


class PaneRun(WindowAnswers):
    """Feed chunks with :meth:`add`, then :meth:`finish`; rows go to ``emit(cols)`` as column dicts."""

    def __init__(self, spec: SlidingAggregate, dtypes: dict[str, np.dtype], emit, key_filter=None):
        super().__init__(spec, dtypes, emit, key_filter)
        self.clock = CLOCK if spec.counted else "ts"  # the pane clock: arrival numbers or timestamps
        self.buffer = TupleBuffer(self.clock)
        self.next_k: int | None = None  # the next evaluation k (instant kD) to answer
        self.last_ts: int | None = None
        self.seen = 0  # arrivals so far (count windows)
        self.stamps = np.zeros(0, np.int64)  # count windows: the ts of the (k·m)-th arrival, k = stamp_k0, ...
        self.stamp_k0 = 1
        self.groups_seen = 1024  # groups in the last block (sizes the next one)
        self.blocks = self.buffered_peak = 0

    # ---------------------------------------------------------------- input

    def add(self, ts: np.ndarray, cols: dict[str, np.ndarray]) -> None:
        """Arrivals in timestamp order (all of the stream's attributes by name)."""
        if not len(ts):
            return
        self.start(int(ts[0]))
        self.last_ts = int(ts[-1])
        if self.spec.counted:  # every evaluation the arrivals complete
            arrival = self.number(ts)
            self.buffer.append(select(self.spec.where, ts, {**cols, CLOCK: arrival}, (*self.attrs, CLOCK)))
            self._answer(self.seen // self.spec.slide)
            self.trim()
            return
        self.buffer.append(self.filtered(ts, cols))
        self._answer(-(-self.last_ts // self.spec.slide) - 1)  # instants before the last ts are complete

    def number(self, ts: np.ndarray) -> np.ndarray:
        """Count windows: the arrival numbers of the arrivals ``ts``; the ``ts`` of the evaluations they complete kept."""
        m, n = self.spec.slide, len(ts)
        ks = np.arange(self.seen // m + 1, (self.seen + n) // m + 1, dtype=np.int64)
        self.stamps = np.concatenate([self.stamps, np.asarray(ts, np.int64)[ks * m - 1 - self.seen]])
        self.seen += n
        return np.arange(self.seen - n + 1, self.seen + 1, dtype=np.int64)

    def trim(self) -> None:
        """Forget the ``ts`` of the evaluations answered (ISTREAM / DSTREAM compare with evaluation ``next_k − 1``)."""
        keep = max((self.next_k or 1) - 1, 1) - self.stamp_k0
        if keep > 0:
            self.stamps, self.stamp_k0 = self.stamps[keep:], self.stamp_k0 + keep

    def stamp(self, instants: np.ndarray) -> np.ndarray:
        """A count window's evaluation ``k`` (instant ``km``) is stamped with the ``ts`` of the ``km``-th arrival."""
        if not self.spec.counted:
            return instants
        return self.stamps[np.maximum(instants // self.spec.slide - self.stamp_k0, 0)]

    def finish(self) -> None:
        if self.last_ts is not None and not self.spec.counted:  # a count window is evaluated at its m-th arrivals only
            self._answer(-(-self.last_ts // self.spec.slide))

    def start(self, ts: int) -> None:
        """The first evaluation: the first slide multiple at or after the first arrival ``ts`` (a count
        window: after the m-th arrival)."""
        if self.next_k is None:
            self.next_k = 1 if self.spec.counted else -(-ts // self.spec.slide)

    # ---------------------------------------------------------------- blocks

    def due(self, k_last: int, buf: dict) -> int | None:
        """The first evaluation up to ``k_last`` to answer from the buffered tuples ``buf``; None (and
        ``next_k`` past ``k_last``) when their windows hold nothing."""
        if self.next_k is None or self.next_k > k_last:
            return None
        if not buf:  # (a non-empty last answer keeps its tuples: its rows leave at the next instant)
            self.next_k, self.last_nonempty = k_last + 1, False
            return None
        # skip instants whose windows hold nothing; ISTREAM / DSTREAM: not right after a non-empty answer
        k0 = self.next_k if self.lead and self.last_nonempty else max(self.next_k, -(-int(buf[self.clock][0]) // self.spec.slide))
        if k0 > k_last:
            self.next_k = k_last + 1
            return None
        return k0

    def _answer(self, k_last: int) -> None:
        """Answer every evaluation up to ``k_last``."""
        spec = self.spec
        T, D, lead = spec.length, spec.slide, self.lead
        while self.next_k is not None and self.next_k <= k_last:
            buf = self.buffer.whole()
            if buf:
                self.buffered_peak = max(self.buffered_peak, len(buf["ts"]))
            k0 = self.due(k_last, buf)
            if k0 is None:
                return
            ts = buf[self.clock]
            e = block_length(self.groups_seen, T + 1 + lead * D, D)
            k1 = min(k_last + 1, k0 + e)
            lo = np.searchsorted(ts, (k0 - lead) * D - T, "left")
            hi = np.searchsorted(ts, (k1 - 1) * D, "right")
            self._block(k0, k1, {a: v[lo:hi] for a, v in buf.items()})
            self.next_k = k1
            self.buffer.drop_before((k1 - lead) * D - T)

    def _block(self, k0: int, k1: int, data: dict) -> None:
        """Evaluations ``k0 .. k1-1`` (and ``k0-1`` before them for ISTREAM / DSTREAM) from ``data``."""
        spec, lead = self.spec, self.lead
        ts = data[self.clock]
        if not len(ts):
            self.last_nonempty = False
            return
        uniq, groups = encode_groups([data[k] for k in spec.keys], len(ts))
        g = len(uniq[0]) if uniq else 1
        self.groups_seen = g
        if k1 - k0 > 1 and (k1 - k0) * g > 4 * BLOCK_CELLS:  # far more groups than the last block had
            mid = k0 + max(1, BLOCK_CELLS // g)
            left = np.searchsorted(ts, (mid - 1) * spec.slide, "right")
            right = np.searchsorted(ts, (mid - lead) * spec.slide - spec.length, "left")
            self._block(k0, mid, {a: v[:left] for a, v in data.items()})
            self._block(mid, k1, {a: v[right:] for a, v in data.items()})
            return
        self.blocks += 1
        ends = np.arange(k0 - lead, k1, dtype=np.int64) * spec.slide
        cuts = np.union1d(ends, ends - spec.length - 1)  # pane boundaries of the block: window ends and starts
        pane = np.searchsorted(cuts, ts, "left")  # pane i: (cuts[i-1], cuts[i]]
        shape = (len(cuts), g)
        memo: dict = {}
        layout = Tuples(groups, g)  # the block's tuples by group (sorted when first read)

        def partial(acc, attr):
            if attr is None:
                return acc.partial(None, pane, groups, shape)
            return deferred(memo, layout, acc, data[attr], lambda: acc.partial(data[attr], pane, groups, shape))

        self.respond(ends, uniq, cuts, partial, memo)


class TupleBuffer:
    """Column dicts of tuples in ``clock`` order (``ts``, or :data:`CLOCK`), joined into one when read."""

    def __init__(self, clock: str = "ts") -> None:
        self.parts: list[dict] = []
        self.clock = clock

    def append(self, data: dict) -> None:
        if len(data[self.clock]):
            self.parts.append(data)

    def whole(self) -> dict:
        """All buffered tuples as one column dict ({}: none)."""
        if len(self.parts) > 1:
            self.parts = [{a: np.concatenate([p[a] for p in self.parts]) for a in self.parts[0]}]
        return self.parts[0] if self.parts else {}

    def drop_before(self, t: int) -> None:
        """Drop the tuples with ``clock < t``."""
        buf = self.whole()
        drop = np.searchsorted(buf[self.clock], t, "left") if buf else 0
        if drop:
            self.parts = [{a: v[drop:] for a, v in buf.items()}] if drop < len(buf[self.clock]) else []


def select(where, ts: np.ndarray, cols: dict[str, np.ndarray], attrs) -> dict[str, np.ndarray]:
    """``ts`` and the attributes ``attrs`` of the tuples the condition ``where`` (None: all) admits."""
    data = {"ts": ts, **{a: cols[a] for a in attrs if a != "ts"}}
    if where is None:
        return data
    keep = np.broadcast_to(np.asarray(evaluate(where, lambda _s, a: ts if a == "ts" else cols[a]), dtype=bool), ts.shape)
    return {a: v[keep] for a, v in data.items()}


def _take(cells: np.ndarray, flat: np.ndarray) -> np.ndarray:
    """The (windows x groups) cells at the flat indices ``flat``."""
    return np.ravel(cells).take(flat)


def _widen(col: np.ndarray) -> np.ndarray:
    """int32 as int64 (the output type of integers on every path)."""
    return col.astype(np.int64) if col.dtype == np.int32 else col


def encode_groups(columns: list[np.ndarray], n: int) -> tuple[list[np.ndarray], np.ndarray]:
    """Group codes in value order of the key columns, and each group's key values per column."""
    if not columns:
        return [], np.zeros(n, np.int64)
    if len(columns) == 1:
        u, inv = np.unique(columns[0], return_inverse=True)
        return [u], inv.astype(np.int64)
    codes, uniqs = [], []
    for c in columns:
        u, inv = np.unique(c, return_inverse=True)
        uniqs.append(u)
        codes.append(inv.astype(np.int64))
    rows, inv = np.unique(np.stack(codes, axis=1), axis=0, return_inverse=True)
    return [u[rows[:, i]] for i, u in enumerate(uniqs)], inv.reshape(-1).astype(np.int64)


def _with_nulls(vals: np.ndarray, null: np.ndarray | None) -> np.ndarray:
    """Values with None where null (an object column, as the per-tuple path gives)."""
    if null is None or not null.any():
        return vals
    out = vals.astype(object)
    out[null] = None
    return out


def _numeric(vals: np.ndarray, null: np.ndarray | None) -> np.ndarray:
    """A column for HAVING: nulls as NaN (comparisons false)."""
    if null is None or not null.any():
        return vals
    return np.where(null, np.nan, vals.astype(np.float64))


def _sort_key(col: np.ndarray) -> tuple:
    """Sort keys (major first) ordering ``col`` as the per-tuple output does: None after values."""
    if col.dtype == object and any(v is None for v in col):
        null = np.array([v is None for v in col])
        filled = np.array([0 if v is None else v for v in col])
        return (filled, null)  # lexsort: later keys are more significant
    if col.dtype == object:
        return (np.unique(col, return_inverse=True)[1].reshape(-1),)
    return (col,)
