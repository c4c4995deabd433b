"""The leaderboard statistics (leaderboard/stats.py) against small examples worked by hand: IQM, the stratified
bootstrap, probability of improvement, Bradley-Terry, the rank rule; and the paired comparisons over shared seeds
(issue 40): Holm's step-down correction and the sign-flip test, the Student-t interval of the differences, the
family-mean aggregate whose bootstrap redraws training seeds only (stratified by family), and the pilot's power."""

import itertools
import math

import numpy as np
import pytest

from leaderboard import stats
from leaderboard.stats import (aggregate_seed_scores, bradley_terry, bradley_terry_bootstrap, cell_matrix,
                               family_mean_bootstrap, format_ci, holm, iqm, mean_ci, paired, probability_of_improvement,
                               probability_of_improvement_ci, ranks, separated, sign_flip_test, stratified_bootstrap)


def test_iqm_is_the_mean_of_the_middle_half():
    # sorted: 0 0 1 1 | 5 7 100 100 -> the middle four 1 1 5 7 -> 3.5
    assert iqm([100, 0, 5, 1, 7, 0, 100, 1]) == pytest.approx(3.5)
    assert iqm(np.arange(1, 9).reshape(2, 4)) == pytest.approx(4.5)     # runs x tasks: all cells together


def test_cell_matrix_is_runs_by_tasks_of_unit_means():
    m = cell_matrix({"a": [[0, 1], [1, 1]], "b": [[2, 4], [3, 3]]})
    assert m.tolist() == [[0.5, 3.0], [1.0, 3.0]]


def test_bootstrap_of_two_units_gives_the_hand_computed_percentiles():
    # one task, one run, units 0 and 1: a resample's mean is 0 (p 1/4), 1/2 (p 1/2) or 1 (p 1/4),
    # so the 2.5% and 97.5% percentiles are 0 and 1, and the point is 1/2
    point, low, high = stratified_bootstrap({"t": [[0.0, 1.0]]}, statistic=np.mean, reps=4000, seed=1)
    assert (point, low, high) == (0.5, 0.0, 1.0)
    # a narrower CI: 80% keeps the middle value only when more than 10% lies on each side
    _, low80, high80 = stratified_bootstrap({"t": [[0.0, 1.0]]}, statistic=np.mean, reps=4000, seed=1,
                                            confidence=0.4)
    assert low80 == high80 == 0.5


def test_bootstrap_is_stratified_by_task():
    # every run of task a scores 0 and of task b scores 1: a stratified resample always has both tasks,
    # so the mean of the matrix is exactly 1/2 in every replicate (an unstratified one would vary)
    scores = {"a": [[0.0, 0.0]] * 3, "b": [[1.0, 1.0]] * 3}
    assert stratified_bootstrap(scores, statistic=np.mean, reps=500, seed=0) == (0.5, 0.5, 0.5)


def test_bootstrap_is_seeded_and_the_ci_holds_the_point():
    rng = np.random.default_rng(0)
    scores = {t: [list(rng.normal(size=20)) for _ in range(5)] for t in "abc"}
    a = stratified_bootstrap(scores, reps=300, seed=7)
    assert a == stratified_bootstrap(scores, reps=300, seed=7)
    assert a != stratified_bootstrap(scores, reps=300, seed=8)
    assert a[1] <= a[0] <= a[2]


def test_format_ci_never_prints_a_negative_zero():
    # -0.0004 rounds to zero at 3 decimals: "0.000", not "-0.000" (what a plain f"{x:.3f}" prints)
    assert f"{-0.0004:.3f}" == "-0.000"
    assert format_ci((-0.0004, -0.0012, 0.0003)) == "0.000 [-0.001, 0.000]"
    assert format_ci((-0.004, -0.0049, -0.001), 2) == "0.00 [0.00, 0.00]"
    assert format_ci((0.5, 0.25, 0.75)) == "0.500 [0.250, 0.750]"
    assert format_ci(None) == "-"


def test_mean_ci_is_the_student_t_interval_of_the_mean():
    # 1, 2, 3: mean 2, sample sd 1, t(0.975, 2 df) = 4.302653 -> half width 4.302653 / sqrt(3) = 2.484138
    m, lo, hi = mean_ci([1.0, 2.0, 3.0])
    assert m == 2.0 and lo == pytest.approx(2 - 2.484138, abs=1e-6) and hi == pytest.approx(2 + 2.484138, abs=1e-6)
    assert mean_ci([0.7]) == (0.7, 0.7, 0.7) and mean_ci([0.5, 0.5]) == (0.5, 0.5, 0.5)     # no spread: no width


def test_separated_means_entirely_above():
    assert separated((0.9, 0.8, 1.0), (0.5, 0.4, 0.79))
    assert not separated((0.9, 0.7, 1.0), (0.5, 0.4, 0.75))      # overlapping
    assert not separated((0.5, 0.4, 0.79), (0.9, 0.8, 1.0))      # below, not above
    assert not separated(None, (0.5, 0.4, 0.6)) and not separated((0.5, 0.4, 0.6), None)

def test_probability_of_improvement_counts_ties_as_half():
    # task t: x runs 1 2 3, y runs 0 2 2 -> pairs won: 1 (1>0), 2 (2>0, two ties), 3 -> 6 of 9
    # task u: x always above y -> 1; the mean over the tasks is (2/3 + 1) / 2
    x = {"t": [[1.0], [2.0], [3.0]], "u": [[1.0], [1.0], [1.0]]}
    y = {"t": [[0.0], [2.0], [2.0]], "u": [[0.0], [0.0], [0.0]]}
    assert probability_of_improvement(x, y) == pytest.approx(5 / 6)
    assert probability_of_improvement(y, x) == pytest.approx(1 / 6)


def test_probability_of_improvement_ci_of_two_units_gives_the_hand_computed_percentiles():
    # x has units 0 and 1, y the single unit 1/2: a resample of x holds k ones of 2, so P(X > Y) = k / 2 is
    # 0 (p 1/4), 1/2 (p 1/2) or 1 (p 1/4); the 2.5% and 97.5% percentiles are 0 and 1, the point 1/2
    assert probability_of_improvement_ci({"t": [[0.0, 1.0]]}, {"t": [[0.5]]}, reps=4000, seed=1) == (0.5, 0.0, 1.0)
    # always above: every replicate is 1; ties count one half in every replicate too
    assert probability_of_improvement_ci({"t": [[2.0, 3.0]]}, {"t": [[0.0, 1.0]]}, reps=50) == (1.0, 1.0, 1.0)
    assert probability_of_improvement_ci({"t": [[1.0, 1.0]]}, {"t": [[1.0]]}, reps=50) == (0.5, 0.5, 0.5)


def test_probability_of_improvement_ci_is_seeded_and_holds_the_point():
    rng = np.random.default_rng(2)
    x = {t: [list(rng.normal(0.2, 1, size=30)) for _ in range(4)] for t in "ab"}
    y = {t: [list(rng.normal(0.0, 1, size=30)) for _ in range(4)] for t in "ab"}
    ci = probability_of_improvement_ci(x, y, reps=400, seed=3)
    assert ci == probability_of_improvement_ci(x, y, reps=400, seed=3)
    assert ci[0] == probability_of_improvement(x, y)
    assert ci[1] <= ci[0] <= ci[2]


def test_elo_bootstrap_does_not_depend_on_the_order_of_the_strata():
    # the same games listed in another order (a stored board and a fresh one) give the same CIs
    strata = {"a|kuhn|bot": [("a", "bot", 1.0, 30), ("a", "bot", 0.5, 10), ("a", "bot", 0.0, 20)],
              "b|kuhn|bot": [("b", "bot", 1.0, 25), ("b", "bot", 0.5, 5), ("b", "bot", 0.0, 30)],
              "c|leduc|bot": [("c", "bot", 1.0, 12), ("c", "bot", 0.5, 1), ("c", "bot", 0.0, 9)]}
    reordered = dict(reversed(list(strata.items())))
    assert bradley_terry_bootstrap(strata, anchor="bot", reps=100, seed=0) == \
        bradley_terry_bootstrap(reordered, anchor="bot", reps=100, seed=0)


def test_bradley_terry_three_wins_in_four_is_190_elo():
    games = [("a", "b", 1.0, 1.0)] * 3 + [("a", "b", 0.0, 1.0)]
    elo = bradley_terry(games, anchor="b", anchor_elo=0.0)
    assert elo["b"] == 0.0
    assert elo["a"] == pytest.approx(400 * math.log10(3))          # p_a / p_b = 3 / 1


def test_bradley_terry_weights_and_prior():
    # one win weighted 3 and one loss weighted 1 is the same as three wins and a loss
    assert bradley_terry([("a", "b", 1.0, 3.0), ("a", "b", 0.0, 1.0)], anchor="b")["a"] == pytest.approx(
        1000 + 400 * math.log10(3))
    # 4-0: no finite MLE; with a prior of one draw (1/2 win each): (4 + 1/2) / (0 + 1/2) = 9
    with pytest.raises(ValueError, match="never scored"):
        bradley_terry([("a", "b", 1.0, 4.0)])
    assert bradley_terry([("a", "b", 1.0, 4.0)], anchor="b", anchor_elo=0, prior=1.0)["a"] == pytest.approx(
        400 * math.log10(9))


def test_bradley_terry_transitive_ratings_add_up():
    # a beats b 2:1 and b beats c 2:1 in strength, with c-a games consistent with 4:1 (expected scores)
    games = [("a", "b", 2 / 3, 30.0), ("b", "c", 2 / 3, 30.0), ("a", "c", 4 / 5, 30.0)]
    elo = bradley_terry(games, anchor="c", anchor_elo=0.0)
    assert elo["b"] == pytest.approx(400 * math.log10(2), abs=1e-6)
    assert elo["a"] == pytest.approx(400 * math.log10(4), abs=1e-6)


def test_bradley_terry_bootstrap_ci_holds_the_point_and_narrows_with_games():
    few = {"s": [("a", "b", 1.0, 6), ("a", "b", 0.0, 4)]}
    many = {"s": [("a", "b", 1.0, 600), ("a", "b", 0.0, 400)]}
    f = bradley_terry_bootstrap(few, anchor="b", reps=200, seed=0)
    m = bradley_terry_bootstrap(many, anchor="b", reps=200, seed=0)
    for fit in (f, m):
        elo, low, high = fit["a"]
        assert low <= elo <= high
        assert fit["b"] == (1000.0, 1000.0, 1000.0)
    assert (m["a"][2] - m["a"][1]) < (f["a"][2] - f["a"][1]) / 5


def test_rank_counts_the_intervals_entirely_above():
    intervals = [(0.5, 0.7), (0.1, 0.3), (0.2, 0.6), (0.8, 0.9)]
    # (0.5, 0.7): only (0.8, 0.9) is above -> 2; (0.1, 0.3): 0.5 and 0.8 -> 3; (0.2, 0.6): 0.8 -> 2; top -> 1
    assert ranks(intervals) == [2, 3, 2, 1]


def test_batched_iqm_agrees_with_scipy_trim_mean():
    from leaderboard.stats import _iqm_batch

    rng = np.random.default_rng(3)
    for shape in [(4, 1, 5), (4, 3, 7), (4, 5, 2)]:
        batch = rng.normal(size=shape)
        assert _iqm_batch(batch) == pytest.approx([iqm(m) for m in batch])


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_agrees_with_rliable_on_a_fixed_example():
    """Cross-check against rliable (Agarwal et al. 2021), where it installs (pip install rliable): the IQM and the
    probability of improvement exactly; the stratified-bootstrap CI within Monte-Carlo error. With one unit per
    (run, task) our two-level bootstrap is rliable's run-level one."""
    rliable_metrics = pytest.importorskip("rliable.metrics")
    rly = pytest.importorskip("rliable.library")
    rng = np.random.default_rng(11)
    x = rng.normal(0.6, 0.3, size=(6, 4))            # runs x tasks
    y = rng.normal(0.4, 0.3, size=(6, 4))
    as_scores = lambda m: {f"t{j}": [[m[i, j]] for i in range(m.shape[0])] for j in range(m.shape[1])}  # noqa
    assert iqm(x) == pytest.approx(rliable_metrics.aggregate_iqm(x))
    assert probability_of_improvement(as_scores(x), as_scores(y)) == pytest.approx(
        rliable_metrics.probability_of_improvement(x, y))
    point, low, high = stratified_bootstrap(as_scores(x), reps=5000, seed=0)
    _, cis = rly.get_interval_estimates({"x": x}, lambda s: np.array([rliable_metrics.aggregate_iqm(s)]),
                                        reps=5000, random_state=np.random.RandomState(0))
    assert point == pytest.approx(rliable_metrics.aggregate_iqm(x))
    assert low == pytest.approx(cis["x"][0, 0], abs=0.03)
    assert high == pytest.approx(cis["x"][1, 0], abs=0.03)


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


def test_one_sided_sign_flip_matches_hand_enumeration():
    # the 8 sums of +-1 +-2 +-3: 6, 4, 2, 0, 0, -2, -4, -6
    # d = [1, 2, 3] (sum 6): "greater" counts sums >= 6: 1 of 8; "less" counts sums <= 6: all 8; two-sided 2 of 8
    assert sign_flip_test([1, 2, 3], alternative="greater") == (0.125, True)
    assert sign_flip_test([1, 2, 3], alternative="less") == (1.0, True)
    assert sign_flip_test([1, 2, 3]) == (0.25, True)
    # d = [1, -2, 3] (sum 2): sums >= 2: 6, 4, 2, 3 of 8; sums <= 2: 2, 0, 0, -2, -4, -6, 6 of 8
    assert sign_flip_test([1, -2, 3], alternative="greater") == (0.375, True)
    assert sign_flip_test([1, -2, 3], alternative="less") == (0.75, True)
    # all differences 0: every pattern is as extreme either way
    assert sign_flip_test([0.0, 0.0], alternative="greater") == (1.0, True)
    # five seeds all one way, tested in that direction: 1 / 32, the smallest a one-sided test of five can give
    assert sign_flip_test([-0.5, -0.4, -0.6, -0.55, -0.3], alternative="less")[0] == pytest.approx(1 / 32)
    rng = np.random.default_rng(5)
    d = rng.normal(0.2, 1.0, size=30)             # Monte Carlo beyond 16: half the two-sided p on the side found
    two, _ = sign_flip_test(d, mc_reps=20_000, seed=2)
    one, exact = sign_flip_test(d, mc_reps=20_000, seed=2, alternative="greater" if d.sum() > 0 else "less")
    assert not exact and one == pytest.approx(two / 2, abs=0.01)
    with pytest.raises(ValueError, match="alternative"):
        sign_flip_test([1.0], alternative="above")


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
