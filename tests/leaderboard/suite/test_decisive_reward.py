"""The team umbrella's noise-free score (issue 40): the trainer logs ``reward/decisive/<team>``, the team reward less
the ``noise_total`` the env reports in its final infos, and a suite setting with ``score: "decisive_reward"`` scores
the tail of that metric instead of the noisy team reward (a suite keeping one checkpoint; with several, the final
policy's decisive reward on held-out seeds: ``test_held_out.py``)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import marl_llm_envs
from baselines.rollout import RolloutEngine
from baselines.train.logging import decisive_rewards as _decisive_rewards, step_metrics as _metrics
from leaderboard.players import opponent_policy
from leaderboard.suite import load_suite, plan, run_one, suite_coverage

KW = {"delay": 3, "action_mode": "discrete"}


def _episodes(env_id: str, kwargs: dict, n: int = 12):
    env = marl_llm_envs.make(env_id, **kwargs)
    bot = opponent_policy(env_id, "random", seed=0)
    engine = RolloutEngine({r: bot for r in set(env.roles.values())}, show_progress=False)
    return engine.run(env_id, num_tasks=n, seeds=list(range(n)), env_kwargs=kwargs)


def test_the_decisive_reward_is_the_team_reward_less_the_noise_and_the_final_plus_minus_one():
    eps = _episodes("team_umbrella-v0", KW)
    noisy = [e.team_rewards["team"] for e in eps]
    finals = [e.final_infos["player_0"]["decisive_reward"] for e in eps]
    assert any(abs(x) > 1 for x in noisy)                          # the noise is there in the team reward
    assert _decisive_rewards(eps) == {"team": pytest.approx(finals)}
    m = _metrics(0, eps, [[0.0] * len(e.turns) for e in eps], "cooperative", {})
    assert m["reward/decisive/team"] == pytest.approx(np.mean(finals))
    assert m["reward/team/team"] == pytest.approx(np.mean(noisy))


def test_envs_that_add_no_noise_log_no_decisive_reward():
    eps = _episodes("voting-v0", {"n_voters": 2, "action_mode": "discrete"}, n=4)
    assert _decisive_rewards(eps) == {}
    assert not any(k.startswith("reward/decisive/")
                   for k in _metrics(0, eps, [[0.0] * len(e.turns) for e in eps], "cooperative", {}))


def _spec(tmp_path, setting: str, steps: int = 3) -> dict:
    """A credit-micro@4 setting's spec as a suite keeping one checkpoint has it (no ``checkpoints``), so the run is
    scored by the tail of its metrics (credit-micro@4 itself scores held-out seeds: ``test_held_out.py``)."""
    suite = load_suite("credit-micro@4")
    spec = next(s for s in plan(suite, ["broadcast"], tmp_path)[0] if s["setting"] == setting)
    return {**{k: v for k, v in spec.items() if k != "checkpoints"}, "steps": steps, "tasks_per_step": 4,
            "group_size": 2, "last_fraction": 0.5}


def test_a_decisive_reward_setting_of_a_one_checkpoint_suite_scores_the_tail_of_the_logged_metric(tmp_path):
    spec = _spec(tmp_path, "team_umbrella/delay3")
    assert spec["score"] == "decisive_reward"
    got = run_one(spec)
    rows = [json.loads(line) for line in (tmp_path / "broadcast" / "team_umbrella_delay3" / f"seed{spec['seed']}" /
                                          "metrics.jsonl").read_text().splitlines()]
    decisive = [r["reward/decisive/team"] for r in rows]
    assert len(rows) == 3 and all(-1.0 <= x <= 1.0 for x in decisive)
    assert got["raw"] == pytest.approx(np.mean(decisive[-2:]))       # ceil(3 * 0.5) = 2 tail steps
    assert got["curve"] == pytest.approx([r["reward/team/team"] for r in rows])     # the curve stays the team reward
    noisy = run_one({**spec, "score": "team_reward"})                  # the same run, reused, scored on the noise
    assert noisy["raw"] == pytest.approx(np.mean(got["curve"][-2:]))


def test_decisive_reward_on_a_run_that_never_logged_it_is_a_clear_error(tmp_path):
    spec = {**_spec(tmp_path, "voting/fraction/n2", steps=1), "score": "decisive_reward"}
    with pytest.raises(ValueError, match="does not log reward/decisive/<team>"):
        run_one(spec)


def test_the_coverage_says_which_settings_score_the_decisive_reward():
    suite = load_suite("credit-micro@4")
    names = [s.name for s in suite.settings]
    text = " ".join(suite_coverage(suite, {"anchors": dict.fromkeys(names), "methods": {}}))
    assert ("On team_umbrella/delay1, team_umbrella/delay3, team_umbrella/delay10, team_umbrella/delay30 that "
            "reward is the noise-free decisive reward") in text
    v3 = load_suite("credit-micro@3")
    assert "decisive" not in " ".join(suite_coverage(v3, {"anchors": dict.fromkeys(s.name for s in v3.settings),
                                                          "methods": {}}))
