"""Small fake inputs for the page tests, a credit suite's ``score()`` output for many methods built from chosen means
(no training) and a store of entries made from it, and the colour distance the tests hold the methods' colours to."""

from __future__ import annotations

import numpy as np

from leaderboard.stats import mean_ci
from leaderboard.suite import add_suite_entry, entry

METHODS = ["broadcast", "none", "rae", "marshal", "coma", "loo", "ccpo_v1", "ccpo_v2", "dr_mas", "mappo", "ippo",
           "shuffled", "oracle"]          # baselines.credit.list_credits(), the 13 built-in methods and controls


def fake_scored(suite, means: dict[str, dict[str, float]], spread: float = 0.02, seeds: int = 3,
                exploitability: bool = False, tokens: dict[str, tuple[int, int]] | None = None) -> dict:
    """``leaderboard.suite.score()``'s output: every setting of ``means[method][family]`` scores that mean give or
    take ``spread`` across seeds (seed i gets mean + spread * (i - 1)); with ``exploitability``, each zero-sum
    setting reports one beside its score. ``tokens``: ``{method: (main, branches)}``, (1000, 0) for a method it
    leaves out; without it the k-th method spends (1000 (k + 1), 500 k), so a cost figure has points apart."""
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
        spent = tokens.get(m, (1000, 0)) if tokens is not None else (1000 * (k + 1), 500 * k)
        methods[m] = {"seeds": list(range(seeds)), "settings": settings, "families": families,
                      "aggregate": {"seeds": agg, "ci": mean_ci(agg)},
                      "tokens": dict(zip(("main", "branches"), spent)), "side": side}
    return {"suite": suite.key, "anchors": {s.name: {"zero": 0.1, "one": 0.9} for s in suite.settings},
            "methods": methods}


def store_fake_entries(store, suite, scored: dict, methods, seeds: int, extra: dict[str, dict] | None = None) -> None:
    """Add to ``store`` one suite entry per method of ``methods`` with ``scored``'s scores, its runs ``seeds`` per
    setting, each at raw 0.5 with a flat curve; ``extra[method]`` updates that entry's results."""
    for m in methods:
        results = [{"method": m, "setting": s, "seed": i, "raw": 0.5, "config_hash": f"{m}{i}",
                    "tokens": scored["methods"][m]["tokens"], "free_riding": {}, "curve": [0.5]}
                   for s in scored["methods"][m]["settings"] for i in range(seeds)]
        e = entry(suite, scored, m, results)
        e["results"].update((extra or {}).get(m, {}))
        add_suite_entry(e, store)


def fake_suite_entry(method: str, per_seed: dict[str, list[list[float]]], when: int,
                     fidelity: dict | None = None) -> dict:
    """A credit-suite entry as the store holds it: ``per_seed[family][seed]`` = that seed's setting scores,
    submitted ``when`` seconds into 2026; ``fidelity``: its credit-fidelity families (measured at the initial
    policy)."""
    e = {"id": f"suite@1/{method}", "label": f"{method}#{when:06d}", "method": method, "protocol": "suite@1",
         "track": "credit", "submitted": f"2026-01-01T00:00:{when:02d}+00:00", "self_reported": True,
         "results": {"scores": per_seed, "task_means": {f: float(np.mean(v)) for f, v in per_seed.items()},
                     "games": {}, "families": {f: {} for f in per_seed}},
         "manifest": {"players": {f: [{"model_id": "mlp"}] for f in per_seed}, "tokens": {"train_main": 1}}}
    if fidelity is not None:
        e["fidelity"] = {"policy": "initial", "families": fidelity}
    return e


def spread_means(suite, methods=METHODS) -> dict[str, dict[str, float]]:
    """Family means that differ across methods and families (-0.1 to 1.05), every method on every family."""
    return {m: {f.name: round(-0.1 + 1.15 * ((i * 7 + j * 3) % 13) / 12, 3) for j, f in enumerate(suite.families)}
            for i, m in enumerate(methods)}


def lab(colour: str) -> np.ndarray:
    """CIELAB (D65) of an sRGB ``#rrggbb``."""
    rgb = np.array([int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)])
    rgb = np.where(rgb > 0.04045, ((rgb + 0.055) / 1.055) ** 2.4, rgb / 12.92)
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ rgb
    xyz = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > 0.008856, np.cbrt(xyz), 7.787 * xyz + 16 / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def delta_e(a: str, b: str) -> float:
    return float(np.linalg.norm(lab(a) - lab(b)))
