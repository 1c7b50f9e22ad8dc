"""A failed Spark query as one clear error: what broke, where, and what to do.

:func:`spark_error` reads the text of the exception PySpark raises (the Java
message with its causes and stack) and maps it to one
:class:`~slidewise.errors.SlidewiseError`; the Java stack itself is shown
only with ``run -v`` (Spark's log, :func:`slidewise.spark.session.verbose`).
In order:

* a slidewise error raised in a worker (``slidewise.errors.X: message``),
  e.g. operator state that does not verify (:mod:`slidewise.spark.state_codec`);
* checkpoint damage: a moved checkpoint, a malformed offsets / commits /
  sources log entry, unreadable query metadata, a missing or unreadable state
  file (state loss) — a :class:`~slidewise.errors.CheckpointError` naming the
  checkpoint directory and the damaged file (found by reading the logs when
  Spark's JSON error does not name it);
* a new input file whose CSV header differs from its source's — a
  :class:`~slidewise.errors.SourceError` naming the file and both headers;
* an input path that disappeared;
* anything else: the first line of Spark's message.
"""

from __future__ import annotations

import json
import re
import urllib.parse
from pathlib import Path

from slidewise import errors
from slidewise.errors import CheckpointError, ExecutionError, SlidewiseError, SourceError

RESTORE = "restore the checkpoint directory from a backup, or start over with a new --checkpoint and a new --out"
VERBOSE = "rerun with -v to see Spark's log"
_LOGS = {"offsets": "offsets log entry", "commits": "commits log entry", "sources": "source file log entry", "metadata": "query metadata", "state": "state file"}
_JSON = ("JsonParseException", "JsonEOFException", "MismatchedInputException", "JsonMappingException")
_PATH = r"(file:[^\s,;'\"]+|/[^\s,;'\"]+)"


def spark_error(e: BaseException, *, checkpoint: Path | None = None, streams=()) -> SlidewiseError:
    """One SlidewiseError for the failed query ``e`` (``checkpoint``: the user's checkpoint directory, if any;
    ``streams``: the :class:`~slidewise.spark.layout.StreamInfo` s, to show input files as the user named them)."""
    return error_from_text(exception_text(e), checkpoint=checkpoint, streams=streams)


def exception_text(e: BaseException) -> str:
    """Everything an exception says: its text, a captured Java stack and its causes."""
    parts, seen = [], set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        parts.append(str(e))
        parts.append(str(getattr(e, "_stackTrace", "") or ""))
        e = e.__cause__ or e.__context__
    return "\n".join(p for p in parts if p)


def error_from_text(text: str, *, checkpoint: Path | None = None, streams=()) -> SlidewiseError:
    """The mapping of :func:`spark_error`, on the exception's text."""
    m = re.search(r"slidewise\.errors\.(\w+): ([^\n]+)", text)
    if m:
        cls = getattr(errors, m.group(1), None)
        cls = cls if isinstance(cls, type) and issubclass(cls, SlidewiseError) else ExecutionError
        if cls is CheckpointError:
            return CheckpointError(m.group(2).strip()[:500], location=_where(checkpoint), hint=RESTORE)
        return cls(m.group(2).strip()[:500])
    damage = checkpoint_damage(text, checkpoint)
    if damage is not None:
        return damage
    header = header_change(text, streams)
    if header is not None:
        return header
    if "FileNotFoundException" in text or "PATH_NOT_FOUND" in text:
        m = re.search(r"File " + _PATH + r" does not exist", text) or re.search(r"Path does not exist: " + _PATH, text)
        where = _display(m.group(1), streams) if m else None
        return SourceError("an input file or directory disappeared or became unreadable while the query ran", location=where, hint="check the paths given to --source")
    first = next((line.strip() for line in text.splitlines() if line.strip()), "unknown error")
    return ExecutionError(f"the Spark query failed: {first[:400]}", hint=VERBOSE)


def checkpoint_damage(text: str, checkpoint: Path | None) -> CheckpointError | None:
    """A CheckpointError if ``text`` tells of a damaged, moved or incomplete checkpoint, else None."""
    where = _where(checkpoint)
    m = re.search(r"Wrong basePath (\S+) for the root path: (\S+)", text)
    if m:
        return CheckpointError(
            f"the checkpoint was written at another path (its logs name {_plain(m.group(2))}); a Spark checkpoint cannot be moved or copied",
            location=where,
            hint="run with --checkpoint where it was written, or start over with a new --checkpoint and a new --out",
        )
    m = re.search(r"Checksum error: " + _PATH, text)
    if m and _inside(m.group(1), checkpoint):
        return _damaged(_plain(m.group(1)), checkpoint, "fails its checksum")
    m = re.search(r"Failed to read log file " + _PATH, text)
    if m or "MALFORMED_LOG_FILE" in text:
        file = _plain(m.group(1)).rstrip(".") if m else None
        return _damaged(file, checkpoint, "cannot be read (malformed)")
    if checkpoint is not None and any(k in text for k in _JSON):
        bad = bad_log_entry(Path(checkpoint) / "query")
        if bad is not None:
            return _damaged(str(bad), checkpoint, "cannot be read (not valid JSON)")
    if ("StreamMetadata" in text and "Json" in text) or "Error reading stream metadata" in text:
        m = re.search(r"Error reading stream metadata from " + _PATH, text)
        file = _plain(m.group(1)) if m else (str(Path(checkpoint) / "query" / "metadata") if checkpoint else None)
        return _damaged(file, checkpoint, "cannot be read")
    if "MISSING_STATE_DIRECTORY" in text or "state directory is empty or missing" in text:
        state_dir = str(Path(checkpoint) / "query" / "state") if checkpoint is not None else None
        return _damaged(state_dir, checkpoint, "is empty or missing: the checkpoint lost its operator state")
    state = any(k in text for k in ("CANNOT_LOAD_STATE_STORE", "CANNOT_READ_STREAMING_STATE_FILE", "CANNOT_READ_STATE", "STATE_STORE_", "RocksDBException"))
    missing = [_plain(p) for p in re.findall(r"(?:streaming state file of|File) " + _PATH + r" does not exist", text)]
    inside = [p for p in missing if _inside(p, checkpoint)]
    if inside:
        what = "is missing: the checkpoint lost operator state" if "/state/" in inside[0] else "is missing"
        return _damaged(inside[0], checkpoint, what)
    if state:
        paths = [_plain(p) for p in re.findall(_PATH, text)]
        file = next((p for p in paths if "/state/" in p and _inside(p, checkpoint)), None)
        return _damaged(file, checkpoint, "cannot be loaded: the checkpoint's operator state is damaged")
    return None


def bad_log_entry(query_dir: Path) -> Path | None:
    """The first entry of a Spark checkpoint's logs (metadata, offsets, commits, sources) that is not
    valid JSON lines, or None (Spark's JSON errors do not name the file)."""
    meta = query_dir / "metadata"
    if meta.is_file() and not _json_lines(meta, versioned=False):
        return meta
    sources = query_dir / "sources"
    logs = [query_dir / "offsets", query_dir / "commits", *(sorted(sources.iterdir()) if sources.is_dir() else [])]
    for log in logs:
        if not log.is_dir():
            continue
        for entry in sorted(log.iterdir(), key=lambda p: (len(p.name), p.name)):
            if entry.is_file() and not entry.name.startswith(".") and not _json_lines(entry, versioned=True):
                return entry
    return None


def _json_lines(path: Path, *, versioned: bool) -> bool:
    """Whether ``path`` reads as a Spark log entry: ``vN`` then JSON (or ``-``) lines; metadata: JSON."""
    try:
        lines = path.read_text(encoding="utf-8").split("\n")
        if versioned and not re.fullmatch(r"v\d+", lines.pop(0).strip()):
            return False
        for line in lines:
            if line.strip() and line.strip() != "-":
                json.loads(line)
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return True


def header_change(text: str, streams=()) -> SourceError | None:
    """A SourceError naming a new CSV file whose header differs from its source's, else None."""
    if "CSV header does not conform" not in text and "Number of column in CSV header" not in text:
        return None
    m = re.search(r"CSV file: " + _PATH, text)
    uri = m.group(1) if m else None
    shown = _display(uri, streams) if uri else "a new file"
    have = re.search(r"Header: ([^\n]*)", text)
    want = re.search(r"Schema: ([^\n]*)", text)
    if uri and (have is None or "length" in have.group(0)):
        from slidewise.spark.ingest import _csv_header

        try:
            have = ", ".join(_csv_header(Path(_plain(uri))))
        except OSError:
            have = None
    else:
        have = have.group(1).strip() if have else None
    want = want.group(1).strip() if want else None
    if want is None:
        source = next((s for s in streams if uri and _display(uri, (s,)) != _plain(uri)), None)
        want = ", ".join(["ts", *source.kinds]) if source else None
    detail = f": it has ({have}), the source's files have ({want})" if have and want else ""
    return SourceError(
        f"this new file's CSV header differs from its source's{detail}",
        location=shown,
        hint="all files of one source need the same columns in the same order; give the file the others' header and rerun the same command to continue",
    )


def _damaged(file: str | None, checkpoint: Path | None, what: str) -> CheckpointError:
    if file and checkpoint is not None and _inside(file, checkpoint):
        rel = str(Path(file).resolve().relative_to(Path(checkpoint).resolve()))
        kind = "state directory" if Path(rel).name == "state" else next((_LOGS[p] for p in Path(rel).parts if p in _LOGS), "file")
        message = f"the checkpoint is damaged: its {kind} {rel} {what}"
    else:
        message = f"the checkpoint is damaged: {file} {what}" if file else f"the checkpoint is damaged: {what}"
    return CheckpointError(message, location=_where(checkpoint), hint=RESTORE)


def _where(checkpoint: Path | None) -> str | None:
    return f"checkpoint {checkpoint}" if checkpoint is not None else None


def _plain(path: str) -> str:
    """A local path from a Spark path or ``file:`` URI."""
    if path.startswith("file:"):
        return urllib.parse.unquote(urllib.parse.urlparse(path).path)
    return path


def _inside(path: str, root: Path | None) -> bool:
    if root is None:
        return False
    try:
        Path(_plain(path)).resolve().relative_to(Path(root).resolve())
    except ValueError:
        return False
    return True


def _display(uri: str, streams) -> str:
    """An input file as the user named it (relative to the directory given to --source)."""
    for info in streams:
        shown = info.display(uri)
        if info.dirs[0] and shown != _plain(uri):
            return shown
    return _plain(uri)
