"""The query manager's windows on disk, so that a restarted service answers as an uninterrupted one.

A snapshot of a directory holds, per stream, each sub-window of the window as an Arrow IPC file
``NAME-VERSION.arrow`` (written once: a closed sub-window never changes) and ``NAME-open.arrow``:
the rows of the open sub-window, with the window's place (the origin, the next version, the open
sub-window's start) and the caller's ``extra`` (the sources' read offsets) in its schema metadata.
:func:`save` writes the new sub-windows, then replaces the open files (whole or not at all), then
deletes the sub-windows that left the window: a crash at any point leaves a consistent snapshot.
Its size is bounded by the windows (``n`` sub-windows and the open one per stream).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from slidewise.errors import ExecutionError
from slidewise.runtime.outputs import write_atomic
from slidewise.runtime.sources.base import KIND_DTYPE

if TYPE_CHECKING:
    from slidewise.manager.core import QueryManager

__all__ = ["extra", "load", "save"]

_KEY = b"slidewise-window"
_HINT = "delete the state directory's windows/ and offsets.json to read the sources again from their start"


def _table(cols: dict[str, np.ndarray], meta: dict | None = None) -> bytes:
    table = pa.table({a: pa.array(v) for a, v in cols.items()})
    if meta is not None:
        table = table.replace_schema_metadata({_KEY: json.dumps(meta).encode()})
    sink = pa.BufferOutputStream()
    with ipc.new_file(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue().to_pybytes()


def _read(path: Path) -> tuple[dict[str, np.ndarray], dict]:
    table = ipc.open_file(pa.py_buffer(path.read_bytes())).read_all()
    meta = json.loads((table.schema.metadata or {}).get(_KEY, b"{}"))
    return {a: table.column(a).to_numpy(zero_copy_only=False) for a in table.column_names}, meta


def save(qm: QueryManager, root: str | Path, extra: dict) -> None:
    """Snapshot ``qm``'s windows and open sub-windows into ``root`` with ``extra`` (call it on the thread that
    appends: the windows do not move meanwhile)."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    for stream, window in qm.windows.items():
        for sub in window.contents():
            path = root / f"{stream}-{sub.version}.arrow"
            if not path.exists():
                write_atomic(path, _table(sub.cols), "state")
        names = ["ts", *qm.schemas[stream]]
        parts = qm.buffers[stream]
        dtypes = {"ts": np.dtype(np.int64), **{a: KIND_DTYPE[k] for a, k in qm.schemas[stream].items()}}
        cols = {a: np.concatenate([p[a] for p in parts]) if parts else np.zeros(0, dtypes[a]) for a in names}
        meta = {"origin": window.origin, "next_version": window.next_version, "open": qm.open[stream], "extra": extra}
        write_atomic(root / f"{stream}-open.arrow", _table(cols, meta), "state")
        first = window.versions(window.n)[0] if window.next_version else 0
        for path in root.glob(f"{stream}-*.arrow"):
            version = path.stem[len(stream) + 1 :]
            if version.isdigit() and int(version) < first:
                path.unlink(missing_ok=True)


def extra(root: str | Path) -> dict | None:
    """The ``extra`` of the snapshot in ``root`` (None: no snapshot)."""
    found = sorted(Path(root).glob("*-open.arrow"))
    if not found:
        return None
    try:
        return _read(found[0])[1]["extra"]
    except (OSError, ValueError, KeyError, pa.ArrowException) as e:
        raise ExecutionError(f"cannot read the windows' snapshot {found[0]}: {e}", hint=_HINT) from None


def load(qm: QueryManager, root: str | Path) -> dict | None:
    """Put the windows :func:`save` wrote into ``qm`` (fresh, nothing appended yet); the ``extra`` saved with
    them (None: no snapshot)."""
    root = Path(root)
    extra = None
    for stream, window in qm.windows.items():
        path = root / f"{stream}-open.arrow"
        if not path.exists():
            continue
        try:
            cols, meta = _read(path)
            window.origin, window.next_version = int(meta["origin"]), 0
            last = int(meta["next_version"])
            window.next_version = max(0, last - window.n)
            for version in range(window.next_version, last):
                window.write(_read(root / f"{stream}-{version}.arrow")[0])
        except (OSError, ValueError, KeyError, pa.ArrowException) as e:
            raise ExecutionError(f"cannot read the windows' snapshot {path}: {e}", hint=_HINT) from None
        qm.open[stream] = None if meta["open"] is None else int(meta["open"])
        qm.buffers[stream] = [cols] if len(cols["ts"]) else []
        extra = meta["extra"]
    return extra
