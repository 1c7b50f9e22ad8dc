"""Builders and hypothesis strategies for random small general plans (Golab's thesis ch. 3).

Plans are built directly from :mod:`slidewise.plan.logical` nodes, already
bound (every :class:`Scan` has ``columns``). Streams ``S1``..``S3`` have
attributes ``a`` (join / group attribute, values 0..2) and ``b`` (0..3); the
table ``R`` has key ``a`` and value ``c``. Every plan uses the alias tuple
:data:`ALIASES`, so ``Col.stream`` indices are fixed.
"""

from __future__ import annotations

import pandas as pd
from hypothesis import strategies as st

from slidewise.plan.expr import BinOp, Cmp, Col, Func, Like, Lit
from slidewise.plan.logical import AggCall, Aggregate, Distinct, Join, Negation, Output, Plan, Project, Scan, Select, Subquery, Union
from slidewise.plan.query import SelectItem, WindowSpec

ALIASES = ("S1", "S2", "S3", "R", "X")
STREAM_COLUMNS = ("a", "b")
TABLE_COLUMNS = ("a", "c")


# ---- builders -------------------------------------------------------------------


def c(alias: str, attr: str) -> Col:
    """Column ``alias.attr``."""
    return Col(ALIASES.index(alias), attr, alias)


def named(name: str) -> Col:
    """A column by its output name (aggregate or alias), e.g. ``named("n")``."""
    return Col(-1, name, "")


def item(expr, alias: str | None = None) -> SelectItem:
    return SelectItem(expr, alias)


def star(alias: str) -> SelectItem:
    return SelectItem(Col(ALIASES.index(alias), "*", alias))


def rng(size: int, slide: int | None = None, internal: bool = False) -> WindowSpec:
    return WindowSpec("range", size, slide=slide, internal=internal)


def rows(size: int, partition_by: str | None = None, internal: bool = False) -> WindowSpec:
    return WindowSpec("rows", size, partition_by=partition_by, internal=internal)


def stream(alias: str, window: WindowSpec, source: str | None = None) -> Scan:
    return Scan(alias, source or alias, window, "stream", STREAM_COLUMNS)


def table(kind: str = "nrr", alias: str = "R") -> Scan:
    return Scan(alias, "R", None, kind, TABLE_COLUMNS)


def eq(left: tuple[str, str], right: tuple[str, str]) -> tuple[Col, Col]:
    return (c(*left), c(*right))


def plan(child, kind: str = "istream", *, restore: bool = False, slide: int | None = None, window: WindowSpec | None = None) -> Plan:
    return Plan(Output(child, kind, restore, slide, window), ALIASES)


def frame(tuples: list[tuple[int, int, int]]) -> pd.DataFrame:
    """A stream: ``(ts, a, b)`` rows in input order."""
    return pd.DataFrame(tuples, columns=["ts", "a", "b"]).astype("int64")


def table_frame(updates: list[tuple[int, str, int, int]]) -> pd.DataFrame:
    """Table updates: ``(ts, op, a, c)`` rows."""
    df = pd.DataFrame(updates, columns=["ts", "op", "a", "c"])
    return df.astype({"ts": "int64", "a": "int64", "c": "int64"})


# ---- strategies ------------------------------------------------------------------


@st.composite
def windows(draw, slide: int | None = None, internal: bool = False) -> WindowSpec:
    kind = draw(st.sampled_from(["range", "range", "rows", "rows", "now", "unbounded"]))
    if kind == "range":
        return rng(draw(st.integers(1, 6)), slide, internal)
    if kind == "rows":
        return rows(draw(st.integers(1, 6)), draw(st.sampled_from([None, None, "b"])), internal)
    return WindowSpec(kind, 0, internal=internal)


@st.composite
def stream_frames(draw, names=("S1", "S2", "S3"), max_len: int = 8) -> dict[str, pd.DataFrame]:
    """Sorted small streams: ts 0..30 with ties and bursts, some empty."""
    out = {}
    for name in names:
        n = draw(st.sampled_from([max_len, 2, max_len // 2 + 1, 1, 0, max_len - 1]))
        ts, tuples = draw(st.integers(0, 4)), []
        for _ in range(n):
            ts = min(30, ts + draw(st.sampled_from([0, 0, 1, 1, 2, 3, 5])))
            tuples.append((ts, draw(st.integers(0, 2)), draw(st.integers(0, 3))))
        out[name] = frame(tuples)
    return out


@st.composite
def table_updates(draw, kind: str = "nrr", max_len: int = 6) -> pd.DataFrame:
    """A valid update list: inserts of absent keys (NRR: never reused), deletes of live keys."""
    live: set[int] = set()
    dead: set[int] = set()
    ts, ups = 0, []
    for _ in range(draw(st.integers(0, max_len))):
        ts += draw(st.sampled_from([0, 1, 2, 4]))
        free = [k for k in range(3) if k not in live and (kind == "table" or k not in dead)]
        if live and (not free or draw(st.booleans())):
            key = draw(st.sampled_from(sorted(live)))
            live.discard(key)
            dead.add(key)
            ups.append((ts, "-", key, 0))
        elif free:
            key = draw(st.sampled_from(free))
            live.add(key)
            ups.append((ts, "+", key, draw(st.integers(0, 9))))
    return table_frame(ups)


@st.composite
def spj(draw, n: int, slide: int | None, relation: str | None, internal: bool = False):
    """Join of ``n`` windowed streams on ``a`` (plus optionally R), maybe a selection."""
    names = ALIASES[:n]
    scans = [stream(a, draw(windows(slide, internal)), source="S1" if a == "S2" and draw(st.integers(0, 5)) == 0 else None) for a in names]
    eqs = [eq((names[i], "a"), (names[i + 1], "a")) for i in range(n - 1)]
    inputs = list(scans)
    if relation:
        inputs.append(table(relation))
        eqs.append(eq((names[-1], "a"), ("R", "a")))
    node = inputs[0] if len(inputs) == 1 else Join(tuple(inputs), tuple(eqs))
    pred = draw(st.sampled_from([None, None, "b>0", "b!=b", "b<=a", "like", "case", "coalesce"]))
    if pred == "b>0":
        node = Select(node, Cmp(">", c(names[0], "b"), Lit(0)))
    elif pred == "b!=b" and n > 1:
        node = Select(node, Cmp("!=", c(names[0], "b"), c(names[1], "b")))
    elif pred == "b<=a":
        node = Select(node, Cmp("<=", c(names[-1], "b"), BinOp("+", c(names[0], "a"), Lit(1))))
    elif pred == "like":  # CAST(S1.b AS TEXT) LIKE '1%' (or '_', '%2', '0')
        node = Select(node, Like(text(c(names[0], "b")), draw(st.sampled_from(["1%", "_", "%2", "0"]))))
    elif pred == "case":  # CASE WHEN S1.b > 1 THEN S1.a WHEN S1.b = 0 THEN 2 ELSE 0 END > 0
        node = Select(node, Cmp(">", case_of(names[0]), Lit(0)))
    elif pred == "coalesce":
        node = Select(node, Cmp(">=", Func("coalesce", (c(names[-1], "b"), Lit(9))), c(names[0], "a")))
    return node


def text(expr) -> Func:
    """``CAST(expr AS TEXT)``."""
    return Func("cast", (expr, Lit("str")))


def case_of(alias: str) -> Func:
    """``CASE WHEN alias.b > 1 THEN alias.a WHEN alias.b = 0 THEN 2 ELSE 0 END``."""
    b = c(alias, "b")
    return Func("case", (Cmp(">", b, Lit(1)), c(alias, "a"), Cmp("=", b, Lit(0)), Lit(2), Lit(0)))


@st.composite
def aggregates(draw, alias: str):
    arg = c(alias, "b")
    choices = [
        AggCall("count", None, alias="n"),
        AggCall("count", arg, alias="nb"),
        AggCall("sum", arg, alias="s"),
        AggCall("min", arg, alias="lo"),
        AggCall("max", arg, alias="hi"),
        AggCall("avg", arg, alias="mean"),
        AggCall("count", arg, distinct=True, alias="nd"),
    ]
    picked = draw(st.lists(st.sampled_from(choices), min_size=1, max_size=3, unique_by=lambda a: a.alias))
    return tuple(picked)


@st.composite
def plan_cases(draw, shapes=("spj", "project", "distinct", "anti", "except", "aggregate", "union", "subquery"), max_len: int = 8):
    """A random ``(plan, streams, tables)`` triple; see the module docstring."""
    shape = draw(st.sampled_from(shapes))
    slide = draw(st.sampled_from([None, None, None, 2, 3, 5]))
    relation = draw(st.sampled_from([None, None, None, "nrr", "table"])) if shape != "union" else None
    internal = shape in ("spj", "project", "aggregate") and draw(st.integers(0, 5)) == 0
    n = draw(st.integers(1, 2 if shape in ("anti", "except", "union") else 3))
    base = draw(spj(n, slide, relation, internal)) if shape != "subquery" else None
    right_scan = stream("S3", draw(windows(slide)))
    if shape == "project":
        items = draw(
            st.sampled_from(
                [
                    (item(c("S1", "a")),),
                    (star("S1"),),
                    (item(c("S1", "b")), item(BinOp("*", c("S1", "a"), Lit(2)), "a2")),
                    (item(case_of("S1"), "k"), item(Func("coalesce", (c("S1", "b"), Lit(0))), "cb")),
                    (item(Func("upper", (Func("substr", (text(BinOp("+", c("S1", "b"), Lit(10))), Lit(2))),)), "t"),),
                ]
            )
        )
        base = Project(base, items)
    elif shape == "distinct":
        cols = draw(st.sampled_from([("S1", "a"), ("S1", "b")]))
        base = Distinct(Project(base, (item(c(*cols)),) + ((item(c("S1", "a"), "k"),) if n > 1 else ())))
    elif shape == "anti":
        right = right_scan if draw(st.booleans()) else Select(right_scan, Cmp(">", c("S3", "b"), Lit(0)))
        base = Negation(base, right, (eq(("S1", "a"), ("S3", "a")),), "anti")
    elif shape == "except":
        base = Negation(Project(base, (item(c("S1", "a")),)), Project(right_scan, (item(c("S3", "a")),)), mode="except")
    elif shape == "aggregate":
        keys = draw(st.sampled_from([(), (item(c("S1", "a")),)]))
        aggs = draw(aggregates("S1"))
        base = Aggregate(base, keys, aggs)
        if draw(st.booleans()):  # HAVING: a selection over the groups' rows
            base = Select(base, Cmp(">", named(aggs[0].alias), Lit(1)))
    elif shape == "subquery":  # a window over a monotonic subquery's output (§3.3.2, §3.4)
        inner = draw(spj(n, None, relation, internal=True))
        inner = draw(
            st.sampled_from([Project(inner, (item(c("S1", "a")), item(c("S1", "b")))), Aggregate(inner, (item(c("S1", "a")),), (AggCall("count", None, alias="b"),))])
        )
        sub = Subquery("X", inner, draw(st.sampled_from([rows(1), rows(3), rows(2, "a"), rng(0), rng(3)])))
        base = draw(st.sampled_from([Aggregate(sub, (item(c("X", "a")),), (AggCall("sum", c("X", "b"), alias="s"),)), Select(sub, Cmp(">", c("X", "b"), Lit(0))), sub]))
    elif shape == "union":
        base = Union((Project(base, (item(c("S1", "a")), item(c("S1", "b")))), Project(right_scan, (item(c("S3", "a")), item(c("S3", "b"))))))
    kind = draw(st.sampled_from(["istream", "dstream", "rstream", "wstream"]))
    restore = slide is not None and kind in ("istream", "rstream") and draw(st.booleans())
    out_window = None
    if kind == "wstream":
        out_window = draw(st.sampled_from([rows(1), rows(2), rows(4), rng(0), rng(2), rng(5)]))
    streams = draw(stream_frames(max_len=max_len))
    tables = {"R": draw(table_updates(relation))} if relation else None
    return plan(base, kind, restore=restore, slide=slide, window=out_window), streams, tables


def windowed_subquery_plan(inner_window: WindowSpec, outer_window: WindowSpec, kind: str = "rstream") -> Plan:
    """``SELECT SUM(X.s) FROM (SELECT SUM(S1.b) AS s FROM S1 [inner]) [outer] AS X`` (§3.4)."""
    inner = Aggregate(stream("S1", inner_window), (), (AggCall("sum", c("S1", "b"), alias="s"),))
    return plan(Aggregate(Subquery("X", inner, outer_window), (), (AggCall("sum", c("X", "s"), alias="total"),)), kind)
