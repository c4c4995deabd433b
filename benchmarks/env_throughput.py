"""Throughput of marl_llm_envs against TextArena and PettingZoo, and the cost of ``clone()``.

What it measures (all in one run, so every number comes from the same machine at the same time; the machines are
noisy, so read the *ratios*, not the absolute numbers):

1. **Steps per second with random legal play**, the text observation built at every step: our ``kuhn_poker-v0``
   (default ``rounds=1``; plus a text-mode row with ``rounds=3``, the match length of TextArena's ``KuhnPoker-v0``),
   ``tic_tac_toe-v0``, ``hanabi-v1`` and ``mini_hanabi-v1`` (2 players), ``leduc_holdem-v0``, ``connect_four-v0`` and
   ``simple_negotiation-v0``, each in both action modes. The loop is the usual AEC loop
   (``for agent in env.agent_iter(): env.last(); env.step(a)``); ``env.last()`` builds the full observation
   (``text``, vector and, in discrete mode, the mask) every step. Discrete mode picks a random index from the action
   mask; text mode picks a random string from ``env.legal_actions(agent)`` (e.g. ``"[bet]"``), so the env's text
   parser runs every step (on a turn where ``legal_actions`` is empty, a free-text turn,
   ``marl_llm_envs.scripted.random_legal`` picks the move).
2. **TextArena** ``KuhnPoker-v0`` (its registered default: 3 hands, ``LLMObservationWrapper`` +
   ``ActionFormattingWrapper``), ``TicTacToe-v0``, ``ConnectFour-v0`` and ``SimpleNegotiation-v0`` (TextArena has no
   Leduc hold'em and no Hanabi): ``get_observation()`` (builds the prompt) then ``step(action=...)`` with a random
   *valid* move read from the game state (the Kuhn betting tree's keys; the empty cells; the non-full columns; for
   the negotiation ``[Deny]``, ``[Accept]`` when an offer to the player stands and it holds what is asked, and one
   random offer of resources it holds), so no step is wasted on an invalid move. One TextArena step = one
   ``env.step``. The env is reused across episodes; its observation wrapper's history (which TextArena does not
   clear on ``reset``) is cleared before each episode, so its prompts do not grow across episodes (this favours
   TextArena). TextArena's ``SimpleNegotiation-v0`` is a richer variant (5 resources, multi-resource offers) than
   ours (2 resources, one-for-one offers); its ratio is an anchor, not a like-for-like comparison.
3. **PettingZoo** ``classic.tictactoe_v3``, ``connect_four_v3``, ``leduc_holdem_v4`` (needs ``rlcard``) and
   ``hanabi_v5`` (PettingZoo 1.27 runs it on OpenSpiel through Shimmy: needs ``shimmy`` and ``open_spiel``; once
   with its default 5x5 config, the one of our ``hanabi-v1``, and once with ``mini_hanabi-v1``'s config), each with
   its default wrappers: the same AEC loop, random legal index from the action mask, ``env.last()`` every step.
4. **Clone cost** (microseconds per copy), mid-game: our ``env.clone()`` for every env above (Hanabi after 10
   moves), against ``copy.deepcopy`` of the TextArena env at a similar point, and ``copy.deepcopy`` of our own env as
   a second anchor (``copy.deepcopy`` of the PettingZoo envs is shown for reference).

Counting: a *step* is one move of a live agent. The AEC envs also take the ``step(None)`` calls of terminated agents
at the end of each episode; those cost time but are not counted (conservative for ours and PettingZoo's).
Episode resets are inside the timed loop for every implementation. Each row runs a warm-up and then for a fixed
wall-clock budget (``time.perf_counter``): the budget for the first games' rows (Kuhn, tic-tac-toe), half of it for
the later games' rows (their anchors included), so the default run stays under 2 minutes. Random choices come from
``random.Random`` instances seeded per row; the global ``random`` / NumPy state is never reseeded by this script
(TextArena reseeds the global ``random`` in its ``reset``; the global state is saved before and restored after the
TextArena rows).

Goals: ours >= 2x PettingZoo steps/s (same game), ``clone()`` <= 20 us for Kuhn and tic-tac-toe and <= 200 us for
Hanabi (``hanabi-v1`` and ``mini_hanabi-v1``). The other envs' ``clone()`` costs are listed with no goal. The
TextArena rows and ratios are shown side by side for information, with no goal: an env step costs tens of
microseconds in both, an LLM decision milliseconds or more, so neither is the bottleneck of LLM training. (An earlier
">= 50x TextArena" goal was dropped: its anchor had been measured on TextArena's observation history, which TextArena
never clears on ``reset``, so its prompts grew across episodes; see benchmarks/RESULTS.md.)

Run (from the repository root)::

    python benchmarks/env_throughput.py                # 2 s per row (1 s for the later games), ~100 s in all
    python benchmarks/env_throughput.py --quick        # 0.3 s per row (0.15 s)
    python benchmarks/env_throughput.py --seconds 5 --json results.json
    python benchmarks/env_throughput.py --profile      # also cProfile our envs' step/observe loop

Every anchor row needs the ``bench`` extra: ``pip install -e ".[bench]"`` (TextArena, rlcard for PettingZoo's Leduc,
shimmy and open_spiel for its Hanabi). If one is missing, its rows say "not installed (what is missing; pip install
-e ".[bench]")" and the rest still runs.
"""

from __future__ import annotations

import argparse
import copy
import cProfile
import datetime
import importlib
import importlib.util
import json
import os
import platform
import pstats
import random
import sys
import time
import types
from collections.abc import Callable
from importlib import metadata
from typing import Any

import numpy as np

try:
    import marl_llm_envs  # noqa: F401
except ImportError:  # run from a checkout without installing the package
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from marl_llm_envs import make
from marl_llm_envs.envs.hanabi import PRESETS as HANABI_PRESETS
from marl_llm_envs.scripted import random_legal

GOAL_VS_PETTINGZOO = 2.0
GOAL_CLONE_US = 20.0
GOAL_CLONE_US_HANABI = 200.0
EXTRA_BUDGET_FRACTION = 0.5  # the later games' rows (and their anchors) run for this fraction of the budget
BENCH_EXTRA = 'pip install -e ".[bench]"'
NOT_INSTALLED = f"not installed ({BENCH_EXTRA})"

# our env id -> (moves before the mid-game clone, clone goal in us or None)
CLONE_POINTS: dict[str, tuple[int, float | None]] = {
    "kuhn_poker-v0": (1, GOAL_CLONE_US),
    "tic_tac_toe-v0": (3, GOAL_CLONE_US),
    "hanabi-v1": (10, GOAL_CLONE_US_HANABI),
    "mini_hanabi-v1": (3, GOAL_CLONE_US_HANABI),
    "leduc_holdem-v0": (2, None),
    "connect_four-v0": (8, None),
    "simple_negotiation-v0": (5, None),
}
# TextArena counterparts: TextArena id -> (our env id, moves before the mid-game deepcopy)
TEXTARENA_GAMES: dict[str, tuple[str, int]] = {
    "KuhnPoker-v0": ("kuhn_poker-v0", 1),
    "TicTacToe-v0": ("tic_tac_toe-v0", 3),
    "ConnectFour-v0": ("connect_four-v0", 8),
    "SimpleNegotiation-v0": ("simple_negotiation-v0", 5),
}
# PettingZoo counterparts: row label -> (classic module, env kwargs, our env id, moves before the mid-game deepcopy)
MINI_HANABI_CONFIG = dict(HANABI_PRESETS["mini_hanabi-v1"])  # colors=2, ranks=2, hand_size=3, 3 info, 3 lives
PETTINGZOO_GAMES: dict[str, tuple[str, dict[str, Any], str, int]] = {
    "tictactoe_v3": ("tictactoe_v3", {}, "tic_tac_toe-v0", 3),
    "connect_four_v3": ("connect_four_v3", {}, "connect_four-v0", 8),
    "leduc_holdem_v4": ("leduc_holdem_v4", {}, "leduc_holdem-v0", 2),
    "hanabi_v5": ("hanabi_v5", {}, "hanabi-v1", 10),
    "hanabi_v5 (mini_hanabi config)": ("hanabi_v5", MINI_HANABI_CONFIG, "mini_hanabi-v1", 3),
}
# what each PettingZoo game needs beyond pettingzoo itself (named in the "not installed" rows)
PETTINGZOO_NEEDS = {"leduc_holdem_v4": "rlcard", "hanabi_v5": "shimmy and open_spiel"}


# ---------------------------------------------------------------------------------------------- timing helpers
def time_episodes(play: Callable[[int], int], budget: float) -> dict[str, float]:
    """Run ``play(episode_index) -> moves`` for a warm-up, then for ``budget`` seconds; return steps/s etc."""
    warm_until = time.perf_counter() + min(0.5, max(0.05, 0.2 * budget))
    i = 0
    while True:
        play(i)
        i += 1
        if time.perf_counter() >= warm_until:
            break
    steps = episodes = 0
    t0 = time.perf_counter()
    end = t0 + budget
    while True:
        steps += play(i)
        i += 1
        episodes += 1
        now = time.perf_counter()
        if now >= end:
            break
    elapsed = now - t0
    return {
        "steps_per_s": steps / elapsed,
        "us_per_step": 1e6 * elapsed / steps,
        "episodes_per_s": episodes / elapsed,
        "steps": steps,
        "episodes": episodes,
        "seconds": elapsed,
    }


def time_calls(fn: Callable[[], Any], budget: float, batch: int = 64) -> dict[str, float]:
    """Microseconds per call of ``fn``: warm-up, then batches of ``batch`` calls for ``budget`` seconds."""
    warm_until = time.perf_counter() + min(0.5, max(0.05, 0.2 * budget))
    while time.perf_counter() < warm_until:
        for _ in range(batch):
            fn()
    calls = 0
    t0 = time.perf_counter()
    end = t0 + budget
    while True:
        for _ in range(batch):
            fn()
        calls += batch
        now = time.perf_counter()
        if now >= end:
            break
    elapsed = now - t0
    return {"us_per_call": 1e6 * elapsed / calls, "calls": calls, "seconds": elapsed}


# ---------------------------------------------------------------------------------------------- our envs
def ours_player(env_id: str, action_mode: str, seed: int, **kwargs: Any) -> Callable[[int], int]:
    env = make(env_id, action_mode=action_mode, **kwargs)
    rng = random.Random(seed)
    np_rng = np.random.default_rng(seed)  # only for free-text turns (scripted.random_legal takes a Generator)
    choice = rng.choice
    discrete = action_mode == "discrete"

    def play(i: int) -> int:
        env.reset(seed=seed + i)
        moves = 0
        for agent in env.agent_iter():
            obs, _reward, term, trunc, _info = env.last()
            if term or trunc:
                action = None
            elif discrete:
                action = choice(np.flatnonzero(obs["action_mask"]).tolist())
                moves += 1
            else:
                legal = env.legal_actions(agent)
                action = choice(legal) if legal else random_legal(env, agent, np_rng)
                moves += 1
            env.step(action)
        return moves

    return play


def ours_midgame(env_id: str, moves: int) -> Any:
    """Our env in discrete mode after ``moves`` random legal moves (the first seed whose game is still live)."""
    for seed in range(1000):
        env = make(env_id, action_mode="discrete")
        env.reset(seed=seed)
        rng = random.Random(seed)
        for _ in range(moves):
            obs = env.observe(env.agent_selection)
            env.step(rng.choice(np.flatnonzero(obs["action_mask"]).tolist()))
            if env.done:
                break
        if not env.done:
            return env
    raise RuntimeError(f"{env_id}: no seed in 0..999 gives a game still live after {moves} random moves")


# ---------------------------------------------------------------------------------------------- TextArena
def textarena_version() -> str | None:
    """TextArena's version, or ``None`` when it cannot be imported."""
    try:
        import textarena  # noqa: F401
    except ImportError:
        return None
    try:
        return metadata.version("textarena")
    except metadata.PackageNotFoundError:
        return getattr(sys.modules["textarena"], "__version__", "unknown")


def _ta_clear_history(env: Any) -> None:
    """TextArena's observation wrappers keep every message in ``full_observations`` and never clear it on reset."""
    layer = env
    while layer is not None:
        if "full_observations" in getattr(layer, "__dict__", {}):
            layer.full_observations = {}
        layer = layer.__dict__.get("env") if hasattr(layer, "__dict__") else None


def _ta_negotiation_moves(env: Any, rng: random.Random) -> list[str]:
    """Valid moves of TextArena's SimpleNegotiation: deny, accept (when it can go through), one random offer."""
    game_state = env.state.game_state
    me = env.state.current_player_id
    mine = game_state["player_resources"][me]
    moves = ["[Deny]"]
    offer = game_state["current_offer"]
    if offer and offer["to_player"] == me and all(mine.get(r, 0) >= q for r, q in offer["requested_resources"].items()):
        moves.append("[Accept]")
    held = [r for r, q in mine.items() if q >= 1]
    if held:
        give = rng.choice(held)
        want = rng.choice([r for r in mine if r != give])
        moves.append(f"[Offer: {rng.randint(1, min(5, mine[give]))} {give} -> {rng.randint(1, 5)} {want}]")
    return moves


def textarena_legal_moves(env_id: str, env: Any, rng: random.Random) -> list[str]:
    """Valid moves of the TextArena games benchmarked here, read from the game state (also used by anchors.py)."""
    game_state = env.state.game_state
    if env_id.startswith("KuhnPoker"):
        return [f"[{k}]" for k in game_state["current_legal_action_tree"]]
    if env_id.startswith("ConnectFour"):
        return [f"[col {c}]" for c, cell in enumerate(game_state["board"][0]) if cell == "."]
    if env_id.startswith("SimpleNegotiation"):
        return _ta_negotiation_moves(env, rng)
    board = game_state["board"]
    return [f"[{r * 3 + c}]" for r in range(3) for c in range(3) if board[r][c] == ""]


def textarena_player(env_id: str, seed: int) -> Callable[[int], int]:
    import textarena as ta

    env = ta.make(env_id)
    rng = random.Random(seed)
    choice = rng.choice

    def play(i: int) -> int:
        _ta_clear_history(env)
        env.reset(num_players=2, seed=seed + i)
        moves = 0
        done = False
        while not done:
            _player_id, _observation = env.get_observation()
            done, _info = env.step(action=choice(textarena_legal_moves(env_id, env, rng)))
            moves += 1
        env.close()
        return moves

    return play


def textarena_midgame(env_id: str, moves: int) -> Any:
    """A TextArena env after ``moves`` random valid moves (the first seed whose game is still live)."""
    import textarena as ta

    for seed in range(1000):
        env = ta.make(env_id)
        env.reset(num_players=2, seed=seed)
        rng = random.Random(seed)
        done = False
        for _ in range(moves):
            env.get_observation()
            done, _ = env.step(action=rng.choice(textarena_legal_moves(env_id, env, rng)))
            if done:
                break
        if not done:
            env.get_observation()
            return env
    raise RuntimeError(f"{env_id}: no seed in 0..999 gives a game still live after {moves} random moves")


# ---------------------------------------------------------------------------------------------- PettingZoo
PYGAME_NOTE = "pygame not installed: a stub module stood in for it at import (used only by render())"
_PZ_IMPORT_NOTES: dict[str, str | None] = {}  # module name -> its import note (modules imported so far)


class _PygameStub:
    """Any attribute is another stub, so module-level annotations such as ``pygame.font.Font`` evaluate."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _PygameStub()


def import_pettingzoo_classic(name: str) -> tuple[Any, str | None]:
    """Import ``pettingzoo.classic.<name>``; returns ``(module, note)``.

    The classic modules import ``pygame`` at the top but use it only in ``render()``, which this benchmark never
    calls. If pygame is missing, a stub stands in for it during the import only (and is removed from ``sys.modules``
    afterwards), so the game logic itself is measured unchanged.
    """
    module_name = f"pettingzoo.classic.{name}"
    if module_name in _PZ_IMPORT_NOTES:
        return sys.modules[module_name], _PZ_IMPORT_NOTES[module_name]
    if importlib.util.find_spec("pygame") is not None:
        module = importlib.import_module(module_name)
        _PZ_IMPORT_NOTES[module_name] = None
        return module, None
    stub = types.ModuleType("pygame")

    def stub_getattr(attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _PygameStub()

    stub.__getattr__ = stub_getattr  # type: ignore[method-assign]
    sys.modules["pygame"] = stub
    try:
        module = importlib.import_module(module_name)
    finally:
        del sys.modules["pygame"]
    _PZ_IMPORT_NOTES[module_name] = PYGAME_NOTE
    return module, PYGAME_NOTE


def import_tictactoe_v3() -> tuple[Any, str | None]:
    """Import PettingZoo's ``tictactoe_v3``; returns ``(module, note)`` (see :func:`import_pettingzoo_classic`)."""
    return import_pettingzoo_classic("tictactoe_v3")


def pettingzoo_env(name: str, **kwargs: Any) -> Any:
    module, _note = import_pettingzoo_classic(name)
    return module.env(**kwargs)


def pettingzoo_player(seed: int, name: str = "tictactoe_v3", **kwargs: Any) -> Callable[[int], int]:
    env = pettingzoo_env(name, **kwargs)
    rng = random.Random(seed)
    choice = rng.choice

    def play(i: int) -> int:
        env.reset(seed=seed + i)
        moves = 0
        for _agent in env.agent_iter():
            obs, _reward, term, trunc, _info = env.last()
            if term or trunc:
                action = None
            else:
                action = choice(np.flatnonzero(obs["action_mask"]).tolist())
                moves += 1
            env.step(action)
        return moves

    return play


def pettingzoo_midgame(moves: int, name: str = "tictactoe_v3", **kwargs: Any) -> Any:
    """A PettingZoo env after ``moves`` random legal moves (the first seed whose game is still live)."""
    for seed in range(1000):
        env = pettingzoo_env(name, **kwargs)
        env.reset(seed=seed)
        rng = random.Random(seed)
        live = True
        for _ in range(moves):
            obs, _r, term, trunc, _i = env.last()
            if term or trunc:
                live = False
                break
            env.step(rng.choice(np.flatnonzero(obs["action_mask"]).tolist()))
        if live and env.agents and not any(env.terminations.values()) and not any(env.truncations.values()):
            return env
    raise RuntimeError(f"{name}: no seed in 0..999 gives a game still live after {moves} random moves")


def pettingzoo_availability(name: str, kwargs: dict[str, Any]) -> tuple[bool, str | None]:
    """``(True, pygame note or None)`` if the game imports and resets, else ``(False, "not installed (why)")``."""
    try:
        env = pettingzoo_env(name, **kwargs)
        env.reset(seed=0)
        env.last()
    except ImportError as exc:
        cause = exc.__cause__ if isinstance(exc.__cause__, ImportError) else None  # hanabi_v5 re-raises
        missing = exc.name or (cause.name if cause is not None else None) or str(exc).splitlines()[0]
        need = PETTINGZOO_NEEDS.get(name)
        why = f"{missing} missing" + (f", needs {need}" if need and need != missing else "")
        return False, f"not installed ({why}; {BENCH_EXTRA})"
    _module, note = import_pettingzoo_classic(name)
    return True, note


# ---------------------------------------------------------------------------------------------- the run
def deepcopier(env: Any) -> Callable[[], Any]:
    """A no-argument function that deep-copies ``env`` (what the clone rows time for the anchors)."""
    return lambda: copy.deepcopy(env)


def header() -> dict[str, Any]:
    def version(name: str) -> str:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return NOT_INSTALLED

    return {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "pettingzoo": version("pettingzoo"),
        "textarena": textarena_version() or NOT_INSTALLED,
        "rlcard": version("rlcard"),
        "shimmy": version("shimmy"),
        "open_spiel": version("open_spiel"),
    }


def run(budget: float, log: Callable[[str], None]) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    """Measure every row; returns ``(rows, goal checks, notes)``."""
    rows: list[dict[str, Any]] = []
    extra = budget * EXTRA_BUDGET_FRACTION
    first_games = ("kuhn_poker-v0", "tic_tac_toe-v0")
    later_games = ("hanabi-v1", "mini_hanabi-v1", "leduc_holdem-v0", "connect_four-v0", "simple_negotiation-v0")

    def step_row(env: str, impl: str, make_player: Callable[[], Callable[[int], int]] | None,
                 seconds: float = budget, error: str = NOT_INSTALLED) -> dict[str, Any]:
        row: dict[str, Any] = {"kind": "steps", "env": env, "implementation": impl}
        if make_player is None:
            row["error"] = error
        else:
            log(f"  steps  {env:<30} {impl} ...")
            row.update(time_episodes(make_player(), seconds))
        rows.append(row)
        return row

    def clone_row(env: str, impl: str, make_fn: Callable[[], Callable[[], Any]] | None,
                  seconds: float = budget, error: str = NOT_INSTALLED) -> dict[str, Any]:
        row: dict[str, Any] = {"kind": "clone", "env": env, "implementation": impl}
        if make_fn is None:
            row["error"] = error
        else:
            log(f"  clone  {env:<30} {impl} ...")
            row.update(time_calls(make_fn(), seconds))
        rows.append(row)
        return row

    def seconds_for(our_env_id: str) -> float:
        return budget if our_env_id in first_games else extra

    have_ta = textarena_version() is not None
    notes: list[str] = []
    pz_ok: dict[str, tuple[bool, str | None]] = {}
    for label, (name, kwargs, _ours, _moves) in PETTINGZOO_GAMES.items():
        try:
            pz_ok[label] = pettingzoo_availability(name, kwargs)
        except ImportError as exc:  # pettingzoo's classic games themselves
            pz_ok[label] = (False, f"not installed ({exc}; {BENCH_EXTRA})")
    pz_notes = sorted({note for ok, note in pz_ok.values() if ok and note})
    if pz_notes:
        notes.append(f"PettingZoo classic games: {'; '.join(pz_notes)}.")

    # 1-3: steps per second
    ours: dict[tuple[str, str], dict[str, Any]] = {}
    for env_id in first_games:
        for mode in ("discrete", "text"):
            ours[env_id, mode] = step_row(env_id, f"ours ({mode})",
                                          lambda e=env_id, m=mode: ours_player(e, m, seed=1000))
    # TextArena's KuhnPoker-v0 plays 3 hands per episode; the same match length for ours, so resets weigh the same
    ours["kuhn_poker-v0", "text, rounds=3"] = step_row(
        "kuhn_poker-v0", "ours (text, rounds=3)", lambda: ours_player("kuhn_poker-v0", "text", seed=1000, rounds=3))
    for env_id in later_games:
        for mode in ("discrete", "text"):
            ours[env_id, mode] = step_row(env_id, f"ours ({mode})",
                                          lambda e=env_id, m=mode: ours_player(e, m, seed=1000), seconds=extra)
    ta_steps: dict[str, dict[str, Any]] = {}
    global_random_state = random.getstate()  # TextArena reseeds the global `random`; restore it afterwards
    try:
        for ta_id, (our_id, _moves) in TEXTARENA_GAMES.items():
            ta_steps[ta_id] = step_row(ta_id, "TextArena",
                                       (lambda t=ta_id: textarena_player(t, seed=1000)) if have_ta else None,
                                       seconds=seconds_for(our_id))
    finally:
        random.setstate(global_random_state)
    pz_steps: dict[str, dict[str, Any]] = {}
    for label, (name, kwargs, our_id, _moves) in PETTINGZOO_GAMES.items():
        ok, why = pz_ok[label]
        pz_steps[label] = step_row(
            label, "PettingZoo", (lambda n=name, k=kwargs: pettingzoo_player(1000, n, **k)) if ok else None,
            seconds=seconds_for(our_id), error=why or NOT_INSTALLED)

    # 4: clone cost (mid-game: kuhn after the first bet decision, tic-tac-toe after 3 marks, Hanabi after 10 moves)
    clones: dict[str, dict[str, Any]] = {}
    for env_id, (moves, _goal) in CLONE_POINTS.items():
        seconds = seconds_for(env_id)
        clones[env_id] = clone_row(env_id, "ours clone()", lambda e=env_id, n=moves: ours_midgame(e, n).clone,
                                   seconds=seconds)
        clones[env_id + "/deepcopy"] = clone_row(
            env_id, "ours copy.deepcopy", lambda e=env_id, n=moves: deepcopier(ours_midgame(e, n)), seconds=seconds)
    ta_clones: dict[str, dict[str, Any]] = {}
    global_random_state = random.getstate()
    try:
        for ta_id, (our_id, moves) in TEXTARENA_GAMES.items():
            ta_clones[our_id] = clone_row(
                ta_id, "TextArena copy.deepcopy",
                (lambda e=ta_id, n=moves: deepcopier(textarena_midgame(e, n))) if have_ta else None,
                seconds=seconds_for(our_id))
    finally:
        random.setstate(global_random_state)
    pz_clones: dict[str, dict[str, Any]] = {}
    for label, (name, kwargs, our_id, moves) in PETTINGZOO_GAMES.items():
        ok, why = pz_ok[label]
        pz_clones[our_id] = clone_row(
            label, "PettingZoo copy.deepcopy",
            (lambda n=name, k=kwargs, m=moves: deepcopier(pettingzoo_midgame(m, n, **k))) if ok else None,
            seconds=seconds_for(our_id), error=why or NOT_INSTALLED)

    # goal checks
    checks: list[dict[str, Any]] = []

    def ratio_check(what: str, our: dict[str, Any], anchor: dict[str, Any], goal: float | None) -> None:
        check: dict[str, Any] = {"check": what, "goal": "none (information)" if goal is None else f">= {goal:g}x"}
        if "error" in anchor:
            check.update(ratio=None, passed=None, note=f"anchor {anchor['error']}")
        else:
            r = our["steps_per_s"] / anchor["steps_per_s"]
            check.update(ratio=r, passed=None if goal is None else r >= goal)
        checks.append(check)

    for mode in ("discrete", "text", "text, rounds=3"):
        ratio_check(f"kuhn_poker-v0 ({mode}) / TextArena KuhnPoker-v0 steps/s", ours["kuhn_poker-v0", mode],
                    ta_steps["KuhnPoker-v0"], None)
    for ta_id, (our_id, _moves) in list(TEXTARENA_GAMES.items())[1:]:
        for mode in ("discrete", "text"):
            ratio_check(f"{our_id} ({mode}) / TextArena {ta_id} steps/s", ours[our_id, mode], ta_steps[ta_id],
                        None)
    for label, (_name, _kwargs, our_id, _moves) in PETTINGZOO_GAMES.items():
        for mode in ("discrete", "text"):
            ratio_check(f"{our_id} ({mode}) / PettingZoo {label} steps/s", ours[our_id, mode], pz_steps[label],
                        GOAL_VS_PETTINGZOO)
    for env_id, (_moves, goal) in CLONE_POINTS.items():
        us = clones[env_id]["us_per_call"]
        check = {"check": f"{env_id} clone() us", "value_us": us,
                 "goal": "none set" if goal is None else f"<= {goal:g} us",
                 "passed": None if goal is None else us <= goal,
                 "speedup_vs_our_deepcopy": clones[env_id + "/deepcopy"]["us_per_call"] / us}
        for key, anchor in (("textarena", ta_clones.get(env_id)), ("pettingzoo", pz_clones.get(env_id))):
            check[f"speedup_vs_{key}_deepcopy"] = (
                None if anchor is None or "error" in anchor else anchor["us_per_call"] / us)
        checks.append(check)
    return rows, checks, notes


def _fmt_num(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:,.2f}"


def render(head: dict[str, Any], rows: list[dict[str, Any]], checks: list[dict[str, Any]], notes: list[str],
           budget: float) -> str:
    out = [
        (f"# env throughput  {head['date']}  |  {head['platform']}  |  {head['cpu_count']} CPUs  |  "
         f"python {head['python']}  numpy {head['numpy']}  pettingzoo {head['pettingzoo']}  "
         f"textarena {head['textarena']}  rlcard {head['rlcard']}  shimmy {head['shimmy']}  "
         f"open_spiel {head['open_spiel']}  |  {budget:g} s per row ({budget * EXTRA_BUDGET_FRACTION:g} s for "
         f"the later games)"),
        "",
        "| env | implementation | steps/s | us/step | us/clone |",
        "|---|---|---:|---:|---:|",
    ]
    for r in rows:
        if "error" in r:
            out.append(f"| {r['env']} | {r['implementation']} | {r['error']} | | |")
        elif r["kind"] == "steps":
            out.append(f"| {r['env']} | {r['implementation']} | {_fmt_num(r['steps_per_s'])} | "
                       f"{r['us_per_step']:.2f} | |")
        else:
            out.append(f"| {r['env']} | {r['implementation']} | | | {r['us_per_call']:.2f} |")
    out += ["", "| check | ours / anchor | goal | met |", "|---|---:|---|---|"]
    for c in checks:
        met = "n/a" if c["passed"] is None else ("yes" if c["passed"] else "**NO**")
        if "value_us" in c:
            slower = [f"{name} deepcopy {c[key]:.0f}x slower"
                      for name, key in (("TextArena", "speedup_vs_textarena_deepcopy"),
                                        ("PettingZoo", "speedup_vs_pettingzoo_deepcopy"))
                      if c[key] is not None]
            slower.append(f"our deepcopy {c['speedup_vs_our_deepcopy']:.0f}x slower")
            out.append(f"| {c['check']} | {c['value_us']:.2f} us ({'; '.join(slower)}) | {c['goal']} | {met} |")
        elif c["ratio"] is None:
            out.append(f"| {c['check']} | {c['note']} | {c['goal']} | {met} |")
        else:
            out.append(f"| {c['check']} | {c['ratio']:.1f}x | {c['goal']} | {met} |")
    if notes:
        out += [""] + [f"Note: {n}" for n in notes]
    return "\n".join(out)


def profile_ours(budget: float, top: int = 18) -> None:
    """cProfile our envs' random-play loop (the same loop as the steps/s rows) and print the top costs."""
    for env_id in CLONE_POINTS:
        for mode in ("discrete", "text"):
            play = ours_player(env_id, mode, seed=7)
            profiler = cProfile.Profile()
            end = time.perf_counter() + budget
            i = 0
            profiler.enable()
            while time.perf_counter() < end:
                play(i)
                i += 1
            profiler.disable()
            print(f"\n## cProfile: {env_id} ({mode}), {i} episodes, sorted by own time\n")
            stats = pstats.Stats(profiler, stream=sys.stdout)
            stats.strip_dirs().sort_stats("tottime").print_stats(top)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=None,
                        help="timed budget per row (default 2; --quick 0.3); the later games' rows get half")
    parser.add_argument("--quick", action="store_true", help="short run: 0.3 s per row")
    parser.add_argument("--json", metavar="PATH", help="also write the numbers as JSON to PATH")
    parser.add_argument("--profile", action="store_true", help="also cProfile our envs' loop and print top costs")
    args = parser.parse_args(argv)
    budget = args.seconds if args.seconds is not None else (0.3 if args.quick else 2.0)
    if budget <= 0:
        parser.error("--seconds must be positive")

    head = header()

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    log(f"running ({budget:g} s per row, {budget * EXTRA_BUDGET_FRACTION:g} s for the later games) ...")
    t0 = time.perf_counter()
    rows, checks, notes = run(budget, log)
    log(f"done in {time.perf_counter() - t0:.0f} s")
    print(render(head, rows, checks, notes, budget))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"header": head, "seconds_per_row": budget,
                       "seconds_per_row_later_games": budget * EXTRA_BUDGET_FRACTION, "rows": rows,
                       "checks": checks, "notes": notes,
                       "goals": {"vs_pettingzoo": GOAL_VS_PETTINGZOO,
                                 "clone_us": GOAL_CLONE_US, "clone_us_hanabi": GOAL_CLONE_US_HANABI}}, f, indent=2)
            f.write("\n")
    if args.profile:
        profile_ours(budget)
    return 0


if __name__ == "__main__":
    sys.exit(main())
