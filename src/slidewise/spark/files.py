"""One Spark file stream for several FROM streams: one directory listing per micro-batch, fewer scan tasks.

Spark's file stream source lists its directory at every micro-batch and scans
each new file in a task of its own Python ``mapInArrow`` step. Streams whose
directories share a parent and whose files Spark reads with one schema (CSV or
JSON lines with the same columns and ``long`` columns, the same file name
pattern) are read by one file source over ``parent/{dir1,dir2,...}``; each row's
stream follows from its file's directory (a directory read by two aliases
gives each its copy). Spark packs the small files of a micro-batch into fewer
tasks. ``maxFilesPerTrigger`` counts the files of all the group's directories
(``max_files`` per directory). Conversion, ordinals and rejects are those of
:func:`slidewise.spark.ingest.scan_batches`, per stream.
"""

from __future__ import annotations

import functools
import os

import numpy as np
import pyarrow as pa

from slidewise.spark.ingest import DIRECTORY_GLOBS, chained, factorize_runs, file_format, file_path, file_reader, scan_rows
from slidewise.spark.layout import WIRE_DDL, Layout, wire_batch

_SPECIAL = set("{}[]*?\\,")


def groups(recipes: list[dict]) -> list[list[int]]:
    """Stream indexes read together: one list per file source (a stream that cannot share one alone)."""
    keyed: dict[tuple, list[int]] = {}
    out: list[list[int]] = []
    for i, r in enumerate(recipes):
        if r.get("fmt") not in ("csv", "json") or r.get("glob") != DIRECTORY_GLOBS[r["fmt"]] or _SPECIAL & set(os.path.basename(_dir(r))):
            out.append([i])
            continue
        key = (r["fmt"], tuple(r["columns"]), tuple(r.get("longs", ())), r.get("ts_column"), os.path.dirname(_dir(r)))
        if key not in keyed:
            keyed[key] = []
            out.append(keyed[key])
        keyed[key].append(i)
    return out


def data_batches(recipes: list[dict], max_files: int | None) -> int | None:
    """Micro-batches the file sources take to read the files present now (``maxFilesPerTrigger =
    max_files`` per directory, as :func:`group_frame` and :func:`~slidewise.spark.ingest.stream_frame`
    read them), or None if a source is not a file source. Counts every file of a source's format
    (Spark's glob may take fewer): too many only adds micro-batches, never ends the input early."""
    if any(r.get("fmt") not in DIRECTORY_GLOBS for r in recipes):
        return None
    most = 0
    for group in groups(recipes):
        dirs = sorted({_dir(recipes[i]) for i in group})
        recipe = recipes[group[0]]
        files = sum(_files(d, recipe) for d in dirs)
        most = max(most, -(-files // (max_files * len(dirs))) if max_files else int(files > 0))
    return most


def _files(directory: str, recipe: dict) -> int:
    """Files of ``recipe``'s format in ``directory`` (one for a single-file source)."""
    if recipe.get("glob") != DIRECTORY_GLOBS[recipe["fmt"]]:
        return 1
    with os.scandir(directory) as entries:
        return sum(1 for e in entries if e.is_file() and not e.name.startswith((".", "_")) and file_format(e.name) == recipe["fmt"])


def _dir(recipe: dict) -> str:
    return os.path.abspath(recipe["dir"])


def group_frame(spark, indexes: list[int], layout: Layout, recipes: list[dict], ts_column: str, max_files: int | None = None, then=None):
    """The streaming DataFrame (wire layout) of the streams ``indexes`` (one of :func:`groups`), read by one file source."""
    from pyspark.sql import functions as F

    recipe = recipes[indexes[0]]
    dirs = sorted({_dir(recipes[i]) for i in indexes})
    path = dirs[0] if len(dirs) == 1 else os.path.join(os.path.dirname(dirs[0]), "{" + ",".join(os.path.basename(d) for d in dirs) + "}")
    reader = spark.readStream.option("pathGlobFilter", recipe["glob"])
    if max_files:
        reader = reader.option("maxFilesPerTrigger", int(max_files) * len(dirs))
    reader, names = file_reader(reader, recipe)
    raw = reader.load(path).select(
        *[F.col(f"`{c}`").alias(f"v{j}") for j, c in enumerate(names)],
        F.col("_corrupt"),
        F.col("_metadata.file_path").alias("_f"),
        F.col("_metadata.file_block_start").alias("_o"),
    )
    streams = tuple((i, _dir(recipes[i])) for i in indexes)
    body = functools.partial(group_batches, streams=streams, layout=layout, names=tuple(names), ts_column=recipe.get("ts_column", ts_column))
    return raw.mapInArrow(chained(body, then), WIRE_DDL)


def group_batches(batches, *, streams: tuple[tuple[int, str], ...], layout: Layout, names: tuple[str, ...], ts_column: str):
    """``mapInArrow`` body: each batch's rows split by their file's directory, scanned per stream."""
    counters: dict[int, dict] = {s: {} for s, _ in streams}
    for b in batches:
        if b.num_rows == 0:
            continue
        uris, fi = factorize_runs(b.column("_f").to_numpy(zero_copy_only=False))
        dirs = np.asarray([os.path.dirname(file_path(u)) for u in uris], dtype=object)[fi]
        rows = []
        for s, d in streams:
            mask = dirs == d
            if mask.all():
                part = b
            elif mask.any():
                part = b.filter(pa.array(mask))
            else:
                continue
            rows += scan_rows(part, s, layout.streams[s], names, ts_column, counters[s])
        if rows:
            yield wire_batch(rows)
