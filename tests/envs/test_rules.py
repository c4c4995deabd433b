"""Game rules, pinned by hand-checked examples."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from marl_llm_envs import make, replay
from marl_llm_envs.envs.tic_tac_toe import LINES
from marl_llm_envs.scripted import follower_solver, oracle_thinker, play, random_legal
from marl_llm_envs.tasks import Task, TaskSource

CHECK, BET, CALL, FOLD = range(4)


def kuhn_with_cards(p0: int, p1: int, mode: str = "discrete"):
    """A Kuhn env whose first deal is (p0, p1): search seeds for it (the deal comes from the env's RNG)."""
    for seed in range(1000):
        env = make("kuhn_poker-v0", action_mode=mode)
        env.reset(seed=seed)
        if (env._cards["player_0"], env._cards["player_1"]) == (p0, p1):
            return env
    raise AssertionError("no seed deals these cards")


def final(env):
    return {a: env.infos[a]["team_reward"] for a in env.possible_agents}


def test_kuhn_fold_loses_the_pot_to_the_other_player():
    env = kuhn_with_cards(2, 0)  # player_0 K, player_1 J
    env.step(BET)
    env.step(FOLD)
    assert final(env) == {"player_0": 1.0, "player_1": -1.0}
    env = kuhn_with_cards(0, 2)  # the better card folds: still loses its ante
    env.step(CHECK)
    env.step(BET)
    env.step(FOLD)
    assert final(env) == {"player_0": -1.0, "player_1": 1.0}


def test_kuhn_called_showdown_pays_two_to_the_higher_card():
    for p0, p1 in itertools.permutations(range(3), 2):
        env = kuhn_with_cards(p0, p1)
        env.step(BET)
        env.step(CALL)
        win = 2.0 if p0 > p1 else -2.0
        assert final(env) == {"player_0": win, "player_1": -win}
        env = kuhn_with_cards(p0, p1)
        env.step(CHECK)
        env.step(BET)
        env.step(CALL)
        assert final(env) == {"player_0": win, "player_1": -win}


def test_kuhn_checked_showdown_pays_one():
    env = kuhn_with_cards(1, 0)
    env.step(CHECK)
    env.step(CHECK)
    assert final(env) == {"player_0": 1.0, "player_1": -1.0}


# The five terminal histories of a Kuhn hand, worked out by hand from the manual (both ante 1; a bet or a call puts in
# 1 more; a fold hands the pot to the other player, a showdown to the higher card; the winner gains what the loser
# put in). Chips won by the player who acts first in the hand, (if it holds the higher card, if it holds the lower).
KUHN_TERMINALS = {
    ("check", "check"): (+1.0, -1.0),        # showdown, pot 1 + 1: the loser put in 1
    ("bet", "fold"): (+1.0, +1.0),           # second folds its ante, whatever the cards
    ("bet", "call"): (+2.0, -2.0),           # showdown, pot 2 + 2
    ("check", "bet", "fold"): (-1.0, -1.0),  # first folds its ante, whatever the cards
    ("check", "bet", "call"): (+2.0, -2.0),  # showdown, pot 2 + 2
}
# The pot the player to move sees in its prompt after each prefix of a history: (pot, its own chips in, opponent's).
KUHN_POTS = {(): (2, 1, 1), ("check",): (2, 1, 1), ("bet",): (3, 1, 2), ("check", "bet"): (3, 1, 2)}


def _kuhn_hand_with(first: str, cards: dict):
    """A discrete Kuhn env at the start of a hand in which ``first`` acts first with ``cards`` (p0, p1 by seat).

    player_0 acts first in hand 1 of a 1-hand match; player_1 in hand 2 of a 2-hand match, after a hand 1 in
    which player_0 bet and player_1 folded (player_0 +1). Seeds are searched for the deal."""
    for seed in range(1000):
        env = make("kuhn_poker-v0", action_mode="discrete", rounds=1 if first == "player_0" else 2)
        env.reset(seed=seed)
        if first == "player_1":
            env.step(BET)
            env.step(FOLD)
        if env._cards == cards:
            assert env.agent_selection == first
            return env
    raise AssertionError("no seed deals these cards")


@pytest.mark.parametrize("first", ["player_0", "player_1"])
@pytest.mark.parametrize("history", list(KUHN_TERMINALS), ids="-".join)
def test_kuhn_every_terminal_history_pays_the_pot_by_hand(first, history):
    moves = {"check": CHECK, "bet": BET, "call": CALL, "fold": FOLD}
    second = "player_1" if first == "player_0" else "player_0"
    before = 0.0 if first == "player_0" else -1.0  # the first player's chips from hand 1 (see _kuhn_hand_with)
    for first_card, second_card in itertools.permutations(range(3), 2):   # J=0 < Q=1 < K=2, both orders
        env = _kuhn_hand_with(first, {first: first_card, second: second_card})
        for i, move in enumerate(history):
            mover = first if i % 2 == 0 else second
            assert env.agent_selection == mover and not env.done
            pot, mine, theirs = KUHN_POTS[history[:i]]
            assert f"Pot: {pot} chips (you put in {mine}, your opponent {theirs})." in env.observe(mover)["text"]
            env.step(moves[move])
        won = KUHN_TERMINALS[history][0 if first_card > second_card else 1]
        assert env.done
        assert env.rewards == {first: won, second: -won}              # the hand's step reward
        assert final(env) == {first: before + won, second: -(before + won)}  # the match total
        assert env.infos[first]["chips"] == {first: before + won, second: -(before + won)}


def test_kuhn_legal_moves_follow_the_betting():
    env = kuhn_with_cards(1, 2)
    assert env.legal_actions("player_0") == ["[check]", "[bet]"]
    assert env.legal_actions("player_1") == []  # not its turn
    env.step(BET)
    assert env.legal_actions("player_1") == ["[call]", "[fold]"]
    assert env.observe("player_1")["action_mask"].tolist() == [0, 0, 1, 1]


def test_kuhn_match_alternates_the_first_player_and_sums_chips():
    env = make("kuhn_poker-v0", action_mode="discrete", rounds=4)
    env.reset(seed=0)
    firsts, total = [], {"player_0": 0.0, "player_1": 0.0}
    while not env.done:
        firsts.append(env.agent_selection)
        env.step(BET)          # first player bets
        env.step(FOLD)         # second folds: first wins 1
        for a in total:
            total[a] += env.rewards[a]
    assert firsts == ["player_0", "player_1", "player_0", "player_1"]
    assert total == {"player_0": 0.0, "player_1": 0.0}
    assert env.infos["player_0"]["chips"] == {"player_0": 0.0, "player_1": 0.0}


def test_kuhn_text_moves_tolerate_reasoning_and_case():
    env = kuhn_with_cards(2, 0, "text")
    env.step("I hold the King, so I [Bet]. Final answer: [BET]")
    assert env.agent_selection == "player_1"
    env.step("Ugh. [fold]")
    assert final(env)["player_0"] == 1.0


def test_kuhn_illegal_text_move_under_penalty_ends_the_game_zero_sum():
    env = kuhn_with_cards(2, 0, "text")
    env.step("[call]")  # nothing to call
    assert env.done and final(env) == {"player_0": -1.0, "player_1": 1.0}
    record = env.infos["player_0"]["invalid_action"]
    assert record["action"] == "[call]" and "legal: [check], [bet]" in record["reason"]


def test_retry_shows_the_error_then_penalizes_after_max_retries():
    env = make("tic_tac_toe-v0", invalid_move="retry", max_retries=2)
    env.reset(seed=0)
    env.step("no idea")
    assert env.agent_selection == "player_0" and "previous move was invalid" in env.observe("player_0")["text"]
    env.step("[4]")
    assert env.agent_selection == "player_1"
    assert "previous move was invalid" not in env.observe("player_0")["text"]
    for _ in range(2):
        env.step("[4]")  # taken
        assert not env.done
    env.step("[4]")
    assert env.done and env.infos["player_1"]["invalid_count"] == 3
    assert final(env) == {"player_0": 1.0, "player_1": -1.0}


def test_random_policy_replaces_an_invalid_move_with_a_legal_one():
    env = make("tic_tac_toe-v0", action_mode="discrete", invalid_move="random")
    env.reset(seed=0)
    env.step(4)
    env.step(4)
    record = env.infos["player_1"]["invalid_action"]
    assert record["policy"] == "random" and record["replaced_by"] != "[4]"
    assert env._board.count("player_1") == 1 and env.agent_selection == "player_0"


@pytest.mark.parametrize("line", LINES)
@pytest.mark.parametrize("winner", [0, 1])
def test_tic_tac_toe_every_line_wins(line, winner):
    other_cells = [c for c in range(9) if c not in line]
    env = make("tic_tac_toe-v0", action_mode="discrete")
    env.reset(seed=0)
    # the loser plays cells off the line that never complete a line of their own
    filler = [c for c in other_cells if True]
    moves_w, moves_l = list(line), []
    for c in filler:
        trial = moves_l + [c]
        if not any(set(l) <= set(trial) for l in LINES):
            moves_l.append(c)
    if winner == 1:  # player_1 needs player_0 to move first without winning
        seq = []
        for i in range(3):
            seq += [moves_l[i], moves_w[i]]
    else:
        seq = [moves_w[0], moves_l[0], moves_w[1], moves_l[1], moves_w[2]]
    for m in seq:
        assert not env.done
        env.step(m)
    w, l = f"player_{winner}", f"player_{1 - winner}"
    assert env.done and final(env) == {w: 1.0, l: -1.0} and env.infos[w]["winner"] == w


def test_tic_tac_toe_full_board_without_a_line_is_a_draw():
    env = make("tic_tac_toe-v0", action_mode="discrete")
    env.reset(seed=0)
    for m in [0, 1, 2, 4, 3, 5, 7, 6, 8]:  # X O X / X O O / O X X
        env.step(m)
    assert env.done and final(env) == {"player_0": 0.0, "player_1": 0.0} and env.infos["player_0"]["outcome"] == "draw"


def test_tic_tac_toe_occupied_cell_is_illegal():
    env = make("tic_tac_toe-v0", action_mode="discrete")
    env.reset(seed=0)
    env.step(0)
    assert env.observe("player_1")["action_mask"][0] == 0
    env.step(0)
    assert env.done and final(env)["player_1"] == -1.0


# ---------------------------------------------------------------- think_solve


def _mean_team_reward(mode, policies, episodes=300, ablate_thinker=False):
    total = 0.0
    for seed in range(episodes):
        env = make("think_solve-v0", action_mode=mode)
        rng = np.random.default_rng([seed, 1])  # the policies' stream, apart from the env seed
        env.reset(seed=seed)
        if ablate_thinker:
            env = env.ablate("thinker")
        while not env.done:
            agent = env.agent_selection
            env.step(policies[agent](env, agent, rng))
        total += env.infos["solver"]["team_reward"]
    return total / episodes


@pytest.mark.parametrize("mode", ["discrete", "text"])
def test_oracle_thinker_makes_the_team_score_while_the_solver_alone_is_at_chance(mode):
    pair = {"thinker": oracle_thinker, "solver": follower_solver}
    with_thinker = _mean_team_reward(mode, pair)
    solo = _mean_team_reward(mode, pair, ablate_thinker=True)
    assert with_thinker >= 0.9
    if mode == "discrete":
        assert abs(solo - 0.25) < 0.08   # 4 candidates: chance is 1/4
    else:
        assert solo < 0.1


def test_think_solve_text_answer_is_verified_and_needs_a_box():
    env = make("think_solve-v0")
    env.reset(seed=0)
    env.step("hint")
    env.step(f"It is \\boxed{{{env.task.answer}}}.")
    assert env.infos["solver"]["correct"] and env.infos["thinker"]["team_reward"] == 1.0
    env = make("think_solve-v0", reward_scheme="signed")
    env.reset(seed=0)
    env.step("hint")
    env.step(f"{env.task.answer}")  # no box: invalid, penalty
    assert env.infos["solver"]["team_reward"] == -1.0 and env.infos["solver"]["outcome"] == "invalid_move"
    env = make("think_solve-v0", reward_scheme="signed")
    env.reset(seed=0)
    env.step("hint")
    env.step("\\boxed{definitely wrong}")
    assert env.infos["solver"]["team_reward"] == -1.0 and env.infos["solver"]["correct"] is False


def test_think_solve_thought_is_capped_and_made_printable():
    env = make("think_solve-v0", max_thought_chars=50)
    env.reset(seed=0)
    env.step("caf\u00e9 \u2603 " + "x" * 100)
    text = env.observe("solver")["text"]
    assert "cafe ? xxx" in text and "x" * 51 not in text
    assert env.infos["thinker"]["thought_truncated"] is True
    assert env.observation_space("solver").contains(env.observe("solver"))


def test_think_solve_same_seed_same_problem_across_modes_of_use():
    a, b = make("think_solve-v0"), make("think_solve-v0")
    a.reset(seed=11)
    b.reset(seed=11)
    assert a.task == b.task
    c = make("think_solve-v0", split="test")
    c.reset(seed=11)
    assert "/test/" in c.task.task_id


def test_think_solve_knights_knaves_tasks():
    env = make("think_solve-v0", tasks="knights_knaves:people=3")
    env.reset(seed=0)
    assert "knight" in env.observe("thinker")["text"].lower()
    env.step("think")
    env.step(f"\\boxed{{{env.task.answer}}}")
    assert env.infos["solver"]["correct"]


# ---------------------------------------------------------------- voting


def _vote(env, ballots):
    for b in ballots:
        env.step(b)
    return env.outcome()


def test_voting_plurality_groups_equal_numbers():
    env = make("voting-v0", n_voters=3, tie_break="none")
    env.reset(seed=0)
    ans = env.task.answer
    out = _vote(env, [f"\\boxed{{{ans}}}", f"\\boxed{{+{ans}.0}}", "\\boxed{-99999}"])
    assert out["correct"] and out["team_reward"] == 1.0
    assert env.infos["voter_2"]["own_correct"] is False and env.infos["voter_0"]["own_correct"] is True
    # without voter_0 or voter_1 the two remaining ballots tie, and tie_break="none" makes a tie wrong
    assert out["team_reward_without"] == {"voter_0": 0.0, "voter_1": 0.0, "voter_2": 1.0}
    assert out["votes"] == {"voter_0": ans, "voter_1": f"+{ans}.0", "voter_2": "-99999"}


def test_voting_tie_breaks():
    def run(tie_break, seed=0):
        env = make("voting-v0", n_voters=2, tie_break=tie_break)
        env.reset(seed=seed)
        return env, _vote(env, ["\\boxed{-99999}", f"\\boxed{{{env.task.answer}}}"])

    assert run("first")[1]["aggregate"] == "-99999" and not run("first")[1]["correct"]
    assert run("none")[1]["aggregate"] is None and run("none")[1]["team_reward"] == 0.0
    outcomes = {run("random", seed)[1]["correct"] for seed in range(40)}
    assert outcomes == {True, False}
    env, out = run("random", 5)
    assert env.clone().outcome() == out


class _SixTimesSeven(TaskSource):
    """One problem, always: 6 * 7 = 42 (distractors 13, 7, 48), so the ballots below can be worked out by hand."""

    name = "six_times_seven"
    feature_size = 1

    def sample(self, rng, split="train"):
        return Task("six_times_seven/train/0", "Compute the value of 6 * 7.", "42", "fixed", ("13", "7", "48"), (0.0,))

    def verify(self, task, response):
        return response.strip() == "42"

    def spec(self):
        return {"name": "six_times_seven"}


def _ballot(b: str) -> str:
    return {"?": "gibberish", "-": "[abstain]"}.get(b, f"\\boxed{{{b}}}")


# Hand-counted elections on 6 * 7 = 42 (text mode, binary reward, invalid_penalty -0.5; "?" = a spoiled ballot,
# "-" = an abstention). "first" breaks a tie by the earliest ballot of each tied answer; "none" makes a tie wrong.
# team_reward_without[i] recounts with voter i's ballot (and its penalty) removed.
VOTING_BY_HAND = [
    # tie 2-2 between 7 (first cast by voter_0) and 42 (voter_1); leaving out a voter breaks the tie either way
    ("first", "7 42 42 7", "7", 0.0, [1.0, 0.0, 0.0, 1.0]),
    ("none", "7 42 42 7", None, 0.0, [1.0, 0.0, 0.0, 1.0]),
    # 42 wins 3-2; leaving out a 42 ballot makes a 2-2 tie, whose first ballot is 7 (voter_1) without voter_0,
    # and 42 (voter_0) without voter_3 or voter_4
    ("first", "42 7 7 42 42", "42", 1.0, [0.0, 1.0, 1.0, 1.0, 1.0]),
    ("none", "42 7 7 42 42", "42", 1.0, [0.0, 1.0, 1.0, 0.0, 0.0]),
    # a three-way tie: the first ballot is 42; without voter_0 the first is 7; without voter_1 or voter_2, 42
    ("first", "42 7 13", "42", 1.0, [0.0, 1.0, 1.0]),
    ("none", "42 7 13", None, 0.0, [0.0, 0.0, 0.0]),
    # 13 and 42 tie 2-2 (voter_2 spoils, voter_3 abstains): 13 was first; the spoiled ballot costs -0.5 unless
    # it is its own voter who is left out (then the tie stands and nothing is spoiled: 0)
    ("first", "13 42 ? - 42 13", "13", -0.5, [0.5, -0.5, 0.0, -0.5, -0.5, 0.5]),
    ("none", "13 42 ? - 42 13", None, -0.5, [0.5, -0.5, 0.0, -0.5, -0.5, 0.5]),
]


@pytest.mark.parametrize("tie_break,ballots,aggregate,team_reward,without", VOTING_BY_HAND,
                         ids=[f"{case[0]}:{case[1]}" for case in VOTING_BY_HAND])
def test_voting_tie_breaks_and_leave_one_out_by_hand(tie_break, ballots, aggregate, team_reward, without):
    ballots = ballots.split()
    env = make("voting-v0", tasks=_SixTimesSeven(), n_voters=len(ballots), tie_break=tie_break, invalid_penalty=-0.5)
    env.reset(seed=0)
    out = _vote(env, [_ballot(b) for b in ballots])
    voters = env.possible_agents
    assert (out["aggregate"], out["team_reward"]) == (aggregate, team_reward)
    assert out["team_reward_without"] == dict(zip(voters, without))
    assert {v: env.infos[v]["team_reward"] for v in voters} == dict.fromkeys(voters, team_reward)
    for voter, value in zip(voters, without):
        assert env.ablate(voter).outcome()["team_reward"] == value


def test_voting_random_tie_break_by_hand():
    # "7 42 42 7": a 2-2 tie, so the aggregate is 7 or 42, drawn at reset (both happen over seeds); every
    # leave-one-out count has a strict winner, so team_reward_without is the same as under "first": [1, 0, 0, 1].
    seen = set()
    for seed in range(30):
        env = make("voting-v0", tasks=_SixTimesSeven(), n_voters=4, tie_break="random")
        env.reset(seed=seed)
        out = _vote(env, [_ballot(b) for b in "7 42 42 7".split()])
        assert out["aggregate"] in ("7", "42")
        assert out["team_reward"] == (1.0 if out["aggregate"] == "42" else 0.0)
        assert out["team_reward_without"] == {"voter_0": 1.0, "voter_1": 0.0, "voter_2": 0.0, "voter_3": 1.0}
        assert env.clone().outcome() == out
        seen.add(out["aggregate"])
    assert seen == {"7", "42"}


def test_voting_discrete_tie_goes_to_the_first_ballot_not_the_lowest_label():
    # find a deal with the true answer 42 under label C (candidates are shuffled by the env's RNG)
    for seed in range(200):
        env = make("voting-v0", tasks=_SixTimesSeven(), action_mode="discrete", n_voters=2, tie_break="first")
        env.reset(seed=seed)
        if env.candidates[2] == "42":
            break
    assert env.candidates[2] == "42"
    C, D = 2, 3
    out = _vote(env, [D, C])   # voter_0 votes D (wrong), voter_1 votes C (right): a 1-1 tie
    assert out["aggregate"] == "D" and out["team_reward"] == 0.0
    assert out["team_reward_without"] == {"voter_0": 1.0, "voter_1": 0.0}
    none = make("voting-v0", tasks=_SixTimesSeven(), action_mode="discrete", n_voters=2, tie_break="none")
    none.reset(seed=seed)
    out = _vote(none, [D, C])
    assert out["aggregate"] is None and out["team_reward"] == 0.0
    assert out["team_reward_without"] == {"voter_0": 1.0, "voter_1": 0.0}


def test_voting_all_abstain_is_wrong_and_spoiled_ballots_cost_the_penalty():
    env = make("voting-v0", n_voters=3)
    env.reset(seed=0)
    out = _vote(env, ["[abstain]", "[abstain]", "[abstain]"])
    assert out["aggregate"] is None and out["team_reward"] == 0.0
    env = make("voting-v0", n_voters=3, invalid_penalty=-0.5)
    env.reset(seed=0)
    out = _vote(env, [f"\\boxed{{{env.task.answer}}}", "gibberish", "[abstain]"])
    assert out["correct"] and out["team_reward"] == 0.5 and out["spoiled"] == ["voter_1"]
    assert env.infos["voter_1"]["invalid_action"]["reason"].startswith("no \\boxed")


def test_voting_discrete_clues_make_the_majority_better_than_one_voter():
    follow = lambda env, agent, rng: env.unwrapped._clue[agent]  # noqa: E731  (privileged: vote your clue)
    team, single = 0.0, 0.0
    for seed in range(400):
        env = make("voting-v0", action_mode="discrete", clue_accuracy=0.7, tie_break="first")
        play(env, follow, seed)
        team += env.outcome()["correct"]
        single += env.outcome()["own_correct"]["voter_0"]
    assert abs(single / 400 - 0.7) < 0.07
    assert team / 400 > single / 400 + 0.03  # Condorcet: 3 voters at 0.7 beat one


def test_voting_clue_accuracy_validation():
    with pytest.raises(ValueError, match="2 values for 3 voters"):
        make("voting-v0", clue_accuracy=[0.5, 0.5])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        make("voting-v0", clue_accuracy=1.5)


def test_scripted_random_play_finishes_every_env():
    from marl_llm_envs import list_envs

    for env_id in list_envs():
        for mode in ("text", "discrete"):
            env = make(env_id, action_mode=mode)
            totals = play(env, random_legal, seed=0)
            assert env.done and set(totals) == set(env.possible_agents)


def test_think_solve_and_voting_run_on_a_local_gsm8k_style_jsonl(tmp_path):
    import json

    path = tmp_path / "gsm8k.jsonl"
    rows = [{"question": f"Tom has {i} apples and buys {i + 3} more. How many apples does he have?",
             "answer": f"He has {i} + {i + 3} = {2 * i + 3} apples.\n#### {2 * i + 3}"} for i in range(1, 40)]
    path.write_text("\n".join(json.dumps(r) for r in rows))
    env = make("think_solve-v0", tasks=f"jsonl:{path}")
    env.reset(seed=0)
    assert "apples" in env.observe("thinker")["text"]
    env.step("Add the two numbers.")
    env.step(f"So \\boxed{{{env.task.answer}}}")
    assert env.team_rewards() == {"team": 1.0}
    again = replay(env.transcript())
    assert again.team_rewards() == {"team": 1.0} and again.task == env.task
    voting = make("voting-v0", tasks=f"jsonl:{path}", action_mode="discrete")
    voting.reset(seed=1)
    assert len(voting.candidates) == 4 and voting.task.answer in voting.candidates


def test_voting_leave_one_out_of_a_spoiled_ballot_drops_its_penalty():
    env = make("voting-v0", n_voters=3, invalid_penalty=-0.5)
    env.reset(seed=0)
    _vote(env, [f"\\boxed{{{env.task.answer}}}", "gibberish", f"\\boxed{{{env.task.answer}}}"])
    out = env.outcome()
    assert out["team_reward"] == 0.5
    assert out["team_reward_without"]["voter_1"] == 1.0          # had voter_1 abstained: no spoiled ballot
    assert out["team_reward_without"]["voter_0"] == 0.5          # voter_2 still carries it; voter_1's penalty stays
    assert env.ablate("voter_1").outcome()["team_reward"] == 1.0
