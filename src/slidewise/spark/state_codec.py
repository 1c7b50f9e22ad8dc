"""Operator state in the Spark checkpoint: a data format, authenticated with a key kept outside it.

Whoever can write the checkpoint directory must not be able to run code in
the next run. So state never goes through a bare ``pickle.loads``:

* a bucket's own state (buffered tuples, frontiers, counters) is data —
  JSON metadata plus one Arrow IPC stream per table of equal-length arrays
  (:func:`pack_state` / :func:`unpack_state`);
* what is not columnar (a hosted join operator's snapshot, a general plan's
  operator network with its closures) stays a pickle inside that container,
  and the whole container is sealed with HMAC-SHA256 (:func:`seal`) under a
  key outside the checkpoint (:func:`state_key`): the state is verified
  before anything in it is read, and state that does not verify is refused
  with a :class:`~slidewise.errors.CheckpointError`.

The key: ``SLIDEWISE_STATE_KEY`` if set (at least 16 characters), else the
per-user file ``$XDG_CONFIG_HOME/slidewise/state.key`` (default
``~/.config/slidewise/state.key``), created on first use with mode 0600 and
refused if others may read or write it. The driver reads it and ships it to
the workers with the stage logic (never into the checkpoint). A run without
``--checkpoint`` uses a random key of its own (:func:`run_key`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import stat
import struct
from pathlib import Path

import numpy as np
import pyarrow as pa

from slidewise.errors import CheckpointError, OptionError

MAGIC = b"SWS1"
_MAC = hashlib.sha256().digest_size
_HEAD = struct.Struct("<I")
KEY_ENV = "SLIDEWISE_STATE_KEY"


def key_path() -> Path:
    """The per-user state key file."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "slidewise" / "state.key"


def state_key() -> bytes:
    """The key that authenticates checkpointed state (``SLIDEWISE_STATE_KEY``, else the key file)."""
    given = os.environ.get(KEY_ENV, "")
    if given:
        if len(given) < 16:
            raise OptionError(f"{KEY_ENV} is too short to be a key ({len(given)} characters)", hint="use at least 16 random characters, or unset it to use a key file")
        return given.encode()
    path = key_path()
    hint = f"set {KEY_ENV} to at least 16 random characters instead"
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass
        else:
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_hex(32) + "\n")
        info = path.stat()
        if info.st_mode & 0o077 or (hasattr(os, "getuid") and info.st_uid != os.getuid()):
            raise OptionError(f"the state key file {path} is not private (mode {stat.filemode(info.st_mode)})", hint=f"chmod 600 {path} (and make it yours), or {hint}")
        key = path.read_text().strip()
    except OSError as e:
        raise OptionError(f"cannot use the state key file {path}: {e.strerror or e}", hint=hint) from None
    if len(key) < 16:
        raise OptionError(f"the state key file {path} holds no key", hint=f"delete it to get a new one, or {hint}")
    return key.encode()


def run_key(*, persistent: bool) -> bytes:
    """The state key of a run: :func:`state_key` for a user's ``--checkpoint``; a random one for a
    temporary checkpoint (private to the run and removed after it, so no key file is needed)."""
    return state_key() if persistent else secrets.token_bytes(32)


def seal(key: bytes, body: bytes) -> bytes:
    """``body`` with a version tag and its HMAC-SHA256 under ``key``."""
    return MAGIC + hmac.new(key, MAGIC + body, hashlib.sha256).digest() + body


def unseal(key: bytes, blob: bytes) -> bytes:
    """The body of a :func:`seal` ed blob; a CheckpointError if it is not one or does not verify."""
    blob = bytes(blob)
    if not blob.startswith(MAGIC) or len(blob) < len(MAGIC) + _MAC:
        raise CheckpointError("operator state in the checkpoint is not authenticated slidewise state (damaged, replaced, or written by an older slidewise): refused")
    mac, body = blob[len(MAGIC) : len(MAGIC) + _MAC], blob[len(MAGIC) + _MAC :]
    if not hmac.compare_digest(mac, hmac.new(key, MAGIC + body, hashlib.sha256).digest()):
        raise CheckpointError("operator state in the checkpoint does not verify (changed outside slidewise, or written with another state key): refused")
    return body


def pack_state(key: bytes, meta: dict, tables: list[dict[str, np.ndarray]], extra: bytes = b"") -> bytes:
    """Sealed state: JSON ``meta``, each table (equal-length arrays) as Arrow IPC, then ``extra`` bytes."""
    parts = [arrays_to_ipc(t) for t in tables]
    head = json.dumps({**meta, "_parts": [len(p) for p in parts]}).encode()
    return seal(key, b"".join([_HEAD.pack(len(head)), head, *parts, extra]))


def unpack_state(key: bytes, blob: bytes) -> tuple[dict, list[dict[str, np.ndarray]], bytes]:
    """``(meta, tables, extra)`` of :func:`pack_state` (verified first)."""
    body = unseal(key, blob)
    try:
        (n,) = _HEAD.unpack_from(body)
        meta = json.loads(body[_HEAD.size : _HEAD.size + n])
        at = _HEAD.size + n
        tables = []
        for size in meta.pop("_parts"):
            tables.append(ipc_to_arrays(body[at : at + size]))
            at += size
    except (ValueError, KeyError, TypeError, struct.error, pa.ArrowException) as e:
        raise CheckpointError(f"operator state in the checkpoint cannot be read: {e}") from None
    return meta, tables, body[at:]


def arrays_to_ipc(arrays: dict[str, np.ndarray]) -> bytes:
    """Equal-length numpy arrays as one Arrow IPC stream."""
    table = pa.table({k: pa.array(v) for k, v in arrays.items()})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def ipc_to_arrays(data: bytes) -> dict[str, np.ndarray]:
    """The arrays of :func:`arrays_to_ipc` (writable numpy arrays; text as object arrays)."""
    table = pa.ipc.open_stream(pa.py_buffer(data)).read_all()
    out = {}
    for name, col in zip(table.column_names, table.columns):
        arr = col.to_numpy()
        out[name] = arr if arr.flags.writeable else arr.copy()
    return out
