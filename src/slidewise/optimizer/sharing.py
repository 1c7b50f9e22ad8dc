"""Which periodic GROUP BY queries share one pane synopsis (Golab's thesis, ch. 8: shared synopses
for many periodic queries over one stream).

Queries of the pane path (:class:`~slidewise.optimizer.pane_plan.SlidingAggregate`)
share one buffer and one set of pane partials when every rule of
:data:`RULES` holds for them; each rule is a function of two queries that
returns None (holds) or why not:

* ``stream`` — they read the same stream;
* ``keys`` — they group by the same key attributes, in the same order;
* ``predicate`` — their WHERE conditions select the same tuples up to
  conjuncts on the group keys alone (the shared synopsis keeps every group
  of the common predicate, and such a conjunct picks whole groups, applied to
  the answer as a group filter), or every aggregate of both is one whose pane
  partials merge column by column (:data:`COVERABLE`: COUNT, SUM, AVG, MIN,
  MAX): then the synopsis keeps the common conjuncts and one partial per
  *region* — each distinct combination of the members' other conjuncts that
  a tuple satisfies — and a query merges the regions it covers (a disjoint
  cover, Golab's thesis §8.3.3), or subtracts the others from the whole for
  SUM/COUNT (a disjoint supercover) when fewer;
* aggregates never prevent sharing: every aggregate of the pane path has pane
  partials (:data:`~slidewise.operators.aggregates.REGISTRY`; :func:`~slidewise.optimizer.pane_plan.match`
  admits no other), equal for equal :attr:`~slidewise.operators.aggregates.base.Accumulator.share_key`
  and attribute (SUM and AVG share (sum, count); COUNT DISTINCT, MEDIAN and QUANTILE
  share the frequency counts);
* windows and slides never prevent sharing: the shared panes are the grid of
  width ``s = gcd`` of every query's ``T + 1`` and ``D`` (:func:`pane_width`),
  on which every window of every query is a run of whole panes.

:func:`share` partitions queries into :class:`Group` s by these rules.
:data:`THESIS_RULES` names the thesis's state-sharing (SS1–SS4) and
computation-sharing (CS1–CS8) rules of §8.3–8.4; :func:`decisions` says which
of them a group applies, and the ones the engine cannot apply carry the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields, is_dataclass, replace
from math import gcd

from slidewise.optimizer.pane_plan import SlidingAggregate
from slidewise.plan.expr import And, Col, Expr, columns_of

__all__ = ["THESIS_RULES", "ThesisRule", "decisions", "COVERABLE", "RULES", "Group", "Member", "coverable", "pane_width", "share", "split_where", "why_not"]


def split_where(spec: SlidingAggregate) -> tuple[frozenset[Expr], Expr | None]:
    """``spec``'s WHERE as (conjuncts on tuples, the conjunction of those on the group keys alone or None);
    columns named by the stream, so equal conditions of queries with different aliases compare equal."""
    if spec.where is None:
        return frozenset(), None
    items = spec.where.items if isinstance(spec.where, And) else (spec.where,)
    keys = set(spec.keys)
    on_keys: list[Expr] = []
    on_tuples: list[Expr] = []
    for c in items:
        c = _plain(c, spec.source)
        (on_keys if columns_of(c) and {a for _, a in columns_of(c)} <= keys else on_tuples).append(c)
    return frozenset(on_tuples), _and(on_keys)


def _plain(e: Expr, name: str) -> Expr:
    """``e`` with every column named by the stream ``name`` (not its alias in the query), positions dropped."""
    if isinstance(e, Col):
        return Col(e.stream, e.attr, name)
    if is_dataclass(e) and isinstance(e, Expr):
        changes: dict[str, object] = {}
        for f in fields(e):
            v = getattr(e, f.name)
            if isinstance(v, Expr):
                changes[f.name] = _plain(v, name)
            elif isinstance(v, tuple) and v and all(isinstance(i, Expr) for i in v):
                changes[f.name] = tuple(_plain(i, name) for i in v)
        return replace(e, **changes) if changes else e
    return e


def _stream(a: SlidingAggregate, b: SlidingAggregate) -> str | None:
    return None if a.source == b.source else f"streams {a.source} and {b.source} differ"


def _keys(a: SlidingAggregate, b: SlidingAggregate) -> str | None:
    return None if a.keys == b.keys else f"GROUP BY {', '.join(a.keys) or '()'} and {', '.join(b.keys) or '()'} differ"


#: aggregates whose pane partials are columns per group that merge (and COUNT/SUM/AVG subtract): regions apply
COVERABLE = frozenset({"count", "sum", "avg", "min", "max"})
#: at most this many distinct residual predicates per synopsis (at most 2 ** MAX_COVER regions)
MAX_COVER = 8


def coverable(spec: SlidingAggregate) -> bool:
    """Whether ``spec`` may read a synopsis over a cover of its predicate (its partials merge per region)."""
    return all(a.func in COVERABLE and not a.distinct for a in spec.aggs)


def _predicate(a: SlidingAggregate, b: SlidingAggregate) -> str | None:
    ta, tb = split_where(a)[0], split_where(b)[0]
    if ta == tb or coverable(a) and coverable(b):
        return None
    return (
        "their WHERE conditions differ beyond conjuncts on the group keys, and not every aggregate is "
        "COUNT, SUM, AVG, MIN or MAX (whose partials a cover of the predicates can share)"
    )


#: the sharing rules: name -> test of two queries (None: the rule holds, else the reason it does not)
RULES = {"stream": _stream, "keys": _keys, "predicate": _predicate}


def why_not(a: SlidingAggregate, b: SlidingAggregate) -> list[str]:
    """The reasons two queries cannot share a synopsis (empty: they can)."""
    return [r for r in (rule(a, b) for rule in RULES.values()) if r is not None]


def pane_width(specs: Iterable[SlidingAggregate]) -> int:
    """The grid every window and slide of ``specs`` is whole on: gcd of every ``T + 1`` and ``D``."""
    return gcd(*(spec.pane for spec in specs))  # each query's own grid: SlidingAggregate.pane


@dataclass(frozen=True)
class Member:
    """A query answered from a shared synopsis: its name, its pane form and its group filter (or None)."""

    name: str
    spec: SlidingAggregate
    group_filter: Expr | None
    residual: Expr | None = None  # its conjuncts on tuples beyond the synopsis's common ones (a region test)


@dataclass
class Group:
    """Queries that share one synopsis: the stream, keys and the common tuple predicate (conjuncts)."""

    source: str
    keys: tuple[str, ...]
    where: frozenset[Expr]
    members: list[Member] = field(default_factory=list)
    covered: bool = False  # members' predicates may differ (coverable aggregates): regions of a cover

    def regions(self) -> list[Expr]:
        """The distinct residual predicates of the members (bit ``j`` of a tuple's region: the ``j``-th holds)."""
        return list(dict.fromkeys(m.residual for m in self.members if m.residual is not None))

    @property
    def pane(self) -> int:
        return pane_width(m.spec for m in self.members)

    def predicate(self) -> Expr | None:
        """The common conjuncts as one condition (None: every tuple)."""
        return _conj(self.where)

    def describe(self) -> str:
        where = self.predicate()
        return (
            f"{self.source}"
            + (f" WHERE {where}" if where is not None else "")
            + (f" GROUP BY {', '.join(self.keys)}" if self.keys else "")
            + f", pane s={self.pane}"
            + (f", regions of {len(self.regions())} predicates" if self.covered else "")
        )


def share(specs: dict[str, SlidingAggregate]) -> list[Group]:
    """Partition named pane-path queries into groups that share a synopsis (first query's order): a query
    joins the first group over its stream and keys whose members all have its predicate up to key
    conjuncts, or, if it and every member are :func:`coverable`, whose distinct predicates stay at most
    :data:`MAX_COVER` with its own (a cover; the group keeps their common conjuncts)."""
    groups: dict[tuple, list[Group]] = {}
    wheres: dict[str, frozenset[Expr]] = {}  # each query's conjuncts on tuples
    for name, spec in specs.items():
        tuples, on_keys = split_where(spec)
        wheres[name] = tuples
        cands = groups.setdefault((spec.source, spec.keys, spec.counted), [])  # count windows share with count windows only

        def fits(g: Group) -> bool:
            ws = {wheres[m.name] for m in g.members} | {tuples}
            return len(ws) == 1 or len(ws) <= MAX_COVER and all(coverable(m.spec) for m in g.members) and coverable(spec)

        g = next((c for c in cands if fits(c)), None)
        if g is None:
            g = Group(spec.source, spec.keys, tuples)
            cands.append(g)
        g.members.append(Member(name, spec, on_keys))
    order = {name: i for i, name in enumerate(specs)}
    out = sorted((g for gs in groups.values() for g in gs), key=lambda g: order[g.members[0].name])
    for g in out:
        g.where = frozenset.intersection(*(wheres[m.name] for m in g.members))
        g.members = [replace(m, residual=_conj(wheres[m.name] - g.where)) for m in g.members]
        g.covered = any(m.residual is not None for m in g.members)
        assert g.covered or not any(why_not(g.members[0].spec, m.spec) for m in g.members)
    return out


def _conj(items: frozenset[Expr]) -> Expr | None:
    """The conjunction of ``items`` in a fixed order (None: no item)."""
    return _and(sorted(items, key=str))


def _and(items: list[Expr]) -> Expr | None:
    return None if not items else items[0] if len(items) == 1 else And(tuple(items))


@dataclass(frozen=True)
class ThesisRule:
    """One sharing rule of Golab's thesis: its name, section, what it allows, and either a test of a
    :class:`Group` (it holds for the group) or ``not_applied``: why the engine cannot apply it."""

    name: str
    section: str
    allows: str
    holds: Callable[[Group], bool] | None = None
    not_applied: str | None = None


def _aggs(g: Group) -> list[tuple[Member, str, tuple | None]]:
    """Each member's aggregates as (member, function, (attribute, the member's residual predicate))."""
    return [(m, a.func, None if a.arg is None else (getattr(a.arg, "attr", None), m.residual)) for m in g.members for a in m.spec.aggs]


def _synopses(g: Group, kinds: tuple[str, ...]) -> int:
    """How many members probe a synopsis of ``kinds`` (COUNT(*) of every member: the running synopsis)."""
    return sum(1 for m in g.members if "running" in kinds or any(m.spec.synopsis(a) in kinds for a in m.spec.aggs))


def _ss2(g: Group) -> bool:
    """AVG(x) of one member and SUM(x) of another (over the same region set) read the same (sum, count)
    partials."""
    avg = {(id(m), x) for m, f, x in _aggs(g) if f == "avg"}
    return any(f == "sum" and x is not None and any(x == y and id(m) != i for i, y in avg) for m, f, x in _aggs(g))


def _cs3(g: Group) -> bool:
    """SS2 for an AVG(x) and a SUM(x) over the same window length (they probe the same window merges)."""
    lengths: dict[tuple, set[str]] = {}
    for m, f, x in _aggs(g):
        if f in ("avg", "sum") and x is not None:
            lengths.setdefault((m.spec.length, x), set()).add(f)
    return _ss2(g) and any(fs == {"avg", "sum"} for fs in lengths.values())


_JOINS = "aggregates over joins do not take the pane path (no generalized BIJ, IJ or RJ join synopses)"

#: Golab's thesis (§8.3.1–8.3.3, §8.4.3): the sharing rules by name, in the thesis's order
THESIS_RULES: dict[str, ThesisRule] = {
    r.name: r
    for r in [
        ThesisRule(
            "SS1",
            "8.3.1",
            "one synopsis (panes of width s) for queries whose aggregates need the same data per pane, over windows of n·s for any n",
            holds=lambda g: len(g.members) > 1,
        ),
        ThesisRule("SS2", "8.3.1", "AVG from the aligned sums and counts that SUM keeps", holds=_ss2),
        ThesisRule("SS3", "8.3.2", "a generalized join synopsis for aggregates over joins of different windows", not_applied=_JOINS),
        ThesisRule(
            "SS4",
            "8.3.3",
            "a query reads the synopses that cover its predicate (disjoint cover, or disjoint supercover with subtraction for SUM/COUNT)",
            holds=lambda g: g.covered,
        ),
        ThesisRule(
            "CS1",
            "8.3.1",
            "queries sharing a running or interval synopsis computed together (the prefix merges / dyadic intervals probed once per block)",
            holds=lambda g: _synopses(g, ("running", "interval")) > 1,
        ),
        ThesisRule("CS2", "8.3.1", "all queries over one basic interval synopsis computed together", holds=lambda g: _synopses(g, ("basic interval",)) > 1),
        ThesisRule("CS3", "8.3.1", "SUM and AVG over the same window computed together (SS2)", holds=_cs3),
        ThesisRule("CS4", "8.3.2", "queries over one generalized IJ or RJ synopsis computed together", not_applied=_JOINS),
        ThesisRule("CS5", "8.3.2", "all queries over one generalized BIJ synopsis computed together", not_applied=_JOINS),
        ThesisRule(
            "CS6",
            "8.3.3",
            "a covered query computed with the queries of its running/interval synopses",
            holds=lambda g: g.covered and _synopses(g, ("running", "interval")) > 1,
        ),
        ThesisRule(
            "CS7",
            "8.3.3",
            "a covered query computed with the queries of its basic interval synopses",
            holds=lambda g: g.covered and _synopses(g, ("basic interval",)) > 1,
        ),
        ThesisRule(
            "CS8",
            "8.4.3",
            "a query identical to another but for a longer period reads its output stream",
            not_applied="each query's evaluations are answered from the shared pane partials (SS1, CS1), not from another query's output",
        ),
    ]
}


def decisions(g: Group) -> list[str]:
    """The names of the thesis's rules that ``g`` applies (in :data:`THESIS_RULES` order)."""
    return [r.name for r in THESIS_RULES.values() if r.holds is not None and r.holds(g)]
