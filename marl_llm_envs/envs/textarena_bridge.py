"""The TextArena bridge: any registered TextArena game as a marl_llm_envs (PettingZoo AEC) env.

| Import             | ``from marl_llm_envs import make; make("textarena/KuhnPoker-v0")`` (any TextArena id)   |
|--------------------|------------------------------------------------------------------------------------------|
| Family             | ``zero_sum`` for games of 2 or more players, ``cooperative`` for 1-player games           |
| Agents             | ``player_0`` .. ``player_{n-1}`` = TextArena's player ids 0 .. n-1; each its own team     |
| Action space       | text only: ``Text`` (``action_mode="discrete"`` raises ``ValueError``)                     |
| Observation space  | ``Dict(text=Text, observation=Box(-1, 1, (4 + n,)))``                                     |
| Reward range       | nominally -1 .. +1 (TextArena's win / draw / loss rewards; a few games use other values)  |
| Kwargs             | ``ta_id`` (set by the id), ``num_players``, ``invalid_move="penalty"``, ``render_mode``   |

Needs TextArena (``pip install textarena``, or ``pip install -e ".[bench]"``). ``import marl_llm_envs`` does not
import it: the registry resolves ids that start with ``textarena/`` on demand (they are not in ``list_envs()``), and
TextArena is imported only when such an id is asked for. ``spec("textarena/X")`` builds the spec on the fly; an
id TextArena does not know raises ``KeyError`` naming the close matches from TextArena's registry.

Players. ``n`` is the game's default player count: the first of 2, 1, 3, 4, ... 15 players that TextArena's
``reset`` accepts (found once per id by trial resets with a throwaway RNG, then cached). ``num_players=k`` asks for
another count where the game allows it (a count the game rejects raises ``ValueError`` with TextArena's message).
A game TextArena cannot make here (e.g. its module needs a newer Python, or data it cannot download) raises
``RuntimeError`` with TextArena's error. Roles are TextArena's role names where the game sets them (e.g.
``Deceiver`` / ``Guesser`` in TruthAndDeception), else the seat (``player_0``). TextArena has no generic notion of
teams in its API, so each player is its own team; games of two or more players get the family ``zero_sum``
(TextArena rewards them as win / draw / loss) and 1-player games ``cooperative`` (a team of one).

Observation. ``text`` is TextArena's observation for that player, exactly as its registered wrappers build it
(e.g. the full message history with ``LLMObservationWrapper``), made printable ASCII with
:func:`marl_llm_envs.text.printable` and, if ever longer than ``TEXT_MAX_LENGTH``, cut from the front (the newest
part is kept). Every player's text is refreshed after every TextArena call (reset and each step), so ``observe`` is
pure and shows each player what TextArena has told it so far. (The two games that add a state summary inside
``get_observation``, TwoDollar and ScorableGames, therefore show it once per refresh.) ``observation`` (``4 + n``
floats): TextArena's turn counter / its ``max_turns`` (100 when the game has none), clipped to 1; "it is my turn";
"my previous move was invalid and I must resubmit"; "the game is over"; own player id one-hot (``n``).

Actions. Free text, passed to TextArena's ``step`` unchanged (TextArena's own action wrappers, e.g. adding missing
brackets, apply) up to ``TEXT_MAX_LENGTH`` characters; the rest is cut off before TextArena sees it and recorded in
``infos[agent]["ignored_chars"]``, as in every env (TextArena's parsers are its own code; the cap bounds their work). A non-string action, or a text on which TextArena's own code raises (TicTacToe's ``int()`` of a 30,000-digit
cell number), is sent as the empty string instead and recorded as invalid, with the reason. ``legal_actions()`` is
``[]`` (free text; the prompt says what is legal).

Invalid moves. TextArena's policy applies, not ours. TextArena lets a player resubmit after an invalid move (its
``error_allowance``, usually 1 retry, with the reason in its next observation) and then applies the game's penalty
(in two-player games the offender loses: -1 / +1). Only ``invalid_move="penalty"`` (the default) is accepted, with
the default ``invalid_penalty`` and ``max_retries`` (they do not change TextArena's rules); anything else raises
``ValueError``. Every move TextArena reports as invalid (its "attempted an invalid move. Reason: ..." message, or
``game_info[pid]["invalid_move"]`` turning true) is recorded in ``infos[agent]["invalid_action"]`` as
``{"action", "reason", "policy": "textarena", "attempt", "final"}`` (``final``: TextArena ended the player's game for
it) and counted in ``infos[agent]["invalid_count"]``.

Rewards. TextArena's final rewards (``state.rewards``), given as step rewards when the game ends; ``infos[agent]``
then also carries ``"textarena_info"``, TextArena's ``game_info`` for that player (role, reason, turn count, ...).

Determinism. TextArena reseeds Python's global ``random`` in ``reset`` and draws from it during play (some games use
NumPy's global RNG too). The bridge isolates both: each env keeps a private ``random`` state and a private NumPy
legacy-RNG state (seeded from ``reset(seed)``; TextArena's own ``reset`` also gets ``seed``), swaps them into the
global modules only for the duration of each call into TextArena, and restores the caller's states afterwards. So
the caller's RNGs are untouched, the same seed and actions give the same episode, and ``transcript()`` /
:func:`~marl_llm_envs.replay` reproduce observations and rewards exactly. A fresh TextArena env is made at every
``reset`` (TextArena's observation wrappers do not clear their history on reset).

Anchors. ``spec("textarena/<id>").anchors`` holds random-vs-random payoffs measured by ``benchmarks/anchors.py
--textarena`` for KuhnPoker-v0, TicTacToe-v0, ConnectFour-v0 and SimpleNegotiation-v0 (the games whose legal moves
can be read from TextArena's state); every other id carries :data:`UNMEASURED_ANCHORS`, TextArena's reward scale
marked ``"measured": False``. Zero-sum entries are ranked by Bradley-Terry, which needs no anchors.

Clone. ``clone()`` is the base clone plus ``copy.deepcopy`` of the TextArena env (wrappers, state, game objects);
the private RNG states are immutable snapshots and are shared. The deep copy is the cost: about 0.2-0.4 ms for
KuhnPoker / TicTacToe / SimpleNegotiation (vs a few microseconds for our own envs' ``clone()``), more for games with
large state, and it fails for games that hold uncopyable objects (e.g. network clients).

Ablation. Not supported: TextArena games have no documented null action, so ``ablate()`` raises
``NotImplementedError`` (use ``clone()`` and play the counterfactual branch yourself).

Version history. v0: first version.
"""

from __future__ import annotations

import copy
import difflib
import functools
import random
import sys
from typing import Any, ClassVar

import numpy as np

from marl_llm_envs.core import TEXT_MAX_LENGTH, TextEnv, printable, short_repr, short_text

PREFIX = "textarena/"
INSTALL_HINT = 'TextArena games need the textarena package: pip install textarena (or pip install -e ".[bench]")'
PLAYER_COUNT_CANDIDATES = (2, 1) + tuple(range(3, 16))
_INVALID_MARK = "attempted an invalid move. Reason: "
_INVALID_END = " Please resubmit"
UNMEASURED_ANCHORS = {
    "measured": False,
    "reward_scale": {"win": 1.0, "draw": 0.0, "loss": -1.0},
    "note": "TextArena's win / draw / loss rewards (its two-player games; a few games use other values). TextArena "
            "has no generic legal-move generator or reference bots, so benchmarks/anchors.py measures random play "
            "only for the ids whose moves it can read (KuhnPoker-v0, TicTacToe-v0, ConnectFour-v0, "
            "SimpleNegotiation-v0).",
}


def _textarena():
    """Import TextArena lazily (the global RNG states are restored around the import)."""
    module = sys.modules.get("textarena")
    if module is not None:
        return module
    saved, saved_np = random.getstate(), np.random.get_state()
    try:
        import textarena  # lazy: an optional package (the textarena extra)
    except ImportError as exc:
        raise ImportError(INSTALL_HINT) from exc
    finally:
        random.setstate(saved)
        np.random.set_state(saved_np)
    return textarena


def _registry() -> dict[str, Any]:
    return _textarena().envs.registration.ENV_REGISTRY


def _check_id(ta_id: str) -> None:
    registry = _registry()
    if ta_id not in registry:
        close = difflib.get_close_matches(str(ta_id), list(registry), n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(PREFIX + c for c in close)}?" if close else ""
        raise KeyError(f"unknown TextArena env id {ta_id!r}{hint} (TextArena has {len(registry)} ids)")


class _Isolated:
    """Run ``fn`` with the given private ``random`` / NumPy states swapped into the global modules; returns the
    result and the private states after the call. The caller's global states are restored whatever happens."""

    __slots__ = ()

    @staticmethod
    def call(py_state: tuple, np_state: tuple, fn, *args, **kwargs) -> tuple[Any, tuple, tuple]:
        saved, saved_np = random.getstate(), np.random.get_state()
        random.setstate(py_state)
        np.random.set_state(np_state)
        try:
            result = fn(*args, **kwargs)
        finally:
            py_state, np_state = random.getstate(), np.random.get_state()
            random.setstate(saved)
            np.random.set_state(saved_np)
        return result, py_state, np_state


def _seeded_states(seed: int) -> tuple[tuple, tuple]:
    return random.Random(seed).getstate(), np.random.RandomState(seed % 2**32).get_state()


@functools.cache
def _probe(ta_id: str, num_players: int | None) -> tuple[int, tuple[str, ...]]:
    """The player count (``num_players``, or the game's default) and the role names, by trial resets of throwaway
    TextArena envs under a throwaway RNG. Raises ``ValueError`` when the game accepts no such count."""
    ta = _textarena()
    _check_id(ta_id)
    candidates = PLAYER_COUNT_CANDIDATES if num_players is None else (num_players,)
    py_state, np_state = _seeded_states(0)
    try:
        _Isolated.call(py_state, np_state, ta.make, ta_id)
    except Exception as exc:
        raise RuntimeError(f"TextArena could not make {ta_id}: {type(exc).__name__}: {exc}") from exc
    errors = []
    for n in candidates:
        try:
            env, py_state, np_state = _Isolated.call(py_state, np_state, ta.make, ta_id)
            _, py_state, np_state = _Isolated.call(py_state, np_state, env.reset, num_players=n, seed=0)
        except Exception as exc:  # noqa: BLE001 - TextArena games reject a player count in many ways
            errors.append(f"{n}: {type(exc).__name__}: {exc}")
            continue
        mapping = getattr(env.state, "role_mapping", None) or {}
        roles = []
        for pid in range(n):
            name = mapping.get(pid)
            if not isinstance(name, str) or not name.strip() or name in (f"Player {pid}", "Player"):
                roles.append(f"player_{pid}")
            else:
                roles.append(printable(name.strip(), 64))
        return n, tuple(roles)
    if num_players is None:
        raise ValueError(f"could not find a player count that TextArena's {ta_id} accepts: {'; '.join(errors)}")
    raise ValueError(f"TextArena's {ta_id} does not accept num_players={num_players}: {'; '.join(errors)}")


class TextArenaEnv(TextEnv):
    """A TextArena game as a marl_llm_envs env (text mode only); see the module docstring for the manual."""

    version = 0
    supported_action_modes = ("text",)
    reward_range = (-1.0, 1.0)
    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": ["human", "ansi"], "name": "textarena_bridge_v0", "is_parallelizable": False}
    _mutable = ("_texts", "_attempts")

    def __init__(self, *, ta_id: str, num_players: int | None = None, action_mode: str = "text",
                 invalid_move: str = "penalty", invalid_penalty: float = -1.0, max_retries: int = 1,
                 **kwargs: Any) -> None:
        if action_mode != "text":
            raise ValueError(f"action_mode={action_mode!r}: TextArena games are text-only (free-text actions); "
                             "use action_mode='text'")
        if invalid_move != "penalty":
            raise ValueError(f"invalid_move={invalid_move!r}: TextArena games apply TextArena's own invalid-move "
                             "handling (a resubmission, then the game's penalty); only 'penalty' is accepted")
        if invalid_penalty != -1.0 or isinstance(invalid_penalty, bool) or max_retries != 1 \
                or isinstance(max_retries, bool):
            raise ValueError("invalid_penalty and max_retries cannot be set for TextArena games: TextArena's own "
                             "retry and penalty rules apply")
        if num_players is not None and (isinstance(num_players, bool) or not isinstance(num_players, int)
                                        or num_players < 1):
            raise ValueError(f"num_players must be a positive int or None, got {num_players!r}")
        if not isinstance(ta_id, str):
            raise TypeError(f"ta_id must be a TextArena env id (str), got {ta_id!r}")
        n, roles = _probe(ta_id, num_players)
        self.ta_id = ta_id
        self.env_id = PREFIX + ta_id
        self.num_players = n
        self.possible_agents = [f"player_{i}" for i in range(n)]
        self.roles = {a: r for a, r in zip(self.possible_agents, roles)}
        self.teams = {a: a for a in self.possible_agents}
        self.family = "zero_sum" if n >= 2 else "cooperative"
        self.vector_size = 4 + n
        self._pid = {a: i for i, a in enumerate(self.possible_agents)}
        self._ta = None
        self._py_state, self._np_state = _seeded_states(0)
        self._texts: dict[str, str] = {}
        self._attempts: dict[str, int] = {}
        self._raw: dict[int, list] = {}
        super().__init__(ta_id=ta_id, num_players=num_players, action_mode=action_mode, invalid_move=invalid_move,
                         invalid_penalty=invalid_penalty, max_retries=max_retries, **kwargs)

    # ------------------------------------------------------------------ TextArena calls, RNG-isolated
    def _call(self, fn, *args, **kwargs) -> Any:
        result, self._py_state, self._np_state = _Isolated.call(self._py_state, self._np_state, fn, *args, **kwargs)
        return result

    def _refresh(self) -> None:
        """Pull every player's observation from TextArena (its wrappers format it) into ``_texts``."""
        state = self._ta.state
        current = state.current_player_id
        try:
            for agent, pid in self._pid.items():
                state.current_player_id = pid
                _, obs = self._call(self._ta.get_observation)
                if not isinstance(obs, str):  # an unwrapped ("-raw") id returns only the new messages
                    self._raw.setdefault(pid, []).extend(obs or [])
                    obs = self._format_raw(pid)
                text = printable(obs)
                if len(text) > TEXT_MAX_LENGTH:
                    text = text[-TEXT_MAX_LENGTH:]
                self._texts[agent] = text
        finally:
            state.current_player_id = current

    def _format_raw(self, pid: int) -> str:
        mapping = getattr(self._ta.state, "role_mapping", {}) or {}
        lines = []
        for message in self._raw.get(pid, []):
            sender, text = message[0], message[1]
            name = "GAME" if sender == -1 else mapping.get(sender, f"Player {sender}")
            lines.append(f"[{name}] {text}")
        return "\n".join(lines)

    def _sync_turn(self) -> None:
        pid = self._ta.state.current_player_id
        if isinstance(pid, (int, np.integer)) and 0 <= pid < self.num_players:
            self.agent_selection = self.possible_agents[int(pid)]

    # ------------------------------------------------------------------ TextEnv hooks
    def action_names(self, agent: str) -> list[str]:
        return []

    def _parse_free(self, agent: str, text: str) -> tuple[Any, str | None]:
        return text, None

    def _legal_ids(self, agent: str) -> list[int]:
        return []

    def _start(self) -> None:
        ta = _textarena()
        self._py_state, self._np_state = _seeded_states(self.episode_seed)
        self._ta = self._call(ta.make, self.ta_id)
        self._call(self._ta.reset, num_players=self.num_players, seed=self.episode_seed)
        self._texts = {}
        self._attempts = {a: 0 for a in self.possible_agents}
        self._raw = {}
        self.agent_selection = self.possible_agents[0]
        self._sync_turn()
        self._refresh()
        if getattr(self._ta.state, "done", False):  # a game decided at reset (should not happen)
            self._end()

    def _text(self, agent: str) -> str:
        return self._texts.get(agent, "")

    def _vector(self, agent: str, out: np.ndarray) -> None:
        if self._ta is None:
            return
        state = self._ta.state
        over = bool(getattr(state, "done", False)) or self.done
        turn = getattr(state, "turn", 0) or 0
        scale = getattr(state, "max_turns", None) or 100
        out[0] = min(max(float(turn) / float(scale), 0.0), 1.0)
        out[1] = float(not over and agent == self.agent_selection)
        out[2] = float(not over and self._attempts.get(agent, 0) > 0)
        out[3] = float(over)
        out[4 + self._pid[agent]] = 1.0

    def _null_move(self, agent: str) -> Any:
        raise NotImplementedError("TextArena games have no documented null action")

    def _penalize(self, agent: str) -> None:  # never called: TextArena applies its own penalty
        raise NotImplementedError("TextArena applies its own invalid-move penalty")

    def _apply(self, agent: str, move: Any) -> None:
        raise NotImplementedError("the TextArena bridge steps TextArena directly (see step)")

    # ------------------------------------------------------------------ step
    def step(self, action: Any) -> None:
        agent = self._begin_step(action)
        if agent is None:
            return
        action = self._read_text(agent, action)
        pid = self._pid[agent]
        state = self._ta.state
        n_logs = len(getattr(state, "logs", ()))
        was_final = bool(state.game_info.get(pid, {}).get("invalid_move")) if hasattr(state, "game_info") else False
        text = action if isinstance(action, str) else ""
        prefix = None if isinstance(action, str) else (f"expected a text action (str), got {short_repr(action, 40)}; "
                                                         "sent to TextArena as ''")
        try:
            done, _step_info = self._call(self._ta.step, action=text)
        except Exception as exc:  # TextArena's own parsing failed on this text (e.g. int() of 30,000 digits)
            prefix = (f"TextArena raised {type(exc).__name__} on this action ({printable(str(exc), 120)}); "
                      "sent to TextArena as ''")
            done, _step_info = self._call(self._ta.step, action="")
        state = self._ta.state

        reason, final = None, False
        for entry in (getattr(state, "logs", None) or [])[n_logs:]:
            if entry[0] == -1 and isinstance(entry[1], str) and _INVALID_MARK in entry[1]:
                reason = entry[1].split(_INVALID_MARK, 1)[1].split(_INVALID_END, 1)[0].strip()
        info_now = getattr(state, "game_info", {}).get(pid, {}) or {}
        if info_now.get("invalid_move") and not was_final:
            final = True
            reason = reason or str(info_now.get("reason") or "invalid move")
        if prefix is not None:
            reason = prefix if reason is None else f"{prefix}: {reason}"
        info = self.infos[agent]
        if reason is None:
            self._attempts[agent] = 0
            if info["invalid_action"] is not None:
                self.infos[agent] = {**info, "invalid_action": None}
        else:
            self._attempts[agent] += 1
            record = {"action": short_text(action), "reason": printable(reason, 500), "policy": "textarena",
                      "attempt": self._attempts[agent], "final": final}
            if "ignored_chars" in info:
                record["ignored_chars"] = info["ignored_chars"]
            self.infos[agent] = {**info, "invalid_action": record, "invalid_count": info["invalid_count"] + 1}

        self._refresh()
        if done or getattr(state, "done", False):
            self._end()
        else:
            self._sync_turn()
        self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    def _end(self) -> None:
        state = self._ta.state
        ta_rewards = getattr(state, "rewards", None) or {}
        rewards = {a: float(ta_rewards.get(pid, 0.0)) for a, pid in self._pid.items()}
        self._finish(rewards)
        game_info = getattr(state, "game_info", {}) or {}
        for agent in self.agents:
            self.infos[agent] = {**self.infos[agent],
                                 "textarena_info": copy.deepcopy(game_info.get(self._pid[agent], {}))}

    def textarena_rewards(self) -> dict[int, float] | None:
        """TextArena's own final rewards (player id -> reward), or ``None`` before the game ends."""
        if self._ta is None or not getattr(self._ta.state, "done", False):
            return None
        rewards = getattr(self._ta.state, "rewards", None)
        return None if rewards is None else dict(rewards)

    # ------------------------------------------------------------------ counterfactuals
    def clone(self) -> TextArenaEnv:
        """An independent copy: the base clone plus ``copy.deepcopy`` of the TextArena env and the private RNG
        states (immutable snapshots, shared). Costs a deep copy of TextArena's objects (see the manual)."""
        new = super().clone()
        new._ta = copy.deepcopy(self._ta)
        new._raw = {pid: list(messages) for pid, messages in self._raw.items()}
        return new

    def ablate(self, agent: str) -> TextArenaEnv:
        raise NotImplementedError(f"{self.env_id}: TextArena games have no documented null action, so ablate() is "
                                  "not supported; use clone() and play the counterfactual branch yourself")
