"""The papers' synthetic streams: determinism, rate proportions, value ranges, Zipf, files."""

from __future__ import annotations

import numpy as np
import pytest

from slidewise.errors import OptionError
from slidewise.runtime.generate import generate, write_streams
from slidewise.runtime.sources import open_source


def test_deterministic_for_a_seed():
    a = generate([10, 1, 3], [100, 100, 5], 5000, seed=7)
    b = generate([10, 1, 3], [100, 100, 5], 5000, seed=7)
    c = generate([10, 1, 3], [100, 100, 5], 5000, seed=8)
    for x, y in zip(a, b):
        assert x.keys() == y.keys() == {"ts", "a", "x"}
        assert all(np.array_equal(x[k], y[k]) for k in x)
    assert not all(np.array_equal(x["a"], y["a"]) for x, y in zip(a, c))


def test_timestamps_are_the_loop_index_split_by_rate():
    rates = [10, 1, 1, 3]
    n = 200_000
    streams = generate(rates, 1000, n, seed=1)
    ts = np.concatenate([s["ts"] for s in streams])
    assert np.array_equal(np.sort(ts), np.arange(n))  # one tuple per loop step
    assert all((np.diff(s["ts"]) > 0).all() for s in streams)  # each stream in time order
    share = np.array([len(s["ts"]) for s in streams]) / n
    assert np.allclose(share, np.array(rates) / sum(rates), atol=0.005)


def test_value_ranges_and_containment():
    streams = generate([1, 1], [5, 50], 20_000, seed=2, attr="k")
    assert set(streams[0]["k"].tolist()) == set(range(1, 6))
    assert set(streams[1]["k"].tolist()) == set(range(1, 51))  # {1..5} is contained in {1..50}
    for s in streams:
        assert s["k"].dtype == np.int64 and s["x"].min() >= 0 and s["x"].max() <= 99


def test_zipf_skews_towards_small_values():
    (s,) = generate([1], 100, 100_000, seed=3, zipf=1.0)
    counts = np.bincount(s["a"], minlength=101)[1:]
    assert counts.sum() == 100_000 and s["a"].min() >= 1 and s["a"].max() <= 100
    harmonic = (1 / np.arange(1, 101)).sum()
    assert abs(counts[0] / 100_000 - 1 / harmonic) < 0.01  # P(1) = 1 / H_100
    assert counts[0] > 5 * counts[9] > 0
    (u,) = generate([1], 100, 100_000, seed=3, zipf=0.0)  # s = 0 is uniform
    assert abs(np.bincount(u["a"])[1] / 100_000 - 0.01) < 0.003


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(rates=[1, 0], distinct=[5, 5], n_tuples=10), "rates must be positive"),
        (dict(rates=[1, -2], distinct=5, n_tuples=10), "rates must be positive"),
        (dict(rates=[], distinct=5, n_tuples=10), "no streams"),
        (dict(rates=[1, 1], distinct=[5, 5, 5], n_tuples=10), "3 distinct values for 2 streams"),
        (dict(rates=[1, 1], distinct=[5, 0], n_tuples=10), "distinct values must be positive"),
        (dict(rates=[1], distinct=5, n_tuples=-1), "non-negative integer"),
        (dict(rates=[1], distinct=5, n_tuples=10, zipf=-1.0), "Zipf exponents"),
        (dict(rates=[1], distinct=5, n_tuples=10, attr="ts"), "attribute"),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(OptionError, match=message):
        generate(**kwargs)


def test_empty_and_single_stream():
    assert [len(s["ts"]) for s in generate([1, 2], 3, 0)] == [0, 0]
    (s,) = generate([5], 3, 10)
    assert s["ts"].tolist() == list(range(10))


@pytest.mark.parametrize("fmt", ["csv", "parquet", "jsonl"])
def test_write_streams_reads_back(tmp_path, fmt):
    streams = generate([2, 1], [10, 10], 300, seed=4)
    paths = write_streams(streams, tmp_path / "gen", fmt=fmt)
    assert [p.name for p in paths] == [f"S1.{fmt}", f"S2.{fmt}"]
    for p, s in zip(paths, streams):
        src = open_source(p.stem, p)
        assert src.schema == {"a": np.int64, "x": np.int64}
        chunks = list(src.chunks())
        assert np.array_equal(np.concatenate([c.ts for c in chunks]), s["ts"])
        assert np.array_equal(np.concatenate([c.cols["a"] for c in chunks]), s["a"])


def test_write_streams_names_and_format_errors(tmp_path):
    streams = generate([1, 1], 3, 10)
    assert [p.name for p in write_streams(streams, tmp_path, names=["L", "R"])] == ["L.csv", "R.csv"]
    with pytest.raises(OptionError, match="format"):
        write_streams(streams, tmp_path, fmt="xml")
    with pytest.raises(OptionError, match="1 names for 2 streams"):
        write_streams(streams, tmp_path, names=["L"])
