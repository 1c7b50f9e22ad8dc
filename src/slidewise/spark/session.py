"""The one SparkSession builder of slidewise (streaming runner, batch replay, tests).

:func:`get_session` checks that Java is there before starting a JVM, points
Spark's Python workers at the running interpreter (``spark.pyspark.python``
and ``PYSPARK_PYTHON`` — otherwise workers start ``python3`` from PATH and
cannot import pandas or slidewise), selects the RocksDB state store (changelog checkpointing: a commit writes
the changed values, not a snapshot), sets the shuffle partitions to the cores
(each shuffle partition is a stateful task per micro-batch — a Python worker round
trip and a state store commit — so more than the cores only adds fixed cost), has the JVM
compile hot code with its quick compiler only (:data:`JVM_OPTIONS`), has Spark's local Python
processes import the installed pyspark with its cached bytecode (:data:`SITECUSTOMIZE`), keeps the logs quiet
(Spark's log4j is off unless :func:`verbose`; its configuration is a private
temporary file; the JVM's and its Python workers' own output goes to another)
and, in local modes, binds the driver to 127.0.0.1. ``conf`` entries win over every
default. Failures become one :class:`~slidewise.errors.SlidewiseError` each:
Java missing, a master URL Spark cannot parse, a JVM that does not start.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import shutil
import sys
import tempfile
import warnings
from pathlib import Path

from slidewise.errors import OptionError, SlidewiseError

ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
JAVA_HINT = "install Java 17, e.g. `apt-get install openjdk-17-jre-headless`, or set JAVA_HOME; or run with --engine local"
_MASTER = re.compile(
    r"^(local(\[(\*|\d+)(,\d+)?\])?|local-cluster\[\d+,\d+,\d+\]|"
    r"(spark|mesos|k8s)://.+|yarn)$"
)
VERBOSE_ENV = "SLIDEWISE_VERBOSE"
#: JVM options of the driver and executors: the C1 compiler only. A slidewise query's JVM moves
#: packed chunks between sources, Python workers and the state store, and every streaming query
#: brings new generated classes, so the optimising C2 compiler's work does not pay off: on
#: ``bench spark`` W4 (200,000 tuples) it took 7.4 of the JVM's 19.6 CPU seconds; with C1 only the
#: JVM used 8.9 s. Spark's own stream-stream join used as much CPU either way (38.6 and 37.8 s).
JVM_OPTIONS = "-XX:TieredStopAtLevel=1"
#: ``sitecustomize`` of the Python processes a local JVM starts (Spark puts its own zip copy of
#: pyspark first on their path, which Python compiles anew in each process: about 0.45 s per
#: process, e.g. the driver-side runner every transformWithStateInPandas query start waits for).
#: Where that zip is the packed copy of the pip-installed pyspark package (SPARK_HOME is the
#: package), the zips leave the path and the package's cached bytecode is used; then the next
#: ``sitecustomize`` on the path, if any, runs as before.
SITECUSTOMIZE = """\
import importlib.machinery
import importlib.util
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
_rest = [p for p in sys.path if os.path.abspath(p or ".") != _here]
_zips = [p for p in _rest if os.path.basename(p) == "pyspark.zip" or (os.path.basename(p).startswith("py4j-") and p.endswith("-src.zip"))]
if _zips:
    _home = os.path.dirname(os.path.dirname(os.path.dirname(_zips[0])))
    _spec = importlib.machinery.PathFinder.find_spec("pyspark", [p for p in _rest if p not in _zips])
    if _spec is not None and _spec.origin and os.path.dirname(_spec.origin) == _home and all(p.startswith(_home + os.sep) for p in _zips):
        sys.path[:] = [p for p in sys.path if p not in _zips]
_spec = importlib.machinery.PathFinder.find_spec("sitecustomize", _rest)
if _spec is not None and _spec.loader is not None:
    _module = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_module)
"""
_LOG4J = """\
rootLogger.level = {level}
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


class SparkStartError(SlidewiseError):
    """Spark could not start (no Java, bad master URL, JVM failure)."""


def find_java() -> str | None:
    """Path of the ``java`` binary Spark would use (JAVA_HOME first, then PATH), or None."""
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / "java"
        return str(candidate) if candidate.exists() else None
    return shutil.which("java")


def default_partitions() -> int:
    """Shuffle partitions and hash buckets: the cores (at least 2)."""
    return max(2, os.cpu_count() or 1)


def check_master(master: str) -> str:
    """``master`` if it looks like a Spark master URL, else an OptionError naming the forms."""
    if not _MASTER.match(master.strip()):
        raise OptionError(f"bad Spark master URL {master!r}", hint="use local[*], local[N], local-cluster[N,cores,mem], spark://HOST:PORT, k8s://URL or yarn")
    return master.strip()


def session_conf(master: str = "local[*]", conf: dict[str, str] | None = None, *, ui: bool = False) -> dict[str, str]:
    """The Spark configuration :func:`get_session` uses (``conf`` overrides the defaults)."""
    out = {
        "spark.master": master,
        "spark.app.name": "slidewise",
        "spark.pyspark.python": sys.executable,
        "spark.pyspark.driver.python": sys.executable,
        "spark.sql.streaming.stateStore.providerClass": ROCKSDB,
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
        "spark.sql.shuffle.partitions": str(default_partitions()),
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.enabled": "true" if ui else "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.python.authenticate.socketTimeout": "120s",  # busy machines start Python slowly
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{log4j_file()} {JVM_OPTIONS}",
        "spark.executor.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{log4j_file()} {JVM_OPTIONS}",
    }
    if master.startswith("local"):
        out["spark.driver.host"] = "127.0.0.1"
        out["spark.driver.bindAddress"] = "127.0.0.1"
    out.update(conf or {})
    return out


def get_session(master: str | None = None, conf: dict[str, str] | None = None, *, ui: bool = False):
    """The active SparkSession, or a new one for ``master`` (default ``local[*]``) and ``conf``."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None and master is None:
        return active
    master = check_master(master or "local[*]")
    if find_java() is None:
        where = "JAVA_HOME/bin/java" if os.environ.get("JAVA_HOME") else "`java` on PATH"
        raise SparkStartError(f"the Spark engine needs Java, and there is no {where}", hint=JAVA_HINT)
    settings = session_conf(master, conf, ui=ui)
    os.environ["PYSPARK_PYTHON"] = settings["spark.pyspark.python"]
    os.environ["PYSPARK_DRIVER_PYTHON"] = settings["spark.pyspark.driver.python"]
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder
    for k, v in settings.items():
        builder = builder.config(k, v)
    try:
        with _worker_site():
            _launch_quietly(settings)
            spark = builder.getOrCreate()
    except Exception as e:  # py4j / JVM start failures: one line, no traceback
        text = str(e).strip().splitlines()
        first = next((t for t in text if t.strip()), type(e).__name__)
        said = _jvm_last_words()
        if said and said not in first:
            first = f"{first}; the JVM said: {said}"
        if "master" in first.lower():
            raise OptionError(f"Spark rejected the master URL {master!r}: {first[:200]}", hint="use local[*], local[N], spark://HOST:PORT, ...") from None
        raise SparkStartError(f"Spark did not start: {first[:300]}", hint=JAVA_HINT) from None
    spark.sparkContext.setLogLevel("ERROR" if verbose() else "OFF")
    if not verbose():  # PySpark repeats a failed batch's Java error as a warning; the failure is reported once
        warnings.filterwarnings("ignore", message="toPandas attempted Arrow optimization")
    return spark


def _launch_quietly(settings: dict[str, str]) -> None:
    """Start Spark's JVM with its stdout and stderr in a private file, unless :func:`verbose`.

    That output is the JVM's start-up notes ("WARNING: Using incubator modules", "Setting default
    log level") and whatever Spark's Python workers print (PySpark's TransformWithStateInPandas
    worker announces every UDF call); slidewise reports failures itself. A JVM already running
    is kept as it is.
    """
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if verbose() or SparkContext._gateway is not None:
        return
    path = _temporary("jvm", "slidewise-spark-", ".log", "")
    with open(path, "ab") as out:
        gateway = launch_gateway(SparkConf(loadDefaults=False).setAll(list(settings.items())), popen_kwargs={"stdout": out, "stderr": out})
    SparkContext._ensure_initialized(gateway=gateway)


@contextlib.contextmanager
def _worker_site():
    """While a local JVM starts: its environment's PYTHONPATH begins with a private directory
    holding :data:`SITECUSTOMIZE` (Spark passes it on to the Python processes it starts)."""
    before = os.environ.get("PYTHONPATH")
    site = str(Path(_temporary("site", "slidewise-site-", "", SITECUSTOMIZE, directory="sitecustomize.py")).parent)
    os.environ["PYTHONPATH"] = os.pathsep.join([site, *([before] if before else [])])
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = before


def _jvm_last_words() -> str:
    """The last unindented lines of the quiet JVM's output if it did not start, else ``""``."""
    from pyspark import SparkContext

    path = _TEMPORARY.get("jvm")
    if path is None or SparkContext._gateway is not None:
        return ""
    with contextlib.suppress(OSError), open(path, errors="replace") as f:
        return " / ".join([t.strip() for t in f.read().splitlines() if t.strip() and not t[0].isspace()][-3:])
    return ""


def verbose() -> bool:
    """Whether Spark's own log (errors with Java stack traces) is shown: ``SLIDEWISE_VERBOSE`` (``run -v``)."""
    return os.environ.get(VERBOSE_ENV, "").strip().lower() not in ("", "0", "false", "no")


def log4j_file() -> str:
    """Spark's log4j2 configuration for this process: a private temporary file, removed at exit.

    Quiet (level off) unless :func:`verbose`; the level is fixed when the JVM starts.
    """
    level = "error" if verbose() else "off"
    return _temporary(level, "slidewise-log4j2-", ".properties", _LOG4J.replace("{level}", level))


_TEMPORARY: dict[str, str] = {}


def _temporary(name: str, prefix: str, suffix: str, text: str, *, directory: str | None = None) -> str:
    """A private temporary file of this process (written with ``text`` once), removed at exit;
    ``directory``: the file's name in a private temporary directory of its own."""
    if name not in _TEMPORARY:
        if directory is not None:
            path = os.path.join(tempfile.mkdtemp(prefix=prefix), directory)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        else:
            fd, path = tempfile.mkstemp(prefix=prefix, suffix=suffix)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        _TEMPORARY[name] = path
        if len(_TEMPORARY) == 1:
            atexit.register(_remove_temporary)
    return _TEMPORARY[name]


def _remove_temporary() -> None:
    for path in _TEMPORARY.values():
        with contextlib.suppress(OSError):
            os.unlink(path)
        if Path(path).parent.name.startswith("slidewise-site-"):  # with its __pycache__
            shutil.rmtree(Path(path).parent, ignore_errors=True)
