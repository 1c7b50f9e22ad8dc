"""CPU / memory allocation under overload: Kang et al. §5.2 closed forms and examples, n-way generalisation."""

from __future__ import annotations

import itertools
import random

import pytest

from slidewise.errors import OptionError
from slidewise.optimizer.allocation import StreamLoad, allocate, both_two, cpu_two, maximize_sum, memory_two, output_rate, split


def approx(x):
    return pytest.approx(x, rel=1e-9, abs=1e-9)


# ------------------------------------------------------------- §5.2.1 CPU ----


def test_cpu_example_all_budget_probes_the_bigger_window():
    # §5.2.1 example: A = 500, B = 1000, μ = 100, both inputs faster than μ
    assert cpu_two(300, 400, 500, 1000, 100) == (100, 0)
    # r_o = σ (λ'_a B + λ'_b A) = σ · 100 · 1000 = σ · 100K
    assert output_rate((100, 0), (500, 1000), sigma=1.0) == 100_000
    # "at least 10 tuples from each input per time unit" -> 90 / 10
    assert cpu_two(300, 400, 500, 1000, 100, min_share=0.1) == approx((90, 10))


def test_cpu_equal_windows_output_is_flat():
    # Eq. 14 with A = B: r_o = σ μ A whatever the split
    for xa in (0, 25, 50, 100):
        assert output_rate((xa, 100 - xa), (300, 300), sigma=0.01) == approx(0.01 * 100 * 300)


def test_cpu_not_overloaded_keeps_rates():
    assert cpu_two(30, 40, 500, 1000, 100) == (30, 40)
    a = allocate([StreamLoad(30, rows=500), StreamLoad(40, rows=1000)], cpu_budget=100)
    assert not a.cpu_limited and a.rates == (30, 40) and a.keep == (1.0, 1.0)


FIG5 = [StreamLoad(800, rows=100), StreamLoad(200, rows=200)]  # λa, λb, A, B; σ = 0.01, μ = 100


@pytest.mark.parametrize(
    "strategy, rates, rate_out",
    [
        ("optimal", (100, 0), 200.0),  # MaxA: 0.01 · 100 · 200
        ("max:S1", (100, 0), 200.0),
        ("rates", (80, 20), 180.0),  # 0.01 (80·200 + 20·100)
        ("equal", (50, 50), 150.0),  # 0.01 (50·200 + 50·100)
        ("windows", (100 / 3, 200 / 3), 400 / 3),
        ("max:S2", (0, 100), 100.0),  # MaxB, the worst
    ],
)
def test_fig5_strategies(strategy, rates, rate_out):
    a = allocate(FIG5, cpu_budget=100, sigma=0.01, cpu=strategy)
    assert a.rates == approx(rates)
    assert a.output_rate == approx(rate_out)
    assert a.cpu_limited and sum(a.rates) == approx(100)
    assert a.exact_rate == approx(0.01 * (800 * 200 + 200 * 100))
    assert a.keep == approx((rates[0] / 800, rates[1] / 200))


# ----------------------------------------------------------- §5.2.2 memory ----


def test_memory_goes_to_the_slower_streams_window():
    # Eq. 16: λ_b > λ_a -> maximise A
    assert memory_two(10, 50, 1000, 2000, 2000) == (1000, 0)
    assert memory_two(50, 10, 1000, 2000, 2000) == (0, 1000)
    assert memory_two(10, 50, 1000, 600, 2000) == (600, 400)  # capped by the full window
    assert memory_two(10, 50, 1000, 2000, 2000, min_share=0.1) == approx((900, 100))
    # equal rates: output constant σ λ_a M
    for a in (0, 300, 1000):
        assert output_rate((20, 20), (a, 1000 - a), sigma=0.5) == approx(0.5 * 20 * 1000)


FIG6 = [StreamLoad(10, rows=1000), StreamLoad(50, rows=1000)]  # M = 1000, σ = min(0.005, 0.01)


@pytest.mark.parametrize(
    "strategy, windows, rate_out",
    [
        ("optimal", (1000, 0), 250.0),  # MaxA: 0.005 · 50 · 1000
        ("max:S1", (1000, 0), 250.0),
        ("inverse", (2500 / 3, 500 / 3), 650 / 3),
        ("equal", (500, 500), 150.0),
        ("rates", (500 / 3, 2500 / 3), 250 / 3),
        ("max:S2", (0, 1000), 50.0),
    ],
)
def test_fig6_strategies(strategy, windows, rate_out):
    a = allocate(FIG6, memory_budget=1000, sigma=0.005, memory=strategy)
    assert a.windows == approx(windows)
    assert a.output_rate == approx(rate_out)
    assert a.memory_limited and not a.cpu_limited and a.rates == (10, 50)
    assert a.sample == approx((windows[0] / 1000, windows[1] / 1000))


# -------------------------------------------------------------- §5.2.3 both ----

FIG7 = [StreamLoad(25, rows=100), StreamLoad(25, rows=100)]  # μ = 10, M = 100, σ = 0.01


@pytest.mark.parametrize(
    "cpu, memory, rate_out",
    [
        ("optimal", "optimal", 10.0),  # σ μ M, the maximum
        ("max:S2", "max:S1", 10.0),  # Max A / Max λ_b
        ("max:S1", "max:S2", 10.0),  # Max B / Max λ_a
        ("equal", "equal", 5.0),  # 0.01 (5·50 + 5·50)
        ("max:S1", "max:S1", 0.0),  # Max A / Max λ_a: probes the empty window
        ("max:S2", "max:S2", 0.0),
    ],
)
def test_fig7_strategies(cpu, memory, rate_out):
    a = allocate(FIG7, cpu_budget=10, memory_budget=100, sigma=0.01, cpu=cpu, memory=memory)
    assert a.output_rate == approx(rate_out)
    assert sum(a.rates) == approx(10) and sum(a.windows) == approx(100)


def test_both_closed_form_reaches_sigma_mu_m():
    xa, xb, wa, wb = both_two(25, 25, 100, 100, 10, 100)
    assert output_rate((xa, xb), (wa, wb)) == approx(10 * 100)
    # Eq. 19 with x > 1/2 wants A minimal
    assert (xa, wb) == (10, 100) or (xb, wa) == (10, 100)


def test_generic_solver_matches_closed_forms_on_random_two_stream_cases():
    rnd = random.Random(7)
    for _ in range(200):
        la, lb = rnd.uniform(1, 500), rnd.uniform(1, 500)
        a, b = rnd.randint(1, 2000), rnd.randint(1, 2000)
        mu, m = rnd.uniform(1, la + lb), rnd.uniform(1, a + b)
        share = rnd.choice([0.0, 0.0, 0.1, 0.3])
        loads = [StreamLoad(la, rows=a), StreamLoad(lb, rows=b)]
        got = allocate(loads, cpu_budget=mu, min_share=share)
        assert output_rate(got.rates, (a, b)) == approx(output_rate(cpu_two(la, lb, a, b, mu, share), (a, b)))
        got = allocate(loads, memory_budget=m, min_share=share)
        assert output_rate((la, lb), got.windows) == approx(output_rate((la, lb), memory_two(la, lb, m, a, b, share)))
        got = allocate(loads, cpu_budget=mu, memory_budget=m, min_share=share)
        xa, xb, wa, wb = both_two(la, lb, a, b, mu, m, share)
        assert got.output_rate == pytest.approx(output_rate((xa, xb), (wa, wb)), rel=1e-6)


# ---------------------------------------------------------------- n streams ----


def _grid_best(f, total, lo, hi, steps=40):
    best = -1.0
    n = len(lo)
    for pts in itertools.product(range(steps + 1), repeat=n - 1):
        x = [lo[i] + (hi[i] - lo[i]) * pts[i] / steps for i in range(n - 1)]
        last = total - sum(x)
        if lo[-1] - 1e-9 <= last <= hi[-1] + 1e-9:
            best = max(best, f(x + [last]))
    return best


def test_three_streams_cpu_is_a_greedy_fill_by_coefficient():
    loads = [StreamLoad(50, rows=10), StreamLoad(60, rows=40), StreamLoad(70, rows=20)]
    a = allocate(loads, cpu_budget=100)
    # coefficients Π_{j≠i} W_j: 800, 200, 400 -> S1 full (50), then S3 (50)
    assert a.rates == approx((50, 0, 50))
    assert a.output_rate == approx(50 * 800 + 50 * 400)


def test_three_streams_memory_matches_a_grid_search():
    rates = [10, 20, 30]
    f = lambda w: output_rate(rates, w)  # noqa: E731
    got = maximize_sum(f, 90, [0, 0, 0], [100, 100, 100])
    assert f(got) >= _grid_best(f, 90, [0, 0, 0], [100, 100, 100]) - 1e-6
    # equal rates: the symmetric split is optimal
    a = allocate([StreamLoad(10, rows=100)] * 3, memory_budget=90)
    assert a.windows == pytest.approx((30, 30, 30), rel=1e-5)


def test_drop_mode_time_windows_favour_an_equal_split():
    # windows shrink with the rate: r = σ λ'_a λ'_b (τ_a + τ_b), maximal at μ/2 each
    loads = [StreamLoad(800, seconds=0.125), StreamLoad(200, seconds=1.0)]
    a = allocate(loads, cpu_budget=100, mode="drop")
    assert a.rates == approx((50, 50))
    assert a.windows == approx((50 * 0.125, 50 * 1.0))
    # a slow stream caps its share
    a = allocate([StreamLoad(800, seconds=1.0), StreamLoad(20, seconds=1.0)], cpu_budget=100, mode="drop")
    assert a.rates == approx((80, 20))
    # probe mode (windows kept full): the paper's linear case, all to the stream probing the bigger window
    a = allocate(loads, cpu_budget=100, mode="probe")
    assert a.rates == approx((100, 0))


def test_drop_mode_keeps_count_windows_fed():
    a = allocate(FIG5, cpu_budget=100, mode="drop")
    assert a.rates == approx((95, 5)) and a.notes


def test_split_water_fills_and_caps():
    assert split(10, [1, 1, 1], [0, 0, 0], [2, 100, 100]) == approx([2, 4, 4])
    assert split(10, [1, 3], [1, 1], [100, 100]) == approx([3, 7])


def test_bad_options():
    with pytest.raises(OptionError, match="min-share"):
        allocate(FIG5, cpu_budget=10, min_share=0.6)
    with pytest.raises(OptionError, match="unknown cpu allocation strategy"):
        allocate(FIG5, cpu_budget=10, cpu="fastest")
    with pytest.raises(OptionError, match="unknown stream"):
        allocate(FIG5, cpu_budget=10, cpu="max:Z")


def test_allocation_bench_smoke(tmp_path):
    from slidewise.bench.allocation import run_allocation_bench

    report = run_allocation_bench(tmp_path, scale=0.05, scenarios=["fig5", "fig7"])
    assert (tmp_path / "allocation.json").exists() and (tmp_path / "allocation.png").exists()
    for name in ("fig5", "fig7"):
        runs = report["scenarios"][name]["runs"]
        assert runs["chosen"]["probe"]["predicted_output_rate"] > runs["equal"]["probe"]["predicted_output_rate"]
        assert set(runs["chosen"]) == {"probe", "drop"}
