"""Can the clue task's solver learn to read a hint at all? A supervised probe of issue 43 item 3's first obstacle.

Every reinforcement-learning pilot of the shortcut-free clue task (``think_solve-v0``, ``clue_pool="words"``,
discrete, choice mode) left the SmolLM2 solver at chance: held-out P(follow) 0.244-0.250, also with a scripted thinker
that relays its clue every time (RESULTS.md, "A curriculum for the LLM team"). That is either an optimisation failure
(the sampled reward is too sparse or too noisy for RL to find the word-to-label lookup) or a failure of the model and
adapter configuration to represent the lookup at all. This probe separates the two: it trains the solver alone, with
the *known* answer, on the task's own prompts.

Each step draws ``--batch`` training episodes (seeds from the step's own stream, ``split="train"``: the training
words). In each, the thinker's move is drawn uniformly from the ``K`` hints (each names one candidate by its word; the
solver's menu is permuted per episode), and the solver's decision is trained towards the label of the candidate the
hint names, by one of two objectives on the same decisions:

* ``sft``: maximise ``log pi(target)`` (cross-entropy; the supervised upper bound);
* ``pg``: maximise ``pi(target)``, the follow reward's *expected* value under the solver's own distribution: its
  gradient ``pi(target) grad log pi(target)`` is exactly the policy gradient of that reward (no sampling noise), so
  a run that learns here and not in the trainer fails on the sampled estimate, not on the objective;
* ``grpo``, ``maxrl``: the *sampled* estimators the trainer's credit methods use. Each decision draws
  ``--group-size`` G moves from the solver's own distribution (reward 1 for the target), the group's advantages are
  GRPO's ``(r - mean) / std`` (``broadcast``'s default) or MaxRL's ``(r - mean) / mean`` (Tajwar et al. 2026, arXiv
  2602.02710; 0 for a group without a success; ``broadcast``'s ``{"std": "mean"}``; in expectation
  ``(1 - (1 - p)^(G-1)) grad log p``, see :func:`baselines.credit.base.normalize`), and the loss is the trainer's token-mean
  ``-sum_i A_i log pi(a_i) / (n G)`` (one PPO epoch: the ratio is 1). One forward per decision scores all its moves.

``--role thinker``: the same objectives on the thinker's decision instead (the first move of each training episode,
its prompt holding the clue; the target is the message that names the clue's word, the clue's candidate's label among
the legal moves, whether or not the clue is right): can the thinker learn to pass its clue, the skill the trainer's
thinker phase has to find (RESULTS.md, "Alternating updates")? Its held-out figure is ``eval/p_pass``.
``--hint-required`` plays the env with ``hint_optional=False`` (the thinker's menu without ``[none]``; RESULTS.md,
"The thinker's look-up under eleven prompts").

Held-out (exact, no sampling): every ``--eval-every`` steps, ``eval/p_follow`` (``eval/p_pass`` with ``--role
thinker``) of
:func:`baselines.train.exact_eval.evaluate` on ``--eval-episodes`` held-out seeds (``split="test"``: 60 words never
trained on), the same number the trainer logs. Step 0 is the untrained model.

    OMP_NUM_THREADS=1 python benchmarks/solver_probe.py --model smollm2-135m --lora-layers 4 --lr 2e-4 \\
        --objective sft --steps 40 --batch 32 --eval-every 10 --eval-episodes 32 --seed 0
    python benchmarks/solver_probe.py --model tiny --steps 4 --eval-every 2 --eval-episodes 4   # seconds

Prints one line per evaluation and a markdown table; ``--out FILE`` also writes the curve as JSON.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

ENV = "think_solve-v0"
ENV_KWARGS = {"thinker_clue_accuracy": 0.9, "clue_pool": "words", "action_mode": "discrete"}


def build(model: str, lora_layers: int, lr: float, seed: int, env_kwargs: dict = ENV_KWARGS):
    """The trainer's team (per-role LoRA, choice mode, both roles' adapters) with its solver learner and optimizer."""
    from baselines.train import TrainConfig
    from baselines.train.dist import Dist
    from baselines.train.learners import build_team
    from marl_llm_envs import make

    kwargs = {k: v for k, v in env_kwargs.items() if k != "action_mode"}
    cfg = TrainConfig(env=ENV, env_kwargs=kwargs, action_mode="discrete", model=model, mode="choice",
                      adapters="per_role", lr=lr, lora_layers=lora_layers, seed=seed)
    env = make(ENV, **env_kwargs)
    torch.manual_seed(seed)
    team = build_team(cfg, env, sorted(set(env.roles.values())), prepare=Dist(cfg).prepare)
    learner = next(x for x in team.learners if x.trainable)
    return cfg, team, learner


def clue_decisions(policy, seeds: list[int], gen_seed: int, env_kwargs: dict = ENV_KWARGS):
    """The thinker's decision in each episode (its first move), the target (the message naming its clue's word) and
    the policy's generation."""
    from baselines.policies.base import request_for
    from marl_llm_envs import make

    requests, targets = [], []
    for seed in seeds:
        env = make(ENV, **env_kwargs)
        env.reset(seed=seed)
        u = env.unwrapped
        if u.agent_selection != "thinker":
            raise RuntimeError(f"seed {seed}: the thinker does not move first")
        requests.append(request_for(env, "thinker", set(policy.observes) | {"legal_actions"}))
        targets.append(u.action_names("thinker").index(u.labels[u.candidates.index(u.clue())]))   # [none] or not
    return requests, targets, policy.generate(requests, seed=gen_seed)


def hinted_decisions(policy, seeds: list[int], hints: list[int], gen_seed: int, env_kwargs: dict = ENV_KWARGS):
    """The solver's decision in each episode after the thinker sent hint ``hints[i]`` (1..K: it names candidate
    ``hints[i] - 1``, whose label in the solver's menu is legal move ``hints[i] - 1``) and the policy's generation."""
    from baselines.policies.base import request_for
    from baselines.rollout.engine import env_action
    from marl_llm_envs import make

    requests, targets = [], []
    for seed, hint in zip(seeds, hints):
        env = make(ENV, **env_kwargs)
        env.reset(seed=seed)
        u = env.unwrapped
        thinker = request_for(env, u.agent_selection, {"text", "legal_actions"})
        move = u.action_names("thinker").index(u.labels[hint - 1])     # the message naming candidate hint - 1
        env.step(env_action(u, u.agent_selection, thinker.legal_actions[move], thinker.legal_actions))
        if u.agent_selection != "solver":
            raise RuntimeError(f"seed {seed}: the solver does not move after the thinker")
        requests.append(request_for(env, "solver", set(policy.observes) | {"legal_actions"}))
        targets.append(hint - 1)
    return requests, targets, policy.generate(requests, seed=gen_seed)


def samples_for(requests, targets, gens, role: str = "solver"):
    """One trained :class:`~baselines.train.learners.Sample` per decision, its recorded choice set to the target."""
    from baselines.train.learners import Sample

    out = []
    for r, t, g in zip(requests, targets, gens):
        lp = math.log(max(g.choice.probs[t], 1e-30))
        out.append(Sample(role, "choice", list(g.prompt_ids), list(g.completion_ids) or [0], [lp], [1.0],
                          list(r.legal_actions), choice=replace(g.choice, index=t, logprob=lp)))
    return out


def step(cfg, learner, samples, objective: str) -> dict[str, float]:
    """One optimizer step on the solver's adapter: ``-mean log pi(target)`` (sft) or ``-mean pi(target)`` (pg)."""
    learner.optimizer.zero_grad(set_to_none=True)
    total, n = 0.0, len(samples)
    for mb in learner.micro_batches(samples, cfg.micro_batch_tokens):
        lp, _ = learner.logprobs(mb)
        loss = -(lp if objective == "sft" else lp.exp()).sum() / n
        loss.backward()
        total += float(lp.detach().exp().sum())
    params = [p for p in learner.module.parameters() if p.grad is not None]
    norm = torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip if cfg.grad_clip > 0 else math.inf)
    learner.optimizer.step()
    learner.optimizer.zero_grad(set_to_none=True)
    return {"train/p_target": total / n, "grad_norm": float(norm)}


def sampled_step(cfg, learner, samples, objective: str, group: int, rng, role: str = "solver") -> dict[str, float]:
    """One optimizer step of a sampled estimator (``grpo`` or ``maxrl``, see the module docstring) on ``samples``:
    each decision's G moves are drawn from its recorded distribution, and one forward scores all its moves."""
    from baselines.credit.base import normalize
    from baselines.train.learners import use_adapter

    learner.optimizer.zero_grad(set_to_none=True)
    policy = learner.hf_policy
    lora = [p for name, p in learner.module.named_parameters() if "lora_" in name]
    n, hit, zero = len(samples), 0.0, 0
    for mb in learner.micro_batches(samples, cfg.micro_batch_tokens):
        weights = []
        for s in mb:
            probs = np.asarray(s.choice.probs, dtype=np.float64)
            moves = rng.choice(len(probs), size=group, p=probs / probs.sum())
            r = (moves == s.choice.index).astype(np.float64)
            hit += r.mean()
            adv = np.asarray(normalize(r.tolist(), "population" if objective == "grpo" else "mean"))
            zero += not np.any(adv)
            weights.append(np.bincount(moves, weights=adv, minlength=len(probs)))
        use_adapter(learner.module, role)
        for p in lora:             # as the learner's own scoring does: set_adapter froze the other adapters
            p.requires_grad_(True)
        dists = policy.choice_log_policy([s.prompt_ids for s in mb], [policy.move_ids(s.legal, "label") for s in mb],
                                         "label", model=learner.forward_module)
        loss = sum(-(torch.as_tensor(w, dtype=logq.dtype) * logq).sum() for w, (logq, _) in zip(weights, dists))
        (loss / (n * group)).backward()
    params = [p for p in learner.module.parameters() if p.grad is not None]
    norm = torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip if cfg.grad_clip > 0 else math.inf)
    learner.optimizer.step()
    learner.optimizer.zero_grad(set_to_none=True)
    return {"train/p_target": hit / n, "grad_norm": float(norm), "zero_groups": zero}


def run(args) -> tuple[list[dict[str, float]], list[dict[str, float]]]:
    from baselines.train.exact_eval import evaluate
    from marl_llm_envs import make

    env_kwargs = {**ENV_KWARGS, "hint_optional": False} if args.hint_required else ENV_KWARGS
    cfg, team, learner = build(args.model, args.lora_layers, args.lr, args.seed, env_kwargs)
    policy = team.policies[args.role]
    metric = "p_pass" if args.role == "thinker" else "p_follow"
    rng = np.random.default_rng(args.seed)
    draws = np.random.default_rng([args.seed, 1])        # the sampled estimators' moves: same episodes as sft's
    k = make(ENV, **env_kwargs).unwrapped.num_candidates      # the hints 1..K
    curve, updates, t0 = [], [], time.time()
    for s in range(args.steps + 1):
        if s % args.eval_every == 0 or s == args.steps:
            got = evaluate(team.policies, ENV, env_kwargs, args.eval_episodes)
            row = {"step": s, metric: got[f"eval/{metric}"], "wall_s": time.time() - t0}
            curve.append(row)
            print(f"step {s:3d}  held-out {metric} {row[metric]:.4f}  ({row['wall_s']:.0f} s)", flush=True)
        if s == args.steps:
            break
        seeds = [int(x) for x in rng.integers(0, 2**40, size=args.batch)]
        hints = [int(x) for x in rng.integers(1, k + 1, size=args.batch)]
        if args.role == "thinker":
            requests, targets, gens = clue_decisions(policy, seeds, gen_seed=s, env_kwargs=env_kwargs)
        else:
            requests, targets, gens = hinted_decisions(policy, seeds, hints, gen_seed=s, env_kwargs=env_kwargs)
        samples = samples_for(requests, targets, gens, args.role)
        if args.objective in ("sft", "pg"):
            stats = step(cfg, learner, samples, args.objective)
        else:
            stats = sampled_step(cfg, learner, samples, args.objective, args.group_size, draws, args.role)
        updates.append({"step": s, **stats})
        print(f"  update {s:3d}: batch P(target) {stats['train/p_target']:.3f}, grad norm {stats['grad_norm']:.3f}"
              + (f", groups without signal {stats['zero_groups']}" if "zero_groups" in stats else ""), flush=True)
    return curve, updates


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="tiny")
    p.add_argument("--lora-layers", type=int, default=0, help="the trainer's --lora-layers (0: every layer)")
    p.add_argument("--lr", type=float, default=2e-4)
    p.add_argument("--objective", choices=("sft", "pg", "grpo", "maxrl"), default="sft")
    p.add_argument("--role", choices=("solver", "thinker"), default="solver",
                   help="whose decision is trained: the solver's (target: the hinted candidate) or the thinker's "
                        "(target: the message naming its clue)")
    p.add_argument("--hint-required", action="store_true",
                   help="play the env with hint_optional=False: the thinker's moves are the labels, without [none]")
    p.add_argument("--group-size", type=int, default=8, help="G, the moves each decision draws (grpo, maxrl)")
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--batch", type=int, default=32, help="decisions per step")
    p.add_argument("--eval-every", type=int, default=10)
    p.add_argument("--eval-episodes", type=int, default=32)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    if args.steps < 0 or min(args.batch, args.eval_every, args.eval_episodes, args.group_size) < 1:
        p.error("--steps >= 0, --batch, --eval-every, --eval-episodes and --group-size >= 1")
    curve, updates = run(args)
    metric, name = ("p_pass", "P(pass)") if args.role == "thinker" else ("p_follow", "P(follow)")
    print(f"\n{args.model}, {args.role}{', --hint-required' if args.hint_required else ''}, --lora-layers {args.lora_layers}, lr {args.lr}, objective {args.objective}, "
          f"{args.batch} decisions a step, seed {args.seed}; held-out {name} on {args.eval_episodes} seeds "
          f"(chance {'0.2' if args.role == 'thinker' and not args.hint_required else '0.25'}):\n\n| step | {name} | wall s |\n|---:|---:|---:|")
    for row in curve:
        print(f"| {row['step']} | {row[metric]:.4f} | {row['wall_s']:.0f} |")
    if args.out:
        args.out.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "curve": curve,
                                        "updates": updates},
                                       indent=1) + "\n")


if __name__ == "__main__":
    main()
