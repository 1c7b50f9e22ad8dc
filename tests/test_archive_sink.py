"""Results of a query into an archive: `run --archive`, `slidewise archive probe`, `slidewise.run(archive=...)`."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest

import slidewise
from slidewise.archive import Archive
from slidewise.cli import main
from slidewise.errors import ExecutionError

Q = "SELECT * FROM A [RANGE 30], B [RANGE 10] WHERE A.k = B.k"


def _streams(seed: int = 0, size: int = 400) -> dict:
    rng = np.random.default_rng(seed)
    return {
        "A": {"ts": np.sort(rng.integers(0, 1000, size)), "k": rng.integers(0, 8, size), "x": rng.integers(0, 100, size)},
        "B": {"ts": np.sort(rng.integers(0, 1000, size)), "k": rng.integers(0, 8, size)},
    }


def _unexpired(results: pd.DataFrame, now: int) -> pd.DataFrame:
    return results[results["exp"] >= now]


def _same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    cols = list(a.columns)
    assert sorted(map(tuple, a[cols].to_numpy().tolist())) == sorted(map(tuple, b[cols].to_numpy().tolist()))


@pytest.mark.parametrize("variant", ["rebuild", "norebuild", "r-ins"])
def test_the_archive_holds_the_unexpired_results(tmp_path, variant):
    """After the run the archive is at the last result's ts and holds exactly the results with exp >= it."""
    r = slidewise.run(Q, _streams(), archive=tmp_path / "ar", archive_key="A.k", archive_every=25, archive_variant=variant)
    archive = Archive.open(tmp_path / "ar")
    assert archive.now == int(r.results["ts"].max()) == r.stats["archive"]["now"]
    assert r.stats["archive"]["updates"] > 5 and r.stats["archive"]["variant"] == variant
    live = _unexpired(r.results, archive.now)
    _same(live, archive.read().to_pandas())
    for key in range(8):
        _same(live[live["A.k"] == key], archive.probe(key).to_pandas())


def test_lifetime_column_and_a_second_run_continues_the_archive(tmp_path):
    """--archive-lifetime: exp = ts + COL; a second run into the same directory adds to it."""
    streams = _streams(1)
    q = "SELECT A.k, A.x FROM A [NOW]"
    r = slidewise.run(q, streams, archive=tmp_path / "ar", archive_key="A.k", archive_lifetime="A.x", archive_every=40)
    first = r.results.assign(exp=r.results["ts"] + r.results["A.x"])
    archive = Archive.open(tmp_path / "ar")
    _same(_unexpired(first, archive.now), archive.read().to_pandas())
    later = {"A": {"ts": streams["A"]["ts"] + 1000, "k": streams["A"]["k"], "x": streams["A"]["x"]}}
    r2 = slidewise.run(q, later, archive=tmp_path / "ar", archive_key="A.k", archive_lifetime="A.x")
    both = pd.concat([first, r2.results.assign(exp=r2.results["ts"] + r2.results["A.x"])])
    archive = Archive.open(tmp_path / "ar")
    assert archive.layout.every == 40
    _same(_unexpired(both, archive.now), archive.read().to_pandas())


def test_out_is_still_written(tmp_path):
    r = slidewise.run(Q, _streams(), out=tmp_path / "r.csv", archive=tmp_path / "ar", archive_key="A.k", archive_every=100)
    assert len(pd.read_csv(tmp_path / "r.csv")) == r.stats["results"] > 0
    assert r.results is None or len(r.results) == 0


def test_cli_run_and_probe(tmp_path, capsys):
    streams = _streams(2)
    for name, cols in streams.items():
        pd.DataFrame(cols).to_csv(tmp_path / f"{name}.csv", index=False)
    src = ["--source", f"A={tmp_path / 'A.csv'}", "--source", f"B={tmp_path / 'B.csv'}"]
    assert main(["run", Q, *src, "--out", str(tmp_path / "r.csv"), "--archive", str(tmp_path / "ar"), "--archive-key", "A.k", "--archive-every", "50", "--quiet"]) == 0
    results = pd.read_csv(tmp_path / "r.csv")
    capsys.readouterr()
    assert main(["archive", "probe", str(tmp_path / "ar"), "3"]) == 0
    now = Archive.open(tmp_path / "ar").now
    probed = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert list(probed.columns) == list(results.columns)  # the query's output columns
    live = _unexpired(results, now)
    _same(live[live["A.k"] == 3], probed)
    assert main(["archive", "scan", str(tmp_path / "ar"), "--from", "2", "--to", "4"]) == 0
    scanned = pd.read_csv(io.StringIO(capsys.readouterr().out))
    _same(live[live["A.k"].between(2, 4)], scanned)
    assert main(["archive", "scan", str(tmp_path / "ar"), "--from", "2", "--to", "4", "--archive-memory", "0.001"]) == 0  # the smallest batches
    _same(scanned, pd.read_csv(io.StringIO(capsys.readouterr().out)))
    assert main(["archive", "probe", str(tmp_path / "ar"), "3", "--archive-memory", "0.001"]) == 0
    _same(probed, pd.read_csv(io.StringIO(capsys.readouterr().out)))
    assert main(["archive", "info", str(tmp_path / "ar")]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["key"] == "A.k" and info["now"] == now and info["rows"] == len(live) == sum(info["cell_rows"])
    assert info["layout"]["g"] == info["layout"]["e"] == 4 and len(info["files"]) <= 16


def test_cli_errors(tmp_path, capsys):
    pd.DataFrame({"ts": [1, 2], "k": [1, 1]}).to_csv(tmp_path / "A.csv", index=False)
    src = ["--source", f"A={tmp_path / 'A.csv'}"]
    assert main(["run", "SELECT A.k FROM A [RANGE 3]", *src, "--archive-key", "A.k", "--quiet"]) == 2
    assert "--archive-key needs --archive DIR" in capsys.readouterr().err
    assert main(["run", "SELECT A.k FROM A [RANGE 3]", *src, "--archive-memory", "8", "--quiet"]) == 2
    assert "--archive-memory needs --archive DIR" in capsys.readouterr().err
    assert main(["run", "SELECT A.k FROM A [RANGE 3]", *src, "--archive", str(tmp_path / "m"), "--archive-key", "A.k", "--archive-memory", "0", "--quiet"]) == 2
    assert "--archive-memory must be positive, not 0.0" in capsys.readouterr().err
    assert main(["run", "SELECT A.k FROM A [RANGE 3]", *src, "--archive", str(tmp_path / "ar"), "--quiet"]) == 2
    assert "--archive needs --archive-key COL" in capsys.readouterr().err
    spark = ["--engine", "spark", "--mode", "batch", "--archive", str(tmp_path / "ar"), "--archive-key", "A.k", "--quiet"]
    assert main(["run", "SELECT * FROM A [RANGE 3]", *src, *spark]) == 2  # refused before a JVM starts
    assert "--archive works with micro-batch streams and local runs, not with --mode batch" in capsys.readouterr().err
    assert main(["archive", "probe", str(tmp_path / "none"), "1"]) == 2
    assert "no archive here (manifest.json missing)" in capsys.readouterr().err
    Archive.create(tmp_path / "empty", key="k")
    assert main(["archive", "scan", str(tmp_path / "empty"), "--archive-memory", "0"]) == 2
    assert "the archive's memory budget must be positive, not 0.0 MB (hint: e.g. --archive-memory 64)" in capsys.readouterr().err


def test_rows_an_archive_cannot_hold(tmp_path):
    a = {"A": {"ts": [1, 5, 9], "k": [1, 2, 3]}}
    with pytest.raises(ExecutionError, match="--archive-key 'k' is not a result column"):
        slidewise.run("SELECT * FROM A [RANGE 3] WHERE A.k = A.k", a, archive=tmp_path / "a1", archive_key="k")
    with pytest.raises(ExecutionError, match="this query retracts results"):
        slidewise.run("SELECT RSTREAM DISTINCT A.k FROM A [RANGE 1]", a, archive=tmp_path / "a2", archive_key="A.k", archive_lifetime="A.k")


def test_micro_batches_enter_the_archive_exactly_once_across_a_restart(tmp_path):
    """ArchiveWriter.write_batch (the Spark engine's path): a writer reopened after a crash skips the
    replayed batch, keeps the rows not yet due, and ends with the archive a local run writes."""
    from slidewise.archive.sink import ArchiveWriter

    r = slidewise.run(Q, _streams(), archive=tmp_path / "local", archive_key="A.k", archive_every=25)
    batches = [r.results.iloc[ix] for ix in np.array_split(np.arange(len(r.results)), 6)]
    first = ArchiveWriter(tmp_path / "ar", key="A.k", every=25)
    for i in (0, 1):
        assert first.write_batch(batches[i], i, "run-1")
    state = Archive.open(tmp_path / "ar").manifest["writer"]
    assert state["batch"] == 1 and state["pending"]  # rows not yet due are on disk
    again = ArchiveWriter(tmp_path / "ar", key="A.k", every=25)  # the process was killed; Spark replays batch 1
    assert not again.write_batch(batches[1], 1, "run-1")
    for i in range(2, 6):
        assert again.write_batch(batches[i], i, "run-1")
    again.close()
    got, want = Archive.open(tmp_path / "ar"), Archive.open(tmp_path / "local")
    assert got.now == want.now and got.cell_rows() == want.cell_rows()
    _same(want.read().to_pandas(), got.read().to_pandas())
    assert ArchiveWriter(tmp_path / "ar", key="A.k").write_batch(batches[0].assign(ts=2000, exp=3000), 0, "run-2")  # another run's batch 0
