"""The Spark-native API (:func:`slidewise.spark.query`) for general queries: a sliding GROUP BY (the
pane path) and a negation (the operator network), over batch and streaming DataFrames, equal the
local engine; a user's own ``writeStream`` restarted on its checkpoint loses and repeats nothing."""

from __future__ import annotations

from collections import Counter

import pandas as pd
import pytest

import slidewise
from slidewise.spark.dataframe import end_input, query
from tests.e2e_case import inputs

pytestmark = pytest.mark.spark

PANES = "SELECT RSTREAM(A.k, COUNT(*) AS n, SUM(A.x) AS s) FROM A [RANGE 19 SLIDE 10] GROUP BY A.k"
NEGATION = "SELECT ISTREAM(*) FROM A [RANGE 20] WHERE NOT EXISTS (SELECT * FROM B [RANGE 20] WHERE B.k = A.k)"
QUERIES = pytest.mark.parametrize("q", [PANES, NEGATION], ids=["panes", "negation"])


def _data() -> dict[str, pd.DataFrame]:
    data = inputs(120, seed=3, span=400)
    data["A"]["x"] = data["A"]["ts"] % 7
    return data


def _rows(frame: pd.DataFrame) -> Counter:
    return Counter(map(tuple, frame.astype(str).values.tolist()))


def _oracle(q: str, data: dict) -> Counter:
    return _rows(slidewise.run(q, data).results)


def _parquet_dirs(tmp_path, data: dict, parts: int) -> dict:
    """Each stream as ``parts`` Parquet files of consecutive rows in its own directory."""
    dirs = {}
    for name, df in data.items():
        dirs[name] = tmp_path / name
        dirs[name].mkdir()
        step = -(-len(df) // parts)
        for p in range(parts):
            df.iloc[p * step : (p + 1) * step].to_parquet(dirs[name] / f"p{p}.parquet")
    return dirs


@QUERIES
def test_batch_frames_match_the_local_engine(spark, q):
    data = _data()
    out = query(spark, q, {k: spark.createDataFrame(v) for k, v in data.items()})
    assert not out.isStreaming
    want = slidewise.run(q, data).results
    assert list(out.columns) == list(want.columns)
    assert dict(out.dtypes)["ts"] == "bigint" and dict(out.dtypes)["sign"] == "tinyint"
    assert _rows(out.toPandas()) == _rows(want)


@QUERIES
def test_file_stream_matches_the_local_engine(spark, tmp_path, q):
    data = _data()
    dirs = _parquet_dirs(tmp_path, data, 2)
    frames = {n: spark.readStream.schema(spark.read.parquet(str(d)).schema).option("maxFilesPerTrigger", 1).parquet(str(d)) for n, d in dirs.items()}
    out = query(spark, q, frames, control=str(tmp_path / "control"))
    assert out.isStreaming
    got: list[pd.DataFrame] = []
    run = out.writeStream.queryName("api_plan_stream").foreachBatch(lambda df, _: got.append(df.toPandas())).start()
    try:
        run.processAllAvailable()
        end_input(tmp_path / "control")
        run.processAllAvailable()
    finally:
        run.stop()
    assert _rows(pd.concat(got)) == _oracle(q, data)


@QUERIES
def test_user_write_stream_restarted_on_its_checkpoint(spark, tmp_path, q):
    """Stopped after each third of the files and started again (a new query() call, as a new process
    would): the parquet sink holds every result exactly once."""
    data = _data()
    (tmp_path / "staged").mkdir()
    staged = _parquet_dirs(tmp_path / "staged", data, 3)
    dirs = {n: tmp_path / n for n in data}
    for d in dirs.values():
        d.mkdir()

    schemas = {n: spark.read.parquet(str(d)).schema for n, d in staged.items()}

    def start():
        frames = {n: spark.readStream.schema(schemas[n]).parquet(str(d)) for n, d in dirs.items()}
        out = query(spark, q, frames, control=str(tmp_path / "control"))
        return out.writeStream.queryName("api_plan_restart").format("parquet").option("checkpointLocation", str(tmp_path / "ckpt")).start(str(tmp_path / "out"))

    for part in range(3):
        for n in data:
            (staged[n] / f"p{part}.parquet").rename(dirs[n] / f"p{part}.parquet")
        run = start()
        try:
            run.processAllAvailable()
            if part == 2:
                end_input(tmp_path / "control")
                run.processAllAvailable()
        finally:
            run.stop()
    assert _rows(pd.read_parquet(tmp_path / "out")) == _oracle(q, data)
