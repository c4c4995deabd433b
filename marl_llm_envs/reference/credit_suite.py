"""Reference policies of the credit suite's own envs: team_umbrella-v0 and free_riding-v0.

Each plays every seat of its env (the trainer's ``--partners ROLE=reference`` takes an env's first reference policy
for any role) and is optimal there (proofs in the envs' manuals). Neither is privileged: each reads only its own
observation vector (discrete mode) or prompt (text mode).

* :func:`forecast_follower` (team_umbrella-v0): player_0 takes the umbrella exactly when its forecast says rain; every
  distractor move is ``[wait]``. Expected team return 1 (random: 0).
* :func:`card_matcher` (free_riding-v0): the decider names its card's colour; idle seats play ``[wait]``. Team
  reward 1 (random: 1/3).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

__all__ = ["card_matcher", "forecast_follower"]

_FORECAST = re.compile(r"The weather forecast \(only you can see it, and it is always right\): (rain|sun)\.")
_CARD = re.compile(r"Your card: (red|green|blue)\b")


def _move(base, agent: str, name: str) -> Any:
    return base.action_names(agent).index(name) if base.action_mode == "discrete" else f"[{name}]"


def forecast_follower(env, agent: str, rng: np.random.Generator) -> Any:
    """team_umbrella-v0: player_0 decides by its forecast (umbrella iff rain); otherwise ``[wait]``."""
    base = env.unwrapped
    if agent == "player_0" and base.legal_actions(agent)[:1] == ["[umbrella]"]:
        obs = base.observe(agent)
        if base.action_mode == "discrete":
            rain = bool(obs["observation"][0])
        else:
            found = _FORECAST.search(obs["text"])
            rain = found is not None and found.group(1) == "rain"
        return _move(base, agent, "umbrella" if rain else "no_umbrella")
    return _move(base, agent, "wait")


def card_matcher(env, agent: str, rng: np.random.Generator) -> Any:
    """free_riding-v0: the decider names its card's colour; an idle seat plays ``[wait]``."""
    base = env.unwrapped
    if agent != "decider":
        return _move(base, agent, "wait")
    obs = base.observe(agent)
    if base.action_mode == "discrete":
        return int(np.argmax(obs["observation"][:3]))
    found = _CARD.search(obs["text"])
    return f"[{found.group(1)}]" if found else "[red]"
