"""python -m baselines.credit --episodes episodes.jsonl --method ccpo_v2: a credit method's advantages for a file of
episodes written by python -m baselines.rollout, as per-role statistics, with the method's diagnostics."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Sequence

import numpy as np

from baselines.credit import list_credits, make_credit
from baselines.episode import read_jsonl


def _option(text: str) -> tuple[str, Any]:
    key, sep, raw = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"--option takes KEY=VALUE, got {text!r}")
    try:
        return key, json.loads(raw)
    except json.JSONDecodeError:
        return key, raw


def role_statistics(episodes, advantages) -> dict[str, dict[str, float]]:
    """Per role: turns, mean, std, mean |A|, min and max of the advantages (per-token lists are flattened)."""
    by_role: dict[str, list[float]] = {}
    for e, row in zip(episodes, advantages):
        for t, a in zip(e.turns, row):
            by_role.setdefault(t.role, []).extend(a if isinstance(a, list) else [a])
    out = {}
    for role, values in sorted(by_role.items()):
        x = np.asarray(values, dtype=np.float64)
        out[role] = {"n": int(x.size), "mean": float(x.mean()), "std": float(x.std()),
                     "mean_abs": float(np.abs(x).mean()), "min": float(x.min()), "max": float(x.max())}
    return out


_EXAMPLES = """\
examples:
  python -m baselines.rollout --env think_solve-v0 --model random --episodes 32 --group-size 4 \\
      --branches ablate:thinker,ablate:solver --out episodes.jsonl
  python -m baselines.credit --episodes episodes.jsonl --method loo
  python -m baselines.credit --episodes episodes.jsonl --method dr_mas --option by=agent --json
  python -m baselines.credit --episodes episodes.jsonl --method mypkg.credit:MyMethod

Methods that need counterfactual branches say which when they are missing (loo and ccpo: ablate:AGENT;
coma: resample:AGENT:K); each method's equation is in its module's docstring (baselines/credit/NAME.py).
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m baselines.credit",
                                     description="A credit method's advantages for a file of episodes written by "
                                                 "python -m baselines.rollout,\nas per-role statistics, with the "
                                                 "method's diagnostics.",
                                     epilog=_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", required=True, help="a JSONL file written by python -m baselines.rollout")
    parser.add_argument("--method", required=True, help=f"the credit method: {', '.join(list_credits())}; or "
                                                        f"package.module:ClassName for your own")
    parser.add_argument("--option", action="append", type=_option, default=[], metavar="KEY=VALUE",
                        help="a method option (JSON value), e.g. --option std=\"sample\"; repeat for more")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    return parser


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = build_parser()
    args = parser.parse_args(argv)
    keys = [key for key, _ in args.option]
    twice = sorted({key for key in keys if keys.count(key) > 1})
    if twice:                   # dict() would keep the last value without a word
        parser.error(f"argument --option: {', '.join(twice)} given more than once")
    try:
        method = make_credit(args.method, **dict(args.option))
        episodes = read_jsonl(args.episodes)
        advantages = method.advantages(episodes)
        diagnostics = method.diagnostics(episodes)
    except (ValueError, TypeError, OSError) as e:
        parser.exit(2, f"error: {e}\n")
    stats = role_statistics(episodes, advantages)
    result = {"method": args.method, "episodes": len(episodes), "roles": stats, "diagnostics": diagnostics,
              "tokens_main": sum(e.tokens_generated for e in episodes),
              "tokens_branches": sum(e.branch_tokens_generated for e in episodes)}
    if args.json:
        print(json.dumps(result, indent=2))
        return result
    envs = sorted({e.env_id for e in episodes})
    print(f"method {args.method} | {len(episodes)} episodes of {', '.join(envs)} | "
          f"{len({e.group_key for e in episodes})} groups")
    unit = "token" if getattr(method, "per_token", False) else "turn"
    print(f"{'role':<12} {unit + 's':>7} {'mean':>9} {'std':>9} {'mean|A|':>9} {'min':>9} {'max':>9}")
    for role, s in stats.items():
        print(f"{role:<12} {s['n']:>7} {s['mean']:>+9.4f} {s['std']:>9.4f} {s['mean_abs']:>9.4f} "
              f"{s['min']:>+9.4f} {s['max']:>+9.4f}")
    if diagnostics:
        print("diagnostics: " + ", ".join(f"{k} {v:.4f}" for k, v in diagnostics.items()))
    print(f"tokens generated: main {result['tokens_main']}, branches {result['tokens_branches']}")
    return result


if __name__ == "__main__":
    sys.exit(0 if main() is not None else 1)
