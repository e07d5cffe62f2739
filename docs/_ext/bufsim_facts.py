"""Sphinx extension: what the docs say about the code, computed from the code at build time.

* ``{{ name }}`` substitutions (MyST) for figures that would otherwise be typed by hand:
  bytes of state per frame, the presets, the policies, the notebooks.
* ``notebooks/``: one page per notebook in the repository's ``notebooks/``: the executed
  copy from ``make reproduce`` (``build/notebooks/``) where there is one, else a page that
  says the notebook has not been executed yet and how to do it.
* ``results/``: one page per results table a notebook left in ``build/results/`` (CSV),
  rendered as a table; a note where there are none yet.

Both folders are written into the (staged) source folder when the build starts
(``config-inited``), so Sphinx reads them as ordinary pages.
"""
from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path



def _repo() -> Path:
    """The checkout (``bufsim.paths``: ``BUFSIM_ROOT`` or found from the package)."""
    from bufsim import paths
    return paths.repo_root()


def _title(nb_path: Path) -> str:
    """The first Markdown heading of a notebook (its page title)."""
    nb = json.loads(nb_path.read_text(encoding="utf-8"))
    for cell in nb.get("cells", []):
        if cell.get("cell_type") != "markdown":
            continue
        for line in "".join(cell.get("source", [])).splitlines():
            if line.startswith("#"):
                return line.lstrip("#").strip()
    return nb_path.stem


def _executed(nb_path: Path) -> bool:
    """True if the notebook has outputs (a papermill run leaves them in every code cell)."""
    nb = json.loads(nb_path.read_text(encoding="utf-8"))
    return any(c.get("outputs") for c in nb.get("cells", []) if c.get("cell_type") == "code")


def facts(repo: Path | None = None) -> dict[str, str]:
    """The numbers and names the pages cite, from the code in ``repo``."""
    import bufsim
    from bufsim._pool_state import PoolState
    from bufsim.policies import registry

    trace = bufsim.synthetic.zipf_trace(1_000, 1_000, alpha=0.9, seed=1)
    state = PoolState(bufsim.mysql56(pool_pages=320), trace.tablespaces)
    nb = state.nbytes()
    presets = [p for p in ("mysql55", "mysql56", "mysql57", "mariadb105", "mariadb1011")
               if hasattr(bufsim, p)]
    repo = repo or _repo()
    notebooks = sorted(p.stem for p in (repo / "notebooks").glob("*.ipynb"))
    return {
        "frame_bytes": f"{nb['bytes_per_frame']:g}",
        "presets": ", ".join(f"`{p}()`" for p in presets),
        "policies": ", ".join(f"`{p}`" for p in registry.POLICIES),
        "n_notebooks": str(len(notebooks)),
        "bufsim_version": bufsim.__version__,
    }


VEGALITE = ("application/vnd.vegalite.v5+json", "application/vnd.vegalite.v4+json")


def static_charts(nb_path: Path, out_path: Path) -> int:
    """Copy an executed notebook, giving each Altair chart output (Vega-Lite JSON, which a
    static page cannot draw without a JavaScript runtime) the PNG vl-convert renders from
    the same spec, as ``bufsim.figures`` does for ``figures/``. Returns the charts
    converted."""
    import base64

    import vl_convert as vlc

    nb = json.loads(nb_path.read_text(encoding="utf-8"))
    n = 0
    for cell in nb.get("cells", []):
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            mime = next((m for m in VEGALITE if m in data), None)
            if mime is None or "image/png" in data:
                continue
            spec = data.pop(mime)
            png = vlc.vegalite_to_png(spec if isinstance(spec, str) else json.dumps(spec),
                                      scale=1)
            data["image/png"] = base64.b64encode(png).decode("ascii")
            n += 1
    out_path.write_text(json.dumps(nb, indent=1), encoding="utf-8")
    return n


def write_notebook_pages(src: Path, executed_dir: Path | None,
                         repo: Path | None = None) -> list[str]:
    """Put one page per repository notebook under ``src/notebooks``; return the stems
    that have no executed copy (their page is a note)."""
    out = src / "notebooks"
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    missing = []
    repo = repo or _repo()
    for nb in sorted((repo / "notebooks").glob("*.ipynb")):
        done = executed_dir / nb.name if executed_dir else None
        if done is not None and done.is_file() and _executed(done):
            static_charts(done, out / nb.name)
            continue
        missing.append(nb.stem)
        (out / f"{nb.stem}.md").write_text(
            f"# {_title(nb)}\n\n"
            ":::{note}\n"
            f"`{nb.stem}` has not been executed in this checkout yet, so this page has no "
            "outputs. Run `make reproduce` (or `make reproduce NOTEBOOKS="
            f"{nb.stem[:2]}`) and then `make docs`: the page then shows the executed "
            "notebook with its tables and charts.\n:::\n\n"
            f"The notebook itself is `notebooks/{nb.name}` in the repository.\n",
            encoding="utf-8")
    return missing


def write_results_pages(src: Path, results_dir: Path | None) -> list[str]:
    """One page per ``*.csv`` in ``results_dir`` under ``src/results``; return their stems."""
    out = src / "results"
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    tables = sorted(results_dir.glob("*.csv")) if results_dir and results_dir.is_dir() else []
    stems = []
    for path in tables:
        with path.open(newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
        if not rows:
            continue
        stems.append(path.stem)
        shutil.copyfile(path, out / path.name)
        (out / f"{path.stem}.md").write_text(
            f"# {path.stem}\n\n"
            f"`build/results/{path.name}`: {len(rows) - 1} rows, as the notebook wrote them.\n\n"
            f"```{{csv-table}}\n:file: {path.name}\n:header-rows: 1\n"
            ":class: bufsim-results\n```\n",
            encoding="utf-8")
    if not stems:
        (out / "none.md").write_text(
            "# No results yet\n\n:::{note}\nNo notebook has left a results table in this "
            "checkout (`build/results/*.csv`). Run `make reproduce`, then `make docs`.\n:::\n",
            encoding="utf-8")
    return stems


def write_flags_page(src: Path) -> list[str]:
    """``api-flags.md``: the trace's event flags (``bufsim.FLAG_*``), each with its value
    and the doc comment it has where it is defined. Returns the flag names."""
    import bufsim
    from sphinx.pycode import ModuleAnalyzer

    docs = ModuleAnalyzer.for_module("bufsim.policies._state").find_attr_docs()
    names = [n for n in bufsim.__all__ if n.startswith("FLAG_")]
    parts = ["# Trace event flags\n",
             "Bits of a trace's `flags` column (`bufsim.Chunk.flags`, the `flags` column of "
             "`bufsim.read_trace`); `bufsim.trace` re-exports them too.\n"]
    for n in names:
        doc = " ".join(line.strip() for line in docs.get(("", n), []) if line.strip())
        parts.append(f"```{{eval-rst}}\n.. py:data:: bufsim.{n}\n   :value: "
                     f"{getattr(bufsim, n)}\n\n   {doc}\n```\n")
    (src / "api-flags.md").write_text("\n".join(parts), encoding="utf-8")
    return names


def newest_full_bench(repo: Path) -> Path | None:
    """The newest ``benchmarks/results/bench-*.json`` of a full ``make bench`` run (not
    ``--quick``, not ``--replay-only``), by its ``when``; None if there is none."""
    best = None
    for path in (repo / "benchmarks" / "results").glob("bench-*.json"):
        d = json.loads(path.read_text(encoding="utf-8"))
        if d.get("quick") or d.get("replay_only"):
            continue
        if best is None or d["when"] > best[0]:
            best = (d["when"], path)
    return None if best is None else best[1]


def write_bench_page(src: Path, repo: Path | None = None) -> bool:
    """``bench-latest.md``: the newest full ``make bench`` run of the checkout
    (:func:`newest_full_bench`) as tables, M gets/s and the ratio to ``floor_lru`` per
    trace, pool and kernel. Returns False (and writes a note) when there is none."""
    repo = repo or _repo()
    path = newest_full_bench(repo)
    out = src / "bench-latest.md"
    if path is None:
        out.write_text("# Latest benchmark run\n\n:::{note}\nNo full `make bench` result in "
                       "this checkout (`benchmarks/results/bench-*.json`).\n:::\n",
                       encoding="utf-8")
        return False
    d = json.loads(path.read_text(encoding="utf-8"))
    m = d.get("machine", {})
    lines = ["# Latest benchmark run\n",
             f"`benchmarks/results/{path.name}`, written by `make bench` at {d['when']} "
             f"({m.get('cpu_count', '?')} CPUs, {m.get('platform', '?')}, Python "
             f"{m.get('python', '?')}; libCacheSim {d.get('libcachesim_version', '?')}). Rates "
             "in M gets/s, best of the rounds; `vs floor` is the rate over `floor_lru`'s in the "
             "same trace and pool.\n",
             "| trace | pool pages | kernel | M gets/s | vs floor | hits | read ahead | rounds |",
             "|---|---|---|---|---|---|---|---|"]
    for r in d.get("results", []):
        ra = "" if r.get("read_ahead") is None else f"{r['read_ahead']:,}"
        vs = "" if r.get("ratio_vs_floor") is None else f"{r['ratio_vs_floor']:.2f}x"
        lines.append(f"| {r['trace']} | {r['pool_pages']:,} | `{r['policy']}` | "
                     f"{r['gets_per_s'] / 1e6:.1f} | {vs} | {r['hits']:,} | {ra} | "
                     f"{r.get('rounds', '')} |")
    mrc = d.get("mrc_vs_replay")
    if mrc:
        lines += ["", "## Miss-ratio curve against replays\n",
                  f"`bufsim.analytic.exact_mrc` over {mrc['n_gets']:,} gets "
                  f"({mrc['n_pages']:,} pages, Zipf {mrc['alpha']}) at {len(mrc['sizes'])} "
                  f"sizes: {mrc['mrc_seconds']:.2f} s against {mrc['replay_seconds_total']:.2f} s "
                  f"for the replays ({mrc['speedup']:.1f}x); hits equal: "
                  f"{mrc['hits_equal']}."]
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return True


def _on_config_inited(app, config):
    src = Path(app.srcdir)
    nbdir = Path(config.bufsim_notebooks_dir) if config.bufsim_notebooks_dir else \
        _repo() / "build" / "notebooks"
    resdir = Path(config.bufsim_results_dir) if config.bufsim_results_dir else \
        _repo() / "build" / "results"
    write_notebook_pages(src, nbdir)
    write_results_pages(src, resdir)
    write_flags_page(src)
    write_bench_page(src)
    subs = dict(config.myst_substitutions or {})
    subs.update(facts())
    config.myst_substitutions = subs


def _resolve_short_name(app, env, node, contnode):
    """Resolve a Python reference a docstring writes short (``FLAG_AHI``, ``PoolConfig``,
    ``bufsim.FLAG_STMT_END``) to the one documented bufsim object of that name: the one in
    the referring module if there is one, else the only one, else the shortest name.
    A name that no documented object has stays unresolved (and fails the build)."""
    if node.get("refdomain") != "py":
        return None
    target = node.get("reftarget", "")
    if not target:
        return None
    from sphinx.util.nodes import make_refnode
    domain = env.get_domain("py")
    tail = target.split(".")[-1]
    hits = [(name, obj) for name, obj in domain.objects.items()
            if name.startswith("bufsim") and name.split(".")[-1] == tail
            and (name == target or name.endswith("." + target) or
                 target.startswith("bufsim.") and name.endswith("." + tail))]
    mod = node.get("py:module") or ""
    if not hits:
        return _module_of_constant(app, env, node, contnode, target, mod)
    local = [h for h in hits if mod and h[0].startswith(mod + ".")]
    pick = (local or hits)
    name, obj = min(pick, key=lambda h: (len(h[0]), h[0]))
    return make_refnode(app.builder, node.get("refdoc", ""), obj.docname, obj.node_id,
                        contnode, name)


def _module_of_constant(app, env, node, contnode, target, mod):
    """A module-level constant that autodoc leaves out (tuple assignments and the like):
    if the referring module (or the dotted target's module) really has that attribute, link
    to that module's page; otherwise leave the reference unresolved."""
    import importlib

    from sphinx.util.nodes import make_refnode
    owner, _, attr = (target.rpartition(".") if target.startswith("bufsim.")
                      else (mod, "", target))
    if not owner or "." in attr:
        return None
    try:
        module = importlib.import_module(owner)
    except ImportError:
        return None
    if not hasattr(module, attr):
        return None
    entry = env.get_domain("py").modules.get(owner)
    if entry is None:
        return None
    return make_refnode(app.builder, node.get("refdoc", ""), entry.docname, entry.node_id,
                        contnode, f"{owner}.{attr}")


def setup(app):
    app.connect("missing-reference", _resolve_short_name)
    app.add_config_value("bufsim_notebooks_dir", "", "env")
    app.add_config_value("bufsim_results_dir", "", "env")
    app.connect("config-inited", _on_config_inited, priority=100)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
