"""leaderboard.evaluate.check_pinned: a run's config against the fields a protocol or suite fixes."""

from __future__ import annotations

import pytest

from baselines.train.config import NEW_FIELD_DEFAULTS
from leaderboard.evaluate import check_pinned, trainer_pins


def test_a_run_made_before_a_trainer_field_existed_is_not_refused_for_lacking_it():
    want = trainer_pins()
    assert "lora_layers" in want                    # a field added after the stored credit-micro@4 runs
    old = {k: v for k, v in want.items() if k not in NEW_FIELD_DEFAULTS}
    check_pinned(old, want, "suite@1", want["steps"], "run/config.json")
    with pytest.raises(ValueError, match=r"lora_layers=0, this run has lora_layers=4"):
        check_pinned({**old, "lora_layers": 4}, want, "suite@1", want["steps"], "run/config.json")
    # a field that every run has always recorded is still refused when it is missing
    with pytest.raises(ValueError, match=r"this run has lr=\(missing\)"):
        check_pinned({k: v for k, v in old.items() if k != "lr"}, want, "suite@1", want["steps"], "run/config.json")
