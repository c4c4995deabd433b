"""Batched sampling for the transformers backend: shared-prefix prefill, a decode loop whose finished rows leave the
batch, a sampler that does not depend on the batch, and a static-KV-cache decode step.

Every fast path here computes, row by row, what the plain path computes: a left-padded batch of the whole prompts
(position ids from the attention mask), then one decode step per new token with every row kept in the batch until
the last one ends. :func:`sample_batch` runs either, chosen by its flags, so tests compare them directly.

Shared-prefix prefill (``share_prefix=True``). Identical prompts (the G samples of a GRPO group, the K resamples of a
branch point) are prefilled once. Distinct prompts that share a long common prefix (a system prompt, the rules header
of a game: at least ``min_shared_prefix`` tokens) are grouped; each group's prefix is prefilled once, its KV cache
rows are copied to the group's prompts, and the rest of each prompt is prefilled on top of it. The rows are laid out
``[pad.., prefix][pad.., rest]``: the padding in the middle is masked out and the position ids continue from the
prefix, so every row attends to exactly its own prompt at the positions it has alone. Finally the cache rows of each
distinct prompt are copied to its duplicates. Grouping: distinct prompts are sorted, and runs of neighbours whose
common prefix stays at least ``min_shared_prefix`` long form a group (a greedy rule, linear in the prompts' length).
When that layout would be wider than one left-padded batch of the prompts (groups whose shared prefixes differ a lot
in length: every decode step would attend over the extra columns), only identical prompts are shared.

Finished rows leave the batch (``drop_finished=True``). After a step where rows ended (EOS, stop string), the KV
cache, attention mask and positions of the rows still running are selected and the ended rows are no longer
computed, so a decode step costs the rows that are still useful.

Sampling. Each step of each row draws from ``softmax(logp)`` by the Gumbel-max rule in two stages (a block of 256
tokens by its log-mass, then a token inside it: :func:`draw_tokens`), where the Gumbel noise is a counter-based hash
of ``(seed, row key, step, block or token)`` and the row key is the request's index in the ``generate`` call. A
row's draws therefore do not depend on which other rows are in the batch, how they are ordered, chunked or shared,
or when they leave; and a change of the logits at float32 rounding level changes a draw only when the two best noisy
scores of a stage are that close, which is rare (tested). An inverse-CDF draw (``torch.multinomial``, or a uniform
against the cumulative sum) moves whenever the cumulative sum before the drawn token moves (with SmolLM2 and branches, about 2
tokens in 1,000 differ between the shared and the plain prefill that way). So the same seed gives
the same tokens with and without the fast paths. The draws use no torch RNG (the global RNG is never touched) and are
graph-capturable (fixed shapes, no host synchronisation).

Static KV cache (``static_cache=True``): the decode runs on a :class:`transformers.StaticCache` of fixed size (prompt
width + ``max_new_tokens``) with every row kept, so each step has the same shapes. On CUDA the step (model forward,
sampling distribution, draw) is captured once in a CUDA graph and replayed; elsewhere the same step runs eagerly (that
is how it is tested on CPU: same tokens and logprobs as the plain path). The CUDA graph path has not been run on a
GPU by its author: treat it as untested there.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

__all__ = ["PrefixPlan", "draw_tokens", "gumbel_noise", "plan_prefixes", "process_logits", "sample_batch"]


# ---------------------------------------------------------------------------------------------- model helpers
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


def forward_logits(model, input_ids, attention_mask, position_ids, keep: int, **kw):
    """``(output, logits of the last keep positions)``."""
    try:
        out = model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                    logits_to_keep=keep, **kw)
        return out, out.logits
    except TypeError:  # a model without logits_to_keep
        out = model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids, **kw)
        return out, out.logits[:, -keep:]


def cache_kw(model) -> str:
    """The forward() keyword of the KV cache: ``cache`` in recent transformers, ``past_key_values`` before."""
    try:
        params = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return "past_key_values"
    return "cache" if "cache" in params else "past_key_values"


def get_cache(out):
    cache = getattr(out, "cache", None)
    return cache if cache is not None else getattr(out, "past_key_values", None)


def left_pad(prompts: Sequence[Sequence[int]], pad_id: int, device) -> tuple[torch.Tensor, ...]:
    """Prompts as one left-padded batch: ``(ids, attention mask, position ids)``, every prompt ending at the last
    column and positions counted from each prompt's first real token."""
    B, L = len(prompts), max(len(p) for p in prompts)
    ids = torch.full((B, L), pad_id, dtype=torch.long)
    mask = torch.zeros((B, L), dtype=torch.long)
    for i, p in enumerate(prompts):
        if len(p):
            ids[i, L - len(p):] = torch.tensor(list(p), dtype=torch.long)
            mask[i, L - len(p):] = 1
    ids, mask = ids.to(device), mask.to(device)
    return ids, mask, (mask.cumsum(-1) - 1).clamp(min=0)


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


# ---------------------------------------------------------------------------------------------- prefix plan
@dataclass
class PrefixPlan:
    """How a batch of prompts is prefilled: ``unique[u]`` are the distinct prompts, ``owner[i]`` the distinct prompt
    of row ``i``; ``groups`` are ``(prefix length, [u, ...])`` (a prefix shared by those distinct prompts, always
    shorter than each of them)."""

    unique: list[list[int]]
    owner: list[int]
    groups: list[tuple[int, list[int]]] = field(default_factory=list)

    @property
    def shared(self) -> bool:
        return any(len(us) > 1 and n > 0 for n, us in self.groups)

    def width(self) -> int:
        """Columns of the two-pass layout: the longest group prefix plus the longest rest of a prompt."""
        return (max(n for n, _ in self.groups)
                + max(len(self.unique[u]) - n for n, us in self.groups for u in us))


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def plan_prefixes(prompts: Sequence[Sequence[int]], min_shared_prefix: int = 16) -> PrefixPlan:
    """Distinct prompts and prefix groups (see the module docstring). Linear in the prompts' total length after the
    sort of the distinct prompts."""
    index: dict[tuple[int, ...], int] = {}
    unique: list[list[int]] = []
    owner = []
    for p in prompts:
        key = tuple(p)
        if key not in index:
            index[key] = len(unique)
            unique.append(list(p))
        owner.append(index[key])
    order = sorted(range(len(unique)), key=lambda u: unique[u])
    groups: list[tuple[int, list[int]]] = []
    run, run_lcp = [order[0]], None
    for prev, u in zip(order, order[1:]):
        lcp = _common_prefix(unique[prev], unique[u])
        joined = lcp if run_lcp is None else min(run_lcp, lcp)
        if joined >= min_shared_prefix:
            run.append(u)
            run_lcp = joined
        else:
            groups.append((run_lcp or 0, run))
            run, run_lcp = [u], None
    groups.append((run_lcp or 0, run))
    # Every prompt keeps at least its last token out of the shared prefix (its logits start the decode). A lone
    # prompt puts as much into the first pass as the longest shared prefix, so that it widens neither pass.
    widest = max([n for n, us in groups if len(us) > 1] or [0])
    groups = [(min([n if len(us) > 1 else widest] + [len(unique[u]) - 1 for u in us]), us) for n, us in groups]
    return PrefixPlan(unique, owner, groups)


# ---------------------------------------------------------------------------------------------- prefill
@dataclass
class Prefill:
    """The state after a prefill: KV cache (rows = prompts), last-position logits, attention mask, next positions."""

    cache: object
    logits: torch.Tensor   # (B, V)
    mask: torch.Tensor     # (B, width)
    next_pos: torch.Tensor  # (B,)
    tokens: int             # prompt tokens run through the model (padding not counted)


def prefill(model, prompts: Sequence[Sequence[int]], pad_id: int, share_prefix: bool,
            min_shared_prefix: int = 16) -> Prefill:
    """Run the prompts through the model once and keep the KV cache (see the module docstring)."""
    device = next(model.parameters()).device
    kw = cache_kw(model)
    if not share_prefix:
        ids, mask, pos = left_pad(prompts, pad_id, device)
        out, logits = forward_logits(model, ids, mask, pos, 1, use_cache=True)
        return Prefill(get_cache(out), logits[:, -1], mask, mask.sum(-1), int(mask.sum()))
    plan = plan_prefixes(prompts, min_shared_prefix)
    # Groups with very different prefix lengths can make the two-pass layout wider than one left-padded batch, and
    # every decode step attends over that width: then only identical prompts are shared.
    if plan.shared and plan.width() <= max(len(p) for p in plan.unique):
        # Pass 1: each group's prefix once.
        heads = [plan.unique[us[0]][:n] for n, us in plan.groups]
        ids, mask1, pos = left_pad(heads, pad_id, device)
        out, _ = forward_logits(model, ids, mask1, pos, 1, use_cache=True)
        cache = get_cache(out)
        group_of, rests = [0] * len(plan.unique), [None] * len(plan.unique)
        for g, (n, us) in enumerate(plan.groups):
            for u in us:
                group_of[u], rests[u] = g, plan.unique[u][n:]
        g_index = torch.tensor(group_of, dtype=torch.long, device=device)
        cache.batch_select_indices(g_index)
        # Pass 2: the rest of every distinct prompt, on top of its group's prefix.
        ids2, mask2, pos2 = left_pad(rests, pad_id, device)
        mask = torch.cat([mask1[g_index], mask2], dim=1)
        pos2 = pos2 + mask1.sum(-1)[g_index][:, None]
        out, logits = forward_logits(model, ids2, mask, pos2, 1, use_cache=True, **{kw: cache})
        tokens = int(mask1.sum()) + int(mask2.sum())
    else:
        ids, mask, pos = left_pad(plan.unique, pad_id, device)
        out, logits = forward_logits(model, ids, mask, pos, 1, use_cache=True)
        tokens = int(mask.sum())
    cache = get_cache(out)
    logits = logits[:, -1]
    if len(plan.unique) < len(prompts):
        owner = torch.tensor(plan.owner, dtype=torch.long, device=device)
        cache.batch_select_indices(owner)
        logits, mask = logits[owner], mask[owner]
    return Prefill(cache, logits, mask, mask.sum(-1), tokens)


# ---------------------------------------------------------------------------------------------- decode
@dataclass
class Sampled:
    """One row's completion: token ids, their logprobs under the sampling distribution, why it ended, and the text
    cut at a stop string (None when no stop string ended it)."""

    tokens: list[int]
    logprobs: list[float]
    finish: str
    stop_text: str | None = None


@dataclass
class DecodeStats:
    """Work counters, summed over calls (what the benchmark reads)."""

    prompt_tokens: int = 0     # sum of prompt lengths of the sampled rows
    prefill_tokens: int = 0    # prompt tokens actually run through the model
    decode_rows: int = 0       # row-steps run through the model while decoding (one row, one new token)
    new_tokens: int = 0        # completion tokens kept

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


def sample_batch(model, prompts: Sequence[Sequence[int]], row_keys: Sequence[int], seed: int, *,
                 temperature: float, top_p: float, max_new_tokens: int, pad_id: int, eos_ids: set[int],
                 stop_check: Callable[[list[int]], str | None] | None = None, share_prefix: bool = True,
                 drop_finished: bool = True, static_cache: bool = False, min_shared_prefix: int = 16,
                 stats: DecodeStats | None = None) -> list[Sampled]:
    """Sample a completion for every prompt (rows keyed by ``row_keys`` for the sampler). ``stop_check(tokens)``
    returns the text cut after a stop string, or None. See the module docstring for the flags."""
    B = len(prompts)
    pre = prefill(model, prompts, pad_id, share_prefix, min_shared_prefix)
    if stats is not None:
        stats.prompt_tokens += sum(len(p) for p in prompts)
        stats.prefill_tokens += pre.tokens
    if static_cache:
        from baselines.policies.static_decode import StaticDecoder

        step_fn = StaticDecoder(model, pre, row_keys, seed, temperature, top_p, max_new_tokens, pad_id)
    else:
        step_fn = None
    device = pre.logits.device
    tokens: list[list[int]] = [[] for _ in range(B)]
    lps: list[list[float]] = [[] for _ in range(B)]
    stop_texts: list[str | None] = [None] * B
    finish: list[str | None] = [None] * B
    greedy = temperature <= 0
    kw = cache_kw(model)
    rows = list(range(B))  # batch position -> prompt index
    keys = torch.tensor(list(row_keys), dtype=torch.long, device=device)
    cache, logits, mask, next_pos = pre.cache, pre.logits, pre.mask, pre.next_pos
    seed_t = uniform_seed(seed, device) if step_fn is None and not greedy else None
    for step in range(max_new_tokens):
        if step_fn is not None:
            nxt, chosen_t = step_fn.sampled()
        else:
            nxt, chosen_t = _next_tokens(logits, temperature, top_p, seed_t, keys, step)
        ended = _append(rows, nxt.tolist(), chosen_t.tolist(), tokens, lps, finish, stop_texts, eos_ids, stop_check,
                        last=step == max_new_tokens - 1)
        if all(f is not None for f in finish):
            break
        if step_fn is not None:
            if stats is not None:
                stats.decode_rows += B
            step_fn.advance(nxt, [f is not None for f in finish])
            continue
        if drop_finished and ended:
            keep = [j for j, i in enumerate(rows) if finish[i] is None]
            index = torch.tensor(keep, dtype=torch.long, device=device)
            cache.batch_select_indices(index)
            mask, next_pos, nxt, keys = mask[index], next_pos[index], nxt[index], keys[index]
            rows = [rows[j] for j in keep]
        feed = torch.tensor([t if finish[i] is None else pad_id for t, i in zip(nxt.tolist(), rows)],
                            dtype=torch.long, device=device)
        mask = torch.cat([mask, torch.ones((len(rows), 1), dtype=mask.dtype, device=device)], dim=1)
        out, step_logits = forward_logits(model, feed[:, None], mask, next_pos[:, None], 1, use_cache=True,
                                          **{kw: cache})
        cache, logits = get_cache(out), step_logits[:, -1]
        next_pos = next_pos + 1
        if stats is not None:
            stats.decode_rows += len(rows)
    if stats is not None:
        stats.new_tokens += sum(len(t) for t in tokens)
    return [Sampled(t, lp, f, s) for t, lp, f, s in zip(tokens, lps, finish, stop_texts)]


def _next_tokens(logits: torch.Tensor, temperature: float, top_p: float, seed_t: torch.Tensor | None,
                 keys: torch.Tensor, step: int) -> tuple[torch.Tensor, torch.Tensor]:
    """One decode step's tokens (greedy when ``seed_t`` is None, else the keyed Gumbel draw) and their
    log-probabilities under the sampling distribution."""
    logp = process_logits(logits, temperature, top_p)
    nxt = logits.argmax(-1) if seed_t is None else draw_tokens(logp, seed_t, keys, step)
    return nxt, logp.gather(1, nxt[:, None])[:, 0]


def _append(rows: list[int], nxt: list[int], chosen: list[float], tokens: list[list[int]], lps: list[list[float]],
            finish: list[str | None], stop_texts: list[str | None], eos_ids: set[int],
            stop_check: Callable[[list[int]], str | None] | None, last: bool) -> bool:
    """Append this step's token and log-probability to every unfinished row and mark the rows it finishes (eos, a
    stop string, or the ``last`` step: length). Returns whether any row finished now."""
    ended = False
    for j, i in enumerate(rows):
        if finish[i] is not None:
            continue
        tokens[i].append(nxt[j])
        lps[i].append(chosen[j])
        if nxt[j] in eos_ids:
            finish[i] = "eos"
        elif stop_check is not None:
            cut = stop_check(tokens[i])
            if cut is not None:
                finish[i], stop_texts[i] = "stop", cut
        if finish[i] is None and last:
            finish[i] = "length"
        ended = ended or finish[i] is not None
    return ended


def uniform_seed(seed: int, device) -> torch.Tensor:
    """The 0-d int64 tensor that :func:`gumbel_noise` mixes a Python int seed into (both 32-bit halves)."""
    seed = int(seed) % 2**64
    hi = int(_hash32(torch.tensor(seed >> 32)).item())
    return torch.tensor(hi ^ (seed & _M32), dtype=torch.long, device=device)
