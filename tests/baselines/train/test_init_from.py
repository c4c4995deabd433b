"""``--init-from``: a run that starts from another run's checkpointed weights (a curriculum's later phase on its own,
e.g. the thinker trained against a solver that an earlier run taught to read). The weights are exactly the
checkpoint's, the optimizer and step count start afresh, a KL reference is those weights (full weights; with LoRA it
stays the base model), the flag is in the config hash (a resume with another source is refused), and a source that is no checkpoint or does not fit is a clear error."""

from __future__ import annotations

import pytest
import torch

from baselines.train import TrainConfig, checkpoint, train
from baselines.train.dist import Dist
from baselines.train.learners import build_team
from marl_llm_envs import make

pytest.importorskip("peft")

KWARGS = {"thinker_clue_accuracy": 0.9, "clue_pool": "words"}


def _cfg(out, **kw) -> TrainConfig:
    base = dict(env="think_solve-v0", env_kwargs=KWARGS, action_mode="discrete", model="tiny", mode="choice",
                adapters="per_role", lr=5e-2, tasks_per_step=2, group_size=2, steps=2, progress=False,
                tensorboard=False, out=str(out))
    return TrainConfig(**{**base, **kw})


def _team(cfg: TrainConfig):
    env = make(cfg.env, **cfg.env_kwargs, action_mode=cfg.action_mode)
    return build_team(cfg, env, sorted(set(env.roles.values())), prepare=Dist(cfg).prepare)


def _weights(team) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in team.learners[0].state_dict().items()}


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """A 2-step tiny run (both roles trained): its folder and its final adapter weights."""
    out = tmp_path_factory.mktemp("source") / "run"
    train(_cfg(out))
    meta, tensors = checkpoint.load(checkpoint.latest(out / checkpoint.CHECKPOINTS))
    assert meta["step"] == 2
    return out, tensors["learners"][0]["model"]


def test_the_run_starts_from_the_checkpoint_weights_with_a_fresh_optimizer(source, tmp_path):
    out, saved = source
    fresh = _weights(_team(_cfg(tmp_path / "fresh")))
    assert any(not torch.equal(fresh[k], saved[k]) for k in saved)        # training moved the adapters
    for where in (out, out / checkpoint.CHECKPOINTS / "step-0000002"):     # a run folder (its latest) or a checkpoint
        team = _team(_cfg(tmp_path / "b", init_from=str(where), frozen="solver"))
        got = _weights(team)
        assert got.keys() == saved.keys() and all(torch.equal(got[k], saved[k]) for k in saved)
        assert team.trainable == ["thinker"]
        assert all(not s for s in team.learners[0].optimizer.state.values())      # AdamW's moments start empty


def test_with_full_weights_the_kl_reference_is_the_weights_started_from(tmp_path):
    train(_cfg(tmp_path / "a", adapters="none", steps=1))
    saved = checkpoint.load(checkpoint.latest(tmp_path / "a" / checkpoint.CHECKPOINTS))[1]["learners"][0]["model"]
    team = _team(_cfg(tmp_path / "b", adapters="none", init_from=str(tmp_path / "a"), kl_coef=0.1))
    ref = team.learners[0].reference_state()
    assert ref.keys() == saved.keys() and all(torch.equal(ref[k], saved[k]) for k in saved)
    base = _team(_cfg(tmp_path / "c", adapters="none", kl_coef=0.1)).learners[0].reference_state()
    assert any(not torch.equal(base[k], saved[k]) for k in saved)           # not the untrained model's


def test_training_from_the_checkpoint_counts_steps_afresh_and_resume_keeps_the_source(source, tmp_path):
    out, _ = source
    cfg = _cfg(tmp_path / "b", init_from=str(out), frozen="solver", steps=1)
    assert cfg.hash() != _cfg(tmp_path / "b", frozen="solver", steps=1).hash()
    assert _cfg(tmp_path / "c").hash() == _cfg(tmp_path / "c", init_from="").hash()   # older runs keep their hash
    train(cfg)
    meta, _ = checkpoint.load(checkpoint.latest(tmp_path / "b" / checkpoint.CHECKPOINTS))
    assert meta["step"] == 1
    train(_cfg(tmp_path / "b", init_from=str(out), frozen="solver", steps=2, resume=True))     # extends the run
    with pytest.raises(ValueError, match="another config"):
        train(_cfg(tmp_path / "b", frozen="solver", steps=3, resume=True))       # the source left out: refused


def test_a_source_that_is_no_checkpoint_or_does_not_fit_is_refused_by_name(source, tmp_path):
    out, _ = source
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="--init-from"):
        _team(_cfg(tmp_path / "b", init_from=str(tmp_path / "empty")))
    with pytest.raises(ValueError, match="--init-from.*do not fit"):       # rank 4 adapters into a rank 8 run
        _team(_cfg(tmp_path / "b", init_from=str(out), lora_r=4))
    with pytest.raises(ValueError, match="--init-from.*learners"):         # one model per role: two learners
        _team(_cfg(tmp_path / "b", init_from=str(out), model="thinker=tiny,solver=tiny"))


def test_the_run_records_the_checkpoint_it_started_from_and_keeps_it_on_resume(source, tmp_path):
    import shutil

    from baselines.train.config import read_run_config

    src = tmp_path / "source"
    shutil.copytree(source[0], src)               # a copy: this test extends it
    started = read_run_config(src).resolved
    assert started.init_source is None                        # a run from the model's own weights
    run = tmp_path / "b"
    train(_cfg(run, init_from=str(src), frozen="solver", steps=1))
    got = read_run_config(run).resolved.init_source
    assert got == {"checkpoint": str(src / checkpoint.CHECKPOINTS / "step-0000002"),
                   "config_hash": started.config_hash, "step": 2}
    # the source run goes on, so its latest checkpoint moves; the resumed run still names the one it began with
    train(_cfg(src, steps=3, resume=True))
    assert checkpoint.latest(src / checkpoint.CHECKPOINTS).name == "step-0000003"
    train(_cfg(run, init_from=str(src), frozen="solver", steps=2, resume=True))
    assert read_run_config(run).resolved.init_source == got
    # a config.json whose record was edited into nonsense is refused by name
    text = (run / "config.json").read_text()
    assert '"step": 2' in text
    (run / "config.json").write_text(text.replace('"step": 2', '"step": "two"'))
    with pytest.raises(ValueError, match="resolved.init_source must be null or an object"):
        read_run_config(run)


def test_a_resumed_run_does_not_read_its_source_again(source, tmp_path):
    """The resumed checkpoint holds every weight: the source may be gone by then (a run folder cleaned up, another
    machine), and the record of where the run began stays in config.json."""
    import shutil

    from baselines.train.config import read_run_config

    src = tmp_path / "source"
    shutil.copytree(source[0], src)
    run = tmp_path / "b"
    train(_cfg(run, init_from=str(src), frozen="solver", steps=1))
    began = read_run_config(run).resolved.init_source
    shutil.rmtree(src)
    train(_cfg(run, init_from=str(src), frozen="solver", steps=2, resume=True))
    assert checkpoint.latest(run / checkpoint.CHECKPOINTS).name == "step-0000002"
    assert read_run_config(run).resolved.init_source == began
    with pytest.raises(ValueError, match="--init-from"):        # a new run from it: the source is needed, and gone
        train(_cfg(tmp_path / "c", init_from=str(src), frozen="solver", steps=1))
