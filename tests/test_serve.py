"""``slidewise serve``'s API in-process (Starlette's test client): status codes and messages, growing
files read on, the state directory, and the client class against a live server."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
import warnings

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")

with warnings.catch_warnings():  # Starlette recommends httpx2 for its test client
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

from slidewise.errors import OptionError, QueryError  # noqa: E402
from slidewise.serve.app import make_app  # noqa: E402
from slidewise.serve.service import Service  # noqa: E402

SUM = "SELECT RSTREAM(S.src, SUM(S.bytes) AS b) FROM S [RANGE 1999 SLIDE 1000] GROUP BY S.src"
ONCE = "SELECT S.src, COUNT(*) AS n FROM S [RANGE 1999] GROUP BY S.src"


def rows(start: int, stop: int) -> str:
    return "".join(f"{i * 100},{i % 3},{i}\n" for i in range(start, stop))


@pytest.fixture
def source(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text("ts,src,bytes\n" + rows(0, 25))
    return path


def wait_for(check, timeout: float = 20.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = check()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError("timed out")


def test_status_codes_and_messages(source):
    service = Service({"S": str(source)}, 1000, 4, ts_unit="raw")
    c = TestClient(make_app(service))
    assert c.post("/queries", json={"name": "q", "query": SUM, "priority": 1}).status_code == 201
    taken = c.post("/queries", json={"name": "q", "query": SUM})
    assert taken.status_code == 409 and taken.json()["error"].startswith("a query named q is registered")
    bad = c.post("/queries", json={"name": "r", "query": "SELECT bla"})
    assert bad.status_code == 400 and bad.json()["error"].startswith("query line 1, column 11: unexpected end of query")
    shape = c.post("/queries", json={"name": "r", "query": "SELECT RSTREAM(S.src) FROM S [RANGE 1999 SLIDE 1000]"})
    assert shape.status_code == 400 and "periodic one-stream aggregates" in shape.json()["error"]
    assert c.post("/queries", content=b"{bad").json()["error"].startswith("the body is not JSON")
    assert c.post("/queries", json=[1]).json() == {"error": "the body must be a JSON object with name, query"}
    missing = c.post("/queries", json={"name": "x"})
    assert missing.status_code == 400 and missing.json()["error"] == 'missing or not a string: query (send {"name": ..., "query": ...})'
    assert c.post("/queries", json={"name": "x", "query": SUM, "priority": "high"}).json()["error"] == "priority must be an integer, got 'high'"
    assert c.post("/queries", json={"name": "1x", "query": SUM}).json()["error"].startswith("bad query name '1x'")
    assert c.post("/query", json={}).status_code == 400
    assert c.delete("/queries/zz").status_code == 404 and c.get("/queries/zz/results").json() == {"error": "no query named zz"}
    assert c.get("/queries/q/results?after=x").json() == {"error": "after must be an integer sequence number, got 'x'"}
    assert [q["name"] for q in c.get("/queries").json()] == ["q"]
    assert c.delete("/queries/q").status_code == 204 and c.get("/queries").json() == []


def test_growing_file_results_one_time_and_stats(source):
    service = Service({"S": str(source)}, 1000, 4, ts_unit="raw", poll=0.02)
    c = TestClient(make_app(service))
    c.post("/queries", json={"name": "q", "query": SUM})
    service.start()
    try:
        wait_for(lambda: service.stats()["sources"]["S"]["rows"] == 25)
        with open(source, "a") as fh:
            fh.write(rows(25, 60) + "5999,1")  # the last line is not complete yet: it waits (and 5000..5999 is open)
        wait_for(lambda: service.stats()["sources"]["S"]["rows"] == 60)
        lines = wait_for(lambda: [json.loads(x) for x in c.get("/queries/q/results").text.splitlines() if json.loads(x)["ts"] == 4999])
        assert {r["row"]["S.src"]: r["row"]["b"] for r in lines} == {s: sum(i for i in range(30, 50) if i % 3 == s) for s in range(3)}
        seqs = [json.loads(x)["seq"] for x in c.get("/queries/q/results").text.splitlines()]
        assert seqs == list(range(1, len(seqs) + 1))
        assert [json.loads(x)["seq"] for x in c.get("/queries/q/results?after=3").text.splitlines()] == seqs[3:]
        once = c.post("/query", json={"query": ONCE}).json()
        assert once["end"] == 4999 and {r["S.src"]: r["n"] for r in once["rows"]} == {0: 7, 1: 7, 2: 6}
        stats = c.get("/stats").json()
        assert stats["queries"]["q"]["runs"] >= 1 and stats["one_time"]["runs"] == 1 and stats["errors"] == []
    finally:
        service.stop()


def test_state_directory_resumes_queries_and_sequence_numbers(source, tmp_path):
    state = tmp_path / "state"
    first = Service({"S": str(source)}, 1000, 4, ts_unit="raw", state=state, poll=0.02)
    first.register("q", SUM)
    first.start()
    wait_for(lambda: any(r[1] == 1999 for r in first.qm.results("q")))  # the latest closed sub-window answered
    first.stop()
    before = first.results("q")
    assert (state / "queries.json").exists() and (state / "results" / "q.jsonl").exists()
    with open(source, "a") as fh:
        fh.write(rows(25, 60))
    second = Service({"S": str(source)}, 1000, 4, ts_unit="raw", state=state, poll=0.02)
    assert list(second.qm.queries) == ["q"]
    second.start()
    try:
        wait_for(lambda: second.stats()["sources"]["S"]["rows"] == 35)  # read on from the saved offset
        after = wait_for(lambda: second.results("q") if len(second.results("q")) > len(before) else None)
    finally:
        second.stop()
    assert after[: len(before)] == before
    assert [r[0] for r in after] == list(range(1, len(after) + 1))


def test_client_against_a_live_server(source):
    uvicorn = pytest.importorskip("uvicorn")
    from slidewise.serve.client import Client

    service = Service({"S": str(source)}, 1000, 4, ts_unit="raw", poll=0.02)
    server = uvicorn.Server(uvicorn.Config(make_app(service), host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        wait_for(lambda: server.started)
        port = server.servers[0].sockets[0].getsockname()[1]
        client = Client(f"http://127.0.0.1:{port}")
        client.register("q", SUM)
        with pytest.raises(QueryError, match="409 a query named q is registered"):
            client.register("q", SUM)
        service.start()
        got = wait_for(lambda: client.results("q", after=1))
        assert got[0]["seq"] == 2 and client.queries()[0]["name"] == "q"
        assert client.query(ONCE)["rows"]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/queries/q/results?after=0&follow=1", timeout=10) as stream:
            assert json.loads(stream.readline())["seq"] == 1  # streamed while connected
        client.remove("q")
        assert client.stats()["queries"] == {}
    finally:
        server.should_exit = True
        thread.join()
        service.stop()


def test_a_directory_of_growing_files_and_rejects_with_their_file_lines(tmp_path):
    from slidewise.serve.tail import Tail

    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.csv").write_text("ts,src,bytes\n" + rows(0, 5))
    tail, got = Tail("S", folder, ts_unit="raw"), []

    def append(stream, ts, cols):
        got.extend(ts.tolist())

    assert tail.poll(append) == 5
    with open(folder / "a.csv", "a") as fh:
        fh.write("600,1,oops\n" + rows(7, 9))
    (folder / "b.csv").write_text("ts,src,bytes\n" + rows(10, 12))
    (folder / "notes.txt").write_text("not data")
    assert tail.poll(append) == 4 and tail.poll(append) == 0
    assert got == [0, 100, 200, 300, 400, 700, 800, 1000, 1100]
    rejected = tail.rejects.table().to_pylist()
    assert [(r["file"], r["line"], r["row"]) for r in rejected] == [(str(folder / "a.csv"), 7, "600,1,oops")]
    assert "bytes" in rejected[0]["reason"]
    assert tail.offsets()[str(folder / "b.csv")] == [len("ts,src,bytes\n" + rows(10, 12)), 3]


def test_the_status_page_is_served(source):
    c = TestClient(make_app(Service({"S": str(source)}, 1000, 4, ts_unit="raw")))
    page = c.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert '<canvas id="chart"' in page.text and 'fetch("/stats")' in page.text


def test_parquet_and_compressed_files_are_read_whole_once(tmp_path):
    import gzip

    import pandas as pd

    from slidewise.serve.tail import Tail

    folder = tmp_path / "in"
    folder.mkdir()
    pd.DataFrame({"ts": [0, 100], "src": [1, 2], "bytes": [5, 6]}).to_parquet(folder / "a.parquet")
    tail, got = Tail("S", folder, ts_unit="raw"), []
    assert tail.poll(lambda s, ts, cols: got.extend(ts.tolist())) == 2
    (folder / "b.csv.gz").write_bytes(gzip.compress(("ts,src,bytes\n" + rows(3, 5)).encode()))
    assert tail.poll(lambda s, ts, cols: got.extend(ts.tolist())) == 2 and tail.poll(lambda *a: None) == 0
    assert got == [0, 100, 300, 400]


def test_a_header_only_file_with_declared_columns(tmp_path):
    from slidewise.serve.tail import Tail

    path = tmp_path / "s.csv"
    path.write_text("ts,src,bytes\n")
    tail, got = Tail("S", path, ts_unit="raw", schema={"src": "int", "bytes": "int"}), []
    assert tail.kinds == {"src": "int", "bytes": "int"} and tail.poll(lambda *a: None) == 0
    with open(path, "a") as fh:
        fh.write(rows(0, 3))
    assert tail.poll(lambda s, ts, cols: got.append(cols["bytes"].tolist())) == 3 and got == [[0, 1, 2]]


def test_archive_probe(tmp_path, source):
    """GET /archive/probe?key=K reads the archive a run writes (reopened per probe); 404 without --archive, 400 without a key."""
    from slidewise.archive import Archive

    archive = Archive.create(tmp_path / "ar", key="src", every=10)
    with TestClient(make_app(Service({"S": str(source)}, 1000, 4))) as client:
        got = client.get("/archive/probe?key=1")
        assert got.status_code == 404 and got.json() == {"error": "no archive is served (start slidewise serve with --archive DIR)"}
    service = Service({"S": str(source)}, 1000, 4, archive=tmp_path / "ar")
    with TestClient(make_app(service)) as client:
        assert client.get("/archive/probe?key=1").json() == {"now": None, "rows": []}
        archive.update(10, {"src": [1, 2, 1], "v": [5, 6, 7], "exp": [30, 30, 5]})
        assert client.get("/archive/probe", params={"key": "1"}).json() == {"now": 10, "rows": [{"src": 1, "v": 5, "exp": 30}]}
        got = client.get("/archive/probe")
        assert got.status_code == 400 and got.json() == {"error": "missing the key to probe (GET /archive/probe?key=VALUE)"}
        got = client.get("/archive/probe?key=x")
        assert got.status_code == 400 and "key 'x' is no value of the archive's key column 'src'" in got.json()["error"]
    with TestClient(make_app(Service({"S": str(source)}, 1000, 4, archive=tmp_path / "ar", archive_memory=0.5))) as client:
        assert client.get("/archive/probe?key=1").json() == {"now": 10, "rows": [{"src": 1, "v": 5, "exp": 30}]}


def test_archive_memory_option(tmp_path, source):
    """serve --archive-memory MB: positive, and only with --archive."""
    with pytest.raises(OptionError, match="--archive-memory needs --archive DIR"):
        Service({"S": str(source)}, 1000, 4, archive_memory=8)
    with pytest.raises(OptionError, match="--archive-memory must be positive, not 0"):
        Service({"S": str(source)}, 1000, 4, archive=tmp_path / "ar", archive_memory=0)
