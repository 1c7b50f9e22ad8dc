"""Stage 1 of Spark's general plans (and of :mod:`slidewise.spark.follow`): per stream, input order,
lateness, sequence numbers and key buckets. (The Spark join does the same in its bucket stage:
:mod:`slidewise.spark.route`.)

Keyed by stream (one key per FROM stream), once per micro-batch. The stream's
tuple chunks of the batch are unpacked and put in input order — (file, split
offset, row ordinal), so files of one batch in name order, batches in arrival
order — and checked against the stream's running maximum timestamp exactly
like the local merger (:mod:`slidewise.runtime.reorder`): a tuple with
``ts < max ts before it - lateness`` is a reject (``late by ...``), never
silently dropped. Admitted tuples get the stream's next sequence numbers
(the tie order of equal timestamps; deterministic on replay, since the state
is restored with the batch) and their key bucket(s) from the
:class:`~slidewise.spark.keying.Keying`, and leave as one packed chunk per
bucket.

Per stream and batch it also sends every bucket a *frontier marker* (the
stream's maximum timestamp so far; the one for bucket 0 carries the number
of tuples admitted): the join stage releases tuples below
``min over streams (frontier - lateness)``, the local engine's release rule,
so every bucket advances even when it got no tuple. End-of-input rows from the
control source become one EOF row per bucket.

State per stream (a value ``(max ts, next sequence number)``) is two numbers.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from slidewise.runtime.rejects import rows_as_text
from slidewise.spark.keying import Keying
from slidewise.spark.layout import EOF, MARKER, REJECT, TUPLE, Layout, concat, pack, take, unpack, wire_frame

NEG = np.iinfo(np.int64).min // 2
STATE_DDL = "mx bigint, nx bigint"


class SequencerLogic:
    """The stage-1 computation for one stream key, without Spark (state in, state out)."""

    def __init__(self, layout: Layout, keying: Keying):
        self.layout = layout
        self.keying = keying

    def process(self, stream: int, state: tuple | None, frame: pd.DataFrame) -> tuple[tuple, list[pd.DataFrame]]:
        """New state ``(max ts, next seq)`` and the output frames (wire layout) for one batch."""
        mx, nx = state if state is not None else (None, 0)
        mx = NEG if mx is None else int(mx)
        nx = int(nx)
        kind = frame["k"].to_numpy()
        info = self.layout.streams[stream]
        rows: list[dict] = []
        rejects = [unpack(p) for p in frame["p"][kind == REJECT]]
        tuples = [unpack(p) for p in frame["p"][kind == TUPLE]]
        if tuples:
            mx, nx, late, out = self._tuples(stream, concat(tuples), mx, nx)
            rows += out
            if late is not None:
                rejects.append(late)
        if rejects:
            rej = concat(rejects)
            rej["file"] = np.asarray([info.display(f) for f in rej["file"]], dtype=object)
            rows.append({"k": REJECT, "s": stream, "q": len(rej["line"]), "p": pack(rej)})
        if (kind == EOF).any():
            rows += [{"k": EOF, "b": b, "s": stream} for b in range(self.keying.buckets)]
        return ((None if mx == NEG else mx), nx), [wire_frame(rows)] if rows else []

    def _tuples(self, stream: int, chunk: dict, mx: int, nx: int):
        info = self.layout.streams[stream]
        order = np.lexsort((chunk["q"], chunk["o"], chunk["fi"]))
        chunk = take(chunk, order)
        ts = chunk["t"]
        prev = np.maximum.accumulate(np.concatenate(([mx], ts)))[:-1]
        late = (prev > NEG) & (ts < prev - info.lateness)
        rejected = late_rejects(info, chunk, prev, late) if late.any() else None
        ok = ~late
        m = int(ok.sum())
        new_mx = max(mx, int(ts.max())) if len(ts) else mx
        rows = []
        if m:
            ts_ok = ts[ok]
            cols = {a: chunk[a][ok] for a in info.kinds}
            idx, buckets = self.keying.assign(stream, ts_ok, cols)
            seq = nx + np.arange(m, dtype=np.int64)
            by_bucket = np.argsort(buckets, kind="stable")
            sorted_b = buckets[by_bucket]
            bounds = np.flatnonzero(np.diff(sorted_b)) + 1
            for part in np.split(by_bucket, bounds):
                rows_ = idx[part]
                rows.append(
                    {
                        "k": TUPLE,
                        "b": int(buckets[part[0]]),
                        "s": stream,
                        "q": len(part),
                        "p": pack({"t": ts_ok[rows_], "q": seq[rows_], **{a: v[rows_] for a, v in cols.items()}}),
                    }
                )
        rows += [{"k": MARKER, "b": b, "s": stream, "t": new_mx, "q": m if b == 0 else 0} for b in range(self.keying.buckets)]
        return new_mx, nx + m, rejected, rows


def late_rejects(info, chunk: dict, prev: np.ndarray, late: np.ndarray) -> dict:
    """Rejects (file URI, line, reason, row) of the tuples ``late`` of a scanned chunk; ``prev``:
    each tuple's largest timestamp before it."""
    ts = chunk["t"]
    unit = f" {info.label}" if info.label else ""
    reasons = [f"late by {d}{unit} (lateness {info.lateness})" for d in (prev[late] - ts[late]).tolist()]
    raw = rows_as_text({"ts": ts[late], **{a: chunk[a][late] for a in info.kinds}}).to_pylist()
    o = chunk["o"][late]
    return {
        "file": np.asarray(chunk["files"], dtype=object)[chunk["fi"][late]],
        "line": chunk["q"][late] + 1 + np.where(o == 0, info.header_lines, 0),
        "reason": np.asarray(reasons, dtype=object),
        "raw": np.asarray(raw, dtype=object),
    }
