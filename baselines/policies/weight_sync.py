"""What a trainer's model sends to a vLLM engine after an update: full weights under vLLM's names, or one LoRA
adapter per role as a folder a ``LoRARequest`` loads. Pure functions of a state (no vLLM import), tested everywhere;
the files are written with ``safetensors.torch`` (this module imports torch).

Full-weight sync (:func:`engine_weights`, :func:`model_weights`). vLLM's ``model.load_weights(iterable of (name,
tensor))`` takes the Hugging Face checkpoint names of the *base* model (``model.layers.0.self_attn.q_proj.weight``)
and maps them onto its fused layers itself. A peft model's ``state_dict`` differs in three ways, each mapped here:

* every name starts with ``base_model.model.`` (peft's wrapper): stripped; vLLM's ``AutoWeightsLoader`` otherwise
  raises "no module or parameter named 'base_model'";
* a LoRA-wrapped linear layer keeps its frozen weight as ``<module>.base_layer.weight`` (and ``.bias``): renamed to
  ``<module>.weight``;
* the adapters' own tensors ``<module>.lora_A.<adapter>.weight`` / ``lora_B``: with ``merge=<adapter>`` folded into
  the base weight, ``W + scaling * B @ A`` (``scaling = lora_alpha / r``, or ``lora_alpha / sqrt(r)`` with rsLoRA:
  peft's own definition), so the engine samples from exactly the adapted model; without ``merge`` left out (the
  adapter is synced on its own, below). Any other ``lora_`` tensor (embedding adapters, DoRA magnitudes) is refused
  with a ``ValueError`` rather than silently dropped.

Tied weights: a model whose ``lm_head.weight`` is its input embedding (``tie_word_embeddings``: the ``tiny`` model,
SmolLM2, Qwen2-0.5B) holds one tensor under two names. It is sent once, as ``model.embed_tokens.weight`` (vLLM's
loaders skip ``lm_head.weight`` for tied models and read the embedding for both). Every tensor returned is a detached,
contiguous CPU **copy**: ``safetensors.torch.save_file`` refuses tensors that share memory ("Some tensors share
memory"), which a CPU-resident tied model's state otherwise hands it, and the engine must never alias the trainer's
parameters (an optimizer step would change the sampler's weights behind its back).

Per-role LoRA (:func:`write_adapter`, :class:`AdapterVersions`). One engine serves every role with
``enable_lora=True``; each role's adapter is written after each update as a PEFT adapter folder
(``adapter_config.json`` + ``adapter_model.safetensors``, the names ``PeftModel.from_pretrained`` and vLLM's
``LoRARequest(name, lora_int_id, path)`` load) holding that adapter only. vLLM caches a loaded adapter by its
``lora_int_id``, so each sync version of each role gets a new id (:meth:`AdapterVersions.publish`); the caller then
resets the engine's prefix cache (KV blocks computed under the old adapter must not be reused).

The ``max_loras`` rule: the engine must hold every adapter that a batch can still ask for, ``max_loras >= roles x
(staleness + 1)``, where ``staleness`` is how many updates a rollout may lag behind the trainer (0 for the
synchronous loop of :mod:`baselines.train`: the roles' current adapters only). With fewer slots vLLM evicts an
adapter that a queued request still names and reloads it from disk on every swap (TRL's adapter-only sync states the
same bound per role, ``max_loras >= staleness + 1``). :func:`max_loras` computes it; :class:`AdapterVersions` keeps
the folders of the last ``staleness + 1`` versions of each role on disk and deletes older ones.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from safetensors.torch import save_file

__all__ = ["PEFT_PREFIX", "AdapterVersions", "engine_weights", "lora_scaling", "max_loras", "model_weights",
           "save_weights", "write_adapter"]

PEFT_PREFIX = "base_model.model."
EMBED = "model.embed_tokens.weight"
LM_HEAD = "lm_head.weight"
ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_WEIGHTS = "adapter_model.safetensors"


def max_loras(roles: int, staleness: int = 0) -> int:
    """The adapters a vLLM engine must hold at once: ``roles x (staleness + 1)`` (module docstring)."""
    if roles < 1 or staleness < 0:
        raise ValueError(f"max_loras needs roles >= 1 and staleness >= 0, got roles={roles}, staleness={staleness}")
    return roles * (staleness + 1)


def _copy(t):
    return t.detach().to("cpu").contiguous().clone()


def engine_weights(state: Mapping[str, Any], *, tied: bool = False, merge: str | None = None,
                   scaling: float = 1.0) -> dict[str, Any]:
    """``state`` (a model's ``state_dict``: plain HF names, or a peft model's) under the names vLLM's
    ``load_weights`` reads, as CPU copies (module docstring). ``tied``: the model ties ``lm_head`` to its input
    embedding (send it once). ``merge``: fold adapter ``merge``'s LoRA product, times ``scaling``, into its base
    weights; otherwise every LoRA tensor is left out."""
    out: dict[str, Any] = {}
    lora: dict[str, dict[str, Any]] = {}       # module -> {"A": tensor, "B": tensor} of the merged adapter
    for name, tensor in state.items():
        key = name[len(PEFT_PREFIX):] if name.startswith(PEFT_PREFIX) else name
        if ".lora_A." in key or ".lora_B." in key:
            module, _, rest = key.partition(".lora_A." if ".lora_A." in key else ".lora_B.")
            adapter = rest.rsplit(".", 1)[0]
            if merge is not None and adapter == merge:
                lora.setdefault(module, {})["A" if ".lora_A." in key else "B"] = tensor
            continue
        if "lora_" in key:
            raise ValueError(f"{name}: a LoRA tensor this sync cannot map to vLLM names (only lora_A/lora_B of "
                             f"linear layers are supported)")
        key = key.replace(".base_layer.", ".")
        if tied and key == LM_HEAD:
            continue
        out[key] = _copy(tensor)
    if merge is not None and not lora:
        raise ValueError(f"merge={merge!r}: the state holds no lora_A/lora_B tensors of adapter {merge!r}")
    for module, pair in lora.items():
        if set(pair) != {"A", "B"}:
            raise ValueError(f"{module}: adapter {merge!r} has lora_{'A' if 'A' in pair else 'B'} but not its pair")
        key = f"{module}.weight"
        if key not in out:
            raise ValueError(f"{module}: adapter {merge!r} adapts a layer with no base weight in the state")
        base = out[key]
        delta = (pair["B"].detach().float().cpu() @ pair["A"].detach().float().cpu()) * scaling
        out[key] = (base.float() + delta).to(base.dtype)
    return out


def _is_tied(model) -> bool:
    inner = model.get_base_model() if hasattr(model, "get_base_model") else model
    try:
        head, embed = inner.get_output_embeddings(), inner.get_input_embeddings()
    except (AttributeError, NotImplementedError):
        return False
    if head is None or embed is None:
        return False
    return head.weight is embed.weight or head.weight.data_ptr() == embed.weight.data_ptr()


def lora_scaling(model, adapter: str) -> float:
    """peft's scaling of ``adapter``: ``lora_alpha / r`` (``lora_alpha / sqrt(r)`` with ``use_rslora``)."""
    config = model.peft_config[adapter]
    return config.lora_alpha / (math.sqrt(config.r) if getattr(config, "use_rslora", False) else config.r)


def model_weights(model, merge: str | None = None) -> dict[str, Any]:
    """:func:`engine_weights` of a model (a transformers model or a peft model over one), ties read from the model
    itself; ``merge``: an adapter of the peft model to fold in."""
    scaling = lora_scaling(model, merge) if merge is not None else 1.0
    return engine_weights(model.state_dict(), tied=_is_tied(model), merge=merge, scaling=scaling)


def save_weights(weights: Mapping[str, Any], path: str | os.PathLike) -> Path:
    """Write a name -> tensor mapping for the engine's workers to read (one ``.safetensors`` file), each tensor as
    its own contiguous CPU copy (tied or otherwise shared tensors included: module docstring)."""
    save_file({k: _copy(v) for k, v in weights.items()}, str(path))
    return Path(path)


def _suffixes(target_modules: Any) -> list[str] | str:
    """peft's resolved ``target_modules`` (full module paths after ``"all-linear"``) as the layer names vLLM and
    peft both match by suffix (``q_proj``, ``down_proj``)."""
    if isinstance(target_modules, str):
        return target_modules
    return sorted({str(m).rsplit(".", 1)[-1] for m in target_modules})


def write_adapter(model, adapter: str, folder: str | os.PathLike) -> Path:
    """Write ``adapter`` of the peft ``model`` (its tensors only, as CPU copies) to ``folder`` in the PEFT adapter
    format, replacing the folder in one step (a reader never sees half a folder). Returns the folder."""
    from peft import get_peft_model_state_dict  # lazy: peft imports transformers (seconds); only LoRA sync needs it

    if adapter not in getattr(model, "peft_config", {}):
        raise ValueError(f"adapter {adapter!r} is not an adapter of this model; it has "
                         f"{sorted(getattr(model, 'peft_config', {}))}")
    folder = Path(folder)
    tmp = folder.with_name(folder.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    config = model.peft_config[adapter].to_dict()
    config["target_modules"] = _suffixes(config.get("target_modules"))
    for key, value in list(config.items()):       # sets and enums as JSON
        if isinstance(value, set):
            config[key] = sorted(value)
        elif hasattr(value, "value") and not isinstance(value, (str, int, float, bool)):
            config[key] = value.value
    (tmp / ADAPTER_CONFIG).write_text(json.dumps(config, indent=1, default=str), encoding="utf-8")
    tensors = {k: _copy(v) for k, v in get_peft_model_state_dict(model, adapter_name=adapter).items()}
    save_file(tensors, str(tmp / ADAPTER_WEIGHTS))
    if folder.exists():
        shutil.rmtree(folder)
    os.replace(tmp, folder)
    return folder


class AdapterVersions:
    """The adapter folders of each role, one per sync version, and the ``lora_int_id`` of each: a new id per
    (role, version), ids counted from 1 (vLLM refuses 0). Keeps the last ``staleness + 1`` versions of a role on
    disk (module docstring, the ``max_loras`` rule)."""

    def __init__(self, root: str | os.PathLike, staleness: int = 0) -> None:
        if staleness < 0:
            raise ValueError(f"staleness must be >= 0, got {staleness}")
        self.root, self.staleness = Path(root), staleness
        self._next_id = 1
        self._live: dict[str, list[tuple[int, int, Path]]] = {}     # role -> [(version, lora_int_id, folder)]

    def publish(self, model, adapter: str, role: str, version: int) -> tuple[str, int, Path]:
        """Write ``adapter`` as ``role``'s version ``version``; returns ``(lora_name, lora_int_id, folder)``."""
        folder = write_adapter(model, adapter, self.root / role / f"v{version}")
        lora_id, self._next_id = self._next_id, self._next_id + 1
        live = self._live.setdefault(role, [])
        live.append((version, lora_id, folder))
        while len(live) > self.staleness + 1:
            _, _, old = live.pop(0)
            if old != folder:
                shutil.rmtree(old, ignore_errors=True)
        return f"{role}@v{version}", lora_id, folder

    def current(self, role: str) -> tuple[str, int, Path] | None:
        live = self._live.get(role)
        if not live:
            return None
        version, lora_id, folder = live[-1]
        return f"{role}@v{version}", lora_id, folder

    def roles(self) -> Iterable[str]:
        return list(self._live)
