"""What the random-init ``tiny`` model learns on the bare-label clue task: the four prompts, not hint-following.

Trained as the README's command trains it (solver only, the scripted ``clue_relay`` thinker), it answers the hinted
label of the trained labels A-D with high probability, but on the same prompts with the labels renamed to letters it
never saw there (W-Z), its P(answer = hinted label) is at chance, 1/4: it memorised four prompt-to-label pairs
(issue 43). The shortcut-free task (``clue_pool="words"``) is what tests hint-following."""

from __future__ import annotations

import pytest

from baselines.policies.base import request_for
from baselines.train import TrainConfig, checkpoint
from baselines.train.learners import build_team
from marl_llm_envs import make
from tests.baselines.train.helpers import _train_on_one_thread

KWARGS = {"thinker_clue_accuracy": 0.9}
RENAME = dict(zip("ABCD", "WXYZ"))


def _renamed(request):
    text = request.text
    for old, new in RENAME.items():
        text = text.replace(f"({old})", f"({new})").replace(f"[{old}]", f"[{new}]")
    legal = tuple(f"[{RENAME[a[1]]}]" for a in request.legal_actions)
    return type(request)(request.env_id, request.agent, request.role, text, legal, key=request.key)


def p_follow(policy, seeds, renamed: bool) -> float:
    """The solver's mean probability of answering the hinted label, over ``seeds`` and the four hints."""
    env = make("think_solve-v0", action_mode="discrete", **KWARGS)
    requests, hinted = [], []
    for seed in seeds:
        for k in range(4):
            env.reset(seed=seed)
            env.step(1 + k)                       # the hint "I think the answer is (label k)"
            r = request_for(env, "solver", policy.observes)
            requests.append(_renamed(r) if renamed else r)
            hinted.append(k)
    gens = policy.generate(requests, seed=0)
    return sum(g.choice.probs[k] for g, k in zip(gens, hinted)) / len(gens)


@pytest.mark.slow        # about 4 minutes on a busy 2-core box (the README's 150-step run)
def test_trained_tiny_follows_the_trained_labels_and_is_at_chance_on_renamed_ones(tmp_path):
    cfg = TrainConfig(env="think_solve-v0", env_kwargs=KWARGS, action_mode="discrete", model="tiny", mode="choice",
                      partners="thinker=reference", steps=150, seed=0, out=str(tmp_path / "run"), progress=False,
                      tensorboard=False, save_every=10**6)
    _train_on_one_thread(cfg)
    env = make("think_solve-v0", action_mode="discrete", **KWARGS)
    team = build_team(cfg, env, ["solver", "thinker"])
    _, tensors = checkpoint.load(checkpoint.latest(tmp_path / "run" / "checkpoints"))
    team.learners[0].load_state_dict(tensors["learners"][0]["model"])
    solver = team.policies["solver"]
    seeds = range(10_000, 10_004)     # the solver prompt depends on the hint only: 4 prompts in all
    trained, renamed = p_follow(solver, seeds, False), p_follow(solver, seeds, True)
    assert trained > 0.8, trained
    assert abs(renamed - 0.25) < 0.08, renamed
