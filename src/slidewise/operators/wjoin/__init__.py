"""W-join operators (Hammad, Aref & Elmagarmid, "Stream Window Join: Tracking Moving Objects in
Sensor-Network Databases", SSDBM 2003): joins under pairwise window constraints between the
members' timestamps (:class:`~slidewise.plan.wjoin.WJoinQuery`). One module per algorithm:
the merge (:class:`MWJoin`), nested-loop (:class:`NLWJoin`) and hash (:class:`HWJoin`) W-joins,
and the conservative filter–refine approaches on MW-join (:class:`GCAJoin`, :class:`LCAJoin`).
Baselines (``baseline``: run when named, never chosen by the planner): the paper's adapted ripple
join (:class:`RippleJoin`) and XJoin (:class:`XJoin`) with periodic purges, and the binary
windowed nested-loops joins (:class:`WNLJoin`, :class:`WNLOwnJoin`) and circular-buffer hash join
(:class:`WHJoin`) of an ICEIS 2005 paper on windowed join operators.

The registry: :data:`WJOINS` names them for ``--algorithm``; :func:`register` adds one from
elsewhere; :func:`by_rank` lists them in ``preference`` order. Each class carries its planner
facts (``cost_family``, ``preference``, ``per_arrival``, ``hashed``, ``refines``, ``baseline``, ``check``; see
:class:`MWJoin`), read by :mod:`slidewise.optimizer.wjoin`.
"""

from slidewise.errors import PlanError
from slidewise.operators.wjoin.conservative import GCAJoin, LCAJoin
from slidewise.operators.wjoin.hw_join import HWJoin
from slidewise.operators.wjoin.mw_join import MWJoin
from slidewise.operators.wjoin.nlw_join import NLWJoin
from slidewise.operators.wjoin.ripple_join import RippleJoin
from slidewise.operators.wjoin.whj_join import WHJoin
from slidewise.operators.wjoin.wnl_join import WNLJoin, WNLOwnJoin
from slidewise.operators.wjoin.xjoin import XJoin

WJoinOperator = type[MWJoin] | type[NLWJoin] | type[WNLJoin]

WJOINS: dict[str, WJoinOperator] = {c.name: c for c in (MWJoin, NLWJoin, HWJoin, GCAJoin, LCAJoin, RippleJoin, XJoin, WNLJoin, WNLOwnJoin, WHJoin)}


def register(cls: WJoinOperator) -> WJoinOperator:
    """Register ``cls`` under its ``name`` (usable as a class decorator); a name is taken once."""
    if WJOINS.get(cls.name, cls) is not cls:
        raise PlanError(f"W-join algorithm {cls.name!r} is already registered", hint="pick another name")
    WJOINS[cls.name] = cls
    return cls


def by_rank() -> list[WJoinOperator]:
    """The registered W-join operators in ``preference`` order (the planner's tie order)."""
    return sorted(WJOINS.values(), key=lambda c: (c.preference, c.name))


__all__ = [
    "WJOINS",
    "GCAJoin",
    "HWJoin",
    "LCAJoin",
    "MWJoin",
    "NLWJoin",
    "RippleJoin",
    "WHJoin",
    "WJoinOperator",
    "WNLJoin",
    "WNLOwnJoin",
    "XJoin",
    "by_rank",
    "register",
]
