"""The executor of general plans: sources -> merge -> incremental operators -> output -> sink.

Golab's thesis ch. 3: a general query (DISTINCT, GROUP BY, UNION, NOT EXISTS,
tables, subqueries, DSTREAM/RSTREAM/WSTREAM, ...) is a tree of incremental
operators over signed tuples (:mod:`slidewise.operators.incremental`) run
under one strategy: ``nt`` (negative tuples), ``direct`` (expiration by
``exp``) or ``upa`` (update-pattern aware, §3.5.2).

:func:`execute_plan` opens the inputs with the join engine's readers
(:mod:`slidewise.runtime.sources`), merges them into the global order of
docs/semantics.md with :func:`~slidewise.runtime.reorder.merge_all` (late rows go to
the rejects), binds the plan (:func:`slidewise.plan.bind.bind`), labels it
with update patterns (:func:`slidewise.plan.patterns.annotate`) and builds
one operator per node, bottom-up: base windows and table feeders
(:mod:`slidewise.operators.window_scan`), the output operator
(:mod:`slidewise.operators.output`), the rest from
:func:`slidewise.operators.plan_ops.build`. :class:`~slidewise.runtime.plan_driver.PlanRunner`
then drives them instant by instant: the next instant is the earliest of the
next arrival timestamp and every operator's :meth:`next_event`; at each, the
operators with work (fed rows, or an event due; children first) get
:meth:`expire` when due, then one :meth:`push` per child with all of that
child's rows of the instant — relation children first, so table updates at
a timestamp apply before stream tuples of that timestamp. Time ends at the
last input timestamp, or for periodic plans at the next multiple of the
slide. By default it takes up to ``span`` instants per pass
(:meth:`~slidewise.operators.incremental.Incremental.advance`, same answers,
state sizes sampled per span).

INTERNAL windows (§3.3.2): a subtree whose stream leaves are all INTERNAL runs
as if they were external; above it an :class:`~slidewise.operators.output.Accumulate`
(or the output operator itself) keeps only its insertions; joined with
external windows or a retroactive table it runs inside a
:class:`~slidewise.operators.output.MixedJoin`.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace

import numpy as np
import pandas as pd

from slidewise import heap
from slidewise.errors import OptionError, SourceError
from slidewise.operators.incremental import Context, Incremental
from slidewise.operators.output import Accumulate, MixedJoin, OutputOperator
from slidewise.operators.window_scan import SubqueryWindow, TableFeeder, WindowScan
from slidewise.options import RunOptions
from slidewise.plan.bind import bind
from slidewise.plan.frequent import FrequentQuery
from slidewise.plan.logical import Join, Node, Pattern, Plan, Scan, Subquery, walk
from slidewise.plan.prune import prune_columns
from slidewise.runtime.join_engine import RunResult, interrupted, run_counts
from slidewise.runtime.outputs import GuardedRun, abandon
from slidewise.runtime.plan_driver import DEFAULT_SPAN, PlanRunner
from slidewise.runtime.progress import Progress
from slidewise.runtime.rejects import Rejects
from slidewise.runtime.reorder import merge_all
from slidewise.runtime.sinks import BackgroundSink, collected_frame, open_sink
from slidewise.runtime.sources import open_source, open_stream

__all__ = ["PlanNetwork", "execute_plan", "open_table", "plan_inputs"]


def execute_plan(
    plan: Plan,
    sources: dict[str, object],
    tables: dict[str, object] | None = None,
    *,
    run_options: RunOptions | None = None,
    options: dict | None = None,
    rewrite: bool = False,
    span: int = DEFAULT_SPAN,
    panes: bool = True,
    **settings,
) -> RunResult:
    """Run ``plan`` over ``sources`` (stream name -> path / DataFrame / ...) and ``tables`` to the end.

    ``run_options`` (:class:`~slidewise.options.RunOptions`), or its fields as keyword
    ``settings`` (``strategy="nt", lateness=500``), say how to run, read and write;
    ``options``: operator options (e.g. ``{"distinct": "naive"}``).

    Tables: rows with ``ts`` (when the update happens; 0 if absent), optional
    ``op`` (``+`` insert, ``-`` delete by key = first attribute) and attributes.
    Results: the plan's columns, then ``ts`` (instant of the change) and ``sign``.
    ``rewrite=True`` runs the cheapest update-pattern rewriting of the plan
    (:func:`slidewise.optimizer.rewrite.choose_plan`, what ``explain`` shows) instead
    of the plan as written. ``span``: instants per executor pass (answers do
    not depend on it; 1 gives exact per-instant state accounting, see
    :mod:`slidewise.runtime.plan_driver`). A periodic one-stream GROUP BY
    (:func:`slidewise.optimizer.pane_plan.match`) runs on the pane path
    (:mod:`slidewise.runtime.pane_engine`, same rows), and one over a two-window equi-join on the join
    synopsis (:mod:`slidewise.runtime.join_panes`), unless ``panes=False``.
    """
    heap.keep_freed()  # each block reuses the last one's buffers
    opts = RunOptions.of(run_options, **settings)
    strategy, partitions, chunk_rows = opts.strategy, opts.partitions, opts.chunk_rows
    out, collect = opts.out, opts.collecting()
    tables = dict(tables or {})
    stream_names, table_names = plan_inputs(plan, sources, tables)
    if isinstance(plan, FrequentQuery):
        return _execute_frequent(plan, sources, opts)
    opened = [open_table(n, tables[n], opts.ts_column, opts.ts_unit, chunk_rows) for n in table_names]
    opened += [open_stream(n, sources[n], opts) for n in stream_names]
    names = table_names + stream_names
    schemas = {n: dict(src.kinds) for n, src in zip(names, opened)}
    plan = bind(plan, schemas)
    rewrite_report = None
    if rewrite:
        from slidewise.optimizer.rewrite import choose_plan

        chosen, rewrite_report = choose_plan(plan, strategy=strategy, partitions=partitions)
        if chosen.root.schema == plan.root.schema:
            plan = chosen
    plan = prune_columns(plan)
    logging.getLogger(__name__).info("local engine: general query, strategy %s, %s streams, %s tables", strategy, len(names), len(table_names))
    columns = list(plan.root.schema) + ["ts", "sign"]
    sliding = _sliding(plan, dict(zip(names, opened)), table_names) if panes else None
    if plan.root.count_slide and sliding is None:  # [ROWS n SLIDE m]: the operator network evaluates at every arrival
        from slidewise.optimizer.pane_plan import count_window_error, unfit

        source = plan.scans()[0].source
        why = unfit(plan, dict(opened[names.index(source)].schema)) if panes else None
        raise count_window_error(plan, why or "panes=False asks for the operator network")
    net = None if sliding is not None else PlanNetwork(plan, strategy, partitions, options or {})
    rejects = Rejects()
    if sliding is not None:
        return _execute_panes(plan, sliding, opened, names, columns, rejects, opts)
    if not isinstance(span, (int, np.integer)) or span < 1:
        raise OptionError(f"span must be a positive integer, got {span!r}", hint="instants per executor pass, e.g. 64; 1 runs instant by instant")
    bar = Progress(enabled=opts.progress)
    inputs = dict.fromkeys(names, 0)
    started = time.perf_counter()
    runner = None
    with GuardedRun(chunk_rows, bar) as guard:
        guard.sink = open_sink(out, columns) if out is not None else None
        runner = PlanRunner(net, guard.sink, collect, columns, span=int(span))
        for chunk in merge_all(opened, opts.lateness_of(opened), rejects, chunk_rows):
            for i, b in enumerate(chunk):
                if len(b):
                    inputs[names[i]] += len(b)
                    runner.add(names[i], b, is_table=names[i] in table_names)
            runner.flush_output()
            bar.update(sum(inputs.values()), runner.results, rejects.total)
        runner.finish(plan.root.slide)
    stop = guard.stop
    if runner is None:  # interrupted before the first instant
        raise abandon(guard.sink, stop, chunk_rows)
    seconds = time.perf_counter() - started
    guard.finish(rejects, opts.rejects, pending=runner.write_pending)
    stats = {
        "query": plan.text or plan.root.label(),
        "strategy": strategy,
        "partitions": int(partitions),
        **run_counts(inputs, runner.results, runner.retractions, rejects, seconds),
        **runner.state_stats(),
        "negative_tuples": runner.negatives,
        "instants": runner.instants,
        "passes": runner.passes,
        "patterns": net.pattern_labels(),
        **interrupted(stop),
    }
    if rewrite_report is not None:
        stats["plan"] = rewrite_report["chosen"]
    frame = None
    if collect:
        frame = collected_frame(runner.frames, columns)
    return RunResult(frame, stats, rejects)


# ---------------------------------------------------------------- the pane path


def _sliding(plan: Plan, sources: dict, table_names: list[str]):
    """The plan's columnar form (:func:`slidewise.optimizer.join_aggregate.periodic`: the pane path or the
    join synopsis) if its column types allow, else None."""
    from slidewise.optimizer.join_aggregate import JoinAggregate, periodic

    spec = periodic(plan)
    if spec is None or table_names:
        return None
    if isinstance(spec, JoinAggregate):
        ts = {"ts": np.dtype(np.int64)}
        return spec if spec.refuse(({**ts, **dict(sources[spec.sources[0]].schema)}, {**ts, **dict(sources[spec.sources[1]].schema)})) is None else None
    return spec if spec.refuse(dict(sources[spec.source].schema)) is None else None


def _execute_panes(plan, spec, opened, names, columns, rejects, opts: RunOptions) -> RunResult:
    """Run ``spec`` on :class:`slidewise.runtime.pane_engine.PaneRun` (one stream) or
    :class:`slidewise.runtime.join_panes.JoinPaneRun` (a join); the stats of :func:`execute_plan`.

    Output safety as :func:`execute_plan`: a failed run discards its file, an interrupted one keeps
    the windows emitted so far (whole evaluations, in order) and writes its rejects."""
    from slidewise.optimizer.join_aggregate import JoinAggregate
    from slidewise.plan.patterns import annotate
    from slidewise.runtime.join_panes import JoinPaneRun
    from slidewise.runtime.pane_engine import PaneRun

    frames: list = []
    writer = None
    collect, chunk_rows = opts.collecting(), opts.chunk_rows

    def emit(cols):
        if writer is not None:
            writer.write(cols)
        if collect:
            frames.append(pd.DataFrame(cols))

    if isinstance(spec, JoinAggregate):
        sides = [names.index(src) for src in spec.sources]
        left, right = ({"ts": np.dtype(np.int64), **dict(opened[i].schema)} for i in sides)
        join_run = JoinPaneRun(spec, (left, right), emit)
        run: PaneRun | JoinPaneRun = join_run

        def feed(chunk) -> None:
            join_run.add([(chunk[i].ts, chunk[i].cols) if len(chunk[i]) else None for i in sides])
    else:
        side = names.index(spec.source)
        pane_run = run = PaneRun(spec, {"ts": np.dtype(np.int64), **dict(opened[side].schema)}, emit)

        def feed(chunk) -> None:
            if len(chunk[side]):
                pane_run.add(chunk[side].ts, chunk[side].cols)

    bar = Progress(enabled=opts.progress)
    inputs = dict.fromkeys(names, 0)
    instants, last = 0, None
    started = time.perf_counter()
    with GuardedRun(chunk_rows, bar) as guard:
        writer = guard.sink = BackgroundSink(open_sink(opts.out, columns)) if opts.out is not None else None
        for chunk in merge_all(opened, opts.lateness_of(opened), rejects, chunk_rows):
            for name, b in zip(names, chunk):
                inputs[name] += len(b)
            ts = np.concatenate([b.ts for b in chunk])
            if len(ts):
                if len(ts) > 1 and not (ts[1:] >= ts[:-1]).all():  # several streams' batches
                    ts = np.sort(ts)
                instants += 1 + int(np.count_nonzero(ts[1:] != ts[:-1])) - (int(ts[0]) == last)
                last = int(ts[-1])
            feed(chunk)
            bar.update(sum(inputs.values()), run.results, rejects.total)
        run.finish()
    stop = guard.stop
    guard.finish(rejects, opts.rejects)
    seconds = time.perf_counter() - started
    patterns = annotate(plan.root)
    stats = {
        "query": plan.text or plan.root.label(),
        "strategy": opts.strategy,
        "partitions": int(opts.partitions),
        "path": spec.describe(),
        **run_counts(inputs, run.results, 0, rejects, seconds),
        "state_tuples_peak": run.buffered_peak,
        "negative_tuples": 0,
        "instants": instants,
        "passes": run.blocks,
        "patterns": {n.label(): str(patterns[n]) for n in walk(plan.root)},
        **interrupted(stop),
    }
    frame = None
    if collect:
        frame = collected_frame(frames, columns)
    return RunResult(frame, stats, rejects)


def _execute_frequent(q: FrequentQuery, sources: dict, opts: RunOptions) -> RunResult:
    """A frequent-items query (:mod:`slidewise.runtime.frequent`) over its one stream."""
    from slidewise.runtime.frequent import bind_frequent, execute_frequent

    name = q.scan.source
    opened = [open_stream(name, sources[name], opts)]
    q = bind_frequent(q, dict(opened[0].kinds))  # WHERE typed against the source's columns; refuses a changelog
    rejects = Rejects()
    frame, stats = execute_frequent(
        q,
        opened,
        [name],
        out=opts.out,
        collect=opts.collecting(),
        lateness=opts.for_stream(name).lateness,
        chunk_rows=opts.chunk_rows,
        rejects=rejects,
        rejects_to=opts.rejects,
        progress=opts.progress,
    )
    return RunResult(frame, stats, rejects)


# ---------------------------------------------------------------- inputs


def plan_inputs(plan: Plan, sources: dict, tables: dict) -> tuple[list[str], list[str]]:
    """The plan's stream and relation names (FROM order); a clear error for one without an input."""
    scans = plan.scans()
    stream_names = list(dict.fromkeys(s.source for s in scans if not s.is_relation))
    table_names = list(dict.fromkeys(s.source for s in scans if s.is_relation))
    for name in stream_names:
        if name not in sources:
            raise SourceError(f"no input given for stream {name!r}", hint=f"pass --source {name}=PATH (FROM reads: {', '.join(stream_names)})")
    for name in table_names:
        if name not in tables:
            raise SourceError(f"no input given for table {name!r}", hint=f"pass --table {name}=PATH")
    return stream_names, table_names


def open_table(name: str, data, ts_column: str, ts_unit: str, chunk_rows: int):
    """A relation's update source; a missing timestamp column means every row at ts 0; ``op`` must be text."""
    if isinstance(data, (pd.DataFrame, dict)) and ts_column not in data:
        data = pd.DataFrame(data).assign(**{ts_column: 0})
    try:
        src = open_source(name, data, ts_column=ts_column, ts_unit=ts_unit, chunk_rows=chunk_rows)
    except SourceError as e:
        if "no timestamp column" not in e.message or not isinstance(data, str):
            raise
        frame = _read_frame(data).assign(**{ts_column: 0})
        src = open_source(name, frame, ts_column=ts_column, ts_unit=ts_unit, chunk_rows=chunk_rows)
    if "op" in src.schema and src.schema["op"] != np.dtype(object):
        raise SourceError(f"table {name}: column op must hold '+' or '-'", hint="'+' inserts, '-' deletes")
    return src


def _read_frame(path: str) -> pd.DataFrame:
    low = path.lower()
    if low.endswith(".parquet"):
        return pd.read_parquet(path)
    if low.endswith((".jsonl", ".ndjson", ".json", ".jsonl.gz")):
        return pd.read_json(path, lines=True)
    return pd.read_csv(path)


def _operator_for(node: Node, ctx: Context) -> Incremental:
    """The incremental operator of an inner node (select, join, distinct, ...)."""
    from slidewise.operators import plan_ops

    return plan_ops.build(node, ctx)


# ---------------------------------------------------------------- network


class _PassThrough(Incremental):
    """A subquery without a window: renames columns, rows pass unchanged."""

    name = "subquery"

    def push(self, side, rows, now):
        return rows


def _leaves(node: Node):
    if isinstance(node, Scan) or (isinstance(node, Subquery) and node.window is not None):
        yield node
        return
    for c in node.children:
        yield from _leaves(c)


def _is_relation_only(node: Node) -> bool:
    return all(isinstance(x, Scan) and x.is_relation for x in _leaves(node))


def _is_nrr_only(node: Node) -> bool:
    leaves = list(_leaves(node))
    return any(isinstance(x, Scan) and x.kind == "nrr" for x in leaves) and all(isinstance(x, Scan) and x.is_relation for x in leaves)


def all_internal(node: Node) -> bool:
    """Stream leaves all INTERNAL and no retroactive table: the answer is append-only (§3.3.2)."""
    leaves = list(_leaves(node))
    windows = [x.window for x in leaves if not (isinstance(x, Scan) and x.is_relation)]
    return bool(windows) and all(w.internal for w in windows) and not any(isinstance(x, Scan) and x.kind == "table" for x in leaves)


def _externalized(node: Node) -> Node:
    """A copy with every INTERNAL window made external (patterns of the state they keep)."""
    from slidewise.plan.bind import with_children

    if isinstance(node, Scan):
        return replace(node, window=replace(node.window, internal=False)) if node.window else node
    new = with_children(node, [_externalized(c) for c in node.children])
    if isinstance(new, Subquery) and new.window is not None:
        new = replace(new, window=replace(new.window, internal=False))
    return new


class PlanNetwork:
    """The operators of a bound plan in bottom-up order, with how rows flow between them."""

    def __init__(self, plan: Plan, strategy: str, partitions: int, options: dict):
        from slidewise.plan.patterns import annotate

        self.plan, self.strategy, self.partitions, self.options = plan, strategy, partitions, options
        self.patterns = annotate(plan.root)
        ext_root = _externalized(plan.root)
        ext = annotate(ext_root)
        self.ext_patterns = {a: ext[b] for a, b in zip(walk(plan.root), walk(ext_root))}
        self.ops: list[Incremental] = []
        self.children: list[list[tuple]] = []  # (side, operator) in push order: relations first
        self.feeds: dict[str, list[int]] = {}  # source -> leaf operators fed by it
        self.columns: dict[str, tuple] = {}  # source -> the attributes its scans read, in row order
        self.changelogs: set[str] = set()  # sources whose rows carry a sign (Scan.changelog)
        root = plan.root
        internal = all_internal(root.child)
        child = self._build(root.child, internal)
        ctx = self._ctx(root, (self._pattern(root.child, internal),), internal)
        self._add(OutputOperator(root, ctx, internal=internal), [(0, child)])

    def _pattern(self, node: Node, internal: bool) -> Pattern:
        return self.ext_patterns[node] if internal else self.patterns[node]

    def _ctx(self, node: Node, inputs: tuple, internal: bool) -> Context:
        return Context(
            self.strategy, inputs=inputs, output=self._pattern(node, internal), partitions=self.partitions, aliases=self.plan.aliases, options=dict(self.options)
        )

    def _add(self, op: Incremental, children: list[tuple]) -> int:
        self.ops.append(op)
        self.children.append(children)
        return len(self.ops) - 1

    def _build(self, node: Node, internal: bool) -> int:
        """Operators for ``node`` (``internal``: inside an all-INTERNAL subtree); returns its index."""
        if isinstance(node, Scan):
            ctx = self._ctx(node, (), internal)
            op = TableFeeder(node, ctx) if node.is_relation else WindowScan(node, ctx)
            idx = self._add(op, [])
            self.feeds.setdefault(node.source, []).append(idx)
            self.columns[node.source] = node.columns
            if node.changelog:
                self.changelogs.add(node.source)
            return idx
        if isinstance(node, Subquery) and node.window is not None:
            inner = all_internal(node.child)
            child = self._build(node.child, inner)
            ctx = self._ctx(node, (self._pattern(node.child, inner),), internal)
            return self._add(SubqueryWindow(node, ctx), [(0, child)])
        if not internal and isinstance(node, Join) and any(all_internal(c) for c in node.children):
            mixed = self._mixed_join(node)
            if mixed is not None:
                return mixed
        kids, pats = [], []
        for c in node.children:
            if not internal and all_internal(c):
                inner = self._build(c, True)
                acc_ctx = Context(self.strategy, inputs=(self.ext_patterns[c],), output=Pattern.MONO, partitions=self.partitions, aliases=self.plan.aliases)
                kids.append(self._add(Accumulate(c, acc_ctx), [(0, inner)]))
                pats.append(Pattern.MONO)
            else:
                kids.append(self._build(c, internal))
                pats.append(self._pattern(c, internal))
        ctx = self._ctx(node, tuple(pats), internal)
        op = _PassThrough(node, ctx) if isinstance(node, Subquery) else _operator_for(node, ctx)
        order = sorted(range(len(kids)), key=lambda s: not _is_relation_only(node.children[s]))
        return self._add(op, [(s, kids[s]) for s in order])

    def _mixed_join(self, node: Join) -> int | None:
        """INTERNAL inputs joined with external windows or retroactive tables (§3.3.2), or None."""
        inner = [all_internal(c) for c in node.children]
        kept = [j for j, c in enumerate(node.children) if not inner[j] and not _is_nrr_only(c)]
        if not kept:
            return None
        kids = [self._build(c, inner[j] or False) for j, c in enumerate(node.children)]
        pats = tuple(self.ext_patterns[c] if inner[j] else self.patterns[c] for j, c in enumerate(node.children))
        ctx = self._ctx(node, pats, False)
        join = _operator_for(node, self._ctx(node, pats, True))
        bounds, start = {}, 0
        for j, c in enumerate(node.children):
            bounds[j] = (start, start + len(c.schema))
            start += len(c.schema)
        op = MixedJoin(node, ctx, join, {j: bounds[j] for j in kept}, {j: pats[j] for j in kept}, self.ext_patterns[node])
        order = sorted(range(len(kids)), key=lambda s: not _is_relation_only(node.children[s]))
        return self._add(op, [(s, kids[s]) for s in order])

    def pattern_labels(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for node in walk(self.plan.root):
            label, k = node.label(), 2
            while label in out:
                label, k = f"{node.label()} #{k}", k + 1
            out[label] = str(self.patterns[node])
        return out
