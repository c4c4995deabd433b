"""Power analysis for the credit suite (issue 16): how many training seeds separate two methods in each family?

    python benchmarks/suite_power.py OUT/credit-micro@2/results.json [--a broadcast --b shuffled] [--max-seeds 20]

Reads the per-seed family scores of a pilot run of ``benchmark-credit`` (``results.json``) and, per family, takes the
pilot's mean difference ``d = mean_a - mean_b`` and standard deviations ``s_a, s_b`` (``ddof=1``) as the effect and
its noise. The suite calls two methods separated when their 95% Student-t intervals do not overlap:
``d > t_{0.975, n-1} (s_a + s_b) / sqrt(n)`` with ``n`` seeds each (``scipy.stats.t``). The script prints, per family,
``d``, ``s_a``, ``s_b``, Cohen's ``d / s_pooled`` and the smallest ``n`` that meets the rule at the pilot's values
(the expected-case requirement: with the true values equal to the pilot's, half of all repetitions would do worse);
``--margin 1.5`` asks for that with the noise 1.5 times larger, a safety factor for a pilot of a few seeds.
"""

from __future__ import annotations

import argparse
import json
import math

import numpy as np
from scipy import stats


def seeds_needed(d: float, s_a: float, s_b: float, max_seeds: int = 50) -> int | None:
    """Smallest ``n >= 2`` with ``d > t_{0.975, n-1} (s_a + s_b) / sqrt(n)``; ``None`` if none up to ``max_seeds``."""
    for n in range(2, max_seeds + 1):
        if d > stats.t.ppf(0.975, n - 1) * (s_a + s_b) / math.sqrt(n):
            return n
    return None


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("results")
    p.add_argument("--a", default="broadcast")
    p.add_argument("--b", default="shuffled")
    p.add_argument("--margin", type=float, default=1.0)
    p.add_argument("--max-seeds", type=int, default=50)
    args = p.parse_args()
    scored = json.load(open(args.results))["scored"]["methods"]
    a, b = scored[args.a]["families"], scored[args.b]["families"]
    print(f"| family | {args.a} mean | {args.b} mean | d | s_{args.a} | s_{args.b} | Cohen's d | pilot seeds | "
          f"seeds needed (margin {args.margin}) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for fam in a:
        if fam not in b:
            continue
        xa, xb = np.array(a[fam]["seeds"]), np.array(b[fam]["seeds"])
        d = float(xa.mean() - xb.mean())
        sa, sb = float(xa.std(ddof=1)), float(xb.std(ddof=1))
        pooled = math.sqrt((sa ** 2 + sb ** 2) / 2) or float("nan")
        n = seeds_needed(d, args.margin * sa, args.margin * sb, args.max_seeds)
        print(f"| {fam} | {xa.mean():.3f} | {xb.mean():.3f} | {d:.3f} | {sa:.3f} | {sb:.3f} | {d / pooled:.2f} | "
              f"{len(xa)} | {n if n is not None else f'> {args.max_seeds}'} |")


if __name__ == "__main__":
    main()
