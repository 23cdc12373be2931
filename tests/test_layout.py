"""The package's layout rules, read from the source (no import needed):

- the import graph of ``bwt_lite`` modules has no cycle (imports inside functions count too, so a
  cycle cannot hide in a function body), nor has the graph of its units (each subpackage and each
  top-level module one unit), so the layers of ``docs/layout.md`` hold;
- ``bwt_lite.runtime`` (the device layer) imports nothing of the package above the infrastructure;
- no module imports another module's private (underscore) name;
- the storage package (``bwt_lite.store``) imports nothing of training (the loop, the pool).
"""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "bwt_lite"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _resolve(current: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = current.split(".") if is_package else current.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports(name: str, path: Path, known: dict[str, Path]) -> list[tuple[str, str | None]]:
    """(imported bwt_lite module, imported name or None) for every import statement in the module."""
    tree = ast.parse(path.read_text(), filename=str(path))
    out: list[tuple[str, str | None]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, None) for a in node.names if a.name.split(".")[0] == "bwt_lite"]
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(name, path.name == "__init__.py", node)
            if target.split(".")[0] != "bwt_lite":
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                out.append((sub, None) if sub in known else (target, alias.name))
    return out


def import_graph() -> tuple[dict[str, set[str]], list[str]]:
    """Edges between bwt_lite modules, and every private name imported across modules."""
    known = modules()
    graph: dict[str, set[str]] = {m: set() for m in known}
    private: list[str] = []
    for name, path in known.items():
        for target, attr in imports(name, path, known):
            if target not in known:
                continue
            # importing a submodule runs its packages' __init__ first, but an __init__ that re-exports
            # its submodules is not a dependency of them: only the module itself is an edge
            if target != name:
                graph[name].add(target)
            if attr is not None and attr.startswith("_") and not attr.startswith("__") and target != name:
                private.append(f"{name} imports {attr} from {target}")
    return graph, private


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph (as a path that ends where it starts), or None."""
    colour: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        colour[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if colour.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in colour and (found := visit(nxt)) is not None:
                return found
        stack.pop()
        colour[node] = 2
        return None

    for node in sorted(graph):
        if node not in colour and (found := visit(node)) is not None:
            return found
    return None


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for nxt in graph[todo.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def test_no_import_cycle_among_package_modules():
    graph, _ = import_graph()
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph) or [])


def unit(module: str) -> str:
    """The top-level unit a module belongs to: ``bwt_lite.store.cache`` -> ``bwt_lite.store``."""
    return ".".join(module.split(".")[:2])


def unit_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The module graph folded onto units: an edge wherever a module of one imports a module of another."""
    units: dict[str, set[str]] = {unit(m): set() for m in graph}
    for module, targets in graph.items():
        units[unit(module)] |= {unit(t) for t in targets} - {unit(module)}
    return units


# The bottom layer (docs/layout.md, "infrastructure"): what the device layer may import.
INFRASTRUCTURE = {"bwt_lite.runtime", "bwt_lite.arguments", "bwt_lite.paths", "bwt_lite.version"}


def test_no_import_cycle_among_package_units():
    """No two units import each other, directly or through others (e.g. runtime -> train -> runtime)."""
    cycle = find_cycle(unit_graph(import_graph()[0]))
    assert cycle is None, "units import each other in a cycle: " + " -> ".join(cycle or [])


def test_runtime_imports_nothing_above_it():
    units = unit_graph(import_graph()[0])
    above = reachable(units, "bwt_lite.runtime") - INFRASTRUCTURE
    assert not above, f"bwt_lite.runtime (the device layer) imports units above it: {sorted(above)}"


def test_no_module_imports_a_private_name_of_another():
    _, private = import_graph()
    assert private == []


def test_storage_imports_nothing_of_training():
    graph, _ = import_graph()
    training = {"bwt_lite.train", "bwt_lite.checkpoints"} | {m for m in graph if m.endswith("pool")}
    for module in (m for m in graph if m == "bwt_lite.store" or m.startswith("bwt_lite.store.")):
        assert not (reachable(graph, module) & training), (module, sorted(reachable(graph, module) & training))


# ------------------------------------------------------------------------------------------------
# Size limits: a module a newcomer can read, functions that fit on a screen

MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80
# Modules allowed over a limit, each with its reason. Keep this list short: split a module rather
# than add it here.
OVER_THE_LIMIT: dict[str, str] = {}


def _too_long() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).as_posix()
        src = path.read_text()
        if src.count("\n") > MAX_MODULE_LINES:
            found.append(f"{rel}: {src.count(chr(10))} lines")
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    found.append(f"{rel}: {node.name} has {length} lines")
    return found


def test_no_module_or_function_over_the_limits():
    over = [f for f in _too_long() if f.split(":")[0] not in OVER_THE_LIMIT]
    assert over == [], f"over {MAX_MODULE_LINES} lines a module or {MAX_FUNCTION_LINES} a function: {over}"


def test_the_allow_list_holds_only_what_is_still_over():
    still = {f.split(":")[0] for f in _too_long()}
    assert set(OVER_THE_LIMIT) <= still, f"no longer over the limits, remove from OVER_THE_LIMIT: {set(OVER_THE_LIMIT) - still}"


def test_every_import_of_the_package_names_a_module_that_exists():
    """Imports are checked against the files, not by importing (an editable install of another
    checkout could otherwise answer for a module moved away here)."""
    known = modules()
    missing = []
    for root in (PACKAGE, PACKAGE.parent / "tests", PACKAGE.parent / "experiments"):
        for path in sorted(root.rglob("*.py")):
            name = module_name(path) if root == PACKAGE else path.stem
            for target, _ in imports(name, path, known):
                if target not in known:
                    missing.append(f"{path.relative_to(PACKAGE.parent)} imports {target}")
    assert missing == []


def test_only_one_module_builds_paths_from_its_own_file():
    """Data paths come from bwt_lite.paths; a module that builds its own from __file__ breaks when it moves
    (bench.py once looked for the build times one folder too high after it moved)."""
    users = sorted(str(p.relative_to(PACKAGE.parent)) for p in PACKAGE.rglob("*.py")
                   if "__file__" in p.read_text() and p.name != "paths.py")
    assert users == [], f"build paths with bwt_lite.paths instead: {users}"
