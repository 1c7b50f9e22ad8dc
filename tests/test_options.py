"""RunOptions: one frozen object with the run options and their defaults, shared by the API, CLI and engines."""

from __future__ import annotations

import ast
import dataclasses
import inspect
from pathlib import Path

import pytest

import slidewise
from slidewise.cli import build_parser
from slidewise.errors import OptionError
from slidewise.options import DEFAULT_CHUNK_ROWS, DEFAULTS, RUN_FIELDS, RunOptions
from slidewise.runtime.join_engine import execute
from slidewise.runtime.plan_engine import execute_plan

SRC = Path(slidewise.__file__).parent
Q = "SELECT * FROM A [RANGE 10], B [RANGE 10] WHERE A.k = B.k"
DATA = {"A": {"ts": [1, 5], "k": [7, 8]}, "B": {"ts": [3, 6], "k": [7, 7]}}


def test_defaults_and_frozen():
    assert DEFAULTS.chunk_rows == DEFAULT_CHUNK_ROWS and DEFAULTS.strategy == "upa" and DEFAULTS.partitions == 10
    with pytest.raises(dataclasses.FrozenInstanceError):
        DEFAULTS.lateness = 5  # type: ignore[misc]
    assert RunOptions(lateness="2s").lateness == 2000


def test_of_merges_and_refuses_unknown_names():
    base = RunOptions(lateness=5, strategy="nt")
    assert RunOptions.of(base, chunk_rows=7) == RunOptions(lateness=5, strategy="nt", chunk_rows=7)
    assert RunOptions.of(None) is DEFAULTS
    with pytest.raises(TypeError, match="unknown run option 'lateness_ms'"):
        RunOptions.of(None, lateness_ms=5)
    opts, rest = RunOptions.split(base, {"lateness": 9, "buckets": 4})
    assert opts.lateness == 9 and opts.strategy == "nt" and rest == {"buckets": 4}


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"strategy": "eager"}, "unknown strategy 'eager'"),
        ({"partitions": 0}, "partitions must be an integer from 1 to 1048576, got 0"),
        ({"partitions": True}, "partitions must be an integer from 1 to 1048576, got True"),
        ({"lateness": "soon"}, "bad lateness 'soon'"),
    ],
)
def test_bad_values_are_option_errors(changes, message):
    with pytest.raises(OptionError) as err:
        RunOptions(**changes)
    assert err.value.message == message


def test_no_engine_entry_point_redeclares_a_run_option():
    """The defaults live in RunOptions only: the API and the local engines take them as run_options/keywords."""
    for fn in (slidewise.run, execute, execute_plan):
        declared = set(inspect.signature(fn).parameters) & set(RUN_FIELDS)
        assert not declared, f"{fn.__qualname__} re-declares {sorted(declared)}"


def test_cli_defaults_are_the_run_options_defaults():
    args = build_parser().parse_args(["run", "Q"])
    assert (args.chunk_rows, args.ts_column, args.ts_unit, args.strategy, args.partitions) == (
        DEFAULTS.chunk_rows,
        DEFAULTS.ts_column,
        DEFAULTS.ts_unit,
        DEFAULTS.strategy,
        DEFAULTS.partitions,
    )
    assert int(args.lateness) == DEFAULTS.lateness


def test_run_takes_an_options_object_and_keywords_override_it():
    late = RunOptions(lateness=0, collect=True)
    r = slidewise.run(Q, DATA, run_options=late)
    assert r.results[["A.ts", "B.ts"]].values.tolist() == [[1, 3], [1, 6]]
    assert slidewise.run(Q, DATA, run_options=late, collect=False).results is None


def test_spark_uses_only_public_names_of_runtime():
    """spark/ imports nothing private (leading underscore) from runtime/."""
    for path in sorted((SRC / "spark").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("slidewise.runtime"):
                private = [a.name for a in node.names if a.name.startswith("_")]
                assert not private, f"{path.name} imports {private} from {node.module}"


def test_the_core_never_imports_the_bench():
    """Only ``slidewise bench``'s handler (cli.py, inside a function) reaches slidewise.bench."""
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC)
        if rel.parts[0] == "bench":
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if any(n == "slidewise.bench" or n.startswith("slidewise.bench.") for n in names):
                assert rel.as_posix() == "cli.py" and node.col_offset > 0, f"{rel} imports the bench"
