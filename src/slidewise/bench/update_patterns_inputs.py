"""Inputs of ``slidewise bench update-patterns``: generated IP-like links and real Zeek logs.

:func:`generated_inputs` — Golab's thesis §3.6.1's links from
:func:`slidewise.runtime.generate.generate_links`. :func:`zeek_inputs` — Zeek
logs as links, with their real out-of-orderness (below): by default the
bundled WRCCDC 2018 sample (``slidewise/data/demo``: three minutes of dns and
ssl), or any directory of Zeek logs as CSV (``--zeek-dir``, e.g. the whole
WRCCDC 2018 capture).

The thesis splits one packet trace into outgoing links by destination
address. Here the trace is every log of the directory that has ``orig_h``
and ``resp_h`` (dns, ssl, weird, analyzer, rdp, ...):

* ``ts`` — Zeek's timestamp, in integer milliseconds;
* ``src`` = ``orig_h``, ``dst`` = ``resp_h``, ``protocol`` = the log's name
  (the application protocol: dns, ssl, rdp, ...);
* arrival order — Zeek writes a record when its transaction ends, so a row
  *arrives* at the greatest ``ts`` written to its log so far (a running
  maximum in file order); the logs are merged by that arrival time (ties:
  log name, then file order). ``ts`` stays out of order within a link, by up
  to ~800 s (dns, ssl): runs need that much lateness to lose nothing;
* link = CRC-32 of ``resp_h`` mod ``n_links`` (deterministic).

dns.log's near-duplicate rows (same record, ``ts`` 1 µs apart, from merged
capture points) are kept, as real input.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from slidewise.errors import SourceError

__all__ = ["Inputs", "generated_inputs", "load_links", "sample_dir", "zeek_dir", "zeek_inputs"]

_CACHE: dict = {}


def sample_dir() -> Path:
    """The bundled Zeek sample (dns.csv, ssl.csv): the default of ``--zeek-dir``."""
    return Path(str(resources.files("slidewise") / "data" / "demo"))


def zeek_dir(path: str | Path | None = None) -> Path:
    """``path`` (``--zeek-dir``) checked to hold a Zeek log with ``ts``, ``orig_h`` and ``resp_h``; else the sample.

    Cheap (reads CSV headers only), so the bench checks it before running anything.
    """
    if path is None:
        return sample_dir()
    d = Path(path)
    if not d.is_dir():
        raise SourceError(
            "the Zeek log directory does not exist" if not d.exists() else "--zeek-dir must be a directory",
            location=str(d),
            hint="point --zeek-dir at a directory of Zeek logs as CSV (dns.csv, ssl.csv, ...), or leave it out to use the bundled sample",
        )
    if not _log_files(d):
        raise SourceError(
            "no Zeek log with ts, orig_h and resp_h columns", location=str(d), hint="point --zeek-dir at a directory of Zeek logs as CSV (dns.csv, ssl.csv, ...)"
        )
    return d.resolve()


def _log_files(d: Path) -> list[Path]:
    """The CSV files of ``d`` with ``ts``, ``orig_h`` and ``resp_h`` columns, by name."""
    out = []
    for f in sorted(d.glob("*.csv")):
        if f.stem == "all_events":
            continue
        try:
            cols = pd.read_csv(f, nrows=0).columns
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError):
            continue
        if {"ts", "orig_h", "resp_h"} <= set(cols):
            out.append(f)
    return out


def load_links(data_dir: str | Path | None = None, n_links: int = 3) -> tuple[dict[str, pd.DataFrame], dict[str, np.ndarray], dict]:
    """``({"Link1": df, ...}, {"Link1": arrival_ms, ...}, info)``; dfs have ``ts, src, dst, protocol``."""
    d = zeek_dir(data_dir)
    key = (str(d), n_links)
    if key in _CACHE:
        return _CACHE[key]
    frames = []
    for f in _log_files(d):
        df = pd.read_csv(f, usecols=["ts", "orig_h", "resp_h"], dtype={"orig_h": str, "resp_h": str}).dropna()
        ts = np.round(df["ts"].to_numpy(np.float64) * 1000).astype(np.int64)
        frames.append(pd.DataFrame({"arrival": np.maximum.accumulate(ts), "log": f.stem, "ts": ts, "src": df["orig_h"].to_numpy(), "dst": df["resp_h"].to_numpy()}))
    trace = pd.concat(frames, ignore_index=True)  # logs in name order, rows in file order
    trace = trace.sort_values("arrival", kind="stable").reset_index(drop=True)
    link = np.fromiter((zlib.crc32(x.encode()) % n_links for x in trace["dst"]), np.int64, len(trace))
    links, arrival, info = {}, {}, {"data_dir": str(d), "sample": d == sample_dir().resolve(), "rows": int(len(trace)), "logs": sorted(set(trace["log"])), "per_link": {}}
    for i in range(n_links):
        part = trace[link == i]
        name = f"Link{i + 1}"
        links[name] = pd.DataFrame(
            {"ts": part["ts"].to_numpy(), "src": part["src"].to_numpy(object), "dst": part["dst"].to_numpy(object), "protocol": part["log"].to_numpy(object)}
        )
        arrival[name] = part["arrival"].to_numpy()
        ts = links[name]["ts"].to_numpy()
        info["per_link"][name] = {
            "rows": int(len(part)),
            "max_lateness_ms": int((np.maximum.accumulate(ts) - ts).max()) if len(ts) else 0,
            "top_protocols": part["log"].value_counts().head(4).to_dict(),
        }
    _CACHE[key] = (links, arrival, info)
    return _CACHE[key]


@dataclass
class Inputs:
    """Links of one source: DataFrames (``ts, src, dst, protocol``) in arrival order, plus arrival times.

    ``arrival[name]`` is non-decreasing; a prefix "up to time t" is the rows
    with ``arrival < t``. ``start`` is the first arrival time; ``windows`` and
    ``span`` are in the source's time unit; ``lateness`` covers every row.
    """

    name: str
    links: dict[str, pd.DataFrame]
    arrival: dict[str, np.ndarray]
    start: int
    windows: tuple[int, ...]
    span: int
    lateness: int
    protocols: dict[str, str]
    unit: str
    info: dict

    def prefix(self, names, until: int) -> dict[str, pd.DataFrame]:
        return {n: self.links[n].iloc[: int(np.searchsorted(self.arrival[n], until, side="left"))] for n in names}


def generated_inputs(scale: float = 1.0, *, seed: int = 0) -> Inputs:
    """Three IP-like links (:func:`~slidewise.runtime.generate.generate_links`, Zipf(1) over 2000 sources)."""
    from slidewise.runtime.generate import generate_links

    windows = tuple(sorted({max(10, int(round(w * scale))) for w in (1000, 4000, 16000)}))
    span = max(100, int(round(24000 * scale)))
    n = max(windows) + span + 1
    raw = generate_links(3, n, sources=2000, destinations=200, zipf=1.0, seed=seed)
    links = {f"Link{i + 1}": pd.DataFrame(r) for i, r in enumerate(raw)}
    return Inputs(
        "generated",
        links,
        {k: v["ts"].to_numpy() for k, v in links.items()},
        0,
        windows,
        span,
        0,
        {"selective": "ftp", "unselective": "telnet"},
        "time units (1 tuple per link each)",
        {"links": 3, "sources": 2000, "destinations_per_link": 200, "zipf": 1.0, "seed": seed},
    )


def zeek_inputs(scale: float = 1.0, data_dir: str | Path | None = None) -> Inputs:
    """Zeek logs as three links (see :func:`load_links`), from the trace's start; ``data_dir``: see :func:`zeek_dir`.

    Query 1's selective protocol is ``dns``; the unselective one is ``rdp``
    when the logs have it (the whole WRCCDC 2018 capture: about as many join
    results as inputs in the first minute for dns, 60x more for rdp, four
    hosts make all of it), else ``ssl`` (the bundled sample, which has only
    dns and ssl).
    """
    windows = tuple(sorted({max(200, int(round(w * scale))) for w in (2_000, 8_000, 32_000)}))
    span = max(2000, int(round(60_000 * scale)))
    links, arrival, info = load_links(data_dir)
    start = min(int(a[0]) for a in arrival.values() if len(a))
    until = start + max(windows) + span
    late = 0
    for name, df in links.items():
        k = int(np.searchsorted(arrival[name], until, side="left"))
        ts = df["ts"].to_numpy()[:k]
        if k:
            late = max(late, int((np.maximum.accumulate(ts) - ts).max()))
    info = dict(info, lateness_needed_ms=late)
    unselective = "rdp" if "rdp" in info["logs"] else "ssl"
    return Inputs("zeek", links, arrival, start, windows, span, late + 1, {"selective": "dns", "unselective": unselective}, "ms", info)
