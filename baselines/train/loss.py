"""The policy-gradient loss: token-level clipped surrogate (PPO / GRPO, DAPO's separate clip bounds), an optional
k3 KL to a frozen reference, an optional entropy bonus.

For a trained token ``t`` with advantage ``A_t``, new log-probability ``l_t``, old (behaviour) ``o_t``, reference
``q_t``:

    r_t = exp(l_t - o_t)
    L_t = max(-A_t r_t, -A_t clip(r_t, 1 - clip_low, 1 + clip_high)) + kl_coef * (exp(q_t - l_t) - (q_t - l_t) - 1)
          - entropy_coef * H_t

and the batch loss is ``sum_t w_t L_t`` with aggregation weights ``w_t``: ``1 / N`` for ``"token-mean"`` (N = trained
tokens of the batch: every token weighs the same, as DAPO) or ``1 / (S * n_s)`` for ``"seq-mean"`` (S = trained
turns, n_s = tokens of turn s: every turn weighs the same, as GRPO's paper). The weights are computed over the whole
batch before it is split into micro-batches, so gradient accumulation gives the same gradient as one pass.
``H_t`` is the entropy of the policy's distribution at token ``t``: over the legal moves for a choice (or MLP)
decision, over the vocabulary for a token of free text. A bonus asked for and not computable is an error, never
silently left out. Log-ratios are clamped to [-20, 20] before ``exp`` so one stale token cannot turn the loss into
inf or NaN.
"""

from __future__ import annotations

import torch

__all__ = ["policy_loss", "tis_weights", "token_weight"]


def token_weight(length: int, batch_lengths: list[int], aggregation: str) -> float:
    """The aggregation weight of each token of a sequence of ``length`` scored tokens, in a batch whose sequences
    have ``batch_lengths`` (the whole batch, over every process)."""
    if aggregation == "token-mean":
        return 1.0 / sum(batch_lengths)
    if aggregation == "seq-mean":
        return 1.0 / (len(batch_lengths) * length)
    raise ValueError(f"aggregation={aggregation!r} is not 'token-mean' or 'seq-mean'")


def policy_loss(new_lp: torch.Tensor, old_lp: torch.Tensor, adv: torch.Tensor, weights: torch.Tensor, *,
                clip_low: float, clip_high: float, ref_lp: torch.Tensor | None = None, kl_coef: float = 0.0,
                entropy: torch.Tensor | None = None, entropy_coef: float = 0.0,
                is_weight: torch.Tensor | None = None) -> tuple[torch.Tensor, dict]:
    """The weighted loss of a micro-batch of tokens (1-D tensors of equal length) and its statistics (weighted
    sums, so micro-batches add up: ``clipped``, ``kl``, ``ratio_max``). ``is_weight``: a per-token importance
    weight of the clipped surrogate (:func:`tis_weights`; None = 1)."""
    log_ratio = (new_lp - old_lp).clamp(-20.0, 20.0)
    ratio = torch.exp(log_ratio)
    neg_adv = -adv
    unclipped = neg_adv * ratio
    clipped = neg_adv * ratio.clamp(1.0 - clip_low, 1.0 + clip_high)
    per_token = torch.maximum(unclipped, clipped)
    if is_weight is not None:
        per_token = per_token * is_weight
    with torch.no_grad():
        stats = {"clipped": float(((clipped > unclipped).float() * weights).sum()),
                 "ratio_max": float(ratio.max()) if ratio.numel() else 1.0}
    if kl_coef > 0 and ref_lp is not None:
        d = (ref_lp - new_lp).clamp(-20.0, 20.0)
        k3 = torch.exp(d) - d - 1.0
        per_token = per_token + kl_coef * k3
        stats["kl"] = float((k3.detach() * weights).sum())
    if entropy_coef > 0:
        if entropy is None:     # refused, never dropped: a run asked for the bonus on every trained token
            raise ValueError(f"entropy_coef={entropy_coef} but no entropy was given for this micro-batch; the "
                             "learner must return one per scored token (or train with --entropy-coef 0)")
        per_token = per_token - entropy_coef * entropy
    return (per_token * weights).sum(), stats


def tis_weights(trainer_old_lp: torch.Tensor, sampler_lp: torch.Tensor, cap: float) -> tuple[torch.Tensor, dict]:
    """Truncated importance sampling (TIS) of a sampler that is not the trainer (a vLLM engine, bf16 kernels): the
    per-token weight ``min(exp(o_t - s_t), cap)`` that multiplies the clipped surrogate of :func:`policy_loss`, where
    ``o_t`` is the trainer's old log-probability (its recompute before the update) and ``s_t`` the sampler's (recorded
    on the turn). The sampled tokens come from the sampler's distribution, the surrogate assumes the trainer's:
    ``exp(o_t - s_t)`` corrects that, and the cap bounds the variance a token the sampler found unlikely would add
    (Yao, Liu et al. 2025, "Your Efficient RL Framework Secretly Brings You Off-Policy RL Training", TIS:
    ``min(pi_trainer_old / pi_sampler, C)`` with ``C = 2`` in their runs, the default of ``--tis-cap``).

    Returns the weights (no gradient) and the mismatch statistics: ``kl`` (sum over tokens of the k3 estimate of
    KL(sampler || trainer), ``r - 1 - log r`` with ``r = exp(o_t - s_t)``: zero when the two agree, never negative)
    and ``max_ratio`` (the largest ``r`` before the cap). A sampler log-probability that is not finite (-inf: a token
    outside the sampler's top-p) gets weight ``cap`` and is left out of the statistics; log-ratios are clamped to
    [-20, 20] as in :func:`policy_loss`."""
    with torch.no_grad():
        s = sampler_lp.to(trainer_old_lp.device, torch.float32)
        finite = torch.isfinite(s)
        log_r = (trainer_old_lp.float() - torch.where(finite, s, torch.zeros_like(s))).clamp(-20.0, 20.0)
        r = torch.exp(log_r)
        weights = torch.where(finite, r.clamp(max=cap), torch.full_like(r, cap))
        k3 = (r - 1.0 - log_r)[finite]
        stats = {"kl": float(k3.sum()), "tokens": int(finite.sum()),
                 "max_ratio": float(r[finite].max()) if bool(finite.any()) else 1.0}
    return weights, stats
