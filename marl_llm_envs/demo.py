"""The demo: play one episode of every registered env with scripted policies and print it.

    python -m marl_llm_envs.demo [--seed 0] [--mode text|discrete|both] [--verbose]

By default each env shows one prompt (the first agent's first prompt, text mode), the moves of each episode on a
few lines, the final state, the team rewards and a replay check; ``--verbose`` prints every agent's first prompt in
every mode and one move per line (``--full-prompts``: every prompt of every turn). In discrete mode a move is shown
as its index and its label (``3 [3]``, ``7 [play 2]``).

think_solve-v0 is played by the privileged oracle thinker and the follower solver, then replayed as the solver-solo
counterfactual (``ablate("thinker")``) to show the thinker's credit; orchestrator-v0 by its scripted delegator, with
the workers' leave-one-out outcomes and the solo counterfactual (``ablate("orchestrator")``); the games by their reference policy in every
seat (:func:`marl_llm_envs.reference.reference_policies`), the others by uniformly random legal moves.
Each episode is then replayed from its transcript and checked to give the same rewards.
"""

from __future__ import annotations

import argparse
import textwrap
from typing import Any

import numpy as np

from marl_llm_envs import list_envs, make, replay, spec
from marl_llm_envs.reference import reference_policies
from marl_llm_envs.scripted import follower_solver, oracle_thinker, play, random_legal

WIDTH = 116


def _short(text: str, width: int = 100) -> str:
    one_line = " ".join(str(text).split())
    return one_line if len(one_line) <= width else one_line[: width - 3] + "..."


def _wrap_items(items: list[str], head: str) -> str:
    """``items`` joined by ", " on lines of at most WIDTH characters, an item never split; ``head`` starts line 1."""
    lines, line = [], head
    for i, item in enumerate(items):
        piece = item + ("," if i < len(items) - 1 else "")
        if len(line) + 1 + len(piece) > WIDTH and line.strip():
            lines.append(line)
            line = " " * len(head) + piece
        else:
            line = (line + " " if line.strip() else line) + piece
    lines.append(line)
    return "\n".join(lines)


def _box(text: str) -> str:
    """A prompt inside a "  | " margin, blank lines included."""
    return textwrap.indent(text, "  | ", predicate=lambda line: True)


def _seats(env_id: str) -> tuple[Any, str]:
    """The policies the demo plays ``env_id`` with, and how it says so."""
    bots = reference_policies(env_id)
    if env_id == "think_solve-v0":
        return {"thinker": oracle_thinker, "solver": follower_solver}, "oracle thinker, follower solver"
    if bots:
        name, bot = next(iter(bots.items()))
        return bot, f"reference policy {name} in every seat"
    return random_legal, "uniformly random legal moves"


def run_episode(env_id: str, mode: str, seed: int, prompts: str, one_line_moves: bool) -> None:
    """Play and print one episode. ``prompts``: "none", "first" (one prompt), "agents" (each agent's first) or
    "all"; ``one_line_moves``: one line per move instead of a wrapped list."""
    env = make(env_id, action_mode=mode, render_mode="ansi")
    s = spec(env_id)
    policies, who = _seats(env_id)
    print(f"\n=== {env_id} ({s.family}, {mode} mode, seed {seed}) agents: {', '.join(s.agents)}; {who} ===")
    seen: set[str] = set()
    moves: list[str] = []

    def show(agent, obs, action):
        if prompts == "all" or (prompts == "agents" and agent not in seen) or (prompts == "first" and not seen):
            print(f"  --- prompt of {agent} ---")
            print(_box(obs["text"]))
            seen.add(agent)
        names = env.action_names(agent)
        shown = f"{action} [{names[action]}]" if mode == "discrete" and names else _short(action, 60)
        if one_line_moves:
            print(f"  {agent} plays: {shown}")
        moves.append(f"{agent} {shown}")

    play(env, policies, seed, on_turn=show)
    if not one_line_moves:
        print(_wrap_items(moves, "  moves:"))
    print("  final state:")
    print(textwrap.indent(env.render() or "", "    "))
    print(f"  team rewards: {env.team_rewards()}")
    transcript = env.transcript()
    assert replay(transcript).team_rewards() == env.team_rewards()
    print(f"  transcript: {len(moves)} moves (and {len(transcript['actions']) - len(moves)} step(None) of finished "
          "agents); replaying it gives the same team rewards")
    if env_id == "think_solve-v0":
        n = 200
        with_thinker, solo = _with_and_without(env_id, mode, seed, policies, "thinker", follower_solver, n)
        print(f"  thinker's credit over {n} problems: team reward {with_thinker:.2f} with the thinker, "
              f"{solo:.2f} with the thinker ablated")
        print("  (why the modes differ: alone, the solver guesses one of 4 candidates in discrete mode, any number in "
              "text mode)")
    if env_id == "orchestrator-v0":
        info = env.outcome()  # the final infos (the agents have left env.agents by now)
        workers = [f"{w} (part {info['worker_part'][w]}, report right: {info['worker_correct'][w]})"
                   for w in info["spawned"]]
        print(f"  workers: {', '.join(workers) or 'none'}")
        if mode == "text":  # the scripted seats compute exactly in text mode: skills are modelled in discrete mode
            return
        print(f"  team reward without each worker's report: {info['team_reward_without']}")
        n = 200
        with_workers, alone = _with_and_without(env_id, mode, seed, policies, "orchestrator",
                                                reference_policies(env_id)["delegator"], n)
        print(f"  the workers' credit over {n} problems: team reward {with_workers:.2f} with them, "
              f"{alone:.2f} with the orchestrator alone")


def _with_and_without(env_id: str, mode: str, seed: int, policies: Any, agent: str, branch_policy: Any,
                      n: int) -> tuple[float, float]:
    """The mean team reward over ``n`` problems played by ``policies``, and from the same starts with ``agent``
    ablated (the branch played by ``branch_policy``): the agent's credit, the Wonderful-Life way."""
    with_agent = without = 0.0
    for k in range(n):
        rng = np.random.default_rng([seed, k, 1])  # a stream of its own, not the env seed's
        e = make(env_id, action_mode=mode)
        e.reset(seed=seed + k)
        branch = e.ablate(agent)  # the counterfactual without the agent, from the same start
        while not branch.done:
            branch.step(branch_policy(branch, branch.agent_selection, rng))
        without += branch.team_rewards()["team"]
        play(e, policies, seed + k, rng=rng)
        with_agent += e.team_rewards()["team"]
    return with_agent / n, without / n


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=0, help="episode seed (default 0)")
    parser.add_argument("--mode", choices=["text", "discrete", "both"], default="both",
                        help="action mode(s) to play (default both)")
    parser.add_argument("--verbose", action="store_true",
                        help="every agent's first prompt in every mode, one move per line")
    parser.add_argument("--full-prompts", action="store_true", help="as --verbose, with every prompt of every turn")
    args = parser.parse_args(argv)
    if args.seed < 0:
        parser.error(f"argument --seed: a non-negative int (an env's reset seed), got {args.seed}")
    modes = ["text", "discrete"] if args.mode == "both" else [args.mode]
    for env_id in list_envs():
        for i, mode in enumerate(modes):
            if args.verbose or args.full_prompts:
                prompts = "all" if args.full_prompts else "agents"
            else:
                prompts = "first" if i == 0 else "none"
            run_episode(env_id, mode, args.seed, prompts, one_line_moves=args.verbose or args.full_prompts)


if __name__ == "__main__":
    main()
