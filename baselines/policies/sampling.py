"""What both transformers decoders share (the plain loop of :func:`baselines.policies.decoding.sample_batch` and
:class:`baselines.policies.static_decode.StaticDecoder`): the sampling distribution (:func:`process_logits`), the
counter-based two-stage Gumbel-max draw (:func:`draw_tokens`, see :mod:`baselines.policies.decoding`, Sampling),
the state a prefill leaves (:class:`Prefill`) and the model's KV-cache keyword (:func:`cache_kw`)."""

from __future__ import annotations

import inspect
from dataclasses import dataclass

import torch

__all__ = ["BLOCK", "Prefill", "cache_kw", "draw_tokens", "gumbel_noise", "process_logits", "uniform_seed"]


def process_logits(logits: torch.Tensor, temperature: float = 1.0, top_p: float = 1.0) -> torch.Tensor:
    """Log-probabilities (float32, last dim = vocabulary) of the sampling distribution: temperature, then top-p.

    ``temperature <= 0`` (greedy) returns the plain model log-softmax. Tokens outside the nucleus get ``-inf``.
    Differentiable where the inputs need grad.
    """
    logits = logits.float()
    if temperature <= 0:
        return torch.log_softmax(logits, dim=-1)
    if temperature != 1.0:
        logits = logits / temperature
    if top_p < 1.0:
        sorted_logits, order = torch.sort(logits, dim=-1, descending=True)
        probs = torch.softmax(sorted_logits, dim=-1)
        before = torch.cumsum(probs, dim=-1) - probs  # mass of strictly more likely tokens
        drop_sorted = before >= top_p
        drop_sorted[..., 0] = False  # the most likely token is always kept
        drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
        logits = logits.masked_fill(drop, float("-inf"))
    return torch.log_softmax(logits, dim=-1)


def cache_kw(model) -> str:
    """The forward() keyword of the KV cache: ``cache`` in recent transformers, ``past_key_values`` before."""
    try:
        params = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return "past_key_values"
    return "cache" if "cache" in params else "past_key_values"


@dataclass
class Prefill:
    """The state after a prefill: KV cache (rows = prompts), last-position logits, attention mask, next positions."""

    cache: object
    logits: torch.Tensor   # (B, V)
    mask: torch.Tensor     # (B, width)
    next_pos: torch.Tensor  # (B,)
    tokens: int             # prompt tokens run through the model (padding not counted)


# ---------------------------------------------------------------------------------------------- sampler
_M32 = 0xFFFFFFFF


def _mul32(x: torch.Tensor, c: int) -> torch.Tensor:
    """``(x * c) mod 2**32`` for int64 ``x`` in [0, 2**32), in two 16-bit halves of ``c`` so nothing overflows."""
    return (x * (c & 0xFFFF) + (((x * (c >> 16)) & 0xFFFF) << 16)) & _M32


def _hash32(x: torch.Tensor) -> torch.Tensor:
    """A 32-bit integer hash with full avalanche (xor-shift / multiply rounds), elementwise on int64 tensors."""
    x = x & _M32
    x = x ^ (x >> 16)
    x = _mul32(x, 0x7FEB352D)
    x = x ^ (x >> 15)
    x = _mul32(x, 0x846CA68B)
    return x ^ (x >> 16)


def _row_stream(seed: torch.Tensor, rows: torch.Tensor, step: int | torch.Tensor) -> torch.Tensor:
    """A 32-bit hash per row of ``(seed, row key, step)``."""
    step = torch.as_tensor(step, dtype=torch.long, device=rows.device)
    return _hash32(_hash32(_hash32(seed + 0x9E3779B9) ^ rows) ^ _hash32(step + 0x85EBCA6B))


BLOCK = 256  # tokens per block of the two-stage draw


def gumbel_noise(seed: int | torch.Tensor, rows: torch.Tensor, step: int | torch.Tensor, n: int, salt: int = 0
                 ) -> torch.Tensor:
    """Standard Gumbel noise ``(len(rows), n)`` (float32), a pure function of ``(seed, row, step, salt, column)``.

    Each entry is ``-log(-log(u))`` with ``u`` from 24 bits of a hash of those (``u`` never 0 or 1). ``seed`` is
    any int (both 32-bit halves count); ``rows`` an int64 tensor of row keys; ``seed`` and ``step`` may be 0-d int64
    tensors on the rows' device (what a captured graph needs)."""
    if not isinstance(seed, torch.Tensor):
        seed = uniform_seed(seed, rows.device)
    cols = _hash32(torch.arange(n, dtype=torch.long, device=rows.device) + (0x5BD1E995 + 0x10000 * salt))
    h = _hash32(_row_stream(seed, rows, step)[:, None] ^ cols[None, :])
    u = ((h >> 8).float() + 0.5) * (1.0 / 16777216)
    return -torch.log(-torch.log(u))


def draw_tokens(logp: torch.Tensor, seed: int | torch.Tensor, rows: torch.Tensor, step: int | torch.Tensor
                ) -> torch.Tensor:
    """One token per row from ``softmax(logp)``, by the Gumbel-max rule in two stages: the vocabulary is cut into
    blocks of :data:`BLOCK` tokens, a block is drawn by ``argmax(logsumexp(block) + noise)``, then a token inside it
    by ``argmax(logp + noise)`` (exact: P(block) x P(token | block)). Noise is needed for the blocks and one block
    only, not the whole vocabulary. A token with ``logp = -inf`` is never drawn. A small change of ``logp`` changes
    the draw only when the two best noisy scores of a stage are that close, so paths that agree to float32 rounding
    draw the same tokens (an inverse-CDF draw, by contrast, moves whenever the cumulative sum before it moves, which
    a rounding shift does often)."""
    B, V = logp.shape
    nb = -(-V // BLOCK)
    if nb * BLOCK != V:
        logp = torch.nn.functional.pad(logp, (0, nb * BLOCK - V), value=float("-inf"))
    blocks = logp.view(B, nb, BLOCK)
    b = (torch.logsumexp(blocks, -1) + gumbel_noise(seed, rows, step, nb, salt=1)).argmax(-1)
    inside = blocks.gather(1, b[:, None, None].expand(B, 1, BLOCK))[:, 0]
    j = (inside + gumbel_noise(seed, rows, step, BLOCK, salt=2)).argmax(-1)
    return b * BLOCK + j


def uniform_seed(seed: int, device) -> torch.Tensor:
    """The 0-d int64 tensor that :func:`gumbel_noise` mixes a Python int seed into (both 32-bit halves)."""
    seed = int(seed) % 2**64
    hi = int(_hash32(torch.tensor(seed >> 32)).item())
    return torch.tensor(hi ^ (seed & _M32), dtype=torch.long, device=device)
