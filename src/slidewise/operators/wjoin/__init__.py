"""W-join operators (Hammad, Aref & Elmagarmid, "Stream Window Join: Tracking Moving Objects in
Sensor-Network Databases", SSDBM 2003): joins under pairwise window constraints between the
members' timestamps (:class:`~slidewise.plan.wjoin.WJoinQuery`). One module per algorithm:
the merge (:class:`MWJoin`), nested-loop (:class:`NLWJoin`) and hash (:class:`HWJoin`) W-joins,
and the conservative filter–refine approaches on MW-join (:class:`GCAJoin`, :class:`LCAJoin`);
:data:`WJOINS` names them for ``--algorithm``."""

from slidewise.operators.wjoin.conservative import GCAJoin, LCAJoin
from slidewise.operators.wjoin.hw_join import HWJoin
from slidewise.operators.wjoin.mw_join import MWJoin
from slidewise.operators.wjoin.nlw_join import NLWJoin

WJOINS: dict[str, type[MWJoin] | type[NLWJoin]] = {c.name: c for c in (MWJoin, NLWJoin, HWJoin, GCAJoin, LCAJoin)}

__all__ = ["WJOINS", "GCAJoin", "HWJoin", "LCAJoin", "MWJoin", "NLWJoin"]
