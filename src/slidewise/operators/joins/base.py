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
"""

from __future__ import annotations

import pickle
from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np

from slidewise.errors import PlanError
from slidewise.model.batch import NO_EXP, ResultBatch, StreamBatch, Tup
from slidewise.plan.query import JoinQuery


class JoinOperator(ABC):
    """Base class: hosts one multi-way window join; subclasses implement an algorithm."""

    #: registry name used by ``--algorithm``
    name: ClassVar[str] = ""
    #: one line for ``--help`` and explain
    summary: ClassVar[str] = ""

    def __init__(self, query: JoinQuery, *, order: list[int] | None = None,
                 negatives: bool = False, **options) -> None:
        self.check(query)
        self.query = query
        self.n = query.n
        self.order = list(order) if order is not None else list(range(query.n))
        if sorted(self.order) != list(range(query.n)):
            raise PlanError(f"join order {self.order} is not a permutation of the {query.n} streams",
                            hint="list every stream of FROM once, e.g. --order S2,S1,S3")
        self.negatives = negatives
        self.options = options
        self.comparisons = 0

    @classmethod  # noqa: B027 - an optional hook: the default accepts every query
    def check(cls, query: JoinQuery) -> None:
        """Raise :class:`PlanError` if this algorithm cannot evaluate ``query``."""

    @abstractmethod
    def process(self, chunk: list[StreamBatch]) -> ResultBatch:
        """Consume one chunk of arrivals; return the results produced by it."""

    def finish(self) -> ResultBatch:
        """End of input: return results still pending (lazy evaluation)."""
        return ResultBatch.empty(self.n)

    @abstractmethod
    def state_tuples(self) -> int:
        """Number of tuples currently held in window state (for memory stats)."""

    def snapshot(self) -> bytes:
        """The running state as bytes (pickle of every attribute but the query)."""
        return pickle.dumps({k: v for k, v in self.__dict__.items() if k != "query"},
                            protocol=pickle.HIGHEST_PROTOCOL)

    def load_snapshot(self, data: bytes) -> None:
        """Continue from :meth:`snapshot` of an operator built for the same query and options."""
        self.__dict__.update(pickle.loads(data))

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
