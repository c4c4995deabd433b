"""A credit method supplied from outside the package (issues 41 and 42): it runs under ``fidelity`` and
``benchmark-credit``, travels with its suite submission as a source file, and ``--reproduce`` re-trains it in a
sandbox on the maintainer's machine (where it is not installed), so its entry is stored as reproduced by the
maintainer; another source than the one that trained the runs, or none, is refused or self-reported."""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

import pytest

from leaderboard.__main__ import main
from leaderboard.benchmark import benchmark_credit
from leaderboard.evaluate import file_sha256
from leaderboard.store import load_entries
from leaderboard.submission_json import SubmissionError
from leaderboard.suite import MANIFEST, latest_suite, reproduce_suite, submit_suite, validate_suite
from tests.leaderboard.suite.helpers import tiny

HALF_BROADCAST = '''"""A credit method of one's own for the tests: broadcast's advantages, halved."""
from baselines.credit.broadcast import Broadcast


class HalfBroadcast(Broadcast):
    def advantages(self, episodes):
        return [[a / 2 for a in row] for row in super().advantages(episodes)]
'''
METHOD = "half_broadcast:HalfBroadcast"
SUITE = {**tiny(steps=2), "id": "outside-suite", "description": "a suite small enough for a test"}
SUITE["families"] = SUITE["families"][:1]        # team size only: voting with 2 voters


@pytest.fixture
def outside_method(tmp_path, monkeypatch):
    """The method importable from a folder of the user's (as while they train); ``gone()`` makes this process a
    maintainer's, where it is not installed."""
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "half_broadcast.py").write_text(HALF_BROADCAST)
    monkeypatch.setenv("MARL_LLM_CACHE", str(tmp_path / "cache"))
    monkeypatch.syspath_prepend(str(mine))

    def gone() -> None:
        sys.path.remove(str(mine))
        sys.modules.pop("half_broadcast", None)
    yield gone
    sys.modules.pop("half_broadcast", None)


def test_an_outside_method_is_reproduced_by_the_maintainer_and_a_changed_source_is_refused(outside_method, tmp_path):
    suite = tmp_path / "outside-suite.json"
    suite.write_text(json.dumps(SUITE))
    result = benchmark_credit(METHOD, protocol=str(suite), baselines=[], out=tmp_path / "out", progress=False,
                              fidelity=False)
    folder = result["out"] / "submissions" / "half_broadcast_HalfBroadcast"
    assert (folder / "half_broadcast.py").read_text() == HALF_BROADCAST
    outside_method()
    bare = validate_suite(_without_source(folder, tmp_path), suite=suite)
    assert bare.self_reported
    with pytest.raises(SubmissionError, match=r"its source did not travel with the submission .* it cannot be "
                                              r"re-trained here"):
        reproduce_suite(bare)
    entry = submit_suite(folder, tmp_path / "store", suite=suite, reproduce=True)
    assert entry["method"] == METHOD and entry["self_reported"] is False
    assert entry["results"]["reproduced"]["retrained"] == 2 == entry["results"]["reproduced"]["of"]
    assert [e["self_reported"] for e in load_entries(tmp_path / "store")] == [False]
    forged = Path(shutil.copytree(folder, tmp_path / "forged"))      # another source than the one that trained them
    (forged / "half_broadcast.py").write_text(HALF_BROADCAST.replace("a / 2", "a * 2"))
    with pytest.raises(SubmissionError, match=r"half_broadcast\.py: a shipped source is the method .* with the "
                                              r"SHA-256 the manifest records"):
        validate_suite(forged, suite=suite)
    manifest = json.loads((forged / MANIFEST).read_text())           # resealed: the runs are not that source's
    (forged / MANIFEST).write_text(json.dumps({**manifest, "credit_sha256": file_sha256(forged / "half_broadcast.py")}))
    with pytest.raises(SubmissionError, match=r"metrics\.jsonl: step 0 records .* the run trained again here"):
        submit_suite(forged, tmp_path / "store", suite=suite, reproduce=True)
    assert len(load_entries(tmp_path / "store")) == 1


def _without_source(folder: Path, tmp_path: Path) -> Path:
    """The submission with its method's source dropped: validated (self-reported), but not re-trainable."""
    bare = Path(shutil.copytree(folder, tmp_path / "bare"))
    (bare / "half_broadcast.py").unlink()
    return bare


@pytest.mark.slow
def test_an_outside_method_on_the_quick_suite_end_to_end(outside_method, tmp_path, capsys):
    """The acceptance of issues 41 and 42: ``fidelity`` and ``benchmark-credit`` take the method unchanged, and
    ``submit --reproduce`` on the quick suite stores it as reproduced by the maintainer (measured: see the report)."""
    t0 = time.perf_counter()
    assert main(["fidelity", METHOD, "--quick", "--baselines", "broadcast", "--out", str(tmp_path / "fid")]) == 0
    assert "HalfBroadcast" in capsys.readouterr().out
    out = tmp_path / "bench"
    assert main(["benchmark-credit", METHOD, "--tier", "micro", "--quick", "--baselines", "broadcast", "--out",
                 str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "HalfBroadcast" in printed and "Credit fidelity" in printed
    folder = out / latest_suite("credit-micro-quick") / "submissions" / "half_broadcast_HalfBroadcast"
    outside_method()
    assert main(["submit", str(folder), "--reproduce", "--store", str(tmp_path / "store")]) == 0
    assert "reproduced by the maintainer: 12 of 12 runs re-trained" in capsys.readouterr().out
    (entry,) = load_entries(tmp_path / "store")
    assert entry["method"] == METHOD and entry["self_reported"] is False
    print(f"end to end: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
