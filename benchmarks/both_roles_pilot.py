"""Pilot of suite settings on seeds of its own: does a credit-blind method separate from informed ones there?
(issue 40 item 5: message credit and dynamic teams with both roles learning).

    nice -n 10 python benchmarks/both_roles_pilot.py --settings think_solve/both/k2,orchestrator/both/parts2 \\
        --methods broadcast,none,shuffled,loo,coma,ccpo_v2 --seeds 30000-30005 [--suite credit-micro@4] \\
        [--steps 300] [--out /tmp/both_roles_pilot] [--against none]

Trains every method x setting x seed of the suite's budget for that setting (``--steps`` replaces the steps, for
exploring a budget), one run at a time in this process (single-threaded torch, like a suite worker), and prints per
setting and method the per-seed normalized scores (the setting's anchors: random = 0, optimum or reference team = 1),
their mean, and the CPU seconds of the runs (training and scoring). Then every method against ``--against`` (default
``none``, the credit-blind raw return), paired over the seeds: the mean difference with its 95% Student-t interval,
the exact sign-flip p-value, Holm's adjusted p over every comparison printed, "separated" only when the adjusted p is
below 0.05 and the interval excludes 0 ("not separated" otherwise), and the power of a 16-seed run at that effect
(:func:`leaderboard.stats.paired_power`, Holm over the printed comparisons). A method that does not apply to a setting
(ccpo outside think_solve) is skipped.

The seeds must not be any training seed of ``credit-micro@4`` (a pilot that is the certified run picks its design from
the noise it then reports): the script refuses them. Runs are kept in ``--out`` and reused by a later call.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from leaderboard.stats import holm, paired, paired_power
from leaderboard.suite import SUITE_DIR, load_suite, parse_suite
from leaderboard.suite.runs import applicable, run_one, run_spec, safe_name
from leaderboard.suite.spec import anchor_value

CERTIFIED = "credit-micro@4"


def seed_list(text: str) -> list[int]:
    """``"30000-30005"`` or ``"30000,30007"`` -> the seeds."""
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def certified_seeds() -> set[int]:
    raw = json.loads((SUITE_DIR / f"{CERTIFIED}.json").read_text(encoding="utf-8"))
    return set(raw["train"]["seeds"]) | {x for f in raw["families"] for s in f["settings"]
                                         for x in s.get("train", {}).get("seeds", [])}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", default=CERTIFIED, help="a suite key or a suite file")
    ap.add_argument("--settings", required=True, help="comma-separated setting names of the suite")
    ap.add_argument("--methods", default="broadcast,none,shuffled,loo,coma,ccpo_v2")
    ap.add_argument("--seeds", required=True, help="pilot seeds, e.g. 30000-30005 (none of credit-micro@4's)")
    ap.add_argument("--steps", type=int, default=0, help="replace the setting's steps (0: the suite's)")
    ap.add_argument("--against", default="none", help="the method every other one is compared with")
    ap.add_argument("--out", default="/tmp/both_roles_pilot")
    ap.add_argument("--json", default="", help="also write the scores here")
    args = ap.parse_args(argv)

    seeds = seed_list(args.seeds)
    clash = sorted(set(seeds) & certified_seeds())
    if clash:
        ap.error(f"--seeds {clash} are training seeds of {CERTIFIED}: a pilot uses seeds of its own")
    raw = json.loads(Path(args.suite).read_text()) if args.suite.endswith(".json") else None
    suite = parse_suite(raw) if raw is not None else load_suite(args.suite)
    by_name = {s.name: s for s in suite.settings}
    names = args.settings.split(",")
    unknown = [n for n in names if n not in by_name]
    if unknown:
        ap.error(f"--settings {unknown} are not in {suite.key}; its settings: {sorted(by_name)}")
    methods = args.methods.split(",")
    out = Path(args.out)
    scores: dict[str, dict[str, list[float]]] = {}
    cpu: dict[str, dict[str, float]] = {}
    for name in names:
        s = by_name[name]
        zero, one = anchor_value(suite, s, "zero"), anchor_value(suite, s, "one")
        steps = args.steps or suite.budget(s)["steps"]
        print(f"{name}: anchors zero {zero:.4f}, one {one:.4f}; {steps} steps x "
              f"{suite.budget(s)['tasks_per_step']} tasks x {suite.budget(s)['group_size']} samples", flush=True)
        for m in methods:
            if applicable(m, s.env_id) is not None:
                continue
            vals, t0 = [], time.process_time()
            for seed in seeds:
                spec = run_spec(suite, s, seed, m, out / f"steps{steps}" / safe_name(m) / safe_name(name) /
                                f"seed{seed}")
                spec["steps"] = steps
                r = run_one(spec)
                vals.append((r["raw"] - zero) / (one - zero))
            scores.setdefault(name, {})[m] = vals
            cpu.setdefault(name, {})[m] = time.process_time() - t0
            print(f"  {m:10s} mean {np.mean(vals):6.3f}  seeds {' '.join(f'{v:6.3f}' for v in vals)}  "
                  f"cpu {cpu[name][m]:6.1f} s ({cpu[name][m] / len(seeds):.1f} s/run)", flush=True)
    rows = [(name, m, paired(v, scores[name][args.against])) for name in names if args.against in scores[name]
            for m, v in scores[name].items() if m != args.against]
    if rows:
        adjusted = holm([p.p for _, _, p in rows])
        print(f"\npaired against {args.against} over {len(seeds)} seeds; Holm over the {len(rows)} comparisons below")
        for (name, m, p), adj in zip(rows, adjusted):
            word = "separated" if adj < 0.05 and (p.low > 0 or p.high < 0) else "not separated"
            diffs = np.asarray(scores[name][m]) - np.asarray(scores[name][args.against])
            power = paired_power(diffs, 16, comparisons=len(rows)) if np.ptp(diffs) > 0 or diffs[0] != 0 else 0.0
            print(f"  {name:28s} {m:10s} {p.mean:+.3f} [{p.low:+.3f}, {p.high:+.3f}]  p {p.p:.4f}  Holm {adj:.4f}  "
                  f"{word}; power at 16 seeds {power:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"suite": suite.key, "seeds": seeds, "steps": args.steps,
                                               "scores": scores, "cpu_s": cpu}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
