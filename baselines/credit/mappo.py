"""``mappo``: GAE on each agent's turn sequence with a learned centralized critic V(s_t) (MAPPO: Yu et al. 2022,
"The Surprising Effectiveness of PPO in Cooperative Multi-Agent Games", arXiv 2103.01955, Sec. 4 and App. A; GAE:
Schulman et al. 2016, arXiv 1506.02438, Eq. 16 and 18).

For agent ``a`` of an episode, with turns ``j = 0..n-1`` in order, ``r_j = Turn.reward`` (what ``a`` received from
its turn ``j`` up to its next turn; the last turn collects the rest of the episode, see :mod:`baselines.episode`),
``V_j = V(s_j)`` the critic's value of the state before turn ``j`` (read before this batch's critic update) and
``V_n = 0`` (the episode has ended):

    delta_j = r_j + gamma * V_{j+1} - V_j
    A_j     = sum_{l >= 0} (gamma * lambda)^l * delta_{j+l}     (backwards: A_j = delta_j + gamma * lambda * A_{j+1})
    G_j     = A_j + V_j                                           (the TD(lambda) return: the critic's target)

``gamma = 1`` (our episodes are short and undiscounted), ``lambda = 0.95`` (MAPPO's default). With ``lambda = 1``
``A_j`` is the return-to-go minus ``V_j``; with ``lambda = 0`` the one-step TD error. ``normalize=True`` (default,
as MAPPO's and CleanRL's PPO): the batch's advantages are standardized, ``(A - mean) / (std + 1e-6)`` over every turn.

The critic (micro tier, any action mode). ``s_j = Turn.state``: the env's global state ``env.state()`` (the
concatenation of every agent's numeric observation, or a game's union of the private views, as Hanabi's), recorded by
the rollout engine because this method sets ``needs_state = "global"``. ``V`` is an MLP (two tanh layers of
``hidden``) on ``s_j`` followed by a one-hot of the acting agent's seat (MAPPO's agent-specific global state), one
network per (env, team): cooperative teams share one value; opponents in a zero-sum game each have their own.

The critic (LLM tiers), ``critic="value_head"``: a linear value head ``V = w . h + b`` on ``h``, the policy model's
last hidden state at the turn's last prompt token (:class:`HiddenStates`; with per-role LoRA adapters, the role's
adapter active), one head shared by every role (``heads="shared"``) or one per role (``heads="per_role"``). The head
reads the live policy model, which the trainer hands over with ``method.attach(team)`` before the first rollout; the
value loss trains the head only (no gradient into the policy's weights), so the policy update is unchanged. No state
is recorded (``needs_state`` is ``None``): the prompt tokens are in every LLM turn.

``update(episodes)``, called by the trainer after ``advantages`` on the same batch: the targets ``G_j`` from the critic
before the update, then ``epochs`` full-batch Adam steps (learning rate ``lr``) on ``0.5 * mean_j (V(s_j) - G_j)^2``
(MAPPO's value loss without its clipping). It returns ``critic_loss`` (before the first step), ``critic_loss_after``,
and ``critic_explained_variance`` (``1 - Var[G - V] / Var[G]`` before the update). Every process of a data-parallel
run sees the whole gathered batch, so every copy of the critic stays identical without communication.

State. ``state_dict()`` holds each network's input size, parameters and Adam moments as lists of floats (float32
values round-trip exactly through JSON), so a resumed run computes the same next advantages. A network is built the
first time its key is seen, from ``torch.manual_seed(seed + crc32(key))``, so its initial weights do not depend on
the order keys appear in.
"""

from __future__ import annotations

import json
import zlib
from functools import lru_cache
from typing import Any, Sequence

import numpy as np
import torch

from baselines.credit.base import CreditMethod, check_batch, check_positive, describe, fill, finite, register
from baselines.episode import Episode
from baselines.policies.mlp import MLP
from marl_llm_envs import make

__all__ = ["MAPPO", "MLPCritic", "gae"]


def gae(rewards: Sequence[float], values: Sequence[float], gamma: float = 1.0, lam: float = 0.95,
        last_value: float = 0.0) -> tuple[list[float], list[float]]:
    """GAE advantages and TD(lambda) returns of one sequence (Schulman et al. 2016, Eq. 16): ``rewards[j]`` follows
    the state valued ``values[j]``; ``last_value`` is the value after the last reward (0: the episode ended)."""
    if len(rewards) != len(values):
        raise ValueError(f"gae: {len(rewards)} rewards but {len(values)} values")
    adv = [0.0] * len(rewards)
    running = 0.0
    next_value = float(last_value)
    for j in range(len(rewards) - 1, -1, -1):
        delta = float(rewards[j]) + gamma * next_value - float(values[j])
        running = delta + gamma * lam * running
        adv[j] = running
        next_value = float(values[j])
    return adv, [a + float(v) for a, v in zip(adv, values)]


class MLPCritic:
    """Value networks by key, each ``Linear(in, h) - tanh - Linear(h, h) - tanh - Linear(h, 1)`` (``hidden = 0``: a
    linear value head ``Linear(in, 1)``) with its own Adam, built the first time its key is seen (input size from that
    input)."""

    def __init__(self, hidden: int, lr: float, seed: int) -> None:
        self.hidden, self.lr, self.seed = hidden, lr, seed
        self.nets: dict[str, torch.nn.Module] = {}
        self.optimizers: dict[str, torch.optim.Optimizer] = {}
        self.in_sizes: dict[str, int] = {}

    def net(self, key: str, in_size: int) -> torch.nn.Module:
        if key not in self.nets:
            with torch.random.fork_rng(devices=[]):     # the global torch RNG is left as it was
                torch.manual_seed(self.seed + zlib.crc32(key.encode()))
                self.nets[key] = MLP(in_size, 1, self.hidden) if self.hidden else torch.nn.Linear(in_size, 1)
            self.optimizers[key] = torch.optim.Adam(self.nets[key].parameters(), lr=self.lr, foreach=False)
            self.in_sizes[key] = in_size
        have = self.in_sizes[key]
        if have != in_size:
            raise ValueError(f"the critic of {key} reads {have} numbers but got a state of {in_size}: a batch mixes "
                             "states of different sizes under one key")
        return self.nets[key]

    def parameters(self) -> list[torch.nn.Parameter]:
        return [p for key in sorted(self.nets) for p in self.nets[key].parameters()]

    def state_dict(self) -> dict[str, Any]:
        out = {}
        for key in sorted(self.nets):
            params = list(self.nets[key].parameters())
            moments = self.optimizers[key].state_dict()["state"]
            adam = [{"step": float(moments[n]["step"]), "exp_avg": moments[n]["exp_avg"].flatten().tolist(),
                     "exp_avg_sq": moments[n]["exp_avg_sq"].flatten().tolist()} if n in moments else None
                    for n in range(len(params))]
            out[key] = {"in_size": self.in_sizes[key],
                        "params": [p.detach().flatten().tolist() for p in params], "adam": adam}
        return out

    def load_state_dict(self, state: dict[str, Any], method: str) -> None:
        if not isinstance(state, dict):
            raise ValueError(f"{method} state 'critics' is {{key: {{in_size, params, adam}}}}, got {type(state)}")
        self.nets, self.optimizers, self.in_sizes = {}, {}, {}
        for key, entry in state.items():
            if not isinstance(entry, dict) or set(entry) != {"in_size", "params", "adam"}:
                raise ValueError(f"{method} state of critic {key!r} needs exactly in_size, params and adam")
            net = self.net(key, int(entry["in_size"]))
            params = list(net.parameters())
            if len(entry["params"]) != len(params) or len(entry["adam"]) != len(params):
                raise ValueError(f"{method} state of critic {key!r} has {len(entry['params'])} tensors, expected "
                                 f"{len(params)} (hidden={self.hidden})")
            moments = {}
            with torch.no_grad():
                for n, (p, values, adam) in enumerate(zip(params, entry["params"], entry["adam"])):
                    if len(values) != p.numel():
                        raise ValueError(f"{method} state of critic {key!r}: tensor {n} has {len(values)} values, "
                                         f"expected {p.numel()} (hidden={self.hidden})")
                    p.copy_(torch.tensor(values, dtype=torch.float32).reshape(p.shape))
                    if adam is not None:
                        moments[n] = {"step": torch.tensor(float(adam["step"]), dtype=torch.float32),
                                      **{m: torch.tensor(adam[m], dtype=torch.float32).reshape(p.shape)
                                         for m in ("exp_avg", "exp_avg_sq")}}
            groups = self.optimizers[key].state_dict()["param_groups"]
            self.optimizers[key].load_state_dict({"state": moments, "param_groups": groups})


CRITICS = ("mlp", "value_head")
HEADS = ("shared", "per_role")


class HiddenStates:
    """The policy model's last hidden state at a prompt's last token, per role (the LLM tiers' critic input).

    Read from the trainer's team: the model of the learner that plays the role (with per-role LoRA adapters, the
    role's adapter is active). No gradient flows into the policy: the value loss trains the head only, so the policy
    update is the same as with any other credit method. Each prompt is read once per batch: a cache keyed by the
    role and its token ids, emptied by every ``advantages`` call (the policy's weights change between batches) and
    when it holds ``cache`` entries."""

    def __init__(self, team, cache: int = 4096) -> None:
        self.models: dict[str, tuple[Any, str]] = {}
        for learner in team.learners:
            if not hasattr(learner, "tokenizer"):
                continue                      # an MLP learner: nothing to read
            for role in learner.roles:
                self.models[role] = (learner.module, getattr(learner, "adapters", "none"))
        self.cache: dict[tuple[str, tuple[int, ...]], list[float]] = {}
        self.size = cache

    def __call__(self, role: str, prompt_ids: Sequence[int]) -> list[float]:
        if role not in self.models:
            raise ValueError(f"the value head has no LLM for role {role!r} (LLM roles: {sorted(self.models)})")
        key = (role, tuple(int(x) for x in prompt_ids))
        if key not in self.cache:
            if len(self.cache) >= self.size:
                self.cache.clear()
            model, adapters = self.models[role]
            if adapters == "per_role":
                model.set_adapter(role)
                for name, p in model.named_parameters():   # set_adapter freezes the other adapters: keep them
                    if "lora_" in name:                       # trainable, as the learner does
                        p.requires_grad_(True)
            device = next(model.parameters()).device
            with torch.no_grad():
                out = model(input_ids=torch.tensor([key[1]], device=device), output_hidden_states=True)
            self.cache[key] = out.hidden_states[-1][0, -1].float().cpu().tolist()
        return self.cache[key]


@lru_cache(maxsize=64)
def _seats(env_id: str, kwargs_json: str) -> tuple[str, ...]:
    return tuple(make(env_id, **json.loads(kwargs_json)).possible_agents)


def seats_of(episode: Episode) -> tuple[str, ...]:
    """The env's ``possible_agents`` (seat order) for an episode's env and kwargs; ``ValueError`` when they do not
    make an env (an episode file written by other code, or by a version of this package with other envs)."""
    try:
        return _seats(episode.env_id, json.dumps(episode.env_kwargs, sort_keys=True))
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"episode of {episode.env_id!r} with kwargs {episode.env_kwargs}: the env cannot be made "
                         f"to learn its seats ({type(e).__name__}: {e})") from None


@register("mappo")
class MAPPO(CreditMethod):
    needs_state = "global"

    def __init__(self, gamma: float = 1.0, lam: float = 0.95, normalize: bool = True, hidden: int = 64,
                 lr: float = 1e-3, epochs: int = 10, seed: int = 0, critic: str = "mlp",
                 heads: str = "shared") -> None:
        self.gamma = finite(gamma, "gamma")
        self.lam = finite(lam, "lam")
        if not 0.0 <= self.gamma <= 1.0 or not 0.0 <= self.lam <= 1.0:
            raise ValueError(f"gamma and lam must be in [0, 1], got gamma={gamma!r}, lam={lam!r}")
        if not isinstance(normalize, bool):
            raise ValueError(f"normalize must be a bool, got {normalize!r}")
        for name, value in (("hidden", hidden), ("epochs", epochs)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seed must be a non-negative int, got {seed!r}")
        if critic not in CRITICS:
            raise ValueError(f"critic={critic!r} is not one of {list(CRITICS)}")
        if heads not in HEADS:
            raise ValueError(f"heads={heads!r} is not one of {list(HEADS)}")
        self.normalize, self.epochs, self.kind, self.heads = normalize, epochs, critic, heads
        self.critic = MLPCritic(hidden if critic == "mlp" else 0, check_positive("lr", lr), seed)
        self.hidden_states: HiddenStates | None = None
        if critic == "value_head":
            self.needs_state = None          # it reads the prompt tokens through the policy model instead

    def attach(self, team) -> None:
        """The value head reads the policy models of the trainer's team (see :class:`HiddenStates`)."""
        if self.kind == "value_head":
            self.hidden_states = HiddenStates(team)

    # ------------------------------------------------------------------ what the critic reads
    def key(self, episode: Episode, turn) -> str:
        """Which network values this turn: one per (env, team); the value head: one, or one per role."""
        if self.kind == "value_head":
            return "value_head" if self.heads == "shared" else f"value_head/{turn.role}"
        return f"{episode.env_id}/{turn.team}"

    def features(self, episode: Episode, index: int, turn) -> list[float]:
        """The critic's input for a turn: the recorded global state, then the acting agent's seat one-hot (the
        value head: the policy model's last hidden state at the turn's last prompt token)."""
        if self.kind == "value_head":
            return self._hidden(episode, index, turn)
        state = self._state(episode, index, turn)
        seats = seats_of(episode)
        onehot = [0.0] * len(seats)
        if turn.agent in seats:
            onehot[seats.index(turn.agent)] = 1.0
        return state + onehot

    def _hidden(self, episode: Episode, index: int, turn) -> list[float]:
        if self.hidden_states is None:
            raise ValueError(f"{self.name} with critic='value_head' reads the policy model: the trainer attaches it "
                             "(method.attach(team)) before the first rollout")
        if not turn.prompt_ids:
            raise ValueError(f"{self.name}: turn {turn.turn_index} ({turn.agent}) of {describe(episode, index)} has "
                             "no prompt tokens for the value head (an LLM policy's turn has them)")
        return self.hidden_states(turn.role, turn.prompt_ids)

    def _state(self, episode: Episode, index: int, turn) -> list[float]:
        if turn.state is None:
            raise ValueError(f"{self.name}: turn {turn.turn_index} ({turn.agent}) of {describe(episode, index)} has no "
                             f"recorded state; {self.name} reads Turn.state: play the rollout with "
                             f"RolloutEngine(record_state={self.needs_state!r}) (the trainer does; the command line: "
                             f"python -m baselines.rollout --record-state {self.needs_state})")
        return [float(x) for x in turn.state]

    # ------------------------------------------------------------------ values, GAE
    def _values(self, episodes: Sequence[Episode]) -> tuple[dict[tuple[int, int], float], dict[str, tuple]]:
        """V of every turn under the current critic, and per key the cells and their input tensor."""
        batches: dict[str, tuple[list[tuple[int, int]], list[list[float]]]] = {}
        for i, e in enumerate(episodes):
            for k, t in enumerate(e.turns):
                cells, xs = batches.setdefault(self.key(e, t), ([], []))
                cells.append((i, k))
                xs.append(self.features(e, i, t))
        values: dict[tuple[int, int], float] = {}
        tensors = {}
        for key, (cells, xs) in batches.items():
            x = torch.tensor(xs, dtype=torch.float32)
            net = self.critic.net(key, x.shape[1])
            with torch.no_grad():
                v = net(x)[:, 0].tolist()
            values.update(zip(cells, v))
            tensors[key] = (cells, x)
        return values, tensors

    def _gae(self, episodes: Sequence[Episode], values: dict[tuple[int, int], float]):
        adv: dict[tuple[int, int], float] = {}
        ret: dict[tuple[int, int], float] = {}
        for i, e in enumerate(episodes):
            by_agent: dict[str, list[int]] = {}
            for k, t in enumerate(e.turns):
                by_agent.setdefault(t.agent, []).append(k)
            for agent, ks in by_agent.items():
                rewards = [finite(e.turns[k].reward, f"the reward of turn {k} ({agent}) of {describe(e, i)}")
                           for k in ks]
                a, g = gae(rewards, [values[(i, k)] for k in ks], self.gamma, self.lam)
                adv.update(zip([(i, k) for k in ks], a))
                ret.update(zip([(i, k) for k in ks], g))
        return adv, ret

    def advantages(self, episodes: Sequence[Episode]) -> list[list[float]]:
        episodes = check_batch(episodes, self.name)
        if self.hidden_states is not None:
            self.hidden_states.cache.clear()      # a new batch: the policy model has changed since the last one
        values, _ = self._values(episodes)
        adv, _ = self._gae(episodes, values)
        if self.normalize and len(adv) > 1:
            x = np.asarray(list(adv.values()), dtype=np.float64)
            mean, std = float(x.mean()), float(x.std())
            adv = {c: (a - mean) / (std + 1e-6) for c, a in adv.items()}
        return fill(episodes, lambda i, k, t: adv[(i, k)])

    # ------------------------------------------------------------------ the critic's own update
    def parameters(self) -> list[torch.nn.Parameter]:
        return self.critic.parameters()

    def update(self, episodes: Sequence[Episode]) -> dict[str, float]:
        episodes = check_batch(episodes, self.name)
        if not episodes:            # nothing to fit: no step and no metrics, as the base's update (no NaN variance)
            return {}
        values, tensors = self._values(episodes)
        _, returns = self._gae(episodes, values)
        n = len(values)
        before = after = 0.0
        g_all, v_all = [], []
        for key in sorted(tensors):
            cells, x = tensors[key]
            target = torch.tensor([returns[c] for c in cells], dtype=torch.float32)
            g_all.extend(target.tolist())
            v_all.extend(values[c] for c in cells)
            net, opt = self.critic.nets[key], self.critic.optimizers[key]
            for epoch in range(self.epochs):
                opt.zero_grad(set_to_none=True)
                loss = 0.5 * ((net(x)[:, 0] - target) ** 2).mean()
                loss.backward()
                opt.step()
                if epoch == 0:
                    before += float(loss.detach()) * len(cells) / n
            with torch.no_grad():
                after += float(0.5 * ((net(x)[:, 0] - target) ** 2).mean()) * len(cells) / n
        g, v = np.asarray(g_all), np.asarray(v_all)
        explained = float(1.0 - np.var(g - v) / np.var(g)) if np.var(g) > 0 else 0.0
        return {"critic_loss": before, "critic_loss_after": after, "critic_explained_variance": explained}

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        return {"critics": self.critic.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if not isinstance(state, dict) or set(state) != {"critics"}:
            raise ValueError(f"{self.name} state is {{'critics': {{key: {{in_size, params, adam}}}}}}, got keys "
                             f"{sorted(state) if isinstance(state, dict) else type(state).__name__}")
        self.critic.load_state_dict(state["critics"], self.name)
