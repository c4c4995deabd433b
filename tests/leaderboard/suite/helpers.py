"""A tiny credit suite for the tests that run one, and broadcast's honest submission of a suite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from leaderboard.benchmark import benchmark_credit


def tiny(steps: int = 1, seeds=(0, 1)) -> dict:
    """A two-family suite small enough for a test: voting with 2 voters (self play, anchors measured) and Kuhn
    self-play scored against the Nash bot."""
    return {"schema": "marl_llm_suite", "id": "test-suite", "version": 1, "track": "credit", "tier": "micro",
            "description": "a test suite", "action_mode": "discrete",
            "train": {"model": "mlp", "mode": "generate", "steps": steps, "tasks_per_step": 2, "group_size": 2,
                      "seeds": list(seeds), "max_tokens": None},
            "score": {"last_fraction": 0.5, "eval_seeds": {"start": 2**40, "count": 4}, "anchor_episodes": 40},
            "families": [
                {"name": "team_size", "title": "Team size", "knob": "n_voters", "settings": [
                    {"name": "voting/plurality/n2", "env_id": "voting-v0", "env_version": 0,
                     "env_kwargs": {"n_voters": 2}, "knob": 2, "play": "self",
                     "normalize": {"zero": "random", "one": "clue_follower"}}]},
                {"name": "zero_sum", "title": "Zero-sum", "knob": None, "settings": [
                    {"name": "kuhn", "env_id": "kuhn_poker-v0", "env_version": 0, "env_kwargs": {}, "play": "versus",
                     "opponent": "kuhn_nash", "normalize": {"zero": "random", "one": "kuhn_nash"},
                     "eval_count": 6}]}]}


def broadcast_submission(root: Path, suite: dict) -> dict:
    """broadcast's runs of ``suite`` as benchmark-credit leaves them in ``root / "out"``, the anchors cache outside
    --out isolated in ``root / "cache"``: the suite file (``"suite"``), ``"out"``, benchmark-credit's ``"result"``,
    ``"cache"`` and the submission ``"folder"``."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MARL_LLM_CACHE", str(root / "cache"))
        path = root / f"{suite['id']}.json"
        path.write_text(json.dumps(suite))
        result = benchmark_credit("broadcast", protocol=str(path), baselines=[], out=root / "out", progress=False,
                                  fidelity=False)
    return {"suite": path, "out": root / "out", "result": result, "cache": root / "cache",
            "folder": result["out"] / "submissions" / "broadcast"}
