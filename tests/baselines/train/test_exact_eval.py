"""The exact held-out evaluator (baselines/train/exact_eval.py) against brute force: a closed form for policies with
known probabilities, and Monte Carlo play of a tiny LLM team."""

from __future__ import annotations

import math

import numpy as np
import pytest

from baselines.policies.base import Choice, Generation, Policy
from baselines.rollout import RolloutEngine
from baselines.train import TrainConfig
from baselines.train.exact_eval import eval_env_kwargs, eval_seeds, evaluate
from baselines.train.learners import build_team
from baselines.train.loop import fixed_roles
from marl_llm_envs import make

CLUE = {"thinker_clue_accuracy": 0.7, "action_mode": "discrete", "clue_pool": "words"}


class _Fixed(Policy):
    """A role's distribution given by a function of the request; samples its argmax (the evaluator reads probs)."""

    def __init__(self, probs_of):
        self.probs_of, self.name = probs_of, "fixed"

    def generate(self, requests, seed=None):
        out = []
        for r in requests:
            p = self.probs_of(r)
            i = int(np.argmax(p))
            out.append(Generation(action=r.legal_actions[i], text=r.legal_actions[i],
                                  choice=Choice(i, math.log(p[i]), "scripted", list(p))))
        return out


Q, R, F = 0.6, 0.1, 0.7      # thinker: names its clue w.p. Q, [none] w.p. R; solver follows a hint w.p. F


def _thinker(r):
    """Names its clue w.p. Q, [none] (when it is a move) w.p. R, each other label alike."""
    env = r.env.unwrapped
    label = env.labels[env.candidates.index(env.clue())]
    moves = [a.strip("[]") for a in r.legal_actions]      # "[none]", "[A]", ...
    other = (1 - Q - (R if "none" in moves else 0)) / 3
    return [R if a == "none" else Q if a == label else other for a in moves]


def _solver(r):
    thought = r.env.unwrapped.thought
    if thought in ("none", None):
        return [0.25] * 4
    p = [(1 - F) / 3] * 4
    p[r.env.unwrapped.labels.index(thought)] = F
    return p


@pytest.mark.parametrize("hint_optional", [True, False])
def test_exact_values_equal_the_closed_form_on_the_same_seeds(hint_optional):
    thinker, solver = _Fixed(_thinker), _Fixed(_solver)
    thinker.observes = solver.observes = frozenset({"text", "legal_actions", "env"})
    n = 40
    clue = CLUE if hint_optional else {**CLUE, "hint_optional": False}
    r = R if hint_optional else 0.0             # the [none] mass; without [none] the thinker's moves are 4 labels
    got = evaluate({"thinker": thinker, "solver": solver}, "think_solve-v0", clue, n)
    # by hand, seed by seed: sum over messages m and answers a of p(m) p(a | m) [a = Y]
    kwargs = eval_env_kwargs("think_solve-v0", clue)
    assert kwargs["split"] == "test"
    expected, joint = 0.0, np.zeros((4, 5))     # clue x message ([none], then the labels)
    for seed in eval_seeds(n):
        env = make("think_solve-v0", **kwargs)
        env.reset(seed=seed)
        y, c = env.answer_index(), env.candidates.index(env.clue())
        pm = [r] + [(1 - Q - r) / 3] * 4
        pm[1 + c] = Q
        joint[c] += np.array(pm) / n
        value = r * 0.25
        for m in range(4):
            value += pm[1 + m] * (F if m == y else (1 - F) / 3)
        expected += value / n
    pc, pmsg = joint.sum(1), joint.sum(0)
    mi = sum(joint[i, j] * math.log(joint[i, j] / (pc[i] * pmsg[j])) for i in range(4) for j in range(5)
             if joint[i, j] > 0)
    assert got["eval/team_reward/team"] == pytest.approx(expected, abs=1e-9)
    assert got["eval/p_follow"] == pytest.approx(F, abs=1e-9)
    assert got["eval/p_pass"] == pytest.approx(Q, abs=1e-9)
    assert got["eval/mi_clue_message"] == pytest.approx(mi, abs=1e-9)
    assert 0 < mi < math.log(4)


@pytest.mark.slow       # about 20 s on a busy 2-core box: 1,000 episodes of play
def test_the_exact_team_reward_of_a_tiny_llm_team_matches_monte_carlo_play():
    cfg = TrainConfig(env="think_solve-v0", model="tiny", mode="choice", temperature=0.5)
    env = make("think_solve-v0", **CLUE)
    team = build_team(cfg, env, ["solver", "thinker"])
    n = 4
    exact = evaluate(team.policies, "think_solve-v0", CLUE, n)["eval/team_reward/team"]
    kwargs = eval_env_kwargs("think_solve-v0", CLUE)
    episodes = RolloutEngine(team.policies, show_progress=False).run("think_solve-v0", n, 250, seed=1,
                                                                     env_kwargs=kwargs, seeds=eval_seeds(n))
    rewards = np.array([e.team_rewards["team"] for e in episodes])
    se = rewards.std() / math.sqrt(len(rewards))
    assert abs(rewards.mean() - exact) < 4 * se + 1e-9, (rewards.mean(), exact, se)


def test_a_policy_without_a_distribution_and_free_text_turns_are_refused():
    from baselines.policies.scripted import RandomPolicy, ScriptedPolicy
    from marl_llm_envs.reference.think_solve import clue_relay

    bot = ScriptedPolicy(clue_relay)
    with pytest.raises(ValueError, match=r"reports none \(a scripted bot\)"):
        evaluate({"thinker": bot, "solver": bot}, "think_solve-v0", CLUE, 2)
    rnd = RandomPolicy()
    with pytest.raises(ValueError, match="turn is free text"):
        evaluate({"thinker": rnd, "solver": rnd}, "think_solve-v0", {}, 2)
    # random play: exactly chance (1/4), P(follow) 1/4, no information passed
    got = evaluate({"thinker": rnd, "solver": rnd}, "think_solve-v0", CLUE, 8)
    assert got["eval/team_reward/team"] == pytest.approx(0.25) and got["eval/p_follow"] == pytest.approx(0.25)
    assert got["eval/mi_clue_message"] == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("model", [pytest.param("tiny", marks=pytest.mark.slow), "mlp"])
def test_the_trainer_logs_the_evaluation_and_it_changes_nothing_it_trains(tmp_path, model):
    import json

    from baselines.train import train

    def run(name, every):
        cfg = TrainConfig(env="think_solve-v0", env_kwargs={"thinker_clue_accuracy": 0.9, "clue_pool": "words"},
                          action_mode="discrete", model=model, mode="choice", steps=3, tasks_per_step=2, group_size=2,
                          eval_every=every, eval_episodes=4, out=str(tmp_path / name), progress=False,
                          tensorboard=False)
        train(cfg)
        return cfg, [json.loads(x) for x in (tmp_path / name / "metrics.jsonl").read_text().splitlines()]

    cfg, rows = run("eval", 2)
    _, plain = run("plain", 0)
    assert [sorted(k for k in r if k.startswith("eval")) for r in rows] == [
        ["eval_start/mi_clue_message", "eval_start/p_follow", "eval_start/p_pass", "eval_start/team_reward/team",
         "eval_start/time"],
        ["eval/mi_clue_message", "eval/p_follow", "eval/p_pass", "eval/team_reward/team", "eval/time"],
        ["eval/mi_clue_message", "eval/p_follow", "eval/p_pass", "eval/team_reward/team", "eval/time"]]
    drop = ("eval", "time/")
    assert [{k: v for k, v in r.items() if not k.startswith(drop)} for r in rows] == \
        [{k: v for k, v in r.items() if not k.startswith(drop)} for r in plain]
    # the untrained policy's values: the same as evaluating a freshly built team of the run's config
    team = build_team(cfg, make("think_solve-v0", **CLUE), ["solver", "thinker"])
    fresh = evaluate(team.policies, "think_solve-v0", {**cfg.env_kwargs, "action_mode": "discrete"}, 4)
    assert rows[0]["eval_start/team_reward/team"] == pytest.approx(fresh["eval/team_reward/team"], abs=1e-6)
    assert 0 <= rows[2]["eval/p_follow"] <= 1 and rows[0]["eval_start/mi_clue_message"] >= 0


class _Counted(_Fixed):
    """:class:`_Fixed` that counts the decisions it was asked for."""

    def __init__(self, probs_of, observes=frozenset({"text", "legal_actions"})):
        super().__init__(probs_of)
        self.observes, self.asked = observes, 0

    def generate(self, requests, seed=None):
        self.asked += len(requests)
        return super().generate(requests, seed)


def _by_text(r):
    """A distribution that is a function of the prompt alone (as an LLM's)."""
    w = np.array([1.0 + (len(r.text) * (i + 3)) % 7 for i in range(len(r.legal_actions))])
    return list(w / w.sum())


def test_a_memo_scores_an_unchanging_role_once_and_changes_no_value():
    plain = evaluate({"thinker": _Fixed(_by_text), "solver": _Fixed(_by_text)}, "think_solve-v0", CLUE, 6)
    thinker, solver, memo = _Counted(_by_text), _Counted(_by_text), {"solver": {}}
    first = evaluate({"thinker": thinker, "solver": solver}, "think_solve-v0", CLUE, 6, memo)
    assert first == plain
    assert solver.asked == 6 * 5 and len(memo["solver"]) == 30    # a seed: the solver after each of 5 messages
    assert evaluate({"thinker": thinker, "solver": solver}, "think_solve-v0", CLUE, 6, memo) == plain
    assert solver.asked == 30 and thinker.asked == 12           # the thinker (not in the memo) is asked again
    # more seeds: only the new decisions are scored
    more = evaluate({"thinker": thinker, "solver": solver}, "think_solve-v0", CLUE, 8, memo)
    assert solver.asked == 40 and more == evaluate({"thinker": _Fixed(_by_text), "solver": _Fixed(_by_text)},
                                                   "think_solve-v0", CLUE, 8)
    # a policy that reads more than its prompt (here the env) is never memoised
    reads_env = _Counted(_solver, frozenset({"text", "legal_actions", "env"}))
    memo = {"solver": {}}
    for _ in range(2):
        evaluate({"thinker": _Counted(_thinker, reads_env.observes), "solver": reads_env}, "think_solve-v0", CLUE, 3,
                 memo)
    assert reads_env.asked == 2 * 3 * 5 and memo["solver"] == {}


@pytest.mark.parametrize("model,adapters,frozen,fixed", [
    ("tiny", "per_role", "solver", ["solver"]),    # the frozen role's own adapter: never updated
    ("tiny", "shared", "solver", []),              # one adapter for both roles: the thinker's updates move it
    ("tiny", "none", "solver", []),                # one set of full weights
    ("tiny", "per_role", "", []),
    ("mlp", "none", "solver", []),                 # one MLP plays both roles
])
def test_the_roles_an_evaluation_may_memoise_are_those_whose_weights_no_update_touches(model, adapters, frozen,
                                                                                         fixed):
    if adapters != "none":
        pytest.importorskip("peft")
    cfg = TrainConfig(env="think_solve-v0", env_kwargs={"clue_pool": "words"}, action_mode="discrete", model=model,
                      mode="choice", adapters=adapters, frozen=frozen)
    team = build_team(cfg, make("think_solve-v0", **CLUE), ["solver", "thinker"])
    assert fixed_roles(team) == fixed


def test_a_run_with_a_frozen_role_logs_the_same_evaluations_with_its_memo(tmp_path, monkeypatch):
    import json

    from baselines.train import loop, train

    pytest.importorskip("peft")
    sizes = []

    def run(name):
        cfg = TrainConfig(env="think_solve-v0", env_kwargs={"thinker_clue_accuracy": 0.9, "clue_pool": "words"},
                          action_mode="discrete", model="tiny", mode="choice", adapters="per_role", frozen="solver",
                          lr=5e-2, steps=3, tasks_per_step=2, group_size=2, eval_every=1, eval_episodes=3,
                          out=str(tmp_path / name), progress=False, tensorboard=False)
        train(cfg)
        return [json.loads(x) for x in (tmp_path / name / "metrics.jsonl").read_text().splitlines()]

    real = loop.evaluate

    def spy(policies, env_id, env_kwargs, episodes, memo=None):
        sizes.append({r: len(m) for r, m in (memo or {}).items()})
        return real(policies, env_id, env_kwargs, episodes, memo)

    monkeypatch.setattr(loop, "evaluate", spy)
    memoised = run("memo")
    assert sizes == [{"solver": 0}] + [{"solver": 3 * 5}] * 3      # filled by the first of the four evaluations
    monkeypatch.setattr(loop, "fixed_roles", lambda team: [])
    plain = run("plain")
    evals = [{k: v for k, v in r.items() if k.startswith("eval") and not k.endswith("/time")} for r in memoised]
    assert evals == [{k: v for k, v in r.items() if k.startswith("eval") and not k.endswith("/time")} for r in plain]
    assert len({r["eval/p_pass"] for r in memoised}) == 3      # the thinker trains: its part is scored each time
    assert len({r["eval/p_follow"] for r in memoised}) == 1    # the frozen solver's skill stays
