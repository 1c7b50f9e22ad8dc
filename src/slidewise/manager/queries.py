"""Queries of the query manager: CQL compiled to a sliding aggregate, answered from sub-window partials.

A registered (periodic) query is ``SELECT RSTREAM(keys, aggregates) FROM S
[RANGE T SLIDE D] [WHERE ...] GROUP BY keys [HAVING ...]`` — the pane path's
shape (:func:`slidewise.optimizer.pane_plan.match`) — whose window ``T + 1`` is
``nk`` sub-windows and whose period ``D`` is ``m`` sub-windows (Golab's thesis
§7.2.1, §8.4.1). A one-time query may omit SLIDE and RSTREAM: it is answered
once, over the current window.

A scan reads sub-windows one at a time; each read yields the sub-window's
partial (:func:`partial`): its groups and one accumulator state per aggregate of
:mod:`slidewise.operators.aggregates`, pre-aggregated from the raw tuples
(window scan) or taken from the sub-window's synopsis entry (synopsis scan,
the same partial computed once per signature). :meth:`Compiled.answer` merges
the partials read into the answer with the pane path's
:class:`~slidewise.runtime.pane_engine.WindowAnswers` (HAVING, output columns, order).

The frequency aggregates (DISTINCT, MEDIAN, QUANTILE, TOPK) keep a sub-window's
counts per (group, value) pair (:class:`Frequencies`), whatever their k or p, so
all of them over one attribute share one synopsis. The queries of one joint
execution (:class:`Shared`) merge their reads once per signature, each
answering over its own youngest sub-windows, and the TOPK queries of one window
share its ranking: a linear selection of the largest k they ask, then a sort of
those only (Golab's thesis §8.3.1, CS1-CS2, and §8.4.4's post-processing).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from slidewise.cql.parser import parse_plan
from slidewise.errors import QueryError
from slidewise.manager.window import SubWindow
from slidewise.operators.aggregates import Accumulator, Distinct, Quantile, TopK
from slidewise.optimizer.pane_plan import SlidingAggregate, match
from slidewise.plan.bind import bind
from slidewise.plan.logical import Plan, Scan
from slidewise.plan.prune import prune_columns
from slidewise.runtime.pane_engine import WindowAnswers, encode_groups
from slidewise.runtime.sources.base import KIND_DTYPE

__all__ = ["ACCESS", "Compiled", "Shared", "compile_query"]

#: the access paths of a scan (Golab's thesis §7.2.1): raw tuples, or the sub-windows' synopsis entries
ACCESS = ("window", "synopsis")

SHAPE = "SELECT RSTREAM(keys, aggregates) FROM S [RANGE T SLIDE D] [WHERE ...] GROUP BY keys [HAVING ...]"


@dataclass
class Frequencies:
    """A sub-window's frequency counts of one attribute: ``counts`` of each (group, value) pair present,
    ``group`` the pair's group (a column of the partial) and ``value`` its value."""

    counts: np.ndarray
    group: np.ndarray
    value: np.ndarray


@dataclass
class Entries:
    """The frequency counters of a joint execution's reads (oldest first): read ``r``'s are
    ``pair[offsets[r]:offsets[r + 1]]`` (columns of the merged pairs, ``width`` of them) with ``count``."""

    offsets: np.ndarray
    pair: np.ndarray
    count: np.ndarray
    width: int


@dataclass
class Merged:
    """The partials of one joint execution's reads (oldest first) in one encoding: ``uniq`` the groups of them
    all, ``states`` per aggregate its (reads x groups) state as :meth:`WindowAnswers.partials` does, or for a
    frequency aggregate its :class:`Entries`; ``pairs`` the (pair group, pair value) of each frequency state;
    ``sizes`` the groups present in each read (what merging it into a window's state costs)."""

    uniq: list[np.ndarray]
    states: list
    pairs: dict[int, tuple[np.ndarray, np.ndarray]]
    sizes: np.ndarray
    reads: int


@dataclass(eq=False)
class Compiled:
    """A query over ``nk`` sub-windows, re-executed every ``m`` window slides (0: one-time)."""

    text: str
    spec: SlidingAggregate
    nk: int
    m: int
    answers: WindowAnswers
    access: str = "synopsis"

    @property
    def signature(self) -> tuple:
        """Queries with equal signatures have equal sub-window partials (one synopsis serves them): the
        frequency aggregates (DISTINCT, MEDIAN, QUANTILE, TOPK) of one attribute keep the same counts."""
        s = self.spec
        return (
            s.source,
            s.where,
            s.keys,
            tuple(("frequencies", a.arg) if isinstance(acc, Distinct) else (a.func, a.arg, a.distinct, a.param) for a, acc in zip(s.aggs, self.answers.accs)),
        )

    def build(self, sub: SubWindow) -> tuple[list[np.ndarray], list]:
        """The partial of one sub-window: its groups' key values, and the states (``COUNT(*)`` first; a
        frequency aggregate's as :class:`Frequencies`)."""
        data = self.answers.filtered(sub.cols["ts"], sub.cols)
        rows = len(data["ts"])
        uniq, codes = encode_groups([data[k] for k in self.spec.keys], rows)
        width = len(uniq[0]) if uniq else 1
        panes = np.zeros(rows, np.int64)
        parts: list = []
        for st in self.answers.states:
            if st is None:
                parts.append(None)
            elif isinstance(st[0], Distinct) and st[1] is not None:
                freq = Distinct(st[0].dtype)
                (counts,) = freq.partial(data[st[1]], panes, codes, (1, width))
                parts.append(Frequencies(counts[0], freq.pair_group, freq.pair_value))
            else:
                parts.append(st[0].partial(None if st[1] is None else data[st[1]], panes, codes, (1, width)))
        return uniq, parts

    def read(self, sub: SubWindow) -> tuple[list[np.ndarray], list]:
        """One sub-window read by this query's access path."""
        return sub.partial(self.signature, self.build) if self.access == "synopsis" else self.build(sub)

    def merge(self, reads: list) -> Merged | None:
        """The partials ``reads`` (oldest first) in one encoding of their groups (and pairs); None: no group."""
        keys = self.spec.keys
        if keys:
            sizes = [len(u[0]) for u, _ in reads]
            uniq, codes = encode_groups([np.concatenate([u[i] for u, _ in reads]) for i in range(len(keys))], sum(sizes))
            width = len(uniq[0])
        else:
            sizes, uniq, codes, width = [1] * len(reads), [], np.zeros(len(reads), np.int64), 1
        if not width:
            return None
        bounds = np.cumsum([0] + sizes)
        states: list = []
        pairs: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for i, st in enumerate(self.answers.states):
            if st is None:
                states.append(None)
            elif isinstance(st[0], Distinct):
                freqs = [parts[i] for _, parts in reads]
                group = np.concatenate([codes[bounds[r] : bounds[r + 1]][f.group] for r, f in enumerate(freqs)])
                value = np.concatenate([f.value for f in freqs])
                uval, vcode = np.unique(value, return_inverse=True)
                step = max(len(uval), 1)
                upair, pcode = np.unique(group * step + vcode.reshape(-1), return_inverse=True)
                offsets = np.cumsum([0] + [len(f.counts) for f in freqs])
                states.append(Entries(offsets, pcode.reshape(-1), np.concatenate([f.counts for f in freqs]), len(upair)))
                pairs[i] = (upair // step, uval[upair % step] if len(uval) else uval)
            else:
                full = st[0].identity((len(reads), width))
                for r, (_, parts) in enumerate(reads):
                    cols = codes[bounds[r] : bounds[r + 1]]
                    for whole, part in zip(full, parts[i]):
                        whole[r, cols] = part[0]
                states.append(full)
        return Merged(uniq, states, pairs, np.asarray(sizes, np.int64), len(reads))

    def answer(self, reads: list, end: int, shared: Shared | None = None) -> dict[str, np.ndarray] | None:
        """The answer over the youngest ``nk`` of ``reads`` (partials, oldest first) at instant ``end``:
        columns with ``ts`` and ``sign`` (None: no row). Queries of one signature answered with one ``shared``
        over the same reads share one scan of them from the youngest (Golab's thesis §8.3.1, CS2), each window's
        state and each window's top-k ranking."""
        shared = Shared() if shared is None else shared
        if not reads:
            return None
        merged = shared.merged(self, reads)
        if merged is None:
            return None
        size = min(self.nk, len(reads))
        values = []
        for i, st in enumerate(self.answers.states):
            if st is None:
                values.append(None)
                continue
            acc = st[0]
            if isinstance(acc, Distinct):
                acc.pairs(*merged.pairs[i], len(merged.uniq[0]) if merged.uniq else 1)
            depth = shared.depth(self, i, acc) if isinstance(acc, TopK) else 0
            values.append(shared.value(acc, merged, i, size, depth))
        out: list[dict] = []
        self.answers.emit = out.append
        self.answers.conclude(merged.uniq, values, np.array([end], np.int64))
        return out[0] if out else None


class Shared:
    """What the queries of one joint execution share (over the same reads): the encoding of each signature's
    partials, one scan of them from the youngest read that gives each window's state on the way (Golab's
    thesis §8.3.1, CS2: a window of ``nk`` reads is the one of the next shorter window merged with the reads
    between them), each window's top-k ranking (:meth:`TopK.rank`) and quantiles' running counts, and the
    work counted: ``merged`` (one unit per counter, or group, of a read merged into the scan: each read's once
    however many windows the queries ask) and ``ranked`` (what the rankings did; a quantile: one unit per
    counter of its window summed once, and the probes of two binary searches per group). ``queries``: those of
    the execution; a window's ranking selects the largest k they ask of it (§8.4.4: only the top-k largest
    counts are needed), ranked again deeper if a query not declared asks more."""

    def __init__(self, queries: list[Compiled] | tuple = ()) -> None:
        self.merges: dict = {}
        self.memo: dict = {}
        self.work = {"merged": 0.0, "ranked": 0.0}
        self.depths: dict = {}  # (signature, window, aggregate) -> the largest k asked of it
        for q in queries:
            for i, st in enumerate(q.answers.states):
                if st is not None and isinstance(st[0], TopK):
                    key = (q.signature, q.nk, i)
                    self.depths[key] = max(self.depths.get(key, 0), st[0].k)

    def merged(self, query: Compiled, reads: list) -> Merged | None:
        key = (query.signature, id(reads))
        if key not in self.merges:
            self.merges[key] = (reads, query.merge(reads))  # the reads kept: their id stays theirs
        return self.merges[key][1]

    def depth(self, query: Compiled, i: int, acc: TopK) -> int:
        """How deep to rank the window of ``query``'s aggregate ``i``: the largest k asked of it."""
        return max(self.depths.get((query.signature, query.nk, i), 0), acc.k)

    def window(self, acc: Accumulator, merged: Merged, i: int, size: int) -> tuple:
        """State ``i`` over the youngest ``size`` reads of ``merged``: the scan from the youngest read goes on
        from the longest window it reached (a shorter window asked after it starts a new scan)."""
        key = ("scan", id(merged), i)
        scan = self.memo.get(key)
        if scan is None or (scan["at"] > size and size not in scan["windows"]):
            scan = self.memo[key] = {"at": 0, "state": None, "windows": {}}
        if size in scan["windows"]:
            return scan["windows"][size]
        n, part, at = merged.reads, merged.states[i], scan["at"]
        if isinstance(part, Entries):
            lo, hi = int(part.offsets[n - size]), int(part.offsets[n - at])
            add = np.bincount(part.pair[lo:hi], weights=part.count[lo:hi], minlength=part.width).astype(np.int32)
            state = (add if scan["state"] is None else scan["state"] + add,)
            counts = state[0]
            self.work["merged"] += hi - lo
        else:
            state = scan["state"]
            for r in range(n - at - 1, n - size - 1, -1):  # youngest first
                row = tuple(c[r : r + 1] for c in part)
                state = row if state is None else acc.merge(state, row)
            self.work["merged"] += float(merged.sizes[n - size : n - at].sum())
            counts = state
        scan["at"], scan["state"] = size, counts if isinstance(part, Entries) else state
        found = scan["windows"][size] = (counts[None, :],) if isinstance(part, Entries) else state
        return found

    def value(self, acc: Accumulator, merged: Merged, i: int, size: int, depth: int = 0) -> tuple:
        """``acc``'s value over the youngest ``size`` reads (a TOPK's ranking made once, ``depth`` deep; a
        quantile's running counts once per window)."""
        state = self.window(acc, merged, i, size)
        if isinstance(acc, TopK):
            key: tuple = ("rank", id(merged), i, size)
            depth = max(depth, acc.k)
            if key not in self.memo or self.memo[key][0] < depth:
                ranking = acc.rank(state, depth)
                self.work["ranked"] += ranking[2]
                self.memo[key] = (depth, ranking)
            return acc.top(self.memo[key][1])
        if isinstance(acc, Distinct):
            key = ("state", id(merged), i, size, acc.share_key)
            if key not in self.memo:
                self.memo[key] = acc.from_counts(state[0])
                if isinstance(acc, Quantile):
                    self.work["ranked"] += np.count_nonzero(state[0])  # the window's counters summed in value order
            state = self.memo[key]
            if isinstance(acc, Quantile):
                self.work["ranked"] += 2 * acc.groups * np.log2(acc.width + 1)  # two binary searches per group
        return acc.value(state)


def compile_query(text: str, schemas: dict[str, dict[str, str]], t: int, n: int, *, one_time: bool = False, access: str = "synopsis") -> Compiled:
    """``text`` over streams with attribute kinds ``schemas``, for windows of ``n`` sub-windows of ``t``."""
    if access not in ACCESS:
        raise QueryError(f"unknown access path {access!r}", hint=f"use one of {', '.join(ACCESS)}")
    plan = parse_plan(text)
    missing = sorted({s.source for s in plan.scans()} - set(schemas))
    if missing:
        raise QueryError(f"unknown stream {missing[0]}", hint=f"the query manager has streams {', '.join(sorted(schemas)) or '(none)'}")
    if one_time:
        plan = _once(plan, t)
    spec = match(prune_columns(bind(plan, schemas)))
    if spec is None or spec.kind != "rstream":
        raise QueryError("the query manager runs periodic one-stream aggregates only", hint=f"write {SHAPE}")
    if spec.counted:
        raise QueryError(
            "the query manager's sub-windows are time intervals: a count window with SLIDE ([ROWS n SLIDE m]) is not supported here",
            hint="use [RANGE T SLIDE D], or run the query with `slidewise run`",
        )
    sketch = next((a for a in spec.aggs if a.func.startswith("approx_")), None)
    if sketch is not None:
        raise QueryError(
            f"the query manager answers COUNT, SUM, AVG, MIN, MAX, MEDIAN, QUANTILE and TOPK, DISTINCT or not, not {sketch.func.upper()}",
            hint="use the exact aggregate, or run the query with `slidewise run`",
        )
    size = spec.length + 1
    if size % t or size // t > n:
        raise QueryError(
            f"RANGE {spec.length} is not a whole number of sub-windows of {t} (at most {n})",
            hint=f"use RANGE k*{t}-1 for k from 1 to {n}, e.g. RANGE {n * t - 1}",
        )
    if spec.slide % t:
        raise QueryError(f"SLIDE {spec.slide} is not a multiple of the sub-window length {t}", hint=f"use SLIDE {t}, {2 * t}, ...")
    dtypes = {a: KIND_DTYPE[k] for a, k in schemas[spec.source].items()}
    refused = spec.refuse(dtypes)
    if refused:
        raise QueryError(f"the query manager cannot run this query: {refused}", hint="group by integer or string columns")
    return Compiled(text, spec, size // t, 0 if one_time else spec.slide // t, WindowAnswers(spec, dtypes, None), access)


def _once(plan: Plan, t: int) -> Plan:
    """A one-time query as a periodic one of slide ``t`` (RSTREAM): it is evaluated once."""

    def down(node):
        if isinstance(node, Scan):
            return replace(node, window=replace(node.window, slide=t)) if node.window is not None and node.window.kind == "range" else node
        child = getattr(node, "child", None)
        return node if child is None else replace(node, child=down(child))

    root = plan.root
    return replace(plan, root=replace(root, kind="rstream", slide=t, child=down(root.child)))
