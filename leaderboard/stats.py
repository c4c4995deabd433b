"""The leaderboard's statistics, written here: IQM with a stratified-bootstrap CI, probability of improvement,
Bradley-Terry ratings on the Elo scale with bootstrap CIs, and the rank rule.

Data shapes. An entry's scores are ``{task: [run_0_units, run_1_units, ...]}``: for each task, one array per run
(a training seed; a policy-track entry has one run) of per-unit normalized scores (a unit is one evaluation seed:
the team reward of a self-play episode, or the payoff averaged over both seats of a versus seed). A cell
``(run, task)`` scores the mean of its units.

* :func:`iqm`: the interquartile mean (mean of the middle 50%, ``scipy.stats.trim_mean(x, 0.25)``), as rliable.
* :func:`stratified_bootstrap`: the percentile CI of a statistic of the ``runs x tasks`` matrix of cell means.
  One replicate resamples, independently in every task (the stratum), the runs with replacement, and for every
  drawn run its units with replacement (two levels: with one run the CI still reflects the evaluation seeds).
  Seeded: the same inputs and seed give the same CI.
* :func:`probability_of_improvement`: ``P(X > Y)`` averaged over tasks, each task's the Mann-Whitney
  ``U / (n m)`` (ties count one half) between the two entries' run means (unit scores when either has one run),
  as in rliable (Agarwal et al. 2021, "Deep RL at the Edge of the Statistical Precipice", eq. for P(X > Y)).
  :func:`probability_of_improvement_ci` adds its percentile bootstrap CI: each replicate redraws, in every task,
  both entries' samples (run means or units, as above) with replacement.
* :func:`bradley_terry`: ratings from weighted pairwise outcomes (win 1, draw 1/2, loss 0) by the MM algorithm
  (Hunter 2004), on the Elo scale (400 log10 of the strength; the ``anchor`` player is fixed at ``anchor_elo``).
  :func:`bradley_terry_bootstrap` redraws each stratum from its own generator, seeded by ``(seed, crc32(stratum
  name))``: the same strata give the same CI whatever order they come in (a stored board and a fresh one agree).
* :func:`ranks`: rank = 1 + the number of entries whose CI lies entirely above this entry's CI.
* :func:`mean_ci`: the mean with its Student-t interval (the credit suite's intervals over training seeds);
  :func:`separated`: one interval entirely above another; :func:`format_ci`: ``"m [lo, hi]"`` as every table prints
  an interval (never a negative zero).
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np
from scipy import stats as _scipy_stats

__all__ = ["bootstrap_cells", "bradley_terry", "bradley_terry_bootstrap", "cell_matrix", "format_ci", "iqm",
           "mean_ci", "probability_of_improvement", "probability_of_improvement_ci", "ranks", "separated",
           "stratified_bootstrap", "sign_flip_test", "paired", "holm", "seed_scores", "aggregate_seed_scores",
           "family_mean_bootstrap", "paired_power", "seeds_needed"]

ELO = 400.0 / np.log(10.0)


def iqm(values: np.ndarray | Sequence[float]) -> float:
    """The interquartile mean of all values (the mean after trimming 25% from each end)."""
    x = np.asarray(values, dtype=np.float64).ravel()
    if x.size == 0:
        raise ValueError("iqm of no values")
    return float(_scipy_stats.trim_mean(x, 0.25))


def _iqm_batch(batch: np.ndarray) -> np.ndarray:
    """:func:`iqm` of each ``batch[b]`` at once (scipy's ``trim_mean`` cut: ``int(0.25 n)`` from each end)."""
    flat = np.sort(batch.reshape(batch.shape[0], -1), axis=1)
    cut = int(0.25 * flat.shape[1])
    return flat[:, cut:flat.shape[1] - cut].mean(axis=1)


def cell_matrix(scores: Mapping[str, Sequence[Sequence[float]]]) -> np.ndarray:
    """``runs x tasks`` matrix of cell means (tasks in the mapping's order); every task needs the same run count."""
    runs = {len(v) for v in scores.values()}
    if len(runs) != 1 or 0 in runs:
        raise ValueError(f"every task needs the same, non-zero number of runs; got {[len(v) for v in scores.values()]}")
    return np.array([[float(np.mean(r)) for r in task_runs] for task_runs in scores.values()]).T


def bootstrap_cells(scores: Mapping[str, Sequence[Sequence[float]]], reps: int = 2000, seed: int = 0) -> np.ndarray:
    """``reps x runs x tasks``: bootstrap replicates of the cell matrix (see the module docstring for the two-level,
    task-stratified resampling). Seeded: the same inputs and seed give the same replicates."""
    cell_matrix(scores)                                    # checks the shape
    rng = np.random.default_rng(seed)
    columns = []
    for task_runs in scores.values():
        units = [np.asarray(r, dtype=np.float64) for r in task_runs]
        n_runs = len(units)
        col = np.empty((reps, n_runs))
        for pos in range(n_runs):
            pick = rng.integers(n_runs, size=reps) if n_runs > 1 else np.zeros(reps, dtype=np.int64)
            for k in np.unique(pick):
                rows = np.flatnonzero(pick == k)
                u = units[k]
                idx = rng.integers(u.size, size=(rows.size, u.size))
                col[rows, pos] = u[idx].mean(axis=1)
        columns.append(col)
    return np.stack(columns, axis=2)


def stratified_bootstrap(scores: Mapping[str, Sequence[Sequence[float]]],
                         statistic: Callable[[np.ndarray], float] = iqm, reps: int = 2000, seed: int = 0,
                         confidence: float = 0.95) -> tuple[float, float, float]:
    """``(point, low, high)``: the statistic of the cell matrix and its percentile bootstrap CI over
    :func:`bootstrap_cells` replicates."""
    point = statistic(cell_matrix(scores))
    batch = bootstrap_cells(scores, reps=reps, seed=seed)  # reps x runs x tasks
    if statistic is iqm:
        boot = _iqm_batch(batch)
    else:
        boot = np.array([statistic(m) for m in batch])
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(boot, [tail, 100 - tail])
    return float(point), float(low), float(high)


def mean_ci(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float, float]:
    """``(mean, low, high)``: the Student-t interval of the mean (``scipy.stats.t``); one value, or values with no
    spread: ``(x, x, x)``."""
    x = np.asarray(values, dtype=np.float64).ravel()
    if x.size == 0:
        raise ValueError("an interval of no values")
    m = float(x.mean())
    if x.size < 2 or float(x.std(ddof=1)) == 0.0:
        return m, m, m
    half = float(_scipy_stats.t.ppf((1 + confidence) / 2, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size))
    return m, m - half, m + half


def separated(a: Sequence[float] | None, b: Sequence[float] | None) -> bool:
    """Interval ``a = (point, low, high)`` lies entirely above interval ``b``; ``False`` when either is missing."""
    return a is not None and b is not None and a[1] > b[2]


def format_ci(v: Sequence[float] | None, digits: int = 3) -> str:
    """``"point [low, high]"`` with ``digits`` decimals, ``"-"`` for no interval. A value that rounds to zero prints
    as ``0.000``, never ``-0.000``."""
    if v is None:
        return "-"
    x = [round(float(a), digits) + 0.0 for a in v[:3]]          # + 0.0: -0.0 becomes 0.0
    return f"{x[0]:.{digits}f} [{x[1]:.{digits}f}, {x[2]:.{digits}f}]"


def _poi_samples(x, y) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per shared task, the two samples P(X > Y) compares: run means, or unit scores when either has one run."""
    common = [t for t in x if t in y]
    if not common:
        raise ValueError("the two entries share no task")
    out = []
    for t in common:
        if len(x[t]) > 1 and len(y[t]) > 1:
            a = np.array([np.mean(r) for r in x[t]], dtype=np.float64)
            b = np.array([np.mean(r) for r in y[t]], dtype=np.float64)
        else:
            a = np.concatenate([np.asarray(r, np.float64) for r in x[t]])
            b = np.concatenate([np.asarray(r, np.float64) for r in y[t]])
        out.append((a, b))
    return out


def probability_of_improvement(x: Mapping[str, Sequence[Sequence[float]]],
                               y: Mapping[str, Sequence[Sequence[float]]]) -> float:
    """``P(X > Y)`` over the tasks both entries have (see the module docstring)."""
    out = []
    for a, b in _poi_samples(x, y):
        u = _scipy_stats.mannwhitneyu(a, b, alternative="two-sided").statistic
        out.append(float(u) / (a.size * b.size))
    return float(np.mean(out))


def _resampled_counts(rng: np.random.Generator, value_index: np.ndarray, n_values: int, reps: int) -> np.ndarray:
    """``reps x n_values``: how often each distinct value is drawn when the samples (``value_index``: each one's
    value) are redrawn with replacement, ``reps`` times."""
    n = value_index.size
    drawn = value_index[rng.integers(n, size=(reps, n))] + n_values * np.arange(reps)[:, None]
    return np.bincount(drawn.ravel(), minlength=reps * n_values).reshape(reps, n_values).astype(np.float64)


def probability_of_improvement_ci(x: Mapping[str, Sequence[Sequence[float]]],
                                  y: Mapping[str, Sequence[Sequence[float]]], reps: int = 1000, seed: int = 0,
                                  confidence: float = 0.95) -> tuple[float, float, float]:
    """``(P(X > Y), low, high)``: :func:`probability_of_improvement` and its percentile bootstrap CI.

    A replicate redraws, in every task, X's and Y's samples with replacement (``c_x(v)``, ``c_y(v)``: how often
    each distinct value ``v`` is drawn); its ``U`` is ``sum_v c_x(v) (c_y(< v) + c_y(= v) / 2)``,
    so a replicate costs one cumulative sum, not ``n m`` comparisons. Seeded: the same inputs and seed give the
    same CI."""
    point = probability_of_improvement(x, y)
    rng = np.random.default_rng(seed)
    total = np.zeros(reps)
    samples = _poi_samples(x, y)
    for a, b in samples:
        values, inverse = np.unique(np.concatenate([a, b]), return_inverse=True)
        cx = _resampled_counts(rng, inverse[:a.size], values.size, reps)
        cy = _resampled_counts(rng, inverse[a.size:], values.size, reps)
        below = np.cumsum(cy, axis=1) - cy
        total += (cx * (below + 0.5 * cy)).sum(axis=1) / (a.size * b.size)
    boot = total / len(samples)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(boot, [tail, 100 - tail])
    return point, float(low), float(high)


def bradley_terry(games: Sequence[tuple[str, str, float, float]], anchor: str | None = None,
                  anchor_elo: float = 1000.0, prior: float = 0.0, iters: int = 10_000,
                  tol: float = 1e-10) -> dict[str, float]:
    """Elo-scale Bradley-Terry ratings from ``(player_i, player_j, score_i, weight)`` outcomes.

    ``score_i`` is 1 (i won), 0.5 (draw) or 0 (j won); ``weight`` how much the outcome counts. ``prior`` adds that
    many weighted draws to every pair that met (keeps ratings finite when a player wins every game; 0 = plain MLE,
    which must then exist). The strengths are the fixed point of ``p_i = W_i / sum_j N_ij / (p_i + p_j)``;
    ``elo_i = 400 log10 p_i``, shifted so ``anchor`` (default: the first player in sorted order) has ``anchor_elo``.
    """
    players = sorted({g[0] for g in games} | {g[1] for g in games})
    if len(players) < 2:
        raise ValueError("Bradley-Terry needs games between at least two players")
    index = {p: i for i, p in enumerate(players)}
    n = len(players)
    wins = np.zeros(n)
    pairs = np.zeros((n, n))
    for i_name, j_name, score, weight in games:
        i, j = index[i_name], index[j_name]
        if i == j:
            raise ValueError(f"a game of {i_name} against itself")
        if not 0.0 <= score <= 1.0 or weight < 0:
            raise ValueError(f"score must be in [0, 1] and weight >= 0; got {score}, {weight}")
        wins[i] += weight * score
        wins[j] += weight * (1.0 - score)
        pairs[i, j] += weight
        pairs[j, i] += weight
    if prior > 0:
        met = pairs > 0
        pairs = pairs + prior * met
        wins = wins + 0.5 * prior * met.sum(axis=1)
    if np.any(wins <= 0):
        lost = [players[i] for i in np.flatnonzero(wins <= 0)]
        raise ValueError(f"{lost} never scored: the maximum-likelihood rating is -infinity; use prior > 0")
    p = np.ones(n)
    for _ in range(iters):
        denom = (pairs / (p[:, None] + p[None, :])).sum(axis=1)
        new = wins / denom
        new /= np.exp(np.mean(np.log(new)))
        if np.max(np.abs(np.log(new) - np.log(p))) < tol:
            p = new
            break
        p = new
    elo = ELO * np.log(p)
    ref = index[anchor] if anchor is not None else 0
    elo = elo - elo[ref] + anchor_elo
    return {name: float(elo[index[name]]) for name in players}


def bradley_terry_bootstrap(strata: Mapping[str, Sequence[tuple[str, str, float, int]]],
                            weights: Mapping[str, float] | None = None, anchor: str | None = None,
                            anchor_elo: float = 1000.0, prior: float = 1.0, reps: int = 200, seed: int = 0,
                            confidence: float = 0.95) -> dict[str, tuple[float, float, float]]:
    """``player -> (elo, low, high)``: the fit on all games and percentile CIs from refits on resampled games.

    ``strata``: stratum (e.g. an env and an entry) -> outcome counts ``(player_i, player_j, score_i, count)``;
    ``weights``: stratum -> the weight of one of its games (default 1). A replicate redraws each stratum's games
    with replacement (a multinomial over its outcomes, same number of games)."""
    weights = weights or {}

    def games_of(counts_by_stratum):
        return [(i, j, score, count * weights.get(k, 1.0)) for k, rows in counts_by_stratum.items()
                for (i, j, score, count) in rows if count > 0]

    point = bradley_terry(games_of(strata), anchor, anchor_elo, prior)
    draws = {}
    for k in sorted(strata):
        counts = np.array([r[3] for r in strata[k]], dtype=np.float64)
        total = int(counts.sum())
        if total > 0:
            rng = np.random.default_rng([seed, zlib.crc32(k.encode("utf-8"))])
            draws[k] = rng.multinomial(total, counts / total, size=reps)
    samples: dict[str, list[float]] = {p: [] for p in point}
    for rep in range(reps):
        redrawn = {k: [(r[0], r[1], r[2], int(c)) for r, c in zip(strata[k], new[rep])] for k, new in draws.items()}
        fit = bradley_terry(games_of(redrawn), anchor, anchor_elo, prior)
        for p, v in fit.items():
            samples[p].append(v)
    tail = (1 - confidence) / 2 * 100
    out = {}
    for p, v in point.items():
        low, high = np.percentile(samples[p], [tail, 100 - tail]) if samples[p] else (v, v)
        out[p] = (v, float(low), float(high))
    return out


def ranks(intervals: Sequence[tuple[float, float]]) -> list[int]:
    """Rank of each ``(low, high)`` interval: 1 + the number of intervals lying entirely above it."""
    return [1 + sum(1 for lo2, _ in intervals if lo2 > hi) for _, hi in intervals]


# ---- Paired comparisons and the family-mean aggregate (issue 40) ----------------------------------------------------
#
# Entries of one protocol share their training seeds (and the task streams those seeds draw), so two entries are
# compared seed by seed: the paired differences ``d_i = a_i - b_i`` over the n shared seeds, their mean with a Student-t
# interval, and a two-sided paired permutation (sign-flip) test of "the differences are symmetric about 0"
# (Fisher 1935; Good, "Permutation Tests", 2005, ch. 3): p = the share of the 2^n sign patterns ``s`` with
# ``|sum s_i d_i| >= |sum d_i|`` (enumerated for n <= 16, else a seeded Monte Carlo estimate (1 + hits) / (1 + reps)).
# With 5 seeds the smallest p it can give is 2/32 = 0.0625: five seeds cannot separate two methods at 5%.
# A command that prints m comparisons corrects their p-values together with Holm's step-down method (Holm 1979).
#
# The aggregate of an entry is the mean of its task (family) scores, never a trimmed mean across tasks: a task's score
# is the mean over runs (training seeds) of its cell means. Its CI comes from a bootstrap stratified by task: each
# task's runs are redrawn with replacement on their own generator (seeded by the task's name, so a task's draws do
# not depend on which other tasks are in the mean); a task's units (the settings of a suite family, which are fixed)
# are never redrawn, unless ``resample_units`` says they are random draws themselves (evaluation seeds).

EXACT_SIGN_FLIP_MAX = 16


@dataclass(frozen=True)
class Paired:
    """A paired comparison's numbers: ``a - b`` over ``n`` shared units (training seeds)."""

    n: int
    mean: float          # the mean paired difference
    low: float           # its Student-t interval (``confidence``)
    high: float
    p: float             # two-sided sign-flip p-value
    exact: bool          # True: all 2^n sign patterns enumerated; False: seeded Monte Carlo


def sign_flip_test(diffs: Sequence[float], mc_reps: int = 20_000, seed: int = 0,
                   alternative: str = "two-sided") -> tuple[float, bool]:
    """``(p, exact)``: the paired permutation test of ``diffs`` (see above). Exact for n <= 16.

    ``alternative``: ``"two-sided"`` (the share of sign patterns with ``|sum s_i d_i| >= |sum d_i|``), ``"greater"``
    (``sum s_i d_i >= sum d_i``: evidence that the differences are positive) or ``"less"`` (``<=``). A one-sided
    test is only honest where its direction was fixed before the data, as in a re-check on fresh seeds of a direction
    found on others."""
    if alternative not in ("two-sided", "greater", "less"):
        raise ValueError(f"alternative must be 'two-sided', 'greater' or 'less', got {alternative!r}")
    d = np.asarray(diffs, dtype=np.float64).ravel()
    if d.size == 0 or not np.all(np.isfinite(d)):
        raise ValueError(f"a sign-flip test needs finite paired differences, got {d.tolist()}")
    total = float(d.sum())
    if alternative == "two-sided" and total == 0.0:
        return 1.0, True
    tol = 1e-12 * max(1.0, float(np.abs(d).sum()))           # sums equal up to rounding count as "as extreme"

    def extreme(sums: np.ndarray) -> np.ndarray:
        if alternative == "greater":
            return sums >= total - tol
        if alternative == "less":
            return sums <= total + tol
        return np.abs(sums) >= abs(total) - tol

    if d.size <= EXACT_SIGN_FLIP_MAX:
        signs = ((np.arange(2 ** d.size)[:, None] >> np.arange(d.size)) & 1) * 2 - 1
        return float(np.mean(extreme(signs @ d))), True
    if mc_reps < 1:
        raise ValueError(f"mc_reps must be >= 1, got {mc_reps}")
    rng = np.random.default_rng(seed)
    hits, left = 0, mc_reps
    while left:                                              # in chunks: memory stays ~ 1000 x n
        k = min(left, 1000)
        signs = rng.integers(0, 2, size=(k, d.size)) * 2 - 1
        hits += int(np.sum(extreme(signs @ d)))
        left -= k
    return (1 + hits) / (1 + mc_reps), False


def paired(a: Sequence[float], b: Sequence[float], confidence: float = 0.95, mc_reps: int = 20_000,
           seed: int = 0) -> Paired:
    """The paired comparison of ``a`` and ``b``, the same units (seeds) in the same order."""
    x, y = np.asarray(a, dtype=np.float64).ravel(), np.asarray(b, dtype=np.float64).ravel()
    if x.size != y.size or x.size == 0:
        raise ValueError(f"a paired comparison needs the same, non-zero number of seeds on both sides; got {x.size} "
                         f"and {y.size} (entries of one protocol share their seeds: is one of them incomplete?)")
    d = x - y
    mean, low, high = mean_ci(d, confidence)
    p, exact = sign_flip_test(d, mc_reps=mc_reps, seed=seed)
    return Paired(int(d.size), mean, low, high, p, exact)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the input order: with the p-values sorted ascending
    ``p_(1) <= ... <= p_(m)``, ``adj_(i) = max_{j <= i} min(1, (m - j + 1) p_(j))``. Rejecting where ``adj < alpha``
    controls the family-wise error rate at ``alpha`` (Holm 1979)."""
    p = np.asarray(pvalues, dtype=np.float64).ravel()
    if p.size and (np.any(~np.isfinite(p)) or np.any(p < 0) or np.any(p > 1)):
        raise ValueError(f"p-values must lie in [0, 1], got {p.tolist()}")
    order = np.argsort(p, kind="stable")
    m = p.size
    adjusted = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = adjusted
    return out.tolist()


def seed_scores(task_runs: Sequence[Sequence[float]], units_are_seeds: bool = False) -> np.ndarray:
    """One task's scores per paired unit: per run (training seed), the mean of its units (a suite family's score of a
    seed: the mean over its settings). With one run whose units are evaluation seeds shared by every entry
    (``units_are_seeds``), the units themselves."""
    if not task_runs:
        raise ValueError("a task with no runs")
    if len(task_runs) == 1 and units_are_seeds:
        return np.asarray(task_runs[0], dtype=np.float64)
    return np.array([float(np.mean(r)) for r in task_runs])


def aggregate_seed_scores(scores: Mapping[str, Sequence[Sequence[float]]], tasks: Sequence[str],
                          units_are_seeds: bool = False) -> np.ndarray:
    """Per paired unit (seed), the mean over ``tasks`` of its task scores (:func:`seed_scores`)."""
    if not tasks:
        raise ValueError("an aggregate over no tasks")
    missing = [t for t in tasks if t not in scores]
    if missing:
        raise ValueError(f"no scores for {missing}: compare only over the tasks both entries cover")
    cols = [seed_scores(scores[t], units_are_seeds) for t in tasks]
    if len({c.size for c in cols}) != 1:
        raise ValueError(f"the tasks have different seed counts ({[c.size for c in cols]}): an aggregate per seed "
                         "needs the same seeds in every task")
    return np.mean(cols, axis=0)


def family_mean_bootstrap(scores: Mapping[str, Sequence[Sequence[float]]], tasks: Sequence[str] | None = None,
                          reps: int = 2000, seed: int = 0, confidence: float = 0.95,
                          resample_units: bool = False) -> tuple[float, float, float]:
    """``(point, low, high)``: the mean over ``tasks`` (default: all) of each task's mean over runs of its cell means,
    with a percentile CI from a bootstrap of the runs stratified by task (see above). Units are redrawn only with
    ``resample_units`` (evaluation seeds; never a suite's settings). Seeded and independent of the task order."""
    tasks = list(scores) if tasks is None else list(tasks)
    if not tasks:
        raise ValueError("an aggregate over no tasks")
    point = float(np.mean([np.mean([np.mean(r) for r in scores[t]]) for t in tasks]))
    total = np.zeros(reps)
    for t in tasks:
        units = [np.asarray(r, dtype=np.float64) for r in scores[t]]
        if not units or any(u.size == 0 for u in units):
            raise ValueError(f"task {t!r} has a run with no scores")
        rng = np.random.default_rng([seed, zlib.crc32(t.encode("utf-8"))])
        n = len(units)
        pick = rng.integers(n, size=(reps, n))               # the runs (training seeds) of each replicate
        if resample_units:                                   # and, within each drawn run, its units
            col = np.empty((reps, n))
            for k in range(n):
                rows = np.nonzero(pick == k)
                idx = rng.integers(units[k].size, size=(rows[0].size, units[k].size))
                col[rows] = units[k][idx].mean(axis=1)
        else:
            col = np.array([u.mean() for u in units])[pick]
        total += col.mean(axis=1)
    boot = total / len(tasks)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(boot, [tail, 100 - tail])
    return point, float(low), float(high)


# ---- Power from a pilot (issue 40) -----------------------------------------------------------------------------------
#
# How many seeds a claim needs is estimated from a pilot run on seeds of its own, never from the run it certifies
# (a pilot that is also the certified run picks its seed count from the noise it then reports). A fresh run of n seeds
# is simulated by drawing n paired differences with replacement from the pilot's; it "separates" when the verdict rule
# holds: the sign-flip p is below alpha / m (Holm's threshold for the smallest of m p-values, so the estimate is
# conservative for the others) and the t interval excludes 0 on the pilot's side.


def paired_power(pilot_diffs: Sequence[float], n: int, comparisons: int = 1, alpha: float = 0.05,
                 reps: int = 1000, seed: int = 0, mc_signs: int = 4000) -> float:
    """The share of simulated ``n``-seed runs (drawn from the pilot's paired differences) that separate the two
    methods in the pilot's direction under Holm over ``comparisons`` comparisons (see above). Exact sign-flip p for
    n <= 16; beyond, one seeded set of ``mc_signs`` random sign patterns serves every replicate."""
    d = np.asarray(pilot_diffs, dtype=np.float64).ravel()
    if d.size < 2 or not np.all(np.isfinite(d)):
        raise ValueError(f"a pilot needs at least two finite paired differences, got {d.tolist()}")
    if n < 2 or comparisons < 1 or reps < 1:
        raise ValueError(f"n >= 2, comparisons >= 1 and reps >= 1 required, got {n}, {comparisons}, {reps}")
    direction = np.sign(d.mean())
    if direction == 0:
        return 0.0
    rng = np.random.default_rng(seed)
    runs = d[rng.integers(d.size, size=(reps, n))]                       # reps x n simulated paired differences
    if n <= EXACT_SIGN_FLIP_MAX:
        signs = ((np.arange(2 ** n)[:, None] >> np.arange(n)) & 1) * 2 - 1
    else:
        signs = rng.integers(0, 2, size=(mc_signs, n)) * 2 - 1
    observed = np.abs(runs.sum(axis=1))
    tol = 1e-12 * np.maximum(1.0, np.abs(runs).sum(axis=1))
    hits = np.zeros(reps)
    for start in range(0, reps, 64):                                     # memory: 2^16 x 64 at most
        block = slice(start, start + 64)
        hits[block] = (np.abs(signs @ runs[block].T) >= observed[block] - tol[block]).sum(axis=0)
    p = hits / signs.shape[0] if n <= EXACT_SIGN_FLIP_MAX else (1 + hits) / (1 + signs.shape[0])
    p[observed == 0] = 1.0
    mean, sd = runs.mean(axis=1), runs.std(axis=1, ddof=1)
    half = _scipy_stats.t.ppf(0.975, n - 1) * sd / np.sqrt(n)
    excludes = direction * mean - half > 0
    return float(np.mean((p < alpha / comparisons) & excludes))


def seeds_needed(pilot: Mapping[int, float], certified_seeds: Sequence[int], comparisons: int = 1,
                 power: float = 0.8, max_seeds: int = 32, alpha: float = 0.05, reps: int = 1000,
                 seed: int = 0) -> int | None:
    """The fewest seeds (2 .. ``max_seeds``) whose :func:`paired_power` reaches ``power``, from a pilot given as
    ``{training seed: paired difference}``; ``None`` if none does. The pilot's seeds must not be among the
    ``certified_seeds`` (the protocol's run that the claim will quote)."""
    reused = sorted(set(pilot) & set(certified_seeds))
    if reused:
        raise ValueError(f"the pilot reuses the certified run's seeds {reused}: run the pilot on other seeds (a power "
                         "estimate from the certified run picks its seed count from the noise it then reports)")
    diffs = [pilot[k] for k in sorted(pilot)]
    for n in range(2, max_seeds + 1):
        if paired_power(diffs, n, comparisons, alpha, reps, seed) >= power:
            return n
    return None
