"""Pilot (issue 43 item 3, 2026-12-07): why can the SmolLM2 thinker not learn to pass its clue when the solver learns
the same look-up? The supervised thinker probe of ``benchmarks/solver_probe.py`` (its ``step``: ``-mean log pi(target)``,
32 decisions a step, every LoRA layer, lr LR, seed 0) under thinker prompts and move sets patched into think_solve-v0
(the env itself is not changed); held-out P(pass) from the thinker's exact distribution on 32 ``split="test"`` seeds
(thinker only, no tree: the target's probability), every 5 steps. A throwaway script kept as run, with its results in
``benchmarks/pilots/thinker_layouts/`` (RESULTS.md, "The thinker's look-up under eleven prompts").

    OMP_NUM_THREADS=1 python benchmarks/pilots/thinker_layouts.py VARIANT STEPS LR [SEED]

VARIANT: ``base`` (the env's prompt), ``short_moves`` (moves listed by label only), ``solver_like`` (the solver's
layout: list, clue line, then the labels), ``solver_copy`` (the solver's prompt exactly, the clue as the thinker's
message; the thinker's moves [none] + labels), ``copy_head`` / ``copy_clue`` (the solver's prompt with the thinker's
role line / with the clue block in place of the message), ``none_last`` (the env's prompt, [none] after the labels),
``clue_message`` (``copy_head`` with the clue's accuracy line before the message and no "Message from the
Thinker" heading), ``clue_line`` (a draft of the env's own ``hint_optional=False``
prompt: the accuracy, then "Clue: the answer is <word>." just before "Suggest an answer ..."), ``informant`` (``copy_head`` with the clue as a
message from the thinker's private informant, its accuracy at the end of the role paragraph), ``informant_noacc`` / ``copy_head_acc`` (``informant`` without the
accuracy sentence / with copy_head's heading), ``informant_short`` (``copy_head_acc`` with the heading
"Message from your informant:"), ``transfer`` (the thinker's adapter trained on the solver's decisions, the env's thinker prompt evaluated; also prints
the adapter's P(follow) on solver prompts); a ``_nonone`` suffix (and every ``copy_*``) drops the [none] move.
"""
import json
import sys
import time

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[2]))
import numpy as np

from baselines.policies.base import choice_probs, request_for
from baselines.train.exact_eval import eval_seeds
from benchmarks import solver_probe as sp
from marl_llm_envs import make
from marl_llm_envs.envs import think_solve as ts

NO_NONE = ("copy_nonone", "base_nonone", "solver_like_nonone", "short_moves_nonone", "copy_head", "copy_clue",
           "clue_message", "clue_line", "informant", "informant_noacc", "copy_head_acc",
           "informant_short")
variant = sys.argv[1]; steps = int(sys.argv[2]); lr = float(sys.argv[3])
seed = int(sys.argv[4]) if len(sys.argv) > 4 else 0      # the adapters' init and the training episodes' stream
orig_text = ts.raw_env._text

def text(self, agent):
    if agent != "thinker" or variant in ("base", "transfer", "base_nonone", "none_last"):
        return orig_text(self, agent)
    head = ("You are the Thinker in a team of two. Your teammate, the Solver, sees the same problem and your message, "
            "and\ngives the team's final answer; the team is scored only on that answer.\n\n")
    clue = self.candidates[self._clue]
    if variant in ("short_moves", "short_moves_nonone"):     # moves without the repeated words: like the solver's menu
        return (head + self._problem_text() + "\n\n" + self._clue_text()
                + "Choose your message: " + ("" if variant.endswith("nonone") else "[none] (send no hint) or ") + "the label of the candidate you suggest to the Solver: "
                + ", ".join(f"[{l}]" for l in self.labels) + ".\nReply with exactly one choice in square brackets.")
    if variant in ("solver_like", "solver_like_nonone"):     # the solver's layout: list, then the clue sentence, then the labels
        return (head + self._problem_text() + f"\n\nYour private clue (the Solver cannot see it):\nThe answer is {clue}."
                + f" Such clues are right {self.thinker_clue_accuracy:.0%} of the time.\n\n"
                + "Suggest an answer to the Solver with its label in square brackets"
                + (": " + ", ".join(f"[{l}]" for l in self.labels) + "." if variant.endswith("nonone") else
                   ", or [none] to send no hint: " + ", ".join(f"[{l}]" for l in self.labels) + ", [none]."))
    if variant in ("solver_copy", "copy_nonone"):     # the solver's prompt exactly, with the clue as the thinker's message
        return ("You are the Solver in a team of two. Your teammate, the Thinker, read the same problem and sent "
                "you a message.\nThe team is scored only on your final answer.\n\n" + self._problem_text()
                + f"\n\nMessage from the Thinker:\nI think the answer is {clue}.\n\n"
                + "Answer with the label of your choice in square brackets: " + ", ".join(f"[{x}]" for x in self.labels) + ".")
    solver_q = "Answer with the label of your choice in square brackets: " + ", ".join(f"[{x}]" for x in self.labels) + "."
    if variant == "copy_head":       # the solver's prompt with the thinker's role line
        return (head + self._problem_text() + f"\n\nMessage from the Thinker:\nI think the answer is {clue}.\n\n" + solver_q)
    if variant == "copy_clue":       # the solver's prompt with the clue block in place of the message
        return ("You are the Solver in a team of two. Your teammate, the Thinker, read the same problem and sent "
                "you a message.\nThe team is scored only on your final answer.\n\n" + self._problem_text()
                + f"\n\nYour private clue (the Solver cannot see it):\nThe answer is {clue}.\n\n" + solver_q)
    if variant == "clue_message":    # copy_head with the clue introduced as a clue: its accuracy, then its words as a message
        return (head + self._problem_text() + f"\n\nYour private clue (the Solver cannot see it) is right "
                f"{self.thinker_clue_accuracy:.0%} of the time; a wrong clue names one of the {self.num_candidates - 1}\n"
                f"other candidates, chosen uniformly at random. It reads:\nI think the answer is {clue}.\n\n" + solver_q)
    if variant == "clue_line":       # a draft of the env's hint_optional=False prompt (04:28-04:48 UTC), run then with
        # solver_probe.py --role thinker --hint-required; the clue on a line of its own just before the question
        return (head + self._problem_text() + f"\n\nYour private clue (the Solver cannot see it) is right "
                f"{self.thinker_clue_accuracy:.0%} of the time; a wrong clue names one of the {self.num_candidates - 1}\n"
                f"other candidates, chosen uniformly at random.\nClue: the answer is {clue}.\n\n"
                "Suggest an answer to the Solver with its label in square brackets: "
                + ", ".join(f"[{l}]" for l in self.labels) + ".")
    acc = (f" Your private informant's message is right {self.thinker_clue_accuracy:.0%} of the time; when it is wrong "
           f"it names\none of the {self.num_candidates - 1} other candidates, chosen uniformly at random.\n\n")
    if variant == "informant":       # copy_head with the clue as a message from an informant, its accuracy in the head
        return (head[:-2] + acc + self._problem_text() + "\n\nMessage from your informant (the Solver cannot see it):\n"
                f"I think the answer is {clue}.\n\n" + solver_q)
    if variant == "informant_noacc":  # informant without the accuracy sentence: copy_head with another heading
        return (head + self._problem_text() + "\n\nMessage from your informant (the Solver cannot see it):\n"
                f"I think the answer is {clue}.\n\n" + solver_q)
    if variant == "copy_head_acc":   # informant with copy_head's heading: copy_head with the accuracy sentence
        return (head[:-2] + acc + self._problem_text() + f"\n\nMessage from the Thinker:\nI think the answer is {clue}.\n\n"
                + solver_q)
    if variant == "informant_short":  # copy_head_acc with the heading "Message from your informant:"
        return (head[:-2] + " Your private informant's message (the Solver cannot see it) is right "
                f"{self.thinker_clue_accuracy:.0%} of the time;\nwhen it is wrong it names one of the {self.num_candidates - 1} "
                "other candidates, chosen uniformly at random.\n\n" + self._problem_text()
                + f"\n\nMessage from your informant:\nI think the answer is {clue}.\n\n" + solver_q)
    raise SystemExit(variant)

ts.raw_env._text = text
# the thinker's moves: the labels alone, or the labels then [none]; solver_probe.clue_decisions reads its targets
# from action_names, so they follow the patch
ORDER = {v: "labels" for v in NO_NONE} | {"none_last": "labels_then_none"}
if variant in ORDER:
    orig_names = ts.raw_env.action_names
    extra = [ts.NO_HINT] if ORDER[variant] == "labels_then_none" else []
    ts.raw_env.action_names = lambda self, agent: ([*self.labels, *extra] if agent == "thinker"
                                                   and self.action_mode == "discrete" else orig_names(self, agent))

def p_follow(policy, n=32):
    hints = [1 + i % 4 for i in range(n)]
    _, tg, gens = sp.hinted_decisions(policy, [s for s in eval_seeds(n)], hints, gen_seed=0)
    return float(np.mean([choice_probs(policy, g.choice)[t] for g, t in zip(gens, tg)]))

def p_pass(policy, n=32):
    reqs, tg = [], []
    for seed in eval_seeds(n):
        env = make(sp.ENV, **{**sp.ENV_KWARGS, "split": "test"}); env.reset(seed=seed); u = env.unwrapped
        reqs.append(request_for(env, "thinker", set(policy.observes) | {"legal_actions"}))
        tg.append(u.action_names("thinker").index(u.labels[u.candidates.index(u.clue())]))
    gens = policy.generate(reqs, seed=0)
    ps = [choice_probs(policy, g.choice) for g in gens]
    names = make(sp.ENV, **sp.ENV_KWARGS).unwrapped.action_names("thinker")
    none = [p[names.index(ts.NO_HINT)] for p in ps] if ts.NO_HINT in names else [0.0]
    return float(np.mean([p[t] for p, t in zip(ps, tg)])), float(np.mean(none))

cfg, team, learner = sp.build("smollm2", 0, lr, seed)
policy = team.policies["thinker"]
env = make(sp.ENV, **sp.ENV_KWARGS); env.reset(seed=1)
print(env.unwrapped._text("thinker")); print(len(policy.tokenizer(env.unwrapped._text("thinker"))["input_ids"]) if hasattr(policy, "tokenizer") else "")
rng = np.random.default_rng(seed); t0 = time.time(); rows = []
for s in range(steps + 1):
    if s % 5 == 0:
        pp, pn = p_pass(policy); rows.append((s, pp))
        if variant == "transfer": print("transfer: thinker adapter's held-out P(follow) on the solver's prompts (train split words)", p_follow(policy))
        print(f"{variant} step {s} held-out P(pass) {pp:.3f} P(none) {pn:.3f} ({time.time()-t0:.0f} s)", flush=True)
    if s == steps: break
    seeds = [int(x) for x in rng.integers(0, 2**40, size=32)]
    if variant == "transfer":     # the solver's decisions, trained on the thinker's adapter (a shared adapter's view)
        hints = [int(x) for x in rng.integers(1, 5, size=32)]
        req, tg, gens = sp.hinted_decisions(team.policies["solver"], seeds, hints, gen_seed=s)
    else:
        req, tg, gens = sp.clue_decisions(policy, seeds, gen_seed=s)
    st = sp.step(cfg, learner, sp.samples_for(req, tg, gens, "thinker"), "sft")
    print(f"  update {s}: batch P(target) {st['train/p_target']:.3f} ({time.time()-t0:.0f} s)", flush=True)
name = f"{variant}_{lr}_{steps}" + (f"_seed{seed}" if seed else "") + ".json"
(__import__("pathlib").Path(__file__).with_suffix("") / name).write_text(json.dumps(rows))
