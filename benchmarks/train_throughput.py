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
"""

from __future__ import annotations

import argparse
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
    args = p.parse_args()

    import numpy as np
    import torch

    from baselines.credit import make_credit
    from baselines.policies.hf import sequence_logprobs
    from baselines.rollout import RolloutEngine
    from baselines.train import TrainConfig, train
    from baselines.train.learners import build_team
    from baselines.train.loop import _Dist, _micro_batches, _samples, _update
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
    samples = _samples(team, episodes, adv, set(team.trainable))
    total = {learner.name: [s.n for s in samples]}
    prompt_tokens = sum(len(s.prompt_ids) + len(s.completion_ids) for s in samples)
    scored = sum(s.n for s in samples)
    model = learner.module

    def ours() -> None:
        _update(team, cfg, _Dist(cfg), samples, total, set(team.trainable))

    bare_opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5)

    def bare() -> None:
        bare_opt.zero_grad(set_to_none=True)
        for mb in _micro_batches(samples, cfg.micro_batch_tokens):
            lps = sequence_logprobs(model, [s.prompt_ids for s in mb], [s.completion_ids for s in mb],
                                    pad_id=learner.pad_id)
            a = torch.tensor([x for s in mb for x in s.adv])
            loss = -(a * torch.cat(lps)).sum() / scored
            loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        bare_opt.step()

    learner.optimizer = torch.optim.AdamW(learner.parameters(), lr=1e-5)
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


if __name__ == "__main__":
    main()
