"""The package's layout: imports between bufsim's modules form no cycle (module-level and
function-level imports alike), layers read one way, no module takes another's private
names, and no module but bufsim/versions.py compares server versions."""
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


def import_graph(everywhere: bool = False) -> dict[str, set[str]]:
    """module -> the bufsim modules it imports (at module level, or ``everywhere``:
    inside functions too)."""
    mods = {_module_name(p): p for p in PKG.rglob("*.py")}
    graph = {}
    for name, path in mods.items():
        deps = set()
        for d in _imports(path, name, everywhere):
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


def test_no_import_cycle_with_function_level_imports():
    """A lazy import inside a function hides a circle from the interpreter, not from the
    design: the graph of every import statement, function bodies included, has no cycle."""
    graph = import_graph(everywhere=True)
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph))
    # the graph reads function bodies: MariaDBServer.connect imports the client lazily
    assert "bufsim.live.client" in graph["bufsim.live.server"]
    assert "bufsim.live.client" not in import_graph()["bufsim.live.server"]


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
               _imports(PKG / "experiments" / "ssb.py", "bufsim.experiments.ssb",
                        everywhere=True))


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


#: no code cell of any notebook is longer than this many non-blank lines (comments count):
#: the logic lives in bufsim/experiments and bufsim.figures
MAX_CELL_LINES = 30


def long_cells(cells) -> list:
    """(notebook, cell index, non-blank lines) of each code cell over MAX_CELL_LINES."""
    return [(nb, i, n) for nb, i, src in cells
            if (n := sum(1 for line in src.splitlines() if line.strip())) > MAX_CELL_LINES]


def test_notebooks_are_thin():
    assert len({nb for nb, _, _ in _code_cells()}) >= 9     # every notebook is read
    assert long_cells(_code_cells()) == []


def test_the_cell_length_check_finds_a_long_cell():
    cell = "\n".join(f"x{i} = {i}" for i in range(MAX_CELL_LINES)) + "\n\n# a comment counts"
    assert long_cells([("nb", 3, cell)]) == [("nb", 3, MAX_CELL_LINES + 1)]
    assert long_cells([("nb", 3, cell.rsplit("\n", 1)[0] + "\n\n\n")]) == []


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
#: (docs/layout.md shows them; tests/test_docs.py holds the two to the same list)
LAYERS = [["_units", "_validation", "paths", "cache", "versions"], ["analytic"], ["config", "pages"],
          ["policies"], ["trace", "trace_import", "blktrace", "examples"],
          ["engine", "pool", "_pool_state", "reference", "sweeps"],
          ["workloads", "synthetic", "contention"], ["experiments", "live", "advise"],
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


TESTS = Path(__file__).resolve().parent


def test_tests_mirror_the_package():
    """Every folder of tests/ (but data/, _imports/ and reliability/, the hostile probes kept
    as tests across the package) is a package named after a subpackage of bufsim, and holds test
    files (the rule of tests/README.md)."""
    folders = [d for d in TESTS.iterdir()
               if d.is_dir() and d.name not in ("data", "__pycache__", "reliability", "_imports")]
    assert folders
    bad = [d.name for d in folders
           if not (PKG / d.name / "__init__.py").exists() or not (d / "__init__.py").exists()
           or not any(d.glob("test_*.py"))]
    assert bad == []


# ---- one door to the engine's state (the acceptance greps, as AST checks) ----------
#: the engine's state arrays (bufsim._pool_state.PoolState's attributes, the kernels' arguments)
STATE_ARRAYS = {"pst", "ist", "sst", "cnt", "glob", "cfg", "stat", "pm", "hk", "hv", "ffree", "fmap"}
#: the only modules that may import policies/_state.py and write the state arrays
STATE_OWNERS = ("bufsim/engine.py", "bufsim/_pool_state.py", "bufsim/reference.py",
                "bufsim/policies/")


def state_trespasses(path: Path, rel: str) -> list:
    """(module, line, code) of each import of ``_state`` and each write into a state array
    (``x.sst[0, T_CLOCK] = ...``, ``glob[G_X] += ...``) in a module outside STATE_OWNERS."""
    if rel.startswith(STATE_OWNERS):
        return []
    out = []
    for node in ast.walk(ast.parse(path.read_text(), rel)):
        if isinstance(node, ast.ImportFrom):
            mods = [node.module or ""] + [a.name for a in node.names]
            if any(m == "_state" or m.endswith("._state") for m in mods):
                out.append((rel, node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.Import):
            if any(a.name.endswith("._state") for a in node.names):
                out.append((rel, node.lineno, ast.unparse(node)))
        elif isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                for s in ast.walk(t):
                    v = getattr(s, "value", None)
                    if isinstance(s, ast.Subscript) and (
                            isinstance(v, ast.Attribute) and v.attr in STATE_ARRAYS
                            or isinstance(v, ast.Name) and v.id in ("pst", "ist", "sst", "glob")):
                        out.append((rel, node.lineno, ast.unparse(node)))
    return out


def test_only_the_engine_and_the_policies_touch_state():
    bad = [t for p in sorted(PKG.rglob("*.py"))
           for t in state_trespasses(p, p.relative_to(PKG.parent).as_posix())]
    assert bad == []


def test_the_state_check_finds_a_trespass(tmp_path):
    f = tmp_path / "driver.py"
    f.write_text("from bufsim.policies._state import T_CLOCK\n"
                 "def go(state):\n    state.sst[0, T_CLOCK] = 5\n    state.cfg[3] += 1\n")
    assert [line for _, line, _ in state_trespasses(f, "bufsim/experiments/driver.py")] == [1, 3, 4]
    assert state_trespasses(f, "bufsim/policies/driver.py") == []


def raw_columns(src: str, name: str) -> list:
    """(line, code) of each state-array subscript with an integer literal as an index
    (``ist[i, 2]``, ``pm[0]``): columns and list ids must be named constants."""
    out = []
    for node in ast.walk(ast.parse(src, name)):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) \
                and node.value.id in STATE_ARRAYS:
            idx = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if any(isinstance(e, ast.Constant) and type(e.value) is int for e in idx):
                out.append((node.lineno, ast.unparse(node)))
    return out


def test_no_raw_column_index_in_policies():
    bad = {p.name: r for p in sorted((PKG / "policies").rglob("*.py"))
           if (r := raw_columns(p.read_text(), p.name))}
    assert bad == {}


def test_the_raw_column_check_finds_one():
    assert raw_columns("a = ist[i, 2]\nb = ist[i, I_HEAD]\nc = pm[0]\nd = x.shape[0]\n", "k.py") == \
        [(1, "ist[i, 2]"), (3, "pm[0]")]


# ---- versions as data: no version comparison outside bufsim/versions.py ------------------
def _is_family(node) -> bool:
    """The string constant ``"mariadb"`` or ``"mysql"`` (any case): a server family."""
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and \
        node.value.strip().lower() in ("mariadb", "mysql")


def _is_string(node) -> bool:
    """A string constant, or a tuple/list/set of them."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return bool(node.elts) and all(_is_string(e) for e in node.elts)
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _names_version(node) -> bool:
    """``version``, ``ver``, ``x.version``, or a method call on one (``x.version.lower()``):
    a configuration's or a server's version."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        node = node.func.value
    return isinstance(node, ast.Name) and node.id in ("version", "ver") or \
        isinstance(node, ast.Attribute) and node.attr == "version"


def version_comparisons(src: str, name: str) -> list:
    """(line, code) of each place that branches on a server version by its name: a
    version compared with a string (``cfg.version == "5.5"``, ``ver in ("5.6", "5.7")``),
    a family test (``"mariadb" in s``), ``x.version.startswith(...)``, or a lookup keyed
    by a version (``{...}.get(cfg.version)``, ``table[cfg.version]``)."""
    out = []
    for node in ast.walk(ast.parse(src, name)):
        hit = False
        if isinstance(node, ast.Compare):
            ops = [node.left, *node.comparators]
            hit = any(_is_family(o) for o in ops) or (
                any(_names_version(o) for o in ops) and any(_is_string(o) for o in ops))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in ("startswith", "endswith"):
                hit = _names_version(node.func.value) or any(_is_family(a) for a in node.args)
            elif node.func.attr == "get" and node.args:
                hit = _names_version(node.args[0])
        elif isinstance(node, ast.Subscript):
            hit = _names_version(node.slice)
        if hit:
            out.append((node.lineno, ast.unparse(node)))
    return out


def test_no_version_comparison_outside_versions():
    """Every rule that differs between server versions is a field of its record in
    bufsim/versions.py: no other module compares version names."""
    bad = {p.relative_to(PKG.parent).as_posix(): r for p in sorted(PKG.rglob("*.py"))
           if p.name != "versions.py" and (r := version_comparisons(p.read_text(), p.name))}
    assert bad == {}


def test_the_version_check_finds_them():
    src = ('if cfg.version == "5.5": pass\n'
           'if version != "mariadb10.11": pass\n'
           'a = ver in ("5.6", "5.7")\n'
           'b = self.version.startswith("5.5")\n'
           'c = "mariadb" in s.lower()\n'
           'd = {"5.5": 1}.get(cfg.version, 100)\n'
           'e = cfg.server.page_cleaner\n'
           'f = fmt == (1, 0)\n'
           'g = df.version == df.loc[k, "version"]\n'
           'h = m.variant == "5.6.5"\n')
    assert [line for line, _ in version_comparisons(src, "x.py")] == [1, 2, 3, 4, 5, 6]


# ---- no private names across modules ---------------------------------------------------------
def private_imports(path: Path, name: str) -> list:
    """(line, module, names) of each import that takes private names (``_x``) from another
    bufsim module, at module level or inside a function.  A private *module* imported by
    its own package (``from . import _numba_cache``) is not a name taken across modules."""
    pkg = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = pkg.split(".")
            base = base[:len(base) - node.level + 1]
            mod = ".".join(base + ([node.module] if node.module else []))
        else:
            mod = node.module or ""
        if not mod.startswith("bufsim"):
            continue
        names = [a.name for a in node.names
                 if a.name.startswith("_") and not a.name.startswith("__")
                 and not (PKG.parent / Path(*(mod + "." + a.name).split("."))).with_suffix(".py")
                 .exists()]
        if names:
            out.append((node.lineno, mod, names))
    return out


def test_no_private_name_is_imported_across_modules():
    """A helper two modules share is public in the module that owns it."""
    bad = {_module_name(p): r for p in sorted(PKG.rglob("*.py"))
           if (r := private_imports(p, _module_name(p)))}
    assert bad == {}


def test_the_private_import_check_finds_one(tmp_path):
    f = PKG / "workloads" / "sysbench.py"
    assert private_imports(f, "bufsim.workloads.sysbench") == []
    g = tmp_path / "x.py"
    g.write_text("from .txn import _descents, leaf_descents\n"
                 "def f():\n    from bufsim.pages import _hidden\n"
                 "from . import _kernels\n")
    assert private_imports(g, "bufsim.workloads.x") == [
        (1, "bufsim.workloads.txn", ["_descents"]), (3, "bufsim.pages", ["_hidden"])]
