"""Kang et al.'s cost model (Eq. 3-11, Table 3, Fig. 2) and the calibration profile."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slidewise.errors import OptionError
from slidewise.optimizer import binary as model
from slidewise.optimizer.binary import (
    ALL_COMBINATIONS,
    PAPER_COMBINATIONS,
    PAPER_WEIGHTS,
    PROFILE_ENV,
    Structure,
    Weights,
    choose,
    combination_cost,
    combination_costs,
    crossover_ratio,
    direction_cost,
    envelope_crossovers,
    load_weights,
    rate_crossovers,
    search_touches,
    update_touches,
    window_crossover,
)

# Table 3 of Kang et al.: window A, window B, λa, λb, then HH TT HT TH HN NH TN NT
TABLE_3 = [
    (9500, 500, 2, 998, [7.06, 9.56, 10.89, 5.74, 5.99, 2845.87, 4.67, 2849.69]),
    (7000, 3000, 800, 200, [7.06, 11.85, 6.46, 12.46, 722.39, 424.87, 727.78, 424.27]),
    (4000, 6000, 550, 450, [7.06, 11.60, 8.93, 9.73, 993.42, 543.84, 996.09, 545.71]),
]


def test_touched_tuples_eq_3_to_6():
    s = Structure(bucket_size=10, node_size=100)
    assert search_touches("N", 5000, s) == 5000 and update_touches("N", 5000, s) == 2  # Eq. 3
    assert search_touches("H", 5000, s) == 10 and update_touches("H", 5000, s) == 2  # Eq. 4
    # Eq. 5: height ceil(log_101 ceil(5000/100)) + 1 = 2, times ceil(log2 100) = 7
    assert search_touches("B", 5000, s) == 14 and update_touches("B", 5000, s) == 28
    assert search_touches("B", 10_000_000, s) == 4 * 7  # 100000 leaves: 3 inner levels + leaf
    # Eq. 6: 1.5 * (ceil(log2 50) - 1) + 7 = 14.5; updates double the whole path (Table 3)
    assert search_touches("T", 5000, s) == 14.5 and update_touches("T", 5000, s) == 29
    assert search_touches("T", 80, s) == 7  # one node: clamped, just the binary search


def test_direction_cost_eq_7_by_hand():
    # NLJ A->B with B = 500, λa = 2, λb = 998: 2 * 500 * 3e-4 + 2 * 998 * 1e-4
    assert direction_cost("N", 2, 998, 500) == pytest.approx(0.3 + 0.1996)
    # T-tree on A = 9500 probed by λb = 998, updated by λa = 2: (1.5*6 + 7) = 16 touches per probe
    assert direction_cost("T", 998, 2, 9500) == pytest.approx(998 * 16 * 2.6e-4 + 2 * 32 * 2.7e-4)


@pytest.mark.parametrize("window_a, window_b, rate_a, rate_b, expected", TABLE_3)
def test_table_3(window_a, window_b, rate_a, rate_b, expected):
    costs = combination_costs(rate_a, rate_b, window_a, window_b)
    assert list(costs) == list(PAPER_COMBINATIONS)
    assert [round(c, 2) for c in costs.values()] == pytest.approx(expected, abs=0.0051)


@pytest.mark.parametrize("row, winner", list(zip(TABLE_3, ["TN", "HT", "HH"])))
def test_table_3_winners(row, winner):
    """The combinations that won Fig. 4(a)-(c); the choice is per window."""
    a, b, la, lb, _ = row
    assert choose(la, lb, a, b, methods=("N", "H", "T")).combination == winner


def test_naming_first_letter_is_window_a():
    """TN: T-tree on A (probed by B's arrivals), nested loops on B (probed by A's)."""
    assert combination_cost("TN", 2, 998, 9500, 500) == pytest.approx(direction_cost("T", 998, 2, 9500) + direction_cost("N", 2, 998, 500))


def test_eq_8_tn_th_crossover():
    # λa/λb = 13.6 / (3B - 55); B = 500: 0.0094, i.e. B about 106 times faster than A
    assert crossover_ratio("N", "H", 500) == pytest.approx(13.6 / (3 * 500 - 55))
    assert round(1 / crossover_ratio("N", "H", 500)) == 106
    assert crossover_ratio("N", "H", 5000) == pytest.approx(13.6 / (3 * 5000 - 55))


def test_eq_11_ht_nt_crossover():
    # on window A the probe rate is λb: λa/λb = (3A - 55) / 13.6
    assert 1 / crossover_ratio("H", "N", 5000) == pytest.approx((3 * 5000 - 55) / 13.6)


@pytest.mark.parametrize("window", [1000, 5000, 9500, 40000])
def test_eq_9_and_10_consistent_form(window):
    L = math.ceil(math.log2(math.ceil(window / 100)))
    th_hh = (58.9 - 3.9 * L - 2.6 * 7) / (8.1 * L + 5.4 * 7 - 23.7)  # λa/λb, T vs H on window A
    assert 1 / crossover_ratio("T", "H", window) == pytest.approx(th_hh)
    assert crossover_ratio("H", "T", window) == pytest.approx(1 / th_hh)  # Eq. 10 on window B


def test_fig_2_crossovers():
    """A = B = 5000: TN | TH | HH | HT | NT, HH between about 20 %/80 % and 80 %/20 % (§5.1)."""
    flips = rate_crossovers(5000, 5000)
    assert [(c.before, c.after) for c in flips] == [("TN", "TH"), ("TH", "HH"), ("HH", "HT"), ("HT", "NT")]
    assert [c.ratio for c in flips] == pytest.approx([13.6 / 14945, 0.27592, 3.62428, 14945 / 13.6], rel=1e-4)
    assert 0.2 < flips[1].share < 0.25 and 0.75 < flips[2].share < 0.8


def test_crossovers_move_with_the_window_sizes():
    """§5.1: a larger A and smaller B move the nested-loops crossovers right (Eq. 8 and 11).

    The tree/hash crossovers (Eq. 9-10) follow the tree heights instead: with
    A = 7000 the T-tree on A is one level taller, so TH gives way to HH earlier.
    """
    base = rate_crossovers(5000, 5000)
    moved = rate_crossovers(7000, 3000)
    assert [c.before + c.after for c in moved] == [c.before + c.after for c in base]
    assert moved[0].ratio > base[0].ratio and moved[3].ratio > base[3].ratio
    assert moved[0].ratio == pytest.approx(13.6 / (3 * 3000 - 55))  # TN-TH depends only on B
    assert moved[1].ratio < base[1].ratio


def test_window_crossover():
    # B arrivals 106 times faster than A's: N on B beats H up to B = 498 (Eq. 8 solved for B)
    assert window_crossover("N", "H", 1, 106) == 499
    assert window_crossover("T", "H", 1, 1) is None  # hash stays cheaper at equal rates


def test_envelope_of_hand_lines():
    # X = 1 + 4f, Y = 3, Z = 7 - 7f: X until f = 1/2, Y until f = 4/7, then Z (X = Z at 6/11 is hidden)
    flips = envelope_crossovers({"X": (1.0, 5.0), "Y": (3.0, 3.0), "Z": (7.0, 0.0)})
    assert [(c.before, c.after) for c in flips] == [("X", "Y"), ("Y", "Z")]
    assert [c.share for c in flips] == pytest.approx([1 / 2, 4 / 7])
    assert [c.ratio for c in flips] == pytest.approx([1.0, 4 / 3])
    assert envelope_crossovers({"X": (1.0, 1.0), "Y": (2.0, 2.0)}) == []


positive = st.floats(1e-3, 1e3)


@given(positive, positive, st.integers(1, 20000), st.integers(1, 20000), st.lists(st.floats(1e-7, 1e-3), min_size=8, max_size=8))
def test_choice_is_the_cheapest_of_all_16(rate_a, rate_b, window_a, window_b, w):
    weights = Weights(dict(zip("NHBT", w[:4])), dict(zip("NHBT", w[4:])))
    pick = choose(rate_a, rate_b, window_a, window_b, weights)
    costs = combination_costs(rate_a, rate_b, window_a, window_b, weights, ALL_COMBINATIONS)
    assert pick.cost == pytest.approx(min(costs.values()))


def test_bad_method_names():
    with pytest.raises(OptionError):
        direction_cost("X", 1, 1, 10)
    with pytest.raises(OptionError):
        combination_cost("HHH", 1, 1, 10, 10)


# -- profiles and calibration ---------------------------------------------------


def test_default_weights_without_profile(monkeypatch, tmp_path):
    monkeypatch.setenv(PROFILE_ENV, str(tmp_path / "none.json"))
    assert load_weights() is PAPER_WEIGHTS
    with pytest.raises(OptionError):
        load_weights(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(OptionError):
        load_weights(bad)
    bad.write_text(json.dumps({"weights": {"N": {"P": 1}}}))
    with pytest.raises(OptionError):
        load_weights(bad)


def test_tiny_calibration_profile(tmp_path, monkeypatch):
    from slidewise.optimizer.calibrate import calibrate, format_table, save_profile

    profile = calibrate((40, 160), structure=Structure(4, 8), min_time=0.002)
    assert set(profile["weights"]) == set("NHBT")
    # every structure's search / update cost is positive (the slope may be 0 if a constant or
    # window-size term carries it)
    w0 = model.weights_from_profile(profile)
    assert all(w0.search_time(d, 100) > 0 and w0.update_time(d, 100) > 0 for d in "NHBT")
    assert all(v >= 0 for e in profile["weights"].values() for v in e.values())
    assert len(profile["points"]) == 4 * 2 * 2
    assert all(p["seconds_per_op"] > 0 and p["touches"] > 0 for p in profile["points"])
    assert profile["structure"] == {"bucket_size": 4, "node_size": 8}
    path = save_profile(profile, tmp_path / "p.json")
    monkeypatch.setenv(PROFILE_ENV, str(path))
    w = load_weights()
    assert w.structure == Structure(4, 8) and w.P("N") == profile["weights"]["N"]["P"]
    assert w.unit == "seconds per touched tuple"
    table = format_table(profile)
    assert all(name in table for name in ("nested loops", "hash", "B+tree", "T-tree"))


def test_calibrate_command(tmp_path, capsys):
    from slidewise.cli import main

    out = tmp_path / "profile.json"
    assert main(["calibrate", "--sizes", "30,90", "--min-time", "0.001", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert set(data["weights"]) == set("NHBT") and data["clock"] == "cpu"
    assert "T-tree" in capsys.readouterr().out
    assert main(["calibrate", "--sizes", "x", "--out", str(out)]) == 2


def test_paper_weights_are_eq_7():
    assert model.PAPER_WEIGHTS.P("H") == 5.5e-4 and model.PAPER_WEIGHTS.I("T") == 2.7e-4


def test_asymmetric_bench_smoke(tmp_path, monkeypatch):
    """Tiny windows and timings: files and report shape only (no wall-clock assertions)."""
    from slidewise.bench import asymmetric

    monkeypatch.setattr(
        asymmetric, "TABLE_3", tuple({**wl, "window_a": max(8, wl["window_a"] // 500), "window_b": max(8, wl["window_b"] // 500)} for wl in asymmetric.TABLE_3)
    )
    report = asymmetric.run_asymmetric_bench(
        tmp_path, sweep_window=40, min_time=0.0005, repeats=1, points=5, calibration_sizes=(20, 40), table3_rounds=2, table3_pieces=2, piece_arrivals=30, progress=False
    )
    assert (tmp_path / "asymmetric.png").stat().st_size > 0
    assert (tmp_path / "asymmetric-profile.json").exists()
    data = json.loads((tmp_path / "asymmetric.json").read_text())
    sweep = data["sweep"]
    assert len(sweep["ratios"]) == 5 and set(sweep["measured"]) == set(PAPER_COMBINATIONS)
    assert all(len(v) == 3 for v in sweep["mixed_runs"].values())
    assert len(data["table3"]) == 3
    for row in data["table3"]:
        assert set(row["measured"]) == set(ALL_COMBINATIONS) and all(v > 0 for v in row["measured"].values())
        assert row["all_sixteen"]["chosen"] in ALL_COMBINATIONS
        assert set(row["paper_eight"]["chosen"]) <= set("NHT")
        for pool in ("paper_eight", "all_sixteen"):
            v = row[pool]
            # the chosen combination is always timed in pieces, against every faster timed contender
            assert row["measured_by"][v["chosen"]] == "pieces"
            assert v["chosen_rank_measured"] == v["measured_order"].index(v["chosen"]) + 1
            assert v["chosen_over_fastest"] >= 1 and row["measured_by"][v["measured_fastest"]] == "pieces"
            if v["measured_fastest_by"] == "max rate":  # else: the paired rounds' winner
                assert v["agree"] == (v["chosen_rank_measured"] == 1)
            assert v["faster_distinguishable"] == bool(v["distinguishably_beaten_by"])
            assert set(v["distinguishably_beaten_by"]) <= set(v["chosen_vs"])
        timing = row["timing"]  # near ties get 2 more rounds at a time, up to 8
        assert timing["rounds"] in (2, 4, 6, 8) and (timing["rounds"] == 8 or not timing["near_ties"])
        assert timing["pieces"] == 2
    assert len(report["summary"]["table3"]) == 3


def test_asymmetric_pieces_mix_and_paired_timing():
    """Table 3's pieces: the workload's A share, continued across pieces; every combination on every piece."""
    from slidewise.bench import asymmetric

    assert asymmetric._mix(0.002, 500).count(0) == 1
    assert sum(asymmetric._mix(0.3, 100, k * 100).count(0) for k in range(10)) == 300
    pieces = asymmetric.make_pieces(30, 20, 0.5, pieces=3, arrivals=40, seed=1)
    assert [p.tuples for p in pieces] == [40, 40, 40]
    assert all([t.stream for t in p.warm] == [0] * 30 + [1] * 20 for p in pieces)
    assert all(sum(t.stream == 0 for t in p.chunks) == 20 for p in pieces)
    runs = asymmetric.time_combinations(pieces, ("BB", "TN"), 30, 20, 2, seed=0)
    for c in ("BB", "TN"):
        assert runs[c]["cpu"].shape == (2, 3) and (runs[c]["cpu"] >= 0).all()


# -- the calibrated terms: constants and window-size surcharges (module docstring) ------


def test_paper_weights_have_no_extra_terms():
    """The added terms are zero for Eq. 7, so Table 3 is unchanged (test_table_3 pins it)."""
    w = PAPER_WEIGHTS
    assert w.search_time("T", 9500) == pytest.approx(16 * 2.6e-4)
    assert w.update_time("H", 7000) == pytest.approx(2 * 7.8e-4)


def test_constant_and_log_terms_enter_direction_cost():
    base = {d: 1e-6 for d in "NHBT"}
    w = Weights(dict(base), dict(base), search_const={"H": 5e-6}, update_const={"B": 2e-6}, search_log={"H": 1e-7}, update_log={"T": 1e-8})
    # hash probe of 4096 tuples: 5 µs + 10 touches * (1 µs + 0.1 µs * 12)
    assert w.search_time("H", 4096) == pytest.approx(5e-6 + 10 * (1e-6 + 1e-7 * 12))
    assert w.update_time("B", 5000) == pytest.approx(2e-6 + 28 * 1e-6)
    assert w.update_time("T", 1024) == pytest.approx(update_touches("T", 1024) * (1e-6 + 1e-8 * 10))
    assert direction_cost("H", 3, 2, 4096, w) == pytest.approx(3 * w.search_time("H", 4096) + 2 * w.update_time("H", 4096))
    # a window-size term moves the N/H crossover: H gets dearer for bigger windows
    plain = Weights(dict(base), {**base, "H": 3e-6})
    surcharged = Weights(dict(base), {**base, "H": 3e-6}, search_log={"H": 1e-6})
    assert crossover_ratio("N", "H", 4096, surcharged) > crossover_ratio("N", "H", 4096, plain)


def test_version_1_profile_loads_without_extra_terms(tmp_path):
    data = {"weights": {d: {"P": 1e-6, "I": 2e-6} for d in "NHBT"}}
    p = tmp_path / "v1.json"
    p.write_text(json.dumps(data))
    w = load_weights(p)
    assert w.search_const == {d: 0.0 for d in "NHBT"}
    assert w.search_time("N", 100) == pytest.approx(100e-6)
    round_trip = model.weights_from_profile({"weights": w.as_dict()["weights"]})
    assert round_trip.search_time("T", 5000) == pytest.approx(w.search_time("T", 5000))
    data["weights"]["H"]["P_const"] = -1.0
    p.write_text(json.dumps(data))
    with pytest.raises(OptionError):
        load_weights(p)


def test_fit_terms_recovers_constant_slope_and_log():
    from slidewise.optimizer.calibrate import fit_terms

    def pt(w, t, y):
        return {"window": w, "touches": t, "seconds_per_op": y}

    # y = 3 + t * (0.5 + 0.1 log2 W), exact
    pts = [pt(w, t, 3 + t * (0.5 + 0.1 * math.log2(w))) for w, t in ((256, 7), (1024, 10), (4096, 13), (16384, 16), (65536, 19))]
    coef, err = fit_terms(pts)
    assert coef["const"] == pytest.approx(3, rel=1e-6) and coef["slope"] == pytest.approx(0.5, rel=1e-6)
    assert coef["log"] == pytest.approx(0.1, rel=1e-6) and err < 1e-9
    # touches that never vary (N/H updates): no separate constant, folded into the slope
    flat = [pt(w, 2, 4.0) for w in (256, 1024, 4096)]
    coef, err = fit_terms(flat)
    assert coef["const"] == 0 and coef["slope"] == pytest.approx(2.0) and coef["log"] == 0
    # never negative: a falling series gets a non-negative fit
    coef, _ = fit_terms([pt(256, 7, 9.0), pt(1024, 10, 8.0), pt(4096, 13, 7.0)])
    assert all(v >= 0 for v in coef.values())


def test_calibrate_origin_mode_is_the_papers_fit():
    from slidewise.optimizer.calibrate import calibrate

    prof = calibrate((40, 160), structure=Structure(4, 8), min_time=0.001, rounds=1, fit_mode="origin")
    assert set(prof["weights"]["N"]) == {"P", "I"}
    prof = calibrate((40, 160), structure=Structure(4, 8), min_time=0.001, rounds=2)
    assert {"P_const", "I_const", "P_log", "I_log"} <= set(prof["weights"]["T"])
    assert all(len(p["rounds"]) == 2 for p in prof["points"])
