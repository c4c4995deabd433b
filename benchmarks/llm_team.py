"""Issue 43 item 3: an LLM team where both roles learn, and credit methods compared on it, paired over seeds.

The setting: ``think_solve-v0`` discrete, ``clue_pool="words"`` (no copy shortcut: the menu is permuted per episode,
the hint names a word, held-out words at evaluation), clue accuracy 0.9; SmolLM2-135M in choice mode with one LoRA
adapter per role on every layer. The recipe (RESULTS.md, "Both SmolLM2 roles learn the clue task"):

* a curriculum: the scripted thinker relays its clue for the first ``--relay-steps`` steps
  (``--partners thinker=reference:N``), then the thinker's own (untrained) adapter plays and both roles learn;
* ``--alternate-every K`` (off by default): one role learns at a time, switching every K steps (with K = 20 the
  solver in 0-19, the thinker alone in 20-39 against the solver that reads, the solver in 40-59); measured on two
  seeds, the thinker did not learn to pass its clue in its 20 updates (RESULTS.md, "Alternating updates");
* ``--hint-required`` (off by default): the env's ``hint_optional=False``, the thinker's menu without ``[none]``
  and its prompt in the solver's layout, the layout the thinker began to learn (RESULTS.md, "A thinker prompt
  that begins to learn its look-up");
* ``--tasks 32 --group 8``, lr 1e-3 and ``--micro-batch-tokens 1024`` (memory: two runs side by side);
* the method label ``broadcast-maxrl`` is broadcast with ``{"std": "mean"}`` (MaxRL's ``(R - mean) / mean``),
  ``broadcast-drgrpo`` broadcast with ``{"std": None}`` (Dr. GRPO's ``R - mean``: the exploratory arm that asks
  whether MaxRL's 1 / mean group weighting is what keeps the thinker's first update from collapsing);
  ``first-bmaxrl-then-ccpo_v2`` and ``first-ccpo_v2-then-bmaxrl`` (the first-update probe,
  :mod:`benchmarks.credit_switch`) take one method's advantages for the first update and the other's after; any other
  label is a credit method with its own defaults (``broadcast``: GRPO's ``(R - mean) / std``).

* ``--solver-steps N`` (off by default): the campaign's layout (RESULTS.md, "Credit methods on the thinker's phase").
  The solver's phase does not depend on the thinker's credit method (the scripted thinker relays its clue and is not
  trained), so it runs once per seed and every method shares it: ``OUT/_solver/seed<k>``, ``broadcast-maxrl``, the
  solver alone for N steps on the relayed clue. Each method's run then starts from its last checkpoint
  (``--init-from``) with the solver frozen (``--frozen solver``) and trains the thinker alone for ``--steps`` steps;
  its ``eval_start`` is the shared phase's end, so "updates" in the report are the thinker's. ``--relay-steps`` and
  ``--alternate-every`` do not apply. The solver's turns are not trained, so ``coma`` plays its resample branches for
  the thinker only (``{"roles": ["thinker"]}``: the thinker's advantages are the same, the solver's branches would
  be wasted), and, in either layout, plays at most 256 rows at once (``--rollout-batch 256``: its 1,024-row calls
  took 15 GB and were killed for memory beside two other runs; the other methods' calls are 256 rows or fewer, so
  the flag would change nothing of theirs).
  A campaign spread over machines: a finished thinker-phase run is kept by its ``metrics.jsonl`` alone, so copying
  those (and ``config.json``) back into ``OUT/<method>/seed<k>`` skips it; a solver phase is needed only as the
  starting weights of runs still to train, and is trained again where its checkpoint is missing (the same seed gives
  the same weights, bit for bit: checked on seeds 1 and 2); its metrics without its checkpoint are refused by name.

* ``--fidelity`` (with ``--solver-steps``): credit fidelity where the campaign's thinker phase starts. Per seed, at
  the weights its shared solver phase ended with (the solver reads the clue, the thinker is untrained), one training
  batch (``--tasks`` x ``--group``, the seeds training would use) is played once with the ground truth's branches
  and once per method with its own; each method's thinker advantages are scored against the exact true advantage
  ``A*`` of every thinker turn (:mod:`baselines.fidelity`; the solver is frozen, so only the thinker's turns count),
  with the ``shuffled`` control. Per seed results are kept in ``OUT/fidelity/seed<k>.json`` (a later call measures
  only new seeds); ``OUT/fidelity/fidelity_seeds_<seeds>.md`` has the table over the seeds asked and the paired
  verdicts of each method against the first of ``--methods`` (cluster bootstrap over task groups, Holm).

Every ``--eval-every`` steps the trainer logs the exact held-out evaluation (``eval/...`` in ``metrics.jsonl``: team
reward, P(follow), P(pass), I(clue; message), on ``--eval-episodes`` held-out seeds and the test split's words), and
``eval_start/...`` for the untrained team. Runs are kept in ``--out/<method>/seed<k>`` and reused by a later call (a run
stopped part-way is resumed, ``--resume``), ``--jobs`` at a time, each a process of its own with one torch thread.

    OMP_NUM_THREADS=1 python benchmarks/llm_team.py --methods broadcast-maxrl,ccpo_v2,loo,coma --seeds 0-4 \\
        --out runs/llm_team --jobs 2
    OMP_NUM_THREADS=1 python benchmarks/llm_team.py --hint-required --solver-steps 20 --steps 20 --eval-every 5 \
        --methods broadcast-maxrl,ccpo_v2,loo,coma --seeds 1-10 --out runs/llm_team_credit --jobs 2   # the campaign
    OMP_NUM_THREADS=1 python benchmarks/llm_team.py --hint-required --solver-steps 20 --fidelity \
        --methods broadcast-maxrl,ccpo_v2,loo,coma --seeds 1-4 --out runs/llm_team_credit    # fidelity at its start
    python benchmarks/llm_team.py --report runs/llm_team        # the tables of what has finished so far
    python benchmarks/llm_team.py --report benchmarks/pilots/llm_team_credit --runs   # and a row per run
    python benchmarks/llm_team.py --report runs/llm_team_credit --seeds 1-10 --recheck 11-16   # the re-check
    python benchmarks/llm_team.py --model tiny --steps 4 --relay-steps 2 --eval-every 2 --eval-episodes 2 \\
        --tasks 2 --group 2 --methods broadcast-maxrl,broadcast --seeds 0-1 --out /tmp/llm_team   # seconds

The report: per method, the mean over seeds of each checkpoint (and ``n``, the seeds finished); each seed's start
and end per method; then at the last
checkpoint (``--at K``: after K updates) every method against its own untrained start and against the first method of
``--methods``, on the held-out team reward (``--metric p_follow`` etc.), paired by training seed (the mean difference,
its 95% t-interval, the exact sign-flip p), with Holm over every comparison printed: "above"/"below" only where the Holm
p is below 0.05 and the interval excludes 0, else "not separated". Only seeds both sides finished are paired. The
exact sign-flip p of n seeds is at least 2 / 2^n: 5 seeds can never go below 0.0625, so a verdict needs 6 seeds for one
comparison and 8 for four under Holm (a campaign of "5 seeds" cannot separate anything with this test). The family
is ``--methods``' (default: the campaign's four): a run of another label under DIR (an exploratory arm) is compared
only when named there. ``--seeds`` restricts the report to those seeds' runs.

``--recheck SEEDS`` (with ``--report`` and ``--seeds``): the re-check fixed before seeds 6-10 finished (RESULTS.md,
"The campaign's re-check on fresh seeds"): the comparisons that separate on ``--seeds`` are tested on the fresh
``SEEDS`` alone, paired, with the exact sign-flip test one-sided in the direction found and Holm over them; the table
says how many fresh seeds the design needs (the fewest n with k / 2^n < 0.05 for k comparisons).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.llm_team_report import METRICS, curves, plot, read_metrics, recheck, report, runs_table

__all__ = ["METRICS", "campaign", "command", "curves", "fidelity", "main", "plot", "read_metrics", "recheck", "report",
           "runs_table"]

ENV_KWARGS = {"thinker_clue_accuracy": 0.9, "clue_pool": "words"}
VARIANTS = {"broadcast-maxrl": ("broadcast", {"std": "mean"}),     # MaxRL: (R - mean) / mean
            "broadcast-drgrpo": ("broadcast", {"std": None})}      # Dr. GRPO: R - mean, no scaling
SWITCH = "benchmarks.credit_switch:FirstThen"    # the first-update probe: one method's first update, another's after
VARIANTS |= {"first-bmaxrl-then-ccpo_v2": (SWITCH, {"first": "broadcast", "first_options": {"std": "mean"},
                                                    "then": "ccpo_v2", "steps": 1}),
             "first-ccpo_v2-then-bmaxrl": (SWITCH, {"first": "ccpo_v2", "then": "broadcast",
                                                    "then_options": {"std": "mean"}, "steps": 1})}
THINKER_PHASE = {"coma": {"roles": ["thinker"]}}     # with the solver frozen (--solver-steps): options added
ROLLOUT_BATCH = {"coma": 256}   # the trainer's --rollout-batch: coma's 4 resamples a turn made 1,024-row calls (15 GB)
SOLVER_RUN = "_solver"                               # OUT/_solver/seed<k>: the shared solver phase


def env_kwargs(args) -> dict:
    """The env's kwargs of the recipe (``--hint-required``: ``hint_optional=False``)."""
    return {**ENV_KWARGS, "hint_optional": False} if args.hint_required else dict(ENV_KWARGS)


def credit_of(method: str, thinker_phase: bool) -> tuple[str, dict]:
    """A method label's credit method and options, as its runs train it (and ``--fidelity`` measures it)."""
    credit, options = VARIANTS.get(method, (method, {}))
    return credit, {**options, **THINKER_PHASE.get(credit, {})} if thinker_phase else dict(options)


def command(method: str, seed: int, args, out: Path, resume: bool, init_from: Path | None = None) -> list[str]:
    """The trainer's command line for one run of the recipe; with ``init_from`` (the shared solver phase's run) the
    thinker's phase: the weights from there, the solver frozen, no scripted thinker, no alternation."""
    credit, options = credit_of(method, init_from is not None)
    if init_from is not None:
        schedule = ["--init-from", str(init_from), "--frozen", "solver"]
    else:
        schedule = ["--partners", f"thinker=reference:{args.relay_steps}",
                    *(["--alternate-every", str(args.alternate_every)] if args.alternate_every else [])]
    cmd = [sys.executable, "-m", "baselines.train", "--env", "think_solve-v0", "--action-mode", "discrete",
           "--model", args.model, "--mode", "choice", "--adapters", "per_role",
           "--env-kwargs", json.dumps(env_kwargs(args)),
           "--credit", credit, "--credit-options", json.dumps(options),
           "--tasks-per-step", str(args.tasks), "--group-size", str(args.group), "--lr", str(args.lr),
           *schedule, "--steps", str(args.steps), "--micro-batch-tokens", str(args.micro_batch_tokens),
           *(["--rollout-batch", str(ROLLOUT_BATCH[credit])] if credit in ROLLOUT_BATCH else []),
           "--eval-every", str(args.eval_every), "--eval-episodes", str(args.eval_episodes), "--seed", str(seed),
           "--no-tensorboard", "--no-progress", "--out", str(out)]
    return cmd + (["--resume"] if resume else [])


def has_checkpoint(run: Path) -> bool:
    """Whether ``run`` has a checkpoint the trainer's ``--resume`` can continue from."""
    return (run / "checkpoints").is_dir() and any((run / "checkpoints").iterdir())


def solver_args(args):
    """The shared solver phase's settings: ``--solver-steps`` steps, all of them with the scripted thinker, and one
    held-out evaluation at the end (the untrained thinker's team stays near chance there: RESULTS.md)."""
    return argparse.Namespace(**{**vars(args), "steps": args.solver_steps, "relay_steps": args.solver_steps,
                                 "alternate_every": 0, "eval_every": args.solver_steps})


def train(method: str, seed: int, args, init_from: Path | None = None, run: Path | None = None) -> str:
    run = run or Path(args.out) / method / f"seed{seed}"
    rows = read_metrics(run)
    if rows and rows[-1].get("step") == args.steps - 1:
        return f"{method} seed {seed}: kept"
    resume = has_checkpoint(run)
    run.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    with open(run / "train.log", "a", encoding="utf-8") as log:
        rc = subprocess.run(command(method, seed, args, run, resume, init_from), cwd=ROOT, env=env, stdout=log,
                            stderr=subprocess.STDOUT, check=False).returncode
    if rc:
        raise RuntimeError(f"{method} seed {seed}: the trainer exited with {rc}; see {run / 'train.log'}")
    return f"{method} seed {seed}: trained"


def solver_phase(seed: int, args) -> str:
    """Train (or keep) ``seed``'s shared solver phase; its last checkpoint is what the thinker's phases start from,
    so a finished run without it (its metrics copied from elsewhere) is refused by name."""
    run = Path(args.out) / SOLVER_RUN / f"seed{seed}"
    first = solver_args(args)
    rows = read_metrics(run)
    if rows and rows[-1].get("step") == first.steps - 1 and \
            not (run / "checkpoints" / f"step-{first.steps:07d}" / "meta.json").is_file():
        raise ValueError(f"{run} has its metrics but not its last checkpoint (checkpoints/step-{first.steps:07d}), "
                         "which the thinker's phases start from: delete the folder to train it again (the same "
                         "seed gives the same weights)")
    return train("broadcast-maxrl", seed, first, run=run).replace("broadcast-maxrl", "solver phase", 1)


def stranded(run: Path, steps: int) -> bool:
    """Whether ``run`` holds a run stopped before its first checkpoint: metrics of unfinished steps and nothing to
    resume from (the trainer would refuse it, a new run must not append to it)."""
    rows = read_metrics(run)
    return bool(rows) and rows[-1].get("step") != steps - 1 and not has_checkpoint(run)


def campaign(methods: list[str], seeds: list[int], args, say=print) -> list[str]:
    """Every (method, seed) run, ``--jobs`` at a time. With ``--solver-steps`` each seed's shared solver phase runs
    first and its methods wait for it; the solver phase of seed k + 1 is queued before the methods of seed k, so a
    worker rarely waits, and seeds finish one after another (a campaign stopped part-way has whole seeds). Each
    run's line (kept / trained) goes to ``say`` when it ends; the lines are returned in the order of submission.
    A run folder stopped before its first checkpoint is refused by name before anything starts (not hours later,
    when the queue reaches it)."""
    out = Path(args.out)
    runs = [(out / m / f"seed{s}", args.steps) for s in seeds for m in methods]
    if args.solver_steps:
        runs += [(out / SOLVER_RUN / f"seed{s}", args.solver_steps) for s in seeds]
    bad = [str(r) for r, steps in runs if stranded(r, steps)]
    if bad:
        raise ValueError(f"{', '.join(bad)}: stopped before a first checkpoint, so nothing can be resumed; delete "
                         "each such folder to train its run again")

    def told(line: str) -> str:
        say(line)
        return line

    with ThreadPoolExecutor(args.jobs) as pool:
        if not args.solver_steps:
            return list(pool.map(lambda r: told(train(*r, args)), [(m, s) for s in seeds for m in methods]))
        phase = {}

        def solver(s: int):
            return told(solver_phase(s, args))

        def thinker(m: str, s: int) -> str:
            phase[s].result()            # submitted (so started) before this: no deadlock with a full pool
            return told(train(m, s, args, init_from=Path(args.out) / SOLVER_RUN / f"seed{s}"))

        jobs = []
        for s in seeds[:1]:
            phase[s] = pool.submit(solver, s)
            jobs.append(phase[s])
        for s, following in zip(seeds, [*seeds[1:], None]):
            if following is not None:
                phase[following] = pool.submit(solver, following)
                jobs.append(phase[following])
            jobs += [pool.submit(thinker, m, s) for m in methods]
        return [j.result() for j in jobs]


def fidelity_spec(seed: int, methods: list[str], args) -> dict:
    """What :func:`leaderboard.fidelity.measure` plays for ``seed``: one training batch at the weights of the seed's
    shared solver phase, the solver frozen (only the thinker's turns are scored), every method as the thinker's
    phase runs it, and the ``shuffled`` control."""
    from leaderboard.fidelity_small import CONTINUATIONS  # A* is exact here: the minimum split halves need

    labels = list(dict.fromkeys([*methods, "shuffled"]))
    variants = {m: list(credit_of(m, thinker_phase=True)) for m in labels}
    return {"suite": "llm_team", "family": "message_credit", "knob_name": "thinker_clue_accuracy",
            "setting": "think_solve/words/a0.9" + ("/hint_required" if args.hint_required else ""), "knob": 0.9,
            "env_id": "think_solve-v0", "env_kwargs": env_kwargs(args), "action_mode": "discrete", "model": args.model,
            "mode": "choice", "adapters": "per_role", "lr": args.lr, "partners": "", "frozen": "solver",
            "tasks_per_step": args.tasks, "group_size": args.group, "seed": int(seed), "batches": 1,
            "continuations": CONTINUATIONS, "methods": labels, "variants": variants, "policy": "run:solver-phase",
            "run": str(Path(args.out) / SOLVER_RUN / f"seed{seed}"), "checkpoints": [], "by_role": False}


def fidelity(methods: list[str], seeds: list[int], args, say=print) -> str:
    """Credit fidelity at the start of the thinker's phase (``--fidelity``): each seed measured once
    (``OUT/fidelity/seed<k>.json``, measured again if its settings or methods were others; its solver phase trained
    first where missing), then the table and the verdicts over the seeds asked, written to
    ``OUT/fidelity/fidelity_seeds_<seeds>.md`` and returned. A kept result needs no checkpoint: copy the json files
    into a new ``OUT/fidelity`` (the same ``--out``: the spec names its run folder) and they are reused."""
    from baselines.outputs import replace_text
    from leaderboard.fidelity import measure, summarize, table, verdicts

    folder = Path(args.out) / "fidelity"
    folder.mkdir(parents=True, exist_ok=True)
    results = []
    for s in seeds:
        spec, path = fidelity_spec(s, methods, args), folder / f"seed{s}.json"
        kept = None
        if path.is_file():
            try:
                kept = json.loads(path.read_text(encoding="utf-8"))
                same = kept["spec"] == {k: v for k, v in spec.items() if k != "methods"} and \
                    set(kept["methods"]) == set(spec["methods"])
            except (ValueError, KeyError, TypeError, AttributeError) as e:
                raise ValueError(f"{path} is not a fidelity result ({type(e).__name__}: {e}); delete it to measure "
                                 f"seed {s} again") from None
            if not same:
                say(f"fidelity seed {s}: {path} was measured with other settings or methods; measuring again")
                kept = None
        if kept is None:
            say(solver_phase(s, args))
            kept = measure(spec)
            replace_text(path, json.dumps(kept, default=float) + "\n")
            say(f"fidelity seed {s}: measured in {kept['wall_s']:.0f} s")
        else:
            say(f"fidelity seed {s}: kept")
        results.append(kept)
    summary = summarize(results)
    lines = verdicts(summary, methods[0], methods[1:] + ["shuffled"], per_setting=True)
    head = (f"Credit fidelity of the thinker's turns where its phase starts (the solver phase's weights), seeds "
            f"{sorted(r['spec']['seed'] for r in results)}, one training batch each:")
    how = ("Verdicts (paired over the same turns; 95% cluster bootstrap over task groups; Holm's correction over the "
           "comparisons printed):")
    text = "\n".join([head, "", table(summary), "", how, *lines, "", offset_table(results)])
    replace_text(folder / f"fidelity_seeds_{'_'.join(str(s) for s in seeds)}.md", text + "\n")
    return text


def offset_share(adv, cluster) -> float:
    """How much of a set of advantages is a per-group offset: mean |group mean| / mean |A| over the task groups
    (``cluster``). 0 for advantages centred in every group (broadcast, ccpo_v2), 1 when every turn of a group gets
    the same value. An offset shared by every turn of one prompt has no expected gradient (it multiplies the mean of
    the score function, 0) but moves each sampled message alike: noise. The exact advantage's own share is not 0 (a
    group's eight sampled turns need not average 0), so it is the reference."""
    groups: dict[int, list[float]] = {}
    for c, a in zip(cluster, adv):
        groups.setdefault(int(c), []).append(float(a))
    total = sum(abs(a) for a in adv) / max(len(adv), 1)
    shift = sum(abs(sum(g) / len(g)) for g in groups.values()) / max(len(groups), 1)
    return shift / total if total > 0 else float("nan")


def offset_table(results: list[dict]) -> str:
    """Per seed, each method's :func:`offset_share` of its thinker advantages, and the exact advantage's."""
    methods = list(results[0]["methods"])
    lines = ["Per-group offset share of the advantages (mean |group mean| / mean |A|; A*: the exact advantage's):", "",
             "| seed | A* | " + " | ".join(methods) + " |", "|---:|---:|" + "---:|" * len(methods)]
    for r in results:
        cluster = r["truth"]["cluster"]
        cells = [offset_share(r["truth"]["a"], cluster)] + [offset_share(r["methods"][m]["adv"], cluster)
                                                            for m in methods]
        lines.append(f"| {r['spec']['seed']} | " + " | ".join(f"{v:.2f}" for v in cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--methods", default="broadcast-maxrl,ccpo_v2,coma,loo",
                   help="credit methods (the first is the reference of the comparisons); broadcast-maxrl = broadcast "
                        'with {"std": "mean"}')
    p.add_argument("--seeds", default=None, help="the seeds to train (default 0-4); with --report: only these "
                                                 "seeds' runs are compared (default: every run under DIR)")
    p.add_argument("--model", default="smollm2-135m")
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--relay-steps", type=int, default=20, help="steps the scripted thinker plays first (N)")
    p.add_argument("--alternate-every", type=int, default=0, metavar="K",
                   help="the trainer's --alternate-every: one role learns at a time, switching every K steps (step k "
                        "trains the (k // K)-th of the roles learning then, by name, cyclically: with 20 relayed steps "
                        "and K = 20, the solver in 0-19, the thinker in 20-39, the solver in 40-59); 0: every role "
                        "learning then learns at every step")
    p.add_argument("--solver-steps", type=int, default=0, metavar="N",
                   help="the campaign's layout: per seed, one shared run trains the solver alone for N steps on the "
                        "scripted thinker's relayed clue (OUT/_solver/seed<k>); then each method's run starts from it "
                        "with the solver frozen and trains the thinker alone for --steps steps (--relay-steps and "
                        "--alternate-every do not apply); 0: one run per method and seed, as before")
    p.add_argument("--fidelity", action="store_true",
                   help="with --solver-steps: measure the methods' credit fidelity on the thinker's turns at each "
                        "seed's solver-phase weights (OUT/fidelity/) instead of training the thinker's phase")
    p.add_argument("--hint-required", action="store_true",
                   help="the env's hint_optional=False: the thinker's menu has no [none] and its prompt takes the "
                        "solver's layout (RESULTS.md, \"A thinker prompt that begins to learn its look-up\")")
    p.add_argument("--tasks", type=int, default=32)
    p.add_argument("--group", type=int, default=8)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--micro-batch-tokens", type=int, default=1024,
                   help="the trainer's gradient accumulation budget: at 4096 a both-roles step of 32 x 8 episodes "
                        "peaks at about 15 GB, so two runs do not fit beside each other in 24 GB")
    p.add_argument("--eval-every", type=int, default=10)
    p.add_argument("--eval-episodes", type=int, default=32)
    p.add_argument("--jobs", type=int, default=1, help="runs at a time (one process each)")
    p.add_argument("--out", default="runs/llm_team")
    p.add_argument("--report", metavar="DIR", help="print the tables of the runs under DIR and stop")
    p.add_argument("--at", type=int, help="with --report: compare at this many updates (default: each method's last "
                                          "checkpoint), e.g. 20 for the end of the relayed phase")
    p.add_argument("--metric", default="team_reward/team", choices=METRICS, help="with --report: what is compared")
    p.add_argument("--runs", action="store_true", help="with --report: also a row per run (the metric at each "
                                                       "checkpoint, P(pass), I, the thinker's entropy, wall time)")
    p.add_argument("--plot", metavar="PNG", help="with --report: also draw every run's held-out curve, a panel per "
                                                 "method (each seed thin, the mean thick), into PNG")
    p.add_argument("--recheck", metavar="SEEDS", help="with --report and --seeds: re-check on these fresh seeds the "
                                                      "comparisons that separate on --seeds (one-sided in the "
                                                      "direction found, Holm over them)")
    args = p.parse_args(argv)
    methods = [m for m in args.methods.split(",") if m]
    from benchmarks.both_roles_pilot import seed_list  # "0-4" or "0,3" -> the seeds

    if args.report:                  # the family is --methods' (an exploratory arm under DIR joins only when named)
        seeds = seed_list(args.seeds) if args.seeds else None
        if args.recheck:
            if seeds is None:
                p.error("--recheck needs --seeds: the seeds whose verdicts are re-checked")
            print(recheck(Path(args.report), methods, seeds, seed_list(args.recheck), at=args.at, metric=args.metric))
            return 0
        print(report(Path(args.report), methods, at=args.at, metric=args.metric, seeds=seeds))
        if args.runs:
            print("\n" + runs_table(Path(args.report), methods, metric=args.metric))
        if args.plot:
            print("\n" + str(plot(Path(args.report), Path(args.plot), methods, args.metric, seeds)))
        return 0
    if args.recheck:
        p.error("--recheck goes with --report")
    args.seeds = args.seeds or "0-4"
    if min(args.steps, args.tasks, args.group, args.eval_every, args.eval_episodes, args.jobs) < 1 or \
            args.solver_steps < 0 or args.alternate_every < 0 or \
            not (args.solver_steps or 0 <= args.relay_steps <= args.steps):
        p.error("--steps, --tasks, --group, --eval-every, --eval-episodes, --jobs >= 1, 0 <= --relay-steps <= "
                "--steps (without --solver-steps), --alternate-every >= 0 and --solver-steps >= 0")

    if args.fidelity:
        if not args.solver_steps:
            p.error("--fidelity measures at the shared solver phase's weights: give --solver-steps")
        print(fidelity(methods, seed_list(args.seeds), args, say=lambda line: print(line, flush=True)))
        return 0
    campaign(methods, seed_list(args.seeds), args, say=lambda line: print(line, flush=True))
    print(report(Path(args.out), methods))
    return 0


if __name__ == "__main__":
    sys.exit(main())
