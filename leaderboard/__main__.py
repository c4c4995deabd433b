"""``python -m leaderboard {evaluate,validate,submit,show,render,protocols,benchmark-credit}``.

    python -m leaderboard evaluate --protocol policy --player reference --method reference-bots --out sub/
    python -m leaderboard validate sub/ [--full]
    python -m leaderboard submit sub/
    python -m leaderboard show
    python -m leaderboard render [--out leaderboard/]
    python -m leaderboard benchmark-credit broadcast --tier micro --quick
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

from leaderboard.benchmark import BASELINES
from leaderboard.protocol import ProtocolError, list_protocols, load_protocol
from leaderboard.store import DEFAULT_STORE
from leaderboard.validate import Limits, SubmissionError


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
        else:
            default = s
    by_seed: dict[str, dict[int, str]] = {}
    for run in runs:         # credit track: trainer run folders, one per env and training seed of the protocol
        config = Path(run) / "config.json"
        if not config.is_file():
            raise ValueError(f"--runs {run}: no config.json (a folder written by python -m baselines.train)")
        cfg = json.loads(config.read_text())
        seeds = by_seed.setdefault(cfg["env"], {})
        if cfg["seed"] in seeds:
            raise ValueError(f"--runs: two runs of {cfg['env']} with seed {cfg['seed']}: {seeds[cfg['seed']]}, {run}")
        seeds[cfg["seed"]] = f"checkpoint:{run}"
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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m leaderboard", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("evaluate", help="play a protocol; write submission.json and episodes.jsonl")
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
    p.add_argument("--no-progress", action="store_true")

    for name, help_ in (("validate", "check a submission and print its scores"),
                        ("submit", "validate a submission and add it to the store")):
        p = sub.add_parser(name, help=help_)
        p.add_argument("folder")
        p.add_argument("--protocol", default=None, help="the protocol file (default: the one the submission names, "
                                                        "from leaderboard/protocols/)")
        if name == "validate":
            p.add_argument("--full", action="store_true", help="replay every episode (default: --sample of them)")
            p.add_argument("--sample", type=int, default=200, help="how many random episodes to replay")
        else:
            p.add_argument("--sample", type=int, default=None, help="replay only this many random episodes "
                                                                    "(default: every episode)")
            p.add_argument("--store", default=str(DEFAULT_STORE))
        p.add_argument("--max-episodes-mb", type=float, default=Limits.episodes_bytes / 2**20)

    p = sub.add_parser("show", help="print the ranked tables")
    p.add_argument("--store", default=str(DEFAULT_STORE))
    p = sub.add_parser("render", help="write LEADERBOARD.md and index.html")
    p.add_argument("--store", default=str(DEFAULT_STORE))
    p.add_argument("--out", default=str(Path(__file__).parent))
    sub.add_parser("protocols", help="list the protocols")
    p = sub.add_parser("benchmark-credit", help="train a credit method beside the built-in baselines under a "
                                                "credit-track protocol, evaluate all, print the comparison")
    p.add_argument("method", help="a registered credit method or package.module:ClassName")
    p.add_argument("--tier", default="micro", choices=("micro", "small", "gpu"))
    p.add_argument("--quick", action="store_true", help="the tier's quick protocol (a smaller budget)")
    p.add_argument("--protocol", default=None, help="another credit-track protocol (a name or a path)")
    p.add_argument("--baselines", default=",".join(BASELINES), help="comma-separated built-in methods to compare "
                                                                      "against ('' for none)")
    p.add_argument("--model", default=None, help="gpu tier: the model to train")
    p.add_argument("--out", default="runs/benchmark-credit", help="where the runs and submissions go")
    p.add_argument("--submit", action="store_true", help="add every submission to the store")
    p.add_argument("--store", default=str(DEFAULT_STORE))
    p.add_argument("--export", choices=("marl-eval",), default=None, help="also write the results in this format")
    p.add_argument("--jobs", type=int, default=1, help="suite: play the independent runs (seeds x methods x settings) "
                                                        "in N processes (the results are the same as with 1)")
    p.add_argument("--ray", default=None, metavar="auto|ADDRESS|local",
                   help="suite: play the runs over Ray (pip install 'marl-llm-envs[ray]'): auto = the running "
                        "cluster, an address, or local = a private local instance")
    p.add_argument("--no-progress", action="store_true")

    args = parser.parse_args(argv)
    try:
        if args.command == "evaluate":
            from leaderboard.evaluate import evaluate

            protocol = load_protocol(args.protocol)
            players = _players(protocol, args.player, args.runs)
            m = evaluate(protocol, players, args.out, args.method, greedy=args.greedy,
                         progress=not args.no_progress, note=args.note)
            print(f"wrote {args.out}/submission.json and {m['episodes']['count']} episodes "
                  f"({m['wall_time_s']:.1f} s); next: python -m leaderboard validate {args.out}")
        elif args.command in ("validate", "submit"):
            limits = Limits(episodes_bytes=int(args.max_episodes_mb * 2**20))
            if args.command == "validate":
                from leaderboard.validate import validate

                v = validate(args.folder, protocol=args.protocol, full=args.full, sample=args.sample, limits=limits)
                print(f"valid: {v.episodes} episodes, {v.replayed} replayed, protocol {v.protocol.key}")
                for task, mean in v.task_means().items():
                    print(f"  {task}: normalized score {mean:.3f}")
            else:
                from leaderboard.store import submit

                entry = submit(args.folder, args.store, protocol=args.protocol, sample=args.sample, limits=limits)
                print(f"added {entry['id']} to {args.store}")
        elif args.command == "show":
            from leaderboard.render import show

            print(show(args.store))
        elif args.command == "render":
            from leaderboard.render import render

            md, page = render(args.store, args.out)
            print(f"wrote {md} and {page}")
        elif args.command == "benchmark-credit":
            from leaderboard.benchmark import benchmark_credit

            result = benchmark_credit(args.method, args.tier, args.quick,
                                      [b.strip() for b in args.baselines.split(",") if b.strip()], args.out,
                                      args.model, progress=not args.no_progress,
                                      submit_to=args.store if args.submit else None, protocol=args.protocol,
                                      export=args.export, jobs=args.jobs, ray=args.ray)
            print(result["markdown"])
            if result.get("suite"):
                print(f"wrote {result['out'] / 'comparison.md'}, results.json, radar.png, scaling.png and the page "
                      f"{result['out'] / 'index.html'}" + ("; the entries are in the store" if args.submit else ""))
                return 0
            print(f"wrote {result['out'] / 'comparison.md'} and the page {result['out'] / 'index.html'}; the "
                  f"submissions are in "
                  f"{result['out']}/<method>/submission" + ("" if args.submit else
                                                          " (python -m leaderboard submit FOLDER adds one)"))
        elif args.command == "protocols":
            for name in list_protocols():
                p = load_protocol(name)
                print(f"{p.key:18s} {p.track:6s} {p.tier or '':5s} {len(p.tasks)} tasks, {p.seed_count} seeds: "
                      f"{', '.join(t.name for t in p.tasks)}")
            from leaderboard.suite import list_suites, load_suite      # the credit-assignment suites (issue 16)

            for name in list_suites():
                su = load_suite(name)
                print(f"{su.key:18s} {su.track:6s} {su.tier:5s} suite, {len(su.settings)} settings: "
                      f"{', '.join(f.name for f in su.families)}")
    except (SubmissionError, ProtocolError) as e:
        print(f"rejected: {e}" if args.command in ("validate", "submit") else f"error: {e}", file=sys.stderr)
        return 1
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
