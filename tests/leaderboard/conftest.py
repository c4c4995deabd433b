"""Fixtures the leaderboard's forgery tests share (module-scoped: each test module that asks builds its own): the
Kuhn cut of policy@2, and an honest MLP credit-track submission with its protocol and runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from leaderboard.protocol import PROTOCOL_DIR
from tests.leaderboard.helpers import KUHN, _evaluate_runs, _kuhn_protocol, _train


@pytest.fixture(scope="module")
def protocol_path(tmp_path_factory) -> Path:
    """policy@2 cut down to Kuhn (vs the Nash bot and vs random) on 8 seeds."""
    return _kuhn_protocol(tmp_path_factory.mktemp("protocol"), "test-policy", 8)


@pytest.fixture(scope="module")
def credit_protocol(tmp_path_factory) -> Path:
    raw = json.loads((PROTOCOL_DIR / "credit-micro-quick.json").read_text())
    raw.update(id="test-credit", seeds={"start": 2**40, "count": 3}, seeded_moves=True)
    raw["train"].update(steps=2, tasks_per_step=2, group_size=2, seeds=[0, 1])
    raw["tasks"] = [t for t in raw["tasks"] if t["env_id"] == KUHN]
    path = tmp_path_factory.mktemp("credit") / "test-credit.json"
    path.write_text(json.dumps(raw))
    return path


@pytest.fixture(scope="module")
def credit_runs(tmp_path_factory) -> list[Path]:
    root = tmp_path_factory.mktemp("runs")
    return [_train(root / f"seed{s}", s) for s in (0, 1)]


@pytest.fixture(scope="module")
def credit_submission(tmp_path_factory, credit_protocol, credit_runs) -> Path:
    return _evaluate_runs(credit_protocol, credit_runs, tmp_path_factory.mktemp("credit-sub") / "sub")
