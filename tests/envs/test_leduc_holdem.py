"""leduc_holdem-v0: the rules pinned by hand-checked examples, hidden information, the manual's prompt."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from tests.conftest import docstring_block

from marl_llm_envs import make, replay
from marl_llm_envs.envs import leduc_holdem
from marl_llm_envs.envs.leduc_holdem import CALL, FOLD, RAISE, contributions, rank, showdown
from marl_llm_envs.scripted import random_legal

J, Q, K = range(3)


def leduc_with(p0: int, p1: int, public: int, mode: str = "discrete", **kwargs):
    """A Leduc env whose first deal has these ranks (player_0, player_1, public): search seeds (the env's RNG deals)."""
    for seed in range(2000):
        env = make("leduc_holdem-v0", action_mode=mode, **kwargs)
        env.reset(seed=seed)
        if (rank(env._cards["player_0"]), rank(env._cards["player_1"]), rank(env._public)) == (p0, p1, public):
            return env
    raise AssertionError("no seed deals these cards")


def final(env):
    return {a: env.infos[a]["team_reward"] for a in env.possible_agents}


def play(env, moves):
    for move in moves:
        assert not env.done
        env.step(move)


# ---------------------------------------------------------------- pot accounting


def test_fold_after_raises_pays_what_the_folder_put_in():
    env = leduc_with(K, J, Q)
    play(env, [RAISE, RAISE])  # player_0 bets 2 (puts in 3), player_1 raises (puts in 5)
    assert env.put_in() == {"player_0": 3, "player_1": 5}
    env.step(FOLD)  # the K folds: loses its 3 chips
    assert env.done and final(env) == {"player_0": -3.0, "player_1": 3.0}

    env = leduc_with(Q, J, K)
    play(env, [RAISE, CALL])  # round 1: bet, call (3 each)
    assert env.put_in() == {"player_0": 3, "player_1": 3} and not env.done
    play(env, [RAISE, RAISE])  # round 2: bet 4 (7), raise 4 (11)
    assert env.put_in() == {"player_0": 7, "player_1": 11}
    env.step(FOLD)
    assert final(env) == {"player_0": -7.0, "player_1": 7.0}

    env = leduc_with(J, Q, K)
    play(env, [CALL, RAISE, FOLD])  # check, bet, fold: the first player loses its ante
    assert final(env) == {"player_0": -1.0, "player_1": 1.0}


def test_call_sequences_and_showdown_amounts():
    cases = [
        ([CALL, CALL, CALL, CALL], 1),  # checked down
        ([RAISE, CALL, CALL, CALL], 3),  # bet-call, then checks
        ([CALL, RAISE, CALL, CALL, RAISE, CALL], 7),  # check-bet-call, check-bet-call
        ([RAISE, RAISE, CALL, RAISE, RAISE, CALL], 13),  # capped in both rounds: the most a hand can pay
        ([CALL, RAISE, RAISE, CALL, CALL, CALL], 5),
    ]
    for moves, amount in cases:
        env = leduc_with(K, Q, J)  # K high beats Q high
        play(env, moves)
        assert env.done and final(env) == {"player_0": float(amount), "player_1": -float(amount)}, moves
        assert env.infos["player_0"]["chips"] == {"player_0": amount, "player_1": -amount}


def test_the_public_card_is_dealt_after_round_one_and_the_first_player_starts_round_two():
    env = leduc_with(Q, K, J)
    assert "Public card: not dealt yet" in env.observe("player_1")["text"]
    play(env, [CALL, RAISE, CALL])
    assert env.agent_selection == "player_0" and env.info_state("player_0") == (Q, J, ("crc", ""))
    assert "Public card: J" in env.observe("player_1")["text"]
    assert env.legal_actions() == ["[check]", "[bet]"]


def test_raise_cap_is_two_per_round():
    env = leduc_with(K, Q, J)
    assert env.legal_actions() == ["[check]", "[bet]"]
    assert env.observe("player_0")["action_mask"].tolist() == [0, 1, 1]
    env.step(RAISE)
    assert env.legal_actions() == ["[fold]", "[call]", "[raise]"]
    env.step(RAISE)
    assert env.legal_actions() == ["[fold]", "[call]"]  # a bet and a raise: capped
    assert env.observe("player_0")["action_mask"].tolist() == [1, 1, 0]
    env.step(CALL)
    assert env.legal_actions() == ["[check]", "[bet]"]  # round 2 starts uncapped
    play(env, [CALL, RAISE, RAISE])  # check, bet, raise
    assert env.legal_actions() == ["[fold]", "[call]"]
    assert env.put_in() == {"player_0": 5 + 8, "player_1": 5 + 4}
    # a third raise is invalid: the penalty ends the game, zero-sum
    env.step(RAISE)  # player_1, facing the raise
    assert env.done and final(env) == {"player_0": 1.0, "player_1": -1.0}
    assert "not legal" in env.infos["player_1"]["invalid_action"]["reason"]


def test_round_two_bets_are_four_chips():
    env = leduc_with(J, J, K)
    play(env, [CALL, CALL, RAISE])
    assert env.put_in() == {"player_0": 5, "player_1": 1}
    env.step(RAISE)
    assert env.put_in() == {"player_0": 5, "player_1": 9}
    assert contributions(("rc", "rr")) == [7, 11] and contributions(("rrc", "rrc")) == [13, 13]


# ---------------------------------------------------------------- showdowns


def test_a_pair_beats_any_high_card():
    env = leduc_with(J, K, J)  # the J pairs the board
    play(env, [RAISE, CALL, RAISE, CALL])
    assert final(env) == {"player_0": 7.0, "player_1": -7.0}
    env = leduc_with(K, Q, Q)
    play(env, [CALL, CALL, CALL, CALL])
    assert final(env) == {"player_0": -1.0, "player_1": 1.0}


def test_the_higher_card_wins_without_a_pair():
    for p0, p1, pub in [(Q, K, J), (K, J, Q), (J, Q, K)]:
        env = leduc_with(p0, p1, pub)
        play(env, [RAISE, CALL, CALL, CALL])
        win = 3.0 if p0 > p1 else -3.0
        assert final(env) == {"player_0": win, "player_1": -win}
        assert "showdown" in env.observe("player_0")["text"]


def test_equal_cards_split_the_pot():
    env = leduc_with(Q, Q, K)
    play(env, [RAISE, RAISE, CALL, RAISE, CALL])
    assert env.done and final(env) == {"player_0": 0.0, "player_1": 0.0}
    assert "split" in env.observe("player_1")["text"]


def test_showdown_function_on_every_rank_combination():
    for a, b, pub in itertools.product(range(3), repeat=3):
        expect = (1 if a == pub else -1) if (a == pub) != (b == pub) else (a > b) - (a < b)
        assert showdown(a, b, pub) == expect == -showdown(b, a, pub)


# ---------------------------------------------------------------- moves


def test_text_moves_are_named_by_what_they_do_now():
    env = leduc_with(K, Q, J, mode="text")
    env.step("I have the best card. [Bet]")
    assert env.agent_selection == "player_1"
    env.step("[call]")
    assert env.legal_actions() == ["[check]", "[bet]"]
    env.step("[call]")  # nothing to call: invalid (the penalty ends the game)
    assert env.done and final(env) == {"player_0": -1.0, "player_1": 1.0}
    assert "legal: [check], [bet]" in env.infos["player_0"]["invalid_action"]["reason"]

    env = leduc_with(K, Q, J, mode="text", invalid_move="retry")
    env.step("[bet]")
    env.step("[check]")  # facing a bet
    assert env.agent_selection == "player_1" and "[fold], [call], [raise]" in env.observe("player_1")["text"]
    assert "invalid" in env.observe("player_1")["text"]
    env.step("[raise]")
    assert env.put_in() == {"player_0": 3, "player_1": 5}


def test_discrete_illegal_move_names_the_legal_indices():
    env = leduc_with(K, Q, J, invalid_move="retry")
    env.step(FOLD)
    reason = env.infos["player_0"]["invalid_action"]["reason"]
    assert "1 ([check])" in reason and "2 ([bet])" in reason


def test_match_alternates_the_first_player_and_sums_chips():
    env = make("leduc_holdem-v0", action_mode="discrete", rounds=4)
    env.reset(seed=0)
    firsts, total = [], {"player_0": 0.0, "player_1": 0.0}
    while not env.done:
        firsts.append(env.agent_selection)
        assert env.observe(env.agent_selection)["observation"][6] == 1.0  # "I act first this hand"
        play(env, [RAISE, FOLD])  # the first player bets, the second folds: first wins 1
        for a in total:
            total[a] += env.rewards[a]
    assert firsts == ["player_0", "player_1", "player_0", "player_1"]
    assert total == {"player_0": 0.0, "player_1": 0.0}
    assert "hand 4 of 4" in env.observe("player_0")["text"]


def test_ablated_player_checks_or_folds():
    env = leduc_with(K, J, Q)
    branch = env.ablate("player_1")
    branch.step(RAISE)  # the ablated player folds at once
    assert branch.done and final(branch) == {"player_0": 1.0, "player_1": -1.0}
    branch = env.ablate("player_1")
    play(branch, [CALL, CALL])  # checks through round 1, then round 2
    assert branch.done and final(branch) == {"player_0": 1.0, "player_1": -1.0}
    assert replay(branch.transcript()).infos["player_0"]["team_reward"] == 1.0


# ---------------------------------------------------------------- observations


def test_manual_shows_the_exact_prompt():
    env = leduc_with(K, J, Q, mode="text")
    assert env.observe("player_0")["text"] == docstring_block(leduc_holdem, "The prompt (player_0")


@pytest.mark.parametrize("mode", ["text", "discrete"])
def test_opponent_card_never_appears_before_a_showdown(mode):
    rng = np.random.default_rng(0)
    for seed in range(150):
        env = make("leduc_holdem-v0", action_mode=mode, rounds=2)
        env.reset(seed=seed)
        while not env.done:
            agent = env.agent_selection
            other = "player_1" if agent == "player_0" else "player_0"
            obs = env.observe(agent)
            for card in set(range(6)) - {env._cards[agent], env._public}:
                alt = env.clone()
                alt._cards = {**env._cards, other: card}
                alt_obs = alt.observe(agent)
                assert alt_obs["text"] == obs["text"]
                assert np.array_equal(alt_obs["observation"], obs["observation"])
            if len(env._betting) == 1:  # the face-down public card is hidden too
                for card in set(range(6)) - set(env._cards.values()):
                    alt = env.clone()
                    alt._public = card
                    assert alt.observe(agent)["text"] == obs["text"]
                    assert np.array_equal(alt.observe(agent)["observation"], obs["observation"])
            env.step(random_legal(env, agent, rng))


def test_vector_encodes_cards_betting_and_pot():
    env = leduc_with(K, J, Q)
    play(env, [RAISE, CALL, CALL])  # bet, call; round 2: check
    v = env.observe("player_1")["observation"]
    assert v[:3].tolist() == [1, 0, 0] and v[3:6].tolist() == [0, 1, 0]  # own J, public Q
    assert v[6] == 0.0  # player_1 acts second
    assert v[7:11].tolist() == [0, 1, 1, 0]  # round 1: r then c
    assert v[15:17].tolist() == [1, 0]  # round 2: c
    assert v[23] == pytest.approx(3 / 13) and v[24] == pytest.approx(3 / 13)
    assert v[25] == 0.0 and v[26] == 1.0
    assert ((v >= -1) & (v <= 1)).all()


def test_reward_range_covers_the_largest_pot():
    assert make("leduc_holdem-v0").reward_range == (-13.0, 13.0)
    assert make("leduc_holdem-v0", rounds=5).reward_range == (-65.0, 65.0)
    with pytest.raises(ValueError, match="rounds"):
        make("leduc_holdem-v0", rounds=0)
