"""A method against a baseline on the settings of a suite whose runs are all finished, while the rest still run.

    python benchmarks/suite_partial.py coma --baseline broadcast --out runs/benchmark-credit [--suite credit-micro@3]

``benchmark-credit`` writes its results only when every run is done; a method with counterfactual branches (coma)
takes hours. This reads the finished runs of ``OUT/SUITE/`` with the suite's own code (``suite.plan``, ``run_one`` on
complete runs, which reuses them, and ``suite.score``), keeps the settings where every seed of both methods is
finished, and prints per setting: both scores (95% t intervals over seeds), the paired difference, the verdict by the
interval rule of ``benchmarks/suite_claims.py``, and the decisions each method spent. When a whole family is
finished it also prints the family and, for a knob sweep, the per-seed slope of the paired difference on log2(knob).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from suite_claims import fmt, interval_verdict, log_axis, sign_verdict, slope_ci, t_ci  # noqa: E402

from leaderboard.suite import complete_run, load_suite, plan, run_one, score  # noqa: E402


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("method")
    p.add_argument("--baseline", default="broadcast")
    p.add_argument("--out", default="runs/benchmark-credit", help="benchmark-credit's --out")
    p.add_argument("--suite", default="credit-micro@3")
    args = p.parse_args(argv)
    suite = load_suite(args.suite)
    out = Path(args.out) / suite.key
    specs, _ = plan(suite, [args.method, args.baseline], out)
    done: dict[str, bool] = {}
    for s in specs:
        done[s["setting"]] = done.get(s["setting"], True) and complete_run(Path(s["out"]), s["steps"])
    settings = [s.name for s in suite.settings if done.get(s.name)]
    if not settings:
        raise SystemExit(f"no setting of {suite.key} has every run of {args.method} and {args.baseline} finished "
                         f"under {out}")
    results = [run_one(s) for s in specs if s["setting"] in settings]
    m = score(suite, results, cache=out / "anchors.json")["methods"]
    a, b = args.method, args.baseline
    tok: dict[tuple[str, str], list[int]] = {}
    for r in results:
        t = tok.setdefault((r["method"], r["setting"]), [0, 0])
        t[0] += r["tokens"]["main"]
        t[1] += r["tokens"]["branches"]
    print(f"{len(settings)} of {len(suite.settings)} settings of {suite.key} finished for {a} and {b}\n")
    print(f"| setting | {a} | {b} | {a} - {b} (paired) | verdict | {a}'s decisions: main + counterfactual "
          f"(x {b}) |")
    print("|---|---|---|---|---|---|")
    for s in settings:
        xa, xb = m[a]["settings"][s]["seeds"], m[b]["settings"][s]["seeds"]
        ta, tb = tok[(a, s)], tok[(b, s)]
        print(f"| {s} | {fmt(t_ci(xa))} | {fmt(t_ci(xb))} | {fmt(t_ci(np.subtract(xa, xb)))} | "
              f"{interval_verdict(xa, xb)} | {ta[0]:,} + {ta[1]:,} ({(ta[0] + ta[1]) / max(1, sum(tb)):.1f}x) |")
    for fam in suite.families:
        names = [s.name for s in fam.settings]
        if not all(n in settings for n in names):
            continue
        fa, fb = (np.mean([m[k]["settings"][n]["seeds"] for n in names], axis=0) for k in (a, b))
        print(f"\nfamily {fam.name}: {a} {fmt(t_ci(fa))}, {b} {fmt(t_ci(fb))}, paired {fmt(t_ci(fa - fb))}: "
              f"{interval_verdict(fa, fb)}")
        groups: dict[str, list[str]] = {}
        for st in fam.settings:
            if st.knob is not None:
                groups.setdefault(st.name.rsplit("/", 1)[0], []).append(st.name)
        for prefix, group in groups.items():
            if len(group) < 2:
                continue
            knobs = [m[a]["settings"][n]["knob"] for n in group]
            diffs = [np.subtract(m[a]["settings"][n]["seeds"], m[b]["settings"][n]["seeds"]) for n in group]
            ci = slope_ci(knobs, diffs)
            axis = log_axis(knobs)[1].format(fam.knob)
            print(f"  {prefix}/*: slope of {a} - {b} on {axis} {fmt(ci)} per doubling: "
                  f"{sign_verdict(ci[1], ci[2])}")


if __name__ == "__main__":
    main()
