"""Reference policies: the normalization anchors and the evaluation opponents/partners.

Each is a function ``policy(env, agent, rng) -> action`` (the same signature as :mod:`marl_llm_envs.scripted`),
returning an action in the env's action mode. A reference policy uses only what ``agent`` may know (its own
observation and the public history), never hidden state, unless its docstring says it is privileged.
"""
