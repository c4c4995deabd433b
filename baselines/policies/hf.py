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
Token ids are never re-tokenized from text. ``action`` is the decoded completion text; ``choice`` is None.

``mode="choice"``: for a request with ``legal_actions`` the policy is a distribution over the legal moves,
``softmax(score / temperature)`` (argmax at ``temperature=0``), where ``choice_scoring`` says what a move's score is:

* ``"label"`` (default): the prompt is the observation followed by a labelled menu of the moves
  (:func:`~baselines.policies.prompts.label_menu`: ``Choices: (A) [check] (B) [bet]`` and ``Answer with the letter
  of your choice.``), and a move's score is the log-probability of its label as the next token (one token
  each, :func:`~baselines.policies.prompts.choice_labels`: a move that is one letter or digit, such as a
  multiple-choice answer's ``[B]`` or a board cell ``[4]``, is labelled by that character, so a teammate's "I think
  the answer is (B)" is answered ``B`` and not through a look-up in the menu; the other moves get the first unused
  characters of ``A``..``Z``, ``a``..``z``, ``0``..``9``; at most 62 moves). The verbalized multiple-choice format;
  every move costs one token, however long its text, so the policy starts out spread over the moves.
* ``"mean"``: the move's text is scored as a continuation of the plain prompt, and its score is the mean of its
  tokens' log-probabilities (length-normalized log-likelihood).
* ``"sum"``: the same, summed (the move's log-likelihood; GLAM's scoring, Carta et al. 2023, "Grounding Large
  Language Models in Interactive Environments with Online Reinforcement Learning", ICML).

Why "label" is the default (measured 2026-12-03, ``benchmarks/RESULTS.md``, "LLM teams on the shortcut-free clue
task"; ``python benchmarks/choice_entropy.py tiny smollm2-135m``): step-0 entropy of the choice distribution over 32
episodes (Kuhn poker player_0 against a random partner, max ln 2 = 0.693; the clue task's solver, max ln 4 = 1.386):
``tiny`` label 0.651 / 1.171, mean 0.692 / 1.275, sum 0.0002 / 0.664; SmolLM2-135M label 0.4925 / 1.014, mean
0.453 / 1.371, sum 0.052 / 1.238. With ``"sum"`` moves of different length sit nats apart, so the policy starts
(near) deterministic on Kuhn and a policy gradient has nothing to push on; ``"label"`` and ``"mean"`` start well
spread. ``"label"`` is the default because a move then costs one token, whatever its text (one forward pass over
the prompt, no second pass over the moves), and it is the verbalized multiple-choice format instruction-tuned models
read. With it the random-init ``tiny`` solver of the bare-label clue task learns, on a CPU in a few minutes, to
answer each of the task's four solver prompts with the hinted letter: a memorised table, not hint-following (with
the labels renamed it is at chance; ``tests/baselines/train/test_tiny_probe.py``); untrained SmolLM2-135M already leans
towards the hinted letter (P(answer = hint) 0.30 on the four solver prompts, against 0.25 when the moves were labelled
by digits).

All moves of a request are scored in one batched forward pass: the prompt once, then (``"sum"``/``"mean"``) the moves'
tokens on its KV cache. ``prompt_ids`` are the ids the model saw (with the menu in ``"label"`` mode),
``completion_ids`` the chosen move's scored tokens (its label token in ``"label"`` mode, else its text's tokens) and
``logprobs`` their per-token log-probabilities under the model (temperature 1). ``choice`` is a
:class:`~baselines.policies.base.Choice`: ``index`` (the chosen move's position in ``request.legal_actions``),
``logprob`` (log of the chosen move's probability under the policy: the log-probability of the decision that was
actually sampled; a policy gradient over choices uses it, not ``sum(logprobs)``), ``probs``, ``logliks`` (each move's
summed scored log-probabilities: its text's log-likelihood, or its label's log-probability), ``scores`` (the scores
above), all lists aligned with ``request.legal_actions``, and ``scoring``. At ``temperature=0`` the reported
probabilities are ``softmax(score)``. :meth:`TransformersPolicy.choice_log_policy` computes the same distribution
(differentiably) for a trainer. Requests without legal actions (free-text turns) are generated in the same call.

Sampling is seeded by ``generate(..., seed=s)`` (a fresh random seed when ``seed`` is None); the global torch RNG is
never touched, and the same seed gives the same outputs on CPU. In generate mode each request draws its tokens from a
counter-based stream keyed by ``(seed, its index in the call, step)`` (see :mod:`baselines.policies.decoding`), so
its completion does not depend on the other requests of the call, on ``batch_size`` or on the fast paths; choice
mode draws from a private ``torch.Generator`` seeded with ``s``.

Fast paths (constructor flags, so a run or a test can compare them with the plain path, where they are all off):
``share_prefix`` prefills identical prompts (a GRPO group, the K resamples of a branch point) once and distinct
prompts with a common prefix of at least ``min_shared_prefix`` tokens (a system prompt, a game's rules header) with
that prefix once, in both modes (default on); ``drop_finished`` removes rows that ended from the decode batch
(default on); ``static_cache``
(off by default) decodes on a fixed-size KV cache, the step captured in a CUDA graph on CUDA (untested on a GPU so
far). Greedy episodes and sampled tokens are the same with and without them, and logprobs agree to float32 rounding
(``tests/equivalence/test_fast_generation.py``). ``stats`` counts prompt tokens, prefill tokens actually computed,
decode row-steps and new tokens over the policy's life (what ``benchmarks/rollout_throughput.py`` reports).

On a GPU, :class:`baselines.policies.vllm.VLLMPolicy` stays the recommended backend where vLLM installs (paged KV
cache, continuous batching, CUDA graphs of its own); this class with ``static_cache=True`` is the transformers-only
option there (bf16 weights, logprobs from float32 logits), and the plain/fast paths work on any device.

Context limit. The context is ``max_context`` (default: the model config's ``max_position_embeddings`` or
``n_positions``, else the tokenizer's ``model_max_length``). A request needs its prompt plus ``max_new_tokens`` (choice
mode: plus its longest legal action) to fit. ``context_policy="truncate"`` (default) keeps the prompt's head (BOS,
system message, user-turn marker: what the prompt of an empty observation starts with) when it is at most half the
budget, and the last tokens of the prompt, dropping the oldest part of the observation in between;
``extra["prompt_truncated"]`` is the number of dropped tokens and ``prompt_ids`` are the ids the model saw.
``context_policy="refuse"`` answers such a request with an empty action (the env's invalid-move policy then
applies), no tokens and ``extra["finish_reason"] = "context_limit"``. Neither reaches the model with a prompt it
cannot hold.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from baselines.models import load_model
from baselines.policies.base import Choice, Generation, Policy, Request, set_decoding
from baselines.policies.decoding import (
    DecodeStats,
    cache_kw,
    forward_logits,
    plan_prefixes,
    prefill,
    process_logits,
    sample_batch,
)
from baselines.policies.prompts import chat_prompt_ids, label_menu, label_token_ids, move_token_ids

__all__ = ["CHOICE_SCORINGS", "DEFAULT_CHOICE_SCORING", "TransformersPolicy", "process_logits", "sequence_logprobs"]

MODES = ("generate", "choice")
CHOICE_SCORINGS = ("label", "mean", "sum")
DEFAULT_CHOICE_SCORING = "label"
CONTEXT_POLICIES = ("truncate", "refuse")


def _model_context(model, tokenizer) -> int | None:
    """The model's context length: ``max_position_embeddings`` / ``n_positions`` of its config, else the tokenizer's
    ``model_max_length`` when that is a real limit; None when neither says."""
    config = getattr(model, "config", None)
    for attr in ("max_position_embeddings", "n_positions"):
        n = getattr(config, attr, None)
        if isinstance(n, int) and n > 0:
            return n
    n = getattr(tokenizer, "model_max_length", None)
    return n if isinstance(n, int) and 0 < n < 10**9 else None


def sequence_logprobs(model, prompt_ids: Sequence[Sequence[int]], completion_ids: Sequence[Sequence[int]],
                      temperature: float = 1.0, top_p: float = 1.0, pad_id: int = 0, with_entropy: bool = False,
                      share_prefix: bool = False, min_shared_prefix: int = 16):
    """Per-token log-probabilities of each completion given its prompt, in one batched forward pass; with
    ``with_entropy``, ``(log-probabilities, entropies)``: also the entropy of the same distribution at each
    completion token (a trainer's entropy bonus over free text).

    Rows are laid out ``[pad.., prompt, completion, pad..]`` with every prompt ending at the same column, position
    ids from the attention mask, and logits computed only for the completion columns. ``temperature``/``top_p``
    select the distribution (see :func:`process_logits`; pass the policy's settings to reproduce its recorded
    logprobs). Returns one float32 tensor per row (length = that completion's length); differentiable when called
    with grad enabled (a trainer's use).

    ``share_prefix``: when prompts repeat (a GRPO group's samples share one prompt) or share a prefix of at least
    ``min_shared_prefix`` tokens, each distinct prompt (and shared prefix) runs through the model once
    (:func:`~baselines.policies.decoding.prefill`), its KV cache rows are gathered for every completion of it, and
    the completions run on top: the cost is one pass over the distinct prompts plus one over the completions, not
    one over every (prompt, completion) row. Same numbers as the plain path to float32 rounding, and the same
    gradient (tested), because it is the same function of the weights computed once:

    *Proof.* Write the plain path's loss as ``L(w) = sum_i f_i(w, h(w, p_i))``, where ``h(w, p)`` is the KV cache
    (every layer's keys and values) of prompt ``p`` under weights ``w`` and ``f_i`` the rest of row ``i``'s
    computation (its completion attending to that cache, its log-probabilities, its weight in the loss). A causal
    model's cache of ``p`` does not depend on what follows ``p``, so rows with the same prompt hold the same ``h``.
    The shared path computes ``h_u = h(w, p_u)`` once per distinct prompt ``u`` and gathers it to every row ``i``
    with ``p_i = p_u``: ``L_s(w) = sum_u sum_{i: p_i = p_u} f_i(w, h_u)``, the same terms, so ``L_s = L`` at every
    ``w``. By the chain rule ``dL/dw = sum_i df_i/dw + sum_u J_u^T (sum_{i: p_i = p_u} df_i/dh)``, with ``J_u`` the
    Jacobian of ``h_u`` in ``w``: one backward through ``h_u`` with its rows' cotangents summed, which is what
    autograd's backward of the gather (an ``index_select``: it adds the gradients of the rows it copied into their
    source row) computes. The same argument, applied to a shared prefix and the rests of the prompts that follow it,
    covers prefix sharing. So sharing changes no loss value and no gradient, only the work: a group of ``G`` samples
    with prompt length ``P`` and completion length ``C`` costs
    ``P + G * C`` token positions instead of ``G * (P + C)``.
    """
    if len(prompt_ids) != len(completion_ids):
        raise ValueError("prompt_ids and completion_ids must have the same length")
    if not prompt_ids:
        return ([], []) if with_entropy else []
    device = next(model.parameters()).device
    P = max(len(p) for p in prompt_ids)
    C = max(len(c) for c in completion_ids)
    if C == 0:
        empty = [torch.zeros(0, device=device) for _ in prompt_ids]
        return (empty, list(empty)) if with_entropy else empty
    if share_prefix and any(not p for p in prompt_ids):
        raise ValueError("every prompt needs at least one token")
    if share_prefix and plan_prefixes(prompt_ids, min_shared_prefix).saves(len(prompt_ids)):
        try:
            logits = _completion_logits_shared(model, prompt_ids, completion_ids, pad_id, min_shared_prefix)
        except (AttributeError, TypeError, NotImplementedError):   # no batch-selectable KV cache: the plain path
            logits = None
        if logits is not None:
            return _scored(logits, completion_ids, temperature, top_p, with_entropy, device)
    B = len(prompt_ids)
    ids = torch.full((B, P + C), pad_id, dtype=torch.long)
    mask = torch.zeros((B, P + C), dtype=torch.long)
    for i, (p, c) in enumerate(zip(prompt_ids, completion_ids)):
        if not p:
            raise ValueError("every prompt needs at least one token")
        ids[i, P - len(p):P] = torch.tensor(list(p), dtype=torch.long)
        ids[i, P:P + len(c)] = torch.tensor(list(c), dtype=torch.long)
        mask[i, P - len(p):P + len(c)] = 1
    ids, mask = ids.to(device), mask.to(device)
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    _, logits = forward_logits(model, ids, mask, pos, C + 1, use_cache=False)
    return _scored(logits[:, :C], completion_ids, temperature, top_p, with_entropy, device)


def _completion_logits_shared(model, prompt_ids, completion_ids, pad_id: int, min_shared_prefix: int) -> torch.Tensor:
    """The logits predicting every completion token, ``(rows, C, V)``, with each distinct prompt (and shared prefix)
    prefilled once and the completions run on its gathered KV cache (:func:`sequence_logprobs`, ``share_prefix``)."""
    pre = prefill(model, prompt_ids, pad_id, True, min_shared_prefix)
    device = pre.logits.device
    C = max(len(c) for c in completion_ids)
    last = pre.logits[:, None]              # predicts each completion's first token
    if C == 1:
        return last
    rest = [list(c[:-1]) for c in completion_ids]       # the tokens whose logits predict the next ones
    ids = torch.full((len(rest), C - 1), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rest), C - 1), dtype=torch.long)
    for i, c in enumerate(rest):
        if c:
            ids[i, :len(c)] = torch.tensor(c, dtype=torch.long)
            mask[i, :len(c)] = 1
    ids, mask = ids.to(device), mask.to(device)
    pos = pre.next_pos[:, None] + torch.arange(C - 1, device=device)[None]
    out = model(input_ids=ids, attention_mask=torch.cat([pre.mask, mask], dim=1), position_ids=pos, use_cache=True,
                **{cache_kw(model): pre.cache})
    return torch.cat([last, out.logits], dim=1)


def _scored(logits: torch.Tensor, completion_ids, temperature: float, top_p: float, with_entropy: bool, device):
    """Each completion's tokens' log-probabilities (and with ``with_entropy`` the entropies) from ``logits``
    ``(rows, C, V)``, the logits predicting completion position ``0..C-1`` of each row."""
    C = logits.shape[1]
    targets = torch.zeros((len(completion_ids), C), dtype=torch.long)
    for i, c in enumerate(completion_ids):
        targets[i, :len(c)] = torch.tensor(list(c), dtype=torch.long)
    targets = targets.to(device)
    logp = process_logits(logits, temperature, top_p)
    picked = logp.gather(-1, targets[..., None])[..., 0]
    rows = [picked[i, :len(c)] for i, c in enumerate(completion_ids)]
    if not with_entropy:
        return rows
    # H = -sum_v p_v log p_v of the scored distribution at each completion position (tokens outside a top-p
    # nucleus have p = 0 and add nothing; their -inf is replaced before the product so 0 * -inf is not NaN)
    ent = -(logp.exp() * logp.masked_fill(~torch.isfinite(logp), 0.0)).sum(-1)
    return rows, [ent[i, :len(c)] for i, c in enumerate(completion_ids)]


class TransformersPolicy(Policy):
    """A transformers causal LM behind the policy protocol (see the module docstring for the two modes).

    ``batch_size`` caps how many sequences go through the model at once (``None``: the whole call's batch).
    ``share_prefix``, ``drop_finished``, ``static_cache``, ``min_shared_prefix``: the fast paths;
    ``max_context``, ``context_policy``: the context limit; ``choice_scoring``: ``"label"``, ``"mean"`` or ``"sum"``
    (all in the module docstring).
    """

    def __init__(self, model, tokenizer, mode: str = "generate", temperature: float = 1.0, top_p: float = 1.0,
                 max_new_tokens: int = 64, stop: Sequence[str] | str | None = None, use_chat_template: bool = True,
                 system_prompt: str | None = None, name: str | None = None, batch_size: int | None = None,
                 share_prefix: bool = True, drop_finished: bool = True, static_cache: bool = False,
                 min_shared_prefix: int = 16, max_context: int | None = None,
                 context_policy: str = "truncate", choice_scoring: str = DEFAULT_CHOICE_SCORING) -> None:
        if choice_scoring not in CHOICE_SCORINGS:
            raise ValueError(f"choice_scoring={choice_scoring!r} is not one of {list(CHOICE_SCORINGS)}")
        if context_policy not in CONTEXT_POLICIES:
            raise ValueError(f"context_policy={context_policy!r} is not one of {list(CONTEXT_POLICIES)}")
        if min_shared_prefix < 1:
            raise ValueError(f"min_shared_prefix must be >= 1, got {min_shared_prefix}")
        set_decoding(self, mode=mode, modes=MODES, temperature=temperature, top_p=top_p,
                     max_new_tokens=max_new_tokens, stop=stop, use_chat_template=use_chat_template,
                     system_prompt=system_prompt)
        self.model = model.eval()
        self.tokenizer = tokenizer
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
        self.share_prefix = bool(share_prefix)
        self.drop_finished = bool(drop_finished)
        self.static_cache = bool(static_cache)
        self.min_shared_prefix = int(min_shared_prefix)
        self.context_policy = context_policy
        self.choice_scoring = choice_scoring
        self._label_ids: dict[str, int] | None = None
        self.max_context = int(max_context) if max_context is not None else _model_context(model, tokenizer)
        if self.max_context is not None and self.max_context <= max_new_tokens:
            raise ValueError(f"max_new_tokens={max_new_tokens} leaves no room for a prompt in the model's context of "
                             f"{self.max_context} tokens; lower max_new_tokens")
        self._head: list[int] | None = None
        self.stats = DecodeStats()

    @classmethod
    def from_name(cls, name: str, device: str = "cpu", dtype: Any = None, **kw) -> TransformersPolicy:
        """Load a model with :func:`baselines.models.load_model` and wrap it."""
        model, tokenizer = load_model(name, device=device, dtype=dtype)
        kw.setdefault("name", f"hf:{name}:{kw.get('mode', 'generate')}")
        return cls(model, tokenizer, **kw)

    def settings(self) -> dict[str, Any]:
        out = super().settings()
        if self.mode == "choice":     # how the recorded choice log-probabilities were computed
            out["choice_scoring"] = self.choice_scoring
        return out

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

    # ------------------------------------------------------------------ context limit
    def fit_prompt(self, ids: list[int], room: int) -> list[int] | None:
        """The prompt cut to leave ``room`` tokens of the context (see the module docstring), or None when
        ``context_policy="refuse"`` and it does not fit. Unchanged when it fits."""
        if self.max_context is None or len(ids) + room <= self.max_context:
            return ids
        if self.context_policy == "refuse":
            return None
        budget = self.max_context - room
        if self._head is None:
            self._head = self.encode_prompt("")
        head = 0
        for x, y in zip(ids, self._head):
            if x != y:
                break
            head += 1
        if head > budget // 2:
            head = 0
        return ids[:head] + ids[len(ids) - (budget - head):]

    def _refused(self, prompt: list[int]) -> Generation:
        return Generation(action="", text="", prompt_ids=prompt, completion_ids=[], logprobs=[],
                          extra={"finish_reason": "context_limit", "prompt_tokens": len(prompt),
                                 "max_context": self.max_context})

    # ------------------------------------------------------------------ protocol
    def generate(self, requests: Sequence[Request], seed: int | None = None) -> list[Generation]:
        requests = list(requests)
        gen = self._new_generator(seed)
        seed = gen.initial_seed() if seed is None else int(seed)
        full = [self.encode_prompt(r.text) for r in requests]
        out: list[Generation | None] = [None] * len(requests)
        choice_idx, free_idx = [], []
        prompts: list[list[int]] = [[] for _ in requests]
        action_ids: dict[int, list[list[int]]] = {}
        for i, r in enumerate(requests):
            if self.mode == "choice" and r.legal_actions:
                action_ids[i] = self.move_ids(r.legal_actions)
                if self.choice_scoring == "label":
                    full[i] = self.encode_prompt(label_menu(r.text, r.legal_actions))
                room = max(len(a) for a in action_ids[i])
                mode = "choice"
            else:
                room, mode = self.max_new_tokens, "generate"
            fitted = self.fit_prompt(full[i], room)
            if fitted is None:
                out[i] = self._refused(full[i])
                continue
            prompts[i] = fitted
            (choice_idx if mode == "choice" else free_idx).append(i)
        if self.share_prefix and self.batch_size:  # keep prompts that share a prefix in the same chunk
            free_idx.sort(key=lambda i: prompts[i])
        with torch.inference_mode():
            for chunk in self._chunks(len(free_idx)):
                idx = [free_idx[j] for j in chunk]
                for i, g in zip(idx, self._sample([prompts[i] for i in idx], idx, seed)):
                    out[i] = g
            if choice_idx:
                for i, g in zip(choice_idx, self._choose([prompts[i] for i in choice_idx],
                                                         [requests[i].legal_actions for i in choice_idx],
                                                         [action_ids[i] for i in choice_idx], gen)):
                    out[i] = g
        for i, g in enumerate(out):
            if g is not None and prompts[i] and len(prompts[i]) < len(full[i]):
                g.extra["prompt_truncated"] = len(full[i]) - len(prompts[i])
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

    def _stop_text(self, tokens: list[int]) -> str | None:
        """The completion text cut right after its first stop string, or None."""
        text = self.tokenizer.decode(tokens, skip_special_tokens=True)
        cut = self._stop_cut(text)
        return None if cut is None else text[:cut]

    def _sample(self, prompts: list[list[int]], keys: list[int], seed: int) -> list[Generation]:
        if not prompts:
            return []
        rows = sample_batch(self.model, prompts, keys, seed, temperature=self.temperature, top_p=self.top_p,
                            max_new_tokens=self.max_new_tokens, pad_id=self.pad_id, eos_ids=self.eos_ids,
                            stop_check=self._stop_text if self.stop else None, share_prefix=self.share_prefix,
                            drop_finished=self.drop_finished, static_cache=self.static_cache,
                            min_shared_prefix=self.min_shared_prefix, stats=self.stats)
        gens = []
        for p, r in zip(prompts, rows):
            text = r.stop_text if r.stop_text is not None else self.tokenizer.decode(r.tokens,
                                                                                     skip_special_tokens=True)
            gens.append(Generation(action=text, text=text, prompt_ids=list(p), completion_ids=r.tokens,
                                   logprobs=r.logprobs, extra={"finish_reason": r.finish}))
        return gens

    # ------------------------------------------------------------------ choice mode
    def _score_with_shared_prompt(self, prompts: list[list[int]], action_ids: list[list[list[int]]]
                                  ) -> list[torch.Tensor]:
        """Per-token log-likelihoods of every legal action of every prompt, each prompt run through the model once.

        The prompts are prefilled once (with prefix sharing when ``share_prefix``), keeping the KV cache; the cache
        rows are then repeated per action (``batch_select_indices``) and all actions are scored in a second pass, so
        the cost is one pass over the prompts plus one over the short action strings, not one pass per (prompt,
        action) pair. Equal to :func:`sequence_logprobs` on each pair (tested)."""
        model, device = self.model, self.device
        pre = prefill(model, prompts, self.pad_id, self.share_prefix, self.min_shared_prefix)
        self.stats.prompt_tokens += sum(len(p) for p in prompts)
        self.stats.prefill_tokens += pre.tokens
        cache, mask, last = pre.cache, pre.mask, pre.logits[:, None]
        owner = [i for i, acts in enumerate(action_ids) for _ in acts]
        flat = [a for acts in action_ids for a in acts]
        index = torch.tensor(owner, dtype=torch.long, device=device)
        n, L = len(flat), max(len(a) for a in flat)
        if L == 1:   # one token per move (labels): the prompt's next-token distribution is all that is needed
            ids = torch.tensor([a[0] for a in flat], dtype=torch.long, device=device)
            logp = torch.log_softmax(last[index, 0].float(), dim=-1).gather(-1, ids[:, None])
            return [logp[j] for j in range(n)]
        cache.batch_select_indices(index)
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
                     **{cache_kw(model): cache})
        logits = torch.cat([last[index], out2.logits[:, :-1]], dim=1)
        logp = torch.log_softmax(logits.float(), dim=-1).gather(-1, a_ids[..., None])[..., 0]
        return [logp[j, :len(a)] for j, a in enumerate(flat)]

    def label_ids(self) -> dict[str, int]:
        """The token id of each label character (``"label"`` scoring), checked to be one token each."""
        if self._label_ids is None:
            self._label_ids = label_token_ids(self.tokenizer)
        return self._label_ids

    def move_ids(self, legal: Sequence[str], scoring: str | None = None) -> list[list[int]]:
        """The scored tokens of each legal move: its label's token (``"label"``), else its text's tokens."""
        scoring = scoring or self.choice_scoring
        return move_token_ids(self.tokenizer, legal, scoring, self.label_ids() if scoring == "label" else None)

    def choice_log_policy(self, prompts: list[list[int]], moves: list[list[list[int]]], scoring: str | None = None,
                          model=None) -> list[tuple[torch.Tensor, list[torch.Tensor]]]:
        """For each prompt (ids as the policy saw them) and its moves' scored tokens (:meth:`move_ids`): the
        log-policy over its moves, ``log_softmax(score / T)`` (T = 1 at ``temperature=0``), and each move's
        per-token log-probabilities. Differentiable when called with grad enabled: a trainer's new log-probabilities
        are exactly those of the distribution the policy sampled from. ``model``: score with another module holding
        the same weights (a data-parallel wrapper, a reference copy), one row per (prompt, move)."""
        scoring = scoring or self.choice_scoring
        if scoring not in CHOICE_SCORINGS:
            raise ValueError(f"choice_scoring={scoring!r} is not one of {list(CHOICE_SCORINGS)}")
        per_token: list[torch.Tensor] = []
        if model is None or model is self.model:
            for chunk in self._chunks(len(prompts)):
                try:
                    per_token.extend(self._score_with_shared_prompt([prompts[i] for i in chunk],
                                                                    [moves[i] for i in chunk]))
                except (AttributeError, TypeError, NotImplementedError):  # no batch-selectable KV cache: pairs
                    per_token.extend(self._score_pairs(self.model, [prompts[i] for i in chunk],
                                                       [moves[i] for i in chunk]))
        else:
            per_token = self._score_pairs(model, prompts, moves)
        t = self.temperature if self.temperature > 0 else 1.0
        out, k = [], 0
        for acts in moves:
            tokens = per_token[k:k + len(acts)]
            k += len(acts)
            score = torch.stack([x.mean() if scoring == "mean" else x.sum() for x in tokens])
            out.append((torch.log_softmax(score.float() / t, dim=0), tokens))
        return out

    def _score_pairs(self, model, prompts, moves) -> list[torch.Tensor]:
        pairs = [(p, a) for p, acts in zip(prompts, moves) for a in acts]
        return sequence_logprobs(model, [p for p, _ in pairs], [a for _, a in pairs], pad_id=self.pad_id)

    def _choose(self, prompts: list[list[int]], legal: list[tuple[str, ...]], action_ids: list[list[list[int]]],
                gen: torch.Generator) -> list[Generation]:
        scoring = self.choice_scoring
        gens = []
        for i, (logq, tokens) in enumerate(self.choice_log_policy(prompts, action_ids, scoring)):
            logq = logq.float().cpu()
            per_token = [x.float().cpu() for x in tokens]
            ll = torch.stack([x.sum() for x in per_token])
            score = torch.stack([x.mean() for x in per_token]) if scoring == "mean" else ll
            if self.temperature <= 0:
                c = int(score.argmax())
            else:
                c = int(torch.multinomial(logq.exp().to(gen.device), 1, generator=gen)[0])
            acts = legal[i]
            gens.append(Generation(
                action=acts[c], text=acts[c], prompt_ids=list(prompts[i]), completion_ids=list(action_ids[i][c]),
                logprobs=per_token[c].tolist(),
                choice=Choice(index=c, logprob=float(logq[c]), scoring=scoring, probs=logq.exp().tolist(),
                              logliks=ll.tolist(), scores=score.tolist())))
        return gens
