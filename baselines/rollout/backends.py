"""The policies ``python -m baselines.rollout --model ...`` builds besides random moves: an untrained MLP (``mlp``) or
an LLM played by transformers (``--backend hf``) or by a vLLM engine (``--backend vllm``). This module imports torch
with the backends, so the CLI imports it only when one of them is asked for."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from baselines.models import load_model
from baselines.policies.base import Policy
from baselines.policies.hf import TransformersPolicy
from baselines.policies.mlp import MLPPolicy
from baselines.policies.vllm import VLLMPolicy
from marl_llm_envs import make

__all__ = ["model_policy"]


def model_policy(args, env_kwargs: dict[str, Any] | None = None) -> Policy:
    """The policy of the CLI's flags (``args``) for ``--model mlp`` or an LLM."""
    if args.model == "mlp":
        return MLPPolicy.for_env(make(args.env, **(env_kwargs or {})), seed=args.seed, temperature=args.temperature)
    settings = dict(mode=args.mode, temperature=args.temperature, max_new_tokens=args.max_new_tokens)
    if args.backend == "vllm":
        return _vllm_policy(args, settings)
    return TransformersPolicy.from_name(args.model, device=args.device, dtype=args.dtype, **settings)


def _vllm_policy(args, settings: dict[str, Any]) -> Policy:
    """``--backend vllm``: an engine on the model's folder; a model this project builds or converts (``tiny``,
    ``tiny-vllm``, ``smollm2-135m``) is loaded and written to a temporary folder first."""
    dtype = args.dtype or "auto"
    if args.model not in ("tiny", "tiny-vllm", "smollm2-135m", "smollm2") or Path(args.model).is_dir():
        return VLLMPolicy(args.model, dtype=dtype, seed=args.seed, **settings)
    model, tok = load_model(args.model, device="cpu", dtype=args.dtype)
    folder = tempfile.mkdtemp(prefix="marl_vllm_model_")
    return VLLMPolicy.from_model(model, tok, folder, dtype=dtype, seed=args.seed, name=f"vllm:{args.model}",
                                 **settings)
