"""baselines.rollout.branches: the moves a force branch plays, the replay rule of a main episode's record, the
sampling keys of force continuations, and the order in which branches land in their episode."""

from __future__ import annotations

import numpy as np
import pytest

from baselines.episode import Turn
from baselines.policies.base import Generation, Policy
from baselines.policies.scripted import ScriptedPolicy
from baselines.rollout import BranchSpec, RolloutEngine
from baselines.rollout.branches import force_moves
from baselines.rollout.job import Record, obs_digest
from marl_llm_envs import make
from marl_llm_envs.scripted import random_legal


class KeyedPolicy(Policy):
    """Plays the legal move its request key picks (a function of the key only) and records every key it is asked
    with, so a test reads which decisions shared their sampling keys."""

    name = "keyed"

    def __init__(self) -> None:
        self.keys: list[tuple[int, ...]] = []

    def generate(self, requests, seed=None):
        out = []
        for r in requests:
            self.keys.append(tuple(r.key))
            move = r.legal_actions[hash(tuple(r.key)) % len(r.legal_actions)]
            out.append(Generation(action=move, text=move, completion_ids=[1], logprobs=[-0.5]))
        return out


def test_force_moves_are_the_mask_ids_in_discrete_mode_the_legal_moves_in_text_mode_else_the_recorded_move():
    discrete = make("kuhn_poker-v0", action_mode="discrete")
    discrete.reset(seed=3)
    agent = discrete.agent_selection
    mask_ids = [int(i) for i in np.flatnonzero(discrete.action_mask(agent))]
    assert force_moves(discrete, agent, Turn(agent, "player", "")) == mask_ids and len(mask_ids) == 2

    text = make("kuhn_poker-v0")
    text.reset(seed=3)
    assert force_moves(text, agent, Turn(agent, "player", "")) == list(text.legal_actions(agent))

    free = make("think_solve-v0")           # the thinker writes free text: no legal moves to force
    free.reset(seed=3)
    thinker = free.agent_selection
    assert free.legal_actions(thinker) == []
    assert force_moves(free, thinker, Turn(thinker, "thinker", "", action="use 7")) == ["use 7"]


def test_a_record_replays_a_decision_only_where_the_text_and_the_legal_moves_are_the_ones_recorded():
    legal = ("[check]", "[bet]")
    rec = Turn("player_0", "player", "", action="[bet]", obs_digest=obs_digest("card K", legal))
    record = Record([rec])
    record.add("player_0", 0, "card K", legal)

    assert record.match("player_0", 0, "card K", legal) == (rec, rec.obs_digest)
    assert record.match("player_0", 0, "card K", legal[:1]) == (None, obs_digest("card K", legal[:1]))
    assert record.match("player_0", 0, "card Q", legal) == (None, obs_digest("card Q", legal))
    assert record.match("player_0", 1, "card K", legal)[0] is None       # its second decision was never recorded
    assert record.match("player_1", 0, "card K", legal)[0] is None
    assert record.occurrences_before(1) == {"player_0": 1} and record.occurrences_before(0) == {}


@pytest.mark.parametrize("stream", [0, 5])
def test_continuation_m_of_every_forced_move_samples_with_the_same_keys(stream):
    policy = KeyedPolicy()
    episodes = RolloutEngine(policy, show_progress=False).run("kuhn_poker-v0", 2, 1, seed=4, branches=[
        BranchSpec("force", "player_0", k=2, replay_others=False, stream=stream)])
    for e in episodes:
        for b in e.branches:       # move j = sample_index // k, forced: no policy call, no tokens
            assert b.turns[0].extra == {"forced": True} and b.turns[0].completion_ids == []
            assert b.turns[0].action == e.turns[b.turn_index].legal_actions[b.sample_index // 2]
    # a branch's later decision asks with (env seed, sample, kind 3, branch turn, continuation m[, stream], step)
    branch_keys = [key for key in policy.keys if len(key) > 3]
    assert branch_keys and all(key[2] == 3 and len(key) == (7 if stream else 6) for key in branch_keys)
    assert all(key[5] == stream for key in branch_keys) if stream else True
    # continuation m after "check" and after "bet" asks player_1 with the very same key (common random numbers)
    asked: dict[tuple, int] = {}
    for key in branch_keys:
        asked[key] = asked.get(key, 0) + 1
    assert max(asked.values()) == 2


def test_branches_land_in_their_episode_by_spec_then_branch_point_then_sample():
    specs = [BranchSpec("resample", "player_1", k=2), BranchSpec("ablate", "player_0")]
    engine = RolloutEngine(ScriptedPolicy(random_legal, seed=0), show_progress=False)
    episodes = engine.run("kuhn_poker-v0", 3, 2, seed=8, env_kwargs={"action_mode": "discrete"}, branches=specs)
    for e in episodes:
        rows = [(b.kind, b.agent, b.turn_index, b.sample_index) for b in e.branches]
        expected = [(spec.kind, t.agent, i, s) for spec in specs for i, t in enumerate(e.turns)
                    if t.agent == spec.agent for s in range(spec.k)]
        assert rows == expected
        assert e.branch_tokens_generated == sum(b.tokens_generated for b in e.branches)
