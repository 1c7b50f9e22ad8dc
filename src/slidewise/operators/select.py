"""Selection over a single windowed stream (a query with one stream in FROM).

For ``SELECT ... FROM S [window] WHERE cond`` with ISTREAM output, every
arriving tuple that satisfies ``cond`` is a result at its own time; ``exp`` is
its expiration under the window. Vectorised over the chunk.
"""

from __future__ import annotations

import numpy as np

from slidewise.errors import PlanError
from slidewise.model.batch import NO_EXP, ResultBatch, StreamBatch
from slidewise.operators.joins.base import JoinOperator
from slidewise.plan.expr import evaluate
from slidewise.plan.query import JoinQuery


class Select(JoinOperator):
    """Filter one stream's arrivals by the WHERE conjuncts (one-stream queries)."""

    name = "select"
    summary = "selection over a single stream (one-stream queries)"

    @classmethod
    def check(cls, query: JoinQuery) -> None:
        if query.n != 1:
            raise PlanError("the select operator serves one-stream queries",
                            hint="use a join algorithm for several streams")
        if query.slide:
            raise PlanError("SLIDE on a one-stream selection is not supported yet",
                            hint="drop SLIDE: a selection's answer does not depend on evaluation times")

    def process(self, chunk: list[StreamBatch]) -> ResultBatch:
        batch = chunk[0]
        keep = np.ones(len(batch), dtype=bool)
        for f in self.query.filters:
            self.comparisons += int(keep.sum())
            keep &= np.asarray(evaluate(f, lambda s, a: batch.ts if a == "ts" else batch.cols[a]), dtype=bool)
        b = batch.take(keep)
        w = self.query.streams[0].window
        exp = np.full(len(b), NO_EXP, np.int64) if w.exp(0) == NO_EXP else b.ts + w.length
        alias = self.query.streams[0].alias
        cols = {f"{alias}.ts": b.ts, **{f"{alias}.{k}": v for k, v in b.cols.items()}}
        return ResultBatch(b.pos[:, None], b.ts, exp, b.sign, cols)

    def state_tuples(self) -> int:
        return 0
