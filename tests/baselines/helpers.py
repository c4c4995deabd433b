"""An episodes file for the tests of what reads one."""

from __future__ import annotations

import json

from baselines.episode import write_jsonl
from baselines.policies.scripted import RandomPolicy
from baselines.rollout import BranchSpec, RolloutEngine


def _one_episode_file(tmp_path):
    engine = RolloutEngine(RandomPolicy(seed=0), show_progress=False)
    path = tmp_path / "episodes.jsonl"
    write_jsonl(path, engine.run("think_solve-v0", 2, env_kwargs={"action_mode": "discrete"},
                                 branches=[BranchSpec("ablate", "thinker")]))
    head, *lines = path.read_text().splitlines()
    return path, head, [json.loads(line) for line in lines]
