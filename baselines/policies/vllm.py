"""A vLLM backend for the policy protocol (one or more CUDA GPUs). vLLM is imported lazily: this module imports
anywhere, and constructing :class:`VLLMPolicy` without vLLM raises an ImportError that says how to install it.

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

``mode="choice"`` scores each legal action as a continuation of the prompt with ``prompt_logprobs=0`` (vLLM returns
the log-probability of every prompt token under the raw model) and samples among the actions exactly like the
transformers backend (same ``extra`` keys).

Weight updates after a training step: :meth:`VLLMPolicy.load_weights` takes a ``state_dict`` (name -> tensor, the
Hugging Face parameter names of the trained model), a ``.safetensors`` file or a folder of them. The engine is
started with ``worker_extension_cls="baselines.policies.vllm.WeightLoaderExtension"``, the route vLLM documents for
RLHF, and the policy calls ``LLM.collective_rpc("marl_load_weights", args=(path,))``: every worker reads the file
and calls its model's ``load_weights`` (vLLM's loaders map HF names to their fused layers). A state_dict is first
written to a temporary safetensors file (portable across process boundaries). The prefix cache is then reset, since
cached KV blocks were computed with the old weights. Where the installed vLLM has no ``collective_rpc`` or no
``worker_extension_cls``, ``load_weights`` raises a RuntimeError that says so (restart the engine from a saved
checkpoint instead). This backend needs a GPU and is not exercised by the CPU test suite.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from baselines.policies.base import Choice, Generation, Policy, Request, set_decoding
from baselines.policies.prompts import chat_prompt_ids

__all__ = ["VLLMPolicy", "WeightLoaderExtension"]

_INSTALL_HINT = ("vLLM is not installed (or not importable here): VLLMPolicy needs vLLM and a CUDA GPU: "
                 "pip install -e .[vllm] on a CUDA machine (or use baselines.policies.hf.TransformersPolicy on CPU)")
_EXTENSION = "baselines.policies.vllm.WeightLoaderExtension"


def _import_vllm():
    try:
        import vllm
    except Exception as err:  # ImportError, or a broken CUDA install failing at import
        raise ImportError(f"{_INSTALL_HINT} (import error: {err!r})") from err
    return vllm


class WeightLoaderExtension:
    """Mixed into vLLM's worker class (``worker_extension_cls``); its methods run in every worker process through
    ``LLM.collective_rpc``. ``self`` is the worker, which owns ``model_runner.model``."""

    def marl_load_weights(self, path: str) -> int:
        import torch
        from safetensors.torch import load_file

        files = sorted(Path(path).glob("*.safetensors")) if Path(path).is_dir() else [Path(path)]
        if not files:
            raise FileNotFoundError(f"no .safetensors files at {path}")
        device = next(self.model_runner.model.parameters()).device
        count = 0
        for f in files:
            tensors = load_file(str(f), device=str(device))
            self.model_runner.model.load_weights(weights=list(tensors.items()))
            count += len(tensors)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        return count


class VLLMPolicy(Policy):
    """A vLLM engine behind the policy protocol (see the module docstring).

    ``model_path`` is a local HF folder (for SmolLM2, the cache written by ``baselines.models.load_model(
    "smollm2-135m")``). ``llm_kwargs`` go to ``vllm.LLM`` (e.g. ``max_model_len``, ``tensor_parallel_size``).
    """

    def __init__(self, model_path: str | os.PathLike, mode: str = "generate", temperature: float = 1.0,
                 top_p: float = 1.0, max_new_tokens: int = 64, stop: Sequence[str] | str | None = None,
                 use_chat_template: bool = True, system_prompt: str | None = None, name: str | None = None,
                 gpu_memory_utilization: float = 0.5, dtype: str = "auto", seed: int = 0,
                 enable_weight_updates: bool = True, **llm_kwargs: Any) -> None:
        vllm = _import_vllm()
        set_decoding(self, mode=mode, modes=("generate", "choice"), temperature=temperature, top_p=top_p,
                     max_new_tokens=max_new_tokens, stop=stop, use_chat_template=use_chat_template,
                     system_prompt=system_prompt)
        self.name = name or f"vllm:{Path(str(model_path)).name}:{mode}"
        kwargs: dict[str, Any] = {"model": str(model_path), "gpu_memory_utilization": gpu_memory_utilization,
                                  "dtype": dtype, "seed": seed}
        if enable_weight_updates:
            kwargs["worker_extension_cls"] = _EXTENSION
        kwargs.update(llm_kwargs)
        kwargs["logprobs_mode"] = "processed_logprobs"
        while True:  # drop the options an older vLLM does not know, one at a time
            try:
                self.llm = vllm.LLM(**kwargs)
                break
            except TypeError as err:
                unknown = [k for k in ("logprobs_mode", "worker_extension_cls") if k in kwargs and k in str(err)]
                if not unknown:
                    raise
                kwargs.pop(unknown[0])
        self.logprobs_mode = kwargs.get("logprobs_mode", "engine-default")
        self._weight_updates = "worker_extension_cls" in kwargs
        self._vllm = vllm
        self.tokenizer = self.llm.get_tokenizer()

    # ------------------------------------------------------------------ prompts
    def encode_prompt(self, text: str) -> list[int]:
        """The prompt token ids for an observation text (chat template when available)."""
        return chat_prompt_ids(self.tokenizer, text, self.system_prompt, self.use_chat_template)

    def _params(self, **kw):
        return self._vllm.SamplingParams(**kw)

    # ------------------------------------------------------------------ protocol
    def generate(self, requests: Sequence[Request], seed: int | None = None) -> list[Generation]:
        requests = list(requests)
        prompts = [self.encode_prompt(r.text) for r in requests]
        choice = [i for i, r in enumerate(requests) if self.mode == "choice" and r.legal_actions]
        chosen = set(choice)
        free = [i for i in range(len(requests)) if i not in chosen]
        out: list[Generation | None] = [None] * len(requests)
        if free:
            params = [self._params(n=1, temperature=self.temperature, top_p=self.top_p,
                                   max_tokens=self.max_new_tokens, stop=self.stop or None,
                                   include_stop_str_in_output=True, logprobs=0,
                                   seed=None if seed is None else seed + i) for i in free]
            results = self.llm.generate([{"prompt_token_ids": prompts[i]} for i in free], params, use_tqdm=False)
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
            self._choose(requests, prompts, choice, seed, out)
        return out  # type: ignore[return-value]

    def _choose(self, requests, prompts, choice, seed, out) -> None:
        import torch

        tok = self.tokenizer
        pairs, spans = [], []
        for i in choice:
            for a in requests[i].legal_actions:
                a_ids = list(tok(a, add_special_tokens=False)["input_ids"])
                pairs.append({"prompt_token_ids": prompts[i] + a_ids})
                spans.append((len(prompts[i]), a_ids))
        params = self._params(n=1, temperature=0.0, max_tokens=1, prompt_logprobs=0)
        results = self.llm.generate(pairs, params, use_tqdm=False)
        gen = torch.Generator()
        gen.manual_seed(seed) if seed is not None else gen.seed()
        k = 0
        for i in choice:
            acts = requests[i].legal_actions
            per_token = []
            for res, (start, a_ids) in zip(results[k:k + len(acts)], spans[k:k + len(acts)]):
                plp = res.prompt_logprobs
                per_token.append([float(plp[start + j][t].logprob) for j, t in enumerate(a_ids)])
            k += len(acts)
            ll = torch.tensor([sum(p) for p in per_token], dtype=torch.float64)
            if self.temperature <= 0:
                logq = torch.log_softmax(ll, 0)
                c = int(ll.argmax())
            else:
                logq = torch.log_softmax(ll / self.temperature, 0)
                c = int(torch.multinomial(logq.exp(), 1, generator=gen)[0])
            a_ids = spans[k - len(acts) + c][1]
            out[i] = Generation(action=acts[c], text=acts[c], prompt_ids=list(prompts[i]), completion_ids=a_ids,
                                logprobs=per_token[c],
                                choice=Choice(index=c, logprob=float(logq[c]), scoring="sum",
                                              probs=logq.exp().tolist(), logliks=ll.tolist(), scores=ll.tolist()))

    # ------------------------------------------------------------------ weights
    def load_weights(self, weights: Mapping[str, Any] | str | os.PathLike) -> int:
        """Load new weights into the running engine (see the module docstring); returns the tensor count loaded
        by the first worker."""
        if not self._weight_updates or not hasattr(self.llm, "collective_rpc"):
            raise RuntimeError("this vLLM engine cannot load weights in place (needs LLM.collective_rpc and "
                               "worker_extension_cls, vLLM >= 0.8): save a checkpoint and build a new VLLMPolicy")
        if isinstance(weights, (str, os.PathLike)):
            counts = self.llm.collective_rpc("marl_load_weights", args=(str(weights),))
        else:
            from safetensors.torch import save_file

            with tempfile.TemporaryDirectory(prefix="marl_vllm_weights_") as tmp:
                path = os.path.join(tmp, "weights.safetensors")
                save_file({k: v.detach().contiguous().cpu() for k, v in weights.items()}, path)
                counts = self.llm.collective_rpc("marl_load_weights", args=(path,))
        if hasattr(self.llm, "reset_prefix_cache"):
            self.llm.reset_prefix_cache()
        return int(counts[0]) if counts else 0

    def close(self) -> None:
        llm, self.llm = getattr(self, "llm", None), None
        del llm
        try:
            import gc

            import torch

            gc.collect()
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        except ImportError:
            pass
