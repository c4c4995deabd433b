"""Small fake inputs for the page tests: a credit suite's ``score()`` output for many methods, and board entries,
built from chosen means (no training)."""

from __future__ import annotations

import numpy as np

from leaderboard.stats import mean_ci

METHODS = ["broadcast", "none", "rae", "marshal", "coma", "loo", "ccpo_v1", "ccpo_v2", "dr_mas", "mappo", "ippo",
           "shuffled", "oracle"]          # baselines.credit.list_credits(), the 13 built-in methods and controls


def fake_scored(suite, means: dict[str, dict[str, float]], spread: float = 0.02, seeds: int = 3,
                exploitability: bool = False) -> dict:
    """``leaderboard.suite.score()``'s output: every setting of ``means[method][family]`` scores that mean give or
    take ``spread`` across seeds (seed i gets mean + spread * (i - 1)); with ``exploitability``, each zero-sum
    setting reports one beside its score."""
    methods = {}
    for k, (m, fam_means) in enumerate(means.items()):
        settings, families, side = {}, {}, {}
        for f in suite.families:
            if f.name not in fam_means:
                continue
            for s in f.settings:
                vals = [fam_means[f.name] + spread * (i - 1) for i in range(seeds)]
                settings[s.name] = {"family": f.name, "knob": s.knob, "seeds": vals, "ci": mean_ci(vals)}
                if exploitability and s.play == "versus":
                    gaps = [0.3 - 0.01 * k + 0.005 * i for i in range(seeds)]
                    side.setdefault("exploitability", {})[s.name] = {"seeds": gaps, "ci": mean_ci(gaps)}
            per_seed = [float(np.mean([settings[s.name]["seeds"][i] for s in f.settings])) for i in range(seeds)]
            families[f.name] = {"seeds": per_seed, "ci": mean_ci(per_seed), "settings": [s.name for s in f.settings]}
        agg = [float(np.mean([x["seeds"][i] for x in families.values()])) for i in range(seeds)]
        methods[m] = {"seeds": list(range(seeds)), "settings": settings, "families": families,
                      "aggregate": {"seeds": agg, "ci": mean_ci(agg)},
                      "tokens": {"main": 1000 * (k + 1), "branches": 500 * k}, "side": side}
    return {"suite": suite.key, "anchors": {s.name: {"zero": 0.1, "one": 0.9} for s in suite.settings},
            "methods": methods}


def spread_means(suite, methods=METHODS) -> dict[str, dict[str, float]]:
    """Family means that differ across methods and families (-0.1 to 1.05), every method on every family."""
    return {m: {f.name: round(-0.1 + 1.15 * ((i * 7 + j * 3) % 13) / 12, 3) for j, f in enumerate(suite.families)}
            for i, m in enumerate(methods)}
