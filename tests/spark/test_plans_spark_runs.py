"""General plans on Spark as runs: options, checkpoints (continued runs), live runs with a trigger.

Every ``slidewise run`` option either takes effect for a general query on
Spark or is refused with an OptionError naming it (no JVM needed for those).
A run with ``--checkpoint`` ends its input (available-now) like the join
runner: its last instants are emitted; rerunning the same command with new
files continues from the checkpoint and emits the new input's results only,
so the union of the two runs is one run over everything — except tuples at
or before the first run's end of input, which become ``late`` rejects. The
bucket logic is checked in-process first, then Spark runs it.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from slidewise.cli import main
from slidewise.cql.parser import parse_plan
from slidewise.errors import OptionError
from slidewise.plan.bind import bind
from slidewise.spark.keying import Keying
from slidewise.spark.layout import EOF, TUPLE, Layout, StreamInfo, pack, unpack, wire_frame
from slidewise.spark.plan_state import REJECTS, RESULT, PlanBucket, partition_attribute
from slidewise.spark.sequencer import SequencerLogic
from tests.spark.harness import sequence_into_buckets
from tests.spark.test_plans_spark import AGG, COLUMNS, Q2, Q3, links, local, rows_of


def split(data: dict[str, pd.DataFrame]) -> tuple[dict, dict, int, dict, dict]:
    """A first part (Link1 up to T, Link2 up to T - 3), the rest, the end ``T`` of the first part, the
    rest's rows after ``T`` and its Link2 rows at or before ``T`` (late for a continued run)."""
    one, two = data["Link1"], data["Link2"]
    t = int(one["ts"].iloc[len(one) // 2])
    first = {"Link1": one[one.ts <= t], "Link2": two[two.ts <= t - 3]}
    rest = {"Link1": one[one.ts > t], "Link2": two[two.ts > t - 3]}
    done = max(int(first["Link1"].ts.max()), int(first["Link2"].ts.max()))
    assert done == t
    kept = {n: f[f.ts > done] for n, f in rest.items()}
    late = {n: f[f.ts <= done] for n, f in rest.items()}
    assert len(late["Link2"]) and not len(late["Link1"])
    return first, rest, done, kept, late


def both(a: dict, b: dict) -> dict:
    return {n: pd.concat([a[n], b[n]], ignore_index=True) for n in a}


# ---------------------------------------------------------------- options (no JVM)


@pytest.fixture
def link_files(tmp_path):
    data = links(3, n=20)
    paths = {}
    for name, df in data.items():
        paths[name] = tmp_path / f"{name}.csv"
        df.to_csv(paths[name], index=False)
    return paths


@pytest.mark.parametrize(
    "extra,named",
    [
        (["--algorithm", "columnar"], "--algorithm"),
        (["--order", "Link1"], "--order"),
        (["--negative-tuples"], "--negative-tuples"),
        (["--mode", "batch"], "--mode batch"),
        (["--chunk-rows", "100"], "--chunk-rows"),
        (["--cpu-budget", "100"], "--cpu-budget"),
        (["--stats", "Link1:rate=1"], "--stats"),
        (["--search", "exact"], "--search"),
        (["--adaptive"], "--adaptive"),
    ],
)
def test_options_a_general_query_on_spark_refuses(capsys, link_files, extra, named):
    code = main(["run", Q2, "--source", f"Link1={link_files['Link1']}", "--engine", "spark", *extra])
    err = capsys.readouterr().err
    assert code == 2 and named in err and "general" in err, err


def test_api_passes_spark_options_and_refuses_join_options(link_files, tmp_path):
    import slidewise

    with pytest.raises(OptionError, match="--algorithm"):
        slidewise.run(Q2, {"Link1": str(link_files["Link1"])}, engine="spark", algorithm="columnar")
    with pytest.raises(OptionError, match="--chunk-rows"):
        slidewise.run(Q2, {"Link1": str(link_files["Link1"])}, engine="spark", chunk_rows=10)
    # Spark options reach the Spark run: a checkpoint of another query is refused before Spark starts
    ck = tmp_path / "ck"
    ck.mkdir()
    (ck / "slidewise.json").write_text(json.dumps({"query": "SELECT 1", "buckets": 2}))
    with pytest.raises(OptionError, match="belongs to another query"):
        slidewise.run(Q2, {"Link1": str(link_files["Link1"])}, engine="spark", checkpoint=str(ck))
    with pytest.raises(OptionError, match="bad trigger interval"):
        slidewise.run(Q2, {"Link1": str(link_files["Link1"])}, engine="spark", trigger="soon")


def test_checkpoint_of_another_query_or_strategy_is_refused(capsys, monkeypatch, link_files, tmp_path):
    from slidewise.spark.plan_runner import run_plan_spark

    ck = tmp_path / "ck"
    ck.mkdir()
    (ck / "slidewise.json").write_text(json.dumps({"query": AGG, "buckets": 2, "strategy": "upa", "partitions": 10}))
    base = ["run", Q2, "--source", f"Link1={link_files['Link1']}", "--engine", "spark", "--checkpoint", str(ck)]
    assert main(base) == 2 and "belongs to another query" in capsys.readouterr().err
    monkeypatch.delenv("SLIDEWISE_ENGINE", raising=False)
    without_engine = [a for a in base if a not in ("--engine", "spark")]  # a Spark option selects Spark
    assert main(without_engine) == 2 and "belongs to another query" in capsys.readouterr().err
    with pytest.raises(OptionError, match="written with strategy upa, not nt"):
        run_plan_spark(AGG, {"Link1": str(link_files["Link1"])}, strategy="nt", checkpoint=str(ck))


# ---------------------------------------------------------------- the bucket logic, in-process


def simulate_steps(query: str, steps: list, strategy: str = "upa", buckets: int = 3) -> tuple[Counter, list]:
    """Sequencer and plan buckets in-process over ``steps`` (a dict of stream frames per micro-batch, or
    ``"eof"``); state carried as bytes throughout (one checkpoint over several runs). Results and rejects."""
    plan = bind(parse_plan(query), {"Link1": COLUMNS, "Link2": COLUMNS})
    names = list(dict.fromkeys(s.source for s in plan.scans()))
    attr, _ = partition_attribute(plan)
    keying = Keying("hash", buckets, keys=(attr,) * len(names))
    layout = Layout(tuple(StreamInfo(n, n, {c: "int" for c in COLUMNS}, "raw", 0, "csv", 1) for n in names))
    seq, seq_state, blobs, seen = SequencerLogic(layout, keying), {}, {}, {n: 0 for n in names}
    out, rejects = Counter(), []
    for step in steps:
        rows = []
        if step == "eof":
            rows.append({"k": EOF, "s": 0})
        else:
            for i, n in enumerate(names):
                sub = step.get(n)
                if sub is None or not len(sub):
                    continue
                idx = seen[n] + np.arange(len(sub), dtype=np.int64)
                seen[n] += len(sub)
                rows.append(
                    {
                        "k": TUPLE,
                        "s": i,
                        "q": len(sub),
                        "p": pack(
                            {
                                "t": sub["ts"].to_numpy(np.int64),
                                "q": idx,
                                "o": np.zeros(len(sub), np.int64),
                                "fi": np.zeros(len(sub), np.int32),
                                "files": [f"file:///in/{n}.csv"],
                                **{a: sub[a].to_numpy() for a in COLUMNS},
                            }
                        ),
                    }
                )
        for b, parts in sorted(sequence_into_buckets(seq, seq_state, wire_frame(rows)).items()):
            logic = PlanBucket(plan, names, [list(COLUMNS)] * len(names), [0] * len(names), strategy=strategy)
            blobs[b], frames = logic.process(b, blobs.get(b), pd.concat(parts, ignore_index=True))
            for f in frames:
                for r in f.itertuples(index=False):
                    if r.k == RESULT:
                        out += rows_of(pd.DataFrame(unpack(r.p)))
                    elif r.k == REJECTS:
                        rej = unpack(r.p)
                        rejects += [(names[r.s], reason) for reason in rej["reason"]]
    return out, rejects


@pytest.mark.parametrize("query", [Q3, AGG], ids=["q3", "agg"])
def test_continued_buckets_in_process(query):
    """End of input, then more input on the same state: the union is one run over all kept tuples;
    tuples at or before the first end become late rejects."""
    data = links(11, n=40)
    first, rest, done, kept, late = split(data)
    used = {s.source for s in parse_plan(query).scans()}
    pick = lambda d: {n: f for n, f in d.items() if n in used}  # noqa: E731
    want_first = local(query, pick(first), "upa")
    got_first, rej_first = simulate_steps(query, [pick(first), "eof"])
    assert got_first == want_first and not rej_first
    halves = [{n: f.iloc[: len(f) // 2] for n, f in pick(rest).items()}, {n: f.iloc[len(f) // 2 :] for n, f in pick(rest).items()}]
    got, rejects = simulate_steps(query, [pick(first), "eof", *halves, "eof"])
    assert got == local(query, pick(both(first, kept)), "upa")
    n_late = sum(len(late[n]) for n in used)
    assert len(rejects) == n_late and all(r.startswith(f"late: at or before ts {done}") for _, r in rejects)


# ---------------------------------------------------------------- on Spark


def _write(dirs: dict[str, Path], data: dict[str, pd.DataFrame], name: str, mtime: int) -> None:
    for stream, df in data.items():
        dirs[stream].mkdir(parents=True, exist_ok=True)
        f = dirs[stream] / name
        df.to_csv(f, index=False)
        os.utime(f, (mtime, mtime))


@pytest.mark.spark
def test_checkpoint_continues_with_new_files(spark, tmp_path, capsys):
    """``run --once --checkpoint`` on files A, then B added and the same command again: the second run
    emits B's results only (A's files are not read again), the union equals the local engine over A+B;
    B's tuples at or before A's end are rejects with a reason. Then a rerun without new files adds nothing."""
    from slidewise.spark import read_results

    data = links(11, n=40)
    first, rest, done, kept, late = split(data)
    dirs = {n: tmp_path / "in" / n for n in data}
    _write(dirs, first, "part-000.csv", 1_000_000)
    ck, out, rej, stats = tmp_path / "ck", tmp_path / "out.parquet", tmp_path / "rejects", tmp_path / "stats.json"
    args = [
        "run",
        Q3,
        *[a for n, d in dirs.items() for a in ("--source", f"{n}={d}")],
        "--engine",
        "spark",
        "--once",
        "--checkpoint",
        str(ck),
        "--out",
        str(out),
        "--rejects",
        str(rej),
        "--quiet",
        "--stats-json",
        str(stats),
        "--trigger",
        "1s",
    ]
    assert main(args) == 0, capsys.readouterr().err
    assert rows_of(read_results(out)) == local(Q3, first, "upa")  # the first run's end was flushed
    s1 = json.loads(stats.read_text())
    assert s1["input_ended"] and s1["checkpoint"] == str(ck) and s1["inputs"] == {n: len(f) for n, f in first.items()}
    _write(dirs, rest, "part-001.csv", 1_000_010)
    assert main(args) == 0, capsys.readouterr().err
    s2 = json.loads(stats.read_text())
    assert s2["inputs"] == {n: len(f) for n, f in rest.items()}  # only the new files were read
    assert rows_of(read_results(out)) == local(Q3, both(first, kept), "upa")
    n_late = len(late["Link2"])
    assert s2["rejects"] == n_late and s2["rejects_by_reason"] == {"late": n_late}
    written = pd.concat([pd.read_csv(p) for p in sorted(rej.glob("batch-*.csv"))])
    assert len(written) == n_late and written["reason"].str.startswith("late: at or before").all()
    assert main(args) == 0, capsys.readouterr().err  # nothing new: nothing more
    assert json.loads(stats.read_text())["results"] == 0
    assert rows_of(read_results(out)) == local(Q3, both(first, kept), "upa")
    other = [a if a != Q3 else AGG for a in args]
    assert main(other) == 2 and "belongs to another query" in capsys.readouterr().err


@pytest.mark.spark
def test_live_run_on_directories_with_a_trigger(spark, runs, tmp_path):
    """Directories run live by default (no end of input until asked); a file dropped while the query runs
    is read by a later micro-batch; ending the input then gives the local engine's answer."""
    from slidewise.spark.plan_runner import start_plan_spark

    data = links(5, n=40)
    half = {n: f.iloc[:20] for n, f in data.items()}
    later = {n: f.iloc[20:] for n, f in data.items()}
    dirs = {n: tmp_path / "in" / n for n in data}
    _write(dirs, half, "part-000.csv", 1_000_000)
    run = start_plan_spark(AGG, {"Link1": str(dirs["Link1"])}, spark=spark, trigger="1s", buckets=2)
    runs.append(run)
    assert not run.once and run.interval == 1.0
    assert run.process_all_available()
    before = len(run.sink.frame())
    assert before and not run.ended
    _write(dirs, later, "part-001.csv", 1_000_010)
    assert run.process_all_available()
    run.end_input()
    res = run.result()
    assert res.stats["input_ended"] and not res.stats["interrupted"] and res.stats["micro_batches"] >= 3
    assert res.stats["inputs"] == {"Link1": 40} and res.stats["buckets"] == 2
    assert rows_of(res.results) == local(AGG, {"Link1": data["Link1"]}, "upa")
