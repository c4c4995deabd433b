"""The envs' fast paths (issue 17) give what the plain computation gives: masks handed out as fresh arrays, the
dead-agent step as PettingZoo's, arithmetic distractors as the variant trees' values, Hanabi's memo tables per game,
the reseeded generator as ``default_rng(seed)``, a scalar draw made without a generator as NumPy's, step's shortcut for a plain int as the general path, ``agent_iter``
as PettingZoo's iterator."""

from __future__ import annotations

import json

import numpy as np
import pytest
from pettingzoo import AECEnv

from marl_llm_envs import make
from marl_llm_envs.envs import hanabi
from marl_llm_envs.fast_rng import pcg64_integer, pcg64_seed_state
from marl_llm_envs.tasks.arithmetic import (ArithmeticTasks, _eval_tree, _leaf_variants, _op_variants,
                                            _variant_values)


@pytest.mark.parametrize("env_id", ["kuhn_poker-v0", "mini_hanabi-v1", "voting-v0"])
def test_action_mask_is_a_new_array_that_the_caller_may_change(env_id):
    # masks are built once per legal set and copied out: changing one must not change the next
    env = make(env_id, action_mode="discrete")
    env.reset(seed=3)
    agent = env.agent_selection
    first = env.action_mask(agent)
    expected = first.copy()
    first[:] = 0
    env.observe(agent, text=False)["action_mask"][:] = 0
    assert np.array_equal(env.action_mask(agent), expected)
    assert np.array_equal(env.observe(agent)["action_mask"], expected)
    assert expected.dtype == np.int8 and expected.sum() == len(env.legal_actions(agent)) > 0


def _dead_step_trace(env, dead_step) -> list:
    trace = []
    while env.agents:
        dead_step(env)
        trace.append((list(env.agents), env.agent_selection, getattr(env, "_skip_agent_selection", None),
                      dict(env.rewards), dict(env._cumulative_rewards), sorted(env.infos)))
    return trace


@pytest.mark.parametrize("dead", [("voter_0", "voter_1", "voter_2", "voter_3", "voter_4"), ("voter_2", "voter_4"),
                                  ("voter_3",)])
def test_dead_agent_steps_remove_agents_in_pettingzoos_order(dead):
    # TextEnv's _was_dead_step stops at the first dead agent instead of listing them all; the agents removed, the
    # next agent selected and the tables cleared must be PettingZoo's, step by step
    env = make("voting-v0", n_voters=5, action_mode="discrete")
    env.reset(seed=0)
    env.step(0)
    for agent in dead:
        env.terminations[agent] = True
    env.agent_selection = dead[0]
    env.rewards = {a: 0.5 for a in env.rewards}
    ours, theirs = env.clone(), env.clone()

    def step_ours(e):
        if e.terminations.get(e.agent_selection) or e.truncations.get(e.agent_selection):
            e._was_dead_step(None)
        else:   # the live agents that remain: end the trace here
            e.agents.clear()

    def step_theirs(e):
        if e.terminations.get(e.agent_selection) or e.truncations.get(e.agent_selection):
            AECEnv._was_dead_step(e, None)
        else:
            e.agents.clear()

    assert _dead_step_trace(ours, step_ours) == _dead_step_trace(theirs, step_theirs)


def test_dead_agent_step_refuses_an_action_like_pettingzoo():
    env = make("kuhn_poker-v0", action_mode="discrete")
    env.reset(seed=0)
    env.step(3 if env.action_mask(env.agent_selection)[3] else 1)
    while not (env.terminations[env.agent_selection]):
        env.step(int(np.flatnonzero(env.action_mask(env.agent_selection))[0]))
    with pytest.raises(ValueError, match="only valid action is None"):
        env.step(0)


@pytest.mark.parametrize("difficulty", [1, 2, 3, 4, 5])
def test_arithmetic_distractor_values_are_the_variant_trees_values(difficulty):
    source = ArithmeticTasks(difficulty=difficulty)
    rng = np.random.default_rng(difficulty)
    for _ in range(200):
        tree = source._random_tree(rng, source.n_ops)
        for delta in (-1, 1):
            value, ops, leaves = _variant_values(tree, delta)
            assert value == _eval_tree(tree)
            assert ops == [_eval_tree(t) for t in _op_variants(tree)]
            assert leaves == [_eval_tree(t) for t in _leaf_variants(tree, delta)]


def _hanabi_views(env_ids, seed) -> list:
    envs = [make(e, action_mode="discrete") for e in env_ids]
    rngs = [np.random.default_rng(seed + n) for n in range(len(envs))]
    for n, env in enumerate(envs):
        env.reset(seed=seed + n)
    views = []
    for _ in range(40):             # the games' moves interleaved, so their memo entries are written in turn
        for env, rng in zip(envs, rngs):
            if env.done:
                continue
            agent = env.agent_selection
            obs = env.observe(agent, text=False)
            views.append((env.env_id, obs["observation"].tobytes(), obs["action_mask"].tobytes(),
                          tuple(env.legal_actions(agent))))
            legal = np.flatnonzero(obs["action_mask"])
            env.step(int(legal[int(rng.integers(len(legal)))]))
    return views


def test_hanabi_memo_tables_keep_each_game_apart():
    # the memo tables are shared by every env of the process, keyed by the game's geometry: four presets played in
    # turn must see what each computes with empty tables
    presets = ["mini_hanabi-v1", "hanabi_small-v1", "simple_hanabi-v1", "hanabi-v1"]
    saved = dict(hanabi._MEMO)
    try:
        warm = _hanabi_views(presets, seed=11)
        for preset in presets:
            hanabi._MEMO.clear()
            cold = _hanabi_views([preset], seed=11 + presets.index(preset))
            assert cold == [v for v in warm if v[0] == preset]
    finally:
        hanabi._MEMO.clear()
        hanabi._MEMO.update(saved)


def test_pcg64_seed_state_is_numpys_default_rng_state_bit_for_bit():
    # the SeedSequence hashing written out by hand: every literal must be right for every seed
    seeds = [*range(2000), 2**31 - 1, 2**32 - 1, 2**32, 2**32 + 1, 2**63 - 1, 2**64 - 1, 2**64, 2**96 + 5,
             2**128 - 1, 2**128, 2**200 + 3]
    seeds += [int(s) for s in np.random.default_rng(0).integers(0, 2**63 - 1, 1000)]
    for seed in seeds:
        state = np.random.default_rng(seed).bit_generator.state["state"]
        assert pcg64_seed_state(seed) == (state["state"], state["inc"]), seed


def _pcg_state(rng: np.random.Generator) -> tuple[int, int, int, int]:
    state = rng.bit_generator.state
    return state["state"]["state"], state["state"]["inc"], state["has_uint32"], state["uinteger"]


def test_pcg64_integer_is_numpys_integers_draw_and_leaves_its_state():
    # the same number as int(rng.integers(n)) and the generator's state after it, from a fresh state and from one
    # with a buffered 32-bit half; the bounds include n = 1 (no word drawn), 2**32 (a plain word) and bounds where
    # Lemire's method often rejects a word and redraws (n just above 2**31)
    picker = np.random.default_rng(5)
    bounds = [1, 2, 3, 4, 5, 6, 7, 10, 100, 2**16 + 1, 2**31 - 1, 2**31, 2**31 + 1, 3 * 2**30, 2**32 - 1, 2**32]
    draws = redraws = 0
    for seed in range(400):
        rng = np.random.default_rng(seed)
        for _ in range(12):
            if picker.random() < 0.3:
                rng.integers(5, dtype=np.int32)          # leaves has_uint32 = 1 or takes the buffered half
            n = int(picker.choice(bounds)) if picker.random() < 0.7 else int(picker.integers(1, 2**32 + 1))
            before = _pcg_state(rng)
            got, after = pcg64_integer(before, n)
            assert got == int(rng.integers(n)), (seed, n)
            assert after == _pcg_state(rng), (seed, n)
            draws += 1
            if before[2] == 0 and after[0] != before[0] and after[2] == 0:
                redraws += 1      # two words taken from one fresh state: the first was rejected
    assert draws == 4800 and redraws > 0


@pytest.mark.parametrize("env_id", ["kuhn_poker-v0", "leduc_holdem-v0", "team_umbrella-v0", "free_riding-v0",
                                    "think_solve-v0"])
def test_a_scalar_draw_without_a_generator_is_the_generators_own_draw(env_id):
    # _random_index(n) is documented as int(np_random.integers(n)); it draws from the state in plain ints until
    # something asks for np_random. An env whose _random_index is that expression must see the same draws, and the
    # same generator state after them, at the start, in clones, through mixed draws and in "random" invalid moves
    fast = make(env_id, action_mode="discrete", invalid_move="random")
    plain_class = type("Plain", (type(fast),), {"_random_index": lambda self, n: int(self.np_random.integers(n))})
    plain = plain_class(action_mode="discrete", invalid_move="random")
    moves = np.random.default_rng(0)
    for seed in (0, 3, 2**40 + 7, 12345):
        fast.reset(seed=seed)
        plain.reset(seed=seed)
        fast_clone, plain_clone = fast.clone(), plain.clone()
        for n in (6, 2**31 + 1, 2**32, 1, 3):
            assert fast_clone._random_index(n) == plain_clone._random_index(n)
        assert fast_clone.np_random.random() == plain_clone.np_random.random()
        assert fast_clone._random_index(7) == plain_clone._random_index(7)
        assert _pcg_state(fast_clone.np_random) == _pcg_state(plain_clone.np_random)
        for agent in fast.agent_iter(max_iter=60):       # invalid moves are replaced by a random legal move
            obs, reward, term, trunc, info = fast.last()
            want = plain.last()
            assert (obs["text"], obs["observation"].tolist(), reward, term, trunc, info) == \
                (want[0]["text"], want[0]["observation"].tolist(), *want[1:])
            action = None if term or trunc else int(moves.integers(len(obs["action_mask"]) + 2))
            fast.step(action)
            plain.step(action)
        assert _pcg_state(fast.np_random) == _pcg_state(plain.np_random)


@pytest.mark.parametrize("env_id", ["kuhn_poker-v0", "voting-v0", "mini_hanabi-v1"])
def test_reset_reseeds_the_env_generator_as_default_rng_would(env_id):
    # reset(seed) reuses the last episode's generator: the game must start from default_rng(seed)'s state, whatever
    # the last episode left in it (a buffered 32-bit half included), and a clone's generator stays its own
    env = make(env_id, action_mode="discrete")
    start, seen = env._start, []

    def spy():
        seen.append(env.np_random.bit_generator.state)
        start()

    env._start = spy
    for seed in (5, 5, 2**40 + 1, 0, 7, 2**130):
        env.reset(seed=seed)
        assert seen[-1] == np.random.default_rng(seed).bit_generator.state
        env.np_random.integers(3, dtype=np.int32)      # leaves a buffered uint32 behind (has_uint32 = 1)
        clone = env.clone()
        expected = clone.np_random.bit_generator.state
        env.reset(seed=seed)
        assert seen[-1] == np.random.default_rng(seed).bit_generator.state
        assert clone.np_random is not env.np_random and clone.np_random.bit_generator.state == expected


def _trace_plain_or_numpy(env_id: str, numpy_ints: bool, seed: int, policy: str) -> list:
    env = make(env_id, action_mode="discrete", invalid_move=policy, max_retries=2)
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    trace = []
    for agent in env.agent_iter(max_iter=300):
        obs, reward, term, trunc, info = env.last()
        trace.append((agent, obs["text"], obs["observation"].tolist(), obs["action_mask"].tolist(), repr(reward),
                      term, trunc, repr(info), repr(env.rewards), repr(env._cumulative_rewards)))
        if term or trunc:
            env.step(None)
            continue
        n = len(obs["action_mask"])
        if rng.random() < 0.8:      # a legal move: the shortcut, or the general path for a NumPy integer
            index = int(rng.choice(np.flatnonzero(obs["action_mask"])))
            env.step(np.int64(index) if numpy_ints else index)
        else:                       # maybe illegal or out of range (the invalid record shows the input's repr)
            env.step(int(rng.integers(-1, n + 1)))
    trace.append(json.dumps({k: v for k, v in env.transcript().items() if k != "actions"}))
    return trace


@pytest.mark.parametrize("env_id", ["kuhn_poker-v0", "voting-v0", "mini_hanabi-v1", "leduc_holdem-v0",
                                    "simple_negotiation-v0"])
@pytest.mark.parametrize("policy", ["penalty", "retry", "random"])
def test_a_plain_int_step_plays_as_the_general_path(env_id, policy):
    # step's shortcut for a plain int (discrete mode) must do what the general path does with the same index given
    # as a NumPy integer: observations, rewards, cumulative rewards, infos, invalid moves and what follows them
    for seed in range(6):
        assert _trace_plain_or_numpy(env_id, False, seed, policy) == _trace_plain_or_numpy(env_id, True, seed, policy)


@pytest.mark.parametrize("max_iter", [0, 1, 3, 2**63])
def test_agent_iter_yields_what_pettingzoos_iterator_yields(max_iter):
    traces = []
    for iterate in (lambda env: env.agent_iter(max_iter), lambda env: AECEnv.agent_iter(env, max_iter)):
        env = make("kuhn_poker-v0", action_mode="discrete", rounds=2)
        env.reset(seed=4)
        trace = []
        for agent in iterate(env):
            trace.append(agent)
            env.step(None if env.terminations[agent] else int(np.flatnonzero(env.action_mask(agent))[0]))
        traces.append((trace, list(env.agents)))
    assert traces[0] == traces[1]


@pytest.mark.parametrize("env_id", ["mini_hanabi-v1", "hanabi_small-v1", "hanabi-v1", "simple_hanabi-v1"])
def test_hanabis_legality_check_is_membership_in_its_legal_list(env_id):
    # step asks _is_legal(agent, index) of every move; Hanabi answers a discard or a play without listing the legal
    # moves: it must agree with the list on every index, in states with and without information tokens left, with
    # short hands at the end of the deck, and for the agent to move as well as for the others
    env = make(env_id, action_mode="discrete")
    moves = np.random.default_rng(1)
    checked = tokens = 0
    for seed in range(40):
        env.reset(seed=seed)
        for agent in env.agent_iter(max_iter=200):
            obs, _, term, trunc, _ = env.last(text=False)
            if term or trunc:
                env.step(None)
                continue
            for who in env.possible_agents:
                legal = set(env._legal_ids(who))
                for index in range(len(env.action_names(who))):
                    assert env._is_legal(who, index) == (index in legal), (seed, who, index)
                    checked += 1
            tokens += env._info in (0, env.max_information_tokens)
            env.step(int(moves.choice(np.flatnonzero(obs["action_mask"]))))
    assert checked > 2_000 and tokens > 0
