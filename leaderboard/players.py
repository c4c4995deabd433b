"""Who a submission is: a player spec becomes role -> policy for one env, with its provenance.

Specs (``python -m leaderboard evaluate --player SPEC``):

* ``random``: a uniformly random legal move (:func:`marl_llm_envs.scripted.random_legal`);
* ``reference`` or ``reference:NAME``: the env's reference policy (the first one, or the one named), from
  :func:`marl_llm_envs.reference.reference_policies`;
* ``hf:MODEL`` or ``hf:MODEL:MODE``: an LLM through :class:`baselines.policies.hf.TransformersPolicy`, as loaded by
  :func:`baselines.models.load_model` (``tiny``, ``smollm2-135m``, a local folder), in ``choice`` mode (default: it
  scores each legal move, so a small model makes no format error) or ``generate`` mode; every role plays it;
* ``checkpoint:PATH``: a trainer run (``PATH`` holds ``config.json`` and ``checkpoints/``; its latest checkpoint) or
  one checkpoint folder (``PATH/checkpoints/step-N``). The team is rebuilt with
  :func:`baselines.train.learners.build_team` from the run's config and the saved weights are loaded.

Provenance: ``model_id``, ``weights_sha256`` (of the weight tensors, in key order; for a scripted policy, of its
source file: the code is its weights), ``decoding`` (each role's :meth:`Policy.settings`), and for checkpoints the
run's ``config_hash``, credit method and step.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from baselines.credit import make_credit
from baselines.policies.base import Policy
from baselines.policies.hf import TransformersPolicy
from baselines.policies.scripted import ScriptedPolicy
from baselines.train import checkpoint
from baselines.train.config import OUTPUT_FIELDS, read_run_config
from baselines.train.learners import build_team
from marl_llm_envs import make
from marl_llm_envs.reference import reference_policies
from marl_llm_envs.scripted import random_legal

__all__ = ["Player", "SeededMoves", "credit_sha256", "decision_stream", "load_player", "opponent_policy",
           "weights_sha256"]


@dataclass
class Player:
    spec: str
    env_id: str
    policies: dict[str, Policy]              # role -> the policy that plays it
    provenance: dict[str, Any] = field(default_factory=dict)
    run_dir: Path | None = None              # checkpoints: the trainer run (config.json, metrics.jsonl)


def weights_sha256(*states: dict[str, Any]) -> str:
    """sha256 over the tensors of one or more state dicts, each in key order (bfloat16 read as float32)."""
    h = hashlib.sha256()
    for state in states:
        for key in sorted(state):
            tensor = state[key].detach().cpu().contiguous()
            if tensor.dtype == torch.bfloat16:
                tensor = tensor.float()
            h.update(key.encode())
            h.update(tensor.numpy().tobytes())
    return h.hexdigest()


def _source_sha256(fn) -> str:
    return hashlib.sha256(Path(inspect.getsourcefile(fn)).read_bytes()).hexdigest()


def credit_sha256(credit: str) -> str | None:
    """SHA-256 of the source file of the credit method ``credit`` (a registered name or ``package.module:Class``)
    as this machine has it; None where it has no source file or does not load here."""
    try:
        return _source_sha256(type(make_credit(credit)))
    except Exception:  # noqa: BLE001 - a method that does not load here has no source to hash
        return None


def _scripted(env_id: str, name: str, seed: int):
    if name == "random":
        return ScriptedPolicy(random_legal, seed=seed, name="random"), _source_sha256(random_legal)
    bots = reference_policies(env_id)
    if name not in bots:
        raise ValueError(f"{env_id} has no reference policy {name!r}; it has {sorted(bots) or 'none'} (and random)")
    fn = bots[name]
    return ScriptedPolicy(fn, seed=seed, name=f"reference:{name}"), _source_sha256(fn)


def opponent_policy(env_id: str, name: str, seed: int = 0):
    """The protocol's opponent ``name`` (a reference policy or ``random``) as a Policy."""
    return _scripted(env_id, name, seed)[0]


def decision_stream(*parts: Any) -> int:
    """A 63-bit stream id from named parts (the protocol key, the task, the run): the SHA-256 of their JSON, so two
    different tasks or runs never share a stream."""
    text = json.dumps([str(p) for p in parts], separators=(",", ":"))
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big") >> 1


def decision_seed(stream: int, key: tuple[int, ...], agent: str = "") -> int:
    """The seed of one decision: ``(stream, Request.key, agent)``, i.e. (episode seed, sample, step) and the seat
    that decides, within a stream. It does not depend on which policy decides, so a policy playing itself in both
    seats of a duplicate pair draws the same numbers in each seat (common random numbers: the pair cancels)."""
    seat = int.from_bytes(hashlib.sha256(agent.encode("utf-8")).digest()[:4], "big")
    state = np.random.SeedSequence([int(stream), *[int(k) % 2**63 for k in key], seat]).generate_state(2, np.uint32)
    return (int(state[0]) << 32 | int(state[1])) >> 1


class SeededMoves(Policy):
    """A policy whose every decision is seeded from ``(stream, Request.key)`` alone (protocols with
    ``seeded_moves``): the call seed the rollout engine passes is ignored and each request is decided in its own
    call, so a move depends on the episode seed, the step and the stream, never on how requests were batched.
    ``validate`` re-derives the protocol's opponents and partners move by move this way, and ``--reproduce`` the
    player's own moves."""

    def __init__(self, policy, stream: int) -> None:
        self.policy = policy
        self.stream = int(stream)

    @property
    def name(self) -> str:
        return self.policy.name

    @property
    def version(self) -> int:
        return self.policy.version

    @property
    def observes(self) -> frozenset[str]:
        return self.policy.observes

    def settings(self) -> dict[str, Any]:
        return self.policy.settings()

    def generate(self, requests, seed: int | None = None) -> list:
        if any(not r.key for r in requests):
            raise ValueError("seeded moves need Request.key (the rollout engine sets it)")
        out = []
        for r in requests:
            out += self.policy.generate([r], seed=decision_seed(self.stream, r.key, r.agent))
        return out

    def close(self) -> None:
        self.policy.close()


def load_player(spec: str, env_id: str, roles: list[str], action_mode: str, greedy: bool = False) -> Player:
    """Build the player ``spec`` for ``env_id`` (see the module docstring); ``greedy``: temperature 0 where the
    policy samples (MLPs)."""
    if spec == "random" or spec == "reference" or spec.startswith("reference:"):
        name = "random" if spec == "random" else spec.partition(":")[2]
        if spec == "reference":
            bots = reference_policies(env_id)
            if not bots:
                raise ValueError(f"{env_id} has no reference policy; give another --player for it")
            name = next(iter(bots))
        policy, digest = _scripted(env_id, name, seed=0)
        return Player(spec, env_id, {r: policy for r in roles},
                      {"spec": spec, "model_id": policy.name, "weights_sha256": digest,
                       "decoding": {r: policy.settings() for r in roles}})
    if spec.startswith("checkpoint:"):
        return _checkpoint_player(spec, Path(spec.partition(":")[2]), env_id, roles, action_mode, greedy)
    if spec.startswith("hf:"):
        return _hf_player(spec, env_id, roles, greedy)
    raise ValueError(f"player spec {spec!r} is not random, reference, reference:NAME, hf:MODEL[:MODE] or "
                     "checkpoint:PATH")


def _hf_player(spec: str, env_id: str, roles: list[str], greedy: bool) -> Player:
    name, _, mode = spec[len("hf:"):].partition(":")
    mode = mode or "choice"
    if not name or mode not in ("choice", "generate"):
        raise ValueError(f"player spec {spec!r} is not hf:MODEL or hf:MODEL:choice / hf:MODEL:generate")
    policy = TransformersPolicy.from_name(name, mode=mode, temperature=0.0 if greedy else 1.0)
    return Player(spec, env_id, {r: policy for r in roles},
                  {"spec": spec, "model_id": name, "weights_sha256": weights_sha256(policy.model.state_dict()),
                   "decoding": {r: policy.settings() for r in roles}})


def _checkpoint_player(spec: str, path: Path, env_id: str, roles: list[str], action_mode: str,
                       greedy: bool) -> Player:
    if (path / "meta.json").is_file():
        step_dir, run_dir = path, path.parent.parent
    else:
        run_dir = path
        step_dir = checkpoint.latest(path / "checkpoints")
        if step_dir is None:
            why = checkpoint.why_none(path / "checkpoints", f"give checkpoint:{path / 'checkpoints'}/<one of them>")
            raise ValueError(f"{spec}: no checkpoint in {path / 'checkpoints'}{why}; a player is a trainer run "
                             f"folder, or one checkpoints/step-N folder")
    try:
        run = read_run_config(run_dir)      # the trainer writes config.json next to checkpoints/
    except ValueError as e:
        raise ValueError(f"{spec}: {e}") from None
    cfg, resolved_mode, config_hash = run.config, run.resolved.action_mode, run.resolved.config_hash
    if cfg.env != env_id:
        raise ValueError(f"{spec}: the run was trained on {cfg.env}, not {env_id}; give a player for {env_id} with "
                         f"--player {env_id}=SPEC")
    if resolved_mode != action_mode:
        raise ValueError(f"{spec}: the run plays {env_id} in {resolved_mode!r} mode, the protocol in {action_mode!r}")
    try:
        env = make(env_id, **{**cfg.env_kwargs, "action_mode": action_mode})
    except TypeError as e:              # a kwarg the env does not take (make names the close match)
        raise ValueError(f"{spec}: the run's env_kwargs: {e}") from None
    team = build_team(cfg, env, roles)
    meta, tensors = checkpoint.load(step_dir)
    if len(tensors["learners"]) != len(team.learners):
        raise ValueError(f"{spec}: the checkpoint holds {len(tensors['learners'])} learners, the config builds "
                         f"{len(team.learners)}")
    for learner, state in zip(team.learners, tensors["learners"]):
        try:
            learner.load_state_dict(state["model"])
        except (RuntimeError, KeyError, TypeError) as e:       # torch's own error for weights that do not fit
            raise ValueError(f"{spec}: {step_dir} does not fit the model its config builds ({type(e).__name__}: "
                             f"{str(e)[:300]})") from None
        learner.module.eval()
    policies = dict(team.policies)
    if greedy:
        for p in policies.values():
            if hasattr(p, "temperature"):
                p.temperature = 0.0
    for p in policies.values():
        p.version = int(meta["step"])
    return Player(spec, env_id, policies, {
        "spec": spec, "model_id": cfg.model,
        "weights_sha256": weights_sha256(*(state["model"] for state in tensors["learners"])),
        "decoding": {r: p.settings() for r, p in sorted(policies.items())},
        "config_hash": config_hash, "credit": cfg.credit, "credit_sha256": credit_sha256(cfg.credit),
        "train_seed": cfg.seed, "step": int(meta["step"]),
        "train_config": {k: v for k, v in run.fields.items() if k not in OUTPUT_FIELDS},
    }, run_dir)
