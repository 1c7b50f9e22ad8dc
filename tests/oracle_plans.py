"""Reference semantics of general plans (Golab's thesis Definition 3.1) — simple on purpose.

The answer ``Q(τ)`` of a plan node is evaluated *relationally* over the window
contents and table states at the instant τ (after every input with
``ts <= τ``): a bag (``Counter``) of value tuples in the node's schema. The
output operator (:class:`~slidewise.plan.logical.Output`) then turns the
answers at the evaluation instants into a stream of ``(ts, vals, sign)`` rows
exactly as the docstring of :mod:`slidewise.plan.logical` describes. Nothing
is incremental here: every answer is recomputed from scratch (memoised),
joins are cartesian products. Expressions are evaluated by tests/oracle_expr.py,
not by the engine's evaluator. Exponential; only for small test inputs.

Decisions the contract leaves open (pinned by tests/test_oracle_plans.py):

* Answers exist only at integer instants, so a change that is made and undone
  within one timestamp (e.g. a count window evicting a tuple that arrived at
  the same ts) never reaches the output; ISTREAM/DSTREAM are multiset
  differences of consecutive answers, so an identical row leaving and
  entering at one instant cancels.
* Time spans from the first to the last input timestamp, table updates
  included; before the first input every answer is empty.
* NRR join: a combination of stream rows joins the NRR state as of its latest
  stream member timestamp (the greatest ``<alias>.ts`` value in it; updates at
  a timestamp come first). Deleting an NRR row keeps earlier results.
* INTERNAL windows: a node whose stream leaves are all INTERNAL (and that reads
  no retroactive table) answers every row its external version ever inserted;
  a join mixing such inputs with others keeps an inserted combination while
  its other parts are still in their inputs' answers (§3.3.2).
* A window over a subquery (and WSTREAM) windows the stream of rows inserted
  into the child's answer, each stamped with the instant it was inserted;
  rows inserted at one instant are ordered by value for ``ROWS n``.
* Changelog streams (a ``sign`` column, time windows only): a −1 row at t
  retracts the oldest earlier +1 row (input order) with the same attributes
  that is still in the scan's window at t and not retracted yet, from t on;
  with none, it does nothing. Matching is per scan (its own window).
* Periodic ``restore``: the rows continuous evaluation inserted in
  ``(τ_{k-1}, τ_k]`` (ISTREAM_RESTORE); RSTREAM_RESTORE adds to ``Q(τ_k)``
  those of them that are not new in ``Q(τ_k)`` (the short-lived ones).
  DSTREAM has no restore form. WSTREAM with a slide windows the periodic
  ISTREAM and reports its changes at the evaluation instants.
* A count window with SLIDE (``[ROWS n SLIDE m]``, ``Output.count_slide``):
  evaluation k = 1, 2, ... follows the (k·m)-th arrival of the stream in
  processing order (``ts``, then input order) and answers the plan over the
  last n of the first k·m arrivals (fewer at first; WHERE after the window),
  stamped with that arrival's ``ts`` (several evaluations may share one);
  arrivals after the last multiple of m are never evaluated. ISTREAM /
  DSTREAM compare each evaluation with the one before (the first with the
  empty answer).
"""

from __future__ import annotations

import copy
import itertools
import math
from collections import Counter

import pandas as pd

from slidewise.errors import PlanError, SourceError
from slidewise.plan.expr import Col
from slidewise.plan.logical import Aggregate, Distinct, Join, Negation, Node, Plan, Project, Scan, Select, Subquery, Union, column_getter
from tests.oracle_expr import holds, value

__all__ = ["PlanOracle", "answer_at", "answers", "cuts_a_tie", "eval_instants", "expected_output", "order_key"]


def order_key(vals: tuple) -> tuple:
    """Deterministic order of rows inserted at the same instant (for ``ROWS n`` windows)."""
    return tuple((0, v) if isinstance(v, (int, float)) else (1, str(v)) for v in vals)


def _py(v):
    return v.item() if hasattr(v, "item") else v


def _leaves(node: Node):
    """Scans and windowed subqueries under ``node`` (a windowed subquery is a leaf)."""
    if isinstance(node, Scan) or (isinstance(node, Subquery) and node.window is not None):
        yield node
        return
    for c in node.children:
        yield from _leaves(c)


def _has_stream(node: Node) -> bool:
    return any(not (isinstance(x, Scan) and x.is_relation) for x in _leaves(node))


def _has_nrr(node: Node) -> bool:
    return any(isinstance(x, Scan) and x.kind == "nrr" for x in _leaves(node))


def _all_internal(node: Node) -> bool:
    """Monotonic by INTERNAL windows: stream leaves all internal, no retroactive table."""
    leaves = list(_leaves(node))
    streams = [x for x in leaves if not (isinstance(x, Scan) and x.is_relation)]
    return bool(streams) and all(x.window.internal for x in streams) and not any(isinstance(x, Scan) and x.kind == "table" for x in leaves)


def _ts_positions(node: Node) -> tuple[int, ...]:
    """Positions in ``node.schema`` holding a stream member's timestamp."""
    if isinstance(node, Scan):
        return () if node.is_relation else (0,)
    if isinstance(node, (Select, Distinct, Subquery)):
        return _ts_positions(node.child)
    if isinstance(node, Negation):
        return _ts_positions(node.left)
    if isinstance(node, Join):
        out, offset = [], 0
        for i in node.inputs:
            out += [offset + p for p in _ts_positions(i)]
            offset += len(i.schema)
        return tuple(out)
    if isinstance(node, Union):
        common = set(_ts_positions(node.inputs[0]))
        for i in node.inputs[1:]:
            common &= set(_ts_positions(i))
        return tuple(sorted(common))
    if isinstance(node, Project):
        child = node.child.schema
        inner = {child[p] for p in _ts_positions(node.child)}
        return tuple(p for p, c in enumerate(node.schema) if c in inner)
    return ()


def eval_instants(first: int, last: int, slide: int | None) -> list[int]:
    """Every instant first..last (eager), or the multiples of ``slide`` covering them."""
    if slide is None:
        return list(range(first, last + 1))
    lo, hi = -((-first) // slide) * slide, -((-last) // slide) * slide
    return list(range(lo, hi + 1, slide))


class PlanOracle:
    """Answers of every node of a bound ``plan`` over ``streams`` and ``tables``."""

    def __init__(self, plan: Plan, streams: dict[str, pd.DataFrame], tables: dict | None = None):
        self.plan, self.aliases = plan, plan.aliases
        self.arrivals: dict[str, list[tuple]] = {}
        self.retractions: dict[str, list[tuple]] = {}  # changelog streams: (order, ts, attrs) of the -1 rows
        self.updates: dict[str, list[tuple]] = {}
        times: list[int] = []
        for scan in plan.scans():
            if scan.columns is None:
                raise PlanError(f"the columns of {scan.alias} are not known", hint="bind the plan first")
            if scan.is_relation:
                self.updates[scan.source] = self._load_table(scan, (tables or {}).get(scan.source))
                times += [u[0] for u in self.updates[scan.source]]
            elif scan.source not in self.arrivals:
                self.arrivals[scan.source], self.retractions[scan.source] = self._load_stream(scan, streams)
                times += [a[0] for a in self.arrivals[scan.source]] + [r[1] for r in self.retractions[scan.source]]
        self.first = min(times) if times else None
        self.last = max(times) if times else None
        self._cache: dict = {}
        self.order_sensitive = False  # set when a ROWS window over derived rows cuts a tie (see cuts_a_tie)

    @staticmethod
    def _load_stream(scan: Scan, streams) -> tuple[list[tuple], list[tuple]]:
        """``(ts, vals, order)`` of the +1 rows and ``(order, ts, attrs)`` of the -1 rows, in processing order."""
        if scan.source not in streams:
            raise SourceError(f"no input for stream {scan.source}", hint="pass it in streams=")
        df = streams[scan.source]
        signs = df["sign"] if "sign" in df else [1] * len(df)
        rows = [(int(ts), int(s), tuple(_py(v) for v in rest)) for ts, s, *rest in zip(df["ts"], signs, *(df[c] for c in scan.columns))]
        rows = sorted(rows, key=lambda r: r[0])  # stable: input order within a timestamp
        inserts = [(ts, (ts,) + attrs, k) for k, (ts, s, attrs) in enumerate(rows) if s > 0]
        return inserts, [(k, ts, attrs) for k, (ts, s, attrs) in enumerate(rows) if s < 0]

    def _retracted(self, scan: Scan) -> dict[int, int]:
        """Order of a retracted +1 row -> when, for ``scan``'s window (see the module doc)."""
        key = ("retracted", scan.source, scan.window)
        if key not in self._cache:
            out: dict[int, int] = {}
            for k, t, attrs in self.retractions.get(scan.source, []):
                for ts, vals, j in self.arrivals[scan.source]:
                    alive = j < k and j not in out and (scan.window.kind == "unbounded" or t - scan.window.length <= ts)
                    if alive and vals[1:] == attrs:
                        out[j] = t
                        break
            self._cache[key] = out
        return self._cache[key]

    @staticmethod
    def _load_table(scan: Scan, df) -> list[tuple]:
        """``(ts, op, key, vals)`` in processing order; rejects key reuse as the contract says."""
        if df is None:
            return []
        ts = df["ts"] if "ts" in df else [0] * len(df)
        ops = df["op"] if "op" in df else ["+"] * len(df)
        ups = [(int(t), str(o), tuple(_py(v) for v in vals)) for t, o, *vals in zip(ts, ops, *(df[c] for c in scan.columns))]
        ups = sorted(ups, key=lambda u: u[0])
        live, dead = set(), set()
        for t, op, vals in ups:
            key = vals[0]
            if op == "+":
                if key in live or (scan.kind == "nrr" and key in dead):
                    raise SourceError(
                        f"table {scan.source}: key {key!r} inserted at {t} is {'already present' if key in live else 'reused after its deletion'}",
                        hint="NRR keys are never reused (Golab's thesis §3.3.1)",
                    )
                live.add(key)
            elif op == "-":
                live.discard(key)
                dead.add(key)
            else:
                raise SourceError(f"table {scan.source}: unknown op {op!r}", hint="use '+' or '-'")
        return [(t, op, vals[0], vals) for t, op, vals in ups]

    def table_state(self, source: str, t: int) -> Counter:
        rows: dict = {}
        for ts, op, key, vals in self.updates[source]:
            if ts > t:
                break
            if op == "+":
                rows[key] = vals
            else:
                rows.pop(key, None)
        return Counter(rows.values())

    # ---- answers ---------------------------------------------------------------

    def answer_at(self, node: Node, tau: int, external: bool = False, nrr_time: int | None = None) -> Counter:
        """``Q(τ)`` of ``node`` (Definition 3.1); ``external`` ignores INTERNAL marks."""
        if self.first is None or tau < self.first:
            return Counter()
        key = (id(node), tau, external, nrr_time)
        if key not in self._cache:
            if not external and _all_internal(node):
                self._cache[key] = self._accumulated(node, tau, nrr_time)
            else:
                self._cache[key] = self._evaluate(node, tau, external, nrr_time)
        return self._cache[key]

    def inserted(self, node: Node, tau: int, external: bool = False, nrr_time: int | None = None) -> Counter:
        """Rows entering the answer at τ: ``Q(τ) − Q(τ−1)``."""
        return self.answer_at(node, tau, external, nrr_time) - self.answer_at(node, tau - 1, external, nrr_time)

    def _accumulated(self, node: Node, tau: int, nrr_time) -> Counter:
        """Every row the external version of ``node`` inserted up to τ (INTERNAL windows, §3.3.2)."""
        key = ("acc", id(node), tau, nrr_time)
        if key not in self._cache:
            prev = self._accumulated(node, tau - 1, nrr_time) if tau > self.first else Counter()
            self._cache[key] = prev + self.inserted(node, tau, True, nrr_time)
        return self._cache[key]

    def _evaluate(self, node: Node, tau: int, ext: bool, nrr_time) -> Counter:
        ans = lambda n: self.answer_at(n, tau, ext, nrr_time)  # noqa: E731
        if isinstance(node, Scan):
            return self._scan(node, tau, nrr_time)
        if isinstance(node, Subquery):
            return self._window_subquery(node, tau) if node.window else ans(node.child)
        if isinstance(node, Select):
            get = column_getter(node.child.schema, self.aliases)
            return Counter({r: m for r, m in ans(node.child).items() if holds(node.predicate, get(r))})
        if isinstance(node, Project):
            return self._project(node, ans(node.child))
        if isinstance(node, Union):
            out = Counter()
            for i in node.inputs:
                out.update(ans(i))
            return out
        if isinstance(node, Distinct):
            return Counter(set(ans(node.child)))
        if isinstance(node, Negation):
            return self._negation(node, ans(node.left), ans(node.right))
        if isinstance(node, Aggregate):
            return self._aggregate(node, ans(node.child))
        if isinstance(node, Join):
            return self._join(node, tau, ext, nrr_time)
        raise PlanError(f"the oracle does not know {type(node).__name__}")

    def _scan(self, scan: Scan, tau: int, nrr_time) -> Counter:
        if scan.kind == "table":
            return self.table_state(scan.source, tau)
        if scan.kind == "nrr":
            if nrr_time is None:
                raise PlanError(f"NRR {scan.alias} is not joined with a stream", hint="an NRR row joins stream tuples arriving after its insertion")
            return self.table_state(scan.source, nrr_time)
        gone = self._retracted(scan)
        rows = [(ts, v) for ts, v, j in self.arrivals[scan.source] if ts <= tau and gone.get(j, tau + 1) > tau]
        return Counter(_window(scan.window, rows, tau, scan.schema))

    def _window_subquery(self, node: Subquery, tau: int) -> Counter:
        """A window over the stream of rows inserted into the child's answer (its ISTREAM)."""
        stream = [(t, v) for t in range(self.first, tau + 1) for v in sorted(self.inserted(node.child, t).elements(), key=order_key)]
        self.order_sensitive |= cuts_a_tie(node.window, stream, node.schema)
        return Counter(_window(node.window, stream, tau, node.schema))

    def _project(self, node: Project, rows: Counter) -> Counter:
        child = node.child.schema
        get = column_getter(child, self.aliases)
        out: Counter = Counter()
        for r, m in rows.items():
            vals: list = []
            for item in node.items:
                if isinstance(item.expr, Col) and item.expr.attr == "*":
                    prefix = f"{item.expr.name}."
                    vals += [v for c, v in zip(child, r) if c.startswith(prefix)]
                else:
                    vals.append(_py(value(item.expr, get(r))))
            out[tuple(vals)] += m
        return out

    def _negation(self, node: Negation, left: Counter, right: Counter) -> Counter:
        if node.mode == "except":
            return left - right
        get_l = column_getter(node.left.schema, self.aliases)
        get_r = column_getter(node.right.schema, self.aliases)
        keys = {tuple(_py(value(rc, get_r(r))) for _, rc in node.on) for r in right}
        return Counter({r: m for r, m in left.items() if tuple(_py(value(lc, get_l(r))) for lc, _ in node.on) not in keys})

    def _aggregate(self, node: Aggregate, rows: Counter) -> Counter:
        get = column_getter(node.child.schema, self.aliases)
        groups: dict[tuple, list] = {}
        for r in rows.elements():
            k = tuple(_py(value(item.expr, get(r))) for item in node.keys)
            groups.setdefault(k, []).append(r)
        out: Counter = Counter()
        for k, members in groups.items():
            vals = []
            for agg in node.aggs:
                if agg.arg is None:
                    vals.append(len(members))
                    continue
                xs = [_py(value(agg.arg, get(r))) for r in members]
                xs = [x for x in xs if x is not None and x == x]  # nulls (None, NaN) are ignored
                if agg.distinct:
                    xs = list(set(xs))
                vals.append(
                    {
                        "count": lambda: len(xs),
                        "sum": lambda: sum(xs) if xs else None,
                        "avg": lambda: sum(xs) / len(xs) if xs else None,
                        "min": lambda: min(xs, default=None),
                        "max": lambda: max(xs, default=None),
                        "topk": lambda: _topk(xs, agg.param),
                        "median": lambda: _quantile(xs, 0.5),
                        "quantile": lambda: _quantile(xs, agg.param),
                        "approx_count_distinct": lambda: len(set(xs)),  # the exact answers
                        "approx_quantile": lambda: _quantile(xs, agg.param),
                    }[agg.func]()
                )
            out[k + tuple(vals)] += 1
        return out

    def _join(self, node: Join, tau: int, ext: bool, nrr_time) -> Counter:
        """Cartesian product + predicates; NRR inputs as of each combination's latest stream ts."""
        inputs = node.inputs
        nrr = [i for i, x in enumerate(inputs) if _has_nrr(x) and not _has_stream(x)]
        rest = [i for i in range(len(inputs)) if i not in nrr]
        internal = [i for i in rest if not ext and _all_internal(inputs[i])]
        mixed = bool(internal) and len(internal) < len(rest)
        if mixed:  # §3.3.2: combinations inserted so far, while their non-internal parts remain
            acc = Counter()
            for t in range(self.first, tau + 1):
                acc.update(self.inserted(node, t, True, nrr_time))
            keep = [(i, self.answer_at(inputs[i], tau, False, nrr_time)) for i in rest if i not in internal]
            return Counter({r: m for r, m in acc.items() if all(_part(inputs, r, i) in ans for i, ans in keep)})
        answers = {i: self.answer_at(inputs[i], tau, ext, nrr_time) for i in rest}
        ts_pos = {i: _ts_positions(inputs[i]) for i in rest if _has_stream(inputs[i])}
        if nrr and not ts_pos and nrr_time is None:
            raise PlanError("an NRR must be joined with a stream", hint="join the table with a windowed stream")
        for i, pos in ts_pos.items():
            if nrr and not pos:
                raise PlanError(f"cannot tell when the rows of join input {i} arrived (no member ts column)", hint="join the NRR directly with windowed streams")
        get = column_getter(node.schema, self.aliases)
        out: Counter = Counter()
        for combo in itertools.product(*(answers[i].items() for i in rest)):
            parts = dict(zip(rest, combo))
            if nrr:
                t = max((parts[i][0][p] for i, pos in ts_pos.items() for p in pos), default=nrr_time)
                nrr_rows = [self.answer_at(inputs[i], tau, ext, t).items() for i in nrr]
            else:
                nrr_rows = []
            for extra in itertools.product(*nrr_rows):
                parts.update(zip(nrr, extra))
                row = tuple(v for i in range(len(inputs)) for v in parts[i][0])
                mult = 1
                for i in range(len(inputs)):
                    mult *= parts[i][1]
                g = get(row)
                if all(value(a, g) is not None and value(a, g) == value(b, g) for a, b in node.equalities) and all(holds(f, g) for f in node.filters):
                    out[row] += mult
        return out

    # ---- output ----------------------------------------------------------------

    def expected_output(self) -> Counter:
        """``Counter[(ts, vals, sign)]`` of the plan's output operator."""
        out_node = self.plan.root
        q, kind, slide = out_node.child, out_node.kind, out_node.slide
        result: Counter = Counter()
        if self.first is None:
            return result
        if kind == "dstream" and out_node.restore:
            raise PlanError("DSTREAM has no restore form", hint="use ISTREAM_RESTORE or RSTREAM_RESTORE")
        if out_node.count_slide:
            prev = Counter()
            for tau, cur in self.count_answers():
                if kind == "rstream":
                    _emit(result, tau, cur, +1)
                elif kind == "istream":
                    _emit(result, tau, cur - prev, +1)
                else:
                    _emit(result, tau, prev - cur, -1)
                prev = cur
            return result
        instants = eval_instants(self.first, self.last, slide)
        prev_tau, prev = self.first - 1, Counter()
        inserted_stream: list[tuple[int, tuple]] = []
        prev_window: Counter = Counter()
        for tau in instants:
            cur = self.answer_at(q, tau)
            ins, dels = cur - prev, prev - cur
            restored = Counter()
            if slide is not None and out_node.restore:
                for t in range(prev_tau + 1, tau + 1):
                    restored.update(self.inserted(q, t))
            if kind == "istream":
                _emit(result, tau, restored if out_node.restore and slide else ins, +1)
            elif kind == "dstream":
                _emit(result, tau, dels, -1)
            elif kind == "rstream" and slide is None:
                _emit(result, tau, ins, +1)
                _emit(result, tau, dels, -1)
            elif kind == "rstream":
                _emit(result, tau, cur + (restored - ins) if out_node.restore else cur, +1)
            else:  # wstream: a window over the stream of inserted rows
                inserted_stream += [(tau, v) for v in sorted(ins.elements(), key=order_key)]
                self.order_sensitive |= cuts_a_tie(out_node.window, inserted_stream, q.schema)
                window = Counter(_window(out_node.window, inserted_stream, tau, q.schema))
                _emit(result, tau, window - prev_window, +1)
                _emit(result, tau, prev_window - window, -1)
                prev_window = window
            prev_tau, prev = tau, cur
        return result

    def count_answers(self) -> list[tuple[int, Counter]]:
        """``[ROWS n SLIDE m]``: ``(ts, Q)`` of evaluation k = 1, 2, ...: the plan over the arrivals so far
        cut after the (k·m)-th (whose ``ts`` it carries), so its ``ROWS n`` window is their last n."""
        m = self.plan.root.count_slide
        (source,) = self.arrivals
        arrivals, out = self.arrivals[source], []
        for k in range(1, len(arrivals) // m + 1):
            cut = copy.copy(self)
            cut.arrivals, cut._cache = {source: arrivals[: k * m]}, {}
            tau = arrivals[k * m - 1][0]
            out.append((tau, cut.answer_at(self.plan.root.child, tau)))
        return out

    def answers(self) -> dict[int, Counter]:
        """``Q(τ)`` of the output's child at every evaluation instant."""
        if self.first is None:
            return {}
        return {tau: self.answer_at(self.plan.root.child, tau) for tau in eval_instants(self.first, self.last, self.plan.root.slide)}


def _topk(xs: list, k) -> str | None:
    """TOPK(k, x): the k most frequent values, count descending then value, joined by ','."""
    ranked = sorted(Counter(xs).items(), key=lambda vc: (-vc[1], vc[0]))[: int(k)]
    return ",".join(str(v) for v, _ in ranked) if ranked else None


def _quantile(xs: list, p: float) -> float | None:
    """Linear interpolation between the order statistics around rank (n - 1) p (PERCENTILE_CONT)."""
    if not xs:
        return None
    xs = sorted(xs)
    h = (len(xs) - 1) * p
    i = math.floor(h)
    j = min(i + 1, len(xs) - 1)
    return float(xs[i]) + (float(xs[j]) - float(xs[i])) * (h - i)


def _part(inputs, row: tuple, i: int) -> tuple:
    start = sum(len(x.schema) for x in inputs[:i])
    return row[start : start + len(inputs[i].schema)]


def _emit(result: Counter, tau: int, rows: Counter, sign: int) -> None:
    for vals, m in rows.items():
        if m > 0:
            result[(tau, vals, sign)] += m


def _window(spec, stream: list[tuple[int, tuple]], tau: int, schema: tuple[str, ...]) -> list[tuple]:
    """Rows of ``stream`` (``(ts, vals)`` in arrival order, all ``ts <= τ``) inside ``spec`` at τ."""
    if spec.kind == "unbounded":
        return [v for _, v in stream]
    if spec.kind in ("range", "now"):
        return [v for ts, v in stream if tau - spec.length <= ts]
    return [v for _, v in _last_rows(spec, stream, schema)]


def _last_rows(spec, stream: list[tuple[int, tuple]], schema: tuple[str, ...]) -> list[tuple[int, tuple]]:
    """The last ``spec.size`` entries of ``stream`` (per partition value for PARTITION BY)."""
    if spec.partition_by is None:
        return stream[-spec.size :]
    idx = [c.rsplit(".", 1)[-1] for c in schema].index(spec.partition_by)
    seen: Counter = Counter()
    kept = []
    for ts, v in reversed(stream):
        if seen[v[idx]] < spec.size:
            seen[v[idx]] += 1
            kept.append((ts, v))
    return kept[::-1]


def cuts_a_tie(spec, stream: list[tuple[int, tuple]], schema: tuple[str, ...]) -> bool:
    """Does a ``ROWS n`` window over ``stream`` keep some but not all differing rows of one instant?

    Then its contents depend on the order of rows inserted at the same instant,
    which Golab's thesis §3.3.3 leaves open (footnote 3); the oracle orders them by value.
    """
    if spec.kind != "rows":
        return False
    kept = Counter(_last_rows(spec, stream, schema))
    for ts in {t for t, _ in kept}:
        group = [(t, v) for t, v in stream if t == ts]
        if len(set(group)) > 1 and any(kept[e] < group.count(e) for e in set(group)):
            return True
    return False


def expected_output(plan: Plan, streams: dict, tables: dict | None = None) -> Counter:
    """``Counter[(ts, vals, sign)]``: what the plan's output operator must emit."""
    return PlanOracle(plan, streams, tables).expected_output()


def answers(plan: Plan, streams: dict, tables: dict | None = None) -> dict[int, Counter]:
    """``Q(τ)`` at each evaluation instant (every instant, or the multiples of the slide)."""
    return PlanOracle(plan, streams, tables).answers()


def answer_at(plan: Plan, tau: int, streams: dict, tables: dict | None = None, *, node: Node | None = None) -> Counter:
    """``Q(τ)`` of ``node`` (default: the output's child) of ``plan``."""
    return PlanOracle(plan, streams, tables).answer_at(node or plan.root.child, tau)
