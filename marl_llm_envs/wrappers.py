"""Gymnasium view of one seat: train a single-agent learner (Stable-Baselines3, sb3-contrib ``MaskablePPO``) in any
marl_llm_envs env, with the other seats played by given policies.

    from marl_llm_envs.wrappers import SingleAgentEnv
    env = SingleAgentEnv("kuhn_poker-v0", agent="random", others=random_legal)

* The env runs in discrete mode. The learner observes the numeric ``observation`` vector
  (``Box(-1, 1, (n,), float32)``) and acts with an index into the seat's action list; ``action_masks()`` returns the
  legal-move mask (the method ``MaskablePPO`` looks for), and ``info["action_mask"]`` carries it too.
* ``agent``: the learner's seat, or ``"random"`` for a seat drawn from the wrapper's RNG at every reset (both seats of
  a zero-sum game get trained). Seats must share one observation and action space (true for every symmetric env).
* ``others``: one policy for every other seat or a dict seat -> policy; a policy is ``fn(env, agent, rng)`` (a
  scripted or reference bot from :mod:`marl_llm_envs.scripted` / :mod:`marl_llm_envs.reference`, or
  :func:`frozen_policy` around a trained model for self-play against a frozen copy).
* Reward: everything the env gave the learner's seat since its previous move (so sparse end-of-game rewards arrive
  on the learner's last step even when an opponent ended the game). Invalid indices follow the env's
  ``invalid_move`` policy (default ``"penalty"``).
* Seeding: ``reset(seed)`` seeds the wrapper's RNG (seat draws and the other seats' policies) and the env; without a
  seed, the next env seed comes from the wrapper's RNG, so a seeded run is reproducible end to end.
"""

from __future__ import annotations

from typing import Any, Callable

import gymnasium as gym
import numpy as np

from marl_llm_envs.registry import make
from marl_llm_envs.scripted import random_legal

PolicyFn = Callable[[Any, str, np.random.Generator], Any]


class SingleAgentEnv(gym.Env):
    metadata = {"render_modes": ["ansi"]}

    def __init__(self, env: str | Any, agent: str = "player_0", others: PolicyFn | dict[str, PolicyFn] | None = None,
                 env_kwargs: dict | None = None, render_mode: str | None = None) -> None:
        if isinstance(env, str):
            env = make(env, action_mode="discrete", render_mode=render_mode, **(env_kwargs or {}))
        elif env_kwargs:
            raise ValueError("env_kwargs is only used when env is an id; configure the env you pass yourself")
        if getattr(env, "action_mode", None) != "discrete":
            raise ValueError("SingleAgentEnv needs an env in action_mode='discrete'")
        seats = list(env.possible_agents)
        if agent != "random" and agent not in seats:
            raise ValueError(f"agent={agent!r} is not a seat of {env.env_id}; seats: {seats} or 'random'")
        if others is None:
            others = random_legal
        if isinstance(others, dict):
            missing = [s for s in seats if s not in others and s != agent]
            if missing:
                raise ValueError(f"no policy for seats {missing}; give one per other seat, or one for all")
        self.env = env
        self.seat = agent
        self.others = others
        self.render_mode = render_mode
        first = seats[0] if agent == "random" else agent
        obs_space = env.observation_space(first)["observation"]
        self.observation_space = gym.spaces.Box(obs_space.low, obs_space.high, obs_space.shape, np.float32)
        self.action_space = gym.spaces.Discrete(env.action_space(first).n)
        for s in (seats if agent == "random" else [agent]):
            if env.action_space(s).n != self.action_space.n or env.observation_space(s)["observation"].shape != \
                    obs_space.shape:
                raise ValueError(f"seat {s} has another action/observation space; pick a fixed agent instead")
        self._rng = np.random.default_rng()
        self.agent = first

    # ------------------------------------------------------------------ gymnasium API
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        env_seed = int(self._rng.integers(2**63 - 1))
        self.agent = (self.env.possible_agents[int(self._rng.integers(len(self.env.possible_agents)))]
                      if self.seat == "random" else self.seat)
        self.env.reset(seed=env_seed)
        reward = self._play_others()
        if self._learner_done():
            raise RuntimeError(f"{self.env.env_id} ended before {self.agent} could move (reward {reward})")
        return self._obs(), self._info()

    def step(self, action):
        env = self.env
        env.step(int(action) if isinstance(action, (np.integer, np.ndarray)) else action)
        reward = float(env.rewards.get(self.agent, 0.0))
        reward += self._play_others()
        terminated = self._learner_done()
        truncated = bool(env.truncations.get(self.agent, False))
        return self._obs(), reward, terminated and not truncated, truncated, self._info()

    def action_masks(self) -> np.ndarray:
        return self.env.action_mask(self.agent).astype(bool)

    def render(self):
        return self.env.render()

    def close(self) -> None:
        self.env.close()

    # ------------------------------------------------------------------ internals
    def _policy(self, seat: str) -> PolicyFn:
        return self.others[seat] if isinstance(self.others, dict) else self.others

    def _learner_done(self) -> bool:
        env = self.env
        return env.done or env.terminations.get(self.agent, True) or env.truncations.get(self.agent, False)

    def _play_others(self) -> float:
        """Let the other seats move until it is the learner's turn or the game is over; return the learner's reward."""
        env, reward = self.env, 0.0
        while not env.done and env.agent_selection != self.agent:
            seat = env.agent_selection
            env.step(self._policy(seat)(env, seat, self._rng))
            reward += float(env.rewards.get(self.agent, 0.0))
        return reward

    def _obs(self) -> np.ndarray:
        return self.env.observe(self.agent, text=False)["observation"]     # the prompt is never read here

    def _info(self) -> dict:
        info = dict(self.env.infos.get(self.agent, {}))
        info["action_mask"] = self.env.action_mask(self.agent)
        info["seat"] = self.agent
        return info


def frozen_policy(model: Any, deterministic: bool = False) -> PolicyFn:
    """A seat policy from a trained SB3 model (e.g. a frozen copy for self-play): it predicts from the seat's numeric
    observation, with the legal-move mask when the model takes one (``MaskablePPO``)."""

    def policy(env, agent: str, rng: np.random.Generator) -> int:
        obs = env.observe(agent)["observation"]
        mask = env.action_mask(agent).astype(bool)
        try:
            action, _ = model.predict(obs, action_masks=mask, deterministic=deterministic)
        except TypeError:  # models without masking
            action, _ = model.predict(obs, deterministic=deterministic)
        action = int(action)
        if not mask[action]:
            legal = np.flatnonzero(mask)
            action = int(legal[int(rng.integers(len(legal)))])
        return action

    return policy
