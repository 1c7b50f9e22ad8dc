"""The plan of a frequent-items query: ``SELECT RSTREAM FREQUENT(S.x, k) FROM S [window SLIDE d] [WHERE ...]``.

Golab's thesis ch. 6 (Algorithm 6, :mod:`slidewise.synopses.frequent`): the
window is cut into sub-windows that expire whole, in FIFO order, so the
sub-window size is the grid every window boundary lies on: ``s = gcd(T, D)``
time units for ``[RANGE T SLIDE D]``, ``s = gcd(N, D)`` tuples for ``[ROWS N
SLIDE D]``; ``b`` = window / ``s`` sub-windows. A time window here is the
last ``T`` time units, ``τ − T < ts ≤ τ`` (not the ``T + 1`` units of
``τ − T ≤ ts ≤ τ`` elsewhere), so that ``[RANGE 600 s SLIDE 10 s]`` is 60
sub-windows of 10 s rather than 600,001 of 1 ms. :class:`FrequentQuery` is a
:class:`~slidewise.plan.logical.Plan` (its root is the input's
``Output ← [Select] ← Scan``, so sources and explain treat it as one) with
the call's arguments; :mod:`slidewise.runtime.frequent` runs it.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import gcd

from slidewise.plan.expr import Expr
from slidewise.plan.logical import Plan, Scan, Select

__all__ = ["FrequentQuery", "OUTPUT_COLUMNS"]

#: the columns after the item column
OUTPUT_COLUMNS = ("frequency", "threshold", "guaranteed")


@dataclass(frozen=True)
class FrequentQuery(Plan):
    """A frequent-items query; ``slide`` is D (tuples for a count window), ``exact`` the exact baseline."""

    item: str = ""
    k: int = 1
    exact: bool = False
    slide: int = 1
    summary: str = "topk"  # synopses.frequent.KINDS; "exact" when ``exact``

    @property
    def scan(self) -> Scan:
        node = self.root.child
        return node.child if isinstance(node, Select) else node  # type: ignore[return-value]  # built so

    @property
    def where(self) -> Expr | None:
        node = self.root.child
        return node.predicate if isinstance(node, Select) else None

    @property
    def counting(self) -> bool:
        return self.scan.window.kind == "rows"  # type: ignore[union-attr]  # a stream scan has a window

    @property
    def length(self) -> int:
        """Tuples (count window) or time units ``T`` the window spans: ``τ − T < ts ≤ τ``."""
        return self.scan.window.size  # type: ignore[union-attr]

    @property
    def sub_window(self) -> int:
        return gcd(self.length, self.slide)

    @property
    def sub_windows(self) -> int:
        return self.length // self.sub_window

    @property
    def columns(self) -> tuple[str, ...]:
        return (self.item, *OUTPUT_COLUMNS)

    def describe(self) -> str:
        unit = "tuples" if self.counting else "time units"
        how = (
            "exact counts"
            if self.exact
            else {"topk": f"top-{self.k} lists (Golab's thesis Algorithm 6)", "misra-gries": f"Misra-Gries summaries of {self.k} counters"}[self.summary]
        )
        return f"frequent items: {how}, sub-window s={self.sub_window} {unit}, b={self.sub_windows}"
