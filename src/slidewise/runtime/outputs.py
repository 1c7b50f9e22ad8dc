"""Output safety: where a run may write, and files that are complete or absent.

* :func:`check_run` — the one check of a run's inputs and outputs, made
  before any input is read or any file created (the CLI and
  :func:`slidewise.run`, both engines): an output must not be an input, lie
  inside an input directory, or be another output of the run; every output
  path must be writable; a name is given once, as a stream or as a table.
* :class:`AtomicFile` — a file is written to a temporary name in its
  directory and renamed over the target on success only; on failure the
  temporary is removed and a pre-existing target stays untouched.
* Interrupts — :func:`install_signal_handlers` (the CLI only) turns SIGINT
  and SIGTERM into :class:`Interrupted`; signals arriving inside
  :func:`shielded` are delivered when it ends, so a batch is written whole.
  :func:`abandon` discards a failed run's output (a MemoryError becomes an
  error naming ``--chunk-rows``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from slidewise.errors import ExecutionError, OptionError

__all__ = [
    "AtomicFile",
    "GuardedRun",
    "Interrupted",
    "abandon",
    "check_run",
    "install_signal_handlers",
    "kept_signal_handlers",
    "named_paths",
    "shielded",
    "write_atomic",
]


# ------------------------------------------------------------------ the run's paths


def named_paths(pairs: list[str] | None, option: str, example: str) -> dict[str, str]:
    """``["NAME=PATH", ...]`` of a repeatable option -> dict; a name given twice is an error."""
    out: dict[str, str] = {}
    for pair in pairs or []:
        name, sep, path = pair.partition("=")
        name, path = name.strip(), path.strip()
        if not sep or not name or not path:
            raise OptionError(f"bad {option} {pair!r}", hint=f"write {option} NAME=PATH, e.g. {option} {example}")
        if name in out:
            raise OptionError(f"{option} {name} is given twice ({out[name]} and {path})", hint=f"give each {option} name once")
        out[name] = path
    return out


def _is_path(spec) -> bool:
    return isinstance(spec, (str, Path)) and str(spec) not in ("", "-") and not str(spec).startswith(("rate:", "kafka://"))


def check_run(sources: dict, tables: dict | None, outputs: dict[str, object], *, directories: tuple[str, ...] = (), formats: dict[str, Callable] | None = None) -> None:
    """Refuse (OptionError) unsafe outputs before anything is read or written.

    ``sources`` / ``tables``: name -> input (paths are checked; data is not).
    ``outputs``: option (``--out``, ``--rejects``, ``--stats-json``) -> target
    (``None``, ``"-"``, ``"console"``, ``"memory"`` and callables are skipped).
    ``directories``: the options whose target is a directory (the Spark stream
    engine's parts). ``formats``: option -> a check of the file name (e.g. the
    result format by extension).
    """
    tables = tables or {}
    clash = [n for n in sources if n in tables]
    if clash:
        raise OptionError(f"{clash[0]!r} is given both as --source and as --table", hint="a FROM name is a stream or a table: give it once")
    inputs = [(f"--source {n}", Path(p)) for n, p in sources.items() if _is_path(p)]
    inputs += [(f"--table {n}", Path(p)) for n, p in tables.items() if _is_path(p)]
    targets = [(o, Path(p), o in directories) for o, p in outputs.items() if _is_path(p) and not (o in directories and str(p) in ("console", "memory"))]
    _refuse_inputs(targets, inputs)
    _refuse_pairs(targets)
    for option, path, is_dir in targets:
        _check_writable(option, path, is_dir)
        if formats and option in formats:
            formats[option](path)


def _refuse_inputs(targets: list, inputs: list) -> None:
    """No output is an input or lies inside an input directory."""
    for option, path, _is_dir in targets:
        for label, source in inputs:
            if _same(path, source):
                raise OptionError(f"{option} names an input of this run ({label})", location=str(path), hint=f"write {option} somewhere else; it would destroy the input")
            if source.is_dir() and _inside(path, source):
                raise OptionError(f"{option} is inside the input directory of {label}", location=str(path), hint=f"write {option} outside {source}")


def _refuse_pairs(targets: list) -> None:
    """No two outputs are the same path, nor is one inside another's directory."""
    for i, (a, path_a, a_dir) in enumerate(targets):
        for b, path_b, b_dir in targets[i + 1 :]:
            if _same(path_a, path_b):
                raise OptionError(f"{a} and {b} name the same path", location=str(path_a), hint="give each output its own path")
            for outer, po, inner, pi, is_dir in ((a, path_a, b, path_b, a_dir), (b, path_b, a, path_a, b_dir)):
                if is_dir and _inside(pi, po):
                    raise OptionError(f"{inner} is inside the {outer} directory", location=str(pi), hint=f"write {inner} outside {po}")


def _resolved(path: Path) -> Path:
    return Path(os.path.abspath(path)).resolve()


def _same(a: Path, b: Path) -> bool:
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
    except OSError:
        pass
    return _resolved(a) == _resolved(b)


def _inside(path: Path, directory: Path) -> bool:
    return _resolved(directory) in _resolved(path).parents


def _check_writable(option: str, path: Path, is_dir: bool) -> None:
    """``path`` can be written: a file (or a directory, ``is_dir``) whose nearest existing ancestor is a
    writable directory."""
    if path.exists():
        if path.is_dir() and not is_dir:
            raise OptionError(f"{option} is a directory", location=str(path), hint="give a file name")
        if is_dir and not path.is_dir():
            raise OptionError(f"{option} is a file, and this engine writes a directory of parts there", location=str(path), hint="choose a new path or a directory")
        if not os.access(path, os.W_OK):
            raise OptionError(f"{option} is not writable", location=str(path), hint=f"choose another {option}")
        if not path.is_file() and not path.is_dir():
            return  # a device or FIFO (/dev/null): written in place
    parent = _resolved(path).parent if not (is_dir and path.is_dir()) else _resolved(path)
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise OptionError(f"cannot write {option}: {parent} is not a directory", location=str(path), hint=f"choose another {option}")
    if not os.access(parent, os.W_OK | os.X_OK) or not _can_create(parent):
        raise OptionError(f"cannot write {option}: the directory {parent} is not writable", location=str(path), hint=f"choose another {option}")


def _can_create(directory: Path) -> bool:
    """Whether a file can be created in ``directory`` (a probe, removed at once: root passes os.access)."""
    try:
        fd, name = tempfile.mkstemp(dir=directory, prefix=".slidewise-probe-")
    except OSError:
        return False
    os.close(fd)
    os.unlink(name)
    return True


# ------------------------------------------------------------------ atomic files

_UMASK = os.umask(0o022)
os.umask(_UMASK)


class AtomicFile:
    """A temporary file next to ``path`` (``name``), renamed over ``path`` by :meth:`commit`.

    :meth:`discard` removes it, leaving a pre-existing ``path`` untouched. A
    target that exists and is not a regular file (``/dev/null``, a FIFO) is
    written in place. A symbolic link is followed: the file it names is replaced,
    the link stays.
    """

    def __init__(self, path: str | Path, option: str = "--out"):
        self.path, self.option = Path(path), option
        if self.path.is_symlink():
            self.path = Path(os.path.realpath(self.path))
        self.direct = self.path.exists() and not self.path.is_file() and not self.path.is_dir()
        if self.direct:
            self.name = str(self.path)
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, self.name = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")
        except OSError as e:
            raise self.error(e) from None
        os.close(fd)

    def error(self, e: BaseException) -> OptionError:
        reason = getattr(e, "strerror", None) or str(e).splitlines()[0]
        return OptionError(f"cannot write {self.option}: {reason}", location=str(self.path), hint=f"choose a writable path for {self.option}")

    def commit(self) -> None:
        """Rename the finished temporary over the target (keeping an existing target's permissions)."""
        if self.direct:
            return
        try:
            mode = stat.S_IMODE(self.path.stat().st_mode) if self.path.is_file() else 0o666 & ~_UMASK
            os.chmod(self.name, mode)
            os.replace(self.name, self.path)
        except OSError as e:
            self.discard()
            raise self.error(e) from None

    def discard(self) -> None:
        """Remove the temporary (the target is left as it was)."""
        if not self.direct:
            with contextlib.suppress(OSError):
                os.unlink(self.name)


def write_atomic(path: str | Path, data: bytes, option: str) -> None:
    """Write ``data`` to ``path`` whole or not at all (an OptionError naming ``option`` on failure)."""
    target = AtomicFile(path, option)
    try:
        with open(target.name, "wb") as f:
            f.write(data)
    except OSError as e:
        target.discard()
        raise target.error(e) from None
    except BaseException:
        target.discard()
        raise
    target.commit()


# ------------------------------------------------------------------ interrupts and failures


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM in the CLI: the run stops reading and finishes its files."""

    def __init__(self, signum: int = signal.SIGINT):
        super().__init__(signal.Signals(signum).name)
        self.signum = int(signum)

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


class _Shield:
    depth = 0
    pending: int | None = None


def _on_signal(signum, _frame) -> None:
    if _Shield.depth:
        _Shield.pending = signum
        return
    raise Interrupted(signum)


def install_signal_handlers() -> None:
    """SIGINT and SIGTERM raise :class:`Interrupted` (deferred inside :func:`shielded`); the CLI only."""
    if threading.current_thread() is not threading.main_thread():
        return  # only the main thread may set handlers
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _on_signal)


@contextlib.contextmanager
def kept_signal_handlers() -> Iterator[None]:
    """Restore the SIGINT and SIGTERM handlers on exit (the CLI called in-process, e.g. by tests)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


@contextlib.contextmanager
def shielded(deliver: bool = True) -> Iterator[None]:
    """Signals arriving inside are delivered at the end (dropped with ``deliver=False``)."""
    _Shield.depth += 1
    try:
        yield
    finally:
        _Shield.depth -= 1
        if not _Shield.depth and _Shield.pending is not None:
            signum, _Shield.pending = _Shield.pending, None
            if deliver:
                raise Interrupted(signum)


def signal_name(stop: BaseException) -> str:
    """The signal that interrupted a run (Ctrl-C without our handler: SIGINT)."""
    return signal.Signals(getattr(stop, "signum", signal.SIGINT)).name


def abandon(sink, error: BaseException, chunk_rows: int) -> BaseException:
    """A run failed: discard its result file (the target stays absent or as it was); the error to raise."""
    if sink is not None:
        sink.abort()
    if isinstance(error, MemoryError):
        return ExecutionError(
            f"out of memory with --chunk-rows {chunk_rows}: the join's result of one chunk is too large to hold",
            hint=f"lower --chunk-rows (e.g. {max(1, chunk_rows // 16)}) or narrow the windows; no result file was written",
        )
    return error


class GuardedRun:
    """The output protocol of one local run, written once for every executor.

    Used as ``with GuardedRun(chunk_rows, bar) as run:`` around the input
    loop, with the result sink assigned to ``run.sink`` inside it: Ctrl-C /
    SIGTERM end the loop and are kept in ``run.stop`` (what is complete
    stays); any other error discards the result file (:func:`abandon`) and
    is raised again; the progress bar is closed either way. :meth:`finish`
    then writes the pending rows, the sink and the rejects with signals held.
    """

    def __init__(self, chunk_rows: int, bar=None):
        self.chunk_rows, self.bar = chunk_rows, bar
        self.sink = None
        self.stop: BaseException | None = None

    def __enter__(self) -> GuardedRun:
        return self

    def __exit__(self, exc_type, error, tb) -> bool:
        if self.bar is not None:
            self.bar.close()
        if error is None:
            return False
        if isinstance(error, KeyboardInterrupt):
            self.stop = error
            return True
        raise abandon(self.sink, error, self.chunk_rows) from None

    def finish(self, rejects, rejects_to: str | None, pending: Callable[[], None] | None = None) -> None:
        """Complete the outputs: ``pending`` rows (interrupted runs), the sink, the rejects file."""
        with shielded(deliver=self.stop is None):
            if self.stop is not None and pending is not None:
                pending()
            if self.sink is not None:
                self.sink.close()
            if rejects_to:
                rejects.write(rejects_to)
