"""Exact held-out evaluation: a team's expected team reward on fixed held-out episodes, computed from its policies'
choice distributions, with no sampling noise.

For each evaluation seed the game tree is enumerated: at every decision the acting role's policy gives its
distribution over the legal moves (``Generation.choice.probs``: choice-mode LLMs, random bots; an MLP's from its
``log_policy``), and every legal move is played on a clone of the env. A leaf (the episode's
end) weighs the product of the probabilities on its path, so

    E[R] = (1 / N) sum_seeds sum_leaves  prod_{decisions on the path} pi(move | history)  R_team(leaf)

exactly, for the policies as they are now (the same number on every call; only the choice of the N seeds is a
sample, and every checkpoint of a run is scored on the same seeds, so two checkpoints compare paired). Free-text
turns cannot be enumerated and are refused; so is a policy that reports no distribution (a scripted bot).

Held out: the seeds are :data:`EVAL_SEED_BASE` + 0, 1, ... (training seeds stay below ``2**40``), and an env that
has a ``split`` (think_solve-v0, voting-v0) is played on ``split="test"`` (with ``clue_pool="words"``: the 60
held-out words). For think_solve-v0's clue task (discrete mode) the evaluation also gives:

* ``p_follow``: the solver's probability of answering the candidate a hint names, averaged over the seeds and,
  uniformly, over the ``K`` hints the thinker could send (the solver's skill, whatever the thinker does now);
* ``p_pass``: the thinker's probability of naming the candidate its clue names;
* ``mi_clue_message``: the mutual information (nats) between the clue's label and the thinker's message, from their
  joint distribution ``p(c, m) = (1 / N) sum_seeds [clue = c] pi_thinker(m | seed)`` (0 for a thinker whose messages
  ignore the clue; ``ln K`` at most).

:func:`evaluate` returns them as ``eval/team_reward`` (one key per team: ``eval/team_reward/<team>``),
``eval/p_follow``, ``eval/p_pass`` and ``eval/mi_clue_message``; the trainer logs them every ``--eval-every`` steps
(:mod:`baselines.train.loop`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from baselines.policies.base import Policy, choice_probs, request_for
from baselines.rollout.engine import env_action
from marl_llm_envs import make

__all__ = ["EVAL_SEED_BASE", "Decision", "evaluate", "eval_env_kwargs", "eval_seeds", "expand"]

EVAL_SEED_BASE = 2**40 + 43 * 2**20     # held-out episode seeds: above every training seed, apart from protocols'
MAX_NODES = 200_000                      # decisions enumerated per call at most (a tree that big is not "small")


@dataclass
class Decision:
    """One enumerated decision: the env before the move, the probability of reaching it, what the acting policy
    gave, and the children (one per legal move, also those of probability 0: ``(move index, child)``)."""

    env: Any
    reach: float
    seed_index: int
    agent: str = ""
    legal: tuple[str, ...] = ()
    probs: list[float] = field(default_factory=list)
    children: list[tuple[int, "Decision"]] = field(default_factory=list)
    team_rewards: dict[str, float] | None = None      # at a leaf: each team's return


def eval_seeds(n: int) -> list[int]:
    """The ``n`` held-out evaluation seeds (the same for every run and checkpoint)."""
    return [EVAL_SEED_BASE + i for i in range(n)]


def eval_env_kwargs(env_id: str, env_kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """``env_kwargs`` on the held-out split: ``split="test"`` when the env has a split, else unchanged."""
    kwargs = dict(env_kwargs)
    if hasattr(make(env_id, **kwargs).unwrapped, "split"):
        kwargs["split"] = "test"
    return kwargs


def expand(policies: Mapping[str, Policy], env_id: str, env_kwargs: Mapping[str, Any],
           seeds: Sequence[int], memo: Mapping[str, dict] | None = None) -> list[Decision]:
    """The game tree of each seed under ``policies`` (role -> policy), level by level: one ``generate`` call per
    role and level for all the seeds' decisions. Returns the roots (one per seed).

    ``memo`` (role -> a dict kept by the caller) is for roles whose policy does not change between calls (a
    trainer's frozen role: :func:`baselines.train.loop.fixed_roles`): such a role's
    distribution at a decision is computed once and read back on later calls, keyed by what the policy reads (its
    prompt and legal moves; a policy that reads more, the env or a vector, is not memoised). Every checkpoint of a
    run is evaluated on the same seeds, so after the first evaluation a frozen role costs nothing; the values are
    the same bit for bit (the first call computes them in the same batch as without a memo)."""
    memo = {r: m for r, m in (memo or {}).items()
            if r in policies and set(policies[r].observes) <= {"text", "legal_actions"}}
    roots = []
    for k, seed in enumerate(seeds):
        env = make(env_id, **env_kwargs)
        env.reset(seed=seed)
        roots.append(Decision(env, 1.0, k))
    frontier, count = list(roots), 0
    while frontier:
        deciding = []
        for node in frontier:
            if node.env.unwrapped.done:
                node.team_rewards = node.env.unwrapped.team_rewards()
            else:
                deciding.append(node)
        count += len(deciding)
        if count > MAX_NODES:
            raise ValueError(f"{env_id}: the game trees of {len(seeds)} seeds have over {MAX_NODES} decisions; exact "
                             "evaluation is for small trees (fewer seeds, or an env with fewer moves)")
        by_role: dict[str, list[Decision]] = {}
        for node in deciding:
            node.agent = node.env.unwrapped.agent_selection
            by_role.setdefault(node.env.unwrapped.roles[node.agent], []).append(node)
        frontier = []
        for role, nodes in by_role.items():
            policy = policies.get(role)
            if policy is None:
                raise ValueError(f"exact evaluation of {env_id}: no policy plays role {role!r}")
            requests = [request_for(n.env, n.agent, set(policy.observes) | {"legal_actions"}) for n in nodes]
            for n, r in zip(nodes, requests):
                if not r.legal_actions:
                    raise ValueError(f"exact evaluation of {env_id}: {n.agent}'s turn is free text; only turns with "
                                     "legal moves (discrete mode, choice mode) can be enumerated")
            known = memo.get(role)
            keys = [(r.text, r.legal_actions) for r in requests]
            todo = [i for i, key in enumerate(keys) if known is None or key not in known]
            got = dict(zip(todo, policy.generate([requests[i] for i in todo], seed=0) if todo else []))
            for i, (n, r) in enumerate(zip(nodes, requests)):
                if i in got:
                    probs = _distribution(policy, r, got[i])
                    if known is not None:
                        known[keys[i]] = probs
                else:
                    probs = known[keys[i]]
                n.legal, n.probs = r.legal_actions, probs
                for i, p in enumerate(n.probs):      # every move, also one of probability 0 (it weighs 0)
                    child = n.env.clone()
                    child.step(env_action(child.unwrapped, n.agent, n.legal[i], n.legal))
                    node = Decision(child, n.reach * p, n.seed_index)
                    n.children.append((i, node))
                    frontier.append(node)
    return roots


def _distribution(policy: Policy, request, generation) -> list[float]:
    """The policy's probabilities over ``request.legal_actions`` for this decision."""
    probs = choice_probs(policy, generation.choice)
    if probs is None:
        raise ValueError(f"exact evaluation needs each policy's distribution over the legal moves; "
                         f"{getattr(policy, 'name', type(policy).__name__)} ({request.role}) reports none (a "
                         "scripted bot): evaluate with choice-mode LLMs, MLPs or random bots")
    probs = probs.tolist()
    if len(probs) != len(request.legal_actions) or not math.isclose(sum(probs), 1.0, abs_tol=1e-4):
        raise ValueError(f"{request.role}: the policy's probabilities ({len(probs)}, sum {sum(probs):.6f}) are not a "
                         f"distribution over the {len(request.legal_actions)} legal moves")
    return probs


def _leaves(node: Decision):
    if node.team_rewards is not None:
        yield node
    for _, child in node.children:
        yield from _leaves(child)


def evaluate(policies: Mapping[str, Policy], env_id: str, env_kwargs: Mapping[str, Any],
             episodes: int, memo: Mapping[str, dict] | None = None) -> dict[str, float]:
    """The exact held-out evaluation of ``policies`` on ``episodes`` seeds (module docstring): ``eval/team_reward``
    per team, and for think_solve-v0's clue task ``eval/p_follow``, ``eval/p_pass``, ``eval/mi_clue_message``.
    ``memo``: the unchanging roles' distributions, kept between calls (:func:`expand`)."""
    kwargs = eval_env_kwargs(env_id, env_kwargs)
    roots = expand(policies, env_id, kwargs, eval_seeds(episodes), memo)
    totals: dict[str, float] = {}
    for root in roots:
        for leaf in _leaves(root):
            for team, r in leaf.team_rewards.items():
                totals[team] = totals.get(team, 0.0) + leaf.reach * r
    out = {f"eval/team_reward/{team}": v / len(roots) for team, v in sorted(totals.items())}
    base = roots[0].env.unwrapped
    if getattr(base, "clue_task", False) and base.action_mode == "discrete":     # think_solve-v0's clue task
        out.update(_clue_metrics(roots))
    return out


def _clue_metrics(roots: list[Decision]) -> dict[str, float]:
    """P(follow), P(pass) and I(clue; message) from the enumerated think_solve trees (thinker, then solver). The
    thinker's moves are ``[none]`` and one per label, or the labels alone (``hint_optional=False``)."""
    base = roots[0].env.unwrapped
    k, moves = base.num_candidates, base.action_names("thinker")
    follow, passed = [], []
    joint = np.zeros((k, len(moves)))          # clue label x message (the thinker's moves, in order)
    for root in roots:
        env = root.env.unwrapped
        clue = (env.candidates if env.clue_pool == "words" else env.labels).index(env.clue())   # its label index
        if root.agent != "thinker" or len(root.probs) != len(moves):
            raise ValueError("the clue metrics need the thinker's moves ([none] and one per candidate, or one per "
                             "candidate) at the root")
        joint[clue] += np.asarray(root.probs) / len(roots)
        passed.append(root.probs[moves.index(env.labels[clue])])
        hints = []
        for move, child in root.children:
            if moves[move] not in env.labels or child.team_rewards is not None:
                continue
            hints.append(child.probs[env.labels.index(moves[move])])     # the solver answers the label the hint named
        follow.append(sum(hints) / k)
    pc, pm = joint.sum(1, keepdims=True), joint.sum(0, keepdims=True)
    nz = joint > 0
    mi = float((joint[nz] * np.log(joint[nz] / (pc @ pm)[nz])).sum())
    return {"eval/p_follow": float(np.mean(follow)), "eval/p_pass": float(np.mean(passed)),
            "eval/mi_clue_message": max(mi, 0.0)}
