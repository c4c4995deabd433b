"""The update: the trained decisions of a step's episodes (:func:`trained_samples`), then for every learner with a
trained role ``epochs`` clipped passes over its samples (PPO epochs x micro-batches, :func:`~baselines.train.loss.
policy_loss`), one optimizer step each, each role's gradient clipped on its own (:meth:`Learner.clip_groups
<baselines.train.learners.Learner.clip_groups>`). Every hyperparameter comes from the learner's own
:class:`~baselines.train.config.LearnerSettings`, resolved once when the team was built.

The old log-probabilities are verl's recompute: they come from the training model itself, before any update. The
first epoch's forward passes all run before the first optimizer step, so they are that recompute: no extra pass is
needed. The recompute is compared with what the sampler recorded (``recompute_gap_*``, ``mismatch/*``); with an
outside sampler (``--backend vllm``) each token's surrogate is weighted by TIS (:func:`~baselines.train.loss.
tis_weights`).
"""

from __future__ import annotations

import math
from contextlib import nullcontext
from dataclasses import dataclass, field

import numpy as np
import torch

from baselines.credit import TokenAdvantages, TurnAdvantages
from baselines.train.config import LearnerSettings
from baselines.train.dist import Dist
from baselines.train.learners import Learner, Sample, Team
from baselines.train.loss import policy_loss, tis_weights, token_weight

__all__ = ["trained_samples", "update"]


def trained_samples(episodes, advantages: TurnAdvantages | TokenAdvantages, roles_now: set[str],
                    per_token: bool = False) -> list[Sample]:
    """Every trained decision of the main episodes: turns of a trained role that produced tokens (never branch
    turns, replayed turns or scripted partners' turns). ``per_token``: the credit method's flag, saying that
    ``advantages`` holds one value per completion token of each turn (:data:`TokenAdvantages`)."""
    out = []
    for e, row in zip(episodes, advantages):
        for k, (t, a) in enumerate(zip(e.turns, row)):
            if t.role not in roles_now or t.replayed or not t.completion_ids:
                continue
            if t.choice is not None:     # a move of the legal ones (choice mode, the MLP): one scored decision
                kind, lps = t.choice.kind, [float(t.choice.logprob)]
            else:
                kind, lps = "generate", [float(x) for x in t.logprobs]
            if per_token:          # one value per completion token; a decision scored as one unit takes the first
                if not isinstance(a, (list, tuple)):
                    raise ValueError(f"{e.env_id}: a per-token credit method gave turn {k} one number, not one per "
                                     f"completion token")
                adv = [float(x) for x in a] if kind == "generate" else [float(a[0])]
            elif isinstance(a, (list, tuple)):
                raise ValueError(f"{e.env_id}: the credit method gave turn {k} a list of values; a method that "
                                 f"gives one per completion token sets per_token = True")
            else:
                adv = [float(a)] * len(lps)
            if len(adv) != len(lps):
                raise ValueError(f"{e.env_id}: {len(adv)} advantages for a turn of {len(lps)} scored tokens")
            out.append(Sample(t.role, kind, list(t.prompt_ids), list(t.completion_ids), lps, adv,
                              list(t.legal_actions), choice=t.choice))
    return out


@dataclass
class UpdateStats:
    """What one update logs, summed over its learners, epochs and micro-batches."""

    clip_frac: float = 0.0
    kl: float = 0.0
    ratio_max: float = 1.0
    grad_norm: float = 0.0
    trained_tokens: float = 0.0
    gaps: list[float] = field(default_factory=list)    # |recomputed - sampled| log-probability of each scored token
    entropy_sum: float = 0.0       # the weighted mean entropy of the decisions the update trains
    entropy_weight: float = 0.0
    mismatch_kl: float = 0.0       # sampler against trainer (tis_weights): k3 KL summed over tokens, their count, max r
    mismatch_tokens: int = 0
    mismatch_max_ratio: float = 1.0

    def as_dict(self) -> dict[str, float]:
        gap_max, gap_mean = (float(max(self.gaps)), float(np.mean(self.gaps))) if self.gaps else (0.0, 0.0)
        # the entropy is over the samples the update computed (zero-advantage ones are skipped when nothing else
        # needs them), so that skipping does not read as an entropy collapse
        entropy = self.entropy_sum / self.entropy_weight if self.entropy_weight > 0 else 0.0
        return {"clip_frac": self.clip_frac, "kl": self.kl, "ratio_max": self.ratio_max, "entropy": entropy,
                "recompute_gap_max": gap_max, "recompute_gap_mean": gap_mean, "trained_tokens": self.trained_tokens,
                "grad_norm": self.grad_norm,
                "mismatch/kl": self.mismatch_kl / self.mismatch_tokens if self.mismatch_tokens else 0.0,
                "mismatch/max_ratio": self.mismatch_max_ratio}


def update(team: Team, dist: Dist, local: list[Sample], total: dict[str, list[int]],
           roles_now: set[str]) -> dict[str, float]:
    """One update of every learner with trained roles this step, each with its own settings (``learner.settings``).
    ``local``: this process's samples; ``total``: per learner, the scored-token counts of the whole batch's samples
    (the aggregation weights are computed over the whole batch)."""
    stats = UpdateStats()
    for learner in team.learners:
        trains = set(learner.trainable) & roles_now
        if not trains:
            continue
        settings = learner.settings
        if settings is None:
            raise ValueError(f"{learner.name} has trained roles but no update settings: build the team with "
                             "build_team(..., prepare=...), which sets them up for training")
        mine = [s for s in local if s.role in trains]
        weight_of: dict[int, float] = {}      # token_weight depends on the sample's length only: once per length
        for s in mine:
            w = weight_of.get(s.n)
            if w is None:
                w = weight_of[s.n] = token_weight(s.n, total[learner.name], settings.aggregation)
            s.weight = w
        if settings.kl_coef == 0 and settings.entropy_coef == 0:
            # A zero advantage contributes nothing to the loss or its gradient: skip its forward pass. The weights
            # above still count its tokens, so the aggregation is unchanged (DAPO's token-mean over the batch).
            mine = [s for s in mine if s.adv.count(0.0) < len(s.adv)]     # some a != 0.0 (NaN included)
        _ppo_epochs(learner, settings, dist, mine, stats)
        stats.trained_tokens += sum(s.n for s in mine)
    return stats.as_dict()


def _ppo_epochs(learner: Learner, settings: LearnerSettings, dist: Dist, samples: list[Sample],
                stats: UpdateStats) -> None:
    """``settings.epochs`` clipped passes of one learner over its samples, one optimizer step each."""
    batches = learner.micro_batches(samples, settings.micro_batch_tokens)
    scale = float(dist.world)     # DDP averages the processes' gradients; the weights sum over the whole batch
    old: list[torch.Tensor | None] = [None] * len(batches)     # the recompute (see the module's docstring)
    ref: list[torch.Tensor | None] = [None] * len(batches)
    tis: list[torch.Tensor | None] = [None] * len(batches)   # TIS weights (an outside sampler: --backend vllm)
    epochs = settings.epochs
    for _ in range(epochs):
        learner.optimizer.zero_grad(set_to_none=True)
        if not batches:   # a process with no samples still joins the gradient all-reduce
            zero = sum(p.sum() for p in learner.parameters()) * 0.0
            dist.backward(zero)
        for n, mb in enumerate(batches):
            with dist.no_sync(learner.forward_module, last=n == len(batches) - 1):
                with _autocast(settings):
                    new, entropy = learner.logprobs(mb)
                new = new.float()
                if old[n] is None:
                    old[n] = new.detach()
                    _compare_with_sampler(old[n], mb, settings, stats, n, tis)
                    if settings.kl_coef > 0:
                        ref[n] = learner.ref_logprobs(mb).detach().float()
                dev = new.device
                adv = torch.tensor([x for s in mb for x in s.adv], dtype=torch.float32, device=dev)
                w = torch.tensor([s.weight for s in mb for _ in range(s.n)], dtype=torch.float32, device=dev)
                loss, st = policy_loss(new, old[n].to(dev), adv, w, clip_low=settings.clip_low,
                                       clip_high=settings.clip_high,
                                       ref_lp=None if ref[n] is None else ref[n].to(dev), kl_coef=settings.kl_coef,
                                       entropy=entropy, entropy_coef=settings.entropy_coef,
                                       is_weight=None if tis[n] is None else tis[n].to(dev))
                dist.backward(loss * scale if scale != 1.0 else loss)    # x * 1.0 is x, and so is its gradient
            stats.clip_frac += st["clipped"] / epochs
            stats.kl += st.get("kl", 0.0) / epochs
            stats.ratio_max = max(stats.ratio_max, st["ratio_max"])
            if entropy is not None:
                stats.entropy_sum += float((entropy.detach() * w).sum())
                stats.entropy_weight += float(w.sum())
        for group in learner.clip_groups():    # one norm per role's own weights (per-role adapters: per adapter)
            norm = torch.nn.utils.clip_grad_norm_(group, settings.grad_clip if settings.grad_clip > 0 else math.inf,
                                                  foreach=learner.foreach)   # the MLP: one norm and one scale call
            stats.grad_norm = max(stats.grad_norm, float(norm))
        learner.optimizer.step()


def _compare_with_sampler(old: torch.Tensor, mb: list[Sample], settings: LearnerSettings, stats: UpdateStats,
                          n: int, tis: list[torch.Tensor | None]) -> None:
    """The recompute ``old`` of micro-batch ``n`` against the sampler's recorded log-probabilities: the gaps and
    the mismatch statistics into ``stats``, and with ``settings.apply_tis`` the TIS weights into ``tis[n]``."""
    # |recomputed - sampled| in float32 (NumPy's float32 ops are torch's, element by element)
    sampled = np.array([x for s in mb for x in s.sampler_lp], dtype=np.float32)
    finite = np.isfinite(sampled)      # a sampler's -inf never reaches the loss; skip it here too
    stats.gaps.extend(np.abs(old.cpu().numpy() - sampled)[finite].tolist())
    weights, mm = tis_weights(old, torch.from_numpy(sampled), settings.tis_cap or math.inf)
    stats.mismatch_kl += mm["kl"]
    stats.mismatch_tokens += mm["tokens"]
    stats.mismatch_max_ratio = max(stats.mismatch_max_ratio, mm["max_ratio"])
    if settings.apply_tis:
        tis[n] = weights


def _autocast(settings: LearnerSettings):
    if settings.dtype == "bfloat16":
        return torch.autocast(device_type=torch.device(settings.device).type, dtype=torch.bfloat16)
    return nullcontext()
