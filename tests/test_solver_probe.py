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


def test_a_sampled_maxrl_step_raises_the_target_and_a_group_without_a_success_carries_no_signal():
    import numpy as np

    cfg, team, learner = probe.build("tiny", 0, 5e-3, seed=0)
    seeds, hints = [21, 22, 23, 24, 25, 26, 27, 28], [1, 2, 3, 4, 4, 3, 2, 1]
    requests, targets, gens = probe.hinted_decisions(team.policies["solver"], seeds, hints, gen_seed=0)
    before = [g.choice.probs[t] for g, t in zip(gens, targets)]
    rng = np.random.default_rng(0)
    for k in range(4):       # each step draws its moves from the distribution the policy has then
        _, _, gens = probe.hinted_decisions(team.policies["solver"], seeds, hints, gen_seed=k)
        assert probe.sampled_step(cfg, learner, probe.samples_for(requests, targets, gens), "maxrl", 8,
                                  rng)["grad_norm"] > 0
    _, _, after_gens = probe.hinted_decisions(team.policies["solver"], seeds, hints, gen_seed=0)
    after = [g.choice.probs[t] for g, t in zip(after_gens, targets)]
    assert sum(after) > sum(before) + 0.05
    # a distribution that never picks the target: every group fails, so there is no signal and the gradient is 0
    never = probe.samples_for(requests, targets, after_gens)
    for s in never:
        s.choice = probe.replace(s.choice, probs=tuple(1.0 if k == (s.choice.index + 1) % 4 else 0.0
                                                       for k in range(4)))
    assert probe.sampled_step(cfg, learner, never, "maxrl", 8, rng) == {"train/p_target": 0.0, "grad_norm": 0.0,
                                                                          "zero_groups": len(never)}


def test_the_thinkers_target_names_its_clue_and_a_maxrl_step_on_it_moves_only_the_thinkers_adapter():
    import numpy as np

    cfg, team, learner = probe.build("tiny", 0, 5e-3, seed=0)
    seeds = [31, 32, 33, 34, 35, 36, 37, 38]
    requests, targets, gens = probe.clue_decisions(team.policies["thinker"], seeds, gen_seed=0)
    for r, t in zip(requests, targets):
        clue = re.search(r"your private clue[^:]*: the answer is (\w+)\.", r.text, re.IGNORECASE).group(1)
        assert r.legal_actions[0] == "[none]"
        assert f'{r.legal_actions[t]} ("I think the answer is {clue}")' in r.text     # the message naming the clue
    assert len(set(targets)) > 1                            # the clue's position differs between episodes
    before = {k: v.detach().clone() for k, v in learner.module.named_parameters() if "lora_" in k}
    samples = probe.samples_for(requests, targets, gens, "thinker")
    p0 = [g.choice.probs[t] for g, t in zip(gens, targets)]
    for _ in range(3):
        probe.sampled_step(cfg, learner, samples, "maxrl", 8, np.random.default_rng(0), "thinker")
    moved = {k for k, v in learner.module.named_parameters() if "lora_" in k and not torch_equal(v, before[k])}
    assert moved and all(".thinker." in k for k in moved)   # the solver's adapter is untouched
    _, _, after = probe.clue_decisions(team.policies["thinker"], seeds, gen_seed=0)
    assert sum(g.choice.probs[t] for g, t in zip(after, targets)) > sum(p0) + 0.05


def test_with_hint_required_the_thinkers_target_is_the_clues_label_among_four_moves():
    kwargs = {**probe.ENV_KWARGS, "hint_optional": False}
    _, team, _ = probe.build("tiny", 0, 5e-3, seed=0, env_kwargs=kwargs)
    requests, targets, _ = probe.clue_decisions(team.policies["thinker"], [41, 42, 43, 44, 45, 46], 0, kwargs)
    for r, t in zip(requests, targets):
        clue = re.search(r"Message from your informant:\nI think the answer is (\w+)\.", r.text).group(1)
        assert list(r.legal_actions) == ["[A]", "[B]", "[C]", "[D]"] and "[none]" not in r.text
        assert f"({'ABCD'[t]}) {clue}" in r.text            # the target is the label of the clue's word
    assert len(set(targets)) > 1
    # the solver's decisions after a hint: hint h names candidate h - 1 with or without [none] on the thinker's menu
    requests, targets, _ = probe.hinted_decisions(team.policies["solver"], [41, 42], [1, 4], 0, kwargs)
    assert targets == [0, 3]
    for r, t in zip(requests, targets):
        word = re.search(r"the answer is (\w+)\.", r.text).group(1)
        assert f"({'ABCD'[t]}) {word}" in r.text


def torch_equal(a, b) -> bool:
    import torch

    return torch.equal(a.detach(), b)
