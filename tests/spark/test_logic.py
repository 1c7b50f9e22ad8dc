"""The Spark join's logic without a JVM: stages, keying, conversion, operator snapshots.

:func:`harness.simulate` runs the sequencer and the bucket join the way Spark
calls them (per micro-batch, grouped by stream then by bucket, state carried
between calls, a fresh logic object per call as after a worker restart).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import slidewise
from slidewise.cql import parse
from slidewise.errors import PlanError
from slidewise.operators.joins import algorithms
from slidewise.optimizer.planner import choose
from slidewise.plan.expr import Cmp
from slidewise.runtime.rejects import Rejects
from slidewise.runtime.sources import open_source
from slidewise.spark.ingest import convert_table
from slidewise.spark.keying import choose_keying
from slidewise.spark.layout import StreamInfo
from tests.spark.harness import case, frames_of, oracle_rows, result_rows, simulate
from tests.streams import chunks

KINDS = ["time", "count", "lazy", "lazy-restore", "band", "different"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [2, 3, 4])
def test_stages_equal_oracle(kind, n):
    """Every keying (hash, band, single) and batching gives the oracle's answer exactly."""
    for seed in range(3):
        query, tuples = case(kind, n, seed)
        want = oracle_rows(query, tuples)
        for batches, buckets in ((1, 1), (3, 4), (6, 3)):
            got, _ = simulate(query, tuples, batches=batches, buckets=buckets)
            assert result_rows(query, got) == want, (kind, n, seed, batches, buckets)


@pytest.mark.parametrize("kind", ["time", "count", "lazy"])
def test_out_of_order_equals_local_engine(kind):
    """With out-of-order input and lateness, results and rejects are the local engine's."""
    for seed in range(3):
        query, tuples = case(kind, 3, seed, length=50)
        frames = frames_of(query, tuples)
        rng = np.random.default_rng(seed)
        for name, df in frames.items():
            idx = np.arange(len(df))
            for j in range(0, len(idx) - 1, 3):
                if rng.random() < 0.5:
                    idx[j], idx[j + 1] = idx[j + 1], idx[j]
            df = df.iloc[idx].reset_index(drop=True)
            if len(df) > 4:
                df.loc[len(df) - 1, "ts"] = 0  # far too late
            frames[name] = df
        for lateness in (0, 2):
            local = slidewise.run(query, frames, lateness=lateness)
            got, out = simulate(query, tuples, batches=3, buckets=3, lateness=lateness, inputs=frames)
            assert result_rows(query, got) == result_rows(query, local.results)
            rejects = out[out["k"] == 1]
            assert sorted(rejects["rr"]) == sorted(local.rejects.to_frame()["reason"])


def test_lazy_results_fire_at_evaluation_instants_in_idle_buckets():
    """A bucket without new tuples still emits a lazy evaluation once the watermark passes it."""
    q = parse("SELECT * FROM A [RANGE 10 SLIDE 5], B [RANGE 10 SLIDE 5] WHERE A.k = B.k")
    keying = choose_keying(q, [{"k": "int"}, {"k": "int"}], 2)
    assert keying.assign(0, np.arange(2), {"k": np.array([1, 7])})[1].tolist() == [1, 0]  # two buckets
    frames = {"A": pd.DataFrame({"ts": [1, 20, 21], "k": [1, 7, 7]}), "B": pd.DataFrame({"ts": [2, 20, 22], "k": [1, 7, 7]})}
    got, out = simulate(q, None, batches=3, buckets=2, inputs=frames, columns=("k",), final=False)
    # no end of input: the k=1 pair (evaluation at 5) is out although its bucket saw no later tuple,
    # the k=7 pair at 20 since the watermark (min(21, 22) = 21) passed 20
    assert sorted(got[["A.ts", "B.ts"]].itertuples(index=False, name=None)) == [(1, 2), (20, 20)]


def test_keying_modes():
    kinds = [{"a": "int", "x": "int"}] * 3
    q = parse("SELECT * FROM S1 [RANGE 5], S2 [RANGE 5], S3 [RANGE 5] WHERE S1.a = S2.a AND S2.a = S3.a")
    k = choose_keying(q, kinds, 4)
    assert k.mode == "hash" and k.warnings == ()
    rows, b = k.assign(0, np.arange(5), {"a": np.array([3, 3, 4, 3, 4])})
    assert b[0] == b[1] == b[3] and b[2] == b[4]
    mixed = choose_keying(q, [{"a": "int"}, {"a": "float"}, {"a": "int"}], 4)
    assert mixed.key_kind == "float"
    assert (mixed.assign(0, np.arange(1), {"a": np.array([5])})[1] == mixed.assign(1, np.arange(1), {"a": np.array([5.0])})[1]).all()
    band = choose_keying(parse("SELECT * FROM S1 [RANGE 5], S2 [RANGE 5], S3 [RANGE 5] WHERE ABS(S1.x - S2.x) <= 2 AND ABS(S2.x - S3.x) <= 1"), kinds, 8)
    assert band.mode == "band" and band.radius == (0, 1, 2) and band.width == 2.0
    rows, b = band.assign(2, np.arange(1), {"x": np.array([9])})
    assert rows.tolist() == [0] * 5 and sorted(b.tolist()) == [2, 3, 4, 5, 6]
    count = choose_keying(parse("SELECT * FROM S1 [ROWS 5], S2 [RANGE 5] WHERE S1.a = S2.a"), kinds, 4)
    assert count.mode == "single" and "count windows" in count.warnings[0]
    diff = choose_keying(parse("SELECT * FROM S1 [RANGE 5], S2 [RANGE 5], S3 [RANGE 5] WHERE S1.a = S2.a AND S2.x = S3.x"), kinds, 4)
    assert diff.mode == "grid" and diff.dims == (2, 2) and diff.buckets == 4 and diff.warnings == ()
    assert diff.coords == (((0, "a"),), ((0, "a"), (1, "x")), ((1, "x"),))
    a, x = np.array([3, 3, 4, 9]), np.array([1, 2, 1, 1])
    rows1, b1 = diff.assign(0, np.arange(4), {"a": a, "x": x})  # S1: its a-cell, every x-cell
    rows2, b2 = diff.assign(1, np.arange(4), {"a": a, "x": x})  # S2: exactly one cell
    rows3, b3 = diff.assign(2, np.arange(4), {"a": a, "x": x})  # S3: its x-cell, every a-cell
    assert rows1.tolist() == [0, 0, 1, 1, 2, 2, 3, 3] and rows2.tolist() == [0, 1, 2, 3] and len(rows3) == 8
    for k in range(4):  # a result (S1 k, S2 k, S3 k) has its members together in exactly one bucket
        common = set(b1[rows1 == k]) & {b2[k]} & set(b3[rows3 == k])
        assert common == {b2[k]}
    theta = choose_keying(parse("SELECT * FROM S1 [RANGE 5], S2 [RANGE 5] WHERE S1.a < S2.a"), kinds, 4)
    assert theta.mode == "single" and "theta" in theta.warnings[0]


def test_convert_table_is_the_local_conversion():
    """Spark's text columns converted by the local rules: same values, same reasons."""
    text = "ts,a,name\n1.5,7,x\nabc,8,y\n2.25,nine,z\n,4,w\n3,5,\n"
    table = pa.table({"ts": ["1.5", "abc", "2.25", None, "3"], "a": ["7", "8", "nine", "4", "5"], "name": ["x", "y", "z", "w", None]})
    info = StreamInfo("S", "S", {"a": "int", "name": "str"}, "s")
    ts, cols, bad, reasons, _ = convert_table(table, info, "ts")
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "s.csv"
        path.write_text(text)
        rej = Rejects()
        src = open_source("S", str(path), ts_unit="s")
        local = list(src.chunks(rej))
    assert ts[~bad].tolist() == np.concatenate([c.ts for c in local]).tolist()
    assert cols["a"][~bad].tolist() == np.concatenate([c.cols["a"] for c in local]).tolist()
    assert list(reasons[bad]) == rej.table().column("reason").to_pylist()


@pytest.mark.parametrize("name", sorted(set(algorithms()) - {"select"}))
def test_operator_snapshot_continues_exactly(name):
    """snapshot -> load_snapshot into a fresh operator gives the uninterrupted operator's output."""
    for kind in ("time", "lazy", "count", "rows"):  # the first case the algorithm accepts
        query, tuples = case(kind, 3 if name != "binary" else 2, 1, length=30)
        try:
            plan = choose(query, name)
            break
        except PlanError:
            continue
    else:
        pytest.fail(f"{name} accepts none of the test queries")
    whole, resumed = plan.build(), plan.build()
    parts = chunks(query.n, tuples, 5)
    want, got = [], []
    for chunk in parts:
        want += whole.process(chunk).keys()
        got += resumed.process(chunk).keys()
        blob = resumed.snapshot()
        resumed = plan.build()
        resumed.load_snapshot(blob)
    want += whole.finish().keys()
    got += resumed.finish().keys()
    assert got == want and resumed.comparisons == whole.comparisons


def test_grid_keying_equals_oracle_for_cycles_and_theta_edges():
    """Per-edge keying: a cycle of different attributes, two attributes between one pair, and a stream
    joined only by a theta predicate (replicated to every bucket) — each result found once."""
    from slidewise.plan.query import Equality
    from tests.streams import col, query_of

    shapes = [
        ([Equality(col(0, "a"), col(1, "a")), Equality(col(1, "b"), col(2, "b")), Equality(col(2, "x"), col(0, "x"))], []),
        ([Equality(col(0, "a"), col(1, "a")), Equality(col(0, "b"), col(1, "b")), Equality(col(1, "x"), col(2, "x"))], []),
        ([Equality(col(0, "a"), col(1, "b"))], [Cmp("<", col(1, "x"), col(2, "x"))]),
    ]
    for seed in range(3):
        base, tuples = case("time", 3, seed, length=60)
        for equalities, filters in shapes:
            query = query_of([r.window for r in base.streams], equalities, filters)
            want = oracle_rows(query, tuples)
            for buckets in (4, 6):
                keying = choose_keying(query, [{"a": "int", "b": "int", "x": "int"}] * 3, buckets)
                assert keying.mode == "grid"
                got, _ = simulate(query, tuples, batches=3, buckets=buckets)
                assert result_rows(query, got) == want, (seed, equalities, filters, buckets)


def test_console_batches_and_collected_frames(capsys):
    """The sinks' shared helpers: a console batch prints its count and first 20 rows; no frames, empty columns."""
    from slidewise.spark.sinks import collected, print_console

    print_console(pd.DataFrame({"a": range(30)}), 3, "results")
    out, err = capsys.readouterr()
    assert err == "-- batch 3: 30 results\n" and len(out.splitlines()) == 21
    assert list(collected([], ["a", "b"]).columns) == ["a", "b"]
    assert collected([pd.DataFrame({"a": [1]}), pd.DataFrame({"a": [2]})], ["a"])["a"].tolist() == [1, 2]


@pytest.mark.parametrize("kind", ["time", "band", "count"])
def test_router_equals_sequencer(kind):
    """The one-stage join (router, then late checks and sequence numbers in each bucket) gives the
    sequencer's output: results, late rejects (file, line, reason) once per tuple, admitted counts —
    with several files and splits per batch, chunks in shuffled order, replicated (band) tuples."""
    from slidewise.spark.bucket import BucketJoin
    from slidewise.spark.layout import EOF, TUPLE, pack, wire_frame
    from slidewise.spark.sequencer import SequencerLogic
    from tests.spark.harness import COLUMNS, layout_of, route_into_buckets, sequence_into_buckets

    for seed in range(3):
        query, tuples = case(kind, 3, seed, length=60)
        rng = np.random.default_rng(seed)
        layout = layout_of(query, lateness=1)
        keying = choose_keying(query, [s.kinds for s in layout.streams], 4)
        batches = []
        for step in range(3):
            rows = []
            for i in range(query.n):
                own = [t for t in tuples if t.stream == i]
                mine = [own[k] for k in np.array_split(np.arange(len(own)), 3)[step]]
                ts = np.array([t.ts for t in mine], np.int64)
                for j in range(0, len(ts) - 1, 3):  # out of order: late tuples
                    if rng.random() < 0.5:
                        ts[j], ts[j + 1] = ts[j + 1], ts[j]
                files = [f"file:///in/{query.streams[i].source}-{step}-{f}.csv" for f in range(2)]
                for j, part in enumerate(np.array_split(np.arange(len(mine)), 4)):
                    if len(part):  # (file, split) = (j // 2, j % 2), rows counted within the split
                        cols = {c: np.array([mine[k].vals[c] for k in part], np.int64) for c in COLUMNS}
                        payload = {"t": ts[part], "q": np.arange(len(part), dtype=np.int64), "o": np.full(len(part), 100 * (j % 2), np.int64)}
                        payload |= {"fi": np.zeros(len(part), np.int32), "files": [files[j // 2]], **cols}
                        rows.append({"k": TUPLE, "s": i, "q": len(part), "p": pack(payload)})
            rng.shuffle(rows)
            batches.append(wire_frame(rows))
        batches.append(wire_frame([{"k": EOF, "s": 0}]))
        outputs = []
        for route in (True, False):
            seq, seq_state, blobs, out = SequencerLogic(layout, keying), {}, {}, []
            for batch in batches:
                by_bucket = route_into_buckets(layout, keying, batch) if route else sequence_into_buckets(seq, seq_state, batch)
                for b, parts in sorted(by_bucket.items()):
                    blobs[b], frames = BucketJoin(query, layout).process(b, blobs.get(b), pd.concat(parts, ignore_index=True))
                    out += frames
            allout = pd.concat(out, ignore_index=True)
            results = sorted(map(tuple, allout[allout["k"] == 0][[f"r{j}" for j in range(len(layout.out_names))]].astype(np.int64).to_numpy().tolist()))
            rejects = sorted(allout[allout["k"] == 1][["rs", "rf", "rl", "rr"]].itertuples(index=False, name=None))
            admitted = allout[allout["k"] == 3].groupby("rs")["n0"].sum().to_dict()
            outputs.append((results, rejects, admitted))
        assert outputs[0] == outputs[1], (kind, seed)
        assert outputs[0][0] and outputs[0][1], "the case has results and late tuples"
    assert kind != "band" or keying.mode == "band"


def test_file_names_are_factorised_by_runs():
    """Sorted distinct names and each row's index, as ``np.unique`` gives them, from the runs' heads."""
    from slidewise.spark.ingest import factorize_runs

    rng = np.random.default_rng(0)
    for n in (0, 1, 7, 200):
        files = np.asarray([f"file:/d/part-{k}.csv" for k in np.sort(rng.integers(0, 5, n))[::-1]], dtype=object)
        names, fi = factorize_runs(files)
        want_names, want_fi = np.unique(files.astype(str), return_inverse=True)
        assert names == want_names.tolist() and fi.dtype == np.int32 and fi.tolist() == want_fi.tolist()


def test_wire_batch_fills_absent_fields():
    """Absent numbers are 0, an absent payload null, in the wire schema."""
    from slidewise.spark.layout import EOF, TUPLE, WIRE_ARROW, wire_batch

    b = wire_batch([{"k": EOF, "b": 3}, {"k": TUPLE, "s": 1, "q": 2, "p": b"x"}])
    assert b.schema == WIRE_ARROW
    assert b.to_pydict() == {"k": [EOF, TUPLE], "b": [3, 0], "s": [0, 1], "q": [0, 2], "t": [0, 0], "p": [None, b"x"]}


def test_native_longs_convert_as_their_text():
    """A CSV batch with Spark-parsed ``long`` columns (nulls for empty fields and for texts Spark
    could not parse, which carry the row's text in ``_corrupt``) converts exactly as the same rows read as text."""
    from slidewise.spark.ingest import convert_raw

    lines = ["1,7,x", "2,,y", "3,7.0,z", "4,nine,w", "5,7", ",8,v", "6,+9,", "7,7,u"]
    fields = [line.split(",") for line in lines]
    full = [f if len(f) == 3 else [None, None, None] for f in fields]

    def long_or_none(v):
        return int(v) if v and v.lstrip("+-").isdigit() else None

    corrupt = [None if len(f) == 3 and all(v == "" or long_or_none(v) is not None for v in f[:2]) else line for f, line in zip(fields, lines)]
    short = [None if len(f) == 3 else line for f, line in zip(fields, lines)]  # read as text, only a wrong field count is corrupt
    text = pa.record_batch({f"v{j}": [None if f[j] == "" else f[j] for f in full] for j in range(3)} | {"_corrupt": short})
    typed = pa.record_batch(
        {"v0": pa.array([long_or_none(f[0]) for f in full], pa.int64()), "v1": pa.array([long_or_none(f[1]) for f in full], pa.int64())}
        | {"v2": [None if f[2] == "" else f[2] for f in full], "_corrupt": corrupt}
    )
    info = StreamInfo("S", "S", {"a": "int", "name": "str"}, "ms", 0, "csv", 1)
    names = ("ts", "a", "name")
    want, got = convert_raw(text, names, info, "ts"), convert_raw(typed, names, info, "ts")
    assert want[2].tolist() == got[2].tolist() and want[2].sum() == 4
    for w, g in zip(want, got):
        if isinstance(w, dict):
            assert {k: v.tolist() for k, v in w.items()} == {k: v.tolist() for k, v in g.items()}
        else:
            assert w.tolist() == g.tolist()


def test_sibling_directories_with_one_read_schema_share_a_file_source():
    """Streams share a file source when Spark reads their files alike and their directories are siblings."""
    from slidewise.spark.files import groups

    def csv(d, columns=("ts", "a"), longs=("ts", "a")):
        return {"fmt": "csv", "dir": d, "glob": "*.{csv,csv.gz,csv.bz2}", "columns": list(columns), "longs": list(longs), "ts_column": "ts"}

    recipes = [csv("/w/S1"), csv("/w/S2"), csv("/w/S3", longs=("ts",)), csv("/v/S4"), csv("/w/S1"), {"fmt": "parquet", "dir": "/w/P", "glob": "*.parquet"}]
    recipes.append({**csv("/w/S5"), "glob": "one[.]csv"})
    assert groups(recipes) == [[0, 1, 4], [2], [3], [5], [6]]


def test_a_worker_settles_once_after_its_first_task():
    """After its first task a worker freezes what is alive (PySpark's gc.collect() after every task then skips it), once."""
    import subprocess
    import sys

    code = (
        "import gc; import numpy; from slidewise.spark.worker import settled\n"
        "assert gc.get_freeze_count() == 0 and list(settled(iter([1, 2]))) == [1, 2]\n"
        "frozen = gc.get_freeze_count(); junk = [[] for _ in range(1000)]; list(settled(iter([])))\n"
        "print(frozen > 10000, gc.get_freeze_count() == frozen)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["True", "True"]


def test_a_bucket_yields_its_results_and_one_frame_of_the_rest():
    from slidewise.spark.bucket import merged
    from slidewise.spark.layout import ADMITTED, RESULT, STATS

    res = pd.DataFrame({"k": np.zeros(3, np.int8) + RESULT, "r0": np.arange(3)})
    small = [pd.DataFrame({"k": np.full(1, k, np.int8), "n0": [k]}) for k in (ADMITTED, ADMITTED, STATS)]
    out = merged([small[0], res, small[1], pd.DataFrame({"k": []}), small[2]])
    assert len(out) == 2 and out[0] is res and out[1]["k"].tolist() == [ADMITTED, ADMITTED, STATS]
    assert merged([small[2]]) == [small[2]] and merged([]) == []


def test_the_processors_module_does_not_import_pandas():
    """Spark imports it in a fresh driver-side Python process at every query start, where pandas is not needed."""
    import subprocess
    import sys

    code = "import sys, slidewise.spark.processor; print('pandas' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"
