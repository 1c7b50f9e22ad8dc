"""Many queries on Spark: each sharing group (:func:`slidewise.optimizer.sharing.share`, the local
planner's groups) as ONE streaming query with one pane state.

:func:`run_groups_spark` starts, per group, the general-plan pipeline of
:func:`slidewise.spark.plan_runner.start_plan_spark` with a
:class:`~slidewise.spark.panes.PaneBucket` over the whole group: one state
per key bucket holding the pane partials per (group key, region, pane) of
every distinct partial the members read; each member's windows are merged
from those panes and its rows routed to its own output by the RESULT rows'
``s`` (the member's index) in :class:`SharedSink`. With a ``checkpoint``
each group keeps ``CHECKPOINT/group-NAME`` (NAME: its first query): rerunning
continues exactly once, as one query on Spark does.
"""

from __future__ import annotations

from pathlib import Path

from slidewise.optimizer.sharing import Group
from slidewise.options import RunOptions
from slidewise.runtime.join_engine import RunResult
from slidewise.spark.plan_runner import _PlanSink
from slidewise.spark.plan_state import RESULT
from slidewise.spark.sinks import FileOutputs

__all__ = ["SharedFiles", "SharedSink", "run_groups_spark", "shared_logic", "shared_parts"]


class SharedSink:
    """``foreachBatch`` target of a group: RESULT rows to each member's :class:`_PlanSink` (by ``s``), the
    rest (rejects, admitted counts, state stats) once to ``main``; other attributes are ``main``'s."""

    def __init__(self, main: _PlanSink, members: list[_PlanSink]):
        self.main, self.members = main, members

    def __call__(self, df, batch_id: int) -> None:
        if batch_id in self.main.seen:  # a replayed batch within this run
            return
        rows = df.collect()
        for i, m in enumerate(self.members):
            m.take([r for r in rows if r["k"] == RESULT and r["s"] == i], batch_id)
        self.main.take([r for r in rows if r["k"] != RESULT], batch_id)

    @property
    def results(self) -> int:
        return sum(m.results for m in self.members)

    @property
    def retractions(self) -> int:
        return sum(m.retractions for m in self.members)

    def close(self) -> None:
        for s in [self.main, *self.members]:
            s.close()

    def __getattr__(self, name: str):
        return getattr(self.main, name)


class SharedFiles:
    """The file forms of the members' outputs (and the run's rejects): assembled per member."""

    def __init__(self, main: FileOutputs, members: list[FileOutputs], columns: list[list[str]]):
        self.main, self.members, self.columns = main, members, columns

    def assemble(self, columns: list[str]) -> None:
        self.main.assemble(columns)
        for f, cols in zip(self.members, self.columns):
            f.assemble(cols)


def shared_logic(group: Group, gp) -> None:
    """The group's bucket logic in place of its first query's (``gp.logic``, a pane path's: same stream,
    keys and keying)."""
    from slidewise.spark.panes import PaneBucket, stream_dtypes

    info = gp.infos[0]
    gp.logic = PaneBucket(group, list(info.kinds), stream_dtypes(dict(info.kinds)), info.lateness, key=gp.logic.key, info=info)


def shared_parts(group: Group, gp, root: Path, outs: list, files: FileOutputs, *, collect: bool, run_id: str, **main) -> tuple[SharedSink, SharedFiles]:
    """The group's sink and files (after :func:`shared_logic`); ``outs``: each member's ``out`` (None:
    collected), ``main``: the :class:`_PlanSink` arguments of the run's rejects and stats."""
    forms = [FileOutputs(root / "queries" / m.name, out, None) for m, out in zip(group.members, outs)]
    members = [_PlanSink(cols, gp.names, out=f.out_parts, collect=collect, run_id=run_id) for cols, f in zip(gp.logic.member_columns, forms)]
    sink = SharedSink(_PlanSink(gp.columns, gp.names, out=None, collect=False, run_id=run_id, **main), members)
    return sink, SharedFiles(files, forms, gp.logic.member_columns)


def run_groups_spark(groups: list[Group], queries: dict, sources, outs: dict, collect: bool, opts: RunOptions, results: dict, spark: dict) -> list[dict]:
    """Every sharing group as one streaming query (one after another); each member's :class:`RunResult`
    into ``results`` (``queries``: name -> its :class:`~slidewise.cql.queryfile.NamedQuery`); per group its stats (as the local run's, plus the Spark state it kept).
    ``spark``: :data:`~slidewise.spark.plan_runner.SPARK_OPTIONS` (``checkpoint``: a directory of
    one checkpoint per group)."""
    from slidewise.optimizer.sharing import decisions
    from slidewise.spark.join_runner import drive
    from slidewise.spark.plan_runner import start_plan_spark

    out = []
    for g in groups:
        first = g.members[0].name
        given = dict(spark)
        if given.get("checkpoint") is not None:
            given["checkpoint"] = str(Path(given["checkpoint"]) / f"group-{first}")
        identity = "; ".join(f"{m.name}: {' '.join(queries[m.name].text.split())}" for m in g.members)
        run = start_plan_spark(
            queries[first].query,
            sources,
            run_options=RunOptions.of(opts, out=None, collect=False),
            group=g,
            member_outs=[outs.get(m.name) for m in g.members],
            member_collect=collect,
            identity=identity,
            **given,
        )
        res = drive(run)
        sink = run.sink
        for i, m in enumerate(g.members):
            own = sink.members[i]
            stats = {
                **res.stats,
                "query": " ".join(queries[m.name].text.split()),
                "results": int(own.results),
                "retractions": int(own.retractions),
                "synopsis": g.describe(),
            }
            results[m.name] = RunResult(own.frame() if collect else None, stats, res.rejects)
        logic = run.info["logic"]
        out.append(
            {
                "synopsis": g.describe(),
                "queries": [m.name for m in g.members],
                "pane": g.pane,
                "rules": decisions(g),
                "states": sorted({f"{acc.share_key or type(acc).__name__.lower()}({attr or '*'})" for acc, attr in logic.shared}),
                "engine": "spark",
                "streaming_queries": 1,
                "state": "one pane state per key bucket: partials per (group key, region, pane), read by every query of the group",
                "state_tuples_peak": res.stats["state_tuples_peak"],
                "micro_batches": res.stats["micro_batches"],
                "checkpoint": res.stats["checkpoint"],
            }
        )
    return out
