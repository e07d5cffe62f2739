"""The package's layout: module-level imports between bufsim's modules form no cycle."""
import ast
from pathlib import Path

import bufsim

PKG = Path(bufsim.__file__).resolve().parent


def _module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _top_level_imports(path: Path, name: str) -> set[str]:
    """bufsim modules imported at module level (imports inside functions are lazy)."""
    tree = ast.parse(path.read_text(), str(path))
    pkg = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("bufsim")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")
                base = base[:len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if not mod.startswith("bufsim"):
                continue
            out.add(mod)
            for a in node.names:  # `from . import x` names a submodule
                if (PKG.parent / Path(*(mod + "." + a.name).split("."))).with_suffix(".py").exists():
                    out.add(mod + "." + a.name)
    return out


def import_graph() -> dict[str, set[str]]:
    mods = {_module_name(p): p for p in PKG.rglob("*.py")}
    graph = {}
    for name, path in mods.items():
        deps = set()
        for d in _top_level_imports(path, name):
            while d not in mods and "." in d:
                d = d.rsplit(".", 1)[0]
            if d in mods and d != name:
                deps.add(d)
        graph[name] = deps
    return graph


def find_cycle(graph):
    """A cycle as a list of modules, or None.  A package importing its own submodule
    (``bufsim`` -> ``bufsim.engine``) is not an edge back: only submodule edges count."""
    state, stack = {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in graph.get(n, ()):
            if n.startswith(m + "."):  # a submodule needs its package initialised: no cycle
                continue
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                c = visit(m)
                if c:
                    return c
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state:
            c = visit(n)
            if c:
                return c
    return None


def test_no_import_cycle_between_modules():
    graph = import_graph()
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph))


def test_the_cycle_finder_finds_one():
    assert find_cycle({"a.x": {"a.y"}, "a.y": {"a.z"}, "a.z": {"a.x"}}) == \
        ["a.x", "a.y", "a.z", "a.x"]
    assert find_cycle({"a": {"a.x"}, "a.x": {"a"}}) is None
