"""One stateful stage for the Spark join: a stateless router in place of the sequencer stage.

The sequencer (:mod:`slidewise.spark.sequencer`) needs one keyed stage per
stream only for two numbers per stream: the running maximum timestamp before
each tuple (the late check) and the next sequence number. Both follow from
the input order alone, so the join computes them in its bucket stage:

* :func:`route_batches` (``mapInArrow`` after the sources, no state) cuts each
  tuple chunk into *segments* — runs of one file split in scan order — and
  gives each tuple its segment's first ordinal ``z``, its rank ``r`` in the
  segment and ``pm``, the largest timestamp before it in the segment. The
  tuples go to their key bucket(s) (``pr`` marks a replicated tuple's first
  copy); every bucket gets one SEGMENT row per chunk listing the chunk's
  segments (file, split offset, first ordinal, rows, largest timestamp).
  Conversion rejects go on to one bucket, end-of-input rows to every bucket.
* :func:`sequence` (in the bucket) orders the batch's segments of a stream
  as the sequencer orders tuples — (file, split offset, ordinal) — so every
  bucket computes the same global "largest timestamp before this tuple"
  ``max(state, earlier segments, pm)`` and the same sequence numbers (the
  stream's count so far + the rows of earlier segments + ``r``): the same late
  rejects, reasons and tie order as the sequencer, without its stage.
"""

from __future__ import annotations

import numpy as np

from slidewise.spark.keying import Keying
from slidewise.spark.layout import EOF, REJECT, ROUTED, SEGMENT, TUPLE, Layout, StreamInfo, concat, pack, unpack, wire_batch

NEG = np.iinfo(np.int64).min // 2


def route_batches(batches, *, layout: Layout, keying: Keying):
    """``mapInArrow`` body: wire rows of the sources to wire rows keyed by bucket (``b``)."""
    for b in batches:
        if b.num_rows == 0:
            continue
        kinds = b.column("k").to_numpy(zero_copy_only=False)
        streams = b.column("s").to_numpy(zero_copy_only=False)
        payloads = b.column("p").to_pylist()
        rows: list[dict] = []
        for k, s, p in zip(kinds.tolist(), streams.tolist(), payloads):
            if k == TUPLE:
                rows += route_chunk(s, unpack(p), layout.streams[s], keying)
            elif k == REJECT:
                rej = unpack(p)
                rej["file"] = np.asarray([layout.streams[s].display(f) for f in rej["file"]], dtype=object)
                rows.append({"k": REJECT, "b": s % keying.buckets, "s": s, "q": len(rej["line"]), "p": pack(rej)})
            elif k == EOF:
                rows += [{"k": EOF, "b": bucket, "s": s} for bucket in range(keying.buckets)]
        if rows:
            yield wire_batch(rows)


def route_chunk(stream: int, chunk: dict, info: StreamInfo, keying: Keying) -> list[dict]:
    """One scanned tuple chunk: its tuples per bucket and its segments for every bucket."""
    t, fi, o = chunk["t"], chunk["fi"], chunk["o"]
    n = len(t)
    if n == 0:
        return []
    change = np.ones(n, bool)
    change[1:] = (fi[1:] != fi[:-1]) | (o[1:] != o[:-1])
    starts = np.flatnonzero(change)
    ends = np.append(starts[1:], n)
    pm = np.empty(n, np.int64)
    r = np.empty(n, np.int64)
    for a, e in zip(starts.tolist(), ends.tolist()):
        pm[a] = NEG
        pm[a + 1 : e] = np.maximum.accumulate(t[a : e - 1])
        r[a:e] = np.arange(e - a)
    z = np.repeat(chunk["q"][starts], ends - starts)
    files = chunk["files"]
    segments = pack(
        {
            "f": [files[i] for i in fi[starts].tolist()],
            "o": o[starts],
            "z": chunk["q"][starts],
            "n": (ends - starts).astype(np.int64),
            "m": np.maximum.reduceat(t, starts),
        }
    )
    rows = [{"k": SEGMENT, "b": bucket, "s": stream, "q": len(starts), "p": segments} for bucket in range(keying.buckets)]
    cols = {a: chunk[a] for a in info.kinds}
    idx, buckets = keying.assign(stream, t, cols)
    if len(idx) == n and np.array_equal(idx, np.arange(n)):  # nothing replicated: every copy is the first
        primary = np.ones(n, bool)
    else:
        primary = np.zeros(len(idx), bool)
        primary[np.unique(idx, return_index=True)[1]] = True
    by_bucket = np.argsort(buckets, kind="stable")
    bounds = np.flatnonzero(np.diff(buckets[by_bucket])) + 1
    for part in np.split(by_bucket, bounds):
        if not len(part):
            continue
        sel = idx[part]
        payload = {"t": t[sel], "q": chunk["q"][sel], "o": o[sel], "fi": fi[sel], "files": files, "z": z[sel], "r": r[sel], "pm": pm[sel], "pr": primary[part]}
        rows.append({"k": ROUTED, "b": int(buckets[part[0]]), "s": stream, "q": len(part), "p": pack({**payload, **{a: v[sel] for a, v in cols.items()}})})
    return rows


def sequence(info: StreamInfo, mx: int, nx: int, segments: list[dict], chunks: list[dict]):
    """A stream's routed tuples of one batch in this bucket: ``(max ts, next seq, sequenced chunk
    {t, q, attrs} or None, late rejects or None, admitted first copies)``, as the sequencer's."""
    from slidewise.spark.sequencer import late_rejects

    f = [x for s in segments for x in s["f"]]
    o = np.concatenate([s["o"] for s in segments])
    z = np.concatenate([s["z"] for s in segments])
    counts = np.concatenate([s["n"] for s in segments])
    maxes = np.concatenate([s["m"] for s in segments])
    order = sorted(range(len(f)), key=lambda k: (f[k], int(o[k]), int(z[k])))
    rank = {(f[k], int(o[k]), int(z[k])): j for j, k in enumerate(order)}
    before = np.maximum.accumulate(np.concatenate(([mx], maxes[order])))
    base = nx + np.concatenate(([0], np.cumsum(counts[order])))
    new_mx, new_nx = int(before[-1]), int(base[-1])
    if not chunks:
        return new_mx, new_nx, None, None, 0
    chunk = concat(chunks)
    files = chunk["files"]
    fi, so, z = chunk["fi"], chunk["o"], chunk["z"]
    ts = chunk["t"]
    change = np.ones(len(ts), bool)  # runs of one segment (a segment's tuples come in runs)
    change[1:] = (fi[1:] != fi[:-1]) | (so[1:] != so[:-1]) | (z[1:] != z[:-1])
    heads = np.flatnonzero(change)
    runs = [rank[(files[a], b, c)] for a, b, c in zip(fi[heads].tolist(), so[heads].tolist(), z[heads].tolist())]
    seg = np.repeat(np.asarray(runs, np.int64), np.diff(np.append(heads, len(ts))))
    prev = np.maximum(before[seg], chunk["pm"])
    late = (prev > NEG) & (ts < prev - info.lateness)
    ok = ~late
    rejected = None
    if (late & chunk["pr"]).any():
        rejected = late_rejects(info, chunk, prev, late & chunk["pr"])
        rejected["file"] = np.asarray([info.display(x) for x in rejected["file"]], dtype=object)
    seq = base[seg] + chunk["r"]
    out = {"t": ts[ok], "q": seq[ok], **{a: chunk[a][ok] for a in info.kinds}} if ok.any() else None
    return new_mx, new_nx, out, rejected, int((ok & chunk["pr"]).sum())
