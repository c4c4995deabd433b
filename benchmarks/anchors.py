"""Normalization anchors: the scores of the reference policies, measured and written into the env specs.

    python benchmarks/anchors.py [--games 10000] [--only cooperative orchestration zero_sum credit_suite credit_small]
                                 [--textarena N] [--write]

Every registered env gets anchors (a test checks it):

* cooperative (every Hanabi preset): the mean team score (and 95% CI) of uniformly random legal play and of the rule
  bot in self-play;
* orchestration: think_solve-v0 with random thinker and solver, with the privileged oracle thinker and the follower
  solver (the attainable maximum, 1.0) and with the follower solver alone (the thinker ablated: chance level);
  voting-v0 with random voters and with clue-following voters (default clues, right 70% of the time);
  orchestrator-v0 (discrete mode, default kwargs) with random play, the solo orchestrator and the scripted delegator;
* credit_suite (issue 16): every setting the credit suite sweeps, rows named ``"POLICY, KWARG=VALUE"``: think_solve-v0's
  clue task (``thinker_clue_accuracy``), voting-v0's plurality / fraction schemes at 2..16 voters, team_umbrella-v0's
  delays (team return and the noise-free decisive reward) and free_riding-v0's idle seats; random and the reference
  policy that attains the optimum each env's manual proves (see :func:`credit_suite_anchors`);
* credit_small (the small tier's suite, ``credit-small@3``, in text mode): for every cooperative setting of the suite
  file whose anchors are measured, the setting's anchors in text mode with its kwargs, rows named
  ``"POLICY, KWARG=VALUE[, ...], text mode"`` (``"POLICY, text mode"`` without kwargs): ``random`` and the reference
  policy in every seat (the suite's 0 and 1, :func:`leaderboard.suite.spec._measured` on other seeds), and the setting's
  learning seats random beside its scripted partners (``"random learners, ROLE=reference, ..."``: what a team whose
  learners contribute nothing scores; see :func:`credit_small_anchors`);
* zero-sum (Kuhn, Leduc, tic-tac-toe, Connect Four, simple negotiation): player 0's mean payoff for each pair of
  policies among random and the env's reference policies (Kuhn Nash equilibrium, Leduc CFR, tic-tac-toe minimax,
  Connect Four alpha-beta search; the negotiation has no reference bot, so random vs random only), seats as named.

TextArena ids (``textarena/<id>``, made on demand, any of TextArena's games) have no generic legal-move generator
and no reference bots, so they cannot all be measured. ``--textarena`` measures random vs random for the four games
whose legal moves ``benchmarks/env_throughput.py`` reads from TextArena's state (KuhnPoker-v0, TicTacToe-v0,
ConnectFour-v0, SimpleNegotiation-v0), played through our bridge; every other TextArena id carries the reward scale
TextArena's rules fix (win / draw / loss = +1 / 0 / -1 in its two-player games), marked as not measured
(:data:`marl_llm_envs.envs.textarena_bridge.UNMEASURED_ANCHORS`). Zero-sum entries are ranked by Bradley-Terry on
the same seeds, which needs no anchors; the anchors there are for reading scores.

With ``--write`` the numbers go to ``marl_llm_envs/data/anchors.json``, which the registry loads into
``spec(env_id).anchors``; the leaderboard normalizes cooperative and orchestration scores with them (random = 0,
attainable maximum = 1). Games are played on seeds 0..games-1 in discrete mode (TextArena: text mode); the
policies' RNG is seeded per game, so a run is reproducible. Connect Four's search takes about 0.4 s per game here,
so its rows play at most ``SLOW_GAMES`` games. The table is printed in markdown with the date and machine.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import random
import time
from pathlib import Path

import numpy as np

from marl_llm_envs import list_envs, make, spec
from marl_llm_envs.reference import reference_policies
from marl_llm_envs.scripted import follower_solver, oracle_thinker, random_legal

DATA = Path(__file__).resolve().parent.parent / "marl_llm_envs" / "data" / "anchors.json"
ZERO_SUM = ("kuhn_poker-v0", "leduc_holdem-v0", "tic_tac_toe-v0", "connect_four-v0", "simple_negotiation-v0")
SLOW_GAMES = {"connect_four-v0": 300}  # rows with a reference policy of this env play at most this many games
TEXTARENA_IDS = ("KuhnPoker-v0", "TicTacToe-v0", "ConnectFour-v0", "SimpleNegotiation-v0")


def play(env_id: str, policies: dict, games: int, seed: int = 0, action_mode: str = "discrete",
         ablate: str | None = None, kwargs: dict | None = None, info_key: str | None = None) -> dict:
    """Mean and 95% CI of each team's return over ``games`` games (seats -> policies); ``ablate``: that agent is
    ablated at the start (plays the env's null action); ``kwargs``: env kwargs; ``info_key``: score the first seat's
    final ``infos[info_key]`` instead of the return (e.g. team_umbrella's noise-free ``decisive_reward``)."""
    returns: dict[str, list[float]] = {}
    start = time.perf_counter()
    for g in range(games):
        env = make(env_id, action_mode=action_mode, **(kwargs or {}))
        rng = np.random.default_rng([seed, g])
        env.reset(seed=seed + g)
        if ablate is not None:
            env = env.ablate(ablate)
        while not env.done:
            agent = env.agent_selection
            env.step(policies[agent](env, agent, rng))
        if info_key is not None:
            returns.setdefault("team", []).append(float(env.infos[env.possible_agents[0]][info_key]))
            continue
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


def zero_sum_anchors(games: int) -> dict:
    pairs = {}
    for env_id in ZERO_SUM:
        bots = {"random": random_legal, **reference_policies(env_id)}
        pairs[env_id] = {}
        for n0, p0 in bots.items():
            for n1, p1 in bots.items():
                n = games if n0 == n1 == "random" else min(games, SLOW_GAMES.get(env_id, games))
                result = play(env_id, {"player_0": p0, "player_1": p1}, n)
                pairs[env_id][f"{n0} vs {n1}"] = result["player_0"]
    return pairs


def orchestration_anchors(games: int) -> dict:
    voters = spec("voting-v0").agents
    seats = spec("orchestrator-v0").agents
    clue = reference_policies("voting-v0")["clue_follower"]
    return {
        "think_solve-v0": {
            "random": play("think_solve-v0", {"thinker": random_legal, "solver": random_legal}, games)["team"],
            "oracle_thinker + follower_solver": play(
                "think_solve-v0", {"thinker": oracle_thinker, "solver": follower_solver}, games)["team"],
            "follower_solver, thinker ablated": play(
                "think_solve-v0", {"solver": follower_solver}, games, ablate="thinker")["team"],
        },
        "voting-v0": {
            "random": play("voting-v0", {a: random_legal for a in voters}, games)["team"],
            "clue_follower": play("voting-v0", {a: clue for a in voters}, games)["team"],
        },
        "orchestrator-v0": {name: play("orchestrator-v0", {a: bot for a in seats}, games)["team"]
                            for name, bot in {"random": random_legal, **reference_policies("orchestrator-v0")}.items()},
    }


CLUE_ACCURACIES = (0.4, 0.6, 0.8, 0.9, 1.0)
VOTING_SIZES = (2, 4, 8, 16)
UMBRELLA_DELAYS = (1, 3, 10, 30)
IDLE_SEATS = (0, 1, 3, 7)


def _kw(kwargs: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in kwargs.items())


def credit_suite_anchors(games: int) -> dict:
    """The credit suite's settings (issue 16): row names are ``"POLICY, KWARG=VALUE[, ...]"``; each setting has a
    uniformly random row (the suite's 0) and its reference policy's row (the optimum its manual proves, the suite's 1).

    * think_solve-v0, ``thinker_clue_accuracy`` in CLUE_ACCURACIES: random, clue_relay (optimum = the accuracy), the
      follower solver with the thinker ablated (chance, 1/4);
    * voting-v0, ``reward_scheme`` plurality / fraction at ``n_voters`` in VOTING_SIZES (default clues, 0.7):
      random and clue_follower (optimal under "fraction": 0.7);
    * team_umbrella-v0, ``delay`` in UMBRELLA_DELAYS (default noise 1): random and forecast_follower, as the team
      return (optimum 1, random 0 in expectation) and as the noise-free ``decisive_reward`` (rows ending
      ", decisive reward");
    * free_riding-v0, ``idle_seats`` in IDLE_SEATS: random (1/3) and card_matcher (1).
    """
    relay = reference_policies("think_solve-v0")["clue_relay"]
    think = {}
    for a in CLUE_ACCURACIES:
        kw = {"thinker_clue_accuracy": a}
        think[f"random, {_kw(kw)}"] = play("think_solve-v0", {"thinker": random_legal, "solver": random_legal},
                                           games, kwargs=kw)["team"]
        think[f"clue_relay, {_kw(kw)}"] = play("think_solve-v0", {"thinker": relay, "solver": relay}, games,
                                               kwargs=kw)["team"]
        think[f"follower_solver, thinker ablated, {_kw(kw)}"] = play(
            "think_solve-v0", {"solver": follower_solver}, games, ablate="thinker", kwargs=kw)["team"]
    clue = reference_policies("voting-v0")["clue_follower"]
    voting = {}
    for scheme in ("plurality", "fraction"):
        for n in VOTING_SIZES:
            kw = {"reward_scheme": scheme, "n_voters": n}
            voters = [f"voter_{i}" for i in range(n)]
            voting[f"random, {_kw(kw)}"] = play("voting-v0", {v: random_legal for v in voters}, games,
                                                kwargs=kw)["team"]
            voting[f"clue_follower, {_kw(kw)}"] = play("voting-v0", {v: clue for v in voters}, games,
                                                       kwargs=kw)["team"]
    follow = reference_policies("team_umbrella-v0")["forecast_follower"]
    umbrella = {}
    for d in UMBRELLA_DELAYS:
        kw = {"delay": d}
        for name, policy in (("random", random_legal), ("forecast_follower", follow)):
            seats = {"player_0": policy, "player_1": policy}
            umbrella[f"{name}, {_kw(kw)}"] = play("team_umbrella-v0", seats, games, kwargs=kw)["team"]
            umbrella[f"{name}, {_kw(kw)}, decisive reward"] = play("team_umbrella-v0", seats, games, kwargs=kw,
                                                                   info_key="decisive_reward")["team"]
    matcher = reference_policies("free_riding-v0")["card_matcher"]
    free = {}
    for k in IDLE_SEATS:
        kw = {"idle_seats": k}
        seats = ["decider", *(f"idle_{i}" for i in range(k))]
        free[f"random, {_kw(kw)}"] = play("free_riding-v0", {s: random_legal for s in seats}, games, kwargs=kw)["team"]
        free[f"card_matcher, {_kw(kw)}"] = play("free_riding-v0", {s: matcher for s in seats}, games,
                                                kwargs=kw)["team"]
    return {"think_solve-v0": think, "voting-v0": voting, "team_umbrella-v0": umbrella, "free_riding-v0": free}


SMALL_SUITE = "credit-small@3"


def credit_small_anchors(games: int, suite_key: str = SMALL_SUITE) -> dict:
    """The small tier's anchors in text mode, read from the suite file: per cooperative setting with a named
    (measured) anchor, its ``zero`` and ``one`` policies in every seat, and, where the setting has scripted partners,
    random learning seats beside them. Rows: ``"POLICY, KWARG=VALUE, text mode"``."""
    from leaderboard.suite import load_suite
    from marl_llm_envs.reference import reference_policies

    suite = load_suite(suite_key)
    out: dict[str, dict] = {}
    for s in suite.settings:
        if s.play != "self":
            continue
        where = ", ".join(x for x in (_kw(s.env_kwargs), "text mode") if x)
        env = make(s.env_id, action_mode="text", **s.env_kwargs)
        seats, roles = env.possible_agents, env.roles
        for name in dict.fromkeys(v for v in s.normalize.values() if isinstance(v, str)):
            policy = random_legal if name == "random" else reference_policies(s.env_id)[name]
            out.setdefault(s.env_id, {})[f"{name}, {where}"] = play(
                s.env_id, {a: policy for a in seats}, games, action_mode="text", kwargs=s.env_kwargs)["team"]
        if s.partners and any(isinstance(v, str) for v in s.normalize.values()):
            partner = {}           # as the trainer's --partners: "reference" is the env's first reference bot
            for item in s.partners.split(","):
                role, _, kind = item.partition("=")
                partner[role.strip()] = random_legal if kind.strip() == "random" else \
                    next(iter(reference_policies(s.env_id).values()))
            team = {a: partner.get(roles[a], random_legal) for a in seats}
            out[s.env_id][f"random learners, {s.partners}, {where}"] = play(
                s.env_id, team, games, action_mode="text", kwargs=s.env_kwargs)["team"]
    return out


def textarena_anchors(games: int) -> dict:
    """Random vs random in the TextArena games whose legal moves we can read from TextArena's state."""
    from env_throughput import textarena_legal_moves

    def random_ta(env, agent, rng, ta_id):
        state_rng = random.Random(int(rng.integers(2**63 - 1)))
        return state_rng.choice(textarena_legal_moves(ta_id, env._ta, state_rng))

    out = {}
    for ta_id in TEXTARENA_IDS:
        policy = {a: (lambda env, agent, rng, t=ta_id: random_ta(env, agent, rng, t)) for a in ("player_0", "player_1")}
        result = play(f"textarena/{ta_id}", policy, games, action_mode="text")
        out[f"textarena/{ta_id}"] = {"random vs random": result["player_0"]}
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=10_000, help="games per row (10000)")
    parser.add_argument("--only", nargs="+",
                        choices=["cooperative", "orchestration", "zero_sum", "credit_suite", "credit_small"],
                        default=["cooperative", "orchestration", "zero_sum", "credit_suite", "credit_small"],
                        help="measure only these groups (credit_suite: the credit suite's settings; credit_small: "
                             "the small tier's settings in text mode)")
    parser.add_argument("--textarena", type=int, default=0, metavar="GAMES",
                        help="also measure the TextArena rows, with this many games each (needs textarena)")
    parser.add_argument("--write", action="store_true", help=f"write {DATA.relative_to(DATA.parent.parent.parent)} "
                        "(the rows measured now replace their old values; the other rows are kept)")
    args = parser.parse_args(argv)
    print(f"# anchors  {datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}  |  "
          f"{platform.platform()}  |  {args.games} games per row, seeds 0..{args.games - 1}")
    measured: dict[str, dict] = {}
    if "cooperative" in args.only:
        hanabi = hanabi_anchors(args.games)
        print("\n| env | nominal max | attainable max | random (mean +- 95% CI) | rule bot (mean +- 95% CI) |")
        print("|---|---:|---:|---:|---:|")
        for env_id, row in hanabi.items():
            cls_env = make(env_id)
            r, b = row["random"], row["rule_bot"]
            print(f"| {env_id} | {getattr(cls_env, 'max_score', '?')} | "
                  f"{getattr(cls_env, 'attainable_max_score', '?')} | "
                  f"{r['mean']:.3f} +- {r['ci95']:.3f} | {b['mean']:.3f} +- {b['ci95']:.3f} |")
        measured.update(hanabi)
    if "orchestration" in args.only:
        orchestration = orchestration_anchors(args.games)
        print("\n| env | policies | team reward (mean +- 95% CI) | games |")
        print("|---|---|---:|---:|")
        for env_id, rows in orchestration.items():
            for name, r in rows.items():
                print(f"| {env_id} | {name} | {r['mean']:.4f} +- {r['ci95']:.4f} | {r['games']} |")
        measured.update(orchestration)
    if "credit_suite" in args.only:
        suite = credit_suite_anchors(args.games)
        print("\n| env | policy, setting | team score (mean +- 95% CI) | games |")
        print("|---|---|---:|---:|")
        for env_id, rows in suite.items():
            for name, r in rows.items():
                print(f"| {env_id} | {name} | {r['mean']:.4f} +- {r['ci95']:.4f} | {r['games']} |")
        for env_id, rows in suite.items():  # rows are added to the env's anchors (think_solve, voting keep theirs)
            measured[env_id] = {**measured.get(env_id, {}), **rows}
    if "credit_small" in args.only:
        small = credit_small_anchors(args.games)
        print(f"\n{SMALL_SUITE}, text mode:\n\n| env | policy, setting | team score (mean +- 95% CI) | games |")
        print("|---|---|---:|---:|")
        for env_id, rows in small.items():
            for name, r in rows.items():
                print(f"| {env_id} | {name} | {r['mean']:.4f} +- {r['ci95']:.4f} | {r['games']} |")
        for env_id, rows in small.items():
            measured[env_id] = {**measured.get(env_id, {}), **rows}
    pairs = zero_sum_anchors(args.games) if "zero_sum" in args.only else {}
    if args.textarena:
        pairs.update(textarena_anchors(args.textarena))
    if pairs:
        print("\n| env | player_0 vs player_1 | player_0 mean payoff +- 95% CI | games |")
        print("|---|---|---:|---:|")
        for env_id, rows in pairs.items():
            for pair, r in rows.items():
                print(f"| {env_id} | {pair} | {r['mean']:+.4f} +- {r['ci95']:.4f} | {r['games']} |")
        measured.update({env_id: {f"player_0 payoff, {pair}": r for pair, r in rows.items()}
                         for env_id, rows in pairs.items()})
    if args.write:
        data = json.loads(DATA.read_text()) if DATA.exists() else {"envs": {}}
        data["measured"] = datetime.date.today().isoformat()
        data.pop("games", None)  # each row carries its own game count
        for env_id, rows in measured.items():  # row by row: the rows measured now replace their old values
            data["envs"][env_id] = {**data["envs"].get(env_id, {}), **rows}
        DATA.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        print(f"\nwrote {DATA}")


if __name__ == "__main__":
    main()
