"""The Spark join's stateful stage: one key bucket hosting a slidewise join operator.

Its input comes from the router (:mod:`slidewise.spark.route`: the bucket's tuples and every
file-split segment of the batch, ordered and late-checked here) or from the sequencer (sequenced
tuples and frontier markers, as :mod:`slidewise.spark.follow` drives it).

Each bucket (a key of the stateful operator) keeps, as one value in Spark's
state store (arrays, never a list of rows per key; encoded and authenticated
by :func:`~slidewise.spark.state_codec.pack_state`):

* the hosted operator's running state
  (:meth:`~slidewise.operators.joins.base.JoinOperator.snapshot`: for the
  default ``columnar`` join, each window as arrays sorted by key and position);
* a buffer of admitted tuples not yet released, per stream (arrays);
* each stream's frontier (largest timestamp seen, from the markers), whether
  input has ended, the next position and the last released ``(ts, stream, seq)``.

Release rule — the local engine's (:mod:`slidewise.runtime.reorder`): with
``W = min over streams (frontier_i - lateness_i)`` (nothing while a stream has
sent nothing; everything after end of input; a stream idle longer than its idle
timeout left out, :mod:`slidewise.spark.idle`), buffered tuples with ``ts < W``
are final: every tuple still to come has ``ts >= W``. They are released in
``(ts, stream index, seq)`` order — the global order of docs/semantics.md restricted
to the bucket — numbered with consecutive positions and fed to the operator in
chunks. Equal keys (or a band cell's neighbours) meet in one bucket and
results depend only on them, so each result is produced exactly once, by its
bucket, and equals the oracle's. At end of input the buffer is flushed and
``finish()`` emits lazy evaluations still pending; lazy operators are told the
watermark (``advance(W)``) so evaluations fire even in a bucket without new
tuples. A tuple older than what was already released (possible only after an
end-of-input flush) is rejected as late.

The operator, its options and the join order come from the physical plan of
:func:`~slidewise.optimizer.planner.choose`, as in the local engine; for a
W-join (``wjoin``) the bucket hosts the W-join operator ``algorithm`` names
(:data:`~slidewise.operators.wjoin.WJOINS`, the W-join planner's choice), its
snapshot kept the same way.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from slidewise.model.batch import ResultBatch, StreamBatch
from slidewise.operators.project import output_columns
from slidewise.operators.wjoin import WJOINS
from slidewise.optimizer.planner import choose
from slidewise.options import DEFAULT_CHUNK_ROWS
from slidewise.plan.query import JoinQuery
from slidewise.plan.wjoin import WJoinQuery
from slidewise.runtime.rejects import reason_kind
from slidewise.spark.idle import release_bound, seen_now
from slidewise.spark.layout import ADMITTED, EOF, KIND_NUMPY, MARKER, REJECT, RESULT, ROUTED, SEGMENT, STATS, TUPLE, Layout, concat, take, unpack
from slidewise.spark.state_codec import pack_state, state_key, unpack_state

NEG = np.iinfo(np.int64).min // 2
POS = np.iinfo(np.int64).max
STATE_DDL = "blob binary"


@dataclass
class BucketState:
    """Everything a bucket keeps between micro-batches."""

    operator: bytes | None = None
    buffer: list[dict[str, np.ndarray]] = field(default_factory=list)
    frontier: np.ndarray | None = None
    ended: bool = False
    flushed: bool = False
    next_pos: int = 0
    last: tuple[int, int, int] | None = None
    seq: list[int] = field(default_factory=list)
    seen: np.ndarray | None = None  # processing time each stream last reached the bucket (idle timeouts)
    released: int = NEG  # the release bound reached: tuples below it are late (after an idle stream was left out)


class BucketJoin:
    """The stage-2 computation for one bucket, without Spark (state bytes in, state bytes out).

    ``key``: the state key (default :func:`~slidewise.spark.state_codec.state_key`, read when built).
    """

    def __init__(
        self,
        query: JoinQuery,
        layout: Layout,
        *,
        algorithm: str | None = None,
        order=None,
        options: dict | None = None,
        chunk_rows: int = DEFAULT_CHUNK_ROWS,
        key: bytes | None = None,
        wjoin: WJoinQuery | None = None,
    ):
        self.query = query
        self.key = key if key is not None else state_key()
        self.layout = layout
        self.wjoin, self.algorithm = wjoin, algorithm
        self.plan = choose(query, algorithm, order, **(options or {})) if wjoin is None else None
        self.chunk_rows = int(chunk_rows)
        self.lateness = np.array([s.lateness for s in layout.streams], np.int64)
        idle = [s.idle for s in layout.streams]
        self.idle = idle if any(t is not None for t in idle) else None
        self.clock = time.time  # processing time for idle timeouts

    def process(self, bucket: int, blob: bytes | None, frame: pd.DataFrame) -> tuple[bytes, list[pd.DataFrame]]:
        """New state bytes and the output frames (join output layout) of one call."""
        n = self.query.n
        st = self.load(blob)
        op = self.plan.build() if self.plan is not None else WJOINS[str(self.algorithm)](self.wjoin)
        if st.operator is not None:
            op.load_snapshot(st.operator)
        comparisons = op.comparisons
        out: list[pd.DataFrame] = []
        kind = frame["k"].to_numpy()
        streams = frame["s"].to_numpy().astype(np.int64)
        for payload, s in zip(frame["p"][kind == REJECT], streams[kind == REJECT]):
            out.append(self._rejects(int(s), unpack(payload)))
        marks = kind == MARKER
        if marks.any():
            np.maximum.at(st.frontier, streams[marks], frame["t"].to_numpy(np.int64)[marks])
            counted = marks & (frame["q"].to_numpy() > 0)
            if counted.any():
                out.append(
                    self._frame(int(counted.sum()), k=ADMITTED, rs=[self.layout.streams[i].alias for i in streams[counted]], n0=frame["q"].to_numpy(np.int64)[counted])
                )
        if (kind == EOF).any():
            st.ended = True
        now = self.clock()
        if self.idle is not None:
            st.seen = seen_now(st.seen, n, streams[marks | np.isin(kind, (TUPLE, SEGMENT))], now)
        for i in np.unique(streams[kind == SEGMENT]):
            out += self._routed(
                st, int(i), [unpack(p) for p in frame["p"][(kind == SEGMENT) & (streams == i)]], [unpack(p) for p in frame["p"][(kind == ROUTED) & (streams == i)]]
            )
        for i in np.unique(streams[kind == TUPLE]):
            chunks = [unpack(p) for p in frame["p"][(kind == TUPLE) & (streams == i)]]
            late = self._buffer(st, int(i), concat(chunks))
            if late is not None:
                out.append(late)
        w = POS if st.ended else release_bound(st.frontier, self.lateness, self.idle, st.seen, now)
        results = [self._release(st, op, w)]
        if w < POS:
            st.released = max(st.released, w)
        if st.ended and not st.flushed:
            results.append(op.finish())
            st.flushed = True
        elif NEG < w < POS and hasattr(op, "advance"):
            results.append(op.advance(w))
        res = ResultBatch.concat(results, n)
        retractions = int((res.sign < 0).sum()) if len(res) else 0
        if len(res):
            out.append(self._results(res))
        st.operator = op.snapshot()
        blob = self.dump(st)
        buffered = sum(len(b["t"]) for b in st.buffer)
        out.append(self._frame(1, k=STATS, rl=bucket, n0=op.state_tuples() + buffered, n1=len(blob), n2=op.comparisons - comparisons, n3=retractions, n4=len(res)))
        return blob, merged(out)

    def dump(self, st: BucketState) -> bytes:
        """The state as bytes: counters as JSON, buffers as Arrow, the operator snapshot; sealed."""
        meta = {
            "frontier": st.frontier.tolist(),
            "ended": st.ended,
            "flushed": st.flushed,
            "next_pos": st.next_pos,
            "last": None if st.last is None else list(st.last),
            "seq": list(st.seq),
            **({"seen": st.seen.tolist(), "released": st.released} if st.seen is not None else {}),
        }
        return pack_state(self.key, meta, st.buffer, st.operator or b"")

    def load(self, blob: bytes | None) -> BucketState:
        """The state :meth:`dump` wrote (verified first), or a new one for ``None``."""
        n = self.query.n
        if not blob:
            return BucketState(frontier=np.full(n, NEG, np.int64), buffer=[self._empty(i) for i in range(n)], seq=[0] * n)
        meta, tables, operator = unpack_state(self.key, blob)
        buffer = [{k: tables[i][k].astype(v.dtype, copy=False) for k, v in self._empty(i).items()} for i in range(n)]
        return BucketState(
            operator or None,
            buffer,
            np.asarray(meta["frontier"], np.int64),
            meta["ended"],
            meta["flushed"],
            int(meta["next_pos"]),
            None if meta["last"] is None else tuple(int(x) for x in meta["last"]),
            [int(x) for x in meta.get("seq", [0] * n)],
            np.asarray(meta["seen"], np.float64) if "seen" in meta else None,
            int(meta.get("released", NEG)),
        )

    # ------------------------------------------------------------------ buffer and release

    def _empty(self, stream: int) -> dict[str, np.ndarray]:
        out = {"t": np.empty(0, np.int64), "q": np.empty(0, np.int64)}
        for attr, kind in self.layout.streams[stream].kinds.items():
            out[attr] = np.empty(0, dtype=KIND_NUMPY[kind])
        return out

    def _buffer(self, st: BucketState, i: int, chunk: dict) -> pd.DataFrame | None:
        """Append stream ``i``'s admitted tuples to the buffer; those behind the released ones are rejects."""
        t, q = chunk["t"], chunk["q"]
        rejected = None
        if st.last is not None or st.released > NEG:
            lt, ls, lq = st.last if st.last is not None else (NEG, 0, 0)
            late = (t < lt) | ((t == lt) & ((i < ls) | ((i == ls) & (q <= lq)))) | (t < st.released)
            if late.any():
                rejected = self._late(i, take(chunk, late), max(lt, st.released))
                chunk = take(chunk, ~late)
        st.buffer[i] = {k: np.concatenate([st.buffer[i][k], np.asarray(chunk[k]).astype(st.buffer[i][k].dtype, copy=False)]) for k in st.buffer[i]}
        return rejected

    def _routed(self, st: BucketState, i: int, segments: list[dict], chunks: list[dict]) -> list[pd.DataFrame]:
        """Stream ``i``'s segments and routed tuples of one batch (:func:`~slidewise.spark.route.sequence`):
        frontier and sequence numbers advanced, tuples buffered; late rejects and the admitted count."""
        from slidewise.spark.route import sequence

        info = self.layout.streams[i]
        mx, st.seq[i], chunk, rejected, admitted = sequence(info, int(st.frontier[i]), st.seq[i], segments, chunks)
        st.frontier[i] = max(int(st.frontier[i]), mx)
        out = []
        if rejected is not None:
            out.append(self._rejects(i, rejected))
        if chunk is not None:
            late = self._buffer(st, i, chunk)
            if late is not None:
                out.append(late)
        if admitted:
            out.append(self._frame(1, k=ADMITTED, rs=info.alias, n0=admitted))
        return out

    def _release(self, st: BucketState, op, w: int) -> ResultBatch:
        """Feed the buffered tuples with ``ts < w`` to ``op`` in global order; its results."""
        n = self.query.n
        taken = []
        for i in range(n):
            b = st.buffer[i]
            cut = b["t"] < w if w < POS else np.ones(len(b["t"]), bool)
            taken.append({k: v[cut] for k, v in b.items()})
            if cut.any():
                st.buffer[i] = {k: v[~cut] for k, v in b.items()}
        sizes = [len(x["t"]) for x in taken]
        total = sum(sizes)
        if total == 0:
            return ResultBatch.empty(n)
        all_t = np.concatenate([x["t"] for x in taken])
        all_s = np.repeat(np.arange(n), sizes)
        all_q = np.concatenate([x["q"] for x in taken])
        order = np.lexsort((all_q, all_s, all_t))
        pos = np.empty(total, np.int64)
        pos[order] = st.next_pos + np.arange(total, dtype=np.int64)
        last = order[-1]
        st.last = (int(all_t[last]), int(all_s[last]), int(all_q[last]))
        start = st.next_pos
        st.next_pos += total
        streams = []
        offset = 0
        for i, x in enumerate(taken):
            p = pos[offset : offset + sizes[i]]
            offset += sizes[i]
            o = np.argsort(p, kind="stable")
            streams.append((p[o], {k: v[o] for k, v in x.items()}))
        parts = []
        for lo in range(start, st.next_pos, self.chunk_rows):
            hi = lo + self.chunk_rows
            chunk = []
            for i, (p, x) in enumerate(streams):
                a, b = np.searchsorted(p, [lo, hi])
                chunk.append(StreamBatch(i, p[a:b], x["t"][a:b], {k: v[a:b] for k, v in x.items() if k not in ("t", "q")}))
            parts.append(op.process(chunk))
        return ResultBatch.concat(parts, n)

    # ------------------------------------------------------------------ output frames

    def _results(self, res: ResultBatch) -> pd.DataFrame:
        cols = output_columns(self.query, res)
        given = {f"r{j}": cols[name] for j, name in enumerate(self.layout.out_names)}
        return self._frame(len(res), k=RESULT, **given)

    def _rejects(self, stream: int, chunk: dict) -> pd.DataFrame:
        reasons = list(chunk["reason"])
        return self._frame(
            len(reasons),
            k=REJECT,
            rs=self.layout.streams[stream].source,
            rf=list(chunk["file"]),
            rl=np.asarray(chunk["line"], np.int64),
            rr=reasons,
            rw=list(chunk["raw"]),
            rk=[reject_kind(r) for r in reasons],
        )

    def _late(self, stream: int, chunk: dict, last_ts: int) -> pd.DataFrame:
        """Rejects for tuples behind what this bucket already released (after an end of input)."""
        from slidewise.runtime.rejects import rows_as_text

        info = self.layout.streams[stream]
        unit = f" {info.label}" if info.label else ""
        t = chunk["t"]
        reasons = [f"late by {last_ts - x}{unit} (lateness {info.lateness})" for x in t.tolist()]
        raw = rows_as_text({"ts": t, **{a: chunk[a] for a in info.kinds}})
        return self._frame(len(t), k=REJECT, rs=info.source, rf="", rl=0, rr=reasons, rw=raw.to_pylist(), rk="late")

    def _frame(self, n: int, **given) -> pd.DataFrame:
        data = {}
        for name, ddl in self.layout.out_fields():
            v = given.get(name)
            if v is None:
                data[name] = np.full(n, None, dtype=object)
            elif np.isscalar(v) or isinstance(v, str):
                data[name] = np.full(n, v, dtype=object if ddl == "string" else _DDL_NUMPY[ddl])
            else:
                data[name] = v
        return pd.DataFrame(data)


def merged(frames: list[pd.DataFrame]) -> list[pd.DataFrame]:
    """The result frames as they are, the small ones (rejects, stats, admitted counts) as one: PySpark
    converts each frame a processor yields to Arrow column by column, a fixed cost per frame."""
    results = [f for f in frames if len(f) and f["k"].iat[0] == RESULT]
    small = [f for f in frames if len(f) and f["k"].iat[0] != RESULT]
    return results + ([pd.concat(small, ignore_index=True)] if len(small) > 1 else small)


def reject_kind(reason: str) -> str:
    """The counting key of a reject reason, as the local engine counts them."""
    for fixed in ("late", "malformed row", "malformed JSON line"):
        if reason.startswith(fixed):
            return fixed
    return reason_kind(reason)


_DDL_NUMPY = {"tinyint": np.int8, "int": np.int32, "bigint": np.int64, "double": np.float64, "boolean": np.bool_}
