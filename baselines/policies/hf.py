"""A transformers backend for the policy protocol (CPU or one GPU): free generation or choice among legal moves.

:class:`TransformersPolicy` has two modes.

``mode="generate"``: batched sampling with a KV cache. Prompts are the env's observation text, wrapped in the
tokenizer's chat template when it has one (one user message, after an optional system message), left-padded, with
position ids taken from the attention mask so that a batched row computes what the same row computes alone. Each
step samples from the **sampling distribution**: ``softmax(logits / temperature)`` restricted to the top-p nucleus
(the smallest set of most likely tokens whose probability reaches ``top_p``) and renormalised. ``Generation.logprobs``
holds each sampled token's log-probability under exactly that distribution, so a fresh forward pass over
``prompt_ids + completion_ids`` scored the same way (:func:`sequence_logprobs`) gives the same numbers.
``temperature=0`` is greedy decoding; its logprobs are then reported under the plain model distribution
(temperature 1, no top-p), the distribution a policy gradient on a greedy rollout would differentiate.
A completion ends at an EOS token (kept in ``completion_ids``), at the first stop string (``completion_ids`` keep the
tokens up to and including the one that completed it; ``text`` is cut right after the stop string, which it
includes) or after ``max_new_tokens`` (``extra["finish_reason"]`` is ``"eos"``, ``"stop"`` or ``"length"``).
Token ids are never re-tokenized from text. ``action`` is the decoded completion text.

``mode="choice"``: for a request with ``legal_actions``, every legal action string is tokenized (without special
tokens) and scored as a continuation of the prompt in one batched forward pass; the action is drawn from
``softmax(loglik / temperature)`` over the legal actions (argmax at ``temperature=0``). ``completion_ids`` are the
chosen action's tokens and ``logprobs`` their per-token log-probabilities under the model (temperature 1, so their
sum is the action's log-likelihood). ``extra`` has ``choice_logprob`` (log of the chosen action's normalised
probability among the legal ones: the log-probability of the decision that was actually sampled; use it, not
``sum(logprobs)``, for a policy gradient over choices), ``choice_probs`` and ``choice_logliks`` (lists aligned with
``request.legal_actions``) and ``choice_index``. At ``temperature=0`` the reported probabilities are
``softmax(loglik)``. Requests without legal actions (free-text turns) are generated in the same call.

Sampling uses a private ``torch.Generator`` seeded from ``generate(..., seed=s)`` (a fresh random seed when
``seed`` is None); the global torch RNG is never touched, and the same seed gives the same outputs on CPU.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

import torch

from baselines.policies.base import Generation, Policy, Request
from baselines.policies.prompts import chat_prompt_ids

__all__ = ["TransformersPolicy", "process_logits", "sequence_logprobs"]

MODES = ("generate", "choice")


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


def _forward_logits(model, input_ids, attention_mask, position_ids, keep: int, **kw):
    try:
        out = model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                    logits_to_keep=keep, **kw)
        return out, out.logits
    except TypeError:  # a model without logits_to_keep
        out = model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids, **kw)
        return out, out.logits[:, -keep:]


def _cache_kw(model) -> str:
    """The forward() keyword of the KV cache: ``cache`` in recent transformers, ``past_key_values`` before."""
    try:
        params = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return "past_key_values"
    return "cache" if "cache" in params else "past_key_values"


def _get_cache(out):
    cache = getattr(out, "cache", None)
    return cache if cache is not None else getattr(out, "past_key_values", None)


def _left_pad(prompts: Sequence[Sequence[int]], pad_id: int, device) -> tuple[torch.Tensor, ...]:
    """Prompts as one left-padded batch: ``(ids, attention mask, position ids)``, every prompt ending at the last
    column and positions counted from each prompt's first real token."""
    B, L = len(prompts), max(len(p) for p in prompts)
    ids = torch.full((B, L), pad_id, dtype=torch.long)
    mask = torch.zeros((B, L), dtype=torch.long)
    for i, p in enumerate(prompts):
        ids[i, L - len(p):] = torch.tensor(list(p), dtype=torch.long)
        mask[i, L - len(p):] = 1
    ids, mask = ids.to(device), mask.to(device)
    return ids, mask, (mask.cumsum(-1) - 1).clamp(min=0)


def sequence_logprobs(model, prompt_ids: Sequence[Sequence[int]], completion_ids: Sequence[Sequence[int]],
                      temperature: float = 1.0, top_p: float = 1.0, pad_id: int = 0) -> list[torch.Tensor]:
    """Per-token log-probabilities of each completion given its prompt, in one batched forward pass.

    Rows are laid out ``[pad.., prompt, completion, pad..]`` with every prompt ending at the same column, position
    ids from the attention mask, and logits computed only for the completion columns. ``temperature``/``top_p``
    select the distribution (see :func:`process_logits`; pass the policy's settings to reproduce its recorded
    logprobs). Returns one float32 tensor per row (length = that completion's length); differentiable when called
    with grad enabled (a trainer's use).
    """
    if len(prompt_ids) != len(completion_ids):
        raise ValueError("prompt_ids and completion_ids must have the same length")
    if not prompt_ids:
        return []
    device = next(model.parameters()).device
    P = max(len(p) for p in prompt_ids)
    C = max(len(c) for c in completion_ids)
    if C == 0:
        return [torch.zeros(0, device=device) for _ in prompt_ids]
    B = len(prompt_ids)
    ids = torch.full((B, P + C), pad_id, dtype=torch.long)
    mask = torch.zeros((B, P + C), dtype=torch.long)
    targets = torch.zeros((B, C), dtype=torch.long)
    for i, (p, c) in enumerate(zip(prompt_ids, completion_ids)):
        if not p:
            raise ValueError("every prompt needs at least one token")
        ids[i, P - len(p):P] = torch.tensor(list(p), dtype=torch.long)
        ids[i, P:P + len(c)] = torch.tensor(list(c), dtype=torch.long)
        mask[i, P - len(p):P + len(c)] = 1
        targets[i, :len(c)] = torch.tensor(list(c), dtype=torch.long)
    ids, mask, targets = ids.to(device), mask.to(device), targets.to(device)
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    _, logits = _forward_logits(model, ids, mask, pos, C + 1, use_cache=False)
    logp = process_logits(logits[:, :C], temperature, top_p)
    picked = logp.gather(-1, targets[..., None])[..., 0]
    return [picked[i, :len(c)] for i, c in enumerate(completion_ids)]


class TransformersPolicy(Policy):
    """A transformers causal LM behind the policy protocol (see the module docstring for the two modes).

    ``batch_size`` caps how many sequences go through the model at once (``None``: the whole call's batch).
    """

    def __init__(self, model, tokenizer, mode: str = "generate", temperature: float = 1.0, top_p: float = 1.0,
                 max_new_tokens: int = 64, stop: Sequence[str] | str | None = None, use_chat_template: bool = True,
                 system_prompt: str | None = None, name: str | None = None, batch_size: int | None = None) -> None:
        if mode not in MODES:
            raise ValueError(f"mode={mode!r} is not one of {list(MODES)}")
        if temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {temperature}")
        if not 0.0 < top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1], got {top_p}")
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.mode = mode
        self.temperature = float(temperature)
        self.top_p = float(top_p)
        self.max_new_tokens = int(max_new_tokens)
        self.stop = [stop] if isinstance(stop, str) else [s for s in (stop or []) if s]
        self.use_chat_template = use_chat_template
        self.system_prompt = system_prompt
        self.batch_size = batch_size
        model_name = getattr(model.config, "name_or_path", "") or type(model).__name__
        self.name = name or f"hf:{model_name}:{mode}"
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        if self.pad_id is None:
            raise ValueError("the tokenizer has neither a pad token nor an eos token")
        eos: set[int] = set()
        for source in (tokenizer.eos_token_id, getattr(getattr(model, "generation_config", None), "eos_token_id",
                                                       None)):
            if isinstance(source, int):
                eos.add(source)
            elif source:
                eos.update(int(s) for s in source)
        self.eos_ids = eos

    @classmethod
    def from_name(cls, name: str, device: str = "cpu", dtype: Any = None, **kw) -> TransformersPolicy:
        """Load a model with :func:`baselines.models.load_model` and wrap it."""
        from baselines.models import load_model

        model, tokenizer = load_model(name, device=device, dtype=dtype)
        kw.setdefault("name", f"hf:{name}:{kw.get('mode', 'generate')}")
        return cls(model, tokenizer, **kw)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    # ------------------------------------------------------------------ prompts
    def encode_prompt(self, text: str) -> list[int]:
        """The prompt token ids for an observation text (chat template when available)."""
        return chat_prompt_ids(self.tokenizer, text, self.system_prompt, self.use_chat_template)

    def _new_generator(self, seed: int | None) -> torch.Generator:
        gen = torch.Generator(device=self.device)
        if seed is None:
            gen.seed()
        else:
            gen.manual_seed(int(seed))
        return gen

    def _chunks(self, n: int):
        size = self.batch_size or max(n, 1)
        for start in range(0, n, size):
            yield range(start, min(n, start + size))

    # ------------------------------------------------------------------ protocol
    def generate(self, requests: Sequence[Request], seed: int | None = None) -> list[Generation]:
        requests = list(requests)
        gen = self._new_generator(seed)
        prompts = [self.encode_prompt(r.text) for r in requests]
        out: list[Generation | None] = [None] * len(requests)
        if self.mode == "choice":
            choice_idx = [i for i, r in enumerate(requests) if r.legal_actions]
        else:
            choice_idx = []
        chosen = set(choice_idx)
        free_idx = [i for i in range(len(requests)) if i not in chosen]
        with torch.inference_mode():
            for chunk in self._chunks(len(free_idx)):
                idx = [free_idx[j] for j in chunk]
                for i, g in zip(idx, self._sample([prompts[i] for i in idx], gen)):
                    out[i] = g
            if choice_idx:
                for i, g in zip(choice_idx, self._choose([prompts[i] for i in choice_idx],
                                                         [requests[i].legal_actions for i in choice_idx], gen)):
                    out[i] = g
        return out  # type: ignore[return-value]

    def close(self) -> None:
        self.model = None
        if torch.cuda.is_available():
            torch.cuda.empty_cache()

    # ------------------------------------------------------------------ generate mode
    def _stop_cut(self, text: str) -> int | None:
        """End (exclusive) of the first stop string in ``text``, or None."""
        best = None
        for s in self.stop:
            k = text.find(s)
            if k >= 0 and (best is None or k < best[0]):
                best = (k, k + len(s))
        return None if best is None else best[1]

    def _sample(self, prompts: list[list[int]], gen: torch.Generator) -> list[Generation]:
        if not prompts:
            return []
        model, device, tok = self.model, self.device, self.tokenizer
        B = len(prompts)
        ids, mask, pos = _left_pad(prompts, self.pad_id, device)
        out, logits = _forward_logits(model, ids, mask, pos, 1, use_cache=True)
        next_pos = mask.sum(-1)
        tokens: list[list[int]] = [[] for _ in range(B)]
        lps: list[list[float]] = [[] for _ in range(B)]
        texts: list[str | None] = [None] * B
        finish: list[str | None] = [None] * B
        greedy = self.temperature <= 0
        cache_kw = _cache_kw(model)
        for step in range(self.max_new_tokens):
            logp = process_logits(logits[:, -1], self.temperature, self.top_p)
            if greedy:
                nxt = logits[:, -1].argmax(-1)
            else:
                nxt = torch.multinomial(logp.exp(), 1, generator=gen)[:, 0]
            chosen = logp.gather(1, nxt[:, None])[:, 0].tolist()
            nxt_list = nxt.tolist()
            for i in range(B):
                if finish[i] is not None:
                    continue
                tokens[i].append(nxt_list[i])
                lps[i].append(chosen[i])
                if nxt_list[i] in self.eos_ids:
                    finish[i] = "eos"
                elif self.stop:
                    text = tok.decode(tokens[i], skip_special_tokens=True)
                    cut = self._stop_cut(text)
                    if cut is not None:
                        finish[i], texts[i] = "stop", text[:cut]
                if finish[i] is None and step == self.max_new_tokens - 1:
                    finish[i] = "length"
            if all(f is not None for f in finish):
                break
            feed = torch.tensor([t if f is None else self.pad_id for t, f in zip(nxt_list, finish)],
                                dtype=torch.long, device=device)
            mask = torch.cat([mask, torch.ones((B, 1), dtype=mask.dtype, device=device)], dim=1)
            out, logits = _forward_logits(model, feed[:, None], mask, next_pos[:, None], 1,
                                          use_cache=True, **{cache_kw: _get_cache(out)})
            next_pos = next_pos + 1
        gens = []
        for i in range(B):
            text = texts[i] if texts[i] is not None else tok.decode(tokens[i], skip_special_tokens=True)
            gens.append(Generation(action=text, text=text, prompt_ids=list(prompts[i]), completion_ids=tokens[i],
                                   logprobs=lps[i], extra={"finish_reason": finish[i], "mode": "generate"}))
        return gens

    # ------------------------------------------------------------------ choice mode
    def _score_with_shared_prompt(self, prompts: list[list[int]], action_ids: list[list[list[int]]]
                                  ) -> list[torch.Tensor]:
        """Per-token log-likelihoods of every legal action of every prompt, each prompt run through the model once.

        The prompts go through one left-padded forward pass that keeps the KV cache; the cache rows are then repeated
        per action (``batch_select_indices``) and all actions are scored in a second pass, so the cost is one pass
        over the prompts plus one over the short action strings, not one pass per (prompt, action) pair. Equal to
        :func:`sequence_logprobs` on each pair (tested)."""
        model, device = self.model, self.device
        ids, mask, pos = _left_pad(prompts, self.pad_id, device)
        out, last = _forward_logits(model, ids, mask, pos, 1, use_cache=True)
        cache = _get_cache(out)
        owner = [i for i, acts in enumerate(action_ids) for _ in acts]
        flat = [a for acts in action_ids for a in acts]
        index = torch.tensor(owner, dtype=torch.long, device=device)
        cache.batch_select_indices(index)
        n, L = len(flat), max(len(a) for a in flat)
        a_ids = torch.full((n, L), self.pad_id, dtype=torch.long)
        a_mask = torch.zeros((n, L), dtype=torch.long)
        for j, a in enumerate(flat):
            a_ids[j, :len(a)] = torch.tensor(a, dtype=torch.long)
            a_mask[j, :len(a)] = 1
        a_ids, a_mask = a_ids.to(device), a_mask.to(device)
        lengths = mask.sum(-1)[index]
        a_pos = lengths[:, None] + torch.arange(L, device=device)[None]
        full_mask = torch.cat([mask[index], a_mask], dim=1)
        out2 = model(input_ids=a_ids, attention_mask=full_mask, position_ids=a_pos, use_cache=True,
                     **{_cache_kw(model): cache})
        logits = torch.cat([last[index], out2.logits[:, :-1]], dim=1)
        logp = torch.log_softmax(logits.float(), dim=-1).gather(-1, a_ids[..., None])[..., 0]
        return [logp[j, :len(a)] for j, a in enumerate(flat)]

    def _choose(self, prompts: list[list[int]], legal: list[tuple[str, ...]], gen: torch.Generator
                ) -> list[Generation]:
        tok = self.tokenizer
        pair_prompt, pair_action, owner = [], [], []
        action_ids: list[list[list[int]]] = []
        for i, (p, acts) in enumerate(zip(prompts, legal)):
            ids_i = []
            for a in acts:
                a_ids = list(tok(a, add_special_tokens=False)["input_ids"])
                if not a_ids:
                    raise ValueError(f"legal action {a!r} tokenizes to nothing")
                ids_i.append(a_ids)
                pair_prompt.append(p)
                pair_action.append(a_ids)
                owner.append(i)
            action_ids.append(ids_i)
        scores: list[torch.Tensor] = []
        for chunk in self._chunks(len(prompts)):
            try:
                scores.extend(self._score_with_shared_prompt([prompts[i] for i in chunk],
                                                             [action_ids[i] for i in chunk]))
            except (AttributeError, TypeError, NotImplementedError):  # no batch-selectable KV cache: score pairs
                pairs = [(prompts[i], a) for i in chunk for a in action_ids[i]]
                scores.extend(sequence_logprobs(self.model, [p for p, _ in pairs], [a for _, a in pairs],
                                                pad_id=self.pad_id))
        gens, k = [], 0
        for i, acts in enumerate(legal):
            per_token = [s.float().cpu() for s in scores[k:k + len(acts)]]
            k += len(acts)
            ll = torch.stack([t.sum() for t in per_token])
            if self.temperature <= 0:
                logq = torch.log_softmax(ll, dim=0)
                c = int(ll.argmax())
            else:
                logq = torch.log_softmax(ll / self.temperature, dim=0)
                c = int(torch.multinomial(logq.exp().to(gen.device), 1, generator=gen)[0])
            gens.append(Generation(
                action=acts[c], text=acts[c], prompt_ids=list(prompts[i]), completion_ids=list(action_ids[i][c]),
                logprobs=per_token[c].tolist(),
                extra={"mode": "choice", "choice_index": c, "choice_logprob": float(logq[c]),
                       "choice_probs": logq.exp().tolist(), "choice_logliks": ll.tolist()}))
        return gens
