"""Train sb3-contrib MaskablePPO on one seat of a marl_llm_envs game and report its score before and after.

    pip install -e ".[sb3]"
    python examples/sb3_maskable_ppo.py --env kuhn_poker-v0 --timesteps 50000
    python examples/sb3_maskable_ppo.py --env mini_hanabi-v1 --timesteps 100000 --train-against rule_bot

The learner plays a random seat each game (both seats of a zero-sum game are trained) against ``--train-against``
(uniform random legal moves by default, or the env's reference bot). Evaluation plays ``--eval-games`` games per
opponent with the learner acting greedily, before and after training, on fixed seeds, and prints the learner's mean
return with a 95% confidence interval (normal approximation) against random play and against the reference bots.
For cooperative games (Hanabi) the "opponent" is the partner and the return is the team score.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from marl_llm_envs import make, spec
from marl_llm_envs.reference import reference_policies
from marl_llm_envs.scripted import random_legal
from marl_llm_envs.wrappers import SingleAgentEnv, frozen_policy


def evaluate(env_id: str, learner, opponent, games: int, seed: int) -> tuple[float, float]:
    """Mean learner return and its 95% CI half-width over ``games`` games; the learner's seat alternates."""
    rng = np.random.default_rng(seed)
    returns = []
    seats = list(spec(env_id).agents)
    for g in range(games):
        env = make(env_id, action_mode="discrete")
        me = seats[g % len(seats)]
        env.reset(seed=seed + g)
        while not env.done:
            agent = env.agent_selection
            env.step((learner if agent == me else opponent)(env, agent, rng))
        returns.append(env.team_rewards()[env.teams[me]])
    r = np.asarray(returns, dtype=float)
    return float(r.mean()), float(1.96 * r.std(ddof=1) / np.sqrt(len(r)))


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="kuhn_poker-v0")
    parser.add_argument("--timesteps", type=int, default=50_000)
    parser.add_argument("--eval-games", type=int, default=2000)
    parser.add_argument("--train-against", default="random", help="'random' or the name of a reference bot")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    from sb3_contrib import MaskablePPO

    bots = reference_policies(args.env)
    opponents = {"random": random_legal, **bots}
    if args.train_against not in opponents:
        raise SystemExit(f"--train-against must be one of {list(opponents)}")
    train_env = SingleAgentEnv(args.env, agent="random", others=opponents[args.train_against])
    model = MaskablePPO("MlpPolicy", train_env, seed=args.seed, device="cpu", verbose=0, n_steps=1024,
                        batch_size=256, learning_rate=3e-4, ent_coef=0.01)
    results = {}
    before = {name: evaluate(args.env, frozen_policy(model, deterministic=True), opp, args.eval_games, 10_000)
              for name, opp in opponents.items()}
    start = time.perf_counter()
    model.learn(total_timesteps=args.timesteps)
    seconds = time.perf_counter() - start
    after = {name: evaluate(args.env, frozen_policy(model, deterministic=True), opp, args.eval_games, 10_000)
             for name, opp in opponents.items()}
    print(f"# MaskablePPO on {args.env}: {args.timesteps} timesteps against {args.train_against} "
          f"({seconds:.0f} s), learner's mean return over {args.eval_games} games (95% CI), seats alternating")
    print("| opponent / partner | before training | after training |")
    print("|---|---:|---:|")
    for name in opponents:
        (b, bci), (a, aci) = before[name], after[name]
        print(f"| {name} | {b:+.3f} +- {bci:.3f} | {a:+.3f} +- {aci:.3f} |")
        results[name] = {"before": before[name], "after": after[name]}
    return results


if __name__ == "__main__":
    main()
