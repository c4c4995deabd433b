"""Reference policies: the normalization anchors and the evaluation opponents/partners.

Each is a function ``policy(env, agent, rng) -> action`` (the same signature as :mod:`marl_llm_envs.scripted`),
returning an action in the env's action mode. A reference policy uses only what ``agent`` may know (its own
observation and the public history), never hidden state, unless its docstring says it is privileged.

A game registers its reference policies with its id (``register(..., references={...})`` in :mod:`marl_llm_envs`).
The poker games keep theirs beside their rules (``marl_llm_envs.envs.kuhn_poker.reference``,
``marl_llm_envs.envs.leduc_holdem.reference``); the bots that read only an env's public API live here, one module
per family of games (:mod:`.board`, :mod:`.hanabi`, :mod:`.voting`, :mod:`.think_solve`, :mod:`.orchestrator`,
:mod:`.credit_suite`). The CFR solver the poker games' trees use is :mod:`marl_llm_envs.cfr`.
"""

from typing import Any, Callable

from marl_llm_envs import registry


def reference_policies(env_id: str) -> dict[str, Callable[[Any, str, Any], Any]]:
    """The reference policies of an env id, by name (``{}`` when it has none), e.g.
    ``reference_policies("kuhn_poker-v0") == {"kuhn_nash": kuhn_nash}``. An id that is not registered gets those of
    a registered version of the same game."""
    ids = registry.list_envs()
    same_game = [i for i in ids if i.split("-v")[0] == env_id.split("-v")[0]]
    known = env_id if env_id in ids else next(iter(same_game), None)
    return {} if known is None else dict(registry.spec(known).references)
