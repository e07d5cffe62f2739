"""Sphinx configuration of bufsim's docs site.

Sphinx with myst-nb (Markdown pages and the executed notebooks, never re-executed here),
numpydoc and autosummary (the API reference from the docstrings) and the PyData theme: the
Python scientific ecosystem's own toolchain, the one NumPy, pandas and SciPy document with.
Build it with ``make docs`` (``scripts/build_docs.py``), which stages this folder, puts the
executed notebooks and results tables beside it and builds with warnings as errors.
"""
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))

project = "bufsim"
author = "the bufsim authors"
copyright = "the bufsim authors"

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "bufsim_facts",
]

# the notebooks are rendered from make reproduce's executed copies, with their outputs
nb_execution_mode = "off"
nb_render_markdown_format = "myst"
# Altair charts (Vega-Lite JSON, which needs JavaScript) are shown as the PNG the build
# renders from the same spec with vl-convert (docs/_ext/bufsim_facts.py)
myst_enable_extensions = ["colon_fence", "dollarmath", "substitution"]
myst_heading_anchors = 3

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "_ext", "_templates", "_include", "conf.py", "**.ipynb_checkpoints"]
templates_path = ["_templates"]

autosummary_generate = True
autosummary_imported_members = False
autodoc_default_options = {"members": True, "undoc-members": False}
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks = set()
numpydoc_xref_param_type = False

# -n (nitpicky) holds every internal reference; names of other projects' types (NumPy,
# pandas, the standard library) cannot be resolved without intersphinx, which needs the
# network, so they alone are let through
nitpicky = True
nitpick_ignore_regex = [
    # private modules and names (a leading underscore) are not part of the API reference
    (r"py:.*", r"(.*\.)?_[A-Za-z].*"),
    (r"py:.*", r"(np|numpy|pd|pandas|numba|pyarrow|altair|alt|scipy|concurrent|collections"
               r"|typing|os|pathlib|datetime|enum|dataclasses|subprocess|pymysql|io)\..*"),
    (r"py:.*", r"(int|float|str|bool|bytes|dict|list|tuple|set|object|None|callable|type"
               r"|Path|Iterable|Iterator|Sequence|Mapping|Callable|Any|optional|array-like"
               r"|ndarray|DataFrame|Series|Executor|Future)"),
]

# `python -m bufsim` (bufsim/__main__.py) is the command line: bufsim.cli documents it
nitpick_ignore = [("py:mod", "bufsim.__main__")]

# the quick build (tests/test_docs.py) documents three modules only, so Python references
# into the others cannot resolve there; the full build (make docs) holds every one
if os.environ.get("BUFSIM_DOCS_QUICK"):
    nitpick_ignore_regex.append((r"py:.*", r".*"))

# numpydoc renames each References entry; a reference list need not be cited in the text
suppress_warnings = ["ref.citation"]

html_theme = "pydata_sphinx_theme"
html_title = "bufsim"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "navbar_end": ["navbar-icon-links"],
}
html_static_path = []
html_last_updated_fmt = None

# where the staged build finds the executed notebooks and results (scripts/build_docs.py)
bufsim_notebooks_dir = os.environ.get("BUFSIM_DOCS_NOTEBOOKS", "")
bufsim_results_dir = os.environ.get("BUFSIM_DOCS_RESULTS", "")
