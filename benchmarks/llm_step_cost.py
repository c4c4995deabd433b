"""Where an LLM training step's time goes: rollout, update (adapter switch, forward, backward, AdamW), exact
evaluation, per role, against a named anchor measured in the same run.

The setup is issue 43's: ``think_solve-v0``'s shortcut-free clue task (``clue_pool="words"``, clue accuracy 0.9,
discrete), one LoRA adapter per role, both roles trained, choice mode with ``label`` scoring
(``--setup choice``); or the free-text hint (``--setup hint``: the same task in text mode, the thinker writes its
hint in generate mode, at most ``--max-new-tokens`` tokens, and the scripted reader answers). One batch of
``--tasks`` x ``--group-size`` episodes is played
(each role's ``generate`` timed), then one update pass over its trained decisions with advantages +-1 (so nothing is
skipped), cut into its phases, then an exact held-out evaluation of ``--eval-episodes`` seeds (choice setup only;
each role's ``generate`` timed).

Anchor (``bare_forward``): every trained decision's prompt run through the model in full, left-padded, in
micro-batches of the trainer's token budget, without gradient and without any sharing: the cost of reading the
step's prompts once each. Every row's ratio is its seconds over the anchor's. Tokens: the prompts' total length (what
a row-per-sample path reads) and the token positions the model really ran in that phase (counted at its input
embedding, padding included).

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/llm_step_cost.py --model smollm2-135m --eval-episodes 8
    python benchmarks/llm_step_cost.py --model tiny          # seconds; the same table

``--lora-layers 0,8,4``: the whole measurement (rollout, update, evaluation) for each value of the trainer's
``--lora-layers`` (0 = adapters on every layer), in the same process on the same batch, each phase at every K before
the next phase (the rollout's episodes are checked to be identical: at init every adapter adds exactly 0), then a
table of each phase's CPU and wall seconds at each K and the CPU ratio to the same phase at the first K (the anchor
of that table; on a shared machine wall seconds follow the share the process got, CPU seconds of one torch thread
follow its work). ``--no-bare-forward`` leaves out the other anchor.

Prints a markdown table; the numbers in ``benchmarks/RESULTS.md`` ("The LLM step's cost", issue 43) come from it.
"""

from __future__ import annotations

import argparse
import math
import os
import time
from contextlib import contextmanager

import numpy as np
import torch

SETUPS = {
    "choice": dict(mode="choice", partners="", action_mode="discrete",
                   env_kwargs={"thinker_clue_accuracy": 0.9, "clue_pool": "words"}),
    "hint": dict(mode="generate", partners="solver=reference", action_mode="text",
                 env_kwargs={"thinker_clue_accuracy": 0.9, "clue_pool": "words"}),
}


class Clock:
    """Seconds and counts per named phase."""

    def __init__(self) -> None:
        self.s: dict[str, float] = {}
        self.cpu: dict[str, float] = {}        # this process's CPU seconds per phase (one torch thread: its work)
        self.run: dict[str, int] = {}          # token positions the model ran per phase
        self.prompts: dict[str, int] = {}      # the prompts' total length per phase
        self._phase: str | None = None

    def count(self, module, args, out) -> None:      # a forward hook on the model's input embedding
        if self._phase is not None:
            self.run[self._phase] = self.run.get(self._phase, 0) + int(args[0].numel())

    @contextmanager
    def time(self, name: str):
        outer, self._phase = self._phase, name
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self.s[name] = self.s.get(name, 0.0) + time.perf_counter() - t0
            self.cpu[name] = self.cpu.get(name, 0.0) + time.process_time() - c0
            self._phase = outer


def _timed_policies(policies: dict, clock: Clock, prefix: str) -> dict:
    """The team's policies with each role's ``generate`` timed under ``prefix/role``."""
    out = {}
    for role, policy in policies.items():
        def generate(requests, seed=None, _p=policy, _name=f"{prefix}/{role}"):
            with clock.time(_name):
                return type(_p).generate(_p, requests, seed)
        timed = type(policy).__new__(type(policy))
        timed.__dict__.update(policy.__dict__)
        timed.generate = generate
        out[role] = timed
    return out


def build(args, lora_layers: int = 0):
    from baselines.train import TrainConfig
    from baselines.train.dist import Dist
    from baselines.train.learners import build_team
    from marl_llm_envs import make

    s = SETUPS[args.setup]
    cfg = TrainConfig(env="think_solve-v0", env_kwargs=s["env_kwargs"], action_mode=s["action_mode"], model=args.model,
                      mode=s["mode"], adapters="per_role", partners=s["partners"], lr=1e-6, lora_layers=lora_layers,
                      max_new_tokens=args.max_new_tokens, tasks_per_step=args.tasks, group_size=args.group_size)
    env = make("think_solve-v0", **s["env_kwargs"], action_mode=s["action_mode"])
    torch.manual_seed(0)
    team = build_team(cfg, env, sorted(set(env.roles.values())), prepare=Dist(cfg).prepare)
    return cfg, team


def bare_forward(learner, samples, budget: int) -> None:
    """The anchor (module docstring)."""
    from baselines.policies.decoding import left_pad
    from baselines.train.learners import Learner, use_adapter

    with torch.no_grad():
        for role in dict.fromkeys(s.role for s in samples):
            if learner.adapters == "per_role":
                use_adapter(learner.module, role)
            mine = [s for s in samples if s.role == role]
            for mb in Learner.micro_batches(learner, mine, budget):
                ids, mask, pos = left_pad([s.prompt_ids for s in mb], learner.pad_id, learner.hf_policy.device)
                learner.module(input_ids=ids, attention_mask=mask, position_ids=pos, logits_to_keep=1)


@contextmanager
def unshared():
    """The learner's free-text scoring as it was before prompts were shared: one row per (prompt, completion)."""
    from baselines.train import learners

    shared = learners.sequence_logprobs
    learners.sequence_logprobs = lambda *a, **kw: shared(*a, **{**kw, "share_prefix": False})
    try:
        yield
    finally:
        learners.sequence_logprobs = shared


def update_phases(learner, samples, budget: int, clock: Clock, tag: str = "update") -> None:
    """One update pass over ``samples``, each phase timed: per role the adapter switch, the forward of
    :meth:`LLMLearner.logprobs <baselines.train.learners.LLMLearner.logprobs>` and ``backward()``; then AdamW."""
    from baselines.train.learners import use_adapter

    learner.optimizer.zero_grad(set_to_none=True)
    for role in dict.fromkeys(s.role for s in samples):
        mine = [s for s in samples if s.role == role]
        others = [r for r in learner.module.peft_config if r != role]
        if learner.adapters == "per_role" and others:
            use_adapter(learner.module, others[0])
            with clock.time(f"{tag}/adapter_switch"):
                use_adapter(learner.module, role)
        clock.prompts[f"{tag}/forward/{role}"] = sum(len(s.prompt_ids) for s in mine)
        for mb in learner.micro_batches(mine, budget):
            with clock.time(f"{tag}/forward/{role}"):
                new, _ = learner.logprobs(mb)
            adv = torch.tensor([a for s in mb for a in s.adv])
            with clock.time(f"{tag}/backward/{role}"):
                (-(new * adv).sum()).backward()
    with clock.time(f"{tag}/adamw"):
        learner.optimizer.step()
    learner.optimizer.zero_grad(set_to_none=True)


def measure(args, ks: list[int]) -> dict[int, tuple[Clock, dict]]:
    """Every phase for each ``--lora-layers`` value of ``ks``, interleaved: each phase runs at every K before the
    next phase starts, so a change of the machine's load between phases touches every K alike."""
    from baselines.rollout import RolloutEngine
    from baselines.train.exact_eval import evaluate
    from baselines.train.update import trained_samples

    runs = {}
    for k in ks:
        cfg, team = build(args, k)
        learner = next(lr for lr in team.learners if lr.trainable)
        clock = Clock()
        learner.module.get_input_embeddings().register_forward_hook(clock.count)
        runs[k] = cfg, team, learner, clock, {}
    kwargs = {**SETUPS[args.setup]["env_kwargs"], "action_mode": SETUPS[args.setup]["action_mode"]}
    for k, (cfg, team, learner, clock, info) in runs.items():
        engine = RolloutEngine(_timed_policies(team.policies, clock, "rollout"), show_progress=False)
        with clock.time("rollout"):
            episodes = engine.run("think_solve-v0", args.tasks, args.group_size, seed=11, env_kwargs=kwargs)
        clock.prompts["rollout"] = sum(len(t.prompt_ids) for e in episodes for t in e.turns
                                       if t.role in learner.trainable)
        rng = np.random.default_rng(0)
        adv = [[float(rng.choice([-1.0, 1.0])) for _ in e.turns] for e in episodes]
        info["samples"] = samples = trained_samples(episodes, adv, set(learner.trainable))
        info["decisions"] = {r: sum(s.role == r for s in samples) for r in learner.trainable}
        info["distinct_prompts"] = {r: len({tuple(s.prompt_ids) for s in samples if s.role == r})
                                    for r in learner.trainable}
        info["reward"] = float(np.mean([e.team_rewards["team"] for e in episodes]))
        info["texts"] = [t.text for e in episodes[:: args.group_size] for t in e.turns if t.role == "thinker"]
        info["moves"] = [(t.role, t.text, t.prompt_ids) for e in episodes for t in e.turns]
        first = runs[ks[0]][4]["moves"]
        if info["moves"] != first:      # at init every adapter adds exactly 0: the same episodes at every K
            raise SystemExit(f"--lora-layers {k} played other episodes than {ks[0]}: the comparison is void")
    for _ in range(args.repeats):
        for k, (cfg, team, learner, clock, info) in runs.items():
            if not args.no_bare_forward:
                with clock.time("anchor: bare_forward"):
                    bare_forward(learner, info["samples"], cfg.micro_batch_tokens)
            update_phases(learner, info["samples"], cfg.micro_batch_tokens, clock)
            if args.unshared:
                with unshared():
                    update_phases(learner, info["samples"], cfg.micro_batch_tokens, clock, "update_unshared")
    for k, (cfg, team, learner, clock, info) in runs.items():
        clock.prompts["anchor: bare_forward"] = sum(len(s.prompt_ids) for s in info["samples"])
        if args.eval_episodes and args.setup == "choice":
            stats = learner.hf_policy.stats
            before = stats.prompt_tokens
            with clock.time("exact_eval"):
                evaluate(_timed_policies(team.policies, clock, "exact_eval"), "think_solve-v0", kwargs,
                         args.eval_episodes)
            clock.prompts["exact_eval"] = stats.prompt_tokens - before
    return {k: (clock, info) for k, (_, _, _, clock, info) in runs.items()}


def table(clock: Clock, info: dict, args) -> str:
    anchor = clock.s.get("anchor: bare_forward", math.nan)
    lines = [f"model {args.model}, setup {args.setup}, {args.tasks} tasks x {args.group_size} samples, decisions "
             f"{info['decisions']} ({info['distinct_prompts']} distinct prompts), batch reward {info['reward']:.3f}, "
             f"{torch.get_num_threads()} torch thread(s); update rows and the anchor summed over {args.repeats} "
             f"repeat(s)", "",
             "| phase | s | x anchor | CPU s | prompt tokens | token positions run |", "|---|---:|---:|---:|---:|---:|"]
    for name, s in clock.s.items():
        ratio = "" if math.isnan(anchor) else f"{s / anchor:.2f}"
        lines.append(f"| {name} | {s:.2f} | {ratio} | {clock.cpu[name]:.2f} | {clock.prompts.get(name, '')} | "
                     f"{clock.run.get(name, '')} |")
    return "\n".join(lines)


def compare(clocks: dict[int, Clock]) -> str:
    """Each phase's seconds at each ``--lora-layers`` value and their ratio to the first value's: CPU seconds of
    this process (with one torch thread, the work done, whatever share of the machine it got) and wall seconds."""
    ks = list(clocks)
    name = {k: "all layers" if k == 0 else f"top {k}" for k in ks}
    rows = dict.fromkeys(n for c in clocks.values() for n in c.s if not n.startswith("update_unshared"))
    lines = [f"phase seconds by --lora-layers (x = ratio to {name[ks[0]]}, same batch, same process, phases "
             "interleaved)", "",
             "| phase | " + " | ".join(f"{name[k]}: CPU s | x | wall s" for k in ks) + " |",
             "|---|" + "---:|---:|---:|" * len(ks)]

    def row(label, cpu, wall):
        cells = [f"{c:.2f} | {c / cpu[0]:.2f} | {w:.1f}" if cpu[0] else f"{c:.2f} | | {w:.1f}"
                 for c, w in zip(cpu, wall)]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    for n in rows:
        row(n, [clocks[k].cpu.get(n, 0.0) for k in ks], [clocks[k].s.get(n, 0.0) for k in ks])
    update = {k: [n for n in clocks[k].s if n.startswith("update/")] for k in ks}
    row("update, all phases", [sum(clocks[k].cpu[n] for n in update[k]) for k in ks],
        [sum(clocks[k].s[n] for n in update[k]) for k in ks])
    row("step: rollout + update", [clocks[k].cpu["rollout"] + sum(clocks[k].cpu[n] for n in update[k]) for k in ks],
        [clocks[k].s["rollout"] + sum(clocks[k].s[n] for n in update[k]) for k in ks])
    return "\n".join(lines)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="smollm2-135m")
    p.add_argument("--setup", choices=sorted(SETUPS), default="choice")
    p.add_argument("--tasks", type=int, default=8)
    p.add_argument("--group-size", type=int, default=4)
    p.add_argument("--eval-episodes", type=int, default=8)
    p.add_argument("--max-new-tokens", type=int, default=16)
    p.add_argument("--repeats", type=int, default=1, help="update passes and anchors, alternating")
    p.add_argument("--unshared", action="store_true", help="also time each update pass with free-text turns scored "
                   "one row per (prompt, completion), as before prompts were shared (update_unshared/...)")
    p.add_argument("--no-bare-forward", action="store_true", help="leave out the bare_forward anchor (with several "
                   "--lora-layers the comparison's anchor is the first value's run)")
    p.add_argument("--lora-layers", default="0", help="comma-separated values of the trainer's --lora-layers, "
                   "each measured in turn (0 = adapters on every layer); with several, a table compares them")
    args = p.parse_args(argv)
    try:
        ks = [int(x) for x in args.lora_layers.split(",")]
    except ValueError:
        p.error(f"--lora-layers must be comma-separated integers, got {args.lora_layers!r}")
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    runs = measure(args, ks)
    for k, (clock, info) in runs.items():
        print(f"\n--lora-layers {k}: " + table(clock, info, args))
    if len(ks) > 1:
        print("\n" + compare({k: clock for k, (clock, _) in runs.items()}))
    if args.setup == "hint":
        print("\nthe first sample's hint of each task:", *(repr(t) for t in runs[ks[0]][1]["texts"]), sep="\n  ")


if __name__ == "__main__":
    main()
