"""Stream statistics for the cost model: arrival rate λ, window size, distinct values v.

The per-unit-time cost model (:mod:`slidewise.optimizer.cost`; Golab & Özsu,
VLDB 2003 long version, §4 and App. A; Golab's thesis,
§5.3.1) needs, per stream reference of FROM: its arrival rate λ_i in tuples
per time unit of the timestamps, its window (T_i time units or N_i rows,
taken from the query) and the number of distinct values v_i of each of its
join attributes. They come from one of three places:

* **declared** on the command line, ``--stats S1:rate=10,distinct=500``
  (:func:`parse_stats`). Fields: ``rate``, ``distinct`` (every join attribute
  of the stream), ``distinct.<attr>`` (one attribute), ``window`` (overrides
  the window size, e.g. for ``[UNBOUNDED]``). Once any ``--stats`` is given,
  every stream needs a rate, and a distinct count if it is joined on an
  attribute; a bad or incomplete spec is an :class:`OptionError` naming the
  stream and the field.
* **default** (:func:`default_statistics`): the uniform assumptions — every
  stream arrives at one tuple per time unit and every join attribute has
  :data:`DEFAULT_DISTINCT` values, so only the windows tell streams apart.
* **measured** while a query runs (:class:`OnlineStats`): the engine calls
  :meth:`OnlineStats.observe` with every chunk; the estimates slide with the
  windows. The rate is arrivals over elapsed time in the last panes, and the
  distinct count a k-minimum-values sketch per pane (bounded memory: ``panes ×
  k`` hashes per attribute), merged over the panes that cover the window and
  turned into the size of the value domain the model needs (:func:`domain_size`).

>>> from slidewise.cql import load_query
>>> q = load_query("SELECT * FROM S1 [RANGE 100], S2 [ROWS 50] WHERE S1.a = S2.a")
>>> st = parse_stats(["S1:rate=10,distinct=500", "S2:rate=1,distinct=50"], q)
>>> st[0].tuples(), st[1].tuples(), st[0].v("a")
(1000.0, 50.0, 500.0)
>>> default_statistics(q)[0].rate
1.0
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from slidewise.errors import OptionError
from slidewise.model.batch import StreamBatch
from slidewise.plan.query import JoinQuery

__all__ = ["DEFAULT_DISTINCT", "OnlineStats", "Statistics", "StreamStats", "default_statistics", "domain_size", "join_attributes", "parse_stats", "resolve_statistics"]

#: distinct join values assumed per attribute when none are declared
DEFAULT_DISTINCT = 100.0
#: arrival rate assumed when none is declared (tuples per time unit)
DEFAULT_RATE = 1.0
#: time span standing in for the length of an ``[UNBOUNDED]`` window
UNBOUNDED_HORIZON = 1_000_000.0
FIELDS = ("rate", "distinct", "distinct.<attr>", "window")


@dataclass(frozen=True)
class StreamStats:
    """Statistics of one stream reference.

    ``window`` is T (time units) for time windows and N (rows) for count
    windows (``count=True``); ``partitions`` multiplies N for
    ``[PARTITION BY k ROWS N]``. ``distinct`` maps each join attribute to v.
    """

    alias: str
    rate: float
    window: float
    count: bool = False
    distinct: Mapping[str, float] = field(default_factory=dict)
    partitions: float = 1.0
    source: str = "declared"

    def tuples(self, tau: float = 0.0) -> float:
        """Expected window contents in tuples: λ·(T + τ), or N·partitions (+ λ·τ).

        ``tau`` is the lazy re-evaluation interval: between two evaluations a
        window holds up to τ time units of tuples more (Golab & Özsu App. A).
        """
        base = self.window * self.partitions if self.count else self.rate * self.window
        return base + self.rate * tau

    def v(self, attr: str | None = None) -> float:
        """Distinct values of ``attr`` (the smallest over the join attributes if ``None``)."""
        if attr is not None and attr in self.distinct:
            return float(self.distinct[attr])
        if self.distinct:
            return float(min(self.distinct.values()))
        return DEFAULT_DISTINCT

    def as_dict(self) -> dict:
        return {
            "rate": _num(self.rate),
            "window": _num(self.window),
            "window_kind": "rows" if self.count else "range",
            "tuples": _num(self.tuples()),
            "distinct": {a: _num(v) for a, v in self.distinct.items()},
            "source": self.source,
        }


@dataclass(frozen=True)
class Statistics:
    """Statistics of every stream reference, in FROM order."""

    streams: tuple[StreamStats, ...]

    def __getitem__(self, i: int) -> StreamStats:
        return self.streams[i]

    def __len__(self) -> int:
        return len(self.streams)

    @property
    def source(self) -> str:
        """``declared``, ``default``, ``measured`` or ``mixed``."""
        kinds = {s.source for s in self.streams}
        return kinds.pop() if len(kinds) == 1 else "mixed"

    def as_dict(self) -> dict:
        return {s.alias: s.as_dict() for s in self.streams}


def _num(x: float) -> float | int:
    """JSON-friendly number: integral floats as ints, others rounded to 6 significant digits."""
    x = float(x)
    if x.is_integer() and abs(x) < 2**53:
        return int(x)
    return float(f"{x:.6g}")


def join_attributes(query: JoinQuery) -> list[list[str]]:
    """Per stream, the attributes it is equi-joined on (in first-mention order)."""
    out: list[list[str]] = [[] for _ in range(query.n)]
    for eq in query.equalities:
        for col in (eq.left, eq.right):
            if col.attr not in out[col.stream]:
                out[col.stream].append(col.attr)
    return out


def _window(query: JoinQuery, i: int) -> tuple[float, bool]:
    spec = query.streams[i].window
    if spec.kind == "unbounded":
        return UNBOUNDED_HORIZON, False
    return float(spec.length if not spec.is_count else spec.size), spec.is_count


def _partition_attr(query: JoinQuery, i: int) -> str | None:
    return query.streams[i].window.partition_by


def default_statistics(query: JoinQuery) -> Statistics:
    """The uniform assumptions: rate :data:`DEFAULT_RATE`, :data:`DEFAULT_DISTINCT` values per attribute."""
    attrs = join_attributes(query)
    out = []
    for i, ref in enumerate(query.streams):
        window, count = _window(query, i)
        part = _partition_attr(query, i)
        out.append(StreamStats(ref.alias, DEFAULT_RATE, window, count, {a: DEFAULT_DISTINCT for a in attrs[i]}, DEFAULT_DISTINCT if part else 1.0, "default"))
    return Statistics(tuple(out))


def _positive(spec: str, alias: str, name: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise OptionError(
            f"{name} of stream {alias} must be a positive number, got {text!r}", location=f"--stats {spec}", hint=f"e.g. --stats {alias}:rate=10,distinct=500"
        )
    return value


def _split(spec: str, query: JoinQuery) -> tuple[str, list[tuple[str, str]]]:
    alias, sep, body = spec.partition(":")
    alias = alias.strip()
    example = f"--stats {query.aliases[0]}:rate=10,distinct=500"
    if not sep or not alias or not body.strip():
        raise OptionError(f"bad --stats {spec!r}", hint=f"write STREAM:field=value,..., e.g. {example}")
    if alias not in query.aliases:
        raise OptionError(f"unknown stream {alias!r} in --stats", location=f"--stats {spec}", hint=f"FROM lists {', '.join(query.aliases)}")
    pairs = []
    for item in body.split(","):
        name, eq, value = item.partition("=")
        if not eq or not name.strip() or not value.strip():
            raise OptionError(f"bad field {item.strip()!r} for stream {alias}", location=f"--stats {spec}", hint=f"write field=value, e.g. {example}")
        pairs.append((name.strip(), value.strip()))
    return alias, pairs


def parse_stats(specs: Sequence[str] | Mapping[str, Mapping[str, float]], query: JoinQuery) -> Statistics:
    """Statistics declared as ``["S1:rate=10,distinct=500", ...]`` (or ``{"S1": {"rate": 10, ...}}``).

    A stream may be spread over several specs; a field given twice, an unknown
    stream or field, a non-numeric or non-positive value, and a missing rate
    or (for joined streams) distinct count raise :class:`OptionError`.
    """
    attrs = join_attributes(query)
    fields: dict[str, dict[str, float]] = {a: {} for a in query.aliases}
    where: dict[str, str] = {}
    if isinstance(specs, Mapping):
        items = [(alias, [(k, str(v)) for k, v in vals.items()], f"{alias}:" + ",".join(f"{k}={v}" for k, v in vals.items())) for alias, vals in specs.items()]
        for alias, _, spec in items:
            if alias not in fields:
                raise OptionError(f"unknown stream {alias!r} in --stats", location=f"--stats {spec}", hint=f"FROM lists {', '.join(query.aliases)}")
    else:
        items = [(*_split(s, query), s) for s in specs]
    for alias, pairs, spec in items:
        i = query.index(alias)
        for name, text in pairs:
            base, _, attr = name.partition(".")
            if base not in ("rate", "distinct", "window") or (attr and base != "distinct"):
                raise OptionError(f"unknown field {name!r} for stream {alias}", location=f"--stats {spec}", hint=f"fields are {', '.join(FIELDS)}")
            if attr and attr not in attrs[i] and attr != _partition_attr(query, i):
                joined = ", ".join(attrs[i]) or "none"
                raise OptionError(
                    f"stream {alias} is not joined on {attr!r}", location=f"--stats {spec}", hint=f"its join attributes: {joined}; write distinct=V for all of them"
                )
            if name in fields[alias]:
                raise OptionError(f"{name} of stream {alias} is given twice", location=f"--stats {spec}", hint="give each field once")
            fields[alias][name] = _positive(spec, alias, name, text)
            where[alias] = spec
    out = []
    for i, ref in enumerate(query.streams):
        got = fields[ref.alias]
        example = f"--stats {ref.alias}:rate=1" + (",distinct=100" if attrs[i] else "")
        if "rate" not in got:
            raise OptionError(f"no rate for stream {ref.alias} in --stats", hint=f"once --stats is given every stream of FROM needs one, e.g. {example}")
        distinct = {}
        for a in attrs[i]:
            v = got.get(f"distinct.{a}", got.get("distinct"))
            if v is None:
                raise OptionError(
                    f"no distinct count for {ref.alias}.{a} in --stats",
                    location=f"--stats {where[ref.alias]}",
                    hint=f"{ref.alias} is joined on {a}; add distinct=V, e.g. {example}",
                )
            distinct[a] = v
        window, count = _window(query, i)
        part = _partition_attr(query, i)
        partitions = got.get(f"distinct.{part}", got.get("distinct", DEFAULT_DISTINCT)) if part else 1.0
        out.append(StreamStats(ref.alias, got["rate"], got.get("window", window), count, distinct, partitions, "declared"))
    return Statistics(tuple(out))


#: what ``--stats`` may give: specs (``"S1:rate=10"``, one or a list), ``{alias: {field: value}}``, Statistics
StatsArg = Statistics | str | Sequence[str] | Mapping[str, Mapping[str, float]] | None


def resolve_statistics(query: JoinQuery, stats: StatsArg = None) -> Statistics:
    """``None`` → defaults; specs or a mapping → :func:`parse_stats`; a :class:`Statistics` as is."""
    if stats is None or (not isinstance(stats, Statistics) and not stats):
        return default_statistics(query)
    if isinstance(stats, Statistics):
        if len(stats) != query.n:
            raise OptionError(f"statistics for {len(stats)} streams, the query has {query.n}")
        return stats
    if isinstance(stats, str):
        stats = [stats]
    return parse_stats(stats, query)


# ------------------------------------------------------------------ online --


def hash64(values: np.ndarray) -> np.ndarray:
    """Deterministic 64-bit hashes of any values (numbers or strings)."""
    import pandas as pd

    arr = np.asarray(values)
    if arr.dtype.kind in "iub":
        # splitmix64 finaliser: a good spread for small consecutive integers
        x = arr.astype(np.uint64)
        with np.errstate(over="ignore"):
            x = x + np.uint64(0x9E3779B97F4A7C15)
            x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            return x ^ (x >> np.uint64(31))
    return pd.util.hash_array(arr.astype(object) if arr.dtype.kind == "f" else arr)


def domain_size(seen: float, tuples: float) -> float:
    """The number v of equally likely values that makes ``seen`` distinct values in ``tuples`` draws likely.

    The cost model's v is the size of the value set a stream draws from
    (containment, uniformity), not the distinct count of one window: a window
    of 14 tuples drawn from 1000 values shows about 14. The expected distinct
    count of W uniform draws from v values is ``v·(1-(1-1/v)^W)``; this solves
    it for v by bisection. Without any repeat the sample only bounds v from
    below; ``W·(W-1)/2`` (about one expected repeat) is returned then.

    >>> round(domain_size(48, 150)), domain_size(10, 10), domain_size(3, 1000)
    (51, 45.0, 3.0)
    """
    if tuples <= 0 or seen <= 0:
        return max(seen, 1.0)
    if seen >= tuples - 0.5:
        return max(seen, tuples * (tuples - 1) / 2)

    def expected(v: float) -> float:
        return v * -math.expm1(tuples * math.log1p(-1.0 / v)) if v > 1 else 1.0

    lo, hi = max(seen, 1.0), max(seen, 1.0) * 2
    while expected(hi) < seen:
        hi *= 2
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if expected(mid) < seen else (lo, mid)
    return round(hi, 6) if hi - seen > 1e-6 else float(seen)


@dataclass
class _Pane:
    key: int  # pane number (time // width, or arrival number // width)
    first_ts: int
    count: int = 0
    sketches: dict[str, np.ndarray] = field(default_factory=dict)  # attr -> k smallest hashes


class _StreamEstimator:
    """Panes over one stream: arrivals and per-attribute KMV sketches."""

    def __init__(self, width: float, panes: int, k: int, by_count: bool, attrs: list[str]) -> None:
        self.width = max(width, 1e-9)
        self.panes = panes
        self.k = k
        self.by_count = by_count
        self.attrs = attrs
        self.window: deque[_Pane] = deque()
        self.arrivals = 0
        self.first_ts: int | None = None

    def observe(self, ts: np.ndarray, cols: Mapping[str, np.ndarray]) -> None:
        m = len(ts)
        if not m:
            return
        if self.first_ts is None:
            self.first_ts = int(ts[0])
        index = np.arange(self.arrivals, self.arrivals + m) if self.by_count else ts
        keys = np.floor(index / self.width).astype(np.int64)
        self.arrivals += m
        starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
        ends = np.r_[starts[1:], m]
        hashed = {a: hash64(cols[a]) for a in self.attrs if a in cols}
        for s, e in zip(starts.tolist(), ends.tolist()):
            key = int(keys[s])
            if not self.window or self.window[-1].key != key:
                self.window.append(_Pane(key, int(ts[s])))
            pane = self.window[-1]
            pane.count += e - s
            for a, h in hashed.items():
                old = pane.sketches.get(a)
                both = h[s:e] if old is None else np.concatenate([old, h[s:e]])
                pane.sketches[a] = np.unique(both)[: self.k]
        newest = self.window[-1].key
        while self.window and self.window[0].key <= newest - self.panes:
            self.window.popleft()

    def rate(self, now: int) -> float | None:
        if not self.window or self.first_ts is None:
            return None
        oldest = self.window[0]
        start = oldest.first_ts if self.by_count else max(self.first_ts, int(oldest.key * self.width))
        span = now - start + 1
        return sum(p.count for p in self.window) / max(span, 1)

    def distinct(self, attr: str) -> float | None:
        """Estimated size of the value domain of ``attr`` (see :func:`domain_size`)."""
        parts = [p.sketches[attr] for p in self.window if attr in p.sketches]
        if not parts:
            return None
        union = np.unique(np.concatenate(parts))
        if len(union) < self.k:
            seen = float(len(union))
        else:
            seen = (self.k - 1) / (float(union[self.k - 1]) / 2.0**64)
        return domain_size(seen, sum(p.count for p in self.window))


class OnlineStats:
    """Sliding estimates of λ and v per stream, measured from the arrivals of a run.

    Call :meth:`observe` with every chunk the engine processes (one
    :class:`~slidewise.model.batch.StreamBatch` per stream, or any objects
    with ``stream``, ``ts`` and ``cols``); :meth:`statistics` returns the
    current estimates as :class:`Statistics` (``source="measured"``).

    Each stream's recent past is cut into ``panes`` panes covering its window
    (T time units, or N arrivals for count windows; ``[UNBOUNDED]`` / ``[NOW]``
    use ``horizon``). A pane keeps its arrival count and, per join attribute,
    the ``sketch_size`` smallest 64-bit hashes of its values (KMV). The rate
    is the arrivals of the kept panes over the time they span. The distinct
    count of the kept panes is exact below ``sketch_size`` values and
    ``(k-1)/h_k`` above (h_k: the k-th smallest hash of the merged panes,
    scaled to [0, 1); relative error about ``1/sqrt(k)``); the reported v is
    the size of the value domain that explains it (:func:`domain_size`).
    Memory: O(panes · sketch_size) per attribute.

    >>> from slidewise.cql import load_query
    >>> from slidewise.model.batch import StreamBatch
    >>> q = load_query("SELECT * FROM A [RANGE 100], B [RANGE 100] WHERE A.k = B.k")
    >>> est = OnlineStats(q)
    >>> ts = np.arange(0, 1000, 2)
    >>> est.observe([StreamBatch(0, ts, ts, {"k": ts % 7}), StreamBatch(1, ts + 1, ts + 1, {"k": ts % 3})])
    >>> s = est.statistics()
    >>> round(s[0].rate, 2), round(s[0].v("k"), 2), round(s[1].v("k"), 2)
    (0.5, 7.0, 3.0)
    """

    def __init__(self, query: JoinQuery, *, panes: int = 8, sketch_size: int = 256, horizon: float | None = None) -> None:
        if panes < 1 or sketch_size < 2:
            raise OptionError("OnlineStats needs panes >= 1 and sketch_size >= 2", hint="e.g. OnlineStats(query, panes=8, sketch_size=256)")
        self.query = query
        self.attrs = join_attributes(query)
        lengths = [s.window.length for s in query.streams if s.window.kind == "range" and s.window.length > 0]
        self.horizon = float(horizon or (max(lengths) if lengths else 1000))
        self._streams = []
        for i, ref in enumerate(query.streams):
            spec = ref.window
            attrs = list(self.attrs[i]) + ([spec.partition_by] if spec.partition_by else [])
            if spec.is_count:
                self._streams.append(_StreamEstimator(spec.size / panes, panes, sketch_size, True, attrs))
            else:
                span = spec.length if spec.kind == "range" and spec.length > 0 else self.horizon
                self._streams.append(_StreamEstimator(span / panes, panes, sketch_size, False, attrs))
        self.now: int | None = None

    def observe(self, chunk: Sequence[StreamBatch]) -> None:
        """Account for one chunk of arrivals (the engine calls this per chunk)."""
        for batch in chunk:
            if len(batch.ts):
                self._streams[batch.stream].observe(np.asarray(batch.ts), batch.cols)
                last = int(batch.ts[-1])
                self.now = last if self.now is None else max(self.now, last)

    def statistics(self, fallback: Statistics | None = None) -> Statistics:
        """Current estimates; streams (or attributes) not seen yet keep ``fallback`` (default: defaults)."""
        base = fallback or default_statistics(self.query)
        out = []
        for i, est in enumerate(self._streams):
            s = base[i]
            rate = est.rate(self.now) if self.now is not None else None
            if rate is None:
                out.append(s)
                continue
            distinct = dict(s.distinct)
            for a in self.attrs[i]:
                v = est.distinct(a)
                if v is not None:
                    distinct[a] = v
            partitions = s.partitions
            part = self.query.streams[i].window.partition_by
            if part:
                partitions = est.distinct(part) or partitions
            out.append(replace(s, rate=rate, distinct=distinct, partitions=partitions, source="measured"))
        return Statistics(tuple(out))
