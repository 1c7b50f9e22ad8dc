"""Stage 1 of the Spark join: per stream, input order, lateness, sequence numbers and key buckets.

Keyed by stream (one key per FROM stream), once per micro-batch. The rows of
the stream in the batch are put in input order — (file, split offset, row
ordinal), so files of one batch in name order, batches in arrival order —
and checked against the stream's running maximum timestamp exactly like the
local merger (:mod:`slidewise.runtime.reorder`): a tuple with
``ts < max ts before it - lateness`` is a reject (``late by ...``), never
silently dropped. Admitted tuples get the stream's next sequence numbers
(the tie order of equal timestamps; deterministic on replay, since the state
is restored with the batch) and their key bucket(s) from the
:class:`~slidewise.spark.keying.Keying`.

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
from slidewise.spark.layout import EOF, MARKER, REJECT, TUPLE, Layout

NEG = np.iinfo(np.int64).min // 2
STATE_DDL = "mx bigint, nx bigint"


class SequencerLogic:
    """The stage-1 computation for one stream key, without Spark (state in, state out)."""

    def __init__(self, layout: Layout, keying: Keying):
        self.layout = layout
        self.keying = keying

    def process(self, stream: int, state: tuple | None, frame: pd.DataFrame) -> tuple[tuple, list[pd.DataFrame]]:
        """New state ``(max ts, next seq)`` and the output frames (wide layout) for one batch."""
        mx, nx = (state if state is not None else (None, 0))
        mx = NEG if mx is None else int(mx)
        kind = frame["k"].to_numpy()
        out: list[pd.DataFrame] = []
        rej = frame[kind == REJECT]
        if len(rej):
            rej = rej.copy()
            rej["f"] = [self.layout.streams[stream].display(f) for f in rej["f"]]
            out.append(rej)
        data = frame[kind == TUPLE]
        if len(data):
            mx, nx, parts = self._tuples(stream, data, mx, int(nx))
            out += parts
        if (kind == EOF).any():
            out.append(self._broadcast(EOF, stream, 0, 0))
        return ((None if mx == NEG else mx), nx), out

    def _tuples(self, stream: int, data: pd.DataFrame, mx: int, nx: int):
        info = self.layout.streams[stream]
        data = data.sort_values(["f", "o", "q"], kind="stable")
        ts = data["t"].to_numpy(np.int64)
        prev = np.maximum.accumulate(np.concatenate(([mx], ts)))[:-1]
        late = (prev > NEG) & (ts < prev - info.lateness)
        attrs = self.layout.attr_columns(stream)
        parts = []
        if late.any():
            lr = data[late]
            by = (prev[late] - ts[late]).tolist()
            unit = f" {info.label}" if info.label else ""
            reasons = [f"late by {d}{unit} (lateness {info.lateness})" for d in by]
            raw = rows_as_text({"ts": ts[late], **{a: lr[c].to_numpy() for c, a, _ in attrs}}).to_pylist()
            o = lr["o"].to_numpy(np.int64)
            lines = lr["q"].to_numpy(np.int64) + 1 + np.where(o == 0, info.header_lines, 0)
            parts.append(_frame(self.layout, len(lr), k=REJECT, s=stream, t=ts[late],
                                f=[info.display(f) for f in lr["f"]], o=lines, rr=reasons, rw=raw))
        ok = data[~late]
        m = len(ok)
        new_mx = max(mx, int(ts.max()))
        if m:
            ts_ok = ts[~late]
            cols = {a: ok[c].to_numpy() for c, a, _ in attrs}
            rows, buckets = self.keying.assign(stream, ts_ok, cols)
            seq = nx + np.arange(m, dtype=np.int64)
            values = {c: ok[c].to_numpy()[rows] for c, _, _ in attrs}
            parts.append(_frame(self.layout, len(rows), k=TUPLE, b=buckets, s=stream, q=seq[rows],
                                t=ts_ok[rows], **values))
        parts.append(self._broadcast(MARKER, stream, new_mx, m))
        return new_mx, nx + m, parts

    def _broadcast(self, kind: int, stream: int, ts: int, count: int) -> pd.DataFrame:
        p = self.keying.buckets
        q = np.zeros(p, np.int64)
        q[0] = count
        return _frame(self.layout, p, k=kind, b=np.arange(p, dtype=np.int32), s=stream, q=q,
                      t=np.full(p, ts, np.int64))


def _frame(layout: Layout, n: int, **given) -> pd.DataFrame:
    """A wide-layout frame of ``n`` rows: ``given`` columns (scalars broadcast), the rest defaults.

    Numbers and booleans never travel as nulls (pandas would turn an integer
    column with nulls into float64 and lose precision): absent ones are 0 /
    False; absent strings are null.
    """
    data = {}
    for name, ddl in layout.wide_fields():
        v = given.get(name)
        if v is None:
            data[name] = np.full(n, None, dtype=object) if ddl == "string" else np.zeros(n, _DTYPE[ddl])
        elif np.isscalar(v):
            data[name] = np.full(n, v, dtype=_DTYPE.get(ddl, object))
        else:
            data[name] = np.asarray(v, dtype=_DTYPE[ddl]) if ddl != "string" else np.asarray(v, dtype=object)
    return pd.DataFrame(data)


_DTYPE = {"tinyint": np.int8, "int": np.int32, "bigint": np.int64, "double": np.float64, "boolean": np.bool_}
