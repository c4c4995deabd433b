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

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

from baselines.policies.sampling import Prefill, cache_kw, draw_tokens, gumbel_noise, process_logits, uniform_seed
from baselines.policies.static_decode import StaticDecoder

# draw_tokens, gumbel_noise, process_logits, Prefill and cache_kw live in baselines.policies.sampling (shared with
# the static-cache decoder) and are importable from here as before
__all__ = ["Prefill", "PrefixPlan", "cache_kw", "draw_tokens", "gumbel_noise", "plan_prefixes", "process_logits",
           "sample_batch"]


# ---------------------------------------------------------------------------------------------- model helpers
def forward_logits(model, input_ids, attention_mask, position_ids, keep: int, **kw):
    """``(output, logits of the last keep positions)``."""
    try:
        out = model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                    logits_to_keep=keep, **kw)
        return out, out.logits
    except TypeError:  # a model without logits_to_keep
        out = model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids, **kw)
        return out, out.logits[:, -keep:]


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

    def saves(self, rows: int) -> bool:
        """Whether prefilling by this plan computes less than one row per prompt (of ``rows``): some prompt repeats
        or some prefix is shared."""
        return len(self.unique) < rows or self.shared

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
