"""Do LLM teams learn on a CPU? Choice-mode learning curves and the cost of the LLM update.

Two setups, both in choice mode with one LoRA adapter per role (``--adapters per_role``):

* ``clue``: ``think_solve-v0`` discrete with ``thinker_clue_accuracy`` (default 0.9), both roles learning: the thinker
  must pass its private clue on, the solver must follow the hint (chance 0.25, optimum = the clue's accuracy);
* ``kuhn``: ``kuhn_poker-v0`` player_0 against a uniformly random player_1 (``--partners player_1=random``).

For every setup and seed it runs :func:`baselines.train.train` and reads ``metrics.jsonl``: the reward curve (team
reward for ``clue``, player_0's for ``kuhn``), the policy entropy at step 0 and at the last step (``policy_entropy/
ROLE``, the mean over the trained roles) and the rollout and update time per step. The control (``--control``, on by
default): the step-0 policy plays every step's tasks with that step's sampling seeds and is never updated, so its
step 0 equals the trained run's and the two curves differ, step by step, only by what was learned. The summary gives,
per setup, the mean over the last third of the steps of the trained curve, the control and their paired difference,
each with a 95% t-interval over seeds (overlapping intervals: inconclusive).

Update cost (one Kuhn batch of the same model, advantages +-1 so every decision is trained, each variant timed in the
same process, one after the other, at each of ``--cost-threads``): ``update`` as the trainer runs it
(:meth:`LLMLearner.micro_batches`: sorted by prompt, identical prompts and shared prefixes prefilled once), ``update``
with micro-batches packed in order by full prompt length (first thread count only), and the anchor, a bare loop: the
same prompts, left-padded in micro-batches of the same token budget, one forward and ``backward()`` of the label
tokens' log-probabilities, no optimizer. Rates are prompt tokens of the batch per second. Then one update pass cut into
its phases (adapter switch, forward, backward, AdamW step) at the first thread count.

    python benchmarks/llm_learning.py --model smollm2-135m --steps 8 --seeds 0 1 2 --out runs/llm_learning
    python benchmarks/llm_learning.py --seeds --cost-episodes 16      # the update cost only

Runs on ``--threads`` torch threads (default 1, the trainer's own default on a CPU). Writes ``OUT/results.json`` and
prints a markdown summary. The numbers in ``benchmarks/RESULTS.md`` ("LLM teams that learn", "SmolLM2's update
cost") come from it.
"""

from __future__ import annotations

import argparse
import json
import os
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


def _config(name: str, seed: int, args, out: Path):
    from baselines.train import TrainConfig

    s = SETUPS[name]
    kwargs = {"thinker_clue_accuracy": args.clue_accuracy} if name == "clue" else {}
    return TrainConfig(env=s["env"], env_kwargs=kwargs, action_mode=s["action_mode"], model=args.model, mode="choice",
                       choice_scoring=args.scoring, adapters=args.adapters, partners=s["partners"], steps=args.steps,
                       tasks_per_step=args.tasks_per_step, group_size=args.group_size, seed=seed, lr=args.lr,
                       out=str(out / f"{name}-seed{seed}"), progress=False, tensorboard=False, save_every=10**6,
                       keep_checkpoints=1)


def _reward(name: str, episodes) -> float:
    """The curve's reward of a batch, as the trainer logs it (``reward/team/team`` or ``reward/role/player_0``)."""
    if name == "clue":
        return float(np.mean([e.team_rewards["team"] for e in episodes]))
    return float(np.mean([e.rewards["player_0"] for e in episodes]))


def run_setup(name: str, seed: int, args, out: Path) -> dict:
    from baselines.train import train

    s = SETUPS[name]
    cfg = _config(name, seed, args, out)
    run_dir = Path(cfg.out)
    shutil.rmtree(run_dir, ignore_errors=True)
    t0 = time.perf_counter()
    train(cfg)
    wall = time.perf_counter() - t0
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]

    def entropy(row):
        xs = [row[f"policy_entropy/{r}"] for r in s["roles"] if f"policy_entropy/{r}" in row]
        return float(np.mean(xs)) if xs else float("nan")

    out_row = {"setup": name, "seed": seed, "rewards": [r[s["reward"]] for r in rows],
               "entropy": [entropy(r) for r in rows], "update_s": [r["time/update"] for r in rows],
               "rollout_s": [r["time/rollout"] for r in rows], "step_s": [r["time/step"] for r in rows],
               "wall_s": wall}
    if args.control:
        out_row["control"] = control(name, cfg)
    return out_row


def control(name: str, cfg) -> dict:
    """The step-0 policy on the training run's own tasks and sampling seeds, step by step (no update): what the
    curve would read without learning. Its step 0 is the training run's step 0 exactly (the same weights, tasks and
    seeds), so the difference of the two curves is paired step by step."""
    from baselines.rollout import RolloutEngine, training_seeds
    from baselines.train.learners import build_team
    from marl_llm_envs import make

    env_kwargs = {**cfg.env_kwargs, "action_mode": cfg.action_mode}
    proto = make(cfg.env, **env_kwargs)
    torch.manual_seed(cfg.seed)
    team = build_team(cfg, proto, sorted(set(proto.roles.values())))
    engine = RolloutEngine(team.policies, show_progress=False)
    rewards = []
    t0 = time.perf_counter()
    for step in range(cfg.steps):
        seeds = training_seeds(cfg.seed, step, cfg.tasks_per_step)
        episodes = engine.run(cfg.env, len(seeds), cfg.group_size, seed=cfg.seed * 1_000_003 + step,
                              env_kwargs=env_kwargs, seeds=seeds, run_id=f"step-{step}.0")
        rewards.append(_reward(name, episodes))
    return {"rewards": rewards, "wall_s": time.perf_counter() - t0}


def _cost_batch(args):
    from baselines.rollout import RolloutEngine
    from baselines.train import TrainConfig
    from baselines.train.learners import build_team
    from baselines.train.dist import Dist
    from baselines.train.update import trained_samples
    from marl_llm_envs import make

    cfg = TrainConfig(env="kuhn_poker-v0", model=args.model, mode="choice", choice_scoring=args.scoring,
                      adapters=args.adapters, partners="player_1=random", lr=1e-6)
    team = build_team(cfg, make("kuhn_poker-v0"), ["player_0", "player_1"], prepare=Dist(cfg).prepare)
    learner = team.learners[0]
    n_tasks = max(1, args.cost_episodes // args.group_size)
    episodes = RolloutEngine(team.policies, show_progress=False).run("kuhn_poker-v0", n_tasks, args.group_size, seed=7)
    rng = np.random.default_rng(0)
    adv = [[float(rng.choice([-1.0, 1.0])) for _ in e.turns] for e in episodes]
    roles = set(team.trainable)
    samples = trained_samples(episodes, adv, roles)
    return cfg, team, learner, episodes, samples, roles


def _bare_loop(learner, samples, budget: int, adapter: str | None) -> int:
    """The anchor: every prompt through the model in full, left-padded in micro-batches of ``budget`` tokens packed in
    order, one forward and ``backward()`` of the label tokens' log-probabilities; no optimizer. Returns the number of
    micro-batches."""
    from baselines.policies.decoding import left_pad
    from baselines.train.learners import Learner

    model = learner.module
    if adapter is not None:
        model.set_adapter(adapter)
    batches = Learner.micro_batches(learner, samples, budget)
    for mb in batches:
        ids, mask, pos = left_pad([s.prompt_ids for s in mb], learner.pad_id, learner.hf_policy.device)
        logits = model(input_ids=ids, attention_mask=mask, position_ids=pos, logits_to_keep=1).logits[:, -1]
        target = torch.tensor([s.completion_ids[0] for s in mb], device=logits.device)
        torch.log_softmax(logits.float(), -1).gather(-1, target[:, None]).sum().backward()
    model.zero_grad(set_to_none=True)
    return len(batches)


def _phases(learner, samples, budget: int) -> dict:
    """One update pass cut into its phases, each timed: the forward of :meth:`LLMLearner.logprobs`, ``backward()``,
    the AdamW step; and the learner's adapter switch (per-role adapters: :func:`use_adapter` over the model's adapters
    in turn, then the flags that keep every adapter trainable), per call."""
    from baselines.train.learners import use_adapter

    t = {"forward": 0.0, "backward": 0.0, "optimizer": 0.0}
    if learner.adapters == "per_role":
        names = list(learner.module.peft_config)
        lora = [p for n, p in learner.module.named_parameters() if "lora_" in n]
        t0 = time.perf_counter()
        for k in range(20):
            use_adapter(learner.module, names[k % len(names)])
            for p in lora:
                p.requires_grad_(True)
        t["adapter_switch_per_call"] = (time.perf_counter() - t0) / 20
        t["adapters"] = len(names)
    learner.optimizer.zero_grad(set_to_none=True)
    for mb in learner.micro_batches(samples, budget):
        t0 = time.perf_counter()
        new, _ = learner.logprobs(mb)
        t1 = time.perf_counter()
        adv = torch.tensor([a for s in mb for a in s.adv])
        (-(new * adv).sum()).backward()
        t2 = time.perf_counter()
        t["forward"] += t1 - t0
        t["backward"] += t2 - t1
    t0 = time.perf_counter()
    learner.optimizer.step()
    t["optimizer"] = time.perf_counter() - t0
    learner.optimizer.zero_grad(set_to_none=True)
    return t


def update_cost(args) -> dict:
    """Prompt tokens/s of the update against a bare forward+backward loop over the same batch, per torch thread
    count, and the update's phases (one process, one variant after the other)."""
    from baselines.train.learners import Learner, LLMLearner
    from baselines.train.dist import Dist
    from baselines.train.update import update

    threads0 = torch.get_num_threads()
    cfg, team, learner, episodes, samples, roles = _cost_batch(args)
    total = {lr.name: [s.n for s in samples if s.role in lr.trainable] for lr in team.learners}
    tokens = sum(len(s.prompt_ids) for s in samples)
    adapter = "player_0" if args.adapters == "per_role" else None
    out: dict = {"episodes": len(episodes), "decisions": len(samples), "prompt_tokens": tokens,
                 "distinct_prompts": len({tuple(s.prompt_ids) for s in samples}),
                 "micro_batch_tokens": cfg.micro_batch_tokens, "rows": []}

    def timed(fn):
        t0 = time.perf_counter()
        extra = fn()
        return time.perf_counter() - t0, extra

    for threads in args.cost_threads:
        torch.set_num_threads(threads)
        variants = [("update", LLMLearner.micro_batches)]
        if threads == args.cost_threads[0]:
            variants.append(("update_in_order", Learner.micro_batches))   # packing by full prompt length, in order
        for variant, method in variants:
            learner.micro_batches = types.MethodType(method, learner)
            before = learner.hf_policy.stats.prefill_tokens
            dt, _ = timed(lambda: update(team, Dist(cfg), list(samples), total, roles))
            out["rows"].append({"variant": variant, "threads": threads, "s": dt, "prompt_tok_s": tokens / dt,
                                "computed_prompt_tokens": learner.hf_policy.stats.prefill_tokens - before,
                                "micro_batches": len(learner.micro_batches(samples, cfg.micro_batch_tokens))})
        learner.micro_batches = types.MethodType(LLMLearner.micro_batches, learner)
        dt, n_mb = timed(lambda: _bare_loop(learner, samples, cfg.micro_batch_tokens, adapter))
        out["rows"].append({"variant": "bare_loop", "threads": threads, "s": dt, "prompt_tok_s": tokens / dt,
                            "computed_prompt_tokens": tokens, "micro_batches": n_mb})
    torch.set_num_threads(args.cost_threads[0])
    out["phases"] = _phases(learner, samples, cfg.micro_batch_tokens)
    out["phases"]["threads"] = args.cost_threads[0]
    torch.set_num_threads(threads0)
    return out


def _interval(xs) -> str:
    """Mean and 95% t-interval over seeds (``scipy.stats.t``), or the mean alone for one seed."""
    from scipy import stats

    x = np.asarray(xs, dtype=float)
    if len(x) < 2:
        return f"{x.mean():+.3f} (1 seed)"
    half = stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x))
    return f"{x.mean():+.3f} [{x.mean() - half:+.3f}, {x.mean() + half:+.3f}]"


def summary(results: list[dict], cost: dict | None, args) -> str:
    lines = [f"model {args.model}, choice_scoring={args.scoring}, adapters={args.adapters}, {args.steps} steps x "
             f"{args.tasks_per_step} tasks x {args.group_size} samples, lr {args.lr}, {args.threads} torch thread(s)",
             "", "| setup | seed | reward per step | control (step-0 policy, same tasks) | entropy step 0 -> last "
                 "(nats) | rollout / update s per step | wall s |", "|---|---|---|---|---|---|---|"]
    for r in results:
        ctrl = r.get("control", {}).get("rewards")
        lines.append(f"| {r['setup']} | {r['seed']} | {' '.join(f'{x:+.2f}' for x in r['rewards'])} | "
                     f"{' '.join(f'{x:+.2f}' for x in ctrl) if ctrl else '-'} | "
                     f"{r['entropy'][0]:.3f} -> {r['entropy'][-1]:.3f} | {np.mean(r['rollout_s']):.1f} / "
                     f"{np.mean(r['update_s']):.1f} | {r['wall_s']:.0f} |")
    for name in dict.fromkeys(r["setup"] for r in results):
        rs = [r for r in results if r["setup"] == name and "control" in r]
        if not rs:
            continue
        n = len(rs[0]["rewards"])
        k = max(1, n // 3)
        last = [np.mean(r["rewards"][-k:]) for r in rs]
        last_c = [np.mean(r["control"]["rewards"][-k:]) for r in rs]
        diff = [np.mean(np.subtract(r["rewards"][-k:], r["control"]["rewards"][-k:])) for r in rs]
        lines.append(f"\n{name}, last {k} of {n} steps, over {len(rs)} seeds (mean [95% t-interval]): trained "
                     f"{_interval(last)}, control {_interval(last_c)}, trained - control (paired by step) "
                     f"{_interval(diff)}")
    if cost:
        lines += ["", f"update cost: {cost['decisions']} decisions of {cost['episodes']} Kuhn episodes, "
                      f"{cost['prompt_tokens']} prompt tokens ({cost['distinct_prompts']} distinct prompts)", "",
                  "| variant | threads | s | prompt tokens/s | prompt tokens computed | micro-batches |",
                  "|---|---|---|---|---|---|"]
        for c in cost["rows"]:
            lines.append(f"| {c['variant']} | {c['threads']} | {c['s']:.1f} | {c['prompt_tok_s']:.0f} | "
                         f"{c['computed_prompt_tokens']} | {c['micro_batches']} |")
        by = {(c["variant"], c["threads"]): c["s"] for c in cost["rows"]}
        for threads in args.cost_threads:
            lines.append(f"\n{threads} thread(s): the update's rate is "
                         f"{by[('bare_loop', threads)] / by[('update', threads)]:.2f}x the bare loop's")
        if len(args.cost_threads) > 1:
            a, b = args.cost_threads[:2]
            lines.append(f"update at {b} threads / at {a}: {by[('update', b)] / by[('update', a)]:.2f}x the time; "
                         f"bare loop: {by[('bare_loop', b)] / by[('bare_loop', a)]:.2f}x")
        ph = cost["phases"]
        lines.append("phases of one update pass ({threads} thread(s)): forward {forward:.2f} s, backward "
                     "{backward:.2f} s, AdamW step {optimizer:.3f} s, one adapter switch ({adapters} adapter(s)) "
                     "{adapter_switch_per_call:.4f} s".format(**{"adapter_switch_per_call": float("nan"), "adapters": 0,
                                                                 **ph}))
    return "\n".join(lines)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="smollm2-135m")
    p.add_argument("--setups", nargs="+", default=list(SETUPS), choices=list(SETUPS))
    p.add_argument("--seeds", nargs="*", type=int, default=[0, 1, 2], help="training seeds (none: the update cost only)")
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--tasks-per-step", type=int, default=4)
    p.add_argument("--group-size", type=int, default=4)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--scoring", default="label", choices=["label", "mean", "sum"])
    p.add_argument("--adapters", default="per_role", choices=["per_role", "shared", "none"])
    p.add_argument("--clue-accuracy", type=float, default=0.9)
    p.add_argument("--cost-episodes", type=int, default=32, help="Kuhn episodes of the update-cost batch (0 = skip)")
    p.add_argument("--threads", type=int, default=1, help="torch threads (the trainer's own default on a CPU)")
    p.add_argument("--cost-threads", nargs="+", type=int, default=[1, 2],
                   help="thread counts of the update-cost comparison (the first also gets the phases)")
    p.add_argument("--control", action=argparse.BooleanOptionalAction, default=True,
                   help="also play the step-0 policy on every step's tasks (the curve without learning)")
    p.add_argument("--out", default="runs/llm_learning")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    os.environ["OMP_NUM_THREADS"] = str(args.threads)   # the trainer keeps a thread count asked for this way
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    report: dict = {"args": vars(args), "results": [], "update_cost": None}
    t0 = time.perf_counter()
    if args.cost_episodes > 0:
        report["update_cost"] = update_cost(args)
        (out / "results.json").write_text(json.dumps(report, indent=1))
        print(summary(report["results"], report["update_cost"], args), flush=True)
    for seed in args.seeds:   # seeds outermost: a cut-short run still has every setup
        for name in args.setups:
            report["results"].append(run_setup(name, seed, args, out))
            report["wall_s"] = time.perf_counter() - t0
            (out / "results.json").write_text(json.dumps(report, indent=1))
            print(summary(report["results"], report["update_cost"], args), flush=True)
    print(f"total {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
