"""Exact scores of a policy in the small poker games: its strategy read from the env, its expected payoff against
the reference equilibrium, and its exploitability, with no sampling noise.

A game that registers an :class:`~marl_llm_envs.cfr.ExactGame` (``spec(env_id).exact``: today
``kuhn_poker-v0`` and ``leduc_holdem-v0``, one hand, ``rounds=1``) is covered: its game tree is small enough to
enumerate (:class:`marl_llm_envs.cfr.Tree` over the game's description, e.g.
:class:`~marl_llm_envs.envs.kuhn_poker.KuhnGame`). A policy's behaviour strategy is read from the live env:
hands are dealt by ``reset(seed=0)``, ``reset(seed=1)``, ... and every betting line of each hand is walked with
``env.clone()``; at the first visit of each information set the policy gives its distribution over the env's
discrete actions (from what the acting agent observes there), mapped onto the tree's actions. The walk stops when
every information set of the tree has been seen, so the strategy covers the whole game.

Then, with the game's reference equilibrium ``sigma`` (Kuhn:
:func:`~marl_llm_envs.envs.kuhn_poker.kuhn_nash_strategy` with alpha = 0, as the ``kuhn_nash`` bot plays it; Leduc:
the cached CFR+ strategy the ``leduc_cfr`` bot plays):

* ``versus(pi)`` = (u_0(pi_0, sigma_1) - u_0(sigma_0, pi_1)) / 2: the policy's expected payoff against the reference
  in each seat, averaged over the two seats, computed exactly over the deal and every move (``expected_value``);
  the reference itself scores 0 (the game value cancels over the seats), uniform random play scores below 0;
* ``exploitability(pi)`` = (BR_0(pi_1) + BR_1(pi_0)) / 2: half the NashConv, chips per hand, 0 exactly at an
  equilibrium (:func:`marl_llm_envs.cfr.exploitability`, an exact best response).

Both are deterministic functions of the policy, so a score's spread over training seeds is the training's spread
alone; the sampled alternative (the policy against the bot on held-out deals) adds the deals' and moves' noise,
which in Kuhn is of the order of the gap between random play and the equilibrium.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Sequence

import numpy as np

from baselines.policies.base import VectorInputs, request_for
from marl_llm_envs import list_envs, make, spec
from marl_llm_envs.cfr import ExactGame, Tree, expected_value
from marl_llm_envs.cfr import exploitability as nash_conv_half

__all__ = ["covered_env_ids", "exploitability", "policy_decider", "random_strategy", "raw_score", "reference_name",
           "reference_strategy", "strategies_of", "strategy_of", "versus"]

# decide(env, agent) -> probabilities over the env's discrete actions (0 where illegal) for the agent to move now
Decide = Callable[[Any, str], np.ndarray]


def covered_env_ids() -> list[str]:
    """The registered env ids exact evaluation covers: those whose game registered an ``ExactGame``."""
    return [env_id for env_id in list_envs() if spec(env_id).exact is not None]


def _game(env_id: str, env_kwargs: dict[str, Any] | None) -> ExactGame:
    game = spec(env_id).exact if env_id in list_envs() else None
    if game is None:
        raise ValueError(f"exact evaluation covers {covered_env_ids()}, not {env_id!r}")
    kwargs = {k: v for k, v in (env_kwargs or {}).items() if k != "action_mode"}
    if any(k not in game.kwargs or v != game.kwargs[k] for k, v in kwargs.items()):
        rules = ", ".join(f"{k}={v!r}" for k, v in game.kwargs.items())
        raise ValueError(f"exact evaluation of {env_id} covers the default rules with {rules}; got env_kwargs "
                         f"{env_kwargs!r}")
    return game


def reference_name(env_id: str, env_kwargs: dict[str, Any] | None = None) -> str:
    """The reference bot exact evaluation plays against (``kuhn_nash``, ``leduc_cfr``); raises ``ValueError`` for an
    env or kwargs it does not cover."""
    return _game(env_id, env_kwargs).reference


@functools.lru_cache(maxsize=None)
def _tree(env_id: str):
    return Tree(_game(env_id, None).game())


def strategy_of(env_id: str, decide: Decide, env_kwargs: dict[str, Any] | None = None,
                max_seeds: int = 10_000) -> dict[str, list[float]]:
    """The behaviour strategy of ``decide`` over the whole game tree: ``{infoset: probabilities over the tree's
    actions}``, read from the env as the module docstring says. Raises if ``max_seeds`` deals do not reach every
    information set, or if ``decide`` gives no probability to the legal moves somewhere."""
    return strategies_of(env_id, [decide], env_kwargs, max_seeds)[0]


def strategies_of(env_id: str, decides: Sequence[Decide], env_kwargs: dict[str, Any] | None = None,
                  max_seeds: int = 10_000) -> list[dict[str, list[float]]]:
    """:func:`strategy_of` of several policies (a run's kept checkpoints) in one walk of the game tree: the walk (env
    clones and steps) is most of the cost, and it does not depend on the policy."""
    g = _game(env_id, env_kwargs)
    tree = _tree(env_id)
    missing = set(tree.infosets)
    tables: list[dict[str, list[float]]] = [{} for _ in decides]
    env = make(env_id, action_mode="discrete")

    def walk(e) -> None:
        base = e.unwrapped
        if base.done:
            return
        agent = base.agent_selection
        key = g.infoset(base, agent)
        mask = np.asarray(e.observe(agent, text=False)["action_mask"])
        if key not in tables[0]:
            for decide, table in zip(decides, tables):
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
    return tables


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
