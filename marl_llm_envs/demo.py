"""The demo: play one episode of every registered env with scripted policies and print it.

    python -m marl_llm_envs.demo [--seed 0] [--mode text|discrete] [--full-prompts]

think_solve-v0 is played by the privileged oracle thinker and the follower solver, then replayed as the solver-solo
counterfactual (``ablate("thinker")``) to show the thinker's credit; orchestrator-v0 by its scripted delegator, with
the workers' leave-one-out outcomes and the solo counterfactual (``ablate("orchestrator")``); the games by their reference policy in every
seat (:func:`marl_llm_envs.reference.reference_policies`), the others by uniformly random legal moves.
Each episode is then replayed from its transcript and checked to give the same rewards.
"""

from __future__ import annotations

import argparse
import textwrap

import numpy as np

from marl_llm_envs import list_envs, make, replay, spec
from marl_llm_envs.reference import reference_policies
from marl_llm_envs.scripted import follower_solver, oracle_thinker, play, random_legal


def _short(text: str, width: int = 100) -> str:
    one_line = " ".join(str(text).split())
    return one_line if len(one_line) <= width else one_line[: width - 3] + "..."


def run_episode(env_id: str, mode: str, seed: int, full_prompts: bool) -> None:
    env = make(env_id, action_mode=mode, render_mode="ansi")
    s = spec(env_id)
    bots = reference_policies(env_id)
    if env_id == "think_solve-v0":
        policies, who = {"thinker": oracle_thinker, "solver": follower_solver}, "oracle thinker, follower solver"
    elif bots:
        name, bot = next(iter(bots.items()))
        policies, who = bot, f"reference policy {name} in every seat"
    else:
        policies, who = random_legal, "uniformly random legal moves"
    print(f"\n=== {env_id} ({s.family}, {mode} mode, seed {seed}) agents: {', '.join(s.agents)}; {who} ===")
    seen: set[str] = set()

    def show(agent, obs, action):
        if full_prompts or agent not in seen:
            print(f"  --- prompt of {agent} ---")
            print(textwrap.indent(obs["text"], "  | "))
            seen.add(agent)
        shown = env.action_names(agent)[action] if mode == "discrete" and env.action_names(agent) else action
        print(f"  {agent} plays: {_short(shown)}")

    play(env, policies, seed, on_turn=show)
    print(textwrap.indent(env.render() or "", "  final state: "))
    print(f"  team rewards: {env.team_rewards()}")
    transcript = env.transcript()
    assert replay(transcript).team_rewards() == env.team_rewards()
    print(f"  transcript: {len(transcript['actions'])} step inputs; replaying it gives the same team rewards")
    if env_id == "think_solve-v0":
        n = 200
        with_thinker = solo = 0.0
        for k in range(n):
            rng = np.random.default_rng([seed, k, 1])  # a stream of its own, not the env seed's
            e = make(env_id, action_mode=mode)
            e.reset(seed=seed + k)
            branch = e.ablate("thinker")  # the solver-solo counterfactual, from the same start
            while not branch.done:
                branch.step(follower_solver(branch, branch.agent_selection, rng))
            solo += branch.team_rewards()["team"]
            play(e, policies, seed + k, rng=rng)
            with_thinker += e.team_rewards()["team"]
        print(f"  thinker's credit over {n} problems: team reward {with_thinker / n:.2f} with the thinker, "
              f"{solo / n:.2f} with the thinker ablated")
    if env_id == "orchestrator-v0":
        info = env.outcome()  # the final infos (the agents have left env.agents by now)
        workers = [f"{w} (part {info['worker_part'][w]}, report right: {info['worker_correct'][w]})"
                   for w in info["spawned"]]
        print(f"  workers: {', '.join(workers) or 'none'}")
        if mode == "text":  # the scripted seats compute exactly in text mode: skills are modelled in discrete mode
            return
        print(f"  team reward without each worker's report: {info['team_reward_without']}")
        n, bot = 200, bots["delegator"]
        with_workers = alone = 0.0
        for k in range(n):
            rng = np.random.default_rng([seed, k, 1])
            e = make(env_id, action_mode=mode)
            e.reset(seed=seed + k)
            branch = e.ablate("orchestrator")  # the solo counterfactual, from the same start
            while not branch.done:
                branch.step(bot(branch, branch.agent_selection, rng))
            alone += branch.team_rewards()["team"]
            play(e, policies, seed + k, rng=rng)
            with_workers += e.team_rewards()["team"]
        print(f"  the workers' credit over {n} problems: team reward {with_workers / n:.2f} with them, "
              f"{alone / n:.2f} with the orchestrator alone")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--mode", choices=["text", "discrete", "both"], default="both")
    parser.add_argument("--full-prompts", action="store_true", help="print every prompt in full")
    args = parser.parse_args(argv)
    modes = ["text", "discrete"] if args.mode == "both" else [args.mode]
    for env_id in list_envs():
        for mode in modes:
            run_episode(env_id, mode, args.seed, args.full_prompts)


if __name__ == "__main__":
    main()
