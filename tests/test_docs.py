"""The README and the docs site say only what is true of this commit, and the site builds.

Static checks (fast): the README's length, every ``bufsim.x.y`` name and every repository
path the README, ``docs/`` and the code READMEs mention exists, no file cites a path
outside the repository, the layer list of ``docs/layout.md`` is the one
``tests/test_layout.py`` enforces, the README's examples run and print what it says.
The build (``scripts/build_docs.py``): its internal-link checker finds a broken link, a
quick build passes with warnings as errors and Chromium shows the home page, a notebook
page with its chart and an API page, each with the search box (markers ``browser``, and
``slow`` + ``ci``: a Sphinx build, minutes of CPU, run by .ci/run and make test-slow); the
full build is in the slow tier.
"""
from __future__ import annotations

import ast
import contextlib
import importlib
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bufsim import paths

ROOT = paths.repo_root()
README = ROOT / "README.md"
DOCS = ROOT / "docs"
#: the pages a reader meets: README, the docs sources, the READMEs of data/ and tests/
PAGES = [README, ROOT / "data" / "README.md", ROOT / "tests" / "README.md",
         *sorted(DOCS.glob("*.md"))]
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")


def _load_build_docs():
    spec = importlib.util.spec_from_file_location("build_docs", ROOT / "scripts" / "build_docs.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_readme_is_short():
    n = len(README.read_text(encoding="utf-8").splitlines())
    assert n <= 300, f"README.md has {n} lines (at most 300)"


# ---- names ---------------------------------------------------------------------------
NAME = re.compile(r"(?<![\w./-])bufsim(?:\.[A-Za-z_]\w*)+(?![\w*])")


def resolve(name: str) -> bool:
    """True if ``name`` (``bufsim.a.b.c``) is a module or an attribute reached from one."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return False
        return True
    return False


def test_resolve_tells_a_real_name_from_a_made_up_one():
    assert resolve("bufsim.Pool.run") and resolve("bufsim.workloads.ssb.SSB")
    assert not resolve("bufsim.Pool.no_such_method") and not resolve("bufsim.nowhere")


def test_every_bufsim_name_on_the_pages_exists():
    missing = sorted({(p.relative_to(ROOT).as_posix(), n) for p in PAGES
                      for n in NAME.findall(p.read_text(encoding="utf-8"))
                      if not resolve(n)})
    assert missing == []


# ---- paths ---------------------------------------------------------------------------
TOP = ("bufsim/", "notebooks/", "docs/", "data/", "figures/", "tests/", "benchmarks/",
       "scripts/", ".ci/")
TOP_FILES = {"Makefile", "pyproject.toml", "environment.yml", "README.md", ".ci/run"}
#: a path in backticks, as the pages cite them
CODE = re.compile(r"`([^`\s]+)`")
PLACEHOLDER = re.compile(r"NAME|HASH|\*|\.\.\.|<|\{")


def cited_paths(text: str) -> set[str]:
    """Repository paths a page cites in backticks or in a path column (placeholders like
    ``figures/NAME.png`` are left out)."""
    found = set()
    for token in CODE.findall(text) + re.findall(r"(?m)^(\S+/)\s{2,}", text):
        token = token.rstrip(":,;)")
        if token in TOP_FILES or (token.startswith(TOP) and not PLACEHOLDER.search(token)):
            found.add(token)
    return found


def test_cited_paths_finds_paths_and_skips_placeholders():
    text = "see `bufsim/engine.py`, `figures/NAME.png`, `make test` and\nbufsim/   the package"
    assert cited_paths(text) == {"bufsim/engine.py", "bufsim/"}


def test_every_path_on_the_pages_exists():
    missing = []
    for page in PAGES:
        for rel in cited_paths(page.read_text(encoding="utf-8")):
            # a docs page may cite its siblings by name (`guide-cli.md`) or from the root
            if not (ROOT / rel).exists():
                missing.append((page.relative_to(ROOT).as_posix(), rel))
    assert missing == []


#: what no file of the repository may cite: the folders the project was set up from,
#: which are not part of it (spelled in pieces so that this file does not cite them)
OUTSIDE = re.compile("|".join([r"(?<![\w/])\.\./" + "sha" + "red", r"(?<![\w./-])sha" + "red/",
                               "/" + "work/"]))


def test_outside_paths_are_recognised():
    bad = ["see `" + "sha" + "red/design/x.md`", "(`../" + "sha" + "red/seeds/`)", "/" + "work/main"]
    good = ["data/README.md", "a shared pool", "bufsim/paths.py"]
    assert [bool(OUTSIDE.search(t)) for t in bad + good] == [True] * 3 + [False] * 3


def test_no_path_outside_the_repository_is_cited():
    files = subprocess.run(["git", "-C", str(ROOT), "ls-files"], capture_output=True,
                           text=True, check=True).stdout.split()
    hits = []
    for f in files:
        path = ROOT / f
        if path.suffix not in (".md", ".py", ".ipynb", ".toml", ".yml", ".txt", ".cfg", "") \
                or not path.is_file():
            continue
        for i, line in enumerate(path.read_text(encoding="utf-8", errors="replace")
                                 .splitlines(), 1):
            if OUTSIDE.search(line):
                hits.append(f"{f}:{i}: {line.strip()[:100]}")
    assert hits == []


# ---- statements about the code -------------------------------------------------------
def _layout_layers() -> list[list[str]]:
    """The layer list of docs/layout.md, as module and folder names per layer."""
    text = (DOCS / "layout.md").read_text(encoding="utf-8")
    block = text.split("## The package's layers", 1)[1].split("```", 2)[1]
    layers = []
    for line in block.splitlines()[1:]:
        if not line.strip() or line.startswith(" "):
            continue
        head = line.split("  ")[0]
        layers.append([m.strip().removesuffix(".py").removesuffix("/")
                       for m in head.split(",") if m.strip()])
    return layers


def test_the_docs_layer_list_is_the_enforced_one():
    from tests.test_layout import LAYERS
    assert _layout_layers() == LAYERS


def test_the_readme_names_every_notebook():
    text = README.read_text(encoding="utf-8")
    table = set(re.findall(r"(?m)^\| `(\d\d_\w+)` \|", text))
    assert table == {p.stem for p in (ROOT / "notebooks").glob("*.ipynb")}


def test_pool_state_bytes_per_frame_are_what_its_docstring_says():
    import bufsim
    from bufsim._pool_state import PoolState
    from bufsim.policies._state import new_page_state, page_state_nbytes

    doc = PoolState.__doc__
    arrays, total = map(int, re.search(r"\((\d+) bytes a frame; with the free list[^,]*,"
                                       r"\s+int32, (\d+)", doc).groups())
    assert page_state_nbytes(new_page_state(1000)) == arrays * 1000
    trace = bufsim.synthetic.zipf_trace(1_000, 1_000, alpha=0.9, seed=1)
    state = PoolState(bufsim.mysql56(pool_pages=320), trace.tablespaces)
    assert state.nbytes()["bytes_per_frame"] == total


def _code_blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)


def test_the_readme_python_example_runs():
    (code,) = _code_blocks(README.read_text(encoding="utf-8"), "python")
    assert len(code.strip().splitlines()) == 5
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    hit_ratio = float(out.getvalue().split()[0])
    assert 0.5 < hit_ratio < 1


def test_the_readme_cli_example_prints_what_it_says(tmp_path):
    from bufsim import cli

    text = README.read_text(encoding="utf-8")
    block = next(b for b in _code_blocks(text, "sh") if b.startswith("bufsim replay"))
    assert len(block.strip().splitlines()) == 5
    first = block.splitlines()[0].split()[1:]
    got = {}
    for t in ("1000", "0"):
        args = [a if a != "1000" else t for a in first] + ["--json", "-o", str(tmp_path / f"{t}.json")]
        assert cli.main(args) == 0
        got[t] = json.loads((tmp_path / f"{t}.json").read_text())
    claims = re.search(r"counters \(([\d,]+) pages read, ([\d,]+) not made young, hit ratio "
                       r"([\d.]+); with\s+`--old-blocks-time 0`, ([\d,]+) read and ([\d.]+)\)",
                       text)
    read1, nmy1, hr1, read0, hr0 = claims.groups()
    num = lambda s: int(s.replace(",", ""))  # noqa: E731
    t1, t0 = got["1000"]["totals"], got["0"]["totals"]
    assert (t1["NUMBER_PAGES_READ"], t1["PAGES_NOT_MADE_YOUNG"]) == (num(read1), num(nmy1))
    assert f"{got['1000']['hit_ratio']:.4f}" == hr1
    assert (t0["NUMBER_PAGES_READ"], f"{got['0']['hit_ratio']:.4f}") == (num(read0), hr0)


# ---- the build -----------------------------------------------------------------------
def test_link_checker_finds_broken_links(tmp_path):
    bd = _load_build_docs()
    (tmp_path / "a.html").write_text('<p id="here"></p><a href="b.html#x">b</a>'
                                     '<a href="#here">self</a><img src="img/c.png">'
                                     '<a href="https://example.org/">ext</a>')
    (tmp_path / "b.html").write_text('<h1 id="y">b</h1><a href="a.html#here">a</a>')
    assert bd.check_links(tmp_path) == ["a.html: b.html#x (no id 'x')",
                                        "a.html: img/c.png (no such file)"]
    (tmp_path / "img").mkdir()
    (tmp_path / "img" / "c.png").write_bytes(b"png")
    (tmp_path / "b.html").write_text('<h1 id="x">b</h1>')
    assert bd.check_links(tmp_path) == []


def test_unexecuted_notebooks_get_a_note(tmp_path):
    sys.path.insert(0, str(DOCS / "_ext"))
    try:
        import bufsim_facts
    finally:
        sys.path.remove(str(DOCS / "_ext"))
    missing = bufsim_facts.write_notebook_pages(tmp_path, tmp_path / "nothing-here")
    assert missing == sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))
    page = (tmp_path / "notebooks" / "00_quickstart.md").read_text()
    assert "has not been executed" in page and "make reproduce" in page
    assert bufsim_facts.write_results_pages(tmp_path, tmp_path / "nothing-here") == []
    assert "make reproduce" in (tmp_path / "results" / "none.md").read_text()


def test_the_results_page_renders_the_newest_full_bench_run(tmp_path):
    """make bench writes a new bench-<time>.json per run (never latest.json, never an
    earlier run's file); the docs render the newest one that is neither --quick nor
    --replay-only, and a note when there is none."""
    sys.path.insert(0, str(DOCS / "_ext"))
    try:
        import bufsim_facts
    finally:
        sys.path.remove(str(DOCS / "_ext"))
    res = tmp_path / "repo" / "benchmarks" / "results"
    res.mkdir(parents=True)
    src = tmp_path / "src"
    src.mkdir()
    assert not bufsim_facts.write_bench_page(src, tmp_path / "repo")
    assert "No full `make bench` result" in (src / "bench-latest.md").read_text()
    row = dict(trace="zipf0.9", pool_pages=8192, policy="lru", gets_per_s=4.0e7,
               ratio_vs_floor=0.5, hits=7, read_ahead=None, rounds=3)
    for name, when, extra in (("bench-a.json", "2026-11-29T08:00:00+00:00", {}),
                              ("bench-b.json", "2026-11-29T09:00:00+00:00", {"replay_only": True}),
                              ("bench-c.json", "2026-11-29T10:00:00+00:00", {"quick": True}),
                              ("bench-d.json", "2026-11-28T23:00:00+00:00", {})):
        (res / name).write_text(json.dumps(dict(when=when, results=[row], **extra)))
    assert bufsim_facts.newest_full_bench(tmp_path / "repo") == res / "bench-a.json"
    assert bufsim_facts.write_bench_page(src, tmp_path / "repo")
    page = (src / "bench-latest.md").read_text()
    assert "bench-a.json" in page and "2026-11-29T08:00:00" in page and "| 40.0 |" in page


def _build(out: Path, notebooks: Path, results: Path, quick: bool) -> None:
    cmd = [sys.executable, str(ROOT / "scripts" / "build_docs.py"), "--out", str(out),
           "--notebooks", str(notebooks), "--results", str(results)] + (["--quick"] if quick else [])
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    assert (out / "index.html").is_file()


def _executed_quickstart(tmp_path: Path, monkeypatch) -> Path:
    """00_quickstart run in quick mode, its executed copy alone in a folder."""
    from bufsim import notebooks

    monkeypatch.setenv(paths.BUILD_ENV_VAR, str(tmp_path / "build"))
    monkeypatch.setenv(paths.FIGURES_ENV_VAR, str(tmp_path / "figures"))
    runs = notebooks.run_notebooks(["00_quickstart"], quick=True, progress=False,
                                   parameters={"output_dir": str(tmp_path / "nbout")})
    assert [r.ok for r in runs] == [True], runs[0].error
    return Path(runs[0].output).parent


def _browse(pages: dict[str, Path], tmp_path: Path) -> dict[str, dict]:
    """Open each page in Chromium; per page: the search box's presence, and the natural
    sizes of the images in the article body."""
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium (test extra) missing")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--window-size=1400,1000",
                 "--allow-file-access-from-files", f"--user-data-dir={tmp_path / 'profile'}"]:
        options.add_argument(flag)
    service = Service(executable_path=str(CHROMEDRIVER),
                      log_output=str(tmp_path / "chromedriver.log"))
    driver = webdriver.Chrome(service=service, options=options)
    seen = {}
    try:
        for key, page in pages.items():
            driver.get(page.as_uri())
            seen[key] = driver.execute_script(
                "const imgs = [...document.querySelectorAll('article img')];"
                "return {title: document.title,"
                " search: !!document.querySelector('form.bd-search input[name=q]')"
                "   && !!document.querySelector('.search-button__button'),"
                " images: imgs.map(i => [i.naturalWidth, i.naturalHeight]),"
                " text: document.querySelector('article') ?"
                "   document.querySelector('article').innerText.slice(0, 4000) : ''};")
    finally:
        driver.quit()
    return seen


@pytest.mark.slow
@pytest.mark.ci
@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.is_file() or not CHROMEDRIVER.is_file(),
                    reason="needs Debian's chromium and chromium-driver "
                           "(/usr/bin/chromium, /usr/bin/chromedriver); .ci/run installs them")
def test_quick_build_shows_chart_search_and_api_in_chromium(tmp_path, monkeypatch):
    executed = _executed_quickstart(tmp_path, monkeypatch)
    out = tmp_path / "site"
    _build(out, executed, tmp_path / "no-results", quick=True)
    seen = _browse({"home": out / "index.html",
                    "notebook": out / "notebooks" / "00_quickstart.html",
                    "missing": out / "notebooks" / "05_dbt3_mrr_bka.html",
                    "api": out / "generated" / "bufsim.config.html"}, tmp_path)
    assert all(s["search"] for s in seen.values()), {k: s["search"] for k, s in seen.items()}
    assert "make reproduce" in seen["home"]["text"]
    # the quickstart's chart, drawn from the executed notebook's output
    assert any(w > 200 and h > 100 for w, h in seen["notebook"]["images"]), seen["notebook"]
    assert "has not been executed" in seen["missing"]["text"]
    assert "PoolConfig" in seen["api"]["text"] and "old_blocks_time" in seen["api"]["text"]


@pytest.mark.slow
def test_full_build_passes(tmp_path):
    """make docs's build (the whole API reference) over make reproduce's outputs."""
    _build(tmp_path / "site", ROOT / "build" / "notebooks", ROOT / "build" / "results",
           quick=False)
    api = tmp_path / "site" / "generated"
    assert (api / "bufsim.engine.html").is_file() and (api / "bufsim.live.server.html").is_file()
