"""The small (LLM) tier of ``python -m leaderboard fidelity`` (leaderboard/fidelity_small.py): its exact true
advantage against brute-force enumeration on a tiny random-init LLM team, and the command's wiring with that model."""

from __future__ import annotations

import json

import numpy as np
import pytest

from baselines import fidelity as fid
from baselines.policies.base import request_for
from baselines.rollout import RolloutEngine, training_seeds
from baselines.train.learners import build_team
from leaderboard.fidelity import plan
from leaderboard.fidelity_policies import train_config
from marl_llm_envs import make

WORDS = {"thinker_clue_accuracy": 0.9, "clue_pool": "words", "action_mode": "discrete"}


def _distribution(policy, env, agent):
    """pi(. | h) of ``agent`` now, from one fresh choice-mode call, with the moves it scores."""
    request = request_for(env, agent, policy.observes)
    choice = policy.generate([request], seed=0)[0].choice
    p = np.asarray(choice.probs, np.float64)
    return list(request.legal_actions), p / p.sum()


def _reward_after(env, moves):
    """The team reward after playing ``moves`` (discrete action ids) on a clone of ``env``."""
    env = env.clone()
    for m in moves:
        env.step(m)
    assert env.done
    return float(env.rewards["thinker"] if "thinker" in env.rewards else next(iter(env.rewards.values())))


def test_the_small_tiers_exact_true_advantage_equals_brute_force_enumeration():
    """Every thinker and solver turn of one training batch of the shortcut-free clue task, played by a tiny
    random-init LLM in choice mode with one LoRA adapter per role: ``A*`` from the ground truth (exact: the solver's
    distribution after each forced message) equals enumeration over both decisions, to float32 rounding."""
    spec = plan(["broadcast"], tier="small", settings=["think_solve/words/a0.9"], seeds=[3], policies=["initial"],
                model="tiny")[0]
    assert (spec["model"], spec["mode"], spec["adapters"], spec["action_mode"]) == ("tiny", "choice", "per_role",
                                                                                    "discrete")
    env = make("think_solve-v0", **WORDS)
    team = build_team(train_config(spec, steps=1), env, ["solver", "thinker"])
    seeds = training_seeds(3, 0, 3)
    episodes = RolloutEngine(team.policies, show_progress=False).run(
        "think_solve-v0", len(seeds), 2, seed=11, env_kwargs=WORDS, seeds=seeds,
        branches=fid.truth_branches(["thinker", "solver"], 2))
    truth = fid.ground_truth(episodes, team.policies, ["thinker", "solver"], 2)
    assert len(truth.measured()) == 12 and truth.exact_turns == 12
    checked = {"thinker": 0, "solver": 0}
    for tt in truth.measured():
        e = episodes[tt.episode]
        start = make("think_solve-v0", **WORDS)
        start.reset(seed=e.seed)
        acts = [t.action for t in e.turns]
        if tt.role == "thinker":
            messages, p_msg = _distribution(team.policies["thinker"], start, "thinker")
            q = []
            for b in range(len(messages)):
                after = start.clone()
                after.step(b)
                answers, p_ans = _distribution(team.policies["solver"], after, "solver")
                q.append(sum(p_ans[c] * _reward_after(after, [c]) for c in range(len(answers))))
        else:
            start.step(acts[0])
            answers, p_msg = _distribution(team.policies["solver"], start, "solver")
            q = [_reward_after(start, [c]) for c in range(len(answers))]
        expected = q[acts[tt.turn]] - float(np.dot(p_msg, q))
        # the measured turn's pi is the one the rollout recorded (a batch, padded): float32 rounding apart from a
        # fresh call's; Q itself is enumerated exactly
        assert tt.advantage == pytest.approx(expected, abs=1e-6), (tt.role, tt.episode)
        assert np.allclose(tt.probs, p_msg, atol=1e-6)
        checked[tt.role] += 1
    assert checked == {"thinker": 6, "solver": 6}
    assert any(abs(t.advantage) > 1e-3 for t in truth.measured() if t.role == "thinker")


def test_the_small_tier_is_planned_at_the_untrained_policy_and_one_checkpoint():
    specs = plan(["ccpo_v2", "broadcast"], tier="small")
    assert sorted({(s["setting"], s["policy"]) for s in specs}) == [
        ("free_riding/idle3", "broadcast@2"), ("free_riding/idle3", "initial"),
        ("think_solve/words/a0.9", "broadcast@2"), ("think_solve/words/a0.9", "initial")]
    assert {s["model"] for s in specs} == {"smollm2-135m"} and {s["train_seed"] for s in specs} == {0}
    with pytest.raises(ValueError, match="not in the small tier's settings"):
        plan(["broadcast"], tier="small", settings=["voting/fraction/n8"])
    with pytest.raises(ValueError, match="--quick is the micro tier's"):
        plan(["broadcast"], tier="small", quick=True)
    with pytest.raises(ValueError, match="--model is for --tier small"):
        plan(["broadcast"], model="tiny")


def _command(out, *extra):
    return ["fidelity", "ccpo_v2", "--tier", "small", "--model", "tiny", "--baselines", "broadcast,oracle",
            "--settings", "think_solve/words/a0.9", "--seeds", "0", "--out", str(out), *extra]


def test_the_small_tier_command_scores_each_role_with_verdicts(tmp_path, capsys):
    """``fidelity ccpo_v2 --tier small --model tiny``: a row per role with its verdict lines (the thinker's is
    CCPO's claim), the oracle control at 1 on the thinker's turns, ``A*`` exact there, the policy recorded."""
    from leaderboard.__main__ import main

    assert main(_command(tmp_path / "out", "--policies", "initial")) == 0
    text = capsys.readouterr().out
    assert "ccpo_v2 vs broadcast: not separated on think_solve/words/a0.9 role=thinker" in text or \
        "broadcast: separated on think_solve/words/a0.9 role=thinker" in text
    summary = json.loads((tmp_path / "out" / "results.json").read_text())["summary"]
    assert sorted(summary) == ["think_solve/words/a0.9", "think_solve/words/a0.9 role=solver",
                               "think_solve/words/a0.9 role=thinker"]
    thinker = summary["think_solve/words/a0.9 role=thinker"]
    assert thinker["role"] == "thinker" and thinker["turns"] == 32 and thinker["exact_fraction"] == 1.0
    assert thinker["reliability"] == pytest.approx(1.0)
    assert thinker["methods"]["oracle"]["r"] == pytest.approx(1.0, abs=1e-9)
    assert thinker["policies"][0]["kind"] == "initial" and len(thinker["policies"][0]["weights_sha256"]) == 64


@pytest.mark.slow       # about a minute of CPU: two broadcast training steps of the tiny team, measured twice
def test_the_small_tiers_checkpoint_is_trained_once_recorded_and_reused(tmp_path):
    from leaderboard.__main__ import main

    out = tmp_path / "out"
    assert main(_command(out)) == 0
    summary = json.loads((out / "results.json").read_text())["summary"]
    trained = summary["think_solve/words/a0.9 [broadcast@2]"]["policies"][0]
    initial = summary["think_solve/words/a0.9"]["policies"][0]
    assert trained["kind"] == "broadcast@2" and trained["weights_sha256"] != initial["weights_sha256"]
    made = out / "policies" / "think_solve_words_a0.9" / "seed0" / "broadcast-2" / "checkpoints" / "step-0000002"
    assert made.is_dir() and str(made.parents[1]) == trained["run"]
    stamp = made.stat().st_mtime_ns
    assert main(_command(out, "--policies", "broadcast")) == 0
    again = json.loads((out / "results.json").read_text())["summary"]["think_solve/words/a0.9 [broadcast@2]"]
    assert again["policies"][0]["weights_sha256"] == trained["weights_sha256"] and made.stat().st_mtime_ns == stamp


def _measured_at(tmp_path, **over):
    from leaderboard.fidelity import measure

    spec = plan(["broadcast"], tier="small", settings=["think_solve/words/a0.9"], seeds=[2], policies=["initial"],
                model="tiny")[0]
    return measure({**spec, **over})


def test_a_spec_can_freeze_a_role_and_name_a_method_with_options(tmp_path):
    """``frozen``: only the other role's turns are scored; ``variants``: a label is a method with options (here
    broadcast scaled by the group mean, MaxRL's, against the plain one: other values, the same signs)."""
    got = _measured_at(tmp_path, frozen="solver", methods=["broadcast", "maxrl"],
                       variants={"maxrl": ["broadcast", {"std": "mean"}]})
    assert set(got["truth"]["role"]) == {"thinker"} and len(got["truth"]["role"]) == 32
    plain, maxrl = (np.asarray(got["methods"][m]["adv"]) for m in ("broadcast", "maxrl"))
    assert not np.allclose(plain, maxrl) and np.array_equal(np.sign(plain), np.sign(maxrl))


def test_a_spec_measures_at_the_weights_of_a_training_run_and_records_them(tmp_path):
    from baselines.train import train

    spec = plan(["broadcast"], tier="small", settings=["think_solve/words/a0.9"], seeds=[2], policies=["initial"],
                model="tiny")[0]
    run = tmp_path / "run"
    train(train_config(spec, steps=1, lr=0.05, out=str(run)))
    initial = _measured_at(tmp_path)["policy"]
    got = _measured_at(tmp_path, policy="run:trained", run=str(run))["policy"]
    assert got["kind"] == "run:trained" and got["step"] == 1
    assert got["checkpoint"] == str(run / "checkpoints" / "step-0000001")
    assert len(got["weights_sha256"]) == 64 and got["weights_sha256"] != initial["weights_sha256"]
    with pytest.raises(ValueError, match="names no run folder"):
        _measured_at(tmp_path, policy="run:trained")
    with pytest.raises(ValueError, match="policy 'run:trained': --init-from: .*empty: not a checkpoint"):
        _measured_at(tmp_path, policy="run:trained", run=str(tmp_path / "empty"))
