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
* ``grid`` — equi-joins on different attributes (``S1.a = S2.a AND S2.x =
  S3.x``), keyed per join edge: the equalities' columns fall into attribute
  classes (``{S1.a, S2.a}``, ``{S2.x, S3.x}``), each class ``c`` is one
  dimension of a grid of ``p_c`` hash buckets (``P = prod p_c``; the
  "shares" of a hypercube join). A tuple's coordinate along ``c`` is
  hash(its ``c`` attribute) mod ``p_c``; a stream without an attribute in
  ``c`` is replicated along that dimension. The members of a result agree on
  every class's value, so they all meet in exactly one cell — the one of
  those values — and each result is found once, in one bucket, by the same
  multi-way operator; no intermediate result is materialised.
* ``single`` — everything in bucket 0 (one task): count windows (they count
  every arrival of a stream, a global order) and theta predicates without
  any equality or band. Correct, not parallel; the run summary says so.

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

    mode: str  # hash | band | single
    buckets: int
    keys: tuple[str, ...] = ()  # hash: join attribute per stream
    key_kind: str = "int"  # hash: int | float | str
    band: tuple[str, ...] = ()  # band: banded attribute per stream
    radius: tuple[int, ...] = ()  # band: replication radius (cells) per stream
    width: float = 1.0  # band: cell width
    dims: tuple[int, ...] = ()  # grid: buckets per attribute class
    coords: tuple[tuple[tuple[int, str], ...], ...] = ()  # grid: per stream, (class, attribute) pairs
    class_kinds: tuple[str, ...] = ()  # grid: int | float | str per class
    classes: tuple[str, ...] = ()  # grid: the classes as text, for the run summary
    warnings: tuple[str, ...] = ()

    def describe(self) -> str:
        """One line for the run summary."""
        if self.mode == "hash":
            return f"hash of the join key mod {self.buckets} buckets"
        if self.mode == "grid":
            return (
                f"per join edge: a {' x '.join(map(str, self.dims))} grid of buckets, one dimension per "
                f"join attribute ({'; '.join(self.classes)}), replicated along the others"
            )
        if self.mode == "band":
            return f"band cells of width {self.width:g} mod {self.buckets} buckets, replicated ±{max(self.radius)} cells"
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
            return rows, _hash(values, self.key_kind, self.buckets)
        if self.mode == "grid":
            return self._grid(stream, rows, ts, cols)
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

    def _grid(self, stream: int, rows: np.ndarray, ts: np.ndarray, cols: dict[str, np.ndarray]):
        """Cell of each tuple along its own classes; all cells along the classes it lacks."""
        strides = np.cumprod((1,) + self.dims[:-1]).astype(np.int64)
        base = np.zeros(len(rows), np.int64)
        have = set()
        for c, attr in self.coords[stream]:
            values = ts if attr == "ts" else cols[attr]
            base += _hash(values, self.class_kinds[c], self.dims[c]).astype(np.int64) * strides[c]
            have.add(c)
        spread = np.zeros(1, np.int64)
        for c, p in enumerate(self.dims):
            if c not in have and p > 1:
                spread = (spread[:, None] + np.arange(p, dtype=np.int64) * strides[c]).ravel()
        if len(spread) == 1:
            return rows, (base + spread[0]).astype(np.int32)
        return (np.repeat(rows, len(spread)), (np.repeat(base, len(spread)) + np.tile(spread, len(rows))).astype(np.int32))


def _hash(values: np.ndarray, kind: str, buckets: int) -> np.ndarray:
    """``hash(value) mod buckets`` (int32), the same in every process; int and float agree (1 = 1.0)."""
    if buckets == 1:
        return np.zeros(len(values), np.int32)
    if kind == "float":
        v = np.asarray(values, dtype=np.float64) + 0.0  # -0.0 hashes as 0.0
    elif kind == "int":
        v = np.asarray(values).astype(np.int64, copy=False)
    else:
        v = np.asarray(values, dtype=object)
    h = pd.util.hash_array(v, categorize=False)
    return (h % np.uint64(buckets)).astype(np.int32)


def _key_kind(found: set[str]) -> str:
    if found <= _NUMERIC:
        return "float" if "float" in found else "int"
    if found == {"str"}:
        return "str"
    raise PlanError(f"the join attribute has different types in different streams ({', '.join(sorted(found))})", hint="give the join columns one type in every source")


def choose_keying(query: JoinQuery, kinds: list[dict[str, str]], buckets: int) -> Keying:
    """The keying for ``query`` given each stream's column kinds and ``buckets`` (P)."""
    if query.n == 1:
        return Keying("single", 1)
    if query.has_count_windows:
        return Keying("single", 1, warnings=("count windows depend on every arrival of their stream (a global order): the join runs in one key bucket (one task)",))
    keys = query.key_columns()
    if keys is not None:
        kind = _key_kind({"int" if a == "ts" else kinds[i].get(a, "int") for i, a in enumerate(keys)})
        return Keying("hash", buckets, keys=tuple(keys), key_kind=kind)
    band = _band(query, kinds)
    if band is not None:
        attrs, radius, width = band
        return Keying("band", buckets, band=attrs, radius=radius, width=width)
    if query.equalities:
        return _grid(query, kinds, buckets)
    return Keying("single", 1, warnings=("theta predicates without an equality or band: the join runs in one key bucket (one task)",))


def _grid(query: JoinQuery, kinds: list[dict[str, str]], buckets: int) -> Keying:
    """Per-edge keying: one grid dimension per attribute class of the equalities."""
    parent: dict[tuple[int, str], tuple[int, str]] = {}

    def find(x):
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for eq in query.equalities:
        parent[find((eq.left.stream, eq.left.attr))] = find((eq.right.stream, eq.right.attr))
    groups: dict[tuple[int, str], list[tuple[int, str]]] = {}
    for col in sorted(parent):
        groups.setdefault(find(col), []).append(col)
    classes = sorted(groups.values())
    dims = _shares(buckets, len(classes))
    coords = []
    for i in range(query.n):
        mine = []
        for c, members in enumerate(classes):
            attrs = sorted(a for s, a in members if s == i)
            if attrs:
                mine.append((c, attrs[0]))  # a result has equal values in all of them
        coords.append(tuple(mine))
    class_kinds = tuple(_key_kind({"int" if a == "ts" else kinds[s].get(a, "int") for s, a in members}) for members in classes)
    text = tuple(" = ".join(f"{query.aliases[s]}.{a}" for s, a in members) for members in classes)
    return Keying("grid", int(np.prod(dims)), dims=dims, coords=tuple(coords), class_kinds=class_kinds, classes=text)


def _shares(buckets: int, k: int) -> tuple[int, ...]:
    """``buckets`` split into ``k`` factors (prime factors, largest first, to the smallest share)."""
    factors, n, f = [], max(1, buckets), 2
    while f * f <= n:
        while n % f == 0:
            factors.append(f)
            n //= f
        f += 1
    if n > 1:
        factors.append(n)
    dims = [1] * k
    for f in sorted(factors, reverse=True):
        j = dims.index(min(dims))
        dims[j] *= f
    return tuple(dims)


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
    if not (isinstance(diff, BinOp) and diff.op == "-" and isinstance(diff.left, Col) and isinstance(diff.right, Col) and diff.left.stream != diff.right.stream):
        return None
    return diff.left.stream, diff.left.attr, diff.right.stream, diff.right.attr, float(rhs.value)


def spark_hash_int(value: int, seed: int = 42) -> int:
    """Spark's ``hash()`` of an ``int`` value (Murmur3 x86 32-bit, ``Murmur3_x86_32.hashInt``): what its
    hash partitioning of a grouping key computes."""
    m = 0xFFFFFFFF

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & m

    k = rotl((value & m) * 0xCC9E2D51 & m, 15) * 0x1B873593 & m
    h = (rotl(seed ^ k, 13) * 5 + 0xE6546B64) & m
    h ^= 4
    h = (h ^ (h >> 16)) * 0x85EBCA6B & m
    h = (h ^ (h >> 13)) * 0xC2B2AE35 & m
    h ^= h >> 16
    return h - (1 << 32) if h >= 1 << 31 else h


def spread_keys(buckets: int) -> list[int]:
    """A grouping key per bucket ``b`` (increasing ints) that Spark's hash partitioning into ``buckets``
    partitions sends to partition ``b``: grouped by the bucket number itself, several buckets can share
    a partition (with 2, buckets 0 and 1 do) and run one after the other."""
    keys, v = [], 0
    for b in range(buckets):
        while spark_hash_int(v) % buckets != b:
            v += 1
        keys.append(v)
        v += 1
    return keys
