"""How the Spark runner spreads a join over key buckets (the papers' hash buckets, distributed).

Every admitted tuple goes to one or more *buckets* ``0 .. P-1``; each bucket is
one key of the stateful join operator and hosts its own copy of the join
operator over the tuples it receives. A keying is correct when every result
has all its members in exactly one common bucket.

* ``hash`` — all streams equi-joined on one common attribute
  (``JoinQuery.key_columns()``), time windows: bucket = hash(key) mod P. Equal
  keys meet in one bucket; a result's members share its key.
* ``band`` — no common key, but band predicates ``ABS(Si.x - Sj.x) <= d``
  connect all streams (time windows): with width ``w`` = the largest ``d``,
  band cell ``c = floor(x / w)``; stream 0 (the *owner*) goes to cell ``c``
  only, stream ``j`` at ``h`` band hops from stream 0 is replicated to cells
  ``c-h .. c+h`` (``|x_j - x_0| <= h*w``). Bucket = cell mod P, each tuple at
  most once per bucket, so a result is found once: in its owner's bucket.
* ``single`` — everything in bucket 0 (one task): count windows (they count
  every arrival of a stream, a global order), theta predicates and joins on
  different attributes. Correct, not parallel; the run summary says so.

Hashing is ``pandas.util.hash_array`` (fixed key, the same in every process);
integer and float keys hash as float64 when the streams mix them (so 1 = 1.0).

>>> from slidewise.cql import parse
>>> k = choose_keying(parse("SELECT * FROM A [RANGE 5], B [RANGE 5] WHERE A.k = B.k"),
...                   [{"k": "int"}, {"k": "int"}], 4)
>>> k.mode, k.keys, k.key_kind
('hash', ('k', 'k'), 'int')
>>> rows, buckets = k.assign(0, np.array([1, 2]), {"k": np.array([7, 7])})
>>> rows.tolist(), bool(buckets[0] == buckets[1])
([0, 1], True)
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np
import pandas as pd

from slidewise.errors import PlanError
from slidewise.plan.expr import BinOp, Cmp, Col, Func, Lit
from slidewise.plan.query import JoinQuery

_NUMERIC = {"int", "float", "bool"}


@dataclass(frozen=True)
class Keying:
    """A keying strategy (see the module docstring) with its parameters."""

    mode: str                           # hash | band | single
    buckets: int
    keys: tuple[str, ...] = ()          # hash: join attribute per stream
    key_kind: str = "int"               # hash: int | float | str
    band: tuple[str, ...] = ()          # band: banded attribute per stream
    radius: tuple[int, ...] = ()        # band: replication radius (cells) per stream
    width: float = 1.0                  # band: cell width
    warnings: tuple[str, ...] = ()

    def describe(self) -> str:
        """One line for the run summary."""
        if self.mode == "hash":
            return f"hash of the join key mod {self.buckets} buckets"
        if self.mode == "band":
            return (f"band cells of width {self.width:g} mod {self.buckets} buckets, "
                    f"replicated ±{max(self.radius)} cells")
        return "one bucket (single task)"

    def assign(self, stream: int, ts: np.ndarray, cols: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """Rows of stream ``stream`` (repeated when replicated) and their buckets (int32)."""
        n = len(ts)
        rows = np.arange(n, dtype=np.int64)
        if self.mode == "single" or self.buckets == 1 or n == 0:
            return rows, np.zeros(n, np.int32)
        if self.mode == "hash":
            key = self.keys[stream]
            values = ts if key == "ts" else cols[key]
            return rows, self._hash(values)
        values = np.asarray(ts if self.band[stream] == "ts" else cols[self.band[stream]], dtype=np.float64)
        finite = np.isfinite(values)
        cell = np.zeros(n, np.int64)
        cell[finite] = np.floor(values[finite] / self.width).astype(np.int64)
        r = self.radius[stream] if finite.all() else 0
        if r == 0:
            return rows, np.mod(cell, self.buckets).astype(np.int32)
        spread = min(2 * r + 1, self.buckets)  # distinct buckets of cells c-r .. c+r
        offsets = np.arange(-r, -r + spread, dtype=np.int64)
        reps = np.where(finite, spread, 1)
        out_rows = np.repeat(rows, reps)
        start = np.concatenate(([0], np.cumsum(reps)[:-1]))
        k = np.arange(len(out_rows)) - np.repeat(start, reps)
        out_cell = np.repeat(cell, reps) + np.where(np.repeat(finite, reps), offsets[np.minimum(k, spread - 1)], 0)
        return out_rows, np.mod(out_cell, self.buckets).astype(np.int32)

    def _hash(self, values: np.ndarray) -> np.ndarray:
        if self.key_kind == "float":
            v = np.asarray(values, dtype=np.float64) + 0.0  # -0.0 hashes as 0.0
        elif self.key_kind == "int":
            v = np.asarray(values).astype(np.int64, copy=False)
        else:
            v = np.asarray(values, dtype=object)
        h = pd.util.hash_array(v, categorize=False)
        return (h % np.uint64(self.buckets)).astype(np.int32)


def choose_keying(query: JoinQuery, kinds: list[dict[str, str]], buckets: int) -> Keying:
    """The keying for ``query`` given each stream's column kinds and ``buckets`` (P)."""
    if query.n == 1:
        return Keying("single", 1)
    if query.has_count_windows:
        return Keying("single", 1, warnings=(
            "count windows depend on every arrival of their stream (a global order): "
            "the join runs in one key bucket (one task)",))
    keys = query.key_columns()
    if keys is not None:
        found = {"int" if a == "ts" else kinds[i].get(a, "int") for i, a in enumerate(keys)}
        if found <= _NUMERIC:
            kind = "float" if "float" in found else "int"
        elif found == {"str"}:
            kind = "str"
        else:
            raise PlanError(f"the join attribute has different types in different streams ({', '.join(sorted(found))})",
                            hint="give the join columns one type in every source")
        return Keying("hash", buckets, keys=tuple(keys), key_kind=kind)
    band = _band(query, kinds)
    if band is not None:
        attrs, radius, width = band
        return Keying("band", buckets, band=attrs, radius=radius, width=width)
    why = ("joins on different attributes" if query.equalities else "theta predicates without a common key")
    return Keying("single", 1, warnings=(
        f"{why}: the join runs in one key bucket (one task); per-edge keying is not implemented",))


def _band(query: JoinQuery, kinds: list[dict[str, str]]):
    """``(attribute per stream, radius per stream, width)`` if band predicates span all streams."""
    edges = []
    for f in query.filters:
        e = _band_edge(f)
        if e is not None:
            edges.append(e)
    attrs: dict[int, str] = {}
    adj: dict[int, set[int]] = {i: set() for i in range(query.n)}
    for i, x, j, y, _d in edges:
        for s, a in ((i, x), (j, y)):
            if attrs.setdefault(s, a) != a:
                return None
            if a != "ts" and kinds[s].get(a) not in ("int", "float"):
                return None
        adj[i].add(j)
        adj[j].add(i)
    if len(attrs) != query.n:
        return None
    hops = {0: 0}
    todo = deque([0])
    while todo:
        s = todo.popleft()
        for t in adj[s]:
            if t not in hops:
                hops[t] = hops[s] + 1
                todo.append(t)
    if len(hops) != query.n:
        return None
    width = float(max(d for *_, d in edges)) or 1.0
    return tuple(attrs[i] for i in range(query.n)), tuple(hops[i] for i in range(query.n)), width


def _band_edge(f):
    """``(i, x, j, y, d)`` for ``ABS(Si.x - Sj.y) <= d`` (or ``<``, or mirrored), else None."""
    if not isinstance(f, Cmp):
        return None
    if f.op in ("<=", "<"):
        lhs, rhs = f.left, f.right
    elif f.op in (">=", ">"):
        lhs, rhs = f.right, f.left
    else:
        return None
    if not (isinstance(rhs, Lit) and isinstance(rhs.value, (int, float)) and rhs.value >= 0):
        return None
    if not (isinstance(lhs, Func) and lhs.name == "abs" and len(lhs.args) == 1):
        return None
    diff = lhs.args[0]
    if not (isinstance(diff, BinOp) and diff.op == "-" and isinstance(diff.left, Col)
            and isinstance(diff.right, Col) and diff.left.stream != diff.right.stream):
        return None
    return diff.left.stream, diff.left.attr, diff.right.stream, diff.right.attr, float(rhs.value)
