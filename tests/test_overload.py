"""Load shedding and window sampling in the engine (Kang et al. §5.2): exact against the oracle, counted."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import slidewise
from slidewise.cli import main
from slidewise.errors import OptionError
from slidewise.optimizer.planner import choose
from slidewise.runtime.generate import generate
from slidewise.runtime.overload import OverloadController, OverloadOptions, RunHooks, key_selectivity, make_hooks, uniform
from tests.oracle import oracle
from tests.streams import chunks, join_cases


def _drive(query, tuples, options, chunk_size, algorithm=None):
    """Run an operator through the hooks the engine uses; return (results, controller)."""
    op = choose(query, algorithm).build()
    ctl = OverloadController(query, options)
    hooks = RunHooks(ctl)
    got: Counter = Counter()
    for chunk in chunks(query.n, tuples, chunk_size):
        got.update(hooks.process(op, chunk).keys())
    got.update(hooks.finish(op).keys())
    return got, ctl


def _flag(ctl, t, salt, table) -> bool:
    return bool(ctl._flags(np.array([t.pos]), t.stream, salt, table)[0])


def _expected(ctl, query, tuples):
    """The oracle's answer for what the controller decided: kept arrivals, probes and window samples."""
    keep = {t.pos: _flag(ctl, t, ctl.salt_keep, ctl.cp_keep) for t in tuples}
    store = {t.pos: _flag(ctl, t, ctl.salt_store, ctl.cp_sample) for t in tuples}
    fed = [t for t in tuples if keep[t.pos]] if ctl.opt.shed == "drop" else tuples
    want: Counter = Counter()
    for key, count in oracle(query, fed).items():
        members = key[0]
        origin = max(members)
        if ctl.opt.shed == "probe" and not keep[origin]:
            continue
        if all(store[p] for p in members if p != origin):
            want[key] += count
    return want, keep


budgets = st.fixed_dictionaries(
    {
        "cpu_budget": st.sampled_from([None, 0.2, 0.5, 0.9]),
        "memory_budget": st.sampled_from([None, 1.0, 3.0, 6.0]),
        "min_share": st.sampled_from([0.0, 0.1]),
        "shed": st.sampled_from(["drop", "probe"]),
        "seed": st.integers(0, 3),
        "cpu": st.sampled_from(["optimal", "equal", "max:S1"]),
    }
)


@settings(max_examples=60)
@given(join_cases(2, 3, predicates=("common", "theta"), max_len=20), budgets, st.integers(1, 8))
def test_shedding_and_sampling_equal_the_oracle_on_what_was_kept(case, opts, chunk_size):
    query, tuples = case
    options = OverloadOptions(speed=1.0, **opts)
    got, ctl = _drive(query, tuples, options, chunk_size)
    want, keep = _expected(ctl, query, tuples)
    assert got == want
    arrived = Counter(t.stream for t in tuples)
    kept = Counter(t.stream for t in tuples if keep[t.pos])
    for i in range(query.n):
        assert ctl.arrived[i] == arrived[i]
        assert ctl.kept[i] == kept[i] and ctl.kept[i] + ctl.shed[i] == arrived[i]
    assert ctl.produced == sum(c for k, c in got.items() if k[3] > 0)


def test_uniform_hash_is_seeded_and_uniform():
    pos = np.arange(200_000)
    u = uniform(pos, 1)
    assert np.array_equal(u, uniform(pos, 1)) and not np.array_equal(u, uniform(pos, 2))
    assert 0 <= u.min() and u.max() < 1 and abs(u.mean() - 0.5) < 0.005
    assert abs((u < 0.3).mean() - 0.3) < 0.005
    # the same position gets the same number whatever the chunking
    assert np.array_equal(uniform(pos[5:9], 1), u[5:9])


def test_key_selectivity_estimates_one_over_distinct():
    s = generate([1, 1], [50, 50], 40_000, seed=3)
    from slidewise.model.batch import StreamBatch

    batches = [StreamBatch(i, np.arange(len(x["ts"])), x["ts"], {"a": x["a"]}) for i, x in enumerate(s)]
    assert key_selectivity(batches, ("a", "a")) == pytest.approx(1 / 50, rel=0.05)


FIG5_QUERY = "SELECT * FROM A [ROWS 100], B [ROWS 200] WHERE A.a = B.a"


def _fig5_sources(n=20_000):
    s = generate([800, 200], [100, 100], n, seed=1)
    return {"A": s[0], "B": s[1]}


def test_fig5_probe_mode_output_rate_follows_the_model():
    src = _fig5_sources()
    rates = {}
    for cpu in ("optimal", "equal"):
        r = slidewise.run(FIG5_QUERY, src, collect=False, overload=OverloadOptions(cpu_budget=100, speed=1000, shed="probe", cpu=cpu))
        sh = r.stats["shedding"]
        assert sh["predicted_output_rate"] == pytest.approx({"optimal": 200, "equal": 150}[cpu], rel=0.02)
        assert sh["measured_output_rate"] == pytest.approx(sh["predicted_output_rate"], rel=0.1)
        assert sh["predicted_exact_rate"] == pytest.approx(1800, rel=0.02)
        assert sh["results"] == r.stats["results"]
        assert sh["exact_results"] == slidewise.run(FIG5_QUERY, src, collect=False).stats["results"]
        assert sum(sh["kept"].values()) + sum(sh["shed"].values()) == sum(r.stats["inputs"].values())
        rates[cpu] = sh["measured_output_rate"]
    assert rates["optimal"] > rates["equal"]


def test_measured_service_rate_detects_overload():
    """No budget: μ comes from the operator's time per chunk (a fake clock: 2 ms per tuple fed)."""
    src = _fig5_sources(4_000)
    from slidewise.cql import load_query
    from slidewise.runtime.reorder import merge_all
    from slidewise.runtime.sources import open_source

    q = load_query(FIG5_QUERY)
    opened = [open_source(r.source, src[r.source], chunk_rows=500) for r in q.streams]
    op = choose(q).build()
    now = [0.0]
    process = op.process

    def timed(chunk):
        now[0] += sum(len(b) for b in chunk) / 500
        return process(chunk)

    op.process = timed
    hooks = RunHooks(OverloadController(q, OverloadOptions(speed=1000)), clock=lambda: now[0])
    for chunk in merge_all(opened, 0, None, 500):
        hooks.process(op, chunk)
    sh = hooks.stats()["shedding"]
    # μ = 500 tuples/s against ~1000/s arriving
    assert sh["service_rate_measured"] == pytest.approx(500)
    assert sh["overloaded_chunks"] == sh["chunks"] - 1  # the first chunk had no measurement yet
    assert 0 < sum(sh["shed"].values()) < sum(sh["arrived"].values())


def test_no_options_means_no_hooks():
    from slidewise.cql import load_query

    q = load_query(FIG5_QUERY)
    assert make_hooks(q) is None
    assert make_hooks(q, overload=OverloadOptions()) is None
    r = slidewise.run(FIG5_QUERY, _fig5_sources(2000))
    assert "shedding" not in r.stats and "replans" not in r.stats


def test_bad_options():
    with pytest.raises(OptionError, match="cpu-budget"):
        slidewise.run(FIG5_QUERY, _fig5_sources(100), overload=OverloadOptions(cpu_budget=-1))
    with pytest.raises(OptionError, match="min-share"):
        slidewise.run(FIG5_QUERY, _fig5_sources(100), overload=OverloadOptions(cpu_budget=1, min_share=0.7))


def test_cli_shedding_stats_and_rejects(tmp_path):
    src = _fig5_sources(5000)
    for name, cols in src.items():
        pd.DataFrame(cols).to_csv(tmp_path / f"{name}.csv", index=False)
    stats, rejects = tmp_path / "stats.json", tmp_path / "rejects.csv"
    run = ["run", FIG5_QUERY, "--source", f"A={tmp_path / 'A.csv'}", "--source", f"B={tmp_path / 'B.csv'}", "--stats-json", str(stats)]
    code = main(
        [
            *run,
            "--out",
            str(tmp_path / "r.csv"),
            "--rejects",
            str(rejects),
            "--cpu-budget",
            "100",
            "--memory-budget",
            "250",
            "--min-share",
            "0.1",
            "--speed",
            "1000",
            "--shed-seed",
            "4",
            "--shed-rejects",
            "--quiet",
        ]
    )
    assert code == 0
    data = json.loads(stats.read_text())
    sh = data["shedding"]
    assert sh["seed"] == 4 and sh["overloaded_chunks"] == sh["chunks"] >= 1
    assert sh["allocation"]["effective_rate"] == pytest.approx({"A": 90, "B": 10}, rel=0.05)
    assert sum(sh["allocation"]["window"].values()) == pytest.approx(250)
    shed = sum(sh["shed"].values())
    assert data["rejects_by_reason"] == {"shed": shed} and data["rejects"] == shed
    rows = pd.read_csv(rejects)
    assert len(rows) == shed and set(rows["reason"]) == {"shed (overload)"}
    assert data["results"] == sh["results"] == len(pd.read_csv(tmp_path / "r.csv"))
    code = main([*run, "--cpu-budget", "100", "--speed", "1000", "--quiet"])
    again = json.loads(stats.read_text())
    assert code == 0 and again["rejects"] == 0  # shed tuples go to rejects only when asked
