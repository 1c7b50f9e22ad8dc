"""Logical plans of general queries: relational operators over windows and relations.

Golab's thesis ch. 3: a persistent query is a tree of relational
operators whose leaves are sliding windows over streams, non-retroactive
relations (NRR) or retroactive tables. Definition 3.1 gives its meaning: the
answer ``Q(τ)`` at every instant τ is the relational query evaluated over the
current window contents and table states (an NRR row joins only stream tuples
arriving at or after its insertion — updates at a timestamp are applied before
stream tuples of the same timestamp). The output operator turns the answers
into a stream. Plain select–project–join queries keep their faster
:class:`~slidewise.plan.query.JoinQuery` path; everything else (DISTINCT,
GROUP BY, UNION, NOT EXISTS / EXCEPT, tables, subqueries, DSTREAM, RSTREAM,
WSTREAM) is one of these trees.

Columns: every node has an output ``schema`` (tuple of column names). A scan of
stream ``S1`` yields ``S1.ts`` and ``S1.<attr>``; a table ``R`` yields
``R.<attr>``; a subquery ``(...) AS X`` renames its columns to ``X.<last part>``
(``S1.a`` → ``X.a``, ``n`` → ``X.n``, ``SUM(S1.a)`` → ``X.SUM(S1.a)``); ``Project`` and ``Aggregate`` name
their columns by alias or expression text. Expressions are
:mod:`slidewise.plan.expr` trees whose ``Col(stream, attr, name)`` refers to
column ``f"{name}.{attr}"`` (``stream`` is the index of ``name`` in
:attr:`Plan.aliases`), so :func:`slidewise.plan.expr.evaluate` works with
``get = lambda s, a: row[schema.index(f"{aliases[s]}.{a}")]`` — see
:func:`column_getter`.

Output stream (``Output.kind``), for the answers ``Q(τ)`` at the evaluation
instants (every instant for eager plans; the multiples of ``slide`` for
periodic ones, up to ``ceil(last input ts / slide) * slide``):

* ``istream``: rows entering the answer (multiset ``Q(τ) − Q(τ⁻)``), sign +1;
  with ``restore`` and a slide, every row continuous evaluation would have
  inserted since the previous evaluation (short-lived ones included).
* ``dstream``: rows leaving the answer (``Q(τ⁻) − Q(τ)``), sign −1.
* ``rstream``: eager — both of the above (the changes that maintain the
  answer as a materialised view); periodic — the whole answer at each
  evaluation, sign +1 (``restore`` adds the short-lived rows).
* ``wstream``: the answer is a window (``Output.window``: ``ROWS n`` or
  ``RANGE t``) over the stream of inserted rows (the plan's ISTREAM); emitted
  as rows entering (+1) and leaving (−1) that window.

Every output row carries ``ts`` = the instant of the change and ``sign``.
Time ends at the last input timestamp (eager) or at the last evaluation
instant (periodic): nothing is flushed beyond it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import IntEnum

from slidewise.errors import PlanError
from slidewise.plan.expr import Col, Expr
from slidewise.plan.query import SelectItem, WindowSpec


class Pattern(IntEnum):
    """Update patterns of Golab's thesis §3.2.1, from simplest to most complex."""

    MONO = 0  # monotonic: results never expire
    WKS = 1  # weakest non-monotonic: expire FIFO, all after the same lifetime
    WK = 2  # weak non-monotonic: expiration time known at production
    STR = 3  # strict non-monotonic: some expirations depend on future input

    def __str__(self) -> str:
        return self.name


AGG_FUNCS = ("count", "sum", "avg", "min", "max", "median", "quantile", "topk", "approx_count_distinct", "approx_quantile")
OUTPUT_KINDS = ("istream", "dstream", "rstream", "wstream")
SCAN_KINDS = ("stream", "nrr", "table")


@dataclass(frozen=True, eq=False)
class Node:
    """Base of logical plan nodes. Nodes hash and compare by identity."""

    @property
    def children(self) -> tuple[Node, ...]:
        return ()

    @property
    def schema(self) -> tuple[str, ...]:
        raise NotImplementedError

    def label(self) -> str:
        """One-line description of this node alone (for explain)."""
        return type(self).__name__


#: the column of a changelog stream: +1 inserts the row, −1 retracts an earlier equal row
CHANGELOG = "sign"


@dataclass(frozen=True, eq=False)
class Scan(Node):
    """A leaf: a window over stream ``source`` (``kind="stream"``), or a relation.

    ``kind="nrr"``: non-retroactive relation (the default for ``--table``);
    ``kind="table"``: retroactive (``TABLE R`` in FROM). Relations have no
    window. ``columns`` are the source's attributes (without ``ts``), filled
    in by :func:`slidewise.plan.bind.bind`; ``None`` before. ``changelog``: the
    stream's source has a :data:`CHANGELOG` column (−1 rows retract an earlier
    equal row; docs/semantics.md, "Changelog inputs"), set by ``bind``.
    """

    alias: str
    source: str
    window: WindowSpec | None = None
    kind: str = "stream"
    columns: tuple[str, ...] | None = None
    changelog: bool = False

    def __post_init__(self) -> None:
        if self.kind not in SCAN_KINDS:
            raise PlanError(f"unknown scan kind {self.kind!r}", hint=f"use one of {SCAN_KINDS}")
        if (self.kind == "stream") != (self.window is not None):
            raise PlanError(
                f"{self.alias}: a stream needs a window and a relation has none", hint="write S [RANGE 10] for streams and TABLE R / --table R=PATH for relations"
            )

    @property
    def is_relation(self) -> bool:
        return self.kind != "stream"

    @property
    def schema(self) -> tuple[str, ...]:
        if self.columns is None:
            raise PlanError(f"the columns of {self.alias} are not known yet", hint="bind the plan to its sources")
        head = () if self.is_relation else (f"{self.alias}.ts",)
        return head + tuple(f"{self.alias}.{c}" for c in self.columns)

    def label(self) -> str:
        if self.kind == "stream":
            assert self.window is not None  # a stream has a window
            return f"Window {self.alias}{self.window}" + (" INTERNAL" if self.window.internal else "")
        return f"{'Table' if self.kind == 'table' else 'NRR'} {self.alias}"


@dataclass(frozen=True, eq=False)
class Unary(Node):
    """A node with one input, ``child``; by default its output has the child's schema."""

    child: Node

    @property
    def children(self) -> tuple[Node, ...]:
        return (self.child,)

    @property
    def schema(self) -> tuple[str, ...]:
        return self.child.schema


@dataclass(frozen=True, eq=False)
class Select(Unary):
    predicate: Expr

    def label(self) -> str:
        return f"Select {self.predicate}"


@dataclass(frozen=True, eq=False)
class Project(Unary):
    """Evaluates ``items`` per row; ``SelectItem(Col(i, '*', alias))`` keeps all of ``alias.*``."""

    items: tuple[SelectItem, ...]

    @property
    def schema(self) -> tuple[str, ...]:
        out: list[str] = []
        for item in self.items:
            if isinstance(item.expr, Col) and item.expr.attr == "*":
                prefix = f"{item.expr.name}."
                out += [c for c in self.child.schema if c.startswith(prefix)]
            else:
                out.append(item.name)
        return tuple(out)

    def label(self) -> str:
        return "Project " + ", ".join(i.name if not (isinstance(i.expr, Col) and i.expr.attr == "*") else f"{i.expr.name}.*" for i in self.items)


@dataclass(frozen=True, eq=False)
class Join(Node):
    """Join of two or more inputs: ``equalities`` (pairs of columns) and other ``filters``."""

    inputs: tuple[Node, ...]
    equalities: tuple[tuple[Col, Col], ...] = ()
    filters: tuple[Expr, ...] = ()

    @property
    def children(self) -> tuple[Node, ...]:
        return self.inputs

    @property
    def schema(self) -> tuple[str, ...]:
        return tuple(c for i in self.inputs for c in i.schema)

    def label(self) -> str:
        conds = [f"{a} = {b}" for a, b in self.equalities] + [str(f) for f in self.filters]
        return "Join" + (" ON " + " AND ".join(conds) if conds else "")


@dataclass(frozen=True, eq=False)
class Union(Node):
    """Merge-union (bag union, UNION ALL) of inputs with the same arity; names from the first."""

    inputs: tuple[Node, ...]

    @property
    def children(self) -> tuple[Node, ...]:
        return self.inputs

    @property
    def schema(self) -> tuple[str, ...]:
        return self.inputs[0].schema

    def label(self) -> str:
        return "Union"


@dataclass(frozen=True, eq=False)
class Distinct(Unary):
    """Duplicate elimination over all columns of ``child``."""

    def label(self) -> str:
        return "Distinct"


@dataclass(frozen=True, eq=False)
class Negation(Node):
    """``left − right``.

    ``mode="anti"`` (NOT EXISTS): the left rows with no right row matching on
    every pair of ``on`` (left column, right column). ``mode="except"``
    (EXCEPT): bag difference over all columns, multiplicity
    ``max(0, m_left − m_right)``; ``on`` is empty. Output schema = left's.
    """

    left: Node
    right: Node
    on: tuple[tuple[Col, Col], ...] = ()
    mode: str = "anti"

    @property
    def children(self) -> tuple[Node, ...]:
        return (self.left, self.right)

    @property
    def schema(self) -> tuple[str, ...]:
        return self.left.schema

    def label(self) -> str:
        if self.mode == "except":
            return "Negation EXCEPT"
        return "Negation NOT EXISTS ON " + " AND ".join(f"{a} = {b}" for a, b in self.on)


@dataclass(frozen=True)
class AggCall:
    """``func(arg)``; ``arg=None`` is ``COUNT(*)``; ``distinct`` is ``COUNT(DISTINCT arg)`` etc.;
    ``param`` the literal second argument (the fraction p of ``QUANTILE(x, p)``; 0.5 for MEDIAN)."""

    func: str
    arg: Expr | None = None
    distinct: bool = False
    alias: str | None = None
    pos: tuple[int, int] | None = field(default=None, compare=False, repr=False)  # query line, column
    param: float | None = None  # the literal parameter: p of QUANTILE(x, p) (0.5 for MEDIAN), k of TOPK(k, x)

    def __post_init__(self) -> None:
        if self.func not in AGG_FUNCS:
            raise PlanError(f"unknown aggregate {self.func!r}", hint=f"use one of {', '.join(AGG_FUNCS)}")

    @property
    def name(self) -> str:
        if self.alias:
            return self.alias
        inner = "*" if self.arg is None else str(self.arg)
        if self.func == "topk":
            return f"TOPK({self.param:g}, {inner})"
        extra = f", {self.param:g}" if self.func in ("quantile", "approx_quantile") else ""
        return f"{self.func.upper()}({'DISTINCT ' if self.distinct else ''}{inner}{extra})"


@dataclass(frozen=True, eq=False)
class Aggregate(Unary):
    """GROUP BY ``keys`` with aggregates ``aggs``: one row per non-empty group.

    Without keys there is one group; it has a row only while its input is
    non-empty. A group's new row replaces its previous row (Golab's thesis §3.5.2).
    AVG is a float; SUM/MIN/MAX keep the input type; COUNT is int64.
    Output schema: key names then aggregate names.
    """

    keys: tuple[SelectItem, ...] = ()
    aggs: tuple[AggCall, ...] = ()

    @property
    def schema(self) -> tuple[str, ...]:
        return tuple(k.name for k in self.keys) + tuple(a.name for a in self.aggs)

    def label(self) -> str:
        keys = ", ".join(k.name for k in self.keys)
        return f"Aggregate {', '.join(a.name for a in self.aggs)}" + (f" GROUP BY {keys}" if keys else "")


@dataclass(frozen=True, eq=False)
class Subquery(Node):
    """A subquery in FROM, renamed to ``alias``; ``window`` (if any) is over its output stream.

    A window over a subquery's output needs a monotonic (append-only) output:
    the subquery's windows must be INTERNAL.
    """

    alias: str
    child: Node
    window: WindowSpec | None = None

    @property
    def children(self) -> tuple[Node, ...]:
        return (self.child,)

    @property
    def schema(self) -> tuple[str, ...]:
        return tuple(f"{self.alias}.{_last_part(c)}" for c in self.child.schema)

    def label(self) -> str:
        return f"Subquery {self.alias}" + (str(self.window) if self.window else "")


@dataclass(frozen=True, eq=False)
class Output(Unary):
    """The root: how the answers become a stream (see the module docstring).

    ``slide``: periodic evaluation interval (from the windows' SLIDE), or None.
    ``window``: for ``wstream`` only, ``ROWS n`` or ``RANGE t``.
    ``count_slide``: a count window's SLIDE (``[ROWS n SLIDE m]``): evaluated after every m-th arrival
    of the stream (docs/semantics.md, "Output streams"); only the pane path runs such a plan.
    """

    kind: str = "istream"
    restore: bool = False
    slide: int | None = None
    window: WindowSpec | None = None
    text: str = field(default="", compare=False)
    count_slide: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in OUTPUT_KINDS:
            raise PlanError(f"unknown output operator {self.kind!r}", hint=f"use one of {OUTPUT_KINDS}")
        if (self.kind == "wstream") != (self.window is not None):
            raise PlanError("WSTREAM needs a window and only WSTREAM takes one", hint="write SELECT WSTREAM(*)[ROWS 10] FROM ...")
        if self.kind == "wstream" and self.restore:
            raise PlanError(
                "WSTREAM has no restore form: a window over the output is not compatible with periodic re-evaluation (Golab's thesis §3.4)",
                hint="use ISTREAM_RESTORE or RSTREAM_RESTORE, or drop SLIDE",
            )

    def label(self) -> str:
        name = self.kind.upper() + ("_RESTORE" if self.restore else "")
        every = f" every {self.slide}" if self.slide else f" every {self.count_slide} arrivals" if self.count_slide else ""
        return name + (str(self.window) if self.window else "") + every


@dataclass(frozen=True)
class Plan:
    """A bound or unbound logical plan: the root and the aliases ``Col.stream`` indexes."""

    root: Output
    aliases: tuple[str, ...]
    text: str = field(default="", compare=False)

    def scans(self) -> list[Scan]:
        return [n for n in walk(self.root) if isinstance(n, Scan)]


def _last_part(column: str) -> str:
    """``S1.a`` -> ``a``; names that are not qualified columns (``n``, ``SUM(S1.a)``) stay whole."""
    head, dot, tail = column.partition(".")
    return tail if dot and head.isidentifier() and tail.isidentifier() else column


def walk(node: Node) -> Iterator[Node]:
    """All nodes of a tree, parents before children."""
    yield node
    for c in node.children:
        yield from walk(c)


def column_getter(schema: tuple[str, ...], aliases: tuple[str, ...]) -> Callable[[Sequence[object]], Callable[[int, str], object]]:
    """``make(row) -> get`` for :func:`~slidewise.plan.expr.evaluate` over rows of ``schema``.

    >>> make = column_getter(("S1.ts", "S1.a"), ("S1",))
    >>> make((5, 7))(0, "a")
    7
    """
    index = {c: i for i, c in enumerate(schema)}
    aliases = tuple(aliases)

    def make(row: Sequence[object]) -> Callable[[int, str], object]:
        return lambda s, a: row[index[f"{aliases[s]}.{a}"] if s >= 0 else index[a]]

    return make
