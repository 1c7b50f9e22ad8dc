"""HW-join: the hash W-join (Hammad, Aref & Elmagarmid, "Stream Window Join: Tracking Moving
Objects in Sensor-Network Databases", SSDBM 2003, §3.1.2).

NLW-join's pipeline (:mod:`~slidewise.operators.wjoin.nlw_join`) with both buffers of every level
hashed on an equi-join attribute between the level's right stream and a stream below it: a new
tuple (or m-tuple) probes only the bucket of its key, and ``comparisons`` counts the rows of that
bucket it visits. A bucket is a key code (small integer keys are their own codes, others numbered)
over one columnar buffer per side; a chunk's probes are binary searches over the buffer sorted by
code, then arrival, and the window test runs over the probed ranges only. The window update is
NLW-join's: a probe deletes the rows of its bucket out of the window of its input's time-stamps
vector. A bucket no probe visits would keep its old rows, so the paper's update routine runs after
every ``sweep``-th arrival (positions ``sweep - 1``, ``2 sweep - 1``, …) and deletes the rows out of
the window from every bucket. The paper calls it for the rarely-probed buckets only: those are the
ones it deletes from, as a probed bucket has no such rows left but those put out since its last
probe. The routine's visits are not counted as comparisons. The pipeline's order adds the streams along the
equalities.
"""

from __future__ import annotations

from slidewise.errors import OptionError
from slidewise.operators.wjoin.mw_join import equality_links, greedy_order
from slidewise.operators.wjoin.nlw_join import NLWJoin
from slidewise.plan.wjoin import WJoinQuery

__all__ = ["HWJoin"]


class HWJoin(NLWJoin):
    """The hash W-join over ``query``'s streams (see the module docstring)."""

    name = "hw-join"
    preference = 2
    per_arrival = 13.0  # as measured by slidewise bench wjoin (3000 tuples in chunks of 1,024, 2-6 streams)
    hashed = True
    sweep = 1024  # arrivals between two runs of the update routine

    @classmethod
    def check(cls, query: WJoinQuery) -> None:
        """The equalities must connect every stream (the paper's equi-join case)."""
        join, linked = query.join, {0}
        while True:
            more = {e.left.stream for e in join.equalities if e.right.stream in linked} | {e.right.stream for e in join.equalities if e.left.stream in linked}
            if more <= linked:
                break
            linked |= more
        if len(linked) < query.n:
            missing = ", ".join(a for i, a in enumerate(join.aliases) if i not in linked)
            raise OptionError(
                f"{cls.name} needs equi-join predicates connecting every stream; none reaches {missing}",
                hint="add WHERE X.a = Y.b between the streams, or use --algorithm nlw-join or mw-join",
            )

    def _pipeline_order(self) -> list[int]:
        """MW-join's greedy order restricted to the streams an equality links to those below."""
        return greedy_order(self.d, 0, equality_links(self.query))

    def _keys(self, k: int) -> tuple[tuple[int, str] | None, tuple[int, str] | None]:
        if k == 0:
            return None, None
        j, below = self.order[k], set(self.order[:k])
        for e in self.query.join.equalities:
            for mine, other in ((e.left, e.right), (e.right, e.left)):
                if mine.stream == j and other.stream in below:
                    return (other.stream, other.attr), (j, mine.attr)
        raise AssertionError("checked by HWJoin.check")
