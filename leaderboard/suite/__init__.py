"""The credit-assignment suite: families of small cooperative and zero-sum tasks, each sweeping one
difficulty knob, with every setting scored on a scale where uniform-random play = 0 and the optimum (or the env's
reference policy) = 1, in the style of bsuite (Osband et al. 2020, "Behaviour Suite for Reinforcement Learning").

    python -m leaderboard benchmark-credit shuffled --tier micro --baselines broadcast,loo [--jobs 2 | --ray auto]

A suite file (``leaderboard/protocols/suite/<id>@<version>.json``, schema ``marl_llm_suite``)::

    {"schema": "marl_llm_suite", "id": "credit-micro", "version": 2, "track": "credit", "tier": "micro",
     "description": "...", "action_mode": "discrete",
     "train": {"model": "mlp", "mode": "generate", "steps": 100, "tasks_per_step": 8, "group_size": 4,
               "seeds": [0, 1, 2, 3, 4], "max_tokens": null},
     "score": {"last_fraction": 0.2, "eval_seeds": {"start": 1099511627776, "count": 200}, "anchor_episodes": 1000,
               "checkpoints": 5},
     "families": [{"name": "team_size", "title": "Team size", "knob": "n_voters",
                   "settings": [{"name": "voting/plurality/n2", "env_id": "voting-v0", "env_version": 0,
                                 "env_kwargs": {"n_voters": 2}, "knob": 2, "play": "self",
                                 "normalize": {"zero": "random", "one": "clue_follower"}}, ...]}, ...]}

A setting may also name ``"partners"`` (the trainer's ``--partners``, e.g. ``"thinker=reference"``), ``"opponent"``
(``play: "versus"``: the reference policy it is scored against), ``"eval_count"`` (versus: its own number of
evaluation seeds; Kuhn's payoffs are noisy next to the random-to-Nash gap), ``"evaluate"`` (versus: ``"sampled"``,
the default, ``"exact"`` or ``"exploitability"``; below) and ``"train"`` (a few budget fields that override the
suite's, e.g. ``{"steps": 200}``, or ``"seeds"``: the setting's own run seeds, distinct ints below 2**16, as many in
every setting, so settings need not share model inits and task streams; methods pair by a seed's position in the
setting's list) and ``"score"`` (``play: "self"``: ``"team_reward"``, the default, or ``"decisive_reward"``, the
noise-free reward, the team reward less the episode's ``noise_total``: on the held-out seeds, or the tail of the
trainer's ``decisive_reward`` metric in a suite that keeps one checkpoint; see Scores).

A suite file is checked field by field as a protocol is, with the protocol's own parsers (:mod:`leaderboard.protocol`:
the header, the training budget, the evaluation seed range, each setting's env and its play and opponent); every
error is a :class:`~leaderboard.protocol.ProtocolError` naming the field.

Runs. One trainer run (:func:`baselines.train.train`) per method x setting x training seed, into
``OUT/<method>/<setting>/seed<s>`` (a complete run this machine trained there, unchanged, is reused:
:mod:`~leaderboard.suite.cache`). A method that cannot train on a setting's
env (``make_credit(m).branches(env_id)`` raises) is not applicable there. Every run is independent and deterministic
given its spec (one torch thread per run), so :func:`execute` may play them in this process (``jobs=1``), in ``jobs``
processes (:class:`concurrent.futures.ProcessPoolExecutor`), or on a Ray cluster (``ray="auto"`` or an address;
``"local"`` starts a private local instance): the results are identical (a test checks both).

Scores. What a run's raw score is depends on how many checkpoints the suite keeps (``score.checkpoints``).

A suite that keeps several (credit-micro@4: 5, evenly spaced, steps 20, 40, ..., 100, the last the final policy)
scores every run from its weights, on the held-out evaluation seeds (``eval_seeds``: 200 seeds from 2**40, a range
training never reaches), the same seeds and sampling seeds for every method and checkpoint (paired, deterministic):

* the score (``raw``) is the final policy's: ``play: "self"``, the team playing itself in every seat it trains (a
  scripted partner plays its role, as in training), the mean team reward over the seeds (for ``score:
  "decisive_reward"``, the noise-free decisive reward the env reports, the team reward less its ``noise_total``);
  ``play: "versus"``, the payoff against the opponent in each seat, or its exact value (below). The policy samples
  as it did in training; all seeds play in one batched rollout.
* the best checkpoint (``best``): every kept checkpoint is scored on both halves of the held-out seeds; the best is
  the one with the highest score on the first half (ties: the later one), and its score on the second half is
  reported (:func:`~leaderboard.suite.runs.best_checkpoint`). Choosing and reporting on the same seeds would report
  the largest of five noisy means, biased upward by the choice; reporting on seeds the choice never saw is
  unbiased. An exact setting (Kuhn, Leduc) has no noise: each checkpoint's exact score is the truth, so the best is
  chosen and reported on it.
* a run collapsed when it peaked, then fell: its best checkpoint's normalized score beats its final policy's (both on
  the second half of the seeds) by more than ``COLLAPSE_THRESHOLD`` (0.2; why that value: its comment in
  :mod:`~leaderboard.suite.score`). The tables print "k/n collapsed" beside "k/n failed".

The training tail is no score there: the curve (``metrics.jsonl``) is the submitter's file until ``--reproduce``
re-trains the run, while the weights are played here; and the tail averages the policies of the last 20 steps, not
the one a run ends with.

A suite that keeps one checkpoint (credit-micro@3 and older, the quick protocols) scores as it always did, so its
stored entries re-score identically:

* ``play: "self"`` (a team plays every seat): the mean team reward over the last ``last_fraction`` (20%) of its
  training steps, as the trainer logged it (``metrics.jsonl``, ``reward/team/*``, or ``reward/decisive/*`` for a
  ``score: "decisive_reward"`` setting; the batch of every step is ``tasks_per_step x group_size`` fresh episodes,
  so that is 20 steps x 32 episodes = 640 episodes at the micro budget).
* ``play: "versus"`` (zero-sum self-play, both seats learning): the final policy against ``opponent`` on the held-out
  evaluation seeds, in each seat, the payoff averaged over seats and seeds: the curve of a zero-sum self-play run is
  0 by construction, so only an outside reference can score it.

A setting with ``"evaluate": "exact"`` (Kuhn and Leduc, one hand) scores the same quantity with no sampling: the
policy's strategy is read from the env and its expected payoff against the equilibrium is computed over the whole
game tree (:mod:`leaderboard.exact`); ``"exploitability"`` scores minus its exploitability instead. Both exact figures
(``versus`` and ``exploitability``, chips per hand) are kept in every such run's result (of the final policy).
Anchors of an exact setting are exact too: ``"random"`` is uniform legal play, the reference bot is the equilibrium.

Normalization: ``(raw - value(zero)) / (value(one) - value(zero))``. For ``self`` settings ``value(P)`` is the mean
team reward of policy ``P`` (``"random"`` or a reference policy of the env, in every seat) measured on
``anchor_episodes`` seeds from ``eval_seeds.start`` with the setting's kwargs (deterministic; the same numbers in
every process), or a number given in the file (an optimum proved in the env's manual). For ``versus`` settings it is
the protocol rule (:mod:`leaderboard.protocol`): ``P``'s payoff against the opponent from ``spec(env).anchors``.

Statistics. Per method and setting, one normalized score per training seed. A family's score of a seed is the mean
over the family's settings; the suite's aggregate of a seed the mean over families. Reported: the mean over seeds
with a 95% Student-t confidence interval (``scipy.stats.t``; seeds are the independent units). Two methods are
compared by paired differences over the seeds they share (:mod:`leaderboard.verdicts`: a t interval of the mean
difference and an exact sign-flip test, Holm-corrected over every comparison the verdict prints). A failed run is
one that ends at random's score: a normalized score at or below ``FAILURE_THRESHOLD`` (0.1; :func:`failures`, the one
definition); every score is printed with "k/n failed", k of the n runs (seed x setting) it averages. Where the
suite keeps several checkpoints, each score block (setting, family, aggregate) also has ``best`` (the best
checkpoint's normalized score per seed with its interval, averaged over settings and families as the main score is)
and ``collapsed`` (how many of its runs collapsed, :func:`collapses`, the one definition). The leaderboard entry
(:func:`entry`) keeps the per-seed, per-setting scores as its ``scores`` (``{family: [[setting scores of seed 0],
...]}``), so the ranked table gets a column per family and the mean-of-families aggregate like every other board,
its failed runs per setting as ``failures`` (``{setting: count}``; older entries lack it), and, where the suite
keeps several checkpoints, its collapsed runs per setting as ``collapses`` (``{setting: count}``) and the best
checkpoint's per-seed scores as ``best`` (``{setting: [...]}``); older entries lack both.

Output (in the leaderboard page's style: :mod:`leaderboard.render`):

* :func:`family_verdicts`: the method under test against every baseline, on the aggregate of the families both
  cover and per family, by paired differences over seeds ("X above Y on FAMILY: paired difference ..." or "X vs Y on
  FAMILY: not separated (...)", Holm over all the lines), then the control check the suite exists for, "control:
  broadcast above shuffled on k/n families" (:func:`leaderboard.verdicts.suite_verdicts`); :func:`suite_coverage`
  says next to the numbers what they cover (training seeds as the CI's units, the last-20%-of-training mean or the
  held-out evaluation, the paired test).
* :func:`comparison_text` (``comparison.md``, and what ``benchmark-credit`` prints): facts, notes, verdict, coverage
  and the tables; no line is wider than 120 characters (a wide table is split by columns, repeating the method).
* :func:`suite_page` (``index.html``): :func:`leaderboard.render.page_head`'s style sheet and viewport; title naming the
  method under test and the suite, facts (budget, seeds, runs, wall time), applicability notes, the verdict, real
  HTML tables in horizontally scrollable wrappers (per family with the aggregate, training and counterfactual
  tokens; per setting with the anchors), the method under test highlighted.
* :func:`suite_figures`: a radar chart of the family means (bsuite's summary plot), one scaling figure per family
  that sweeps a knob (score against team size, delay, clue accuracy, idle seats: the mean with a 95% t band), and
  training tokens against the aggregate; one colour per method in every figure
  (:class:`leaderboard.style.Palette`), legends below the axes. :func:`write_figures` writes them as PNG files.
* :func:`board_columns` and :func:`board_radar`, registered with :func:`leaderboard.render.register` when this
  package is imported: on a suite's leaderboard board, the suite's aggregate beside the per-family columns, the
  entry's failed runs ("k/n failed" over all its runs; ``-`` for an entry without ``failures``), and the radar of
  the entries' family means.
* :func:`fidelity_columns` (:mod:`~leaderboard.suite.fidelity_column`), registered the same way: a credit-fidelity
  column per family for the entries whose ``fidelity`` field ``benchmark-credit`` filled (``-`` where there is none).

The code: :mod:`~leaderboard.suite.spec` (the file, its settings, the anchors), :mod:`~leaderboard.suite.runs` (plan
and run), :mod:`~leaderboard.suite.score` (normalisation, families, aggregate, the store entry),
:mod:`~leaderboard.suite.report` (words, tables, figures, page),
:mod:`~leaderboard.suite.submission` (each method's runs as a submission folder, and the validator that scores it),
:mod:`~leaderboard.suite.retrain` (``--reproduce``: re-train its runs), :mod:`~leaderboard.suite.cache` (anchors
and run receipts, outside ``--out``); intervals and formatting come from
:mod:`leaderboard.stats`, the process and Ray pool from :mod:`leaderboard.workers`; :func:`benchmark_suite` (here)
runs them in order.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Sequence

from leaderboard.style import Palette
from leaderboard.stats import mean_ci
from leaderboard.suite.report import TEXT_WIDTH, board_columns, board_radar, comparison_text, family_verdicts, \
    page_context, score_tables, suite_coverage, suite_figures, suite_page, write_figures
from leaderboard.suite.fidelity_column import fidelity_columns, fidelity_text
from leaderboard.suite.cache import anchor_cache
from leaderboard.suite.retrain import reproduce_suite, submit_suite
from leaderboard.suite.runs import applicable, complete_run, execute, plan, reusable_run, run_one, safe_name, \
    score_run, train_run
from leaderboard.suite.score import COLLAPSE_THRESHOLD, FAILURE_THRESHOLD, SIDE_FIGURES, add_suite_entry, \
    collapses, entry, failures, score
from leaderboard.suite.submission import MANIFEST, SuiteValidated, suite_entry, validate_suite, \
    write_submission
from leaderboard.suite.spec import EVALUATE, SUITE_DIR, SUITE_SCHEMA, Family, Setting, Suite, anchor_value, \
    latest_suite, list_suites, load_suite, parse_suite

__all__ = ["COLLAPSE_THRESHOLD", "EVALUATE", "FAILURE_THRESHOLD", "MANIFEST", "SIDE_FIGURES", "SUITE_DIR",
           "SUITE_SCHEMA", "TEXT_WIDTH", "Family", "Setting", "Suite", "SuiteValidated", "add_suite_entry",
           "anchor_cache", "anchor_value", "applicable", "benchmark_suite", "board_columns", "board_radar",
           "collapses", "comparison_text", "complete_run", "entry", "execute", "failures", "family_verdicts",
           "fidelity_columns", "fidelity_text", "latest_suite", "list_suites", "load_suite", "mean_ci", "page_context",
           "parse_suite", "plan", "reproduce_suite", "reusable_run", "run_one", "safe_name", "score", "score_run",
           "score_tables", "submit_suite", "suite_coverage", "suite_entry", "suite_figures", "suite_page", "train_run",
           "validate_suite", "write_figures", "write_submission"]


def benchmark_suite(method: str, suite: Suite | str, baselines: Sequence[str], out: str | Path,
                    jobs: int = 1, ray: str | None = None, progress: bool = True,
                    submit_to: str | Path | None = None, placement: dict[str, str] | None = None) -> dict[str, Any]:
    """Run the suite for ``method`` and ``baselines``; write ``OUT/<suite>/comparison.md``, ``index.html``,
    ``radar.png``, ``scaling.png`` and ``results.json``; returns ``{"scored", "markdown", "out", "skipped",
    "entries", "wall_s"}``. ``placement``: every run's ``device``, ``dtype`` and ``backend`` (:func:`plan`)."""
    suite = load_suite(suite) if not isinstance(suite, Suite) else suite
    out = Path(out) / suite.key
    methods = list(dict.fromkeys([method, *baselines]))     # each method once, the one under test first
    t0 = time.perf_counter()
    specs, skipped = plan(suite, methods, out, placement)
    results = execute(specs, jobs=jobs, ray=ray, progress=progress)
    wall = time.perf_counter() - t0
    scored = score(suite, results, cache=anchor_cache(suite))     # outside --out, keyed by content
    context = page_context(suite, scored, method, runs=len(specs), wall_s=wall,
                           execution=f"ray {ray}" if ray else f"{jobs} process(es)")
    text = comparison_text(suite, scored, context, skipped)
    out.mkdir(parents=True, exist_ok=True)
    (out / "comparison.md").write_text(text)
    (out / "results.json").write_text(json.dumps({"scored": scored, "runs": results}, indent=1))
    palette = Palette(scored["methods"])
    figs = suite_figures(suite, scored, palette)
    write_figures(suite, scored, out, palette, figs)
    (out / "index.html").write_text(suite_page(suite, scored, context, skipped, figs), encoding="utf-8")
    note = f"python -m leaderboard benchmark-credit {method} on {suite.key}"
    entries = []
    for m in scored["methods"]:     # each method's runs as a submission folder, validated like any submission
        runs = {(r["setting"], r["seed"]): Path(spec["out"]) for spec, r in zip(specs, results) if r["method"] == m}
        folder = write_submission(suite, m, runs, skipped.get(m, {}), out / "submissions" / safe_name(m), note)
        entries.append(suite_entry(validate_suite(folder, suite=suite)))
    if submit_to is not None:
        for e in entries:
            add_suite_entry(e, submit_to)
    return {"scored": scored, "markdown": text, "out": out, "skipped": skipped, "entries": entries, "wall_s": wall,
            "results": results}
