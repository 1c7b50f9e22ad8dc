"""Naive multi-way NLJ: the join below each outer tuple is recomputed (a baseline).

Paper: Golab & Özsu, VLDB 2003 long version §3.1 (*Naive
Multi-Way NLJ*), its lazy variant and the counter-example of Tables 2–3.

Algorithm (``naive``) for the global order ``o_1, ..., o_n``, read as the plan
``o_1 ⋈ (o_2 ⋈ (... ⋈ o_n))``: the relation of the new tuple's stream is just
the new tuple(s), every other relation is a whole window. For every tuple ``u``
of ``o_l`` the join of ``o_{l+1} .. o_n`` is computed again from scratch and each
of its results is probed with ``u`` (predicates between ``u`` and the members
below it). Comparisons are counted per predicate evaluation, as in ``nlj``.

* Eager (no SLIDE): on arrival of ``k`` the other windows are purged of tuples
  expired at ``k.ts`` (count windows evict on insertion), then the plan runs
  with ``{k}`` as the relation of ``k``'s stream. Correct; slower than ``nlj``
  because the inner joins are recomputed per outer tuple (Golab & Özsu Fig. 2).
* Lazy (``query.slide`` = D): every D, for each stream in the global order its
  new tuples are inserted and the plan runs with them as that stream's
  relation, against the whole windows — *without* timestamp checks; windows are
  purged only after the evaluation (``exp < NOW``). Members that had expired
  before the new tuple arrived therefore still join: this reproduces the
  incorrect results of Golab & Özsu Table 3 and is kept only as that
  counter-example (see tests/test_paper_examples.py). Time windows only.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from slidewise.errors import PlanError
from slidewise.model.batch import ResultBatch, StreamBatch, Tup, merge_in_order
from slidewise.operators.joins.base import ResultBuilder
from slidewise.operators.joins.lazy import LazyNestedLoopJoin
from slidewise.operators.joins.nlj import compile_levels
from slidewise.plan.query import JoinQuery


class NaiveNLJ(LazyNestedLoopJoin):
    """Naive multi-way NLJ (Golab & Özsu §3.1), eager or (incorrectly) lazy."""

    name = "naive"
    summary = "naive multi-way NLJ recomputing inner joins per outer tuple (Golab & Özsu §3.1)"
    compared = {"eager": 4, "lazy": 5}
    cost_family = "naive"
    exact = frozenset({"eager"})  # lazy: the paper's re-execution, wrong by design (Table 3)

    @classmethod
    def check(cls, query: JoinQuery) -> None:
        if query.slide and query.has_count_windows:
            raise PlanError("the lazy naive NLJ supports time windows only", hint="use --algorithm lazy or lazy-restore for count windows with SLIDE")

    def __init__(self, query: JoinQuery, **kwargs) -> None:
        super().__init__(query, **kwargs)
        # bottom-up binding: o_n first, then o_{n-1}, ...; level for depth d is at n-1-d
        bottom_up = compile_levels(query, list(reversed(self.order)))
        self.naive_levels = list(reversed(bottom_up))

    def process(self, chunk: list[StreamBatch]) -> ResultBatch:
        if self.slide:
            return super().process(chunk)
        out = ResultBuilder(self.query)
        for k in merge_in_order(chunk):
            self.insert(k)
            self.expire_all(k.ts)
            for members in self._plan(0, [None] * self.n, k.stream, [k]):
                out.add(list(members), ts=k.ts)
        return out.build()

    def evaluate(self, now: int, new: list[list[Tup]], out: ResultBuilder) -> None:
        for i in self.order:
            for t in new[i]:
                self.add_new(t)
            if new[i]:
                for members in self._plan(0, [None] * self.n, i, new[i]):
                    out.add(list(members))
        self.purge(now)

    def _plan(self, depth: int, members: list, new_stream: int, new: Iterable[Tup]) -> Iterator[list]:
        """Results of ``o_depth ⋈ (... ⋈ o_n)``; the inner join is re-run for every outer tuple."""
        level = self.naive_levels[depth]
        s = level.stream
        relation = new if s == new_stream else self.windows[s]
        if depth == self.n - 1:
            for u in relation:
                members[s] = u
                if self.passes(level, members):
                    yield members
        else:
            for u in relation:
                for _ in self._plan(depth + 1, members, new_stream, new):
                    members[s] = u
                    if self.passes(level, members):
                        yield members
        members[s] = None
