"""The layout shows the architecture: the security boundary is one folder that only the
engine imports, the result schema is one module, and no module of the grader or the
course helpers imports another that imports it back (at import time)."""

from __future__ import annotations

import ast
from pathlib import Path

from autograder import REPO_ROOT


def _imports(path: Path, package: str) -> set[str]:
    """The modules of ``package`` that ``path`` imports at its top level."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == package:
                found |= {f"{package}.{a.name}" for a in node.names}
            elif node.module.startswith(package + "."):
                found.add(node.module)
                found |= {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith(package)}
    return found


def _modules(package: str) -> dict[str, Path]:
    root = REPO_ROOT / package
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(REPO_ROOT).with_suffix("").parts
        name = ".".join(p for p in parts if p != "__init__")
        out[name] = path
    return out


def test_only_the_engine_reaches_the_security_boundary():
    for name, path in _modules("autograder").items():
        if name.startswith("autograder.isolation") or name == "autograder.engine":
            continue
        # function-level imports count too: no mention of the package at all
        assert "autograder.isolation" not in path.read_text(encoding="utf-8"), name


def _graph(package: str) -> dict[str, set[str]]:
    modules = _modules(package)
    return {name: {m for m in _imports(path, package) if m in modules and m != name}
            for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    found, state = [], {}

    def visit(node, stack):
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                found.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return found


def test_no_import_circles():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]
    for package in ("autograder", "helpers"):
        graph = _graph(package)
        # a package's __init__ importing its own submodules is how packages re-export
        graph = {k: {m for m in v if not m.startswith(k + ".")} for k, v in graph.items()}
        assert _cycles(graph) == [], package


def test_the_result_schema_lives_in_records():
    for name in ("feedback", "report", "export", "merge"):
        text = (REPO_ROOT / "autograder" / f"{name}.py").read_text(encoding="utf-8")
        assert "from autograder.records import" in text, name
    assert "from autograder.feedback" not in (REPO_ROOT / "autograder" / "records.py").read_text()
