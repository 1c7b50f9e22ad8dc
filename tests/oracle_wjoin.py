"""Reference semantics of W-joins (docs/semantics.md, "W-joins") — simple on purpose.

Enumerates every combination of one tuple per stream and keeps those whose
timestamps satisfy every pairwise window constraint and whose members satisfy
WHERE. The global order is ``(ts, stream index in FROM, input order)``; a
result is produced when its last member in that order arrives. Exponential;
only for small test streams.

Result identity, as in tests/oracle.py: ``(members, ts, exp, sign)`` with
``members`` the member positions (FROM order), ``ts`` the last member's
timestamp and ``exp`` the earliest instant a member leaves its buffer,
``min(member.ts + reach)`` (:meth:`slidewise.plan.wjoin.WJoinQuery.reach`).
"""

from __future__ import annotations

import itertools
from collections import Counter

from slidewise.model.batch import Tup
from slidewise.plan.wjoin import WJoinQuery
from tests.oracle import predicates_hold


def order_key(t: Tup) -> tuple[int, int, int]:
    """The global order: ``(ts, stream, position)``; positions increase in input order."""
    return (t.ts, t.stream, t.pos)


def oracle_wjoin(query: WJoinQuery, tuples: list[Tup]) -> Counter:
    """Multiset of results of ``query`` over the whole input ``tuples``."""
    per_stream = [[t for t in tuples if t.stream == i] for i in range(query.n)]
    reach = query.reach()
    out: Counter = Counter()
    for members in itertools.product(*per_stream):
        ts = [m.ts for m in members]
        if not all(c.holds(ts[c.a], ts[c.b]) for c in query.constraints):
            continue
        if not predicates_hold(query.join, members):
            continue
        origin = max(members, key=order_key)
        exp = min(t + r for t, r in zip(ts, reach))
        out[(tuple(m.pos for m in members), origin.ts, exp, 1)] += 1
    return out
