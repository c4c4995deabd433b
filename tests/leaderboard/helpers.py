"""Submissions for the leaderboard's tests, made and forged the way a determined cheater would: a Kuhn cut of
policy@2, an evaluation into a folder, a copy, its episodes, a reseal after an edit, a rejection that stores nothing,
scripted policies, a small MLP credit run; and a parser that checks a verdict sentence against its own printed
numbers."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest

from leaderboard.__main__ import main
from leaderboard.evaluate import EPISODES_FILE, SUBMISSION_FILE, config_sha256
from leaderboard.protocol import PROTOCOL_DIR
from leaderboard.store import submit
from leaderboard.validate import SubmissionError

KUHN = "kuhn_poker-v0"


def _kuhn_protocol(folder: Path, protocol_id: str, seeds: int, task: str | None = None) -> Path:
    """policy@2 cut down to Kuhn (every Kuhn task, or only ``task``) on ``seeds`` seeds, as ``protocol_id``."""
    raw = json.loads((PROTOCOL_DIR / "policy.json").read_text())
    raw.update(id=protocol_id, seeds={"start": 2**40, "count": seeds})
    raw["tasks"] = [t for t in raw["tasks"] if t["env_id"] == KUHN and task in (None, t["name"])]
    path = folder / f"{protocol_id}.json"
    path.write_text(json.dumps(raw))
    return path


def _evaluate(protocol_path, out, player="random", method="random-player"):
    assert main(["evaluate", "--protocol", str(protocol_path), "--player", player, "--method", method,
                 "--out", str(out), "--no-progress"]) == 0
    return out


def _copy(src: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "forged"
    shutil.copytree(src, dst)
    return dst


def _episodes(folder: Path) -> tuple[str, list[dict]]:
    lines = (folder / EPISODES_FILE).read_text().splitlines()
    return lines[0], [json.loads(x) for x in lines[1:] if x.strip()]


def _reseal(folder: Path, header: str | None = None, episodes: list[dict] | None = None, text: str | None = None,
            manifest=None) -> None:
    """Make the manifest agree with the (edited) files: episodes size, count, SHA-256, token totals, config hash."""
    if episodes is not None:
        text = header + "\n" + "".join(json.dumps(e) + "\n" for e in episodes)
    if text is not None:
        (folder / EPISODES_FILE).write_text(text)
    data = (folder / EPISODES_FILE).read_bytes()
    m = json.loads((folder / SUBMISSION_FILE).read_text())
    if manifest is not None:
        manifest(m)
    m["episodes"].update(bytes=len(data), sha256=hashlib.sha256(data).hexdigest(),
                         count=sum(1 for line in data.splitlines()[1:] if line.strip()))
    if episodes is not None:
        m["tokens"]["eval_main"] = sum(e.get("tokens_generated", 0) for e in episodes)
    m["config_sha256"] = config_sha256(m["protocol"]["sha256"], m["players"])
    (folder / SUBMISSION_FILE).write_text(json.dumps(m))


def _rejected(folder: Path, protocol, store: Path, match: str, **kwargs) -> str:
    with pytest.raises(SubmissionError) as info:
        submit(folder, store, protocol=protocol, **kwargs)
    assert match in str(info.value), str(info.value)
    assert not store.exists() or not any(store.rglob("*.json")), "a rejected submission wrote to the store"
    return str(info.value)


def _fn_policy(fn, name):
    from baselines.policies.scripted import ScriptedPolicy

    return ScriptedPolicy(fn, seed=0, name=name)


def _pick(env, agent, *names):
    legal = env.legal_actions(agent)
    return next((f"[{n}]" for n in names if f"[{n}]" in legal), legal[0])


def _train(out: Path, seed: int, **changes) -> Path:
    """A small MLP credit run on Kuhn (rae, 2 steps) with ``seed`` into ``out``; ``changes`` override its config."""
    from baselines.train import TrainConfig, train

    cfg = dict(env=KUHN, model="mlp", mode="generate", credit="rae", steps=2, tasks_per_step=2, group_size=2,
               seed=seed, out=str(out), progress=False, tensorboard=False, action_mode="discrete")
    train(TrainConfig(**{**cfg, **changes}))
    return out


def _evaluate_runs(protocol, runs, out: Path) -> Path:
    """A credit-track submission of ``runs`` (given to --runs in that order) under method rae, into ``out``."""
    assert main(["evaluate", "--protocol", str(protocol), "--runs", *map(str, runs), "--method", "rae",
                 "--out", str(out), "--no-progress"]) == 0
    return out


def _num(name: str) -> str:
    return rf"(?P<{name}>[-+]?\d+\.\d+(?:e-?\d+)?)"


LINE = re.compile(rf"(?P<a>\S+) (?:(?P<word>above|below) (?P<b>\S+) on (?P<where>.+?): |vs (?P<b2>\S+) on "
                  rf"(?P<where2>.+?): not separated \()paired difference {_num('diff')} \[{_num('low')}, "
                  rf"{_num('high')}\] \(95% t\) over (?P<n>\d+) seeds?, (?:exact sign-flip|sign-flip \(Monte "
                  rf"Carlo\)) p = {_num('p')}, Holm-adjusted p = {_num('q')} \(Holm over (?P<m>\d+) comparisons?, "
                  rf"family-wise 5%\)")


def _check_sentence_against_its_numbers(line: str) -> dict:
    """Parse a verdict sentence back and check its word follows from its own printed numbers (3 decimals)."""
    found = LINE.match(line)
    assert found, line
    diff, low, high, p, q = (float(found.group(k)) for k in ("diff", "low", "high", "p", "q"))
    word = found.group("word") or "not separated"
    assert low - 5e-4 <= diff <= high + 5e-4
    if word == "above":
        assert q < 0.05 + 5e-5 and low >= 0
    elif word == "below":
        assert q < 0.05 + 5e-5 and high <= 0
    else:
        assert q >= 0.05 - 5e-5 or low <= 0 <= high
    assert q >= p - 5e-5                                   # Holm never lowers a p-value
    return {"word": word, "diff": diff, "low": low, "high": high, "p": p, "q": q, "m": int(found.group("m")),
            "n": int(found.group("n")), "a": found.group("a"), "b": found.group("b") or found.group("b2")}
