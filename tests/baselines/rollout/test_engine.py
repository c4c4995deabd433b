"""The batched rollout engine (baselines.rollout): episodes, groups, reproducibility, branches, JSONL, the CLI, and
what it records for credit methods and trainers (branch rewards that agree with the branch env, legal actions and
policy settings, group keys unique across calls, fresh seeds per step)."""

from __future__ import annotations

import hashlib
import importlib.util
import json

import numpy as np
import pytest

from baselines.episode import Episode, read_jsonl, write_jsonl
from baselines.policies.base import Generation, Policy
from baselines.policies.scripted import RandomPolicy
from baselines.rollout import BranchSpec, RolloutEngine, main, summarize, training_seeds
from marl_llm_envs import list_envs, make, replay

ENV_IDS = [e for e in list_envs() if not e.startswith("textarena/")]


def _h(text: str) -> int:
    return int.from_bytes(hashlib.sha1(text.encode()).digest()[:4], "little")


class FakePolicy(Policy):
    """Deterministic (greedy-like: a function of the prompt only) or sampling (from the call seed) fake LLM.

    prompt_ids are the prompt's characters (so tests can read the prompt back); completion_ids the action's bytes.
    """

    name = "fake"

    def __init__(self, sampling: bool = False, junk: float = 0.0) -> None:
        self.sampling = sampling
        self.junk = junk
        self.calls: list[int] = []

    def generate(self, requests, seed=None):
        self.calls.append(len(requests))
        rng = np.random.default_rng(seed)
        out = []
        for r in requests:
            x = int(rng.integers(1 << 30)) if self.sampling else _h(r.text)
            if self.junk and (x % 1000) / 1000 < self.junk:
                action = "no idea"
            elif r.legal_actions:
                action = f"I pick {r.legal_actions[x % len(r.legal_actions)]}"
            elif r.role == "thinker":
                action = f"maybe {x % 7}"
            else:
                action = f"\\boxed{{{x % 12}}}"
            ids = list(action.encode())
            out.append(Generation(action=action, text=action, prompt_ids=[ord(c) for c in r.text],
                                  completion_ids=ids, logprobs=[-0.5] * len(ids)))
        return out


def _prompt(turn) -> str:
    return "".join(chr(c) for c in turn.prompt_ids)


def _strip(e: Episode) -> dict:
    d = json.loads(e.to_json())
    d.pop("wall_time_s")
    for b in d["branches"]:
        b.pop("wall_time_s")
    return d


def _check_episode(e: Episode) -> None:
    """Invariants every episode satisfies."""
    env = replay(e.transcript)
    assert env.done
    assert env.team_rewards() == e.team_rewards
    for a, total in e.rewards.items():
        mine = [t.reward for t in e.turns if t.agent == a]
        if mine:
            assert sum(mine) == pytest.approx(total)
    assert e.tokens_generated == sum(t.num_tokens for t in e.turns if not t.replayed)
    assert e.branch_tokens_generated == sum(b.tokens_generated for b in e.branches)
    for b in e.branches:
        assert b.tokens_generated == sum(t.num_tokens for t in b.turns if not t.replayed)
    for i, t in enumerate(e.turns):
        assert t.turn_index == i
        assert e.transcript["actions"][t.step_index] == t.action
        assert len(t.logprobs) == len(t.completion_ids)


# ---------------------------------------------------------------------- every env, fake policy
@pytest.mark.parametrize("mode", ["text", "discrete"])
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_every_env_plays_to_the_end(env_id, mode):
    engine = RolloutEngine(FakePolicy(sampling=True, junk=0.2), show_progress=False)
    episodes = engine.run(env_id, num_tasks=2, group_size=2, seed=3, env_kwargs={"action_mode": mode})
    assert [(e.group_id, e.sample_index) for e in episodes] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    for e in episodes:
        assert e.turns and e.seed == 3 + e.group_id
        _check_episode(e)
    if mode == "discrete":  # text moves were turned into indices
        assert any(isinstance(t.action, int) for e in episodes for t in e.turns)


@pytest.mark.parametrize("mode", ["text", "discrete"])
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_a_group_started_from_clones_of_one_reset_plays_as_with_a_reset_each(env_id, mode, monkeypatch):
    def play(cloned: bool) -> list[dict]:
        monkeypatch.setattr(RolloutEngine, "clone_group_starts", cloned)
        engine = RolloutEngine(FakePolicy(sampling=True, junk=0.2), show_progress=False, max_concurrent=4)
        return [_strip(e) for seed in (11, 12)       # the second call resets the envs the first one left at their end
                for e in engine.run(env_id, num_tasks=2, group_size=3, seed=seed, env_kwargs={"action_mode": mode})]

    assert play(True) == play(False)


def test_engines_given_one_env_pool_share_their_envs_and_play_what_fresh_engines_play(monkeypatch):
    import baselines.rollout.engine as engine_module

    made = []

    def counting_make(env_id, **kwargs):
        made.append(env_id)
        return make(env_id, **kwargs)

    monkeypatch.setattr(engine_module, "make", counting_make)
    kw = {"action_mode": "discrete"}
    pool: dict = {}
    shared = [RolloutEngine(FakePolicy(sampling=True), show_progress=False, env_pool=pool).run(
        "kuhn_poker-v0", 4, 2, seed=seed, env_kwargs=kw) for seed in (3, 9)]
    # one env per task (its other sample starts from a clone) and the one the run reads the roles from; the second
    # engine took the first one's
    assert len(made) == 5 and sum(len(envs) for envs in pool.values()) == 5
    fresh = [RolloutEngine(FakePolicy(sampling=True), show_progress=False).run(
        "kuhn_poker-v0", 4, 2, seed=seed, env_kwargs=kw) for seed in (3, 9)]
    assert len(made) == 15                 # an engine of its own makes its envs
    assert [[_strip(e) for e in run] for run in shared] == [[_strip(e) for e in run] for run in fresh]
    with pytest.raises(TypeError, match="env_pool"):
        RolloutEngine(FakePolicy(), show_progress=False, env_pool=[])


def test_a_run_with_branches_leaves_no_reference_cycles_behind():
    # what a run built is freed by reference counting as soon as its episodes go: the trainer collects only every few
    # steps, and cyclic garbage (resample siblings listing each other, with their env clones) waited for that
    import gc

    engine = RolloutEngine(FakePolicy(sampling=True), show_progress=False)
    branches = [BranchSpec("resample", "player_0", k=3), BranchSpec("ablate", "player_1")]
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        episodes = engine.run("kuhn_poker-v0", 4, 2, seed=3, env_kwargs={"rounds": 3}, branches=branches)
        assert sum(len(e.branches) for e in episodes) > 20
        del episodes
        assert gc.collect() == 0
    finally:
        if was:
            gc.enable()


def test_one_generate_call_per_tick():
    policy = FakePolicy()
    RolloutEngine(policy, show_progress=False).run("think_solve-v0", num_tasks=5, group_size=2)
    assert policy.calls == [10, 10]  # thinkers, then solvers


def test_batched_equals_one_at_a_time_under_greedy():
    for env_id in ("think_solve-v0", "kuhn_poker-v0", "voting-v0"):
        kw = {"rounds": 3} if env_id == "kuhn_poker-v0" else {}
        a = RolloutEngine(FakePolicy(), show_progress=False).run(env_id, 3, 2, seed=5, env_kwargs=kw)
        policy = FakePolicy()
        b = RolloutEngine(policy, show_progress=False, max_concurrent=1).run(env_id, 3, 2, seed=5, env_kwargs=kw)
        assert max(policy.calls) == 1
        assert [_strip(x) for x in a] == [_strip(x) for x in b]


def test_same_seed_same_episodes_and_groups_share_the_task():
    branches = [BranchSpec("resample", "solver", k=2)]
    runs = [RolloutEngine(FakePolicy(sampling=True), show_progress=False).run(
        "think_solve-v0", 4, 3, seed=seed, branches=branches) for seed in (7, 7, 8)]
    assert [_strip(e) for e in runs[0]] == [_strip(e) for e in runs[1]]
    assert [_strip(e) for e in runs[0]] != [_strip(e) for e in runs[2]]
    episodes = runs[0]
    for g in range(4):
        group = [e for e in episodes if e.group_id == g]
        assert len({e.task_id for e in group}) == 1 and group[0].task_id is not None
        assert len({e.seed for e in group}) == 1
        assert len({_prompt(e.turns[0]) for e in group}) == 1  # the same problem
    assert len({e.turns[0].action for e in episodes}) > 1      # samples differ through the policy


def test_role_mapping():
    with pytest.raises(ValueError, match="solver"):
        RolloutEngine({"thinker": FakePolicy()}, show_progress=False).run("think_solve-v0", 1)
    thinker, solver = FakePolicy(), FakePolicy(sampling=True)
    episodes = RolloutEngine({"thinker": thinker, "solver": solver}, show_progress=False).run("think_solve-v0", 3)
    assert thinker.calls == [3] and solver.calls == [3]
    assert all(_check_episode(e) is None for e in episodes)


# ---------------------------------------------------------------------- branches
def test_think_solve_ablate_branch_is_the_solo_counterfactual():
    episodes = RolloutEngine(FakePolicy(sampling=True), show_progress=False).run(
        "think_solve-v0", 6, 1, seed=11, branches=[BranchSpec("ablate", "thinker")])
    for e in episodes:
        _check_episode(e)
        (b,) = e.branches
        assert (b.kind, b.agent, b.turn_index) == ("ablate", "thinker", 0)
        (solver,) = b.turns
        assert solver.agent == "solver" and not solver.replayed
        assert _prompt(solver).startswith("You are the Solver. Solve the problem on your own.")
        assert "Message from the Thinker" not in _prompt(solver)
        assert b.tokens_generated == solver.num_tokens
        # By hand: the env before the thinker spoke, ablate("thinker"), the same solver action.
        by_hand = replay({**e.transcript, "actions": e.transcript["actions"][:e.turns[0].step_index]})
        by_hand = by_hand.ablate("thinker")
        assert by_hand.agent_selection == "solver"
        assert by_hand.observe("solver")["text"] == _prompt(solver)
        by_hand.step(solver.action)
        assert by_hand.done and by_hand.team_rewards() == b.team_rewards
        assert replay(b.transcript).team_rewards() == b.team_rewards
        assert b.rewards == {a: b.team_rewards["team"] for a in ("thinker", "solver")}


@pytest.mark.parametrize("mode", ["text", "discrete"])
def test_voting_ablate_branch_equals_team_reward_without(mode):
    policy = FakePolicy(sampling=True, junk=0.1)
    episodes = RolloutEngine(policy, show_progress=False).run(
        "voting-v0", 8, 1, seed=2, env_kwargs={"action_mode": mode, "num_candidates": 3},
        branches=[BranchSpec("ablate", "voter")])
    seen = set()
    for e in episodes:
        _check_episode(e)
        assert [b.agent for b in e.branches] == ["voter_0", "voter_1", "voter_2"]
        for b in e.branches:
            without = e.final_infos[b.agent]["team_reward_without"][b.agent]
            seen.add("spoiled" if e.turns[b.turn_index].invalid else "valid")
            assert b.team_rewards["team"] == without
            assert all(t.replayed for t in b.turns) and b.tokens_generated == 0
            assert b.agent not in {t.agent for t in b.turns}
            seen.add(without != e.team_rewards["team"])
    assert seen == {True, False, "valid", "spoiled"}  # valid and spoiled ballots were left out; some mattered


def test_resample_branches_replay_others_where_their_view_is_unchanged():
    # voting: the others' ballots are replayed (their prompts never depend on another ballot).
    episodes = RolloutEngine(FakePolicy(sampling=True), show_progress=False).run(
        "voting-v0", 3, 1, seed=4, branches=[BranchSpec("resample", "voter_0", k=3)])
    for e in episodes:
        _check_episode(e)
        assert [b.sample_index for b in e.branches] == [0, 1, 2]
        for b in e.branches:
            first, *rest = b.turns
            assert first.agent == "voter_0" and not first.replayed and first.num_tokens > 0
            assert [(t.agent, t.action, t.replayed) for t in rest] == [(t.agent, t.action, True) for t in e.turns[1:]]
            assert b.tokens_generated == first.num_tokens
    # think_solve: a new thought changes the solver's prompt, so the solver answers anew.
    episodes = RolloutEngine(FakePolicy(sampling=True), show_progress=False).run(
        "think_solve-v0", 4, 1, seed=4, branches=[BranchSpec("resample", "thinker", k=2)])
    for e in episodes:
        _check_episode(e)
        for b in e.branches:
            thought, solver = b.turns
            assert solver.replayed == (thought.action == e.turns[0].action)
            assert solver.replayed == (solver.obs_digest == e.turns[1].obs_digest)
    # kuhn poker, several turns each: every branch point of player_1, replay only where the view is unchanged.
    episodes = RolloutEngine(FakePolicy(sampling=True), show_progress=False).run(
        "kuhn_poker-v0", 3, 1, seed=4, env_kwargs={"rounds": 3}, branches=[BranchSpec("resample", "player_1", k=2)])
    for e in episodes:
        _check_episode(e)
        points = [t.turn_index for t in e.turns if t.agent == "player_1"]
        assert sorted({b.turn_index for b in e.branches}) == points
        for b in e.branches:
            assert b.turns[0].agent == "player_1" and b.turns[0].step_index == e.turns[b.turn_index].step_index
            for t in b.turns:
                if t.replayed:
                    assert any(r.obs_digest == t.obs_digest and r.action == t.action
                               for r in e.turns[b.turn_index:])


def test_branch_spec_parse():
    assert BranchSpec.parse("ablate:thinker, resample:solver:4") == [BranchSpec("ablate", "thinker"),
                                                                     BranchSpec("resample", "solver", 4)]
    for bad in ("swap:thinker", "resample:solver:x", "ablate"):
        with pytest.raises(ValueError):
            BranchSpec.parse(bad)
    with pytest.raises(ValueError, match="neither an agent"):
        RolloutEngine(FakePolicy(), show_progress=False).run("think_solve-v0", 1, branches=[BranchSpec("ablate", "x")])


# ---------------------------------------------------------------------- JSONL
def test_a_write_that_fails_midway_leaves_the_earlier_file_as_it_was(tmp_path):
    episodes = RolloutEngine(FakePolicy(), show_progress=False).run("think_solve-v0", 2, 1)
    path = tmp_path / "eps.jsonl"
    write_jsonl(path, episodes)
    before = path.read_bytes()

    def failing():
        yield episodes[0]
        raise RuntimeError("the rollout died")

    with pytest.raises(RuntimeError, match="died"):
        write_jsonl(path, failing())
    assert path.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["eps.jsonl"]
    assert write_jsonl(path, episodes[:1]) == 1 and len(read_jsonl(path)) == 1
    link = tmp_path / "link.jsonl"                  # a link is written through, as before, not replaced by a file
    link.symlink_to(path)
    assert write_jsonl(link, episodes) == 2 and link.is_symlink() and len(read_jsonl(path)) == 2


def test_jsonl_round_trip_and_corrupt_lines(tmp_path):
    episodes = RolloutEngine(FakePolicy(sampling=True), show_progress=False).run(
        "think_solve-v0", 2, 2, branches=BranchSpec.parse("ablate:thinker,resample:solver:2"))
    path = tmp_path / "eps.jsonl"
    assert write_jsonl(path, episodes) == 4
    back = read_jsonl(path)
    assert [e.to_json() for e in back] == [e.to_json() for e in episodes]
    assert back[0].branches[0].turns[0].prompt_ids == episodes[0].branches[0].turns[0].prompt_ids
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:2] + ['{"env_id": "think_solve-v0", "bro'] + lines[3:]) + "\n")
    with pytest.raises(ValueError, match=":3:"):
        read_jsonl(path)
    path.write_text("\n".join(lines[:3] + ['{"turns": []}']) + "\n")
    with pytest.raises(ValueError, match=":4:"):
        read_jsonl(path)
    path.write_text("\n".join(lines[1:]) + "\n")
    with pytest.raises(ValueError, match=":1:"):
        read_jsonl(path)
    s = summarize(episodes, 1.0)
    assert s["tokens_main"] == sum(e.tokens_generated for e in episodes)
    assert set(s["branches"]) == {"ablate:thinker", "resample:solver"}


class ChoiceLikePolicy(FakePolicy):
    """Answers as TransformersPolicy's choice mode does: exactly one of the legal move strings (the one FakePolicy
    would name); free-text turns as FakePolicy."""

    def generate(self, requests, seed=None):
        gens = super().generate(requests, seed)
        for g, r in zip(gens, requests):
            if r.legal_actions:
                g.action = g.text = g.action.removeprefix("I pick ")
                g.completion_ids = list(g.action.encode())
                g.logprobs = [-0.5] * len(g.completion_ids)
        return gens


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_legal_move_strings_are_played_as_indices_in_discrete_mode(env_id):
    for mode in ("text", "discrete"):
        episodes = RolloutEngine(ChoiceLikePolicy(sampling=True), show_progress=False).run(
            env_id, 2, 2, seed=1, env_kwargs={"action_mode": mode})
        for e in episodes:
            _check_episode(e)
            assert not any(t.invalid for t in e.turns)
            if mode == "discrete":  # every turn has a move list there, and each move became its index
                assert all(isinstance(t.action, int) for t in e.turns)


# ---------------------------------------------------------------------- CLI
def test_cli_random(tmp_path, capsys):
    out = tmp_path / "random.jsonl"
    summary = main(["--env", "think_solve-v0", "--model", "random", "--episodes", "8", "--group-size", "2",
                    "--branches", "ablate:thinker,resample:solver:2", "--no-progress", "--out", str(out)])
    printed = capsys.readouterr().out
    assert "invalid-move rate" in printed and "branch ablate:thinker" in printed
    episodes = read_jsonl(out)
    assert len(episodes) == 8 and summary["episodes"] == 8
    assert all(len(e.branches) == 3 for e in episodes)


def test_cli_builds_the_transformers_policy_from_its_flags(tmp_path, capsys, monkeypatch):
    from baselines.policies.hf import TransformersPolicy

    built = []

    def from_name(name, **kw):
        built.append((name, kw))
        return FakePolicy(sampling=True)

    monkeypatch.setattr(TransformersPolicy, "from_name", staticmethod(from_name))
    out = tmp_path / "tiny.jsonl"
    summary = main(["--env", "voting-v0", "--model", "tiny", "--episodes", "4", "--group-size", "2",
                    "--max-new-tokens", "6", "--mode", "choice", "--temperature", "0.5", "--branches", "ablate:voter_0",
                    "--no-progress", "--out", str(out)])
    assert built == [("tiny", {"device": "cpu", "dtype": None, "mode": "choice", "temperature": 0.5,
                               "max_new_tokens": 6})]      # --dtype unset: load_model's default for the device
    printed = capsys.readouterr().out
    assert "model tiny (choice)" in printed and f"{summary['tokens_per_s']:.1f} tokens/s" in printed
    assert summary["tokens_main"] > 0
    episodes = read_jsonl(out)
    assert len(episodes) == 4 and all([b.agent for b in e.branches] == ["voter_0"] for e in episodes)


# ---------------------------------------------------------------------- the tiny transformers model
def _has(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


HAS_HF = _has("torch") and _has("transformers") and _has("baselines.policies.hf")


@pytest.fixture(scope="module")
def tiny():
    if not HAS_HF:
        pytest.skip("torch/transformers or baselines.policies.hf missing")
    from baselines.policies.hf import TransformersPolicy

    return TransformersPolicy


def test_tiny_model_batched_equals_one_at_a_time_greedy(tiny):
    """The one real-model rollout: token ids and logprobs from a KV-cache generation, through the engine, with a
    branch; the fake-policy tests above check everything else the engine does."""
    policy = tiny.from_name("tiny", device="cpu", mode="generate", max_new_tokens=6, temperature=0.0)
    runs = [RolloutEngine(policy, show_progress=False, max_concurrent=c).run(
        "think_solve-v0", 3, 1, seed=9, branches=[BranchSpec("ablate", "thinker")]) for c in (None, 1)]
    assert [[t.completion_ids for t in e.turns] for e in runs[0]] == [[t.completion_ids for t in e.turns]
                                                                      for e in runs[1]]
    for e in runs[0]:
        _check_episode(e)
        assert e.tokens_generated > 0 and e.branch_tokens_generated > 0
        assert all(t.prompt_ids and len(t.logprobs) == len(t.completion_ids) for t in e.turns)


@pytest.mark.parametrize("mode", ["text", "discrete"])
def test_a_worker_role_branch_expands_to_the_workers_of_each_episode(mode):
    from baselines.policies.scripted import ScriptedPolicy
    from marl_llm_envs.reference.orchestrator import delegator

    def sometimes_alone(env, agent, rng):  # delegates some parts only, so episodes spawn different workers
        base = env.unwrapped
        if agent == "orchestrator" and base.phase == "plan" and rng.random() < 0.4:
            return 0 if mode == "discrete" else "[spawn: " + base.task.parts[0].question + "]"
        return delegator(env, agent, rng)

    episodes = RolloutEngine(ScriptedPolicy(sometimes_alone), show_progress=False).run(
        "orchestrator-v0", 12, 1, seed=5, env_kwargs={"action_mode": mode},
        branches=[BranchSpec("ablate", "worker"), BranchSpec("resample", "worker", k=2)])
    spawned_sets = set()
    for e in episodes:
        _check_episode(e)
        spawned = e.final_infos["orchestrator"]["spawned"]
        spawned_sets.add(tuple(spawned))
        ablated = [b for b in e.branches if b.kind == "ablate"]
        resampled = [b for b in e.branches if b.kind == "resample"]
        assert [b.agent for b in ablated] == spawned  # one branch per worker of this episode, none for the others
        assert [b.agent for b in resampled] == [w for w in spawned for _ in range(2)]
        for b in resampled:
            assert b.turns[0].agent == b.agent and not b.turns[0].replayed
            assert replay(b.transcript).team_rewards() == b.team_rewards
        for b in ablated:
            assert b.agent not in {t.agent for t in b.turns}
            final = [t for t in b.turns if t.agent == "orchestrator" and not t.replayed]
            assert final  # the orchestrator was asked again: its view changed
            if mode == "discrete":
                assert b.team_rewards["team"] == e.final_infos["orchestrator"]["team_reward_without"][b.agent]
            else:
                assert replay(b.transcript).infos["orchestrator"]["reports"][b.agent] is None
    assert len(spawned_sets) > 1


def test_a_role_expands_to_the_agents_present_in_the_episode():
    env = make("orchestrator-v0")
    spec_ = BranchSpec("ablate", "worker")
    assert spec_.agents(env) == ["worker_0", "worker_1", "worker_2", "worker_3"]
    assert spec_.agents(env, present={"orchestrator", "worker_2", "worker_0"}) == ["worker_0", "worker_2"]
    assert spec_.agents(env, present={"orchestrator"}) == []
    assert BranchSpec("ablate", "worker_3").agents(env, present={"orchestrator"}) == ["worker_3"]


class _SeesRequests(FakePolicy):
    """A fake LLM that keeps every request it was given."""

    def __init__(self) -> None:
        super().__init__()
        self.seen = []

    def generate(self, requests, seed=None):
        self.seen.extend(requests)
        return super().generate(requests, seed)


def test_only_a_policy_that_declares_env_is_given_the_live_env():
    """A learned policy reads what the agent observes (text, legal moves, vector), never the env; a scripted bot is a
    function of the env and declares so (``"env"`` in ``observes``). In one team, each gets what it declared."""
    from baselines.policies.base import request_for
    from baselines.policies.scripted import ScriptedPolicy
    from marl_llm_envs.scripted import oracle_thinker

    llm, bot_calls = _SeesRequests(), []

    def thinker(env, agent, rng):
        bot_calls.append(env)
        return oracle_thinker(env, agent, rng)

    bot = ScriptedPolicy(thinker)
    assert "env" in bot.observes and "env" not in llm.observes
    eps = RolloutEngine({"thinker": bot, "solver": llm}).run("think_solve-v0", num_tasks=3, group_size=2, seed=1)
    assert len(eps) == 6 and len(bot_calls) >= 6 and all(e is not None for e in bot_calls)
    assert llm.seen and all(r.env is None and r.text for r in llm.seen)
    env = make("think_solve-v0")
    env.reset(seed=0)
    assert request_for(env, "thinker", bot.observes).env is env
    assert request_for(env, "thinker", llm.observes).env is None
    with pytest.raises(ValueError, match="request_for"):
        bot.generate([request_for(env, "thinker", llm.observes)])


def test_an_mlp_on_a_request_without_its_vector_says_how_to_build_one():
    from baselines.policies.base import Request, request_for
    from baselines.policies.mlp import MLPPolicy

    env = make("kuhn_poker-v0", action_mode="discrete")
    env.reset(seed=0)
    policy = MLPPolicy.for_env(env, seed=0)
    agent = env.agent_selection
    with pytest.raises(ValueError, match="request_for"):
        policy.generate([Request(env.env_id, agent, env.roles[agent], "", (), env)])
    (g,) = policy.generate([request_for(env, agent, policy.observes)], seed=3)
    assert g.choice.inputs.mask == env.observe(agent, text=False)["action_mask"].tolist()


def test_a_policy_that_wraps_another_reads_what_the_wrapped_one_reads():
    """Wrappers forward ``observes``: a seeded-moves bot (the leaderboard's opponents) and an adapter-switching policy
    are given exactly what the policy they wrap declares (the env, for a scripted bot)."""
    from baselines.policies.scripted import ScriptedPolicy
    from baselines.train.learners import AdapterPolicy
    from leaderboard.players import SeededMoves
    from marl_llm_envs.scripted import random_legal

    bot, llm = ScriptedPolicy(random_legal), FakePolicy()
    for inner in (bot, llm):
        assert SeededMoves(inner, stream=0).observes == inner.observes
        assert AdapterPolicy(inner, model=None, adapter="a").observes == inner.observes
    assert "env" in SeededMoves(bot, stream=0).observes


def returns_by_replay(transcript: dict) -> dict[str, float]:
    """Every agent's return in the episode a transcript describes, by stepping a fresh env through it and summing
    the step rewards (and the rewards each ablation hands out) - independent of the engine's bookkeeping."""
    env = make(transcript["env_id"], **transcript["kwargs"])
    env.reset(seed=transcript["seed"])
    total = {a: 0.0 for a in env.possible_agents}
    ablations = sorted((int(i), a) for i, a in transcript["ablations"])

    def ablate(env, agent):
        before = dict(env.rewards)
        env = env.ablate(agent)
        for a, r in env.rewards.items():
            total[a] += r - before.get(a, 0.0)
        return env

    k = 0
    for i, action in enumerate(transcript["actions"]):
        while k < len(ablations) and ablations[k][0] == i:
            env, k = ablate(env, ablations[k][1]), k + 1
        dead = env.terminations[env.agent_selection] or env.truncations[env.agent_selection]
        env.step(action["float"] if isinstance(action, dict) and "float" in action else action)
        if not dead:
            for a, r in env.rewards.items():
                total[a] += r
    while k < len(ablations):
        env, k = ablate(env, ablations[k][1]), k + 1
    return total


CASES = [
    ("think_solve-v0", {}, [BranchSpec("ablate", "solver"), BranchSpec("ablate", "thinker")]),
    ("think_solve-v0", {"action_mode": "discrete"}, [BranchSpec("ablate", "solver"),
                                                     BranchSpec("resample", "thinker", k=2)]),
    ("voting-v0", {"action_mode": "discrete"}, [BranchSpec("ablate", "voter")]),
    ("kuhn_poker-v0", {"rounds": 3, "action_mode": "discrete"}, [BranchSpec("ablate", "player_1"),
                                                                 BranchSpec("resample", "player_0", k=2)]),
]


@pytest.mark.parametrize("env_id,kwargs,branches", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_branch_rewards_are_the_branch_envs_own_returns(env_id, kwargs, branches):
    # Fails when Branch.rewards drops the main episode's rewards before the branch point (base_rewards: the
    # 3-round Kuhn case) or misses what ablate() hands out itself (terminal ablations: every ablate case).
    episodes = RolloutEngine(RandomPolicy(seed=1), show_progress=False).run(
        env_id, num_tasks=4, group_size=2, seed=11, env_kwargs=kwargs, branches=branches)
    n = 0
    for e in episodes:
        assert e.rewards == pytest.approx(returns_by_replay(e.transcript))
        for b in e.branches:
            n += 1
            assert b.rewards == pytest.approx(returns_by_replay(b.transcript)), (b.kind, b.agent, b.turn_index)
            env = make(env_id, **kwargs)
            for agent, r in b.rewards.items():
                # team members share the team's outcome; the branch's team reward is that outcome
                assert r == pytest.approx(b.team_rewards[env.teams[agent]])
    assert n > 0


def test_a_terminal_ablation_hands_its_rewards_to_the_branch():
    # think_solve's solver ablated: the null answer ends the episode inside ablate() and scores as wrong.
    episodes = RolloutEngine(RandomPolicy(seed=0), show_progress=False).run(
        "think_solve-v0", num_tasks=2, env_kwargs={"reward_scheme": "signed"}, branches=[BranchSpec("ablate", "solver")])
    for e in episodes:
        (b,) = e.branches
        assert b.team_rewards == {"team": -1.0}
        assert b.rewards == {"thinker": -1.0, "solver": -1.0}
        assert b.turns == []


def test_turns_record_the_legal_actions_offered_and_episodes_the_policy_settings():
    episodes = RolloutEngine(RandomPolicy(seed=0), show_progress=False).run(
        "kuhn_poker-v0", num_tasks=2, env_kwargs={"action_mode": "discrete"})
    first = episodes[0].turns[0]
    assert first.legal_actions == ["[check]", "[bet]"]
    assert episodes[0].policies == {"player_0": {"name": "random", "version": 0, "backend": "RandomPolicy"},
                                    "player_1": {"name": "random", "version": 0, "backend": "RandomPolicy"}}
    text = RolloutEngine(RandomPolicy(seed=0), show_progress=False).run("think_solve-v0", num_tasks=1)
    assert [t.legal_actions for t in text[0].turns] == [[], []]   # free-text turns


def test_policy_settings_name_the_sampling_settings():
    class Sampler(Policy):
        name = "sampler"
        mode, temperature, top_p, max_new_tokens = "generate", 0.7, 0.9, 64

        def generate(self, requests, seed=None):
            return [Generation(action="\\boxed{1}") for _ in requests]

    policy = Sampler()
    policy.version = 3
    assert policy.settings() == {"name": "sampler", "version": 3, "backend": "Sampler", "mode": "generate",
                                 "temperature": 0.7, "top_p": 0.9, "max_new_tokens": 64}
    (e,) = RolloutEngine(policy, show_progress=False).run("think_solve-v0", 1)
    assert e.policies["solver"]["temperature"] == 0.7 and e.policies["thinker"]["version"] == 3


def test_group_keys_are_unique_across_calls_and_seeds_fresh_per_step():
    engine = RolloutEngine(RandomPolicy(seed=0), show_progress=False)
    a = engine.run("think_solve-v0", num_tasks=2, group_size=2, seed=0)
    b = engine.run("think_solve-v0", num_tasks=2, group_size=2, seed=1)
    assert a[0].group_id == b[0].group_id == 0
    assert {e.group_key for e in a}.isdisjoint({e.group_key for e in b})
    again = engine.run("think_solve-v0", num_tasks=2, group_size=2, seed=0)
    assert [e.group_key for e in again] == [e.group_key for e in a]   # a run_id is a function of the call

    steps = [training_seeds(100, k, 3) for k in range(4)]
    base = 100 * 2**24
    assert steps[0] == [base, base + 1, base + 2] and steps[1] == [base + 3, base + 4, base + 5]
    flat = [s for step in steps for s in step]
    assert len(set(flat)) == len(flat)
    episodes = engine.run("think_solve-v0", 3, 2, seeds=steps[2], run_id="step-2")
    assert [e.seed for e in episodes] == [base + 6, base + 6, base + 7, base + 7, base + 8, base + 8]
    assert {e.run_id for e in episodes} == {"step-2"}
    with pytest.raises(ValueError, match="seeds has 2 entries but num_tasks is 3"):
        engine.run("think_solve-v0", 3, seeds=[1, 2])
    with pytest.raises(ValueError, match="step must be a non-negative int"):
        training_seeds(0, -1, 3)


def test_training_base_seeds_never_share_a_task_and_stay_below_the_evaluation_seeds():
    # two runs with neighbouring base seeds are independent replicates: no env seed (task) in common over a long run
    a = {s for k in range(1000) for s in training_seeds(0, k, 64)}
    b = {s for k in range(1000) for s in training_seeds(1, k, 64)}
    assert not a & b and training_seeds(0, 5, 4) == [20, 21, 22, 23]        # base seed 0: the seeds of old
    assert max(training_seeds(2**16 - 1, 2**24 // 8 - 1, 8)) < 2**40
    with pytest.raises(ValueError, match="base_seed must be below"):
        training_seeds(2**16, 0, 8)
    with pytest.raises(ValueError, match="stream"):
        training_seeds(3, 2**24 // 8, 8)


def test_a_branch_role_that_this_envs_kwargs_leave_without_a_seat_names_no_agent():
    # loo asks for ablate branches of every role of free_riding-v0 (decider, idle); with idle_seats=0 there is no
    # idle seat, which is nothing to branch on, not an error; a name that is no role of the env still is one
    from marl_llm_envs import make

    env = make("free_riding-v0", idle_seats=0, action_mode="discrete")
    assert BranchSpec("ablate", "idle").agents(env) == []
    assert BranchSpec("ablate", "decider").agents(env) == ["decider"]
    with pytest.raises(ValueError, match="neither an agent"):
        BranchSpec("ablate", "idler").agents(env)
