"""python -m leaderboard: evaluate a player or a credit method under a fixed protocol, check and store the result,
and rank the entries.

    python -m leaderboard evaluate --protocol policy --player reference --method reference-bots --out sub/
    python -m leaderboard validate sub/ [--sample N] [--reproduce]
    python -m leaderboard submit sub/
    python -m leaderboard show [--wide]
    python -m leaderboard render [--store board/entries] [--out board/]
    python -m leaderboard benchmark-credit broadcast --tier micro --quick
    python -m leaderboard fidelity loo --baselines broadcast,shuffled --quick
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Sequence

from baselines.credit import list_credits
from baselines.outputs import escape_controls, folder_problem
from baselines.train.config import BACKENDS, DTYPES, read_run_config
from leaderboard import fidelity
from leaderboard.benchmark import BASELINES, benchmark_credit
from leaderboard.evaluate import evaluate
from leaderboard.private import evaluate_private
from leaderboard.protocol import ProtocolError, list_protocols, load_protocol
from leaderboard.render import render, show
from leaderboard.reproduce import reproduce
from leaderboard.store import DEFAULT_STORE, submit
from leaderboard.suite import COLLAPSE_THRESHOLD, MANIFEST, list_suites, load_suite, reproduce_suite, submit_suite, \
    suite_entry, validate_suite
from leaderboard.validate import Limits, SubmissionError, validate

BOARD_DIR = DEFAULT_STORE.parent          # render writes LEADERBOARD.md and index.html here
_STORE_HELP = f"the entry store (default: {DEFAULT_STORE}, in the current folder)"


def _players(protocol, specs: Sequence[str], runs: Sequence[str]) -> dict[str, list[str]]:
    env_ids = sorted({t.env_id for t in protocol.tasks})
    out: dict[str, list[str]] = {}
    default = None
    for s in specs:
        env, sep, rest = s.partition("=")
        if sep and env in env_ids:
            out.setdefault(env, []).append(rest)
        elif sep and "-v" in env and ":" not in env:
            raise ValueError(f"--player {s}: {env} is not an env of {protocol.key} ({', '.join(env_ids)})")
        elif default is not None:       # the last one would win, and the first would never be looked at
            raise ValueError(f"--player: two players for every env ({default!r} and {s!r}); give one, and "
                             f"ENV_ID=SPEC for the envs that differ")
        else:
            default = s
    if runs and specs:                  # --runs names every env's players: a --player would be dropped
        raise ValueError("--runs gives the players of a credit-track protocol (its trained runs); leave out --player")
    by_seed: dict[str, dict[int, str]] = {}
    for run in runs:         # credit track: trainer run folders, one per env and training seed of the protocol
        try:
            cfg = read_run_config(Path(run)).config
        except ValueError as e:
            raise ValueError(f"--runs {run}: {e}") from None
        seeds = by_seed.setdefault(cfg.env, {})
        if cfg.seed in seeds:
            raise ValueError(f"--runs: two runs of {cfg.env} with seed {cfg.seed}: {seeds[cfg.seed]}, {run}")
        seeds[cfg.seed] = f"checkpoint:{run}"
    if by_seed:
        if protocol.train is None:
            raise ValueError(f"--runs is for credit-track protocols; {protocol.key} is a policy-track protocol")
        for env in env_ids:
            missing = [s for s in protocol.train["seeds"] if s not in by_seed.get(env, {})]
            if missing:
                raise ValueError(f"--runs: no run of {env} with training seed(s) {missing}; {protocol.key} trains "
                                 f"seeds {protocol.train['seeds']} on every env")
            out[env] = [by_seed[env][s] for s in protocol.train["seeds"]]
    if default is not None:
        for env in env_ids:
            out.setdefault(env, [default])
    return out


_TERMS = """\
words used here:
  protocol  a fixed test: the tasks (env, opponent or self-play), the evaluation seeds and, for the credit
            track, the training budget. Versioned (policy@1, credit-micro@1); list them with
            'python -m leaderboard protocols'.
  track     policy: rank a player as it is (a bot, an LLM, a checkpoint).
            credit: rank a credit-assignment method: train it under the protocol's budget with its training
            seeds, then evaluate the trained policies.
  tier      the size of a credit protocol: micro (an MLP on CPU, minutes), small (SmolLM2-135M on CPU,
            hours), gpu (a model you name, on a GPU). Each has a --quick variant with a smaller budget that
            ranks only against other quick entries.
  score     normalized per task: random play = 0, the reference policy = 1.
"""

_EXAMPLES = {
    "": """\
examples:
  python -m leaderboard benchmark-credit broadcast --tier micro --quick    # the 2-minute demo
  python -m leaderboard show                                               # the ranked tables
  python -m leaderboard evaluate --protocol policy --player reference --method reference-bots --out sub/
  python -m leaderboard validate sub/ && python -m leaderboard submit sub/
  python -m leaderboard render                   # rewrite board/LEADERBOARD.md and board/index.html
""",
    "evaluate": """\
examples:
  python -m leaderboard evaluate --protocol policy --player random --method random --out sub/
  python -m leaderboard evaluate --protocol policy --player hf:smollm2-135m --method smollm2 --out sub/
  python -m leaderboard evaluate --protocol policy --player kuhn_poker-v0=checkpoint:runs/kuhn \\
      --player reference --method my-kuhn --out sub/
  python -m leaderboard evaluate --protocol credit-micro --runs runs/*/seed* --method my-credit --out sub/
""",
    "validate": """\
examples:
  python -m leaderboard validate sub/              # replays every episode, re-derives every opponent move
  python -m leaderboard validate sub/ --sample 200 # replays 200 random episodes
  python -m leaderboard validate sub/ --reproduce  # also re-plays the claimed player (and re-trains a credit run)
""",
    "evaluate-private": """\
example:
  python -m leaderboard evaluate-private --protocol policy --player checkpoint:runs/kuhn --method my-kuhn \\
      --out private/ --submit
""",
    "submit": """\
examples:
  python -m leaderboard submit sub/
  python -m leaderboard submit sub/ --store /tmp/my-store
""",
    "show": """\
examples:
  python -m leaderboard show
  python -m leaderboard show --wide | less -S
""",
    "render": """\
examples:
  python -m leaderboard render                     # from board/entries/ into board/
  python -m leaderboard render --store /tmp/my-store --out /tmp/site
""",
    "protocols": """\
example:
  python -m leaderboard protocols
""",
    "benchmark-credit": """\
tiers:
  micro   an MLP policy on the numeric observation, discrete mode, on CPU (credit-micro; --quick: about
          2 minutes for every baseline)
  small   SmolLM2-135M in choice mode on CPU (credit-small; hours)
  gpu     the model you give with --model, on a GPU (credit-gpu): --device defaults to cuda, and the tier
          refuses to start without CUDA; --dtype bfloat16 and --backend vllm apply to every run

examples:
  python -m leaderboard benchmark-credit broadcast --tier micro --quick
  python -m leaderboard benchmark-credit loo --tier micro --baselines broadcast,none
  python -m leaderboard benchmark-credit mypkg.credit:MyMethod --tier micro --out runs/mine
  python -m leaderboard benchmark-credit dr_mas --tier gpu --model Qwen/Qwen2.5-1.5B-Instruct --submit
""",
    "fidelity": """\
examples:
  python -m leaderboard fidelity loo --baselines broadcast,shuffled --quick       # the README demo
  python -m leaderboard fidelity coma --settings voting/fraction/n8,free_riding/idle3 --jobs 2
  python -m leaderboard fidelity mypkg.credit:MyMethod --tier micro --out runs/fidelity-mine
""",
}


def build_parser() -> argparse.ArgumentParser:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(prog="python -m leaderboard", description=__doc__.split("\n\n")[0],
                                     epilog=_TERMS + "\n" + _EXAMPLES[""], formatter_class=raw)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help_: str):
        return sub.add_parser(name, help=help_, description=help_[0].upper() + help_[1:] + ".",
                              epilog=_EXAMPLES[name], formatter_class=raw)

    _evaluate_flags(command("evaluate", "play a protocol; write submission.json and episodes.jsonl"))
    _evaluate_private_flags(command("evaluate-private", "maintainer: play a submitted player on seeds drawn now "
                                                        "(private-seed mode), validate, and optionally store it"))
    _validate_flags(command("validate", "check a submission and print its scores"), "validate")
    _validate_flags(command("submit", "validate a submission and add it to the store"), "submit")
    p = command("show", "print the verdicts and the ranked tables")
    p.add_argument("--store", default=str(DEFAULT_STORE), help=_STORE_HELP)
    p.add_argument("--wide", action="store_true", help="add the model and per-task columns (wider than 120 "
                                                       "columns)")
    p = command("render", "write LEADERBOARD.md and index.html")
    p.add_argument("--store", default=str(DEFAULT_STORE), help=_STORE_HELP)
    p.add_argument("--out", default=str(BOARD_DIR), help=f"the folder to write into (default: {BOARD_DIR}, in the "
                                                         f"current folder, beside the store)")
    command("protocols", "list the protocols")
    _benchmark_flags(command("benchmark-credit", "train a credit method beside the built-in baselines under a "
                                                 "credit-track protocol, evaluate all, print the comparison"))

    fidelity.add_flags(command("fidelity", "measure credit methods against the true advantage A* of every turn at "
                                           "fixed policies (no training), over the suite's families"))
    return parser


def _evaluate_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--protocol", required=True, help=f"a protocol name ({', '.join(list_protocols())}) or a path")
    p.add_argument("--player", action="append", default=[],
                   help="random | reference | reference:NAME | hf:MODEL[:choice|generate] (e.g. hf:smollm2-135m) | "
                        "checkpoint:RUN_DIR, for every env; or ENV_ID=SPEC for one env (repeatable)")
    p.add_argument("--runs", nargs="*", default=[], help="credit track: the trainer run folders, one per env and "
                                                          "training seed of the protocol")
    p.add_argument("--method", required=True, help="the name shown on the leaderboard")
    p.add_argument("--note", default="", help="a short free-text note kept with the submission")
    p.add_argument("--greedy", action="store_true", help="play sampling policies at temperature 0")
    p.add_argument("--out", required=True, help="a new folder for the submission")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (one is shown only on a terminal)")


def _evaluate_private_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--protocol", required=True, help=f"a protocol name ({', '.join(list_protocols())})")
    p.add_argument("--player", action="append", default=[], help="the submitted player, as for evaluate")
    p.add_argument("--runs", nargs="*", default=[], help="the submitted run folders, as for evaluate")
    p.add_argument("--method", required=True, help="the entry's method name")
    p.add_argument("--count", type=int, default=None, help="how many private seeds (default: the protocol's count)")
    p.add_argument("--out", required=True, help="a new folder for the submission")
    p.add_argument("--submit", action="store_true", help="add the validated entry to the store")
    p.add_argument("--store", default=None, help="with --submit: " + _STORE_HELP)
    p.add_argument("--no-progress", action="store_true", help="no progress bar (one is shown only on a terminal)")


def _validate_flags(p: argparse.ArgumentParser, name: str) -> None:
    """The flags of ``validate`` and ``submit`` (``--full`` is validate's, ``--store`` submit's)."""
    p.add_argument("folder", help="the folder written by 'python -m leaderboard evaluate --out'")
    p.add_argument("--protocol", default=None, help="the protocol file (default: the one the submission names, "
                                                    "from leaderboard/protocols/)")
    if name == "validate":
        p.add_argument("--full", action="store_true", help="replay every episode (the default; overrides "
                                                             "--sample)")
    p.add_argument("--sample", type=int, default=None, help="replay only this many random episodes, at least 1 "
                                                            "(default: every episode)")
    p.add_argument("--reproduce", action="store_true",
                   help="also re-play episodes with the claimed player (random, reference bots, checkpoints "
                        "present here, local hf: models) and, credit track, re-train a run from the manifest; "
                        "without it the player's own moves are self-reported")
    p.add_argument("--reproduce-sample", type=int, default=None,
                   help="with --reproduce: how many episodes of a costly player (an LLM) to re-play, drawn uniformly "
                        "(default: 459, which catches a forged 1%% of the episodes with probability 0.99); a "
                        "scripted or MLP player's episodes are all re-played")
    p.add_argument("--audit-seed", type=int, default=None,
                   help="the seed of the validator's draws (which episodes to replay, runs to re-train); default: "
                        "drawn from the OS's randomness and printed, so that this flag repeats them")
    if name == "submit":
        p.add_argument("--store", default=str(DEFAULT_STORE), help=_STORE_HELP)
    p.add_argument("--max-episodes-mb", type=float, default=Limits.episodes_bytes / 2**20,
                   help="refuse an episodes.jsonl larger than this many MiB (default: %(default)s)")


def _benchmark_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("method", help=f"the method under test: a registered name ({', '.join(list_credits())}) or "
                                  f"package.module:ClassName")
    p.add_argument("--tier", default=None, choices=("micro", "small", "gpu"),
                   help="the protocol's size: micro, small or gpu (described below; default: micro)")
    p.add_argument("--quick", action="store_true", help="the tier's quick protocol (a smaller budget)")
    p.add_argument("--protocol", default=None, help="another credit-track protocol (a name or a path)")
    p.add_argument("--baselines", default=",".join(BASELINES), help="comma-separated built-in methods to compare "
                                                                      "against ('' for none; default: all of them)")
    p.add_argument("--model", default=None, help="gpu tier: the model to train (a hub id or a local "
                                                              "folder); micro and small fix their own")
    p.add_argument("--out", default="runs/benchmark-credit", help="where the runs and submissions go; a finished run "
                                                                  "found there is reused (default: %(default)s)")
    p.add_argument("--submit", action="store_true", help="add every submission to the store")
    p.add_argument("--store", default=None, help="with --submit: " + _STORE_HELP)
    p.add_argument("--export", choices=("marl-eval",), default=None, help="also write the results in this format")
    p.add_argument("--jobs", type=int, default=1, help="play the independent runs (seeds x methods x settings or envs; "
                                                        "then each method's evaluation) in N processes (the results "
                                                        "are the same as with 1)")
    p.add_argument("--ray", default=None, metavar="auto|ADDRESS|local",
                   help="play the runs over Ray (pip install 'marl-llm-envs[ray]'): auto = the running "
                        "cluster, an address, or local = a private local instance")
    p.add_argument("--no-progress", action="store_true", help="no progress output at all (bars are shown only on a "
                                                              "terminal; elsewhere one line per finished run)")
    p.add_argument("--no-fidelity", action="store_true",
                   help="a suite: skip the credit-fidelity measurement that follows the runs (the methods' advantages "
                        "against the true advantage A* at the initial policy, on the suite's families; minutes on the "
                        "micro tier) and store the entries without a fidelity field")
    p.add_argument("--device", default=None, help="where every run trains: cpu, cuda or cuda:N (default: cuda on the "
                                                  "gpu tier, which refuses to start without CUDA; cpu elsewhere)")
    p.add_argument("--dtype", default="float32", choices=DTYPES,
                   help="every run's training dtype (bfloat16: autocast; default: %(default)s)")
    p.add_argument("--backend", default="hf", choices=BACKENDS,
                   help="what plays the LLM roles' rollouts in every run: hf (the trainer's model) or vllm (a vLLM "
                        "engine synced after each update; small and gpu tiers; default: %(default)s)")


# ---------------------------------------------------------------------- the commands
def _evaluate(args: argparse.Namespace) -> None:
    protocol = load_protocol(args.protocol)
    players = _players(protocol, args.player, args.runs)
    m = evaluate(protocol, players, args.out, args.method, greedy=args.greedy, progress=not args.no_progress,
                 note=args.note)
    print(f"wrote {args.out}/submission.json and {m['episodes']['count']} episodes "
          f"({m['wall_time_s']:.1f} s); next: python -m leaderboard validate {args.out}")


def _evaluate_private(args: argparse.Namespace) -> None:
    protocol = load_protocol(args.protocol)
    players = _players(protocol, args.player, args.runs)
    v, entry = evaluate_private(protocol, players, args.out, args.method, count=args.count,
                                store=_store_to_submit(args), progress=not args.no_progress)
    seeds = v.manifest["seeds"]
    print(f"valid: {v.episodes} episodes on private seeds {seeds['eval_start']} + {seeds['eval_count']}")
    if v.reproduced is None:
        print("  the runs' training is self-reported (they cannot be re-trained here)")
    _print_task_means(v)
    if entry is not None:
        print(f"added {entry['id']} to {_store_to_submit(args)}" + (" (self-reported)" if entry["self_reported"]
                                                                     else ""))


def _store_to_submit(args: argparse.Namespace) -> str | None:
    """The store ``--submit`` adds to (``--store``, else the default); ``None`` without ``--submit``, where a
    ``--store`` would be ignored and is refused."""
    if not args.submit:
        if args.store is not None:
            raise ValueError("--store is where --submit adds the entries; without --submit nothing is added")
        return None
    return args.store if args.store is not None else str(DEFAULT_STORE)


def _suite_folder(args: argparse.Namespace) -> bool:
    """Whether ``args.folder`` is a suite submission (``benchmark-credit``'s ``OUT/<suite>/submissions/<method>``),
    which has runs, not episodes: the episode flags do not apply to it."""
    if not (Path(args.folder) / MANIFEST).is_file():
        return False
    for flag in ("sample", "reproduce_sample"):
        if getattr(args, flag, None) is not None:
            raise ValueError(f"--{flag.replace('_', '-')}: {args.folder} is a suite submission (runs, no episodes); "
                             f"--reproduce re-trains every run")
    return True


def _print_suite(e: dict, reproduced: dict | None) -> None:
    r = e["results"]
    counts = {s: [(key, r[field][s]) for key, field in (("failed", "failures"), ("collapsed", "collapses"))
                  if field in r] for s in r["settings"]}

    def runs(settings: list[str]) -> str:
        """ "k/n failed, k/n collapsed" over the runs (seed x setting) of ``settings``, as the suite's tables."""
        n = sum(len(r["settings"][s]["seeds"]) for s in settings)
        return "".join(f", {sum(dict(counts[s])[key] for s in settings)}/{n} {key}" for key, _ in counts[settings[0]])

    agg = r["aggregate"]
    print(f"valid suite submission: {e['method']} on {e['protocol']}, {len(e['manifest']['runs'])} runs, scored by "
          f"the validator against anchors it measured; aggregate {agg[0]:.3f} [{agg[1]:.3f}, {agg[2]:.3f}]"
          f"{runs(list(r['settings']))}")
    for fam, f in r["families"].items():
        print(f"  {fam}: {f['ci'][0]:.3f} [{f['ci'][1]:.3f}, {f['ci'][2]:.3f}]{runs(f['settings'])}")
    if "best" in r:
        print(f"  every score is the final policy's on the held-out seeds; a run collapsed when its best checkpoint "
              f"(chosen on half the seeds, scored on the other half) beats it by more than {COLLAPSE_THRESHOLD:g}")
    if reproduced is None:
        print("  self-reported: " + ("the shipped weights" if "best" in r else
                                     "the learning curves of self-play settings") +
              " are the submitter's until --reproduce re-trains the runs")
    else:
        print(f"  reproduced by the maintainer: {reproduced['retrained']} of {reproduced['of']} runs re-trained with "
              f"the same weights and metrics (audit seed {reproduced['audit_seed']})")


def _validate(args: argparse.Namespace) -> None:
    if _suite_folder(args):
        v = validate_suite(args.folder, suite=args.protocol)
        if args.reproduce:
            reproduce_suite(v, audit_seed=args.audit_seed)
        _print_suite(suite_entry(v), v.reproduced)
        return
    reproduce_sample = _reproduce_sample(args)
    v = validate(args.folder, protocol=args.protocol, full=args.full, sample=args.sample, limits=_limits(args),
                 audit_seed=args.audit_seed)
    if args.reproduce:
        reproduce(v, sample=reproduce_sample)
    print(f"valid: {v.episodes} episodes, {v.replayed} replayed, {v.rederived} opponent moves "
          f"re-derived, protocol {v.protocol.key}")
    _print_reproduced(v, args)
    _print_task_means(v)


def _print_reproduced(v, args: argparse.Namespace) -> None:
    """What --reproduce re-ran, its detection probability, and the audit seed that repeats the draws."""
    if v.reproduced is None:
        print("  the player's own moves are self-reported (--reproduce re-plays them)")
        if not v.protocol.seeded_moves:
            print(f"  {v.protocol.key} has no seeded moves: its opponents' moves, the seats and the engine seed are "
                  f"not re-derived either; submit refuses it without --reproduce")
    else:
        r = v.reproduced
        print(f"  reproduced: {r['episodes']} of {r.get('of', r['episodes'])} episodes re-played with the claimed "
              f"player" + (f"; re-trained {', '.join(r['retrained'])}" if r["retrained"] else "")
              + (f"; a forged {r['detection']['fraction']:.0%} of the episodes is caught with probability "
                 f"{r['detection']['probability']:.4f}" if "detection" in r else ""))
    print(f"  audit seed {v.audit_seed} (--audit-seed {v.audit_seed} repeats the validator's draws)")


def _reproduce_sample(args: argparse.Namespace) -> int | None:
    if args.reproduce_sample is None:
        return None
    if not args.reproduce:          # nothing is re-played without --reproduce: the number would be dropped
        raise ValueError("--reproduce-sample is how many episodes --reproduce re-plays; give --reproduce too")
    return args.reproduce_sample


def _submit(args: argparse.Namespace) -> None:
    if _suite_folder(args):
        entry = submit_suite(args.folder, args.store, suite=args.protocol, reproduce=args.reproduce,
                             audit_seed=args.audit_seed)
        _print_suite(entry, entry["results"]["reproduced"])
        print(f"added {entry['id']} to {args.store}" + (" (self-reported)" if entry["self_reported"] else ""))
        return
    entry = submit(args.folder, args.store, protocol=args.protocol, sample=args.sample, limits=_limits(args),
                   reproduce=args.reproduce, reproduce_sample=_reproduce_sample(args), audit_seed=args.audit_seed)
    print(f"added {entry['id']} to {args.store}" + (" (self-reported)" if entry["self_reported"] else ""))
    print(f"  audit seed {entry['results']['audit_seed']} (--audit-seed repeats the validator's draws)")


def _limits(args: argparse.Namespace) -> Limits:
    mb = args.max_episodes_mb
    if not 0 < mb < math.inf:
        raise ValueError(f"--max-episodes-mb must be a positive number of megabytes, got {mb!r}")
    return Limits(episodes_bytes=int(mb * 2**20))


def _print_task_means(v) -> None:
    for task, mean in v.task_means().items():
        print(f"  {task}: normalized score {mean:.3f}")


def _store_to_read(store: str) -> str:
    """``--store`` of show and render: a folder that exists (a misspelt path would show an empty leaderboard, and
    render would write that empty page over the real one)."""
    if not Path(store).is_dir() and Path(store) != DEFAULT_STORE:
        raise ValueError(f"--store {store}: no such folder (submit makes a store; the default is {DEFAULT_STORE})")
    return store


def _show(args: argparse.Namespace) -> None:
    print(show(_store_to_read(args.store), wide=args.wide))


def _render(args: argparse.Namespace) -> None:
    md, page = render(_store_to_read(args.store), args.out)
    print(f"wrote {md} and {page}")


def _benchmark_credit(args: argparse.Namespace) -> None:
    result = benchmark_credit(args.method, args.tier, args.quick,
                              [b.strip() for b in args.baselines.split(",") if b.strip()], args.out, args.model,
                              progress=not args.no_progress, submit_to=_store_to_submit(args),
                              protocol=args.protocol, export=args.export, jobs=args.jobs, ray=args.ray,
                              device=args.device, dtype=args.dtype, backend=args.backend,
                              fidelity=not args.no_fidelity)
    print(result["markdown"])
    if result.get("suite"):
        fid = result.get("fidelity")
        if fid is not None:
            print(f"\n## Credit fidelity (at the initial policy; {fid['suite']}"
                  + (", quick subset" if fid["quick"] else "") + ")\n\n" + fid["text"])
        print(f"wrote {result['out'] / 'comparison.md'}, results.json, radar.png, scaling.png and the page "
              f"{result['out'] / 'index.html'}" + (f"; the fidelity in {fid['out']}" if fid is not None else "")
              + ("; the entries are in the store" if args.submit else ""))
        return
    print(f"wrote {result['out'] / 'comparison.md'} and the page {result['out'] / 'index.html'}; the submissions "
          f"are in {result['out']}/<method>/submission"
          + ("" if args.submit else " (python -m leaderboard submit FOLDER adds one)"))


def _protocols(args: argparse.Namespace) -> None:
    for name in list_protocols():
        p = load_protocol(name)
        print(f"{p.key:18s} {p.track:6s} {p.tier or '':5s} {len(p.tasks)} tasks, {p.seed_count} seeds: "
              f"{', '.join(t.name for t in p.tasks)}")
    for name in list_suites():
        su = load_suite(name)
        print(f"{su.key:18s} {su.track:6s} {su.tier:5s} suite, {len(su.settings)} settings: "
              f"{', '.join(f.name for f in su.families)}")


_COMMANDS = {"evaluate": _evaluate, "evaluate-private": _evaluate_private, "validate": _validate, "submit": _submit,
             "show": _show, "render": _render, "benchmark-credit": _benchmark_credit, "protocols": _protocols,
             "fidelity": fidelity.command}
_VERDICTS = ("validate", "submit", "evaluate-private")       # commands whose refusal reads "rejected: ..."


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; 0 on success, 1 for a rejected submission or protocol, 2 for any other bad input."""
    args = build_parser().parse_args(argv)
    for flag in ("out", "store"):        # the folders a command writes (or reads: a store), checked before any work
        problem = folder_problem(getattr(args, flag)) if getattr(args, flag, None) else None
        if problem is not None:
            print(f"error: --{flag} {getattr(args, flag)}: {problem}", file=sys.stderr)
            return 2
    try:
        _COMMANDS[args.command](args)
    except (SubmissionError, ProtocolError) as e:        # (escaped: a message may quote a submitted file)
        print(f"rejected: {escape_controls(e)}" if args.command in _VERDICTS else f"error: {escape_controls(e)}",
              file=sys.stderr)
        return 1
    except ValueError as e:
        print(f"error: {escape_controls(e)}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
