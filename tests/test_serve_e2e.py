"""End to end: ``slidewise serve`` as a process on a free loopback port, queries registered over HTTP while
data is appended to a growing file, results read, a one-time query, SIGTERM and a restart with the same
state directory (nothing registered or answered is lost; sequence numbers go on)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from slidewise.errors import ExecutionError  # noqa: E402
from slidewise.serve.client import Client  # noqa: E402

SRC = str(Path(__file__).resolve().parents[1] / "src")
SUM = "SELECT RSTREAM(S.src, SUM(S.bytes) AS b) FROM S [RANGE 1999 SLIDE 1000] GROUP BY S.src"
COUNT = "SELECT RSTREAM(COUNT(*) AS n) FROM S [RANGE 3999 SLIDE 2000]"
ONCE = "SELECT S.src, MAX(S.bytes) AS top FROM S [RANGE 3999] GROUP BY S.src"


def rows(start: int, stop: int) -> str:
    return "".join(f"{i * 100},{i % 3},{i}\n" for i in range(start, stop))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(check, timeout: float = 60.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            got = check()
        except ExecutionError:  # not listening yet
            got = None
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError("timed out")


def start(source: Path, state: Path, port: int) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": SRC}
    cmd = [sys.executable, "-m", "slidewise", "serve", "--source", f"S={source}", "--port", str(port), "--state", str(state)]
    cmd += ["--sub-window", "1000", "--sub-windows", "4", "--ts-unit", "raw"]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def stop(proc: subprocess.Popen) -> str:
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return err


def launch(tmp_path: Path, first: int):
    """A serve process over a growing file of ``first`` rows, listening, with SUM registered as ``sums``:
    (source, state, port, process, client)."""
    source, state = tmp_path / "s.csv", tmp_path / "state"
    source.write_text("ts,src,bytes\n" + rows(0, first))
    port = free_port()
    proc = start(source, state, port)
    try:
        client = Client(f"http://127.0.0.1:{port}", timeout=10)
        wait_for(client.stats)
        client.register("sums", SUM)
    except BaseException:
        stop(proc)
        raise
    return source, state, port, proc, client


def test_serve_register_stream_ask_restart(tmp_path):
    source, state, port, proc, client = launch(tmp_path, 10)
    try:
        client.register("counts", COUNT, priority=2)
        for k in range(1, 6):  # data arrives while the queries run
            with open(source, "a") as fh:
                fh.write(rows(10 * k, 10 * k + 10))
            time.sleep(0.1)
        sums = wait_for(lambda: [r for r in client.results("sums") if r["ts"] == 4999])
        assert {r["row"]["S.src"]: r["row"]["b"] for r in sums} == {s: sum(i for i in range(30, 50) if i % 3 == s) for s in range(3)}
        once = client.query(ONCE)
        assert once["end"] == 4999 and {r["S.src"]: r["top"] for r in once["rows"]} == {0: 48, 1: 49, 2: 47}
        assert sorted(q["name"] for q in client.queries()) == ["counts", "sums"]
        counts = wait_for(lambda: [r for r in client.results("counts") if r["ts"] >= 3999])
        assert {r["row"]["n"] for r in counts} == {40}  # four full sub-windows of 10 rows
        answered = {name: client.results(name) for name in ("sums", "counts")}
    finally:
        err = stop(proc)
    assert "slidewise: stopped" in err
    proc = start(source, state, port)
    try:
        wait_for(client.stats)
        assert sorted(q["name"] for q in client.queries()) == ["counts", "sums"]
        before = {name: client.results(name) for name in ("sums", "counts")}
        assert all(before[name][: len(answered[name])] == answered[name] for name in answered)  # nothing answered lost
        with open(source, "a") as fh:
            fh.write(rows(60, 90))
        after = wait_for(lambda: client.results("sums") if len(client.results("sums")) > len(before["sums"]) else None)
        assert after[: len(before["sums"])] == before["sums"]
        assert [r["seq"] for r in after] == list(range(1, len(after) + 1))
        assert max(r["ts"] for r in after) >= 7999
        assert client.results("sums", after=len(before["sums"])) == after[len(before["sums"]) :]
    finally:
        stop(proc)


def test_serve_without_the_extra_names_it(monkeypatch, tmp_path, capsys):
    from slidewise.cli import main

    monkeypatch.setitem(sys.modules, "uvicorn", None)
    source = tmp_path / "s.csv"
    source.write_text("ts,a\n1,2\n")
    assert main(["serve", "--source", f"S={source}", "--port", "1"]) == 2
    assert capsys.readouterr().err == "slidewise: error: slidewise serve needs uvicorn, which is not installed (hint: pip install 'slidewise[serve]')\n"


CHROMIUM = next((p for p in ("/usr/bin/chromium", "/usr/bin/chromium-browser") if os.path.exists(p)), None)


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium (/usr/bin/chromium): the status page is not loaded in a browser")
def test_status_page_in_headless_chromium(tmp_path):
    source, _, port, proc, client = launch(tmp_path, 30)
    try:
        with open(source, "a") as fh:
            fh.write(rows(30, 60))
        wait_for(lambda: client.results("sums"))
        cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=5000", "--dump-dom", f"http://127.0.0.1:{port}/"]
        dom = subprocess.run(cmd, capture_output=True, text=True, timeout=120).stdout
    finally:
        stop(proc)
    assert '<tr class="query"><td>sums</td>' in dom
    points = int(dom.split('data-points="')[1].split('"')[0])
    assert points >= 1  # the chart drew throughput points


def test_a_taken_port_is_one_error(tmp_path, capsys):
    from slidewise.cli import main

    source = tmp_path / "s.csv"
    source.write_text("ts,a\n1,2\n")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", "--source", f"S={source}", "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"slidewise: error: cannot listen on 127.0.0.1:{port}: Address already in use") and err.endswith(
        "(hint: is the port taken? choose another --port)\n"
    )
    assert err.count("\n") == 1


def test_windows_survive_a_kill_and_restart(tmp_path):
    """The windows are kept in the state directory with the offsets they were read to: killed (SIGKILL) and
    restarted, the service answers every window as an uninterrupted one (the oracle over all rows), the ones
    that straddle the restart included."""
    from slidewise.manager import snapshot

    source, state, port, proc, client = launch(tmp_path, 51)
    try:
        wait_for(lambda: [r for r in client.results("sums") if r["ts"] == 4999])
        size = source.stat().st_size
        wait_for(lambda: (snapshot.extra(state / "windows") or {}).get("offsets", {}).get("S", {}).get(str(source), [0])[0] == size)
    finally:
        proc.kill()
        proc.communicate(timeout=60)
    proc = start(source, state, port)
    try:
        wait_for(client.stats)
        for stop_row, end in ((61, 5999), (75, 6999)):
            with open(source, "a") as fh:
                fh.write(rows(stop_row - 10 if end == 5999 else 61, stop_row))
            answered = wait_for(lambda end=end: (lambda got: got if end in {r["ts"] for r in got} else None)(client.results("sums")))
    finally:
        stop(proc)
    assert [r["seq"] for r in answered] == list(range(1, len(answered) + 1))
    assert {4999, 5999, 6999} <= {r["ts"] for r in answered} and len(answered) == 3 * len({r["ts"] for r in answered})  # each window once
    for r in answered:  # SUM over the two sub-windows up to r["ts"], row i at ts 100 i
        lo = (r["ts"] + 1) // 100 - 20
        assert r["row"]["b"] == sum(i for i in range(lo, lo + 20) if i % 3 == r["row"]["S.src"]), r
