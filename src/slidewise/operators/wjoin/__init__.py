"""W-join operators (Hammad, Aref & Elmagarmid, "Stream Window Join: Tracking Moving Objects in
Sensor-Network Databases", SSDBM 2003): joins under pairwise window constraints between the
members' timestamps (:class:`~slidewise.plan.wjoin.WJoinQuery`). One module per algorithm;
so far the merge W-join, :class:`~slidewise.operators.wjoin.mw_join.MWJoin`."""

from slidewise.operators.wjoin.mw_join import MWJoin

__all__ = ["MWJoin"]
