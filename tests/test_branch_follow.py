"""A resample branch whose new action is the recorded one is the main episode again: the engine takes the rest of it
from the record instead of playing it (``RolloutEngine._follow``). What it writes must be exactly what playing it
writes, in every env, including the batches and seeds of every other branch's later ticks."""

from __future__ import annotations

import json

import pytest

from baselines.policies.scripted import ScriptedPolicy
from baselines.rollout import BranchSpec, RolloutEngine
from marl_llm_envs import list_envs, make
from marl_llm_envs.scripted import random_legal


def _episodes(env_id, follow, monkeypatch, max_concurrent=None):
    monkeypatch.setattr(RolloutEngine, "follow_main", follow)
    env = make(env_id, action_mode="discrete")
    roles = sorted(set(env.roles.values()))
    engine = RolloutEngine(ScriptedPolicy(random_legal, seed=0), show_progress=False, max_concurrent=max_concurrent)
    episodes = engine.run(env_id, 2, 2, seed=11, env_kwargs={"action_mode": "discrete"},
                          branches=[BranchSpec("resample", role, k=3) for role in roles])
    rows = []
    for e in episodes:
        e.wall_time_s = 0.0
        for b in e.branches:
            b.wall_time_s = 0.0
        rows.append(json.loads(e.to_json()))
    return episodes, rows


@pytest.mark.parametrize("env_id", list_envs())
def test_a_followed_branch_writes_what_playing_it_writes(env_id, monkeypatch):
    played_episodes, played = _episodes(env_id, False, monkeypatch)
    followed_episodes, followed = _episodes(env_id, True, monkeypatch)
    assert followed == played
    # the positive control: some branches did take the recorded action (and were followed, not played)
    same = sum(b.turns[0].action == e.turns[b.turn_index].action for e in followed_episodes for b in e.branches)
    assert same > 0, env_id


def test_following_keeps_the_other_branches_batches_under_a_concurrency_cap(monkeypatch):
    # with max_concurrent, a followed branch must hold its slot for as many ticks as playing it would (the next
    # jobs start, and the scripted policy's per-call seeds fall, on the same ticks)
    assert _episodes("kuhn_poker-v0", True, monkeypatch, 3)[1] == _episodes("kuhn_poker-v0", False, monkeypatch, 3)[1]
    assert _episodes("team_umbrella-v0", True, monkeypatch, 5)[1] == \
        _episodes("team_umbrella-v0", False, monkeypatch, 5)[1]
