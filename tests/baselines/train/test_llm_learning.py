"""LLM teams learn on a CPU: the random-init ``tiny`` model in choice mode, with the trainer's defaults for it.

* The clue task's solver (``think_solve-v0`` discrete, ``thinker_clue_accuracy=0.9``, the scripted ``clue_relay``
  thinker): its team reward rises from chance (0.25) to 0.6 or more (the optimum is 0.9);
* a Kuhn poker player against a uniformly random partner plays better at the end than in its first 10% of steps.

Both are runs of ``python -m baselines.train ... --model tiny --mode choice``, seeded, on one
torch thread (the same trajectory on every machine with the same torch; the run is a few hundred small forward passes,
where more threads only add synchronisation)."""

from __future__ import annotations

import json

import numpy as np
import torch
from scipy.stats import ttest_ind

from baselines.train import TrainConfig, train
from tests.baselines.train.helpers import _train_on_one_thread


def _run(tmp_path, **kw) -> list[dict]:
    cfg = TrainConfig(model="tiny", mode="choice", out=str(tmp_path / "run"), progress=False, tensorboard=False,
                      save_every=10**6, **kw)
    _train_on_one_thread(cfg)
    return [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]


def test_the_tiny_solver_learns_to_follow_the_scripted_thinkers_hint(tmp_path):
    rows = _run(tmp_path, env="think_solve-v0", env_kwargs={"thinker_clue_accuracy": 0.9}, action_mode="discrete",
                partners="thinker=reference", steps=120)
    reward = np.array([r["reward/team/team"] for r in rows])
    assert reward[:10].mean() < 0.4                  # chance is 0.25: it starts out not following the hint
    assert rows[0]["policy_entropy/solver"] > 1.0    # near ln 4 = 1.386: spread over the four labels
    assert reward[-20:].mean() >= 0.6, reward.round(2).tolist()


def test_a_tiny_kuhn_player_beats_a_random_partner_by_more_than_in_its_first_tenth_of_steps(tmp_path):
    steps = 80
    rows = _run(tmp_path, env="kuhn_poker-v0", partners="player_1=random", steps=steps, tasks_per_step=16)
    reward = np.array([r["reward/role/player_0"] for r in rows])
    first, last = reward[: steps // 10], reward[-steps // 5:]
    # Welch's t-test on the step means (each the mean of 64 hands): the last fifth is above the first tenth
    test = ttest_ind(last, first, equal_var=False, alternative="greater")
    assert test.pvalue < 0.01, (first.round(2).tolist(), last.round(2).tolist())


def test_an_llm_run_on_the_cpu_uses_one_torch_thread_unless_omp_num_threads_asks_for_more(tmp_path, monkeypatch):
    # On a busy machine two threads made SmolLM2's update 8-17x slower than one (benchmarks/RESULTS.md); the
    # caller's thread count comes back afterwards.
    from baselines.train import loop

    seen = []
    monkeypatch.setattr(loop, "_train", lambda cfg, freeze=False: seen.append(torch.get_num_threads()) or {})
    cfg = TrainConfig(model="tiny", mode="choice", env="kuhn_poker-v0", out=str(tmp_path / "run"), progress=False)
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
        train(cfg)
        assert torch.get_num_threads() == 2
        monkeypatch.setenv("OMP_NUM_THREADS", "2")
        train(cfg)
    finally:
        torch.set_num_threads(threads)
    assert seen == [1, 2]
