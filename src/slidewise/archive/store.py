"""The archive's files: sorted Parquet sub-indices and a manifest swapped atomically.

Each cell of a :class:`~slidewise.archive.layout.Layout` is one or more
Parquet files sorted by (key, exp), written in row groups of ``row_group_rows``
rows, so a probe reads only the row groups whose key statistics can hold the
key. ``manifest.json`` names the live files with their row counts and
smallest and largest ``exp``. An update writes its new files, fsyncs them,
writes ``manifest.json.tmp``, fsyncs it and renames it over ``manifest.json``
(then fsyncs the directory): a process killed at any point reopens to the
last renamed manifest. A writer that replays input (the Spark engine's
micro-batches) keeps its state under ``writer`` in the manifest: the last
batch applied and the files of rows not yet due, swapped with the rest.
Files of neither the current nor the previous
manifest are removed by the next update, so a reader that listed the
previous manifest keeps its files for one more update.
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from slidewise.errors import SourceError

MANIFEST = "manifest.json"
#: manifest format version
FORMAT = 1


def fsync_dir(path: Path) -> None:
    """Make a rename or a new file in ``path`` durable (no-op where directories cannot be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_parquet(path: Path, table: pa.Table, row_group_rows: int) -> None:
    """Write ``table`` to ``path`` in row groups of ``row_group_rows`` and fsync it."""
    with open(path, "wb") as f:
        pq.write_table(table, f, row_group_size=row_group_rows)
        f.flush()
        os.fsync(f.fileno())


def write_manifest(root: Path, data: dict) -> None:
    """Replace the manifest atomically: temporary, fsync, rename, fsync of the directory."""
    tmp = root / (MANIFEST + ".tmp")
    with open(tmp, "w") as f:
        json.dump(data, f, sort_keys=True)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, root / MANIFEST)
    fsync_dir(root)


def read_manifest(root: Path) -> dict:
    """The manifest of the archive at ``root``; a SourceError when there is none or it is not one."""
    path = root / MANIFEST
    if not path.is_file():
        raise SourceError("no archive here (manifest.json missing)", location=str(root), hint="create one with slidewise run ... --archive DIR --archive-key COL")
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise SourceError(f"the archive's manifest cannot be read: {exc}", location=str(path), hint="restore the directory from a copy") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise SourceError("not a slidewise archive manifest (or of another format version)", location=str(path), hint=f"expected format {FORMAT}")
    return data


def encode_schema(schema: pa.Schema | None) -> str | None:
    return None if schema is None else base64.b64encode(schema.serialize().to_pybytes()).decode("ascii")


def decode_schema(text: str | None) -> pa.Schema | None:
    return None if text is None else pa.ipc.read_schema(pa.py_buffer(base64.b64decode(text)))


def live_names(manifest: dict) -> list[str]:
    """The file names the manifest lists, cell by cell."""
    return [f["file"] for cell in sorted(manifest["cells"], key=int) for f in manifest["cells"][cell]]


def referenced(manifest: dict) -> set[str]:
    """The files a manifest keeps: its live files, the previous manifest's, and a writer's pending rows."""
    writer = manifest.get("writer") or {}
    return set(live_names(manifest)) | set(manifest["previous"]) | set(writer.get("pending", []))


def collect_garbage(root: Path, keep: set[str]) -> int:
    """Remove the archive's Parquet files and temporaries not in ``keep``; the number removed."""
    removed = 0
    for path in root.iterdir():
        if (path.suffix == ".parquet" and path.name not in keep) or path.name == MANIFEST + ".tmp":
            path.unlink(missing_ok=True)
            removed += 1
    return removed
