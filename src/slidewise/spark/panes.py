"""The pane path on Spark: a periodic one-stream sliding GROUP BY with pane partials in the state store.

When :func:`slidewise.optimizer.pane_plan.match` recognises the plan (``RSTREAM`` /
``ISTREAM`` / ``DSTREAM`` of ``GROUP BY`` over ``[RANGE T SLIDE D]``),
:func:`pane_bucket` gives :class:`PaneBucket`, which takes the place of the
operator network (:class:`~slidewise.spark.plan_state.PlanBucket`) in the
bucket stage of :mod:`slidewise.spark.plan_runner`: same sequencer stage before it
(input order, late rejects, hash buckets of a group key), same output rows and
driver sink after it.

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
from slidewise.plan.logical import Plan
from slidewise.runtime.pane_engine import BLOCK_CELLS, WindowAnswers, encode_groups
from slidewise.runtime.plan_driver import end_instant
from slidewise.spark.layout import EOF, KIND_NUMPY, MARKER, TUPLE, concat, pack, unpack
from slidewise.spark.plan_state import ADMITTED, NEG, RESULT, STATS, late_rejects, out_frame, passed_rejects
from slidewise.spark.state_codec import pack_state, state_key, unpack_state

__all__ = ["PaneBucket", "pane_bucket"]


def pane_bucket(plan: Plan, names: list[str], kinds: list[dict[str, str]], lateness: int, *, tables: dict | None = None, key: bytes | None = None) -> PaneBucket | None:
    """The pane logic of the bound, pruned ``plan`` (its streams ``names`` with attribute ``kinds``), or
    None when the plan is not a periodic one-stream GROUP BY the pane path on Spark runs."""
    spec = match(plan)
    if spec is None or tables or len(names) != 1 or any(a.distinct or a.func in EXACT for a in spec.aggs):
        return None
    dtypes = {"ts": np.dtype(np.int64), **{a: np.dtype(KIND_NUMPY[k]) for a, k in kinds[0].items()}}
    if spec.refuse(dtypes) is not None:
        return None
    return PaneBucket(spec, list(kinds[0]), dtypes, lateness, key=key)


class PaneBucket:
    """The bucket stage of the pane path: :meth:`process` as :meth:`PlanBucket.process
    <slidewise.spark.plan_state.PlanBucket.process>` (state bytes in and out, rows of
    :data:`~slidewise.spark.plan_state.OUT_DDL`)."""

    def __init__(self, spec: SlidingAggregate, attrs: list[str], dtypes: dict[str, np.dtype], lateness: int, *, key: bytes | None = None):
        self.spec, self.attrs, self.dtypes, self.lateness = spec, list(attrs), dict(dtypes), int(lateness)
        self.key = key if key is not None else state_key()
        self.columns = list(spec.columns) + ["ts", "sign"]

    # ---------------------------------------------------------------- state

    def _load(self, blob: bytes | None) -> dict:
        """``next_k``, ``p0`` (first retained pane), ``done``, ``frontier``; ``keys`` (one array per key
        column, groups in value order), ``partials`` (as :meth:`WindowAnswers.partials`, panes x groups)."""
        spec = self.spec
        st: dict = {"next_k": None, "p0": None, "done": None, "frontier": NEG, "groups": 0, "keys": [np.empty(0, self.dtypes[k]) for k in spec.keys], "partials": None}
        if blob is None:
            return st
        meta, tables, _ = unpack_state(self.key, blob)
        st.update(meta)
        st["keys"] = [tables[0][f"k{j}"] for j in range(len(spec.keys))]
        if st["p0"] is not None:
            cells, shape = tables[1], (meta["panes"], meta["groups"])
            st["partials"] = [
                None if f"c{i}_0" not in cells else tuple(cells[f"c{i}_{j}"].reshape(shape) for j in range(meta["widths"][i])) for i in range(len(spec.aggs) + 1)
            ]
        return st

    def _dump(self, st: dict) -> bytes:
        parts = st["partials"]
        meta = {k: st[k] for k in ("next_k", "p0", "done", "frontier", "groups")}
        keys = {f"k{j}": v for j, v in enumerate(st["keys"])} or {"_": np.empty(0, np.int8)}
        cells: dict = {"_": np.empty(0, np.int8)}
        if parts is not None:
            meta["panes"] = int(parts[0][0].shape[0])
            meta["widths"] = [0 if p is None else len(p) for p in parts]
            cells = {f"c{i}_{j}": x.reshape(-1) for i, p in enumerate(parts) if p is not None for j, x in enumerate(p)}
        return pack_state(self.key, meta, [keys, cells])

    # ---------------------------------------------------------------- one call

    def process(self, bucket: int, blob: bytes | None, frame: pd.DataFrame) -> tuple[bytes, list[pd.DataFrame]]:
        """New state bytes and the output rows of one call (rejects passed on, admitted counts, results, stats)."""
        st = self._load(blob)
        spec, D = self.spec, self.spec.slide
        rows, kind, streams = passed_rejects(frame)
        marks = kind == MARKER
        if marks.any():
            st["frontier"] = max(st["frontier"], int(frame["t"].to_numpy(np.int64)[marks].max()))
            rows += [{"k": ADMITTED, "s": int(s), "q": int(q)} for s, q in zip(streams[marks], frame["q"].to_numpy(np.int64)[marks]) if q > 0]
        eof = bool((kind == EOF).any())
        chunks = []
        for payload in frame["p"][kind == TUPLE]:
            chunk = unpack(payload)
            if st["done"] is not None:  # behind an earlier end of input: those windows are closed
                late = chunk["t"] <= st["done"]
                if late.any():
                    rows.append(late_rejects(0, self.attrs, {k: v[late] for k, v in chunk.items()}, st["done"]))
                    chunk = {k: v[~late] for k, v in chunk.items()}
            chunks.append(chunk)
        out: list[dict] = []
        answers = WindowAnswers(spec, self.dtypes, out.append)
        if chunks:
            chunk = concat(chunks)
            if len(chunk["t"]):
                self._add(st, answers, chunk)
        last = st["frontier"] if st["frontier"] > NEG else None
        if eof and last is not None:
            self._answer(st, answers, -(-last // D))
            end = end_instant(last, D)
            st["done"] = end if st["done"] is None else max(st["done"], end)
        elif last is not None:  # windows ending before the release bound are complete
            self._answer(st, answers, -(-(last - self.lateness) // D) - 1)
        if out:
            cols = {c: np.concatenate([p[c] for p in out]) for c in self.columns}
            rows.append({"k": RESULT, "q": len(cols["ts"]), "p": pack(cols), "n0": int((cols["sign"] < 0).sum())})
        blob = self._dump(st)
        cells = 0 if st["partials"] is None else int(np.count_nonzero(st["partials"][0][0]))
        rows.append({"k": STATS, "s": bucket, "n0": cells, "n1": len(blob)})
        return blob, [out_frame(rows)]

    # ---------------------------------------------------------------- panes

    def _add(self, st: dict, answers: WindowAnswers, chunk: dict) -> None:
        """Pre-aggregate the tuples of ``chunk`` WHERE admits into their panes (state grown as needed)."""
        spec = self.spec
        if st["next_k"] is None:
            st["next_k"] = int(-(-int(chunk["t"].min()) // spec.slide))
        data = answers.filtered(chunk["t"], chunk)
        n = len(data["ts"])
        if not n:
            return
        pane = -(-data["ts"] // spec.pane)
        pa, pb = int(pane.min()), int(pane.max())
        uniq, codes = encode_groups([data[k] for k in spec.keys], n)
        old = st["groups"]
        if spec.keys:
            st["keys"], inv = encode_groups([np.concatenate([o, u]) for o, u in zip(st["keys"], uniq)], old + len(uniq[0]))
            moved, codes = inv[:old], inv[old:][codes]
            groups = len(st["keys"][0])
        else:
            moved, groups = np.zeros(old, np.int64), 1
        p0 = pa if st["p0"] is None else min(st["p0"], pa)
        p1 = pb + 1 if st["p0"] is None else max(st["p0"] + st["partials"][0][0].shape[0], pb + 1)
        parts = [None if state is None else state[0].identity((p1 - p0, groups)) for state in answers.states]
        if st["partials"] is not None:
            r0 = st["p0"] - p0
            for new, kept in zip(parts, st["partials"]):
                if new is not None:
                    for x, y in zip(new, kept):
                        x[r0 : r0 + len(y), moved] = y
        batch = answers.partials(data, pane - pa, codes, (pb - pa + 1, groups))
        r0, r1 = pa - p0, pb + 1 - p0
        for state, new, got in zip(answers.states, parts, batch):
            if new is not None:
                merged = state[0].merge(tuple(x[r0:r1] for x in new), got)
                for x, m in zip(new, merged):
                    x[r0:r1] = m
        st.update(p0=p0, partials=parts, groups=groups)

    def _answer(self, st: dict, answers: WindowAnswers, k_last: int) -> None:
        """Emit the windows ``next_k .. k_last`` from the panes; drop the panes and groups no later window needs."""
        spec = self.spec
        T, D, s, lead = spec.length, spec.slide, spec.pane, answers.lead
        if st["next_k"] is None or st["next_k"] > k_last:
            return
        parts, p0 = st["partials"], st["p0"]
        busy = np.flatnonzero(parts[0][0].any(axis=1)) if parts is not None else []
        k = st["next_k"]
        if len(busy):
            k = max(k, -(-(p0 + int(busy[0])) * s // D))  # the windows before hold no tuple of this bucket
            panes = parts[0][0].shape[0]
            while k <= k_last:
                k1 = min(k_last + 1, k + max(1, BLOCK_CELLS // st["groups"]))
                ends = np.arange(k - lead, k1, dtype=np.int64) * D
                first, after = (ends - T - 1) // s + 1 - p0, ends // s + 1 - p0  # pane rows [first, after)
                r0, r1 = int(np.clip(first[0], 0, panes)), int(np.clip(after[-1], 0, panes))
                answers.answer(
                    st["keys"], [None if p is None else tuple(x[r0:r1] for x in p) for p in parts], np.clip(first, r0, r1) - r0, np.clip(after, r0, r1) - r0, ends
                )
                k = k1
        st["next_k"] = max(st["next_k"], k_last + 1)
        if parts is None:
            return
        cut = int(np.clip(((st["next_k"] - lead) * D - T - 1) // s + 1 - p0, 0, parts[0][0].shape[0]))
        alive = parts[0][0][cut:].any(axis=0)
        if cut == parts[0][0].shape[0] or not alive.any():
            st.update(p0=None, partials=None, groups=0, keys=[k[:0] for k in st["keys"]])
            return
        if spec.keys and not alive.all():
            st["keys"] = [k[alive] for k in st["keys"]]
            st["groups"] = int(alive.sum())
        else:
            alive = slice(None)
        st["partials"] = [None if p is None else tuple(np.ascontiguousarray(x[cut:, alive]) for x in p) for p in parts]
        st["p0"] = p0 + cut
