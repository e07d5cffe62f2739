"""The one place compiled Numba kernels are cached, the same from make, JupyterLab and
papermill.

Numba keys a cached function on its own file only, so a kernel that inlines code from
another module could be served stale after that module changes. The cache folder is
therefore named after a hash of every package source that mentions numba (an edit
elsewhere, a workload say, does not recompile the kernels):
``ROOT/.numba_cache/HASH`` in a checkout (``ROOT`` holds bufsim's ``pyproject.toml``),
else ``~/.cache/bufsim/numba/HASH``.

``bufsim/__init__.py`` sets ``NUMBA_CACHE_DIR`` to :func:`cache_dir` when it is unset;
the Makefile runs this file as a script (``python3 bufsim/_numba_cache.py`` prints the
folder) so that make, the kernels it starts and a JupyterLab kernel use one folder.
This module imports only the standard library, so the script works before bufsim is
installed.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def source_hash(package: Path = _PACKAGE) -> str:
    """Return 12 hex digits of the SHA-1 of the package sources that mention numba,
    read in sorted relative-path order."""
    h = hashlib.sha1()
    for f in sorted(package.rglob("*.py"), key=lambda p: p.relative_to(package).as_posix()):
        src = f.read_bytes()
        if b"numba" in src:
            h.update(f.relative_to(package).as_posix().encode() + b"\0" + src)
    return h.hexdigest()[:12]


def cache_dir(package: Path = _PACKAGE) -> Path:
    """Return the cache folder for the package sources in ``package``."""
    root = package.parent
    if (root / "pyproject.toml").is_file() and (root / "bufsim").resolve() == package:
        base = root / ".numba_cache"
    else:
        base = Path.home() / ".cache" / "bufsim" / "numba"
    return base / source_hash(package)


def install() -> str:
    """Set ``NUMBA_CACHE_DIR`` to :func:`cache_dir` unless it is set; return its value."""
    if not os.environ.get("NUMBA_CACHE_DIR"):
        os.environ["NUMBA_CACHE_DIR"] = str(cache_dir())
        if "numba" in sys.modules:  # numba reads the folder when it saves or loads
            sys.modules["numba"].config.CACHE_DIR = os.environ["NUMBA_CACHE_DIR"]
    return os.environ["NUMBA_CACHE_DIR"]


if __name__ == "__main__":
    print(cache_dir())
