"""Update-pattern annotation of logical plans (Golab's thesis §3.5.1) and the state each operator keeps (§3.5.2).

Every edge of a plan is labelled with the update pattern of the tuples on it
(:class:`~slidewise.plan.logical.Pattern`: MONO < WKS < WK < STR); the label
of a node is the pattern of its output. :func:`annotate` labels a whole tree
bottom-up; it needs no columns, so it works on unbound plans (``explain``).

Leaf labels (§3.5.1, §3.3.1, §3.3.2):

* time window (``RANGE``, ``NOW``) → WKS; count window (``ROWS``,
  ``PARTITION BY``) → STR;
* ``UNBOUNDED`` and ``INTERNAL`` windows (time- or count-based, §3.3.2:
  "both can be time-based or count-based") → MONO;
* NRR → MONO; retroactive table → STR; a changelog stream (retractions) → STR;
* a subquery with a window over its output is a leaf of the outer query
  (the window over a stream, same labels).

The five rules (the thesis's four of §3.5.1 plus the internal-window rule of
§3.3.2 that refines joins and aggregation):

1. unary weakest non-monotonic operators (selection, projection, renaming
   subquery) and the NRR join keep their input's pattern;
2. merge-union (binary weakest) takes the most complex input: STR if any is
   STR, WK if inputs mix WKS and WK (or are WK), WKS if all WKS;
3. weak non-monotonic operators — duplicate elimination over non-strict
   input, a join of two or more non-monotonic inputs — give WK, or STR if an
   input is STR;
4. strict non-monotonic operators — negation, aggregation, a join with a
   retroactive table — give STR (and so does any join or distinct with a STR
   input: STR propagates);
5. internal windows (§3.3.2): a join whose inputs are all MONO is MONO; with
   exactly one non-MONO input it takes that input's pattern (a join of time
   windows of which at most one is external is WKS); aggregation over
   internal windows only is MONO (append-only), otherwise STR.

Output operators (the root, our definition): ``RSTREAM`` keeps the answer's
pattern (it maintains the answer as a view); ``ISTREAM`` and ``DSTREAM``
emit a stream of changes that is never retracted → MONO; ``WSTREAM`` is a
window over the inserted rows → WKS for ``RANGE``, STR for ``ROWS``. The
pattern of a *plan* is the label of the edge into its output operator
(:func:`plan_pattern`), as in the thesis ("the label of its final output
edge").

Caveat for FIFO state: two labels of the rules are WKS although lifetimes
differ (a union of time windows of different lengths; a join of one external
with internal or unbounded windows, whose results may be originated by the
internal tuple). :func:`lifetime` tells whether a WKS edge really expires in
arrival order; :func:`state_structure` uses a calendar queue otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from slidewise.plan.logical import Aggregate, Distinct, Join, Negation, Node, Output, Pattern, Plan, Project, Scan, Select, Subquery, Union, walk
from slidewise.plan.query import WindowSpec

__all__ = ["STRUCTURES", "StateStructure", "annotate", "leaf_pattern", "lifetime", "plan_pattern", "rule_of", "state_structure", "state_structures", "window_pattern"]

MONO, WKS, WK, STR = Pattern.MONO, Pattern.WKS, Pattern.WK, Pattern.STR


def window_pattern(window: WindowSpec) -> Pattern:
    """Label of a base window (§3.5.1 leaves, §3.3.2 internal windows)."""
    if window.internal or window.kind == "unbounded":
        return MONO
    return STR if window.is_count else WKS


def leaf_pattern(node: Node) -> Pattern | None:
    """Label of a leaf (a scan, or a subquery with a window over its output); None for inner nodes."""
    if isinstance(node, Scan):
        if node.kind == "stream":
            assert node.window is not None  # a stream has a window
            return STR if node.changelog else window_pattern(node.window)  # retractions delete any tuple
        return MONO if node.kind == "nrr" else STR
    if isinstance(node, Subquery) and node.window is not None:
        return window_pattern(node.window)
    return None


def _relation(node: Node, kind: str) -> bool:
    return isinstance(node, Scan) and node.kind == kind


def _windows_below(node: Node) -> list[WindowSpec]:
    """Windows of the leaves under ``node`` (not looking inside windowed subqueries)."""
    if isinstance(node, Scan):
        return [node.window] if node.window is not None else []
    if isinstance(node, Subquery) and node.window is not None:
        return [node.window]
    return [w for c in node.children for w in _windows_below(c)]


def _label(node: Node, inputs: tuple[Pattern, ...]) -> tuple[Pattern, str]:
    """Pattern of ``node``'s output from its inputs' patterns, and the rule that gave it."""
    leaf = leaf_pattern(node)
    if leaf is not None:
        if isinstance(node, Scan) and node.is_relation:
            what = "NRR" if node.kind == "nrr" else "retroactive table"
        else:
            assert isinstance(node, (Scan, Subquery)) and node.window is not None  # the leaves with a window
            w = node.window
            what = "internal window" if w.internal else "unbounded window" if w.kind == "unbounded" else "count window" if w.is_count else "time window"
        return leaf, f"leaf: {what} -> {leaf}"
    top = max(inputs, default=MONO)
    if isinstance(node, (Select, Project, Subquery)):
        return inputs[0], "rule 1: unary weakest operator keeps its input's pattern"
    if isinstance(node, Union):
        return top, "rule 2: merge-union takes its most complex input"
    if isinstance(node, Distinct):
        if top == STR:
            return STR, "rule 4: distinct over strict input is strict (counting)"
        return WK, "rule 3: distinct (weak non-monotonic) -> WK"
    if isinstance(node, Negation):
        return STR, "rule 4: negation is strict non-monotonic"
    if isinstance(node, Aggregate):
        if top == MONO and all(w.internal for w in _windows_below(node.child)):
            return MONO, "rule 5: aggregation over internal windows is append-only"
        return STR, "rule 4: aggregation is strict non-monotonic"
    if isinstance(node, Join):
        if any(_relation(i, "table") for i in node.inputs):
            return STR, "rule 4: join with a retroactive table is strict"
        if top == STR:
            return STR, "rule 3: join with a strict input is strict"
        moving = [p for p in inputs if p != MONO]
        if not moving:
            return MONO, "rule 5: join of monotonic inputs (internal/unbounded windows, NRRs) is monotonic"
        if len(moving) == 1:
            if all(_relation(i, "nrr") for i, p in zip(node.inputs, inputs) if p == MONO):
                return moving[0], "rule 1: NRR join keeps its input's pattern"
            return moving[0], "rule 5: join with one non-monotonic input takes its pattern"
        return WK, "rule 3: join of non-monotonic inputs is weak non-monotonic"
    if isinstance(node, Output):
        if node.kind == "rstream":
            return inputs[0], "output: RSTREAM maintains the answer, same pattern"
        if node.kind == "wstream":
            assert node.window is not None  # WSTREAM has its window
            p = STR if node.window.is_count else WKS
            return p, f"output: WSTREAM{node.window} is a window over the inserted rows -> {p}"
        return MONO, f"output: {node.kind.upper()} is an append-only stream of changes"
    raise TypeError(f"no update-pattern rule for {type(node).__name__}")


def annotate(root: Node) -> dict[Node, Pattern]:
    """Pattern of every node's output edge (Golab's thesis §3.5.1), keyed by node identity."""
    out: dict[Node, Pattern] = {}

    def visit(node: Node) -> Pattern:
        inputs = tuple(visit(c) for c in node.children)
        out[node] = _label(node, inputs)[0]
        return out[node]

    visit(root)
    return out


def rule_of(node: Node, patterns: dict[Node, Pattern] | None = None) -> str:
    """Which leaf label or rule gave ``node`` its pattern (for explain)."""
    patterns = patterns if patterns is not None else annotate(node)
    return _label(node, tuple(patterns[c] for c in node.children))[1]


def plan_pattern(plan: Plan | Node) -> Pattern:
    """The update pattern of a plan: the label of the edge into its output operator."""
    root = plan.root if isinstance(plan, Plan) else plan
    top = root.child if isinstance(root, Output) else root
    return annotate(top)[top]


def lifetime(node: Node) -> int | None:
    """The common lifetime c of the tuples of a WKS edge (ES(τ) = PS(τ − c), §3.2.1), else None.

    None means the edge does not expire in arrival order (or never expires).
    """
    if isinstance(node, Scan) or (isinstance(node, Subquery) and node.window is not None):
        w = node.window
        if w is None or w.internal or w.is_count or w.kind == "unbounded":
            return None
        return w.length
    if isinstance(node, (Select, Project, Subquery)):
        return lifetime(node.children[0])
    if isinstance(node, Union):
        spans = {lifetime(i) for i in node.inputs}
        return spans.pop() if len(spans) == 1 else None
    if isinstance(node, Join):
        patterns = [annotate(i)[i] for i in node.inputs]
        moving = [i for i, p in zip(node.inputs, patterns) if p != MONO]
        others_nrr = all(_relation(i, "nrr") for i, p in zip(node.inputs, patterns) if p == MONO)
        return lifetime(moving[0]) if len(moving) == 1 and others_nrr else None
    return None


# --- state structures (Golab's thesis §3.5.2) ---------------------------------------------------------

STRUCTURES = {
    "none": "no state",
    "fifo": "FIFO",
    "calendar": "calendar queue",
    "hash": "hash table",
    "list": "list scanned by exp",
    "append": "append-only list",
    "groups": "array of groups",
}


@dataclass(frozen=True)
class StateStructure:
    """What a physical operator stores, per stored input, and how expirations reach it.

    ``inputs``: one structure name (:data:`STRUCTURES`) per child, ``"none"``
    when the child's tuples are not stored; ``output``: the structure of
    stored output (distinct's output state, aggregation's groups, a
    materialised RSTREAM answer), or ``"none"``; ``form``: the distinct
    implementation (``delta_star``, ``naive``, ``strict``); ``negative_tuples``:
    whether the operator emits negative tuples; ``partitions``: calendar
    queue partitions.
    """

    strategy: str
    inputs: tuple[str, ...] = ()
    output: str = "none"
    form: str | None = None
    negative_tuples: bool = False
    partitions: int = 10

    def _name(self, kind: str) -> str:
        text = STRUCTURES[kind]
        return f"{text} ({self.partitions} partitions)" if kind == "calendar" else text

    def __str__(self) -> str:
        parts = []
        if any(k != "none" for k in self.inputs):
            parts.append("inputs " + " | ".join(self._name(k) for k in self.inputs))
        if self.output != "none":
            parts.append("output " + self._name(self.output))
        if self.form:
            parts.append({"delta_star": "δ* (output + auxiliary youngest per value)", "naive": "naive (input + output)", "strict": "strict (counts)"}[self.form])
        if self.negative_tuples:
            parts.append("emits negative tuples")
        return "; ".join(parts) or "no state"


def _store(pattern: Pattern, strategy: str, node: Node | None = None) -> str:
    """How a stored input with ``pattern`` is kept under ``strategy`` (§2.3.3, §3.5.2)."""
    if strategy == "nt":
        return "hash"
    if strategy == "direct":
        return "list"
    if pattern == MONO:
        bounded = node is not None and any(w.kind != "unbounded" for w in _windows_below(node))
        return "fifo" if bounded else "append"
    if pattern == WKS:
        return "fifo" if node is None or lifetime(node) is not None else "calendar"
    return "calendar" if pattern == WK else "hash"


def state_structure(node: Node, pattern_of_inputs: tuple[Pattern, ...], strategy: str = "upa", partitions: int = 10) -> StateStructure:
    """The state the physical operator for ``node`` keeps under ``strategy`` (Golab's thesis §3.5.2)."""
    out = _label(node, tuple(pattern_of_inputs))[0]
    emits = out != MONO if strategy == "nt" else out == STR
    base: dict[str, Any] = {"strategy": strategy, "partitions": partitions, "negative_tuples": emits}
    kids = node.children
    stored = tuple(_store(p, strategy, c) for c, p in zip(kids, pattern_of_inputs))
    if isinstance(node, Scan) or (isinstance(node, Subquery) and node.window is not None):
        w = node.window
        if w is None:
            return StateStructure(output="hash", **base)  # relation: rows by key
        if w.is_count:
            return StateStructure(output="fifo", **base)  # circular buffer of the last N
        return StateStructure(output="fifo" if strategy == "nt" and w.kind != "unbounded" else "none", **base)
    if isinstance(node, (Select, Project, Union, Subquery)):
        return StateStructure(inputs=("none",) * len(kids), **base)
    if isinstance(node, Join):
        nrr = [_relation(i, "nrr") for i in kids]
        # NRR join: stream tuples only probe the relation, they are not stored (§3.3.1)
        inputs = tuple("hash" if is_nrr else ("none" if any(nrr) and not _relation(c, "table") else s) for c, s, is_nrr in zip(kids, stored, nrr))
        return StateStructure(inputs=inputs, **base)
    if isinstance(node, Distinct):
        if strategy == "nt":
            form = "strict"
        elif strategy == "direct":
            form = "naive"
        else:
            form = "strict" if pattern_of_inputs[0] == STR else "delta_star"
        inputs = {"strict": ("hash",), "naive": stored, "delta_star": ("none",)}[form]
        output = {"strict": "hash", "naive": "list", "delta_star": _store(WK, strategy)}[form]
        return StateStructure(inputs=inputs, output=output, form=form, **base)
    if isinstance(node, Negation):
        return StateStructure(inputs=stored, **base)
    if isinstance(node, Aggregate):
        inputs = ("none",) if strategy == "nt" else stored
        return StateStructure(inputs=inputs, output="groups", **{**base, "negative_tuples": strategy == "nt" and out != MONO})
    if isinstance(node, Output):
        if node.kind == "wstream":
            return StateStructure(inputs=("none",), output="fifo", **base)
        if node.slide:  # periodic: the answer of the last evaluation, to compare with the next
            return StateStructure(inputs=(_store(pattern_of_inputs[0], strategy, kids[0]),), **base)
        return StateStructure(inputs=("none",), **base)
    raise TypeError(f"no state structure for {type(node).__name__}")


def state_structures(plan: Plan | Node, strategy: str = "upa", partitions: int = 10) -> dict[Node, StateStructure]:
    """:func:`state_structure` of every node of a plan."""
    root = plan.root if isinstance(plan, Plan) else plan
    patterns = annotate(root)
    return {n: state_structure(n, tuple(patterns[c] for c in n.children), strategy, partitions) for n in walk(root)}
