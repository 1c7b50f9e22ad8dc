"""FREQUENT (Golab's thesis ch. 6, Algorithm 6) against a brute-force oracle of the window's true counts."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import slidewise
from slidewise.cql import parse_any
from slidewise.errors import QueryError
from slidewise.plan.frequent import FrequentQuery
from slidewise.runtime.frequent import FrequentRun
from slidewise.synopses.frequent import WindowCounters, summarize


def _run(q: FrequentQuery, ts, items, kind=None, chunk=7) -> pd.DataFrame:
    frames = []
    run = FrequentRun(q, lambda cols: frames.append(pd.DataFrame(cols)), kind=kind)
    ts, items = np.asarray(ts, np.int64), np.asarray(items)
    for i in range(0, len(ts), chunk):
        run.add(ts[i : i + chunk], {"a": items[i : i + chunk]})
    run.finish()
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["a", "frequency", "threshold", "guaranteed", "ts"])


def _windows(q: FrequentQuery, ts, items):
    """Oracle: (instant, the window's items, their sub-window ids) per evaluation that has tuples."""
    ts, items = np.asarray(ts, np.int64), np.asarray(items)
    s, D = q.sub_window, q.slide
    out = []
    if q.counting:
        n, N = len(ts), q.length
        for e in range(1, n // D + 1):
            lo = max(0, e * D - N)
            out.append((int(ts[e * D - 1]), items[lo : e * D], np.arange(lo, e * D) // s))
    else:
        T = q.length
        for k in range(-(-int(ts[0]) // D), -(-int(ts[-1]) // D) + 1):
            m = (ts > k * D - T) & (ts <= k * D)
            if m.any():
                out.append((k * D, items[m], -(-ts[m] // s)))
    return out


def _query(window: str, k: int, exact: bool = False) -> FrequentQuery:
    q = parse_any(f"SELECT RSTREAM FREQUENT(S.a, {k}{', exact => true' if exact else ''}) FROM S {window}")
    assert isinstance(q, FrequentQuery)
    return q


streams = st.integers(1, 120).flatmap(
    lambda n: st.tuples(st.lists(st.integers(0, 3), min_size=n, max_size=n).map(lambda d: np.cumsum(d).tolist()), st.lists(st.integers(0, 6), min_size=n, max_size=n))
)
windows = st.sampled_from(
    ["[ROWS 12 SLIDE 4]", "[ROWS 10 SLIDE 10]", "[ROWS 9 SLIDE 6]", "[RANGE 12 SLIDE 4]", "[RANGE 5 SLIDE 6]", "[RANGE 29 SLIDE 10]", "[RANGE 10 SLIDE 3]"]
)


@settings(max_examples=150, deadline=None)
@given(streams, windows, st.integers(1, 4), st.integers(1, 20))
def test_algorithm_6_guarantees(stream, window, k, chunk):
    ts, items = stream
    q = _query(window, k)
    if q.counting:  # distinct instants, so each evaluation's rows are known by their ts
        ts = list(range(len(ts)))
    got = _run(q, ts, items, chunk=chunk)
    expected = _windows(q, ts, items)
    assert sorted(set(got.ts)) == [w[0] for w in expected if len(w[1])]
    for instant, window_items, subs in expected:
        rows = got[got.ts == instant]
        true = Counter(window_items.tolist())
        delta, counters = 0, Counter()
        for sid in np.unique(subs):
            ranked = sorted(Counter(window_items[subs == sid].tolist()).items(), key=lambda vc: (-vc[1], vc[0]))
            delta += ranked[k - 1][1] if len(ranked) >= k else 0
            for item, n in ranked[:k]:  # the sub-window's top-k list (ties by item value)
                counters[item] += n
        assert (rows.threshold == delta).all()  # δ = Σ δᵢ
        for item, freq, guaranteed in zip(rows.a, rows.frequency, rows.guaranteed):
            assert freq <= true[item]  # a sum of some sub-windows' counts
            assert guaranteed == (freq > delta)
            if guaranteed:
                assert true[item] >= delta  # never a false positive
        # the answer: the items of the k largest global counters (ties at the k-th) and every one above δ,
        # each with its counter, the sum of its counts in the sub-windows' top-k lists
        best = sorted(counters.values(), reverse=True)
        kth = best[k - 1] if len(best) >= k else 0
        assert dict(zip(rows.a.tolist(), rows.frequency.tolist())) == {i: f for i, f in counters.items() if f >= kth or f > delta}
        assert len(rows) >= min(k, len(true))  # a sub-window lists k items, or all of its items if fewer


@settings(max_examples=100, deadline=None)
@given(streams, windows, st.integers(1, 20))
def test_exact_baseline_and_large_k(stream, window, chunk):
    ts, items = stream
    if _query(window, 2).counting:
        ts = list(range(len(ts)))
    exact = _run(_query(window, 2, exact=True), ts, items, chunk=chunk)
    for instant, window_items, _ in _windows(_query(window, 2), ts, items):
        true = Counter(window_items.tolist())
        rows = exact[exact.ts == instant]
        assert all(true[i] == f for i, f in zip(rows.a, rows.frequency))
    # with k at least the number of distinct items, Algorithm 6 is exact
    k = len(set(items))
    a6 = _run(_query(window, k), ts, items, chunk=chunk)
    ex = _run(_query(window, k, exact=True), ts, items, chunk=chunk + 3)
    pd.testing.assert_frame_equal(a6.reset_index(drop=True), ex.reset_index(drop=True))
    for instant, window_items, _ in _windows(_query(window, k), ts, items):
        assert sorted(a6[a6.ts == instant].a) == sorted(set(window_items.tolist()))


def test_misra_gries_variant_keeps_the_guarantee():
    rng = np.random.default_rng(3)
    ts = np.sort(rng.integers(0, 3000, 4000))
    items = rng.zipf(1.3, 4000) % 40
    q = _query("[RANGE 1000 SLIDE 100]", 3)
    got = _run(q, ts, items, kind="misra-gries", chunk=500)
    a6 = _run(q, ts, items, chunk=500)
    for instant, window_items, _ in _windows(q, ts, items):
        true = Counter(window_items.tolist())
        rows = got[got.ts == instant]
        assert all(f <= true[i] for i, f in zip(rows.a, rows.frequency))
        assert all(true[i] > d for i, d, g in zip(rows.a, rows.threshold, rows.guaranteed) if g)
        # its counters are the top-k counts minus c(k+1): never above Algorithm 6's sums
        best = dict(zip(a6[a6.ts == instant].a, a6[a6.ts == instant].frequency))
        assert all(f <= best.get(i, f) for i, f in zip(rows.a, rows.frequency))


def test_summaries_and_counters():
    sm = summarize(np.array([1, 1, 1, 1, 2, 2, 2]), np.array([5, 5, 7, 8, 9, 9, 3]), 2)
    assert sm.ids.tolist() == [1, 2] and sm.delta.tolist() == [1, 1]
    assert sm.items.tolist() == [5, 7, 9, 3] and sm.counts.tolist() == [2, 1, 2, 1]
    w = WindowCounters(2)
    w.extend(sm.before(1))
    w.extend(sm.after(1))
    held = w.summaries()
    assert held.ids.tolist() == [1, 2] and held.sizes.tolist() == [2, 2] and held.after(1).items.tolist() == [9, 3]
    ans = w.answer()
    assert ans.items.tolist() == [5, 9] and ans.threshold == 2 and ans.guaranteed.tolist() == [False, False]
    w.expire(2)
    assert w.answer().items.tolist() == [9, 3] and w.delta == 1


@given(st.lists(st.integers(0, 6), min_size=1, max_size=60), st.integers(1, 8), st.integers(1, 5), st.integers(0, 4))
def test_top_k_of_a_ranked_summary_is_the_top_k_summary(values, size, k, more):
    """One ranked summary (exact, or top-k' with k' ≥ k) gives every smaller k's top-k lists and δᵢ; the
    counters fed in pieces equal the counters fed at once."""
    sub, vals = np.arange(len(values)) // size, np.array(values)
    want = summarize(sub, vals, k)
    for ranked in (summarize(sub, vals, k + more, "exact"), summarize(sub, vals, k + more)):
        got = ranked.top(k)
        for f in ("ids", "delta", "starts", "items", "counts"):
            assert getattr(got, f).tolist() == getattr(want, f).tolist(), f
    whole, pieces = WindowCounters(k), WindowCounters(k)
    whole.extend(want)
    cut = len(want.ids) // 2
    pieces.extend(want.before(cut))
    pieces.extend(want.after(cut))
    a, b = whole.answer(), pieces.answer()
    assert a.items.tolist() == b.items.tolist() and a.frequency.tolist() == b.frequency.tolist() and a.threshold == b.threshold


def test_query_runs_and_text_items():
    df = pd.DataFrame({"ts": [1, 2, 3, 4, 5, 6], "src": ["a", "b", "a", "c", "a", "b"], "x": [1, 1, 1, 0, 1, 1]})
    r = slidewise.run("SELECT RSTREAM FREQUENT(S.src, 1) FROM S [ROWS 4 SLIDE 2] WHERE S.x = 1", {"S": df})
    assert list(r.results.columns) == ["src", "frequency", "threshold", "guaranteed", "ts", "sign"]
    assert r.results[r.results.ts == 6].src.tolist() == ["a"]
    assert r.stats["path"].startswith("frequent items: top-1 lists")
    q = parse_any("SELECT RSTREAM FREQUENT(S.a, 5) FROM S [RANGE 600 s SLIDE 10 s]")
    assert (q.sub_window, q.sub_windows) == (10_000, 60)


@pytest.mark.parametrize(
    "query, message",
    [
        ("SELECT RSTREAM FREQUENT(S.a, 2) FROM S [RANGE 10]", "FREQUENT needs a SLIDE"),
        ("SELECT ISTREAM FREQUENT(S.a, 2) FROM S [RANGE 10 SLIDE 2]", "FREQUENT answers with RSTREAM, not ISTREAM"),
        ("SELECT RSTREAM FREQUENT(S.a, 0) FROM S [RANGE 10 SLIDE 2]", "FREQUENT's k must be a whole number of at least 1"),
        ("SELECT RSTREAM FREQUENT(S.a, 2), S.b FROM S [RANGE 10 SLIDE 2]", "FREQUENT(...) must be the whole select list"),
        ("SELECT RSTREAM FREQUENT(S.a, 2, fast => true) FROM S [RANGE 10 SLIDE 2]", "unknown FREQUENT option fast"),
        (
            "SELECT RSTREAM FREQUENT(S.a, 2) FROM S [RANGE 10 SLIDE 2], R [RANGE 10 SLIDE 2] WHERE S.a = R.a",
            "this input is weak non-monotonic (tuples expire out of arrival order): Algorithm 6 (Golab's thesis ch. 6) drops whole sub-windows in FIFO order",
        ),
        ("SELECT RSTREAM FREQUENT(S.a, 2) FROM S [PARTITION BY b ROWS 10]", "FREQUENT needs a sliding time or count window"),
        ("SELECT RSTREAM ABS(S.a, exact => true) FROM S [RANGE 10 SLIDE 2]", "ABS takes no named arguments"),
    ],
)
def test_refusals(query, message):
    with pytest.raises(QueryError) as e:
        parse_any(query)
    assert message in str(e.value)


def test_explain_shows_the_sub_windows():
    from slidewise.optimizer.explain import plan_info, render_plan

    info = plan_info(parse_any("SELECT RSTREAM FREQUENT(S.a, 5) FROM S [ROWS 10000 SLIDE 100]"), None, "upa", 10)
    assert info["path"] == "frequent items: top-5 lists (Golab's thesis Algorithm 6), sub-window s=100 tuples, b=100"
    assert "path         frequent items" in render_plan(info)
