"""A resample branch whose new action is the recorded one is the main episode again: the engine takes the rest of it
from the record instead of playing it (``BranchJob.follow``, baselines/rollout/branches.py); one that drew the same
action as an earlier sibling shadows that sibling while its decisions replay (``BranchJob.shadow``). What they write
must be exactly what playing them writes, in every env, including the batches and seeds of every other branch's
later ticks."""

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
    # the positive controls: some branches took the recorded action (followed, not played), and some took an earlier
    # sibling's other action (shadowed)
    same = shadowed = 0
    for e in followed_episodes:
        for b in e.branches:
            recorded = e.turns[b.turn_index].action
            earlier = [o.turns[0].action for o in e.branches
                       if (o.kind, o.agent, o.turn_index) == (b.kind, b.agent, b.turn_index)
                       and o.sample_index < b.sample_index]
            same += b.turns[0].action == recorded
            shadowed += b.turns[0].action != recorded and b.turns[0].action in earlier
    assert same > 0 and shadowed > 0, (env_id, same, shadowed)


def test_following_keeps_the_other_branches_batches_under_a_concurrency_cap(monkeypatch):
    # with max_concurrent, a followed branch must hold its slot for as many ticks as playing it would (the next
    # jobs start, and the scripted policy's per-call seeds fall, on the same ticks)
    assert _episodes("kuhn_poker-v0", True, monkeypatch, 3)[1] == _episodes("kuhn_poker-v0", False, monkeypatch, 3)[1]
    assert _episodes("team_umbrella-v0", True, monkeypatch, 5)[1] == \
        _episodes("team_umbrella-v0", False, monkeypatch, 5)[1]
