"""The suite's scores: each run's raw score normalised against its setting's anchors, a family's score of a seed
(the mean over its settings), the aggregate (the mean over families), each with its Student-t interval over training
seeds (:func:`leaderboard.stats.mean_ci`), and the leaderboard entry of a method (see :mod:`leaderboard.suite`,
Normalization and Statistics)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

from baselines.outputs import replace_text
from leaderboard.evaluate import git_sha, package_versions
from leaderboard.protocol import ProtocolError, canonical_sha256
from leaderboard.stats import mean_ci
from leaderboard.store import ENTRY_SCHEMA, ENTRY_VERSION, write_entry
from leaderboard.suite.spec import Suite, anchor_value, cached_anchors

__all__ = ["COLLAPSE_THRESHOLD", "FAILURE_THRESHOLD", "SIDE_FIGURES", "add_suite_entry", "collapses", "entry",
           "failures", "score"]

# A failed run: one that ends at random's score. Its normalised score is at or below a tenth of the way from the
# random anchor (0) to the reference (1). Why a tenth and not 0 exactly: a run that learnt nothing lands near 0, on
# either side, within the sampling noise of its own score and of the random anchor (each a finite sample of
# episodes or deals). A run past 0.1 has closed a tenth of the gap, which is progress this reports as a score, even
# if it is slow. The threshold is a stated convention, not a test: see :func:`failures`.
FAILURE_THRESHOLD = 0.1


def failures(seeds: Sequence[float]) -> int:
    """How many of a setting's per-seed normalised scores are failed runs: at or below :data:`FAILURE_THRESHOLD`
    (0.1, the threshold itself counting as failed). This is the suite's one definition of a failed run; the tables
    print it as "k/n failed" beside each score, and a store entry keeps it per setting (``results["failures"]``)."""
    return sum(1 for x in seeds if x <= FAILURE_THRESHOLD)


# A collapsed run: one that peaked, then fell. Its best kept checkpoint (chosen on the first half of the held-out
# seeds) beats its final policy, both scored on the second half (the same 100 seeds at credit-micro@4, with common
# random numbers), by more than a fifth of the way from the random anchor (0) to the reference (1). Why a fifth: it is
# twice the failure threshold (a run that lost it lost twice what a failed run is allowed to have gained), and it is
# above the noise of the comparison: the best is chosen on other seeds, so a run that never fell has a difference of
# 0 in expectation, and measured on broadcast's credit-micro@4 runs (benchmarks/RESULTS.md, "Held-out scores") the
# difference spreads with a standard deviation of 0.000 (voting fraction n2: the final was best on every seed), 0.025
# (voting plurality n8) and 0.161 (message credit at clue accuracy 0.4, where the anchors are closest, so normalised
# noise is largest), with no run above 0.2. On a setting like the last one a count of 1 can be noise; the count is a
# flag beside the score, not a test. A stated convention, like the failure threshold: see :func:`collapses`.
COLLAPSE_THRESHOLD = 0.2


def collapses(best: Sequence[float], final: Sequence[float]) -> int:
    """How many runs collapsed: per run (seed), its best checkpoint's normalised score ``best`` exceeds its final
    policy's ``final`` (both on the second half of the held-out seeds) by more than :data:`COLLAPSE_THRESHOLD`
    (0.2). The suite's one definition of a collapsed run; the tables print it as "k/n collapsed", and a store entry
    keeps it per setting (``results["collapses"]``)."""
    if len(best) != len(final):
        raise ValueError(f"collapses: {len(best)} best scores against {len(final)} final ones")
    return sum(1 for b, f in zip(best, final) if b - f > COLLAPSE_THRESHOLD)


def score(suite: Suite, results: Sequence[dict[str, Any]], cache: str | Path | None = None) -> dict[str, Any]:
    """Normalized scores and CIs from :func:`leaderboard.suite.runs.run_one`'s results::

        {"anchors": {setting: {"zero", "one"}},
         "methods": {method: {"settings": {setting: {"seeds": [...], "ci": (m, lo, hi), "knob", "failed": k}},
                              "families": {family: {"seeds": [...], "ci": (m, lo, hi), "failed": k}},
                              "aggregate": {"seeds": [...], "ci": (m, lo, hi), "failed": k}, "tokens": {...}}}}

    ``failed``: how many runs (seed x setting) failed (:func:`failures`): of a setting's seeds; of a family's
    settings x seeds; of every setting x seed for the aggregate.

    Results of a suite that keeps several checkpoints (``run_one``'s ``"best"``: credit-micro@4) add, beside
    ``seeds``, ``ci`` and ``failed`` in each block (setting, family, aggregate), ``"best": {"seeds": [...], "ci":
    (m, lo, hi), "final": [...]}``, the best checkpoint's normalised score per seed (chosen on the first half of the
    held-out seeds, reported on the second: :func:`leaderboard.suite.runs.best_checkpoint`) and the final policy's
    on that same half (``final``), averaged over settings and families as the main score is, and ``"collapsed": k``,
    how many runs (seed x setting) collapsed (:func:`collapses`). Older results have neither, and neither has a
    block whose runs lack them.
    """
    known = cached_anchors(cache, suite) if cache is not None else {}
    anchors = {s.name: known.get(s.name) or {"zero": anchor_value(suite, s, "zero"),
                                             "one": anchor_value(suite, s, "one")}
               for s in suite.settings if any(r["setting"] == s.name for r in results)}
    if cache is not None:
        Path(cache).parent.mkdir(parents=True, exist_ok=True)
        replace_text(cache, json.dumps({"suite_sha256": suite.sha256, "anchors": {**known, **anchors}}, indent=1))
    for name, a in anchors.items():
        if not a["one"] > a["zero"]:
            raise ProtocolError(f"{suite.key}: setting {name}: the 'one' anchor ({a['one']:.4f}) must score above the "
                                f"'zero' anchor ({a['zero']:.4f}) in {suite.action_mode} mode")
    by: dict[str, dict[str, dict[int, float]]] = {}
    best: dict[str, dict[str, dict[int, tuple[float, float]]]] = {}     # method -> setting -> seed -> (best, final)
    tokens: dict[str, dict[str, int]] = {}
    side: dict[str, dict[str, dict[str, dict[int, float]]]] = {}       # method -> figure -> setting -> seed -> value
    position = _positions(suite, results)
    for r in results:
        for fig in SIDE_FIGURES:
            if fig in r:
                side.setdefault(r["method"], {}).setdefault(fig, {}).setdefault(r["setting"], {})[
                    position[r["setting"], r["seed"]]] = float(r[fig])
    for r in results:
        a = anchors[r["setting"]]
        by.setdefault(r["method"], {}).setdefault(r["setting"], {})[position[r["setting"], r["seed"]]] = \
            (r["raw"] - a["zero"]) / (a["one"] - a["zero"])
        if "best" in r:
            best.setdefault(r["method"], {}).setdefault(r["setting"], {})[position[r["setting"], r["seed"]]] = \
                tuple((r["best"][k] - a["zero"]) / (a["one"] - a["zero"]) for k in ("raw", "final"))
        t = tokens.setdefault(r["method"], {"main": 0, "branches": 0})
        for k in t:
            t[k] += int(r["tokens"].get(k, 0))
    methods = {}
    for m, settings in by.items():
        seeds = sorted({sd for v in settings.values() for sd in v})      # positions in the settings' seed lists
        for name, v in settings.items():
            if sorted(v) != seeds:
                raise ValueError(f"{m} on {name}: runs of seed positions {sorted(v)}, but {seeds} on its other "
                                 "settings: methods are compared seed position by seed position (run the plan)")
        out_s, out_f = {}, {}
        for fam in suite.families:
            present = [s for s in fam.settings if s.name in settings]
            for s in present:
                vals = [settings[s.name][sd] for sd in seeds]
                out_s[s.name] = {"family": fam.name, "knob": s.knob, "seeds": vals, "ci": mean_ci(vals),
                                 "failed": failures(vals)}
                peak = best.get(m, {}).get(s.name, {})
                if sorted(peak) == seeds:
                    out_s[s.name].update(_best_block([peak[sd] for sd in seeds]))
            if present:
                per_seed = [sum(settings[s.name][sd] for s in present) / len(present) for sd in seeds]
                out_f[fam.name] = {"seeds": per_seed, "ci": mean_ci(per_seed), "settings": [s.name for s in present],
                                   "failed": sum(out_s[s.name]["failed"] for s in present),
                                   **_mean_best([out_s[s.name] for s in present])}
        agg = [sum(f["seeds"][i] for f in out_f.values()) / len(out_f) for i in range(len(seeds))]
        methods[m] = {"seeds": [suite.train["seeds"][i] for i in seeds], "settings": out_s, "families": out_f,
                      "aggregate": {"seeds": agg, "ci": mean_ci(agg),
                                    "failed": sum(x["failed"] for x in out_s.values()),
                                    **_mean_best(list(out_f.values()))}, "tokens": tokens[m],
                      "side": {fig: {name: {"seeds": [v[sd] for sd in sorted(v)], "ci": mean_ci([v[sd] for sd in
                                                                                                sorted(v)])}
                                     for name, v in per.items()} for fig, per in side.get(m, {}).items()}}
    return {"suite": suite.key, "anchors": anchors, "methods": methods}


def _best_block(runs: list[tuple[float, float]]) -> dict[str, Any]:
    """A setting's ``best`` block and ``collapsed`` count from its runs' (best, final) normalised scores, one pair
    per seed."""
    b, f = [p[0] for p in runs], [p[1] for p in runs]
    return {"best": {"seeds": b, "ci": mean_ci(b), "final": f}, "collapsed": collapses(b, f)}


def _mean_best(blocks: list[dict[str, Any]]) -> dict[str, Any]:
    """A family's (or the aggregate's) ``best`` block, the per-seed mean of its parts' (settings', or families')
    best and final scores as the main score averages them, and the sum of their ``collapsed`` counts; nothing when
    one part has no best block (an older result)."""
    if not blocks or any("best" not in x for x in blocks):
        return {}
    n = len(blocks[0]["best"]["seeds"])
    b = [sum(x["best"]["seeds"][i] for x in blocks) / len(blocks) for i in range(n)]
    f = [sum(x["best"]["final"][i] for x in blocks) / len(blocks) for i in range(n)]
    return {"best": {"seeds": b, "ci": mean_ci(b), "final": f}, "collapsed": sum(x["collapsed"] for x in blocks)}


def _positions(suite: Suite, results: Sequence[dict[str, Any]]) -> dict[tuple[str, int], int]:
    """(setting, seed) -> the seed's position in the setting's own seed list (``train.seeds`` of the setting, else
    the suite's): a method's seed i of every setting is its i-th seed there, and methods pair by that position (the
    same seed of the same setting; settings need not share seeds). A method's ``"seeds"`` label the positions with the
    suite's ``train.seeds``."""
    lists = {s.name: list(suite.budget(s)["seeds"]) for s in suite.settings}
    out = {}
    for r in results:
        own = lists[r["setting"]]
        if r["seed"] not in own:
            raise ValueError(f"{r['method']} on {r['setting']}: seed {r['seed']} is not one of the setting's seeds "
                             f"{own}")
        out[r["setting"], r["seed"]] = own.index(r["seed"])
    return out


# figures a run may report besides its score (``run_one``), shown per setting beside the scores: what they measure
SIDE_FIGURES = {
    "exploitability": "exploitability of the final policy (chips per hand; 0 = an equilibrium; exact)",
    "idle_drift": "idle seats' drift, KL(p || uniform) of their final move distribution (nats; 0 = none, "
                  "log 3 = 1.099 = deterministic)",
}


def entry(suite: Suite, scored: dict[str, Any], method: str, results: Sequence[dict[str, Any]],
          note: str = "") -> dict[str, Any]:
    """A store entry for ``method`` (schema ``marl_llm_entry``): per family, per seed, the setting scores (the board
    shows the mean-of-families aggregate and a column per family), the failed runs per setting (``failures``:
    ``{setting: count}``, :func:`failures`; older entries lack the field), for a suite that keeps several
    checkpoints the collapsed runs per setting (``collapses``: ``{setting: count}``, :func:`collapses`) and the best
    checkpoint's normalised score per seed (``best``: ``{setting: [...]}``; older entries lack both), and the
    provenance of every run (its
    config hash, learning curve and raw score). Computed by the suite from the runs, not from a replayed submission."""
    v = scored["methods"][method]
    mine = [r for r in results if r["method"] == method]
    scores = {}
    for fam, f in v["families"].items():
        scores[fam] = [[v["settings"][s]["seeds"][i] for s in f["settings"]] for i in range(len(v["seeds"]))]
    runs = [{k: r[k] for k in ("setting", "seed", "raw", "config_hash", "tokens", "free_riding")} |
            {"learning_curve": r["curve"]} | {k: r[k] for k in ("best", "checkpoints") if k in r} for r in mine]
    digest = canonical_sha256({"suite": suite.sha256, "method": method, "runs": runs})
    players = {s: [{"model_id": suite.train["model"], "setting": s}] for s in v["settings"]}
    manifest = {"schema": "marl_llm_suite_result", "method": method, "note": note, "track": "credit",
                "suite": {"id": suite.id, "version": suite.version, "sha256": suite.sha256},
                "players": players, "tokens": {"train_main": v["tokens"]["main"],
                                               "train_branches": v["tokens"]["branches"]},
                "runs": runs, "anchors": scored["anchors"], "packages": package_versions(), "git_sha": git_sha(),
                "results_sha256": digest}
    return {"schema": ENTRY_SCHEMA, "schema_version": ENTRY_VERSION, "id": f"{suite.key}/{method}--{digest[:12]}",
            "label": f"{method}#{digest[:6]}", "method": method, "track": "credit", "protocol": suite.key,
            "submitted": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "self_reported": True, "seeds": "public",      # scored by whoever ran the suite, not replayed
            "manifest": manifest,
            "results": {"episodes": 0, "replayed": 0, "scores": scores,
                        "task_means": {f: x["ci"][0] for f, x in v["families"].items()}, "games": {},
                        "families": {f: {"ci": list(x["ci"]), "settings": x["settings"]}
                                     for f, x in v["families"].items()},
                        "aggregate": list(v["aggregate"]["ci"]),
                        "settings": {s: {"ci": list(x["ci"]), "seeds": x["seeds"], "knob": x["knob"]}
                                     for s, x in v["settings"].items()},
                        "failures": {s: failures(x["seeds"]) for s, x in v["settings"].items()},
                        **({"collapses": {s: x["collapsed"] for s, x in v["settings"].items()},
                            "best": {s: x["best"]["seeds"] for s, x in v["settings"].items()}}
                           if all("best" in x for x in v["settings"].values()) else {})}}


def add_suite_entry(e: dict[str, Any], store: str | Path) -> None:
    """Add a suite entry to the store (its index and ``<suite>/<method>--<hash>.json``,
    :func:`leaderboard.store.write_entry`); a duplicate is an error."""
    sha = e["manifest"]["results_sha256"]
    write_entry(e, store, episodes_sha256=sha, content_sha256=sha)
