"""The rollout with a credit method's counterfactual branches, alone: CPU seconds of ``RolloutEngine.run`` and a hash
of everything it wrote, to compare two checkouts (speed, and that the episodes are the same).

    PYTHONPATH=$PWD python benchmarks/branch_throughput.py --env team_umbrella-v0 --env-kwargs '{"delay": 30}' \\
        --credit coma --tasks 3 --group-size 4 --steps 2

An untrained MLP (seed 0, one torch thread) plays ``--steps`` calls of ``run`` with the training seeds of steps
0, 1, ...; the hash covers every episode (``Episode.to_json`` with the wall times zeroed: turns, branches and their
turns, transcripts) and the credit method's advantages. Prints one JSON line: ``cpu_s`` (the ``run`` calls only),
``hash`` and ``branch_turns``. The hashes in RESULTS.md ("Counterfactual branches") come from this script.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--env", default="team_umbrella-v0")
    p.add_argument("--env-kwargs", default='{"delay": 30}', help="JSON dict (action_mode is discrete)")
    p.add_argument("--credit", default="coma", help="the credit method whose branches are played")
    p.add_argument("--tasks", type=int, default=3)
    p.add_argument("--group-size", type=int, default=4)
    p.add_argument("--steps", type=int, default=2)
    args = p.parse_args(argv)

    import torch

    torch.set_num_threads(1)
    from baselines.credit import make_credit
    from baselines.policies.mlp import MLPPolicy
    from baselines.rollout import RolloutEngine, training_seeds
    from marl_llm_envs import make

    kwargs = {"action_mode": "discrete", **json.loads(args.env_kwargs)}
    method = make_credit(args.credit)
    policy = MLPPolicy.for_env(make(args.env, **kwargs), seed=0, temperature=1.0)
    engine = RolloutEngine(policy, show_progress=False, record_state=method.needs_state)
    digest = hashlib.sha1()
    cpu, branch_turns = 0.0, 0
    for step in range(args.steps):
        t0 = time.process_time()
        episodes = engine.run(args.env, args.tasks, args.group_size, seed=step, env_kwargs=kwargs,
                              branches=method.branches(args.env), seeds=training_seeds(0, step, args.tasks),
                              run_id=f"step-{step}")
        cpu += time.process_time() - t0
        for e in episodes:
            e.wall_time_s = 0.0
            for b in e.branches:
                b.wall_time_s = 0.0
                branch_turns += len(b.turns)
            digest.update(e.to_json().encode())
        digest.update(json.dumps(method.advantages(episodes)).encode())
    out = {"env": args.env, "credit": args.credit, "cpu_s": round(cpu, 3), "hash": digest.hexdigest()[:16],
           "branch_turns": branch_turns}
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
