"""Step-0 entropy of choice mode under each ``choice_scoring`` (no training: one rollout batch of 8 tasks x 4).

Kuhn poker player_0 against a random player_1, and think_solve-v0's clue task (discrete, clue accuracy 0.9) solver
with the reference thinker, on bare labels and on the shortcut-free ``clue_pool="words"``; prints, per model and scoring, the mean entropy (nats) of the trained seat's choice
distribution and the mean reward. ``python benchmarks/choice_entropy.py tiny smollm2-135m``
"""
import sys
import time

import numpy as np

from baselines.models import load_model
from baselines.policies.hf import TransformersPolicy
from baselines.policies.scripted import RandomPolicy
from baselines.rollout import RolloutEngine
from marl_llm_envs.reference import reference_policies
from baselines.policies.scripted import ScriptedPolicy
for name in sys.argv[1:]:
    model, tok = load_model(name)
    for sc in ("label", "mean", "sum"):
        pol = TransformersPolicy(model, tok, mode="choice", choice_scoring=sc)
        out = []
        relay = ScriptedPolicy(next(iter(reference_policies("think_solve-v0").values())), seed=0)
        setups = (("kuhn_poker-v0", {}, {"player_0": pol, "player_1": RandomPolicy(seed=0)}, "player_0"),
                  ("think_solve-v0", {"thinker_clue_accuracy": 0.9, "action_mode": "discrete"},
                   {"thinker": relay, "solver": pol}, "solver"),
                  ("think_solve-v0", {"thinker_clue_accuracy": 0.9, "action_mode": "discrete", "clue_pool": "words"},
                   {"thinker": relay, "solver": pol}, "solver"))
        for env, kw, pols, role in setups:
            t = time.perf_counter()
            eps = RolloutEngine(pols, show_progress=False).run(env, 8, 4, seed=0, env_kwargs=kw)
            H = []
            for e in eps:
                for tr in e.turns:
                    if tr.role == role:
                        p = np.asarray(tr.choice.probs)
                        p = p[p > 0]
                        H.append(float(-(p * np.log(p)).sum()))
            rew = np.mean([e.rewards["player_0"] if env == "kuhn_poker-v0" else list(e.team_rewards.values())[0]
                           for e in eps])
            out.append(f"{env}{'/words' if 'clue_pool' in kw else ''}: H0={np.mean(H):.4f} reward={rew:+.3f} {time.perf_counter()-t:.0f}s")
        print(name, sc, " | ".join(out), flush=True)
