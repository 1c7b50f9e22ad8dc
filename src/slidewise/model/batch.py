"""Columnar batches of stream tuples and of join results.

Global processing order (docs/semantics.md) is ``(ts, arrival position)``. The engine
assigns every admitted tuple a global arrival rank ``pos`` (int64, unique,
increasing in processing order), so ``pos`` alone orders tuples; a tuple is
identified by its ``pos`` everywhere, including in join results.

* :class:`StreamBatch` – arrivals of one stream, columnar, ``pos`` increasing.
  The engine hands operators one ``StreamBatch`` per stream for each chunk of
  consecutive global positions.
* :class:`Tup` – one tuple as a small object, for the faithful per-tuple
  paper operators.
* :class:`ResultBatch` – join results, columnar: member positions (one column
  per joined stream), ``ts`` (origin ts), ``exp`` (min member exp), ``sign``
  and the member attribute columns named ``<stream>.<attr>``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: ``exp`` of a tuple (and of a result) that has no time-based expiration,
#: e.g. a member of a count-based window.
NO_EXP = np.iinfo(np.int64).max


@dataclass
class StreamBatch:
    """Arrivals of one stream in arrival order.

    ``cols`` holds the user attributes (``ts`` is separate); all arrays have
    the same length.
    """

    stream: int
    pos: np.ndarray
    ts: np.ndarray
    cols: dict[str, np.ndarray]
    sign: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.pos = np.asarray(self.pos, dtype=np.int64)
        self.ts = np.asarray(self.ts, dtype=np.int64)
        if self.sign is None:
            self.sign = np.ones(len(self.pos), dtype=np.int8)
        else:
            self.sign = np.asarray(self.sign, dtype=np.int8)

    def __len__(self) -> int:
        return len(self.pos)

    @classmethod
    def empty(cls, stream: int, columns: dict[str, np.dtype] | list[str]) -> StreamBatch:
        names = columns.items() if isinstance(columns, dict) else ((c, np.int64) for c in columns)
        return cls(stream, np.empty(0, np.int64), np.empty(0, np.int64), {c: np.empty(0, dt) for c, dt in names})

    def take(self, idx: np.ndarray | slice) -> StreamBatch:
        assert self.sign is not None  # set by __post_init__
        return StreamBatch(self.stream, self.pos[idx], self.ts[idx], {k: v[idx] for k, v in self.cols.items()}, self.sign[idx])

    def tuples(self) -> list[Tup]:
        """The batch as :class:`Tup` objects (attribute values as Python scalars)."""
        assert self.sign is not None  # set by __post_init__
        names = list(self.cols)
        columns = [self.cols[n].tolist() for n in names]
        rows = zip(*columns) if columns else ((),) * len(self)
        return [Tup(self.stream, p, t, s, dict(zip(names, vals))) for p, t, s, vals in zip(self.pos.tolist(), self.ts.tolist(), self.sign.tolist(), rows)]


@dataclass(slots=True)
class Tup:
    """One stream tuple: stream index, global position, event time, sign, attributes."""

    stream: int
    pos: int
    ts: int
    sign: int
    vals: dict[str, Any] = field(default_factory=dict)

    def get(self, attr: str) -> Any:
        """Attribute value; ``ts`` is an attribute too."""
        if attr == "ts":
            return self.ts
        return self.vals[attr]


def merge_in_order(batches: list[StreamBatch]) -> list[Tup]:
    """All tuples of one chunk (one batch per stream) as Tups in global order."""
    out = [t for b in batches for t in b.tuples()]
    out.sort(key=lambda t: t.pos)
    return out


@dataclass
class ResultBatch:
    """Join results (or their retractions, ``sign = -1``), columnar.

    ``members[:, i]`` is the ``pos`` of the member from stream ``i``;
    ``cols`` holds ``"<stream>.<attr>"`` columns (``<stream>.ts`` included).
    """

    members: np.ndarray
    ts: np.ndarray
    exp: np.ndarray
    sign: np.ndarray
    cols: dict[str, np.ndarray] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.ts)

    @classmethod
    def empty(cls, n_streams: int) -> ResultBatch:
        return cls(np.empty((0, n_streams), np.int64), np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.int8), {})

    @classmethod
    def concat(cls, parts: list[ResultBatch], n_streams: int) -> ResultBatch:
        parts = [p for p in parts if len(p)]
        if not parts:
            return cls.empty(n_streams)
        if len(parts) == 1:
            return parts[0]
        names = list(parts[0].cols)
        return cls(
            np.concatenate([p.members for p in parts]),
            np.concatenate([p.ts for p in parts]),
            np.concatenate([p.exp for p in parts]),
            np.concatenate([p.sign for p in parts]),
            {n: np.concatenate([p.cols[n] for p in parts]) for n in names},
        )

    def keys(self) -> list[tuple[tuple[int, ...], int, int, int]]:
        """``(members, ts, exp, sign)`` per result: the identity compared with the oracle."""
        return [(tuple(m), t, e, s) for m, t, e, s in zip(self.members.tolist(), self.ts.tolist(), self.exp.tolist(), self.sign.tolist())]
