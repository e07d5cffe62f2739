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


def _imports(path: Path, name: str, everywhere: bool = False) -> set[str]:
    """bufsim modules a module imports: at module level, or ``everywhere`` (inside
    functions too; those are lazy and do not make import cycles)."""
    tree = ast.parse(path.read_text(), str(path))
    pkg = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = set()
    for node in (ast.walk(tree) if everywhere else tree.body):
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
        for d in _imports(path, name):
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


def _imports_of(subpackage: str) -> dict[str, set[str]]:
    return {_module_name(p): _imports(p, _module_name(p), everywhere=True)
            for p in (PKG / subpackage).rglob("*.py")}


def test_analytic_is_pure_maths():
    """bufsim.analytic imports nothing of bufsim but itself and the shared helpers: no
    engine, no pool, no trace replay (drivers that compare it with replays live in
    bufsim.experiments)."""
    allowed = ("bufsim.analytic", "bufsim._validation", "bufsim._units")
    bad = {m: sorted(d for d in deps if not d.startswith(allowed))
           for m, deps in _imports_of("analytic").items()}
    assert not {m: d for m, d in bad.items() if d}, bad


def test_workloads_and_models_do_not_run_experiments():
    """workloads only make traces and page frequencies, contention only builds and solves
    networks: neither imports the engine, the pool session or the experiment drivers."""
    forbidden = ("bufsim.engine", "bufsim.pool", "bufsim.experiments", "bufsim.policies",
                 "bufsim.reference")
    for sub in ("workloads", "contention"):
        bad = {m: sorted(d for d in deps if d.startswith(forbidden))
               for m, deps in _imports_of(sub).items()}
        assert not {m: d for m, d in bad.items() if d}, (sub, bad)


def test_nothing_below_imports_the_experiments():
    users = {m for m, deps in import_graph().items()
             if not m.startswith("bufsim.experiments") and
             any(d.startswith("bufsim.experiments") for d in deps)}
    assert users == set()


def test_the_layer_checks_can_fail():
    assert any(d.startswith("bufsim.engine") for d in
               _imports(PKG / "experiments" / "analytic_validation.py",
                        "bufsim.experiments.analytic_validation", everywhere=True))


def _private_names(src: str) -> set[str]:
    """Private names a code cell uses: ``x._attr``, ``_name``, ``from m import _name``
    (dunders and ``_`` itself are not private)."""
    def private(n):
        return n.startswith("_") and not n.startswith("__") and n != "_"

    tree = ast.parse("\n".join(line for line in src.splitlines()
                               if not line.lstrip().startswith(("%", "!"))))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and private(node.attr):
            out.add("." + node.attr)
        elif isinstance(node, ast.Name) and private(node.id):
            out.add(node.id)
        elif isinstance(node, ast.ImportFrom):
            out |= {a.name for a in node.names if private(a.name)}
    return out


def _code_cells():
    import json
    for nb in sorted((PKG.parent / "notebooks").glob("*.ipynb")):
        for i, c in enumerate(json.loads(nb.read_text())["cells"]):
            if c["cell_type"] == "code":
                yield nb.name, i, "".join(c["source"])


def test_notebooks_name_no_private_attribute():
    bad = [(nb, i, sorted(p)) for nb, i, src in _code_cells() if (p := _private_names(src))]
    assert bad == []


def test_private_name_finder_finds_them():
    assert _private_names("d._rec(1)\n_freq = {}\nfrom m import _x, y\n__name__\n_ = 1") == \
        {"._rec", "_freq", "_x"}


#: the experiment notebooks whose drivers live in bufsim/experiments: no code cell longer
#: than this many non-blank lines
THIN = ("03_", "04_", "05_")
MAX_CELL_LINES = 35


def test_experiment_notebooks_are_thin():
    long = [(nb, i, n) for nb, i, src in _code_cells() if nb.startswith(THIN)
            and (n := sum(1 for line in src.splitlines() if line.strip())) > MAX_CELL_LINES]
    assert long == []


def test_every_notebook_import_resolves():
    """Each import statement of every notebook runs (a module moved without its
    notebook updated fails here, before a notebook run)."""
    failed = []
    for nb, i, src in _code_cells():
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                try:
                    exec(compile(ast.Module([node], []), f"{nb}[{i}]", "exec"), {})
                except ImportError as e:
                    failed.append((nb, i, ast.unparse(node), str(e)))
    assert failed == []


#: the README's layers, top first: a module imports (at module level) only its own
#: layer and those above
LAYERS = [["_units", "_validation", "paths"], ["analytic"], ["config", "pages"], ["policies"],
          ["trace", "trace_import"], ["engine", "pool", "reference"],
          ["workloads", "synthetic", "contention"], ["experiments"],
          ["notebooks", "figures", "results", "provenance", "cli"]]


def layer_violations(graph) -> list:
    rank = {f"bufsim.{m}": i for i, layer in enumerate(LAYERS) for m in layer}

    def r(m):
        return rank.get(".".join(m.split(".")[:2]))

    return sorted((m, d) for m, deps in graph.items() for d in deps
                  if r(m) is not None and r(d) is not None and r(d) > r(m))


def test_layers_read_one_way():
    assert layer_violations(import_graph()) == []


def test_the_layer_check_finds_an_upward_import():
    assert layer_violations({"bufsim.analytic.che": {"bufsim.engine"}}) == \
        [("bufsim.analytic.che", "bufsim.engine")]
