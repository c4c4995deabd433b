"""What a compiled build of the unchanged sources would give the micro tier (issue 17): Cython against pure Python.

Issue 17 asks for the env-only rate at 3x orig's and training at 40% of it, with the same results. Rounds 1-8 of
``benchmarks/RESULTS.md`` took pure Python to about 2x orig on Kuhn and 2.3-2.5x on voting with 7 voters, and found
the rest spread over the AEC calls (a Kuhn episode's floor in pure Python, every call at its minimum, is still above
the 3x budget). This script measures the other way out, without changing a line of the project: it compiles
``COMPILED`` (the env core, the four envs' modules, the tasks voting draws from, and the trainer's rollout, policy,
credit and update modules) with Cython in a scratch worktree of ``HEAD`` and times that tree against the same commit
in pure Python, and against orig (the issue's code, with text: its only mode) in the same run.

* Cython compiles the ``.py`` files as they are (``annotation_typing=False``: by default Cython reads ``x: float``
  as a C double and turns a wrong-typed kwarg's clear ``ValueError`` into a ``TypeError``; with it off the compiled
  code keeps Python's semantics, and the test suite run on the compiled tree passes except the three tests that
  read a module's source through ``module.__file__``, which is then the ``.so``).
* Rows: issue 17's env-only loop (``train_throughput.env_only_rate``: ``env_loop.play_random`` on seeds from
  ``env_loop.COUNTED_SEEDS``, the rate over ``--seconds`` of CPU time) and MLP training (``train_throughput.training_rate``,
  ``16 x 4`` episodes a step), each in a fresh process per tree, the trees interleaved in every round.
* Needs Cython (``pip install cython``) and a C compiler; the build takes about 3 minutes on 2 cores.

    python benchmarks/compiled_build.py                         # 3 rounds, about 15 minutes
    python benchmarks/compiled_build.py --rounds 1 --no-training
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = Path(__file__).resolve().parent
ORIG = "f01aa3b"      # the code of the "today" figures
COMPILED = [
    "marl_llm_envs/core.py", "marl_llm_envs/fast_rng.py", "marl_llm_envs/text.py", "marl_llm_envs/registry.py",
    "marl_llm_envs/envs/poker.py", "marl_llm_envs/envs/kuhn_poker/env.py", "marl_llm_envs/envs/voting.py",
    "marl_llm_envs/envs/hanabi.py", "marl_llm_envs/tasks/__init__.py", "marl_llm_envs/tasks/arithmetic.py",
    "baselines/episode.py", "baselines/rollout/engine.py", "baselines/rollout/job.py", "baselines/rollout/branches.py",
    "baselines/policies/mlp.py", "baselines/policies/base.py", "baselines/credit/base.py",
    "baselines/credit/broadcast.py", "baselines/train/loop.py", "baselines/train/update.py",
    "baselines/train/logging.py", "baselines/train/learners.py", "baselines/train/loss.py",
]   # the issue-45 splits moved code out of engine.py (job.py, branches.py) and loop.py (logging.py): compiled with it
SETUP = """
import sys
from setuptools import setup
from Cython.Build import cythonize
setup(ext_modules=cythonize(sys.argv[1:], compiler_directives={"language_level": 3, "annotation_typing": False},
                            nthreads=2, quiet=True),
      script_args=["build_ext", "--inplace", "-j", "2"])
"""
# one row in a fresh process: the tree under test first on sys.path, the harness from this checkout
ROW = """
import argparse, json, sys
sys.path.insert(0, {bench!r})
import train_throughput as tt
sys.path.insert(0, {tree!r})
import marl_llm_envs
assert marl_llm_envs.__file__.startswith({tree!r}), marl_llm_envs.__file__
import torch
torch.set_num_threads(1)
from env_loop import COUNTED_SEEDS
env_id, kwargs = {env_id!r}, {kwargs!r}
out = {{"env_only": tt.env_only_rate(env_id, kwargs, {seconds!r}, {text!r}, COUNTED_SEEDS)[0]}}
if {training!r}:
    tt.training_rate("kuhn_poker-v0", {{}}, argparse.Namespace(tasks=1, group_size=1, steps=1))   # imports
    out["training"] = tt.training_rate(env_id, kwargs, argparse.Namespace(tasks=16, group_size=4, steps={steps!r}))[0]
print(json.dumps(out))
"""


def _worktree(commit: str, where: Path) -> Path:
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(where), commit], check=True,
                   capture_output=True)
    return where


def _row(tree: Path, env_id: str, kwargs: dict, args, text: bool, training: bool) -> dict:
    code = ROW.format(bench=str(BENCH), tree=str(tree), env_id=env_id, kwargs=kwargs, seconds=args.seconds,
                      text=text, training=training, steps=args.steps)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=1800)
    if r.returncode != 0:
        raise SystemExit(f"a row failed in {tree} ({env_id} {kwargs}):\n{r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=float, default=2.0, help="CPU seconds of each env-only row")
    p.add_argument("--steps", type=int, default=20, help="training steps timed in each training row")
    p.add_argument("--no-training", action="store_true", help="env-only rows only")
    p.add_argument("--orig", default=ORIG, help=f"the anchor commit (default {ORIG}, the issue's code)")
    args = p.parse_args()
    try:
        import Cython
    except ImportError:
        print("needs Cython: pip install cython", file=sys.stderr)
        raise SystemExit(2)
    from train_throughput import MLP_ENVS, _cpu_name, row_name

    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()
    scratch = Path(tempfile.mkdtemp(prefix="compiled_build_"))
    try:
        pure = _worktree("HEAD", scratch / "pure")
        compiled = _worktree("HEAD", scratch / "compiled")
        orig = _worktree(args.orig, scratch / "orig")
        print(f"# A Cython build of the unchanged sources against pure Python (issue 17) "
              f"({datetime.datetime.now().isoformat(timespec='seconds')})\n")
        print(f"- machine: {platform.platform()}, {os.cpu_count()} CPU cores, {_cpu_name()}; Python "
              f"{platform.python_version()}, Cython {Cython.__version__}")
        print(f"- command: python benchmarks/compiled_build.py {' '.join(sys.argv[1:])}")
        print(f"- code: pure and compiled = HEAD {head}, orig = {args.orig} (env-only with text, its only mode); "
              f"{len(COMPILED)} modules compiled")
        build = subprocess.run([sys.executable, "-c", SETUP, *COMPILED], cwd=compiled, capture_output=True,
                               text=True)
        if build.returncode != 0:
            raise SystemExit(f"the Cython build failed:\n{build.stderr[-3000:]}")
        built = sum(1 for q in compiled.rglob("*.so") if "build" not in q.relative_to(compiled).parts)
        print(f"- built {built} extension modules; {args.rounds} rounds, trees interleaved in each\n")
        rows: dict[tuple[str, str], dict[str, list[float]]] = {}
        for _ in range(args.rounds):
            for env_id, kwargs in MLP_ENVS:
                name = row_name(env_id, kwargs)
                for label, tree, text, train in (("orig", orig, True, False), ("pure", pure, False, True),
                                                 ("compiled", compiled, False, True)):
                    got = _row(tree, env_id, kwargs, args, text, train and not args.no_training)
                    for k, v in got.items():
                        rows.setdefault((name, label), {}).setdefault(k, []).append(v)
        med = {key: {k: statistics.median(v) for k, v in d.items()} for key, d in rows.items()}
        print("Medians over the rounds: env-only in steps per CPU-second (orig with text; pure and compiled "
              "without), training in decisions per CPU-second.\n")
        print("| env | orig env-only | pure env-only | compiled env-only | pure / orig | compiled / orig | "
              "pure training | compiled training | pure share | compiled share |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for env_id, kwargs in MLP_ENVS:
            name = row_name(env_id, kwargs)
            o, pu, co = med[(name, "orig")], med[(name, "pure")], med[(name, "compiled")]
            cells = [f"{o['env_only']:,.0f}", f"{pu['env_only']:,.0f}", f"{co['env_only']:,.0f}",
                     f"{pu['env_only'] / o['env_only']:.2f}x", f"{co['env_only'] / o['env_only']:.2f}x"]
            if "training" in pu:
                cells += [f"{pu['training']:,.0f}", f"{co['training']:,.0f}",
                          f"{100 * pu['training'] / pu['env_only']:.0f}%",
                          f"{100 * co['training'] / co['env_only']:.0f}%"]
            else:
                cells += ["-"] * 4
            print(f"| {name} | " + " | ".join(cells) + " |")
        print("\nPer round (env-only, steps per CPU-second):\n")
        for (name, label), d in rows.items():
            print(f"- {name}, {label}: " + ", ".join(f"{v:,.0f}" for v in d["env_only"]))
    finally:
        for sub in ("pure", "compiled", "orig"):
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(scratch / sub)],
                           capture_output=True)
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
