"""``slidewise bench wjoin``'s Zeek workload: a W-join of Zeek logs on the host, with a window per pair.

Streams: the logs ``dns``, ``ssl``, ``conn`` and ``http`` found in the Zeek directory, in that
order, each with ``host`` = ``orig_h`` (the client). With fewer than three of them (the bundled
WRCCDC 2018 sample has dns and ssl only) dns is split into its A and AAAA lookups: ``dns_a``,
``dns_aaaa``, ``ssl`` (a client resolving a name, then opening TLS). Hosts are integer codes
shared by every stream; ``ts`` in ms. A W-join needs its input in timestamp order,
while Zeek writes a record when its transaction ends: the streams are replayed in ``ts`` order
(ties: stream, file order), the first ``tuples`` arrivals.

The query chains ``X.host = Y.host`` and gives every pair its own window (:data:`WINDOWS_MS`)
except the first and last stream, left unconstrained (Hammad, Aref & Elmagarmid, SSDBM 2003, §2, Form 3). Every W-join
operator whose ``check`` accepts the query runs on it (:func:`slidewise.bench.wjoin.measure`);
they must all give the same results.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from slidewise.bench.update_patterns_inputs import zeek_dir
from slidewise.cql.wjoin import parse_wjoin
from slidewise.errors import SlidewiseError, SourceError
from slidewise.operators.wjoin import WJOINS

__all__ = ["LOGS", "WINDOWS_MS", "zeek_point", "zeek_streams"]

LOGS = ("dns", "ssl", "conn", "http")
#: windows (ms) of the constrained pairs, in order (0,1), (1,2), (2,3), (0,2), (1,3); (0,3) has none
WINDOWS_MS = (20, 200, 300, 400, 500)
ALGORITHMS = ("mw-join", "nlw-join", "hw-join", "gca", "lca", "ripple-join", "xjoin")


def _specs(d: Path) -> list[tuple[str, str, str | None]]:
    """``(alias, log, qtype)`` per stream: the logs present; with fewer than three, dns as A and AAAA lookups."""
    logs = [log for log in LOGS if (d / f"{log}.csv").exists()]
    if len(logs) >= 3 or "dns" not in logs:
        return [(log, log, None) for log in logs]
    return [("dns_a", "dns", "A"), ("dns_aaaa", "dns", "AAAA")] + [(log, log, None) for log in logs if log != "dns"]


def zeek_streams(tuples: int, data_dir: str | Path | None = None) -> tuple[list[str], dict[str, np.ndarray]]:
    """The aliases and the first ``tuples`` arrivals (``ts``, ``stream``, ``host``) of the streams above."""
    d = zeek_dir(data_dir)
    specs = _specs(d)
    if len(specs) < 3:
        raise SourceError(
            f"the Zeek W-join needs three streams; found {', '.join(a for a, _, _ in specs) or 'none'}",
            location=str(d),
            hint="point it at Zeek logs as CSV with at least dns and ssl (dns.csv, ssl.csv, conn.csv, http.csv)",
        )
    ts, stream, hosts = [], [], []
    for s, (_, log, qtype) in enumerate(specs):
        df = pd.read_csv(d / f"{log}.csv", dtype={"orig_h": str}).dropna(subset=["ts", "orig_h"])
        if qtype is not None:
            df = df[df["qtype_name"] == qtype]
        ts.append(np.round(df["ts"].to_numpy(np.float64) * 1000).astype(np.int64))
        stream.append(np.full(len(df), s))
        hosts.append(df["orig_h"].to_numpy(object))
    t, st = np.concatenate(ts), np.concatenate(stream)
    codes = pd.factorize(np.concatenate(hosts))[0].astype(np.int64)
    order = np.lexsort([np.arange(len(t)), st, t])[:tuples]
    return [a for a, _, _ in specs], {"ts": t[order], "stream": st[order], "host": codes[order]}


def query_text(aliases: list[str]) -> str:
    """The W-join: ``host`` chained, a window per pair but (first, last) (Form 3)."""
    n = len(aliases)
    pairs = [(i, i + 1) for i in range(n - 1)] + [(i, i + 2) for i in range(n - 2)]
    pairs = [p for p in pairs if p != (0, n - 1)]
    windows = " AND ".join(f"WINDOW({aliases[a]}, {aliases[b]}) = {w}" for (a, b), w in zip(pairs, WINDOWS_MS))
    chain = " AND ".join(f"{aliases[i]}.host = {aliases[i + 1]}.host" for i in range(n - 1))
    return f"SELECT * FROM {', '.join(aliases)} {windows} WHERE {chain}"


def zeek_point(tuples: int, data_dir: str | Path | None = None) -> dict:
    """Every applicable W-join operator on the Zeek W-join; ``skipped``: the others, with their reason."""
    from slidewise.bench.wjoin import _planned, measure_all

    aliases, data = zeek_streams(tuples, data_dir)
    text = query_text(aliases)
    query = parse_wjoin(text)
    skipped = {}
    for a in ALGORITHMS:
        try:
            WJOINS[a].check(query)
        except SlidewiseError as e:
            skipped[a] = str(e)
    runs = measure_all([a for a in ALGORITHMS if a not in skipped], text, data)
    span_s = max(int(data["ts"][-1] - data["ts"][0]), 1) / 1000.0
    counts = np.bincount(data["stream"], minlength=len(aliases))
    rates = [float(c) / span_s for c in counts]
    distinct = [int(len(np.unique(data["host"][data["stream"] == s]))) or 1 for s in range(len(aliases))]
    return {
        "query": text,
        "streams": {a: int(c) for a, c in zip(aliases, counts)},
        "tuples": int(len(data["ts"])),
        "span_s": round(span_s, 3),
        "runs": runs,
        "skipped": skipped,
        "answers_agree": len({(r["results"], r["checksum"]) for r in runs.values()}) == 1,
        **_planned(text, rates, distinct),
    }
