"""Hostile files against the maintainer: each is refused with a clean error naming the file, within bounded memory.

A checkpoint folder, a run folder and a submission are handed in by someone else. A sparse 1 GiB file costs nothing
to make and used to cost gigabytes to read; JSON nested 900 deep ended in a RecursionError traceback; padding in an
episode's free-form fields was held in memory at 20 times its size and accepted; a move made of terminal escape
sequences was echoed raw. The peak memory of each read is measured in a fresh process (``RUSAGE_CHILDREN`` of a
wrapper that runs it, so no other test's subprocess counts)."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from baselines.outputs import json_shape_problem, loads_bounded, read_capped, read_json_object
from tests.leaderboard.helpers import _copy, _episodes, _evaluate, _kuhn_protocol, _rejected, _reseal

GIB = 1 << 30
PEAK_MB = 400           # the imports (torch, numpy) take ~230 MB; reading a 1 GiB file whole took 2-5 GB
ROOT = Path(__file__).resolve().parents[2]


def _sparse(path: Path, size: int = GIB, head: bytes = b"") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(size)                 # a hole: no disk, no time
    return path


def _run_bounded(code: str) -> tuple[str, float]:
    """Run ``code`` in a child of a fresh wrapper process; returns (the child's stdout, its peak RSS in MB)."""
    wrapper = textwrap.dedent(f"""
        import resource, subprocess, sys
        out = subprocess.run([sys.executable, "-c", {code!r}], capture_output=True, text=True)
        sys.stdout.write(out.stdout + out.stderr)
        print("PEAK", resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    """)
    done = subprocess.run([sys.executable, "-c", wrapper], capture_output=True, text=True, cwd=ROOT,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=300)
    text, _, peak = done.stdout.rpartition("PEAK ")
    return text, int(peak) / 1024       # ru_maxrss is in KiB on Linux


def _checkpoint_folder(root: Path) -> Path:
    step = root / "checkpoints" / "step-0000001"
    step.mkdir(parents=True)
    (step / "meta.json").write_text(json.dumps({"step": 1, "config_hash": "x", "credit": {}}))
    (step / "state.json").write_text("{}")
    (step / "state.safetensors").write_bytes(b"")
    (root / "checkpoints" / "latest").write_text("step-0000001")
    return step


# ---------------------------------------------------------------------- the reader itself
def test_the_size_is_checked_before_reading_and_nesting_is_a_message(tmp_path):
    big = _sparse(tmp_path / "big.json")
    with pytest.raises(ValueError, match=rf"big.json: the file has {GIB} bytes, over the limit of 1024 bytes"):
        read_capped(big, 1024)
    with pytest.raises(ValueError, match=r"big.json: damaged \(1073741824 bytes, over the limit of 4096\); fix it"):
        read_json_object(big, "fix it", cap=4096)
    with pytest.raises(ValueError, match=r"x.json: JSON nested too deeply \(900 levels; the limit is 64\)"):
        loads_bounded("[" * 900 + "]" * 900, "x.json")
    assert loads_bounded('{"a": "[[[[[[[[\\"{{{{{{"}', "ok") == {"a": '[[[[[[[["{{{{{{'}   # brackets in strings
    assert "padding" in json_shape_problem("[" + "[]," * 10_000 + "[]]")


# ---------------------------------------------------------------------- checkpoints and run folders
def test_a_sparse_1gib_latest_pointer_is_refused_unread_in_bounded_memory(tmp_path):
    _checkpoint_folder(tmp_path / "run")
    _sparse(tmp_path / "run" / "checkpoints" / "latest", head=b"step-0000001")
    out, peak = _run_bounded(f"""
from pathlib import Path
from baselines.train import checkpoint
try:
    checkpoint.latest(Path({str(tmp_path / 'run' / 'checkpoints')!r}))
except checkpoint.CheckpointError as e:
    print("REFUSED", e)
""")
    assert "REFUSED" in out and "the 'latest' pointer has 1073741824 bytes, over the limit of 4096" in out, out
    assert peak < PEAK_MB, f"peak RSS {peak:.0f} MB"


def test_a_sparse_1gib_meta_json_is_refused_unread_in_bounded_memory(tmp_path):
    step = _checkpoint_folder(tmp_path / "run")
    _sparse(step / "meta.json", head=b'{"step": 1, "pad": "')
    out, peak = _run_bounded(f"""
from pathlib import Path
from baselines.train import checkpoint
try:
    checkpoint.load(Path({str(step)!r}))
except checkpoint.CheckpointError as e:
    print("REFUSED", e)
""")
    assert "REFUSED" in out and "meta.json: meta.json has 1073741824 bytes, over the limit" in out, out
    assert peak < PEAK_MB, f"peak RSS {peak:.0f} MB"


def test_a_state_json_nested_900_deep_is_a_message_not_a_recursion_error(tmp_path):
    from baselines.train import checkpoint

    step = _checkpoint_folder(tmp_path / "run")
    (step / "state.json").write_text('{"learners": ' + "[" * 900 + "]" * 900 + "}")
    with pytest.raises(checkpoint.CheckpointError, match=r"state.json: JSON nested too deeply \(901 levels; the "
                                                         r"limit is 64\); this checkpoint cannot be read"):
        checkpoint.load(step)


def test_a_sparse_run_config_is_refused_by_the_checkpoint_player(tmp_path):
    from leaderboard.players import load_player

    _checkpoint_folder(tmp_path / "run")
    _sparse(tmp_path / "run" / "config.json", head=b'{"env": "')
    with pytest.raises(ValueError, match=r"config.json: config.json has 1073741824 bytes, over the limit"):
        load_player(f"checkpoint:{tmp_path / 'run'}", "kuhn_poker-v0", ["player_0", "player_1"], "discrete")


# ---------------------------------------------------------------------- submissions
@pytest.fixture(scope="module")
def kuhn_protocol(tmp_path_factory) -> Path:
    return _kuhn_protocol(tmp_path_factory.mktemp("protocol"), "test-hostile", 4, "kuhn_poker/vs-kuhn_nash")


@pytest.fixture(scope="module")
def honest(tmp_path_factory, kuhn_protocol) -> Path:
    return _evaluate(kuhn_protocol, tmp_path_factory.mktemp("sub") / "random")


def _padded(honest: Path, tmp_path: Path, padding) -> Path:
    forged = _copy(honest, tmp_path)
    header, episodes = _episodes(forged)
    for e in episodes:
        e["final_infos"]["player_0"]["pad"] = padding
    _reseal(forged, header, episodes)
    return forged


def test_final_infos_padded_with_empty_lists_is_refused_before_parsing_in_bounded_memory(honest, kuhn_protocol,
                                                                                        tmp_path):
    forged = _padded(honest, tmp_path, [[]] * 2_000_000)      # 8 episodes x 6 MB: 20x that once parsed
    out, peak = _run_bounded(f"""
from leaderboard.validate import SubmissionError, validate
try:
    validate({str(forged)!r}, protocol={str(kuhn_protocol)!r})
except SubmissionError as e:
    print("REFUSED", e)
""")
    assert "REFUSED episodes.jsonl:2: 2000" in out and "(padding, not data of ours)" in out, out
    assert peak < PEAK_MB, f"peak RSS {peak:.0f} MB"


def test_final_infos_padded_with_numbers_is_refused_by_the_replay(honest, kuhn_protocol, tmp_path):
    forged = _padded(honest, tmp_path, [0.5] * 1000)
    _rejected(forged, kuhn_protocol, tmp_path / "store", "episodes.jsonl:2.final_infos: not the infos the replayed "
                                                         "episode ends with")


def test_a_line_over_the_limit_is_refused_after_reading_one_byte_past_it(honest, kuhn_protocol, tmp_path):
    from leaderboard.validate import Limits

    forged = _padded(honest, tmp_path, "x" * 5000)
    _rejected(forged, kuhn_protocol, tmp_path / "store", "episodes.jsonl:2: a line of more than 4096 bytes",
              limits=Limits(line_bytes=4096))


ESCAPES = "\x1b[2J\x1b[31mYOU WIN\x1b]0;owned\x07"


def test_a_move_made_of_terminal_escapes_is_never_echoed_raw(honest, kuhn_protocol, tmp_path, capsys):
    from leaderboard.__main__ import main

    forged = _copy(honest, tmp_path)
    header, episodes = _episodes(forged)
    episodes[0]["transcript"]["actions"][0] = ESCAPES
    episodes[0]["turns"][0]["action"] = ESCAPES
    _reseal(forged, header, episodes)
    why = _rejected(forged, kuhn_protocol, tmp_path / "store", "must be an action index (int) in discrete mode")
    assert "\x1b" not in why and "\x07" not in why and "\\x1b[2J" in why, why
    assert main(["validate", str(forged), "--protocol", str(kuhn_protocol)]) == 1
    err = capsys.readouterr().err
    assert "rejected:" in err and "\x1b" not in err and "\x07" not in err


def test_show_wide_escapes_a_stored_entry_name(honest, kuhn_protocol, tmp_path):
    """Entries reach the store from a pull request too (a suite's entry is never validated): ``show`` is the last
    line of defence for the maintainer's terminal."""
    from leaderboard.render import show
    from leaderboard.store import add_entry
    from leaderboard.validate import validate

    store = tmp_path / "store"
    v = validate(honest, protocol=kuhn_protocol)
    v.manifest["method"] = "evil" + ESCAPES
    add_entry(v, store)
    for wide in (False, True):
        text = show(store, wide=wide)
        assert "evil" in text and "\x1b" not in text and "\x07" not in text, repr(text)


def test_a_sparse_metrics_file_in_a_handed_in_run_is_refused_unread(tmp_path, capsys):
    """evaluate (and evaluate-private, with the maintainer's memory) reads a run's metrics.jsonl for its tokens."""
    import shutil

    from leaderboard.__main__ import main
    from tests.leaderboard.helpers import _train

    run = _train(tmp_path / "run", 0)
    protocol = json.loads((ROOT / "leaderboard/protocols/credit-micro-quick.json").read_text())
    protocol.update(id="test-metrics", seeds={"start": 2**40, "count": 2})
    protocol["train"].update(steps=2, tasks_per_step=2, group_size=2, seeds=[0])
    protocol["tasks"] = [t for t in protocol["tasks"] if t["env_id"] == "kuhn_poker-v0"]
    (tmp_path / "p.json").write_text(json.dumps(protocol))
    shutil.copy(run / "metrics.jsonl", tmp_path / "kept.jsonl")
    _sparse(run / "metrics.jsonl", head=(tmp_path / "kept.jsonl").read_bytes())
    assert main(["evaluate", "--protocol", str(tmp_path / "p.json"), "--runs", str(run), "--method", "rae",
                 "--out", str(tmp_path / "sub"), "--no-progress"]) == 2
    assert "metrics.jsonl: metrics.jsonl has 1073741824 bytes, over the limit" in capsys.readouterr().err
