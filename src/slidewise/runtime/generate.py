"""The papers' synthetic streams (Golab & Özsu, §6.1).

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
        raise OptionError(f"{len(values)} {what} values for {n} streams (one per rate)", hint=f"give one {what} value per stream, e.g. --rates 10,1 --distinct 100,100")
    return values


#: bounds of ``generate``: join values are int64; the tuples of one call are held in memory
MAX_DISTINCT = 2**62
MAX_TUPLES = 10**9


def generate(
    rates: Sequence[float], distinct: int | Sequence[int], n_tuples: int, *, seed: int | None = 0, zipf: float | Sequence[float] | None = None, attr: str = "a"
) -> list[dict[str, np.ndarray]]:
    """Streams as ``[{"ts": int64, attr: int64, "x": int64}, ...]``, one dict per rate."""
    rates_arr = np.asarray(list(rates) if not np.isscalar(rates) else [rates], dtype=np.float64)
    n = len(rates_arr)
    if n == 0:
        raise OptionError("no streams to generate", hint="give at least one rate, e.g. --rates 1,1")
    if not np.all(np.isfinite(rates_arr)) or np.any(rates_arr <= 0):
        raise OptionError(f"rates must be positive numbers, got {rates_arr.tolist()}", hint="rates are relative arrival rates λ_i, e.g. --rates 10,1,1")
    v = _per_stream(distinct, n, "distinct")
    if any(not float(x).is_integer() or not 1 <= x <= MAX_DISTINCT for x in v):
        raise OptionError(
            f"distinct values must be positive integers up to {MAX_DISTINCT}, got {v}",
            hint="v_i is the number of distinct join values of stream i, e.g. --distinct 100,100",
        )
    v = [int(x) for x in v]
    if not float(n_tuples).is_integer() or not 0 <= n_tuples <= MAX_TUPLES:
        raise OptionError(
            f"the number of tuples must be a non-negative integer up to {MAX_TUPLES:,}, got {n_tuples!r}", hint="generate larger inputs in several runs with other seeds"
        )
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
    order = np.argsort(choice, kind="stable")  # loop indices grouped by stream, increasing
    bounds = np.concatenate(([0], np.cumsum(np.bincount(choice, minlength=n))))
    streams = []
    for i in range(n):
        ts = order[bounds[i] : bounds[i + 1]].astype(np.int64)
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


def write_streams(streams: Sequence[dict[str, np.ndarray]], out_dir: str | Path, fmt: str = "csv", names: Sequence[str] | None = None) -> list[Path]:
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
        raise OptionError(f"cannot create output directory: {e.strerror or e}", location=str(out), hint="choose a writable directory for --out") from None
    paths = []
    for name, cols in zip(names, streams):
        path = out / f"{name}{STREAM_FORMATS[fmt]}"
        with open_sink(path, list(cols)) as sink:
            sink.write(cols)
        paths.append(path)
    return paths


#: protocol mix of :func:`generate_links`: telnet common, ftp rare (Golab's thesis §3.6.1, LBL trace)
IP_PROTOCOLS = {"telnet": 0.32, "http": 0.28, "smtp": 0.2, "ftp": 0.1, "other": 0.1}


def generate_links(
    n_links: int,
    tuples_per_link: int,
    *,
    sources: int = 2000,
    destinations: int = 200,
    zipf: float = 1.0,
    protocols: dict[str, float] | None = None,
    seed: int | None = 0,
) -> list[dict[str, np.ndarray]]:
    """IP-like streams of Golab's thesis §3.6.1: one trace split into outgoing links.

    Each link brings one tuple per time unit (``ts = 0, 1, 2, ...``) with a
    source address ``src`` drawn from ``sources`` addresses by a bounded Zipf
    law (exponent ``zipf``; the same addresses, ranked the same, on every
    link), a destination ``dst`` drawn by the same law from ``destinations``
    addresses of that link alone (links split the trace by destination), and
    a ``protocol`` string drawn from ``protocols`` (name -> probability;
    default :data:`IP_PROTOCOLS`: telnet common, ftp rare). Addresses are
    IPv4 numbers (int64).

    >>> links = generate_links(2, 5, seed=1)
    >>> sorted(links[0]), links[1]["ts"].tolist()
    (['dst', 'protocol', 'src', 'ts'], [0, 1, 2, 3, 4])
    """
    if not float(n_links).is_integer() or n_links < 1:
        raise OptionError(f"the number of links must be a positive integer, got {n_links!r}")
    if not float(tuples_per_link).is_integer() or tuples_per_link < 0:
        raise OptionError(f"tuples per link must be a non-negative integer, got {tuples_per_link!r}")
    if not (1 <= sources <= 1 << 20 and 1 <= destinations <= 1 << 16):
        raise OptionError(
            f"sources must be in 1..2^20 and destinations in 1..2^16, got {sources}, {destinations}", hint="addresses are drawn from 10.0.0.0/12 and 172.16+i.0.0/16"
        )
    if not np.isfinite(zipf) or zipf < 0:
        raise OptionError(f"the Zipf exponent must be >= 0, got {zipf}", hint="e.g. 1.0 (0 is uniform)")
    mix = dict(IP_PROTOCOLS if protocols is None else protocols)
    weights = np.asarray(list(mix.values()), dtype=np.float64)
    if not mix or not np.all(np.isfinite(weights)) or np.any(weights < 0) or weights.sum() <= 0:
        raise OptionError(f"bad protocol mix {mix}", hint="give name -> probability, e.g. {'ftp': 0.1, 'telnet': 0.9}")
    rng = np.random.default_rng(seed)
    n = int(tuples_per_link)
    src_addr = 0x0A000000 + rng.permutation(1 << 20)[:sources].astype(np.int64)  # 10.x.y.z
    names = np.array(list(mix), dtype=object)
    pcdf = np.cumsum(weights / weights.sum())

    def zipf_ranks(v: int) -> np.ndarray:
        zcdf = np.cumsum(np.arange(1, v + 1, dtype=np.float64) ** -float(zipf))
        return np.minimum(np.searchsorted(zcdf, rng.random(n) * zcdf[-1], side="right"), v - 1)

    links = []
    for i in range(int(n_links)):
        dst_addr = (172 << 24) + ((16 + i % 16) << 16) + rng.permutation(1 << 16)[:destinations].astype(np.int64)  # 172.(16+i).y.z
        proto = names[np.minimum(np.searchsorted(pcdf, rng.random(n), side="right"), len(names) - 1)]
        links.append({"ts": np.arange(n, dtype=np.int64), "src": src_addr[zipf_ranks(sources)], "dst": dst_addr[zipf_ranks(destinations)], "protocol": proto})
    return links
