"""Exact scores of a policy in the small poker games: its strategy read from the env, its expected payoff against
the reference equilibrium, and its exploitability, with no sampling noise.

For ``kuhn_poker-v0`` and ``leduc_holdem-v0`` (one hand, ``rounds=1``) the game tree is small enough to enumerate
(:class:`marl_llm_envs.reference.cfr.Tree` over :class:`~marl_llm_envs.reference.kuhn.KuhnGame` /
:class:`~marl_llm_envs.reference.leduc.LeducGame`). A policy's behaviour strategy is read from the live env:
hands are dealt by ``reset(seed=0)``, ``reset(seed=1)``, ... and every betting line of each hand is walked with
``env.clone()``; at the first visit of each information set the policy gives its distribution over the env's
discrete actions (from what the acting agent observes there), mapped onto the tree's actions. The walk stops when
every information set of the tree has been seen, so the strategy covers the whole game.

Then, with the equilibrium ``sigma`` (Kuhn: :func:`~marl_llm_envs.reference.kuhn.kuhn_nash_strategy` with alpha = 0,
as the ``kuhn_nash`` bot plays it; Leduc: the cached CFR+ strategy the ``leduc_cfr`` bot plays):

* ``versus(pi)`` = (u_0(pi_0, sigma_1) - u_0(sigma_0, pi_1)) / 2: the policy's expected payoff against the reference
  in each seat, averaged over the two seats, computed exactly over the deal and every move (``expected_value``);
  the reference itself scores 0 (the game value cancels over the seats), uniform random play scores below 0;
* ``exploitability(pi)`` = (BR_0(pi_1) + BR_1(pi_0)) / 2: half the NashConv, chips per hand, 0 exactly at an
  equilibrium (:func:`marl_llm_envs.reference.cfr.exploitability`, an exact best response).

Both are deterministic functions of the policy, so a score's spread over training seeds is the training's spread
alone; the sampled alternative (the policy against the bot on held-out deals) adds the deals' and moves' noise,
which in Kuhn is of the order of the gap between random play and the equilibrium.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from baselines.policies.base import VectorInputs, request_for
from marl_llm_envs import make
from marl_llm_envs.envs.kuhn_poker import BET, CALL, CHECK, FOLD
from marl_llm_envs.envs.leduc_holdem import legal_moves
from marl_llm_envs.reference.cfr import Tree, expected_value
from marl_llm_envs.reference.cfr import exploitability as nash_conv_half
from marl_llm_envs.reference.kuhn import KuhnGame, kuhn_infoset, kuhn_nash_strategy
from marl_llm_envs.reference.leduc import LeducGame, infoset_key, load_strategy

__all__ = ["EXACT_GAMES", "exploitability", "policy_decider", "random_strategy", "raw_score", "reference_name",
           "reference_strategy", "strategy_of", "versus"]

# decide(env, agent) -> probabilities over the env's discrete actions (0 where illegal) for the agent to move now
Decide = Callable[[Any, str], np.ndarray]


@dataclass(frozen=True)
class _Game:
    reference: str                                          # the reference bot's name (the protocol's opponent)
    game: Callable[[], Any]                                 # the cfr game description
    infoset: Callable[[Any, str], str]                      # (env, agent) -> the tree's info set name
    onto_tree: Callable[[Any, str, np.ndarray], list[float]]  # env-action probabilities -> the tree's actions
    reference_table: Callable[[Any], dict[str, list[float]]]   # tree -> {infoset: probs over the tree's actions}


def _kuhn() -> _Game:
    def onto(env, agent, p):          # tree actions: pass (check or fold), bet (bet or call)
        return [float(p[CHECK] + p[FOLD]), float(p[BET] + p[CALL])]

    return _Game("kuhn_nash", KuhnGame, kuhn_infoset, onto, lambda tree: kuhn_nash_strategy(0.0))


def _leduc() -> _Game:
    def infoset(env, agent):
        return infoset_key(*env.unwrapped.info_state(agent))

    def onto(env, agent, p):          # tree actions: the env's legal discrete indices
        return [float(p[a]) for a in legal_moves(env.unwrapped.info_state(agent)[2][-1])]

    def table(tree):
        stored = load_strategy()["strategy"]
        return {key: [stored[key][a] for a in tree.iset_actions[i]] for key, i in tree.infosets.items()
                if key in stored}

    return _Game("leduc_cfr", LeducGame, infoset, onto, table)


EXACT_GAMES: dict[str, Callable[[], _Game]] = {"kuhn_poker-v0": _kuhn, "leduc_holdem-v0": _leduc}


def _game(env_id: str, env_kwargs: dict[str, Any] | None) -> _Game:
    if env_id not in EXACT_GAMES:
        raise ValueError(f"exact evaluation covers {sorted(EXACT_GAMES)}, not {env_id!r}")
    extra = {k: v for k, v in (env_kwargs or {}).items() if k not in ("rounds", "action_mode")}
    if extra or (env_kwargs or {}).get("rounds", 1) != 1:
        raise ValueError(f"exact evaluation of {env_id} covers one hand with default rules (rounds=1); got "
                         f"env_kwargs {env_kwargs!r}")
    return EXACT_GAMES[env_id]()


def reference_name(env_id: str, env_kwargs: dict[str, Any] | None = None) -> str:
    """The reference bot exact evaluation plays against (``kuhn_nash``, ``leduc_cfr``); raises ``ValueError`` for an
    env or kwargs it does not cover."""
    return _game(env_id, env_kwargs).reference


@functools.lru_cache(maxsize=None)
def _tree(env_id: str):
    return Tree(EXACT_GAMES[env_id]().game())


def strategy_of(env_id: str, decide: Decide, env_kwargs: dict[str, Any] | None = None,
                max_seeds: int = 10_000) -> dict[str, list[float]]:
    """The behaviour strategy of ``decide`` over the whole game tree: ``{infoset: probabilities over the tree's
    actions}``, read from the env as the module docstring says. Raises if ``max_seeds`` deals do not reach every
    information set, or if ``decide`` gives no probability to the legal moves somewhere."""
    g = _game(env_id, env_kwargs)
    tree = _tree(env_id)
    missing = set(tree.infosets)
    table: dict[str, list[float]] = {}
    env = make(env_id, action_mode="discrete")

    def walk(e) -> None:
        base = e.unwrapped
        if base.done:
            return
        agent = base.agent_selection
        key = g.infoset(base, agent)
        mask = np.asarray(e.observe(agent, text=False)["action_mask"])
        if key not in table:
            p = np.asarray(decide(e, agent), np.float64) * (mask > 0)
            if not p.sum() > 0:
                raise ValueError(f"{env_id}: the policy gives no probability to the legal moves at {key!r}")
            table[key] = g.onto_tree(base, agent, p / p.sum())
            missing.discard(key)
        for a in np.flatnonzero(mask > 0):
            child = e.clone()
            child.step(int(a))
            walk(child)

    for seed in range(max_seeds):
        if not missing:
            break
        env.reset(seed=seed)
        walk(env)
    if missing:
        raise ValueError(f"{env_id}: {len(missing)} information sets not reached in {max_seeds} deals, e.g. "
                         f"{sorted(missing)[:3]}")
    return table


def reference_strategy(env_id: str) -> dict[str, list[float]]:
    """The reference equilibrium (the ``kuhn_nash`` / ``leduc_cfr`` bot's strategy) over the tree's actions."""
    return _game(env_id, None).reference_table(_tree(env_id))


def random_strategy(env_id: str) -> dict[str, list[float]]:
    """Uniformly random legal play."""
    tree = _tree(env_id)
    return tree.to_dict(tree.uniform())


def _flat(env_id: str, table: dict[str, list[float]]) -> np.ndarray:
    tree = _tree(env_id)
    missing = [k for k in tree.infosets if k not in table]
    if missing:
        raise ValueError(f"{env_id}: the strategy lacks {len(missing)} information sets, e.g. {missing[:3]}")
    return tree.from_dict(table)


def versus(env_id: str, strategy: dict[str, list[float]], reference: dict[str, list[float]] | None = None) -> float:
    """The strategy's exact expected payoff against ``reference`` (default: the equilibrium), the mean of its two
    seats: ``(u_0(pi_0, sigma_1) - u_0(sigma_0, pi_1)) / 2``."""
    tree = _tree(env_id)
    ref = reference_strategy(env_id) if reference is None else reference
    seat = {key: tree.iset_player[i] for key, i in tree.infosets.items()}
    as_0 = {k: (strategy[k] if seat[k] == 0 else ref[k]) for k in tree.infosets}
    as_1 = {k: (ref[k] if seat[k] == 0 else strategy[k]) for k in tree.infosets}
    return 0.5 * (expected_value(tree, _flat(env_id, as_0)) - expected_value(tree, _flat(env_id, as_1)))


def exploitability(env_id: str, strategy: dict[str, list[float]]) -> float:
    """Half the NashConv of the strategy (both seats' parts), chips per hand; 0 exactly at an equilibrium."""
    return nash_conv_half(_tree(env_id), _flat(env_id, strategy))


def raw_score(env_id: str, strategy: dict[str, list[float]], evaluate: str) -> float:
    """A suite's raw score of a strategy: ``"exact"``: :func:`versus`; ``"exploitability"``: minus
    :func:`exploitability` (higher is better, 0 at an equilibrium)."""
    if evaluate == "exact":
        return versus(env_id, strategy)
    if evaluate == "exploitability":
        return -exploitability(env_id, strategy)
    raise ValueError(f"evaluate: 'exact' or 'exploitability', got {evaluate!r}")


def policy_decider(policies: dict[str, Any]) -> Decide:
    """``decide`` for a team of policies by role that expose their distribution: an MLP (``log_policy``, as
    :class:`baselines.policies.mlp.MLPPolicy`) on what the acting agent observes, or a choice-mode LLM through the
    policy protocol (``generate`` on the agent's text and legal moves; the Generation's choice probabilities, i.e.
    ``softmax(score / T)``, the distribution it samples from; at ``temperature=0`` the argmax it plays)."""
    import torch  # lazy: seconds to load; a policy that gives its distribution has loaded it already

    def decide(env, agent: str) -> np.ndarray:
        role = env.roles[agent]
        policy = policies[role]
        if not hasattr(policy, "log_policy"):
            if not hasattr(policy, "generate"):
                raise ValueError(f"exact evaluation needs a policy that gives its distribution (an MLP, or an LLM in "
                                 f"choice mode); role {role!r} is played by {type(policy).__name__}")
            return _choice_distribution(policy, env, agent, role)
        obs = env.observe(agent, text=False)
        inputs = VectorInputs(np.asarray(obs["observation"]).tolist(), np.asarray(obs["action_mask"]).tolist(),
                              policy.roles.index(role))
        with torch.no_grad():
            return policy.log_policy([inputs])[0].exp()[0].double().cpu().numpy()

    return decide


def _choice_distribution(policy, env, agent: str, role: str) -> np.ndarray:
    """A choice-mode policy's distribution over the env's discrete actions: one ``generate`` call on the agent's
    prompt and legal moves (``legal_actions`` lists the legal indices in order), read from the Generation."""
    request = request_for(env, agent, ("text", "legal_actions"))
    legal = request.legal_actions
    g = policy.generate([request], seed=0)[0]
    probs = g.choice.probs if g.choice is not None else None    # None: a free-text turn, no distribution
    if probs is None or len(probs) != len(legal):
        name = getattr(policy, "name", type(policy).__name__)
        raise ValueError(f"exact evaluation needs a policy that gives its distribution (an MLP, or an LLM in choice "
                         f"mode); role {role!r} is played by {name!r}, which gave none")
    p = np.asarray(probs, np.float64)
    if policy.settings().get("temperature") == 0:
        p = (np.arange(len(p)) == int(p.argmax())).astype(np.float64)
    mask = np.asarray(env.unwrapped.action_mask(agent))   # in any action mode; legal_actions lists its indices in order
    out = np.zeros(len(mask), np.float64)
    out[np.flatnonzero(mask > 0)] = p
    return out
