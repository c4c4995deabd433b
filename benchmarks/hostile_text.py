"""Hostile text: every env's parser on adversarial replies, at two sizes, to check its time grows linearly.

LLM output is hostile input: a training run must never stall on one reply. For every registered env (and, when
TextArena is installed, three TextArena ids) this script takes the first turn whose reply is parsed (the solver of
think_solve-v0, voter_0 of voting-v0, player_0 of the games; think_solve-v0 and voting-v0 also with the
knights_knaves and countdown task sources, whose verifiers read the answer) and times one ``env.step(reply)`` on a
fresh clone (the clone is made outside the timing) for each pattern:

* ``unclosed_boxed``: ``\\boxed{`` repeated (the issue-10 repro: quadratic before the fix, 19 s at 56 KB);
* ``nested_boxed``: ``\\boxed{`` repeated, then ``1``, then as many ``}``;
* ``open_braces``: one ``\\boxed{`` then ``{`` repeated;
* ``bracket_run``: ``[`` repeated;
* ``long_tokens``: ``[`` followed by 70 letters, repeated (every ``[`` opens a token too long to be a move);
* ``move_prefix``: the env's first legal move without its closing ``]`` repeated (``\\boxed`` for free-text turns);
* ``huge_number``: a ``\\boxed{...}`` and a ``[...]`` holding one huge number;
* ``unicode``: accented letters, CJK and emoji repeated.

Each is timed at ``--small`` and ``--large`` characters (default 8,192 and 65,536 = ``TEXT_MAX_LENGTH``, size ratio
8) and at 1,000,000 characters, which the env cuts to ``TEXT_MAX_LENGTH`` before parsing (so that time is bounded
by the cap, not by the reply). The *growth* is time(large) / time(small): about the size ratio (8) for a linear
parser, about its square (64) for a quadratic one. The anchor, measured in the same run on the same inputs, is
``str.lower`` (a linear scan in C): its growth shows what "linear" looks like on this machine today. A row is
``linear`` when its worst growth is under twice the size ratio. Each time is the minimum over ``--repeats`` runs of
the process's CPU time (``time.process_time``), so that other jobs on a shared machine do not count.

The last column is the outcome of the 1 MB reply: in our envs every pattern gives the documented invalid-move outcome
(``invalid`` = recorded in ``infos[agent]["invalid_action"]``), with the cut recorded (``ignored_chars``); TextArena
rules its own games (its SimpleNegotiation takes free text as a chat message, a valid move).

    python benchmarks/hostile_text.py                  # about a minute on a 2-core machine
    python benchmarks/hostile_text.py --repeats 3 --no-textarena
"""

from __future__ import annotations

import argparse
import datetime
import platform
import sys
import time
from typing import Callable

from marl_llm_envs import list_envs, make
from marl_llm_envs.text import TEXT_MAX_LENGTH

HUGE = 1_000_000
TEXTARENA_IDS = ("textarena/TicTacToe-v0", "textarena/KuhnPoker-v0", "textarena/SimpleNegotiation-v0")


def _fill(unit: str, n: int) -> str:
    return (unit * (n // len(unit) + 1))[:n]


def patterns(prefix: str) -> dict[str, Callable[[int], str]]:
    """Adversarial replies of ``n`` characters; ``prefix`` is the env's move prefix (its first legal move minus the
    closing bracket)."""
    return {
        "unclosed_boxed": lambda n: _fill("\\boxed{", n),
        "nested_boxed": lambda n: "\\boxed{" * (n // 8) + "1" + "}" * (n - 7 * (n // 8) - 1),
        "open_braces": lambda n: "\\boxed{" + "{" * (n - 7),
        "bracket_run": lambda n: "[" * n,
        "long_tokens": lambda n: _fill("[" + "x" * 70, n),
        "move_prefix": lambda n: _fill(prefix, n),
        "huge_number": lambda n: "\\boxed{" + "9" * (n // 2 - 8) + "} [" + "9" * (n - n // 2 - 3) + "]",
        "unicode": lambda n: _fill("\u00e9\u00e8\u20ac\u00df\u3042\u6f22\U0001F600 ", n),
    }


def turn_env(env_id: str, **kwargs):
    """The env at its first parsed turn (think_solve-v0: the solver, after the thinker's message)."""
    env = make(env_id, **kwargs)
    env.reset(seed=0)
    if env_id == "think_solve-v0":
        env.step("Let me think about it.")
    return env


def time_step(env, reply: str, repeats: int) -> tuple[float, object]:
    """The minimum over ``repeats`` of one ``step(reply)`` on a fresh clone; and the last clone after its step."""
    best, clone = float("inf"), None
    for _ in range(repeats):
        clone = env.clone()
        agent = clone.agent_selection
        start = time.process_time()
        clone.step(reply)
        best = min(best, time.process_time() - start)
    clone._last_agent = agent
    return best, clone


def outcome(clone) -> str:
    info = clone.infos.get(clone._last_agent) if clone.agents else None
    if info is None:  # the episode ended and every agent was removed; read the final record
        return "ended"
    record = info.get("invalid_action")
    cut = info.get("ignored_chars")
    text = "invalid" if record is not None else "valid"
    return f"{text}, {cut:,} ignored" if cut else text


def time_anchor(reply: str, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        reply.lower()
        best = min(best, time.process_time() - start)
    return best


def rows(small: int, large: int, repeats: int, textarena: bool) -> list[tuple[str, dict]]:
    cases = [(env_id, {}) for env_id in list_envs()]
    cases += [(env_id, {"tasks": tasks}) for env_id in ("think_solve-v0", "voting-v0")
              for tasks in ("knights_knaves", "countdown")]
    if textarena:
        try:
            import textarena  # noqa: F401
            cases += [(env_id, {}) for env_id in TEXTARENA_IDS]
        except ImportError:
            print("(TextArena not installed: pip install -e \".[bench]\"; its rows are skipped)", file=sys.stderr)
    out = []
    for env_id, kwargs in cases:
        env = turn_env(env_id, **kwargs)
        legal = env.legal_actions()
        prefix = legal[0][:-1] if legal else "\\boxed"
        result = {"agent": env.agent_selection, "growth": {}, "large_s": 0.0, "huge_s": 0.0, "outcomes": set(),
                  "anchor_growth": {}}
        for name, make_reply in patterns(prefix).items():
            t_small, _ = time_step(env, make_reply(small), repeats)
            t_large, _ = time_step(env, make_reply(large), repeats)
            t_huge, clone = time_step(env, make_reply(HUGE), repeats)
            result["growth"][name] = t_large / max(t_small, 1e-9)
            result["anchor_growth"][name] = (time_anchor(make_reply(large), repeats)
                                             / max(time_anchor(make_reply(small), repeats), 1e-9))
            result["large_s"] = max(result["large_s"], t_large)
            result["huge_s"] = max(result["huge_s"], t_huge)
            result["outcomes"].add(outcome(clone))
        name = env_id + "".join(f" ({k}={v})" for k, v in kwargs.items())
        out.append((name, result))
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", type=int, default=TEXT_MAX_LENGTH // 8, help="small size in characters (8192)")
    parser.add_argument("--large", type=int, default=TEXT_MAX_LENGTH, help="large size in characters (65536)")
    parser.add_argument("--repeats", type=int, default=7, help="timed runs per cell; the minimum is kept (7)")
    parser.add_argument("--no-textarena", action="store_true", help="skip the TextArena rows")
    args = parser.parse_args(argv)
    ratio = args.large / args.small
    print(f"# hostile_text  {datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}  |  "
          f"{platform.platform()}  |  Python {platform.python_version()}")
    print(f"sizes {args.small:,} and {args.large:,} characters (ratio {ratio:g}; linear growth ~{ratio:g}, "
          f"quadratic ~{ratio * ratio:g}); 1 MB replies are cut to TEXT_MAX_LENGTH = {TEXT_MAX_LENGTH:,}; "
          f"min of {args.repeats} runs\n")
    results = rows(args.small, args.large, args.repeats, not args.no_textarena)
    names = list(patterns("").keys())
    print("| env | turn | worst ms at " + f"{args.large // 1024} K | ms at 1 MB | "
          + " | ".join(names) + " | anchor (str.lower) | verdict | 1 MB outcome |")
    print("|---|---|---:|---:|" + "---:|" * len(names) + "---:|---|---|")
    all_linear = True
    for name, r in results:
        worst = max(r["growth"].values())
        anchor = max(r["anchor_growth"].values())
        linear = worst < 2 * ratio
        all_linear &= linear
        print(f"| {name} | {r['agent']} | {r['large_s'] * 1e3:.2f} | {r['huge_s'] * 1e3:.2f} | "
              + " | ".join(f"{r['growth'][p]:.1f}x" for p in names)
              + f" | {anchor:.1f}x | {'linear' if linear else 'SUPERLINEAR'} | {'; '.join(sorted(r['outcomes']))} |")
    print(f"\nevery env linear (worst growth < {2 * ratio:g}x): {'yes' if all_linear else 'NO'}")


if __name__ == "__main__":
    main()
