"""Do LLM teams learn on a CPU? Choice-mode learning curves and the cost of the LLM update.

Two setups, both in choice mode with one LoRA adapter per role (``--adapters per_role``):

* ``clue``: ``think_solve-v0`` discrete with ``thinker_clue_accuracy`` (default 0.9), both roles learning: the thinker
  must pass its private clue on, the solver must follow the hint (chance 0.25, optimum = the clue's accuracy);
* ``kuhn``: ``kuhn_poker-v0`` player_0 against a uniformly random player_1 (``--partners player_1=random``).

For every setup and seed it runs :func:`baselines.train.train` and reads ``metrics.jsonl``: the reward curve (team
reward for ``clue``, player_0's for ``kuhn``), the policy entropy at step 0 and at the last step (``policy_entropy/
ROLE``, the mean over the trained roles) and the update time per step.

Update cost (one Kuhn batch of the same model, advantages +-1 so every decision is trained, each variant timed in the
same process, one after the other): ``_update`` with micro-batches packed in order by full prompt length (the
trainer before this benchmark), ``_update`` with :meth:`LLMLearner.micro_batches` (sorted by prompt, identical
prompts and shared prefixes prefilled once), and the anchor, a bare loop: the same prompts, left-padded in
micro-batches of the same token budget, one forward and ``backward()`` of the label tokens' log-probabilities, no
optimizer. Rates are prompt tokens of the batch per second.

    python benchmarks/llm_learning.py --model smollm2-135m --steps 8 --seeds 0 1 2 --out runs/llm_learning

Writes ``OUT/results.json`` and prints a markdown summary. The numbers in ``benchmarks/RESULTS.md`` ("LLM teams that
learn") come from it.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
import types
from pathlib import Path

import numpy as np
import torch

SETUPS = {
    "clue": dict(env="think_solve-v0", action_mode="discrete", partners="", reward="reward/team/team",
                 roles=("thinker", "solver")),
    "kuhn": dict(env="kuhn_poker-v0", action_mode="text", partners="player_1=random", reward="reward/role/player_0",
                 roles=("player_0",)),
}


def run_setup(name: str, seed: int, args, out: Path) -> dict:
    from baselines.train import TrainConfig, train

    s = SETUPS[name]
    kwargs = {"thinker_clue_accuracy": args.clue_accuracy} if name == "clue" else {}
    run_dir = out / f"{name}-seed{seed}"
    shutil.rmtree(run_dir, ignore_errors=True)
    cfg = TrainConfig(env=s["env"], env_kwargs=kwargs, action_mode=s["action_mode"], model=args.model, mode="choice",
                      choice_scoring=args.scoring, adapters=args.adapters, partners=s["partners"], steps=args.steps,
                      tasks_per_step=args.tasks_per_step, group_size=args.group_size, seed=seed, lr=args.lr,
                      out=str(run_dir), progress=False, tensorboard=False, save_every=10**6, keep_checkpoints=1)
    t0 = time.perf_counter()
    train(cfg)
    wall = time.perf_counter() - t0
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]

    def entropy(row):
        xs = [row[f"policy_entropy/{r}"] for r in s["roles"] if f"policy_entropy/{r}" in row]
        return float(np.mean(xs)) if xs else float("nan")

    return {"setup": name, "seed": seed, "rewards": [r[s["reward"]] for r in rows],
            "entropy": [entropy(r) for r in rows], "update_s": [r["time/update"] for r in rows],
            "step_s": [r["time/step"] for r in rows], "wall_s": wall}


def update_cost(args) -> dict:
    """Prompt tokens/s of the update: in-order packing, by-prompt packing, and a bare forward+backward anchor."""
    from baselines.policies.decoding import left_pad
    from baselines.rollout import RolloutEngine
    from baselines.train import TrainConfig
    from baselines.train.learners import Learner, LLMLearner, build_team
    from baselines.train.loop import _Dist, _samples, _update
    from marl_llm_envs import make

    cfg = TrainConfig(env="kuhn_poker-v0", model=args.model, mode="choice", choice_scoring=args.scoring,
                      adapters=args.adapters, partners="player_1=random", lr=1e-6)
    team = build_team(cfg, make("kuhn_poker-v0"), ["player_0", "player_1"], prepare=_Dist(cfg).prepare)
    learner = team.learners[0]
    n_tasks = max(1, args.cost_episodes // args.group_size)
    episodes = RolloutEngine(team.policies, show_progress=False).run("kuhn_poker-v0", n_tasks, args.group_size, seed=7)
    rng = np.random.default_rng(0)
    adv = [[float(rng.choice([-1.0, 1.0])) for _ in e.turns] for e in episodes]
    roles = set(team.trainable)
    samples = _samples(episodes, adv, roles)
    total = {lr.name: [s.n for s in samples if s.role in lr.trainable] for lr in team.learners}
    tokens = sum(len(s.prompt_ids) for s in samples)
    out = {"episodes": len(episodes), "decisions": len(samples), "prompt_tokens": tokens,
           "micro_batch_tokens": cfg.micro_batch_tokens}
    for variant, method in (("in_order", Learner.micro_batches), ("by_prompt", LLMLearner.micro_batches)):
        learner.micro_batches = types.MethodType(method, learner)
        before = learner.hf_policy.stats.prefill_tokens
        t0 = time.perf_counter()
        _update(team, cfg, _Dist(cfg), list(samples), total, roles)
        dt = time.perf_counter() - t0
        out[variant] = {"s": dt, "prompt_tok_s": tokens / dt,
                        "computed_prompt_tokens": learner.hf_policy.stats.prefill_tokens - before,
                        "micro_batches": len(learner.micro_batches(samples, cfg.micro_batch_tokens))}
    # the anchor: the same prompts through the same model, forward + backward, nothing else
    model = learner.module
    if args.adapters == "per_role":
        model.set_adapter("player_0")
    label_ids = [s.completion_ids[0] for s in samples]
    batches = Learner.micro_batches(learner, samples, cfg.micro_batch_tokens)
    t0 = time.perf_counter()
    k = 0
    for mb in batches:
        ids, mask, pos = left_pad([s.prompt_ids for s in mb], learner.pad_id, learner.hf_policy.device)
        logits = model(input_ids=ids, attention_mask=mask, position_ids=pos, logits_to_keep=1).logits[:, -1]
        target = torch.tensor(label_ids[k:k + len(mb)], device=logits.device)
        k += len(mb)
        torch.log_softmax(logits.float(), -1).gather(-1, target[:, None]).sum().backward()
    dt = time.perf_counter() - t0
    model.zero_grad(set_to_none=True)
    out["bare_loop"] = {"s": dt, "prompt_tok_s": tokens / dt, "micro_batches": len(batches)}
    out["factor_by_prompt_vs_in_order"] = out["in_order"]["s"] / out["by_prompt"]["s"]
    out["factor_by_prompt_vs_bare"] = out["bare_loop"]["s"] / out["by_prompt"]["s"]
    return out


def summary(results: list[dict], cost: dict | None, args) -> str:
    lines = [f"model {args.model}, choice_scoring={args.scoring}, adapters={args.adapters}, {args.steps} steps x "
             f"{args.tasks_per_step} tasks x {args.group_size} samples, lr {args.lr}",
             "", "| setup | seed | reward first step -> last | reward mean first/last third | entropy step 0 -> last "
                 "(nats) | update s/step | wall s |", "|---|---|---|---|---|---|---|"]
    for r in results:
        rw, n = r["rewards"], len(r["rewards"])
        third = max(1, n // 3)
        lines.append(f"| {r['setup']} | {r['seed']} | {rw[0]:+.3f} -> {rw[-1]:+.3f} | {np.mean(rw[:third]):+.3f} / "
                     f"{np.mean(rw[-third:]):+.3f} | {r['entropy'][0]:.3f} -> {r['entropy'][-1]:.3f} | "
                     f"{np.mean(r['update_s']):.1f} | {r['wall_s']:.0f} |")
    if cost:
        lines += ["", f"update cost: {cost['decisions']} decisions of {cost['episodes']} Kuhn episodes, "
                      f"{cost['prompt_tokens']} prompt tokens", "",
                  "| variant | s | prompt tokens/s | prompt tokens computed | micro-batches |", "|---|---|---|---|---|"]
        for v in ("in_order", "by_prompt", "bare_loop"):
            c = cost[v]
            lines.append(f"| {v} | {c['s']:.1f} | {c['prompt_tok_s']:.0f} | {c.get('computed_prompt_tokens', '')} | "
                         f"{c['micro_batches']} |")
        lines.append(f"\nby_prompt's rate: {cost['factor_by_prompt_vs_in_order']:.2f}x in_order's, "
                     f"{cost['factor_by_prompt_vs_bare']:.2f}x the bare loop's")
    return "\n".join(lines)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="smollm2-135m")
    p.add_argument("--setups", nargs="+", default=list(SETUPS), choices=list(SETUPS))
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--tasks-per-step", type=int, default=4)
    p.add_argument("--group-size", type=int, default=4)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--scoring", default="label", choices=["label", "mean", "sum"])
    p.add_argument("--adapters", default="per_role", choices=["per_role", "shared", "none"])
    p.add_argument("--clue-accuracy", type=float, default=0.9)
    p.add_argument("--cost-episodes", type=int, default=32, help="Kuhn episodes of the update-cost batch (0 = skip)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", default="runs/llm_learning")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    report: dict = {"args": vars(args), "results": [], "update_cost": None}
    t0 = time.perf_counter()
    for k, seed in enumerate(args.seeds):   # seeds outermost: a cut-short run still has every setup
        for name in args.setups:
            report["results"].append(run_setup(name, seed, args, out))
            report["wall_s"] = time.perf_counter() - t0
            (out / "results.json").write_text(json.dumps(report, indent=1))
            print(summary(report["results"], report["update_cost"], args), flush=True)
        if k == 0 and args.cost_episodes > 0:
            report["update_cost"] = update_cost(args)
            (out / "results.json").write_text(json.dumps(report, indent=1))
            print(summary(report["results"], report["update_cost"], args), flush=True)
    print(f"total {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
