"""The credit-method interface, its registry, and the few helpers every method shares.

A method sees :class:`~baselines.episode.Episode` objects only (never envs or models): the outcome of each agent
(``episode.rewards[agent]``: the team reward for a team member, its own payoff in a zero-sum game), the per-turn
rewards (``Turn.reward``), the counterfactual branches the rollout engine played for it, and the final infos.
"""

from __future__ import annotations

import importlib
import inspect
import math
from typing import Any, Iterable, Sequence, TypeAlias

import numpy as np

from baselines.episode import Branch, Episode
from baselines.rollout import BranchSpec
from marl_llm_envs import spec
from marl_llm_envs.core import TextEnv

__all__ = ["CreditMethod", "TokenAdvantages", "TurnAdvantages", "credit_class", "list_credits", "make_credit",
           "register"]

TurnAdvantages: TypeAlias = list[list[float]]
"""What :meth:`CreditMethod.advantages` returns: for every episode of the batch (in the order given), one advantage per
entry of its ``turns`` (``adv[i][k]`` for ``episodes[i].turns[k]``). The trainer gives every scored token of the
turn that value."""

TokenAdvantages: TypeAlias = list[list[list[float]]]
"""What a per-token method (``per_token = True``, e.g. ``marshal`` with ``variant="roll"``) returns instead: for every
episode, for every turn, one advantage per completion token (``adv[i][k][j]`` for token ``j`` of
``episodes[i].turns[k]``; one value for a turn without completion tokens). A decision scored as one unit (a choice-mode
or MLP turn) takes the first value."""

STD_MODES = ("population", "sample", "mean", None)
_REGISTRY: dict[str, type["CreditMethod"]] = {}


class CreditMethod:
    """Base class of a credit-assignment method (see the package docstring for the contract)."""

    name: str = ""
    per_token: bool = False   # True: advantages() returns TokenAdvantages (one value per completion token)
    needs_state: str | None = None   # a learned critic's input: "global" (env.state()) or "observation", recorded in
    #                                  Turn.state by the rollout engine (RolloutEngine(record_state=needs_state))

    def branches(self, env_id: str) -> list[BranchSpec]:
        """The counterfactual branches the rollout engine must play for this method on ``env_id``."""
        return []

    def advantages(self, episodes: Sequence[Episode]) -> TurnAdvantages | TokenAdvantages:
        """One training batch in; for every episode (in the order given) one advantage per entry of its turns
        (:data:`TurnAdvantages`), or, when :attr:`per_token` is true, one list per turn with a value per completion
        token (:data:`TokenAdvantages`)."""
        raise NotImplementedError

    def state_dict(self) -> dict[str, Any]:
        """JSON-safe running statistics, so a resumed run gives the same next advantages."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state:
            raise ValueError(f"{self.name or type(self).__name__} keeps no state; got keys {sorted(state)}")

    def diagnostics(self, episodes: Sequence[Episode]) -> dict[str, float]:
        """Optional numbers worth logging (e.g. CCPO's help/hurt/same rates)."""
        return {}

    def parameters(self) -> list:
        """The method's trainable tensors (a learned critic's); ``[]`` for Monte Carlo methods."""
        return []

    def attach(self, team) -> None:
        """Called once by the trainer with its team (learners and their models) before the first rollout, for a
        critic that reads the policy model (``mappo``/``ippo`` with ``critic="value_head"``). Default: nothing."""

    def update(self, episodes: Sequence[Episode]) -> dict[str, float]:
        """Train the method's own parameters on the batch, with its own optimizer; called by the trainer after
        :meth:`advantages` on the same (whole, gathered) batch. Returns numbers to log (e.g. ``critic_loss``)."""
        return {}

    def __repr__(self) -> str:
        return f"<credit {self.name or type(self).__name__}>"


def register(name: str):
    """Class decorator: make a method available as ``make_credit(name)``."""
    def deco(cls: type[CreditMethod]) -> type[CreditMethod]:
        if name in _REGISTRY and _REGISTRY[name] is not cls:
            raise ValueError(f"credit method {name!r} is already registered ({_REGISTRY[name].__name__})")
        cls.name = name
        _REGISTRY[name] = cls
        return cls
    return deco


def list_credits() -> list[str]:
    """The registered method names, in registration order."""
    return list(_REGISTRY)


def make_credit(name: str, **options: Any) -> CreditMethod:
    """A registered method by name (``"rae"``), or a user's class by ``"package.module:ClassName"``.

    Unknown names and options raise ``ValueError`` listing what exists."""
    cls, label = credit_class(name), name
    params = inspect.signature(cls.__init__).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        known = {n: p.default for n, p in params.items()
                 if n != "self" and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}
        unknown = sorted(set(options) - set(known))
        if unknown:
            listed = ", ".join(f"{n}={d!r}" for n, d in known.items()) or "(none)"
            raise ValueError(f"credit method {label} has no option {', '.join(map(repr, unknown))}; its options: "
                             f"{listed}")
    return cls(**options)


def credit_class(name: str) -> type[CreditMethod]:
    """The class :func:`make_credit` builds for ``name`` (a registered name, or ``"package.module:ClassName"``);
    an unknown name raises ``ValueError`` listing what exists."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"a credit method name is a non-empty str, got {name!r}")
    if ":" in name:
        return _load_class(name)
    if name not in _REGISTRY:
        raise ValueError(f"unknown credit method {name!r}; registered: {', '.join(_REGISTRY)}; or give "
                         "'package.module:ClassName' for your own CreditMethod subclass")
    return _REGISTRY[name]


def _load_class(path: str) -> type[CreditMethod]:
    module_name, _, class_name = path.partition(":")
    if not module_name or not class_name:
        raise ValueError(f"{path!r} is not 'package.module:ClassName'")
    try:
        module = importlib.import_module(module_name)    # lazy: a user's module, named at run time
    except ImportError as e:
        raise ValueError(f"cannot import {module_name!r} for credit method {path!r}: {e}") from None
    cls = getattr(module, class_name, None)
    if cls is None:
        raise ValueError(f"module {module_name!r} has no {class_name!r}")
    if not (isinstance(cls, type) and issubclass(cls, CreditMethod)):
        raise ValueError(f"{path!r} is not a subclass of baselines.credit.CreditMethod")
    return cls


# ---------------------------------------------------------------------- helpers shared by the methods
def describe(episode: Episode, index: int) -> str:
    """How an error names an episode: its position in the batch, env, seed, group and sample."""
    return (f"episode {index} ({episode.env_id}, seed {episode.seed}, group {episode.run_id or '-'}/"
            f"{episode.group_id}, sample {episode.sample_index})")


def check_batch(episodes: Iterable[Episode], method: str) -> list[Episode]:
    """The batch as a list, after checking what every method relies on: Episodes, each with turns, and a finite
    outcome for every agent that acted. Raises ``ValueError`` naming the episode and what is missing."""
    if isinstance(episodes, Episode):
        raise TypeError(f"{method}.advantages takes a list of Episodes (one training batch), not one Episode")
    episodes = list(episodes)
    for i, e in enumerate(episodes):
        if not isinstance(e, Episode):
            raise TypeError(f"{method}: item {i} of the batch is a {type(e).__name__}, not an Episode")
        if not e.turns:
            raise ValueError(f"{method}: {describe(e, i)} has no turns; there is nothing to give credit to")
        rewards = e.rewards
        for agent in {t.agent for t in e.turns}:
            r = rewards.get(agent)
            if r.__class__ is not float or not math.isfinite(r):    # the common case (a finite float) checked inline
                outcome(e, i, agent)
    return episodes


def finite(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not math.isfinite(float(value)):
        raise ValueError(f"{what} is {value!r}, not a finite number")
    return float(value)


def outcome(episode: Episode, index: int, agent: str) -> float:
    """The agent's episode return, ``episode.rewards[agent]``."""
    if agent not in episode.rewards:
        raise ValueError(f"{describe(episode, index)} has no reward for {agent} (rewards: {sorted(episode.rewards)})")
    return finite(episode.rewards[agent], f"the reward of {agent} in {describe(episode, index)}")


def branch_outcome(episode: Episode, index: int, branch: Branch, team: str) -> float:
    """A branch's outcome for ``team``: ``Branch.team_rewards[team]``."""
    what = f"the {branch.kind} branch of {branch.agent} at turn {branch.turn_index} of {describe(episode, index)}"
    if team not in branch.team_rewards:
        raise ValueError(f"{what} has no team reward for {team!r} (has {sorted(branch.team_rewards)})")
    return finite(branch.team_rewards[team], f"the team reward of {team} in {what}")


def find_branches(episode: Episode, index: int, kind: str, turn_index: int, method: str,
                  hint: str) -> list[Branch]:
    """The ``kind`` branches taken at ``episode.turns[turn_index]``; none raises ``ValueError`` saying how to get
    them (``hint``: the rollout's ``--branches`` value)."""
    found = [b for b in episode.branches if b.kind == kind and b.turn_index == turn_index]
    if not found:
        turn = episode.turns[turn_index]
        raise ValueError(f"{method}: {describe(episode, index)} has no {kind} branch at turn {turn_index} "
                         f"({turn.agent}); {method} needs it: play the rollout with --branches {hint}")
    return found


def groups(episodes: Sequence[Episode]) -> dict[tuple[str, int], list[int]]:
    """Episode indices by :attr:`Episode.group_key` (the G samples of one task), in order of first appearance."""
    out: dict[tuple[str, int], list[int]] = {}
    for i, e in enumerate(episodes):
        out.setdefault(e.group_key, []).append(i)
    return out


def check_std(std: Any) -> Any:
    if std not in STD_MODES:
        raise ValueError(f"std={std!r} is not one of {list(STD_MODES)}")
    return std


def check_positive(name: str, value: Any, upper: float | None = None) -> float:
    value = finite(value, name)
    if value <= 0 or (upper is not None and value >= upper):
        bound = f"in (0, {upper})" if upper is not None else "> 0"
        raise ValueError(f"{name} must be {bound}, got {value!r}")
    return value


def normalize(values: Sequence[float], std: str | None = "population", eps: float = 1e-6) -> list[float]:
    """GRPO's group normalization ``(x - mean) / (std + eps)``.

    ``std="population"`` (ddof 0), ``"sample"`` (ddof 1, as TRL and verl), ``None`` (mean-centring only, as Dr.
    GRPO) or ``"mean"``: MaxRL's ``(x - mean) / mean`` (Tajwar et al. 2026, "Maximum Likelihood Reinforcement
    Learning", arXiv 2602.02710). With a 0/1 success reward, ``(1/G) sum_i A_i grad log pi(y_i)`` is then their
    estimator ``(1/K) sum_{successes} grad log pi - (1/G) sum_i grad log pi`` (K the successes among the G samples;
    0 when K = 0), whose expectation is ``(1 - (1 - p)^(G-1)) grad log p``: the gradient of their likelihood objective
    truncated at order G - 1, ``-sum_{k<G} (1 - p)^k / k`` (enumerated in ``tests/baselines/credit/test_base.py``). A
    prompt the policy rarely solves weighs almost as much as one it often solves, where GRPO's std weighs it by about
    ``sqrt(p / (1 - p))`` and the plain expected reward by ``p``. Under ``"mean"`` a group whose mean is 0 (no
    success) gets 0, and a negative value is refused (``log`` of an expected reward needs rewards >= 0). A group of
    one value gets mean 0 and std 1 (the value itself), as verl does."""
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0:
        return []
    if x.size == 1:
        return [float(x[0])]
    centred = x - x.mean()
    if std is None:
        return centred.tolist()
    if std == "mean":
        return _by_mean(x[None, :], centred[None, :])[0].tolist()
    return (centred / (x.std(ddof=1 if std == "sample" else 0) + eps)).tolist()


def _by_mean(x: np.ndarray, centred: np.ndarray) -> np.ndarray:
    """MaxRL's scaling of centred rows ``x - mean`` by each row's mean (0 where the mean is 0); refuses negatives."""
    if (x < 0).any() or np.isnan(x).any():
        bad = x[(x < 0) | np.isnan(x)][0]
        raise ValueError(f"std='mean' (MaxRL) divides by the group's mean return and needs returns >= 0, got "
                         f"{float(bad)!r}: use std='population' for a game with negative returns")
    mean = x.mean(axis=1, keepdims=True)
    return np.divide(centred, mean, out=np.zeros_like(centred), where=mean > 0)


def normalize_many(rows: Sequence[Sequence[float]], std: str | None = "population",
                   eps: float = 1e-6) -> list[list[float]]:
    """:func:`normalize` of each row, the same floats bit for bit, with one NumPy call per row length instead of one
    per row: the rows of a length are stacked and reduced along axis 1 (NumPy reduces each row of a C-contiguous
    array with the same pairwise summation as the row alone; ``tests/baselines/credit/test_base.py`` checks it on
    random rows)."""
    out: list[list[float] | None] = [None] * len(rows)
    by_length: dict[int, list[int]] = {}
    for r, values in enumerate(rows):
        n = len(values)
        if n == 0:
            out[r] = []
        elif n == 1:
            out[r] = [float(np.float64(values[0]))]
        else:
            by_length.setdefault(n, []).append(r)
    for which in by_length.values():
        x = np.asarray([rows[r] for r in which], dtype=np.float64)
        centred = x - x.mean(axis=1, keepdims=True)
        if std == "mean":
            centred = _by_mean(x, centred)
        elif std is not None:
            centred = centred / (x.std(axis=1, ddof=1 if std == "sample" else 0, keepdims=True) + eps)
        for r, row in zip(which, centred.tolist()):
            out[r] = row
    return out  # type: ignore[return-value]


def roles_of(env_id: str) -> list[str]:
    """The roles of an env id, from its spec (sorted)."""
    return sorted(set(spec(env_id).roles.values()))


def can_ablate(env_id: str) -> bool:
    """Whether the env has a documented null action (``ablate``); TextArena games do not."""
    return spec(env_id).env_class.ablate is TextEnv.ablate


def fill(episodes: Sequence[Episode], value_of) -> list[list[float]]:
    """Per-turn advantages from ``value_of(index, turn_index, turn)``."""
    return [[float(value_of(i, k, t)) for k, t in enumerate(e.turns)] for i, e in enumerate(episodes)]
