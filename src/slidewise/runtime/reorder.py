"""Reordering and merging of out-of-order streams into the global order (docs/semantics.md).

Global processing order is ``(ts, stream index, input order)``; admitted tuples
get positions 0, 1, 2, ... in that order across all streams.

Watermark. Stream ``i``'s frontier is ``max ts seen on i - lateness_i``. The
release bound is ``W = min`` of the frontiers of the unfinished streams (a
stream that has sent nothing yet holds everything back); tuples with
``ts < W`` are final and can be released (strictly less: a tuple with
``ts = W`` may still be followed by a tie). ``mark_finished`` removes a stream
from the minimum.

Lateness. A tuple is *late* when its ``ts`` is below its own stream's frontier
at arrival (``ts < max ts seen before it - lateness``). Since the release bound
never exceeds any frontier, every admitted tuple is at or above everything
already released, so releasing never has to be undone. Late tuples go to
:class:`~slidewise.runtime.rejects.Rejects` with a reason such as
``late by 670500 ms (lateness 0)`` — never silently dropped. The rule depends
only on each stream's own input order, not on how reads of different streams
interleave or how input is chunked.

Everything is columnar: buffers are arrays, release is a mask and one
``lexsort`` per pop.

>>> m = Merger(["A", "B"], lateness=0)
>>> m.push(0, np.array([1, 3]), {"k": np.array([7, 8])})
>>> m.push(1, np.array([2]), {"k": np.array([7])})
>>> m.finish()
>>> [(b.stream, b.pos.tolist(), b.ts.tolist()) for b in m.pop()]
[(0, [0, 2], [1, 3]), (1, [1], [2])]
>>> m.pop() is None
True
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from slidewise.errors import ExecutionError, OptionError
from slidewise.model.batch import StreamBatch
from slidewise.model.time import MAX_DURATION
from slidewise.options import DEFAULT_CHUNK_ROWS
from slidewise.runtime.rejects import Rejects, rows_as_text

_NEG = np.iinfo(np.int64).min // 2  # "no tuple yet": below every real frontier
_POS = np.iinfo(np.int64).max  # "all finished": release everything


class Merger:
    """Buffers per-stream arrivals and releases them in global order, chunk by chunk.

    ``lateness``: one value for all streams or one per stream (timestamp units).
    ``schemas``: column -> dtype per stream, for the empty batches of streams
    that have no tuples in a chunk (learned from the first push otherwise).
    ``units``: label of the timestamp unit per stream for reject reasons
    (default ``"ms"``; ``""`` for raw numbers).
    """

    def __init__(
        self,
        stream_names: Sequence[str],
        lateness: int | Sequence[int] = 0,
        rejects: Rejects | None = None,
        *,
        schemas: Sequence[dict] | None = None,
        chunk_rows: int = DEFAULT_CHUNK_ROWS,
        units: str | Sequence[str] = "ms",
    ):
        self.names = [str(s) for s in stream_names]
        n = len(self.names)
        if n == 0:
            raise OptionError("no streams to merge")
        lat = [lateness] * n if np.isscalar(lateness) else list(lateness)
        if len(lat) != n:
            raise OptionError(f"{len(lat)} lateness values for {n} streams", hint="give one lateness for all streams or one per stream")
        if any(int(x) != x or not 0 <= x <= MAX_DURATION for x in lat):
            raise OptionError(
                f"lateness must be an integer from 0 to {MAX_DURATION}, got {lat}", hint="lateness is in timestamp units, e.g. 5000 for 5 s of epoch-ms timestamps"
            )
        if not isinstance(chunk_rows, (int, np.integer)) or chunk_rows < 1:
            raise OptionError(f"chunk_rows must be a positive integer, got {chunk_rows!r}")
        self.lateness = np.array(lat, dtype=np.int64)
        self.units = [units] * n if isinstance(units, str) else list(units)
        self.rejects = rejects if rejects is not None else Rejects()
        self.chunk_rows = int(chunk_rows)
        self._max = np.full(n, _NEG, dtype=np.int64)  # max ts seen per stream
        self._finished = np.zeros(n, dtype=bool)
        self._seq = np.zeros(n, dtype=np.int64)  # input order counter per stream
        self._schemas: list[dict | None] = [dict(s) for s in schemas] if schemas is not None else [None] * n
        self._buf: list[list[tuple]] = [[] for _ in range(n)]  # (ts, seq, cols) segments
        self._buf_min = np.full(n, _POS, dtype=np.int64)
        self._ready: deque = deque()  # released blocks in position order
        self.released_bound = _NEG  # everything with ts < this is released
        self.next_pos = 0
        self.admitted = np.zeros(n, dtype=np.int64)
        self.late = np.zeros(n, dtype=np.int64)

    # ------------------------------------------------------------------ input

    def push(self, stream_index: int, ts, cols: dict[str, np.ndarray], lines=None, file: str = "") -> None:
        """Buffer arrivals of one stream in input order; late ones are rejected at once."""
        i = int(stream_index)
        if not 0 <= i < len(self.names):
            raise ExecutionError(f"no stream with index {i}", hint=f"streams are {self.names}")
        if self._finished[i]:
            raise ExecutionError(f"stream {self.names[i]} was marked finished and cannot take more rows")
        ts = np.asarray(ts, dtype=np.int64)
        n = len(ts)
        cols = {k: np.asarray(v) for k, v in cols.items()}
        if any(len(v) != n for v in cols.values()):
            raise ExecutionError(f"stream {self.names[i]}: columns and timestamps differ in length")
        schema = self._schemas[i]
        if schema is None:
            self._schemas[i] = {k: v.dtype for k, v in cols.items()}
        elif list(cols) != list(schema):
            raise ExecutionError(f"stream {self.names[i]}: columns {list(cols)} differ from {list(schema)}")
        if n == 0:
            return
        lines = np.zeros(n, np.int64) if lines is None else np.asarray(lines, dtype=np.int64)
        # frontier seen by each row: max ts before it (own stream) - lateness
        prev = np.maximum.accumulate(np.concatenate(([self._max[i]], ts)))[:-1]
        frontier = np.maximum(prev - self.lateness[i], self.released_bound)
        late = ts < frontier
        self._max[i] = max(int(self._max[i]), int(ts.max()))
        if late.any():
            self._reject_late(i, ts, cols, lines, file, late, prev)
            keep = ~late
            ts, lines = ts[keep], lines[keep]
            cols = {k: v[keep] for k, v in cols.items()}
            n = len(ts)
            if n == 0:
                return
        seq = np.arange(self._seq[i], self._seq[i] + n, dtype=np.int64)
        self._seq[i] += n
        self._buf[i].append((ts, seq, cols))
        self._buf_min[i] = min(int(self._buf_min[i]), int(ts.min()))
        self.admitted[i] += n

    def _reject_late(self, i, ts, cols, lines, file, late, prev) -> None:
        idx = np.flatnonzero(late)
        by = pa.array(prev[idx] - ts[idx], pa.int64()).cast(pa.string())
        unit = f" {self.units[i]}" if self.units[i] else ""
        reasons = pc.binary_join_element_wise("late by ", by, f"{unit} (lateness {int(self.lateness[i])})", "")
        raw = rows_as_text({"ts": ts[idx], **{k: v[idx] for k, v in cols.items()}})
        self.rejects.add_many(self.names[i], file, lines[idx], reasons, raw, kind="late")
        self.late[i] += len(idx)

    def mark_finished(self, stream_index: int) -> None:
        """No more input on this stream: it stops holding the others back."""
        self._finished[int(stream_index)] = True

    def finish(self) -> None:
        """End of all input: everything buffered becomes releasable (call ``pop`` until None)."""
        self._finished[:] = True

    # ------------------------------------------------------------------ output

    def watermark(self) -> int:
        """Current release bound W: tuples with ``ts < W`` are final."""
        open_ = ~self._finished
        if not open_.any():
            return int(_POS)
        return int((self._max[open_] - self.lateness[open_]).min()) if (self._max[open_] > _NEG).all() else int(_NEG)

    def holding_back(self) -> int | None:
        """The unfinished stream whose frontier is lowest (read it next), or None if all finished."""
        open_ = np.flatnonzero(~self._finished)
        if not len(open_):
            return None
        front = np.where(self._max[open_] > _NEG, self._max[open_] - self.lateness[open_], _NEG)
        return int(open_[np.argmin(front)])

    @property
    def buffered(self) -> int:
        """Tuples admitted but not yet handed out by ``pop``."""
        waiting = sum(len(seg[0]) for segs in self._buf for seg in segs)
        return waiting + sum(int(b[1] - b[0]) for b in self._ready)

    def pop(self) -> list[StreamBatch] | None:
        """Next released chunk: one StreamBatch per stream (maybe empty), covering at most
        ``chunk_rows`` consecutive positions; None when nothing is releasable now."""
        if not self._ready:
            self._release()
            if not self._ready:
                return None
        start, end, parts = self._ready[0]
        stop = min(end, start + self.chunk_rows)
        out = []
        for i, (pos, ts, cols) in enumerate(parts):
            cut = int(np.searchsorted(pos, stop))
            out.append(StreamBatch(i, pos[:cut], ts[:cut], {k: v[:cut] for k, v in cols.items()}))
            parts[i] = (pos[cut:], ts[cut:], {k: v[cut:] for k, v in cols.items()})
        if stop >= end:
            self._ready.popleft()
        else:
            self._ready[0] = (stop, end, parts)
        return out

    def drain(self) -> Iterator[list[StreamBatch]]:
        """``pop`` until nothing is releasable."""
        while (chunk := self.pop()) is not None:
            yield chunk

    def _release(self) -> None:
        w = self.watermark()
        n = len(self.names)
        taken = []
        for i in range(n):
            if not self._buf[i] or self._buf_min[i] >= w:
                taken.append(None)
                continue
            segs = self._buf[i]
            ts = np.concatenate([s[0] for s in segs]) if len(segs) > 1 else segs[0][0]
            seq = np.concatenate([s[1] for s in segs]) if len(segs) > 1 else segs[0][1]
            names = list(segs[0][2])
            cols = {k: np.concatenate([s[2][k] for s in segs]) for k in names} if len(segs) > 1 else segs[0][2]
            out = ts < w if w < _POS else np.ones(len(ts), dtype=bool)
            keep = ~out
            if keep.any():
                self._buf[i] = [(ts[keep], seq[keep], {k: v[keep] for k, v in cols.items()})]
                self._buf_min[i] = int(ts[keep].min())
            else:
                self._buf[i] = []
                self._buf_min[i] = _POS
            taken.append((ts[out], seq[out], {k: v[out] for k, v in cols.items()}))
        self.released_bound = max(self.released_bound, w)
        if all(t is None for t in taken):
            return
        all_ts = np.concatenate([t[0] for t in taken if t is not None])
        all_stream = np.concatenate([np.full(len(t[0]), i, np.int64) for i, t in enumerate(taken) if t is not None])
        all_seq = np.concatenate([t[1] for t in taken if t is not None])
        order = np.lexsort((all_seq, all_stream, all_ts))
        pos_of = np.empty(len(order), dtype=np.int64)
        pos_of[order] = np.arange(self.next_pos, self.next_pos + len(order), dtype=np.int64)
        start = self.next_pos
        self.next_pos += len(order)
        parts = []
        offset = 0
        for i, t in enumerate(taken):
            if t is None:
                parts.append(self._empty(i))
                continue
            ts, seq, cols = t
            pos = pos_of[offset : offset + len(ts)]
            offset += len(ts)
            o = np.argsort(pos, kind="stable")
            parts.append((pos[o], ts[o], {k: v[o] for k, v in cols.items()}))
        self._ready.append((start, self.next_pos, parts))

    def _empty(self, i: int) -> tuple:
        schema = self._schemas[i] or {}
        return (np.empty(0, np.int64), np.empty(0, np.int64), {k: np.empty(0, dt) for k, dt in schema.items()})


def merge_all(
    sources: Sequence, lateness: int | Sequence[int] = 0, rejects: Rejects | None = None, chunk_rows: int = DEFAULT_CHUNK_ROWS, *, merger: Merger | None = None
) -> Iterator[list[StreamBatch]]:
    """Read ``sources`` (:class:`~slidewise.runtime.sources.Source`) through a :class:`Merger`
    and yield released chunks in global order until all input is consumed.

    The stream that holds the watermark back is read next, so with streams
    that interleave in time the buffers stay about one chunk per stream.
    Source rejects (bad rows) and late tuples both go to ``rejects``.
    """
    rejects = rejects if rejects is not None else (merger.rejects if merger is not None else Rejects())
    if merger is None:
        merger = Merger(
            [s.name for s in sources],
            lateness,
            rejects,
            schemas=[s.schema for s in sources],
            chunk_rows=chunk_rows,
            units=[getattr(s, "ts_label", "ms") for s in sources],
        )
    iters = [iter(s.chunks(rejects)) for s in sources]
    while (i := merger.holding_back()) is not None:
        chunk = next(iters[i], None)
        if chunk is None:
            merger.mark_finished(i)
        else:
            merger.push(i, chunk.ts, chunk.cols, chunk.lines, chunk.file)
        yield from merger.drain()
    merger.finish()
    yield from merger.drain()
