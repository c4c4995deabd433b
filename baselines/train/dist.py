"""Data parallel. Under ``accelerate launch --num_processes N`` each process plays a contiguous shard of the step's
tasks (:func:`shard`), the episodes are gathered so every process computes the same advantages on the whole batch,
and each process trains on its own shard's turns; gradients are averaged by DDP, and each process's loss is scaled
so that the average equals the loss of the whole batch (the aggregation weights are computed over the whole batch:
:func:`baselines.train.update.update`). With a policy that seeds its sampling per decision (the MLP) the N-process
run plays the same episodes as one process. Launched as one process, :class:`Dist` is the identity.
"""

from __future__ import annotations

import os
from contextlib import nullcontext

import torch
from accelerate import Accelerator
from accelerate.utils import DistributedDataParallelKwargs, gather_object

from baselines.train.config import TrainConfig

__all__ = ["Dist", "shard"]


class Dist:
    """The data-parallel context: accelerate when launched with several processes, else a plain single process."""

    def __init__(self, cfg: TrainConfig) -> None:
        self.accelerator = None
        self.rank, self.world = 0, 1
        if int(os.environ.get("WORLD_SIZE", "1")) > 1:
            self.accelerator = Accelerator(cpu=cfg.device == "cpu",
                                           kwargs_handlers=[DistributedDataParallelKwargs(find_unused_parameters=True)])
            self.rank, self.world = self.accelerator.process_index, self.accelerator.num_processes

    @property
    def main(self) -> bool:
        return self.rank == 0

    def gather(self, items: list) -> list[list]:
        """Every process's ``items``, as one list per process in rank order."""
        if self.accelerator is None:
            return [items]
        return gather_object([items])

    def prepare(self, module, optimizer):
        if self.accelerator is None:
            return module, optimizer
        return self.accelerator.prepare(module, optimizer)

    def backward(self, loss: torch.Tensor) -> None:
        if self.accelerator is None:
            loss.backward()
        else:
            self.accelerator.backward(loss)

    def no_sync(self, module, last: bool):
        if self.accelerator is None or last:
            return nullcontext()
        return self.accelerator.no_sync(module)


def shard(items: list, rank: int, world: int) -> list:
    """A contiguous share of ``items`` (rank order = global order)."""
    n = len(items)
    return items[rank * n // world:(rank + 1) * n // world]
