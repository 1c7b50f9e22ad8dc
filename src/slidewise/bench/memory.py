"""Memory scaling of ``slidewise bench joins``: does 10x the input cost 10x the memory?

Two checks, each a fresh spawned process per input size (N and 10·N; by
default 1M and 10M tuples, W2-shaped: same rates, windows and distinct
values), peak RSS measured above the RSS right before the measured region:

* **operator** – the reference operator alone. The input is generated *in
  the child, chunk by chunk* (the paper's generator: one tuple per time
  unit, stream ``i`` with probability ``λ_i/Σλ``, ``a`` uniform on
  ``1..v_i``, ``x`` on ``0..99``; a chunk's positions are its loop indices)
  and each chunk is fed to ``process`` and dropped, so the whole input is
  never held and the peak is the operator's state, its per-chunk work and
  one chunk of input. Only ``process``/``finish`` are timed.
* **engine** – the full pipeline: ``slidewise.run`` over Parquet files
  written by :func:`slidewise.runtime.generate.write_streams` (in another
  child, so the parent stays small), results to a Parquet file,
  ``collect=False``. A tiny warm-up run first imports everything the
  pipeline imports lazily, so the baseline is a ready engine.

``ratio`` = peak above baseline at 10·N / at N; ``ratio_total`` uses the
whole process RSS. Acceptance: 10x the input uses < 1.5x the peak memory.
The engine runs also record ``arrow_pool_max_mb``, the high-water mark of
pyarrow's memory pool (readers and writers), and the input files' row
groups, to tell the engine's own memory from Arrow's buffers.
"""

from __future__ import annotations

import gc
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from slidewise.bench.common import MB, PeakMemory
from slidewise.bench.workloads import REFERENCE, Workload, resolve_algorithm

ACCEPTANCE = "10x input uses < 1.5x the peak memory"
ACCEPT_RATIO = 1.5


def _ratio(small: dict, large: dict, key: str) -> float | None:
    if small.get(key) and large.get(key) is not None:
        return large[key] / small[key]
    return None


# ------------------------------------------------------------ operator ----


def operator_memory_child(spec: dict, send) -> dict:
    """Generate ``n_tuples`` chunk by chunk and feed them to the operator; measure it."""
    import numpy as np

    from slidewise.model.batch import StreamBatch

    wl = Workload.from_dict(spec["workload"])
    n, chunk_rows = int(spec["n_tuples"]), int(spec["chunk_rows"])
    op = resolve_algorithm(spec["algorithm"])(wl.query())
    rng = np.random.default_rng(spec.get("seed", 0))
    rates = np.asarray(wl.rates, dtype=np.float64)
    cdf = np.cumsum(rates / rates.sum())
    results, busy, cpu, state_peak = 0, 0.0, 0.0, 0
    gc.collect()
    mem = PeakMemory().start()
    for start in range(0, n, chunk_rows):
        end = min(n, start + chunk_rows)
        ts = np.arange(start, end, dtype=np.int64)
        choice = np.minimum(np.searchsorted(cdf, rng.random(end - start), side="right"), len(rates) - 1)
        chunk = []
        for i, v in enumerate(wl.distinct):
            t = ts[choice == i]
            chunk.append(StreamBatch(i, t, t, {"a": rng.integers(1, v + 1, len(t), dtype=np.int64), "x": rng.integers(0, 100, len(t), dtype=np.int64)}))
        del ts, choice
        t0, c0 = time.perf_counter(), time.process_time()
        res = op.process(chunk)
        busy += time.perf_counter() - t0
        cpu += time.process_time() - c0
        results += len(res)
        del res, chunk
        state_peak = max(state_peak, op.state_tuples())
        send("progress", end)
    t0 = time.perf_counter()
    results += len(op.finish())
    busy += time.perf_counter() - t0
    mem.stop()
    return {
        "tuples": n,
        "seconds": round(busy, 4),
        "cpu_seconds": round(cpu, 4),
        "tuples_per_s": n / busy if busy else None,
        "results": results,
        "state_tuples_peak": int(state_peak),
        **mem.as_dict(),
    }


def operator_scaling(wl: Workload, sizes: tuple[int, int], runner, chunk_rows: int, seed: int) -> dict:
    """``REFERENCE`` peak RSS on W2-shaped inputs of ``sizes`` tuples, generated in the child."""
    from slidewise.operators.joins import algorithms as registry

    if REFERENCE not in registry():
        return {"algorithm": REFERENCE, "skipped": f"{REFERENCE} is not registered", "ok": None}
    runs = []
    for n in sizes:
        spec = {"workload": asdict(replace(wl, tuples=n)), "n_tuples": n, "algorithm": REFERENCE, "chunk_rows": chunk_rows, "seed": seed}
        res = runner.run(f"memory: {REFERENCE} on {n:,} tuples", operator_memory_child, spec, n, timeout=1800)
        runs.append({"tuples": n, **{k: v for k, v in res.items() if k != "traceback"}})
    small, large = runs
    ratio = _ratio(small, large, "peak_rss_mb")
    out = {
        "level": "operator",
        "algorithm": REFERENCE,
        "workload": f"{wl.name}-shaped (same windows)",
        "input": "generated in the measured process chunk by chunk, never held whole",
        **_scaling(small, large, chunk_rows, ratio),
    }
    if sizes[0] < 2 * chunk_rows:
        out["note"] = f"N = {sizes[0]:,} is below two chunks of {chunk_rows:,} rows: the peak is dominated by per-chunk buffers, so the ratio says little"
    return out


# -------------------------------------------------------------- engine ----


def write_parquet_child(spec: dict, send) -> dict:
    """For every size in ``sizes``: generate that many tuples with the paper's generator and
    write one Parquet file per stream to ``<dir>/<size>/`` (``write_streams``)."""
    import pyarrow.parquet as pq

    from slidewise.runtime.generate import generate, write_streams

    wl = Workload.from_dict(spec["workload"])
    out = {}
    for done, n in enumerate(spec["sizes"], 1):
        streams = generate(list(wl.rates), list(wl.distinct), n, seed=spec.get("seed", 0))
        paths = write_streams(streams, Path(spec["dir"]) / str(n), fmt="parquet", names=wl.aliases)
        del streams
        files = []
        for p in paths:
            meta = pq.ParquetFile(p).metadata
            files.append({"path": str(p), "rows": meta.num_rows, "row_groups": meta.num_row_groups, "bytes": Path(p).stat().st_size})
        out[str(n)] = files
        send("progress", done)
    return {"files": out}


def engine_memory_child(spec: dict, send) -> dict:
    """``slidewise.run`` over the Parquet inputs to a Parquet output; measure the run."""
    import pyarrow as pa

    import slidewise
    from slidewise.runtime.generate import generate, write_streams

    wl = Workload.from_dict(spec["workload"])
    query = wl.query().text
    out_dir = Path(spec["out_dir"])
    # warm-up on a tiny Parquet input: every module the pipeline imports lazily is loaded
    warm = write_streams(generate(list(wl.rates), list(wl.distinct), 2000, seed=1), out_dir / "warmup", fmt="parquet", names=wl.aliases)
    slidewise.run(query, dict(zip(wl.aliases, map(str, warm))), out=str(out_dir / "warmup.parquet"), collect=False, chunk_rows=spec["chunk_rows"])
    for p in (*warm, out_dir / "warmup.parquet"):
        Path(p).unlink(missing_ok=True)
    sources = dict(zip(wl.aliases, spec["sources"]))
    target = out_dir / f"results-{spec['n_tuples']}.parquet"
    gc.collect()
    mem = PeakMemory().start()
    t0 = time.perf_counter()
    result = slidewise.run(query, sources, out=str(target), collect=False, chunk_rows=spec["chunk_rows"])
    wall = time.perf_counter() - t0
    mem.stop()
    stats = result.stats
    out = {
        "tuples": int(sum(stats["inputs"].values())),
        "wall_s": round(wall, 3),
        "tuples_per_s": sum(stats["inputs"].values()) / wall if wall else None,
        "results": int(stats["results"]),
        "algorithm": stats.get("algorithm"),
        "engine_peak_rss_mb": stats.get("peak_rss_mb"),
        "output_bytes": target.stat().st_size,
        "arrow_pool_max_mb": round(pa.default_memory_pool().max_memory() / MB, 2),
        **mem.as_dict(),
    }
    target.unlink(missing_ok=True)
    send("progress", 1)
    return out


def engine_scaling(wl: Workload, sizes: tuple[int, int], tmp: Path, runner, chunk_rows: int, seed: int) -> dict:
    """Full-pipeline peak RSS over Parquet inputs of ``sizes`` tuples."""
    d = tmp / "engine"
    written = runner.run(
        f"memory: write {' and '.join(f'{n:,}' for n in sizes)} tuples",
        write_parquet_child,
        {"workload": asdict(wl), "sizes": list(sizes), "dir": str(d), "seed": seed},
        len(sizes),
        timeout=1800,
    )
    runs = []
    for n in sizes:
        if "error" in written:
            runs.append({"tuples": n, "error": f"writing the input: {written['error']}"})
            continue
        files = written["files"][str(n)]
        spec = {"workload": asdict(replace(wl, tuples=n)), "n_tuples": n, "chunk_rows": chunk_rows, "out_dir": str(d / str(n)), "sources": [f["path"] for f in files]}
        res = runner.run(f"memory: engine on {n:,} tuples", engine_memory_child, spec, 1, timeout=1800)
        runs.append(
            {"tuples": n, **{k: v for k, v in res.items() if k != "traceback"}, "input_files": [{k: f[k] for k in ("rows", "row_groups", "bytes")} for f in files]}
        )
        for f in files:
            Path(f["path"]).unlink(missing_ok=True)
    small, large = runs
    ratio = _ratio(small, large, "peak_rss_mb")
    out = {
        "level": "engine",
        "workload": f"{wl.name}-shaped (same windows)",
        "pipeline": "slidewise.run(query, Parquet sources, out=<file>.parquet, collect=False); inputs written by runtime.generate.write_streams",
        **_scaling(small, large, chunk_rows, ratio),
    }
    keys = ("peak_rss_mb", "arrow_pool_max_mb")
    if all(r.get(k) is not None for r in runs for k in keys):
        grow, arrow = (large[k] - small[k] for k in keys)
        out["growth_mb"] = {"peak_rss": round(grow, 2), "arrow_pool": round(arrow, 2)}
        if grow > 0:
            out["note"] = f"peak RSS grew {grow:.0f} MB from N to 10N, of which pyarrow's memory pool high-water mark (Parquet readers and writer) {arrow:.0f} MB"
    return out


def memory_scaling(wl: Workload, sizes: tuple[int, int], tmp: Path, runner, chunk_rows: int, seed: int, *, engine: bool = True) -> dict[str, Any]:
    """Both checks; the report's ``memory_scaling`` (operator level) and ``memory_scaling_engine``."""
    out = {"memory_scaling": operator_scaling(wl, sizes, runner, chunk_rows, seed)}
    if engine:
        out["memory_scaling_engine"] = engine_scaling(wl, sizes, tmp, runner, chunk_rows, seed)
    return out


def _scaling(small: dict, large: dict, chunk_rows: int, ratio) -> dict:
    """The report fields both memory checks share: the two runs, their ratio and the verdict."""
    return {
        "chunk_rows": chunk_rows,
        "small": small,
        "large": large,
        "ratio": ratio,
        "ratio_total": _ratio(small, large, "peak_rss_total_mb"),
        "acceptance": ACCEPTANCE,
        "ok": None if ratio is None else ratio < ACCEPT_RATIO,
    }
