"""Normalization anchors: the scores of the reference policies, measured and written into the env specs.

    python benchmarks/anchors.py [--games 10000] [--only hanabi,poker,orchestrator] [--write]

For every Hanabi preset: the mean score (and 95% CI) of uniformly random legal play and of the rule bot in
self-play. For Kuhn and Leduc: player 0's mean payoff for each pair of reference policies (random, the Kuhn Nash
equilibrium, the Leduc CFR strategy), seats as named. For orchestrator-v0 (discrete mode, default kwargs): the team
reward of random play, the solo orchestrator and the scripted delegator. With ``--write`` the numbers go to
``marl_llm_envs/data/anchors.json``, which the registry loads into ``spec(env_id).anchors``; the leaderboard
normalizes cooperative scores with them (random = 0, attainable maximum = 1). ``--only`` measures some groups and
``--write`` then replaces only their entries in the file.

Games are played on seeds 0..games-1 in discrete mode; the policies' RNG is seeded per game, so a run is
reproducible. The table is printed in markdown with the date and machine.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import time
from pathlib import Path

import numpy as np

from marl_llm_envs import list_envs, make, spec
from marl_llm_envs.reference import reference_policies
from marl_llm_envs.scripted import random_legal

DATA = Path(__file__).resolve().parent.parent / "marl_llm_envs" / "data" / "anchors.json"


def play(env_id: str, policies: dict, games: int, seed: int = 0) -> dict:
    """Mean and 95% CI of each team's return over ``games`` games (seats -> policies)."""
    returns: dict[str, list[float]] = {}
    start = time.perf_counter()
    for g in range(games):
        env = make(env_id, action_mode="discrete")
        rng = np.random.default_rng([seed, g])
        env.reset(seed=seed + g)
        while not env.done:
            agent = env.agent_selection
            env.step(policies[agent](env, agent, rng))
        for team, value in env.team_rewards().items():
            returns.setdefault(team, []).append(value)
    out = {}
    for team, values in returns.items():
        r = np.asarray(values, dtype=float)
        out[team] = {"mean": float(r.mean()), "ci95": float(1.96 * r.std(ddof=1) / np.sqrt(len(r))), "games": games}
    out["seconds"] = time.perf_counter() - start
    return out


def hanabi_anchors(games: int) -> dict:
    anchors = {}
    for env_id in list_envs("cooperative"):
        if "hanabi" not in env_id:
            continue
        seats = spec(env_id).agents
        rule_bot = reference_policies(env_id)["rule_bot"]
        anchors[env_id] = {
            "random": play(env_id, {a: random_legal for a in seats}, games)["team"],
            "rule_bot": play(env_id, {a: rule_bot for a in seats}, games)["team"],
        }
    return anchors


def poker_anchors(games: int) -> dict:
    pairs = {}
    for env_id in ("kuhn_poker-v0", "leduc_holdem-v0"):
        bots = {"random": random_legal, **reference_policies(env_id)}
        pairs[env_id] = {}
        for n0, p0 in bots.items():
            for n1, p1 in bots.items():
                result = play(env_id, {"player_0": p0, "player_1": p1}, games)
                pairs[env_id][f"{n0} vs {n1}"] = result["player_0"]
    return pairs


def orchestrator_anchors(games: int) -> dict:
    env_id = "orchestrator-v0"
    seats = spec(env_id).agents
    bots = {"random": random_legal, **reference_policies(env_id)}
    return {env_id: {name: play(env_id, {a: bot for a in seats}, games)["team"] for name, bot in bots.items()}}


GROUPS = ("hanabi", "poker", "orchestrator")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=10_000)
    parser.add_argument("--only", default=",".join(GROUPS), help=f"comma-separated groups of {GROUPS}")
    parser.add_argument("--write", action="store_true", help=f"write {DATA.relative_to(DATA.parent.parent.parent)}")
    args = parser.parse_args(argv)
    only = [g.strip() for g in args.only.split(",") if g.strip()]
    if not only or set(only) - set(GROUPS):
        parser.error(f"--only takes groups of {GROUPS}, got {args.only!r}")
    print(f"# anchors  {datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}  |  "
          f"{platform.platform()}  |  {args.games} games per row, seeds 0..{args.games - 1}")
    hanabi = hanabi_anchors(args.games) if "hanabi" in only else {}
    if hanabi:
        print("\n| env | nominal max | attainable max | random (mean +- 95% CI) | rule bot (mean +- 95% CI) |")
        print("|---|---:|---:|---:|---:|")
    for env_id, row in hanabi.items():
        cls_env = make(env_id)
        r, b = row["random"], row["rule_bot"]
        print(f"| {env_id} | {getattr(cls_env, 'max_score', '?')} | {getattr(cls_env, 'attainable_max_score', '?')} | "
              f"{r['mean']:.3f} +- {r['ci95']:.3f} | {b['mean']:.3f} +- {b['ci95']:.3f} |")
    poker = poker_anchors(args.games) if "poker" in only else {}
    if poker:
        print("\n| env | player_0 vs player_1 | player_0 mean payoff +- 95% CI |")
        print("|---|---|---:|")
    for env_id, rows in poker.items():
        for pair, r in rows.items():
            print(f"| {env_id} | {pair} | {r['mean']:+.4f} +- {r['ci95']:.4f} |")
    orchestration = orchestrator_anchors(args.games) if "orchestrator" in only else {}
    for env_id, rows in orchestration.items():
        print(f"\n| env | policy | team reward (mean +- 95% CI) |\n|---|---|---:|")
        for name, r in rows.items():
            print(f"| {env_id} | {name} | {r['mean']:.4f} +- {r['ci95']:.4f} |")
    if args.write:
        data = {"measured": datetime.date.today().isoformat(), "games": args.games, "envs": {}}
        if DATA.exists():
            data["envs"] = json.loads(DATA.read_text())["envs"]
        for env_id, row in {**hanabi, **orchestration}.items():
            data["envs"][env_id] = {name: {k: v for k, v in r.items()} for name, r in row.items()}
        for env_id, rows in poker.items():
            data["envs"][env_id] = {f"player_0 payoff, {pair}": r for pair, r in rows.items()}
        DATA.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        print(f"\nwrote {DATA}")


if __name__ == "__main__":
    main()
