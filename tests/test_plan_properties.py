"""Property tests of general plans (Golab's thesis ch. 3).

* the executor under every strategy (NT, DIRECT, UPA) emits exactly the
  oracle's output (tests/oracle_plans.py) for random plans, and the three
  strategies agree with each other (skipped until ``slidewise.runtime.plan_engine``
  exists);
* the oracle is self-consistent (output kinds reconstruct the answers,
  restore ⊇ no-restore) and agrees with the join oracle (tests/oracle.py) on
  plain window joins.
"""

from collections import Counter

import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from slidewise.model.batch import Tup
from slidewise.plan.logical import Join, Output, Plan, walk
from slidewise.plan.query import WindowSpec, eval_time
from slidewise.runtime.plan_engine import execute_plan
from tests.oracle import oracle as join_oracle
from tests.oracle_plans import PlanOracle, expected_output
from tests.plan_cases import ALIASES, c, frame, plan, plan_cases, rng, stream, stream_frames
from tests.streams import common_key, query_of

STRATEGIES = ("nt", "direct", "upa")


def with_output(p: Plan, kind: str, *, restore: bool = False, slide: int | None = None, window=None) -> Plan:
    return Plan(Output(p.root.child, kind, restore, slide, window), p.aliases)


def by_instant(rows: Counter) -> dict[int, Counter]:
    out: dict[int, Counter] = {}
    for (ts, vals, sign), m in rows.items():
        out.setdefault(ts, Counter())[(vals, sign)] += m
    return out


def describe(p: Plan, streams, tables) -> str:
    lines = [n.label() for n in walk(p.root)]
    lines += [f"{k}: {df.to_records(index=False).tolist()}" for k, df in streams.items()]
    lines += [f"{k}: {df.to_records(index=False).tolist()}" for k, df in (tables or {}).items()]
    return "\n".join(lines)


# ---- executor vs oracle ----------------------------------------------------------------


def run(p: Plan, streams, tables, strategy: str, span: int = 1, options: dict | None = None) -> Counter:
    res = execute_plan(p, streams, tables, strategy=strategy, collect=True, span=span, options=options).results
    got: Counter = Counter()
    if res is None or len(res) == 0:
        return got
    cols = list(p.root.schema)
    for vals, ts, sign in zip(res[cols].itertuples(index=False, name=None), res["ts"], res["sign"]):
        got[(int(ts), tuple(v.item() if hasattr(v, "item") else v for v in vals), int(sign))] += 1
    return got


@pytest.mark.parametrize("strategy", STRATEGIES)
@given(case=plan_cases(), span=st.sampled_from([1, 2, 5, 64]))
def test_executor_matches_the_oracle(strategy, case, span):
    """Per instant (span 1) and in spans of several instants per pass (runtime.plan_driver)."""
    p, streams, tables = case
    note(describe(p, streams, tables))
    expected = expected_output(p, streams, tables)
    got = run(p, streams, tables, strategy, span)
    # A ROWS window cutting rows inserted at one instant (PlanOracle.order_sensitive) relies on the
    # shared convention that such rows enter in value order (oracle_plans.order_key).
    assert got == expected, f"missing {expected - got}, extra {got - expected}"


@given(case=plan_cases())
def test_strategies_agree(case):
    p, streams, tables = case
    note(describe(p, streams, tables))
    outputs = [run(p, streams, tables, s, span) for s in STRATEGIES for span in (1, 4)]
    assert all(o == outputs[0] for o in outputs)


# ---- oracle self-consistency ---------------------------------------------------------------


@given(case=plan_cases())
def test_eager_rstream_reconstructs_the_answers(case):
    p, streams, tables = case
    o = PlanOracle(with_output(p, "rstream"), streams, tables)
    changes = by_instant(o.expected_output())
    if o.first is None:
        return
    view: Counter = Counter()
    for tau in range(o.first, o.last + 1):
        for (vals, sign), m in changes.get(tau, Counter()).items():
            view[vals] += sign * m
        assert +view == o.answer_at(p.root.child, tau) and all(v >= 0 for v in view.values())


@given(case=plan_cases())
def test_eager_rstream_is_istream_plus_dstream(case):
    p, streams, tables = case
    ist = expected_output(with_output(p, "istream"), streams, tables)
    dst = expected_output(with_output(p, "dstream"), streams, tables)
    assert expected_output(with_output(p, "rstream"), streams, tables) == ist + dst
    assert all(sign == 1 for _, _, sign in ist) and all(sign == -1 for _, _, sign in dst)


@given(case=plan_cases(), slide=st.integers(1, 6))
def test_periodic_outputs(case, slide):
    p, streams, tables = case
    o = PlanOracle(with_output(p, "rstream", slide=slide), streams, tables)
    rstream = by_instant(o.expected_output())
    for tau, answer in o.answers().items():  # RSTREAM: the whole answer at each evaluation
        assert Counter({v: m for (v, _), m in rstream.get(tau, Counter()).items()}) == answer
    restore = by_instant(expected_output(with_output(p, "istream", restore=True, slide=slide), streams, tables))
    plain = by_instant(expected_output(with_output(p, "istream", slide=slide), streams, tables))
    eager = expected_output(with_output(p, "istream"), streams, tables)
    for tau, rows in plain.items():  # restore ⊇ no-restore
        assert not rows - restore.get(tau, Counter())
    for tau in o.answers():  # restore = what continuous evaluation inserted since the last evaluation
        if tau <= o.last:
            since = Counter()
            for (t, v, s), m in eager.items():
                if tau - slide < t <= tau:
                    since[(v, s)] += m
            assert restore.get(tau, Counter()) == since
    rr = by_instant(expected_output(with_output(p, "rstream", restore=True, slide=slide), streams, tables))
    for tau, rows in rstream.items():
        assert not rows - rr.get(tau, Counter())


@given(case=plan_cases(shapes=("spj", "project", "aggregate")))
def test_internal_windows_never_delete(case):
    p, streams, tables = case
    scans = p.scans()
    if not all(s.window.internal for s in scans if not s.is_relation) or any(s.kind == "table" for s in scans):
        return
    assert not expected_output(with_output(p, "dstream"), streams, tables)


# ---- agreement with the join oracle (tests/oracle.py) -------------------------------------------


def tups_of(streams: dict, names) -> list[Tup]:
    raw = [(i, int(ts), int(a), int(b), k) for i, n in enumerate(names) for k, (ts, a, b) in enumerate(streams[n][["ts", "a", "b"]].itertuples(index=False, name=None))]
    raw.sort(key=lambda r: (r[1], r[0], r[4]))
    return [Tup(s, pos, ts, 1, {"a": a, "b": b, "x": 0}) for pos, (s, ts, a, b, _) in enumerate(raw)]


@given(
    n=st.integers(1, 3),
    sizes=st.lists(st.integers(0, 6), min_size=3, max_size=3),
    slide=st.sampled_from([None, 2, 3]),
    restore=st.booleans(),
    streams=stream_frames(max_len=6),
)
def test_plain_window_joins_agree_with_the_join_oracle(n, sizes, slide, restore, streams):
    """ISTREAM of a time-window join: every result once, at its origin (or the next evaluation)."""
    names = ALIASES[:n]
    windows = [WindowSpec("range", sizes[i], slide=slide) for i in range(n)]
    scans = tuple(stream(a, w) for a, w in zip(names, windows))
    eqs = tuple((c(names[i], "a"), c(names[i + 1], "a")) for i in range(n - 1))
    p = plan(scans[0] if n == 1 else Join(scans, eqs), "istream", restore=restore, slide=slide)
    tuples = tups_of(streams, names)
    expected: Counter = Counter()
    for (members, ts, _, sign), m in join_oracle(query_of(windows, common_key(n)), tuples, restore=restore).items():
        vals = tuple(v for pos in members for t in [tuples[pos]] for v in (t.ts, t.vals["a"], t.vals["b"]))
        expected[(eval_time(ts, slide) if slide else ts, vals, sign)] += m
    assert expected_output(p, streams) == expected


def test_join_oracle_agreement_example():
    streams = {"S1": frame([(0, 1, 0)]), "S2": frame([(2, 1, 1)])}
    p = plan(Join((stream("S1", rng(3)), stream("S2", rng(3))), ((c("S1", "a"), c("S2", "a")),)))
    assert expected_output(p, streams) == Counter({(2, (0, 1, 0, 2, 1, 1), 1): 1})
