"""Does the micro-tier MLP team learn Mini Hanabi with a learned critic? (issue 19's acceptance run)

    python benchmarks/critic_learning.py --out runs/critic --steps 150 --seeds 0 1 2 3 4 --methods mappo broadcast

Trains ``python -m baselines.train --env mini_hanabi-v1 --action-mode discrete --model mlp --credit METHOD --seed S``
for every method and seed (``--jobs`` at once, one torch thread each), then reports per method: the team reward over
the first 10% of steps and the last 20%, their difference per seed, its mean with a 95% Student-t interval over the
seeds (``scipy.stats.t``), and the curves (mean over seeds of a ``--window``-step moving average) as a PNG and as
rows. Runs already complete in ``--out`` are read, not played again.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]


def run_one(out: Path, method: str, seed: int, steps: int, extra: list[str]) -> list[float]:
    folder = out / f"{method}-s{seed}"
    metrics = folder / "metrics.jsonl"
    if not (metrics.exists() and len(metrics.read_text().splitlines()) >= steps):
        if folder.exists():
            import shutil

            shutil.rmtree(folder)
        cmd = [sys.executable, "-m", "baselines.train", "--env", "mini_hanabi-v1", "--action-mode", "discrete",
               "--model", "mlp", "--credit", method, "--seed", str(seed), "--steps", str(steps),
               "--save-every", str(steps), "--out", str(folder), "--no-progress", *extra]
        env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env)
        if done.returncode != 0:
            raise RuntimeError(f"{method} seed {seed} failed:\n{done.stderr[-3000:]}")
    rows = [json.loads(line) for line in metrics.read_text().splitlines()]
    return [float(r["reward/team/team"]) for r in rows]


def summary(curves: list[list[float]]) -> dict[str, float]:
    steps = len(curves[0])
    head, tail = max(1, steps // 10), max(1, steps // 5)
    first = np.array([np.mean(c[:head]) for c in curves])
    last = np.array([np.mean(c[-tail:]) for c in curves])
    diff = last - first
    n = len(diff)
    half = float(stats.t.ppf(0.975, n - 1) * diff.std(ddof=1) / np.sqrt(n)) if n > 1 else float("nan")
    return {"first": float(first.mean()), "last": float(last.mean()), "diff": float(diff.mean()),
            "lo": float(diff.mean()) - half, "hi": float(diff.mean()) + half, "seeds_up": int((diff > 0).sum()),
            "n": n}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="runs/critic")
    p.add_argument("--steps", type=int, default=150)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    p.add_argument("--methods", nargs="+", default=["mappo", "broadcast"])
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--window", type=int, default=10)
    p.add_argument("--extra", default="", help="more trainer flags, one string")
    args = p.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    jobs = [(m, s) for m in args.methods for s in args.seeds]
    with ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(lambda ms: run_one(out, ms[0], ms[1], args.steps, args.extra.split()), jobs))
    curves: dict[str, list[list[float]]] = {}
    for (m, _), c in zip(jobs, results):
        curves.setdefault(m, []).append(c)
    print(f"| method | seeds | team reward, first 10% | last 20% | last - first, mean [95% t CI] | seeds up |")
    print("|---|---:|---:|---:|---|---:|")
    report = {}
    for m, cs in curves.items():
        s = summary(cs)
        report[m] = s
        print(f"| {m} | {s['n']} | {s['first']:.3f} | {s['last']:.3f} | {s['diff']:+.3f} [{s['lo']:+.3f}, "
              f"{s['hi']:+.3f}] | {s['seeds_up']}/{s['n']} |")
    w = args.window
    smooth = {m: np.mean([np.convolve(c, np.ones(w) / w, mode="valid") for c in cs], axis=0)
              for m, cs in curves.items()}
    marks = list(range(0, len(next(iter(smooth.values()))), max(1, args.steps // 10)))
    print(f"\nCurves: team reward, {w}-step moving average, mean over seeds (row = first step of the window)\n")
    print("| steps | " + " | ".join(smooth) + " |")
    print("|---|" + "---:|" * len(smooth))
    for k in marks:
        print(f"| {k}-{k + w - 1} | " + " | ".join(f"{smooth[m][k]:.3f}" for m in smooth) + " |")
    (out / "summary.json").write_text(json.dumps({"summary": report, "curves": curves}, indent=1))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 3.5))
        for m, y in smooth.items():
            ax.plot(np.arange(len(y)) + w - 1, y, label=m)
        ax.set_xlabel("training step")
        ax.set_ylabel(f"team reward ({w}-step mean, {len(args.seeds)} seeds)")
        ax.set_title("mini_hanabi-v1, MLP team")
        ax.legend()
        fig.tight_layout()
        fig.savefig(out / "curves.png", dpi=120)
    except ImportError:
        pass


if __name__ == "__main__":
    main()
