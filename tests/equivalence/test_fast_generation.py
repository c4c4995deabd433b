"""The fast generation paths of TransformersPolicy (issue 12) compute what the plain path computes.

Plain path: every prompt prefilled in full in one left-padded batch, every row decoded until the last one ends.
Fast paths (constructor flags): ``share_prefix`` (identical prompts and long common prefixes prefilled once),
``drop_finished`` (ended rows leave the decode batch), ``static_cache`` (fixed-shape decode; eager on CPU). With the
same seed they give the same tokens, and logprobs equal to float32 rounding; the work counters show they do less.
Also: the context-limit policy, and the batch-independent sampler the comparison rests on.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from baselines.models import build_tiny_tokenizer, load_model  # noqa: E402
from baselines.policies.decoding import (draw_tokens, gumbel_noise, plan_prefixes, prefill,  # noqa: E402
                                         process_logits)
from baselines.policies.hf import TransformersPolicy, sequence_logprobs  # noqa: E402
from baselines.rollout import BranchSpec, RolloutEngine  # noqa: E402
from tests.baselines.policies.helpers import _requests  # noqa: E402

SYSTEM = "You are a careful player. Rules of the game, the same for every seat: " + "play a legal move. " * 5
TEXTS = (["Problem 1: what is 2 + 2?"] * 3            # a GRPO group: identical prompts
         + ["Problem 2: a longer question, " * 3] * 2
         + ["Problem 3"]                              # shares only the system prompt with the others
         + ["x"])
PLAIN = dict(share_prefix=False, drop_finished=False)
FAST_VARIANTS = {
    "share_prefix": dict(share_prefix=True, drop_finished=False),
    "drop_finished": dict(share_prefix=False, drop_finished=True),
    "both": dict(share_prefix=True, drop_finished=True),
    "static_cache": dict(share_prefix=True, drop_finished=False, static_cache=True),
}


@pytest.fixture(scope="module")
def tiny():
    return load_model("tiny")


def _policy(tiny, eos=(), **kw):
    """A tiny-model policy with the shared system prompt; ``eos``: extra tokens that end a completion."""
    model, tok = tiny
    kw.setdefault("max_new_tokens", 12)
    pol = TransformersPolicy(model, tok, system_prompt=SYSTEM, **kw)
    pol.eos_ids = set(pol.eos_ids) | set(eos)
    return pol


def _varied_eos(gens) -> set[int]:
    """Tokens that, made EOS, end some completions early and leave others running (the random model rarely
    samples its real EOS, and greedy decoding repeats one token): so that rows leave the batch at different steps."""
    seqs = [g.completion_ids for g in gens]
    for t in dict.fromkeys(x for s in seqs for x in s[1:]):
        if any(t not in s for s in seqs):
            return {t}
    raise AssertionError("no token ends some completions and not others")


# ---------------------------------------------------------------------------------------------- sampler
def test_sampler_noise_depends_only_on_seed_row_step_and_token():
    rows = torch.arange(50)
    a = gumbel_noise(7, rows, 3, 300)
    assert torch.equal(a[10:20], gumbel_noise(7, rows[10:20], 3, 300))      # other rows do not matter
    assert torch.equal(a.flip(0), gumbel_noise(7, rows.flip(0), 3, 300))    # nor their order
    assert torch.equal(a[:, :100], gumbel_noise(7, rows, 3, 100))
    assert not torch.equal(a, gumbel_noise(8, rows, 3, 300))
    assert not torch.equal(a, gumbel_noise(7, rows, 4, 300))
    assert torch.equal(gumbel_noise(2**40 + 7, rows, 3, 300), gumbel_noise(2**40 + 7, rows, 3, 300))
    assert not torch.equal(gumbel_noise(2**40 + 7, rows, 3, 300), a)        # the high half of the seed counts


def test_sampler_noise_is_standard_gumbel_and_uncorrelated():
    g = gumbel_noise(0, torch.arange(400), 0, 1000).double()
    assert abs(g.mean().item() - 0.5772) < 0.01 and abs(g.var().item() - np.pi ** 2 / 6) < 0.03
    u = torch.exp(-torch.exp(-g)).numpy().ravel()  # back to the uniforms
    assert np.allclose(np.quantile(u, [0.1, 0.25, 0.5, 0.75, 0.9]), [0.1, 0.25, 0.5, 0.75, 0.9], atol=0.005)
    nxt = gumbel_noise(0, torch.arange(400), 1, 1000).double()
    assert abs(np.corrcoef(g.numpy().ravel(), nxt.numpy().ravel())[0, 1]) < 0.01
    assert abs(np.corrcoef(g[:, :-1].numpy().ravel(), g[:, 1:].numpy().ravel())[0, 1]) < 0.01


@pytest.mark.parametrize("spread", [1, 150])
def test_draws_follow_the_sampling_distribution(spread):
    """Five tokens in one block (spread 1) or in three blocks of a 601-token vocabulary (spread 150)."""
    V = 4 * spread + 1
    probs = torch.zeros(V)
    probs[[0, spread, 2 * spread, 3 * spread, 4 * spread]] = torch.tensor([0.5, 0.0, 0.3, 0.15, 0.05])
    logp = process_logits(torch.log(probs).expand(20000, V), 1.0, 0.9)  # top-p drops the 0.05 token as well
    tokens = draw_tokens(logp, 3, torch.arange(20000), 0).numpy()
    freq = np.bincount(tokens, minlength=V) / len(tokens)
    assert freq[spread] == 0 and freq[4 * spread] == 0
    assert np.allclose(freq, logp[0].exp().numpy(), atol=0.015)


def test_a_rounding_level_change_of_the_logits_almost_never_changes_a_draw():
    """What lets the fast paths (equal to float32 rounding) draw the same tokens as the plain path."""
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(2000, 5000, generator=gen) * 3  # a wide vocabulary with many unlikely tokens
    nudged = logits * (1 + 1e-6 * torch.randn(logits.shape, generator=gen))
    a = draw_tokens(torch.log_softmax(logits, -1), 5, torch.arange(2000), 0)
    b = draw_tokens(torch.log_softmax(nudged, -1), 5, torch.arange(2000), 0)
    assert (a != b).sum() <= 1


# ---------------------------------------------------------------------------------------------- prefix plan
def test_plan_prefixes_shares_identical_prompts_and_common_headers():
    header = list(range(100, 130))
    prompts = [header + [1, 2], header + [1, 2], header + [3], [7, 8, 9], header + [1, 2]]
    plan = plan_prefixes(prompts, min_shared_prefix=16)
    assert len(plan.unique) == 3 and plan.owner[0] == plan.owner[1] == plan.owner[4] != plan.owner[2]
    groups = sorted((n, sorted(plan.unique[u] for u in us)) for n, us in plan.groups)
    assert groups == [(2, [[7, 8, 9]]), (30, [header + [1, 2], header + [3]])]
    assert plan.shared
    # every prompt keeps at least its last token out of the prefix, even when one prompt is another's prefix
    plan = plan_prefixes([header, header + [5]], min_shared_prefix=16)
    assert plan.groups == [(29, [0, 1])]
    assert not plan_prefixes([[1, 2, 3], [4, 5, 6]], min_shared_prefix=2).shared


def test_prefix_sharing_never_widens_the_batch(tiny):
    """A long shared header in one group and long own parts in another would need a layout wider than one
    left-padded batch (every decode step attends over it): then only identical prompts are shared."""
    model, _ = tiny
    long_head, short_head = list(range(10, 110)), list(range(120, 140))
    prompts = [long_head + [1], long_head + [2], short_head + list(range(150, 250)), short_head + [7] * 100,
               long_head + [1]]
    plan = plan_prefixes(prompts, min_shared_prefix=16)
    assert plan.shared and plan.width() > max(map(len, prompts))
    with torch.inference_mode():
        pre = prefill(model, prompts, 0, share_prefix=True)
        ref = prefill(model, prompts, 0, share_prefix=False)
    assert pre.tokens == sum(len(p) for p in plan.unique)  # duplicates shared, nothing else
    assert pre.mask.shape[1] == max(map(len, prompts))
    assert torch.allclose(pre.logits, ref.logits, atol=1e-5)


# ---------------------------------------------------------------------------------------------- same results
@pytest.mark.parametrize("temperature,top_p", [(1.0, 1.0), (0.8, 0.9), (0.0, 1.0)])
def test_fast_paths_give_the_same_tokens_and_logprobs_as_the_plain_path(tiny, temperature, top_p):
    eos = _varied_eos(_policy(tiny, temperature=temperature, top_p=top_p).generate(_requests(TEXTS), seed=5))
    plain = _policy(tiny, eos, temperature=temperature, top_p=top_p, **PLAIN)
    ref = plain.generate(_requests(TEXTS), seed=5)
    lengths = [len(g.completion_ids) for g in ref]
    assert min(lengths) < max(lengths), "rows must end at different steps for this test to mean something"
    fresh = sequence_logprobs(plain.model, [g.prompt_ids for g in ref], [g.completion_ids for g in ref],
                              temperature=temperature, top_p=top_p, pad_id=plain.pad_id)
    for g, f in zip(ref, fresh):
        assert torch.allclose(torch.tensor(g.logprobs), f, atol=1e-5)
    for name, flags in FAST_VARIANTS.items():
        fast = _policy(tiny, eos, temperature=temperature, top_p=top_p, **flags)
        out = fast.generate(_requests(TEXTS), seed=5)
        for g, r in zip(out, ref):
            assert g.completion_ids == r.completion_ids, name
            assert g.prompt_ids == r.prompt_ids and g.text == r.text
            assert g.extra["finish_reason"] == r.extra["finish_reason"]
            assert np.allclose(g.logprobs, r.logprobs, rtol=0, atol=1e-5), (name, g.logprobs, r.logprobs)
        if flags["share_prefix"]:
            assert fast.stats.prefill_tokens < plain.stats.prefill_tokens / 2, name
        else:
            assert fast.stats.prefill_tokens == plain.stats.prefill_tokens
        if flags["drop_finished"]:
            assert fast.stats.decode_rows < plain.stats.decode_rows, name
        assert fast.stats.new_tokens == plain.stats.new_tokens


def test_prefill_counts_each_shared_token_once(tiny):
    pol = _policy(tiny, max_new_tokens=1)
    pol.generate(_requests(TEXTS), seed=0)
    distinct = sorted({tuple(pol.encode_prompt(t)) for t in TEXTS})
    shared = min(next(k for k, (x, y) in enumerate(zip(a, b)) if x != y) for a, b in zip(distinct, distinct[1:]))
    assert shared > len(SYSTEM)  # the system prompt (one token per byte) and the chat markers around it
    assert pol.stats.prompt_tokens == sum(len(pol.encode_prompt(t)) for t in TEXTS)
    # the common prefix is computed once, then each distinct prompt's own part once; duplicates cost nothing
    assert pol.stats.prefill_tokens == sum(len(p) for p in distinct) - (len(distinct) - 1) * shared


def test_samples_do_not_depend_on_batch_size_or_on_the_other_requests(tiny):
    pol = _policy(tiny, temperature=1.0)
    whole = pol.generate(_requests(TEXTS), seed=9)
    chunked = _policy(tiny, temperature=1.0, batch_size=2).generate(_requests(TEXTS), seed=9)
    assert [g.completion_ids for g in chunked] == [g.completion_ids for g in whole]
    # a request's completion depends on its index in the call, not on its neighbours
    (alone,) = pol.generate(_requests(TEXTS[:1]), seed=9)
    assert alone.completion_ids == whole[0].completion_ids
    assert whole[0].completion_ids != whole[1].completion_ids or whole[0].completion_ids != whole[2].completion_ids


def test_choice_mode_scores_are_the_same_with_a_shared_prefix(tiny):
    legal = ("[check]", "[bet]", "[fold]")
    plain = _policy(tiny, mode="choice", **PLAIN).generate(_requests(TEXTS, legal), seed=2)
    fast = _policy(tiny, mode="choice")
    shared = fast.generate(_requests(TEXTS, legal), seed=2)
    assert fast.stats.prefill_tokens < fast.stats.prompt_tokens / 2
    for a, b in zip(shared, plain):
        assert a.action == b.action
        assert np.allclose(a.choice.logliks, b.choice.logliks, atol=1e-4)
        assert np.allclose(a.logprobs, b.logprobs, atol=1e-5)


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_engine_episodes_are_the_same_with_and_without_the_fast_paths(tiny, temperature):
    """GRPO groups (identical first prompts) and resample branches (K identical prompts) through the engine."""
    runs = []
    for flags in (PLAIN, FAST_VARIANTS["both"]):
        pol = _policy(tiny, temperature=temperature, max_new_tokens=10, **flags)
        eps = RolloutEngine(pol, show_progress=False).run("think_solve-v0", num_tasks=2, group_size=3, seed=4,
                                                          branches=[BranchSpec("resample", "solver", k=2)])
        runs.append((eps, pol.stats))
    (plain, plain_stats), (fast, fast_stats) = runs
    assert fast_stats.prefill_tokens < plain_stats.prefill_tokens / 2
    assert len(plain) == len(fast) == 6
    for a, b in zip(plain, fast):
        assert a.team_rewards == b.team_rewards and a.transcript == b.transcript
        assert len(a.branches) == len(b.branches) > 0
        pairs = [(s, t) for s, t in zip(a.turns, b.turns)]
        pairs += [(s, t) for x, y in zip(a.branches, b.branches) for s, t in zip(x.turns, y.turns)]
        for s, t in pairs:
            assert s.completion_ids == t.completion_ids and s.action == t.action
            assert np.allclose(s.logprobs, t.logprobs, atol=1e-5)


# ---------------------------------------------------------------------------------------------- context limit
def test_a_prompt_longer_than_the_context_is_cut_keeping_its_head_and_tail(tiny):
    model, tok = tiny
    pol = TransformersPolicy(model, tok, system_prompt="SYSTEM RULES", max_new_tokens=8, temperature=1.0)
    assert pol.max_context == 4096
    text = "OLD " + "0123456789" * 450 + " NEWEST"  # 4,511 bytes: over the tiny model's 4,096-token context
    full = pol.encode_prompt(text)
    assert len(full) > pol.max_context
    (g,) = pol.generate(_requests([text]), seed=1)
    assert len(g.prompt_ids) == pol.max_context - pol.max_new_tokens
    assert g.extra["prompt_truncated"] == len(full) - len(g.prompt_ids)
    head = tok.decode(g.prompt_ids[:40])
    assert "SYSTEM RULES" in head and "OLD" not in tok.decode(g.prompt_ids)
    assert g.prompt_ids[-30:] == full[-30:] and "NEWEST" in tok.decode(g.prompt_ids[-30:])
    assert len(g.completion_ids) == 8
    (f,) = sequence_logprobs(model, [g.prompt_ids], [g.completion_ids], pad_id=pol.pad_id)
    assert torch.allclose(torch.tensor(g.logprobs), f, atol=1e-4)


def _gpt2_with_64_positions():
    from transformers import GPT2Config, GPT2LMHeadModel

    tok = build_tiny_tokenizer()
    config = GPT2Config(vocab_size=len(tok), n_positions=64, n_embd=32, n_layer=1, n_head=2,
                        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = GPT2LMHeadModel(config).eval()
    return model, tok


def test_a_learned_position_model_never_sees_a_prompt_past_its_context():
    model, tok = _gpt2_with_64_positions()
    with pytest.raises(IndexError):  # the failure the policy prevents: position 64 does not exist
        model(input_ids=torch.arange(10, 110)[None])
    long_text = "y" * 200
    for mode, legal in (("generate", ()), ("choice", ("[a]", "[bb]"))):
        # choice mode scores the moves' text here ("sum"), so the room is the longest move's tokens
        pol = TransformersPolicy(model, tok, mode=mode, max_new_tokens=8, choice_scoring="sum")
        assert pol.max_context == 64
        g, short = pol.generate(_requests([long_text, "hi"], legal), seed=0)
        room = 8 if mode == "generate" else 4
        assert len(g.prompt_ids) == 64 - room and g.extra["prompt_truncated"] > 0
        assert len(g.prompt_ids) + len(g.completion_ids) <= 64
        assert "prompt_truncated" not in short.extra


def test_refuse_policy_answers_an_oversized_prompt_with_an_empty_move():
    model, tok = _gpt2_with_64_positions()
    pol = TransformersPolicy(model, tok, max_new_tokens=8, context_policy="refuse")
    g, ok = pol.generate(_requests(["z" * 200, "hi"]), seed=0)
    assert g.action == "" and g.completion_ids == [] and g.logprobs == []
    assert g.extra["finish_reason"] == "context_limit" and g.extra["prompt_tokens"] > 64
    assert ok.extra["finish_reason"] in ("eos", "stop", "length") and ok.completion_ids


def test_bad_context_settings_are_refused_up_front(tiny):
    model, tok = tiny
    with pytest.raises(ValueError, match="leaves no room"):
        TransformersPolicy(model, tok, max_new_tokens=64, max_context=64)
    with pytest.raises(ValueError, match="context_policy"):
        TransformersPolicy(model, tok, context_policy="drop")
