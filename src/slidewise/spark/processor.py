"""The ``StatefulProcessor`` s of the Spark pipelines — glue only.

:class:`SequencerProcessor` (keyed by stream; general plans) runs
:class:`~slidewise.spark.sequencer.SequencerLogic`;
:class:`JoinProcessor` (keyed by bucket) runs
:class:`~slidewise.spark.bucket.BucketJoin`, the hosted slidewise operator
(:class:`PlanProcessor`: a general plan's bucket logic).
Each keeps one ``ValueState`` per key (two numbers; one binary value), read
and written once per call: the per-call cost is what limits a Spark stateful
operator, so no per-row state and no timers — buckets advance on
the frontier markers every stream sends them each micro-batch. The logic
classes are tested without a JVM.

A processor carries its logic pickled and unpickles it on the first call:
Spark also instantiates processors in a short-lived driver-side Python
process (to register the state variables) at every query start, which then
need not import the join machinery, nor pandas (imported when rows come: 0.4 s
of every query start).
"""

from __future__ import annotations

import pickle
from typing import TYPE_CHECKING

from pyspark.sql.streaming import StatefulProcessor

from slidewise.spark.worker import settle

if TYPE_CHECKING:
    import pandas as pd

SEQUENCER_STATE = "mx bigint, nx bigint"  # == slidewise.spark.sequencer.STATE_DDL
BUCKET_STATE = "blob binary"  # == slidewise.spark.bucket.STATE_DDL


def _frame(rows) -> pd.DataFrame:
    import pandas as pd

    parts = [p for p in rows if len(p)]
    if not parts:
        return pd.DataFrame()
    return parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)


class _Hosting(StatefulProcessor):
    def __init__(self, logic):
        self._pickled = pickle.dumps(logic, protocol=pickle.HIGHEST_PROTOCOL)
        self._logic = None

    @property
    def logic(self):
        if self._logic is None:
            self._logic = pickle.loads(self._pickled)
        return self._logic

    def __getstate__(self):
        return {"_pickled": self._pickled, "_logic": None}


class SequencerProcessor(_Hosting):
    """Stage 1 (key: stream index): input order, lateness, sequence numbers, buckets, markers."""

    def init(self, handle) -> None:
        self.state = handle.getValueState("sequencer", SEQUENCER_STATE)

    def handleInputRows(self, key, rows, timerValues):
        frame = _frame(rows)
        if frame.empty:
            return
        new, out = self.logic.process(int(key[0]), self.state.get(), frame)
        self.state.update(new)
        yield from out
        settle()

    def close(self) -> None:
        pass


class JoinProcessor(_Hosting):
    """The join's one stateful stage (key: bucket): input order, late checks, the hosted join operator."""

    def init(self, handle) -> None:
        self.state = handle.getValueState("bucket", BUCKET_STATE)

    def handleInputRows(self, key, rows, timerValues):
        frame = _frame(rows)
        if frame.empty:
            return
        old = self.state.get()
        blob, out = self.logic.process(int(key[0]), bytes(old[0]) if old else None, frame)
        self.state.update((blob,))
        yield from out
        settle()

    def close(self) -> None:
        pass


class PlanProcessor(JoinProcessor):
    """Stage 2 of general plans (key: bucket): the pane path, FREQUENT or the operator network
    (:mod:`slidewise.spark.plan_stream`), with one binary ValueState."""

    def init(self, handle) -> None:
        self.state = handle.getValueState("plan_bucket", BUCKET_STATE)
