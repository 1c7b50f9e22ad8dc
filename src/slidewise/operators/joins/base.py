"""The contract every multi-way window join operator implements.

An operator is built for one :class:`~slidewise.plan.query.JoinQuery`. The
engine feeds it consecutive *chunks* of arrivals — one
:class:`~slidewise.model.batch.StreamBatch` per stream, together covering a
contiguous range of global positions — via :meth:`JoinOperator.process`, and
calls :meth:`JoinOperator.finish` once at the end of the input. Both return a
:class:`~slidewise.model.batch.ResultBatch`.

Semantics (docs/semantics.md): a result is one tuple per stream; its origin is the
member with the greatest ``pos``; it is produced iff all predicates hold and
every other member is in its window at the origin's time. Eager operators
produce it when the origin is processed; lazy operators (``query.slide = D``)
at the evaluation instant ``ceil(origin.ts / D) * D``, or at :meth:`finish`.

Every operator counts ``comparisons``: attribute comparisons made while
probing (the papers' cost unit; timestamp checks are not counted).

:meth:`JoinOperator.snapshot` / :meth:`JoinOperator.load_snapshot` move an
operator's running state (windows, held-back arrivals, counters) to bytes and
back, so an engine can keep it between calls (the Spark runner stores it in a
state store per key bucket); a restored operator continues exactly as the
original would.

Facts. Each operator class carries what the planner, the cost model,
``explain`` and the oracle tests need to know about it, as class attributes
(:class:`JoinOperator`): applicability (:meth:`~JoinOperator.check`), planner
preference, the cost formula family and its options, the stand-in model of an
algorithm without one, and its result semantics. Nothing else lists algorithms
by name; registering a class (:func:`slidewise.operators.joins.register`) gets
it planned, costed, explained and oracle-tested.
"""

from __future__ import annotations

import pickle
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import ClassVar

import numpy as np

from slidewise.errors import PlanError
from slidewise.model.batch import NO_EXP, ResultBatch, StreamBatch, Tup
from slidewise.plan.query import JoinQuery


class Snapshots:
    """An operator's running state as bytes, for engines that keep it between calls (Spark's buckets)."""

    def snapshot(self) -> bytes:
        """The running state as bytes (pickle of every attribute but the query)."""
        return pickle.dumps({k: v for k, v in self.__dict__.items() if k != "query"}, protocol=pickle.HIGHEST_PROTOCOL)

    def load_snapshot(self, data: bytes) -> None:
        """Continue from :meth:`snapshot` of an operator built for the same query and options."""
        self.__dict__.update(pickle.loads(data))


class JoinOperator(Snapshots, ABC):
    """Base class: hosts one multi-way window join; subclasses implement an algorithm."""

    #: registry name used by ``--algorithm``
    name: ClassVar[str] = ""
    #: one line for ``--help`` and explain
    summary: ClassVar[str] = ""

    # -- facts (module docstring); ``preference`` and ``compared`` are not inherited --
    #: planner rank per evaluation mode (``"eager"``: no SLIDE, ``"lazy"``: SLIDE): without
    #: ``--algorithm`` the lowest-ranked algorithm whose ``check()`` accepts the query runs;
    #: a mode left out is never chosen automatically
    preference: ClassVar[Mapping[str, int]] = {}
    #: ``explain`` prices this algorithm's best order beside the chosen plan in these modes, by rank
    compared: ClassVar[Mapping[str, int]] = {}
    #: cost formula family (:data:`slidewise.optimizer.cost.FAMILIES`): ``"probe"`` (new tuple
    #: first, then the global order), ``"naive"`` (one order for every origin) or ``"general"``
    #: (one order per origin; the planner passes them as the ``orders`` option)
    cost_family: ClassVar[str] = "probe"
    #: registered algorithms whose cost model prices this one, ``(eager, lazy)``;
    #: ``None`` in a mode: no cost model (the optimizer rules are skipped); unset: itself
    priced_as: ClassVar[tuple[str | None, str | None] | None] = None
    #: windows are hash tables: the model prices bucket probes, the optimizer allocates buckets
    hashed: ClassVar[bool] = False
    #: lazy probes once per distinct value among the new tuples (Golab's thesis Alg. 4/5)
    grouped: ClassVar[bool] = False
    #: lazy windows are modelled as the operator keeps them (purged at each evaluation),
    #: not as the papers' T+τ (:data:`slidewise.optimizer.cost.LAZY_WINDOWS`)
    operator_windows: ClassVar[bool] = False
    #: result semantics under SLIDE: ``True`` restore, ``False`` no-restore, ``None`` the query's
    restores: ClassVar[bool | None] = None
    #: evaluation modes in which the answer is exact (the oracle tests hold it to the oracle there)
    exact: ClassVar[frozenset[str]] = frozenset({"eager", "lazy"})

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        for fact in ("preference", "compared"):  # ranks belong to one class, not its subclasses
            if fact not in cls.__dict__:
                setattr(cls, fact, {})

    def __init__(self, query: JoinQuery, *, order: list[int] | None = None, negatives: bool = False, **options) -> None:
        self.check(query)
        self.query = query
        self.n = query.n
        self.order = list(order) if order is not None else list(range(query.n))
        if sorted(self.order) != list(range(query.n)):
            raise PlanError(f"join order {self.order} is not a permutation of the {query.n} streams", hint="list every stream of FROM once, e.g. --order S2,S1,S3")
        self.negatives = negatives
        self.options = options
        self.comparisons = 0

    @classmethod  # noqa: B027 - an optional hook: the default accepts every query
    def check(cls, query: JoinQuery) -> None:
        """Raise :class:`PlanError` if this algorithm cannot evaluate ``query``."""

    @classmethod
    def order_filter(cls, query: JoinQuery) -> Callable[[Sequence[int]], bool] | None:
        """Which global orders it can run ``query`` in (``None``: every order)."""
        return None

    @classmethod
    def model_name(cls, query: JoinQuery) -> str | None:
        """The algorithm whose cost formulas price this one for ``query`` (:attr:`priced_as`)."""
        if cls.priced_as is None:
            return cls.name
        return cls.priced_as[1] if query.slide else cls.priced_as[0]

    @abstractmethod
    def process(self, chunk: list[StreamBatch]) -> ResultBatch:
        """Consume one chunk of arrivals; return the results produced by it."""

    def finish(self) -> ResultBatch:
        """End of input: return results still pending (lazy evaluation)."""
        return ResultBatch.empty(self.n)

    @abstractmethod
    def state_tuples(self) -> int:
        """Number of tuples currently held in window state (for memory stats)."""

    def origin_order(self, origin: int) -> list[int]:
        """Probe order for tuples arriving on ``origin``: the origin first, then the global order."""
        return [origin] + [s for s in self.order if s != origin]


class ResultBuilder:
    """Collects per-tuple results and builds a columnar :class:`ResultBatch`.

    ``members`` are :class:`Tup` objects indexed by stream. ``ts`` defaults to
    the origin's (greatest ``pos``) timestamp and ``exp`` to the minimum member
    expiration under each stream's window; both are computed in columns by
    :meth:`build`, so adding a result costs one append.
    """

    def __init__(self, query: JoinQuery):
        self.query = query
        #: per stream: window length T added to a member's ts, or None (no expiry: count, unbounded)
        self._lengths = [None if s.window.exp(0) == NO_EXP else s.window.length for s in query.streams]
        self.rows: list[tuple[list[Tup], int | None, int]] = []

    def add(self, members: list[Tup], sign: int = 1, ts: int | None = None) -> None:
        self.rows.append((members, ts, sign))

    def __len__(self) -> int:
        return len(self.rows)

    def build(self) -> ResultBatch:
        n = self.query.n
        if not self.rows:
            return ResultBatch.empty(n)
        rows = self.rows
        members = np.array([[m.pos for m in r[0]] for r in rows], dtype=np.int64)
        cols: dict[str, np.ndarray] = {}
        exp = np.full(len(rows), NO_EXP, dtype=np.int64)
        member_ts = []
        for i, ref in enumerate(self.query.streams):
            tups = [r[0][i] for r in rows]
            ts_i = cols[f"{ref.alias}.ts"] = np.array([t.ts for t in tups], dtype=np.int64)
            member_ts.append(ts_i)
            if self._lengths[i] is not None:
                np.minimum(exp, ts_i + self._lengths[i], out=exp)
            for attr in tups[0].vals:
                cols[f"{ref.alias}.{attr}"] = np.array([t.vals[attr] for t in tups])
        given = [r[1] for r in rows]
        if None in given:
            origin_ts = np.column_stack(member_ts)[np.arange(len(rows)), members.argmax(1)].tolist()
            given = [o if t is None else t for t, o in zip(given, origin_ts)]
        ts = np.array(given, dtype=np.int64)
        out = ResultBatch(members, ts, exp, np.array([r[2] for r in rows], dtype=np.int8), cols)
        self.rows = []
        return out
