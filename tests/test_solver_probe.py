"""benchmarks/solver_probe.py (issue 43, item 3's first obstacle): its target is the label of the candidate the hint
names in the solver's permuted menu, and a supervised step raises the probability of that label."""

from __future__ import annotations

import re

from tests.benchmark_scripts import load

probe = load("solver_probe")


def test_the_target_is_the_label_of_the_word_the_hint_names_in_the_solvers_menu_and_sft_raises_it():
    cfg, team, learner = probe.build("tiny", 0, 5e-3, seed=0)
    seeds, hints = [11, 12, 13, 14, 15, 16], [1, 2, 3, 4, 2, 3]
    requests, targets, gens = probe.hinted_decisions(team.policies["solver"], seeds, hints, gen_seed=0)
    orders = set()
    for r, t in zip(requests, targets):
        word = re.search(r"the answer is (\w+)\.", r.text).group(1)
        menu = {w: f"[{lab}]" for lab, w in re.findall(r"\(([A-D])\) (\w+)", r.text)}
        assert r.legal_actions[t] == menu[word]             # the label the hinted word carries in this menu
        assert f"[{word}]" not in r.text and word in r.text  # the hint names the word, never the label
        orders.add(tuple(menu))
    assert len(orders) > 1                                  # the menus differ between episodes
    samples = probe.samples_for(requests, targets, gens)
    before = [g.choice.probs[t] for g, t in zip(gens, targets)]
    for _ in range(3):
        probe.step(cfg, learner, samples, "sft")
    _, _, after_gens = probe.hinted_decisions(team.policies["solver"], seeds, hints, gen_seed=0)
    after = [g.choice.probs[t] for g, t in zip(after_gens, targets)]
    assert sum(after) > sum(before) + 0.05
