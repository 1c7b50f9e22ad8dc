"""Multi-way join over count-based windows: circular arrays, counters, negative tuples.

Paper: Golab & Özsu, VLDB 2003 long version §3.6 (count windows and
their hash buckets as circular arrays, insertion and invalidation in one
overwrite, no timestamp comparisons; *ComputeCountJoin* with the counter
``cnt`` for lazy re-evaluation); windowed hash join with circular-buffer
buckets, ICEIS 2005 fragment (§5–6); strict non-monotonic join
inputs and negative tuples, Golab PhD thesis 2006 §5.2.1–5.2.2.

Algorithm (``count``): every window is ``[ROWS N]`` or
``[PARTITION BY k ROWS N]``, kept per partition as a circular array
(:class:`~slidewise.windows.count.CountWindow`) with its hash buckets as
circular buffers (:class:`~slidewise.windows.hashed.HashWindow`). Eager: an
arrival overwrites the oldest tuple of its partition, then the other windows
are probed in nested loops as in ``hybrid`` (bucket where an equality binds,
whole window otherwise), without validity checks. Lazy (option ``slide=D``):
arrivals are appended without eviction and joined at the next multiple of D
of their timestamp (or at :meth:`finish`); a probed tuple ``u`` qualifies for
origin ``k`` iff it arrived earlier and ``replayed(part) - cnt(u) < N`` — the
paper's counter test, with the counter of the partition's latest arrival up
to ``k`` found by replaying arrivals in order (positions break timestamp ties).

Negative tuples (``negatives=True``, eager): count windows are strict
non-monotonic, so each result is retracted (``sign = -1``) when its first
member is evicted, with the evicting arrival's timestamp — via
:class:`~slidewise.operators.joins.hash.Retractions`.

Options: ``buckets`` (int or per-stream list, default ``min(N, 64)``;
``buckets=1`` gives the plain circular arrays of ComputeCountJoin), ``slide``.
Results equal the eager semantics in both modes (count windows never expire by
time, so restore and no-restore coincide).

Complexity per arrival: O(1) window maintenance (partitioned eviction
O(bucket)), probing as ``hybrid``; memory N_i tuples per window and partition
(plus the arrivals of one interval when lazy), and one index entry per live
result and member with ``negatives``.

>>> from slidewise.plan.query import JoinQuery, StreamRef, WindowSpec, Equality
>>> from slidewise.plan.expr import Col
>>> import numpy as np
>>> from slidewise.model.batch import StreamBatch
>>> q = JoinQuery((StreamRef("A", "A", WindowSpec("rows", 1)),
...                StreamRef("B", "B", WindowSpec("rows", 2))),
...               (Equality(Col(0, "a", "A"), Col(1, "a", "B")),))
>>> op = CountJoin(q, negatives=True)
>>> res = op.process([StreamBatch(0, [0, 2], [1, 5], {"a": np.array([7, 8])}),
...                   StreamBatch(1, [1], [3], {"a": np.array([7])})])
>>> sorted(res.keys())
[((0, 1), 3, 9223372036854775807, 1), ((0, 1), 5, 9223372036854775807, -1)]
"""

from __future__ import annotations

from slidewise.errors import OptionError, PlanError
from slidewise.operators.joins.hash import BucketProbeJoin
from slidewise.plan.query import JoinQuery


class CountJoin(BucketProbeJoin):
    """Join of count windows over circular arrays (Golab & Özsu §3.6), eager or lazy."""

    name = "count"
    summary = "count-window join over circular arrays, cnt counters, negative tuples (§3.6)"
    all_hashed = False
    evaluation = "eager"  # lazy only with the ``slide`` option
    options_allowed = frozenset({"buckets", "slide"})

    @classmethod
    def check(cls, query: JoinQuery) -> None:
        time_windows = [s.alias for s in query.streams if not s.window.is_count]
        if time_windows:
            raise PlanError(
                f"count joins count-based windows only; {', '.join(time_windows)} have time-based windows",
                hint="use --algorithm hash or hybrid (time and count windows), or nlj",
            )

    def _lazy_interval(self) -> int | None:
        slide = self.options.get("slide")
        if slide is not None and (not isinstance(slide, int) or isinstance(slide, bool) or slide < 1):
            raise OptionError(f"slide must be a positive integer, got {slide!r}", hint="e.g. slide=10 (re-evaluate every 10 time units)")
        return slide
