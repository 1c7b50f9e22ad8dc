"""What a measurement ran on, and its JSON record: used by calibration and the benchmarks."""

from __future__ import annotations

import json
import os
import platform
import re
import sys
from pathlib import Path
from typing import Any

MB = 1024 * 1024

__all__ = ["MB", "machine_info", "write_json"]


def machine_info() -> dict[str, Any]:
    """What the numbers were measured on."""
    import numpy

    info: dict[str, Any] = {
        "cpu_count": os.cpu_count(),
        "load_average_1min": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "numpy": numpy.__version__,
        "platform": platform.platform(),
        "machine": platform.machine(),
    }
    try:
        import psutil

        info["cpu_count_physical"] = psutil.cpu_count(logical=False)
        info["memory_total_mb"] = round(psutil.virtual_memory().total / MB)
    except Exception:  # noqa: BLE001 - optional detail
        pass
    try:
        with open("/proc/cpuinfo") as fh:
            m = re.search(r"^model name\s*:\s*(.+)$", fh.read(), re.MULTILINE)
        if m:
            info["cpu_model"] = m.group(1).strip()
    except OSError:
        pass
    for mod in ("duckdb", "pandas", "pyarrow"):
        try:
            info[mod] = __import__(mod).__version__
        except Exception:  # noqa: BLE001 - optional detail
            pass
    try:
        from importlib.metadata import version

        info["slidewise"] = version("slidewise")
    except Exception:  # noqa: BLE001 - optional detail
        pass
    return info


def write_json(path: str | Path, data: Any) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, sort_keys=False, default=_jsonable) + "\n")
    return path


def _jsonable(obj: Any) -> Any:
    if hasattr(obj, "item"):  # numpy scalars
        return obj.item()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")
