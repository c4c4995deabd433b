"""What is trained: a *learner* owns one set of weights (a model, its LoRA adapters, or an MLP), the roles it plays,
its optimizer, and scores recorded decisions again (differentiably) for the update.

Which weights, as a choice and not a fork of the code (:func:`build_team`):

* one shared model for every role (``--model tiny``; SPIRAL, MARSHAL);
* one LoRA adapter per role on a shared base (``--adapters per_role``; peft, the batch split by role) or one shared
  adapter (``--adapters shared``), of rank ``--lora-r`` and scale ``--lora-alpha``, on every linear layer of every
  transformer layer, or of the top K layers only (``--lora-layers K``: the update's backward stops there,
  :func:`top_layers`);
* separate models per role, possibly of different sizes (``--model thinker=smollm2-135m,solver=tiny``);
* frozen roles (``--frozen solver``: played, never updated) and scripted partners (``--partners
  player_1=reference``), for the whole run or, with ``--partners player_1=reference:N``, for its first N steps only
  (a curriculum: the role's own model plays it and is trained from step N on; :class:`Team`);
* a small MLP on the numeric observation (``--model mlp``, discrete mode): the micro tier.

Who plays the roles: the learner's own model (``--backend hf``, the default), or with ``--backend vllm`` a vLLM
engine started on a copy of its initial weights, sent the learner's weights (or its LoRA adapters, one request per
role) before the first rollout and after every update (:meth:`Learner.sync_rollouts`,
:mod:`baselines.policies.weight_sync`); the update always scores with the learner's own model.

Scoring a decision again. Free generation: the completion tokens' log-probabilities under ``softmax(logits / T)``
(:func:`~baselines.policies.hf.sequence_logprobs`), the distribution the rollout sampled from (a trainer refuses
``--top-p`` below 1: :meth:`~baselines.train.config.TrainConfig.check`), and the entropy of that distribution at
each completion token (the entropy bonus). Choice mode: ``log softmax(score / T)[chosen]`` over the legal moves,
with the score of the scoring the decision was sampled with (``"label"``, ``"mean"`` or ``"sum"``, recorded in the
turn's ``choice.scoring``; see :mod:`baselines.policies.hf`), one "token" per decision. MLP:
``log softmax(logits / T)`` over the legal actions.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import torch
from torch import nn

from baselines.models import load_model
from baselines.outputs import safe_name
from baselines.policies.base import Choice, Generation, Policy, Request
from baselines.policies.hf import TransformersPolicy, sequence_logprobs
from baselines.policies.mlp import MLPPolicy
from baselines.policies.scripted import RandomPolicy, ScriptedPolicy
from baselines.policies.vllm import VLLMPolicy
from baselines.train.checkpoint import init_weights
from baselines.train.config import LearnerSettings
from marl_llm_envs.reference import reference_policies

__all__ = ["Learner", "Sample", "build_team"]

# The trainer's data-parallel wrapping: (module, optimizer) -> (the module to run forward passes through, optimizer)
Prepare = Callable[[nn.Module, torch.optim.Optimizer], tuple[nn.Module, torch.optim.Optimizer]]


@dataclass
class Sample:
    """One trained decision: a turn of a main episode, with its advantage per scored token."""

    role: str
    kind: str                      # "generate", "choice" or "mlp"
    prompt_ids: list[int]
    completion_ids: list[int]
    sampler_lp: list[float]        # the behaviour log-probabilities recorded at sampling time (one per scored token)
    adv: list[float]               # one per scored token
    legal: list[str] = field(default_factory=list)
    weight: float = 0.0            # aggregation weight of each of its tokens (see baselines.train.loss)
    choice: Choice | None = None   # the turn's recorded choice (choice and MLP decisions): index, scoring, log-prob

    @property
    def n(self) -> int:
        return len(self.sampler_lp)

    @property
    def cost(self) -> int:
        """Tokens one forward pass over this sample reads (for micro-batching by a token budget)."""
        if self.kind == "choice":   # the prompt once, then each move (a few tokens) on its KV cache
            return len(self.prompt_ids) + 8 * max(1, len(self.legal))
        if self.kind == "mlp":
            return 1
        return len(self.prompt_ids) + len(self.completion_ids)


def use_adapter(model, adapter: str) -> bool:
    """Make ``adapter`` the active one of a peft model; returns whether it had to switch. ``set_adapter`` walks every
    module of the model (64 ms on SmolLM2-135M's 30 layers), so it runs only when another adapter is active."""
    if list(getattr(model, "active_adapters", ())) == [adapter]:
        return False
    model.set_adapter(adapter)
    return True


class AdapterPolicy(Policy):
    """A policy that switches the shared peft model to one adapter before generating."""

    def __init__(self, inner: Policy, model, adapter: str) -> None:
        self.inner, self.model, self.adapter = inner, model, adapter
        self.name = f"{inner.name}+{adapter}"
        self.observes = inner.observes     # it reads what the policy it wraps reads

    def generate(self, requests: Sequence[Request], seed: int | None = None) -> list[Generation]:
        use_adapter(self.model, self.adapter)
        return self.inner.generate(requests, seed)

    def settings(self) -> dict[str, Any]:
        return {**self.inner.settings(), "name": self.name, "version": self.version, "adapter": self.adapter}


class Learner:
    """One set of trained (or frozen) weights and the roles that play with them. Made by :func:`build_team` only,
    which also gives a learner with trained roles its optimizer and forward module (:meth:`set_up_training`)."""

    foreach: bool | None = None    # AdamW's ``foreach``: None = torch's choice (the per-tensor loop on the CPU)

    def __init__(self, module: nn.Module, policies: dict[str, Policy], trainable: list[str], name: str,
                 model_name: str) -> None:
        self.module, self.policies, self.trainable, self.name = module, policies, trainable, name
        self.model_name = model_name               # the --model name: TrainConfig.learner_settings reads it
        self.forward_module: nn.Module = module    # what the update's forward passes run (DDP-wrapped, compiled)
        self.optimizer: torch.optim.Optimizer | None = None     # None: the learner only plays
        self.settings: LearnerSettings | None = None    # the update's hyperparameters (set_up_training); None: plays
        self.reference: Any = None

    @property
    def roles(self) -> list[str]:
        """The roles that play with these weights."""
        return list(self.policies)

    def parameters(self) -> list[nn.Parameter]:
        return [p for p in self.module.parameters() if p.requires_grad]

    def clip_groups(self) -> list[list[nn.Parameter]]:
        """The trained parameters, one list per set of weights whose gradient norm is clipped on its own: one list
        (every role of the learner plays the same weights) unless a subclass holds several roles' separate weights."""
        return [self.parameters()]

    def set_up_training(self, settings: LearnerSettings, prepare: Prepare, compile: bool = False) -> None:
        """Keep ``settings`` (the update's hyperparameters, resolved for this learner) and make the optimizer (AdamW
        over :meth:`parameters`) and the module the update's forward passes run through: ``prepare(module,
        optimizer)`` wraps both for data parallel (the identity on one process), and ``compile`` runs
        ``torch.compile`` on the wrapped module."""
        self.settings = settings
        optimizer = torch.optim.AdamW(self.parameters(), lr=settings.lr, weight_decay=settings.weight_decay,
                                      foreach=self.foreach)
        module, self.optimizer = prepare(self.module, optimizer)
        self.forward_module = torch.compile(module) if compile else module

    def sync_rollouts(self, version: int) -> None:
        """Send the current weights to the engine that plays this learner's roles, as version ``version`` (after
        each update, and before the first rollout). Nothing to do when the learner's own model plays."""

    def set_version(self, version: int) -> None:
        for p in self.policies.values():
            p.version = version
            if isinstance(p, AdapterPolicy):
                p.inner.version = version

    def micro_batches(self, samples: list[Sample], budget: int) -> list[list[Sample]]:
        """``samples`` cut into micro-batches of at most ``budget`` tokens of forward work (a sample larger than the
        budget goes alone), in order."""
        return pack(samples, [s.cost for s in samples], budget)

    def logprobs(self, samples: list[Sample]) -> tuple[torch.Tensor, torch.Tensor | None]:
        """New log-probabilities of every scored token of ``samples`` (flat, in order) and the policy's entropy at
        each (over the legal moves of a choice or MLP decision; over the vocabulary, under ``softmax(logits / T)``,
        at each token of free text), or ``None`` for the entropies of a learner that cannot compute them."""
        raise NotImplementedError

    def ref_logprobs(self, samples: list[Sample]) -> torch.Tensor:
        """The same under the frozen initial policy (for the KL term)."""
        raise NotImplementedError

    def keep_reference(self) -> None:
        """Freeze a copy of the current weights as the KL term's reference (:meth:`ref_logprobs`); the trainer
        calls it when the team is built, before any update or ``--resume``, so the reference is the initial policy.
        Its weights are in the checkpoint (:meth:`reference_state`) and a resumed run reads them back."""
        self.reference = copy.deepcopy(self.module).requires_grad_(False)

    def reference_state(self) -> dict[str, torch.Tensor] | None:
        """The KL reference's weights for the checkpoint, or ``None`` when the learner keeps none."""
        if self.reference is None:
            return None
        return {k: v.detach().cpu() for k, v in self.reference.state_dict().items()}

    def load_reference_state(self, state: dict[str, torch.Tensor]) -> None:
        self.reference.load_state_dict(state)

    def _no_reference(self) -> RuntimeError:
        return RuntimeError(f"{self.name}: no KL reference was kept (keep_reference() is called when the team is "
                            "built for a run with --kl-coef > 0)")

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {k: v.detach().cpu() for k, v in self.module.state_dict().items()}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        self.module.load_state_dict(state)


def pack(items: list, costs: list[int], budget: int) -> list[list]:
    """Greedy in-order packing of ``items`` into runs whose ``costs`` add up to at most ``budget`` (an item over the
    budget goes alone)."""
    batches: list[list] = []
    cur: list = []
    used = 0
    for item, c in zip(items, costs):
        if cur and used + c > budget:
            batches.append(cur)
            cur, used = [], 0
        cur.append(item)
        used += c
    if cur:
        batches.append(cur)
    return batches


def _adapter_name(parameter: str) -> str:
    """The peft adapter a LoRA parameter belongs to: the name after its ``lora_A``/``lora_B``/... component
    (``...q_proj.lora_A.thinker.weight`` -> ``thinker``); ``""`` for a parameter of no adapter."""
    parts = parameter.split(".")
    for k, part in enumerate(parts[:-1]):
        if part.startswith("lora_"):
            return parts[k + 1]
    return ""


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


class MLPLearner(Learner):
    foreach = True    # AdamW's multi-tensor step: the same floats as the per-tensor loop, with fewer Python calls

    def __init__(self, roles, policy, trainable, name) -> None:
        super().__init__(policy.module, {r: policy for r in roles}, trainable, name, "mlp")
        self.policy = policy
        self._parameters: list[nn.Parameter] | None = None

    def logprobs(self, samples):
        return self._score(self.policy, samples)

    def parameters(self):
        if self._parameters is None:       # an MLP's parameters and their requires_grad never change
            self._parameters = super().parameters()
        return self._parameters

    def ref_logprobs(self, samples):
        if self.reference is None:
            raise self._no_reference()
        with torch.no_grad():
            return self._score(self.reference, samples)[0]

    def keep_reference(self):
        self.reference = copy.copy(self.policy)       # the policy's settings, with a frozen copy of its weights
        self.reference.module = copy.deepcopy(self.policy.module).requires_grad_(False)

    def reference_state(self):
        if self.reference is None:
            return None
        return {k: v.detach().cpu() for k, v in self.reference.module.state_dict().items()}

    def load_reference_state(self, state):
        self.reference.module.load_state_dict(state)

    def _score(self, policy, samples):
        if policy is self.policy and self.forward_module is not self.module:
            policy = copy.copy(policy)
            policy.module = self.forward_module
        return policy.logprobs([s.choice.inputs for s in samples], [s.choice.index for s in samples])


class LLMLearner(Learner):
    def __init__(self, model, tokenizer, policies, trainable, name, model_name: str, adapters: str, temperature: float,
                 hf_policy) -> None:
        super().__init__(model, policies, trainable, name, model_name)
        self.tokenizer, self.adapters, self.temperature = tokenizer, adapters, temperature
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        self.hf_policy = hf_policy     # the TransformersPolicy over the same model (choice mode's shared-prompt scorer)
        self._lora: list[nn.Parameter] | None = None    # every adapter's parameters (per-role adapters)
        self.engine: Any = None        # --backend vllm: the VLLMPolicy that plays the roles (synced after updates)

    def sync_rollouts(self, version: int) -> None:
        if self.engine is not None:
            self.engine.sync(self.module, version)

    def state_dict(self):
        state = super().state_dict()
        return {k: v for k, v in state.items() if "lora_" in k} if self.adapters != "none" else state

    def clip_groups(self):
        """Per-role adapters: one group per adapter (each role's gradient is clipped on its own, so one role's large
        gradient never scales the other's step); otherwise one group."""
        if self.adapters != "per_role":
            return [self.parameters()]
        groups: dict[str, list[nn.Parameter]] = {}
        for name, p in self.module.named_parameters():
            if "lora_" in name:    # the trained weights (set_adapter may have frozen another role's for a moment)
                groups.setdefault(_adapter_name(name), []).append(p)
        return list(groups.values())

    def load_state_dict(self, state):
        if self.adapters != "none":     # strict about the adapters (the base weights are not saved)
            want, got = set(self.state_dict()), set(state)
            if want != got:
                raise RuntimeError(f"the adapter weights differ: {len(want - got)} missing, {len(got - want)} "
                                   f"unexpected (e.g. {sorted(want ^ got)[:2]})")
        self.module.load_state_dict(state, strict=self.adapters == "none")

    def micro_batches(self, samples, budget):
        """Micro-batches sized by the tokens the forward pass really computes. Each distinct prompt is prefilled once
        and a shared prefix (a game's rules) once per micro-batch: choice decisions' prompts
        (:func:`baselines.policies.decoding.prefill`) and free-text turns' (:func:`~baselines.policies.hf.
        sequence_logprobs` with ``share_prefix``: a GRPO group's samples share one prompt). So each kind is sorted
        by (role, prompt) and a sample costs only the prompt tokens it does not share with the previous one, plus its
        moves (one label token, or a few tokens per move) or its completion. Sorting changes no gradient: the
        aggregation weights are fixed over the whole batch beforehand."""
        min_shared = getattr(self.hf_policy, "min_shared_prefix", 16)
        batches = []
        for kind in ("choice", "generate"):
            these = sorted((s for s in samples if s.kind == kind), key=lambda s: (s.role, s.prompt_ids))
            costs, prev = [], None
            for s in these:
                if kind == "generate":
                    after = len(s.completion_ids)
                else:
                    after = 1 if s.choice.scoring == "label" else 8 * max(1, len(s.legal))
                lcp = _common_prefix(prev.prompt_ids, s.prompt_ids) if prev is not None and prev.role == s.role else 0
                if lcp == len(s.prompt_ids) == len(prev.prompt_ids if prev is not None else []):
                    costs.append(after)                                     # the same prompt: prefilled once
                else:
                    costs.append(len(s.prompt_ids) - (lcp if lcp >= min_shared else 0) + after)
                prev = s
            batches += pack(these, costs, budget)
        return batches

    def _by_adapter(self, samples: list[Sample], switch: bool = True):
        """Runs of samples that share an adapter (per-role adapters: one run per role), in order."""
        if self.adapters != "per_role" or not switch:
            yield None, list(range(len(samples)))
            return
        for role in dict.fromkeys(s.role for s in samples):
            yield role, [i for i, s in enumerate(samples) if s.role == role]

    def logprobs(self, samples):
        return self._score(samples, self.forward_module)

    def ref_logprobs(self, samples):
        with torch.no_grad():
            if self.adapters != "none":
                with self.module.disable_adapter():
                    return self._score(samples, self.module, switch=False)[0]
            if self.reference is None:
                raise self._no_reference()
            return self._score(samples, self.reference)[0]

    def keep_reference(self):
        if self.adapters == "none":    # with LoRA the reference is the base model, adapters disabled: nothing to keep
            super().keep_reference()

    def _score(self, samples, model, switch: bool = True) -> tuple[torch.Tensor, torch.Tensor | None]:
        t = self.temperature if self.temperature > 0 else 1.0
        out: list[torch.Tensor | None] = [None] * len(samples)
        ent: list[torch.Tensor | None] = [None] * len(samples)
        for adapter, idx in self._by_adapter(samples, switch):
            if adapter is not None:
                use_adapter(self.module, adapter)
                if self._lora is None:
                    self._lora = [p for n, p in self.module.named_parameters() if "lora_" in n]
                for p in self._lora:     # set_adapter freezes the other adapters (here or in a rollout); keep them
                    p.requires_grad_(True)   # trainable so the optimizer and the gradient clipping see them all
            gen = [i for i in idx if samples[i].kind == "generate"]
            if gen:
                # each distinct prompt (a group's) runs once, its completions on its KV cache (same gradient)
                scores, entropies = sequence_logprobs(model, [samples[i].prompt_ids for i in gen],
                                                      [samples[i].completion_ids for i in gen], temperature=t,
                                                      pad_id=self.pad_id, with_entropy=True, share_prefix=True,
                                                      min_shared_prefix=getattr(self.hf_policy, "min_shared_prefix",
                                                                                16))
                for i, s, h in zip(gen, scores, entropies):
                    out[i], ent[i] = s, h
            choice = [i for i in idx if samples[i].kind == "choice"]
            for scoring in dict.fromkeys(samples[i].choice.scoring for i in choice):
                # the distribution each decision was sampled from (its recorded scoring):
                # each prompt runs through the model once and its moves are scored on its KV cache (gradients flow
                # through the cache), as the policy scores them when it samples; a wrapped (data-parallel) or
                # reference model scores one row per (prompt, move)
                these = [i for i in choice if samples[i].choice.scoring == scoring]
                moves = [self.hf_policy.move_ids(samples[i].legal, scoring) for i in these]
                dists = self.hf_policy.choice_log_policy([samples[i].prompt_ids for i in these], moves, scoring,
                                                         model=model)
                for i, (logq, _) in zip(these, dists):
                    out[i] = logq[samples[i].choice.index].reshape(1)
                    ent[i] = -(logq.exp() * logq).sum().reshape(1)
        flat = torch.cat(out) if out else torch.zeros(0)
        if any(e is None for e in ent):
            return flat, None
        return flat, torch.cat(ent)



# ---------------------------------------------------------------------- the team
@dataclass
class Team:
    learners: list[Learner]
    policies: dict[str, Policy]        # role -> the policy that plays it (learners', whole-run scripted partners')
    trainable: list[str]               # roles whose turns are trained
    # --partners ROLE=BOT:N (a curriculum): role -> the bot that plays it in steps 0..N-1 instead of
    # ``policies[role]`` (the role's own model, trained from step N on), and role -> N
    scripted: dict[str, Policy] = field(default_factory=dict)
    scripted_steps: dict[str, int] = field(default_factory=dict)
    # --init-from: the source checkpoint the weights were loaded from ({"checkpoint", "config_hash", "step"}), or None
    init_source: dict | None = None

    def scripted_at(self, k: int) -> list[str]:
        """The roles the curriculum's bots play at step ``k`` (sorted)."""
        return sorted(r for r, n in self.scripted_steps.items() if k < n)

    def playing(self, k: int) -> dict[str, Policy]:
        """Role -> the policy that plays it at step ``k``."""
        return {**self.policies, **{r: self.scripted[r] for r in self.scripted_at(k)}}

    def trainable_at(self, k: int) -> list[str]:
        """The roles trained at step ``k``: :attr:`trainable` less the roles a bot plays then."""
        now = set(self.scripted_at(k))
        return [r for r in self.trainable if r not in now]


def build_team(cfg, env, roles: list[str], prepare: Prepare | None = None, init_source: dict | None = None) -> Team:
    """Learners and policies for ``cfg`` on ``env`` (a made env of the right action mode), or a clear error.

    With ``prepare`` (the trainer's data-parallel wrapping of a module and its optimizer; ``lambda m, o: (m, o)`` on
    one process), every learner with a trained role is also set up for training: its update settings
    (:meth:`TrainConfig.learner_settings <baselines.train.config.TrainConfig.learner_settings>`, resolved here once,
    before step 0), its AdamW optimizer at their learning rate and weight decay, and its forward module, compiled
    with ``--compile`` (:meth:`Learner.set_up_training`). Without it the team only plays (the leaderboard's
    checkpoint player).

    ``--init-from`` loads the source checkpoint's weights, unless ``init_source`` (the record of a resumed run that
    already began from it) is given: the resumed checkpoint holds every weight, so the source is not read again (it
    may have moved on, or be gone) and the record is kept."""
    partners = cfg.partner_by_role(roles)
    curriculum = cfg.partner_steps(roles)     # role -> the step at which its bot hands it to its model
    spec = cfg.model_spec
    try:
        models = spec.for_roles(roles, cfg.env, [r for r in partners if r not in curriculum])
    except ValueError as e:
        if not curriculum:
            raise
        raise ValueError(f"{e} (--partners ROLE=BOT:N: the role's own model plays it from step N on)") from None
    frozen = cfg.frozen_roles(roles)
    for role in partners:
        if role not in curriculum:
            models.pop(role, None)
        if role in frozen:
            raise ValueError(f"role {role!r} is a scripted partner; it cannot also be --frozen")
    if not models:
        raise ValueError("every role is a scripted partner: nothing would be trained")
    shared = spec.shared is not None
    groups: list[tuple[str, list[str]]] = []      # (model name, roles sharing its weights)
    for role, name in models.items():
        if shared and groups:
            groups[0][1].append(role)
        else:
            groups.append((name, [role]))
    scripted = _partner_policies(cfg, partners)
    policies = {r: p for r, p in scripted.items() if r not in curriculum}
    learners: list[Learner] = []
    for n, (name, group_roles) in enumerate(groups):
        trainable = [r for r in group_roles if r not in frozen]
        label = f"{name}[{','.join(group_roles)}]"
        if name == "mlp":
            if cfg.adapters != "none":
                raise ValueError("--adapters (LoRA) is for LLMs; an MLP trains its full weights")
            policy = MLPPolicy.for_env(env, group_roles, seed=cfg.seed + n, temperature=cfg.temperature)
            learner: Learner = MLPLearner(group_roles, policy, trainable, label)
        else:
            learner = _llm_learner(cfg, name, group_roles, trainable, label)
        learner.module.to(cfg.device)
        learners.append(learner)
        policies.update(learner.policies)
    trained = [r for lr in learners for r in lr.trainable]
    if not trained:
        raise ValueError(f"every role is frozen or scripted ({', '.join(roles)}): nothing would be trained")
    if curriculum and not [r for r in trained if r not in partners]:      # step 0: every bot plays
        raise ValueError(f"--partners {cfg.partners}: at step 0 the bots play every trained role "
                         f"({', '.join(trained)}): nothing would be trained then. Leave a trained role to its "
                         "model from step 0 (--partners names fewer roles)")
    if getattr(cfg, "init_from", "") and init_source is None:    # before the KL reference is kept (full weights:
        init_source = init_weights(Path(cfg.init_from), learners)   # the reference is these)
    if prepare is not None:
        for learner in learners:
            if learner.trainable:
                if cfg.kl_coef > 0:
                    learner.keep_reference()     # the initial weights, before any update (a resume loads the saved)
                # the one place TrainConfig becomes this learner's update settings (per-model defaults filled in)
                learner.set_up_training(cfg.learner_settings(learner.model_name), prepare, cfg.compile)
    return Team(learners, policies, trained, {r: scripted[r] for r in curriculum}, curriculum, init_source)


def _partner_policies(cfg, partners: dict[str, str]) -> dict[str, Policy]:
    """Role -> the scripted policy of ``--partners`` (``random``, or the env's first ``reference`` bot)."""
    policies: dict[str, Policy] = {}
    for role, kind in partners.items():
        if kind == "random":
            policies[role] = RandomPolicy(seed=cfg.seed)
        else:
            bots = reference_policies(cfg.env)
            if not bots:
                raise ValueError(f"{cfg.env} has no reference bot for --partners {role}=reference")
            name, fn = next(iter(bots.items()))
            policies[role] = ScriptedPolicy(fn, seed=cfg.seed, name=f"reference:{name}")
    return policies


def _llm_learner(cfg, name: str, roles: list[str], trainable: list[str], label: str) -> LLMLearner:
    model, tok = load_model(name, device=cfg.device)
    layers = top_layers(model, cfg.lora_layers, name) if cfg.adapters != "none" else None   # refused before vLLM starts
    model.requires_grad_(True)
    settings = dict(mode=cfg.mode, temperature=cfg.temperature, top_p=cfg.top_p, max_new_tokens=cfg.max_new_tokens,
                    choice_scoring=cfg.choice_scoring)
    backend = getattr(cfg, "backend", "hf")
    engine = _vllm_engine(cfg, name, label, model, tok, settings, roles) if backend == "vllm" else None
    rows = getattr(cfg, "rollout_batch", 0) or None    # the hf policies' bound (--rollout-batch); vLLM batches itself
    if cfg.adapters == "none":
        policy = TransformersPolicy(model, tok, name=f"hf:{name}:{cfg.mode}", **settings, batch_size=rows)
        played = {r: engine for r in roles} if engine is not None else {r: policy for r in roles}
        learner = LLMLearner(model, tok, played, trainable, label, name, "none", cfg.temperature, hf_policy=policy)
        learner.engine = engine
        return learner
    try:
        from peft import LoraConfig, get_peft_model  # lazy: an optional package, only --adapters lora needs it
    except ImportError:
        raise ImportError("--adapters needs peft: pip install peft") from None
    # peft takes layers_to_transform only with the module names spelled out: the ones "all-linear" would adapt
    targets = "all-linear" if layers is None else linear_names(model)
    lora = LoraConfig(r=cfg.lora_r, lora_alpha=cfg.lora_alpha, target_modules=targets, lora_dropout=0.0,
                      task_type="CAUSAL_LM", layers_to_transform=layers)
    names = list(roles) if cfg.adapters == "per_role" else ["shared"]
    peft_model = get_peft_model(model, lora, adapter_name=names[0])
    for adapter in names[1:]:
        peft_model.add_adapter(adapter, lora)
    for n, p in peft_model.named_parameters():
        p.requires_grad_("lora_" in n)
    inner = TransformersPolicy(peft_model, tok, name=f"hf:{name}:{cfg.mode}", **settings, batch_size=rows)
    adapter_of = {r: r if cfg.adapters == "per_role" else "shared" for r in roles}
    if engine is not None:
        policies: dict[str, Policy] = {r: engine.for_adapter(a) for r, a in adapter_of.items()}
    else:
        policies = {r: AdapterPolicy(inner, peft_model, a) for r, a in adapter_of.items()}
    learner = LLMLearner(peft_model, tok, policies, trainable, label, name, cfg.adapters, cfg.temperature,
                         hf_policy=inner)
    learner.engine = engine
    return learner


def top_layers(model, k: int, name: str) -> list[int] | None:
    """``--lora-layers K``: the indices of the model's top ``k`` transformer layers, the ones that get LoRA adapters
    (peft's ``layers_to_transform``); ``None`` for ``k = 0`` (every layer). A ``ValueError`` naming the flag when
    ``k`` is not in 1..layers.

    Why it is cheaper, exactly: the layers below stay the frozen base model with no adapter, so no tensor they
    compute requires a gradient (the embedding is frozen too); autograd records no graph for them, keeps none of
    their activations, and the update's backward stops at the lowest adapted layer. Their forward still runs."""
    if k == 0:
        return None
    n = getattr(model.config, "num_hidden_layers", None)
    if not isinstance(n, int):
        raise ValueError(f"--lora-layers {k}: model {name!r} does not say how many transformer layers it has "
                         "(config.num_hidden_layers); leave --lora-layers out to adapt every layer")
    if not 1 <= k <= n:
        raise ValueError(f"--lora-layers {k}: model {name!r} has {n} transformer layers; give 1..{n} (the top K "
                         "layers get adapters), or leave it out to adapt every layer")
    return list(range(n - k, n))


def linear_names(model) -> list[str]:
    """The names (last component) of the model's linear layers, its output layer left out: the modules peft's
    ``target_modules="all-linear"`` adapts, spelled out (peft refuses ``layers_to_transform`` with the string)."""
    head = model.get_output_embeddings()
    return sorted({n.rpartition(".")[2] for n, m in model.named_modules()
                   if isinstance(m, nn.Linear) and m is not head})


def _vllm_engine(cfg, name: str, label: str, model, tok, settings: dict, roles: list[str]):
    """``--backend vllm``: a vLLM engine on a copy of the learner's initial weights (written under ``--out``), serving
    one LoRA adapter per role (``--adapters per_role``), one shared adapter (``shared``) or full weights (``none``).
    Its weights are sent by :meth:`Learner.sync_rollouts` before the first rollout and after every update."""

    adapters = list(roles) if cfg.adapters == "per_role" else ["shared"] if cfg.adapters == "shared" else []
    folder = Path(cfg.out) / "vllm" / safe_name(label)
    return VLLMPolicy.from_model(model, tok, folder / "model", name=f"vllm:{name}:{cfg.mode}",
                                 dtype=cfg.dtype, seed=cfg.seed, lora_adapters=adapters, lora_rank=cfg.lora_r,
                                 lora_folder=folder / "adapters", **settings)
