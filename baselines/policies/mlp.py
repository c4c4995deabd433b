"""A small torch MLP policy on the numeric observation, with the action mask (the micro tier: discrete mode, CPU).

:class:`MLPPolicy` reads the numeric observation and the action mask (the same information the agent sees in its
text): :attr:`Request.observation` and :attr:`Request.action_mask`, which the rollout engine fills because the policy
declares ``observes = {"vector"}`` (so no prompt is rendered for it; :func:`~baselines.policies.base.request_for`
builds such a request outside a rollout). It appends a one-hot of the agent's role, and samples an action
index from ``softmax(logits / temperature)`` over the legal actions (argmax at ``temperature=0``). Each request's
sampling is seeded from ``(call seed, Request.key)``, so a decision does not depend on how requests are batched (a
sharded data-parallel rollout plays the same episodes as one process).

``Generation``: ``action`` = the index, ``completion_ids = [index]``, ``logprobs = [log pi(index)]`` under the sampling
distribution, and ``choice = Choice(index, log pi(index), scoring="mlp", inputs=VectorInputs(...))``: the inputs a
trainer needs to score the decision again (:meth:`MLPPolicy.logprobs`).
"""

from __future__ import annotations

import math
import os
from bisect import bisect_right
from itertools import chain
from typing import Sequence

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from baselines.policies.base import Choice, Generation, Policy, Request, VectorInputs
from marl_llm_envs.fast_rng import first_uniforms

__all__ = ["MLP", "MLPPolicy", "same_floats_on_every_cpu"]


class MLP(nn.Module):
    """``obs (+ role one-hot) -> hidden -> hidden -> logits over the largest action space of the env``."""

    def __init__(self, in_size: int, out_size: int, hidden: int = 64) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(in_size, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(),
                                 nn.Linear(hidden, out_size))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # What ``self.net(x)`` computes (nn.Linear's forward is F.linear, nn.Tanh's is torch.tanh), without the five
        # submodule calls: each costs more than its op on a micro-tier batch (forward hooks on the submodules are
        # not run; none are registered, and the parameters and the state_dict keys are nn.Sequential's).
        first, _, second, _, out = self.net
        x = torch.tanh(F.linear(x, first.weight, first.bias))
        x = torch.tanh(F.linear(x, second.weight, second.bias))
        return F.linear(x, out.weight, out.bias)


def same_floats_on_every_cpu() -> None:
    """Ask Intel MKL, torch's CPU matrix library, for the same float32 results on every x86 CPU with AVX2, unless
    the environment already chooses (``MKL_CBWR``, MKL's conditional numerical reproducibility, which MKL documents
    for Intel and compatible processors; checked here between an AVX-512 and an AVX2 host, not on an AMD one).

    MKL picks its matrix kernels by the CPU, and its AVX-512 ones sum in another order than its AVX2 ones. A seeded
    MLP run then trains to other weights on another machine: measured on an AVX-512 host against a recording made
    on an AVX2 one, the log-probabilities after one AdamW step were 3e-4 apart (Adam's first step is about the sign
    of each gradient entry, so a last-bit difference in a near-zero entry becomes a change of the learning rate's
    size), and ``validate --reproduce``, which trains a micro-tier run again and compares its weights' hash, would
    refuse an honest submission made on the other kind of CPU. ``MKL_CBWR=AVX2`` runs the AVX2 kernels everywhere.
    On the micro tier's small batches that costs nothing measurable (Kuhn, 300 training steps: 2.43-2.57 CPU-s
    without it, 2.43-2.48 s with it); a large product runs about 1.6x slower on an AVX-512 CPU
    (``benchmarks/RESULTS.md``), which is why an LLM run does not ask for it.

    MKL reads the variable at its first matrix product in the process: an MLP policy asks when it is built, which
    is before its first forward pass in the trainer, evaluation and ``--reproduce``. A process that ran MKL products
    before (an LLM run, then an MLP run) keeps the kernels it started with; set ``MKL_CBWR=AVX2`` in its
    environment to have the same floats there."""
    os.environ.setdefault("MKL_CBWR", "AVX2")


class MLPPolicy(Policy):
    """An :class:`MLP` behind the policy protocol (discrete mode only). Building one asks MKL for the same floats on
    every CPU (:func:`same_floats_on_every_cpu`)."""

    observes = frozenset({"vector"})

    def __init__(self, module: nn.Module, roles: Sequence[str], action_size: int, temperature: float = 1.0,
                 name: str = "mlp") -> None:
        if temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {temperature}")
        same_floats_on_every_cpu()
        self.module = module
        self.in_size = next(m.in_features for m in module.modules() if isinstance(m, nn.Linear))  # obs + role one-hot
        self.roles = list(roles)
        self.action_size = int(action_size)
        self.temperature = float(temperature)
        self.mode = "mlp"
        self.name = name

    @classmethod
    def for_env(cls, env, roles: Sequence[str] | None = None, hidden: int = 64, seed: int = 0,
                temperature: float = 1.0, name: str = "mlp") -> "MLPPolicy":
        """An MLP sized for ``env`` (its vector size, its roles, its largest action list), initialised from ``seed``."""
        if getattr(env, "action_mode", "") != "discrete":
            raise ValueError(f"an MLP policy plays discrete mode; {env.env_id} is in {env.action_mode!r} mode "
                             "(make the env with action_mode='discrete')")
        roles = list(roles or sorted(set(env.roles.values())))
        size = max(len(env.action_names(a)) for a in env.possible_agents)
        with torch.random.fork_rng(devices=[]):   # the global torch RNG is left as it was
            torch.manual_seed(int(seed))
            module = MLP(env.vector_size + len(roles), size, hidden)
        return cls(module, roles, size, temperature, name)

    def log_policy(self, inputs: Sequence[VectorInputs]) -> tuple[torch.Tensor, torch.Tensor]:
        """Log-probabilities over the action list for decisions described by their :class:`VectorInputs`, illegal
        actions at a large negative logit (never -inf); and the mask. The input rows are the observation, then the
        role one-hot, each Python float converted once to float32 (one NumPy call per field where the rows have one
        length: a trainer scores thousands of recorded decisions a step)."""
        if any(v is None for v in inputs):
            raise ValueError("an MLP decision is scored on its VectorInputs (Choice.inputs), and this one has none")
        n = len(inputs)
        x = np.zeros((n, self.in_size), np.float32)   # built in NumPy, one tensor each (fewer allocations)
        mask = np.zeros((n, self.action_size), np.float32)
        sizes = _stack([v.observation for v in inputs], x)
        x[np.arange(n), [size + v.role_index for size, v in zip(sizes, inputs)]] = 1.0   # the role one-hot
        _stack([v.mask for v in inputs], mask)
        return self._log_policy(x, mask)

    def _log_policy(self, x: np.ndarray, mask: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        module = self.module
        device = next(module.parameters()).device
        illegal = torch.from_numpy(mask <= 0).to(device)      # NumPy's comparison: the same bools, one op less
        x, mask = torch.from_numpy(x).to(device), torch.from_numpy(mask).to(device)
        logits = module(x).float()
        if self.temperature > 0 and self.temperature != 1.0:     # x / 1.0 is x: no op at the default temperature
            logits = logits / self.temperature
        return torch.log_softmax(logits.masked_fill(illegal, -1e9), dim=-1), mask

    def legal_probs(self, inputs: VectorInputs) -> np.ndarray:
        """The distribution over the legal moves of one recorded decision, in the order of its mask's legal ids
        (float64, not renormalized): what :func:`~baselines.policies.base.choice_probs` reads for an MLP's choice."""
        with torch.no_grad():
            logp, mask = self.log_policy([inputs])
        legal = np.flatnonzero(np.asarray(mask[0].cpu()) > 0)
        return np.exp(logp[0].cpu().double().numpy()[legal])

    def logprobs(self, inputs: Sequence[VectorInputs], actions: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor]:
        """``(log pi(action), entropy)`` for recorded decisions (differentiable when grad is enabled)."""
        logp, mask = self.log_policy(inputs)
        picked = logp.gather(-1, torch.tensor(list(actions), device=logp.device)[:, None])[:, 0]
        legal = mask > 0
        p = logp.exp() * legal
        entropy = -(p * torch.where(legal, logp, 0.0)).sum(-1)      # 0.0: zeros_like(logp)'s values, one op less
        return picked, entropy

    def generate(self, requests: Sequence[Request], seed: int | None = None) -> list[Generation]:
        if not requests:
            return []
        x, masks, inputs = self._inputs(requests)
        with torch.no_grad():
            logp = self._log_policy(x, masks)[0].cpu().numpy().astype(np.float64)
        rows, legal_ids = np.nonzero(masks > 0)          # each row's legal indices, in order
        counts = np.bincount(rows, minlength=len(requests)).tolist()
        cols = legal_ids.tolist()
        legals, at = [], 0
        for r, n in zip(requests, counts):
            if not n:
                raise ValueError(f"{r.env_id}/{r.agent}: no legal action")
            legals.append(cols[at:at + n])
            at += n
        actions = self._draw(requests, logp, legals, seed, (rows, legal_ids))
        picked = logp[np.arange(len(actions)), actions].tolist()
        return [Generation(action=a, text=str(a), completion_ids=[a], logprobs=[lp],
                           choice=Choice(a, lp, "mlp", inputs=v)) for a, lp, v in zip(actions, picked, inputs)]

    def _inputs(self, requests: Sequence[Request]) -> tuple[np.ndarray, np.ndarray, list[VectorInputs]]:
        """The input rows (observation, then the role one-hot), the masks, and each request's :class:`VectorInputs`
        (its inputs as lists, which :meth:`log_policy` reads when training). The rows are written from the observation
        arrays themselves (the same float32 values as from the lists): one stacked copy when the rows have one size."""
        role_index: dict[str, int] = {}
        for i, role in enumerate(self.roles):
            role_index.setdefault(role, i)           # roles.index(role)
        x = np.zeros((len(requests), self.in_size), np.float32)
        masks = np.zeros((len(requests), self.action_size), np.float32)
        inputs, vectors, mask_arrays = [], [], []
        for r in requests:
            if r.role not in role_index:
                raise ValueError(f"{self.name} plays roles {self.roles}, not {r.role!r}")
            vector, mask = r.observation, r.action_mask
            if vector is None:
                raise ValueError(f"{self.name} reads Request.observation, and the request for {r.env_id}/{r.agent} "
                                 f"has none: build it with request_for(env, agent, policy.observes)")
            if mask is None:
                raise ValueError(f"{self.name} plays discrete mode; {r.env_id} is in text mode")
            inputs.append(VectorInputs(vector.tolist(), mask.tolist(), role_index[r.role]))
            vectors.append(vector)
            mask_arrays.append(mask)
        sizes = {len(v.observation) for v in inputs}
        if len(sizes) == 1 and all(v.ndim == 1 for v in vectors):
            n = sizes.pop()
            x[:, :n] = np.stack(vectors)
            x[np.arange(len(inputs)), [n + v.role_index for v in inputs]] = 1.0   # the role one-hot after the obs
        else:
            for i, (v, vector) in enumerate(zip(inputs, vectors)):
                x[i, :len(v.observation)] = vector
                x[i, len(v.observation) + v.role_index] = 1.0
        if len({len(v.mask) for v in inputs}) == 1 and all(m.ndim == 1 for m in mask_arrays):
            masks[:, :len(inputs[0].mask)] = np.stack(mask_arrays)
        else:
            for i, (v, mask) in enumerate(zip(inputs, mask_arrays)):
                masks[i, :len(v.mask)] = mask
        return x, masks, inputs

    def _draw(self, requests: Sequence[Request], logp: np.ndarray, legals: list[list[int]],
              seed: int | None, where: tuple[np.ndarray, np.ndarray]) -> list[int]:
        """Each request's move: the argmax at temperature 0, else a draw from its legal moves' probabilities
        (``where``: the (row, index) of each legal move, as ``legals`` lists them one row after another)."""
        if self.temperature <= 0:
            return [legal[int(np.argmax(logp[i, legal]))] for i, legal in enumerate(legals)]
        # Each request's draw is default_rng(key).choice(legal.size, p=p): the same draw, bit for bit, as
        # searchsorted(cdf / cdf[-1], default_rng(key).random(), "right"), which is how NumPy's choice makes it;
        # the first random() of every key is computed for the whole batch at once, without building generators.
        base = 0 if seed is None else int(seed)
        uniforms = first_uniforms([[base, *[int(k) % 2**63 for k in r.key]] if r.key else [base, i]
                                   for i, r in enumerate(requests)])
        picks = _choice_indices(np.exp(logp[where]), [len(legal) for legal in legals], uniforms)
        return [legal[k] for legal, k in zip(legals, picks)]


def _stack(rows: list[list], out: np.ndarray) -> list[int]:
    """Write ``rows`` into the first columns of ``out``'s rows (as ``out[i, :len(row)] = row``); returns the lengths."""
    sizes = [len(row) for row in rows]
    size = sizes[0] if sizes else 0
    if sizes.count(size) == len(sizes):
        out[:, :size] = np.fromiter(chain.from_iterable(rows), out.dtype, len(rows) * size).reshape(len(rows), size)
    else:
        for i, row in enumerate(rows):
            out[i, :len(row)] = row
    return sizes


_ROWS_IN_NUMPY = 24       # measured: below it, the per-row loop of _choice_index is faster


def _choice_indices(probs: np.ndarray, counts: list[int], uniforms: list[float]) -> list[int]:
    """:func:`_choice_index` of each row, the rows laid end to end in ``probs`` (``counts[i]`` weights each),
    computed for all rows of one length at once with NumPy's own operations in the same order: the row sums (``sum``
    along the rows: each row is reduced as the row alone, as in :func:`baselines.rollout.summary.row_means`), the
    division, ``cumsum`` along the rows (one addition after another), the division by the last entry, and the count
    of entries ``<= u``, which is ``bisect_right`` on a nondecreasing row (the weights are not negative, and rounding
    keeps their running sums in order). A row whose sum is not a positive finite number goes to
    :func:`_choice_index` (NumPy's NaN and inf arithmetic), and so does every row of a batch of fewer than
    :data:`_ROWS_IN_NUMPY` (where a dozen NumPy calls cost more than the loop).
    ``tests/equivalence/test_fast_choice.py`` compares the two."""
    if len(counts) < _ROWS_IN_NUMPY:
        flat, out, at = probs.tolist(), [], 0
        for k, u in zip(counts, uniforms):
            out.append(_choice_index(flat[at:at + k], u))
            at += k
        return out
    n = counts[0]
    if counts.count(n) == len(counts):          # the common case: every request has as many legal moves
        groups = [(list(range(len(counts))), probs.reshape(len(counts), n), np.asarray(uniforms, np.float64))]
    else:
        by_length: dict[int, list[int]] = {}
        for i, k in enumerate(counts):
            by_length.setdefault(k, []).append(i)
        starts = np.zeros(len(counts), np.intp)
        np.cumsum(counts[:-1], out=starts[1:])
        u_all = np.asarray(uniforms, np.float64)
        groups = [(rows, probs[starts[rows][:, None] + np.arange(k)], u_all[rows]) for k, rows in by_length.items()]
    out = [0] * len(counts)
    for rows, p, u in groups:
        s = p.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):   # bad rows are redone one by one below
            cdf = np.cumsum(p / s[:, None], axis=1)
            cdf /= cdf[:, -1:]
        picks = (cdf <= u[:, None]).sum(axis=1).tolist()
        if 0.0 < s.min() and s.max() < math.inf:
            for r, k in zip(rows, picks):
                out[r] = k
        else:
            for j, (r, k, total) in enumerate(zip(rows, picks, s.tolist())):
                out[r] = k if 0.0 < total < math.inf else _choice_index(p[j].tolist(), uniforms[r])
    return out


def _choice_index(p: list[float], u: float) -> int:
    """``searchsorted(cdf, u, "right")`` with ``cdf = cumsum(p / p.sum()); cdf /= cdf[-1]`` in NumPy float64 (the
    draw of ``default_rng(key).choice(len(p), p=p / p.sum())`` when ``u`` is that generator's first ``random()``),
    computed on Python floats: the same IEEE operations in the same order. NumPy sums fewer than 8 numbers one by one
    (longer arrays with 8 partial sums: left to NumPy here); ``tests/equivalence/test_fast_choice.py`` checks
    this against NumPy on random inputs of every length up to 12."""
    s = 0.0
    if len(p) < 8:
        for v in p:
            s += v
    else:
        s = float(np.sum(np.array(p, dtype=np.float64)))
    if not 0.0 < s < math.inf:         # degenerate weights: NumPy's own arithmetic (nan and inf included)
        arr = np.array(p, dtype=np.float64)
        cdf = np.cumsum(arr / arr.sum())
        cdf /= cdf[-1]
        return int(np.searchsorted(cdf, u, side="right"))
    cdf, c = [], 0.0
    for k, v in enumerate(p):
        c = v / s if k == 0 else c + v / s
        cdf.append(c)
    last = cdf[-1]
    return bisect_right([c / last for c in cdf], u)
