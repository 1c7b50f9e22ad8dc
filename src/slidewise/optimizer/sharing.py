"""Which periodic GROUP BY queries share one pane synopsis (Golab's thesis, ch. 8: shared synopses
for many periodic queries over one stream).

Queries of the pane path (:class:`~slidewise.optimizer.pane_plan.SlidingAggregate`)
share one buffer and one set of pane partials when every rule of
:data:`RULES` holds for them; each rule is a function of two queries that
returns None (holds) or why not:

* ``stream`` — they read the same stream;
* ``keys`` — they group by the same key attributes, in the same order;
* ``predicate`` — their WHERE conditions select the same tuples up to
  conjuncts on the group keys alone (a *cover*: the shared synopsis keeps
  every group of the common predicate, and such a conjunct picks whole
  groups, applied to the answer as a group filter);
* ``aggregates`` — every aggregate has pane partials (:data:`~slidewise.operators.aggregates.REGISTRY`),
  equal for equal :attr:`~slidewise.operators.aggregates.base.Accumulator.share_key`
  and attribute (SUM and AVG share (sum, count); COUNT DISTINCT, MEDIAN and QUANTILE
  share the frequency counts);
* windows and slides never prevent sharing: the shared panes are the grid of
  width ``s = gcd`` of every query's ``T + 1`` and ``D`` (:func:`pane_width`),
  on which every window of every query is a run of whole panes.

:func:`share` partitions queries into :class:`Group` s by these rules.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, fields, is_dataclass, replace
from math import gcd

from slidewise.optimizer.pane_plan import SlidingAggregate
from slidewise.plan.expr import And, Col, Expr, columns_of

__all__ = ["RULES", "Group", "Member", "pane_width", "share", "split_where", "why_not"]


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
    group = None if not on_keys else on_keys[0] if len(on_keys) == 1 else And(tuple(on_keys))
    return frozenset(on_tuples), group


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


def _predicate(a: SlidingAggregate, b: SlidingAggregate) -> str | None:
    ta, tb = split_where(a)[0], split_where(b)[0]
    if ta == tb:
        return None
    return "their WHERE conditions differ beyond conjuncts on the group keys"


def _aggregates(a: SlidingAggregate, b: SlidingAggregate) -> str | None:
    return None   # every aggregate of the pane path has pane partials (match() admits registry aggregates only)


#: the sharing rules: name -> test of two queries (None: the rule holds, else the reason it does not)
RULES = {"stream": _stream, "keys": _keys, "predicate": _predicate, "aggregates": _aggregates}


def why_not(a: SlidingAggregate, b: SlidingAggregate) -> list[str]:
    """The reasons two queries cannot share a synopsis (empty: they can)."""
    return [r for r in (rule(a, b) for rule in RULES.values()) if r is not None]


def pane_width(specs: Iterable[SlidingAggregate]) -> int:
    """The grid every window and slide of ``specs`` is whole on: gcd of every ``T + 1`` and ``D``."""
    s = 0
    for spec in specs:
        s = gcd(gcd(s, spec.length + 1), spec.slide)
    return s


@dataclass(frozen=True)
class Member:
    """A query answered from a shared synopsis: its name, its pane form and its group filter (or None)."""

    name: str
    spec: SlidingAggregate
    group_filter: Expr | None


@dataclass
class Group:
    """Queries that share one synopsis: the stream, keys and the common tuple predicate (conjuncts)."""

    source: str
    keys: tuple[str, ...]
    where: frozenset[Expr]
    members: list[Member] = field(default_factory=list)

    @property
    def pane(self) -> int:
        return pane_width(m.spec for m in self.members)

    def predicate(self) -> Expr | None:
        items = sorted(self.where, key=str)
        return None if not items else items[0] if len(items) == 1 else And(tuple(items))

    def describe(self) -> str:
        where = self.predicate()
        return (f"{self.source}" + (f" WHERE {where}" if where is not None else "")
                + (f" GROUP BY {', '.join(self.keys)}" if self.keys else "") + f", pane s={self.pane}")


def share(specs: dict[str, SlidingAggregate]) -> list[Group]:
    """Partition named pane-path queries into groups that share a synopsis (first query's order)."""
    groups: dict[tuple[str, tuple[str, ...], frozenset[Expr]], Group] = {}
    for name, spec in specs.items():
        tuples, on_keys = split_where(spec)
        key = (spec.source, spec.keys, tuples)
        g = groups.get(key)
        if g is None:
            g = groups[key] = Group(spec.source, spec.keys, tuples)
        else:
            assert not why_not(g.members[0].spec, spec)
        g.members.append(Member(name, spec, on_keys))
    return list(groups.values())
