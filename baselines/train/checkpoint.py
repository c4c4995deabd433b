"""Checkpoints without pickle: tensors in ``state.safetensors``, everything else in JSON.

A checkpoint folder ``step-NNNNNNN`` holds ``meta.json`` (step, config hash, credit state), ``state.safetensors``
(every tensor and array: weights, optimizer moments, RNG states) and ``state.json`` (the structure around them:
nested dicts, lists, tuples, numbers, strings, with ``{"__tensor__": name}`` where a tensor goes). Nothing in it can
run code: safetensors is a flat header plus raw bytes, and JSON is data. A ``state.pt`` (the pickle format of older
versions, and of ``torch.save``) is refused with :class:`CheckpointError`, never unpickled, because unpickling a file
someone hands you runs whatever it asks for. This is the one path for trainer checkpoints, ``--resume``, the
leaderboard's ``checkpoint:`` player and ``validate --reproduce``.

Writes are atomic: a step's files go into a temporary folder that is renamed into place, then the ``latest`` pointer
is replaced (write + ``os.replace``). A run killed at any moment resumes from the last complete checkpoint; older ones
beyond ``keep`` are removed. Round trips are exact: float tensors keep their dtype and bits, Python floats are written
with ``repr`` precision, the Python, NumPy and torch RNG states come back bit for bit.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from baselines.outputs import loads_bounded, read_capped, replace_text

if TYPE_CHECKING:
    from baselines.credit import CreditMethod
    from baselines.train.learners import Learner

__all__ = ["CHECKPOINTS", "CheckpointError", "init_weights", "latest", "load", "restore_run", "resume_point",
           "rng_state", "save", "save_run", "set_rng_state"]

CHECKPOINTS = "checkpoints"         # a training run folder's checkpoint folder

STATE_TENSORS = "state.safetensors"
STATE_JSON = "state.json"
PICKLE_NAMES = ("state.pt", "state.pth", "state.pkl", "state.bin")
MAX_JSON_BYTES = 64 << 20           # state.json
MAX_META_BYTES = 64 << 20           # meta.json (step, config hash, the credit method's state: a critic's weights)
MAX_POINTER_BYTES = 4096            # the 'latest' pointer: one folder name


class CheckpointError(ValueError):
    """A checkpoint that cannot be read safely (a pickle, a damaged file); the message says which file and why."""


def rng_state() -> dict[str, Any]:
    """Every global RNG this process may use (Python, NumPy, torch CPU and CUDA)."""
    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    py = state["python"]
    random.setstate((int(py[0]), tuple(int(x) for x in py[1]), py[2]))
    np.random.set_state(tuple(state["numpy"]))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(list(state["cuda"]))


# ---------------------------------------------------------------------- structure <-> JSON + flat tensors
def _encode(value: Any, tensors: dict[str, torch.Tensor]) -> Any:
    if isinstance(value, torch.Tensor):
        name = f"t{len(tensors)}"
        tensors[name] = value.detach().cpu().contiguous().clone()
        return {"__tensor__": name}
    if isinstance(value, np.ndarray):
        name = f"t{len(tensors)}"
        tensors[name] = torch.from_numpy(np.ascontiguousarray(value).copy())
        return {"__ndarray__": name}
    if isinstance(value, np.generic):
        return _encode(value.item(), tensors)
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return {"__float__": repr(value)}
        return value
    if isinstance(value, tuple):
        return {"__tuple__": [_encode(v, tensors) for v in value]}
    if isinstance(value, list):
        return [_encode(v, tensors) for v in value]
    if isinstance(value, dict):
        if all(isinstance(k, str) and not k.startswith("__") for k in value):
            return {k: _encode(v, tensors) for k, v in value.items()}
        return {"__items__": [[_encode(k, tensors), _encode(v, tensors)] for k, v in value.items()]}
    raise TypeError(f"a checkpoint holds tensors, arrays, numbers, strings, lists, tuples and dicts; got "
                    f"{type(value).__name__}")


def _decode(value: Any, tensors: dict[str, torch.Tensor], where: str) -> Any:
    if isinstance(value, list):
        return [_decode(v, tensors, where) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        (key, inner), = value.items()
        if key in ("__tensor__", "__ndarray__"):
            if not isinstance(inner, str) or inner not in tensors:
                raise CheckpointError(f"{where}: {STATE_JSON} names a tensor {inner!r} that {STATE_TENSORS} lacks")
            return tensors[inner] if key == "__tensor__" else tensors[inner].numpy()
        if key == "__tuple__" and isinstance(inner, list):
            return tuple(_decode(v, tensors, where) for v in inner)
        if key == "__items__" and isinstance(inner, list):
            return {_decode(k, tensors, where): _decode(v, tensors, where) for k, v in inner}
        if key == "__float__" and inner in ("nan", "inf", "-inf"):
            return float(inner)
    return {k: _decode(v, tensors, where) for k, v in value.items()}


def save(folder: Path, step: int, meta: dict[str, Any], tensors: dict[str, Any], keep: int = 2) -> Path:
    """Write checkpoint ``step`` under ``folder`` (``meta``: JSON; ``tensors``: nested dicts / lists / tuples of
    tensors, arrays and plain values, such as state dicts, optimizer states and :func:`rng_state`)."""
    folder.mkdir(parents=True, exist_ok=True)
    final = folder / f"step-{step:07d}"
    tmp = folder / f".tmp-step-{step:07d}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    (tmp / "meta.json").write_text(json.dumps(meta, indent=1, sort_keys=True))
    flat: dict[str, torch.Tensor] = {}
    skeleton = _encode(tensors, flat)
    (tmp / STATE_JSON).write_text(json.dumps(skeleton, allow_nan=False))
    save_file(flat, str(tmp / STATE_TENSORS))
    for f in tmp.iterdir():
        with open(f, "rb") as fh:
            os.fsync(fh.fileno())
    old = folder / f".old-step-{step:07d}-{os.getpid()}"
    if final.exists():          # a resume from an earlier checkpoint saves this step again: move the old one aside,
        shutil.rmtree(old, ignore_errors=True)   # put the new one in its place, then delete the old (two renames
        os.replace(final, old)                   # apart instead of a whole rmtree: 'latest' never names a folder
    os.replace(tmp, final)                       # that is half deleted)
    shutil.rmtree(old, ignore_errors=True)
    replace_text(folder / "latest", final.name)
    done = sorted(p for p in folder.glob("step-*") if p.is_dir())
    for old in done[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def _pointer(pointer: Path) -> str:
    """The folder name the ``latest`` file holds, read within :data:`MAX_POINTER_BYTES` (a sparse 1 GiB pointer is
    refused before a byte of it is read)."""
    try:
        return read_capped(pointer, MAX_POINTER_BYTES, "the 'latest' pointer").decode("utf-8").strip()
    except UnicodeDecodeError:
        raise CheckpointError(f"{pointer}: not UTF-8 text (it names the latest checkpoint folder)") from None
    except ValueError as e:
        raise CheckpointError(f"{e} (it names one checkpoint folder, e.g. step-0000100)") from None


def latest(folder: Path) -> Path | None:
    pointer = folder / "latest"
    if not pointer.is_file():
        return None
    path = folder / _pointer(pointer)
    if not path.resolve().is_relative_to(folder.resolve()):
        raise CheckpointError(f"{pointer}: points outside {folder} ({path})")
    complete = all((path / n).is_file() for n in ("meta.json", STATE_JSON, STATE_TENSORS))
    if not complete and any((path / n).exists() for n in PICKLE_NAMES):
        _refuse_pickle(path)
    return path if complete else None


def why_none(folder: Path, remedy: str) -> str:
    """What to add to "no checkpoint in ``folder``" when :func:`latest` found none: what ``latest`` names (or that it
    is missing) and the complete checkpoints that are there, then ``remedy`` (what the caller can do with one of
    them; ``{latest}`` in it is the pointer's path)."""
    pointer = folder / "latest"
    complete = sorted(p.name for p in folder.glob("step-*")
                      if all((p / n).is_file() for n in ("meta.json", STATE_JSON, STATE_TENSORS)))
    if not pointer.is_file():
        named = "it has no 'latest' file"
    else:
        try:
            named = f"its 'latest' names {_pointer(pointer)[:80]!r}, not a complete checkpoint"
        except CheckpointError as e:
            named = f"its 'latest' cannot be read ({e})"
    if not complete:
        return f" ({named}, and it holds no complete checkpoint)" if folder.is_dir() else ""
    return f" ({named}; complete ones: {', '.join(complete)}: {remedy.format(latest=pointer)})"


def _refuse_pickle(path: Path) -> None:
    found = [n for n in PICKLE_NAMES if (path / n).exists()]
    raise CheckpointError(f"{path}: holds {found[0]}, a pickle; checkpoints are read only as {STATE_TENSORS} + "
                          f"{STATE_JSON} (a pickle can run any code when it is loaded, so it is never opened). "
                          f"Re-make the run with this version of baselines.train")


def load(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(meta, tensors)`` of the trainer's checkpoint folder ``path``, read without pickle (:class:`CheckpointError`
    for a pickle, a damaged file, or one without the trainer's layout: ``meta`` ``{"step": int >= 0, "config_hash":
    str, "credit": {...}}``, ``tensors`` ``{"learners": [{"model": {...}, "optimizer": {...} or None}, ...], "rng":
    ...}``, as :func:`save_run` saves them)."""
    path = Path(path)
    if not (path / STATE_TENSORS).is_file() or not (path / STATE_JSON).is_file():
        if any((path / n).exists() for n in PICKLE_NAMES):
            _refuse_pickle(path)
        raise CheckpointError(f"{path}: not a checkpoint (it needs meta.json, {STATE_JSON} and {STATE_TENSORS})")
    try:
        meta = loads_bounded(read_capped(path / "meta.json", MAX_META_BYTES, "meta.json"), str(path / "meta.json"))
        skeleton = loads_bounded(read_capped(path / STATE_JSON, MAX_JSON_BYTES, STATE_JSON), str(path / STATE_JSON))
    except ValueError as e:         # too large, not UTF-8, not JSON, nested too deep, padded
        raise CheckpointError(f"{e}; this checkpoint cannot be read") from None
    except OSError as e:
        raise CheckpointError(f"{path}: meta.json or {STATE_JSON} cannot be read ({type(e).__name__}: {e})") from None
    try:
        flat = load_file(str(path / STATE_TENSORS), device="cpu")
    except (SafetensorError, OSError, ValueError) as e:
        raise CheckpointError(f"{path / STATE_TENSORS}: not a safetensors file ({e})") from None
    try:
        tensors = _decode(skeleton, flat, str(path))
    except (TypeError, ValueError) as e:        # an __items__ entry that is not a pair, a key that is not hashable
        if isinstance(e, CheckpointError):
            raise
        raise CheckpointError(f"{path / STATE_JSON}: damaged ({type(e).__name__}: {e})") from None
    _check_layout(path, meta, tensors)
    return meta, tensors


def _check_layout(path: Path, meta: Any, tensors: Any) -> None:
    step = meta.get("step") if isinstance(meta, dict) else None
    if not (isinstance(meta, dict) and type(step) is int and step >= 0 and isinstance(meta.get("config_hash"), str)
            and isinstance(meta.get("credit"), dict)):
        raise CheckpointError(f"{path / 'meta.json'}: damaged (a trainer checkpoint's meta is {{\"step\": int >= 0, "
                              f"\"config_hash\": str, \"credit\": {{...}}}})")
    learners = tensors.get("learners") if isinstance(tensors, dict) else None
    if not (isinstance(learners, list) and learners and "rng" in tensors and all(
            isinstance(x, dict) and isinstance(x.get("model"), dict)
            and (x.get("optimizer") is None or isinstance(x.get("optimizer"), dict)) for x in learners)):
        raise CheckpointError(f"{path / STATE_JSON}: damaged (a trainer checkpoint's state is {{\"learners\": [{{"
                              f"\"model\": {{...}}, \"optimizer\": {{...}} or null}}, ...], \"rng\": ...}})")


# ---------------------------------------------------------------------- a training run's checkpoints and --resume
def save_run(out: Path, step: int, config_hash: str, learners: list[Learner], method: CreditMethod,
             keep: int) -> Path:
    """Checkpoint ``step`` of the run in ``out``: every learner's weights, optimizer moments and KL reference
    (``--kl-coef``), the credit method's state, every RNG; the ``keep`` latest checkpoints stay."""
    meta = {"step": step, "config_hash": config_hash, "credit": method.state_dict()}
    tensors = {"learners": [{"model": lr.state_dict(),
                             "optimizer": lr.optimizer.state_dict() if lr.optimizer is not None else None,
                             "reference": lr.reference_state()}     # the KL reference's weights (None: none kept)
                            for lr in learners], "rng": rng_state()}
    return save(out / CHECKPOINTS, step, meta, tensors, keep=keep)


def resume_point(out: Path) -> Path:
    """The checkpoint ``--resume`` continues the run in ``out`` from, or a ``ValueError`` saying why there is none."""
    found = latest(out / CHECKPOINTS)
    if found is None:
        why = why_none(out / CHECKPOINTS, "write one of those names into {latest} to resume from it")
        raise ValueError(f"--resume: no checkpoint in {out / CHECKPOINTS}{why}")
    return found


def init_weights(source: Path, learners: list[Learner]) -> dict[str, Any]:
    """``--init-from``: load the weights (only) of checkpoint ``source`` (a checkpoint folder, or a run folder: its
    latest checkpoint) into ``learners``; returns ``{"checkpoint", "config_hash", "step"}`` of the source. A source
    that is no checkpoint, or whose weights do not fit the learners (another model, adapters or roles), is a
    ``ValueError`` naming ``--init-from``."""
    source = Path(source)
    path = source
    if not (source / "meta.json").is_file() and (source / CHECKPOINTS).is_dir():
        found = latest(source / CHECKPOINTS)
        if found is None:
            raise ValueError(f"--init-from: {source} holds no complete checkpoint"
                             f"{why_none(source / CHECKPOINTS, 'write one of those names into {latest}')}")
        path = found
    try:
        meta, tensors = load(path)
    except CheckpointError as e:
        raise ValueError(f"--init-from: {e}") from None
    if len(tensors["learners"]) != len(learners):
        raise ValueError(f"--init-from: {path} holds {len(tensors['learners'])} learners, this run builds "
                         f"{len(learners)} (give the same --model and --adapters)")
    try:
        for learner, state in zip(learners, tensors["learners"]):
            learner.load_state_dict(state["model"])
    except (RuntimeError, KeyError, TypeError) as e:
        raise ValueError(f"--init-from: the weights in {path} do not fit this run's models (another --model, "
                         f"--adapters, --lora-r, --lora-layers or roles?) ({type(e).__name__}: {str(e)[:300]})"
                         ) from None
    return {"checkpoint": str(path), "config_hash": meta["config_hash"], "step": meta["step"]}


def restore_run(path: Path, out: Path, config_hash: str, learners: list[Learner], method: CreditMethod) -> int:
    """Load checkpoint ``path`` of the run in ``out`` into ``learners`` and ``method`` (weights, optimizer moments,
    KL references, the credit method's state) and set every RNG; returns the step it was taken at. A checkpoint of
    another config (``config_hash``) or one that does not fit the learners is a ``ValueError`` naming ``--resume``."""
    meta, tensors = load(path)
    if meta["config_hash"] != config_hash:
        raise ValueError(f"--resume: the run in {out} was made with another config (hash {meta['config_hash']}, "
                         f"now {config_hash}); give the same flags, or another --out")
    if len(tensors["learners"]) != len(learners):
        raise ValueError(f"--resume: {path} holds {len(tensors['learners'])} learners, the config builds "
                         f"{len(learners)}")
    try:
        for learner, state in zip(learners, tensors["learners"]):
            learner.load_state_dict(state["model"])
            if learner.optimizer is not None and state["optimizer"] is not None:
                learner.optimizer.load_state_dict(state["optimizer"])
            if learner.reference is not None:      # the KL reference: the initial weights, as saved, never the resumed
                if not isinstance(state.get("reference"), dict):
                    raise ValueError(f"--resume: {path} holds no KL reference for {learner.name} (written "
                                     "before checkpoints kept it); with --kl-coef > 0 the run cannot continue "
                                     "against the same reference: train again with another --out")
                learner.load_reference_state(state["reference"])
        method.load_state_dict(meta["credit"])
        set_rng_state(tensors["rng"])
    except (RuntimeError, KeyError, TypeError, IndexError) as e:     # torch's own errors for a state that does not fit
        raise ValueError(f"--resume: {path} does not fit this run's models, optimizers or RNGs "
                         f"({type(e).__name__}: {str(e)[:300]})") from None
    return meta["step"]
