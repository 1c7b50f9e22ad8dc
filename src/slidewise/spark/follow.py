"""The local engine following Kafka topics, restartable: offsets and operator state in slidewise's checkpoint.

::

    slidewise run QUERY --engine local --source a=kafka://HOST:PORT/a --out kafka://HOST:PORT/out --checkpoint DIR

The stages are the Spark pipeline's (:mod:`slidewise.spark.sequencer`, then the join's
:class:`~slidewise.spark.bucket.BucketJoin` or a general plan's bucket logic of
:func:`~slidewise.spark.plan_stream.plan_general`), pure Python, driven here in-process
one micro-batch at a time in one key bucket, without Spark: their state is bytes between
calls, which is what a checkpoint needs. Messages are decoded and converted as on Spark
(:func:`slidewise.kafka.io.decode_text`, :func:`slidewise.spark.kafka_source.kafka_batches`):
same kinds, reasons and input order (partition, offset).

Micro-batch ``n``: (1) its end offsets, the ones recorded for ``n`` in ``DIR/pending.json``
(a replay after a crash), else every partition's end now (at most :data:`MAX_MESSAGES` further),
written first; (2) the messages from the committed offsets to those ends through the stages;
(3) results to the ``kafka://`` out keyed ``n:<content>#<occurrence>`` (keys already in the topic
are skipped), rejects to ``--rejects DIR/batch-n.csv``; (4) the commit: offsets, the stages'
states and ``n + 1`` in ``DIR/follow.json``, written to a new file, fsynced and renamed over
the old one. A crash before (4) replays ``n`` from the same offsets and state: the same
results under the same keys, so the output topic holds each result once.

SIGINT / SIGTERM stop after the micro-batch under way, with its commit (exit 130 / 143).
``--once`` reads up to the end offsets seen at its start, ends the input (every window is
flushed, as a ``--once`` run over files) and stops; a later run on the checkpoint continues,
and a tuple at or before the end of an ended run is a ``late`` reject.
"""

from __future__ import annotations

import base64
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from slidewise.errors import OptionError
from slidewise.kafka.uri import KafkaURI, is_kafka
from slidewise.runtime.rejects import Rejects

#: messages per partition and micro-batch, at most
MAX_MESSAGES = 20_000
#: seconds between polls of topics with nothing new
POLL_SECONDS = 0.5


def follow(query, sources: dict, *, out, checkpoint: str, once: bool = False, tables=None, run_options=None, algorithm=None, order=None, **options):
    """Run ``query`` over ``kafka://`` ``sources`` into the ``kafka://`` ``out`` until stopped (``once``:
    to the end offsets seen at start, then end of input); the RunResult. Restartable on ``checkpoint``."""
    from slidewise.options import RunOptions

    opts = RunOptions.of(run_options)
    plain = [n for n, s in sources.items() if not is_kafka(s)]
    if plain or tables:
        raise OptionError(
            f"the local engine follows Kafka topics only, and {(plain or list(tables))[0]!r} is not one", hint="give every source as kafka://..., or run with --once"
        )
    if not is_kafka(out):
        raise OptionError("following topics writes the results to a topic (exactly once across restarts)", hint="add --out kafka://HOST:PORT/topic")
    run = _Follower(query, sources, out, Path(checkpoint), opts, algorithm=algorithm, order=order, options=options)
    return run.run(once)


class _Follower:
    def __init__(self, query, sources: dict, out: str, root: Path, opts, *, algorithm, order, options: dict):
        from slidewise.cql.parser import load_any
        from slidewise.plan.query import JoinQuery
        from slidewise.spark.join import ChangelogJoin, bucket_logic, plan_join
        from slidewise.spark.state_codec import run_key

        self.root, self.opts, self.sources, self.out = root, opts, dict(sources), out
        q = load_any(query) if isinstance(query, (str, os.PathLike)) else query
        self.identity = getattr(q, "text", None) or str(query)
        root.mkdir(parents=True, exist_ok=True)
        key, work = run_key(persistent=True), root
        common = {"ts_column": opts.ts_column, "ts_unit": opts.ts_unit}
        jp = None
        if isinstance(q, JoinQuery):
            if options.get("overload") or options.get("adaptive"):
                raise OptionError("load shedding and adaptive re-ordering do not run on a followed topic", hint="drop --cpu-budget/--memory-budget/--adaptive")
            options = {k: v for k, v in options.items() if k not in ("overload", "adaptive")}
            try:
                jp = plan_join(q, sources, buckets=1, lateness=opts.lateness, algorithm=algorithm, order=order, options=options, work_dir=work, streams=opts, **common)
            except ChangelogJoin as general:  # retractions: the general plan path
                q = general.plan
        if jp is not None:
            self.layout, self.recipes, self.keying = jp.layout, jp.recipes, jp.keying
            self.logic, self.columns, self.plan = bucket_logic(jp, chunk_rows=opts.chunk_rows, key=key), list(jp.layout.out_names), False
            self.head = {k: v for k, v in jp.head().items() if k != "orders"}
        else:
            from slidewise.runtime.plan_engine import plan_inputs
            from slidewise.spark.join import checked_lateness
            from slidewise.spark.plan_stream import load_plan, plan_general

            plan = load_plan(q, ())
            names, _ = plan_inputs(plan, sources, {})
            lateness = checked_lateness(opts.lateness)
            gp = plan_general(
                plan, sources, names, {}, buckets=1, key=key, rejected=Rejects(), work_dir=work, lateness=lateness, strategy=opts.strategy, streams=opts, **common
            )
            self.layout, self.recipes, self.keying, self.logic, self.columns, self.plan = gp.layout, gp.recipes, gp.keying, gp.logic, gp.columns, True
            self.head = {"strategy": opts.strategy, "partitions": int(opts.partitions)}
        from slidewise.spark.sequencer import SequencerLogic

        self.sequencer = SequencerLogic(self.layout, self.keying)
        self.state = self._load()

    # ------------------------------------------------------------------ checkpoint

    def _load(self) -> dict:
        path = self.root / "follow.json"
        if not path.exists():
            return {"query": self.identity, "sources": self.sources, "batch": 0, "offsets": {}, "sequencer": {}, "buckets": {}}
        st = json.loads(path.read_text())
        if st.get("query") != self.identity or st.get("sources") != self.sources:
            raise OptionError(
                "the checkpoint belongs to another query or other sources", location=str(self.root), hint="use a new --checkpoint directory for a new query"
            )
        return st

    def _write(self, name: str, obj: dict) -> None:
        """``DIR/name`` replaced by ``obj`` whole: a new file, fsynced, renamed, the directory fsynced."""
        target = self.root / name
        tmp = target.with_name(f".{name}.tmp")
        with open(tmp, "wb") as f:
            f.write(json.dumps(obj).encode())
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
        fd = os.open(self.root, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    # ------------------------------------------------------------------ the run

    def run(self, once: bool):
        from slidewise.kafka.io import beginnings, consumer
        from slidewise.kafka.local import BatchWriter
        from slidewise.runtime.join_engine import RunResult, interrupted, run_counts
        from slidewise.runtime.outputs import Interrupted, shielded

        self.consumers = {n: consumer(KafkaURI.parse(s)) for n, s in self.sources.items()}
        started = time.perf_counter()
        self.rejects, self.inputs, self.counts = Rejects(), Counter(), Counter()
        self.writer = BatchWriter(KafkaURI.parse(self.out), f"{self.identity}@{self.root.resolve()}")
        if self.opts.rejects:
            Path(self.opts.rejects).mkdir(parents=True, exist_ok=True)
        stop = None
        try:
            for n, c in self.consumers.items():
                begun = beginnings(c)
                self.state["offsets"].setdefault(n, {str(p): o for p, o in begun.items()})
            limit = self._ends(cap=False) if once else None
            while True:
                with shielded():
                    ends, moved, last = self._planned(limit)
                    if moved or last:
                        self._batch(ends, eof=last)
                if last:
                    break
                if not moved:
                    time.sleep(POLL_SECONDS)
        except Interrupted as e:
            stop = e
        finally:
            self.writer.close()
            for c in self.consumers.values():
                c.close()
        inputs = {ref.alias: int(self.inputs.get(ref.alias, 0)) for ref in self.layout.streams}
        stats = {
            "query": self.identity,
            "engine": "local",
            "mode": "follow",
            **self.head,
            "micro_batches": int(self.counts["batches"]),
            **run_counts(inputs, int(self.counts["results"]), int(self.counts["retractions"]), self.rejects, time.perf_counter() - started),
            "state_tuples_peak": int(self.counts["state_peak"]),
            **({"comparisons": int(self.counts["comparisons"])} if not self.plan else {"negative_tuples": int(self.counts["negatives"])}),
            **interrupted(stop),
        }
        if stop is not None:
            print(f"slidewise: stopped after micro-batch {self.state['batch'] - 1}; rerun the same command to continue", file=sys.stderr)
        return RunResult(None, stats, self.rejects)

    def _ends(self, *, cap: bool) -> dict:
        from slidewise.kafka.io import end_offsets

        out = {}
        for n, c in self.consumers.items():
            ends = end_offsets(c, KafkaURI.parse(self.sources[n]))
            done = self.state["offsets"][n]
            out[n] = {str(p): (min(e, int(done.get(str(p), 0)) + MAX_MESSAGES) if cap else e) for p, e in ends.items()}
        return out

    def _planned(self, limit: dict | None) -> tuple[dict, bool, bool]:
        """Micro-batch ``n``: its end offsets, whether any moved, whether it ends the input (``limit``
        reached), recorded before it runs (a replay takes the recorded ones)."""
        pending = self.root / "pending.json"
        if pending.exists():
            got = json.loads(pending.read_text())
            if got["batch"] == self.state["batch"]:
                return got["ends"], True, bool(got["eof"])
        ends = self._ends(cap=True)
        if limit is not None:
            ends = {n: {p: min(e, limit[n].get(p, e)) for p, e in part.items()} for n, part in ends.items()}
        moved = any(e > int(self.state["offsets"][n].get(p, 0)) for n, part in ends.items() for p, e in part.items())
        eof = limit is not None and ends == limit
        if moved or eof:
            self._write("pending.json", {"batch": self.state["batch"], "ends": ends, "eof": eof})
        return ends, moved, eof

    def _batch(self, ends: dict, *, eof: bool) -> None:
        from slidewise.kafka.io import read
        from slidewise.spark.ingest import control_batches

        st, n = self.state, self.state["batch"]
        wire: dict[int, list[pd.DataFrame]] = {}
        for name, c in self.consumers.items():
            start = {int(p): int(o) for p, o in st["offsets"][name].items()}
            end = {int(p): int(e) for p, e in ends[name].items()}
            msgs = sorted(read(c, KafkaURI.parse(self.sources[name]), start, end))
            for i, info in enumerate(self.layout.streams):
                if info.source == name and msgs:
                    wire.setdefault(i, []).extend(self._convert(i, msgs))
        if eof:  # the control source's end-of-input row, as on Spark
            for b in control_batches([pa.record_batch({"eof": [1]})], layout=self.layout):
                for i, rows in b.to_pandas().groupby("s"):
                    wire.setdefault(int(i), []).append(rows)
        sequenced = []
        for i in sorted(wire):
            frame = pd.concat(wire[i], ignore_index=True)
            new, out = self.sequencer.process(i, tuple(st["sequencer"][str(i)]) if str(i) in st["sequencer"] else None, frame)
            st["sequencer"][str(i)] = [None if v is None else int(v) for v in new]
            sequenced += out
        outputs = []
        if sequenced:
            frame = pd.concat(sequenced, ignore_index=True)
            for b, part in frame.groupby("b", sort=True):
                old = st["buckets"].get(str(b))
                blob, out = self.logic.process(int(b), base64.b64decode(old) if old else None, part.reset_index(drop=True))
                st["buckets"][str(b)] = base64.b64encode(blob).decode()
                outputs += out
        results, rejects = self._outputs(outputs)
        if len(results):
            self.writer.write(results, n)
        from slidewise.spark.sinks import write_batch_rejects

        write_batch_rejects(self.opts.rejects, n, rejects)
        st["offsets"] = {name: {p: int(e) for p, e in part.items()} for name, part in ends.items()}
        st["batch"] = n + 1
        self._write("follow.json", st)
        self.counts["batches"] += 1

    def _convert(self, stream: int, msgs: list) -> list[pd.DataFrame]:
        """Messages ``(partition, offset, value)`` as wire rows of ``stream``, as on Spark."""
        from slidewise.kafka.io import decode_text
        from slidewise.spark.kafka_source import kafka_batches

        info, recipe = self.layout.streams[stream], self.recipes[stream]
        names = list(recipe["names"])
        if info.fmt != "avro":
            msgs = [m for m in msgs if (m[2] or b"").strip()]  # blank: skipped, as blank lines
            if not msgs:
                return []
        part = pa.array([m[0] for m in msgs], pa.int64())
        off = pa.array([m[1] for m in msgs], pa.int64())
        if info.fmt == "avro":
            raw = pa.record_batch({"partition": part, "offset": off, "value": pa.array([m[2] for m in msgs], pa.binary())})
        else:
            cols, corrupt = decode_text([m[2] for m in msgs], names, info.fmt)
            text = {f"v{j}": pa.array(cols[c], pa.string()) for j, c in enumerate(names)}
            raw = pa.record_batch({"partition": part, "offset": off, **text, "_corrupt": pa.array(corrupt, pa.string())})
        body = kafka_batches([raw], stream=stream, layout=self.layout, names=tuple(names), ts_column=self.opts.ts_column, uri=recipe["uri"])
        return [b.to_pandas() for b in body]

    def _outputs(self, frames: list[pd.DataFrame]) -> tuple[pd.DataFrame, Rejects]:
        """The results (output columns) and rejects of the bucket stage's output rows; counts kept."""
        from slidewise.spark.bucket import reject_kind
        from slidewise.spark.layout import ADMITTED, REJECT, RESULT, STATS, unpack

        batch = Rejects()
        if not frames:
            return pd.DataFrame(columns=self.columns), batch
        out = pd.concat(frames, ignore_index=True)
        kind = out["k"].to_numpy()
        streams = self.layout.streams
        if self.plan:
            parts = [pd.DataFrame(unpack(p)) for p in out["p"][kind == RESULT]]
            results = pd.concat(parts, ignore_index=True)[self.columns] if parts else pd.DataFrame(columns=self.columns)
            for s, p in zip(out["s"][kind == REJECT], out["p"][kind == REJECT]):
                rej = pd.DataFrame(unpack(p))
                for (f, why), g in rej.groupby([rej["file"], rej["reason"].map(reject_kind)], sort=False, dropna=False):
                    args = (streams[int(s)].source, f, g["line"].to_numpy(np.int64), g["reason"].tolist(), g["raw"].tolist())
                    for target in (batch, self.rejects):
                        target.add_many(*args, kind=why)
            for s, q in zip(out["s"][kind == ADMITTED], out["q"][kind == ADMITTED]):
                self.inputs[streams[int(s)].alias] += int(q)
            stats = out[kind == STATS]
            self.counts["negatives"] += int(stats["n2"].sum())
            self._peak(stats["n0"])
        else:
            results = out[kind == RESULT][[f"r{j}" for j in range(len(self.columns))]].set_axis(self.columns, axis=1).reset_index(drop=True)
            rej = out[kind == REJECT]
            for (stream, f, why), g in rej.groupby(["rs", "rf", "rk"], sort=False, dropna=False):
                args = (stream, f, g["rl"].to_numpy(np.int64), g["rr"].tolist(), g["rw"].fillna("").tolist())
                for target in (batch, self.rejects):
                    target.add_many(*args, kind=why)
            adm = out[kind == ADMITTED]
            for alias, q in zip(adm["rs"], adm["n0"]):
                self.inputs[alias] += int(q)
            stats = out[kind == STATS]
            self.counts["comparisons"] += int(stats["n2"].sum())
            self._peak(stats["n0"])
        retractions = int((results["sign"] < 0).sum()) if "sign" in results.columns and len(results) else 0
        self.counts["results"] += len(results) - retractions
        self.counts["retractions"] += retractions
        return results, batch

    def _peak(self, tuples) -> None:
        """The state peak: the one bucket's tuples after a call."""
        if len(tuples):
            self.counts["state_peak"] = max(self.counts["state_peak"], int(tuples.max()))
