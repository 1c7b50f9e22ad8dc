"""Shared machinery of the ``slidewise bench`` drivers.

* :func:`run_isolated` runs one measurement in a *fresh* interpreter
  (``multiprocessing`` spawn context), so every algorithm starts from the same
  clean heap and its peak memory is its own. The child talks back through a
  pipe: progress messages while it runs, then one result dict (or a
  traceback). A hard timeout ends the child the parent started.
* :class:`PeakMemory` measures the peak resident set size of the current
  process above a baseline taken when it starts (after the inputs are built).
  On Linux the kernel's high-water mark is reset through
  ``/proc/self/clear_refs`` so the peak is the one of the measured region;
  elsewhere a sampling thread (psutil) and ``getrusage`` stand in.
* :func:`save_png`, :func:`nice_round`; :func:`machine_info` and :func:`write_json`
  come from :mod:`slidewise.machine` (calibration uses them too).

Wall-clock numbers are only ever reported, never asserted.
"""

from __future__ import annotations

import multiprocessing
import re
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from slidewise.machine import MB, machine_info, write_json

__all__ = ["MB", "PeakMemory", "machine_info", "nice_round", "run_isolated", "write_json"]

#: messages a child sends: ("progress", done), ("target", n), ("result", dict), ("error", text)
Send = Callable[[str, Any], None]


# ---------------------------------------------------------------- memory ----


def _proc_status_kb(field: str) -> int | None:
    try:
        with open("/proc/self/status") as fh:
            m = re.search(rf"^{field}:\s+(\d+)\s*kB", fh.read(), re.MULTILINE)
    except OSError:
        return None
    return int(m.group(1)) if m else None


def current_rss_mb() -> float:
    """Resident set size of this process now, in MB."""
    kb = _proc_status_kb("VmRSS")
    if kb is not None:
        return kb / 1024
    import psutil

    return psutil.Process().memory_info().rss / MB


def _reset_high_water_mark() -> bool:
    """Reset the kernel's peak-RSS counter (Linux >= 4.0); ``False`` if not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        return False
    hwm, rss = _proc_status_kb("VmHWM"), _proc_status_kb("VmRSS")
    return hwm is not None and rss is not None and hwm <= rss + 1024


def release_free_memory() -> None:
    """Collect garbage and return the allocator's free pages to the OS (glibc ``malloc_trim``).

    Without it, memory freed while the inputs were built stays resident and
    is silently reused by the measured run, hiding part of its peak.
    """
    import gc

    gc.collect()
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


class PeakMemory:
    """Peak RSS of the current process above the RSS at :meth:`start`.

    Use right after the inputs are built (and ``gc.collect()``), around the
    measured region::

        mem = PeakMemory().start()
        ...  # run
        mem.stop()  # -> mem.peak_mb, mem.baseline_mb, mem.peak_above_baseline_mb
    """

    def __init__(self, sample_interval: float = 0.005) -> None:
        self.sample_interval = sample_interval
        self.method = ""
        self.baseline_mb = 0.0
        self.peak_mb = 0.0
        self._sampled = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> PeakMemory:
        release_free_memory()
        if _reset_high_water_mark():
            self.method = "VmHWM (reset via /proc/self/clear_refs)"
        else:
            self.method = "psutil sampling every 5 ms"
            self._thread = threading.Thread(target=self._sample, daemon=True)
        self.baseline_mb = current_rss_mb()
        self._sampled = self.baseline_mb
        if self._thread is not None:
            self._thread.start()
        return self

    def _sample(self) -> None:
        import psutil

        proc = psutil.Process()
        while not self._stop.wait(self.sample_interval):
            self._sampled = max(self._sampled, proc.memory_info().rss / MB)

    def stop(self) -> PeakMemory:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self.peak_mb = max(self._sampled, current_rss_mb())
        else:
            self.peak_mb = (_proc_status_kb("VmHWM") or 0) / 1024
        return self

    @property
    def peak_above_baseline_mb(self) -> float:
        return max(0.0, self.peak_mb - self.baseline_mb)

    def as_dict(self) -> dict[str, Any]:
        return {
            "peak_rss_mb": round(self.peak_above_baseline_mb, 2),
            "baseline_rss_mb": round(self.baseline_mb, 2),
            "peak_rss_total_mb": round(self.peak_mb, 2),
            "memory_method": self.method,
        }


# ------------------------------------------------------------ subprocess ----


def _child_entry(target: Callable[[dict, Send], dict], spec: dict, conn) -> None:
    """Body of the spawned child: run ``target(spec, send)`` and pipe back the result."""

    def send(kind: str, payload: Any) -> None:
        conn.send((kind, payload))

    try:
        send("result", target(spec, send))
    except BaseException:  # noqa: BLE001 - reported to the parent, which goes on
        send("error", traceback.format_exc())
    finally:
        conn.close()


def run_isolated(target: Callable[[dict, Send], dict], spec: dict, *, on_message: Callable[[str, Any], None] | None = None, timeout: float | None = None) -> dict:
    """Run ``target(spec, send)`` in a fresh spawned interpreter and return its dict.

    ``target`` must be a module-level function (it is imported by name in the
    child). Messages other than the result go to ``on_message``. On an error
    or timeout the returned dict has an ``"error"`` key instead.
    """
    ctx = multiprocessing.get_context("spawn")
    parent_conn, child_conn = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child_entry, args=(target, spec, child_conn), daemon=True)
    proc.start()
    child_conn.close()
    deadline = None if timeout is None else time.monotonic() + timeout
    outcome: dict | None = None
    try:
        while outcome is None:
            if deadline is not None and time.monotonic() > deadline:
                outcome = {"error": f"timed out after {timeout:.0f} s"}
                break
            if not parent_conn.poll(0.1):
                if not proc.is_alive() and not parent_conn.poll(0):
                    outcome = {"error": f"child exited with code {proc.exitcode} without a result"}
                continue
            try:
                kind, payload = parent_conn.recv()
            except EOFError:
                outcome = {"error": f"child exited with code {proc.exitcode} without a result"}
                break
            if kind == "result":
                outcome = payload
            elif kind == "error":
                outcome = {"error": payload.strip().splitlines()[-1], "traceback": payload}
            elif on_message is not None:
                on_message(kind, payload)
    finally:
        proc.join(timeout=5)
        if proc.is_alive():
            proc.terminate()  # only the child started above
            proc.join(timeout=5)
        parent_conn.close()
    return outcome


# ------------------------------------------------------------------ misc ----


def nice_round(n: float, digits: int = 2) -> int:
    """Round down to ``digits`` significant digits (23456 -> 23000), at least 1."""
    n = int(n)
    if n < 10**digits:
        return max(n, 1)
    scale = 10 ** (len(str(n)) - digits)
    return n // scale * scale


def save_png(fig, path: str | Path) -> Path:
    """Write a matplotlib figure (Agg) to ``path`` and close it."""
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path


def pyplot():
    """``matplotlib.pyplot`` on the Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


# --------------------------------------------------------- streams on disk ----


def save_streams(path: str | Path, streams: list[dict]) -> Path:
    """Write generated streams (one dict of equal-length arrays per stream) to an ``.npz``."""
    import numpy as np

    arrays = {f"s{i}.{k}": np.asarray(v) for i, s in enumerate(streams) for k, v in s.items()}
    arrays["n_streams"] = np.array(len(streams))
    path = Path(path)
    np.savez(path, **arrays)
    return path


def load_streams(path: str | Path, n_tuples: int | None = None) -> list[dict]:
    """Read streams written by :func:`save_streams` and give every tuple its global ``pos``.

    Global processing order is ``(ts, stream index, input order)`` (docs/semantics.md);
    ``pos`` is the rank in it. Only the first ``n_tuples`` positions are kept
    (a prefix of the input in processing order). Each stream's arrays are
    ordered by ``pos``.
    """
    import numpy as np

    with np.load(path) as data:
        n = int(data["n_streams"])
        streams = [{k.split(".", 1)[1]: data[k] for k in data.files if k.startswith(f"s{i}.")} for i in range(n)]
    for s in streams:
        if len(s["ts"]) and np.any(np.diff(s["ts"]) < 0):
            order = np.argsort(s["ts"], kind="stable")
            for k in s:
                s[k] = s[k][order]
    ts = np.concatenate([s["ts"] for s in streams]).astype(np.int64)
    sid = np.concatenate([np.full(len(s["ts"]), i, np.int64) for i, s in enumerate(streams)])
    local = np.concatenate([np.arange(len(s["ts"]), dtype=np.int64) for s in streams])
    order = np.lexsort((local, sid, ts))
    pos = np.empty(len(ts), np.int64)
    pos[order] = np.arange(len(ts), dtype=np.int64)
    start = 0
    out = []
    for s in streams:
        m = len(s["ts"])
        p = pos[start : start + m]
        start += m
        keep = p < n_tuples if n_tuples is not None else slice(None)
        d = {k: np.ascontiguousarray(v[keep]).astype(np.int64, copy=False) for k, v in s.items()}
        d["pos"] = np.ascontiguousarray(p[keep])
        out.append(d)
    return out
