"""The package's layers hold: no import cycle, no import against the flow of data, Rich and
Typer only in the command line, and core never prints or exits.

The import graph is built from the source with ``ast`` (every ``import`` and ``from … import``,
at module level or inside a function), so a lazy import counts as much as an eager one.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ROOT

# Bottom to top: a module may import its own layer and the ones below it. The transcript model
# is the vocabulary the format readers write in; providers sit under strategies because a
# strategy calls a summarizer; the framework adapters sit on compaction (the guard); the public
# API (ctxfold/__init__) and the command line are last, and neither imports the adapters.
FOUNDATION = {"errors", "names", "paths", "atomic", "hashes", "config", "settings", "prices", "classcode"}
LAYERS = [
    "foundation",
    "transcript",
    "formats",
    "tokens",
    "engine",
    "providers",
    "strategies",
    "compaction",
    "adapters",
    "api",
    "cli",
]
CLI_ONLY = ("rich", "typer", "click")


def _modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for top, package in ((ROOT / "core", "ctxfold"), (ROOT / "cli", "ctxfold.cli")):
        for path in sorted(top.rglob("*.py")):
            parts = list(path.relative_to(top).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join([package, *parts])] = path
    return out


MODULES = _modules()


def layer(module: str) -> str:
    parts = module.split(".")
    if module == "ctxfold":
        return "api"
    if parts[1] in ("cli", "__main__"):  # `python -m ctxfold` runs the command line
        return "cli"
    return "foundation" if parts[1] in FOUNDATION else parts[1]


def _imports(module: str, tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, imported name) for every import; ``from ctxfold.x import y`` yields the module
    ``ctxfold.x.y`` when that is a module, else ``ctxfold.x``."""
    package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                base = ".".join(anchor[: len(anchor) - node.level + 1] + ([base] if base else []))
            for alias in node.names:
                full = f"{base}.{alias.name}"
                yield node.lineno, full if full in MODULES else base


def graph() -> dict[str, dict[str, int]]:
    """module → {ctxfold module it imports: first line}."""
    edges: dict[str, dict[str, int]] = {}
    for module, path in MODULES.items():
        found: dict[str, int] = {}
        for line, name in _imports(module, ast.parse(path.read_text(), str(path))):
            while name and name not in MODULES:
                name = name.rpartition(".")[0]
            if name and name != module:
                found.setdefault(name, line)
        edges[module] = found
    return edges


def cycles(edges: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
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

    for v in edges:
        if v not in index:
            visit(v)
    return found


def against_the_flow(edges: dict[str, dict[str, int]]) -> list[str]:
    bad = []
    for module, targets in edges.items():
        for target, line in targets.items():
            if LAYERS.index(layer(target)) > LAYERS.index(layer(module)):
                where = MODULES[module].relative_to(ROOT)
                bad.append(f"{where}:{line}: {layer(module)} imports {target} ({layer(target)})")
    return bad


def test_the_graph_sees_every_layer() -> None:
    """A test that found no edges would pass for the wrong reason."""
    edges = graph()
    assert len(edges) > 100
    seen = {(layer(m), layer(t)) for m, ts in edges.items() for t in ts}
    assert ("formats", "transcript") in seen and ("cli", "api") in seen and ("compaction", "engine") in seen


def test_no_import_cycle() -> None:
    assert cycles(graph()) == []


def test_no_import_against_the_flow() -> None:
    assert against_the_flow(graph()) == []


def test_only_the_user_imports_the_adapters() -> None:
    """An adapter imports its agent framework: no module of ctxfold but the adapters' own may
    import one, so ``import ctxfold`` (and the command line) never pulls a framework in."""
    bad = [
        f"{MODULES[m].relative_to(ROOT)} imports {t}"
        for m, ts in graph().items()
        for t in ts
        if layer(t) == "adapters" and layer(m) != "adapters"
    ]
    assert not bad


def test_a_reintroduced_cycle_or_climb_is_caught() -> None:
    """The checks themselves fail on the two kinds of fault they guard against."""
    edges = graph()
    edges["ctxfold.config"] = {**edges["ctxfold.config"], "ctxfold.settings": 1}
    assert ["ctxfold.config", "ctxfold.settings"] in cycles(edges)
    edges["ctxfold.formats.base"] = {"ctxfold.engine.policy": 7}
    assert any("formats imports ctxfold.engine.policy" in b for b in against_the_flow(edges))


def _calls(tree: ast.AST) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            yield node.lineno, name
        elif isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(exc, ast.Name) and exc.id == "SystemExit":
                yield node.lineno, "SystemExit"
        elif (
            isinstance(node, ast.Attribute)
            and node.attr in ("stdout", "stderr")
            and isinstance(node.value, ast.Name)
            and node.value.id == "sys"
        ):
            yield node.lineno, f"sys.{node.attr}"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if layer(m) != "cli"))
def test_core_never_prints_exits_or_imports_the_terminal(module: str) -> None:
    path = MODULES[module]
    tree = ast.parse(path.read_text(), str(path))
    bad = [f"{line}: {name}" for line, name in _calls(tree) if name in ("print", "exit", "SystemExit")]
    bad += [f"{line}: {name}" for line, name in _calls(tree) if name.startswith("sys.")]
    for line, name in _imports(module, tree):
        if name.split(".")[0] in CLI_ONLY:
            bad.append(f"{line}: imports {name}")
    assert not bad, f"{path.relative_to(ROOT)}: {bad}"
