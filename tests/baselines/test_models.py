"""Model names (baselines/models.py): a name that does not load is one clear line."""

from __future__ import annotations

import pytest


def test_a_model_name_that_does_not_load_is_a_clear_error(monkeypatch):
    """A misspelt --model is looked up as a local folder, then on the hub: where neither has it, transformers raises
    an OSError (after retrying the hub); it becomes one line naming the model and the names that always load."""
    transformers = pytest.importorskip("transformers")
    from baselines.models import load_model

    def unreachable(*args, **kwargs):
        raise OSError("We couldn't connect to 'https://huggingface.co' to load the files.\nCheck your connection.")

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", unreachable)
    with pytest.raises(ValueError, match=r"model 'smolm2' is not mlp, tiny or smollm2-135m, and it does not load as a "
                                         r"local folder or a hub id here \(We couldn't connect to 'https://huggingface"
                                         r".co' to load the files.\)$"):
        load_model("smolm2")
