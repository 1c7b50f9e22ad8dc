"""Eager multi-way NLJ with lazy expiration (timestamp padding).

Paper: Golab, PhD thesis 2006 §5.2.1, Algorithm 3
(*ComputeJoinLazyExp*); the timestamp conditions of Golab & Özsu §3.2's
*ComputeJoin* loops serve the same purpose.

Algorithm (``nlj-lazy-expiration``): like ``nlj`` (new tuple ``k`` first, then
the global order, results emitted immediately), but time windows are purged
only every ``expire_every`` time units (option; default: the shortest time
window, at least 1). Stale tuples may therefore still sit in a window when it
is scanned, so every loop pads the predicates with the timestamp condition
``k.ts <= u.exp`` (``u.ts >= k.ts - T``) and skips tuples that fail it; these
checks are not counted as comparisons. Count windows are strict
non-monotonic (their expirations cannot be predicted, thesis §5.2.2), so they
keep evicting eagerly on insertion.

Semantics: identical to eager evaluation (the oracle). Trade-off: fewer purge
passes, but up to ``expire_every · λ_i`` extra stale tuples per window in
memory and in every scan.
"""

from __future__ import annotations

from slidewise.errors import OptionError
from slidewise.model.batch import ResultBatch, StreamBatch, merge_in_order
from slidewise.operators.joins.base import ResultBuilder
from slidewise.operators.joins.nlj import EagerNLJ
from slidewise.plan.query import JoinQuery


class LazyExpirationNLJ(EagerNLJ):
    """Eager evaluation, lazy expiration via timestamp padding (thesis Alg. 3)."""

    name = "nlj-lazy-expiration"
    summary = "eager NLJ that purges windows periodically and pads probes with timestamp checks (Alg. 3)"
    options_allowed = frozenset({"expire_every"})

    @classmethod
    def check(cls, query: JoinQuery) -> None:
        cls._require_eager("nlj-lazy-expiration", query)

    def _expire_every(self) -> int:
        every = self.options.get("expire_every")
        if every is None:
            lengths = [s.window.length for s in self.query.streams if not s.window.is_count]
            every = max(1, min(lengths, default=1))
        if not isinstance(every, int) or every < 1:
            raise OptionError(f"expire_every must be a positive integer, got {every!r}", hint="pass e.g. expire_every=10")
        return every

    def process(self, chunk: list[StreamBatch]) -> ResultBatch:
        out = ResultBuilder(self.query)
        specs = self.specs
        for k in merge_in_order(chunk):
            self.insert(k)
            self.expire_all(k.ts)  # a no-op except at multiples of expire_every
            at = k.ts

            def valid(u, at=at):
                spec = specs[u.stream]
                return spec.is_count or u.ts >= at - spec.length

            self.join_new(k, out, valid)
        return out.build()
