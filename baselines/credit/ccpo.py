"""``ccpo_v1`` and ``ccpo_v2``: CCPO's counterfactual credit for a Thinker-Solver team (think_solve-v0).

Both compare each episode with its solver-solo counterfactual: the ``ablate`` branch of the thinker, in which the
thinker's message is removed and the solver answers alone (``branches()`` asks for ``ablate:thinker``). Per episode,
``R_joint`` is the team's return and ``R_solo`` the branch's team reward; ``D = R_joint - R_solo``.

ccpo_v1, history-aware shaping, as CCPO's released ``historical_normalizer.py`` computes it. Exponential moving
statistics (decay 0.99) of the batch mean and the batch **population** variance (``np.var``) of ``D``, of
``R_joint`` and of ``R_solo``: ``mu <- d mu + (1 - d) mean_batch``, ``m2 <- d m2 + (1 - d) var_batch`` (the first batch
sets them); ``sigma = sqrt(m2)``, or 1 when ``m2 <= 1e-6``. The statistics are **stale**: a batch is shaped with
those of the batches before it, then updates them. Until one earlier batch and ``min_samples = 10`` values have been
seen there is no shaping (thinker: ``D``; solver: ``R_joint``). After that:

    thinker:  r_T = tanh(alpha (D - mu_D) / (sigma_D + eps))
    solver:   r_S = g z_joint + (1 - g) z_solo,    z = (x - mu) / (sigma + eps),
              g = sigmoid(clip(eta mu_D / (sigma_D + eps), -20, 20))        (one g per batch)

with alpha = eta = 1, eps = 1e-6. Then GRPO normalization within the group, per role: ``(r - mean) / (std + 1e-6)``
with the **sample** std (``std="sample"``: CCPO's verl trainer uses torch's unbiased std).

ccpo_v2, event bonus, as CCPO's two-model trainer computes it. Outcomes on CCPO's {-1, +1} scale: ``+1`` when the
reward is > 0, else ``-1`` (think_solve's binary 1/0 become +1/-1; an invalid-move penalty is -1). ``b_solo`` = the
mean of the group's solo outcomes; ``helped`` = joint > 0 and b_solo < 0; ``hurt`` = joint < 0 and b_solo > 0;

    thinker:  r_T = joint + 0.2 (helped - hurt),      solver:  r_S = joint,

then mean-centring within the group, per role (no std). ``diagnostics()`` reports the help / hurt / same rates and the
mean of ``R_joint - R_solo`` (raw rewards).

"Thinker" is the role named by ``thinker`` (default ``"thinker"``); every other role is a solver.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from baselines.credit.base import CreditMethod, branch_outcome, check_batch, check_positive, check_std, describe, \
    find_branches, groups, normalize, outcome, register, roles_of
from baselines.episode import Episode
from baselines.rollout import BranchSpec

STATS = ("D", "joint", "solo")


class _ThinkerCredit(CreditMethod):
    """What both CCPO versions share: the thinker's ablate branch and the joint/solo outcomes per episode."""

    def __init__(self, thinker: str = "thinker") -> None:
        if not isinstance(thinker, str) or not thinker:
            raise ValueError(f"thinker must be a role name, got {thinker!r}")
        self.thinker = thinker

    def branches(self, env_id: str) -> list[BranchSpec]:
        roles = roles_of(env_id)
        if self.thinker not in roles or len(roles) < 2:
            raise ValueError(f"{self.name} needs a {self.thinker!r} role and a solver role; {env_id} has roles "
                             f"{roles} (CCPO is defined for think_solve-v0)")
        return [BranchSpec("ablate", self.thinker)]

    def _joint_solo(self, episodes: list[Episode]) -> tuple[np.ndarray, np.ndarray]:
        joint, solo = [], []
        for i, e in enumerate(episodes):
            first = next((k for k, t in enumerate(e.turns) if t.role == self.thinker), None)
            if first is None:
                raise ValueError(f"{self.name}: {describe(e, i)} has no turn of role {self.thinker!r}")
            turn = e.turns[first]
            branch = find_branches(e, i, "ablate", first, self.name, f"ablate:{self.thinker}")[0]
            joint.append(outcome(e, i, turn.agent))
            solo.append(branch_outcome(e, i, branch, turn.team))
        return np.asarray(joint), np.asarray(solo)

    def _per_role_grpo(self, episodes: list[Episode], thinker_r: np.ndarray, solver_r: np.ndarray,
                       std: str | None) -> list[list[float]]:
        value: dict[tuple[int, bool], float] = {}
        for members in groups(episodes).values():
            for is_thinker, r in ((True, thinker_r), (False, solver_r)):
                for i, a in zip(members, normalize([r[i] for i in members], std)):
                    value[(i, is_thinker)] = a
        return [[value[(i, t.role == self.thinker)] for t in e.turns] for i, e in enumerate(episodes)]


@register("ccpo_v1")
class CCPOv1(_ThinkerCredit):
    def __init__(self, thinker: str = "thinker", decay: float = 0.99, alpha: float = 1.0, eta: float = 1.0,
                 eps: float = 1e-6, min_samples: int = 10, std: str | None = "sample") -> None:
        super().__init__(thinker)
        self.decay = check_positive("decay", decay, upper=1.0)
        self.alpha, self.eta, self.eps = (check_positive(n, v) for n, v in (("alpha", alpha), ("eta", eta),
                                                                             ("eps", eps)))
        if isinstance(min_samples, bool) or not isinstance(min_samples, int) or min_samples < 0:
            raise ValueError(f"min_samples must be a non-negative int, got {min_samples!r}")
        self.min_samples, self.std = min_samples, check_std(std)
        self.stats: dict[str, dict[str, float]] = {}   # name -> {"mean", "m2"}
        self.batches = 0
        self.values = 0

    def _sigma(self, name: str) -> float:
        m2 = self.stats[name]["m2"]
        return math.sqrt(m2) if m2 > 1e-6 else 1.0

    def advantages(self, episodes: Sequence[Episode]) -> list[list[float]]:
        episodes = check_batch(episodes, self.name)
        joint, solo = self._joint_solo(episodes)
        d = joint - solo
        if self.batches >= 1 and self.values >= self.min_samples:   # shape with the statistics of earlier batches
            mu = {n: self.stats[n]["mean"] for n in STATS}
            sd = {n: self._sigma(n) for n in STATS}
            thinker_r = np.tanh(self.alpha * (d - mu["D"]) / (sd["D"] + self.eps))
            g = 1.0 / (1.0 + math.exp(-float(np.clip(self.eta * mu["D"] / (sd["D"] + self.eps), -20, 20))))
            z_joint = (joint - mu["joint"]) / (sd["joint"] + self.eps)
            z_solo = (solo - mu["solo"]) / (sd["solo"] + self.eps)
            solver_r = g * z_joint + (1.0 - g) * z_solo
        else:
            thinker_r, solver_r = d, joint
        if len(d):       # a batch with no thinker decision has no statistics (their mean would be NaN, for good)
            for name, x in zip(STATS, (d, joint, solo)):
                if name not in self.stats:
                    self.stats[name] = {"mean": float(x.mean()), "m2": float(x.var())}
                else:
                    s = self.stats[name]
                    s["mean"] = self.decay * s["mean"] + (1 - self.decay) * float(x.mean())
                    s["m2"] = self.decay * s["m2"] + (1 - self.decay) * float(x.var())
            self.batches += 1
            self.values += len(d)
        return self._per_role_grpo(episodes, thinker_r, solver_r, self.std)

    def diagnostics(self, episodes: Sequence[Episode]) -> dict[str, float]:
        joint, solo = self._joint_solo(check_batch(episodes, self.name))
        return _rates(joint > solo, joint < solo, joint - solo)

    def state_dict(self) -> dict[str, Any]:
        return {"stats": {n: dict(s) for n, s in self.stats.items()}, "batches": self.batches, "values": self.values}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if not isinstance(state, dict) or set(state) != {"stats", "batches", "values"}:
            raise ValueError("ccpo_v1 state is {'stats': {name: {'mean', 'm2'}}, 'batches': int, 'values': int}")
        self.stats = {str(n): {"mean": float(s["mean"]), "m2": float(s["m2"])} for n, s in state["stats"].items()}
        self.batches, self.values = int(state["batches"]), int(state["values"])


@register("ccpo_v2")
class CCPOv2(_ThinkerCredit):
    def __init__(self, thinker: str = "thinker", bonus: float = 0.2) -> None:
        super().__init__(thinker)
        self.bonus = check_positive("bonus", bonus)

    def _events(self, episodes: list[Episode]):
        joint, solo = self._joint_solo(episodes)
        sj, ss = np.where(joint > 0, 1.0, -1.0), np.where(solo > 0, 1.0, -1.0)
        b_solo = np.zeros(len(episodes))
        for members in groups(episodes).values():
            b_solo[members] = ss[members].mean()
        helped, hurt = (sj > 0) & (b_solo < 0), (sj < 0) & (b_solo > 0)
        return joint, solo, sj, helped, hurt

    def advantages(self, episodes: Sequence[Episode]) -> list[list[float]]:
        episodes = check_batch(episodes, self.name)
        _, _, sj, helped, hurt = self._events(episodes)
        thinker_r = sj + self.bonus * (helped.astype(float) - hurt.astype(float))
        return self._per_role_grpo(episodes, thinker_r, sj, None)

    def diagnostics(self, episodes: Sequence[Episode]) -> dict[str, float]:
        joint, solo, _, helped, hurt = self._events(check_batch(episodes, self.name))
        return _rates(helped, hurt, joint - solo)


def _rates(helped: np.ndarray, hurt: np.ndarray, diff: np.ndarray) -> dict[str, float]:
    n = max(1, len(diff))
    return {"help_rate": float(helped.sum()) / n, "hurt_rate": float(hurt.sum()) / n,
            "same_rate": float(len(diff) - helped.sum() - hurt.sum()) / n,
            "mean_joint_minus_solo": float(np.mean(diff)) if len(diff) else 0.0}
