"""Inputs of ``slidewise bench update-patterns``: generated IP-like links and real Zeek logs.

:func:`generated_inputs` — seed 003 §3.6.1's links from
:func:`slidewise.runtime.generate.generate_links`. :func:`zeek_inputs` — the
WRCCDC 2018 Zeek logs as links, with their real out-of-orderness (below).

The thesis splits one packet trace into outgoing links by destination
address. Here the trace is every Zeek log of ``../shared/data/zeek_wrccdc2018``
that has ``orig_h`` and ``resp_h`` (dns, ssl, weird, analyzer, rdp, ...):

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

import os
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from slidewise.errors import SourceError

__all__ = ["Inputs", "generated_inputs", "load_links", "zeek_inputs"]

DEFAULT_DIR = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "zeek_wrccdc2018"
_CACHE: dict = {}


def default_dir() -> Path:
    """The Zeek data set: ``$SLIDEWISE_ZEEK_DIR``, else ``../shared/data/zeek_wrccdc2018`` beside the checkout or the cwd."""
    env = os.environ.get("SLIDEWISE_ZEEK_DIR")
    candidates = [Path(env)] if env else []
    candidates += [DEFAULT_DIR, Path.cwd().parent / "shared" / "data" / "zeek_wrccdc2018"]
    for d in candidates:
        if d.is_dir():
            return d.resolve()
    raise SourceError("the Zeek WRCCDC 2018 logs were not found",
                      location=str(DEFAULT_DIR),
                      hint="pass --source generated, set SLIDEWISE_ZEEK_DIR, or put the data set there")


def load_links(data_dir: str | Path | None = None, n_links: int = 3
               ) -> tuple[dict[str, pd.DataFrame], dict[str, np.ndarray], dict]:
    """``({"Link1": df, ...}, {"Link1": arrival_ms, ...}, info)``; dfs have ``ts, src, dst, protocol``."""
    d = Path(data_dir) if data_dir is not None else default_dir()
    key = (str(d), n_links)
    if key in _CACHE:
        return _CACHE[key]
    frames = []
    for f in sorted(d.glob("*.csv")):
        if f.stem == "all_events":
            continue
        cols = pd.read_csv(f, nrows=0).columns
        if not {"ts", "orig_h", "resp_h"} <= set(cols):
            continue
        df = pd.read_csv(f, usecols=["ts", "orig_h", "resp_h"], dtype={"orig_h": str, "resp_h": str}).dropna()
        ts = np.round(df["ts"].to_numpy(np.float64) * 1000).astype(np.int64)
        frames.append(pd.DataFrame({"arrival": np.maximum.accumulate(ts), "log": f.stem, "ts": ts,
                                    "src": df["orig_h"].to_numpy(), "dst": df["resp_h"].to_numpy()}))
    if not frames:
        raise SourceError("no Zeek log with ts, orig_h and resp_h columns", location=str(d),
                          hint="point at the zeek_wrccdc2018 directory (dns.csv, ssl.csv, ...)")
    trace = pd.concat(frames, ignore_index=True)   # logs in name order, rows in file order
    trace = trace.sort_values("arrival", kind="stable").reset_index(drop=True)
    link = np.fromiter((zlib.crc32(x.encode()) % n_links for x in trace["dst"]), np.int64, len(trace))
    links, arrival, info = {}, {}, {"rows": int(len(trace)), "logs": sorted(set(trace["log"])), "per_link": {}}
    for i in range(n_links):
        part = trace[link == i]
        name = f"Link{i + 1}"
        links[name] = pd.DataFrame({"ts": part["ts"].to_numpy(), "src": part["src"].to_numpy(object),
                                    "dst": part["dst"].to_numpy(object),
                                    "protocol": part["log"].to_numpy(object)})
        arrival[name] = part["arrival"].to_numpy()
        ts = links[name]["ts"].to_numpy()
        info["per_link"][name] = {"rows": int(len(part)),
                                  "max_lateness_ms": int((np.maximum.accumulate(ts) - ts).max()) if len(ts) else 0,
                                  "top_protocols": part["log"].value_counts().head(4).to_dict()}
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
        return {n: self.links[n].iloc[:int(np.searchsorted(self.arrival[n], until, side="left"))]
                for n in names}


def generated_inputs(scale: float = 1.0, *, seed: int = 0) -> Inputs:
    """Three IP-like links (:func:`~slidewise.runtime.generate.generate_links`, Zipf(1) over 2000 sources)."""
    from slidewise.runtime.generate import generate_links

    windows = tuple(sorted({max(10, int(round(w * scale))) for w in (1000, 4000, 16000)}))
    span = max(100, int(round(24000 * scale)))
    n = max(windows) + span + 1
    raw = generate_links(3, n, sources=2000, destinations=200, zipf=1.0, seed=seed)
    links = {f"Link{i + 1}": pd.DataFrame(r) for i, r in enumerate(raw)}
    return Inputs("generated", links, {k: v["ts"].to_numpy() for k, v in links.items()}, 0, windows, span,
                  0, {"selective": "ftp", "unselective": "telnet"}, "time units (1 tuple per link each)",
                  {"links": 3, "sources": 2000, "destinations_per_link": 200, "zipf": 1.0, "seed": seed})


def zeek_inputs(scale: float = 1.0, data_dir: str | Path | None = None) -> Inputs:
    """The WRCCDC 2018 Zeek logs as three links (see :func:`load_links`), from the trace's start.

    Query 1's selective protocol is ``dns`` (about as many join results as
    inputs in the first minute), the unselective one ``rdp`` (60x more: four
    hosts make all of it).
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
    return Inputs("zeek", links, arrival, start, windows, span, late + 1,
                  {"selective": "dns", "unselective": "rdp"}, "ms", info)
