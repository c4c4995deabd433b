"""The policies ``python -m leaderboard fidelity`` measures at (``--policies``), each recorded so that another method
is measured at the identical policy:

* ``initial``: the untrained team (the MLP initialised from the training seed; an LLM's pretrained weights with
  fresh LoRA adapters, which start as the identity);
* ``broadcast``: the weights of a ``broadcast`` training run of the setting at the spec's ``checkpoints`` (the micro
  tier: half and all of the setting's budget, ``broadcast@50`` and ``broadcast@100``; the small tier: one early
  checkpoint), trained once into the spec's ``policy_dir`` (deterministic: the same run every time) and reused by
  every later command with that folder;
* ``reference``: the env's reference bot with a uniformly random legal move ``EPSILON`` of the time
  (:class:`~baselines.policies.scripted.MixedPolicy`, which reports the distribution it draws from);
* ``run:<label>`` (a spec's policy, not a ``--policies`` name): the weights of the training run in the spec's
  ``run`` folder (its latest complete checkpoint, or a checkpoint folder), loaded as ``--init-from`` loads them;
  ``<label>`` names the policy in the tables, so that specs of several seeds, each with its own run, pool into one
  row (``benchmarks/llm_team.py --fidelity``: each seed's shared solver phase).

The record of a policy: its kind, the weights' SHA-256 (:func:`leaderboard.players.weights_sha256`, as a player's
provenance records it), the training run's folder (``run:``: the checkpoint, its run's config hash and step), or the
bot.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Sequence

from baselines.outputs import writing
from baselines.policies.scripted import MixedPolicy
from baselines.train import TrainConfig, checkpoint, train
from leaderboard.players import weights_sha256
from leaderboard.suite import safe_name
from marl_llm_envs.reference import reference_policies

__all__ = ["EPSILON", "POLICIES", "Played", "policies_for", "policy_names", "train_config"]

POLICIES = ("initial", "broadcast", "reference")
EPSILON = 0.2        # the reference bot's policy: its move with probability 0.8, a uniformly random legal one else


def policy_names(policies: Sequence[str], checkpoints: Sequence[int]) -> list[str]:
    """``initial``, ``broadcast`` (``broadcast@K`` for every training step ``K`` in ``checkpoints``) and
    ``reference`` (``reference+0.2``) as spec names."""
    out = []
    for p in policies:
        if p == "initial":
            out.append(p)
        elif p == "broadcast":
            out += [f"broadcast@{k}" for k in checkpoints]
        elif p == "reference":
            out.append(f"reference+{EPSILON}")
        else:
            raise ValueError(f"--policies: {p!r} is not one of {list(POLICIES)}")
    return out


def train_config(spec: dict[str, Any], **over: Any) -> TrainConfig:
    """The training configuration of the spec's setting (what its training would run), with ``over`` replaced."""
    fields = {"env": spec["env_id"], "env_kwargs": dict(spec["env_kwargs"]), "action_mode": spec["action_mode"],
              "model": spec["model"], "mode": spec["mode"], "adapters": spec.get("adapters", "none"),
              "lr": float(spec.get("lr", 0.0)), "credit": "broadcast", "tasks_per_step": spec["tasks_per_step"],
              "group_size": spec["group_size"], "seed": spec["seed"], "partners": spec["partners"],
              "frozen": spec.get("frozen", ""), "tensorboard": False}
    return TrainConfig(**{**fields, **over})


def _weights_sha256(team) -> str:
    """The team's weights' SHA-256 (every learner's state, in order), as a player's provenance records it."""
    return weights_sha256(*(learner.module.state_dict() for learner in team.learners))


def _trained_weights(spec: dict[str, Any], team, step: int) -> str:
    """Load into ``team`` the weights of a ``broadcast`` training run of the spec's setting after ``step`` steps
    (one of the spec's ``checkpoints``; the run's seed is ``train_seed``, else the spec's seed), training it first
    unless a complete one is in ``policy_dir``; returns the run folder."""
    marks = sorted(int(k) for k in spec["checkpoints"])
    if step not in marks:
        raise ValueError(f"policy broadcast@{step}: the checkpoints are at steps {marks}")
    total, seed = marks[-1], int(spec.get("train_seed", spec["seed"]))
    every = marks[0] if all(k % marks[0] == 0 for k in marks) else 1
    run = Path(spec["policy_dir"]) / safe_name(spec["setting"]) / f"seed{seed}" / f"broadcast-{total}"
    want = run / "checkpoints" / f"step-{step:07d}"
    with writing(run, wait=True):       # another process training this run now: wait, then reuse it
        if any(not (run / "checkpoints" / f"step-{k:07d}").is_dir() for k in marks):
            for old in run.iterdir():
                shutil.rmtree(old) if old.is_dir() else old.unlink()
            train(train_config(spec, seed=seed, steps=total, out=str(run), save_every=every,
                               keep_checkpoints=total // every))
    _, tensors = checkpoint.load(want)
    for learner, state in zip(team.learners, tensors["learners"]):
        learner.load_state_dict(state["model"])
    return str(run)


def policies_for(spec: dict[str, Any], team) -> tuple[dict[str, Any], dict[str, Any]]:
    """The role -> policy map the spec's ``policy`` names, and its record (kind, weights' hash or bot, run)."""
    kind = spec["policy"]
    policies = dict(team.policies)
    if kind == "initial":
        return policies, {"kind": kind, "weights_sha256": _weights_sha256(team)}
    if kind.startswith("broadcast@"):
        run = _trained_weights(spec, team, int(kind.split("@", 1)[1]))
        return policies, {"kind": kind, "weights_sha256": _weights_sha256(team), "run": run}
    if kind.startswith("run:"):
        if not spec.get("run"):
            raise ValueError(f"policy {kind!r}: the spec names no run folder (\"run\")")
        try:
            source = checkpoint.init_weights(Path(spec["run"]), team.learners)
        except ValueError as e:
            raise ValueError(f"policy {kind!r}: {e}") from None
        return policies, {"kind": kind, "weights_sha256": _weights_sha256(team), **source}
    if kind.startswith("reference+"):
        bots = reference_policies(spec["env_id"])
        if not bots:
            raise ValueError(f"{spec['env_id']} has no reference bot")
        name, bot = next(iter(bots.items()))
        eps = float(kind.split("+", 1)[1])
        mixed = MixedPolicy(bot, eps, name=f"reference:{name}+{eps}")
        for role in team.trainable:
            policies[role] = mixed
        return policies, {"kind": kind, "bot": name, "epsilon": eps}
    raise ValueError(f"unknown policy {kind!r}")


class Played:
    """What a method's :meth:`attach` gets: the team, with the policies actually playing (a reference bot may
    stand in for the learners)."""
    def __init__(self, team, policies: dict[str, Any]) -> None:
        self.learners, self.trainable, self.policies = team.learners, team.trainable, policies
