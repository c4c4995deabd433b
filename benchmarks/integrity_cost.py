"""What issue 22's integrity costs: evaluate with seeded moves (policy@2) against the same protocol without them
(the version-1 way), and validate's full replay (legality + opponent re-derivation) against a one-episode sample.

    PYTHONPATH=$PWD python benchmarks/integrity_cost.py [--seeds 200] [--player random]

Both pairs run in one process, one after the other, so the ratios are robust to a noisy machine; the anchor of each
pair is its first member."""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
import time
from pathlib import Path

from leaderboard.evaluate import evaluate
from leaderboard.protocol import load_protocol
from leaderboard.validate import validate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--player", default="random")
    args = parser.parse_args()
    seeded = dataclasses.replace(load_protocol("policy"), seed_count=args.seeds)
    plain = dataclasses.replace(seeded, seeded_moves=False)
    players = {t.env_id: [args.player] for t in seeded.tasks}
    with tempfile.TemporaryDirectory() as tmp:
        times = {}
        for name, proto in (("unseeded (version-1 way)", plain), ("seeded_moves (policy@2)", seeded)):
            t = time.perf_counter()
            evaluate(proto, players, Path(tmp) / name, "bench")
            times[name] = time.perf_counter() - t
        a, b = times.values()
        print(f"evaluate {args.player}, {args.seeds} seeds x 5 tasks: unseeded {a:.1f} s (anchor), seeded {b:.1f} s, "
              f"ratio {b / a:.2f}")
        folder = Path(tmp) / "seeded_moves (policy@2)"
        t = time.perf_counter()
        validate(folder, protocol=seeded, sample=1, audit_seed=0)
        a = time.perf_counter() - t
        t = time.perf_counter()
        v = validate(folder, protocol=seeded)
        b = time.perf_counter() - t
        print(f"validate {v.episodes} episodes: --sample 1 {a:.1f} s (anchor), full replay + re-derivation of "
              f"{v.rederived} opponent moves {b:.1f} s, ratio {b / a:.2f}")


if __name__ == "__main__":
    main()
