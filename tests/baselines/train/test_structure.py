"""The trainer package reads top-down (issue 45 item 3): no module of baselines/train over 600 lines, and at most
two imports inside functions in the whole folder, each with a ``# lazy: reason`` comment on its line."""

from __future__ import annotations

import ast
from pathlib import Path

TRAIN = Path(__file__).resolve().parents[3] / "baselines" / "train"


def _function_imports(path: Path) -> list[tuple[int, bool]]:
    """``(line, has a lazy-reason comment)`` of every import statement inside a function of ``path``."""
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    found = []
    for fn in ast.walk(ast.parse(source)):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            for node in ast.walk(fn):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    found.append((node.lineno, "# lazy:" in lines[node.lineno - 1]))
    return sorted(set(found))


def test_no_trainer_module_is_over_600_lines():
    sizes = {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in TRAIN.glob("*.py")}
    assert "loop.py" in sizes and "update.py" in sizes
    assert {name: n for name, n in sizes.items() if n > 600} == {}


def test_at_most_two_function_level_imports_each_with_a_reason():
    found = {f"{p.name}:{line}": reason for p in sorted(TRAIN.glob("*.py")) for line, reason in _function_imports(p)}
    assert len(found) <= 2, found
    assert all(found.values()), found


def test_the_import_finder_sees_an_import_inside_a_function(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("import os\n\ndef f():\n    import json  # lazy: a test\n    return json\n")
    assert _function_imports(path) == [(4, True)]
