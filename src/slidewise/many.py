"""Many named queries in one run: those that can share state do (:mod:`slidewise.optimizer.sharing`).

:func:`run_many` binds every query to its sources' columns; the periodic
one-stream GROUP BY queries of the pane path (:func:`slidewise.optimizer.pane_plan.match`)
are partitioned into sharing groups (:func:`slidewise.optimizer.sharing.share`),
and each group runs as one :class:`~slidewise.runtime.shared.SharedRun` over
one pass of the merged input (late rows rejected once); every other query
runs alone (:func:`slidewise.api.run`). Each query's rows equal its run alone.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from slidewise import heap
from slidewise.cql.parser import parse_any
from slidewise.cql.queryfile import NAME, NamedQuery, load_queries, located
from slidewise.errors import OptionError, SlidewiseError
from slidewise.optimizer.pane_plan import match
from slidewise.optimizer.sharing import THESIS_RULES, decisions, share
from slidewise.options import RunOptions
from slidewise.plan.bind import bind
from slidewise.plan.logical import Plan
from slidewise.plan.prune import prune_columns
from slidewise.runtime.join_engine import RunResult, run_counts
from slidewise.runtime.outputs import GuardedRun
from slidewise.runtime.rejects import Rejects
from slidewise.runtime.reorder import merge_all
from slidewise.runtime.shared import SharedRun
from slidewise.runtime.sinks import open_sink
from slidewise.runtime.sources import open_stream

__all__ = ["ManyResult", "run_many"]


@dataclass
class ManyResult:
    """Per query (by name) its :class:`RunResult`; ``stats["shared"]``: which synopsis serves which queries."""

    results: dict[str, RunResult]
    stats: dict = field(default_factory=dict)


def _named(queries) -> list[NamedQuery]:
    if isinstance(queries, (str, os.PathLike)):
        return load_queries(queries)
    items = list(queries.items()) if isinstance(queries, dict) else list(queries)
    out, seen = [], set()
    for i, (name, text) in enumerate(items, 1):  # positions within each query's own text
        if not isinstance(name, str) or not NAME.fullmatch(name) or name in seen:
            raise OptionError(
                f"query {i}: {name!r} is {'used twice' if name in seen else 'not a valid name'}",
                hint="name each query once with letters, digits and _ (it names its output file)",
            )
        seen.add(name)
        try:
            out.append(NamedQuery(i, name, text, parse_any(text), 1, 1))
        except SlidewiseError as e:
            raise located(e, i, name) from None
    return out


class _Sinks:
    """One result file per query (``--out-dir``): all complete, or none on an error."""

    def __init__(self, sinks: list):
        self.sinks = sinks

    def abort(self) -> None:
        for s in self.sinks:
            s.abort()

    def close(self) -> None:
        for s in self.sinks:
            s.close()


def run_many(
    queries,
    sources: dict[str, object],
    *,
    out_dir: str | os.PathLike | None = None,
    out_format: str = "csv",
    shared: bool = True,
    run_options: RunOptions | None = None,
    engine: str = "local",
    **options,
) -> ManyResult:
    """Run named queries over ``sources`` on the local engine (or ``engine="spark"``).

    ``queries``: a query file (``name: query;`` statements, :mod:`slidewise.cql.queryfile`), or a dict /
    list of (name, query text). ``out_dir``: one file ``NAME.{out_format}`` per query (csv, jsonl,
    parquet); rows are collected into each result unless ``out_dir`` is given (or ``collect`` says so).
    How the run reads comes in ``run_options`` (:class:`slidewise.options.RunOptions`) or as keywords
    of the same names, as for :func:`slidewise.run` (``lateness``, ``ts_column``, ``ts_unit``,
    ``chunk_rows``, ``collect``, ``rejects``, ...; not ``out``: results go to ``out_dir``).
    ``shared=False`` runs every query alone (for comparison). ``stats["shared"]`` lists each sharing group:
    its synopsis, its queries, the pane partial states it keeps and the memory its sharing saved.

    ``engine="spark"``: each sharing group runs as ONE Spark streaming query with one pane state
    (:mod:`slidewise.spark.many`), every other query as its own; the Spark options of :func:`slidewise.run`
    (``checkpoint``: a directory of one checkpoint per streaming query, ``spark``, ``master``, ``conf``,
    ``max_files_per_trigger``, ...) as keywords; ``rejects``: one per streaming query, named after its
    first query (``r.csv`` -> ``r-NAME.csv``) when there are several.
    """
    spark = None
    if engine == "spark":
        from slidewise.spark.plan_runner import SPARK_OPTIONS

        spark = {k: options.pop(k) for k in SPARK_OPTIONS if k in options}
    elif engine != "local":
        raise OptionError(f"unknown engine {engine!r}", hint="use engine='local' or engine='spark'")
    opts = RunOptions.of(run_options, **options)
    if opts.out is not None:
        raise OptionError("run_many writes one result per query, not one out", hint="give out_dir (--out-dir) instead of out")
    opts.check_streams(sources)
    named = _named(queries)
    collect = out_dir is None if opts.collect is None else opts.collect
    if out_format not in ("csv", "jsonl", "parquet"):
        raise OptionError(f"unknown output format {out_format!r}", hint="use csv, jsonl or parquet")
    outs = {}
    if out_dir is not None:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        outs = {q.name: str(Path(out_dir) / f"{q.name}.{out_format}") for q in named}
    started = time.perf_counter()
    streams = sorted({s.source for q in named if isinstance(q.query, Plan) for s in q.query.scans()} & set(sources))
    opened = {n: _open(n, sources, opts) for n in streams}
    schemas = {n: dict(src.kinds) for n, src in opened.items()}
    specs, plans, alone = {}, {}, []
    for q in named:
        plan = q.query
        spec = None
        if shared and isinstance(plan, Plan) and not any(s.is_relation for s in plan.scans()) and all(s.source in schemas for s in plan.scans()):
            try:
                plan = prune_columns(bind(plan, schemas))
            except SlidewiseError as e:
                raise located(e, q.index, q.name, q.where) from None
            spec = match(plan)  # None for a changelog: retractions need the operator network
            if spec is not None and spec.refuse(dict(opened[spec.source].schema)) is not None:
                spec = None
            if spec is not None and spark is not None and _spark_refuses(spec, opened[spec.source].kinds):
                spec = None
        if spec is None:
            alone.append(q)
        else:
            specs[q.name], plans[q.name] = spec, plan
    results: dict[str, RunResult] = {}
    groups = share(specs)
    if spark is not None:
        group_stats = _run_spark(named, groups, alone, sources, outs, collect, opts, results, spark)
    else:
        group_stats = _run_groups(groups, plans, sources, outs, collect, opts, results) if groups else []
    from slidewise.api import run

    for q in alone if spark is None else ():  # rejects: written once, by the shared pass
        try:
            results[q.name] = run(q.query, sources, run_options=replace(opts, out=outs.get(q.name), collect=collect, rejects=None))
        except SlidewiseError as e:
            raise located(e, q.index, q.name, q.where) from None
    used = {r for g in group_stats for r in g["rules"]}
    rules = {
        r.name: {"section": r.section, "allows": r.allows, "applied": r.name in used, **({"not_applied": r.not_applied} if r.not_applied else {})}
        for r in THESIS_RULES.values()
    }
    stats = {
        "queries": len(named),
        "shared_queries": len(specs),
        "alone": [q.name for q in alone],
        "shared": group_stats,
        "rules": rules,
        "seconds": round(time.perf_counter() - started, 6),
    }
    return ManyResult({q.name: results[q.name] for q in named}, stats)


def _spark_refuses(spec, kinds: dict) -> bool:
    """Whether the pane path on Spark does not run ``spec`` over a stream of attribute ``kinds``."""
    from slidewise.spark.panes import refused, stream_dtypes

    return refused(spec, stream_dtypes(dict(kinds)))


def _run_spark(named, groups, alone, sources, outs, collect, opts: RunOptions, results, spark: dict) -> list[dict]:
    """On Spark: every sharing group as one streaming query, then every other query alone (its own
    checkpoint ``CHECKPOINT/NAME``); rejects per streaming query."""
    from slidewise.api import run
    from slidewise.spark.many import run_groups_spark

    queries = {q.name: q for q in named}
    firsts = [g.members[0].name for g in groups] + [q.name for q in alone]

    def rejects(name: str):
        if opts.rejects is None or len(firsts) == 1:
            return opts.rejects
        path = Path(opts.rejects)
        return str(path.with_name(f"{path.stem}-{name}{path.suffix}"))

    stats = []
    for g in groups:
        try:
            stats += run_groups_spark([g], queries, sources, outs, collect, replace(opts, rejects=rejects(g.members[0].name)), results, spark)
        except SlidewiseError as e:
            q = next(q for q in named if q.name == g.members[0].name)
            raise located(e, q.index, q.name, q.where) from None
    for q in alone:
        own = dict(spark)
        if own.get("checkpoint") is not None:
            own["checkpoint"] = str(Path(own["checkpoint"]) / q.name)
        try:
            results[q.name] = run(q.query, sources, engine="spark", run_options=replace(opts, out=outs.get(q.name), collect=collect, rejects=rejects(q.name)), **own)
        except SlidewiseError as e:
            raise located(e, q.index, q.name, q.where) from None
    return stats


def _open(name: str, sources: dict, opts: RunOptions):
    """Stream ``name`` opened as the engines open it (:func:`slidewise.runtime.sources.open_source`)."""
    return open_stream(name, sources[name], opts)


def _run_groups(groups, plans, sources, outs, collect, opts: RunOptions, results) -> list[dict]:
    """Every sharing group over one pass of the merged streams."""
    heap.keep_freed()  # each block reuses the last one's buffers
    names = sorted({g.source for g in groups})
    opened = [_open(n, sources, opts) for n in names]
    chunk_rows = opts.chunk_rows
    frames: dict[str, list] = {m.name: [] for g in groups for m in g.members}
    columns = {name: list(plans[name].root.schema) + ["ts", "sign"] for name in frames}
    sinks: dict = {}

    def emitter(name):
        def emit(cols):
            if name in sinks:
                sinks[name].write(cols)
            if collect:
                frames[name].append(cols)

        return emit

    rejects = Rejects()
    inputs = dict.fromkeys(names, 0)
    started = time.perf_counter()
    with GuardedRun(chunk_rows) as guard:
        guard.sink = _Sinks([])
        for name in frames:
            if name in outs:
                sinks[name] = open_sink(outs[name], columns[name])
                guard.sink.sinks.append(sinks[name])
        runs = []
        for g in groups:
            schema = dict(opened[names.index(g.source)].schema)
            runs.append(SharedRun(g, {"ts": np.dtype(np.int64), **schema}, {m.name: emitter(m.name) for m in g.members}))
        for chunk in merge_all(opened, opts.lateness_of(opened), rejects, chunk_rows):
            for i, b in enumerate(chunk):
                if len(b):
                    inputs[names[i]] += len(b)
                    for g, r in zip(groups, runs):
                        if g.source == names[i]:
                            r.add(b.ts, b.cols)
        for r in runs:
            r.finish()
    guard.finish(rejects, opts.rejects)
    seconds = time.perf_counter() - started
    out = []
    for g, r in zip(groups, runs):
        for m, pr in zip(g.members, r.runs):
            frame = None
            if collect:  # fresh columns: copy=False keeps them as they are (no block consolidation)
                fs = frames[m.name]
                frame = (
                    pd.DataFrame({c: np.concatenate([f[c] for f in fs]) for c in columns[m.name]}, copy=False)
                    if fs
                    else pd.DataFrame({c: pd.Series(dtype="object") for c in columns[m.name]})
                )
            stats = {
                "query": plans[m.name].text or plans[m.name].root.label(),
                "path": m.spec.describe(),
                **run_counts({g.source: inputs[g.source]}, pr.results, 0, rejects, seconds),
                "synopsis": g.describe(),
                "cover": _cover(m, r.covers[g.members.index(m)]),
            }
            results[m.name] = RunResult(frame, stats, rejects)
        states = sorted({f"{k}({a or '*'})" for k, a in r.states if isinstance(k, str)})
        out.append(
            {
                "synopsis": g.describe(),
                "queries": [m.name for m in g.members],
                "pane": g.pane,
                "rules": decisions(g),
                "states": states,
                "blocks": r.blocks,
                "buffer_tuples_peak": r.buffered_peak,
                "partial_bytes_peak": r.partial_bytes_peak,
                "unshared_partial_bytes_peak": r.unshared_bytes_peak,
                "memory_saved_bytes": r.unshared_bytes_peak - r.partial_bytes_peak,
                "buffers_saved": len(g.members) - 1,
            }
        )
    return out


def _cover(m, counts: dict) -> str | None:
    """How a member of a cover reads its partials: ``disjoint`` (merging its regions), ``supercover``
    (the whole minus the other regions) or both; None: its predicate is the synopsis's."""
    if m.residual is None:
        return None
    kinds = [k for k, n in counts.items() if n]
    return "+".join(kinds) if kinds else "disjoint"


def print_many(result: ManyResult) -> None:
    """A readable summary on stderr: results per query, and each shared synopsis with its queries."""
    import sys

    st = result.stats
    print(f"{st['queries']} queries in {st['seconds']:.3f} s; {st['shared_queries']} from {len(st['shared'])} shared synopses, {len(st['alone'])} alone", file=sys.stderr)
    for g in st["shared"]:
        print(
            f"  synopsis {g['synopsis']} [{', '.join(g['states'])}] by {', '.join(g['rules']) or 'none'}: "
            f"{', '.join(g['queries'])}; "
            f"saved {g['memory_saved_bytes']:,} bytes of pane partials and {g['buffers_saved']} buffers",
            file=sys.stderr,
        )
    for name, r in result.results.items():
        print(f"  {name}: {r.stats['results']:,} results", file=sys.stderr)
