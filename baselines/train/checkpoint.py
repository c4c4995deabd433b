"""Checkpoints written atomically: a step's files go into a temporary folder that is renamed into place, then the
``latest`` pointer is replaced (write + ``os.replace``). A run killed at any moment resumes from the last complete
checkpoint; older ones beyond ``keep`` are removed."""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch

__all__ = ["latest", "load", "rng_state", "save", "set_rng_state"]


def rng_state() -> dict[str, Any]:
    """Every global RNG this process may use (Python, NumPy, torch CPU and CUDA)."""
    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save(folder: Path, step: int, meta: dict[str, Any], tensors: dict[str, Any], keep: int = 2) -> Path:
    """Write checkpoint ``step`` under ``folder`` (``meta``: JSON; ``tensors``: anything ``torch.save`` takes)."""
    folder.mkdir(parents=True, exist_ok=True)
    final = folder / f"step-{step:07d}"
    tmp = folder / f".tmp-step-{step:07d}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    (tmp / "meta.json").write_text(json.dumps(meta, indent=1, sort_keys=True))
    torch.save(tensors, tmp / "state.pt")
    for f in tmp.iterdir():
        with open(f, "rb") as fh:
            os.fsync(fh.fileno())
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)
    pointer = folder / f".latest-{os.getpid()}"
    pointer.write_text(final.name)
    os.replace(pointer, folder / "latest")
    done = sorted(p for p in folder.glob("step-*") if p.is_dir())
    for old in done[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def latest(folder: Path) -> Path | None:
    pointer = folder / "latest"
    if not pointer.is_file():
        return None
    path = folder / pointer.read_text().strip()
    return path if (path / "meta.json").is_file() and (path / "state.pt").is_file() else None


def load(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    meta = json.loads((path / "meta.json").read_text())
    tensors = torch.load(path / "state.pt", map_location="cpu", weights_only=False)
    return meta, tensors
