"""Learned-critic credit (mappo, ippo): GAE against hand-worked numbers, each agent's own turn sequence, the critic's
inputs and update, exact state round trips, the env's global state, and the trainer with a critic (kill -9 and
resume, two-process data parallel)."""

from __future__ import annotations

import importlib
import json
import warnings

import numpy as np
import pytest
import torch

from baselines.credit import make_credit
from baselines.credit.mappo import gae
from baselines.episode import Episode, Turn
from baselines.rollout import RolloutEngine
from marl_llm_envs import make
from tests.baselines.train.helpers import _comparable, _kill_after_step, _metrics, _one_and_two_processes, _run


def episode(turns, rewards, *, group=0, sample=0, env_id="voting-v0", states=None):
    """``turns`` = [(agent, turn reward)]; every turn's recorded state is ``states[k]`` (default: its index)."""
    made = [Turn(agent, "voter", "team", completion_ids=[0], reward=r, turn_index=k,
                 state=list(states[k]) if states else [float(k)] * 4) for k, (agent, r) in enumerate(turns)]
    return Episode(env_id, 0, {"action_mode": "discrete"}, seed=group, task_id=None, group_id=group,
                   sample_index=sample, turns=made, rewards=dict(rewards), team_rewards={"team": max(rewards.values())},
                   run_id="r")


def constant_critic(method, value: float) -> None:
    """Set every network of ``method`` to output ``value`` (last layer: zero weights, bias = value)."""
    for net in method.critic.nets.values():
        with torch.no_grad():
            net.net[-1].weight.zero_()
            net.net[-1].bias.fill_(value)


# ---------------------------------------------------------------------- GAE, by hand
def test_gae_matches_the_hand_worked_example():
    # gamma 0.9, lambda 0.8, rewards (0, 1, 2), values (0.5, 1, -1), V after the end 0:
    # delta = (0 + 0.9*1 - 0.5, 1 + 0.9*(-1) - 1, 2 + 0 - (-1)) = (0.4, -0.9, 3)
    # A_2 = 3; A_1 = -0.9 + 0.72*3 = 1.26; A_0 = 0.4 + 0.72*1.26 = 1.3072; G = A + V = (1.8072, 2.26, 2)
    adv, ret = gae([0.0, 1.0, 2.0], [0.5, 1.0, -1.0], gamma=0.9, lam=0.8)
    assert adv == pytest.approx([1.3072, 1.26, 3.0], abs=1e-9)
    assert ret == pytest.approx([1.8072, 2.26, 2.0], abs=1e-9)
    # lambda = 1: return-to-go minus V, (3 - 0.5, 3 - 1, 2 + 1); lambda = 0: the one-step TD error
    assert gae([0.0, 1.0, 2.0], [0.5, 1.0, -1.0], 1.0, 1.0)[0] == pytest.approx([2.5, 2.0, 3.0], abs=1e-9)
    assert gae([0.0, 1.0, 2.0], [0.5, 1.0, -1.0], 0.9, 0.0)[0] == pytest.approx([0.4, -0.9, 3.0], abs=1e-9)


@pytest.mark.parametrize("name", ["mappo", "ippo"])
def test_gae_runs_on_each_agents_own_turn_sequence(name):
    # turns a, b, a, b, a with rewards a: (0, 0, 1), b: (0, 1); V = 0.25 everywhere; gamma 1, lambda 0.5.
    # a: delta = (0, 0, 0.75) -> A = (0.1875, 0.375, 0.75); b: delta = (0, 0.75) -> A = (0.375, 0.75)
    method = make_credit(name, lam=0.5, normalize=False)
    e = episode([("voter_0", 0.0), ("voter_1", 0.0), ("voter_0", 0.0), ("voter_1", 1.0), ("voter_0", 1.0)],
                {"voter_0": 1.0, "voter_1": 1.0})
    method.advantages([e])                  # builds the networks
    constant_critic(method, 0.25)
    assert method.advantages([e])[0] == pytest.approx([0.1875, 0.375, 0.375, 0.75, 0.75], abs=1e-9)


def test_normalized_advantages_are_standardized_over_the_batch():
    method = make_credit("mappo")
    es = [episode([("voter_0", r), ("voter_1", 0.0)], {"voter_0": r, "voter_1": r}, sample=j)
          for j, r in enumerate([0.0, 1.0, 1.0])]
    x = np.concatenate(method.advantages(es))
    assert abs(x.mean()) < 1e-9 and x.std() == pytest.approx(1.0, abs=1e-5)


# ---------------------------------------------------------------------- what the critic sees
def test_mappo_keeps_one_network_per_team_and_ippo_one_per_agent():
    e = episode([("voter_0", 0.0), ("voter_1", 1.0)], {"voter_0": 1.0, "voter_1": 1.0})
    mappo, ippo = make_credit("mappo"), make_credit("ippo")
    mappo.advantages([e])
    ippo.advantages([e])
    assert sorted(mappo.critic.nets) == ["voting-v0/team"]
    assert sorted(ippo.critic.nets) == ["voting-v0/voter_0", "voting-v0/voter_1"]
    seats = len(make("voting-v0").possible_agents)
    assert mappo.critic.nets["voting-v0/team"].net[0].in_features == 4 + seats    # state, then the seat one-hot
    assert ippo.critic.nets["voting-v0/voter_0"].net[0].in_features == 4           # the agent's observation only
    assert mappo.needs_state == "global" and ippo.needs_state == "observation"
    assert len(mappo.parameters()) == 6 and len(ippo.parameters()) == 12


def test_a_turn_without_a_recorded_state_names_the_episode_and_the_fix():
    e = episode([("voter_0", 1.0)], {"voter_0": 1.0})
    e.turns[0].state = None
    with pytest.raises(ValueError, match=r"mappo: turn 0 \(voter_0\) of episode 0 \(voting-v0.*record_state='global'"):
        make_credit("mappo").advantages([e])


def test_bad_options_are_named():
    with pytest.raises(ValueError, match="gamma and lam must be in"):
        make_credit("mappo", lam=1.5)
    with pytest.raises(ValueError, match="epochs must be a positive int"):
        make_credit("ippo", epochs=0)
    with pytest.raises(ValueError, match="mappo has no option 'lambda'"):
        make_credit("mappo", **{"lambda": 0.9})


# ---------------------------------------------------------------------- the critic's update and its state
def _batch(seed=0, n=8):
    rng = np.random.default_rng(seed)
    out = []
    for j in range(n):
        r = float(rng.integers(2))
        states = [[r, 1.0 - r, 0.0, 1.0], [r, 1.0 - r, 1.0, 0.0]]   # the state tells the outcome: V can learn it
        out.append(episode([("voter_0", 0.0), ("voter_1", r)], {"voter_0": r, "voter_1": r}, sample=j,
                           states=states))
    return out


@pytest.mark.parametrize("name", ["mappo", "ippo"])
def test_the_critic_update_fits_the_returns(name):
    method = make_credit(name)
    batch = _batch()
    first = method.update(batch)
    for _ in range(30):
        last = method.update(batch)
    assert set(first) == {"critic_loss", "critic_loss_after", "critic_explained_variance"}
    assert first["critic_loss_after"] < first["critic_loss"]
    assert last["critic_loss"] < 0.1 * first["critic_loss"] and last["critic_explained_variance"] > 0.8


@pytest.mark.parametrize("name", ["mappo", "ippo"])
def test_an_empty_batch_is_no_update_and_no_metrics(name):
    # it used to take NumPy's variance of nothing: a RuntimeWarning and NaN explained variance in the metrics
    method = make_credit(name)
    method.update(_batch())
    state = json.dumps(method.state_dict())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert method.update([]) == {} and method.advantages([]) == []
    assert json.dumps(method.state_dict()) == state


@pytest.mark.parametrize("name", ["mappo", "ippo"])
def test_state_dict_round_trips_exactly_through_json(name):
    method = make_credit(name, seed=3)
    for s in range(3):
        method.update(_batch(s))
    copy = make_credit(name, seed=3)
    copy.load_state_dict(json.loads(json.dumps(method.state_dict())))
    batch = _batch(7)
    assert copy.advantages(batch) == method.advantages(batch)
    assert copy.update(batch) == method.update(batch)       # the Adam moments came back too
    for p, q in zip(method.parameters(), copy.parameters()):
        assert torch.equal(p, q)
    with pytest.raises(ValueError, match=f"{name} state is"):
        copy.load_state_dict({"baselines": {}})


def test_a_networks_initial_weights_do_not_depend_on_the_order_keys_appear_in():
    a, b = make_credit("ippo"), make_credit("ippo")
    e0 = episode([("voter_0", 0.0), ("voter_1", 1.0)], {"voter_0": 1.0, "voter_1": 1.0})
    e1 = episode([("voter_1", 0.0), ("voter_0", 1.0)], {"voter_0": 1.0, "voter_1": 1.0})
    a.advantages([e0])
    b.advantages([e1])
    for key in a.critic.nets:
        for p, q in zip(a.critic.nets[key].parameters(), b.critic.nets[key].parameters()):
            assert torch.equal(p, q)


# ---------------------------------------------------------------------- the env's global state and its recording
def test_the_default_global_state_concatenates_every_agents_observation():
    env = make("kuhn_poker-v0").unwrapped
    with pytest.raises(RuntimeError, match="reset"):
        env.state()
    env.reset(seed=4)
    expected = np.concatenate([env.observe(a)["observation"] for a in env.possible_agents])
    assert np.array_equal(env.state(), expected)


def test_hanabi_state_is_the_union_of_the_private_views():
    env = make("mini_hanabi-v1").unwrapped
    env.reset(seed=2)
    state = env.state()
    P, H, CR = env.players, env.hand_size, env.colors * env.ranks
    hands = state[:P * H * CR].reshape(P, H, CR)
    for q in range(P):                  # every hand, the ones no agent sees of itself included
        assert [int(np.argmax(slot)) for slot in hands[q]] == list(env._hands[q])
    own = env.observe(env.possible_agents[0])["observation"]
    assert np.array_equal(state[P * H * CR:], own[(P - 1) * H * CR:])
    assert state.size < P * env.vector_size


@pytest.mark.parametrize("env_id", ["kuhn_poker-v0", "mini_hanabi-v1", "voting-v0"])
def test_state_passes_pettingzoos_state_test(env_id):
    pettingzoo_state = importlib.import_module("pettingzoo.test.state_test")   # the module (its name is shadowed)

    env = make(env_id, action_mode="discrete")
    pettingzoo_state.test_state_space(env)
    pettingzoo_state.test_state(env, num_cycles=50)


@pytest.mark.parametrize("kind", ["global", "observation"])
def test_the_engine_records_the_state_before_each_turn_when_asked(kind):
    from baselines.policies.scripted import RandomPolicy

    engine = RolloutEngine(RandomPolicy(seed=0), show_progress=False, record_state=kind)
    e = engine.run("kuhn_poker-v0", 1, 1, seed=5, env_kwargs={"action_mode": "discrete"})[0]
    env = make("kuhn_poker-v0", action_mode="discrete").unwrapped
    env.reset(seed=5)
    for t in e.turns:
        want = env.state() if kind == "global" else env.observe(t.agent)["observation"]
        assert t.state == [float(x) for x in want]
        env.step(t.action)
    assert Episode.from_json(e.to_json()).turns[0].state == e.turns[0].state
    plain = RolloutEngine(RandomPolicy(seed=0), show_progress=False).run("kuhn_poker-v0", 1, 1, seed=5)[0]
    assert all(t.state is None for t in plain.turns)
    with pytest.raises(ValueError, match="record_state='all' is not one of"):
        RolloutEngine(RandomPolicy(seed=0), record_state="all")


# ---------------------------------------------------------------------- the trainer with a critic
CRITIC_ARGS = ["--env", "voting-v0", "--action-mode", "discrete", "--credit", "mappo", "--model", "mlp",
               "--tasks-per-step", "4", "--group-size", "2"]


def test_kill_minus_nine_and_resume_with_a_critic_ends_with_the_same_metrics(tmp_path):
    args = [*CRITIC_ARGS, "--steps", "4", "--save-every", "2"]
    whole = _run(tmp_path, *args, name="whole")
    assert whole.returncode == 0, whole.stderr
    rows = _metrics(tmp_path / "whole" / "metrics.jsonl")
    assert all(r["credit/critic_loss"] > 0 for r in rows)                  # the critic's loss is logged every step
    killed = _kill_after_step(tmp_path, 3, *args, name="killed")     # killed after step 3, checkpoint at 2
    assert killed.returncode == -9
    resumed = _run(tmp_path, *args, "--resume", name="killed")
    assert resumed.returncode == 0, resumed.stderr
    assert _comparable(_metrics(tmp_path / "killed" / "metrics.jsonl")) == _comparable(rows)


def test_two_process_data_parallel_with_a_critic_matches_one_process(tmp_path):
    a, b = _one_and_two_processes(tmp_path, *CRITIC_ARGS, "--steps", "2")
    for x, y in zip(a, b):
        assert x["reward/team/team"] == y["reward/team/team"]          # the same episodes
        assert x["credit/critic_loss"] == pytest.approx(y["credit/critic_loss"], rel=1e-5)
    ca = json.loads((tmp_path / "one" / "checkpoints" / "step-0000002" / "meta.json").read_text())["credit"]
    cb = json.loads((tmp_path / "two" / "checkpoints" / "step-0000002" / "meta.json").read_text())["credit"]
    for key, net in ca["critics"].items():
        for p, q in zip(net["params"], cb["critics"][key]["params"]):
            assert np.allclose(p, q, atol=1e-6), key


# ---------------------------------------------------------------------- LLM tiers: a value head on the policy model
@pytest.mark.slow
def test_the_trainer_attaches_the_value_head_and_logs_its_loss(tmp_path):
    from baselines.train import TrainConfig, train

    cfg = TrainConfig(env="think_solve-v0", model="tiny", max_new_tokens=4, credit="mappo",
                      credit_options={"critic": "value_head"}, steps=1, tasks_per_step=2, group_size=2,
                      out=str(tmp_path / "run"), progress=False, tensorboard=False)
    metrics = train(cfg)
    assert metrics["credit/critic_loss"] > 0 and "credit/critic_explained_variance" in metrics
    state = json.loads((tmp_path / "run" / "checkpoints" / "step-0000001" / "meta.json").read_text())["credit"]
    assert sorted(state["critics"]) == ["value_head"]
    assert state["critics"]["value_head"]["in_size"] == 64          # the tiny model's hidden size


def test_per_role_value_heads_read_each_roles_adapter_at_the_last_prompt_token():
    pytest.importorskip("peft")
    from baselines.train import TrainConfig
    from baselines.train.learners import build_team

    cfg = TrainConfig(env="think_solve-v0", model="tiny", max_new_tokens=4, adapters="per_role")
    env = make("think_solve-v0")
    team = build_team(cfg, env, sorted(set(env.roles.values())))
    method = make_credit("ippo", critic="value_head", heads="per_role")
    assert method.needs_state is None                       # it reads prompt tokens, not a recorded state
    e = RolloutEngine(team.policies, show_progress=False).run("think_solve-v0", 1, 2, seed=2)
    with pytest.raises(ValueError, match="the trainer attaches it"):
        method.advantages(e)
    method.attach(team)
    model = team.learners[0].module
    for t in e[0].turns:
        model.set_adapter(t.role)
        with torch.no_grad():
            h = model(input_ids=torch.tensor([t.prompt_ids]), output_hidden_states=True).hidden_states[-1][0, -1]
        assert method.features(e[0], 0, t) == pytest.approx(h.tolist(), abs=1e-6)
    assert [len(a) for a in method.advantages(e)] == [len(x.turns) for x in e]
    assert method.update(e)["critic_loss"] > 0
    assert sorted(method.critic.nets) == ["value_head/solver", "value_head/thinker"]
    with torch.no_grad():                     # the policy moves between batches: the next batch reads it anew
        for n, p in model.named_parameters():
            if "lora_B" in n:
                p.add_(0.5)
    before = method.features(e[0], 0, e[0].turns[0])
    method.advantages(e)
    assert method.features(e[0], 0, e[0].turns[0]) != pytest.approx(before, abs=1e-6)
    assert all(p.requires_grad for n, p in model.named_parameters() if "lora_" in n)   # both adapters still train


def test_the_critic_example_in_the_package_docstring_runs_and_fits(monkeypatch):
    import textwrap

    import baselines.credit as credit
    from baselines.credit import base

    doc = credit.__doc__
    start = doc.index('    @register("my_critic")')
    source = textwrap.dedent(doc[start:doc.index("\n(with ``state_dict``", start)])
    monkeypatch.setattr(base, "_REGISTRY", dict(base._REGISTRY))        # keep the example out of the registry
    namespace = {"torch": torch, "register": base.register, "CreditMethod": base.CreditMethod,
                 "check_batch": base.check_batch, "check_positive": base.check_positive, "fill": base.fill,
                 "outcome": base.outcome}
    exec(compile(source, "baselines.credit docstring", "exec"), namespace)
    method = make_credit("my_critic", lr=0.05)
    batch = _batch()
    assert [len(a) for a in method.advantages(batch)] == [2] * len(batch)
    first = method.update(batch)["critic_loss"]
    for _ in range(100):
        last = method.update(batch)["critic_loss"]
    assert last < 0.5 * first and len(method.parameters()) == 2


def test_the_rollout_command_records_states_for_the_credit_command(tmp_path, capsys):
    from baselines.credit.__main__ import main as credit_main
    from baselines.rollout import main as rollout_main

    path = tmp_path / "episodes.jsonl"
    base = ["--env", "kuhn_poker-v0", "--model", "random", "--env-kwargs", '{"action_mode": "discrete"}',
            "--episodes", "8", "--group-size", "2", "--no-progress", "--out", str(path)]
    rollout_main([*base, "--record-state", "global"])
    assert credit_main(["--episodes", str(path), "--method", "mappo", "--json"])["episodes"] == 8
    rollout_main(base)
    with pytest.raises(SystemExit):
        credit_main(["--episodes", str(path), "--method", "mappo"])
    assert "python -m baselines.rollout --record-state global" in capsys.readouterr().err
