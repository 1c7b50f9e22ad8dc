"""FREQUENT on Spark: the local engine's :class:`~slidewise.runtime.frequent.FrequentRun` in the bucket stage.

A frequent-items query (:class:`~slidewise.plan.frequent.FrequentQuery`,
Golab's thesis ch. 6, Algorithm 6) is global over one stream, so it runs in
one key bucket: :class:`FrequentBucket` takes the place of the operator
network in the bucket stage of :mod:`slidewise.spark.plan_runner`, after the
same sequencer stage (input order, late rejects, sequence numbers) and before
the same driver sink. Per call the admitted tuples wait in a small reorder
buffer until the release bound ``frontier − lateness`` passes them (all at an
end of input), then go to the run in ``(ts, sequence number)`` order — the
local merger's order, so a count window (``ROWS``) counts the same arrivals.
Between calls the state holds the run's :meth:`~slidewise.runtime.frequent.FrequentRun.snapshot`:
the top-k summaries (items, counts, ``δᵢ``) of the finished sub-windows still
in a window, the open sub-window's tuples and a few numbers — columnar, as
Arrow IPC (:func:`~slidewise.spark.state_codec.pack_state`, sealed). An end
of input finishes the run as the local engine does; later tuples at or
before its last instant are ``late`` rejects (a continued run), as
:class:`~slidewise.spark.panes.PaneBucket`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from slidewise.plan.frequent import FrequentQuery
from slidewise.runtime.frequent import FrequentRun
from slidewise.runtime.plan_driver import end_instant
from slidewise.spark.layout import EOF, KIND_NUMPY, MARKER, TUPLE, concat, pack, take, unpack
from slidewise.spark.plan_state import ADMITTED, NEG, RESULT, STATS, late_rejects, out_frame, passed_rejects
from slidewise.spark.state_codec import pack_state, state_key, unpack_state
from slidewise.synopses.frequent import Summaries

__all__ = ["FrequentBucket"]


class FrequentBucket:
    """The bucket stage of a FREQUENT query: :meth:`process` as :meth:`PlanBucket.process
    <slidewise.spark.plan_state.PlanBucket.process>` (state bytes in and out, rows of
    :data:`~slidewise.spark.plan_state.OUT_DDL`). ``q`` is bound (:func:`~slidewise.runtime.frequent.bind_frequent`)."""

    def __init__(self, q: FrequentQuery, kinds: dict[str, str], lateness: int, *, key: bytes | None = None):
        self.spec, self.kinds, self.lateness = q, dict(kinds), int(lateness)
        self.key = key if key is not None else state_key()
        self.columns = [*q.columns, "ts", "sign"]

    # ---------------------------------------------------------------- state

    def _load(self, blob: bytes | None, emit) -> tuple[dict, FrequentRun]:
        run = FrequentRun(self.spec, emit, item_dtype=np.dtype(KIND_NUMPY[self.kinds[self.spec.item]]))
        st: dict = {
            "frontier": NEG,
            "done": None,
            "buffer": {"t": np.empty(0, np.int64), "q": np.empty(0, np.int64), **{a: np.empty(0, KIND_NUMPY[k]) for a, k in self.kinds.items()}},
        }
        if blob is None:
            return st, run
        meta, (buffer, entries, subs, carry), _ = unpack_state(self.key, blob)
        st.update(frontier=meta["frontier"], done=meta["done"])
        if meta["buffered"]:
            st["buffer"] = {c: buffer[c] for c in st["buffer"]}
        if not meta["entries"]:
            entries = {"items": np.empty(0, object), "counts": np.empty(0, np.int64)}
        held = Summaries.of_sizes(subs["ids"], subs["delta"], subs["sizes"], entries["items"], entries["counts"])
        run.restore(meta["run"], held, (carry["sub"], carry["item"]) if meta["carry"] else None)
        return st, run

    def _dump(self, st: dict, run: FrequentRun) -> bytes:
        meta, held, carry = run.snapshot()
        empty = {"_": np.empty(0, np.int8)}
        n = len(st["buffer"]["t"])
        tables = [
            st["buffer"] if n else empty,
            {"items": held.items, "counts": held.counts} if len(held.items) else empty,
            {"ids": held.ids, "delta": held.delta, "sizes": held.sizes},
            {"sub": carry[0], "item": carry[1]} if carry is not None else empty,
        ]
        return pack_state(
            self.key, {"frontier": st["frontier"], "done": st["done"], "run": meta, "buffered": n, "entries": len(held.items), "carry": carry is not None}, tables
        )

    # ---------------------------------------------------------------- one call

    def process(self, bucket: int, blob: bytes | None, frame: pd.DataFrame) -> tuple[bytes, list[pd.DataFrame]]:
        """New state bytes and the output rows of one call (rejects passed on, admitted counts, results, stats)."""
        out: list[dict] = []
        st, run = self._load(blob, out.append)
        q = self.spec
        rows, kind, streams = passed_rejects(frame)
        marks = kind == MARKER
        if marks.any():
            st["frontier"] = max(st["frontier"], int(frame["t"].to_numpy(np.int64)[marks].max()))
            rows += [{"k": ADMITTED, "s": int(s), "q": int(n)} for s, n in zip(streams[marks], frame["q"].to_numpy(np.int64)[marks]) if n > 0]
        eof = bool((kind == EOF).any())
        chunks = [st["buffer"]]
        for payload in frame["p"][kind == TUPLE]:
            chunk = unpack(payload)
            if st["done"] is not None:  # behind an earlier end of input: those windows are closed
                late = chunk["t"] <= st["done"]
                if late.any():
                    rows.append(late_rejects(0, list(self.kinds), {k: v[late] for k, v in chunk.items()}, st["done"]))
                    chunk = {k: v[~late] for k, v in chunk.items()}
            chunks.append({c: chunk[c] for c in st["buffer"]})
        buffer = concat(chunks)
        buffer = take(buffer, np.lexsort((buffer["q"], buffer["t"])))
        # released: every tuple a later admitted one cannot precede (all at an end of input)
        n = len(buffer["t"]) if eof else int(np.searchsorted(buffer["t"], st["frontier"] - self.lateness, "left"))
        if n:
            run.add(buffer["t"][:n], {a: buffer[a][:n] for a in self.kinds})
        st["buffer"] = {c: v[n:] for c, v in buffer.items()}
        if eof and run.last_ts is not None:
            run.finish()
            end = run.last_ts if q.counting else end_instant(run.last_ts, q.slide)
            st["done"] = end if st["done"] is None else max(st["done"], end)
        if out:
            cols = {c: np.concatenate([p[c] for p in out]) for c in self.columns}
            rows.append({"k": RESULT, "q": len(cols["ts"]), "p": pack(cols), "n0": 0})
        blob = self._dump(st, run)
        held = len(st["buffer"]["t"]) + (0 if run.carry is None else len(run.carry[0]))
        rows.append({"k": STATS, "s": bucket, "n0": held, "n1": len(blob)})
        return blob, [out_frame(rows)]
