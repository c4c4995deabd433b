"""Issue 43 item 3: an LLM team where both roles learn, and credit methods compared on it, paired over seeds.

The setting: ``think_solve-v0`` discrete, ``clue_pool="words"`` (no copy shortcut: the menu is permuted per episode,
the hint names a word, held-out words at evaluation), clue accuracy 0.9; SmolLM2-135M in choice mode with one LoRA
adapter per role on every layer. The recipe (RESULTS.md, "Both SmolLM2 roles learn the clue task"):

* a curriculum: the scripted thinker relays its clue for the first ``--relay-steps`` steps
  (``--partners thinker=reference:N``), then the thinker's own (untrained) adapter plays and both roles learn;
* ``--alternate-every K`` (off by default): one role learns at a time, switching every K steps (with K = 20 the
  solver in 0-19, the thinker alone in 20-39 against the solver that reads, the solver in 40-59); measured on two
  seeds, the thinker did not learn to pass its clue in its 20 updates (RESULTS.md, "Alternating updates");
* ``--hint-required`` (off by default): the env's ``hint_optional=False``, the thinker's menu without ``[none]``
  and its prompt in the solver's layout, the layout the thinker began to learn (RESULTS.md, "A thinker prompt
  that begins to learn its look-up");
* ``--tasks 32 --group 8``, lr 1e-3 and ``--micro-batch-tokens 1024`` (memory: two runs side by side);
* the method label ``broadcast-maxrl`` is broadcast with ``{"std": "mean"}`` (MaxRL's ``(R - mean) / mean``); any
  other label is a credit method with its own defaults.

Every ``--eval-every`` steps the trainer logs the exact held-out evaluation (``eval/...`` in ``metrics.jsonl``: team
reward, P(follow), P(pass), I(clue; message), on ``--eval-episodes`` held-out seeds and the test split's words), and
``eval_start/...`` for the untrained team. Runs are kept in ``--out/<method>/seed<k>`` and reused by a later call (a run
stopped part-way is resumed, ``--resume``), ``--jobs`` at a time, each a process of its own with one torch thread.

    OMP_NUM_THREADS=1 python benchmarks/llm_team.py --methods broadcast-maxrl,ccpo_v2,loo,coma --seeds 0-4 \\
        --out runs/llm_team --jobs 2
    python benchmarks/llm_team.py --report runs/llm_team        # the tables of what has finished so far
    python benchmarks/llm_team.py --model tiny --steps 4 --relay-steps 2 --eval-every 2 --eval-episodes 2 \\
        --tasks 2 --group 2 --methods broadcast-maxrl,broadcast --seeds 0-1 --out /tmp/llm_team   # seconds

The report: per method, the mean over seeds of each checkpoint (and ``n``, the seeds finished); then at the last
checkpoint (``--at K``: after K updates) every method against its own untrained start and against the first method of
``--methods``, on the held-out team reward (``--metric p_follow`` etc.), paired by training seed (the mean difference,
its 95% t-interval, the exact sign-flip p), with Holm over every comparison printed: "above"/"below" only where the Holm
p is below 0.05 and the interval excludes 0, else "not separated". Only seeds both sides finished are paired. The
exact sign-flip p of n seeds is at least 2 / 2^n: 5 seeds can never go below 0.0625, so a verdict needs 6 seeds for one
comparison and 8 for four under Holm (a campaign of "5 seeds" cannot separate anything with this test).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

ENV_KWARGS = {"thinker_clue_accuracy": 0.9, "clue_pool": "words"}
VARIANTS = {"broadcast-maxrl": ("broadcast", {"std": "mean"})}
METRICS = ("team_reward/team", "p_follow", "p_pass", "mi_clue_message")


def command(method: str, seed: int, args, out: Path, resume: bool) -> list[str]:
    """The trainer's command line for one run of the recipe."""
    credit, options = VARIANTS.get(method, (method, {}))
    cmd = [sys.executable, "-m", "baselines.train", "--env", "think_solve-v0", "--action-mode", "discrete",
           "--model", args.model, "--mode", "choice", "--adapters", "per_role",
           "--env-kwargs", json.dumps({**ENV_KWARGS, "hint_optional": False} if args.hint_required else ENV_KWARGS),
           "--credit", credit, "--credit-options", json.dumps(options),
           "--tasks-per-step", str(args.tasks), "--group-size", str(args.group), "--lr", str(args.lr),
           "--partners", f"thinker=reference:{args.relay_steps}", "--steps", str(args.steps),
           "--micro-batch-tokens", str(args.micro_batch_tokens),
           *(["--alternate-every", str(args.alternate_every)] if args.alternate_every else []),
           "--eval-every", str(args.eval_every), "--eval-episodes", str(args.eval_episodes), "--seed", str(seed),
           "--no-tensorboard", "--no-progress", "--out", str(out)]
    return cmd + (["--resume"] if resume else [])


def read_metrics(run: Path) -> list[dict]:
    path = run / "metrics.jsonl"
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def train(method: str, seed: int, args) -> str:
    run = Path(args.out) / method / f"seed{seed}"
    rows = read_metrics(run)
    if rows and rows[-1].get("step") == args.steps - 1:
        return f"{method} seed {seed}: kept"
    resume = (run / "checkpoints").is_dir() and any((run / "checkpoints").iterdir())
    run.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    with open(run / "train.log", "a", encoding="utf-8") as log:
        rc = subprocess.run(command(method, seed, args, run, resume), cwd=ROOT, env=env, stdout=log,
                            stderr=subprocess.STDOUT, check=False).returncode
    if rc:
        raise RuntimeError(f"{method} seed {seed}: the trainer exited with {rc}; see {run / 'train.log'}")
    return f"{method} seed {seed}: trained"


def curves(out: Path) -> dict[str, dict[int, dict[int, dict[str, float]]]]:
    """method -> seed -> updates done (0: untrained) -> the held-out metrics at that checkpoint."""
    found: dict[str, dict[int, dict[int, dict[str, float]]]] = {}
    for run in sorted(out.glob("*/seed*")):
        rows = read_metrics(run)
        if not rows:
            continue
        points: dict[int, dict[str, float]] = {}
        for row in rows:
            for prefix, updates in (("eval_start/", 0), ("eval/", row["step"] + 1)):
                got = {m: row[prefix + m] for m in METRICS if prefix + m in row}
                if got:
                    points[updates] = got
        found.setdefault(run.parent.name, {})[int(run.name[len("seed"):])] = points
    return found


def report(out: Path, methods: list[str] | None = None, at: int | None = None,
           metric: str = "team_reward/team") -> str:
    from leaderboard.verdicts import comparison, holm_family, verdict

    data = curves(out)
    methods = [m for m in (methods or sorted(data)) if m in data]
    if not methods:
        return f"no runs with held-out evaluations under {out}"
    lines = [("Held-out means over the seeds finished at each checkpoint (R: team reward, optimum 0.9, chance 0.25; "
              "I in nats):"), "", "| method | updates | n | R | P(follow) | P(pass) | I(clue; message) |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for m in methods:
        for k in sorted({k for pts in data[m].values() for k in pts}):
            rows = [pts[k] for pts in data[m].values() if k in pts]
            means = [sum(r[x] for r in rows) / len(rows) for x in METRICS]
            lines.append(f"| {m} | {k} | {len(rows)} | " + " | ".join(f"{v:.3f}" if i < 3 else f"{v:.4f}"
                                                                    for i, v in enumerate(means)) + " |")
    last = {m: at if at is not None else max(k for pts in data[m].values() for k in pts) for m in methods}
    if metric not in METRICS:
        raise ValueError(f"metric {metric!r} is not one of {list(METRICS)}")
    final = {m: {s: pts[last[m]][metric] for s, pts in data[m].items() if last[m] in pts} for m in methods}
    start = {m: {s: pts[0][metric] for s, pts in data[m].items() if 0 in pts} for m in methods}
    where = f"held-out {metric}"
    tests = []
    for m in methods:
        seeds = sorted(set(final[m]) & set(start[m]))
        if len(seeds) >= 2:
            tests.append(comparison(f"{m} after {last[m]} updates", "its untrained start", where,
                                    [final[m][s] for s in seeds], [start[m][s] for s in seeds]))
    ref = methods[0]
    for m in methods[1:]:
        seeds = sorted(set(final[m]) & set(final[ref]))
        if len(seeds) >= 2 and last[m] == last[ref]:
            tests.append(comparison(m, ref, where, [final[m][s] for s in seeds],
                                    [final[ref][s] for s in seeds]))
    if tests:
        lines += ["", (f"{where}, paired by training seed, 95% t-interval, exact sign-flip p, Holm over the "
                       f"{len(tests)} comparisons:"), "", "| comparison | n | difference [95% t] | p | Holm p | verdict |",
                  "|---|---:|---|---:|---:|---|"]
        for c in holm_family(tests):
            lines.append(f"| {c.a} - {c.b} | {c.n} | {c.diff:+.3f} [{c.low:+.3f}, {c.high:+.3f}] | {c.p:.4f} | "
                         f"{c.p_holm:.4f} | {verdict(c)} |")
    else:
        lines += ["", "No paired comparison yet: each needs two seeds finished on both sides."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--methods", default="broadcast-maxrl,ccpo_v2,loo,coma",
                   help="credit methods (the first is the reference of the comparisons); broadcast-maxrl = broadcast "
                        'with {"std": "mean"}')
    p.add_argument("--seeds", default="0-4")
    p.add_argument("--model", default="smollm2-135m")
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--relay-steps", type=int, default=20, help="steps the scripted thinker plays first (N)")
    p.add_argument("--alternate-every", type=int, default=0, metavar="K",
                   help="the trainer's --alternate-every: one role learns at a time, switching every K steps (step k "
                        "trains the (k // K)-th of the roles learning then, by name, cyclically: with 20 relayed steps "
                        "and K = 20, the solver in 0-19, the thinker in 20-39, the solver in 40-59); 0: every role "
                        "learning then learns at every step")
    p.add_argument("--hint-required", action="store_true",
                   help="the env's hint_optional=False: the thinker's menu has no [none] and its prompt takes the "
                        "solver's layout (RESULTS.md, \"A thinker prompt that begins to learn its look-up\")")
    p.add_argument("--tasks", type=int, default=32)
    p.add_argument("--group", type=int, default=8)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--micro-batch-tokens", type=int, default=1024,
                   help="the trainer's gradient accumulation budget: at 4096 a both-roles step of 32 x 8 episodes "
                        "peaks at about 15 GB, so two runs do not fit beside each other in 24 GB")
    p.add_argument("--eval-every", type=int, default=10)
    p.add_argument("--eval-episodes", type=int, default=32)
    p.add_argument("--jobs", type=int, default=1, help="runs at a time (one process each)")
    p.add_argument("--out", default="runs/llm_team")
    p.add_argument("--report", metavar="DIR", help="print the tables of the runs under DIR and stop")
    p.add_argument("--at", type=int, help="with --report: compare at this many updates (default: each method's last "
                                          "checkpoint), e.g. 20 for the end of the relayed phase")
    p.add_argument("--metric", default="team_reward/team", choices=METRICS, help="with --report: what is compared")
    args = p.parse_args(argv)
    if args.report:
        print(report(Path(args.report), at=args.at, metric=args.metric))
        return 0
    if min(args.steps, args.tasks, args.group, args.eval_every, args.eval_episodes, args.jobs) < 1 or \
            not 0 <= args.relay_steps <= args.steps or args.alternate_every < 0:
        p.error("--steps, --tasks, --group, --eval-every, --eval-episodes, --jobs >= 1, 0 <= --relay-steps <= "
                "--steps and --alternate-every >= 0")
    methods = [m for m in args.methods.split(",") if m]
    from benchmarks.both_roles_pilot import seed_list  # "0-4" or "0,3" -> the seeds

    runs = [(m, s) for s in seed_list(args.seeds) for m in methods]
    with ThreadPoolExecutor(args.jobs) as pool:
        for line in pool.map(lambda r: train(*r, args), runs):
            print(line, flush=True)
    print(report(Path(args.out), methods))
    return 0


if __name__ == "__main__":
    sys.exit(main())
