"""Power analysis for the credit suite: how many training seeds does a claim need, estimated from a pilot run that is
not the run the claim will quote (issue 40)?

    python benchmarks/suite_power.py PILOT/results.json --certified credit-micro@4 [--a broadcast --b shuffled]
        [--comparisons 90] [--power 0.8] [--max-seeds 32]

Reads the per-seed family scores of a pilot run of ``benchmark-credit`` (``results.json``) and, per family and on
the aggregate of the families both methods cover, the paired differences ``a - b`` seed by seed. For each it prints
the pilot's mean difference and the fewest seeds at which a fresh run separates the two methods with probability
``--power`` under the suite's verdict rule (:func:`leaderboard.stats.seeds_needed`: the exact sign-flip p below
Holm's first threshold ``0.05 / comparisons`` and the Student-t interval of the differences excluding 0; fresh runs
simulated by redrawing the pilot's differences). ``--comparisons``: how many comparisons the verdict that will quote
the claim corrects together (the suite's verdict of one method against 12 others prints about 90).

The pilot must not be the certified run: ``--certified`` names the suite whose run the claim will quote, and a pilot
that shares a training seed with it is refused (a power estimate from the certified run picks its seed count from the
noise it then reports). A 5-seed pilot whose differences all share one sign gives optimistic counts (every redrawn
run shares it too): read them as floors.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from leaderboard.stats import seeds_needed


def certified_seeds(suite_file: str | Path) -> list[int]:
    """Every training seed a suite's run uses: its ``train.seeds`` and each setting's own ``train.seeds``."""
    raw = json.loads(Path(suite_file).read_text(encoding="utf-8"))
    seeds = set(raw["train"]["seeds"])
    for fam in raw["families"]:
        for s in fam["settings"]:
            seeds.update(s.get("train", {}).get("seeds", []))
    return sorted(seeds)


def power_rows(methods: Mapping[str, Mapping[str, Any]], a: str, b: str, certified: Sequence[int],
               comparisons: int = 1, power: float = 0.8, max_seeds: int = 32,
               reps: int = 500) -> list[tuple[str, float, int, int | None]]:
    """``(where, pilot mean difference, pilot seeds, seeds needed or None)`` for the aggregate of the families both
    methods cover, then each of them."""
    ma, mb = methods[a], methods[b]
    if list(ma["seeds"]) != list(mb["seeds"]):
        raise ValueError(f"{a} and {b} were scored on different seeds ({ma['seeds']}, {mb['seeds']}): not paired")
    shared = [f for f in ma["families"] if f in mb["families"]]
    if not shared:
        raise ValueError(f"{a} and {b} share no family")
    diffs = {f: np.asarray(ma["families"][f]["seeds"]) - np.asarray(mb["families"][f]["seeds"]) for f in shared}
    wheres = ([("aggregate", np.mean([diffs[f] for f in shared], axis=0))] if len(shared) > 1 else []) + \
        [(f, diffs[f]) for f in shared]
    rows = []
    for where, d in wheres:
        pilot = dict(zip(ma["seeds"], d.tolist()))
        rows.append((where, float(d.mean()), len(d),
                     seeds_needed(pilot, certified, comparisons, power, max_seeds, reps=reps)))
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("results", help="a pilot run's results.json (benchmark-credit's)")
    p.add_argument("--certified", required=True,
                   help="the suite whose run the claim will quote (a key such as credit-micro@4, or a path)")
    p.add_argument("--a", default="broadcast")
    p.add_argument("--b", default="shuffled")
    p.add_argument("--comparisons", type=int, default=1, help="comparisons the quoting verdict corrects together")
    p.add_argument("--power", type=float, default=0.8)
    p.add_argument("--max-seeds", type=int, default=32)
    args = p.parse_args(argv)
    from leaderboard.suite import SUITE_DIR

    path = Path(args.certified)
    if not path.is_file():
        path = SUITE_DIR / f"{args.certified}.json"
    if not path.is_file():
        sys.exit(f"--certified {args.certified}: no such suite file")
    scored = json.loads(Path(args.results).read_text(encoding="utf-8"))["scored"]["methods"]
    for m in (args.a, args.b):
        if m not in scored:
            sys.exit(f"{args.results} has no method {m!r}; it has {sorted(scored)}")
    try:
        rows = power_rows(scored, args.a, args.b, certified_seeds(path), args.comparisons, args.power, args.max_seeds)
    except ValueError as e:
        sys.exit(str(e))
    print(f"| where | {args.a} - {args.b}, pilot mean | pilot seeds | seeds needed ({args.power:.0%} power, Holm "
          f"over {args.comparisons}) |")
    print("|---|---|---|---|")
    for where, d, n, need in rows:
        print(f"| {where} | {d:+.3f} | {n} | {need if need is not None else f'> {args.max_seeds}'} |")


if __name__ == "__main__":
    main()
