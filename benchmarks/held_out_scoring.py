"""What scoring a credit-micro@4 run on held-out seeds costs next to training it, and how far apart a run's best
checkpoint and its final policy land when nothing collapsed (issue 40 item 6; benchmarks/RESULTS.md, "Held-out
scores").

    python benchmarks/held_out_scoring.py cost [--method broadcast] [--settings a,b,...] [--out /tmp/held_out]
    python benchmarks/held_out_scoring.py spread --runs OUT/credit-micro@4 [--method broadcast] [--settings a,b]

``cost``: per setting (default: one per family), train the method's run of the setting's first seed at the suite's
budget (``train_run``, timed), then score it as credit-micro@4 does (the final policy and the 5 kept checkpoints on
the 200 held-out seeds, ``score_run``, timed), and the old way (the training tail: the same spec without
``checkpoints``); prints wall and CPU seconds and the ratio of scoring to training. One torch thread, as the suite.

``spread``: for every finished run of ``--method`` under ``--runs`` (a benchmark-credit ``--out`` of credit-micro@4;
read only), its best checkpoint's and final policy's normalised score on the second half of the held-out seeds; the
per-setting mean and standard deviation of best - final, and how many runs exceed ``COLLAPSE_THRESHOLD``."""

from __future__ import annotations

import argparse
import shutil
import statistics
import time
from pathlib import Path

import torch

from leaderboard.suite import COLLAPSE_THRESHOLD, anchor_value, load_suite, plan, score_run, train_run
from leaderboard.suite.runs import complete_run

FAMILY_SETTINGS = ("voting/fraction/n8", "think_solve/clue/a0.8", "team_umbrella/delay10", "free_riding/idle3",
                   "orchestrator/workers/parts2", "kuhn_poker/self-play", "leduc_holdem/self-play")


def _timed(fn, *args):
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn(*args)
    return out, time.perf_counter() - wall, time.process_time() - cpu


def cost(method: str, settings: list[str], out: Path) -> None:
    suite = load_suite("credit-micro@4")
    specs = {s["setting"]: s for s in reversed(plan(suite, [method], out)[0])}     # each setting's first seed
    print("| setting | train wall s (cpu) | held-out score wall s (cpu) | ratio (cpu) | tail score wall s |")
    print("| --- | --- | --- | --- | --- |")
    for name in settings:
        spec = specs[name]
        shutil.rmtree(spec["out"], ignore_errors=True)
        _, train_wall, train_cpu = _timed(train_run, spec)
        got, wall, cpu = _timed(score_run, spec, Path(spec["out"]))
        old = {k: v for k, v in spec.items() if k != "checkpoints"}
        _, tail_wall, _ = _timed(score_run, old, Path(spec["out"]))
        print(f"| {name} | {train_wall:.2f} ({train_cpu:.2f}) | {wall:.2f} ({cpu:.2f}) | {cpu / train_cpu:.0%} | "
              f"{tail_wall:.2f} |  raw {got['raw']:.3f}, best step {got['best']['step']}", flush=True)


def spread(method: str, runs: Path, settings: list[str] | None) -> None:
    suite = load_suite("credit-micro@4")
    specs = [s for s in plan(suite, [method], runs)[0] if settings is None or s["setting"] in settings]
    by: dict[str, list[float]] = {}
    for spec in specs:
        if not complete_run(Path(spec["out"]), spec["steps"]):
            continue
        s = next(x for x in suite.settings if x.name == spec["setting"])
        zero, one = anchor_value(suite, s, "zero"), anchor_value(suite, s, "one")
        best = score_run(spec, Path(spec["out"]))["best"]
        by.setdefault(spec["setting"], []).append((best["raw"] - best["final"]) / (one - zero))
    print("| setting | runs | mean best - final | sd | over threshold |")
    print("| --- | --- | --- | --- | --- |")
    every = []
    for name, diffs in by.items():
        every += diffs
        sd = statistics.stdev(diffs) if len(diffs) > 1 else float("nan")
        print(f"| {name} | {len(diffs)} | {statistics.mean(diffs):+.3f} | {sd:.3f} | "
              f"{sum(d > COLLAPSE_THRESHOLD for d in diffs)} |", flush=True)
    if every:
        print(f"| all | {len(every)} | {statistics.mean(every):+.3f} | {statistics.stdev(every):.3f} | "
              f"{sum(d > COLLAPSE_THRESHOLD for d in every)} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=("cost", "spread"))
    ap.add_argument("--method", default="broadcast")
    ap.add_argument("--settings", default=None, help=f"comma-separated (cost's default: {','.join(FAMILY_SETTINGS)}; "
                                                     f"spread's: every setting)")
    ap.add_argument("--out", default="/tmp/held_out_scoring")
    ap.add_argument("--runs", default=None, help="spread: a benchmark-credit --out of credit-micro@4 (read only)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    if args.what == "cost":
        cost(args.method, (args.settings or ",".join(FAMILY_SETTINGS)).split(","), Path(args.out))
    else:
        if args.runs is None:
            ap.error("spread needs --runs")
        spread(args.method, Path(args.runs), args.settings.split(",") if args.settings else None)


if __name__ == "__main__":
    main()
