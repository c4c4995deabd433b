"""Throughput of marl_llm_envs against TextArena and PettingZoo, and the cost of ``clone()``.

What it measures (all in one run, so every number comes from the same machine at the same time; the machines are
noisy, so read the *ratios*, not the absolute numbers):

1. **Steps per second with random legal play**, the text observation built at every step: our ``kuhn_poker-v0``
   (default ``rounds=1``; plus a text-mode row with ``rounds=3``, the match length of TextArena's ``KuhnPoker-v0``)
   and ``tic_tac_toe-v0``, in both action modes. The loop is the usual AEC loop
   (``for agent in env.agent_iter(): env.last(); env.step(a)``); ``env.last()`` builds the full observation
   (``text``, vector and, in discrete mode, the mask) every step. Discrete mode picks a random index from the action
   mask; text mode picks a random string from ``env.legal_actions(agent)`` (e.g. ``"[bet]"``), so the env's text
   parser runs every step.
2. **TextArena** ``KuhnPoker-v0`` (its registered default: 3 hands, ``LLMObservationWrapper`` +
   ``ActionFormattingWrapper``) and ``TicTacToe-v0``: ``get_observation()`` (builds the prompt) then
   ``step(action=...)`` with a random *valid* move read from the game state (the Kuhn betting tree's keys; the empty
   cells), so no step is wasted on an invalid move. One TextArena step = one ``env.step``. The env is reused across
   episodes; its ``LLMObservationWrapper`` history (which TextArena does not clear on ``reset``) is cleared before
   each episode, so its prompts do not grow across episodes (this favours TextArena).
3. **PettingZoo** ``classic.tictactoe_v3`` (with its default wrappers): the same AEC loop, random legal index from
   the action mask, ``env.last()`` every step.
4. **Clone cost** (microseconds per copy), mid-game: our ``env.clone()`` for ``kuhn_poker-v0`` and
   ``tic_tac_toe-v0``, against ``copy.deepcopy`` of the TextArena env at a similar point, and ``copy.deepcopy`` of our
   own env as a second anchor (``copy.deepcopy`` of PettingZoo's ``tictactoe_v3`` is shown for reference).

Counting: a *step* is one move of a live agent. The AEC envs also take the ``step(None)`` calls of terminated agents
at the end of each episode; those cost time but are not counted (conservative for ours and PettingZoo's).
Episode resets are inside the timed loop for every implementation. Each row runs a warm-up and then for a fixed
wall-clock budget (``time.perf_counter``). Random choices come from ``random.Random`` instances seeded per row; the
global ``random`` / NumPy state is never reseeded by this script (TextArena reseeds the global ``random`` in its
``reset``; the global state is saved before and restored after the TextArena rows).

Goals: ours >= 50x TextArena steps/s (same game), ours >= 2x PettingZoo ``tictactoe_v3`` steps/s, and
``clone()`` <= 20 us.

Run (from the repository root)::

    python benchmarks/env_throughput.py                # ~2 s per row, ~40 s in all
    python benchmarks/env_throughput.py --quick        # ~0.3 s per row
    python benchmarks/env_throughput.py --seconds 5 --json results.json
    python benchmarks/env_throughput.py --profile      # also cProfile our envs' step/observe loop

If TextArena (or PettingZoo's classic games) is not installed, its rows say "not installed" and the rest still runs.
"""

from __future__ import annotations

import argparse
import copy
import cProfile
import datetime
import json
import os
import platform
import pstats
import random
import sys
import time
from collections.abc import Callable
from importlib import metadata
from typing import Any

import numpy as np

try:
    import marl_llm_envs  # noqa: F401
except ImportError:  # run from a checkout without installing the package
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from marl_llm_envs import make

GOAL_VS_TEXTARENA = 50.0
GOAL_VS_PETTINGZOO = 2.0
GOAL_CLONE_US = 20.0
NOT_INSTALLED = "not installed"


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
                action = choice(env.legal_actions(agent))
                moves += 1
            env.step(action)
        return moves

    return play


def ours_midgame(env_id: str, moves: int) -> Any:
    env = make(env_id, action_mode="discrete")
    env.reset(seed=0)
    rng = random.Random(0)
    for _ in range(moves):
        obs = env.observe(env.agent_selection)
        env.step(rng.choice(np.flatnonzero(obs["action_mask"]).tolist()))
    assert not env.done, "mid-game state expected"
    return env


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
    """TextArena's LLMObservationWrapper keeps every message in ``full_observations`` and never clears it on reset."""
    layer = env
    while layer is not None:
        if "full_observations" in getattr(layer, "__dict__", {}):
            layer.full_observations = {}
        layer = layer.__dict__.get("env") if hasattr(layer, "__dict__") else None


def _ta_legal(env_id: str, env: Any) -> list[str]:
    game_state = env.state.game_state
    if env_id.startswith("KuhnPoker"):
        return [f"[{k}]" for k in game_state["current_legal_action_tree"]]
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
            done, _info = env.step(action=choice(_ta_legal(env_id, env)))
            moves += 1
        env.close()
        return moves

    return play


def textarena_midgame(env_id: str, moves: int) -> Any:
    import textarena as ta

    env = ta.make(env_id)
    env.reset(num_players=2, seed=0)
    rng = random.Random(0)
    for _ in range(moves):
        env.get_observation()
        done, _ = env.step(action=rng.choice(_ta_legal(env_id, env)))
        assert not done, "mid-game state expected"
    env.get_observation()
    return env


# ---------------------------------------------------------------------------------------------- PettingZoo
PYGAME_NOTE = "pygame not installed: a stub module stood in for it at import (used only by render())"


def import_tictactoe_v3() -> tuple[Any, str | None]:
    """Import PettingZoo's ``tictactoe_v3``; returns ``(module, note)``.

    Its module imports ``pygame`` at the top but uses it only in ``render()``, which this benchmark never calls. If
    pygame is missing, an empty stub stands in for it during the import only (and is removed from ``sys.modules``
    afterwards), so the game logic itself is measured unchanged.
    """
    try:
        from pettingzoo.classic import tictactoe_v3

        return tictactoe_v3, None
    except ModuleNotFoundError as exc:
        if exc.name != "pygame":
            raise
    import types

    for name in [m for m in sys.modules if m.startswith("pettingzoo.classic")]:
        del sys.modules[name]  # drop the half-imported modules
    sys.modules["pygame"] = types.ModuleType("pygame")
    try:
        from pettingzoo.classic import tictactoe_v3
    finally:
        del sys.modules["pygame"]
    return tictactoe_v3, PYGAME_NOTE


def pettingzoo_player(seed: int) -> Callable[[int], int]:
    tictactoe_v3, _note = import_tictactoe_v3()
    env = tictactoe_v3.env()
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


def pettingzoo_midgame(moves: int) -> Any:
    tictactoe_v3, _note = import_tictactoe_v3()
    env = tictactoe_v3.env()
    env.reset(seed=0)
    rng = random.Random(0)
    for _ in range(moves):
        obs, _r, _t, _tr, _i = env.last()
        env.step(rng.choice(np.flatnonzero(obs["action_mask"]).tolist()))
    return env


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
    }


def run(budget: float, log: Callable[[str], None]) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    """Measure every row; returns ``(rows, goal checks, notes)``."""
    rows: list[dict[str, Any]] = []

    def step_row(env: str, impl: str, make_player: Callable[[], Callable[[int], int]] | None) -> dict[str, Any]:
        row: dict[str, Any] = {"kind": "steps", "env": env, "implementation": impl}
        if make_player is None:
            row["error"] = NOT_INSTALLED
        else:
            log(f"  steps  {env:<16} {impl} ...")
            row.update(time_episodes(make_player(), budget))
        rows.append(row)
        return row

    def clone_row(env: str, impl: str, make_fn: Callable[[], Callable[[], Any]] | None) -> dict[str, Any]:
        row: dict[str, Any] = {"kind": "clone", "env": env, "implementation": impl}
        if make_fn is None:
            row["error"] = NOT_INSTALLED
        else:
            log(f"  clone  {env:<16} {impl} ...")
            row.update(time_calls(make_fn(), budget))
        rows.append(row)
        return row

    have_ta = textarena_version() is not None
    notes: list[str] = []
    try:
        _module, pz_note = import_tictactoe_v3()
        have_pz = True
        if pz_note:
            notes.append(f"PettingZoo tictactoe_v3: {pz_note}.")
    except ImportError as exc:
        have_pz = False
        notes.append(f"PettingZoo tictactoe_v3 could not be imported: {exc}.")

    # 1-3: steps per second
    ours: dict[tuple[str, str], dict[str, Any]] = {}
    for env_id in ("kuhn_poker-v0", "tic_tac_toe-v0"):
        for mode in ("discrete", "text"):
            ours[env_id, mode] = step_row(env_id, f"ours ({mode})",
                                          lambda e=env_id, m=mode: ours_player(e, m, seed=1000))
    # TextArena's KuhnPoker-v0 plays 3 hands per episode; the same match length for ours, so resets weigh the same
    ours["kuhn_poker-v0", "text, rounds=3"] = step_row(
        "kuhn_poker-v0", "ours (text, rounds=3)", lambda: ours_player("kuhn_poker-v0", "text", seed=1000, rounds=3))
    global_random_state = random.getstate()  # TextArena reseeds the global `random`; restore it afterwards
    try:
        ta_kuhn = step_row("KuhnPoker-v0", "TextArena",
                           (lambda: textarena_player("KuhnPoker-v0", seed=1000)) if have_ta else None)
        ta_ttt = step_row("TicTacToe-v0", "TextArena",
                          (lambda: textarena_player("TicTacToe-v0", seed=1000)) if have_ta else None)
    finally:
        random.setstate(global_random_state)
    pz_ttt = step_row("tictactoe_v3", "PettingZoo", (lambda: pettingzoo_player(seed=1000)) if have_pz else None)

    # 4: clone cost (mid-game: kuhn after the first bet decision, tic-tac-toe after 3 marks)
    clones: dict[str, dict[str, Any]] = {}
    for env_id, moves in (("kuhn_poker-v0", 1), ("tic_tac_toe-v0", 3)):
        clones[env_id] = clone_row(env_id, "ours clone()", lambda e=env_id, n=moves: ours_midgame(e, n).clone)
        clones[env_id + "/deepcopy"] = clone_row(
            env_id, "ours copy.deepcopy", lambda e=env_id, n=moves: deepcopier(ours_midgame(e, n)))
    global_random_state = random.getstate()
    try:
        for env_id, moves in (("KuhnPoker-v0", 1), ("TicTacToe-v0", 3)):
            clones[env_id] = clone_row(
                env_id, "TextArena copy.deepcopy",
                (lambda e=env_id, n=moves: deepcopier(textarena_midgame(e, n))) if have_ta else None)
    finally:
        random.setstate(global_random_state)
    clone_row("tictactoe_v3", "PettingZoo copy.deepcopy",
              (lambda: deepcopier(pettingzoo_midgame(3))) if have_pz else None)

    # goal checks
    checks: list[dict[str, Any]] = []

    def ratio_check(what: str, our: dict[str, Any], anchor: dict[str, Any], goal: float) -> None:
        check: dict[str, Any] = {"check": what, "goal": f">= {goal:g}x"}
        if "error" in anchor:
            check.update(ratio=None, passed=None, note=f"anchor {anchor['error']}")
        else:
            r = our["steps_per_s"] / anchor["steps_per_s"]
            check.update(ratio=r, passed=r >= goal)
        checks.append(check)

    for mode in ("discrete", "text", "text, rounds=3"):
        ratio_check(f"kuhn_poker-v0 ({mode}) / TextArena KuhnPoker-v0 steps/s", ours["kuhn_poker-v0", mode],
                    ta_kuhn, GOAL_VS_TEXTARENA)
    for mode in ("discrete", "text"):
        ratio_check(f"tic_tac_toe-v0 ({mode}) / TextArena TicTacToe-v0 steps/s", ours["tic_tac_toe-v0", mode],
                    ta_ttt, GOAL_VS_TEXTARENA)
    for mode in ("discrete", "text"):
        ratio_check(f"tic_tac_toe-v0 ({mode}) / PettingZoo tictactoe_v3 steps/s", ours["tic_tac_toe-v0", mode],
                    pz_ttt, GOAL_VS_PETTINGZOO)
    for env_id, ta_id in (("kuhn_poker-v0", "KuhnPoker-v0"), ("tic_tac_toe-v0", "TicTacToe-v0")):
        us = clones[env_id]["us_per_call"]
        check = {"check": f"{env_id} clone() us", "value_us": us, "goal": f"<= {GOAL_CLONE_US:g} us",
                 "passed": us <= GOAL_CLONE_US,
                 "speedup_vs_our_deepcopy": clones[env_id + "/deepcopy"]["us_per_call"] / us}
        ta = clones[ta_id]
        check["speedup_vs_textarena_deepcopy"] = None if "error" in ta else ta["us_per_call"] / us
        checks.append(check)
    return rows, checks, notes


def _fmt_num(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:,.2f}"


def render(head: dict[str, Any], rows: list[dict[str, Any]], checks: list[dict[str, Any]], notes: list[str],
           budget: float) -> str:
    out = [
        (f"# env throughput  {head['date']}  |  {head['platform']}  |  {head['cpu_count']} CPUs  |  "
         f"python {head['python']}  numpy {head['numpy']}  pettingzoo {head['pettingzoo']}  "
         f"textarena {head['textarena']}  |  {budget:g} s per row"),
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
            ta = c["speedup_vs_textarena_deepcopy"]
            extra = (f" (TextArena deepcopy is {ta:.0f}x slower" if ta is not None else " (TextArena n/a") + \
                    f"; our deepcopy {c['speedup_vs_our_deepcopy']:.0f}x slower)"
            out.append(f"| {c['check']} | {c['value_us']:.2f} us{extra} | {c['goal']} | {met} |")
        elif c["ratio"] is None:
            out.append(f"| {c['check']} | {c['note']} | {c['goal']} | {met} |")
        else:
            out.append(f"| {c['check']} | {c['ratio']:.1f}x | {c['goal']} | {met} |")
    if notes:
        out += [""] + [f"Note: {n}" for n in notes]
    return "\n".join(out)


def profile_ours(budget: float, top: int = 18) -> None:
    """cProfile our envs' random-play loop (the same loop as the steps/s rows) and print the top costs."""
    for env_id, mode in (("kuhn_poker-v0", "discrete"), ("kuhn_poker-v0", "text"),
                         ("tic_tac_toe-v0", "discrete"), ("tic_tac_toe-v0", "text")):
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
    parser.add_argument("--seconds", type=float, default=None, help="timed budget per row (default 2; --quick 0.3)")
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

    log(f"running ({budget:g} s per row) ...")
    rows, checks, notes = run(budget, log)
    print(render(head, rows, checks, notes, budget))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"header": head, "seconds_per_row": budget, "rows": rows, "checks": checks, "notes": notes,
                       "goals": {"vs_textarena": GOAL_VS_TEXTARENA, "vs_pettingzoo": GOAL_VS_PETTINGZOO,
                                 "clone_us": GOAL_CLONE_US}}, f, indent=2)
            f.write("\n")
    if args.profile:
        profile_ours(budget)
    return 0


if __name__ == "__main__":
    sys.exit(main())
