"""Instructions per episode of issue 17's env-only loop, counted by valgrind: a measure the machine's load cannot move.

The loop is ``env_loop.play_random`` (the one ``train_throughput.py`` times), without text (``--text``: with), with
``random.Random(0)``: one env, ``reset(seed)`` per episode, a uniformly random legal move every step. Seeds are ``1000, 1001, ...`` or, with
``--group N``, each seed ``N`` times in a row (training resets each group's envs with one seed).

How: the script runs itself under ``valgrind --tool=callgrind --collect-atstart=no
--toggle-collect='*operator_call*'`` and calls the loop through ``operator.call``, so only the loop's instructions
are counted (not Python's start-up or the imports); it prints the count divided by the number of episodes. Counts are
deterministic for a given Python, NumPy and code, so two code states compare exactly (run each with its own tree on
``PYTHONPATH``); instructions are not time (memory effects are not counted), so read them next to a timed rate.
It needs ``valgrind`` (Debian/Ubuntu: ``apt-get install valgrind``); a run takes about 30 s plus 5 s per 100,000
steps.

    PYTHONPATH=$PWD python benchmarks/env_instructions.py kuhn_poker-v0 --episodes 1000
    PYTHONPATH=$PWD python benchmarks/env_instructions.py voting-v0 --kwargs '{"n_voters": 7}' --episodes 30 --group 4
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys

from env_loop import play_random


def _loop(env, episodes: int, group: int, text: bool) -> None:
    """The counted call: ``env_loop.play_random`` over seeds 1000, 1001, ..., each ``group`` times in a row."""
    play_random(env, (1000 + episode // group for episode in range(episodes)), random.Random(0), text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Instructions per episode of issue 17's env-only loop, counted by valgrind (callgrind).",
        epilog="example:\n  PYTHONPATH=$PWD python benchmarks/env_instructions.py kuhn_poker-v0 --episodes 1000",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("env", help="a registered env id, e.g. kuhn_poker-v0")
    parser.add_argument("--kwargs", default="{}", help="the env's kwargs as JSON (default {})")
    parser.add_argument("--episodes", type=int, default=1000, help="episodes counted (default 1000)")
    parser.add_argument("--group", type=int, default=1, help="resets per seed in a row (default 1: every seed new)")
    parser.add_argument("--text", action="store_true",
                        help="observe with the text (a plain env.last(), which code from before text=False has too)")
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        kwargs = json.loads(args.kwargs)
    except json.JSONDecodeError as e:
        parser.error(f"--kwargs is not JSON: {e}")
    if not isinstance(kwargs, dict):
        parser.error("--kwargs must be a JSON object")
    if args.episodes < 1 or args.group < 1:
        parser.error("--episodes and --group must be positive")
    if args.inside:
        import operator

        from marl_llm_envs import make

        env = make(args.env, action_mode="discrete", **kwargs)     # built outside the count
        operator.call(_loop, env, args.episodes, args.group, args.text)
        return 0
    if shutil.which("valgrind") is None:
        print("env_instructions: valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 2
    command = ["valgrind", "--tool=callgrind", "--collect-atstart=no", "--toggle-collect=*operator_call*",
               "--callgrind-out-file=/dev/null", sys.executable, os.path.abspath(__file__), args.env,
               "--kwargs", args.kwargs, "--episodes", str(args.episodes), "--group", str(args.group), "--inside",
               *(["--text"] if args.text else [])]
    done = subprocess.run(command, capture_output=True, text=True)
    found = re.search(r"Collected\s*:\s*(\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        print(done.stderr[-2000:], file=sys.stderr)
        return done.returncode or 1
    count = int(found.group(1))
    print(f"{args.env} {args.kwargs} episodes={args.episodes} group={args.group}{' text' if args.text else ''}: "
          f"{count / args.episodes:,.0f} instructions/episode")
    return 0


if __name__ == "__main__":
    sys.exit(main())
