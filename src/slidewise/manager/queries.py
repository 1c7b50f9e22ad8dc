"""Queries of the query manager: CQL compiled to a sliding aggregate, answered from sub-window partials.

A registered (periodic) query is ``SELECT RSTREAM(keys, aggregates) FROM S
[RANGE T SLIDE D] [WHERE ...] GROUP BY keys [HAVING ...]`` — the pane path's
shape (:func:`slidewise.optimizer.pane_plan.match`) — whose window ``T + 1`` is
``nk`` sub-windows and whose period ``D`` is ``m`` sub-windows (Golab's thesis
§7.2.1, §8.4.1). A one-time query may omit SLIDE and RSTREAM: it is answered
once, over the current window.

A scan reads sub-windows one at a time; each read yields the sub-window's
partial (:func:`partial`): its groups and one accumulator state per aggregate of
:mod:`slidewise.operators.aggregates`, pre-aggregated from the raw tuples
(window scan) or taken from the sub-window's synopsis entry (synopsis scan,
the same partial computed once per signature). :meth:`Compiled.answer` merges
the partials read into the answer with the pane path's
:class:`~slidewise.runtime.pane_engine.WindowAnswers` (HAVING, output columns, order).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from slidewise.cql.parser import parse_plan
from slidewise.errors import QueryError
from slidewise.manager.window import SubWindow
from slidewise.optimizer.pane_plan import SlidingAggregate, match
from slidewise.optimizer.sharing import coverable
from slidewise.plan.bind import bind
from slidewise.plan.logical import Plan, Scan
from slidewise.plan.prune import prune_columns
from slidewise.runtime.pane_engine import WindowAnswers, encode_groups
from slidewise.runtime.sources.base import KIND_DTYPE

__all__ = ["ACCESS", "Compiled", "compile_query"]

#: the access paths of a scan (Golab's thesis §7.2.1): raw tuples, or the sub-windows' synopsis entries
ACCESS = ("window", "synopsis")

SHAPE = "SELECT RSTREAM(keys, aggregates) FROM S [RANGE T SLIDE D] [WHERE ...] GROUP BY keys [HAVING ...]"


@dataclass(eq=False)
class Compiled:
    """A query over ``nk`` sub-windows, re-executed every ``m`` window slides (0: one-time)."""

    text: str
    spec: SlidingAggregate
    nk: int
    m: int
    answers: WindowAnswers
    access: str = "synopsis"

    @property
    def signature(self) -> tuple:
        """Queries with equal signatures have equal sub-window partials (one synopsis serves them)."""
        s = self.spec
        return (s.source, s.where, s.keys, tuple((a.func, a.arg, a.distinct, a.param) for a in s.aggs))

    def build(self, sub: SubWindow) -> tuple[list[np.ndarray], list]:
        """The partial of one sub-window: its groups' key values, and the states (``COUNT(*)`` first)."""
        data = self.answers.filtered(sub.cols["ts"], sub.cols)
        rows = len(data["ts"])
        uniq, codes = encode_groups([data[k] for k in self.spec.keys], rows)
        width = len(uniq[0]) if uniq else 1
        return uniq, self.answers.partials(data, np.zeros(rows, np.int64), codes, (1, width))

    def read(self, sub: SubWindow) -> tuple[list[np.ndarray], list]:
        """One sub-window read by this query's access path."""
        return sub.partial(self.signature, self.build) if self.access == "synopsis" else self.build(sub)

    def answer(self, reads: list, end: int) -> dict[str, np.ndarray] | None:
        """The answer over the youngest ``nk`` of ``reads`` (partials, oldest first) at instant ``end``:
        columns with ``ts`` and ``sign`` (None: no row)."""
        reads = reads[max(0, len(reads) - self.nk) :]
        keys = self.spec.keys
        if not reads:
            return None
        if keys:
            sizes = [len(u[0]) for u, _ in reads]
            uniq, codes = encode_groups([np.concatenate([u[i] for u, _ in reads]) for i in range(len(keys))], sum(sizes))
            width = len(uniq[0])
        else:
            sizes, uniq, codes, width = [1] * len(reads), [], np.zeros(len(reads), np.int64), 1
        if not width:
            return None
        bounds = np.cumsum([0] + sizes)
        states = []
        for i, st in enumerate(self.answers.states):
            if st is None:
                states.append(None)
                continue
            full = st[0].identity((len(reads), width))
            for r, (_, parts) in enumerate(reads):
                cols = codes[bounds[r] : bounds[r + 1]]
                for whole, part in zip(full, parts[i]):
                    whole[r, cols] = part[0]
            states.append(full)
        out: list[dict] = []
        self.answers.emit = out.append
        self.answers.answer(uniq, states, np.array([0]), np.array([len(reads)]), np.array([end], np.int64))
        return out[0] if out else None


def compile_query(text: str, schemas: dict[str, dict[str, str]], t: int, n: int, *, one_time: bool = False, access: str = "synopsis") -> Compiled:
    """``text`` over streams with attribute kinds ``schemas``, for windows of ``n`` sub-windows of ``t``."""
    if access not in ACCESS:
        raise QueryError(f"unknown access path {access!r}", hint=f"use one of {', '.join(ACCESS)}")
    plan = parse_plan(text)
    missing = sorted({s.source for s in plan.scans()} - set(schemas))
    if missing:
        raise QueryError(f"unknown stream {missing[0]}", hint=f"the query manager has streams {', '.join(sorted(schemas)) or '(none)'}")
    if one_time:
        plan = _once(plan, t)
    spec = match(prune_columns(bind(plan, schemas)))
    if spec is None or spec.kind != "rstream":
        raise QueryError("the query manager runs periodic one-stream aggregates only", hint=f"write {SHAPE}")
    if spec.counted:
        raise QueryError(
            "the query manager's sub-windows are time intervals: a count window with SLIDE ([ROWS n SLIDE m]) is not supported here",
            hint="use [RANGE T SLIDE D], or run the query with `slidewise run`",
        )
    if not coverable(spec):
        raise QueryError("the query manager answers COUNT, SUM, AVG, MIN and MAX (not DISTINCT)", hint="register other aggregates with `slidewise run`")
    size = spec.length + 1
    if size % t or size // t > n:
        raise QueryError(
            f"RANGE {spec.length} is not a whole number of sub-windows of {t} (at most {n})",
            hint=f"use RANGE k*{t}-1 for k from 1 to {n}, e.g. RANGE {n * t - 1}",
        )
    if spec.slide % t:
        raise QueryError(f"SLIDE {spec.slide} is not a multiple of the sub-window length {t}", hint=f"use SLIDE {t}, {2 * t}, ...")
    dtypes = {a: KIND_DTYPE[k] for a, k in schemas[spec.source].items()}
    refused = spec.refuse(dtypes)
    if refused:
        raise QueryError(f"the query manager cannot run this query: {refused}", hint="group by integer or string columns")
    return Compiled(text, spec, size // t, 0 if one_time else spec.slide // t, WindowAnswers(spec, dtypes, None), access)


def _once(plan: Plan, t: int) -> Plan:
    """A one-time query as a periodic one of slide ``t`` (RSTREAM): it is evaluated once."""

    def down(node):
        if isinstance(node, Scan):
            return replace(node, window=replace(node.window, slide=t)) if node.window is not None and node.window.kind == "range" else node
        child = getattr(node, "child", None)
        return node if child is None else replace(node, child=down(child))

    root = plan.root
    return replace(plan, root=replace(root, kind="rstream", slide=t, child=down(root.child)))
