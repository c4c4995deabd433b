"""Every command line's --help reads as plain words (no reStructuredText), gives every option a help text and ends
with examples (issue 21)."""

import argparse

import pytest

from baselines.credit import list_credits


def _parsers():
    from baselines.credit.__main__ import build_parser as credit
    from baselines.rollout import build_parser as rollout
    from baselines.train import TrainConfig
    from leaderboard.__main__ import build_parser as leaderboard

    top = leaderboard()
    out = {"python -m leaderboard": top, "python -m baselines.train": TrainConfig.parser(),
           "python -m baselines.rollout": rollout(), "python -m baselines.credit": credit()}
    subs = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    out.update({f"python -m leaderboard {name}": p for name, p in subs.choices.items()})
    return out


PARSERS = _parsers()


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_help_is_plain_words_with_help_on_every_option_and_examples_at_the_end(name):
    parser = PARSERS[name]
    text = parser.format_help()
    for markup in ("``", ":func:", ":mod:", ":class:", "::\n"):
        assert markup not in text, f"{name} --help shows reStructuredText {markup!r}"
    undocumented = [a.dest for a in parser._actions
                    if not isinstance(a, argparse._SubParsersAction) and not (a.help or "").strip()]
    assert not undocumented, f"{name}: options without help: {undocumented}"
    tail = text.rsplit("\n\n", 3)
    assert any(part.lstrip().startswith(("examples:", "example:")) for part in tail), f"{name}: no examples at the end"
    assert f"  {name.split(' -m ')[0]} -m " in text.split("example")[-1]       # the examples are commands


def test_train_help_lists_the_credit_methods_and_says_tiny_is_a_smoke_test():
    parser = PARSERS["python -m baselines.train"]
    helps = {a.dest: a.help for a in parser._actions}
    assert all(method in helps["credit"] for method in list_credits())
    assert "'tiny' is a randomly initialised 0.08M-parameter LLM for smoke tests" in helps["model"]
    doubled = [dest for dest, h in helps.items() if h and h.count("default") > 1]
    assert not doubled, f"options that state their default twice: {doubled}"


def test_benchmark_credit_help_describes_the_tiers():
    text = " ".join(PARSERS["python -m leaderboard benchmark-credit"].format_help().split())
    assert "micro an MLP policy" in text and "small SmolLM2-135M" in text
    assert "gpu the model you give with --model" in text


def test_leaderboard_help_explains_protocol_track_and_tier():
    text = PARSERS["python -m leaderboard"].format_help()
    for word in ("protocol  a fixed test", "track     policy:", "tier      the size of a credit protocol"):
        assert word in text


def test_rollout_help_offers_mlp_and_explains_branches():
    text = " ".join(PARSERS["python -m baselines.rollout"].format_help().split())
    assert '"mlp" (an untrained MLP' in text
    assert "ablate:AGENT at each of AGENT's decisions" in text and "resample:AGENT:K" in text
