"""The transformers side of :mod:`baselines.models` (read its docstring for the model names): the tiny model and its
byte-level tokenizer, loading a folder or hub id, and converting a GGUF file. This module imports torch, tokenizers
and transformers (seconds), so :mod:`baselines.models` imports it only when a model is loaded.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
from transformers.utils import logging as hf_logging

__all__ = ["convert_gguf", "pretrained", "quiet", "resolve_dtype", "tiny_model", "tiny_tokenizer"]

# The tiny model's chat format: one marker per role, each message closed by </s>.
_TINY_SPECIALS = ["<pad>", "<s>", "</s>", "<|system|>", "<|user|>", "<|assistant|>"]
_TINY_CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{{ '<|' + message['role'] + '|>' }}\n{{ message['content'] }}{{ eos_token }}\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>' }}\n{% endif %}"
)


def resolve_dtype(device: str, dtype: Any) -> torch.dtype:
    """``dtype`` as a ``torch.dtype`` (a name such as ``"float16"`` is looked up); ``None``: bfloat16 on a CUDA
    device, float32 elsewhere."""
    if dtype is None:
        return torch.bfloat16 if str(device).startswith("cuda") else torch.float32
    if isinstance(dtype, str):
        return getattr(torch, dtype.removeprefix("torch."))
    return dtype


def quiet() -> None:
    """No transformers progress bars (loading checkpoints)."""
    hf_logging.disable_progress_bar()


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


def tiny_tokenizer() -> PreTrainedTokenizerFast:
    """A pure byte-level tokenizer (ids 0-5 special, then one token per byte value), as a
    ``PreTrainedTokenizerFast`` with pad/bos/eos tokens and a chat template. Any text round-trips exactly."""
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


def tiny_model(shape: dict[str, Any], seed: int, device: str, dtype: Any):
    """``(model, tokenizer)``: a Llama of ``shape`` (:data:`baselines.models.TINY_CONFIG`'s fields) over
    :func:`tiny_tokenizer`, its weights drawn from ``seed`` inside :func:`torch.random.fork_rng` (the caller's global
    RNG is left as it was), in eval mode."""
    tok = tiny_tokenizer()
    config = LlamaConfig(
        vocab_size=len(tok), **shape, max_position_embeddings=4096, tie_word_embeddings=True,
        pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    model.generation_config.pad_token_id = tok.pad_token_id
    return model.to(device=device, dtype=resolve_dtype(device, dtype)).eval(), tok


def pretrained(name: str | os.PathLike, device: str, dtype: Any):
    """``(model, tokenizer)`` from a local folder or a hub id (``from_pretrained``), the model in ``dtype`` but not
    yet moved to ``device``; ``OSError`` where neither loads."""
    tok = AutoTokenizer.from_pretrained(name)
    model = AutoModelForCausalLM.from_pretrained(name, dtype=resolve_dtype(device, dtype))
    return model, tok


def convert_gguf(gguf: Path, target: Path) -> None:
    """De-quantise the GGUF file ``gguf`` with transformers and save it (model + tokenizer) as a plain float
    safetensors folder ``target``, named ``target.name``; written beside it first, so a reader never sees half a
    folder (another process that finished first wins)."""
    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
    # transformers de-quantises GGUF weights to float32 on load; drop the GGUF markers so that the copy saves
    # and loads as a plain float model.
    model.hf_quantizer = None
    for attr in ("quantization_config", "_pre_quantization_dtype"):
        if hasattr(model.config, attr):
            delattr(model.config, attr)
    model.config.name_or_path = target.name
    tmp = target.with_name(target.name + f".tmp{os.getpid()}")
    tmp.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(tmp, safe_serialization=True)
    tok.save_pretrained(tmp)
    if target.exists():  # another process finished first
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        os.replace(tmp, target)
    del model
