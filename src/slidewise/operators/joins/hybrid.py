"""Hybrid NLJ–hash multi-way join: bucket probes where an equality binds, scans elsewhere.

Paper: Golab & Özsu, VLDB 2003 long version §3.5 (*Hybrid NLJ-Hash
Join*) on top of §3.2 (*ComputeJoin*) and §3.4 (*ComputeHashJoin*); join-order
remark for hybrids in §5.3. Lazy evaluation as in §3.3 with the §3.6 counters,
restore / no-restore semantics from Golab's thesis §5.2.2.

Algorithm (``hybrid``): the nested loops of the eager NLJ in
``origin_order(i)``. Each window is hashed on the attribute by which most
origins probe it (:func:`~slidewise.operators.joins.hash.hash_attributes`);
a loop scans one bucket when an already bound column is equated with that
attribute, and the whole window when only theta predicates (or equalities on
another attribute, or nothing) connect it to the bound streams. Predicates are
checked as in ``nlj``; any mix of equality and theta predicates works, as do
time and count windows. With ``query.slide`` the join is evaluated lazily
exactly like ``hash-lazy`` (restore per ``query.restore``).

Options: ``buckets`` (int or per-stream list; only hashed windows use it;
default ``min(window size, 64)``), ``expire_every`` (eager only: lazy
expiration). Negative tuples for count windows as in ``hash``.

Complexity per arrival: bucket-sized loops for equality-bound windows, window-
sized loops for the others. State: the windows.

>>> from slidewise.plan.query import JoinQuery, StreamRef, WindowSpec, Equality
>>> from slidewise.plan.expr import Col, Cmp
>>> import numpy as np
>>> from slidewise.model.batch import StreamBatch
>>> q = JoinQuery((StreamRef("A", "A", WindowSpec("range", 5)),
...                StreamRef("B", "B", WindowSpec("range", 5)),
...                StreamRef("C", "C", WindowSpec("rows", 2))),
...               (Equality(Col(0, "a", "A"), Col(1, "a", "B")),),
...               (Cmp("<", Col(1, "x", "B"), Col(2, "x", "C")),))
>>> op = HybridJoin(q, buckets=4)
>>> op.bucket_counts()
[4, 4, 1]
>>> res = op.process([StreamBatch(0, [0], [1], {"a": np.array([7]), "x": np.array([0])}),
...                   StreamBatch(1, [1], [2], {"a": np.array([7]), "x": np.array([1])}),
...                   StreamBatch(2, [2], [3], {"a": np.array([0]), "x": np.array([5])})])
>>> res.keys()
[((0, 1, 2), 3, 6, 1)]
"""

from __future__ import annotations

from slidewise.errors import OptionError
from slidewise.operators.joins.hash import BucketProbeJoin
from slidewise.plan.query import JoinQuery


class HybridJoin(BucketProbeJoin):
    """Hybrid NLJ–hash join (Golab & Özsu §3.5), eager or lazy (query SLIDE)."""

    name = "hybrid"
    summary = "hybrid NLJ-hash join: hash buckets where equi-joined, window scans for theta (§3.5)"
    all_hashed = False
    evaluation = "query"
    preference = {"eager": 3}
    compared = {"eager": 3}

    @classmethod
    def check(cls, query: JoinQuery) -> None:
        """Every select–project–join query is supported."""

    def _lazy_interval(self) -> int | None:
        if self.query.slide and self.options.get("expire_every") is not None:
            raise OptionError("expire_every applies to eager evaluation only", hint="with SLIDE the windows are purged at every evaluation")
        return self.query.slide
