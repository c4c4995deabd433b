"""Instructions per MLP training decision and per env-only step, counted by Valgrind's callgrind (issue 17).

The development machine is shared: CPU-time rates of the same code move by up to 1.5x between runs
(``benchmarks/RESULTS.md``). An instruction count does not: the same code and seeds execute the same instructions
(to a few parts in 10^4: allocator and hash-seed effects), so two code states compare exactly even on a loaded box.
It is not a time: a cache miss or a slow NumPy call costs more than its instructions say. Read it beside
``benchmarks/train_throughput.py --model mlp``, which measures CPU time with the same loops.

For each env, one process under ``valgrind --tool=callgrind`` (the counters are dumped between phases with
``callgrind_control -d``, so imports, model construction and warm-up are left out):

* **training**: ``baselines.train`` with ``--model mlp`` (broadcast, ``16 x 4`` episodes per step, one torch
  thread), a 1-step run and an ``N + 1``-step run with the same seeds; their difference over the decisions of steps
  1..N (as train_throughput.py defines its rate);
* **env-only** (the anchor, in the same process): the issue's loop, ``env_loop.play_random`` (one env,
  ``reset(seed)`` per episode on seeds no training run resets, from ``env_loop.COUNTED_SEEDS``,
  ``env.last(text=False)`` every step, a uniformly random legal index), per step.

``--code DIR`` (repeatable) counts another checkout of the project (e.g. ``git worktree add --detach /tmp/before
<commit>``) in the same run; the table then gives each code state's counts and their ratios to the first one.

    python benchmarks/instruction_counts.py                         # this checkout, 4 envs, ~20 min
    python benchmarks/instruction_counts.py --code /tmp/before --code .
    python benchmarks/instruction_counts.py --envs kuhn_poker-v0

Needs Valgrind (Debian: ``apt-get install valgrind``); without it the script says so and exits with status 2.
"""

from __future__ import annotations

import argparse
import datetime
import glob
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# env id, kwargs, training steps timed, env-only episodes (sized so each phase counts a few 10^8 instructions)
ENVS = {
    "voting-v0 n_voters=7": ("voting-v0", {"n_voters": 7}, 3, 100),
    "voting-v0 n_voters=16": ("voting-v0", {"n_voters": 16}, 2, 50),
    "kuhn_poker-v0": ("kuhn_poker-v0", {}, 6, 600),
    "mini_hanabi-v1": ("mini_hanabi-v1", {}, 3, 60),
}

CHILD = r'''
import json, os, random, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
env_id, kwargs, steps, episodes = sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
import torch
torch.set_num_threads(1)
from baselines.train import TrainConfig, train
from marl_llm_envs import make


def mark(name):
    print("MARK", name, flush=True)
    while not os.path.exists(os.environ["CG_GO"] + name):
        time.sleep(0.05)


def run(n):
    with tempfile.TemporaryDirectory() as out:
        train(TrainConfig(env=env_id, env_kwargs=kwargs, model="mlp", action_mode="discrete", credit="broadcast",
                          steps=n, tasks_per_step=16, group_size=4, out=out, progress=False, tensorboard=False,
                          save_every=10**6, seed=0))
        return [json.loads(line) for line in (Path(out) / "metrics.jsonl").read_text().splitlines()]


env = make(env_id, action_mode="discrete", **kwargs)
rng = random.Random(0)
sys.path.append(sys.argv[6])          # the harness's benchmarks folder, for the env-only loop
from env_loop import COUNTED_SEEDS, WARMUP_SEEDS, play_random      # noqa: E402


def env_only(seeds):
    return play_random(env, seeds, rng)


run(1)              # imports, the first AdamW step's torch._dynamo import
env_only(range(WARMUP_SEEDS, WARMUP_SEEDS + 20))     # seeds neither training nor the counted loop resets
mark("warm")
run(1)
mark("one")
rows = run(steps + 1)[1:]
mark("many")
moves = env_only(range(COUNTED_SEEDS, COUNTED_SEEDS + episodes))
mark("envonly")
print("COUNTS", sum(r["tokens/main"] + r["tokens/branches"] for r in rows), moves, flush=True)
'''


def count(code: str, env_id: str, kwargs: dict, steps: int, episodes: int) -> dict[str, float]:
    """Instructions per training decision and per env-only step of one code checkout, in one callgrind process."""
    import json

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cg.out")
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--dump-instr=no",
               sys.executable, "-c", CHILD, code, env_id, json.dumps(kwargs), str(steps), str(episodes),
               str(Path(__file__).resolve().parent)]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=dict(os.environ, CG_GO=out + ".go"))
        counts = None
        for line in proc.stdout:
            if line.startswith("MARK "):
                name = line.split()[1]
                subprocess.run(["callgrind_control", "-d", name, str(proc.pid)], capture_output=True, check=True)
                time.sleep(0.5)
                Path(out + ".go" + name).touch()
            elif line.startswith("COUNTS "):
                counts = [int(x) for x in line.split()[1:]]
        err = proc.stderr.read()
        if proc.wait() != 0 or counts is None:
            raise RuntimeError(f"{code} {env_id}: the callgrind run failed:\n{err[-2000:]}")
        phases = {}
        for path in glob.glob(out + ".*"):
            if ".go" in path:
                continue
            text = Path(path).read_text(errors="replace")
            trigger = re.search(r"^desc: Trigger: Client Request: dump (\S+)|^desc: Trigger: dump (\S+)", text, re.M)
            total = re.search(r"^(?:summary|totals): (\d+)", text, re.M)
            if trigger and total:
                phases[trigger.group(1) or trigger.group(2)] = int(total.group(1))
    decisions, moves = counts
    return {"training": (phases["many"] - phases["one"]) / decisions, "env_only": phases["envonly"] / moves,
            "decisions": decisions, "moves": moves}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--code", action="append", help="a checkout of the project to count (repeatable; default: this one)")
    p.add_argument("--envs", default=",".join(ENVS), help=f"comma-separated, of {list(ENVS)}")
    args = p.parse_args()
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("valgrind is not installed (Debian: apt-get install valgrind)", file=sys.stderr)
        sys.exit(2)
    codes = [str(Path(c).resolve()) for c in (args.code or [str(ROOT)])]
    names = [e.strip() for e in args.envs.split(",") if e.strip()]
    unknown = [e for e in names if e not in ENVS]
    if unknown:
        p.error(f"--envs: unknown {unknown}; choose from {list(ENVS)}")
    print(f"# Instructions per MLP training decision and per env-only step ({datetime.datetime.now().isoformat(timespec='seconds')})\n")
    print(f"- machine: {platform.platform()}; valgrind callgrind; command: python benchmarks/instruction_counts.py "
          f"{' '.join(sys.argv[1:])}")
    for i, code in enumerate(codes):
        head = subprocess.run(["git", "-C", code, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        print(f"- code {i}: {code} ({head.stdout.strip() or 'not a git checkout'})")
    print("\n| env | code | training: instructions / decision | env-only: instructions / step | env-only / training "
          "| training: code 0 / this | env-only: code 0 / this |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for name in names:
        env_id, kwargs, steps, episodes = ENVS[name]
        first = None
        for i, code in enumerate(codes):
            c = count(code, env_id, kwargs, steps, episodes)
            first = first or c
            print(f"| {name} | {i} | {c['training']:,.0f} | {c['env_only']:,.0f} | "
                  f"{100 * c['env_only'] / c['training']:.0f}% | {first['training'] / c['training']:.2f}x | "
                  f"{first['env_only'] / c['env_only']:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
