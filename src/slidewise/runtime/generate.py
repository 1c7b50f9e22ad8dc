"""The papers' synthetic streams (Golab & Özsu, seed 000 §6.1).

One loop of ``n_tuples`` steps; at step ``t`` one tuple is generated, for
stream ``i`` with probability ``λ_i / Σλ``, with timestamp ``t`` (the loop
index, from 0) and a join attribute drawn from ``{1, ..., v_i}`` — uniformly
as in the paper (which guarantees containment of value sets), or from a
bounded Zipf law ``P(k) ∝ k^-s`` when ``zipf=s`` is given. Each tuple also
carries a payload ``x`` uniform on ``0..99`` (for theta-join tests). The
same ``seed`` gives the same streams. Fully vectorised: the loop is one
draw of stream choices, then one draw per stream and attribute.

>>> s = generate([2, 1], [10, 10], 9, seed=1)
>>> [len(x["ts"]) for x in s], sorted(s[0]["ts"].tolist() + s[1]["ts"].tolist()) == list(range(9))
([6, 3], True)
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from slidewise.errors import OptionError
from slidewise.runtime.sinks import open_sink

STREAM_FORMATS = {"csv": ".csv", "parquet": ".parquet", "jsonl": ".jsonl"}
_ZIPF_MAX_DISTINCT = 50_000_000


def _per_stream(value, n: int, what: str) -> list:
    if np.isscalar(value) or value is None:
        return [value] * n
    values = list(value)
    if len(values) != n:
        raise OptionError(f"{len(values)} {what} values for {n} streams (one per rate)",
                          hint=f"give one {what} value per stream, e.g. --rates 10,1 --distinct 100,100")
    return values


def generate(rates: Sequence[float], distinct: int | Sequence[int], n_tuples: int, *, seed: int | None = 0,
             zipf: float | Sequence[float] | None = None, attr: str = "a") -> list[dict[str, np.ndarray]]:
    """Streams as ``[{"ts": int64, attr: int64, "x": int64}, ...]``, one dict per rate."""
    rates_arr = np.asarray(list(rates) if not np.isscalar(rates) else [rates], dtype=np.float64)
    n = len(rates_arr)
    if n == 0:
        raise OptionError("no streams to generate", hint="give at least one rate, e.g. --rates 1,1")
    if not np.all(np.isfinite(rates_arr)) or np.any(rates_arr <= 0):
        raise OptionError(f"rates must be positive numbers, got {rates_arr.tolist()}",
                          hint="rates are relative arrival rates λ_i, e.g. --rates 10,1,1")
    v = _per_stream(distinct, n, "distinct")
    if any(not float(x).is_integer() or x < 1 for x in v):
        raise OptionError(f"distinct values must be positive integers, got {v}",
                          hint="v_i is the number of distinct join values of stream i, e.g. --distinct 100,100")
    v = [int(x) for x in v]
    if not float(n_tuples).is_integer() or n_tuples < 0:
        raise OptionError(f"the number of tuples must be a non-negative integer, got {n_tuples!r}")
    n_tuples = int(n_tuples)
    s = _per_stream(zipf, n, "zipf")
    if any(x is not None and (not np.isfinite(x) or x < 0) for x in s):
        raise OptionError(f"Zipf exponents must be >= 0, got {s}", hint="e.g. --zipf 1.0 (0 is uniform)")
    if any(x is not None and vi > _ZIPF_MAX_DISTINCT for x, vi in zip(s, v)):
        raise OptionError(f"Zipf sampling supports at most {_ZIPF_MAX_DISTINCT:,} distinct values")
    if not isinstance(attr, str) or not attr or attr in ("ts", "x"):
        raise OptionError(f"bad attribute name {attr!r}", hint="the join attribute cannot be called 'ts' or 'x'")

    rng = np.random.default_rng(seed)
    cdf = np.cumsum(rates_arr / rates_arr.sum())
    choice = np.minimum(np.searchsorted(cdf, rng.random(n_tuples), side="right"), n - 1)
    order = np.argsort(choice, kind="stable")          # loop indices grouped by stream, increasing
    bounds = np.concatenate(([0], np.cumsum(np.bincount(choice, minlength=n))))
    streams = []
    for i in range(n):
        ts = order[bounds[i]:bounds[i + 1]].astype(np.int64)
        m = len(ts)
        if s[i] is None:
            a = rng.integers(1, v[i] + 1, size=m, dtype=np.int64)
        else:
            weights = np.arange(1, v[i] + 1, dtype=np.float64) ** -float(s[i])
            zcdf = np.cumsum(weights)
            a = np.searchsorted(zcdf, rng.random(m) * zcdf[-1], side="right").astype(np.int64) + 1
            np.minimum(a, v[i], out=a)
        x = rng.integers(0, 100, size=m, dtype=np.int64)
        streams.append({"ts": ts, attr: a, "x": x})
    return streams


def write_streams(streams: Sequence[dict[str, np.ndarray]], out_dir: str | Path, fmt: str = "csv",
                  names: Sequence[str] | None = None) -> list[Path]:
    """Write each stream to ``out_dir/<name>.<fmt>`` (names default ``S1, S2, ...``); returns the paths."""
    if fmt == "json":
        fmt = "jsonl"
    if fmt not in STREAM_FORMATS:
        raise OptionError(f"unknown stream file format {fmt!r}", hint=f"use one of {', '.join(STREAM_FORMATS)}")
    names = list(names) if names is not None else [f"S{i + 1}" for i in range(len(streams))]
    if len(names) != len(streams):
        raise OptionError(f"{len(names)} names for {len(streams)} streams", hint="give one name per stream")
    if len(set(names)) != len(names):
        raise OptionError(f"stream names must be distinct, got {names}")
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OptionError(f"cannot create output directory: {e.strerror or e}", location=str(out),
                          hint="choose a writable directory for --out") from None
    paths = []
    for name, cols in zip(names, streams):
        path = out / f"{name}{STREAM_FORMATS[fmt]}"
        with open_sink(path, list(cols)) as sink:
            sink.write(cols)
        paths.append(path)
    return paths
