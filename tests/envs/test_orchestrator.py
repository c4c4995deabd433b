"""orchestrator-v0: workers that appear at run time, hidden information, counterfactuals, invalid plans, credit."""

from __future__ import annotations

import json

import numpy as np
import pytest
from pettingzoo.test import api_test, render_test, seed_test

from marl_llm_envs import make, replay, spec
from marl_llm_envs.envs import orchestrator as orchestrator_module
from marl_llm_envs.reference.orchestrator import delegator, solo
from marl_llm_envs.scripted import random_legal
from marl_llm_envs.tasks import ArithmeticTasks, CompositeTasks, Task, TaskSource
from tests.conftest import docstring_block
from tests.envs.helpers import play_out

pytestmark = pytest.mark.filterwarnings("ignore")

ALL_WORKERS = ["worker_0", "worker_1", "worker_2", "worker_3"]


def _manual(heading):
    return docstring_block(orchestrator_module, heading)


class FixedComposite(TaskSource):
    """The manual's problem: a + b * c with a = 3 + 4 * 2, b = 12 - 7, c = 6 * 3 (answer 101)."""

    name = "fixed_composite"
    feature_size = 2
    max_parts = 3
    part_feature_size = 1

    def __init__(self, answers=("11", "5", "18"), total="101"):
        self.answers, self.total = answers, total

    def sample(self, rng, split="train"):
        exprs = ("3 + 4 * 2", "12 - 7", "6 * 3")
        parts = tuple(Task(f"p{i}", f"Compute the value of {e}.", a, "arithmetic", ("1", "2", "3"), (0.5,))
                      for i, (e, a) in enumerate(zip(exprs, self.answers)))
        question = "Compute a + b * c, where\n" + "\n".join(f"  {n} = {e}" for n, e in zip("abc", exprs))
        return Task("fixed/train/0", question, self.total, self.name, ("9", "8", "7"), (0.0, 0.0), parts, "a + b * c")

    def verify(self, task, response):
        return ArithmeticTasks.verify(None, task, response)

    def spec(self):
        return {"name": self.name}


# ---------------------------------------------------------------------- PettingZoo, agents at run time
def _spawning_env(mode, **kwargs):
    """In text mode, the orchestrator's sampled actions are plans that spawn workers (random text rarely does)."""
    env = make("orchestrator-v0", action_mode=mode, **kwargs)
    if mode == "text":
        plans = ["[spawn: Compute the value of 1 + 1.]\n[spawn: b]", "[spawn: x]", "\\boxed{3}", "no plan"]
        # A generator of its own: reset(seed) does not seed the spaces of the first agents (PettingZoo and Gymnasium
        # leave that to the caller), so the space's own would draw different plans in every process.
        rng = np.random.default_rng(0)
        space = env.action_space("orchestrator")
        space.sample = lambda mask=None: plans[int(rng.integers(len(plans)))]
    return env


@pytest.mark.parametrize("mode", ["text", "discrete"])
@pytest.mark.parametrize("invalid_move", ["penalty", "retry"])
def test_pettingzoo_api_seed_and_render_tests_with_workers_spawned_at_run_time(mode, invalid_move):
    api_test(_spawning_env(mode, invalid_move=invalid_move), num_cycles=200)
    seed_test(lambda: _spawning_env(mode), num_cycles=200)
    render_test(lambda render_mode=None: _spawning_env(mode, render_mode=render_mode))
    env = _spawning_env(mode, invalid_move=invalid_move)
    grown = 0
    for seed in range(10):
        env.reset(seed=seed)
        for agent in env.agent_iter():
            grown = max(grown, len(env.agents))
            _, _, term, trunc, _ = env.last()
            env.step(None if term or trunc else env.action_space(agent).sample(env.observe(agent).get("action_mask")))
    assert grown > 1  # the tests above saw workers appear


@pytest.mark.parametrize("mode", ["text", "discrete"])
def test_agents_grow_as_workers_are_spawned_and_each_worker_answers_once(mode):
    env = make("orchestrator-v0", action_mode=mode)
    assert env.possible_agents == ["orchestrator", *ALL_WORKERS]
    assert spec("orchestrator-v0").roles == {"orchestrator": "orchestrator", **{w: "worker" for w in ALL_WORKERS}}
    env.reset(seed=3)
    assert env.agents == ["orchestrator"]
    order = []
    rng = np.random.default_rng(0)
    while not env.done:
        order.append(env.agent_selection)
        env.step(delegator(env, env.agent_selection, rng))
    assert env.agents == ["orchestrator", "worker_0", "worker_1", "worker_2"]
    if mode == "text":
        assert order == ["orchestrator", "worker_0", "worker_1", "worker_2", "orchestrator"]
    else:
        assert order == ["orchestrator"] * 3 + ["worker_0", "worker_1", "worker_2"] + ["orchestrator"] * 3
    rewards = {a: env.rewards[a] for a in env.agents}
    assert len(set(rewards.values())) == 1 and rewards["orchestrator"] == env.team_rewards()["team"]


# ---------------------------------------------------------------------- the manual
def test_manual_shows_the_exact_prompts():
    env = make("orchestrator-v0", tasks=FixedComposite())
    env.reset(seed=0)
    assert env.observe("orchestrator")["text"] == _manual("The orchestrator's plan prompt")
    env.step("[spawn: Compute the value of 3 + 4 * 2.]\n[spawn: Compute the value of 12 - 7.]\n"
             "I will compute c myself.")
    assert env.observe("worker_0")["text"] == _manual("A worker's prompt")
    solo_env = env.ablate("orchestrator")
    env.step("The answer is \\boxed{11}")
    env.step("I cannot do this")  # spoiled: "(no report)"
    assert env.observe("orchestrator")["text"] == _manual("The orchestrator's final prompt")
    assert solo_env.agents == ["orchestrator"]
    assert solo_env.observe("orchestrator")["text"] == _manual("The orchestrator's solo prompt")


# ---------------------------------------------------------------------- hidden information
def test_a_worker_sees_only_its_sub_task_and_no_answer_appears_in_any_observation():
    env = make("orchestrator-v0", tasks=FixedComposite(answers=("700011", "700005", "700018"), total="9900101"))
    env.reset(seed=0)
    env.step("[spawn: Compute the value of 3 + 4 * 2.]\n[spawn: Compute the value of 12 - 7.]")
    seen = [env.observe("orchestrator")["text"]]
    w0 = env.observe("worker_0")["text"]
    env.step("\\boxed{41}")
    w1 = env.observe("worker_1")["text"]
    for text, own, other in ((w0, "3 + 4 * 2", "12 - 7"), (w1, "12 - 7", "3 + 4 * 2")):
        assert own in text and other not in text and "6 * 3" not in text and "a + b * c" not in text
    assert "41" not in w1  # worker_0's report
    env.step("\\boxed{5}")
    seen += [w0, w1, env.observe("orchestrator")["text"]]
    assert "41" in seen[-1] and "5" in seen[-1]  # the orchestrator sees the reports
    assert not any(x in t for t in seen for x in ("700011", "700005", "700018", "9900101"))


def test_discrete_observations_hide_the_true_labels_and_worker_vectors_hold_only_their_part():
    env = make("orchestrator-v0", action_mode="discrete")
    for seed in range(30):
        env.reset(seed=seed)
        for part in range(3):
            env.step(1 + part)
        base = env.unwrapped
        k = base._orch_size
        for w in ("worker_0", "worker_1", "worker_2"):
            vector = env.observe(w)["observation"]
            assert not vector[:k].any()  # nothing of the orchestrator's section: not the problem, not other parts
            part = base._part_of[w]
            fp = base.task_source.part_feature_size
            assert np.allclose(vector[k:k + fp], base.task.parts[part].features)
        assert not env.observe("orchestrator")["observation"][k:].any()
    sentinel = make("orchestrator-v0", action_mode="discrete", tasks=FixedComposite(total="9900101"))
    rng = np.random.default_rng(0)
    for seed in range(10):
        sentinel.reset(seed=seed)
        while not sentinel.done:
            texts = [sentinel.observe(a)["text"] for a in sentinel.agents]
            assert not any("9900101" in t for t in texts)
            sentinel.step(delegator(sentinel, sentinel.agent_selection, rng))



def test_current_part_view_puts_the_current_parts_notes_assignment_and_report_at_a_fixed_place():
    """The opt-in view copies the part being decided from its block (plan and final phases); the default layout,
    and every worker's section (after the longer orchestrator section), are unchanged."""
    plain = make("orchestrator-v0", action_mode="discrete")
    view = make("orchestrator-v0", action_mode="discrete", current_part_view=True)
    pv, vv = plain.unwrapped, view.unwrapped
    c, w, p = pv.num_candidates, pv.max_workers, pv.task_source.max_parts
    size = 2 * c + 1 + w
    assert view.unwrapped.vector_size == pv.vector_size + size
    assert pv.vector_size == pv.task_source.feature_size + p * (4 * c + 1 + w) + 3 + p + 3 \
        + pv.task_source.part_feature_size + 2 * c + w          # the manual's V, as in v0
    block, start = 4 * c + 1 + w, pv.task_source.feature_size
    rng = np.random.default_rng(0)
    checked = {"plan": 0, "final": 0}
    for seed in range(20):
        plain.reset(seed=seed)
        view.reset(seed=seed)
        while not view.done:
            agent = view.agent_selection
            a, b = plain.observe(agent)["observation"], view.observe(agent)["observation"]
            if agent == "orchestrator":
                k = pv._orch_size
                assert np.array_equal(a[:k], b[:k])                     # the v0 section, unchanged
                tail = b[k:k + size]
                assert vv.phase in ("plan", "final")                 # the orchestrator acts in these only
                i = vv.current_part
                assert np.array_equal(tail, a[start + i * block + c:start + i * block + 3 * c + 1 + w])
                assert tail[:c].sum() == 1                          # the orchestrator's notes on part i
                if vv.phase == "final":
                    assert tail[c:c + 1 + w].sum() == 1             # who answers part i, always known by then
                    worker = vv._delegate[i]
                    report = None if worker is None else vv._reports.get(worker)
                    assert tail[c + 1 + w:].sum() == (report is not None)
                    if report is not None:
                        assert tail[c + 1 + w + report] == 1
                checked[vv.phase] += 1
                assert not b[k + size:].any()
            else:                                                       # a worker: its section, shifted
                assert np.array_equal(a[pv._orch_size:], b[vv._orch_size:]) and not b[:vv._orch_size].any()
            move = delegator(view, agent, rng) if seed % 2 else random_legal(view, agent, rng)
            plain.step(move)
            view.step(move)
        assert plain.team_rewards() == view.team_rewards()              # the rules are unchanged
        again = replay(view.transcript())                               # replay and clone keep the view
        assert again.unwrapped.vector_size == view.clone().unwrapped.vector_size == vv.vector_size
        assert np.array_equal(again.observe("orchestrator")["observation"], view.observe("orchestrator")["observation"])
        assert "current_part_view" not in json.dumps(plain.transcript())  # default transcripts as in v0
        assert not view.observe("orchestrator")["observation"][vv._orch_size - size:vv._orch_size].any()  # over
    assert checked["plan"] and checked["final"]
    api_test(make("orchestrator-v0", action_mode="discrete", current_part_view=True), num_cycles=100)
    with pytest.raises(ValueError, match="current_part_view"):
        make("orchestrator-v0", action_mode="discrete", current_part_view=1)


# ---------------------------------------------------------------------- counterfactuals
@pytest.mark.parametrize("mode", ["text", "discrete"])
def test_clone_ablate_and_replay_are_exact(mode):
    for seed in range(15):
        env = play_out(make("orchestrator-v0", action_mode=mode, invalid_move="retry"), random_legal, seed)
        before = json.dumps(env.transcript()), env.team_rewards(), list(env.agents)
        for agent in env.possible_agents:
            branch = env.ablate(agent)
            rng = np.random.default_rng([seed, 2])
            while not branch.done:
                branch.step(random_legal(branch, branch.agent_selection, rng))
            again = replay(json.loads(json.dumps(branch.transcript())))
            assert again.team_rewards() == branch.team_rewards() and again.agents == branch.agents
            assert again.observe("orchestrator")["text"] == branch.observe("orchestrator")["text"]
        assert (json.dumps(env.transcript()), env.team_rewards(), list(env.agents)) == before


def test_ablating_a_worker_re_asks_the_orchestrator_and_equals_team_reward_without():
    checked = 0
    for seed in range(60):
        env = play_out(make("orchestrator-v0", action_mode="discrete", spawn_cost=0.25), delegator, seed)
        without = env.infos["orchestrator"]["team_reward_without"]
        assert set(without) == set(env.infos["orchestrator"]["spawned"])
        for worker, value in without.items():
            branch = env.ablate(worker)
            assert not branch.done and branch.agent_selection == "orchestrator" and branch.phase == "final"
            assert "report: (no report)" in branch.observe("orchestrator")["text"]
            rng = np.random.default_rng(0)
            while not branch.done:
                branch.step(delegator(branch, branch.agent_selection, rng))
            # the delegator falls back on its own notes, which is what team_reward_without assumes
            assert branch.team_rewards()["team"] == value
            checked += value != env.team_rewards()["team"]
    assert checked > 10  # leaving a worker out often changes the outcome


def test_ablating_the_orchestrator_is_the_solo_episode():
    for seed in range(40):
        env = play_out(make("orchestrator-v0", action_mode="discrete"), delegator, seed)
        branch = env.ablate("orchestrator")
        assert branch.agents == ["orchestrator"] and branch.solo and branch.phase == "final"
        rng = np.random.default_rng(0)
        while not branch.done:
            branch.step(solo(branch, branch.agent_selection, rng))
        alone = play_out(make("orchestrator-v0", action_mode="discrete"), solo, seed)
        assert branch.team_rewards() == alone.team_rewards()
        assert branch.infos["orchestrator"]["spawned"] == []


def test_ablating_a_worker_before_it_answers_gives_no_report_and_unspawned_workers_change_nothing():
    env = make("orchestrator-v0", action_mode="discrete")
    env.reset(seed=1)
    env.step(1)  # part a -> worker_0
    ablated = env.ablate("worker_0").ablate("worker_3")
    rng = np.random.default_rng(0)
    while not ablated.done:
        ablated.step(delegator(ablated, ablated.agent_selection, rng))
    info = ablated.infos["orchestrator"]
    assert info["reports"]["worker_0"] is None and "worker_3" not in info["spawned"]


# ---------------------------------------------------------------------- invalid plans and reports
BAD_PLANS = {
    "too many": "\n".join(f"[spawn: part {i}]" for i in range(5)),
    "empty": "[spawn: ]",
    "huge sub-task": "[spawn: " + "x" * 501 + "]",
    "nested brackets": "[spawn: compute [a] first]",
    "unterminated": "[spawn: compute a",
    "no colon": "[spawn compute a]",
}


@pytest.mark.parametrize("name", sorted(BAD_PLANS))
def test_malformed_plans_follow_the_invalid_move_policy(name):
    env = make("orchestrator-v0")
    env.reset(seed=0)
    env.step(BAD_PLANS[name])
    info = env.infos["orchestrator"]
    assert env.done and env.agents == ["orchestrator"] and info["invalid_action"]["reason"]
    assert env.team_rewards()["team"] == -1.0 and info["outcome"] == "invalid_move"
    retry = make("orchestrator-v0", invalid_move="retry")
    retry.reset(seed=0)
    retry.step(BAD_PLANS[name])
    assert not retry.done and retry.agent_selection == "orchestrator" and retry.agents == ["orchestrator"]
    assert "Your previous move was invalid" in retry.observe("orchestrator")["text"]
    retry.step("[spawn: Compute the value of 1 + 1.]")
    assert retry.agents == ["orchestrator", "worker_0"]


def test_a_huge_plan_is_read_up_to_the_text_cap_and_the_rest_recorded():
    from marl_llm_envs.text import TEXT_MAX_LENGTH

    env = make("orchestrator-v0")
    env.reset(seed=0)
    env.step("[spawn: Compute the value of 1 + 1.]\n" + "x" * 70_000)
    info = env.infos["orchestrator"]
    assert info["invalid_action"] is None and env.agents == ["orchestrator", "worker_0"]
    assert info["ignored_chars"] == len("[spawn: Compute the value of 1 + 1.]\n") + 70_000 - TEXT_MAX_LENGTH


def test_a_plan_without_spawn_lines_is_valid_and_the_orchestrator_answers_alone():
    env = make("orchestrator-v0", tasks=FixedComposite())
    env.reset(seed=0)
    env.step("No spawn [not a spawn line]; I will do it. [spawn: inline mentions do not count]")
    assert env.agents == ["orchestrator"] and env.infos["orchestrator"]["invalid_action"] is None
    assert "You spawned no worker" in env.observe("orchestrator")["text"]
    env.step("\\boxed{101}")
    assert env.team_rewards()["team"] == 1.0 and env.infos["orchestrator"]["spawned"] == []


def test_parse_plan_reads_each_line_once_and_caps_its_input():
    plan = "\n".join(["thinking"] * 1000 + ["  [SPAWN: Compute 1 + 1]", "[spawn:x]"])
    assert orchestrator_module.parse_plan(plan, 4, 500) == (["Compute 1 + 1", "x"], None)
    subtasks, reason = orchestrator_module.parse_plan("[spawn: a]\n" * 5_000, 4, 500)
    assert subtasks is None and "more than 4" in reason


def test_spoiled_reports_cost_the_penalty_and_spawns_cost_spawn_cost():
    env = make("orchestrator-v0", tasks=FixedComposite(), spawn_cost=0.125)
    env.reset(seed=0)
    env.step("[spawn: Compute the value of 3 + 4 * 2.]\n[spawn: Compute the value of 12 - 7.]")
    env.step("\\boxed{11}")
    env.step("no box")
    env.step("\\boxed{101}")
    info = env.infos["orchestrator"]
    assert info["correct"] and env.team_rewards()["team"] == 1.0 - 1.0 - 2 * 0.125
    assert info["worker_correct"] == {"worker_0": True, "worker_1": False}
    assert info["worker_part"] == {"worker_0": "a", "worker_1": "b"}
    assert info["parts_reported"] == {"a": True, "b": False, "c": False}
    assert env.infos["worker_1"]["invalid_count"] == 1 and env.infos["worker_0"]["own_correct"]


def test_a_worker_is_matched_to_its_part_by_text_or_by_its_report():
    env = make("orchestrator-v0", tasks=FixedComposite())
    env.reset(seed=0)
    env.step("[spawn: what is 12 minus 7?]\n[spawn: compute   THE value of 6*3]\n[spawn: say hi]")
    for reply in ("\\boxed{5}", "\\boxed{17}", "\\boxed{hi}"):
        env.step(reply)
    env.step("\\boxed{0}")
    info = env.infos["orchestrator"]
    assert info["worker_part"] == {"worker_0": "b", "worker_1": "c", "worker_2": None}
    assert info["worker_correct"] == {"worker_0": True, "worker_1": False, "worker_2": False}


def test_non_composite_tasks_are_a_clear_error():
    with pytest.raises(ValueError, match="composite task source"):
        make("orchestrator-v0", tasks="arithmetic")
    with pytest.raises(ValueError, match="random"):
        make("orchestrator-v0", invalid_move="random")
    with pytest.raises(ValueError, match="worker_accuracy"):
        make("orchestrator-v0", action_mode="discrete", worker_accuracy=[0.5])


# ---------------------------------------------------------------------- credit: the scripted orchestrator helps
def test_the_scripted_delegator_beats_the_solo_orchestrator_on_composite_problems():
    scores = {}
    for name, policy in (("delegator", delegator), ("solo", solo), ("random", random_legal)):
        scores[name] = np.mean([play_out(make("orchestrator-v0", action_mode="discrete"), policy, s)
                                .team_rewards()["team"] for s in range(400)])
    # expected: 0.9 * 0.9 * 0.5 = 0.405 against 0.6 ** 3 = 0.216 (plus rare coincidences), random far below
    assert scores["delegator"] > scores["solo"] + 0.1 > scores["random"] + 0.1


def test_reliable_slots_make_delegation_worth_more():
    good = np.mean([play_out(make("orchestrator-v0", action_mode="discrete", worker_accuracy=1.0), delegator, s)
                    .team_rewards()["team"] for s in range(100)])
    assert good == 1.0
    sure = make("orchestrator-v0", action_mode="discrete", tasks=CompositeTasks(parts=2), self_accuracy=1.0)
    assert np.mean([play_out(sure, solo, s).team_rewards()["team"] for s in range(50)]) == 1.0


def test_readme_orchestrator_example_plays_a_full_episode(capsys):
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    code = next(b for b in re.findall(r"```python\n(.*?)\n```", readme, re.S) if "orchestrator-v0" in b)
    exec(compile(code, "README.md", "exec"), {})
    assert capsys.readouterr().out.strip() == "{'team': 1.0} {'worker_0': True}"


# ---------------------------------------------------------------------- learning at the micro tier (the suite's family)
@pytest.mark.slow
def test_spawned_workers_learn_to_follow_their_notes_under_broadcast_and_not_under_shuffled(tmp_path):
    """The credit suite's dynamic-teams setting: the scripted delegator spawns one worker per part, the workers (one
    MLP) learn from the team reward. Broadcast's credit teaches them within 40 steps; the information-free control
    stays at random play (about 0.27 here; following the notes gives 0.81)."""
    from baselines.train import train
    from baselines.train.config import TrainConfig

    tail = {}
    for credit in ("broadcast", "shuffled"):
        cfg = TrainConfig(env="orchestrator-v0", action_mode="discrete", model="mlp", credit=credit, steps=40,
                          tasks_per_step=8, group_size=4, seed=0, partners="orchestrator=reference",
                          env_kwargs={"tasks": "composite:parts=2", "num_candidates": 2, "worker_accuracy": 0.9},
                          out=str(tmp_path / credit), progress=False, tensorboard=False)
        train(cfg)
        rows = [json.loads(line) for line in (tmp_path / credit / "metrics.jsonl").read_text().splitlines()]
        tail[credit] = np.mean([r["reward/team/team"] for r in rows[-10:]])
    assert tail["broadcast"] > 0.55 and tail["shuffled"] < 0.4, tail
