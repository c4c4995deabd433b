"""simple_negotiation-v0: exact trades, conservation, affordability, the turn limit, the winner rule, both modes."""

from __future__ import annotations

import numpy as np
import pytest
from tests.conftest import record_episode

from marl_llm_envs import make, replay
from marl_llm_envs.envs import simple_negotiation as sn
from marl_llm_envs.scripted import random_legal

ACCEPT, DENY, PASS = sn.ACCEPT, sn.DENY, sn.PASS


def neg(mode="discrete", **kwargs):
    env = make("simple_negotiation-v0", action_mode=mode, **kwargs)
    env.reset(seed=0)
    return env


def offer(env, a, give, b, get):
    """The action for "give a <give> for b <get>" in the env's mode."""
    name = f"offer: {a} {give} -> {b} {get}"
    if env.action_mode == "text":
        return f"Let me propose something. [{name}]"
    return env.action_names(env.agent_selection).index(name)


def move(env, name):
    return f"[{name}]" if env.action_mode == "text" else env.action_names(env.agent_selection).index(name)


def final(env):
    return {a: env.infos[a]["team_reward"] for a in env.possible_agents}


@pytest.mark.parametrize("mode", ["discrete", "text"])
def test_an_accepted_offer_moves_the_inventories_exactly(mode):
    env = neg(mode)
    env.step(offer(env, 3, "wood", 2, "gold"))  # player_0 gives 3 Wood for 2 Gold
    assert env.inventories() == {"player_0": (10, 10), "player_1": (10, 10)}
    assert env.standing_offer == {"from": "player_0", "to": "player_1", "give": {"Wood": 3}, "get": {"Gold": 2}}
    env.step(move(env, "accept"))
    assert env.inventories() == {"player_0": (7, 12), "player_1": (13, 8)}
    assert env.standing_offer is None
    assert env.gains() == {"player_0": -15 + 30, "player_1": 45 - 10}
    env.step(offer(env, 4, "gold", 1, "wood"))  # player_0 gives 4 Gold for 1 Wood
    env.step(move(env, "accept"))
    assert env.inventories() == {"player_0": (8, 8), "player_1": (12, 12)}


@pytest.mark.parametrize("mode", ["discrete", "text"])
@pytest.mark.parametrize("policy", ["penalty", "retry", "random"])
def test_each_resource_is_conserved_across_whole_random_games(mode, policy):
    rng = np.random.default_rng(7)
    trades = 0
    for seed in range(40):
        env = make("simple_negotiation-v0", action_mode=mode, invalid_move=policy,
                   inventories=[[3, 12], [9, 1]] if seed % 2 else None)
        env.reset(seed=seed)
        totals = tuple(sum(env.inventories()[a][r] for a in env.possible_agents) for r in (0, 1))
        while not env.done:
            agent = env.agent_selection
            if rng.random() < 0.1:
                env.step(["[accept]", "[offer: 5 gold -> 5 wood]", 999, "nonsense", "[deny]"][int(rng.integers(5))])
            else:
                # prefer accepting, so that many trades happen
                legal = env.legal_actions(agent) if mode == "text" else list(np.flatnonzero(env.action_mask(agent)))
                acc = "[accept]" if mode == "text" else ACCEPT
                env.step(acc if acc in legal and rng.random() < 0.7 else random_legal(env, agent, rng))
            inv = env.inventories()
            trades += any(e[2] == ACCEPT for e in env._events[-1:])
            assert all(v >= 0 for a in inv for v in inv[a])
            assert tuple(sum(inv[a][r] for a in inv) for r in (0, 1)) == totals
    assert trades > 20


def test_offers_the_offerer_or_the_receiver_cannot_afford_are_invalid():
    env = neg(inventories=[[2, 10], [10, 1]], max_offer=5)
    names = env.action_names("player_0")
    mask = env.action_mask("player_0")
    assert mask[names.index("offer: 2 wood -> 1 gold")] == 1
    assert mask[names.index("offer: 3 wood -> 1 gold")] == 0  # player_0 has only 2 Wood
    assert mask[names.index("offer: 1 wood -> 2 gold")] == 0  # player_1 has only 1 Gold
    assert mask[names.index("offer: 5 gold -> 5 wood")] == 1
    assert mask[ACCEPT] == 0 and mask[DENY] == 0 and mask[PASS] == 1
    env.step(names.index("offer: 3 wood -> 1 gold"))
    assert env.done and final(env) == {"player_0": -1.0, "player_1": 1.0}
    assert "you have only 2 Wood" in env.infos["player_0"]["invalid_action"]["reason"]

    env = neg("text", inventories=[[2, 10], [10, 1]], invalid_move="retry")
    env.step("[offer: 1 wood -> 2 gold]")
    assert not env.done and "your opponent has only 1 Gold" in env.infos["player_0"]["invalid_action"]["reason"]
    assert env.inventories() == {"player_0": (2, 10), "player_1": (10, 1)} and env.standing_offer is None


def test_accept_and_deny_need_an_offer_made_to_you():
    env = neg(invalid_move="retry")
    env.step(ACCEPT)
    assert env.infos["player_0"]["invalid_action"] is not None and env._turn == 0
    env.step(offer(env, 1, "wood", 1, "gold"))
    env.step(PASS)  # the offer stays standing
    assert env.standing_offer["from"] == "player_0"
    assert env.action_mask("player_0")[[ACCEPT, DENY]].tolist() == [0, 0]  # not one's own offer
    env.step(PASS)
    env.step(DENY)
    assert env.standing_offer is None and env.inventories()["player_0"] == (10, 10)


def test_a_counter_offer_denies_the_standing_offer_and_replaces_it():
    env = neg()
    env.step(offer(env, 2, "wood", 2, "gold"))
    env.step(offer(env, 1, "wood", 3, "gold"))  # player_1's counter-offer
    assert env.standing_offer == {"from": "player_1", "to": "player_0", "give": {"Wood": 1}, "get": {"Gold": 3}}
    assert "offered 1 Wood for 3 Gold (denying your offer)" in env.observe("player_0")["text"]
    env.step(offer(env, 1, "gold", 1, "wood"))  # player_0 counters again
    env.step(offer(env, 2, "wood", 1, "gold"))  # player_1 replaces it
    env.step(ACCEPT)
    assert env.inventories() == {"player_0": (12, 9), "player_1": (8, 11)}


@pytest.mark.parametrize("mode", ["discrete", "text"])
def test_the_game_ends_after_max_turns(mode):
    for max_turns in (10, 3):
        kwargs = {} if max_turns == 10 else {"max_turns": max_turns}
        env = neg(mode, invalid_move="retry", **kwargs)
        for turn in range(max_turns):
            assert not env.done and env._turn == turn
            env.step("??")  # a retry does not use up a turn
            env.step(move(env, "pass"))
        assert env.done and final(env) == {"player_0": 0.0, "player_1": 0.0}
        assert env.infos["player_0"]["outcome"] == "draw"


def test_the_winner_is_the_player_who_gained_more_value():
    # player_0 gives 3 Wood (-15 for it) for 2 Gold (+30): +15; player_1: +45 - 10 = +35 -> player_1 wins
    env = neg()
    env.step(offer(env, 3, "wood", 2, "gold"))
    env.step(ACCEPT)
    for _ in range(8):
        env.step(PASS)
    assert env.done and final(env) == {"player_0": -1.0, "player_1": 1.0}
    assert env.infos["player_0"]["gains"] == {"player_0": 15.0, "player_1": 35.0}
    assert env.infos["player_0"]["winner"] == "player_1"
    assert env.infos["player_1"]["inventories"] == {"player_0": [7, 12], "player_1": [13, 8]}
    # 1 Wood for 3 Gold: player_0 -5 + 45 = +40, player_1 +15 - 15 = 0 -> player_0 wins
    env = neg("text")
    env.step("[Offer: I give 1 Wood -> 3 Golds.]")
    env.step("Fine. [ACCEPT]")
    for _ in range(8):
        env.step("[pass]")
    assert final(env) == {"player_0": 1.0, "player_1": -1.0}
    # equal gains (1 Wood for 1 Gold: +10 each) are a draw
    env = neg()
    env.step(offer(env, 1, "wood", 1, "gold"))
    for _ in range(8):
        env.step(PASS)
    env.step(ACCEPT)  # accepted on the very last turn: still counts
    assert env.done and env.gains() == {"player_0": 10.0, "player_1": 10.0}
    assert final(env) == {"player_0": 0.0, "player_1": 0.0}


@pytest.mark.parametrize("text,expected", [
    ("[offer: 2 wood -> 1 gold]", "offer: 2 wood -> 1 gold"),
    ("[Offer: 2 Wood -> 1 Gold]", "offer: 2 wood -> 1 gold"),
    ("[ OFFER :2  woods->1 GOLD ]", "offer: 2 wood -> 1 gold"),
    ("[Offer: I give 2 Wood -> 1 Gold.]", "offer: 2 wood -> 1 gold"),
    ("[offer: 3 gold -> 4 wood]", "offer: 3 gold -> 4 wood"),
    ("I think [pass] is weak. [offer: 1 gold -> 2 wood] is better", "offer: 1 gold -> 2 wood"),
    ("  [Pass] ", "pass"),
    ("pass", "pass"),
])
def test_text_moves_are_tolerant_of_case_spacing_and_spiral_forms(text, expected):
    env = neg("text")
    index, reason = env._interpret("player_0", text)
    assert reason is None and env.action_names("player_0")[index] == expected


@pytest.mark.parametrize("text,match", [
    ("[offer: 6 wood -> 1 gold]", "not a valid offer"),
    ("[offer: 2 wood -> 1 wood]", "not a valid offer"),
    ("[offer: 2 stone -> 1 gold]", "not a valid offer"),
    ("let us trade", "no move found"),
    ("[accept]", "needs an offer made to you"),
])
def test_bad_text_moves_get_a_clear_reason(text, match):
    env = neg("text")
    index, reason = env._interpret("player_0", text)
    assert index is None and match in reason


def test_the_opponents_values_are_private():
    env = neg("discrete")
    env.step(offer(env, 2, "wood", 1, "gold"))
    twin = env.clone()
    twin.valuations = {**env.valuations, "player_0": (7.0, 9.0)}
    for agent in ("player_1",):
        a, b = env.observe(agent), twin.observe(agent)
        assert a["text"] == b["text"] and np.array_equal(a["observation"], b["observation"])
    assert "Wood 5, Gold 15" in env.observe("player_0")["text"]
    assert "Wood 5, Gold 15" not in env.observe("player_1")["text"]


def test_observation_vector():
    env = neg()
    env.step(offer(env, 3, "wood", 2, "gold"))
    v0, v1 = env.observe("player_0")["observation"], env.observe("player_1")["observation"]
    assert v0.tolist()[:8] == [0.5, 0.5, 0.5, 0.5, pytest.approx(1 / 3), 1.0, 1.0, 0.0]
    assert v0[8:12].tolist() == pytest.approx([0.6, 0.0, 0.0, 0.4])  # I give 3 Wood, get 2 Gold
    assert v1[6:12].tolist() == pytest.approx([0.0, 1.0, 0.0, 0.4, 0.6, 0.0])  # I give 2 Gold, get 3 Wood
    assert v0[12] == pytest.approx(0.1) and v0[13] == 0 and v1[13] == 1 and v0[15] == 1 and v1[15] == 0
    env.step(ACCEPT)
    v0 = env.observe("player_0")["observation"]
    assert v0[14] == pytest.approx(15 / (20 * 5 + 20 * 15))


def test_ablated_player_denies_offers_and_otherwise_passes():
    env = neg()
    branch = env.ablate("player_1")
    branch.step(offer(branch, 1, "wood", 3, "gold"))
    assert branch.agent_selection == "player_0" and branch.standing_offer is None
    assert branch._events[-1][1:3] == ("player_1", DENY)
    branch.step(PASS)
    assert branch._events[-1][1:3] == ("player_1", PASS)
    while not branch.done:
        branch.step(PASS)
    assert branch.inventories() == {"player_0": (10, 10), "player_1": (10, 10)}
    assert replay(branch.transcript()).inventories() == branch.inventories()


def test_kwargs_change_inventories_valuations_and_grid_and_are_validated():
    env = neg(inventories={"player_0": [1, 2], "player_1": [3, 4]}, valuations=[[1, 2], [3, 4]], max_offer=2)
    assert env.inventories() == {"player_0": (1, 2), "player_1": (3, 4)}
    assert env.action_space("player_0").n == 3 + 2 * 4
    assert "Wood 1, Gold 2" in env.observe("player_0")["text"]
    for bad in ({"inventories": [[1, 2]]}, {"inventories": [[1.5, 2], [1, 1]]}, {"valuations": [[-1, 2], [1, 1]]},
                {"max_turns": 0}, {"max_offer": True}, {"max_offer": 101}):
        with pytest.raises(ValueError):
            make("simple_negotiation-v0", **bad)


def test_the_manual_shows_the_exact_prompt():
    from tests.conftest import docstring_block

    env = make("simple_negotiation-v0")
    env.reset(seed=0)
    assert env.observe("player_0")["text"] == docstring_block(sn, "The prompt (player_0")


def test_random_text_and_discrete_games_replay_exactly():
    rng = np.random.default_rng(3)
    for mode in ("text", "discrete"):
        env = make("simple_negotiation-v0", action_mode=mode, invalid_move="retry")
        record_episode(env, seed=5, rng=rng, junk=0.2)
        again = replay(env.transcript())
        assert again.inventories() == env.inventories() and again.gains() == env.gains()
