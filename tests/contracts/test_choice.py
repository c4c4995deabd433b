"""The choice a policy made travels typed: ``Generation.choice`` -> ``Turn.choice`` -> JSONL -> the trainer's samples,
and episode files written before ``Turn.choice`` (the choice in ``Turn.extra``) still load with the same choice."""

from __future__ import annotations

import math

from baselines.episode import Episode, Turn, read_jsonl, write_jsonl
from baselines.policies.base import Choice, VectorInputs


def _episode(turns: list[Turn]) -> Episode:
    return Episode("kuhn_poker-v0", 0, {}, seed=3, task_id=None, group_id=0, turns=turns,
                   rewards={"player_0": 1.0, "player_1": -1.0})


def test_a_turns_choice_survives_the_jsonl_round_trip(tmp_path):
    choice = Choice(index=1, logprob=math.log(0.6), scoring="label", probs=[0.4, 0.6], logliks=[-0.9, -0.5],
                    scores=[-0.9, -0.5])
    turn = Turn("player_0", "player_0", "player_0", [1, 2, 3], [9], [-0.5], "[bet]", "[bet]",
                legal_actions=["[check]", "[bet]"], extra={"finish_reason": "note"}, choice=choice)
    write_jsonl(tmp_path / "e.jsonl", [_episode([turn])])
    back = read_jsonl(tmp_path / "e.jsonl")[0].turns[0]
    assert back.choice == choice and back.extra == {"finish_reason": "note"}


def test_an_old_turn_with_the_choice_in_extra_loads_with_a_typed_choice():
    old_llm = {"agent": "player_0", "role": "player_0", "team": "player_0", "prompt_ids": [1, 2], "completion_ids": [9],
               "logprobs": [-0.5], "action": "[bet]", "legal_actions": ["[check]", "[bet]"],
               "extra": {"mode": "choice", "choice_index": 1, "choice_logprob": -0.51, "choice_probs": [0.4, 0.6],
                         "choice_logliks": [-0.9, -0.5], "choice_scoring": "label"}}
    old_sum = {**old_llm, "extra": {"mode": "choice", "choice_index": 0, "choice_logprob": -0.2}}  # before scorings
    old_mlp = {"agent": "voter_0", "role": "voter", "team": "team", "completion_ids": [2], "logprobs": [-1.1],
               "action": 2, "extra": {"obs": [0.0, 1.0], "mask": [1, 1, 1], "role_index": 0, "mode": "mlp"}}
    old_bot = {"agent": "player_1", "role": "player_1", "team": "player_1", "action": "[check]",
               "legal_actions": ["[check]", "[bet]"], "extra": {"choice_probs": [0.5, 0.5]}}
    old_text = {"agent": "player_0", "role": "player_0", "team": "player_0", "completion_ids": [5, 6],
                "logprobs": [-1.0, -2.0], "action": "hi", "extra": {"mode": "generate", "finish_reason": "eos"}}
    ep = Episode.from_json({"env_id": "kuhn_poker-v0", "env_version": 0, "env_kwargs": {}, "seed": 1, "task_id": None,
                            "group_id": 0, "turns": [old_llm, old_sum, old_mlp, old_bot, old_text]})
    llm, summed, mlp, bot, text = (t.choice for t in ep.turns)
    assert llm == Choice(1, -0.51, "label", [0.4, 0.6], [-0.9, -0.5], [])
    assert summed.scoring == "sum" and summed.index == 0 and summed.logprob == -0.2
    assert mlp == Choice(2, -1.1, "mlp", inputs=VectorInputs([0.0, 1.0], [1, 1, 1], 0)) and mlp.kind == "mlp"
    assert bot.scoring == "scripted" and bot.index == 0 and bot.probs == [0.5, 0.5]
    assert text is None


def test_the_trainer_reads_the_typed_choice_of_old_and_new_turns_alike():
    from baselines.train.update import trained_samples as _samples

    new = Turn("player_0", "player_0", "player_0", [1, 2], [9], [-0.5], "[bet]", "[bet]",
               legal_actions=["[check]", "[bet]"], choice=Choice(1, -0.51, "label", [0.4, 0.6]))
    written_before = {k: v for k, v in new.to_dict().items() if k != "choice"}
    written_before["extra"] = {"mode": "choice", "choice_index": 1, "choice_logprob": -0.51,
                               "choice_probs": [0.4, 0.6], "choice_scoring": "label"}
    old = Turn.from_dict(written_before)
    a, b = _samples([_episode([new]), _episode([old])], [[1.0], [1.0]], {"player_0"})
    assert (a.kind, a.sampler_lp, a.choice) == (b.kind, b.sampler_lp, b.choice) == ("choice", [-0.51], new.choice)


def test_an_mlp_decision_is_scored_again_on_its_typed_inputs_from_new_and_old_files(tmp_path):
    """The MLP's inputs travel as ``Choice.inputs`` (not in ``extra``); a turn written when they were in ``extra``
    loads with the same typed inputs, and the learner scores both to the same log-probability it recorded."""
    import torch

    from baselines.policies.mlp import MLPPolicy
    from baselines.rollout import RolloutEngine
    from baselines.train.learners import MLPLearner
    from baselines.train.update import trained_samples as _samples
    from marl_llm_envs import make

    env = make("kuhn_poker-v0", action_mode="discrete")
    policy = MLPPolicy.for_env(env, seed=4)
    (ep,) = RolloutEngine(policy).run("kuhn_poker-v0", num_tasks=1, group_size=1, seed=5,
                                      env_kwargs={"action_mode": "discrete"})
    turn = ep.turns[0]
    assert turn.extra == {} and turn.choice.kind == "mlp" and isinstance(turn.choice.inputs, VectorInputs)
    assert len(turn.choice.inputs.observation) == env.vector_size and sum(turn.choice.inputs.mask) >= 1
    write_jsonl(tmp_path / "e.jsonl", [ep])
    back = read_jsonl(tmp_path / "e.jsonl")[0].turns[0]
    assert back.choice == turn.choice
    written_before = back.to_dict()
    inputs = written_before["choice"].pop("inputs")
    written_before["extra"] = {"obs": inputs["observation"], "mask": inputs["mask"], "role_index": inputs["role_index"]}
    old = Turn.from_dict(written_before)
    assert old.choice == turn.choice
    learner = MLPLearner(sorted(policy.roles), policy, trainable=True, name="mlp")
    a, b = _samples([_episode([turn]), _episode([old])], [[1.0], [1.0]], {turn.role})
    with torch.no_grad():
        lp = learner.logprobs([a, b])[0].tolist()
    assert lp[0] == lp[1] and abs(lp[0] - turn.choice.logprob) < 1e-6
