"""The import structure of the three packages, read from the source (AST, nothing is imported): no import circles,
no import from a lower layer to a higher one (marl_llm_envs < baselines < leaderboard), and at most 20 imports
inside functions (the issue 45 ceiling), each with its reason.

An import inside a function is how a circle hides (the module imports fine, and the circle is there all the same)
and how a reader loses track of what a module needs; the one good reason for it is a heavy optional package (torch,
transformers, matplotlib, ray) that only that function needs, said in a ``# lazy: reason`` comment on the line.
The counts below are ceilings: lower them when you remove such imports, never raise them.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ("marl_llm_envs", "baselines", "leaderboard")      # each may import the ones before it, never after

# function-level imports in the three packages: all of them, and those without a reason comment on their line
MAX_FUNCTION_IMPORTS = 20
MAX_UNREASONED_FUNCTION_IMPORTS = 0


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in LAYERS:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


MODULES = _modules()


def _resolve(name: str) -> str | None:
    """The module of ours that ``name`` (a dotted import target) loads: itself, or its longest prefix that is one."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _is_dynamic_import(func: ast.expr) -> bool:
    return (isinstance(func, ast.Name) and func.id == "__import__") or \
        (isinstance(func, ast.Attribute) and func.attr == "import_module")


def _imports(module: str, path: Path):
    """``(target module, line, in a function, has a reason comment)`` for every import of one of our modules
    (targets outside the packages are ``None``) in ``module``, ``if TYPE_CHECKING`` blocks left out."""
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                continue
            if isinstance(child, ast.Call) and _is_dynamic_import(child.func):
                # __import__("x") / importlib.import_module("x") is an import all the same: counted as one
                reason = any("#" in lines[i - 1] for i in range(child.lineno, (child.end_lineno or child.lineno) + 1))
                out.append((None, child.lineno, in_function, reason))
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                if isinstance(child, ast.Import):
                    targets = [a.name for a in child.names]
                else:
                    base = child.module or ""
                    if child.level:
                        up = package.split(".")[:len(package.split(".")) - child.level + 1]
                        base = ".".join(up + ([base] if base else []))
                    targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in child.names]
                reason = any("#" in lines[i - 1] for i in range(child.lineno, (child.end_lineno or child.lineno) + 1))
                for target in dict.fromkeys(targets):
                    out.append((_resolve(target), child.lineno, in_function, reason))
            visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(ast.parse(source, str(path)), False)
    return out


IMPORTS = {m: _imports(m, p) for m, p in MODULES.items()}


def _graph() -> dict[str, set[str]]:
    return {m: {t for t, *_ in found if t is not None and t != m} for m, found in IMPORTS.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_circle_through_a_function_level_import():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_circles_in_the_packages():
    """A circle counts whether its imports sit at the top of a module or inside a function."""
    assert len(MODULES) > 50, "the packages were not found"
    assert _cycles(_graph()) == []


def test_no_import_runs_from_a_lower_layer_to_a_higher_one():
    layer = {pkg: i for i, pkg in enumerate(LAYERS)}
    upward = [f"{m}:{line} imports {t}" for m, found in IMPORTS.items() for t, line, *_ in found
              if t is not None and layer[t.split(".")[0]] > layer[m.split(".")[0]]]
    assert upward == []


def test_function_level_imports_do_not_grow():
    hidden = [(m, line, reason) for m, found in IMPORTS.items() for _, line, inside, reason in found if inside]
    statements = {(m, line): reason for m, line, reason in hidden}
    unreasoned = [k for k, reason in statements.items() if not reason]
    print(f"function-level imports: {len(statements)}, of which without a reason comment: {len(unreasoned)}")
    assert len(statements) <= MAX_FUNCTION_IMPORTS, "a new import inside a function: move it to the module's top, " \
        "or, for a heavy optional package only that function needs, lower another one"
    assert len(unreasoned) <= MAX_UNREASONED_FUNCTION_IMPORTS, "say why an import sits inside a function (# lazy: ...)"


MAX_LINES = 600          # in baselines/ and leaderboard/: a longer module holds more than one concern
COPY_WINDOW = 6          # this many consecutive statement lines, the same to the letter, count as a copied block


def test_no_module_in_baselines_or_leaderboard_is_over_600_lines():
    paths = [p for pkg in ("baselines", "leaderboard") for p in sorted((ROOT / pkg).rglob("*.py"))]
    sizes = {str(p.relative_to(ROOT)): len(p.read_text(encoding="utf-8").splitlines()) for p in paths}
    long = {name: n for name, n in sizes.items() if n > MAX_LINES}
    assert long == {}, f"split these by concern: {long}"


def _statement_lines(path: Path) -> list[tuple[int, str]]:
    """``(line number, text with its white space folded)`` for every line that says something: blank lines, comments,
    imports and lone brackets are passed over (they repeat without being copied logic)."""
    out = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        text = " ".join(line.split())
        if not text or text.startswith(("#", "import ", "from ")) or not text.strip(")]}([{,:"):
            continue
        out.append((number, text))
    return out


def _copied_blocks(paths) -> list[list[str]]:
    seen: dict[tuple[str, ...], list[str]] = {}
    for path in paths:
        lines = _statement_lines(path)
        for k in range(len(lines) - COPY_WINDOW + 1):
            key = tuple(text for _, text in lines[k:k + COPY_WINDOW])
            seen.setdefault(key, []).append(f"{path.relative_to(ROOT)}:{lines[k][0]}")
    return [places for places in seen.values() if len(places) > 1]


def test_the_copy_finder_finds_a_copied_block(tmp_path):
    body = "".join(f"    x{i} = f({i}, y)\n" for i in range(COPY_WINDOW))
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text(f"def {name[0]}(y):\n    # a comment\n{body}    return x0\n")
    global ROOT
    root, ROOT = ROOT, tmp_path
    try:
        found = _copied_blocks([tmp_path / "a.py", tmp_path / "b.py"])
    finally:
        ROOT = root
    assert found == [["a.py:3", "b.py:3"], ["a.py:4", "b.py:4"]]       # x0..x5, then x1..x5 and the return


def test_no_copied_blocks_of_six_lines_in_the_packages():
    paths = [p for pkg in LAYERS for p in sorted((ROOT / pkg).rglob("*.py"))]
    assert _copied_blocks(paths) == [], "one piece of code should serve where the logic is the same"
