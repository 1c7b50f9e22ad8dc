"""The logical description of a select–project–join query over windows.

The CQL parser produces a :class:`JoinQuery`; the planner picks an operator
for it; every join operator and the oracle consume it. Stream ``i`` is the
``i``-th reference in FROM: it fixes the tie order of equal timestamps
(docs/semantics.md) and indexes result members.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from slidewise.errors import PlanError
from slidewise.model.batch import NO_EXP
from slidewise.plan.expr import Col, Expr, streams_of

WINDOW_KINDS = ("range", "rows", "unbounded", "now")
OUTPUTS = ("istream", "rstream", "dstream")


@dataclass(frozen=True)
class WindowSpec:
    """A window over one stream reference (docs/semantics.md, "Windows").

    ``range``: time window of length ``size`` (tuples with ``τ-size <= ts <= τ``);
    ``rows``: the last ``size`` arrivals (per value of ``partition_by`` if set);
    ``unbounded`` / ``now``: CQL's ``[UNBOUNDED]`` and ``[NOW]`` (= ``RANGE 0``).
    ``slide`` (time windows only) asks for lazy re-evaluation every ``slide``; a count window's SLIDE
    (``[ROWS n SLIDE m]``) is the query's (:attr:`slidewise.plan.logical.Output.count_slide`).
    """

    kind: str = "range"
    size: int = 0
    slide: int | None = None
    partition_by: str | None = None
    internal: bool = False

    def __post_init__(self) -> None:
        if self.kind not in WINDOW_KINDS:
            raise PlanError(f"unknown window kind {self.kind!r}", hint=f"use one of {WINDOW_KINDS}")
        if self.size < 0 or (self.kind == "rows" and self.size < 1):
            raise PlanError(f"window size must be positive, got {self.size}", hint="write e.g. [RANGE 100] or [ROWS 50]")
        if self.slide is not None and self.slide >= 1 and self.kind == "rows":
            raise PlanError(
                "SLIDE on a count window is given to the query (periodic GROUP BY or FREQUENT), not to a window of a PARTITION BY or of a join",
                hint="slide a whole stream's count window, e.g. FROM S [ROWS 100 SLIDE 10] GROUP BY S.k, or a time window, e.g. [RANGE 100 SLIDE 10]",
            )
        if self.slide is not None and (self.slide < 1 or self.kind != "range"):
            raise PlanError("SLIDE needs a time window and a positive interval", hint="write e.g. [RANGE 100 SLIDE 10]")
        if self.partition_by is not None and self.kind != "rows":
            raise PlanError("PARTITION BY needs a count window", hint="write [PARTITION BY k ROWS 10]")

    @property
    def is_count(self) -> bool:
        return self.kind == "rows"

    @property
    def length(self) -> int:
        """Time length T of a time-based window (``unbounded`` is effectively infinite)."""
        if self.kind == "unbounded":
            return NO_EXP // 4
        if self.kind == "now":
            return 0
        return self.size

    def exp(self, ts: int) -> int:
        """Expiration time of a tuple with timestamp ``ts`` (``NO_EXP`` for count windows)."""
        if self.kind in ("rows", "unbounded"):
            return NO_EXP
        return ts + self.length

    def __str__(self) -> str:
        if self.kind == "rows":
            body = f"ROWS {self.size}"
            if self.partition_by:
                body = f"PARTITION BY {self.partition_by} {body}"
        elif self.kind == "range":
            body = f"RANGE {self.size}" + (f" SLIDE {self.slide}" if self.slide else "")
        else:
            body = self.kind.upper()
        return f"[{body}]"


@dataclass(frozen=True)
class StreamRef:
    """A stream reference in FROM: its alias, the source it reads and its window."""

    alias: str
    source: str
    window: WindowSpec


@dataclass(frozen=True)
class Equality:
    """An equi-join predicate ``left = right`` between two different streams."""

    left: Col
    right: Col

    def __str__(self) -> str:
        return f"{self.left} = {self.right}"


@dataclass(frozen=True)
class SelectItem:
    """A SELECT list entry; output column name is ``alias`` or ``str(expr)``."""

    expr: Expr
    alias: str | None = None

    @property
    def name(self) -> str:
        return self.alias or str(self.expr)


@dataclass(frozen=True)
class JoinQuery:
    """A select–project–join query over n >= 1 windowed streams.

    ``equalities`` are the cross-stream ``=`` conjuncts of WHERE; ``filters``
    every other conjunct (single-stream selections and theta predicates).
    ``select=None`` means ``SELECT *``. With lazy evaluation (a ``SLIDE``),
    ``restore=True`` (``ISTREAM_RESTORE``) asks for every eager result, later;
    ``restore=False`` omits the short-lived results (docs/semantics.md).
    """

    streams: tuple[StreamRef, ...]
    equalities: tuple[Equality, ...] = ()
    filters: tuple[Expr, ...] = ()
    select: tuple[SelectItem, ...] | None = None
    output: str = "istream"
    restore: bool = False
    text: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        aliases = [s.alias for s in self.streams]
        if len(set(aliases)) != len(aliases):
            raise PlanError(f"stream alias used twice in FROM: {aliases}", hint="give self-joined streams distinct aliases: FROM S [RANGE 5] AS a, S [RANGE 5] AS b")
        if self.output not in OUTPUTS:
            raise PlanError(f"unknown output operator {self.output!r}", hint=f"use one of {OUTPUTS}")
        slides = {s.window.slide for s in self.streams if s.window.slide}
        if len(slides) > 1:
            raise PlanError(f"windows declare different SLIDE intervals {sorted(slides)}", hint="lazy re-evaluation has one interval per query; use the same SLIDE")

    @property
    def n(self) -> int:
        return len(self.streams)

    @property
    def aliases(self) -> list[str]:
        return [s.alias for s in self.streams]

    @property
    def slide(self) -> int | None:
        """Lazy re-evaluation interval D, or ``None`` for eager evaluation."""
        for s in self.streams:
            if s.window.slide:
                return s.window.slide
        return None

    @property
    def has_count_windows(self) -> bool:
        return any(s.window.is_count for s in self.streams)

    def index(self, alias: str) -> int:
        try:
            return self.aliases.index(alias)
        except ValueError:
            raise PlanError(f"unknown stream {alias!r}", hint=f"FROM lists {self.aliases}") from None

    def key_columns(self) -> tuple[str, ...] | None:
        """Join attribute per stream if all streams are equi-joined on one common key.

        That holds when every stream uses exactly one attribute in the equalities
        and the equalities connect all streams (one equivalence class). This is
        the papers' "common join attribute" case that hash joins and the columnar
        path serve. ``None`` otherwise (or for a single stream).
        """
        if self.n < 2:
            return None
        attrs: dict[int, set[str]] = {i: set() for i in range(self.n)}
        parent = list(range(self.n))

        def find(x: int) -> int:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for eq in self.equalities:
            attrs[eq.left.stream].add(eq.left.attr)
            attrs[eq.right.stream].add(eq.right.attr)
            parent[find(eq.left.stream)] = find(eq.right.stream)
        if any(len(a) != 1 for a in attrs.values()):
            return None
        if len({find(i) for i in range(self.n)}) != 1:
            return None
        return tuple(next(iter(attrs[i])) for i in range(self.n))

    def filters_within(self, bound: set[int] | frozenset[int]) -> list[Expr]:
        """Filters that read only streams in ``bound``."""
        return [f for f in self.filters if streams_of(f) <= set(bound)]

    def describe(self) -> str:
        """One-line description, for explain and stats."""
        parts = [f"{s.alias}{s.window}" for s in self.streams]
        conds = [str(e) for e in self.equalities] + [str(f) for f in self.filters]
        return "JOIN " + ", ".join(parts) + (" WHERE " + " AND ".join(conds) if conds else "")


def eval_times(first_ts: int, last_ts: int, slide: int) -> tuple[int, int]:
    """First and last lazy evaluation instants covering ``[first_ts, last_ts]``.

    Lazy evaluation happens at the multiples of ``slide``: a tuple with
    timestamp ``ts`` is first seen by the evaluation at ``ceil(ts / slide) * slide``.
    """
    return eval_time(first_ts, slide), eval_time(last_ts, slide)


def eval_time(ts: int, slide: int) -> int:
    """The lazy evaluation instant at which a tuple with timestamp ``ts`` is processed."""
    return -((-ts) // slide) * slide
