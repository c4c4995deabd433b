"""Paired comparisons over shared seeds (issue 40): Holm's step-down correction and the sign-flip test against hand
computations, the Student-t interval of the differences, and the family-mean aggregate whose bootstrap redraws
training seeds only (stratified by family), never the fixed settings."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from leaderboard import stats
from leaderboard.stats import aggregate_seed_scores, family_mean_bootstrap, holm, mean_ci, paired, sign_flip_test


def test_holm_matches_the_hand_worked_step_down():
    # p = [0.01, 0.04, 0.03, 0.005], m = 4. Sorted: 0.005 (#3), 0.01 (#0), 0.03 (#2), 0.04 (#1).
    # Multiply by m - j + 1 = 4, 3, 2, 1:            0.020,      0.030,     0.060,     0.040.
    # Running maximum (step-down: once one fails, every larger p fails): 0.020, 0.030, 0.060, 0.060.
    # Back in the input order: [0.030, 0.060, 0.060, 0.020]. At alpha = 0.05 it rejects #3 and #0 only; #1's raw
    # 0.04 would pass its own threshold 0.05 / 1, but the step-down stopped at #2.
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # capped at 1: [0.5, 0.6] -> sorted 0.5 x 2 = 1.0, 0.6 x 1 -> max(1.0, 0.6) = 1.0
    assert holm([0.5, 0.6]) == pytest.approx([1.0, 1.0])
    assert holm([0.2]) == [0.2] and holm([]) == []


def test_holm_refuses_what_is_not_a_p_value():
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        holm([0.1, 1.5])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        holm([float("nan")])


def test_sign_flip_of_four_differences_matches_hand_enumeration():
    # d = [1, 2, 3, 4]: sum 10; of the 16 sign patterns only all-plus (+10) and all-minus (-10) reach |10|: p = 2/16
    assert sign_flip_test([1, 2, 3, 4]) == (0.125, True)
    # d = [1, 2, 3, -0.5]: sum 5.5. |+1 +2 +3 +0.5| = 6.5 and |+1 +2 +3 -0.5| = 5.5 reach it, and their negatives;
    # the next largest, |-1 +2 +3 +0.5| = 4.5, does not: 4 of 16, p = 0.25
    assert sign_flip_test([1, 2, 3, -0.5]) == (0.25, True)
    # the same count by brute force over the 16 patterns, written out
    d = np.array([0.3, -0.1, 0.7, 0.2])
    hits = sum(abs(sum(s * x for s, x in zip(signs, d))) >= abs(d.sum()) - 1e-12
               for signs in itertools.product([-1, 1], repeat=4))
    assert sign_flip_test(d)[0] == hits / 16
    assert sign_flip_test([0.0, 0.0, 0.0]) == (1.0, True)


def test_five_seeds_can_never_reach_five_percent():
    p, exact = sign_flip_test([1.0, 1.1, 0.9, 1.2, 1.05])
    assert exact and p == pytest.approx(2 / 32)


def test_sign_flip_beyond_sixteen_is_seeded_monte_carlo():
    rng = np.random.default_rng(3)
    d = rng.normal(0.1, 1.0, size=40)
    p1, exact = sign_flip_test(d, mc_reps=4000, seed=1)
    assert not exact and p1 == sign_flip_test(d, mc_reps=4000, seed=1)[0]
    # against the normal approximation of the permutation distribution: sum s_i d_i has variance sum d_i^2
    from scipy.stats import norm
    z = abs(d.sum()) / np.sqrt((d ** 2).sum())
    assert p1 == pytest.approx(2 * norm.sf(z), abs=0.03)
    with pytest.raises(ValueError, match="finite"):
        sign_flip_test([1.0, float("inf")])


def test_t_interval_of_three_values_is_the_hand_computed_one():
    # [1, 2, 3]: mean 2, sd 1, half-width t(0.975, 2) / sqrt(3) = 4.3027 / 1.7321 = 2.4841
    m, lo, hi = mean_ci([1.0, 2.0, 3.0])
    assert m == 2.0 and lo == pytest.approx(2 - 2.4841, abs=1e-4) and hi == pytest.approx(2 + 2.4841, abs=1e-4)
    assert mean_ci([0.5]) == (0.5, 0.5, 0.5)


def test_paired_differences_cancel_what_both_seeds_share():
    # seed effects of +-0.5 shared by both methods: the unpaired intervals overlap, the paired one does not
    seed_effect = np.array([0.5, -0.5, 0.3, -0.3, 0.1, -0.1, 0.4, -0.4, 0.2, -0.2])
    a, b = 0.6 + seed_effect + 0.01 * np.arange(10) % 0.03, 0.5 + seed_effect
    r = paired(a, b)
    assert r.n == 10 and r.exact and r.low > 0 and r.p == pytest.approx(2 / 1024)
    ta, tb = mean_ci(a), mean_ci(b)
    assert ta[1] < tb[2]                                                  # unpaired: overlapping
    with pytest.raises(ValueError, match="same, non-zero number of seeds"):
        paired([1.0, 2.0], [1.0])


def test_aggregate_is_the_mean_of_family_scores_never_a_trim_across_families():
    # family x: every seed 0.0 (2 settings); family y: every seed 1.0 (1 setting). A cross-family IQM of the six cells
    # would trim the ends differently; the family mean is 0.5 exactly, per seed and overall.
    scores = {"x": [[0.0, 0.0]] * 3, "y": [[1.0]] * 3}
    assert aggregate_seed_scores(scores, ["x", "y"]).tolist() == [0.5, 0.5, 0.5]
    assert family_mean_bootstrap(scores, reps=200)[0] == 0.5
    with pytest.raises(ValueError, match="both entries cover"):
        aggregate_seed_scores(scores, ["x", "z"])


def test_the_bootstrap_never_resamples_fixed_settings():
    # every seed scores the same three settings [0.1, 0.9, 0.5]: settings differ, seeds are identical, so the
    # interval has width 0. The old two-level bootstrap redrew the settings as units and gave a wide interval.
    scores = {"fam": [[0.1, 0.9, 0.5]] * 5, "other": [[0.2, 0.4]] * 5}
    point, low, high = family_mean_bootstrap(scores, reps=500)
    assert point == pytest.approx(0.4) and high - low == pytest.approx(0.0, abs=1e-12)
    old = stats.stratified_bootstrap(scores, statistic=lambda m: float(m.mean()), reps=500)
    assert old[2] - old[1] > 0.05
    # one seed per family: a point, whatever the spread of its settings
    assert family_mean_bootstrap({"fam": [[0.0, 1.0, 0.3]]}, reps=100)[1:] == pytest.approx((13 / 30, 13 / 30))


def test_the_bootstrap_draws_seed_indices_stratified_by_family(monkeypatch):
    # every generator the bootstrap makes is recorded with what it draws: one generator per family (seeded by its
    # name), each drawing reps x n_seeds seed indices below n_seeds, and nothing else
    made = []
    real = np.random.default_rng

    class Spy:
        def __init__(self, seed):
            self.seed, self.rng, self.draws = seed, real(seed), []
            made.append(self)

        def integers(self, high, size):
            self.draws.append((high, size))
            return self.rng.integers(high, size=size)

    monkeypatch.setattr(stats.np.random, "default_rng", Spy)
    scores = {"a": [[0.1, 0.2]] * 3, "b": [[0.3]] * 4}
    family_mean_bootstrap(scores, reps=50, seed=7)
    assert [g.draws for g in made] == [[(3, (50, 3))], [(4, (50, 4))]]
    assert made[0].seed[0] == made[1].seed[0] == 7 and made[0].seed[1] != made[1].seed[1]


def test_the_aggregate_ci_does_not_depend_on_the_family_order():
    rng = np.random.default_rng(0)
    scores = {f: [list(rng.random(3)) for _ in range(6)] for f in ("p", "q", "r")}
    flipped = dict(reversed(list(scores.items())))
    a, b = family_mean_bootstrap(scores, reps=300), family_mean_bootstrap(flipped, reps=300)
    assert a == pytest.approx(b, abs=1e-12)
    assert a[1] <= a[0] <= a[2]


def test_power_of_a_constant_pilot_is_the_hand_computed_step():
    from leaderboard.stats import paired_power, seeds_needed

    # every pilot difference is +0.1, so every simulated run is n copies of +0.1: the t interval is the point 0.1
    # (excludes 0) and the exact sign-flip p is 2 / 2^n. One comparison at 5%: n = 5 gives 2/32 = 0.0625 (fails),
    # n = 6 gives 2/64 = 0.031 (passes). Ten comparisons (Holm's first threshold 0.005): 2/256 = 0.0078 fails at
    # n = 8, 2/512 = 0.0039 passes at n = 9.
    pilot = {200 + i: 0.1 for i in range(5)}
    assert paired_power(list(pilot.values()), 5) == 0.0 and paired_power(list(pilot.values()), 6) == 1.0
    assert seeds_needed(pilot, certified_seeds=range(10)) == 6
    assert seeds_needed(pilot, certified_seeds=range(10), comparisons=10) == 9


def test_power_of_a_pilot_centred_on_zero_stays_near_alpha():
    from leaderboard.stats import paired_power

    assert paired_power([0.2, -0.2, 0.1, -0.1], 10) < 0.1
    assert paired_power([0.3, -0.2, 0.25, -0.1, 0.4], 20, reps=300) > paired_power([0.3, -0.2, 0.25, -0.1, 0.4], 6)


def test_the_pilot_must_not_be_the_certified_run():
    from leaderboard.stats import seeds_needed

    with pytest.raises(ValueError, match=r"reuses the certified run's seeds \[3, 4\]"):
        seeds_needed({3: 0.1, 4: 0.2, 50: 0.1}, certified_seeds=[0, 1, 2, 3, 4])
