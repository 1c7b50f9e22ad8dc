"""``slidewise explain``: the physical plan, the join orders, and the cost model's reasoning.

Shows for a planned query (:func:`slidewise.optimizer.planner.choose`): the
algorithm and why; the statistics used (declared, measured or the uniform
defaults); the global join order and every origin stream's probe order with
the access method per join direction (scan a window, probe a hash bucket,
the new tuples) and what each loop costs; bucket counts; the predicted cost
per time unit of the chosen plan and of the alternatives priced; the best
order of every per-tuple algorithm that could run the query, priced by the
same model (the operators whose ``compared`` fact ranks them for the
query's evaluation mode). Costs follow Golab & Özsu §4, §5 and App. A (see
:mod:`slidewise.optimizer.cost`); the unit is comparisons per time unit of
the timestamps.

:func:`explain_info` builds a JSON-ready dict (``--json``), :func:`render`
the text. A general query (a logical plan, Golab's thesis ch. 3) is explained by
:func:`plan_info` / :func:`render_plan`: the plan annotated with update
patterns, the state each operator keeps, and the rewritings priced. Both are pure functions of the plan, so the text is
snapshot-tested (``tests/fixtures/explain/``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from slidewise.errors import PlanError
from slidewise.optimizer.stats import DEFAULT_DISTINCT, DEFAULT_RATE
from slidewise.options import DEFAULTS

if TYPE_CHECKING:
    from collections.abc import Sequence

    from slidewise.optimizer.cost import CostModel, PlanCost
    from slidewise.optimizer.ordering import OrderSearch
    from slidewise.optimizer.rewrite import StatSpecs
    from slidewise.plan.logical import Node, Pattern, Plan
    from slidewise.plan.physical import PhysicalPlan
    from slidewise.plan.query import JoinQuery

__all__ = ["explain_info", "plan_info", "render", "render_plan"]

#: alternatives listed in full up to this many; beyond, the cheapest ones and the worst
MAX_ALTERNATIVES = 120
TEXT_ALTERNATIVES = 5


def fmt(x: float) -> str:
    """Numbers for people: thousands separators, three significant digits below 100."""
    if x is None:
        return "-"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    if x == 0:
        return "0"
    return f"{x:.3g}"


def _order_name(aliases: Sequence[str], order: Sequence[int]) -> str:
    return ",".join(aliases[i] for i in order)


def _evaluation(query: JoinQuery) -> str:
    if not query.slide:
        return "eager"
    return f"lazy every {query.slide} ({'restore' if query.restore else 'no-restore'})"


def _probes(model: CostModel, cost: PlanCost, aliases: Sequence[str]) -> dict:
    out = {}
    for origin, seq in cost.orders.items():
        front = cost.fronts.get(origin, 0)
        steps = model.steps(origin, seq, front)
        out[aliases[origin]] = {
            "cost": model.origin_cost(origin, seq, front),
            "probes_per_time_unit": model.multiplier(origin),
            "loops": [{"stream": aliases[s.stream], "access": s.access, "scanned": s.scanned, "partials": s.partials, "cost": s.cost} for s in steps],
        }
    return out


def _alternatives(search: OrderSearch, aliases: Sequence[str]) -> dict[str, float]:
    alts = search.alternatives
    if len(alts) > MAX_ALTERNATIVES:
        alts = alts[:20] + alts[-1:]
    return {_order_name(aliases, o): c for o, c in alts}


def _compare_algorithms(plan: PhysicalPlan) -> dict:
    """Best order and predicted cost of every applicable algorithm ranked by its ``compared`` fact."""
    from slidewise.operators.joins import by_rank, mode_of
    from slidewise.optimizer.cost import model_for
    from slidewise.optimizer.ordering import search

    query = plan.query
    assert plan.stats is not None  # called once the optimizer rules ran
    out = {}
    for cls in by_rank("compared", mode_of(query.slide)):
        try:
            cls.check(query)
        except PlanError:
            continue
        name = cls.name
        buckets = plan.buckets if name == plan.model_algorithm else plan.options.get("buckets")
        model = model_for(query, plan.stats, cls, buckets)
        found = search(model, plan.search_method if query.n <= 8 else "heuristic", cls.order_filter(query))
        out[name] = {"order": _order_name(query.aliases, found.order), "predicted_cost": found.cost.total, "buckets": model.buckets if model.hashed else None}
    return out


def explain_info(plan: PhysicalPlan) -> dict:
    """Everything ``explain`` shows, as a JSON-ready dict."""
    from slidewise.optimizer.cost import model_for

    q = plan.query
    aliases = q.aliases
    info: dict = {
        "query": q.describe(),
        "algorithm": plan.algorithm.name,
        "why": plan.reason,
        "evaluation": _evaluation(q),
        "key_columns": q.key_columns(),
        "join_order": [aliases[i] for i in plan.order],
        "orders": plan.orders(),
    }
    if plan.search is None:
        info.update({"predicted_cost": None, "alternatives": {}, "stats": None, "reasons": [plan.reason]})
        return info
    assert plan.stats is not None and plan.model_algorithm is not None  # the optimizer rules ran
    model = model_for(q, plan.stats, plan.model_algorithm, plan.buckets)
    search = plan.search
    stats = plan.stats
    reasons = [f"algorithm {plan.algorithm.name}: {plan.reason}"]
    if plan.model_algorithm != plan.algorithm.name:
        reasons.append(f"{plan.algorithm.name} has no per-tuple cost model; orders are priced with the {plan.model_algorithm} model")
    if stats.source == "default":
        reasons.append(
            f"no --stats: uniform defaults (rate {fmt(DEFAULT_RATE)}, {fmt(DEFAULT_DISTINCT)} distinct values per join attribute), so only window sizes differ"
        )
    reasons += [f"order: {s}" for s in search.steps] + plan.notes
    alts = search.alternatives
    if len(alts) > 1 and alts[0][1] > 0:
        reasons.append(f"cheapest {fmt(alts[0][1])}, most expensive priced {fmt(alts[-1][1])} ({alts[-1][1] / alts[0][1]:.1f}x)")
    info.update(
        {
            "model": {"algorithm": plan.model_algorithm, "kind": model.kind, "tau": q.slide, "unit": "comparisons per time unit"},
            "buckets": dict(zip(aliases, plan.buckets)) if plan.buckets is not None else None,
            "predicted_cost": search.cost.total,
            "per_origin": {aliases[i]: c for i, c in enumerate(search.cost.per_origin)},
            "probes": _probes(model, search.cost, aliases),
            "search": {"method": search.method, "considered": search.considered},
            "alternatives": _alternatives(search, aliases),
            "alternatives_priced": len(alts),
            "per_origin_alternatives": {aliases[i]: {_order_name(aliases, o): c for o, c in p[:5]} for i, p in search.per_origin.items()},
            "algorithms": _compare_algorithms(plan),
            "stats": {"source": stats.source, "streams": stats.as_dict()},
            "reasons": reasons,
        }
    )
    return info


def _stats_lines(info: dict, query: JoinQuery) -> list[str]:
    st = info["stats"]
    source = {"declared": "declared with --stats", "default": "uniform defaults (declare --stats)", "measured": "measured", "mixed": "mixed"}.get(
        st["source"], st["source"]
    )
    lines = [f"statistics   {source}", f"  {'stream':<8} {'rate':>8}  {'window':<20} {'tuples':>9}  distinct"]
    for ref in query.streams:
        s = st["streams"][ref.alias]
        distinct = ", ".join(f"{a}={fmt(v)}" for a, v in s["distinct"].items()) or "-"
        lines.append(f"  {ref.alias:<8} {fmt(s['rate']):>8}  {str(ref.window):<20} {fmt(s['tuples']):>9}  {distinct}")
    return lines


def render(info: dict, query: JoinQuery) -> str:
    """The text form of :func:`explain_info`."""
    lines = [f"query        {info['query']}", f"algorithm    {info['algorithm']}  ({info['why']})", f"evaluation   {info['evaluation']}"]
    keys = info["key_columns"]
    lines.append("join key     " + (", ".join(f"{a}.{k}" for a, k in zip(query.aliases, keys)) if keys else "none (predicates evaluated per combination)"))
    if info.get("predicted_cost") is None:
        for origin, order in info["orders"].items():
            lines.append(f"  new {origin:<8} probes {' -> '.join(order)}")
        return "\n".join(lines) + "\n"
    lines += _stats_lines(info, query)
    model = info["model"]
    lines.append(f"cost model   {model['algorithm']} ({model['kind']}" + (f", tau = {model['tau']}" if model["tau"] else "") + f"), {model['unit']}")
    if info["buckets"]:
        lines.append("buckets      " + ", ".join(f"{a} {b}" for a, b in info["buckets"].items()))
    order = "one per origin (below)" if model["kind"] == "general" else ", ".join(info["join_order"])
    lines.append(f"join order   {order}   predicted {fmt(info['predicted_cost'])} comparisons per time unit")
    lines.append("probes       per new tuple of each stream: loop by loop, tuples scanned x partial results")
    for origin, p in info["probes"].items():
        loops = []
        for loop in p["loops"]:
            if not loop["partials"] and not loop["cost"]:  # the outer loop: no comparisons
                outer = "" if loop["access"] == "new tuple" else f" ({loop['access']} {fmt(loop['scanned'])})"
                loops.append(loop["stream"] + outer)
            else:
                loops.append(f"{loop['stream']} {loop['access']} {fmt(loop['scanned'])} x {fmt(loop['partials'])}")
        lines.append(f"  new {origin:<8} {fmt(p['cost']):>9}  " + " | ".join(loops))
    search = info["search"]
    lines.append(f"search       {search['method']}, {search['considered']:,} orders priced")
    alts = list(info["alternatives"].items())
    if len(alts) > 1:
        lines.append(f"alternatives cheapest first ({info['alternatives_priced']:,} priced)")
        chosen = ",".join(info["join_order"])
        shown = alts[:TEXT_ALTERNATIVES]
        for rank, (order, cost) in enumerate(shown, 1):
            lines.append(f"  {rank:>3}  {order:<24} {fmt(cost):>12}" + ("  chosen" if order == chosen else ""))
        if len(alts) > TEXT_ALTERNATIVES:
            order, cost = alts[-1]
            lines.append(f"  ...  {order:<24} {fmt(cost):>12}  most expensive")
    if info["algorithms"]:
        lines.append("per-tuple algorithms, best order of each")
        for name, a in info["algorithms"].items():
            buckets = f"  buckets {','.join(map(str, a['buckets']))}" if a["buckets"] else ""
            lines.append(f"  {name:<14} {a['order']:<24} {fmt(a['predicted_cost']):>12}{buckets}")
    lines.append("why")
    lines += [f"  - {r}" for r in info["reasons"]]
    return "\n".join(lines) + "\n"


# --- general queries: annotated logical plans (Golab's thesis §3.5) ---------------------------------------

STATE_NOTES = {
    "nt": "NT: every expiration is a negative tuple; state in hash tables",
    "direct": "DIRECT: expiration by exp, state lists scanned for expired tuples",
    "upa": "UPA: FIFO for WKS, calendar queue for WK, negative tuples only where STR",
}


def _plan_node(node: Node, patterns: dict[Node, Pattern], strategy: str, partitions: int) -> dict:
    from slidewise.plan.patterns import rule_of, state_structure

    state = state_structure(node, tuple(patterns[c] for c in node.children), strategy, partitions)
    return {
        "label": node.label(),
        "pattern": str(patterns[node]),
        "rule": rule_of(node, patterns),
        "state": str(state),
        "children": [_plan_node(c, patterns, strategy, partitions) for c in node.children],
    }


def plan_info(plan: Plan, stats: StatSpecs = None, strategy: str = DEFAULTS.strategy, partitions: int = DEFAULTS.partitions, premature: float | None = None) -> dict:
    """Everything ``explain`` shows for a general query (a logical plan), as a JSON-ready dict.

    ``plan``: the chosen rewriting's tree, one node per operator with its
    output update pattern, the rule that gave it and the state it keeps under
    ``strategy``; ``pattern``: the plan's pattern (the edge into the output
    operator); ``alternatives``: every rewriting with its cost per time unit;
    ``chosen``: the cheapest one.
    """
    from slidewise.optimizer.rewrite import PREMATURE, algebra, choose_plan
    from slidewise.plan.patterns import annotate, plan_pattern

    premature = PREMATURE if premature is None else premature
    from slidewise.optimizer.join_aggregate import periodic

    chosen, report = choose_plan(plan, stats, strategy, premature, partitions)
    patterns = annotate(chosen.root)
    from slidewise.plan.frequent import FrequentQuery

    sliding = periodic(chosen)
    path = plan.describe() if isinstance(plan, FrequentQuery) else None if sliding is None else sliding.describe()
    return {
        "path": path,
        "query": " ".join((plan.text or chosen.root.text or "").split()),
        "strategy": strategy,
        "partitions": partitions,
        "pattern": str(plan_pattern(chosen)),
        "output": {"operator": chosen.root.label(), "pattern": str(patterns[chosen.root])},
        "written": algebra(plan.root),
        "plan": _plan_node(chosen.root, patterns, strategy, partitions),
        "alternatives": report["alternatives"],
        "chosen": report["chosen"],
        "premature": premature,
        "why": report["why"],
    }


def _tree_lines(node: dict, prefix: str, last: bool, out: list[str], top: bool = False) -> None:
    branch = "" if top else ("└─ " if last else "├─ ")
    out.append(f"  {prefix}{branch}{node['label']}  [{node['pattern']}]  {node['state']}  ({node['rule']})")
    below = prefix + ("" if top else ("   " if last else "│  "))
    for i, child in enumerate(node["children"]):
        _tree_lines(child, below, i == len(node["children"]) - 1, out)


def render_plan(info: dict) -> str:
    """The text form of :func:`plan_info`."""
    lines = []
    if info["query"]:
        lines.append(f"query        {info['query']}")
    lines += [
        f"strategy     {STATE_NOTES[info['strategy']]}" + (f" ({info['partitions']} partitions)" if info["strategy"] == "upa" else ""),
        f"pattern      {info['pattern']} (the answer); output {info['output']['operator']}: {info['output']['pattern']}",
        "plan         one operator per line: [output update pattern]  state kept  (rule, Golab's thesis §3.5.1)",
    ]
    if info["written"] != info["chosen"]:
        lines.insert(-1, f"rewritten    {info['chosen']}  (as written: {info['written']})")
    _tree_lines(info["plan"], "", True, lines, top=True)
    alts = info["alternatives"]
    if len(alts) > 1:
        lines.append(
            f"rewrites     tuples processed per time unit under {info['strategy'].upper()} (premature expirations of negation {info['premature']:.0%}), as written first"
        )
        width = max(len(a["plan"]) for a in alts)
        for a in alts:
            mark = "  chosen" if a["plan"] == info["chosen"] else ""
            lines.append(f"  {a['plan']:<{width}}  {fmt(a['cost']):>10}{mark}")
    lines.append(f"why          {info['why']}")
    if (info.get("path") or "").startswith("frequent items"):
        lines.append(f"path         {info['path']} (over the input above)")
    elif "arrivals, b=" in (info.get("path") or ""):  # [ROWS n SLIDE m]: the pane path or an error
        lines.append(f"path         {info['path']} (a float group key or MIN/MAX/SUM/AVG of text is an error here)")
    elif info.get("path"):
        lines.append(f"path         {info['path']} (the plan above runs instead if a group key is a float column or MIN/MAX/SUM/AVG reads text)")
    return "\n".join(lines) + "\n"
