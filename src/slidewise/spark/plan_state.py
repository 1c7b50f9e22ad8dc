"""General plans on Spark, the pure-Python part: partitioning attribute and the per-bucket executor.

Golab's thesis ch. 3 plans (DISTINCT, GROUP BY, NOT EXISTS, UNION, joins, output
operators) run on Spark as the join engine runs joins: the
sequencer stage (:class:`~slidewise.spark.sequencer.SequencerLogic`) puts each
stream in input order, rejects late tuples and assigns key buckets; then one
stateful stage keyed by bucket hosts, per bucket, the SAME operator network
the local executor builds (:class:`slidewise.runtime.plan_engine.PlanNetwork`, driven
by its ``PlanRunner``) — "aggregation and distinct keyed by group; negation
keyed by the negation attribute".

Partitioning (:func:`partition_attribute`): a plan is hash-partitioned on a
source attribute ``a`` present in every stream when every join connects its
inputs through ``a``, every negation correlates on ``a``, every GROUP BY
keeps ``a``, and ``a`` reaches the output rows. Then each operator's state
and each output row depend on the tuples of one value of ``a`` only, so a
bucket's answer is the global answer restricted to its values and the
output netting per instant (Golab's thesis §3.3.4) per bucket equals the global
one. Otherwise (count windows, joins on other attributes, aggregates
without a common key) everything runs in one bucket, with a warning —
correct, not parallel.

Relations are broadcast: every bucket holds all of their update rows (read
on the driver, :mod:`slidewise.spark.plan_runner`) and adds them to its executor
below the same release bound as its stream tuples, so a subtree over
relations only (:data:`BROADCAST`) is computed whole, identically, in every
bucket; it joins any stream side and may be a negation's right side without
a link through ``a``. Where relation rows could reach the output without a
stream tuple (a UNION with a relation, a relation minus a stream, the
output itself) the rows would repeat per bucket: one bucket.

State per bucket: the whole ``PlanRunner`` (operators and their stores), the
buffer of admitted tuples not yet released, each stream's frontier, pickled
with cloudpickle (operators hold closures) and sealed with the state key
(:func:`~slidewise.spark.state_codec.seal`: verified before it is unpickled)
into one binary ``ValueState``. Simple and correct; the cost is one full
(de)serialisation of the bucket's state per micro-batch.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from slidewise.plan.logical import Aggregate, Distinct, Join, Negation, Node, Output, Plan, Project, Scan, Select, Subquery, Union
from slidewise.runtime.plan_driver import end_instant
from slidewise.spark.idle import release_bound, seen_now
from slidewise.spark.layout import EOF, MARKER, REJECT, TUPLE, concat, pack, unpack
from slidewise.spark.state_codec import seal, state_key, unseal

NEG = np.iinfo(np.int64).min // 2
POS = np.iinfo(np.int64).max
RESULT, REJECTS, STATS, ADMITTED, PART = 0, 1, 2, 3, 4
#: output rows of the bucket stage: results and rejects travel packed in ``p``; a PART row's ``p`` names a
#: result file the bucket wrote itself (:func:`slidewise.spark.sinks.stage_part`)
OUT_DDL = "k tinyint, s int, q bigint, p binary, n0 bigint, n1 bigint, n2 bigint, n3 bigint"
STATE_DDL = "blob binary"


# ---------------------------------------------------------------- partitioning


def partition_attribute(plan: Plan) -> tuple[str | None, str | None]:
    """``(attribute, None)`` if the bound plan can be hash-partitioned on it, else ``(None, why)``.

    Relations are broadcast (every bucket holds all of their rows), so the
    attribute is one common to the stream scans; a plan whose output rows can
    come from relations alone (a UNION with a relation, a relation minus a
    stream, a query over relations only) is not partitionable.
    """
    scans = [s for s in plan.scans() if not s.is_relation]
    if not scans:
        return None, "the query reads relations only"
    candidates = [c for c in (scans[0].columns or ()) if all(c in (s.columns or ()) for s in scans)]
    if not candidates:
        return None, "the streams share no attribute"
    broadcast = False
    for attr in candidates:
        keys = _keyed(plan.root, attr)
        if keys is BROADCAST:
            broadcast = True
        elif keys:
            return attr, None
    if broadcast:
        return None, "output rows can come from relations alone"
    return None, (f"no attribute ({', '.join(candidates)}) is common to every join, negation, GROUP BY and the output, or a count window needs the global order")


class _Broadcast:
    """:func:`_keyed` of a subtree over relations only: the same rows in every bucket."""

    def __repr__(self) -> str:
        return "BROADCAST"


BROADCAST = _Broadcast()


def _keyed(node: Node, attr: str):
    """Positions of ``node.schema`` that hold the partitioning value of every row, :data:`BROADCAST`
    (the subtree reads relations only: every bucket computes all of it), or None."""
    if isinstance(node, Scan):
        if node.is_relation:
            return BROADCAST
        w = node.window
        if (w.kind == "rows" and w.partition_by != attr) or attr not in node.columns:
            return None
        return frozenset({node.schema.index(f"{node.alias}.{attr}")})
    if isinstance(node, (Select, Distinct)):
        return _keyed(node.child, attr)
    if isinstance(node, Subquery):
        inner = _keyed(node.child, attr)
        if inner is BROADCAST:
            return inner
        if node.window is not None and node.window.kind == "rows" and node.window.partition_by is None:
            return None
        return inner
    if isinstance(node, Output):
        inner = _keyed(node.child, attr)
        if inner is BROADCAST:
            return inner
        if node.window is not None and node.window.kind == "rows":
            return None
        return inner or None
    if isinstance(node, Project):
        return _project(node, attr)
    if isinstance(node, Aggregate):
        inner = _names(node.child, attr)
        if inner is None or inner is BROADCAST:
            return inner
        out = frozenset(j for j, k in enumerate(node.keys) if str(k.expr) in inner)
        return out or None
    if isinstance(node, Union):
        sets = [_keyed(c, attr) for c in node.inputs]
        if all(s is BROADCAST for s in sets):
            return BROADCAST
        if any(s is None or s is BROADCAST for s in sets):  # relation rows would repeat in every bucket
            return None
        return frozenset.intersection(*sets) or None
    if isinstance(node, Join):
        return _join(node, attr)
    if isinstance(node, Negation):
        left, right = _names(node.left, attr), _names(node.right, attr)
        if left is None or right is None:
            return None
        if left is BROADCAST:  # relation rows out, decided by stream rows: not per bucket
            return BROADCAST if right is BROADCAST else None
        if right is BROADCAST:  # every bucket holds the whole right side
            return _keyed(node.left, attr)
        if node.mode == "except":
            both = _keyed(node.left, attr) & _keyed(node.right, attr)
            return both or None
        if any((str(a) in left and str(b) in right) or (str(b) in left and str(a) in right) for a, b in node.on):
            return _keyed(node.left, attr)
        return None
    return None


def _names(node: Node, attr: str):
    keys = _keyed(node, attr)
    return keys if keys is None or keys is BROADCAST else {node.schema[i] for i in keys}


def _project(node: Project, attr: str):
    inner = _names(node.child, attr)
    if inner is None or inner is BROADCAST:
        return inner
    out, pos = set(), 0
    for item in node.items:
        e = item.expr
        if getattr(e, "attr", None) == "*":
            for c in node.child.schema:
                if c.startswith(f"{e.name}."):
                    if c in inner:
                        out.add(pos)
                    pos += 1
        else:
            if str(e) in inner:
                out.add(pos)
            pos += 1
    return frozenset(out) or None


def _join(node: Join, attr: str):
    """Stream inputs must be connected through ``attr``; relation-only inputs are broadcast."""
    names = [_names(c, attr) for c in node.inputs]
    if any(n is None for n in names):
        return None
    keyed = [j for j, n in enumerate(names) if n is not BROADCAST]
    if not keyed:
        return BROADCAST
    parent = {j: j for j in keyed}

    def find(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    def side(col) -> int | None:
        return next((j for j in keyed if str(col) in names[j]), None)

    for a, b in node.equalities:
        i, j = side(a), side(b)
        if i is not None and j is not None:
            parent[find(i)] = find(j)
    if len({find(i) for i in keyed}) != 1:
        return None
    out, offset = set(), 0
    for j, c in enumerate(node.inputs):
        if j in parent:
            out |= {offset + i for i in _keyed(c, attr)}
        offset += len(c.schema)
    return frozenset(out)


# ---------------------------------------------------------------- one bucket


class _Collect:
    """The runner's sink inside a bucket: keeps the column dicts written since the last take."""

    def __init__(self):
        self.parts: list[dict] = []

    def write(self, cols: dict) -> None:
        self.parts.append(cols)


class _Batch:
    """What ``PlanRunner.add`` reads: ``ts`` and ``cols`` of one source, in order."""

    def __init__(self, ts: np.ndarray, cols: dict[str, np.ndarray]):
        self.ts, self.cols = ts, cols


@dataclass
class PlanBucketState:
    """Everything a bucket keeps between micro-batches."""

    runner: object
    buffer: list[list[dict]] = field(default_factory=list)
    frontier: np.ndarray | None = None
    done: int | None = None  # instants up to here are final (after an end of input)
    table_pos: list[int] = field(default_factory=list)  # rows of each relation added to the runner
    seen: np.ndarray | None = None  # processing time each stream last reached the bucket (idle timeouts)
    released: int = NEG  # tuples below this were released (behind it: late)


class PlanBucket:
    """Stage 2 for general plans: one bucket hosting the local executor's operator network.

    Releases buffered tuples below ``min over streams (frontier - lateness)``
    (streams idle longer than their ``idle`` timeout left out, :mod:`slidewise.spark.idle`;
    everything after end of input), in ``(ts, seq)`` order per source, to the
    executor, which runs every complete instant; at end of input it runs the
    expirations and evaluations up to the *global* last input timestamp
    (:attr:`PlanBucketState.done`). Input may continue after an end of input
    (a rerun on the same checkpoint): the release rule applies again, and a
    tuple at or before ``done`` — an instant already closed — is a ``late``
    reject.

    ``tables``: every relation's admitted update rows, read on the driver
    (name -> ``(ts, cols)``, ``ts`` non-decreasing, file order within a
    timestamp; ``cols`` as the local reader gives them, ``op`` included),
    held by every bucket: each release first adds the relation rows below the
    same bound, so they enter the executor's instants exactly as locally
    (relation children first within an instant). ``key``: the state key (default
    :func:`~slidewise.spark.state_codec.state_key`, read when built).
    """

    def __init__(
        self,
        plan: Plan,
        sources: list[str],
        attrs: list[list[str]],
        lateness: list[int],
        *,
        idle: list[float | None] | None = None,
        strategy: str = "upa",
        partitions: int = 10,
        options: dict | None = None,
        tables: dict[str, tuple[np.ndarray, dict[str, np.ndarray]]] | None = None,
        key: bytes | None = None,
    ):
        self.key = key if key is not None else state_key()
        self.plan, self.sources, self.attrs = plan, list(sources), [list(a) for a in attrs]
        self.lateness = np.asarray(lateness, np.int64)
        self.idle = list(idle) if idle is not None and any(t is not None for t in idle) else None
        self.clock = time.time  # processing time for idle timeouts
        self.strategy, self.partitions, self.options = strategy, int(partitions), dict(options or {})
        self.columns = list(plan.root.schema) + ["ts", "sign"]
        self.tables = {n: (np.asarray(ts, np.int64), dict(cols)) for n, (ts, cols) in (tables or {}).items()}
        self.table_end = max((int(ts[-1]) for ts, _ in self.tables.values() if len(ts)), default=None)

    def new_state(self) -> PlanBucketState:
        from slidewise.runtime.plan_driver import PlanRunner
        from slidewise.runtime.plan_engine import PlanNetwork

        net = PlanNetwork(self.plan, self.strategy, self.partitions, self.options)
        n = len(self.sources)
        return PlanBucketState(PlanRunner(net, _Collect(), False, self.columns), [[] for _ in range(n)], np.full(n, NEG, np.int64), table_pos=[0] * len(self.tables))

    def process(self, bucket: int, blob: bytes | None, frame: pd.DataFrame) -> tuple[bytes, list[pd.DataFrame]]:
        """New state bytes and the output rows (:data:`OUT_DDL`) of one call."""
        from pyspark import cloudpickle

        st = cloudpickle.loads(unseal(self.key, blob)) if blob else self.new_state()
        runner = st.runner
        before = (runner.negatives, runner.instants)
        rows, kind, streams = passed_rejects(frame)
        marks = kind == MARKER
        if marks.any():
            np.maximum.at(st.frontier, streams[marks], frame["t"].to_numpy(np.int64)[marks])
            qs = frame["q"].to_numpy(np.int64)
            rows += [{"k": ADMITTED, "s": int(s), "q": int(q)} for s, q in zip(streams[marks], qs[marks]) if q > 0]
        eof = bool((kind == EOF).any())
        now = self.clock()
        if self.idle is not None:
            st.seen = seen_now(getattr(st, "seen", None), len(self.sources), streams[marks | (kind == TUPLE)], now)
        released = getattr(st, "released", NEG)
        for payload, s in zip(frame["p"][kind == TUPLE], streams[kind == TUPLE]):
            chunk = unpack(payload)
            if st.done is not None:  # behind an earlier end of input: those instants are closed
                late = chunk["t"] <= st.done
                if late.any():
                    rows.append(self._late(int(s), {k: v[late] for k, v in chunk.items()}, st.done))
                    chunk = {k: v[~late] for k, v in chunk.items()}
            late = chunk["t"] < released  # only after an idle stream was left out of the bound
            if late.any():
                why = f"late: below ts {released}, released while stream {self.sources[int(s)]} was idle"
                rows.append(self._late(int(s), {k: v[late] for k, v in chunk.items()}, released, why))
                chunk = {k: v[~late] for k, v in chunk.items()}
            st.buffer[int(s)].append(chunk)
        w = POS if eof else release_bound(st.frontier, self.lateness, self.idle, getattr(st, "seen", None), now)
        self._release(st, w)
        if w != POS:
            st.released = max(released, w)
        runner.flush_output(final=True)
        if eof:
            # the end of this run's input: every instant up to the global last input timestamp (the
            # next slide multiple for periodic plans) runs now; a continued run starts after it
            last = int(st.frontier.max()) if (st.frontier > NEG).any() else None
            if self.table_end is not None:
                last = self.table_end if last is None else max(last, self.table_end)
            if last is not None:
                if runner.last_input is not None:
                    runner.last_input = last
                    runner.finish(self.plan.root.slide)
                end = end_instant(last, self.plan.root.slide)
                st.done = end if st.done is None else max(st.done, end)
        parts, runner.sink.parts = runner.sink.parts, []
        if parts:
            cols = {c: np.concatenate([p[c] for p in parts]) for c in self.columns}
            rows.append({"k": RESULT, "q": len(cols["ts"]), "p": pack(cols), "n0": int((cols["sign"] < 0).sum())})
        blob = seal(self.key, cloudpickle.dumps(st))
        state = sum(op.state_size() for op in runner.ops) + sum(len(c["t"]) for b in st.buffer for c in b)
        rows.append({"k": STATS, "s": bucket, "n0": state, "n1": len(blob), "n2": runner.negatives - before[0], "n3": runner.instants - before[1]})
        return blob, [out_frame(rows)]

    def _late(self, stream: int, chunk: dict, done: int, reason: str | None = None) -> dict:
        return late_rejects(stream, self.attrs[stream], chunk, done, reason)

    def _release(self, st: PlanBucketState, w: int) -> None:
        """Feed every relation row and buffered tuple with ``ts < w`` to the executor, per source in
        ``(ts, seq)`` order."""
        if w == NEG:
            return
        for j, (name, (ts, cols)) in enumerate(self.tables.items()):
            lo = st.table_pos[j]
            hi = len(ts) if w == POS else int(np.searchsorted(ts, w, side="left"))
            if hi > lo:
                st.table_pos[j] = hi
                st.runner.add(name, _Batch(ts[lo:hi], {c: v[lo:hi] for c, v in cols.items()}), is_table=True)
        for i, chunks in enumerate(st.buffer):
            if not chunks:
                continue
            chunk = concat(chunks)
            t = chunk["t"]
            cut = np.ones(len(t), bool) if w == POS else t < w
            keep = ~cut
            st.buffer[i] = [{k: v[keep] for k, v in chunk.items()}] if keep.any() else []
            if not cut.any():
                continue
            order = np.lexsort((chunk["q"][cut], t[cut]))
            cols = {a: chunk[a][cut][order] for a in self.attrs[i]}
            st.runner.add(self.sources[i], _Batch(t[cut][order], cols), is_table=False)


def passed_rejects(frame: pd.DataFrame) -> tuple[list[dict], np.ndarray, np.ndarray]:
    """The call's rejects passed on as :data:`REJECTS` output rows, and the frame's kinds and streams."""
    kind = frame["k"].to_numpy()
    streams = frame["s"].to_numpy().astype(np.int64)
    rows = [
        {"k": REJECTS, "s": int(s), "q": int(q), "p": bytes(payload)}
        for payload, s, q in zip(frame["p"][kind == REJECT], streams[kind == REJECT], frame["q"][kind == REJECT])
    ]
    return rows, kind, streams


def late_rejects(stream: int, attrs: list[str], chunk: dict, done: int, reason: str | None = None) -> dict:
    """A :data:`REJECTS` row for admitted tuples at or before ``done``, where an earlier end of input
    closed the instants (a continued run), or with another ``reason`` (released while their stream was
    idle); never silently dropped."""
    from slidewise.runtime.rejects import rows_as_text

    t = chunk["t"]
    n = len(t)
    reason = reason or f"late: at or before ts {done}, where an earlier run's input ended"
    raw = rows_as_text({"ts": t, **{a: chunk[a] for a in attrs}}).to_pylist()
    return {
        "k": REJECTS,
        "s": stream,
        "q": n,
        "p": pack(
            {"file": np.full(n, "", dtype=object), "line": np.zeros(n, np.int64), "reason": np.full(n, reason, dtype=object), "raw": np.asarray(raw, dtype=object)}
        ),
    }


def out_frame(rows: list[dict]) -> pd.DataFrame:
    """Rows of :data:`OUT_DDL` (absent numbers 0, absent payload null)."""
    names = [f.split()[0] for f in OUT_DDL.split(", ")]
    data = {n: [r.get(n, None if n == "p" else 0) for r in rows] for n in names}
    frame = pd.DataFrame(data)
    for n, dt in (("k", np.int8), ("s", np.int32), ("q", np.int64), ("n0", np.int64), ("n1", np.int64), ("n2", np.int64), ("n3", np.int64)):
        frame[n] = frame[n].astype(dt)
    return frame
