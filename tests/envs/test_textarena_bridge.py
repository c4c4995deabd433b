"""The TextArena bridge: make("textarena/<id>") as a PettingZoo AEC env, RNG-isolated, clonable and replayable."""

from __future__ import annotations

import json
import random
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("textarena")

from pettingzoo.test import api_test, seed_test

from marl_llm_envs import list_envs, make, replay, spec
from marl_llm_envs.text import CHARSET, TEXT_MAX_LENGTH

GAMES = ["textarena/KuhnPoker-v0", "textarena/TicTacToe-v0"]


pytestmark = pytest.mark.filterwarnings("ignore")


def legal_moves(env) -> list[str]:
    """The legal moves of the player to act, read from the TextArena game state."""
    base = env.unwrapped
    game_state = base._ta.state.game_state
    if base.ta_id.startswith("KuhnPoker"):
        return [f"[{k}]" for k in game_state["current_legal_action_tree"]]
    board = game_state["board"]
    return [f"[{r * 3 + c}]" for r in range(3) for c in range(3) if board[r][c] == ""]


def play(env, seed, rng, junk=0.0, max_steps=300, disturb=False):
    """Reset with ``seed`` and play legal moves (junk text with probability ``junk``); returns the trace.

    ``disturb``: the caller draws from the global ``random`` / NumPy RNGs between steps (must not matter)."""
    env.reset(seed=seed)
    trace = []
    for agent in env.agent_iter(max_iter=max_steps):
        obs, reward, terminated, truncated, info = env.last()
        trace.append((agent, obs["text"], obs["observation"].tolist(), float(reward), terminated,
                      json.dumps(info, sort_keys=True, default=str)))
        if terminated or truncated:
            action = None
        elif rng.random() < junk:
            action = ["no move", "", "[nonsense]", 7][int(rng.integers(4))]
        else:
            moves = legal_moves(env)
            action = moves[int(rng.integers(len(moves)))]
        env.step(action)
        if disturb:
            random.random()
            np.random.random()
    return trace


def global_states():
    return random.getstate(), np.random.get_state()[1].tolist()


# ---------------------------------------------------------------------------------------------- conformance
@pytest.mark.parametrize("env_id", GAMES)
def test_pettingzoo_api_test(env_id):
    api_test(make(env_id), num_cycles=30)


@pytest.mark.parametrize("env_id", GAMES)
def test_pettingzoo_seed_test(env_id):
    seed_test(lambda: make(env_id), num_cycles=30)


@pytest.mark.parametrize("env_id", GAMES)
def test_observations_stay_in_the_space_with_legal_play(env_id):
    env = make(env_id)
    rng = np.random.default_rng(0)
    for seed in range(3):
        env.reset(seed=seed)
        for agent in env.agent_iter(max_iter=300):
            obs, _, terminated, truncated, _ = env.last()
            assert env.observation_space(agent).contains(obs)
            for other in env.agents:
                assert env.observation_space(other).contains(env.observe(other))
            env.step(None if terminated or truncated else legal_moves(env)[int(rng.integers(len(legal_moves(env))))])


def test_text_is_printable_and_cut_from_the_front_when_too_long():
    env = make("textarena/KuhnPoker-v0")
    env.reset(seed=0)
    env.step("caf\u00e9 \u2603 " + "x" * (TEXT_MAX_LENGTH + 10))  # invalid: TextArena asks again
    text = env.observe(env.agent_selection)["text"]
    assert len(text) <= TEXT_MAX_LENGTH and set(text) <= CHARSET
    assert "Reason:" in text[-400:]  # the newest part (TextArena's error message) is kept


# ---------------------------------------------------------------------------------------------- registry
def test_spec_is_built_on_the_fly_and_not_listed():
    s = spec("textarena/TicTacToe-v0")
    assert s.family == "zero_sum" and s.agents == ("player_0", "player_1")
    assert s.teams == {"player_0": "player_0", "player_1": "player_1"}
    assert s.kwargs == {"ta_id": "TicTacToe-v0"} and s.action_modes == ("text",)
    assert "num_players" in s.accepted_kwargs()
    assert not any(e.startswith("textarena/") for e in list_envs())


def test_unknown_id_names_the_close_match():
    with pytest.raises(KeyError, match="textarena/KuhnPoker-v0"):
        make("textarena/KuhnPokr-v0")


def test_discrete_mode_and_other_invalid_policies_are_clear_errors():
    with pytest.raises(ValueError, match="text-only"):
        make("textarena/KuhnPoker-v0", action_mode="discrete")
    with pytest.raises(ValueError, match="TextArena's own invalid-move"):
        make("textarena/KuhnPoker-v0", invalid_move="retry")
    with pytest.raises(ValueError, match="does not accept num_players=3"):
        make("textarena/TicTacToe-v0", num_players=3)


def test_num_players_kwarg_where_the_game_allows_several():
    env = make("textarena/Poker-v0", num_players=3)
    assert env.possible_agents == ["player_0", "player_1", "player_2"]
    env.reset(seed=0)
    assert env.observe("player_2")["observation"].shape == (4 + 3,)


def test_import_does_not_import_textarena_and_a_missing_textarena_says_how_to_install():
    code = "import sys, marl_llm_envs; assert 'textarena' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
    code = ("import sys; sys.modules['textarena'] = None\n"
            "from marl_llm_envs import make\n"
            "try:\n    make('textarena/KuhnPoker-v0')\nexcept ImportError as e:\n    print(e)")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert "pip install textarena" in out


# ---------------------------------------------------------------------------------------------- determinism
@pytest.mark.parametrize("env_id", GAMES)
def test_global_random_state_is_untouched(env_id):
    random.seed(123)
    np.random.seed(456)
    before = global_states()
    env = make(env_id)
    env.reset(seed=7)
    env.step(legal_moves(env)[0])
    clone = env.clone()
    clone.step("junk")
    env.reset()
    env.step(legal_moves(env)[-1])
    assert global_states() == before


@pytest.mark.parametrize("env_id", GAMES)
def test_same_seed_and_actions_give_identical_episodes(env_id):
    for seed in range(4):
        a = play(make(env_id), seed, np.random.default_rng(seed), junk=0.1)
        random.seed(seed + 99)  # the caller's own use of `random` must not matter
        b = play(make(env_id), seed, np.random.default_rng(seed), junk=0.1, disturb=True)
        assert a == b


def test_different_seeds_deal_different_kuhn_cards():
    texts = set()
    for seed in range(8):
        env = make("textarena/KuhnPoker-v0")
        env.reset(seed=seed)
        texts.add(env.observe("player_0")["text"])
    assert len(texts) > 1


@pytest.mark.parametrize("env_id", GAMES)
def test_replay_reproduces_observations_and_rewards_exactly(env_id):
    rng = np.random.default_rng(1)
    for seed in range(4):
        env = make(env_id)
        trace = play(env, seed, rng, junk=0.15)
        transcript = json.loads(json.dumps(env.transcript()))
        assert transcript["env_id"] == env_id
        again = make(transcript["env_id"], **transcript["kwargs"])
        again.reset(seed=transcript["seed"])
        trace2, actions = [], iter(transcript["actions"])
        for agent in again.agent_iter(max_iter=300):
            obs, reward, terminated, _, info = again.last()
            trace2.append((agent, obs["text"], obs["observation"].tolist(), float(reward), terminated,
                           json.dumps(info, sort_keys=True, default=str)))
            action = next(actions)
            again.step(action if not isinstance(action, dict) else action.get("float", action))
        assert trace2 == trace
        assert replay(transcript).transcript() == env.transcript()


@pytest.mark.parametrize("env_id", GAMES)
def test_clone_is_independent_and_continues_identically(env_id):
    env = make(env_id)
    env.reset(seed=5)
    env.step(legal_moves(env)[0])
    snapshot = (env.agent_selection, env.observe("player_0")["text"], env.observe("player_1")["text"],
                env.transcript())
    a, b = env.clone(), env.clone()
    ra, rb = np.random.default_rng(3), np.random.default_rng(3)
    while not a.done:
        assert a.observe(a.agent_selection)["text"] == b.observe(b.agent_selection)["text"]
        a.step(legal_moves(a)[int(ra.integers(len(legal_moves(a))))])
        b.step(legal_moves(b)[int(rb.integers(len(legal_moves(b))))])
    assert b.done and a._cumulative_rewards == b._cumulative_rewards
    a.reset(seed=99)
    assert (env.agent_selection, env.observe("player_0")["text"], env.observe("player_1")["text"],
            env.transcript()) == snapshot
    assert not env.done


def test_ablate_is_a_clear_error():
    env = make("textarena/TicTacToe-v0")
    env.reset(seed=0)
    with pytest.raises(NotImplementedError, match="null action"):
        env.ablate("player_0")


# ---------------------------------------------------------------------------------------------- invalid moves, rewards
def test_invalid_moves_are_reported_then_textarena_penalizes():
    env = make("textarena/TicTacToe-v0")
    env.reset(seed=0)
    agent = env.agent_selection
    env.step("I place my mark somewhere")
    record = env.infos[agent]["invalid_action"]
    assert env.agent_selection == agent and not env.done  # TextArena asks the same player again
    assert record["policy"] == "textarena" and record["attempt"] == 1 and not record["final"]
    assert record["reason"] and env.infos[agent]["invalid_count"] == 1
    assert env.observe(agent)["observation"][2] == 1.0  # "my previous move was invalid"
    assert "invalid move" in env.observe(agent)["text"][-400:]
    env.step(3.5)  # not a string: sent as '' and invalid again, so TextArena ends the game
    record = env.infos[agent]["invalid_action"]
    assert record["final"] and record["attempt"] == 2 and "expected a text action" in record["reason"]
    assert env.done and env.infos[agent]["invalid_count"] == 2
    other = "player_1" if agent == "player_0" else "player_0"
    assert env.rewards[agent] == -1.0 and env.rewards[other] == 1.0
    assert env.infos[agent]["textarena_info"]["invalid_move"] is True


def test_a_valid_move_clears_the_invalid_record():
    env = make("textarena/KuhnPoker-v0")
    env.reset(seed=2)
    agent = env.agent_selection
    env.step("[call]")  # not legal before a bet
    assert env.infos[agent]["invalid_action"]["reason"].startswith("Action must be")
    env.step("[check]")
    assert env.infos[agent]["invalid_action"] is None and env.infos[agent]["invalid_count"] == 1


@pytest.mark.parametrize("ta_id", ["KuhnPoker-v0", "TicTacToe-v0"])
def test_final_rewards_match_textarenas(ta_id):
    import textarena as ta

    for seed in range(4):
        env = make(f"textarena/{ta_id}")
        play(env, seed, np.random.default_rng(seed), junk=0.05)
        actions = [a for a in env.transcript()["actions"] if a is not None]
        saved = random.getstate()
        try:
            raw = ta.make(ta_id)
            raw.reset(num_players=2, seed=seed)
            for action in actions:
                done, _ = raw.step(action=action if isinstance(action, str) else "")
            rewards, _ = raw.close()
        finally:
            random.setstate(saved)
        assert done
        ours = {int(agent.split("_")[1]): r for agent, r in env.team_rewards().items()}
        assert ours == {pid: float(r) for pid, r in rewards.items()}
