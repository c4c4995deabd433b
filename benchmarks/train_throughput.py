"""Throughput of the trainer (baselines.train): where a step's time goes, and the update against a bare loop.

1. A few training steps of ``baselines.train`` (tiny model in choice mode on think_solve-v0's discrete mode, so the
   random-init model's rewards vary and the update has work to do; the chosen credit method): the share of each
   step spent in rollout / credit / update (goal: credit under 2% of a step).
2. The update on one fixed batch against the anchor measured in the same run: the free-generation turns of one
   rollout, each given a seeded random advantage (a random-init model's own rewards are all -1, which would leave
   nothing to train), through the trainer's update and through a bare loop over the same micro-batches and model
   (teacher-forced forward, ``-(A * logp)`` loss, backward, AdamW step), in tokens/s (goal: the trainer's update
   within 1.25x of the bare loop's time).

    python benchmarks/train_throughput.py                     # tiny, think_solve-v0, ccpo_v2, 3 steps
    python benchmarks/train_throughput.py --model smollm2-135m --tasks 4 --group-size 2 --steps 2

``--model mlp`` (the micro tier, issue 17) measures something else, for voting-v0 (7 and 16 voters), kuhn_poker-v0
and mini_hanabi-v1 in discrete mode, all in one run:

Rates are per second of this process's CPU time (``time.process_time``), not wall-clock time: the development
machine is shared (load averages far above its 2 cores), and CPU time is what one core would give on a quiet
machine; the anchor (the env-only rate) is measured the same way in the same run.

* **env-only rate** (the anchor): one env, ``reset`` per episode, ``env.last()`` every step, a uniformly random legal
  index from the mask, ``step``; steps/s counts the moves of live agents. Two rows per env: with the full
  observation (text included, what ``env.last()`` builds) and with text not requested (``env.last(text=False)``:
  vector and mask only; on code without that keyword the row says so).
* **MLP training decisions/s**: ``baselines.train`` with ``--model mlp`` (broadcast credit, ``--tasks`` x
  ``--group-size`` episodes per step, one torch thread): the CPU time of a ``--steps`` + 1 step run minus that of a
  1-step run with the same seeds (so startup, env and model construction and step 0 cancel out), divided by the
  decisions (MLP-sampled turns) of steps 1..``--steps``; the training rate as a share of the env-only rate without
  text; and the rollout's share of a step (from ``metrics.jsonl``'s wall-clock split).
* **startup**: a fresh ``python`` process, from its first line to the end of step 1 of a 1-step MLP run
  (imports, env and model construction, AdamW, the first rollout and update).

    python benchmarks/train_throughput.py --model mlp                 # ~1 min
    python benchmarks/train_throughput.py --model mlp --seconds 1 --steps 5
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--env", default="think_solve-v0")
    p.add_argument("--credit", default="ccpo_v2")
    p.add_argument("--model", default="tiny")
    p.add_argument("--tasks", type=int, default=8)
    p.add_argument("--group-size", type=int, default=4)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--max-new-tokens", type=int, default=16)
    p.add_argument("--repeats", type=int, default=3, help="timed repeats of each update (median reported)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--seconds", type=float, default=2.0, help="--model mlp: wall-clock budget of each env-only row")
    args = p.parse_args()
    if args.model == "mlp":
        if "--tasks" not in sys.argv:
            args.tasks = 16
        if "--steps" not in sys.argv:
            args.steps = 8
        mlp_main(args)
        return

    import numpy as np
    import torch

    from baselines.credit import make_credit
    from baselines.policies.hf import sequence_logprobs
    from baselines.rollout import RolloutEngine
    from baselines.train import TrainConfig, train
    from baselines.train.learners import build_team, pack
    from baselines.train.dist import Dist
    from baselines.train.update import trained_samples, update
    from marl_llm_envs import make

    print(f"# Trainer throughput ({datetime.datetime.now().isoformat(timespec='seconds')})\n")
    print(f"- machine: {platform.platform()}, {os.cpu_count()} CPU cores, device {args.device}; "
          f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    print(f"- command: python benchmarks/train_throughput.py {' '.join(sys.argv[1:])}\n")

    # ---- 1. a few real steps: where the time goes
    with tempfile.TemporaryDirectory() as out:
        cfg = TrainConfig(env=args.env, credit=args.credit, model=args.model, steps=args.steps, mode="choice",
                          action_mode="discrete", tasks_per_step=args.tasks, group_size=args.group_size,
                          max_new_tokens=args.max_new_tokens, out=out, progress=False, tensorboard=False,
                          device=args.device)
        train(cfg)
        import json

        rows = [json.loads(line) for line in (Path(out) / "metrics.jsonl").read_text().splitlines()]
    print(f"## Step time split ({args.model} in choice mode, {args.env} discrete, {args.credit}, "
          f"{args.tasks} tasks x {args.group_size})\n")
    print("| step | rollout s | credit s | update s | credit share | update tokens/s |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        share = r["time/credit"] / r["time/step"]
        tps = r["trained_tokens"] / r["time/update"] if r["time/update"] else 0.0
        print(f"| {r['step']} | {r['time/rollout']:.2f} | {r['time/credit']:.4f} | {r['time/update']:.2f} | "
              f"{100 * share:.3f}% | {tps:.0f} |")
    worst = max(r["time/credit"] / r["time/step"] for r in rows)
    print(f"\ncredit share of a step, worst: {100 * worst:.3f}% (goal < 2%: {'met' if worst < 0.02 else 'NOT met'})\n")

    # ---- 2. the update vs a bare loop on the same batch and model
    env_kwargs = {"action_mode": "text"}
    env = make(args.env, **env_kwargs)
    roles = sorted(set(env.roles.values()))
    cfg = TrainConfig(env=args.env, credit=args.credit, model=args.model, max_new_tokens=args.max_new_tokens,
                      progress=False, device=args.device)
    team = build_team(cfg, env, roles)
    learner = team.learners[0]
    method = make_credit(args.credit)
    episodes = RolloutEngine(team.policies, show_progress=False).run(
        args.env, args.tasks, args.group_size, seed=1, env_kwargs=env_kwargs, branches=method.branches(args.env))
    rng = np.random.default_rng(0)
    adv = [[float(rng.normal()) for _ in e.turns] for e in episodes]   # every turn has work to do
    samples = trained_samples(episodes, adv, set(team.trainable))
    total = {learner.name: [s.n for s in samples]}
    prompt_tokens = sum(len(s.prompt_ids) + len(s.completion_ids) for s in samples)
    scored = sum(s.n for s in samples)
    model = learner.module

    def ours() -> None:
        update(team, Dist(cfg), samples, total, set(team.trainable))

    bare_opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5)

    def bare() -> None:
        bare_opt.zero_grad(set_to_none=True)
        for mb in pack(samples, [s.cost for s in samples], cfg.micro_batch_tokens):
            lps = sequence_logprobs(model, [s.prompt_ids for s in mb], [s.completion_ids for s in mb],
                                    pad_id=learner.pad_id)
            a = torch.tensor([x for s in mb for x in s.adv])
            loss = -(a * torch.cat(lps)).sum() / scored
            loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        bare_opt.step()

    # AdamW as the bare loop has it (its defaults); the rest of the update's settings as a run of cfg has them
    settings = dataclasses.replace(cfg.learner_settings(learner.model_name), lr=1e-5, weight_decay=0.01)
    learner.set_up_training(settings, Dist(cfg).prepare)
    times: dict[str, list[float]] = {"bare": [], "ours": []}
    for _ in range(args.repeats):       # interleaved, so load changes hit both alike
        for name, fn in (("bare", bare), ("ours", ours)):
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    tb, to = statistics.median(times["bare"]), statistics.median(times["ours"])
    print(f"## Update on one batch ({len(samples)} turns, {prompt_tokens} tokens read, {scored} trained)\n")
    print("| loop | median s | tokens/s (read) | ratio to bare |")
    print("|---|---|---|---|")
    print(f"| bare forward+backward+AdamW (anchor) | {tb:.3f} | {prompt_tokens / tb:.0f} | 1.00 |")
    print(f"| baselines.train update | {to:.3f} | {prompt_tokens / to:.0f} | {to / tb:.2f} |")
    print(f"\nupdate vs bare loop: {to / tb:.2f}x (goal <= 1.25x: {'met' if to / tb <= 1.25 else 'NOT met'})")


MLP_ENVS = [("voting-v0", {"n_voters": 7}), ("voting-v0", {"n_voters": 16}), ("kuhn_poker-v0", {}),
            ("mini_hanabi-v1", {})]


def row_name(env_id: str, kwargs: dict) -> str:
    """A table row's name for an env and its kwargs: ``voting-v0 n_voters=7``."""
    return env_id + "".join(f" {k}={v}" for k, v in kwargs.items())


def env_only_rate(env_id: str, kwargs: dict, seconds: float, text: bool, seed: int) -> tuple[float | None, int]:
    """(steps/s, the next unused seed) of the issue's loop (``env_loop.play_random``), one episode after another on
    seeds ``seed``, ``seed + 1``, ... until ``seconds`` of CPU time have passed; ``None`` without text on code that
    has no ``last(text=False)``. The caller hands each row the seed the previous row stopped at, from
    ``env_loop.COUNTED_SEEDS`` on: as in training, no seed is reset twice in a process, by these rows (of any env)
    or by the training runs (code that keeps per-seed state would otherwise be timed on repeats)."""
    import inspect
    import random

    from env_loop import play_random
    from marl_llm_envs import make

    env = make(env_id, action_mode="discrete", **kwargs)
    if not text and "text" not in inspect.signature(env.last).parameters:
        return None, seed
    rng = random.Random(0)
    steps, episode = 0, seed
    deadline = time.process_time() + seconds
    t0 = time.process_time()
    while True:
        steps += play_random(env, (episode,), rng, text)
        episode += 1
        if time.process_time() > deadline:
            return steps / (time.process_time() - t0), episode


def training_rate(env_id: str, kwargs: dict, args) -> tuple[float, float, int]:
    """(decisions per CPU second of steps 1..N, rollout share of a step, decisions) of a seeded MLP run."""
    import json

    from baselines.train import TrainConfig, train

    def run(steps: int) -> tuple[float, list[dict]]:
        with tempfile.TemporaryDirectory() as out:
            t0 = time.process_time()
            train(TrainConfig(env=env_id, env_kwargs=kwargs, model="mlp", action_mode="discrete", credit="broadcast",
                              steps=steps, tasks_per_step=args.tasks, group_size=args.group_size, out=out,
                              progress=False, tensorboard=False, save_every=10**6, seed=0))
            cpu = time.process_time() - t0
            return cpu, [json.loads(line) for line in (Path(out) / "metrics.jsonl").read_text().splitlines()]

    cpu_one, _ = run(1)
    cpu_all, rows = run(args.steps + 1)
    rows = rows[1:]
    decisions = sum(r["tokens/main"] + r["tokens/branches"] for r in rows)   # one token per MLP decision
    step_s = sum(r["time/step"] for r in rows)
    return decisions / (cpu_all - cpu_one), sum(r["time/rollout"] for r in rows) / step_s, decisions


def _cpu_name() -> str:
    """The CPU's model name (Linux's /proc/cpuinfo), or the platform's processor string."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


STARTUP = """
import time; t0 = time.perf_counter()
import sys, tempfile; sys.path.insert(0, {root!r})
from baselines.train import TrainConfig, train
with tempfile.TemporaryDirectory() as out:
    train(TrainConfig(env="kuhn_poker-v0", model="mlp", steps=1, tasks_per_step=1, group_size=1, out=out,
                      progress=False, tensorboard=False))
print(time.perf_counter() - t0)
"""


def mlp_main(args) -> None:
    import subprocess

    import torch

    torch.set_num_threads(1)
    root = str(Path(__file__).resolve().parents[1])
    print(f"# MLP training throughput (issue 17) ({datetime.datetime.now().isoformat(timespec='seconds')})\n")
    print(f"- machine: {platform.platform()}, {os.cpu_count()} CPU cores, {_cpu_name()}, torch's CPU kernels "
          f"{torch.backends.cpu.get_cpu_capability()} (rates differ by host class: compare within one run); torch "
          f"{torch.__version__}, {torch.get_num_threads()} thread")
    print(f"- command: python benchmarks/train_throughput.py {' '.join(sys.argv[1:])}")
    print(f"- training: broadcast credit, {args.tasks} tasks x {args.group_size} per step, {args.steps} steps; "
          f"env-only rows: {args.seconds:g} s each\n")
    print("| env | env-only steps/CPU-s (text) | env-only steps/CPU-s (no text) | MLP training decisions/CPU-s | "
          "training / env-only (no text) | rollout share of a step |")
    print("|---|---:|---:|---:|---:|---:|")
    from env_loop import COUNTED_SEEDS

    training_rate("kuhn_poker-v0", {}, argparse.Namespace(tasks=1, group_size=1, steps=1))   # imports paid here
    seed = COUNTED_SEEDS
    for env_id, kwargs in MLP_ENVS:
        with_text, seed = env_only_rate(env_id, kwargs, args.seconds, True, seed)
        no_text, seed = env_only_rate(env_id, kwargs, args.seconds, False, seed)
        rate, rollout, _ = training_rate(env_id, kwargs, args)
        anchor = no_text if no_text is not None else with_text
        name = row_name(env_id, kwargs)
        print(f"| {name} | {with_text:,.0f} | {'n/a' if no_text is None else f'{no_text:,.0f}'} | {rate:,.0f} | "
              f"{100 * rate / anchor:.0f}% | {100 * rollout:.0f}% |", flush=True)
    t = subprocess.run([sys.executable, "-c", STARTUP.format(root=root)], capture_output=True, text=True,
                       timeout=600)
    startup = t.stdout.strip().splitlines()[-1] if t.returncode == 0 else f"failed: {t.stderr[-500:]}"
    print(f"\nstartup, fresh process to the end of step 1 (kuhn_poker-v0, 1 task), wall clock: {startup} s")


if __name__ == "__main__":
    main()
