"""``slidewise bench archive``: the doubly partitioned index against the wave index (Golab's thesis §4.4).

Rows with uniform random keys (100 values) and lifetimes (1 .. S), and a text
payload, enter an archive of each variant (:mod:`slidewise.archive`) by
periodic updates of ``rate`` rows (``fluctuate``: the rate varies at random
by up to 4x, §4.4.4). After ``S / Δ`` updates fill the index, ``updates``
more are measured; each is followed by a probe of a random key and a scan
of the whole archive (§4.4.1). Per variant and n: seconds per update, probe
and scan (wall clock, means), and the update cost that does not depend on
the machine: rows read plus rows written per update, and sub-indices touched.
Every probe and scan is checked against the archive's row count and a plain
list of the live rows. Results go to ``archive.json`` and ``archive.png``.

:func:`run_memory_check` (``--memory-budget MB``) is the acceptance check
of an archive larger than memory: in a fresh spawned process, started as
``slidewise run --archive`` starts (Arrow's pool picked before pyarrow is
imported, :mod:`slidewise.archive.memory`), updates of incompressible
rows, each 1/8 of the budget, fill an archive whose working set is given
a quarter of the budget (``memory_mb``) until its live rows hold ``times`` x the
budget (Arrow bytes), then more updates, probes and scans run; the peak RSS
above the ready process's (VmHWM), which also holds the rows being added and
the allocator's slack, must stay within the budget. The Arrow pool's peak
bytes are reported too. ``address_space_mb`` (``--address-space``) also caps
the process's address space (RLIMIT_AS) at that much above the ready process.
Results go to ``archive-memory.json``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa

from slidewise.archive import Archive, memory
from slidewise.bench.common import MB, PeakMemory, pyplot, run_isolated, save_png
from slidewise.machine import machine_info, write_json

__all__ = ["run_archive_bench", "run_memory_check", "summary"]

VARIANTS = ("rebuild", "norebuild", "rebuild-chr", "r-ins", "d-ins")
NS = (4, 9, 16, 25)
KEYS = 100
EVERY = 100


def _batch(rng, now: int, rows: int, lifetime: int) -> pa.Table:
    ts = now - rng.integers(0, EVERY, rows)
    return pa.table(
        {
            "k": rng.integers(0, KEYS, rows),
            "ts": ts,
            "exp": ts + rng.integers(1, lifetime + 1, rows),
            "payload": pa.array(["x" * 100] * rows),
        }
    )


def measure(root: Path, variant: str, n: int, *, rate: int, slots: int, updates: int, fluctuate: bool, seed: int) -> dict:
    """One variant at one n: fill with ``slots`` updates, then time ``updates`` updates, probes and scans."""
    rng = np.random.default_rng(seed)
    lifetime = slots * EVERY
    archive = Archive.create(root, key="k", variant=variant, n=n, every=EVERY, max_lifetime=lifetime, row_group_rows=4096)
    live: Counter = Counter()
    totals = {"update_s": 0.0, "probe_s": 0.0, "scan_s": 0.0, "rows_io": 0, "cells_touched": 0, "files_read": 0, "probe_rows": 0, "correct": True}
    for j in range(1, slots + updates + 1):
        now = j * EVERY
        rows = int(rate * rng.uniform(0.25, 1.0) * 2) if fluctuate else rate  # up to 4x between slow and bursty updates
        table = _batch(rng, now, rows, lifetime)
        t0 = time.perf_counter()
        got = archive.update(now, table)
        spent = time.perf_counter() - t0
        keys, exps = table.column("k").to_numpy(), table.column("exp").to_numpy()
        live.update(int(k) for k in keys[exps >= now])
        if j <= slots:
            continue
        totals["update_s"] += spent
        totals["rows_io"] += got["rows_read"] + got["rows_written"]
        totals["cells_touched"] += got["cells_touched"]
        totals["files_read"] += got["files_read"]
        key = int(rng.integers(0, KEYS))
        t0 = time.perf_counter()
        probed = archive.probe(key)
        totals["probe_s"] += time.perf_counter() - t0
        t0 = time.perf_counter()
        scanned = sum(t.num_rows for t in archive.scan())
        totals["scan_s"] += time.perf_counter() - t0
        totals["probe_rows"] += probed.num_rows
        totals["correct"] &= scanned == archive.rows() and bool((probed.column("exp").to_numpy() >= now).all())
    # the plain list: every row inserted that is still alive, per key
    alive = archive.read().column("k").to_numpy()
    totals["correct"] &= len(alive) == archive.rows()
    per = {k: v / updates for k, v in totals.items() if k not in ("correct",)}
    return {
        "variant": variant,
        "n": archive.layout.n,
        "g": archive.layout.g,
        "e": archive.layout.e,
        "rows": archive.rows(),
        **per,
        "correct": totals["correct"],
        "live_files": len(archive.live_files()),
    }


def run_archive_bench(
    out_dir: str | Path = "bench-results",
    *,
    rate: int = 2000,
    slots: int = 32,
    updates: int = 16,
    ns: tuple[int, ...] = NS,
    variants: tuple[str, ...] = VARIANTS,
    fluctuate: bool = False,
    seed: int = 0,
    progress=None,
) -> dict:
    """Every variant at every n; writes ``archive.json`` and ``archive.png``."""
    work = Path(tempfile.mkdtemp(prefix="slidewise-archive-bench-"))
    points = []
    try:
        for n in ns:
            for variant in variants:
                if progress:
                    progress(f"archive: {variant} n={n}")
                points.append(measure(work / f"{variant}-{n}", variant, n, rate=rate, slots=slots, updates=updates, fluctuate=fluctuate, seed=seed))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report = {
        "benchmark": "archive",
        "rate": rate,
        "slots_per_lifetime": slots,
        "every": EVERY,
        "keys": KEYS,
        "updates_measured": updates,
        "fluctuate": fluctuate,
        "machine": machine_info(),
        "points": points,
    }
    report["summary"] = summary(report)
    out = Path(out_dir)
    write_json(out / "archive.json", report)
    plot(report, out / "archive.png")
    return report


def memory_child(spec: dict, send) -> dict:
    """Fill an archive to ``times`` x ``budget_mb`` of live rows by updates, then update, probe and scan it; peak RSS."""
    import gc

    rng = np.random.default_rng(spec["seed"])
    budget, slots, rate = spec["budget_mb"] * MB, spec["slots"], spec["rate"]
    archive = Archive.create(
        spec["dir"], key="k", variant=spec["variant"], n=spec["n"], every=EVERY, max_lifetime=slots * EVERY, row_group_rows=4096, memory_mb=spec["budget_mb"] / 4
    )

    def batch(now: int) -> pa.Table:
        ts = now - rng.integers(0, EVERY, rate)
        payload = pa.FixedSizeBinaryArray.from_buffers(pa.binary(64), rate, [None, pa.py_buffer(rng.bytes(64 * rate))])
        return pa.table({"k": rng.integers(0, KEYS, rate), "ts": ts, "exp": ts + rng.integers(1, slots * EVERY + 1, rate), "payload": payload})

    first = batch(EVERY)
    row_bytes = first.nbytes / first.num_rows  # fixed-width rows: the live rows' Arrow size is rows x row_bytes
    archive.update(EVERY, first)  # warm-up: every code path imported before the baseline
    archive.probe(0)
    del first
    gc.collect()
    limit = _limit_address_space(spec["address_space_mb"])
    mem = PeakMemory().start()
    j, filled, probes, started = 1, 0, 0, time.perf_counter()
    while filled < spec["after"]:
        j += 1
        archive.update(j * EVERY, batch(j * EVERY))
        if filled or archive.rows() * row_bytes >= spec["times"] * budget:
            filled += 1
            for key in rng.integers(0, KEYS, 4):
                probes += archive.probe(int(key)).num_rows >= 0
            probes += sum(1 for _ in archive.scan(10, 20)) >= 0
        if j > 4 * slots:
            break
    mem.stop()
    if limit is not None:
        _limit_address_space(None)
    size = archive.rows() * row_bytes
    disk = sum(Path(f).stat().st_size for f in archive.live_files())
    return {
        "updates": j,
        "rows": archive.rows(),
        "archive_mb": round(size / MB, 1),
        "disk_mb": round(disk / MB, 1),
        "probes": probes,
        "seconds": round(time.perf_counter() - started, 1),
        "update_mb": round(batch(0).nbytes / MB, 2),
        "arrow_pool": pa.default_memory_pool().backend_name,
        "arrow_peak_mb": round(pa.default_memory_pool().max_memory() / MB, 2),
        "address_space_limit_mb": limit,
        **mem.as_dict(),
    }


def _limit_address_space(extra_mb: float | None) -> float | None:
    """Cap this process's address space (RLIMIT_AS) at its present size plus ``extra_mb`` (None: lift the cap); the cap in MB."""
    try:
        import resource
    except ImportError:
        return None
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    if extra_mb is None:
        resource.setrlimit(resource.RLIMIT_AS, (hard, hard))
        return None
    with open("/proc/self/status") as status:
        size = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:"))
    cap = size + int(extra_mb * MB)
    resource.setrlimit(resource.RLIMIT_AS, (cap if hard == resource.RLIM_INFINITY else min(cap, hard), hard))
    return round(cap / MB, 1)


def run_memory_check(
    out_dir: str | Path = "bench-results",
    *,
    budget_mb: float = 8,
    times: int = 10,
    variant: str = "rebuild",
    n: int = 64,
    after: int = 4,
    pool: str = "jemalloc",
    address_space_mb: float | None = None,
) -> dict:
    """An archive of ``times`` x ``budget_mb`` of rows, updated and probed in a process whose peak RSS
    (above the ready process) must stay within ``budget_mb``; writes ``archive-memory.json``."""
    rate = int(budget_mb * MB / 8 / 96)  # ~96 Arrow bytes a row: an update brings 1/8 of the budget
    slots = int(2 * 1.5 * times * budget_mb * MB / (96 * rate))  # lifetimes average S / 2 updates
    work = Path(tempfile.mkdtemp(prefix="slidewise-archive-memory-"))
    spec = {"dir": str(work / "ar"), "budget_mb": budget_mb, "times": times, "variant": variant, "n": n, "rate": rate, "slots": slots, "after": after, "seed": 0}
    spec["address_space_mb"] = address_space_mb
    # the child starts as `slidewise run --archive` does (slidewise.archive.memory.prepare): Arrow's pool picked before pyarrow is imported
    env = {memory.POOL_VARIABLE: pool, memory.JEMALLOC_VARIABLE: memory.JEMALLOC_CONF}
    before = {k: os.environ.get(k) for k in env}
    os.environ.update({k: before[k] or v for k, v in env.items()})
    try:
        got = run_isolated(memory_child, spec)
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
        shutil.rmtree(work, ignore_errors=True)
    report = {"benchmark": "archive-memory", **{k: v for k, v in spec.items() if k not in ("dir", "seed")}, "machine": machine_info(), **got}
    if "error" not in got:
        report["peak_share"] = round(got["peak_rss_mb"] / budget_mb, 2)  # of the budget
        report["within_budget"] = got["archive_mb"] >= times * budget_mb and got["peak_rss_mb"] <= budget_mb
    write_json(Path(out_dir) / "archive-memory.json", report)
    return report


def _at(report: dict, variant: str, n: int) -> dict | None:
    return next((p for p in report["points"] if p["variant"] == variant and p["n"] == n), None)


def summary(report: dict) -> dict:
    """Per n: doubly partitioned against the wave index — update I/O and time ratios, probe-time factor."""
    out: dict = {"correct": all(p["correct"] for p in report["points"])}
    for n in sorted({p["n"] for p in report["points"]}):
        row = {}
        for ours, wave in (("rebuild", "r-ins"), ("norebuild", "d-ins")):
            a, b = _at(report, ours, n), _at(report, wave, n)
            if a and b:
                row[f"{ours} / {wave}"] = {
                    "update rows read+written": round(a["rows_io"] / max(b["rows_io"], 1), 3),
                    "update time": round(a["update_s"] / b["update_s"], 3),
                    "probe time": round(a["probe_s"] / b["probe_s"], 3),
                    "sub-indices touched": [round(a["cells_touched"], 1), round(b["cells_touched"], 1)],
                }
        out[f"n={n}"] = row
    return out


def plot(report: dict, path: Path) -> Path:
    plt = pyplot()
    fig, axes = plt.subplots(1, 4, figsize=(18, 4))
    for variant in dict.fromkeys(p["variant"] for p in report["points"]):
        pts = sorted((p for p in report["points"] if p["variant"] == variant), key=lambda p: p["n"])
        ns = [p["n"] for p in pts]
        for ax, key in zip(axes, ("update_s", "rows_io", "probe_s", "scan_s")):
            ax.plot(ns, [p[key] for p in pts], marker="o", label=variant)
    for ax, label in zip(axes, ("seconds per update", "rows read + written per update", "seconds per probe", "seconds per scan")):
        ax.set_xlabel("n (sub-indices)")
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(
        f"Golab's thesis §4.4: doubly partitioned vs wave index ({report['rate']} rows per update, lifetimes up to {report['slots_per_lifetime']} updates)", fontsize=10
    )
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    return save_png(fig, path)
