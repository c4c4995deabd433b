"""The policy protocol: a batch of agent turns in, one :class:`Generation` per turn out.

Every backend (scripted bots, transformers on CPU/GPU in free-generation or choice mode, vLLM) implements
:meth:`Policy.generate`. The rollout engine gathers the pending turns of many envs into one call, so a backend sees
large batches. Token ids are returned as generated and are never re-tokenized from decoded text: a policy gradient
must score exactly the tokens that were sampled.

What a policy reads. :attr:`Policy.observes` declares which parts of a turn the policy reads, so the rollout engine
computes nothing else for it: ``"text"`` (the prompt, :attr:`Request.text`), ``"legal_actions"`` (the text moves,
:attr:`Request.legal_actions`) and ``"vector"`` (the numeric observation and the action mask,
:attr:`Request.observation` and :attr:`Request.action_mask`, from ``env.observe(agent, text=False)``). The default is
``{"text", "legal_actions"}`` (an LLM); the MLP declares ``{"vector"}``, so its prompts are never rendered. A field
that was not asked for is left empty (``""``, ``()``, ``None``), unless the engine needed it anyway (it renders the
text and legal moves of every turn of an episode with counterfactual branches, for the replay digest).

``"env"`` (:attr:`Request.env`, the live env) is for scripted bots only: :class:`~baselines.policies.scripted.
ScriptedPolicy` wraps a function of the env (:mod:`marl_llm_envs.scripted`, :mod:`marl_llm_envs.reference`; the
reference bots read what their docstrings name, the oracle thinker the hidden answer). No learned policy declares
it, so a model never sees more than an agent observes; :func:`request_for` builds a request the way the engine does.
"""

from __future__ import annotations

import abc
import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np

from marl_llm_envs import make
from marl_llm_envs.text import parse_bracketed


_set_dict = object.__setattr__
"""How :class:`Request`, :class:`VectorInputs` and :class:`Choice` set their fields at construction: their instance
dict, written at once (``_set_dict(self, "__dict__", {...})``). They are built once per decision (hundreds of
thousands in a micro-tier run), and the ``__init__`` that ``dataclass(frozen=True)`` writes sets each field through
``object.__setattr__``, several times the cost; they stay frozen (assignment raises) and compare, hash and print as
before."""


@dataclass(frozen=True, init=False)
class Request:
    """One agent's turn: what it sees and what it may do."""

    env_id: str
    agent: str
    role: str
    text: str                          # the observation text (the env's prompt for this agent)
    legal_actions: tuple[str, ...] = ()  # text moves such as "[bet]"; () = free text (see the prompt for the format)
    env: Any = field(default=None, compare=False, repr=False)  # "env": the live env (read-only), given only to a
    #                                    policy that declares it reads the env (scripted bots: functions of the env)
    key: tuple[int, ...] = ()          # identifies the decision (episode, sample, branch, step) independently of how
    #                                    requests are batched, for policies that seed their sampling per request
    observation: Any = field(default=None, compare=False, repr=False)  # "vector": the float32 observation vector
    action_mask: Any = field(default=None, compare=False, repr=False)  # "vector": the int8 mask (discrete mode)

    def __init__(self, env_id: str, agent: str, role: str, text: str, legal_actions: tuple[str, ...] = (),
                 env: Any = None, key: tuple[int, ...] = (), observation: Any = None, action_mask: Any = None) -> None:
        _set_dict(self, "__dict__", {"env_id": env_id, "agent": agent, "role": role, "text": text,
                                     "legal_actions": legal_actions, "env": env, "key": key,
                                     "observation": observation, "action_mask": action_mask})


@dataclass(frozen=True, init=False)
class VectorInputs:
    """What a vector policy (the MLP) read for one decision: the observation vector, the action mask, and the index
    of the agent's role among the policy's roles. A trainer scores the decision again on exactly these."""

    observation: list[float]
    mask: list[int]
    role_index: int

    def __init__(self, observation: list[float], mask: list[int], role_index: int) -> None:
        _set_dict(self, "__dict__", {"observation": observation, "mask": mask, "role_index": role_index})

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> VectorInputs:
        return cls([float(x) for x in d["observation"]], [int(x) for x in d["mask"]], int(d["role_index"]))

    @classmethod
    def from_legacy_extra(cls, extra: dict[str, Any]) -> VectorInputs | None:
        """The inputs a turn written before this type recorded in its ``extra`` (``obs``, ``mask``, ``role_index``),
        or None when it has none."""
        if not all(k in extra for k in ("obs", "mask", "role_index")):
            return None
        return cls([float(x) for x in extra["obs"]], [int(x) for x in extra["mask"]], int(extra["role_index"]))


@dataclass(frozen=True, init=False)
class Choice:
    """A decision among a request's legal moves: which one was taken, under which distribution. It is what a trainer
    reads back to score the decision again (the rollout keeps it on the turn, :class:`baselines.episode.Turn`).

    ``scoring`` says how that distribution was made: ``"label"``, ``"mean"`` or ``"sum"`` (the LLM choice modes of
    :class:`~baselines.policies.hf.TransformersPolicy` and VLLMPolicy), ``"mlp"`` (:class:`~baselines.policies.mlp.
    MLPPolicy`: ``index`` is the action id of the env's discrete action space) or ``"scripted"`` (a bot; never
    trained). ``logprob`` is the log-probability of the sampled move under exactly the distribution it was drawn from
    (a policy gradient's behaviour log-probability); ``probs`` that distribution over ``Request.legal_actions`` in
    order (empty where the backend does not report it: the MLP); ``logliks`` and ``scores`` each move's summed scored
    log-probabilities and its score (LLM choice modes only); ``inputs`` the MLP's :class:`VectorInputs` (an LLM's
    decision is scored again on the turn's prompt ids and legal moves instead)."""

    index: int
    logprob: float
    scoring: str
    probs: list[float] = field(default_factory=list)
    logliks: list[float] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)
    inputs: VectorInputs | None = None   # scoring "mlp": the numbers the MLP read (what it is scored on again)

    def __init__(self, index: int, logprob: float, scoring: str, probs: list[float] | None = None,
                 logliks: list[float] | None = None, scores: list[float] | None = None,
                 inputs: VectorInputs | None = None) -> None:
        _set_dict(self, "__dict__", {"index": index, "logprob": logprob, "scoring": scoring,
                                     "probs": [] if probs is None else probs,
                                     "logliks": [] if logliks is None else logliks,
                                     "scores": [] if scores is None else scores, "inputs": inputs})

    @property
    def kind(self) -> str:
        """What trains this decision: ``"mlp"`` for an MLP's action, else ``"choice"`` (a move of an LLM's menu)."""
        return "mlp" if self.scoring == "mlp" else "choice"

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Choice:
        inputs = d.get("inputs")
        return cls(int(d["index"]), float(d["logprob"]), str(d["scoring"]), list(d.get("probs") or []),
                   list(d.get("logliks") or []), list(d.get("scores") or []),
                   VectorInputs.from_dict(inputs) if inputs is not None else None)

    @classmethod
    def from_legacy_extra(cls, extra: dict[str, Any], action: Any = None, logprobs: Sequence[float] = (),
                          legal: Sequence[str] = ()) -> Choice | None:
        """The choice a turn written before :class:`Choice` existed recorded in its ``extra`` (``mode``,
        ``choice_index``, ``choice_logprob``, ``choice_probs``, ``choice_scoring``; ``"sum"`` when that is missing,
        the only scoring there was), or None for a free-text turn."""
        mode = extra.get("mode")
        if mode == "choice" and "choice_index" in extra:
            return cls(int(extra["choice_index"]), float(extra["choice_logprob"]), str(extra.get("choice_scoring",
                                                                                                "sum")),
                       list(extra.get("choice_probs") or []), list(extra.get("choice_logliks") or []),
                       list(extra.get("choice_scores") or []))
        if mode == "mlp" and logprobs:
            return cls(int(action), float(logprobs[0]), "mlp", inputs=VectorInputs.from_legacy_extra(extra))
        if mode is None and extra.get("choice_probs") and action in legal:
            index = list(legal).index(action)
            probs = list(extra["choice_probs"])
            return cls(index, float(math.log(probs[index])) if probs[index] > 0 else -math.inf, "scripted", probs)
        return None


@dataclass
class Generation:
    """What a policy produced for one :class:`Request`."""

    action: Any                        # what to pass to env.step (text for LLM backends)
    text: str = ""                     # the decoded completion (for logs; never re-tokenized)
    prompt_ids: list[int] = field(default_factory=list)
    completion_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)  # one per completion token, under the sampling distribution
    extra: dict[str, Any] = field(default_factory=dict)  # backend-specific notes (finish_reason, prompt_truncated)
    choice: Choice | None = None       # a move chosen from the legal ones (choice mode, the MLP, bots); None = free text

    @property
    def num_tokens(self) -> int:
        return len(self.completion_ids)


SETTINGS = ("mode", "temperature", "top_p", "max_new_tokens")
OBSERVES = ("text", "legal_actions", "vector", "env")


def choice_probs(policy: Any, choice: Choice | None) -> np.ndarray | None:
    """The distribution ``choice`` was drawn from, over its request's legal moves in order (float64), or ``None``
    where it records none (free text, a scripted bot that reports no probabilities): an MLP's scored again by
    ``policy`` (:meth:`MLPPolicy.legal_probs <baselines.policies.mlp.MLPPolicy.legal_probs>` on the recorded
    :class:`VectorInputs`, over the legal ids of its mask), an LLM choice mode's or a bot's ``probs`` as recorded.
    Not renormalized: callers check or normalize the sum."""
    if choice is None:
        return None
    if choice.scoring == "mlp":
        if choice.inputs is None or not hasattr(policy, "legal_probs"):
            return None
        return policy.legal_probs(choice.inputs)
    return np.asarray(choice.probs, dtype=np.float64) if choice.probs else None


def request_for(env, agent: str, observes: Iterable[str] = ("text", "legal_actions"),
                key: tuple[int, ...] = ()) -> Request:
    """``agent``'s request now, holding what a policy that reads ``observes`` (:attr:`Policy.observes`) needs, as
    the rollout engine builds it: for one-off decisions outside a rollout (an evaluator, a validator, a test)."""
    observes = frozenset(observes)
    base = env.unwrapped
    text, vector, mask = observation_fields(base, agent, observes)
    legal = tuple(base.legal_actions(agent)) if "legal_actions" in observes else ()
    return Request(base.env_id, agent, base.roles[agent], text, legal, env if "env" in observes else None, key=key,
                   observation=vector, action_mask=mask)


def first_turn_requests(env_id: str, n: int, **env_kwargs) -> list[Request]:
    """The first mover's :func:`request_for` in ``n`` episodes of ``env_id`` made with ``env_kwargs``, reset with
    seeds ``0..n-1``: a fixed batch of real prompts on which to compare or time policy backends."""
    env, out = make(env_id, **env_kwargs), []
    for seed in range(n):
        env.reset(seed=seed)
        out.append(request_for(env, env.agent_selection))
    return out


def env_action(env, agent: str, action: Any, legal: Sequence[str] = ()) -> Any:
    """In discrete mode, a text move ("[bet]", "I bet [bet]") becomes its action index; anything else passes on.

    The move is looked up first among ``legal`` (the env's ``legal_actions``, which lists the legal indices in order
    and may name them by what they do now, e.g. Leduc's ``[check]`` for call), then among ``action_names``."""
    if getattr(env, "action_mode", "text") != "discrete" or not isinstance(action, str):
        return action
    if legal:
        ids = [int(i) for i in np.flatnonzero(env.action_mask(agent))]
        if len(ids) == len(legal):
            names = {m.strip()[1:-1].lower() if m.strip().startswith("[") else m.strip().lower(): i
                     for m, i in zip(legal, ids)}
            index, reason = parse_bracketed(action, names)
            if reason is None:
                return index
    names = {n.lower(): i for i, n in enumerate(env.action_names(agent))}
    index, reason = parse_bracketed(action, names)
    return action if reason is not None else index


def observation_fields(env, agent: str, observes: frozenset[str]) -> tuple[str, Any, Any]:
    """``(text, vector, mask)`` of ``agent``'s observation now, each only when ``observes`` asks for it (``""`` and
    ``None`` otherwise): the prompt is rendered only for ``"text"``."""
    if "text" in observes:
        obs = env.observe(agent)
        if "vector" in observes:
            return obs["text"], obs["observation"], obs.get("action_mask")
        return obs["text"], None, None
    if "vector" in observes:
        obs = env.observe(agent, text=False)
        return "", obs["observation"], obs.get("action_mask")
    return "", None, None


class Policy(abc.ABC):
    """A policy backend. ``generate`` must return one :class:`Generation` per request, in order.

    ``version`` counts weight updates (a trainer increments it after each update), so an episode records which
    weights sampled it."""

    name: str = "policy"
    version: int = 0
    observes: frozenset[str] = frozenset({"text", "legal_actions"})   # see the module docstring (OBSERVES)

    @abc.abstractmethod
    def generate(self, requests: Sequence[Request], seed: int | None = None) -> list[Generation]:
        """Act on a batch of turns. ``seed`` makes sampling reproducible (same seed, same outputs on CPU)."""

    def settings(self) -> dict[str, Any]:
        """What a trainer needs to interpret the recorded log-probabilities: name, version and the sampling settings
        the backend has (``mode``, ``temperature``, ``top_p``, ``max_new_tokens``). JSON-safe."""
        out: dict[str, Any] = {"name": str(self.name), "version": int(self.version), "backend": type(self).__name__}
        for key in SETTINGS:
            value = getattr(self, key, None)
            if isinstance(value, (str, int, float, bool)):
                out[key] = value
        return out

    def close(self) -> None:
        """Release resources (GPU memory, engines)."""


def set_decoding(policy: Any, *, mode: str, modes: Sequence[str], temperature: float, top_p: float,
                 max_new_tokens: int, stop: Sequence[str] | str | None, use_chat_template: bool,
                 system_prompt: str | None) -> None:
    """Check and set an LLM policy's decoding settings (the same for every backend): ``mode``, ``temperature``,
    ``top_p``, ``max_new_tokens``, ``stop`` (a list), ``use_chat_template``, ``system_prompt``. A bad value is a
    ``ValueError`` naming it."""
    if mode not in modes:
        raise ValueError(f"mode={mode!r} is not one of {list(modes)}")
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    if not 0.0 < top_p <= 1.0:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
    policy.mode = mode
    policy.temperature = float(temperature)
    policy.top_p = float(top_p)
    policy.max_new_tokens = int(max_new_tokens)
    policy.stop = [stop] if isinstance(stop, str) else [s for s in (stop or []) if s]
    policy.use_chat_template = use_chat_template
    policy.system_prompt = system_prompt
