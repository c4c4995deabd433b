"""Seeded MLP training runs whose moves, rewards and metrics must never change (see
tests/equivalence/test_speed_same_results.py).

``python tests/seeded_mlp_runs.py --write`` records them into ``tests/data/seeded_mlp_runs.json``, so the test pins
that speed changes leave results unchanged. Record again only for a change that is meant to change results, and say
so in its commit: the last recording followed ``training_seeds`` giving each base seed its own stream of tasks (the
runs use base seed 7, whose tasks moved).
The runs use one torch thread (as ``baselines.train`` does for MLP-only runs since then): the update's float sums
depend on the thread count, so a recording made with the machine's default would differ on another machine. MKL's
matrix products would depend on the CPU's SIMD kernels (AVX-512 or AVX2); the MLP policy asks MKL for its AVX2
ones on every CPU (``baselines.policies.mlp.same_floats_on_every_cpu``). torch's own kernels may still move in the
last bit, so the test compares torch's float32 outputs to a relative 1e-5 and everything else exactly.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "data" / "seeded_mlp_runs.json"

# (name, TrainConfig kwargs): discrete mode, MLP; one run with branches (coma's resamples replay recorded turns by
# observation digest), one per family of envs of the micro tier.
RUNS = [
    ("voting-v0 broadcast", dict(env="voting-v0", credit="broadcast", ppo_epochs=2)),
    ("voting-v0 n_voters=16 rae", dict(env="voting-v0", env_kwargs={"n_voters": 16}, credit="rae")),
    ("mini_hanabi-v1 broadcast", dict(env="mini_hanabi-v1", credit="broadcast", ppo_epochs=2)),
    ("kuhn_poker-v0 coma", dict(env="kuhn_poker-v0", credit="coma", credit_options={"k": 2})),
]


def record(name: str, kwargs: dict) -> dict:
    """Train 3 steps and return every main-episode action and reward, every branch's, and metrics.jsonl's reward,
    advantage and loss columns."""
    import torch

    from baselines.train import TrainConfig, train
    from baselines.train import loop

    episodes_seen: list = []
    original = loop.RolloutEngine.run

    def run(self, *args, **kw):
        out = original(self, *args, **kw)
        episodes_seen.append(out)
        return out

    loop.RolloutEngine.run = run
    threads = torch.get_num_threads()
    torch.set_num_threads(1)   # float sums depend on the thread count: one thread makes the recording portable
    try:
        with tempfile.TemporaryDirectory() as out:
            train(TrainConfig(model="mlp", action_mode="discrete", steps=3, tasks_per_step=4, group_size=2, seed=7,
                              out=out, progress=False, tensorboard=False, **kwargs))
            rows = [json.loads(line) for line in (Path(out) / "metrics.jsonl").read_text().splitlines()]
    finally:
        loop.RolloutEngine.run = original
        torch.set_num_threads(threads)
    steps = []
    for episodes in episodes_seen:
        steps.append([{
            "seed": e.seed,
            "actions": [t.action for t in e.turns],
            "agents": [t.agent for t in e.turns],
            "turn_rewards": [t.reward for t in e.turns],
            "logprobs": [t.logprobs for t in e.turns],
            "team_rewards": e.team_rewards,
            "transcript_actions": e.transcript["actions"],
            "branches": [{"kind": b.kind, "agent": b.agent, "turn_index": b.turn_index,
                          "actions": [t.action for t in b.turns], "replayed": [t.replayed for t in b.turns],
                          "team_rewards": b.team_rewards} for b in e.branches],
        } for e in episodes])
    keep = ("reward/", "adv/", "win_rate/", "invalid_rate", "grad_norm", "clip_frac", "entropy", "step", "episodes")
    metrics = [{k: v for k, v in r.items() if k.startswith(keep)} for r in rows]
    return {"name": name, "config": kwargs, "steps": steps, "metrics": metrics}


def main() -> None:
    if "--write" not in sys.argv:
        raise SystemExit("usage: python tests/seeded_mlp_runs.py --write")
    data = [record(name, kw) for name, kw in RUNS]
    FIXTURE.write_text(json.dumps(data, indent=0, sort_keys=True) + "\n")
    print(f"wrote {FIXTURE} ({FIXTURE.stat().st_size} bytes)")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
