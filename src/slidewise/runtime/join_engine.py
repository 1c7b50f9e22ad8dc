"""The embedded (local) engine: sources -> reorder/merge -> join operator -> sink.

One run reads every stream reference's source in chunks, merges them into the
global order of docs/semantics.md (rejecting rows that are malformed or later than the
declared lateness), feeds the chosen operator chunk by chunk, projects the
results onto the SELECT list and writes them to the sink, with a progress line
and a stats summary. The engine hosts operators; it never re-implements one.
"""

from __future__ import annotations

import logging
import resource
import time
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from slidewise import heap
from slidewise.errors import OptionError, SourceError
from slidewise.operators.project import output_columns, output_names
from slidewise.operators.wjoin import WJOINS, MWJoin, NLWJoin, WNLJoin
from slidewise.optimizer.planner import choose
from slidewise.optimizer.wjoin import choose_wjoin
from slidewise.options import RunOptions
from slidewise.plan.bind import bind_query
from slidewise.plan.logical import CHANGELOG
from slidewise.plan.physical import PhysicalPlan
from slidewise.plan.query import JoinQuery
from slidewise.plan.wjoin import WJoinQuery
from slidewise.runtime.outputs import GuardedRun, shielded, signal_name
from slidewise.runtime.overload import make_hooks
from slidewise.runtime.progress import Progress
from slidewise.runtime.rejects import Rejects
from slidewise.runtime.reorder import merge_all
from slidewise.runtime.sinks import collected_frame, open_sink
from slidewise.runtime.sources import open_stream


@dataclass
class RunResult:
    """What a run returns to the Python API: results (if collected), stats and rejects."""

    results: pd.DataFrame | None
    stats: dict
    rejects: Rejects = field(repr=False, default=None)


def peak_rss_mb() -> float:
    """Peak resident set size of this process in MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def run_counts(inputs: dict, results: int, retractions: int, rejects: Rejects, seconds: float) -> dict:
    """The stats every engine reports: inputs per stream, results, rejects, seconds, rates, peak memory."""
    total = sum(inputs.values())
    return {
        "inputs": inputs,
        "results": results,
        "retractions": retractions,
        "rejects": rejects.total,
        "rejects_by_reason": rejects.summary(),
        "seconds": round(seconds, 6),
        "tuples_per_second": round(total / seconds, 1) if seconds > 0 else None,
        "results_per_second": round(results / seconds, 1) if seconds > 0 else None,
        "peak_rss_mb": round(peak_rss_mb(), 1),
    }


def interrupted(stop: BaseException | None) -> dict:
    """The stats' account of an interrupt: ``interrupted`` and, if so, the ``signal``."""
    return {"interrupted": True, "signal": signal_name(stop)} if stop is not None else {"interrupted": False}


def execute(
    query: JoinQuery | WJoinQuery,
    sources: dict[str, object],
    *,
    run_options: RunOptions | None = None,
    algorithm: str | None = None,
    order: str | list[str] | None = None,
    operator_options: dict | None = None,
    overload=None,
    adaptive=None,
    **settings,
) -> RunResult:
    """Run ``query`` over ``sources`` (source name -> path / DataFrame / ...) to the end.

    ``run_options`` (:class:`~slidewise.options.RunOptions`), or its fields as keyword
    ``settings`` (``lateness=500, out="r.csv"``), say how to read and write; ``strategy``
    and ``partitions`` mean nothing to a join query. ``overload`` (:class:`~slidewise.runtime.overload.OverloadOptions`) and
    ``adaptive`` (drift factor) enable load shedding and re-planning; both may
    also arrive inside ``operator_options`` (the Python API passes extras there).
    A :class:`~slidewise.plan.wjoin.WJoinQuery` runs on the merge W-join, or on the W-join
    ``algorithm`` names (nlw-join, hw-join); ``order`` and operator options are refused.
    """
    heap.keep_freed()  # each block reuses the last one's buffers
    opts = RunOptions.of(run_options, **settings)
    lateness, chunk_rows, collect = opts.lateness, opts.chunk_rows, opts.collecting()
    operator_options = dict(operator_options or {})
    overload = operator_options.pop("overload", overload)
    adaptive = operator_options.pop("adaptive", adaptive)
    wjoin = query if isinstance(query, WJoinQuery) else None
    if wjoin is not None and (form1 := as_join(wjoin, algorithm, order)) is not None:
        wjoin, query = None, form1
    query = wjoin.join if wjoin is not None else query
    missing = [s.source for s in query.streams if s.source not in sources]
    if missing:
        raise SourceError(
            f"no input given for stream {missing[0]!r}", hint=f"pass --source {missing[0]}=PATH (FROM reads: {', '.join(dict.fromkeys(s.source for s in query.streams))})"
        )
    opened = [open_stream(ref.source, sources[ref.source], opts) for ref in query.streams]
    if any(CHANGELOG in src.kinds for src in opened):
        return _changelog_plan(wjoin or query, sources, opts, algorithm, order, operator_options, overload, adaptive)
    schemas = [list(src.schema) for src in opened]
    query = bind_query(query, [src.kinds for src in opened])
    plan: PhysicalPlan | None
    if wjoin is not None:
        operator, plan = wjoin_operator(replace(wjoin, join=query), algorithm, order, operator_options), None
    else:
        plan = choose(query, algorithm, order, **(operator_options or {}))
        operator = plan.build()
    logging.getLogger(__name__).info("local engine: %s join of %s, lateness %s, chunks of %s rows", operator.name, ", ".join(query.aliases), lateness, f"{chunk_rows:,}")
    names = output_names(query, schemas)
    collected: list[pd.DataFrame] = []
    rejects = Rejects()
    hooks = make_hooks(query, overload=overload, adaptive=adaptive, rejects=rejects, sources=sources)
    inputs = np.zeros(query.n, dtype=np.int64)
    n_results = n_retractions = n_chunks = state_peak = 0
    started = time.perf_counter()
    bar = Progress(enabled=opts.progress)
    guard = GuardedRun(chunk_rows, bar)

    def emit(res) -> None:
        nonlocal n_results, n_retractions
        if not len(res):
            return
        cols = output_columns(query, res)
        with shielded():  # results are written and counted together
            if guard.sink is not None:
                guard.sink.write(cols)
            n_retractions += int((res.sign < 0).sum())
            n_results += int((res.sign > 0).sum())
            if collect:
                collected.append(pd.DataFrame(cols))

    with guard:
        guard.sink = open_sink(opts.out, names) if opts.out is not None else None
        for chunk in merge_all(opened, opts.lateness_of(opened), rejects, chunk_rows):
            n_chunks += 1
            for b in chunk:
                inputs[b.stream] += len(b)
            emit(operator.process(chunk) if hooks is None else hooks.process(operator, chunk))
            state_peak = max(state_peak, operator.state_tuples())
            bar.update(int(inputs.sum()), n_results, rejects.total)
        emit(operator.finish() if hooks is None else hooks.finish(operator))
    stop = guard.stop
    seconds = time.perf_counter() - started
    guard.finish(rejects, opts.rejects)
    stats = {
        "query": query.text or query.describe(),
        **(
            {"algorithm": plan.algorithm.name, "join_order": [query.aliases[i] for i in plan.order], "orders": plan.orders()}
            if plan is not None
            else {"algorithm": operator.name, "join_order": query.aliases, "orders": {}}
        ),
        **run_counts({ref.alias: int(inputs[i]) for i, ref in enumerate(query.streams)}, n_results, n_retractions, rejects, seconds),
        "comparisons": int(operator.comparisons),
        "state_tuples_peak": int(state_peak),
        "chunks": n_chunks,
    }
    stats.update(interrupted(stop))
    if hooks is not None:
        stats.update(hooks.stats())
    frame = None
    if collect:
        frame = collected_frame(collected, names)
    return RunResult(frame, stats, rejects)


def as_join(query: WJoinQuery, algorithm: str | None, order) -> JoinQuery | None:
    """A W-join with every pair within one ``w`` and no W-join operator or order asked for, as the
    join path's query with ``[RANGE w]`` per stream (:meth:`~slidewise.plan.wjoin.WJoinQuery.as_sliding_window`:
    the same results; the columnar join is faster than any W-join operator, ``slidewise bench wjoin``)."""
    if algorithm not in (None, "auto") or order is not None:
        return None
    return query.as_sliding_window()


def wjoin_operator(query: WJoinQuery, algorithm, order, options) -> MWJoin | NLWJoin | WNLJoin:
    """The operator of a W-join: the one ``algorithm`` names, else the cheapest by the W-join cost
    model under ``options["stats"]`` (:func:`~slidewise.optimizer.wjoin.choose_wjoin`); the join
    path's other choices do not apply to it."""
    if algorithm not in (None, "auto", *WJOINS):
        raise OptionError(
            f"algorithm {algorithm!r} does not run W-joins", hint=f"W-joins (a WINDOW clause) run on {', '.join(WJOINS)}; drop --algorithm or name one of them"
        )
    options = dict(options or {})
    stats = options.pop("stats", None)
    given = [k for k, v in options.items() if v not in (None, False)]
    if order is not None or given:
        raise OptionError(
            f"option {'order' if order is not None else given[0]!r} does not apply to a W-join",
            hint="drop it: the W-joins choose their own order from the WINDOW constraints",
        )
    return choose_wjoin(query, algorithm if algorithm in WJOINS else None, stats).cls(query)


def _changelog_plan(query, sources, opts: RunOptions, algorithm, order, operator_options, overload, adaptive) -> RunResult:
    """A join query over a changelog stream (a ``sign`` column) runs as a general plan, whose operators retract."""
    from slidewise.runtime.plan_engine import execute_plan

    given = [name for name, v in (("algorithm", algorithm), ("order", order), ("overload", overload), ("adaptive", adaptive), *operator_options.items()) if v]
    return execute_plan(changelog_plan(query, given), sources, run_options=opts, rewrite=True)


def changelog_plan(query, given: list[str]):
    """The general plan a join query over a changelog runs as, on either engine; an OptionError for a
    W-join, a query without its text, or join options (``given``: the names of those set)."""
    from slidewise.cql.parser import parse_plan

    if isinstance(query, WJoinQuery) or not query.text or given:
        why = "a W-join" if isinstance(query, WJoinQuery) else "a query given without its text" if not query.text else f"--{given[0]}"
        raise OptionError(
            f"a stream with a {CHANGELOG} column is a changelog (-1 rows retract), which runs as a general plan, and {why} cannot",
            hint=f"drop {why}, or rename the {CHANGELOG} column if it is an ordinary attribute",
        )
    return parse_plan(query.text)
