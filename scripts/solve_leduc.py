"""Solve Leduc hold'em with CFR+ and cache the average strategy as data.

    .venv/bin/python scripts/solve_leduc.py [--iterations 10000] \
        [--out marl_llm_envs/envs/leduc_holdem/data/leduc_cfr.json]

Builds the game tree of :class:`marl_llm_envs.envs.leduc_holdem.reference.LeducGame` (the env's rules), runs
:func:`marl_llm_envs.cfr.solve` (CFR+, alternating updates, linear averaging), prints the exact
exploitability of the average strategy as it goes, and writes the strategy keyed by info set (probabilities of the
env's discrete actions fold, call, raise) with how it was made.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from marl_llm_envs.cfr import Tree, best_response_value, expected_value, exploitability, solve
from marl_llm_envs.envs.leduc_holdem.reference import DATA, LeducGame


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--iterations", type=int, default=10000)
    parser.add_argument("--check-every", type=int, default=1000)
    parser.add_argument("--vanilla", action="store_true", help="vanilla CFR (alternating updates) instead of CFR+")
    parser.add_argument("--digits", type=int, default=6, help="decimals kept in the JSON")
    parser.add_argument("--out", type=Path, default=DATA)
    args = parser.parse_args(argv)

    start = time.perf_counter()
    tree = Tree(LeducGame())
    print(f"tree: {tree.n} nodes, {len(tree.infosets)} info sets, built in {time.perf_counter() - start:.2f} s")
    result = solve(tree, args.iterations, plus=not args.vanilla, check_every=args.check_every,
                   callback=lambda t, s, e: print(f"iteration {t:6d}  {s:7.1f} s  exploitability {e:.6f} chips/hand",
                                                  flush=True))
    table = {key: [round(p, args.digits) for p in probs] for key, probs in tree.to_dict(result.average).items()}
    full = {}
    for key, i in tree.infosets.items():  # store over all three env actions (0 where illegal)
        probs = [0.0, 0.0, 0.0]
        for action, p in zip(tree.iset_actions[i], table[key]):
            probs[action] = p
        full[key] = probs
    stored = tree.from_dict({k: [full[k][a] for a in tree.iset_actions[i]] for k, i in tree.infosets.items()})
    expl = exploitability(tree, stored)
    doc = {
        "game": "leduc_holdem-v0",
        "algorithm": "vanilla CFR, alternating updates" if args.vanilla else
                     "CFR+ (regret matching+, alternating updates, linear averaging)",
        "actions": ["fold", "call", "raise"],
        "iterations": args.iterations,
        "seconds": round(result.seconds, 1),  # including the exploitability checks
        "machine": f"{platform.machine()}, {platform.python_implementation()} {platform.python_version()}",
        "exploitability": expl,
        "best_response_values": [best_response_value(tree, stored, 0), best_response_value(tree, stored, 1)],
        "value_player_0": expected_value(tree, stored),
        "strategy": dict(sorted(full.items())),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    # one field per line, one info set per line: small and diff-friendly
    strategy = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in doc["strategy"].items())
    head = ",\n".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in doc.items() if k != "strategy")
    args.out.write_text(f"{{\n{head},\n\"strategy\": {{\n{strategy}\n}}\n}}\n")
    print(f"{args.iterations} iterations in {result.seconds:.1f} s; stored strategy: exploitability {expl:.6f} "
          f"chips/hand, value for the first player {doc['value_player_0']:.5f}; wrote {args.out} "
          f"({args.out.stat().st_size // 1024} KB)")
    return doc


if __name__ == "__main__":
    main()
