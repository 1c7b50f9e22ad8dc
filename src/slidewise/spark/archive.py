"""An archive (:mod:`slidewise.archive`) as a Spark DataFrame: ``spark.read.parquet`` of the manifest's live files.

An update removes every row with ``exp`` before its instant from the files it
keeps, so the live files hold exactly the unexpired rows; no filter is needed.
Files of the previous manifest stay until the next update, so a job that
listed them may read them while one update runs.
"""

from __future__ import annotations

from pathlib import Path

from slidewise.archive import Archive


def read_archive(spark, root: str | Path):
    """The unexpired rows of the archive at ``root`` (exp >= its current time), as a DataFrame."""
    from pyspark.sql.pandas.types import from_arrow_schema

    archive = Archive.open(root)
    files = archive.live_files()
    if files:
        return spark.read.parquet(*files)
    schema = archive.schema  # an empty archive: no rows, the columns of the rows it was given
    return spark.createDataFrame([], from_arrow_schema(schema) if schema is not None else "exp long")
