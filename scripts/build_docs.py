"""Build the docs site: ``make docs`` runs this.

Stages ``docs/`` into ``OUT/../docs-src`` (the executed notebooks and results tables are
placed beside the pages there, never in ``docs/``), runs ``sphinx-build -b html -W
--keep-going -n`` into ``OUT`` (warnings, and references Sphinx cannot resolve, are errors),
then checks every internal link of the built HTML: each ``href``/``src`` to a local file
must name a file that exists, and each ``#fragment`` an ``id`` in it. Exits non-zero on any
failure, naming it.

    python scripts/build_docs.py [--out build/docs] [--notebooks build/notebooks]
                                 [--results build/results] [--quick]

``--quick`` builds the API reference of the top-level package only (the default-tier test
uses it; the full reference is built by ``make docs`` and the slow test).
"""
from __future__ import annotations

import argparse
import html.parser
import os
import shutil
import subprocess
import sys
import urllib.parse
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
QUICK_API = ["bufsim", "bufsim.config", "bufsim.pool"]


class _Links(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        for k, v in attrs:
            if v is None:
                continue
            if k == "id" or (k == "name" and tag == "a"):
                self.ids.add(v)
            elif k in ("href", "src") and tag != "script":
                self.links.append(v)


def _parse(path: Path) -> _Links:
    p = _Links()
    p.feed(path.read_text(encoding="utf-8", errors="replace"))
    return p


def check_links(root: Path) -> list[str]:
    """Broken internal links of the HTML under ``root``, as 'page: link (reason)'."""
    problems = []
    cache: dict[Path, _Links] = {}
    pages = sorted(root.rglob("*.html"))
    for page in pages:
        rel = page.relative_to(root)
        if rel.parts[0] in ("_static", "_sources", "_modules"):
            continue
        parsed = cache.setdefault(page, _parse(page))
        for link in parsed.links:
            u = urllib.parse.urlsplit(link)
            if u.scheme or link.startswith("//") or link.startswith("mailto:"):
                continue
            target = page if not u.path else (page.parent / urllib.parse.unquote(u.path))
            target = target.resolve()
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                problems.append(f"{rel}: {link} (no such file)")
                continue
            if u.fragment and target.suffix == ".html":
                ids = cache.setdefault(target, _parse(target)).ids
                if urllib.parse.unquote(u.fragment) not in ids:
                    problems.append(f"{rel}: {link} (no id {u.fragment!r})")
    return problems


def stage(src: Path, quick: bool) -> None:
    if src.exists():
        shutil.rmtree(src)
    shutil.copytree(REPO / "docs", src, ignore=shutil.ignore_patterns(
        "_build", "notebooks", "results", "generated", "__pycache__"))
    # the home page includes the README (docs/index.md: _include/README.md)
    (src / "_include").mkdir()
    shutil.copyfile(REPO / "README.md", src / "_include" / "README.md")
    if quick:
        api = src / "api.md"
        text = api.read_text(encoding="utf-8")
        head, _, rest = text.partition("% api-begin")
        _, _, tail = rest.partition("% api-end")
        block = "```{eval-rst}\n.. autosummary::\n   :toctree: generated\n\n" + \
            "".join(f"   {m}\n" for m in QUICK_API) + "```\n"
        api.write_text(head + block + tail, encoding="utf-8")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=REPO / "build" / "docs")
    ap.add_argument("--notebooks", type=Path, default=REPO / "build" / "notebooks",
                    help="folder of executed notebooks (make reproduce's build/notebooks)")
    ap.add_argument("--results", type=Path, default=REPO / "build" / "results",
                    help="folder of the notebooks' results tables (build/results)")
    ap.add_argument("--quick", action="store_true",
                    help="API reference of the top-level modules only")
    args = ap.parse_args(argv)
    out = args.out.resolve()
    src = out.parent / (out.name + "-src")
    stage(src, args.quick)
    doctrees = out.parent / (out.name + "-doctrees")
    env = dict(os.environ, BUFSIM_DOCS_NOTEBOOKS=str(args.notebooks.resolve()),
               BUFSIM_DOCS_RESULTS=str(args.results.resolve()), BUFSIM_ROOT=str(REPO),
               BUFSIM_DOCS_QUICK="1" if args.quick else "")
    tmp = out.parent / (out.name + ".tmp-build")
    if tmp.exists():
        shutil.rmtree(tmp)
    cmd = [sys.executable, "-m", "sphinx", "-b", "html", "-W", "--keep-going", "-n", "-q",
           "-c", str(src), "-d", str(doctrees), str(src), str(tmp)]
    rc = subprocess.run(cmd, env=env, cwd=REPO).returncode
    if rc != 0:
        print(f"build_docs: sphinx-build failed (exit {rc}); nothing written to {out}",
              file=sys.stderr)
        return 1
    broken = check_links(tmp)
    if broken:
        print("build_docs: broken internal links:\n  " + "\n  ".join(broken), file=sys.stderr)
        return 1
    # the finished site replaces the old one only once it is whole
    old = out.parent / (out.name + ".tmp-old")
    if out.exists():
        out.rename(old)
    tmp.rename(out)
    if old.exists():
        shutil.rmtree(old)
    print(f"build_docs: {out / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
