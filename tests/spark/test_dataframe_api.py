"""The Spark-native API (:func:`slidewise.spark.query`): batch and streaming DataFrames in, a DataFrame out,
the same rows as the local engine; a user's own ``writeStream`` restarted on its checkpoint."""

from __future__ import annotations

import pandas as pd
import pytest

from slidewise.errors import OptionError
from slidewise.spark.dataframe import end_input, query
from tests.e2e_case import Q, inputs, kill_after_first_commit, oracle, rows

pytestmark = pytest.mark.spark


def _inputs(n: int = 120) -> dict[str, pd.DataFrame]:
    return inputs(n, seed=3, span=400)


def _finish(q, control) -> None:
    """Drain ``q``, mark the end of input in ``control``, drain again, stop."""
    try:
        q.processAllAvailable()
        end_input(control)
        q.processAllAvailable()
    finally:
        q.stop()


def test_batch_frames_match_the_local_engine(spark):
    data = _inputs()
    out = query(spark, Q, {k: spark.createDataFrame(v) for k, v in data.items()})
    assert not out.isStreaming
    assert dict(out.dtypes)["at"] == "bigint" and dict(out.dtypes)["v"] == "string"
    assert rows(out.toPandas()) == oracle(data)


class MemoryStream:
    """Spark's MemoryStream (JVM) of int / string columns, fed from pandas."""

    def __init__(self, spark, frame: pd.DataFrame):
        from pyspark.sql import DataFrame

        self.jvm, self.gateway = spark._jvm, spark.sparkContext._gateway
        ddl = ", ".join(f"`{c}` {'string' if frame[c].dtype == object else 'int'}" for c in frame.columns)
        schema = self.jvm.org.apache.spark.sql.types.StructType.fromDDL(ddl)
        cls = self.jvm.org.apache.spark.sql.execution.streaming.runtime.MemoryStream
        self.stream = cls.apply(self.jvm.org.apache.spark.sql.Encoders.row(schema), spark._jsparkSession)
        self.frame = DataFrame(self.stream.toDF(), spark)

    def add(self, frame: pd.DataFrame) -> None:
        rows = self.jvm.java.util.ArrayList()
        for values in frame.itertuples(index=False):
            arr = self.gateway.new_array(self.jvm.java.lang.Object, len(values))
            for i, v in enumerate(values):
                arr[i] = v if isinstance(v, str) else int(v)
            rows.add(self.jvm.org.apache.spark.sql.RowFactory.create(arr))
        self.stream.addData(self.jvm.scala.jdk.javaapi.CollectionConverters.asScala(rows).toSeq())


def test_memory_stream_matches_the_local_engine(spark, tmp_path):
    data = _inputs()
    streams = {name: MemoryStream(spark, df) for name, df in data.items()}
    out = query(spark, Q, {n: m.frame for n, m in streams.items()}, control=str(tmp_path / "control"), lateness=5)
    got: list[pd.DataFrame] = []
    q = out.writeStream.queryName("api_memory").foreachBatch(lambda df, _: got.append(df.toPandas())).start()
    try:
        for part in (slice(0, 50), slice(50, None)):
            for name, m in streams.items():
                m.add(data[name].iloc[part])
            q.processAllAvailable()
        end_input(tmp_path / "control")
        q.processAllAvailable()
    finally:
        q.stop()
    assert rows(pd.concat(got)) == oracle(data, lateness=5)


def test_file_stream_with_end_of_input_matches_the_local_engine(spark, tmp_path):
    data = _inputs()
    frames = {}
    for name, df in data.items():
        d = tmp_path / name
        d.mkdir()
        half = len(df) // 2
        df.iloc[:half].to_parquet(d / "part-0.parquet")
        df.iloc[half:].to_parquet(d / "part-1.parquet")
        frames[name] = spark.readStream.schema(spark.read.parquet(str(d)).schema).option("maxFilesPerTrigger", 1).parquet(str(d))
    out = query(spark, Q, frames, control=str(tmp_path / "control"))
    assert out.isStreaming
    got: list[pd.DataFrame] = []
    q = out.writeStream.queryName("api_file_stream").foreachBatch(lambda df, _: got.append(df.toPandas())).start()
    _finish(q, tmp_path / "control")
    assert rows(pd.concat(got)) == oracle(data)


@pytest.mark.parametrize("streaming", [True, False], ids=["stream", "batch"])
def test_files_of_one_micro_batch_are_read_in_file_order(spark, tmp_path, streaming):
    """Several files in one micro-batch (here: all at the first trigger; after a SIGKILL, the files the
    killed run had listed plus the next ones): Spark's partitions put larger files first, the input
    order is still file order, and no tuple of an earlier file is rejected as late."""
    data = _inputs()
    for name, df in data.items():
        (tmp_path / name).mkdir()
        for part, part_rows in enumerate((slice(0, 15), slice(15, 45), slice(45, None))):  # growing files
            df.iloc[part_rows].to_parquet(tmp_path / name / f"p{part}.parquet")
    reader = spark.readStream if streaming else spark.read
    frames = {n: (reader.schema(spark.read.parquet(str(tmp_path / n)).schema) if streaming else reader).parquet(str(tmp_path / n)) for n in data}
    if not streaming:
        assert rows(query(spark, Q, frames).toPandas()) == oracle(data)
        return
    got: list[pd.DataFrame] = []
    q = query(spark, Q, frames, control=str(tmp_path / "control")).writeStream.queryName("api_file_order").foreachBatch(lambda df, _: got.append(df.toPandas())).start()
    try:
        q.processAllAvailable()
        end_input(tmp_path / "control")
        q.processAllAvailable()
    finally:
        q.stop()
    assert rows(pd.concat(got)) == oracle(data)


def test_user_write_stream_restarted_on_its_checkpoint(spark, tmp_path):
    """Stopped after the first files and started again (a new query() call, as a new process would):
    the parquet sink holds every result exactly once."""
    data = _inputs()
    dirs = {}
    for name in data:
        dirs[name] = tmp_path / name
        dirs[name].mkdir()

    def write(part: int) -> None:
        for name, df in data.items():
            third = len(df) // 3
            df.iloc[part * third : (part + 1) * third if part < 2 else None].to_parquet(dirs[name] / f"p{part}.parquet")

    def start():
        schemas = {n: spark.read.parquet(str(d)).schema for n, d in dirs.items()}
        frames = {n: spark.readStream.schema(schemas[n]).parquet(str(d)) for n, d in dirs.items()}
        out = query(spark, Q, frames, control=str(tmp_path / "control"))
        return out.writeStream.queryName("api_restart").format("parquet").option("checkpointLocation", str(tmp_path / "ckpt")).start(str(tmp_path / "out"))

    write(0)
    q = start()
    q.processAllAvailable()
    q.stop()
    write(1)
    q = start()
    q.processAllAvailable()
    q.stop()
    write(2)
    q = start()
    _finish(q, tmp_path / "control")
    assert rows(pd.read_parquet(tmp_path / "out")) == oracle(data)


def test_inputs_must_be_dataframes_of_one_kind(spark, tmp_path):
    data = _inputs(10)
    with pytest.raises(OptionError, match="'A' is a DataFrame, not a Spark DataFrame"):
        query(spark, Q, data)
    (tmp_path / "B").mkdir()
    data["B"].to_parquet(tmp_path / "B" / "p.parquet")
    stream = spark.readStream.schema(spark.read.parquet(str(tmp_path / "B")).schema).parquet(str(tmp_path / "B"))
    with pytest.raises(OptionError, match="mix streaming and batch"):
        query(spark, Q, {"A": spark.createDataFrame(data["A"]), "B": stream})


_USER_APP = """
import sys
from slidewise.spark.dataframe import query
from slidewise.spark.session import get_session

root = sys.argv[1]
spark = get_session("local[2]", {"spark.sql.shuffle.partitions": "2"}, ui=False)
frames = {n: spark.readStream.schema(spark.read.parquet(f"{root}/{n}").schema).option("maxFilesPerTrigger", 1)
          .parquet(f"{root}/{n}") for n in ("A", "B")}
out = query(spark, sys.argv[2], frames, control=f"{root}/control")
q = (out.writeStream.queryName("user_app").format("parquet").trigger(processingTime="3 seconds")
     .option("checkpointLocation", f"{root}/ckpt").start(f"{root}/out"))
q.awaitTermination()
"""


@pytest.mark.slow
def test_user_write_stream_killed_and_restarted(spark, tmp_path):
    """A user's application (query + writeStream + checkpoint) SIGKILLed after its first committed
    micro-batch; the same application started again: every result once."""
    import sys

    data = _inputs()
    for name, df in data.items():
        (tmp_path / name).mkdir()
        for part in range(3):
            third = len(df) // 3
            df.iloc[part * third : (part + 1) * third if part < 2 else None].to_parquet(tmp_path / name / f"p{part}.parquet")
    kill_after_first_commit([sys.executable, "-c", _USER_APP, str(tmp_path), Q], tmp_path / "ckpt" / "commits", tmp_path / "app.log")
    assert not (tmp_path / "ckpt" / "commits" / "2").exists()  # killed mid-stream
    frames = {n: spark.readStream.schema(spark.read.parquet(str(tmp_path / n)).schema).option("maxFilesPerTrigger", 1).parquet(str(tmp_path / n)) for n in data}
    out = query(spark, Q, frames, control=str(tmp_path / "control"))
    q = out.writeStream.queryName("user_app_again").format("parquet").option("checkpointLocation", str(tmp_path / "ckpt")).start(str(tmp_path / "out"))
    _finish(q, tmp_path / "control")
    assert rows(pd.read_parquet(tmp_path / "out")) == oracle(data)
