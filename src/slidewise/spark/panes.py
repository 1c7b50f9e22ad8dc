"""The pane path on Spark: a periodic one-stream sliding GROUP BY with pane partials in the state store.

When :func:`slidewise.optimizer.pane_plan.match` recognises the plan (``RSTREAM`` /
``ISTREAM`` / ``DSTREAM`` of ``GROUP BY`` over ``[RANGE T SLIDE D]``),
:func:`pane_bucket` gives :class:`PaneBucket`, which takes the place of the
operator network (:class:`~slidewise.spark.plan_state.PlanBucket`) in the
bucket stage of :mod:`slidewise.spark.plan_runner`, with the router before it
(:mod:`slidewise.spark.route`: hash buckets of a group key; input order and late
rejects computed in the bucket, as the sequencer stage would, so one stateful
stage), same output rows and driver sink after it. With a result directory on a
local master the buckets write their rows as files (:attr:`PaneBucket.parts`).

Per bucket the state is the *pane partials* of the retained panes: the grid of
width ``s = gcd(T + 1, D)`` (pane ``p`` holds ``(p−1)s < ts ≤ ps``), one
(panes × groups) matrix per state component of each accumulator of
:mod:`slidewise.operators.aggregates`, and the groups' key values — columnar,
as Arrow IPC (:func:`~slidewise.spark.state_codec.pack_state`, sealed; no
pickle). Each admitted tuple is pre-aggregated once into its pane on arrival
(a pane's windows are all still open: the sequencer rejects tuples more than
the lateness behind the frontier); the windows whose end ``τ = kD`` the
release bound ``frontier − lateness`` has passed are answered by merging
panes with the synopses of :mod:`slidewise.synopses` and emitted by
:class:`~slidewise.runtime.pane_engine.WindowAnswers` — the local pane path's
code; then the panes no later window needs are dropped, and groups left
without a tuple with them. End of input: the windows up to the slide
multiple after the global last timestamp, as the local engine, and later
tuples at or before it are ``late`` rejects (a continued run), as
:class:`~slidewise.spark.plan_state.PlanBucket`.

One query is a sharing group of one: a :class:`PaneBucket` serves any group of
:func:`slidewise.optimizer.sharing.share` (``run_many(..., engine="spark")``,
:mod:`slidewise.spark.many`) from one state — the grid is the group's
(gcd of every ``T + 1`` and ``D``), one partial per distinct (share key,
attribute) the members read, columns per (group key, region of the members'
predicates) — and each member's windows are answered from it.

DISTINCT aggregates (whose partials have one column per value present),
APPROX_COUNT_DISTINCT and APPROX_QUANTILE (whose partials are sketch objects, not
columns; the operator network answers them exactly) and plans with relations
keep the operator network.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from slidewise.operators.aggregates.sketches import EXACT
from slidewise.optimizer.pane_plan import SlidingAggregate, match
from slidewise.optimizer.sharing import Group, share
from slidewise.plan.expr import columns_of, evaluate
from slidewise.plan.logical import Plan
from slidewise.runtime.pane_engine import BLOCK_CELLS, WindowAnswers, encode_groups, select
from slidewise.runtime.plan_driver import end_instant
from slidewise.spark.layout import EOF, KIND_NUMPY, MARKER, ROUTED, SEGMENT, TUPLE, StreamInfo, concat, pack, unpack
from slidewise.spark.plan_state import ADMITTED, NEG, PART, REJECTS, RESULT, STATS, late_rejects, out_frame, passed_rejects
from slidewise.spark.state_codec import pack_state, state_key, unpack_state

__all__ = ["PaneBucket", "pane_bucket", "refused"]


def refused(spec: SlidingAggregate, dtypes: dict[str, np.dtype]) -> bool:
    """Whether the pane path on Spark does not run ``spec`` (DISTINCT or exact-sketch aggregates, or
    what :meth:`SlidingAggregate.refuse` refuses): the operator network does."""
    return any(a.distinct or a.func in EXACT for a in spec.aggs) or spec.refuse(dtypes) is not None


def stream_dtypes(kinds: dict[str, str]) -> dict[str, np.dtype]:
    """``ts`` and the attributes of a stream of attribute ``kinds`` as numpy dtypes."""
    return {"ts": np.dtype(np.int64), **{a: np.dtype(KIND_NUMPY[k]) for a, k in kinds.items()}}


def pane_bucket(
    plan: Plan, names: list[str], kinds: list[dict[str, str]], lateness: int, *, tables: dict | None = None, key: bytes | None = None, info: StreamInfo | None = None
) -> PaneBucket | None:
    """The pane logic of the bound, pruned ``plan`` (its streams ``names`` with attribute ``kinds``; ``info``:
    the stream's, for routed input), or None when the plan is not a periodic one-stream GROUP BY the pane
    path on Spark runs."""
    spec = match(plan)
    if spec is None or tables or len(names) != 1:
        return None
    dtypes = stream_dtypes(kinds[0])
    if refused(spec, dtypes):
        return None
    return PaneBucket(share({"query": spec})[0], list(kinds[0]), dtypes, lateness, key=key, info=info)


class PaneBucket:
    """The bucket stage of the pane path for the queries of one sharing ``group``
    (:func:`slidewise.optimizer.sharing.share`; one query: a group of one): :meth:`process` as
    :meth:`PlanBucket.process <slidewise.spark.plan_state.PlanBucket.process>` (state bytes in and out,
    rows of :data:`~slidewise.spark.plan_state.OUT_DDL`; a RESULT row's ``s`` is the member's index).

    One state for the group: the pane partials of every distinct (accumulator share key, attribute)
    the members read, per (group key, region) column and pane of the group's grid. A member's partials
    are the columns of the regions its predicate covers, merged per key (a disjoint cover, Golab's
    thesis §8.3.3); its key conjuncts filter its groups, as :class:`~slidewise.runtime.shared.SharedRun`.
    """

    def __init__(self, group: Group, attrs: list[str], dtypes: dict[str, np.dtype], lateness: int, *, key: bytes | None = None, info: StreamInfo | None = None):
        self.group, self.attrs, self.dtypes, self.lateness = group, list(attrs), dict(dtypes), int(lateness)
        #: the stream, for routed input (:func:`~slidewise.spark.route.sequence`: input order and late
        #: checks here, no sequencer stage)
        self.info = info
        self.key = key if key is not None else state_key()
        self.pane, self.where, self.regions = group.pane, group.predicate(), group.regions()
        self.bits = [None if m.residual is None else self.regions.index(m.residual) for m in group.members]
        self.keys = list(group.keys) + (["__region"] if self.regions else [])
        probe = self._answers(None)
        self.shared: list[tuple] = []  # (accumulator, attribute) of each shared partial; COUNT(*) first
        self.reads: list[list[int | None]] = []  # per member: the shared partial of each of its states
        index: dict = {}
        for i, a in enumerate(probe):
            reads = []
            for j, st in enumerate(a.states):
                if st is None:
                    reads.append(None)
                    continue
                sk = (st[0].share_key, st[1]) if st[0].share_key else (i, j)
                if sk not in index:
                    index[sk] = len(self.shared)
                    self.shared.append(st)
                reads.append(index[sk])
            self.reads.append(reads)
        extra = tuple(a for e in self.regions for _, a in columns_of(e) if a != "ts")
        self.read = tuple(dict.fromkeys(group.keys + tuple(x for a in probe for x in a.attrs) + extra))
        self.member_columns = [list(m.spec.columns) + ["ts", "sign"] for m in group.members]
        self.columns = self.member_columns[0]
        #: a staging directory (:func:`~slidewise.spark.sinks.staging`): results are written there as files
        #: (PART rows name them) instead of travelling packed in RESULT rows
        self.parts: str | None = None

    @property
    def spec(self) -> SlidingAggregate:
        """The first member's pane form (the query of a group of one)."""
        return self.group.members[0].spec

    def _answers(self, out: list | None) -> list[WindowAnswers]:
        """One :class:`WindowAnswers` per member; member ``i``'s rows go to ``out`` as ``(i, cols)``."""
        return [
            WindowAnswers(m.spec, self.dtypes, (lambda cols, i=i: out.append((i, cols))) if out is not None else None, key_filter=m.group_filter)
            for i, m in enumerate(self.group.members)
        ]

    # ---------------------------------------------------------------- state

    def _load(self, blob: bytes | None) -> dict:
        """``next_k`` (per member), ``p0`` (first retained pane), ``done``, ``frontier``; ``keys`` (one array
        per key column, then the region code if any; columns in value order), ``partials`` (per shared
        partial, panes x columns)."""
        n = len(self.group.members)
        st: dict = {"next_k": [None] * n, "p0": None, "done": None, "frontier": NEG, "nx": 0, "groups": 0, "partials": None}
        st["keys"] = [np.empty(0, self.dtypes[k]) for k in self.group.keys] + ([np.empty(0, np.int64)] if self.regions else [])
        if blob is None:
            return st
        meta, tables, _ = unpack_state(self.key, blob)
        st.update(meta)
        st["keys"] = [tables[0][f"k{j}"] for j in range(len(self.keys))]
        if st["p0"] is not None:
            cells, shape = tables[1], (meta["panes"], meta["groups"])
            st["partials"] = [tuple(cells[f"c{i}_{j}"].reshape(shape) for j in range(w)) for i, w in enumerate(meta["widths"])]
        return st

    def _dump(self, st: dict) -> bytes:
        parts = st["partials"]
        meta = {k: st[k] for k in ("next_k", "p0", "done", "frontier", "nx", "groups")}
        keys = {f"k{j}": v for j, v in enumerate(st["keys"])} or {"_": np.empty(0, np.int8)}
        cells: dict = {"_": np.empty(0, np.int8)}
        if parts is not None:
            meta["panes"] = int(parts[0][0].shape[0])
            meta["widths"] = [len(p) for p in parts]
            cells = {f"c{i}_{j}": x.reshape(-1) for i, p in enumerate(parts) for j, x in enumerate(p)}
        return pack_state(self.key, meta, [keys, cells])

    # ---------------------------------------------------------------- one call

    def process(self, bucket: int, blob: bytes | None, frame: pd.DataFrame) -> tuple[bytes, list[pd.DataFrame]]:
        """New state bytes and the output rows of one call (rejects passed on, admitted counts, results, stats)."""
        st = self._load(blob)
        rows, kind, streams = passed_rejects(frame)
        marks = kind == MARKER
        if marks.any():
            st["frontier"] = max(st["frontier"], int(frame["t"].to_numpy(np.int64)[marks].max()))
            rows += [{"k": ADMITTED, "s": int(s), "q": int(q)} for s, q in zip(streams[marks], frame["q"].to_numpy(np.int64)[marks]) if q > 0]
        eof = bool((kind == EOF).any())
        chunks = []
        arrived = [unpack(p) for p in frame["p"][kind == TUPLE]]
        if (kind == SEGMENT).any():  # routed input: put in input order and late-checked here
            routed, mine = self._sequence(st, frame, kind)
            rows += routed
            arrived += mine
        for chunk in arrived:
            if st["done"] is not None:  # behind an earlier end of input: those windows are closed
                late = chunk["t"] <= st["done"]
                if late.any():
                    rows.append(late_rejects(0, self.attrs, {k: v[late] for k, v in chunk.items()}, st["done"]))
                    chunk = {k: v[~late] for k, v in chunk.items()}
            chunks.append(chunk)
        out: list[tuple[int, dict]] = []
        answers = self._answers(out)
        if chunks:
            chunk = concat(chunks)
            if len(chunk["t"]):
                self._add(st, chunk)
        last = st["frontier"] if st["frontier"] > NEG else None
        if eof and last is not None:
            self._answer(st, answers, lambda D: -(-last // D))
            ends = [end_instant(last, m.spec.slide) for m in self.group.members]
            end = max(ends)
            st["done"] = end if st["done"] is None else max(st["done"], end)
        elif last is not None:  # windows ending before the release bound are complete
            self._answer(st, answers, lambda D: -(-(last - self.lateness) // D) - 1)
        for i in range(len(self.group.members)):
            mine = [c for j, c in out if j == i]
            if mine:
                cols = {c: np.concatenate([p[c] for p in mine]) for c in self.member_columns[i]}
                row = {"k": RESULT, "s": i, "q": len(cols["ts"]), "p": pack(cols) if self.parts is None else None, "n0": int((cols["sign"] < 0).sum())}
                if self.parts is not None:
                    from slidewise.spark.sinks import stage_part

                    row.update(k=PART, p=stage_part(self.parts, self.member_columns[i], cols).encode())
                rows.append(row)
        blob = self._dump(st)
        cells = 0 if st["partials"] is None else int(np.count_nonzero(st["partials"][0][0]))
        rows.append({"k": STATS, "s": bucket, "n0": cells, "n1": len(blob)})
        return blob, [out_frame(rows)]

    def _sequence(self, st: dict, frame: pd.DataFrame, kind: np.ndarray) -> tuple[list[dict], list[dict]]:
        """The batch's segments and this bucket's routed tuples (:mod:`slidewise.spark.route`), sequenced as
        the sequencer stage would: the frontier and next sequence number advanced; late rejects and the
        admitted count as rows; the admitted tuples."""
        from slidewise.spark.route import sequence

        segments = [unpack(p) for p in frame["p"][kind == SEGMENT]]
        mx, st["nx"], chunk, rejected, admitted = sequence(self.info, st["frontier"], st["nx"], segments, [unpack(p) for p in frame["p"][kind == ROUTED]])
        st["frontier"] = max(st["frontier"], mx)
        rows: list[dict] = [{"k": ADMITTED, "s": 0, "q": admitted}] if admitted else []
        if rejected is not None:
            rows.append({"k": REJECTS, "s": 0, "q": len(rejected["line"]), "p": pack(rejected)})
        return rows, [] if chunk is None else [chunk]

    # ---------------------------------------------------------------- panes

    def _add(self, st: dict, chunk: dict) -> None:
        """Pre-aggregate the tuples of ``chunk`` the group's common predicate admits into their panes (and
        regions; state grown as needed)."""
        for i, m in enumerate(self.group.members):
            if st["next_k"][i] is None:
                st["next_k"][i] = int(-(-int(chunk["t"].min()) // m.spec.slide))
        data = select(self.where, chunk["t"], chunk, self.read)
        n = len(data["ts"])
        if not n:
            return
        if self.regions:
            code = np.zeros(n, np.int64)
            for j, e in enumerate(self.regions):
                hit = np.broadcast_to(np.asarray(evaluate(e, lambda _s, a, d=data: d[a]), dtype=bool), (n,))
                code |= hit.astype(np.int64) << j
            data["__region"] = code
        pane = -(-data["ts"] // self.pane)
        pa, pb = int(pane.min()), int(pane.max())
        uniq, codes = encode_groups([data[k] for k in self.keys], n)
        old = st["groups"]
        if self.keys:
            st["keys"], inv = encode_groups([np.concatenate([o, u]) for o, u in zip(st["keys"], uniq)], old + len(uniq[0]))
            moved, codes = inv[:old], inv[old:][codes]
            groups = len(st["keys"][0])
        else:
            moved, groups = np.zeros(old, np.int64), 1
        p0 = pa if st["p0"] is None else min(st["p0"], pa)
        p1 = pb + 1 if st["p0"] is None else max(st["p0"] + st["partials"][0][0].shape[0], pb + 1)
        parts = [acc.identity((p1 - p0, groups)) for acc, _ in self.shared]
        if st["partials"] is not None:
            r0 = st["p0"] - p0
            for new, kept in zip(parts, st["partials"]):
                for x, y in zip(new, kept):
                    x[r0 : r0 + len(y), moved] = y
        r0, r1 = pa - p0, pb + 1 - p0
        shape = (pb - pa + 1, groups)
        for (acc, attr), new in zip(self.shared, parts):
            got = acc.partial(None if attr is None else data[attr], pane - pa, codes, shape)
            merged = acc.merge(tuple(x[r0:r1] for x in new), got)
            for x, y in zip(new, merged):
                x[r0:r1] = y
        st.update(p0=p0, partials=parts, groups=groups)

    def _member(self, st: dict, i: int, r0: int, r1: int) -> tuple[list[np.ndarray], list]:
        """Member ``i``'s group keys and partials (as :meth:`WindowAnswers.partials`) over pane rows
        ``[r0, r1)``: the columns of the regions its predicate covers, merged per key."""
        parts = [tuple(x[r0:r1] for x in st["partials"][j]) for j in range(len(self.shared))]
        if not self.regions:
            return st["keys"], [None if j is None else parts[j] for j in self.reads[i]]
        region, bit = st["keys"][-1], self.bits[i]
        cols = np.flatnonzero((region >> bit) & 1 == 1) if bit is not None else np.arange(len(region))
        uniq, inv = encode_groups([k[cols] for k in st["keys"][:-1]], len(cols))
        g = len(uniq[0]) if uniq else 1
        merged: dict[int, tuple] = {}
        for j in {j for j in self.reads[i] if j is not None}:
            acc = self.shared[j][0]
            total = acc.identity((r1 - r0, g))
            for r in np.unique(region[cols]):
                at = cols[region[cols] == r]
                part = acc.identity((r1 - r0, g))
                for x, y in zip(part, parts[j]):
                    x[:, inv[region[cols] == r]] = y[:, at]
                total = acc.merge(total, part)
            merged[j] = total
        return uniq, [None if j is None else merged[j] for j in self.reads[i]]

    def _answer(self, st: dict, answers: list[WindowAnswers], k_last) -> None:
        """Emit each member's windows ``next_k .. k_last(D)`` (its slide ``D``) from the panes; drop the
        panes and groups no later window needs."""
        s = self.pane
        parts, p0 = st["partials"], st["p0"]
        busy = np.flatnonzero(parts[0][0].any(axis=1)) if parts is not None else []
        cut = None
        for i, (m, answers_i) in enumerate(zip(self.group.members, answers)):
            T, D, lead = m.spec.length, m.spec.slide, answers_i.lead
            last = k_last(D)
            k = st["next_k"][i]
            if k is None:
                continue
            if k <= last and len(busy):
                k = max(k, -(-(p0 + int(busy[0])) * s // D))  # the windows before hold no tuple of this bucket
                panes = parts[0][0].shape[0]
                while k <= last:
                    k1 = min(last + 1, k + max(1, BLOCK_CELLS // st["groups"]))
                    ends = np.arange(k - lead, k1, dtype=np.int64) * D
                    first, after = (ends - T - 1) // s + 1 - p0, ends // s + 1 - p0  # pane rows [first, after)
                    r0, r1 = int(np.clip(first[0], 0, panes)), int(np.clip(after[-1], 0, panes))
                    uniq, partials = self._member(st, i, r0, r1)
                    answers_i.answer(uniq, partials, np.clip(first, r0, r1) - r0, np.clip(after, r0, r1) - r0, ends)
                    k = k1
            st["next_k"][i] = max(st["next_k"][i], last + 1)
            need = ((st["next_k"][i] - lead) * D - T - 1) // s + 1
            cut = need if cut is None else min(cut, need)
        if parts is None or cut is None:
            return
        cut = int(np.clip(cut - p0, 0, parts[0][0].shape[0]))
        alive = parts[0][0][cut:].any(axis=0)
        if cut == parts[0][0].shape[0] or not alive.any():
            st.update(p0=None, partials=None, groups=0, keys=[k[:0] for k in st["keys"]])
            return
        if self.keys and not alive.all():
            st["keys"] = [k[alive] for k in st["keys"]]
            st["groups"] = int(alive.sum())
        else:
            alive = slice(None)
        st["partials"] = [tuple(np.ascontiguousarray(x[cut:, alive]) for x in p) for p in parts]
        st["p0"] = p0 + cut
