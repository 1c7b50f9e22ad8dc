"""Logging of the command line: quiet by default, ``-v`` progress and libraries, ``-vv`` debug, ``-q`` errors only."""

from __future__ import annotations

import logging
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from slidewise.cli import build_parser, configure_logging, main, verbosity

SRC = str(Path(__file__).resolve().parents[1] / "src")
Q = "SELECT * FROM A [RANGE 10], B [RANGE 10] WHERE A.k = B.k"


@pytest.fixture(autouse=True)
def _restore_logging(monkeypatch):
    monkeypatch.setenv("SLIDEWISE_VERBOSE", "0")  # off, and whatever -v sets is undone after the test (delenv of an unset variable records nothing)
    _pristine_logging()
    yield
    configure_logging(0)
    logging.captureWarnings(False)
    logging.getLogger().setLevel(logging.WARNING)


def _pristine_logging() -> None:
    """Logging as a fresh process has it, whatever tests ran before in this process: no logger
    disabled, none under ``slidewise`` with its own level, handler or ``propagate`` off, no stray
    stream handler on the root, and Python's warnings not marked as captured (an in-process
    ``main()`` of another test leaves ``captureWarnings(True)`` on, and pytest restores
    ``warnings.showwarning`` after that test: a second ``captureWarnings(True)`` would then do nothing)."""
    logging.disable(logging.NOTSET)
    logging.captureWarnings(False)
    for name, lg in list(logging.Logger.manager.loggerDict.items()):
        if isinstance(lg, logging.Logger):
            lg.disabled = False
            if name.startswith("slidewise."):
                lg.setLevel(logging.NOTSET)
            if name == "slidewise" or name.startswith("slidewise."):
                lg.propagate = True
                for h in list(lg.handlers):
                    lg.removeHandler(h)
    root = logging.getLogger()
    for h in list(root.handlers):
        if isinstance(h, logging.StreamHandler) and not type(h).__module__.startswith("_pytest"):
            root.removeHandler(h)


@pytest.mark.parametrize(("argv", "level"), [([], 0), (["-v"], 1), (["-vv"], 2), (["-v", "-v", "-v"], 3), (["-q"], -1), (["--quiet"], -1)])
def test_every_command_has_v_and_q(argv, level):
    for command in (["run", Q], ["run-many", "q.cql", "--out-dir", "d"], ["demo"], ["explain", Q], ["generate"], ["calibrate"], ["algorithms"]):
        assert verbosity(build_parser().parse_args([*command, *argv])) == level


def _say_all():
    logging.getLogger("slidewise.runtime.join_engine").debug("dbg")
    logging.getLogger("slidewise.runtime.join_engine").info("progress")
    logging.getLogger("slidewise.spark.join_runner").warning("one bucket")
    logging.getLogger("slidewise").error("broken")
    logging.getLogger("py4j.clientserver").info("py4j chatter")
    logging.getLogger("kafka.conn").warning("kafka chatter")
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.warn("Arrow fallback", UserWarning, stacklevel=1)


def _pollute() -> None:
    """What other tests of the same process may leave behind: an in-process ``main()`` (handlers, levels,
    warnings marked as captured but ``warnings.showwarning`` restored by pytest), a disabled
    ``slidewise`` logger (``dictConfig`` disables every existing logger), ``propagate`` off, a handler
    writing to a closed stream, ``logging.disable``."""
    import io
    import logging.config

    with warnings.catch_warnings():
        main(["algorithms", "-v"])
    closed = io.StringIO()
    closed.close()
    logging.getLogger().addHandler(logging.StreamHandler(closed))
    logging.getLogger("slidewise").addHandler(logging.StreamHandler(closed))
    logging.getLogger("slidewise").propagate = False
    logging.getLogger("slidewise.runtime").setLevel(logging.CRITICAL)
    logging.config.dictConfig({"version": 1})
    logging.disable(logging.CRITICAL)


def test_the_logging_tests_start_from_a_fresh_state_after_any_other_test(capsys):
    _pollute()
    _pristine_logging()
    capsys.readouterr()
    configure_logging(1)
    _say_all()
    err = capsys.readouterr().err.splitlines()
    assert err[:2] == ["slidewise: progress", "slidewise: warning: one bucket"] and any("Arrow fallback" in line for line in err)


def test_default_shows_warnings_and_no_library_chatter(capsys):
    configure_logging(0)
    _say_all()
    err = capsys.readouterr().err
    assert err.splitlines() == ["slidewise: warning: one bucket", "slidewise: error: broken"]


def test_quiet_shows_errors_only(capsys):
    configure_logging(-1)
    _say_all()
    assert capsys.readouterr().err.splitlines() == ["slidewise: error: broken"]


def test_verbose_shows_progress_and_library_info(capsys):
    configure_logging(1)
    _say_all()
    err = capsys.readouterr().err.splitlines()
    assert "slidewise: progress" in err and "py4j.clientserver: info: py4j chatter" in err and "kafka.conn: warning: kafka chatter" in err
    assert any("Arrow fallback" in line for line in err)
    assert not any("dbg" in line for line in err)
    from slidewise.spark.session import verbose

    assert verbose()  # Spark's own log and its workers' output too


def test_very_verbose_shows_debug(capsys):
    configure_logging(2)
    _say_all()
    assert "slidewise: debug: slidewise.runtime.join_engine: dbg" in capsys.readouterr().err.splitlines()


def test_caplog_still_sees_library_records(caplog):
    configure_logging(0)
    with caplog.at_level(logging.WARNING, logger="slidewise"):
        logging.getLogger("slidewise.spark.join_runner").warning("seen")
    assert [r.getMessage() for r in caplog.records] == ["seen"]


@pytest.fixture
def files(tmp_path):
    (tmp_path / "a.csv").write_text("ts,k\n1,1\n2,2\n3,1\n")
    (tmp_path / "b.csv").write_text("ts,k\n2,1\n4,2\n")
    return tmp_path


def test_run_v_logs_the_plan_and_q_prints_nothing(files, capsys):
    argv = ["run", Q, "--source", f"A={files / 'a.csv'}", "--source", f"B={files / 'b.csv'}", "--out", str(files / "o.csv")]
    assert main([*argv, "-v"]) == 0
    err = capsys.readouterr().err
    assert "slidewise: local engine: " in err and "join of A, B" in err
    assert main([*argv, "-q"]) == 0
    assert capsys.readouterr().err == ""
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "local engine" not in err and "3 results" in err  # the summary, no progress messages


def test_a_child_run_is_silent_with_q_and_speaks_with_v(files):
    def child(*extra):
        argv = [sys.executable, "-m", "slidewise", "run", Q, "--source", "A=a.csv", "--source", "B=b.csv", "--out", "-", *extra]
        env = {"PYTHONPATH": SRC, "SLIDEWISE_ENGINE": "local", "PATH": "/usr/bin:/bin"}
        return subprocess.run(argv, cwd=files, capture_output=True, text=True, timeout=300, env=env, check=False)

    quiet = child("-q")
    assert quiet.returncode == 0 and quiet.stderr == "" and quiet.stdout.startswith("A.ts,A.k,B.ts,B.k,ts,exp,sign\n")
    loud = child("-vv")
    assert loud.returncode == 0 and "slidewise: local engine:" in loud.stderr and loud.stdout == quiet.stdout


def test_generate_q_prints_nothing(tmp_path, capsys):
    assert main(["generate", "--tuples", "20", "--out", str(tmp_path / "g"), "-q"]) == 0
    assert capsys.readouterr().err == "" and (tmp_path / "g" / "S1.csv").exists()
