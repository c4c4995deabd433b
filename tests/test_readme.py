"""The README's promises: its two set-up commands exist, CI runs the test one, the quick-start code runs."""

from __future__ import annotations

import json
import re
from pathlib import Path

from marl_llm_envs import replay

ROOT = Path(__file__).resolve().parent.parent


def _bash_blocks():
    return re.findall(r"```bash\n(.*?)\n```", (ROOT / "README.md").read_text(), re.S)


def test_ci_runs_the_readme_test_command():
    test_cmd = next(b for b in _bash_blocks() if "pytest" in b)
    assert test_cmd.strip() in (ROOT / ".ci" / "run").read_text()


def test_readme_demo_command_sets_up_and_measures_credit_fidelity():
    demo = next(b for b in _bash_blocks() if "-m leaderboard fidelity" in b and "venv" in b)
    assert demo.startswith("python3 -m venv .venv && .venv/bin/pip install -q torch==2.13.0")  # torch's CPU build first
    assert demo.endswith("-m leaderboard fidelity loo --baselines broadcast,shuffled --quick --jobs 2")
    # the training-outcome run stays documented
    assert "python -m leaderboard benchmark-credit broadcast --tier micro --quick" in (ROOT / "README.md").read_text()
    assert any("-m marl_llm_envs.demo" in b for b in _bash_blocks())     # the env tour


def test_readme_quick_start_runs_and_prints_what_its_comments_say(capsys):
    code = re.search(r"```python\n(.*?)\n```", (ROOT / "README.md").read_text(), re.S).group(1)
    scope: dict = {}
    exec(compile(code, "README.md", "exec"), scope)
    env = scope["env"]
    # the solver answered 42: the team scores 1 exactly when 42 is the answer
    assert env.done and env.team_rewards() == {"team": 1.0 if env.task.answer == "42" else 0.0}
    team_line, transcript_line = capsys.readouterr().out.splitlines()
    assert team_line == str(env.team_rewards())                      # {'team': 0.0 or 1.0}
    transcript = env.transcript()
    assert transcript_line == json.dumps(transcript)
    assert transcript["actions"][:2] == ["Multiply first, then add.", "The answer is \\boxed{42}"]
    assert replay(transcript).team_rewards() == env.team_rewards()   # -> replay(...)


def test_demo_runs(capsys):
    from marl_llm_envs import demo

    demo.main(["--mode", "discrete"])
    out = capsys.readouterr().out
    assert "thinker's credit" in out and "replaying it gives the same team rewards" in out


def test_readme_credit_example_runs(capsys):
    block = next(b for b in re.findall(r"```python\n(.*?)\n```", (ROOT / "README.md").read_text(), re.S)
                 if "make_credit" in b)
    exec(compile(block, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "'ccpo_v1', 'ccpo_v2', 'dr_mas'" in out and "help_rate" in out


def test_readme_layout_names_every_module_and_folder_of_the_packages():
    """The Layout section is a newcomer's map: every module of the packages' top levels and of baselines' sub-packages
    is named there, and every sub-folder (envs/, credit/, ... stand for one module per env or method)."""
    text = (ROOT / "README.md").read_text()
    layout = text[text.index("## Layout"):]
    missing = []
    for folder in ("marl_llm_envs", "baselines", "baselines/policies", "baselines/rollout", "baselines/train",
                   "leaderboard"):
        for path in sorted((ROOT / folder).iterdir()):
            if path.name.startswith(("_", ".")) and path.name != "__main__.py" or path.name == "__pycache__":
                continue
            if folder != "leaderboard" and path.name == "__main__.py":
                continue
            if path.suffix == ".py" and f"`{path.name}`" not in layout and f"`{path.name}" not in layout:
                missing.append(f"{folder}/{path.name}")
            elif path.is_dir() and f"{path.name}/" not in layout:
                missing.append(f"{folder}/{path.name}/")
    assert not missing, f"README's Layout section does not name: {missing}"


# Paths and class attributes ARCHITECTURE.md names that the other parts of issue 45 (the trainer and rollout split,
# one package per game, env flags) create on their own branches. Once they are merged each exists, and the test below
# asks to remove it from here.


def _named_paths(text: str) -> set[str]:
    """Every repository path a Markdown text names in backticks: a token with a slash and no placeholder
    (``<name>``, braces, globs) or space in it."""
    return {t for t in re.findall(r"`([^`\s]+)`", text) if "/" in t and re.fullmatch(r"[\w.@/-]+", t)}


def _named_attributes(text: str) -> set[str]:
    """Every ``Class.attribute`` of the classes below that a Markdown text names in backticks."""
    return set(re.findall(r"`((?:TextEnv|EnvSpec|TrainConfig)\.\w+)`", text))


def _exists(name: str) -> bool:
    if "/" not in name:
        from baselines.train import TrainConfig
        from marl_llm_envs import EnvSpec, TextEnv

        owner, attribute = name.split(".")
        cls = {"TextEnv": TextEnv, "EnvSpec": EnvSpec, "TrainConfig": TrainConfig}[owner]
        return hasattr(cls, attribute) or attribute in getattr(cls, "__dataclass_fields__", {})
    return (ROOT / name).is_dir() if name.endswith("/") else (ROOT / name).exists()


def test_architecture_page_names_only_paths_that_exist():
    """ARCHITECTURE.md cannot rot: every file and folder it names in backticks exists (a folder ends with '/'), and so
    does every attribute it names of TextEnv, EnvSpec and TrainConfig."""
    text = (ROOT / "ARCHITECTURE.md").read_text()
    named = _named_paths(text) | _named_attributes(text)
    assert len(named) > 50 and "baselines/credit/base.py" in named and "tests/contracts/" in named  # the scan works
    assert not _exists("TextEnv.no_such_flag") and _exists("TextEnv.reward_range")
    missing = sorted(p for p in named if not _exists(p))
    assert not missing, f"ARCHITECTURE.md names paths or attributes that do not exist: {missing}"


def test_readme_links_the_architecture_page_and_it_stays_short():
    assert "(ARCHITECTURE.md)" in (ROOT / "README.md").read_text()
    lines = (ROOT / "ARCHITECTURE.md").read_text().splitlines()
    assert len(lines) < 150 and max(map(len, lines)) <= 120


def test_every_test_file_the_docs_and_docstrings_name_exists():
    """A test file named in the documentation, a docstring or a comment exists: when a test moves (tests/ mirrors the
    packages), what points at it moves too."""
    texts = [ROOT / name for name in ("README.md", "ARCHITECTURE.md", "pyproject.toml", ".ci/run")]
    texts += sorted((ROOT / "benchmarks").glob("*.md")) + sorted((ROOT / "leaderboard").glob("*.md"))
    for folder in ("marl_llm_envs", "baselines", "leaderboard", "benchmarks", "scripts", "examples", "tests"):
        texts += sorted((ROOT / folder).rglob("*.py"))
    missing = set()
    for path in texts:
        for name in re.findall(r"\btests/[\w/]+\.(?:py|json)\b", path.read_text()):
            if not (ROOT / name).is_file():
                missing.add(f"{name} (named in {path.relative_to(ROOT)})")
    assert len(texts) > 100
    assert not missing, f"these test files do not exist: {sorted(missing)}"
