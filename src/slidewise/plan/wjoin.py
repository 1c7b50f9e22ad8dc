"""The W-join query model (Hammad, Aref & Elmagarmid, "Stream Window Join: Tracking Moving Objects
in Sensor-Network Databases", SSDBM 2003, §2).

A :class:`WJoinQuery` is a select–project–join :class:`~slidewise.plan.query.JoinQuery` over
unwindowed streams plus pairwise window constraints between the streams' timestamps:

* ``WINDOW(A, B) = w`` (``directed=False``): ``|A.ts - B.ts| <= w``;
* ``DWINDOW(A, B) = w`` (``directed=True``): ``0 <= B.ts - A.ts <= w`` (A's tuple first).

Pairs without a constraint are unconstrained (the paper's Form 3). Every constraint is a pair
of difference bounds ``x_j - x_i <= d``; :meth:`WJoinQuery.bounds` closes them by shortest paths
(Floyd–Warshall), which the operators use to prune and to drop tuples; the answer is unchanged,
because every closed bound is implied by the given ones. The constraint graph must be connected,
or a tuple of one component could join tuples of another at any distance in time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from slidewise.errors import OptionError, QueryError
from slidewise.plan.query import JoinQuery, WindowSpec

__all__ = ["WJoinQuery", "WindowConstraint", "local_only"]


def local_only() -> OptionError:
    """The error for a W-join sent to the Spark engine's batch mode (W-joins run there as streaming queries)."""
    return OptionError("W-joins run on the Spark engine as streaming queries only, not with --mode batch", hint="drop --mode batch (or run with --engine local)")


@dataclass(frozen=True)
class WindowConstraint:
    """``WINDOW(a, b) = w`` or, ``directed``, ``DWINDOW(a, b) = w``; ``a``, ``b`` index FROM."""

    a: int
    b: int
    w: int
    directed: bool = False

    def holds(self, ts_a: int, ts_b: int) -> bool:
        if self.directed:
            return 0 <= ts_b - ts_a <= self.w
        return abs(ts_a - ts_b) <= self.w

    def describe(self, aliases: list[str]) -> str:
        return f"{'DWINDOW' if self.directed else 'WINDOW'}({aliases[self.a]}, {aliases[self.b]}) = {self.w}"


@dataclass(frozen=True)
class WJoinQuery:
    """A join of streams under pairwise window constraints (see the module docstring)."""

    join: JoinQuery
    constraints: tuple[WindowConstraint, ...]

    def __post_init__(self) -> None:
        n, aliases = self.join.n, self.join.aliases
        if n < 2:
            raise QueryError("a W-join needs at least two streams in FROM", hint="write SELECT * FROM A, B WINDOW(A, B) = 10")
        for c in self.constraints:
            if not (0 <= c.a < n and 0 <= c.b < n) or c.a == c.b:
                raise QueryError(f"window constraint between streams {c.a} and {c.b} of {n}", hint="a constraint names two different streams of FROM")
            if c.w < 0:
                raise QueryError(f"negative window in {c.describe(aliases)}", hint="a window is a distance >= 0")
        parts = self.components()
        if len(parts) > 1:
            names = " | ".join(", ".join(aliases[i] for i in p) for p in parts)
            raise QueryError(
                f"the window constraints do not connect the streams: {names}", hint="add a WINDOW(X, Y) = w between two of these groups (or WINDOW = w for every pair)"
            )

    @property
    def n(self) -> int:
        return self.join.n

    def components(self) -> list[list[int]]:
        """The connected components of the (undirected) constraint graph, in FROM order."""
        comp = list(range(self.n))

        def find(x: int) -> int:
            while comp[x] != x:
                x = comp[x]
            return x

        for c in self.constraints:
            comp[find(c.a)] = find(c.b)
        groups: dict[int, list[int]] = {}
        for i in range(self.n):
            groups.setdefault(find(i), []).append(i)
        return list(groups.values())

    def bounds(self) -> list[list[float]]:
        """``d[i][j]``: the tightest implied bound on ``ts_j - ts_i`` (``inf`` if none; ``d[i][i] = 0``)."""
        n = self.n
        d = [[0.0 if i == j else math.inf for j in range(n)] for i in range(n)]
        for c in self.constraints:
            d[c.a][c.b] = min(d[c.a][c.b], c.w)  # ts_b - ts_a <= w
            d[c.b][c.a] = min(d[c.b][c.a], 0 if c.directed else c.w)  # ts_a - ts_b <= w (or 0)
        for k in range(n):
            for i in range(n):
                for j in range(n):
                    if d[i][k] + d[k][j] < d[i][j]:
                        d[i][j] = d[i][k] + d[k][j]
        return d

    def reach(self) -> list[int]:
        """Per stream: how long after its timestamp a tuple can still meet a later member
        (``max_j d[i][j]``); the removal rule drops it once the clock passes ``ts + reach``."""
        d = self.bounds()
        return [int(max(d[i][j] for j in range(self.n) if j != i)) for i in range(self.n)]

    def holds(self, ts: tuple[int, ...] | list[int]) -> bool:
        """Do member timestamps ``ts`` (FROM order) satisfy every given constraint?"""
        return all(c.holds(ts[c.a], ts[c.b]) for c in self.constraints)

    def exp(self, ts: tuple[int, ...] | list[int]) -> int:
        """``exp`` of a result: the first instant one of its members leaves its buffer by the removal rule."""
        reach = self.reach()
        return min(t + r for t, r in zip(ts, reach))

    def uniform_window(self) -> int | None:
        """``w`` if the constraints amount to every pair within ``w`` (every closed bound ``w``), else ``None``."""
        d = self.bounds()
        off = {d[i][j] for i in range(self.n) for j in range(self.n) if i != j}
        return int(off.pop()) if len(off) == 1 else None

    def as_sliding_window(self) -> JoinQuery | None:
        """Form 1 as the join path's query: with every pair within ``w``, a combination whose last
        member arrives at ``τ`` qualifies iff every member lies in ``[τ - w, τ]``, i.e. in a
        ``[RANGE w]`` window per stream (same results, ``ts`` and ``exp``); ``None`` otherwise."""
        w = self.uniform_window()
        if w is None:
            return None
        return replace(self.join, streams=tuple(replace(s, window=WindowSpec("range", w)) for s in self.join.streams))

    def describe(self) -> str:
        return " AND ".join(c.describe(self.join.aliases) for c in self.constraints)
