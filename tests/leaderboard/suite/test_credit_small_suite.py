"""The small tier's credit suite, ``credit-small@3`` (issue 16, item 4): the micro@3 families in text, played by an
LLM in choice mode, with anchors measured in text mode, and exact zero-sum scores read from a choice-mode LLM."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from leaderboard.suite import SUITE_DIR, anchor_value, execute, latest_suite, load_suite, parse_suite, plan, score
from marl_llm_envs import make, spec

SMALL = "credit-small@3"


def test_credit_small_3_is_the_latest_small_suite_and_version_2_stays_readable():
    assert latest_suite("credit-small") == SMALL
    old = load_suite("credit-small@2")
    assert old.version == 2 and old.action_mode == "text"


def test_the_small_suite_mirrors_micro_3_families_in_text_with_smollm2_in_choice_mode():
    small, micro = load_suite(SMALL), load_suite("credit-micro@3")
    assert small.tier == "small" and small.action_mode == "text"
    assert small.train["model"] == "smollm2-135m" and small.train["mode"] == "choice"
    assert {f.name for f in small.families} == {f.name for f in micro.families} - {"team_size"}
    by_name = {s.name: s for s in micro.settings}
    for s in small.settings:          # the same setting (name, env, partners, anchors' policies) as on the micro tier
        twin = by_name[s.name]
        assert (s.family, s.env_id, s.partners, s.play, s.opponent) == \
               (twin.family, twin.env_id, twin.partners, twin.play, twin.opponent), s.name
        assert s.normalize == twin.normalize, s.name
    assert all(s.evaluate == "exact" for s in small.settings if s.play == "versus")
    assert "hours" in small.description and "GPU" in small.description        # the budget is stated


def test_every_knobbed_family_sweeps_its_knob_at_two_points_at_least():
    small = load_suite(SMALL)
    swept = {f.name: sorted(s.knob for s in f.settings if s.knob is not None) for f in small.families if f.knob}
    assert swept == {"message_credit": [0.6, 1.0], "temporal": [3, 10], "free_riding": [1, 3],
                     "dynamic_teams": [2, 3]}
    for f in small.families:
        for s in f.settings:
            if s.knob is not None:
                assert s.env_kwargs[f.knob if f.knob != "parts" else "tasks"] in (s.knob, f"composite:parts={s.knob}")


def test_every_setting_env_takes_its_kwargs_in_text_mode_and_lists_moves_where_choice_mode_scores_them():
    free_text = {("think_solve-v0", "thinker"), ("orchestrator-v0", "worker")}   # the learning seats that write text
    for s in load_suite(SMALL).settings:
        env = make(s.env_id, action_mode="text", **s.env_kwargs)
        env.reset(seed=2**40)
        partners = {item.split("=")[0] for item in s.partners.split(",") if item}
        seen = set()
        rng = np.random.default_rng(0)
        while not env.done:
            agent = env.agent_selection
            role = env.roles[agent]
            legal = env.legal_actions(agent)
            if role not in partners:
                seen.add(role)
                assert bool(legal) != ((s.env_id, role) in free_text), (s.name, role)
            if legal:
                env.step(legal[int(rng.integers(len(legal)))])
            else:
                from marl_llm_envs.reference import reference_policies

                env.step(next(iter(reference_policies(s.env_id).values()))(env, agent, rng))
        assert seen, s.name


def _row(env_id: str, name: str) -> dict:
    rows = spec(env_id).anchors
    assert name in rows, f"{env_id}: no anchors row {name!r} (python benchmarks/anchors.py --only credit_small --write)"
    return rows[name]


def _where(s) -> str:
    return ", ".join(x for x in (", ".join(f"{k}={v}" for k, v in s.env_kwargs.items()), "text mode") if x)


def test_the_anchors_file_holds_every_measured_small_anchor_in_text_mode_with_the_manuals_values():
    measured = [s for s in load_suite(SMALL).settings if s.play == "self" and isinstance(s.normalize["one"], str)]
    assert {s.env_id for s in measured} == {"think_solve-v0", "mini_hanabi-v1", "free_riding-v0", "orchestrator-v0"}
    for s in measured:
        zero, one = (_row(s.env_id, f"{s.normalize[k]}, {_where(s)}") for k in ("zero", "one"))
        assert one["mean"] - one["ci95"] > zero["mean"] + zero["ci95"], s.name
        if s.partners:            # learners that contribute nothing beside the scripted partners score the zero
            idle = _row(s.env_id, f"random learners, {s.partners}, {_where(s)}")
            assert abs(idle["mean"] - zero["mean"]) <= idle["ci95"] + zero["ci95"] + 0.01, s.name
        a = s.env_kwargs.get("thinker_clue_accuracy")
        if a is not None:         # clue_relay passes the clue on: right with probability a (the manual)
            assert abs(one["mean"] - a) <= one["ci95"] + 1e-9, s.name
        if s.env_id == "free_riding-v0":
            assert one["mean"] == 1.0 and abs(zero["mean"] - 1 / 3) <= zero["ci95"], s.name
        if s.env_id == "orchestrator-v0":      # the delegator's workers solve every part: the attainable maximum
            assert one["mean"] == 1.0, s.name
    umbrella = [s for s in load_suite(SMALL).settings if s.env_id == "team_umbrella-v0"]
    assert umbrella and all(s.normalize == {"zero": 0.0, "one": 1.0} for s in umbrella)   # proved in its manual


def test_the_suite_measures_its_anchors_in_text_mode_as_the_anchors_file_says():
    raw = json.loads((SUITE_DIR / f"{SMALL}.json").read_text())
    raw["score"]["anchor_episodes"] = 300
    suite = parse_suite(raw)
    for s in suite.settings:
        if s.play != "self" or not isinstance(s.normalize["one"], str) or s.env_id == "mini_hanabi-v1":
            continue
        for k in ("zero", "one"):
            row = _row(s.env_id, f"{s.normalize[k]}, {_where(s)}")
            got = anchor_value(suite, s, k)
            assert abs(got - row["mean"]) <= 4 * max(row["ci95"], 0.01) * math.sqrt(row["games"] / 300), (s.name, k)


def _tiny_suite(families: set[str], drop: set[str] = frozenset()):
    raw = json.loads((SUITE_DIR / f"{SMALL}.json").read_text())
    raw["train"].update(model="tiny", steps=1, tasks_per_step=1, group_size=2, seeds=[0])
    raw["score"]["anchor_episodes"] = 20
    raw["families"] = [f for f in raw["families"] if f["name"] in families]
    for f in raw["families"]:
        f["settings"] = [s for s in f["settings"] if s["name"] not in drop]
    return parse_suite(raw)


def test_one_step_of_every_setting_trains_and_scores_with_a_tiny_choice_mode_model(tmp_path):
    suite = _tiny_suite({"message_credit", "temporal", "free_riding", "dynamic_teams", "zero_sum"},
                        drop={"leduc_holdem/self-play"})       # Leduc's exact walk: the slow test below
    results = execute(plan(suite, ["broadcast"], tmp_path)[0])
    assert [r["setting"] for r in results] == [s.name for s in suite.settings]
    assert all(math.isfinite(r["raw"]) for r in results)
    kuhn = next(r for r in results if r["setting"] == "kuhn_poker/self-play")
    assert kuhn["exploitability"] > 0                        # the exact figures, read from the LLM's choices
    idle = [r for r in results if r["setting"].startswith("free_riding/")]
    assert all(0 <= r["idle_drift"] <= math.log(3) + 1e-9 for r in idle)
    config = json.loads((tmp_path / "broadcast" / "free_riding_idle1" / "seed0" / "config.json").read_text())
    assert config["mode"] == "choice" and config["resolved"]["action_mode"] == "text"
    scored = score(suite, results)
    assert set(scored["methods"]["broadcast"]["families"]) == {f.name for f in suite.families}


@pytest.mark.slow
def test_leduc_self_play_trains_and_is_scored_exactly_with_a_tiny_choice_mode_model(tmp_path):
    suite = _tiny_suite({"zero_sum"}, drop={"kuhn_poker/self-play"})
    (result,) = execute(plan(suite, ["broadcast"], tmp_path)[0])
    assert math.isfinite(result["raw"]) and result["exploitability"] > 0


# ---------------------------------------------------------------------- exact scores of a choice-mode LLM
def _tiny_policy(**kw):
    from baselines.policies.hf import TransformersPolicy

    return TransformersPolicy.from_name("tiny", mode="choice", **kw)


def test_exact_evaluation_reads_a_choice_mode_llm_strategy_from_its_choice_probabilities():
    from baselines.policies.base import Request
    from leaderboard import exact
    from marl_llm_envs.envs.kuhn_poker import kuhn_infoset

    policy = _tiny_policy()
    table = exact.strategy_of("kuhn_poker-v0", exact.policy_decider({"player_0": policy, "player_1": policy}))
    env = make("kuhn_poker-v0", action_mode="text")
    env.reset(seed=0)
    agent = env.agent_selection
    legal = tuple(env.legal_actions(agent))
    g = policy.generate([Request(env.env_id, agent, env.roles[agent], env.observe(agent)["text"], legal, env)],
                        seed=0)[0]
    probs = g.choice.probs
    # Kuhn's first move: legal [check], [bet]; the tree's actions (pass, bet) are the same two, in that order
    assert table[kuhn_infoset(env, agent)] == pytest.approx(list(probs), abs=1e-6)
    assert all(abs(sum(p) - 1) < 1e-6 for p in table.values())
    assert -1 < exact.versus("kuhn_poker-v0", table) < 0 < exact.exploitability("kuhn_poker-v0", table)


def test_exact_evaluation_of_a_greedy_llm_is_its_argmax_and_a_generating_llm_is_refused():
    from leaderboard import exact

    greedy = _tiny_policy(temperature=0.0)
    table = exact.strategy_of("kuhn_poker-v0", exact.policy_decider({"player_0": greedy, "player_1": greedy}))
    assert all(sorted(p) == [0.0, 1.0] for p in table.values())
    free = _tiny_policy()
    free.mode = "generate"                 # no legal-move scoring: no distribution to read
    with pytest.raises(ValueError, match="role 'player_0'.*gave none"):
        exact.strategy_of("kuhn_poker-v0", exact.policy_decider({"player_0": free, "player_1": free}))
